// adreno_capture_probe MODE CAPTURE: a capture compiled for adreno-a630, loaded on the fake KGSL
// through the HCQ core, for the end-to-end script (adreno_e2e.sh):
//   words CAPTURE   replays 3 times; prints "launches L dispatches D words W" (W: the 32-bit
//                   words the CPU wrote per replay, which must be the same for every replay)
//   dump CAPTURE    prints the recorded indirect buffer and one replay's ring words, decoded, with
//                   addresses as allocation-relative names (the golden text)
//   tamper CAPTURE  damages one register of the recorded stream at a time (through the fake's
//                   reg_override); each replay must fail with a fault naming what is wrong
//   images CAPTURE  a capture whose kernels read images (issue 28): its image facts damaged one
//                   field at a time in the file must be refused at load naming the image and the
//                   field; texture registers damaged in the recorded stream must be faults naming
//                   them; the undamaged capture replays
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

std::vector<uint8_t> file_bytes(const std::string &path) {
  std::ifstream f(path, std::ios::binary);
  return std::vector<uint8_t>((std::istreambuf_iterator<char>(f)),
                              std::istreambuf_iterator<char>());
}

// The capture at `path`, read into *bytes and verified as an Adreno capture; false and *err
// naming what is wrong.
bool capture_read(const std::string &path, std::vector<uint8_t> *bytes, const fb::Capture **c,
                  std::string *err) {
  *bytes = file_bytes(path);
  if (bytes->empty()) return *err = "cannot read " + path, false;
  return capture_verify(bytes->data(), bytes->size(), path.c_str(), c, err,
                        &adreno::adreno_target) == CAPGRAPH_OK;
}

// Each damage and the words its fault must contain.
int tamper_probe(const std::string &path) {
  std::vector<uint8_t> bytes;
  const fb::Capture *c = nullptr;
  std::string err;
  if (!capture_read(path, &bytes, &c, &err)) return fail(err);
  const bool wave128 = c->kernels()->Get(0)->facts_as_AdrenoKernel()->double_threadsize();
  struct damage {
    uint32_t reg, value;
    const char *fault;
  };
  const damage damages[] = {
      {adreno::SP_CS_INSTRLEN, 1, "SP_CS_INSTRLEN"},
      {adreno::HLSQ_CS_NDRANGE_0, 3u | 7u << 2, "local size"},
      {adreno::HLSQ_CS_NDRANGE_0 + 1, 1, "global size"},
      {adreno::HLSQ_CS_CNTL_0, 0xfcfcfcfc, "HLSQ_CS_CNTL_0"},
      {adreno::HLSQ_CS_CNTL_1, 0xfc | uint32_t(!wave128) << 9,
       "THREADSIZE"},  // the other wave size
      {adreno::SP_CS_CTRL_REG0, 0, "footprints"},
      {adreno::SP_CS_CONFIG, 0, "SP_CS_CONFIG"},
      {adreno::SP_MODE_CONTROL, adreno::ISAMMODE_GL << 1, "CONSTANT_DEMOTION"},
      {adreno::HLSQ_CS_CNTL, 1u << 8, "constant length"},
      {adreno::SP_CS_OBJ_START, 0x1000, "no kernel's program"},
  };
  std::vector<damage> all(std::begin(damages), std::end(damages));
  // A kernel using more than 1 KiB of shared memory (a tiled convolution): SHARED_SIZE 0 gives
  // its workgroup 1 KiB, and the fault must name the register and the kernel.
  std::string shared_kernel;
  for (const fb::Kernel *k : *c->kernels())
    if (shared_kernel.empty() && k->facts_as_AdrenoKernel()->shared_memory_bytes() > 1024)
      shared_kernel = k->name()->str();
  if (!shared_kernel.empty()) all.push_back({adreno::SP_CS_CTRL_REG1, 0, "SHARED_SIZE"});
  int caught = 0;
  for (const damage &d : all) {
    auto fake = std::make_shared<adreno::fake_kgsl>();
    fake->reg_override(d.reg, d.value);
    std::unique_ptr<hcq::transport> t;
    std::unique_ptr<hcq::graph> g;
    if (kgsl::kgsl_open_with(fake, "fake-adreno", "fake-adreno", &t, &err) != CAPGRAPH_OK ||
        hcq::graph::build(t.get(), &adreno::adreno_target, c, path.c_str(),
                          adreno::graph_options_for(fake), &g, &err) != CAPGRAPH_OK)
      return fail(err);
    const capgraph_status st = g->replay(&err);
    if (st != CAPGRAPH_ERR_DEVICE || fake->fault().find(d.fault) == std::string::npos)
      return fail(std::string("damaging ") + adreno::reg_name(d.reg) + " gave status " +
                  capgraph_status_name(st) + " and fault '" + fake->fault() +
                  "', not one naming '" + d.fault + "'");
    if (d.reg == adreno::SP_CS_CTRL_REG1 &&
        fake->fault().find("'" + shared_kernel + "'") == std::string::npos)
      return fail("the SHARED_SIZE fault '" + fake->fault() + "' does not name kernel " +
                  shared_kernel);
    ++caught;
  }
  printf("%d damaged registers caught\n", caught);
  return 0;
}

