// adreno_miscompile_plant WHAT IN.cap OUT.cap: plants one wrong instruction in the shader of an
// Adreno capture's first launch, for the tests that fake-adreno catches wrong machine code, and
// fixes the checksums so the runtime loads the result (the change must be caught by running it).
// WHAT:
//   operand  the first mad.f32 / mul.f / add.f with a register source reads the register below
//            it instead (same component): fake-adreno:check and `run --check` must name the kernel
//   sync     the first (sy) is dropped: the emulator's hazard checker must name the kernel, the
//            instruction and the rule
//   unknown  the first instruction becomes a word no a6xx encoding accepts: the decoder must name
//            the kernel and the instruction
// The bit to flip is found with the emulator's own decoder (the flipped word must decode to the
// same instruction but for the planted change). Prints "KERNEL_NAME instruction N: OLD -> NEW".
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "capture_hash.h"
#include "capture_rehash.h"
#include "ir3_decode.h"
#include "replay.h"

using namespace capgraph;
using namespace capgraph::adreno;

namespace {

// The instruction `i` with source `s`'s register one lower, if flipping one bit gives that.
bool operand_lower(const ir3_instr &i, int s, uint64_t *word) {
  if (i.src[s].kind != ir3_operand::gpr || i.src[s].num < 4) return false;
  ir3_instr want = i;
  want.src[s].num -= 4;
  for (int b = 0; b < 64; ++b) {
    ir3_instr got;
    std::string why;
    if (!ir3_decode(i.word ^ (1ull << b), &got, &why)) continue;
    if (got.op == i.op && ir3_render(got, 0) == ir3_render(want, 0)) {
      *word = i.word ^ (1ull << b);
      return true;
    }
  }
  return false;
}

// Whether instruction n may read full register component `num` without a hazard, so that the
// planted change shows as a wrong value and not as a hazard the emulator's checker names first:
// no instruction of the 8 before it writes that component (an ALU result is ready 3-6 issue
// slots after it is written: ir3_hazard.h), and no load, texture or SFU instruction (results that
// need (ss)/(sy)) before it writes it at all. Half registers alias full ones in the merged file
// (hrN.c is half of rN/2), so a half write to either half counts.
bool read_is_safe(const std::vector<ir3_instr> &is, size_t n, uint16_t num) {
  for (size_t m = 0; m < n; ++m) {
    const ir3_instr &w = is[m];
    for (int d = 0; d < w.ndst; ++d) {
      const ir3_operand &o = w.dst[d];
      if (o.kind != ir3_operand::gpr) continue;
      const uint16_t lo = o.half ? o.num / 2 : o.num, hi = lo + w.repeat;
      if (num < lo || num > hi) continue;
      if (n - m <= 8 || w.cat >= 4) return false;
    }
  }
  return true;
}

// The instruction `i` without (sy), if flipping one bit gives that.
bool sync_dropped(const ir3_instr &i, uint64_t *word) {
  ir3_instr want = i;
  want.sy = false;
  for (int b = 0; b < 64; ++b) {
    ir3_instr got;
    std::string why;
    if (!ir3_decode(i.word ^ (1ull << b), &got, &why)) continue;
    if (got.op == i.op && !got.sy && ir3_render(got, 0) == ir3_render(want, 0)) {
      *word = i.word ^ (1ull << b);
      return true;
    }
  }
  return false;
}

}  // namespace

int main(int argc, char **argv) {
  const std::string what = argc == 4 ? argv[1] : "";
  if (what != "operand" && what != "sync" && what != "unknown") {
    std::fprintf(stderr, "usage: adreno_miscompile_plant operand|sync|unknown IN.cap OUT.cap\n");
    return 2;
  }
  std::ifstream in(argv[2], std::ios::binary);
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)),
                             std::istreambuf_iterator<char>());
  flatbuffers::Verifier v(bytes.data(), bytes.size());
  if (bytes.empty() || !fb::VerifyCaptureBuffer(v)) {
    std::fprintf(stderr, "adreno_miscompile_plant: %s is not a capture\n", argv[2]);
    return 1;
  }
  const fb::Capture *c = fb::GetCapture(bytes.data());
  const fb::Kernel *k = nullptr;
  for (uint32_t i = 0; c->steps() && i < c->steps()->size() && !k; ++i)
    if (const fb::Launch *l = c->steps()->Get(i)->launch()) k = c->kernels()->Get(l->kernel());
  if (!k || !k->facts_as_AdrenoKernel()) {
    std::fprintf(stderr, "adreno_miscompile_plant: %s has no Adreno kernel launch\n", argv[2]);
    return 1;
  }
  const fb::Program *prog = c->programs()->Get(k->program());
  uint8_t *code = bytes.data() + (prog->binary()->data() - bytes.data());
  const std::string name = k->name()->str();
  std::vector<ir3_instr> is;
  std::string err;
  if (!ir3_program_decode(reinterpret_cast<const uint32_t *>(code),
                          k->facts_as_AdrenoKernel()->instr_dwords() / 2, name, &is, &err)) {
    std::fprintf(stderr, "adreno_miscompile_plant: %s\n", err.c_str());
    return 1;
  }
  size_t at = is.size();
  uint64_t word = 0;
  for (size_t n = 0; n < is.size() && at == is.size(); ++n) {
    const ir3_instr &i = is[n];
    if (what == "operand") {
      if (i.op != ir3_op::mad_f32 && i.op != ir3_op::mul_f && i.op != ir3_op::add_f) continue;
      for (int s = 0; s < i.nsrc && at == is.size(); ++s)
        if (operand_lower(i, s, &word) && read_is_safe(is, n, i.src[s].num - 4)) at = n;
    } else if (what == "sync") {
      if (i.sy && sync_dropped(i, &word)) at = n;
    } else {
      // All ones: no a6xx encoding has every bit set (an unused cat7 opcode); checked below.
      word = ~0ull;
      ir3_instr dummy;
      if (ir3_decode(word, &dummy, &err)) {
        std::fprintf(stderr, "adreno_miscompile_plant: %s decodes\n", ir3_word_text(word).c_str());
        return 1;
      }
      at = n;
    }
  }
  if (at == is.size()) {
    std::fprintf(stderr,
                 "adreno_miscompile_plant: kernel '%s' has no instruction to plant '%s' in\n",
                 name.c_str(), what.c_str());
    return 1;
  }
  std::memcpy(code + 8 * at, &word, 8);  // little-endian dwords, low first, as the shader image
  // The program's hash and the kernels' KernelBounds hashes over it, recomputed as an attacker
  // would: the change must get past every checksum and be caught by running it.
  test::capture_checksums_recompute(bytes);
  std::ofstream out(argv[3], std::ios::binary);
  out.write(reinterpret_cast<const char *>(bytes.data()), std::streamsize(bytes.size()));
  if (!out) {
    std::fprintf(stderr, "adreno_miscompile_plant: cannot write %s\n", argv[3]);
    return 1;
  }
  ir3_instr planted;
  const std::string now =
      ir3_decode(word, &planted, &err) ? ir3_render(planted, int(at)) : ir3_word_text(word);
  std::printf("%s instruction %zu: %s -> %s\n", name.c_str(), at,
              ir3_render(is[at], int(at)).c_str(), now.c_str());
  return 0;
}
