// amd_miscompile_plant IN.cap OUT.cap: plants a miscompile in an AMD capture, for the test that
// the fake's emulator run (fake-amd:check) catches wrong machine code. In the kernel of the first
// launch it finds the first 32-bit v_fmac_f32 / v_mul_f32 / v_add_f32 whose second source is a
// VGPR, makes it read the neighbouring VGPR instead, and fixes the program's checksum so the
// runtime loads the result. Prints "KERNEL_NAME offset OFFSET vN -> vM".
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "capture_hash.h"
#include "capture_rehash.h"
#include "rdna3_emu.h"
#include "replay.h"

using namespace capgraph;

int main(int argc, char **argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: amd_miscompile_plant IN.cap OUT.cap\n");
    return 2;
  }
  std::ifstream in(argv[1], std::ios::binary);
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)),
                             std::istreambuf_iterator<char>());
  flatbuffers::Verifier v(bytes.data(), bytes.size());
  if (bytes.empty() || !fb::VerifyCaptureBuffer(v)) {
    std::fprintf(stderr, "amd_miscompile_plant: %s is not a capture\n", argv[1]);
    return 1;
  }
  const fb::Capture *c = fb::GetCapture(bytes.data());
  const fb::Kernel *k = nullptr;
  for (uint32_t i = 0; c->steps() && i < c->steps()->size() && !k; ++i)
    if (const fb::Launch *l = c->steps()->Get(i)->launch()) k = c->kernels()->Get(l->kernel());
  if (!k || !k->facts_as_AmdKernel()) {
    std::fprintf(stderr, "amd_miscompile_plant: %s has no AMD kernel launch\n", argv[1]);
    return 1;
  }
  const fb::Program *prog = c->programs()->Get(k->program());
  if (prog->hash() != capture_hash(prog->binary()->data(), prog->binary()->size())) {
    std::fprintf(stderr, "amd_miscompile_plant: program %u's hash does not match its code\n",
                 k->program());
    return 1;
  }
  uint8_t *code = bytes.data() + (prog->binary()->data() - bytes.data());
  const uint64_t size = prog->binary()->size(), base = 0x100000000ull;
  amd::rdna3_region_find find = [&](uint64_t a) {
    return a >= base && a < base + size ? amd::rdna3_region{base, size, code} : amd::rdna3_region{};
  };
  amd::rdna3_dispatch d;
  d.kernel = k->name()->str();
  int64_t entry;
  std::memcpy(&entry, code + k->facts_as_AmdKernel()->descriptor_offset() + 16,
              8);  // kernel_code_entry_byte_offset
  d.code = base + k->facts_as_AmdKernel()->descriptor_offset() + uint64_t(entry);
  d.rsrc1 = k->facts_as_AmdKernel()->rsrc1();
  d.rsrc2 = k->facts_as_AmdKernel()->rsrc2();
  amd::rdna3_program p;
  std::string err;
  if (!amd::rdna3_program_decode(d, find, &p, &err)) {
    std::fprintf(stderr, "amd_miscompile_plant: %s\n", err.c_str());
    return 1;
  }
  for (const amd::rdna3_inst &i : p.insts) {
    using amd::rdna3_op;
    if ((i.op != rdna3_op::v_fmac_f32 && i.op != rdna3_op::v_mul_f32 &&
         i.op != rdna3_op::v_add_f32) ||
        i.dwords != 1 || i.src[1] < 256)
      continue;
    const uint64_t at = d.code - base + i.offset;
    uint32_t word;
    std::memcpy(&word, code + at, 4);
    if (word >> 31) continue;  // not the 32-bit VOP2 form
    const uint32_t old_reg = (word >> 9) & 0xff, new_reg = old_reg ? old_reg - 1 : 1;
    word = (word & ~(0xffu << 9)) | (new_reg << 9);  // VOP2 VSRC1 is bits 16:9
    std::memcpy(code + at, &word, 4);
    // The program's hash and the kernels' KernelBounds hashes over it, recomputed as an
    // attacker would: the change must get past every checksum and be caught by running it.
    test::capture_checksums_recompute(bytes);
    std::ofstream out(argv[2], std::ios::binary);
    out.write(reinterpret_cast<const char *>(bytes.data()), std::streamsize(bytes.size()));
    if (!out) {
      std::fprintf(stderr, "amd_miscompile_plant: cannot write %s\n", argv[2]);
      return 1;
    }
    std::printf("%s offset 0x%x v%u -> v%u\n", d.kernel.c_str(), i.offset, old_reg, new_reg);
    return 0;
  }
  std::fprintf(
      stderr,
      "amd_miscompile_plant: kernel '%s' has no 32-bit v_fmac/v_mul/v_add_f32 with a VGPR source\n",
      d.kernel.c_str());
  return 1;
}
