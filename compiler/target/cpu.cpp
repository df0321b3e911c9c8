// The CPU in the compiler's table: this machine's CPU or a named one (codegen/cpu_target.h),
// compiled by codegen/cpu_codegen.cpp, with the layouts its channel tiles are made for.
#include "codegen/cpu_channel_tile.h"
#include "compile.h"
#include "knobs.h"
#include "schedule/fuse.h"
#include "schedule/layout.h"
#include "target/target_table.h"

namespace capgraph {

namespace {

bool cpu_matches(const std::string &name) { return name.empty() || name.rfind("cpu", 0) == 0; }

TargetCode cpu_codegen_target(const Program &p, const std::string &name, int jobs) {
  TargetCode c;
  c.target = cpu_target_named(name);
  c.code = cpu_codegen(p, c.target, jobs);
  return c;
}

// The CPU's layouts: channel-blocked activations and packed weights, in blocks of the target's
// vector width (CAPGRAPH_NO_BLOCK=1 turns them off, for experiments).
void cpu_layouts(Program &p, const std::string &name, CompileReport &r) {
  if (knob_get("CAPGRAPH_NO_BLOCK")) return;
  const CpuTarget &cpu = cpu_target_named(name);
  const int64_t block = cpu.channel_block;
  r.blocked_buffers = program_block_channels(p, block);
  program_block_products(p, block);
  program_pack_weights(p, block);
  program_pack_row_weights(p, block);
  // After the layouts: a product is fused only where its channel tile takes the converted input
  // (elsewhere the float copy stays; CAPGRAPH_NO_INPUT_FUSE=1 keeps it everywhere).
  if (!knob_get("CAPGRAPH_NO_INPUT_FUSE"))
    r.input_casts_fused = program_fuse_input_casts(p, [&](const Kernel &k) {
      ChannelTilePlan cp = channel_tile_plan(k, p, cpu);
      return cp.ok && cp.x_expr >= 0;
    });
  r.fused += r.input_casts_fused;
}

}  // namespace

const TargetEntry cpu_target_entry = {.family = "cpu",
                                      .matches = &cpu_matches,
                                      .names = &cpu_target_names,
                                      .threads = true,
                                      .codegen = &cpu_codegen_target,
                                      .layouts = &cpu_layouts};

}  // namespace capgraph
