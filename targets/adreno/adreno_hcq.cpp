#include "adreno_hcq.h"

#include <algorithm>
#include <cstring>

#include "adreno_chips.h"
#include "adreno_pm4.h"
#include "adreno_texture.h"
#include "kgsl_sys.h"
#include "kgsl_transport.h"

namespace capgraph::adreno {
namespace {

uint32_t lo(uint64_t v) { return uint32_t(v); }
uint32_t hi(uint64_t v) { return uint32_t(v >> 32); }
uint32_t div_up(uint32_t a, uint32_t b) { return (a + b - 1) / b; }

// The chip whose facts (adreno_chips.h) the checks and the encoder use: capgraph compiles for the
// a630 only.
const chip &a630() {
  static const chip &c = *chip_find("a630");
  return c;
}

// a6xx limits: a 256-vec4 compute constant file (CONSTLEN_256, the largest a6xx CONSTANTRAMMODE;
// ir3_compiler.c max_const_compute for gen 6), 1024 work items per workgroup.
constexpr uint32_t max_constlen_vec4 = 256;
constexpr uint32_t max_workgroup = 1024;

// Private memory (Mesa ir3_gallium.c ir3_get_private_mem, fd6_program.cc fd6_emit_shader): each of
// the chip's SP cores (num_sp_cores) holds fibers_per_sp = 128 * 16 fibers, each with the
// per-fiber size rounded up to 512 bytes; one buffer for the capture, sized for its largest
// kernel, whose per-fiber size every kernel's registers then use (as Mesa's context does).
constexpr uint64_t fibers_per_sp = 128 * 16;
constexpr uint32_t max_private_bytes = 255 * 512;  // MEMSIZEPERITEM: 8 bits of 512-byte units

uint64_t private_per_fiber(const fb::Capture *c) {
  uint64_t most = 0;
  for (const fb::Kernel *k : *c->kernels())
    if (const fb::AdrenoKernel *a = k->facts_as_AdrenoKernel())
      most = std::max<uint64_t>(most, (uint64_t(a->private_memory_bytes()) + 511) / 512 * 512);
  return most;
}
uint64_t private_per_sp(uint64_t per_fiber) {
  return (per_fiber * fibers_per_sp + 4095) / 4096 * 4096;
}

uint64_t adreno_scratch_bytes(const fb::Capture *c) {
  return private_per_sp(private_per_fiber(c)) * a630().num_sp_cores;
}

// How many vec4 of ir3's driver params (struct ir3_driver_params_cs, ir3_shader.h) are uploaded:
// num_work_groups (dwords 0-2), work_dim (3), base_group (4-6), subgroup_size (7),
// local_group_size (8-10), subgroup_id_shift (11).
constexpr uint32_t driver_params_vec4 = 3;

// How many vec4 of driver params the dispatch loads: at most driver_params_vec4, as many as fit
// below constlen.
uint32_t driver_params_units_of(const fb::AdrenoKernel *a) {
  const uint32_t room = (a->constlen_vec4() > a->driver_params_offset_vec4())
                            ? a->constlen_vec4() - a->driver_params_offset_vec4()
                            : 0;
  return room < driver_params_vec4 ? room : driver_params_vec4;
}

// The kernel's images (AdrenoKernel.images, adreno_texture.h) as facts.
image_facts image_of(const fb::AdrenoImage *m) {
  image_facts f;
  f.slot = m->slot(), f.format = m->format(), f.width = m->width(), f.height = m->height();
  f.pitch = m->pitch();
  return f;
}
uint32_t images_of(const fb::AdrenoKernel *a) { return a->images() ? a->images()->size() : 0; }

// The kernel-argument block of a launch: the parameters (buffer addresses) at 0, and for a kernel
// with images its texture state beside them, written by the encoder at record time (a weight's
// address never changes; adreno_kernel_check refuses images of other buffers): the descriptors
// (64-byte aligned, SP_CS_TEX_CONST's alignment in a6xx.xml), the samplers (16), and the zero
// border colour entry (128).
struct kernarg_layout {
  uint32_t descriptors = 0, samplers = 0, border = 0, size = 0;
};
kernarg_layout kernarg_layout_of(const fb::AdrenoKernel *a) {
  kernarg_layout l;
  const uint32_t params = (a->params_bytes() + 15) / 16 * 16;
  const uint32_t n = images_of(a);
  if (!n) return l.size = params ? params : 16, l;
  l.descriptors = (params + 63) / 64 * 64;
  l.samplers = l.descriptors + n * tex_const_dwords * 4;
  l.border = (l.samplers + n * tex_samp_dwords * 4 + border_color_bytes - 1) / border_color_bytes *
             border_color_bytes;
  l.size = l.border + border_color_bytes;
  return l;
}

class adreno_encoder final : public hcq::encoder {
 public:
  adreno_encoder(const fb::Capture *c, std::vector<uint32_t> *out)
      : encoder(out), w_(out), c_(c), per_fiber_(c ? private_per_fiber(c) : 0) {}

