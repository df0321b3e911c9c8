#include "nv_fixture.h"

#include <cstring>

namespace capgraph::test {

capture_spec nv_spec(const capture_spec &cpu, const char *chip) {
  capture_spec s = cpu;
  s.target = std::string("nv-") + chip;
  s.features.clear();
  s.twin_target = host_target_name();
  s.version_major = 2;
  s.version_minor = 2;  // NvKernel
  const bool hopper = std::string(chip) == "sm90";
  const uint32_t sm = hopper ? 90 : std::string(chip) == "sm89" ? 89 : 86;
  const uint32_t code_program = uint32_t(s.programs.size());
  program_spec cubin;
  cubin.format = fb::ProgramFormat::nv_cubin;
  cubin.binary.assign(0x1000 + 256 * s.kernels.size(), 0);
  const uint8_t ident[] = {0x7f, 'E', 'L', 'F', 2, 1, 1, 0x33 /* ELFOSABI_CUDA */};
  memcpy(cubin.binary.data(), ident, sizeof ident);
  cubin.binary[18] = 190;  // EM_CUDA
  s.programs.push_back(cubin);
  s.amd.assign(s.kernels.size(), amd_kernel_spec{});
  s.nv.assign(s.kernels.size(), nv_kernel_spec{});
  for (uint32_t i = 0; i < s.kernels.size(); ++i) {
    kernel_spec &k = s.kernels[i];
    amd_kernel_spec &twin = s.amd[i];
    twin.twin_program = int32_t(k.program);
    twin.twin_entry = k.entry;
    for (const step_spec &st : s.steps)
      if (st.kind == fb::StepKind::launch && st.launch.kernel == i)
        twin.twin_work_size = st.launch.work_size;
    k.program = code_program;
    nv_kernel_spec &n = s.nv[i];
    n.sm = sm;
    n.qmd_version = hopper ? 4 : 3;
    n.text_offset = 0x1000 + 256ull * i;
    n.text_size = 256;
    n.param_offset = hopper ? 0x210 : 0x160;  // nv_plan.md §2.8
    n.param_bytes = 8 * (k.num_buffers + k.num_scalars);
    n.cbank0_bytes = (n.param_offset + std::max(n.param_bytes, 0x20u) + 15) / 16 * 16;
    n.registers = 16 + 2 * i;
    n.shared_bytes = hopper ? 0x400 : 0;  // sm_90's reservation (nv_plan.md §2.8)
    n.block_x = 128;
  }
  s.threads = 1;
  for (step_spec &st : s.steps)
    if (st.kind == fb::StepKind::launch) st.launch.partition = {0, st.launch.work_size};
  return s;
}

}  // namespace capgraph::test
