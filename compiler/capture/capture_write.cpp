#include "capture/capture_write.h"

#include <flatbuffers/flatbuffers.h>

#include <map>

#include "capgraph/capture_generated.h"
#include "capture_hash.h"
#include "error.h"
#include "replay.h"
#include "run_files.h"

namespace capgraph {

std::vector<ArenaRequest> capture_arena_requests(const Program &p, std::vector<int> &arena_buffers) {
  std::vector<int> req_of(p.buffers.size(), -1);
  std::vector<ArenaRequest> reqs;
  for (size_t i = 0; i < p.buffers.size(); i++) {
    const Buffer &b = p.buffers[i];
    if (b.kind == Buffer::Kind::constant) continue;
    req_of[i] = (int)reqs.size();
    arena_buffers.push_back((int)i);
    ArenaRequest r;
    r.size = b.numel * dtype_size(b.dtype);
    r.first = INT32_MAX;
    r.last = -1;
    r.pinned = b.kind != Buffer::Kind::intermediate;
    reqs.push_back(r);
  }
  for (size_t s = 0; s < p.kernels.size(); s++) {
    auto touch = [&](int buf) {
      int r = req_of[buf];
      if (r < 0) return;
      reqs[r].first = std::min(reqs[r].first, (int)s);
      reqs[r].last = std::max(reqs[r].last, (int)s);
    };
    touch(p.kernels[s].store.buffer);
    for (const Access &a : p.kernels[s].loads) touch(a.buffer);
  }
  for (ArenaRequest &r : reqs)
    if (r.last < 0) r.first = r.last = 0;
  return reqs;
}

static fb::DType fb_dtype(DType t) { return (fb::DType)(uint8_t)t; }

std::vector<uint8_t> capture_build(const Program &p, const TargetCode &tc, const CaptureInfo &info, ArenaPlan *plan_out) {
  const CodegenResult &code = tc.code;
  const CpuTarget &t = tc.target;
  std::vector<int> arena_buffers;
  std::vector<ArenaRequest> reqs = capture_arena_requests(p, arena_buffers);
  ArenaPlan plan = arena_plan(reqs, 64);
  if (!arena_plan_valid(reqs, plan)) throw Error("internal: the memory plan overlaps live buffers");
  if (plan_out) *plan_out = plan;
  std::vector<int64_t> arena_offset(p.buffers.size(), -1), weight_index(p.buffers.size(), -1);
  for (size_t i = 0; i < arena_buffers.size(); i++) arena_offset[arena_buffers[i]] = (int64_t)plan.offsets[i];

  flatbuffers::FlatBufferBuilder fbb(1 << 20);
  // Weights first (largest data), each 64-byte aligned.
  std::vector<flatbuffers::Offset<fb::Weight>> weights;
  for (size_t i = 0; i < p.buffers.size(); i++) {
    const Buffer &b = p.buffers[i];
    if (b.kind != Buffer::Kind::constant) continue;
    weight_index[i] = (int64_t)weights.size();
    fbb.ForceVectorAlignment(b.data.bytes->size(), 1, 64);
    auto data = fbb.CreateVector(b.data.bytes->data(), b.data.bytes->size());
    weights.push_back(fb::CreateWeight(fbb, fbb.CreateString(b.name), data));
  }
  std::vector<flatbuffers::Offset<fb::Program>> programs;
  for (const auto &obj : code.objects) {
    fbb.ForceVectorAlignment(obj.size(), 1, 16);
    auto bin = fbb.CreateVector(obj.data(), obj.size());
    programs.push_back(fb::CreateProgram(fbb, tc.format, bin, 0,
                                         capture_hash(obj.data(), obj.size())));
  }
  // Host twins follow the GPU programs.
  const bool twins = !tc.twins.objects.empty();
  const uint32_t twin_base = (uint32_t)programs.size();
  if (twins) {
    if (tc.twins.kernels.size() != p.kernels.size()) throw Error("internal: host twins do not match the program's kernels");
    for (const auto &obj : tc.twins.objects) {
      fbb.ForceVectorAlignment(obj.size(), 1, 16);
      auto bin = fbb.CreateVector(obj.data(), obj.size());
      programs.push_back(fb::CreateProgram(fbb, fb::ProgramFormat::elf_relocatable, bin, 0, capture_hash(obj.data(), obj.size())));
    }
  }
  // Kernels: one per distinct symbol.
  std::vector<flatbuffers::Offset<fb::Kernel>> kernels;
  std::map<std::string, uint32_t> kernel_of_symbol;
  std::vector<uint32_t> launch_kernel(p.kernels.size());
  std::vector<std::string> twin_symbol;  // per Kernel entry
  for (size_t i = 0; i < p.kernels.size(); i++) {
    const CodegenKernel &ck = code.kernels[i];
    auto it = kernel_of_symbol.find(ck.symbol);
    if (it == kernel_of_symbol.end()) {
      it = kernel_of_symbol.emplace(ck.symbol, (uint32_t)kernels.size()).first;
      std::pair<fb::KernelFacts, flatbuffers::Offset<void>> facts{fb::KernelFacts::NONE, 0};
      if (tc.facts) facts = tc.facts(fbb, i);
      const CodegenKernel *twin = twins ? &tc.twins.kernels[i] : nullptr;
      kernels.push_back(fb::CreateKernelDirect(fbb, p.kernels[i].name.c_str(), ck.object, ck.symbol.c_str(), ck.slots.size(), 0,
                                               twin ? (int32_t)(twin_base + twin->object) : -1, twin ? twin->symbol.c_str() : nullptr,
                                               twin ? (uint64_t)twin->work_size : 0, facts.first, facts.second));
      if (twin) twin_symbol.push_back(twin->symbol);
    } else if (twins && twin_symbol[it->second] != tc.twins.kernels[i].symbol) {
      // Equal GPU kernels must have equal twins: both come from the same kernel deduplication.
      throw Error("internal: kernel " + p.kernels[i].name + " shares a GPU entry but not a host twin");
    }
    launch_kernel[i] = it->second;
  }
  std::vector<flatbuffers::Offset<fb::Step>> steps;
  for (size_t i = 0; i < p.kernels.size(); i++) {
    const Kernel &k = p.kernels[i];
    const CodegenKernel &ck = code.kernels[i];
    std::vector<fb::BufferRef> refs;
    std::vector<uint64_t> sizes;
    uint64_t bytes_read = 0;
    for (int buf : ck.slots) {
      sizes.push_back(p.buffers[buf].numel * dtype_size(p.buffers[buf].dtype));
      if (weight_index[buf] >= 0) refs.emplace_back(fb::Space::weight, (uint32_t)weight_index[buf], 0);
      else refs.emplace_back(fb::Space::arena, 0, (uint64_t)arena_offset[buf]);
    }
    for (const Access &a : k.loads) bytes_read += p.buffers[a.buffer].numel * dtype_size(p.buffers[a.buffer].dtype);
    int64_t out_elems = 1;
    for (int a = 0; a < k.n_parallel; a++) out_elems *= k.axes[a];
    // Even slices, except that a launch too small to pay for the threads meeting (one unit of
    // work, or under k_split_min_cost flops + bytes: a few microseconds) runs whole on thread 0,
    // so the runtime needs no barrier around it (runtime/replay.h, replay_plan_barriers).
    uint64_t cost = (uint64_t)k.flops + bytes_read + (uint64_t)out_elems * dtype_size(k.store_dtype);
    bool whole = ck.work_size <= 1 || cost < k_split_min_cost;
    std::vector<uint64_t> partition;
    for (int th = 0; th <= info.threads; th++)
      partition.push_back(whole ? (th ? (uint64_t)ck.work_size : 0) : (uint64_t)(ck.work_size * th / info.threads));
    std::vector<flatbuffers::Offset<flatbuffers::String>> srcs;
    for (const std::string &s : k.source_nodes) srcs.push_back(fbb.CreateString(s));
    auto launch = fb::CreateLaunch(fbb, launch_kernel[i], fbb.CreateVectorOfStructs(refs), 0, ck.work_size, fbb.CreateVector(partition),
                                   fbb.CreateVector(srcs), k.flops, bytes_read, out_elems * dtype_size(k.store_dtype),
                                   fbb.CreateVector(sizes));
    steps.push_back(fb::CreateStep(fbb, fb::StepKind::launch, launch, 0));
  }
  auto tensor_infos = [&](const std::vector<Program::Port> &ports) {
    std::vector<flatbuffers::Offset<fb::TensorInfo>> v;
    for (const auto &port : ports) {
      if (arena_offset[port.buffer] < 0) throw Error("internal: port '" + port.name + "' is not in the arena");
      v.push_back(fb::CreateTensorInfoDirect(fbb, port.name.c_str(), fb_dtype(port.dtype), &port.shape, arena_offset[port.buffer],
                                             shape_numel(port.shape) * dtype_size(port.dtype)));
    }
    return fbb.CreateVector(v);
  };
  auto inputs = tensor_infos(p.inputs), outputs = tensor_infos(p.outputs);
  std::vector<flatbuffers::Offset<fb::PlannedBuffer>> planned;
  for (size_t i = 0; i < arena_buffers.size(); i++) {
    const Buffer &b = p.buffers[arena_buffers[i]];
    planned.push_back(fb::CreatePlannedBufferDirect(fbb, b.name.c_str(), plan.offsets[i], reqs[i].size, reqs[i].first, reqs[i].last));
  }
  std::vector<flatbuffers::Offset<fb::Sample>> samples;
  if (!info.sample_inputs.empty()) {
    std::vector<flatbuffers::Offset<fb::TensorData>> ins, outs;
    for (size_t i = 0; i < info.sample_inputs.size(); i++)
      ins.push_back(fb::CreateTensorDataDirect(fbb, p.inputs[i].name.c_str(), &info.sample_inputs[i]));
    for (size_t i = 0; i < info.sample_outputs.size(); i++)
      outs.push_back(fb::CreateTensorDataDirect(fbb, p.outputs[i].name.c_str(), &info.sample_outputs[i]));
    samples.push_back(fb::CreateSample(fbb, fbb.CreateVector(ins), fbb.CreateVector(outs), (float)k_output_rel_tol));
  }
  auto target = fb::CreateTargetDirect(fbb, t.name.c_str(), t.triple.c_str(), t.cpu.c_str(), t.features.c_str());
  flatbuffers::Offset<fb::Target> twin_target = 0;
  if (twins) {
    const CpuTarget &tt = tc.twin_target;
    twin_target = fb::CreateTargetDirect(fbb, tt.name.c_str(), tt.triple.c_str(), tt.cpu.c_str(), tt.features.c_str());
  }
  // CPU captures use nothing newer than 1.0; targets with kernel facts need 2.0 (capture.fbs).
  auto cap = fb::CreateCapture(fbb, tc.version_major, tc.version_minor, fbb.CreateString("capgraph 0.1.0"), fbb.CreateString(info.model_name), target, inputs,
                               outputs, fbb.CreateVector(weights), plan.size, plan.naive_size, fbb.CreateVector(planned),
                               fbb.CreateVector(programs), fbb.CreateVector(kernels), fbb.CreateVector(steps), (uint32_t)info.threads,
                               samples.empty() ? 0 : fbb.CreateVector(samples), twin_target,
                               info.compile_options.empty() ? 0 : fbb.CreateVectorOfStrings(info.compile_options));
  fbb.Finish(cap, fb::CaptureIdentifier());
  return std::vector<uint8_t>(fbb.GetBufferPointer(), fbb.GetBufferPointer() + fbb.GetSize());
}

std::vector<uint8_t> capture_build(const Program &p, const CodegenResult &code, const CpuTarget &t, const CaptureInfo &info,
                                   ArenaPlan *plan_out) {
  TargetCode tc;
  tc.target = t;
  tc.code = code;
  return capture_build(p, tc, info, plan_out);
}

}  // namespace capgraph