  // One dispatch, self-contained (every register it needs, so the order of kernels in the
  // indirect buffer does not matter). Sources: adreno_plan.md §2.3 (Mesa fd6_compute.cc
  // fd6_launch_grid / cs_program_emit, tinygrad ops_qcom.py QCOMComputeQueue.exec).
  void exec(const hcq::dispatch &d) override {
    const adreno_dispatch &f = d.facts_as<adreno_dispatch>();
    const fb::AdrenoKernel *a = c_->kernels()->Get(f.kernel)->facts_as_AdrenoKernel();
    const uint32_t local[3] = {a->workgroup_size_x(), a->workgroup_size_y(), a->workgroup_size_z()};
    const uint32_t grid[3] = {a->grid_x(), a->grid_y(), a->grid_z()};
    const uint32_t constlen = (a->constlen_vec4() + 3) & ~3u;
    const uint32_t instrlen = div_up(a->instr_dwords() * 4, 128);
    const uint32_t threadsize = a->double_threadsize() ? THREAD128 : 0;
    const uint32_t wgsize_regid = a->driver_params_offset_vec4() == 0xffffffffu
                                      ? regid_none
                                      : a->driver_params_offset_vec4() * 4 + 8;

    w_.emit({{fields::CP_SET_MARKER::MODE, RM6_COMPUTE}});
    // Drop compute state loaded for the previous kernel, then re-arm.
    using inval = fields::HLSQ_INVALIDATE_CMD;
    w_.regs(HLSQ_INVALIDATE_CMD, {w_.word({{inval::CS_STATE, 1}, {inval::CS_IBO, 1}})});
    w_.regs(HLSQ_INVALIDATE_CMD, {0});
    const uint32_t nimages = images_of(a);
    w_.regs(SP_CS_TEX_COUNT, {nimages});
    w_.regs(SP_CS_IBO_COUNT, {0});
    // ir3 code: GL isam mode and constant demotion (tinygrad #16769: ir3 needs it).
    using mode = fields::SP_MODE_CONTROL;
    w_.regs(SP_MODE_CONTROL,
            {w_.word({{mode::CONSTANT_DEMOTION_ENABLE, 1}, {mode::ISAMMODE, ISAMMODE_GL}})});
    w_.regs(SP_TP_MODE_CNTL, {w_.word({{fields::SP_TP_MODE_CNTL::ISAMMODE, ISAMMODE_GL}})});
    w_.regs(SP_PERFCTR_ENABLE, {w_.word({{fields::SP_PERFCTR_ENABLE::CS, 1}})});
    w_.regs(TPL1_DBG_ECO_CNTL, {a630().tpl1_dbg_eco_cntl});
    w_.emit(CP_WAIT_FOR_IDLE);
    using nd = fields::HLSQ_CS_NDRANGE_0;
    using cntl0 = fields::HLSQ_CS_CNTL_0;
    using cntl1 = fields::HLSQ_CS_CNTL_1;
    w_.regs(HLSQ_CS_NDRANGE_0,
            {w_.word({{nd::KERNELDIM, 3},
                      {nd::LOCALSIZEX, local[0] - 1},
                      {nd::LOCALSIZEY, local[1] - 1},
                      {nd::LOCALSIZEZ, local[2] - 1}}),
             grid[0] * local[0], 0, grid[1] * local[1], 0, grid[2] * local[2],
             0,  // global sizes in items, offsets
             w_.word({{cntl0::WGIDCONSTID, a->workgroup_id_regid()},
                      {cntl0::WGSIZECONSTID, wgsize_regid},
                      {cntl0::WGOFFSETCONSTID, regid_none},
                      {cntl0::LOCALIDREGID, a->local_id_regid()}}),
             w_.word({{cntl1::LINEARLOCALIDREGID, regid_none},  // no linear local id
                      {cntl1::THREADSIZE, threadsize}}),
             1, 1, 1});  // KERNEL_GROUP: Mesa writes 1 (CP_EXEC_CS has the counts)
    const bool pvt = a->private_memory_bytes() > 0;
    const uint64_t per_sp = private_per_sp(per_fiber_);
    const uint32_t shared = a->shared_memory_bytes() ? (a->shared_memory_bytes() - 1) / 1024 : 0;
    const uint32_t ram_mode = constlen <= 128   ? CONSTLEN_128
                              : constlen <= 192 ? CONSTLEN_192
                                                : CONSTLEN_256;
    using reg0 = fields::SP_CS_CTRL_REG0;
    using reg1 = fields::SP_CS_CTRL_REG1;
    using param = fields::SP_CS_PVT_MEM_PARAM;
    using size = fields::SP_CS_PVT_MEM_SIZE;
    w_.regs(
        SP_CS_CTRL_REG0,
        {w_.word({{reg0::HALFREGFOOTPRINT, a->half_regs()},
                  {reg0::FULLREGFOOTPRINT, a->full_regs()},
                  {reg0::BRANCHSTACK, a->branch_stack()},
                  {reg0::THREADSIZE, threadsize},
                  {reg0::MERGEDREGS, a->merged_regs()}}),
         // SHARED_SIZE as Mesa: max(1, (bytes - 1) / 1K)
         w_.word({{reg1::SHARED_SIZE, shared < 1 ? 1 : shared}, {reg1::CONSTANTRAMMODE, ram_mode}}),
         0, 0,                        // BRANCH_COND, FIRST_EXEC_OFFSET
         lo(f.shader), hi(f.shader),  // OBJ_START
         w_.word({{param::MEMSIZEPERITEM, pvt ? per_fiber_ : 0}}), pvt ? lo(d.scratch) : 0,
         pvt ? hi(d.scratch) : 0,  // PVT_MEM_ADDR
         pvt ? w_.word({{size::TOTALPVTMEMSIZE, per_sp},
                        {size::PERWAVEMEMLAYOUT, a->private_memory_per_wave()}})
             : 0});
    w_.regs(SP_CS_INSTRLEN, {instrlen});
    // The return-address stack after the private memory.
    w_.regs(SP_CS_PVT_MEM_HW_STACK_OFFSET,
            {w_.word({{fields::SP_CS_PVT_MEM_HW_STACK_OFFSET::OFFSET, pvt ? per_sp : 0}})});
    // No fragment system values; the constant file's length, enabled.
    using c2 = fields::HLSQ_CONTROL_2_REG;
    using c3 = fields::HLSQ_CONTROL_3_REG;
    using c4 = fields::HLSQ_CONTROL_4_REG;
    w_.regs(HLSQ_CONTROL_2_REG,
            {w_.word({{c2::FACEREGID, regid_none},
                      {c2::SAMPLEID, regid_none},
                      {c2::SAMPLEMASK, regid_none},
                      {c2::CENTERRHW, regid_none}}),
             w_.word({{c3::IJ_PERSP_PIXEL, regid_none},
                      {c3::IJ_LINEAR_PIXEL, regid_none},
                      {c3::IJ_PERSP_CENTROID, regid_none},
                      {c3::IJ_LINEAR_CENTROID, regid_none}}),
             w_.word({{c4::IJ_PERSP_SAMPLE, regid_none},
                      {c4::IJ_LINEAR_SAMPLE, regid_none},
                      {c4::XYCOORDREGID, regid_none},
                      {c4::ZWCOORDREGID, regid_none}}),
             w_.word({{fields::HLSQ_CONTROL_5_REG::LINELENGTHREGID, regid_none}})});
    using cntl = fields::HLSQ_CS_CNTL;
    w_.regs(HLSQ_CS_CNTL, {w_.word({{cntl::CONSTLEN, constlen}, {cntl::ENABLED, 1}})});
    // Enabled; a texture and a sampler per image, no IBOs.
    using config = fields::SP_CS_CONFIG;
    w_.regs(SP_CS_CONFIG,
            {w_.word({{config::ENABLED, 1}, {config::NTEX, nimages}, {config::NSAMP, nimages}})});
    if (nimages) textures(d, a);
    // The shader: preload at most the instruction cache (Mesa fd6_emit_shader), the rest is
    // fetched from SP_CS_OBJ_START.
    using load = fields::CP_LOAD_STATE6_FRAG;
    const uint32_t cache = a630().instr_cache_units;
    const uint32_t preload = instrlen < cache ? instrlen : cache;
    w_.emit({{load::DST_OFF, 0},
             {load::STATE_TYPE, ST6_SHADER},
             {load::STATE_SRC, SS6_INDIRECT},
             {load::STATE_BLOCK, SB6_CS_SHADER},
             {load::NUM_UNIT, preload},
             {load::EXT_SRC_ADDR, f.shader}});
    // Constants: the parameters from the kernel-argument block (patched per launch by the core),
    // the immediates and the driver params inline.
    if (a->params_bytes())
      w_.emit({{load::DST_OFF, a->params_offset_vec4()},
               {load::STATE_TYPE, ST6_CONSTANTS},
               {load::STATE_SRC, SS6_INDIRECT},
               {load::STATE_BLOCK, SB6_CS_SHADER},
               {load::NUM_UNIT, div_up(a->params_bytes(), 16)},
               {load::EXT_SRC_ADDR, d.kernargs}});
    const uint32_t nimm = a->immediates() ? a->immediates()->size() : 0;
    if (nimm) {
      std::vector<uint32_t> data;
      for (uint32_t i = 0; i < div_up(nimm, 4) * 4; ++i)
        data.push_back(i < nimm ? a->immediates()->Get(i) : 0);
      w_.emit({{load::DST_OFF, a->immediates_offset_vec4()},
               {load::STATE_TYPE, ST6_CONSTANTS},
               {load::STATE_SRC, SS6_DIRECT},
               {load::STATE_BLOCK, SB6_CS_SHADER},
               {load::NUM_UNIT, div_up(nimm, 4)},
               {load::EXT_SRC_ADDR, 0}},
              data);
    }
    if (a->driver_params_offset_vec4() != 0xffffffffu) {
      const uint32_t units = driver_params_units_of(a);
      const uint32_t dp[12] = {grid[0],  grid[1],  grid[2],  3,
                               0,        0,        0,        a->double_threadsize() ? 128u : 64u,
                               local[0], local[1], local[2], 0};
      w_.emit({{load::DST_OFF, a->driver_params_offset_vec4()},
               {load::STATE_TYPE, ST6_CONSTANTS},
               {load::STATE_SRC, SS6_DIRECT},
               {load::STATE_BLOCK, SB6_CS_SHADER},
               {load::NUM_UNIT, units},
               {load::EXT_SRC_ADDR, 0}},
              std::vector<uint32_t>(dp, dp + units * 4));
    }
    using cs = fields::CP_EXEC_CS;
    w_.emit({{cs::NGROUPS_X, grid[0]}, {cs::NGROUPS_Y, grid[1]}, {cs::NGROUPS_Z, grid[2]}});
  }

