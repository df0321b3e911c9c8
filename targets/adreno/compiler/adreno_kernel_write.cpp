#include "adreno_kernel_write.h"

#include "error.h"

namespace capgraph {

flatbuffers::Offset<fb::AdrenoKernel> adreno_kernel_write(flatbuffers::FlatBufferBuilder &fbb,
                                                          const AdrenoKernelFacts &f,
                                                          const AdrenoTarget &t) {
  auto imm = fbb.CreateVector(f.immediates);
  // Absent without images: a capture without them is byte for byte what it was before them.
  flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<fb::AdrenoImage>>> images;
  if (!f.images.empty()) {
    std::vector<flatbuffers::Offset<fb::AdrenoImage>> v;
    for (const adreno::image_facts &m : f.images)
      v.push_back(fb::CreateAdrenoImage(fbb, m.slot, m.format, m.width, m.height, m.pitch));
    images = fbb.CreateVector(v);
  }
  fb::AdrenoKernelBuilder k(fbb);
  k.add_gpu_id(t.gpu_id);
  k.add_chip_id(t.chip_id);
  k.add_instr_dwords(f.instr_dwords);
  k.add_instr_count(f.instr_count);
  k.add_full_regs(f.full_regs);
  k.add_half_regs(f.half_regs);
  k.add_merged_regs(f.merged_regs);
  k.add_branch_stack(f.branch_stack);
  k.add_private_memory_bytes(f.private_memory_bytes);
  k.add_private_memory_per_wave(f.private_memory_per_wave);
  k.add_shared_memory_bytes(f.shared_memory_bytes);
  k.add_double_threadsize(f.double_threadsize);
  k.add_constlen_vec4(f.constlen_vec4);
  k.add_params_offset_vec4(f.params_offset_vec4);
  k.add_params_bytes(f.params_bytes);
  k.add_immediates_offset_vec4(f.immediates_offset_vec4);
  k.add_immediates(imm);
  k.add_driver_params_offset_vec4(f.driver_params_offset_vec4);
  k.add_workgroup_id_regid(f.workgroup_id_regid);
  k.add_local_id_regid(f.local_id_regid);
  k.add_workgroup_size_x(f.workgroup_size[0]);
  k.add_workgroup_size_y(f.workgroup_size[1]);
  k.add_workgroup_size_z(f.workgroup_size[2]);
  k.add_grid_x(f.grid[0]);
  k.add_grid_y(f.grid[1]);
  k.add_grid_z(f.grid[2]);
  k.add_lanes(f.lanes);
  k.add_tile_m(f.tile_m);
  k.add_tile_n(f.tile_n);
  k.add_reduce_split(f.reduce_split);
  if (!f.images.empty()) k.add_images(images);
  return k.Finish();
}

AdrenoKernelFacts adreno_kernel_read(const fb::AdrenoKernel &k, const std::string &what) {
  AdrenoKernelFacts f;
  f.instr_dwords = k.instr_dwords();
  f.instr_count = k.instr_count();
  f.full_regs = k.full_regs();
  f.half_regs = k.half_regs();
  f.merged_regs = k.merged_regs();
  f.branch_stack = k.branch_stack();
  f.private_memory_bytes = k.private_memory_bytes();
  f.private_memory_per_wave = k.private_memory_per_wave();
  f.shared_memory_bytes = k.shared_memory_bytes();
  f.double_threadsize = k.double_threadsize();
  f.constlen_vec4 = k.constlen_vec4();
  f.params_offset_vec4 = k.params_offset_vec4();
  f.params_bytes = k.params_bytes();
  f.immediates_offset_vec4 = k.immediates_offset_vec4();
  if (k.immediates()) f.immediates.assign(k.immediates()->begin(), k.immediates()->end());
  f.driver_params_offset_vec4 = k.driver_params_offset_vec4();
  f.workgroup_id_regid = k.workgroup_id_regid();
  f.local_id_regid = k.local_id_regid();
  f.workgroup_size[0] = k.workgroup_size_x();
  f.workgroup_size[1] = k.workgroup_size_y();
  f.workgroup_size[2] = k.workgroup_size_z();
  f.grid[0] = k.grid_x();
  f.grid[1] = k.grid_y();
  f.grid[2] = k.grid_z();
  f.lanes = k.lanes();
  f.tile_m = k.tile_m();
  f.tile_n = k.tile_n();
  f.reduce_split = k.reduce_split();
  if (k.images())
    for (const fb::AdrenoImage *m : *k.images())
      f.images.push_back({m->slot(), m->format(), m->width(), m->height(), m->pitch()});
  auto bad = [&](const std::string &why) { throw Error(what + ": Adreno kernel " + why); };
  // Field widths of the registers these go to (../shared/research/adreno_plan.md §2.3):
  // FULLREGFOOTPRINT and HALFREGFOOTPRINT are 6 bits, BRANCHSTACK 6 bits, LOCALSIZE 10 bits.
  if (f.full_regs > 63 || f.half_regs > 63) bad("register footprint over 63 vec4 registers");
  if (f.branch_stack > 63) bad("branch stack over 63");
  for (uint32_t w : f.workgroup_size)
    if (w == 0 || w > 1024) bad("workgroup size outside 1..1024");
  if (f.workgroup_size[0] * f.workgroup_size[1] * f.workgroup_size[2] > 1024)
    bad("workgroup of more than 1024 work items");
  if (f.grid[0] == 0 || f.grid[1] == 0 || f.grid[2] == 0) bad("empty launch grid");
  if (f.constlen_vec4 > 512) bad("constant file over 512 vec4");
  if ((uint64_t)f.params_offset_vec4 * 16 + f.params_bytes > (uint64_t)f.constlen_vec4 * 16)
    bad("parameters outside the loaded constant file");
  if ((uint64_t)f.immediates_offset_vec4 * 4 + f.immediates.size() > (uint64_t)f.constlen_vec4 * 4)
    bad("immediates outside the loaded constant file");
  if (f.instr_dwords == 0 || f.instr_dwords % 2)
    bad("instruction size not a whole number of 64-bit instructions");
  if (f.lanes == 0) bad("zero lanes");
  if (f.images.size() > adreno::max_images) bad("more than 16 images");
  for (size_t i = 0; i < f.images.size(); i++) {
    std::string why;
    // The buffer's size is the loader's to check (adreno_kernel_check); here only what the
    // descriptor's fields can hold.
    if (!adreno::image_facts_check(f.images[i], UINT64_MAX, &why))
      bad("image " + std::to_string(i) + ": " + why);
  }
  return f;
}

}  // namespace capgraph
