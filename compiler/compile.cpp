#include "compile.h"

#include <algorithm>
#include <chrono>
#include <set>
#include <thread>

#include "capture/capture_plan.h"
#include "capture/capture_write.h"
#include "error.h"
#include "graph/passes.h"
#include "half_calibrate.h"
#include "knobs.h"
#include "onnx/onnx_model.h"
#include "schedule/fuse.h"
#include "schedule/half_storage.h"
#include "schedule/lower.h"
#include "target/target_table.h"

namespace capgraph {

namespace {

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

// Lowers the live graph into one program: inputs and outputs get dedicated buffers.
Program graph_lower(Graph &g) {
  Lowering L(g);
  for (Value *in : g.inputs) {
    Loc l = L.buffer_new(in->dtype, in->shape, Buffer::Kind::input, in->name);
    L.bind(in, l);
    L.prog.inputs.push_back({in->name, l.buffer, in->dtype, in->shape});
  }
  for (auto &n : g.nodes) {
    if (n->removed) continue;
    bool all_const = true;
    for (Value *o : n->outputs)
      if (!o->name.empty() && !o->constant) all_const = false;
    if (all_const) continue;  // folded: its outputs become weights where used
    lower_node(L, *n);
  }
  std::set<int> claimed;
  for (Value *out : g.outputs) {
    L.node = nullptr;
    Loc l = L.loc(out);
    Buffer &b = L.prog.buffers[l.buffer];
    bool whole =
        l.offset == 0 && l.contiguous() && b.numel == shape_numel(l.shape) && b.dtype == out->dtype;
    int buf;
    if (whole && b.kind == Buffer::Kind::intermediate && !claimed.count(l.buffer)) {
      b.kind = Buffer::Kind::output;
      b.name = out->name;
      buf = l.buffer;
    } else {
      Loc o = L.buffer_new(out->dtype, out->shape, Buffer::Kind::output, out->name);
      if (shape_numel(out->shape) > 0) kernel_copy(L, l, o, "output_copy");
      buf = o.buffer;
    }
    claimed.insert(buf);
    L.prog.outputs.push_back({out->name, buf, out->dtype, out->shape});
  }
  return std::move(L.prog);
}

}  // namespace

Program compile_schedule(const std::string &onnx_path, const CompileOptions &opt,
                         CompileReport *report) {
  CompileReport local;
  CompileReport &r = report ? *report : local;
  auto t0 = std::chrono::steady_clock::now();
  onnx::Model m = onnx::model_load(onnx_path);
  r.ms_read = ms_since(t0);
  t0 = std::chrono::steady_clock::now();
  std::string origin = onnx_path.substr(onnx_path.find_last_of('/') + 1);
  Graph g = graph_import(m, origin, opt.input_shapes, opt.bound_inputs);
  r.onnx_nodes = (int)g.nodes.size();
  // Dead nodes go before folding: a dead ConstantOfShape or Expand must cost nothing (a tiny model
  // could otherwise make folding allocate gigabytes for values nothing reads).
  r.removed_nodes = graph_remove_dead(g);
  graph_infer_fold(g, opt.fold_limit_bytes);
  r.removed_nodes += graph_remove_dead(g);
  r.folded_batchnorms = graph_fold_batchnorm(g);
  r.folded_pads = graph_fold_pad(g);
  r.removed_nodes += graph_remove_dead(g);
  r.ms_graph = ms_since(t0);
  t0 = std::chrono::steady_clock::now();
  Program p = graph_lower(g);
  r.fused = program_fuse(p);
  const TargetEntry &target = target_find(opt.target);
  r.precision = opt.precision.empty() ? target.precision : opt.precision;
  if (r.precision != "fp16" && r.precision != "fp32")
    throw Error("--precision must be fp16 or fp32, not '" + r.precision + "'");
  if (r.precision == "fp16") {
    HalfPlan plan = half_plan(p);
    HalfCalibration cal;
    cal.inputs = opt.calibration_inputs;
    cal.jobs = opt.jobs > 0 ? opt.jobs : (int)std::max(1u, std::thread::hardware_concurrency());
    // CAPGRAPH_HALF_RULES_ONLY=1: the rules alone, no calibration runs (for tests of the kernels'
    // code, whose values they do not compare: the zoo's calibration costs 3-47 s per model; the
    // capture's compile options record the knob).
    HalfCalibrationReport c;
    if (!knob_get("CAPGRAPH_HALF_RULES_ONLY")) c = half_calibrate(p, plan, cal);
    r.calibration_runs = c.runs;
    r.calibration_inputs = c.inputs;
    r.calibration_worst_input = c.worst_input;
    r.calibration_error_all_half = c.error_all_half;
    r.calibration_error = c.error;
    r.ms_calibrate = c.ms;
    HalfStorageReport h = program_store_half(p, plan);
    r.half_buffers = h.buffers;
    r.kept_fp32 = std::move(h.kept);
  }
  // The target's layouts (the target table's hook): blocked activations, packed weights.
  if (target.layouts) target.layouts(p, opt.target, r);
  // CAPGRAPH_NO_MERGE_AXES=1 keeps every buffer dimension its own axis (experiments; fuse_test
  // runs the GPU-only fusion passes on such programs).
  if (!knob_get("CAPGRAPH_NO_MERGE_AXES")) program_merge_axes(p);
  program_prune_buffers(p);
  r.kernels = (int)p.kernels.size();
  for (const Kernel &k : p.kernels) kernel_check(k, p);
  r.ms_schedule = ms_since(t0);
  return p;
}

std::vector<uint8_t> compile_model(const std::string &onnx_path, const CompileOptions &opt,
                                   CompileReport *report) {
  CompileReport local;
  CompileReport &r = report ? *report : local;
  if (opt.threads < 1 || opt.threads > 256) throw Error("--threads must be between 1 and 256");
  const TargetEntry &target = target_find(opt.target);
  if (!target.threads && opt.threads != 1)
    throw Error("--threads applies to CPU targets; " + opt.target +
                " captures replay on one GPU queue");
  Program p = compile_schedule(onnx_path, opt, &r);
  auto t0 = std::chrono::steady_clock::now();
  // The CPU capture does not depend on `jobs` (cpu_codegen's fixed partition); GPU objects do.
  const int jobs = opt.jobs > 0 ? opt.jobs : (int)std::max(1u, std::thread::hardware_concurrency());
  TargetCode code = target.codegen(p, opt.target, jobs);
  r.unique_kernels = code.code.unique_kernels;
  r.ms_codegen = ms_since(t0);
  t0 = std::chrono::steady_clock::now();
  CaptureInfo info;
  info.model_name = onnx_path.substr(onnx_path.find_last_of('/') + 1);
  info.threads = opt.threads;
  info.all_fields = opt.all_fields;
  // The knobs read while compiling (knob_get) that are set: they may have changed the output.
  info.compile_options = knobs_set();
  // float16 storage changes every kernel: the capture says so (float32 adds nothing, so a
  // --precision fp32 capture is the one compiled before the option existed).
  // With it, each tensor left float32 and why (inspect prints them).
  if (r.precision == "fp16") {
    info.compile_options.push_back("precision fp16");
    for (const std::string &k : r.kept_fp32) info.compile_options.push_back("kept float32: " + k);
  }
  // A bound input changes what the capture computes and removes an input: the capture says so.
  for (const auto &[name, t] : opt.bound_inputs)
    info.compile_options.push_back("bind " + name + "=" + dtype_name(t.dtype) + shape_str(t.shape));
  const CapturePlan plan = capture_plan(p, code.code, opt.threads);
  std::vector<uint8_t> bytes = capture_build(p, code, plan, info);
  r.arena_bytes = plan.arena.plan.size;
  r.arena_naive_bytes = plan.arena.plan.naive_size;
  for (const Buffer &b : p.buffers)
    if (b.kind == Buffer::Kind::constant) r.weight_bytes += b.data.bytes->size();
  r.capture_bytes = bytes.size();
  r.ms_write = ms_since(t0);
  return bytes;
}

}  // namespace capgraph