  // CP_MEMCPY (A6XX-, Mesa adreno_pm4.xml; turnip tu_device.cc tu_copy_buffer) moves dwords. On
  // KGSL copies are recorded into the compute stream (hcq::target::copies_in_compute): the
  // signal before them flushes the caches (CACHE_FLUSH_TS) and the wait lets the copy start only
  // once that landed; the signal after them invalidates the caches the next kernels read through.
  void copy(uint64_t dst, uint64_t src, uint64_t size) override {
    if ((dst | src | size) % 4)
      return w_.fail("CP_MEMCPY copies whole dwords, not " + std::to_string(size) + " bytes");
    using f = fields::CP_MEMCPY;
    w_.emit({{f::DWORDS, size / 4}, {f::SRC, src}, {f::DST, dst}});
  }

  // After all work: the clock to addr + 8, then the value, low word first (a reader that sees
  // the new low word with the old high one reads a smaller value, never a larger one). Each
  // CACHE_FLUSH_TS write happens after the work before it and its cache flush (Mesa
  // fd6_event_write; tinygrad ops_qcom.py signal).
  void signal(uint64_t addr, uint64_t value) override {
    timestamp(addr + 8);
    using f = fields::CP_EVENT_WRITE;
    w_.emit(
        {{f::EVENT, CACHE_FLUSH_TS}, {f::TIMESTAMP, 1}, {f::ADDR_0, addr}, {f::VALUE, lo(value)}});
    w_.emit({{f::EVENT, CACHE_FLUSH_TS},
             {f::TIMESTAMP, 1},
             {f::ADDR_0, addr + 4},
             {f::VALUE, hi(value)}});
    w_.emit({{f::EVENT, CACHE_INVALIDATE}});
  }