// A graph of capture `c` on a fresh fake, replayed once; the status, *err and the fake's fault.
capgraph_status replay_once(const fb::Capture *c, const std::string &path,
                            const std::shared_ptr<adreno::fake_kgsl> &fake, std::string *err) {
  std::unique_ptr<hcq::transport> t;
  std::unique_ptr<hcq::graph> g;
  capgraph_status st = kgsl::kgsl_open_with(fake, "fake-adreno", "fake-adreno", &t, err);
  if (st == CAPGRAPH_OK)
    st = hcq::graph::build(t.get(), &adreno::adreno_target, c, path.c_str(),
                           adreno::graph_options_for(fake), &g, err);
  return st == CAPGRAPH_OK ? g->replay(err) : st;
}

int images_probe(const std::string &path) {
  std::vector<uint8_t> bytes;
  const fb::Capture *c = nullptr;
  std::string err;
  if (!capture_read(path, &bytes, &c, &err)) return fail(err);
  int kernel = -1;
  for (uint32_t k = 0; k < c->kernels()->size() && kernel < 0; ++k)
    if (const auto *im = c->kernels()->Get(k)->facts_as_AdrenoKernel()->images(); im && im->size())
      kernel = int(k);
  if (kernel < 0) return fail(path + ": no kernel reads an image");
  if (replay_once(c, path, std::make_shared<adreno::fake_kgsl>(), &err) != CAPGRAPH_OK)
    return fail("the undamaged capture: " + err);
  // The facts in the file, one field at a time (flatbuffers' Table::GetAddressOf: the schema is
  // generated without mutators), with the words the load error must hold.
  struct fact_damage {
    uint16_t field;
    uint32_t value;
    const char *error;
  };
  const fact_damage facts[] = {
      {fb::AdrenoImage::VT_FORMAT, 7, "format 7 is not"},
      {fb::AdrenoImage::VT_WIDTH, 20000, "size 20000x"},
      {fb::AdrenoImage::VT_HEIGHT, 0, "is not 1 to 16384"},
      {fb::AdrenoImage::VT_PITCH, 100, "pitch 100 is not a multiple of 64"},
      {fb::AdrenoImage::VT_HEIGHT, 16384, "reach past its"},
      {fb::AdrenoImage::VT_SLOT, 40, "is not one of its"},
  };
  int refused = 0;
  for (const fact_damage &d : facts) {
    std::vector<uint8_t> spoilt = bytes;
    const fb::Capture *sc = fb::GetCapture(spoilt.data());
    const fb::AdrenoImage *m =
        sc->kernels()->Get(uint32_t(kernel))->facts_as_AdrenoKernel()->images()->Get(0);
    const uint8_t *at = reinterpret_cast<const flatbuffers::Table *>(m)->GetAddressOf(d.field);
    if (!at) continue;  // a field at its default (slot 0) is not stored: nothing to damage
    memcpy(const_cast<uint8_t *>(at), &d.value, 4);
    const fb::Capture *out = nullptr;
    const capgraph_status st = capture_verify(spoilt.data(), spoilt.size(), path.c_str(), &out,
                                              &err, &adreno::adreno_target);
    if (st == CAPGRAPH_OK || err.find("image 0") == std::string::npos ||
        err.find(d.error) == std::string::npos)
      return fail("image facts damaged (" + std::string(d.error) + ") gave status " +
                  capgraph_status_name(st) + " and '" + err + "'");
    printf("refused: %s\n", err.c_str());
    ++refused;
  }
  // A launch viewing the image's weight at an offset that is not 64-byte aligned.
  {
    std::vector<uint8_t> spoilt = bytes;
    const fb::Capture *sc = fb::GetCapture(spoilt.data());
    const uint32_t slot =
        sc->kernels()->Get(uint32_t(kernel))->facts_as_AdrenoKernel()->images()->Get(0)->slot();
    for (const fb::Step *s : *sc->steps())
      if (s->kind() == fb::StepKind::launch && s->launch()->kernel() == uint32_t(kernel)) {
        const fb::BufferRef *ref = s->launch()->buffers()->Get(slot);
        // BufferRef (capture.fbs): space (1 byte, 3 padding), index (4), offset (8) at byte 8.
        static_assert(sizeof(fb::BufferRef) == 16);
        const uint64_t offset = 32;
        memcpy(const_cast<uint8_t *>(reinterpret_cast<const uint8_t *>(ref)) + 8, &offset, 8);
        break;
      }
    const fb::Capture *out = nullptr;
    const capgraph_status st = capture_verify(spoilt.data(), spoilt.size(), path.c_str(), &out,
                                              &err, &adreno::adreno_target);
    if (st == CAPGRAPH_OK || err.find("not 64-byte aligned") == std::string::npos)
      return fail("a misaligned image view gave status " + std::string(capgraph_status_name(st)) +
                  " and '" + err + "'");
    printf("refused: %s\n", err.c_str());
    ++refused;
  }
  // The texture state in the recorded stream.
  struct reg_damage {
    uint32_t reg, value;
    const char *fault;
  };
  const reg_damage regs[] = {
      {adreno::SP_CS_TEX_COUNT, 0, "SP_CS_TEX_COUNT 0"},
      {adreno::SP_CS_CONFIG, 1u << 8, "NTEX 0"},
      {adreno::SP_CS_TEX_CONST, 0x40, "SP_CS_TEX_CONST"},
      {adreno::SP_CS_TEX_SAMP, 0x40, "SP_CS_TEX_SAMP"},
      {adreno::SP_TP_BORDER_COLOR_BASE_ADDR, 0x1000, "border colour"},
  };
  int caught = 0;
  for (const reg_damage &d : regs) {
    auto fake = std::make_shared<adreno::fake_kgsl>();
    fake->reg_override(d.reg, d.value);
    const capgraph_status st = replay_once(c, path, fake, &err);
    if (st != CAPGRAPH_ERR_DEVICE || fake->fault().find(d.fault) == std::string::npos)
      return fail(std::string("damaging ") + adreno::reg_name(d.reg) + " gave status " +
                  capgraph_status_name(st) + " and fault '" + fake->fault() +
                  "', not one naming '" + d.fault + "'");
    ++caught;
  }
  printf("%d damaged image facts refused, %d damaged texture registers caught\n", refused, caught);
  return refused >= 6 ? 0 : fail("only " + std::to_string(refused) + " image facts damaged");
}

