// The back half of the Adreno code generator: Mesa's ir3 for a6xx, driven through its own shader
// API (ir3_finalize_nir, ir3_shader_from_nir, ir3_shader_create_variant: the sequence Mesa's
// gallium driver uses for compute shaders, src/gallium/drivers/freedreno/ir3/ir3_gallium.c), and
// the facts of each variant read back and checked. Sources for what each fact drives in the
// dispatch: ../shared/research/adreno_plan.md §1c and §2.3 (Mesa fd6_compute.cc, tinygrad
// ops_qcom.py).
#include "adreno_codegen.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>

#include "adreno_nir_emit.h"
#include "adreno_tile_choice.h"
#include "codegen/cpu_codegen.h"
#include "codegen/kernel_emit.h"
#include "error.h"

// Mesa (C headers; the ir3 ones wrap themselves in extern "C").
#include "common/freedreno_dev_info.h"
#include "freedreno/isa/ir3-isa.h"
#include "ir3_compiler.h"
#include "ir3_nir.h"
#include "ir3_shader.h"
#include "nir.h"
#include "util/ralloc.h"

namespace capgraph {

namespace {

// Not a register (ir3's regid(63, 0)): the system value is not used by the kernel.
constexpr uint32_t kNoRegid = 0xfc;

struct ShaderDeleter {
  void operator()(ir3_shader *s) const { ir3_shader_destroy(s); }
};

// An ir3 compiler for one chip. ir3 keeps the fd_dev_id pointer it is created with, so the id
// lives as long as the compiler.
struct Ir3Compiler {
  fd_dev_id id{};
  ir3_compiler *compiler = nullptr;
  explicit Ir3Compiler(const AdrenoTarget &t) {
    id.gpu_id = t.gpu_id;
    id.chip_id = t.chip_id;
    const struct fd_dev_info *info = fd_dev_info_raw(&id);
    if (!info) throw Error("Mesa does not know the Adreno chip of target " + t.name);
    ir3_compiler_options options{};
    options.disable_cache = true;  // offline: every kernel is compiled once, no disk cache
    compiler = ir3_compiler_create(nullptr, &id, info, &options);
    if (!compiler) throw Error("Mesa's ir3 compiler cannot be created for " + t.name);
    // No shader preamble (shps/getone/stc/shpe moving constants once per workgroup): the
    // configuration tinygrad's QCOM:IR3 runs openpilot's models with on a630
    // (runtime/support/compiler_mesa.py, IR3Compiler: `cc.has_preamble = False`), so the dispatch
    // the runtime will write has been exercised on hardware. Sources:
    // ../shared/research/adreno_plan.md §1c.
    compiler->has_preamble = false;
  }
  ~Ir3Compiler() { ir3_compiler_destroy(compiler); }
  Ir3Compiler(const Ir3Compiler &) = delete;
  Ir3Compiler &operator=(const Ir3Compiler &) = delete;
};

// Checks what the runtime relies on: every parameter in the constant file, nothing that needs a
// descriptor the capture does not carry. Mesa's own drivers bind such state per draw; a capture's
// dispatch is fixed at compile time, so anything unexpected here is an error, not a guess.
void facts_check(const Kernel &k, const AdrenoTarget &t, const ir3_shader_variant *v,
                 const AdrenoKernelFacts &f, const AdrenoNirKernel &nk) {
  auto fail = [&](const std::string &what) {
    throw Error("kernel " + k.name + " (target " + t.name + "): " + what);
  };
  const struct ir3_const_state *cs = v->const_state;
  const ir3_const_allocation &params = cs->allocs.consts[IR3_CONST_ALLOC_KERNEL_PARAMS];
  if (f.params_bytes > 0) {
    if (params.size_vec4 * 16 < f.params_bytes)
      fail("ir3 gave the kernel parameters " + std::to_string(params.size_vec4 * 16) +
           " bytes of constants, they need " + std::to_string(f.params_bytes));
    if (params.offset_vec4 * 16 + f.params_bytes > f.constlen_vec4 * 16)
      fail("the kernel parameters end past the loaded constant file (constlen " +
           std::to_string(f.constlen_vec4) + " vec4)");
  }
  if (cs->ubo_state.num_enabled != 0)
    fail("ir3 reads " + std::to_string(cs->ubo_state.num_enabled) +
         " UBO ranges; the capture binds none");
  if (cs->consts_ubo.idx >= 0 || cs->driver_params_ubo.idx >= 0)
    fail("ir3 placed constants or driver params in a UBO");
  if (v->constant_data_size > 0)
    fail("the kernel has NIR constant data, which the capture does not upload");
  if (v->num_ibos != 0 || v->num_ssbos != 0)
    fail("the kernel uses storage buffers or writable images; the capture binds none");
  // Textures: exactly the images the emitter read (texture and sampler i: images[i]), bound
  // without bindless descriptors.
  if (v->bindless_tex || v->bindless_samp)
    fail("ir3 made the kernel's textures bindless; the capture binds them by slot");
  if (v->num_samp != (int)f.images.size())
    fail("ir3 counts " + std::to_string(v->num_samp) + " samplers, the kernel reads " +
         std::to_string(f.images.size()) + " images");
  if (v->info.max_reg + 1 > 64 || v->info.max_half_reg + 1 > 64)
    fail("register footprint over the 6-bit field of SP_CS_CNTL_0");
  // The shared memory the dispatch programs (SP_CS_CTRL_REG1 SHARED_SIZE) is this fact: it must
  // cover what the NIR declared, and fit the chip.
  if (f.shared_memory_bytes < nk.shared_bytes)
    fail("ir3 reports " + std::to_string(f.shared_memory_bytes) +
         " bytes of shared memory, the kernel declares " + std::to_string(nk.shared_bytes));
  if (f.shared_memory_bytes > t.shared_bytes)
    fail(std::to_string(f.shared_memory_bytes) + " bytes of shared memory, over the " +
         std::to_string(t.shared_bytes) + " a workgroup may have");
  // Workgroups or work items that cannot tell themselves apart would all do the same work.
  if (f.grid[0] > 1 && f.workgroup_id_regid == kNoRegid)
    fail("the kernel runs several workgroups but reads no workgroup id");
  if (f.work_items > (int64_t)f.grid[0] && f.local_id_regid == kNoRegid)
    fail("the kernel runs several work items per workgroup but reads no local id");
}

AdrenoKernelFacts variant_facts(const Kernel &k, const AdrenoTarget &t, const ir3_shader_variant *v,
                                const AdrenoNirKernel &nk) {
  AdrenoKernelFacts f;
  const uint8_t *bin = reinterpret_cast<const uint8_t *>(v->bin);
  f.binary.assign(bin, bin + v->info.size);
  f.instr_dwords = v->info.sizedwords;
  f.instr_count = v->info.instrs_count;
  f.full_regs = (uint32_t)(v->info.max_reg + 1);
  f.half_regs = (uint32_t)(v->info.max_half_reg + 1);
  f.merged_regs = v->mergedregs;
  f.branch_stack = ir3_shader_branchstack_hw(v);
  f.private_memory_bytes = v->pvtmem_size;
  f.private_memory_per_wave = v->pvtmem_per_wave;
  f.shared_memory_bytes = v->shared_size;
  f.double_threadsize = v->info.double_threadsize;
  f.max_waves = (uint32_t)v->info.max_waves;
  const struct ir3_const_state *cs = v->const_state;
  f.constlen_vec4 = v->constlen;
  f.params_offset_vec4 = cs->allocs.consts[IR3_CONST_ALLOC_KERNEL_PARAMS].offset_vec4;
  f.params_bytes = nk.param_bytes;
  f.immediates_offset_vec4 = cs->allocs.max_const_offset_vec4;
  // Immediates past constlen are ones the shader does not read; Mesa uploads only those inside
  // (ir3_emit_immediates in src/gallium/drivers/freedreno/ir3/ir3_const.h), and so does the
  // capture.
  size_t imm_room = v->constlen > f.immediates_offset_vec4
                        ? 4 * (size_t)(v->constlen - f.immediates_offset_vec4)
                        : 0;
  f.immediates.assign(cs->immediates,
                      cs->immediates + std::min<size_t>(cs->immediates_count, imm_room));
  const ir3_const_allocation &dp = cs->allocs.consts[IR3_CONST_ALLOC_DRIVER_PARAMS];
  if (dp.size_vec4 > 0 && dp.offset_vec4 < v->constlen)
    f.driver_params_offset_vec4 = dp.offset_vec4;
  f.workgroup_id_regid = v->cs.work_group_id;
  f.local_id_regid = v->cs.local_invocation_id;
  f.workgroup_size[0] = nk.group_size;
  f.work_items = nk.work_items;
  f.lanes = (uint32_t)nk.lanes;
  f.grid[0] = (uint32_t)nk.grid;
  f.group_reduce = nk.group_reduce;
  f.reduce_split = (uint32_t)nk.group_parts;
  f.tiled = nk.tiled;
  if (nk.tiled) f.tile_m = (uint32_t)nk.plan.tm, f.tile_n = (uint32_t)nk.plan.tn;
  f.images = nk.images;
  facts_check(k, t, v, f, nk);
  return f;
}

// Mesa's compiler state is per ir3_compiler and NIR's type singletons are global: kernels compile
// one at a time (a few ms each).
std::mutex &mesa_mutex() {
  static std::mutex m;
  return m;
}

// Kernel k compiled by ir3 with the schedule's facts `g` (the workgroup size and micro tile of
// one shape); `plan` receives the tile plan it was built with.
AdrenoKernelFacts kernel_compile(ir3_compiler *c, const Kernel &k, const Program &p,
                                 const AdrenoTarget &t, const GpuFacts &g, GpuTilePlan *plan,
                                 int window_lanes = 0, AdrenoStraightCode *code = nullptr,
                                 bool image_b = false) {
  AdrenoNirKernel nk =
      adreno_nir_build(k, p, ir3_get_compiler_options(c), g, window_lanes, image_b);
  *plan = nk.plan;
  nir_shader *s = nk.shader;
  if (getenv("CAPGRAPH_DUMP_NIR")) nir_print_shader(s, stderr);
  // Compiled in only with a validating Mesa (adreno_nir_validated()); there a malformed shader
  // aborts with NIR's report. Release ir3 does not check its input: the staging phi that was
  // malformed (adreno_nir_emit.cpp) compiled with g++ and crashed ir3's register allocation with
  // clang. The dominance check is not part of nir_validate_shader's default run.
  nir_validate_shader(s, "capgraph adreno_nir_build");
  nir_validate_ssa_dominance(s, "capgraph adreno_nir_build");
  NIR_PASS(_, s, nir_lower_vars_to_ssa);
  ir3_shader_nir_options nir_options{};
  ir3_finalize_nir(c, &nir_options, s);
  ir3_shader_options options{};
  // Waves of 64 or 128 work items, as ir3 prefers; the facts say which it picked.
  options.api_wavesize = IR3_SINGLE_OR_DOUBLE;
  options.real_wavesize = IR3_SINGLE_OR_DOUBLE;
  std::unique_ptr<ir3_shader, ShaderDeleter> shader(
      ir3_shader_from_nir(c, s, &options, nullptr));    // owns s now
  shader->cs.req_input_mem = (nk.param_bytes + 3) / 4;  // dwords of kernel parameters
  ir3_shader_key key{};
  ir3_shader_variant *v = ir3_shader_create_variant(shader.get(), &key, false);
  if (!v)
    throw Error("kernel " + k.name + " (target " + t.name + "): Mesa's ir3 failed to compile it");
  AdrenoKernelFacts f = variant_facts(k, t, v, nk);
  if (code) {
    const ir3_info &i = v->info;
    code->instrs = i.instrs_count;
    code->nops = i.nops_count;
    code->alu = i.instrs_per_cat[1] + i.instrs_per_cat[2] + i.instrs_per_cat[3];
    code->sfu = i.instrs_per_cat[4];
    code->mem = i.instrs_per_cat[5] + i.instrs_per_cat[6] + i.instrs_per_cat[7];
    code->flow = i.instrs_per_cat[0] > i.nops_count ? i.instrs_per_cat[0] - i.nops_count : 0;
    code->ss = i.ss;
    code->sy = i.sy;
  }
  ralloc_free(v);
  if (getenv("CAPGRAPH_DUMP_IR3"))  // the machine code as Mesa's disassembler reads it
    std::fprintf(stderr, "kernel %s:\n%s\n", k.name.c_str(), adreno_disassemble(f, t).text.c_str());
  return f;
}

// An untiled kernel: on the window path (adreno_window_lanes) in the lane count of lowest static
// estimate (adreno_window_cost; the fewer lanes on a tie, one that spills never over one that
// does not), else as the target's workgroup gives it.
AdrenoKernelFacts kernel_compile_window(ir3_compiler *c, const Kernel &k, const Program &p,
                                        const AdrenoTarget &t, const GpuFacts &g) {
  GpuTilePlan plan;
  AdrenoKernelFacts best;
  bool have = false;
  for (int lanes : adreno_window_lanes(k, p)) {
    AdrenoStraightCode code;
    AdrenoKernelFacts f = kernel_compile(c, k, p, t, g, &plan, lanes, &code);
    const unsigned wave = f.double_threadsize ? 128 : 64;
    const AdrenoTileCost cost =
        adreno_window_cost(f.work_items, f.workgroup_size[0], wave, f.full_regs, code);
    f.tile_estimate_us = cost.us;
    if (getenv("CAPGRAPH_ADRENO_TILE_LOG"))  // what the choice weighed (not a knob: no effect)
      std::fprintf(stderr,
                   "window %s %d lanes: wave %u regs %u spill %u instrs %u (alu %u mem %u nops %u "
                   "sy %u): %.1f us (%s; issue %.0f latency %.0f clk, %u waves resident)\n",
                   k.name.c_str(), lanes, wave, f.full_regs, f.private_memory_bytes, code.instrs,
                   code.alu, code.mem, code.nops, code.sy, cost.us, cost.bound, cost.issue_clk,
                   cost.latency_clk, cost.resident_waves);
    const bool spills = f.private_memory_bytes > 0, best_spills = best.private_memory_bytes > 0;
    if (!have || (best_spills && !spills) ||
        (spills == best_spills && f.tile_estimate_us < best.tile_estimate_us))
      best = std::move(f), have = true;
  }
  if (!have) return kernel_compile(c, k, p, t, g, &plan);
  if (getenv("CAPGRAPH_ADRENO_TILE_LOG"))
    std::fprintf(stderr, "window %s: chose %u lanes, %.1f us\n", k.name.c_str(), best.lanes,
                 best.tile_estimate_us);
  return best;
}

// Kernel k in the shape the a630 cost model finds cheapest. A kernel the tile schedule does not
// cover keeps the target's workgroup; a tiled one is compiled in every candidate shape
// (adreno_tile_shapes) whose plan exists, and the one of lowest static estimate
// (adreno_tile_cost, from its plan and ir3's register footprint and wave size) is kept, the
// earlier candidate on a tie. A shape that spills to private memory is never chosen over one that
// does not.
AdrenoKernelFacts kernel_compile_chosen(ir3_compiler *c, const Kernel &k, const Program &p,
                                        const AdrenoTarget &t) {
  const GpuFacts base = adreno_gpu_facts(t);
  GpuTilePlan plan;
  if (!gpu_tile_plan(k, p, base).ok) return kernel_compile_window(c, k, p, t, base);
  AdrenoKernelFacts best;
  bool have = false;
  uint32_t tried = 0;
  for (const AdrenoTileShape &s : adreno_tile_shapes()) {
    GpuFacts g = base;
    g.group_size = s.group, g.micro_m = s.tm, g.micro_n = s.tn, g.stage_batch = s.batch;
    const GpuTilePlan shape_plan = gpu_tile_plan(k, p, g);
    if (!shape_plan.ok) continue;
    // A shape reading the weight as an image only where the weight qualifies.
    if (s.image_b && !adreno_image_operand(k, p, shape_plan).width) continue;
    AdrenoKernelFacts f = kernel_compile(c, k, p, t, g, &plan, 0, nullptr, s.image_b);
    tried++;
    const AdrenoTileCost cost =
        adreno_tile_cost(k, plan, s, f.double_threadsize ? 128 : 64, f.full_regs);
    f.tile_estimate_us = cost.us;
    if (getenv("CAPGRAPH_ADRENO_TILE_LOG"))  // what the choice weighed (not a knob: no effect)
      std::fprintf(stderr,
                   "tile %s %s: wave %u regs %u spill %u: %.1f us (%s; issue %.0f shared %.0f l2 "
                   "%.0f latency %.0f clk, %u waves resident)\n",
                   k.name.c_str(), s.text().c_str(), f.double_threadsize ? 128u : 64u, f.full_regs,
                   f.private_memory_bytes, cost.us, cost.bound, cost.issue_clk, cost.lds_clk,
                   cost.l2_clk, cost.latency_clk, cost.resident_waves);
    const bool spills = f.private_memory_bytes > 0, best_spills = best.private_memory_bytes > 0;
    if (!have || (best_spills && !spills) ||
        (spills == best_spills && f.tile_estimate_us < best.tile_estimate_us))
      best = std::move(f), have = true;
  }
  if (!have) return kernel_compile(c, k, p, t, base, &plan);  // a forced shape without a plan
  best.tile_candidates = tried;
  if (getenv("CAPGRAPH_ADRENO_TILE_LOG"))
    std::fprintf(stderr, "tile %s: chose %u:%ux%u%s of %u candidates, %.1f us\n", k.name.c_str(),
                 best.workgroup_size[0], best.tile_m, best.tile_n,
                 best.images.empty() ? "" : " (weight as an image)", tried, best.tile_estimate_us);
  return best;
}

}  // namespace

bool adreno_available() { return true; }

// This file is compiled without NDEBUG exactly when the linked Mesa is the validating variant
// (compiler/CMakeLists.txt, MESA_IR3_VALIDATES).
bool adreno_nir_validated() {
#ifdef NDEBUG
  return false;
#else
  return true;
#endif
}

AdrenoCodegenResult adreno_codegen(const Program &p, const AdrenoTarget &t) {
  AdrenoCodegenResult r;
  KernelDedupe d = kernels_dedupe(p);
  r.unique_of = d.unique_of;
  std::lock_guard<std::mutex> lock(mesa_mutex());
  glsl_type_singleton_init_or_ref();
  struct TypesRelease {
    ~TypesRelease() { glsl_type_singleton_decref(); }
  } types_release;
  Ir3Compiler c(t);
  for (int rep : d.reps)
    r.unique.push_back(kernel_compile_chosen(c.compiler, p.kernels[rep], p, t));
  return r;
}

AdrenoDisassembly adreno_disassemble_words(const std::vector<uint8_t> &code,
                                           const AdrenoTarget &t) {
  AdrenoDisassembly d;
  char *text = nullptr;
  size_t size = 0;
  FILE *out = open_memstream(&text, &size);
  if (!out) throw Error("cannot open a memory stream for the disassembly");
  struct Counts {
    int matched = 0;
  } counts;
  isa_decode_options o{};
  o.gpu_id = t.gpu_id;
  o.show_errors = true;  // decode errors are printed after the instruction, "\t; ..."
  o.max_errors = 0;      // decode everything: the test wants every bad word, not the first five
  o.branch_labels = true;
  o.cbdata = &counts;
  o.post_instr_cb = [](void *data, unsigned, void *) { static_cast<Counts *>(data)->matched++; };
  ir3_isa_disasm(const_cast<uint8_t *>(code.data()), (int)(code.size() / 8 * 8), out, &o);
  fclose(out);
  d.text.assign(text, size);
  free(text);
  int words = (int)(code.size() / 8);
  d.instructions = counts.matched;
  // A word with no matching encoding is never counted as matched; a matched one with decode
  // errors prints them after a tab and "; ".
  d.errors = words - counts.matched;
  for (size_t at = d.text.find("\t; "); at != std::string::npos; at = d.text.find("\t; ", at + 1))
    d.errors++;
  return d;
}

AdrenoDisassembly adreno_disassemble(const AdrenoKernelFacts &f, const AdrenoTarget &t) {
  std::vector<uint8_t> code(
      f.binary.begin(), f.binary.begin() + std::min<size_t>(f.binary.size(), f.instr_dwords * 4u));
  return adreno_disassemble_words(code, t);
}

}  // namespace capgraph