  void wait(uint64_t addr, uint32_t value) override {
    using f = fields::CP_WAIT_REG_MEM;
    w_.emit({{f::FUNCTION, WRITE_GE},
             {f::POLL, POLL_MEMORY},
             {f::POLL_ADDR, addr},
             {f::REF, value},
             {f::MASK, 0xffffffffu},
             {f::DELAY_LOOP_CYCLES, 16}});
  }

  // Memory writes done and the engine idle before the next dispatch (tinygrad ops_qcom.py
  // memory_barrier: CP_WAIT_MEM_WRITES, CP_WAIT_FOR_IDLE).
  void barrier() override {
    w_.emit(CP_WAIT_MEM_WRITES);
    w_.emit(CP_WAIT_FOR_IDLE);
  }

  void interrupt(uint64_t mailbox, uint32_t id) override {
    using f = fields::CP_EVENT_WRITE;
    w_.emit({{f::EVENT, CACHE_FLUSH_TS},
             {f::TIMESTAMP, 1},
             {f::IRQ, 1},
             {f::ADDR_0, mailbox},
             {f::VALUE, id}});
  }

  // CP_ALWAYS_ON_COUNTER (64 bits) after the engine is idle.
  void timestamp(uint64_t addr) override {
    w_.emit(CP_WAIT_FOR_IDLE);
    using f = fields::CP_REG_TO_MEM;
    w_.emit({{f::REG, CP_ALWAYS_ON_COUNTER}, {f::CNT, 2}, {f::SIZE_64B, 1}, {f::DEST, addr}});
  }