int graph_probe(const std::string &mode, const std::string &path) {
  std::vector<uint8_t> bytes;
  const fb::Capture *c = nullptr;
  std::string err;
  if (!capture_read(path, &bytes, &c, &err)) return fail(err);
  auto fake = std::make_shared<adreno::fake_kgsl>();
  std::unique_ptr<hcq::transport> t;
  if (kgsl::kgsl_open_with(fake, "fake-adreno", "fake-adreno", &t, &err) != CAPGRAPH_OK)
    return fail(err);
  std::unique_ptr<hcq::graph> g;
  if (hcq::graph::build(t.get(), &adreno::adreno_target, c, path.c_str(),
                        adreno::graph_options_for(fake), &g, &err) != CAPGRAPH_OK)
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
    return fail(std::to_string(fake->dispatches()) + " dispatches in 3 replays of " +
                std::to_string(launches) + " launches");
  if (mode == "words") {
    printf("launches %u dispatches %llu words %llu\n", launches,
           (unsigned long long)fake->dispatches(), (unsigned long long)words);
    return 0;
  }
  printf("# indirect buffer (recorded once at load)\n%s# ring (one replay)\n%s",
         adreno::pm4_text(g->compute_commands(), &address_name, fake.get()).c_str(),
         adreno::pm4_text(g->compute_ring_commands(), &address_name, fake.get()).c_str());
  return 0;
}

// Deterministic input bytes: floats in [-1, 1), other types any byte.
void input_fill(const capgraph_tensor &t, uint8_t *p, uint32_t seed) {
  uint32_t x = seed * 2654435761u + 1;
  for (size_t i = 0; i < t.size_bytes; ++i) {
    x = x * 1664525u + 1013904223u;
    p[i] = uint8_t(x >> 24);
  }
  if (t.dtype == CAPGRAPH_F32)
    for (size_t i = 0; i < t.size_bytes / 4; ++i) {
      x = x * 1664525u + 1013904223u;
      const float v = float(int32_t(x >> 8) - (1 << 23)) / float(1 << 23);
      memcpy(p + 4 * i, &v, 4);
    }
}

struct model_handle {
  capgraph_model *m = nullptr;
  ~model_handle() { capgraph_free(m); }
};

size_t pages(size_t bytes) { return (bytes + 4095) / 4096 * 4096; }

