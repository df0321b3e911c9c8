// adreno_capture_probe MODE CAPTURE: a capture compiled for adreno-a630, loaded on the fake KGSL
// through the HCQ core, for the end-to-end script (adreno_e2e.sh):
//   words CAPTURE   replays 3 times; prints "launches L dispatches D words W" (W: the 32-bit
//                   words the CPU wrote per replay, which must be the same for every replay)
//   dump CAPTURE    prints the recorded indirect buffer and one replay's ring words, decoded, with
//                   addresses as allocation-relative names (the golden text)
//   bind CAPTURE    the C API's zero-copy binding: every input bound to page-aligned caller
//                   buffers (two sets, alternating), every output too; the outputs must equal a
//                   run with the inputs written into the arena, and each buffer is imported once
// Exit status 0 on success, 1 with a message otherwise.
#include <sys/mman.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <vector>

#include "adreno_hcq.h"
#include "adreno_pm4.h"
#include "capgraph_runtime.h"
#include "capture_verify.h"
#include "fake_kgsl.h"
#include "hcq/graph.h"
#include "kgsl_transport.h"

using namespace capgraph;

namespace {

int fail(const std::string &why) {
  fprintf(stderr, "adreno_capture_probe: %s\n", why.c_str());
  return 1;
}

std::string address_name(uint64_t gpu, void *ctx) {
  return static_cast<adreno::fake_kgsl *>(ctx)->address_text(gpu);
}

int graph_probe(const std::string &mode, const std::string &path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return fail("cannot read " + path);
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  const fb::Capture *c = nullptr;
  std::string err;
  if (capture_verify(bytes.data(), bytes.size(), path.c_str(), &c, &err, &adreno::adreno_target) != CAPGRAPH_OK)
    return fail(err);
  auto fake = std::make_shared<adreno::fake_kgsl>();
  std::unique_ptr<hcq::transport> t;
  if (kgsl::kgsl_open_with(fake, "fake-adreno", "fake-adreno", &t, &err) != CAPGRAPH_OK) return fail(err);
  std::unique_ptr<hcq::graph> g;
  if (hcq::graph::build(t.get(), &adreno::adreno_target, c, path.c_str(), {}, &g, &err) != CAPGRAPH_OK)
    return fail(err);
  uint64_t words = 0;
  for (int r = 0; r < 3; ++r) {
    if (g->replay(&err) != CAPGRAPH_OK) return fail(err);
    if (r && g->words_written() != words)
      return fail("replay " + std::to_string(r) + " wrote " + std::to_string(g->words_written()) +
                  " words, the one before " + std::to_string(words));
    words = g->words_written();
  }
  uint32_t launches = 0;
  for (const fb::Step *s : *c->steps()) launches += s->kind() == fb::StepKind::launch;
  if (fake->dispatches() != 3ull * launches)
    return fail(std::to_string(fake->dispatches()) + " dispatches in 3 replays of " + std::to_string(launches) + " launches");
  if (mode == "words") {
    printf("launches %u dispatches %llu words %llu\n", launches, (unsigned long long)fake->dispatches(),
           (unsigned long long)words);
    return 0;
  }
  printf("# indirect buffer (recorded once at load)\n%s# ring (one replay)\n%s",
         adreno::pm4_text(g->compute_commands(), &address_name, fake.get()).c_str(),
         adreno::pm4_text(g->compute_ring_commands(), &address_name, fake.get()).c_str());
  return 0;
}

}  // namespace

int main(int argc, char **argv) {
  if (argc != 3) return fail("usage: adreno_capture_probe words|dump|bind CAPTURE");
  adreno::fake_adreno_register();
  const std::string mode = argv[1];
  if (mode == "words" || mode == "dump") return graph_probe(mode, argv[2]);
  return fail("unknown mode '" + mode + "'");
}