  void call(uint64_t addr, uint64_t dwords) override {
    using f = fields::CP_INDIRECT_BUFFER;
    const uint64_t most = field_max(field_info(f::IB_SIZE));
    if (dwords > most)
      return w_.fail("an indirect buffer of " + std::to_string(dwords) +
                     " dwords is over CP_INDIRECT_BUFFER's " + std::to_string(most));
    w_.emit({{f::IB_BASE, addr}, {f::IB_SIZE, dwords}});
  }

  const std::string &error() const override { return w_.error(); }

 private:
  // The images' state, as Mesa's fd6_texture.cc emits a compute stage's (fd6_texture_state:
  // CP_LOAD_STATE6 of the samplers (ST6_SHADER) and descriptors (ST6_CONSTANTS) into SB6_CS_TEX,
  // indirect, then SP_CS_TEX_SAMP / SP_CS_TEX_CONST at the same addresses) and the border colour
  // table (fd6_emit.cc, SP_TP_BORDER_COLOR_BASE_ADDR). The descriptors, samplers and the zero
  // border entry go into the launch's kernel-argument block (kernarg_layout_of), each image's
  // base being the address the core wrote for its parameter.
  void textures(const hcq::dispatch &d, const fb::AdrenoKernel *a) {
    if (!d.kernargs_cpu) return w_.fail("images need the kernel-argument block's CPU mapping");
    const kernarg_layout l = kernarg_layout_of(a);
    const uint32_t n = images_of(a);
    for (uint32_t i = 0; i < n; ++i) {
      const image_facts m = image_of(a->images()->Get(i));
      uint64_t base = 0;
      memcpy(&base, d.kernargs_cpu + 8 * m.slot, 8);
      if (base % image_alignment)
        return w_.fail("image " + std::to_string(i) + "'s buffer at 0x" + std::to_string(base) +
                       " is not " + std::to_string(image_alignment) + "-byte aligned");
      uint32_t desc[tex_const_dwords], samp[tex_samp_dwords];
      image_tex_const(m, base, desc);
      image_sampler(samp);
      memcpy(d.kernargs_cpu + l.descriptors + i * sizeof desc, desc, sizeof desc);
      memcpy(d.kernargs_cpu + l.samplers + i * sizeof samp, samp, sizeof samp);
    }
    memset(d.kernargs_cpu + l.border, 0, border_color_bytes);
    using load = fields::CP_LOAD_STATE6_FRAG;
    // The n samplers (ST6_SHADER) and descriptors (ST6_CONSTANTS) of SB6_CS_TEX, each loaded
    // from the argument block and its address given to the register the SP reads it from.
    const auto tex_state = [&](uint32_t type, uint64_t at, uint32_t reg) {
      w_.emit({{load::DST_OFF, 0},
               {load::STATE_TYPE, type},
               {load::STATE_SRC, SS6_INDIRECT},
               {load::STATE_BLOCK, SB6_CS_TEX},
               {load::NUM_UNIT, n},
               {load::EXT_SRC_ADDR, at}});
      w_.regs(reg, {lo(at), hi(at)});
    };
    tex_state(ST6_SHADER, d.kernargs + l.samplers, SP_CS_TEX_SAMP);
    tex_state(ST6_CONSTANTS, d.kernargs + l.descriptors, SP_CS_TEX_CONST);
    const uint64_t border = d.kernargs + l.border;
    w_.regs(SP_TP_BORDER_COLOR_BASE_ADDR, {lo(border), hi(border)});
  }