int bind_probe(const std::string &path) {
  char err[1024] = "";
  model_handle a, b;
  if (capgraph_load_device(path.c_str(), "fake-adreno", nullptr, &a.m, err, sizeof err) !=
          CAPGRAPH_OK ||
      capgraph_load_device(path.c_str(), "fake-adreno", nullptr, &b.m, err, sizeof err) !=
          CAPGRAPH_OK)
    return fail(err);
  const std::shared_ptr<adreno::fake_kgsl> fake = adreno::fake_adreno_last();  // b's
  const int ni = capgraph_num_inputs(a.m), no = capgraph_num_outputs(a.m);
  // Reference outputs for two input sets, from the arena.
  std::vector<std::vector<uint8_t>> want[2];
  for (int set = 0; set < 2; ++set) {
    for (int i = 0; i < ni; ++i) {
      capgraph_tensor t;
      capgraph_input(a.m, i, &t);
      input_fill(t, static_cast<uint8_t *>(t.data), uint32_t(17 * set + i + 1));
    }
    if (capgraph_run(a.m) != CAPGRAPH_OK) return fail(capgraph_error(a.m));
    for (int o = 0; o < no; ++o) {
      capgraph_tensor t;
      capgraph_output(a.m, o, &t);
      const uint8_t *p = static_cast<const uint8_t *>(t.data);
      want[set].emplace_back(p, p + t.size_bytes);
    }
  }
  // Caller buffers: two sets of inputs, two of outputs.
  std::vector<void *> buffers;
  const auto buffer = [&](size_t bytes) {
    void *p = aligned_alloc(4096, pages(bytes));
    memset(p, 0xee, pages(bytes));
    buffers.push_back(p);
    return p;
  };
  std::vector<void *> in[2], out[2];
  for (int set = 0; set < 2; ++set) {
    for (int i = 0; i < ni; ++i) {
      capgraph_tensor t;
      capgraph_input(b.m, i, &t);
      in[set].push_back(buffer(t.size_bytes));
      input_fill(t, static_cast<uint8_t *>(in[set].back()), uint32_t(17 * set + i + 1));
    }
    for (int o = 0; o < no; ++o) {
      capgraph_tensor t;
      capgraph_output(b.m, o, &t);
      out[set].push_back(buffer(t.size_bytes));
    }
  }
  int result = 0;
  const int order[3] = {0, 1, 0};  // back to the first set: no new import
  for (int run = 0; run < 3 && !result; ++run) {
    const int set = order[run];
    for (int i = 0; i < ni; ++i) {
      capgraph_tensor t;
      capgraph_input(b.m, i, &t);
      if (capgraph_bind_input(b.m, i, in[set][size_t(i)], pages(t.size_bytes)) != CAPGRAPH_OK)
        return fail(capgraph_error(b.m));
      capgraph_input(b.m, i, &t);
      if (t.data != in[set][size_t(i)])
        return fail("capgraph_input does not give the bound buffer");
    }
    for (int o = 0; o < no; ++o) {
      capgraph_tensor t;
      capgraph_output(b.m, o, &t);
      if (capgraph_bind_output(b.m, o, out[set][size_t(o)], pages(t.size_bytes)) != CAPGRAPH_OK)
        return fail(capgraph_error(b.m));
    }
    if (capgraph_run(b.m) != CAPGRAPH_OK) return fail(capgraph_error(b.m));
    for (int o = 0; o < no; ++o)
      if (memcmp(out[set][size_t(o)], want[set][size_t(o)].data(), want[set][size_t(o)].size()) !=
          0) {
        result = fail("run " + std::to_string(run) + ": output " + std::to_string(o) +
                      " in the bound buffer differs from the arena run's");
        break;
      }
  }
  const uint64_t imports = fake ? fake->imports() : 0;
  if (!result && imports != uint64_t(2 * (ni + no)))
    result = fail(std::to_string(imports) + " imports for " + std::to_string(2 * (ni + no)) +
                  " distinct buffers");
  // Unaligned memory and the CPU are refused with a message.
  if (!result && capgraph_bind_input(b.m, 0, static_cast<uint8_t *>(in[0][0]) + 16, 4096) !=
                     CAPGRAPH_ERR_ARGUMENT)
    result = fail("an unaligned buffer was accepted");
  if (!result)
    printf("inputs %d outputs %d imports %llu runs 3\n", ni, no, (unsigned long long)imports);
  for (void *p : buffers) free(p);
  return result;
}

}  // namespace

int main(int argc, char **argv) {
  if (argc != 3) return fail("usage: adreno_capture_probe words|dump|tamper|images|bind CAPTURE");
  adreno::fake_adreno_register();
  const std::string mode = argv[1];
  if (mode == "words" || mode == "dump") return graph_probe(mode, argv[2]);
  if (mode == "bind") return bind_probe(argv[2]);
  if (mode == "tamper") return tamper_probe(argv[2]);
  if (mode == "images") return images_probe(argv[2]);
  return fail("unknown mode '" + mode + "'");
}
