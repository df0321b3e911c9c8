#include <algorithm>
#include <cstring>

#include "adreno_chips.h"
#include "adreno_hcq.h"
#include "adreno_pm4.h"
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
// CP_INDIRECT_BUFFER's size field: 20 bits of dwords (Linux adreno_ringbuffer.c, Mesa tu_cs.cc).
constexpr uint64_t max_ib_dwords = (1u << 20) - 1;

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

class adreno_encoder final : public hcq::encoder {
 public:
  adreno_encoder(const fb::Capture *c, std::vector<uint32_t> *out)
      : encoder(out), c_(c), per_fiber_(c ? private_per_fiber(c) : 0) {}

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

    op(CP_SET_MARKER, {RM6_COMPUTE});
    // Drop compute state loaded for the previous kernel (CS_STATE | CS_IBO), then re-arm.
    regs(HLSQ_INVALIDATE_CMD, {1u << 5 | 1u << 6});
    regs(HLSQ_INVALIDATE_CMD, {0});
    regs(SP_CS_TEX_COUNT, {0});
    regs(SP_CS_IBO_COUNT, {0});
    // ir3 code: GL isam mode and constant demotion (tinygrad #16769: ir3 needs it).
    regs(SP_MODE_CONTROL, {1u | ISAMMODE_GL << 1});
    regs(SP_TP_MODE_CNTL, {ISAMMODE_GL});
    regs(SP_PERFCTR_ENABLE, {1u << 5});
    regs(TPL1_DBG_ECO_CNTL, {a630().tpl1_dbg_eco_cntl});
    op(CP_WAIT_FOR_IDLE, {});
    regs(
        HLSQ_CS_NDRANGE_0,
        {3u | (local[0] - 1) << 2 | (local[1] - 1) << 12 | (local[2] - 1) << 22,  // KERNELDIM 3
         grid[0] * local[0], 0, grid[1] * local[1], 0, grid[2] * local[2],
         0,  // sizes in items, offsets
         a->workgroup_id_regid() | wgsize_regid << 8 | regid_none << 16 | a->local_id_regid() << 24,
         regid_none | threadsize << 9,  // no linear local id
         1, 1, 1});                     // KERNEL_GROUP: Mesa writes 1 (CP_EXEC_CS has the counts)
    const bool pvt = a->private_memory_bytes() > 0;
    const uint64_t per_sp = private_per_sp(per_fiber_);
    const uint32_t shared = a->shared_memory_bytes() ? (a->shared_memory_bytes() - 1) / 1024 : 0;
    const uint32_t ram_mode = constlen <= 128   ? 0
                              : constlen <= 192 ? 1
                                                : 2;  // CONSTLEN_128/192/256
    regs(SP_CS_CTRL_REG0,
         {threadsize << 20 | a->half_regs() << 1 | a->full_regs() << 7 | a->branch_stack() << 14 |
              uint32_t(a->merged_regs()) << 31,
          (shared < 1 ? 1 : shared) | ram_mode << 5,  // SHARED_SIZE as Mesa: max(1, (bytes-1)/1K)
          0, 0,                                       // BRANCH_COND, FIRST_EXEC_OFFSET
          lo(f.shader), hi(f.shader),                 // OBJ_START
          pvt ? uint32_t(per_fiber_ >> 9) : 0,        // PVT_MEM_PARAM MEMSIZEPERITEM
          pvt ? lo(d.scratch) : 0, pvt ? hi(d.scratch) : 0,
          pvt ? uint32_t(per_sp >> 12) | uint32_t(a->private_memory_per_wave()) << 31
              : 0});  // TOTALPVTMEMSIZE
    regs(SP_CS_INSTRLEN, {instrlen});
    regs(SP_CS_PVT_MEM_HW_STACK_OFFSET,
         {pvt ? uint32_t(per_sp >> 11) : 0});  // after the private memory
    // No fragment system values; the constant file's length in vec4 >> 2, enabled.
    regs(HLSQ_CONTROL_2_REG, {0xfcfcfcfc, 0xfcfcfcfc, 0xfcfcfcfc, 0xfc});
    regs(HLSQ_CS_CNTL, {constlen >> 2 | 1u << 8});
    regs(SP_CS_CONFIG, {1u << 8});  // ENABLED, no textures, samplers or IBOs
    // The shader: preload at most the instruction cache (Mesa fd6_emit_shader), the rest is
    // fetched from SP_CS_OBJ_START.
    const uint32_t cache = a630().instr_cache_units;
    const uint32_t preload = instrlen < cache ? instrlen : cache;
    op(CP_LOAD_STATE6_FRAG, {load_state6_0(0, ST6_SHADER, SS6_INDIRECT, SB6_CS_SHADER, preload),
                             lo(f.shader), hi(f.shader)});
    // Constants: the parameters from the kernel-argument block (patched per launch by the core),
    // the immediates and the driver params inline.
    if (a->params_bytes())
      op(CP_LOAD_STATE6_FRAG, {load_state6_0(a->params_offset_vec4(), ST6_CONSTANTS, SS6_INDIRECT,
                                             SB6_CS_SHADER, div_up(a->params_bytes(), 16)),
                               lo(d.kernargs), hi(d.kernargs)});
    const uint32_t nimm = a->immediates() ? a->immediates()->size() : 0;
    if (nimm) {
      std::vector<uint32_t> body = {load_state6_0(a->immediates_offset_vec4(), ST6_CONSTANTS,
                                                  SS6_DIRECT, SB6_CS_SHADER, div_up(nimm, 4)),
                                    0, 0};
      for (uint32_t i = 0; i < div_up(nimm, 4) * 4; ++i)
        body.push_back(i < nimm ? a->immediates()->Get(i) : 0);
      op(CP_LOAD_STATE6_FRAG, body);
    }
    if (a->driver_params_offset_vec4() != 0xffffffffu) {
      const uint32_t units = driver_params_units(a);
      std::vector<uint32_t> body = {load_state6_0(a->driver_params_offset_vec4(), ST6_CONSTANTS,
                                                  SS6_DIRECT, SB6_CS_SHADER, units),
                                    0, 0};
      const uint32_t dp[12] = {grid[0],  grid[1],  grid[2],  3,
                               0,        0,        0,        a->double_threadsize() ? 128u : 64u,
                               local[0], local[1], local[2], 0};
      for (uint32_t i = 0; i < units * 4; ++i) body.push_back(dp[i]);
      op(CP_LOAD_STATE6_FRAG, body);
    }
    op(CP_EXEC_CS, {0, grid[0], grid[1], grid[2]});
  }

  // CP_MEMCPY (A6XX-, Mesa adreno_pm4.xml; turnip tu_device.cc tu_copy_buffer) moves dwords. On
  // KGSL copies are recorded into the compute stream (hcq::target::copies_in_compute): the
  // signal before them flushes the caches (CACHE_FLUSH_TS) and the wait lets the copy start only
  // once that landed; the signal after them invalidates the caches the next kernels read through.
  void copy(uint64_t dst, uint64_t src, uint64_t size) override {
    if ((dst | src | size) % 4)
      return fail("CP_MEMCPY copies whole dwords, not " + std::to_string(size) + " bytes");
    op(CP_MEMCPY, {uint32_t(size / 4), lo(src), hi(src), lo(dst), hi(dst)});
  }

  // After all work: the clock to addr + 8, then the value, low word first (a reader that sees
  // the new low word with the old high one reads a smaller value, never a larger one). Each
  // CACHE_FLUSH_TS write happens after the work before it and its cache flush (Mesa
  // fd6_event_write; tinygrad ops_qcom.py signal).
  void signal(uint64_t addr, uint64_t value) override {
    timestamp(addr + 8);
    op(CP_EVENT_WRITE, {CACHE_FLUSH_TS | EVENT_WRITE_TIMESTAMP, lo(addr), hi(addr), lo(value)});
    op(CP_EVENT_WRITE,
       {CACHE_FLUSH_TS | EVENT_WRITE_TIMESTAMP, lo(addr + 4), hi(addr + 4), hi(value)});
    op(CP_EVENT_WRITE, {CACHE_INVALIDATE});
  }

  void wait(uint64_t addr, uint32_t value) override {
    op(CP_WAIT_REG_MEM, {WRITE_GE | POLL_MEMORY << 4, lo(addr), hi(addr), value, 0xffffffffu, 16});
  }

  // Memory writes done and the engine idle before the next dispatch (tinygrad ops_qcom.py
  // memory_barrier: CP_WAIT_MEM_WRITES, CP_WAIT_FOR_IDLE).
  void barrier() override {
    op(CP_WAIT_MEM_WRITES, {});
    op(CP_WAIT_FOR_IDLE, {});
  }

  void interrupt(uint64_t mailbox, uint32_t id) override {
    op(CP_EVENT_WRITE,
       {CACHE_FLUSH_TS | EVENT_WRITE_TIMESTAMP | EVENT_WRITE_IRQ, lo(mailbox), hi(mailbox), id});
  }

  // CP_ALWAYS_ON_COUNTER (64 bits) after the engine is idle.
  void timestamp(uint64_t addr) override {
    op(CP_WAIT_FOR_IDLE, {});
    op(CP_REG_TO_MEM, {CP_ALWAYS_ON_COUNTER | 2u << 18 | 1u << 30, lo(addr), hi(addr)});
  }

  void call(uint64_t addr, uint64_t dwords) override {
    if (dwords > max_ib_dwords)
      return fail("an indirect buffer of " + std::to_string(dwords) +
                  " dwords is over CP_INDIRECT_BUFFER's " + std::to_string(max_ib_dwords));
    op(CP_INDIRECT_BUFFER, {lo(addr), hi(addr), uint32_t(dwords)});
  }

  const std::string &error() const override { return error_; }

  static uint32_t driver_params_units(const fb::AdrenoKernel *a) {
    const uint32_t room = (a->constlen_vec4() > a->driver_params_offset_vec4())
                              ? a->constlen_vec4() - a->driver_params_offset_vec4()
                              : 0;
    return room < driver_params_vec4 ? room : driver_params_vec4;
  }

 private:
  void regs(uint32_t reg, std::initializer_list<uint32_t> values) {
    out_->push_back(pkt4(reg, uint32_t(values.size())));
    out_->insert(out_->end(), values.begin(), values.end());
  }
  void op(uint32_t opcode, std::initializer_list<uint32_t> body) {
    out_->push_back(pkt7(opcode, uint32_t(body.size())));
    out_->insert(out_->end(), body.begin(), body.end());
  }
  void op(uint32_t opcode, const std::vector<uint32_t> &body) {
    if (body.size() > 0x3fff) return fail("a packet of " + std::to_string(body.size()) + " words");
    out_->push_back(pkt7(opcode, uint32_t(body.size())));
    out_->insert(out_->end(), body.begin(), body.end());
  }
  void fail(const std::string &why) {
    if (error_.empty()) error_ = why;
  }

  const fb::Capture *c_;
  uint64_t per_fiber_;  // private memory bytes per fiber, the capture's largest
  std::string error_;
};

bool adreno_capture_matches(const char *capture_target) {
  return strncmp(capture_target, "adreno-", 7) == 0;
}

std::string adreno_capture_names() { return chip_names(); }

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
  if (!a->instr_dwords() || uint64_t(a->instr_dwords()) * 4 > p->binary()->size())
    return bad("instr_dwords " + std::to_string(a->instr_dwords()) + " is not inside its " +
               std::to_string(p->binary()->size()) + "-byte program");
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
  if (a->full_regs() > 63 || a->half_regs() > 63 || a->branch_stack() > 63)
    return bad("register footprints or branch stack over the 6-bit SP_CS_CTRL_REG0 fields");
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
  return true;
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
  // The block CP_LOAD_STATE6 reads whole vec4 from: the parameters, padded to 16 bytes.
  out->kernarg_size = (a->params_bytes() + 15) / 16 * 16;
  if (!out->kernarg_size) out->kernarg_size = 16;
  out->kernarg_align = 16;
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
