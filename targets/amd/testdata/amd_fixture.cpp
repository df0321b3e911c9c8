#include "amd_fixture.h"

#include <algorithm>
#include <cstring>

namespace capgraph::test {
namespace {

void put32(std::vector<uint8_t> &b, size_t at, uint32_t v) { memcpy(b.data() + at, &v, 4); }
void put64(std::vector<uint8_t> &b, size_t at, uint64_t v) { memcpy(b.data() + at, &v, 8); }

// Plausible register values for a small wave32 kernel (LLVM AMDGPUUsage, COMPUTE_PGM_RSRC*):
// rsrc2 USER_SGPR_COUNT = 2 (the kernarg pointer) in bits 1..5, TGID_X_EN bit 7.
constexpr uint32_t kRsrc1 = 0x60af0000, kRsrc2 = (2u << 1) | (1u << 7), kRsrc3 = 0;
constexpr uint16_t kProps = 1u << 3;    // kernarg segment ptr
constexpr uint16_t kWave32 = 1u << 10;  // ENABLE_WAVEFRONT_SIZE32

}  // namespace

uint64_t amd_descriptor_offset(uint32_t kernel) { return 0x100 + 64ull * kernel; }

std::vector<uint8_t> amd_code_object(const std::vector<kernel_spec> &kernels, uint32_t wave) {
  const uint16_t props = kProps | (wave == 32 ? kWave32 : 0);
  // The code after every descriptor (past 59 kernels the descriptors reach 0x1000: kernel 60's
  // once overlapped kernel 0's code, which amd_kernel_check's descriptor sizes then caught).
  const size_t code_base =
      std::max<size_t>(0x1000, (0x100 + 64 * kernels.size() + 255) / 256 * 256);
  std::vector<uint8_t> b(code_base + 256 * kernels.size(), 0);
  // ELF64, little-endian, ET_DYN, EM_AMDGPU (224): what LLVM's AMDGPU backend links.
  const uint8_t ident[] = {0x7f, 'E', 'L', 'F', 2, 1, 1, 64 /* ELFOSABI_AMDGPU_HSA */, 3};
  memcpy(b.data(), ident, sizeof ident);
  b[16] = 3;
  b[18] = 224;
  for (uint32_t i = 0; i < kernels.size(); ++i) {
    const size_t kd = amd_descriptor_offset(i), code = code_base + 256ull * i;
    put32(b, kd + 8, 8 * (kernels[i].num_buffers + kernels[i].num_scalars));  // kernarg_size
    put64(b, kd + 16, uint64_t(int64_t(code) - int64_t(kd)));  // kernel_code_entry_byte_offset
    put32(b, kd + 44, kRsrc3);
    put32(b, kd + 48, kRsrc1);
    put32(b, kd + 52, kRsrc2);
    b[kd + 56] = uint8_t(props);
    b[kd + 57] = uint8_t(props >> 8);
    put32(b, code, 0xbf810000);  // s_endpgm (gfx10/11 SOPP encoding)
  }
  return b;
}

capture_spec amd_spec(const capture_spec &cpu, const char *chip) {
  capture_spec s = cpu;
  s.target = std::string("amd-") + chip;
  s.features.clear();
  s.twin_target = host_target_name();
  s.version_major = 2;  // kernel facts in the KernelFacts union
  s.version_minor = 0;
  const uint32_t code_program = uint32_t(s.programs.size());
  program_spec code;
  code.format = fb::ProgramFormat::amdgpu_code_object;
  // Wave32 where the chip runs it (RDNA), wave64 on CDNA.
  const uint32_t wave = std::string(chip).rfind("gfx9", 0) == 0 ? 64 : 32;
  code.binary = amd_code_object(s.kernels, wave);
  s.programs.push_back(code);
  s.amd.assign(s.kernels.size(), amd_kernel_spec{});
  for (uint32_t i = 0; i < s.kernels.size(); ++i) {
    kernel_spec &k = s.kernels[i];
    amd_kernel_spec &a = s.amd[i];
    a.twin_program = int32_t(k.program);
    a.twin_entry = k.entry;
    for (const step_spec &st : s.steps)
      if (st.kind == fb::StepKind::launch && st.launch.kernel == i)
        a.twin_work_size = st.launch.work_size;
    k.program = code_program;
    a.descriptor_offset = amd_descriptor_offset(i);
    a.kernarg_size = 8 * (k.num_buffers + k.num_scalars);
    a.kernarg_align = 8;
    a.rsrc1 = kRsrc1;
    a.rsrc2 = kRsrc2;
    a.rsrc3 = kRsrc3;
    a.kernel_code_properties = kProps | (wave == 32 ? kWave32 : 0);
    a.wavefront_size = wave;
    a.workgroup_size = 256;
  }
  // One thread: the GPU takes the whole range (Launch.partition = [0, work_size]).
  s.threads = 1;
  for (step_spec &st : s.steps)
    if (st.kind == fb::StepKind::launch) st.launch.partition = {0, st.launch.work_size};
  return s;
}

capture_spec scale_chain_spec(uint32_t kernels, int64_t n) {
  const uint64_t bytes = uint64_t(n) * 4, slot = (bytes + 63) / 64 * 64;
  capture_spec s;
  s.arena_size = 4 * slot;  // x, ping, pong, x_copy
  s.inputs = {{"x", fb::DType::f32, {n}, 0, bytes}};
  const uint64_t last = (kernels - 1) % 2 ? slot : 2 * slot;
  s.outputs = {{"y", fb::DType::f32, {n}, last, bytes},
               {"x_copy", fb::DType::f32, {n}, 3 * slot, bytes}};
  s.programs = {{kernel_object("kernels_c.o"), {"expf", "memcpy"}}};
  for (uint32_t i = 0; i < kernels; ++i) {
    s.kernels.push_back(kernel_spec{"scale_" + std::to_string(i), 0, "c_scale", 2, 0});
    const uint64_t src = i == 0 ? 0 : (i % 2 ? 2 * slot : slot), dst = i % 2 ? slot : 2 * slot;
    s.steps.push_back(launch_step(i, {arena_ref(src), arena_ref(dst)}, uint64_t(n), 1));
  }
  s.steps.push_back(copy_step(arena_ref(0), arena_ref(3 * slot), bytes));
  return s;
}

}  // namespace capgraph::test
