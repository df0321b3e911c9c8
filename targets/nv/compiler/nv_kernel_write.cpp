#include "nv_kernel_write.h"

#include <algorithm>

#include "error.h"

namespace capgraph {

flatbuffers::Offset<fb::NvKernel> nv_kernel_write(flatbuffers::FlatBufferBuilder &fbb,
                                                  const NvKernelFacts &f, const NvTarget &t,
                                                  const std::string &ptxas_version,
                                                  const std::string *ptx) {
  auto version = fbb.CreateString(ptxas_version);
  const auto text = ptx ? fbb.CreateSharedString(*ptx) : flatbuffers::Offset<flatbuffers::String>();
  fb::NvKernelBuilder k(fbb);
  k.add_sm(f.sm);
  k.add_qmd_version(t.qmd_version);
  k.add_text_offset(f.text_offset);
  k.add_text_size(f.text_size);
  k.add_text_align(f.text_align);
  k.add_registers(f.registers);
  k.add_max_registers(f.max_registers);
  k.add_barriers(f.barriers);
  k.add_shared_bytes(f.shared_bytes);
  k.add_frame_bytes(f.frame_bytes);
  k.add_min_stack_bytes(f.min_stack_bytes);
  k.add_max_stack_bytes(f.max_stack_bytes);
  k.add_crs_stack_bytes(f.crs_stack_bytes);
  k.add_cbank0_bytes(f.cbank0_bytes);
  k.add_param_offset(f.param_offset);
  k.add_param_bytes(f.param_bytes);
  k.add_block_x(f.reqntid[0]);
  k.add_block_y(f.reqntid[1]);
  k.add_block_z(f.reqntid[2]);
  k.add_ptxas_version(version);
  if (ptx) k.add_ptx(text);
  return k.Finish();
}

NvKernelFacts nv_kernel_read(const fb::NvKernel &k, const std::string &what) {
  NvKernelFacts f;
  f.sm = k.sm();
  f.text_offset = k.text_offset();
  f.text_size = k.text_size();
  f.text_align = k.text_align();
  f.registers = k.registers();
  f.max_registers = k.max_registers();
  f.barriers = k.barriers();
  f.shared_bytes = k.shared_bytes();
  f.frame_bytes = k.frame_bytes();
  f.min_stack_bytes = k.min_stack_bytes();
  f.max_stack_bytes = k.max_stack_bytes();
  f.crs_stack_bytes = k.crs_stack_bytes();
  f.cbank0_bytes = k.cbank0_bytes();
  f.param_offset = k.param_offset();
  f.param_bytes = k.param_bytes();
  f.reqntid[0] = k.block_x();
  f.reqntid[1] = k.block_y();
  f.reqntid[2] = k.block_z();
  auto bad = [&](const std::string &why) { throw Error(what + ": NVIDIA kernel " + why); };
  if (f.sm != 86 && f.sm != 89 && f.sm != 90)
    bad("for sm_" + std::to_string(f.sm) + ", not sm_86, sm_89 or sm_90");
  // QMD V04_00 from Hopper on, V03_00 before (nv_plan.md §0.2, §2.7).
  if (k.qmd_version() != (f.sm >= 90 ? 4u : 3u))
    bad("QMD version " + std::to_string(k.qmd_version()) + " does not fit sm_" +
        std::to_string(f.sm));
  // Limits. Sources: CUDA C++ Programming Guide, "Technical Specifications per Compute
  // Capability" (255 registers per thread, 1024 threads per block, 99 KB of shared memory per
  // block on 8.6/8.9 and 227 KB on 9.0, 512 KB of local memory per thread, 64 KB per constant
  // bank); QMD REGISTER_COUNT and BARRIER_COUNT widths in clc6c0qmd.h / clcbc0qmd.h (8/9 and 5
  // bits).
  if (f.registers == 0 || f.registers > 255)
    bad("uses " + std::to_string(f.registers) + " registers per thread (1..255)");
  if (f.barriers > 16) bad("uses " + std::to_string(f.barriers) + " barriers (at most 16)");
  uint32_t shared_max = f.sm >= 90 ? 227 * 1024 : 99 * 1024;
  if (f.shared_bytes > shared_max)
    bad("needs " + std::to_string(f.shared_bytes) + " bytes of shared memory, over " +
        std::to_string(shared_max));
  if (std::max(f.frame_bytes, f.min_stack_bytes) > 512 * 1024)
    bad("needs over 512 KB of local memory per thread");
  for (uint32_t b : f.reqntid)
    if (b == 0) bad("has an empty block dimension");
  if ((uint64_t)f.reqntid[0] * f.reqntid[1] * f.reqntid[2] > 1024)
    bad("block of more than 1024 threads");
  if (f.cbank0_bytes > 65536 || f.cbank0_bytes % 4)
    bad("constant bank 0 of " + std::to_string(f.cbank0_bytes) + " bytes");
  if (f.param_bytes % 8 || (uint64_t)f.param_offset + f.param_bytes > f.cbank0_bytes ||
      f.param_offset % 4)
    bad("parameters at [" + std::to_string(f.param_offset) + ", +" + std::to_string(f.param_bytes) +
        ") outside constant bank 0");
  if (f.text_size == 0 || f.text_align == 0 || (f.text_align & (f.text_align - 1)) ||
      f.text_offset % f.text_align)
    bad("code at offset " + std::to_string(f.text_offset) + " is empty or not aligned to " +
        std::to_string(f.text_align));
  f.param_count = f.param_bytes / 8;
  for (uint32_t i = 0; i < f.param_count; i++) {
    f.param_offsets.push_back(8 * i);
    f.param_sizes.push_back(8);
  }
  return f;
}

}  // namespace capgraph