  pm4_writer w_;
  const fb::Capture *c_;
  uint64_t per_fiber_;  // private memory bytes per fiber, the capture's largest
};

bool adreno_capture_matches(const char *capture_target) {
  return strncmp(capture_target, "adreno-", 7) == 0;
}

std::string adreno_capture_names() { return chip_names(); }

// The images of kernel i (adreno_texture.h): at most max_images, each a descriptor the a6xx takes
// over a parameter that is a weight in every launch of the kernel (the encoder writes its address
// into the descriptor once, at record time; an arena buffer could be rebound by the caller) and
// stays inside that weight's bytes. The weight's size is the KernelBounds' (in the checksum).
template <class Bad>
bool images_check(const fb::Capture *c, uint32_t i, const fb::AdrenoKernel *a, const Bad &bad) {
  const uint32_t n = images_of(a);
  if (!n) return true;
  if (n > max_images)
    return bad(std::to_string(n) + " images (at most " + std::to_string(max_images) + ")");
  const fb::Kernel *k = c->kernels()->Get(i);
  const fb::KernelBounds *b = k->bounds();
  for (uint32_t m = 0; m < n; ++m) {
    const image_facts f = image_of(a->images()->Get(m));
    const std::string what =
        "image " + std::to_string(m) + " (parameter " + std::to_string(f.slot) + ")";
    if (f.slot >= k->num_buffers())
      return bad(what + " is not one of its " + std::to_string(k->num_buffers()) + " buffers");
    if (!b || !b->buffer_sizes() || f.slot >= b->buffer_sizes()->size())
      return bad(what + ": the kernel's bounds give no size for its buffer");
    std::string why;
    if (!image_facts_check(f, b->buffer_sizes()->Get(f.slot), &why)) return bad(what + ": " + why);
    // Weights are placed 256-byte aligned (graph.cpp): the view's offset keeps the descriptor's
    // base aligned.
    for (const fb::Step *s : *c->steps()) {
      if (s->kind() != fb::StepKind::launch || s->launch()->kernel() != i) continue;
      const fb::BufferRef *ref =
          f.slot < s->launch()->buffers()->size() ? s->launch()->buffers()->Get(f.slot) : nullptr;
      if (!ref || ref->space() != fb::Space::weight)
        return bad(what + " is not a weight in every launch (an image's address is fixed at load)");
      if (ref->offset() % image_alignment)
        return bad(what + " views weight " + std::to_string(ref->index()) + " at offset " +
                   std::to_string(ref->offset()) + ", not " + std::to_string(image_alignment) +
                   "-byte aligned");
    }
  }
  return true;
}

bool adreno_kernel_check(const fb::Capture *c, uint32_t i, std::string *why) {
  const fb::Kernel *k = c->kernels()->Get(i);
  const std::string what = "kernel " + std::to_string(i) + " '" + k->name()->str() + "'";
  const auto bad = [&](const std::string &s) { return *why = what + ": " + s, false; };
  const fb::Program *p = c->programs()->Get(k->program());
  if (p->format() != fb::ProgramFormat::adreno_ir3)
    return bad("its program " + std::to_string(k->program()) + " is not an adreno_ir3 program");
  const fb::AdrenoKernel *a = k->facts_as_AdrenoKernel();
  if (!a) return bad("no AdrenoKernel launch facts");
  if ((a->chip_id() >> 24) != 6)
    return bad("chip id " + std::to_string(a->chip_id()) + " is not an a6xx's (core 6)");
  // ir3 pads a program to whole 128-byte units, the unit SP_CS_INSTRLEN counts: the instructions
  // end in the last one. A shorter count would set an INSTRLEN short of the code (fuzz_gpu_capture:
  // fake-adreno's emulator then ran off the end of the program).
  const uint64_t code_bytes = uint64_t(a->instr_dwords()) * 4;
  if (!code_bytes || code_bytes > p->binary()->size() ||
      (code_bytes + 127) / 128 * 128 != p->binary()->size())
    return bad("instr_dwords " + std::to_string(a->instr_dwords()) +
               " does not end in the last 128-byte unit of its " +
               std::to_string(p->binary()->size()) + "-byte program");
  // ir3 compiles a6xx shaders for merged registers (half registers alias full ones); without
  // MERGEDREGS the footprints would describe another register file than the code uses.
  if (!a->merged_regs()) return bad("merged_regs is false: a6xx kernels use merged registers");
  if (!a->constlen_vec4() || a->constlen_vec4() > max_constlen_vec4)
    return bad("constlen_vec4 " + std::to_string(a->constlen_vec4()) + " is not 1.." +
               std::to_string(max_constlen_vec4));
  const uint64_t constlen_bytes = uint64_t(a->constlen_vec4()) * 16;
  const uint64_t args = 8ull * (k->num_buffers() + k->num_scalars());
  if (a->params_bytes() < args)
    return bad("params_bytes " + std::to_string(a->params_bytes()) + " holds fewer than its " +
               std::to_string(args / 8) + " parameters");
  if (uint64_t(a->params_offset_vec4()) * 16 + a->params_bytes() > constlen_bytes)
    return bad("its parameters end past the " + std::to_string(a->constlen_vec4()) +
               "-vec4 constant file");
  const uint64_t nimm = a->immediates() ? a->immediates()->size() : 0;
  if (nimm && uint64_t(a->immediates_offset_vec4()) * 16 + nimm * 4 > constlen_bytes)
    return bad("its " + std::to_string(nimm) + " immediates end past the constant file");
  if (a->driver_params_offset_vec4() != 0xffffffffu &&
      a->driver_params_offset_vec4() >= a->constlen_vec4())
    return bad("driver_params_offset_vec4 is past the constant file");
  // The dispatch loads the parameters, the immediates and the driver params into the constant
  // file in that order, whole vec4 each (adreno_encoder::exec): regions that overlap would have a
  // later load overwrite what the code reads from an earlier one (fuzz_gpu_capture: fake-adreno
  // found the immediates overwritten by the parameters).
  struct region {
    const char *name;
    uint64_t begin, end;
  };
  const region regions[3] = {
      {"parameters", uint64_t(a->params_offset_vec4()) * 16,
       uint64_t(a->params_offset_vec4()) * 16 + (uint64_t(a->params_bytes()) + 15) / 16 * 16},
      {"immediates", uint64_t(a->immediates_offset_vec4()) * 16,
       uint64_t(a->immediates_offset_vec4()) * 16 + (nimm + 3) / 4 * 16},
      {"driver params",
       a->driver_params_offset_vec4() == 0xffffffffu ? 0 : a->driver_params_offset_vec4() * 16ull,
       a->driver_params_offset_vec4() == 0xffffffffu
           ? 0
           : (uint64_t(a->driver_params_offset_vec4()) + driver_params_units_of(a)) * 16}};
  for (int x = 0; x < 3; ++x)
    for (int y = x + 1; y < 3; ++y)
      if (regions[x].begin < regions[x].end && regions[y].begin < regions[y].end &&
          regions[x].begin < regions[y].end && regions[y].begin < regions[x].end)
        return bad(std::string("its ") + regions[x].name + " and " + regions[y].name +
                   " overlap in the constant file");
  if (a->full_regs() > 63 || a->half_regs() > 63 || a->branch_stack() > 63)
    return bad("register footprints or branch stack over the 6-bit SP_CS_CTRL_REG0 fields");
  // A fiber's general registers are r0-r47: from r48 on ir3 numbers the shared registers, a0 and
  // p0 (Mesa ir3.h; the ir3 emulator's ir3_regid_shared), so a footprint past 48 describes
  // registers the code cannot have (fuzz_gpu_capture: fake-adreno refused one at replay).
  if (a->full_regs() > 48)
    return bad("full_regs " + std::to_string(a->full_regs()) +
               " is past r47, the last general register");
  if (a->private_memory_bytes() > max_private_bytes)
    return bad(std::to_string(a->private_memory_bytes()) +
               " bytes of private memory per work item (at most " +
               std::to_string(max_private_bytes) + ")");
  if (a->shared_memory_bytes() > a630().shared_bytes)
    return bad(std::to_string(a->shared_memory_bytes()) + " bytes of shared memory (the " +
               a630().name + " has " + std::to_string(a630().shared_bytes / 1024) + " KiB)");
  const uint64_t items =
      uint64_t(a->workgroup_size_x()) * a->workgroup_size_y() * a->workgroup_size_z();
  if (!items || items > max_workgroup || a->workgroup_size_x() > max_workgroup ||
      a->workgroup_size_y() > max_workgroup || a->workgroup_size_z() > max_workgroup)
    return bad("workgroup " + std::to_string(a->workgroup_size_x()) + "x" +
               std::to_string(a->workgroup_size_y()) + "x" + std::to_string(a->workgroup_size_z()) +
               " is not 1 to 1024 work items");
  const uint32_t wg[3] = {a->workgroup_size_x(), a->workgroup_size_y(), a->workgroup_size_z()};
  const uint32_t gr[3] = {a->grid_x(), a->grid_y(), a->grid_z()};
  for (int d = 0; d < 3; ++d)
    if (!gr[d] || uint64_t(gr[d]) * wg[d] > 0xffffffffull)
      return bad("grid dimension " + std::to_string(d) + " (" + std::to_string(gr[d]) +
                 " workgroups) is 0 or over 2^32 work items");
  if (a->workgroup_id_regid() > 0xff || a->local_id_regid() > 0xff)
    return bad("a system-value register id is over 8 bits");
  // The dispatch's shape is in no checksum (KernelBounds hashes the code, not these facts), so it
  // is held to what the code can do. capgraph's Adreno kernels are 1-D: their code reads the x
  // ids only, so a y or z extent runs the whole x range again (a GPU busy for nothing; in
  // fake-adreno's emulator, an input fuzz_gpu_capture found running for minutes).
  if (a->grid_y() != 1 || a->grid_z() != 1 || a->workgroup_size_y() != 1 ||
      a->workgroup_size_z() != 1)
    return bad("grid_y/grid_z " + std::to_string(a->grid_y()) + "/" + std::to_string(a->grid_z()) +
               " or workgroup_size_y/z " + std::to_string(a->workgroup_size_y()) + "/" +
               std::to_string(a->workgroup_size_z()) +
               " is not 1: capgraph's Adreno kernels are 1-D");
  // Every workgroup of every kernel shape the compiler makes (adreno_nir_emit.cpp: guarded work
  // items, one workgroup per output, one per output tile) writes at least one element, a byte at
  // least, of a written binding, whose size the checksum covers: more workgroups than that are
  // ids the code does not guard (a tiled or per-output kernel indexes its buffers with them).
  uint64_t written_bytes = 0;
  if (const fb::KernelBounds *b = k->bounds(); b && b->written())
    for (uint32_t w : *b->written())
      if (w < b->buffer_sizes()->size())
        written_bytes = std::max<uint64_t>(written_bytes, b->buffer_sizes()->Get(w));
  if (a->grid_x() > written_bytes)
    return bad("grid_x " + std::to_string(a->grid_x()) + " workgroups is more than the " +
               std::to_string(written_bytes) +
               " bytes of its largest written binding (each workgroup writes at least one)");
  return images_check(c, i, a, bad);
}

capgraph_status adreno_device_check(const fb::Capture *c, hcq::transport *dev, std::string *why) {
  return adreno_chip_matches(c->target()->name()->c_str(), dev->chip_name(), dev->name(), why)
             ? CAPGRAPH_OK
             : CAPGRAPH_ERR_TARGET;
}

capgraph_status adreno_kernel_resolve(const fb::Capture *c, uint32_t kernel, uint64_t program_gpu,
                                      hcq::dispatch *out, std::string *) {
  const fb::AdrenoKernel *a = c->kernels()->Get(kernel)->facts_as_AdrenoKernel();
  adreno_dispatch &f = out->facts_as<adreno_dispatch>();
  f.shader = program_gpu;
  f.kernel = kernel;
  out->workgroup_size = a->workgroup_size_x() * a->workgroup_size_y() * a->workgroup_size_z();
  // The block CP_LOAD_STATE6 reads whole vec4 from: the parameters, padded to 16 bytes, and the
  // images' texture state (kernarg_layout_of).
  out->kernarg_size = kernarg_layout_of(a).size;
  out->kernarg_align = images_of(a) ? border_color_bytes : 16;
  return CAPGRAPH_OK;
}

std::unique_ptr<hcq::encoder> adreno_encoder_create(const fb::Capture *c, hcq::queue_kind,
                                                    std::vector<uint32_t> *out) {
  return std::make_unique<adreno_encoder>(c, out);
}

}  // namespace

bool adreno_chip_matches(const char *capture_target, const std::string &device_chip,
                         const std::string &device_name, std::string *why) {
  const char *chip = strchr(capture_target, '-');
  if (chip && device_chip == chip + 1) return true;
  *why = std::string("the capture was compiled for ") + capture_target + " but the device is " +
         device_name + ", an Adreno " + device_chip + " (capgraph compiles for " +
         adreno_capture_names() + ")";
  return false;
}

const hcq::target adreno_target = {"adreno",
                                   fb::ProgramFormat::adreno_ir3,
                                   &adreno_capture_matches,
                                   &adreno_capture_names,
                                   &adreno_kernel_check,
                                   &adreno_device_check,
                                   &adreno_kernel_resolve,
                                   &adreno_encoder_create,
                                   8,  // stamp_bytes: the clock alone
                                   &adreno_scratch_bytes,
                                   true};  // copies_in_compute: one KGSL context, one stream

}  // namespace capgraph::adreno

namespace capgraph::hcq {

// Called by the runtime's generated targets_builtin_register (CAPGRAPH_TARGETS holds "adreno").
void target_adreno_register() {
  target_register("adreno", &kgsl::kgsl_open, &adreno::adreno_target,
                  [] { return kgsl::kgsl_devices_describe(*kgsl::kgsl_sys_host()); });
}

}  // namespace capgraph::hcq
