#include "capture/capture_write.h"

#include <flatbuffers/flatbuffers.h>

#include <algorithm>
#include <map>

#include "capgraph/capture_generated.h"
#include "capture_hash.h"
#include "error.h"
#include "run_files.h"

namespace capgraph {

static fb::DType fb_dtype(DType t) { return (fb::DType)(uint8_t)t; }

namespace {

// Whether k reads or writes a float16 buffer (capture.fbs Kernel.half_storage).
bool kernel_half_storage(const Kernel &k, const Program &p) {
  if (p.buffers[k.store.buffer].dtype == DType::f16) return true;
  for (const Access &a : k.loads)
    if (p.buffers[a.buffer].dtype == DType::f16) return true;
  return false;
}

// An index table (capture.fbs IndexTable): a weight whose entries a kernel adds, unchecked, to an
// index of another access (a dimension with an `expr` and Bound::none: Gather with constant
// indices, Resize). The entry plus the dimension's affine part must stay in [0, extent).
struct IndexTableFact {
  uint32_t slot;
  DType dtype;
  int64_t low, high;
};

std::vector<IndexTableFact> index_tables_find(const Kernel &k, const Program &p,
                                              const std::vector<int> &slots) {
  std::vector<IndexTableFact> out;
  auto scan = [&](const Access &a) {
    for (const DimIndex &d : a.dims) {
      if (d.expr < 0 || d.bound != Bound::none) continue;
      int e = d.expr;
      while (k.exprs[e].op == Op::cast) e = k.exprs[e].a;
      const Expr &load = k.exprs[e];
      const int buf = load.op == Op::load ? k.loads[load.access].buffer : -1;
      if (buf < 0 || p.buffers[buf].kind != Buffer::Kind::constant ||
          (p.buffers[buf].dtype != DType::i32 && p.buffers[buf].dtype != DType::i64) ||
          d.divisor != 1)
        throw Error(
            "internal: kernel " + k.name +
            " indexes by a value that is not a constant integer table; replay could not check it");
      // The affine part's range over the iteration space; the entry must keep the sum in [0,
      // extent).
      int64_t lo = d.shift, hi = d.shift;
      for (const AxisTerm &t : d.terms) {
        const int64_t span = t.coef * (k.axes[t.axis] - 1);
        (span < 0 ? lo : hi) += span;
      }
      uint32_t slot = 0;
      while (slot < slots.size() && slots[slot] != buf) slot++;
      if (slot == slots.size())
        throw Error("internal: kernel " + k.name + " reads an index table it does not bind");
      out.push_back({slot, p.buffers[buf].dtype, -lo, d.extent - hi});
    }
  };
  for (const Access &a : k.loads) scan(a);
  scan(k.store);
  return out;
}

// KernelBounds (capture.fbs): what the code of kernel `k` may be asked to do, and its hash.
// `sizes`: the bytes of each binding, the smallest over every launch of this code (launches of
// one deduplicated kernel may bind buffers of different sizes; the code reaches no further than
// the smallest).
flatbuffers::Offset<fb::KernelBounds> kernel_bounds_build(
    flatbuffers::FlatBufferBuilder &fbb, const Kernel &k, const Program &p, const CodegenKernel &ck,
    const std::vector<uint64_t> &sizes, uint64_t program_hash, const CodegenKernel *twin) {
  const std::vector<IndexTableFact> tables = index_tables_find(k, p, ck.slots);
  capture_bounds_hash h(program_hash);
  h.str(ck.symbol.data(), ck.symbol.size());
  h.str(twin ? twin->symbol.data() : "", twin ? twin->symbol.size() : 0);
  h.u64(twin ? (uint64_t)twin->work_size : 0);
  h.u64((uint64_t)ck.work_size);
  h.u64(sizes.size());
  for (uint64_t v : sizes) h.u64(v);
  h.u64(0);  // no scalars
  h.u64(tables.size());
  std::vector<flatbuffers::Offset<fb::IndexTable>> fb_tables;
  for (const IndexTableFact &t : tables) {
    h.u64(t.slot);
    h.u64((uint64_t)fb_dtype(t.dtype));
    h.u64((uint64_t)t.low);
    h.u64((uint64_t)t.high);
    fb_tables.push_back(fb::CreateIndexTable(fbb, t.slot, fb_dtype(t.dtype), t.low, t.high));
  }
  std::vector<uint32_t> written;
  for (uint32_t s = 0; s < ck.slots.size(); s++)
    if (ck.slots[s] == k.store.buffer) written.push_back(s);
  h.u64(written.size());
  for (uint32_t s : written) h.u64(s);
  return fb::CreateKernelBounds(fbb, (uint64_t)ck.work_size, fbb.CreateVector(sizes), 0,
                                tables.empty() ? 0 : fbb.CreateVector(fb_tables),
                                fbb.CreateVector(written), h.value());
}

// capture_build's steps, in the order they add to the buffer (weights first: the largest data).
class CaptureWriter {
 public:
  CaptureWriter(const Program &p, const TargetCode &tc, const CapturePlan &plan,
                const CaptureInfo &info)
      : p(p),
        tc(tc),
        code(tc.code),
        plan(plan),
        info(info),
        arena_offset(p.buffers.size(), -1),
        weight_index(p.buffers.size(), -1),
        twins(!tc.twins.objects.empty()) {
    if (plan.partitions.size() != p.kernels.size())
      throw Error("internal: the capture plan does not match the program's kernels");
    for (size_t i = 0; i < plan.arena.buffers.size(); i++)
      arena_offset[plan.arena.buffers[i]] = (int64_t)plan.arena.plan.offsets[i];
  }

  std::vector<uint8_t> write() {
    fbb.ForceDefaults(info.all_fields);
    weights_add();
    programs_add();
    symbols_check();
    kernels_add();
    steps_add();
    return capture_finish();
  }

 private:
  const Program &p;
  const TargetCode &tc;
  const CodegenResult &code;
  const CapturePlan &plan;
  const CaptureInfo &info;
  std::vector<int64_t> arena_offset, weight_index;  // per Program buffer, or -1
  const bool twins;                                 // host twins follow the programs
  uint32_t twin_base = 0;                           // the first twin's program index
  flatbuffers::FlatBufferBuilder fbb{1 << 20};
  std::vector<flatbuffers::Offset<fb::Weight>> weights;
  std::vector<flatbuffers::Offset<fb::Program>> programs;
  std::vector<uint64_t> program_hashes;
  std::map<std::string, std::vector<uint64_t>> symbol_sizes;  // see symbols_check
  std::vector<flatbuffers::Offset<fb::Kernel>> kernels;
  std::vector<uint32_t> launch_kernel;  // per Program kernel: its Kernel entry
  std::vector<flatbuffers::Offset<fb::Step>> steps;

  // Weights first (largest data), each 64-byte aligned.
  void weights_add() {
    for (size_t i = 0; i < p.buffers.size(); i++) {
      const Buffer &b = p.buffers[i];
      if (b.kind != Buffer::Kind::constant) continue;
      weight_index[i] = (int64_t)weights.size();
      fbb.ForceVectorAlignment(b.data.bytes->size(), 1, 64);
      auto data = fbb.CreateVector(b.data.bytes->data(), b.data.bytes->size());
      weights.push_back(
          fb::CreateWeight(fbb, fbb.CreateString(b.name), data, b.data.dtype == DType::f16));
    }
  }
  // The target's programs, then the host twins'.
  void programs_add() {
    for (const auto &obj : code.objects) {
      program_hashes.push_back(capture_hash(obj.data(), obj.size()));
      fbb.ForceVectorAlignment(obj.size(), 1, 16);
      auto bin = fbb.CreateVector(obj.data(), obj.size());
      programs.push_back(
          fb::CreateProgram(fbb, tc.format, bin, 0, capture_hash(obj.data(), obj.size())));
    }
    // Host twins follow the GPU programs.
    twin_base = (uint32_t)programs.size();
    if (twins) {
      if (tc.twins.kernels.size() != p.kernels.size())
        throw Error("internal: host twins do not match the program's kernels");
      for (const auto &obj : tc.twins.objects) {
        fbb.ForceVectorAlignment(obj.size(), 1, 16);
        auto bin = fbb.CreateVector(obj.data(), obj.size());
        programs.push_back(fb::CreateProgram(fbb, fb::ProgramFormat::elf_relocatable, bin, 0,
                                             capture_hash(obj.data(), obj.size())));
      }
    }
  }
  // Each binding's bytes per launch.
  std::vector<uint64_t> launch_sizes(const CodegenKernel &ck) const {
    std::vector<uint64_t> sizes;
    for (int buf : ck.slots)
      sizes.push_back(p.buffers[buf].numel * dtype_size(p.buffers[buf].dtype));
    return sizes;
  }
  // Per distinct symbol the smallest binding sizes (kernel_bounds_build); launches sharing code
  // share its work size.
  void symbols_check() {
    std::map<std::string, int64_t> symbol_work;
    for (size_t i = 0; i < p.kernels.size(); i++) {
      const CodegenKernel &ck = code.kernels[i];
      const std::vector<uint64_t> sizes = launch_sizes(ck);
      auto [it, fresh] = symbol_sizes.emplace(ck.symbol, sizes);
      if (!fresh)
        for (size_t j = 0; j < sizes.size() && j < it->second.size(); j++)
          it->second[j] = std::min(it->second[j], sizes[j]);
      auto [w, first] = symbol_work.emplace(ck.symbol, ck.work_size);
      if (!first && w->second != ck.work_size)
        throw Error("internal: kernel " + p.kernels[i].name +
                    " shares its code with a kernel of another work size");
    }
  }
  // Kernels: one per distinct symbol.
  void kernels_add() {
    std::map<std::string, uint32_t> kernel_of_symbol;
    std::vector<std::string> twin_symbol;  // per Kernel entry
    launch_kernel.assign(p.kernels.size(), 0);
    for (size_t i = 0; i < p.kernels.size(); i++) {
      const CodegenKernel &ck = code.kernels[i];
      auto it = kernel_of_symbol.find(ck.symbol);
      if (it == kernel_of_symbol.end()) {
        it = kernel_of_symbol.emplace(ck.symbol, (uint32_t)kernels.size()).first;
        std::pair<fb::KernelFacts, flatbuffers::Offset<void>> facts{fb::KernelFacts::NONE, 0};
        if (tc.facts) facts = tc.facts(fbb, i);
        const CodegenKernel *twin = twins ? &tc.twins.kernels[i] : nullptr;
        auto bounds = kernel_bounds_build(fbb, p.kernels[i], p, ck, symbol_sizes.at(ck.symbol),
                                          program_hashes.at(ck.object), twin);
        kernels.push_back(fb::CreateKernelDirect(
            fbb, p.kernels[i].name.c_str(), ck.object, ck.symbol.c_str(), ck.slots.size(), 0,
            twin ? (int32_t)(twin_base + twin->object) : -1, twin ? twin->symbol.c_str() : nullptr,
            twin ? (uint64_t)twin->work_size : 0, facts.first, facts.second, bounds,
            kernel_half_storage(p.kernels[i], p), p.kernels[i].store_dtype == DType::f16));
        if (twin) twin_symbol.push_back(twin->symbol);
      } else if (twins && twin_symbol[it->second] != tc.twins.kernels[i].symbol) {
        // Equal GPU kernels must have equal twins: both come from the same kernel deduplication.
        throw Error("internal: kernel " + p.kernels[i].name +
                    " shares a GPU entry but not a host twin");
      }
      launch_kernel[i] = it->second;
    }
  }
  // One launch step per Program kernel: its bindings, work range and planned partition.
  void steps_add() {
    for (size_t i = 0; i < p.kernels.size(); i++) {
      const Kernel &k = p.kernels[i];
      const CodegenKernel &ck = code.kernels[i];
      std::vector<fb::BufferRef> refs;
      const std::vector<uint64_t> sizes = launch_sizes(ck);
      for (int buf : ck.slots) {
        if (weight_index[buf] >= 0)
          refs.emplace_back(fb::Space::weight, (uint32_t)weight_index[buf], 0);
        else
          refs.emplace_back(fb::Space::arena, 0, (uint64_t)arena_offset[buf]);
      }
      std::vector<flatbuffers::Offset<flatbuffers::String>> srcs;
      for (const std::string &s : k.source_nodes) srcs.push_back(fbb.CreateString(s));
      auto launch = fb::CreateLaunch(fbb, launch_kernel[i], fbb.CreateVectorOfStructs(refs), 0,
                                     ck.work_size, fbb.CreateVector(plan.partitions[i]),
                                     fbb.CreateVector(srcs), k.flops, kernel_bytes_read(k, p),
                                     kernel_bytes_written(k), fbb.CreateVector(sizes));
      steps.push_back(fb::CreateStep(fbb, fb::StepKind::launch, launch, 0));
    }
  }
  flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<fb::TensorInfo>>> tensor_infos(
      const std::vector<Program::Port> &ports) {
    std::vector<flatbuffers::Offset<fb::TensorInfo>> v;
    for (const auto &port : ports) {
      if (arena_offset[port.buffer] < 0)
        throw Error("internal: port '" + port.name + "' is not in the arena");
      v.push_back(fb::CreateTensorInfoDirect(fbb, port.name.c_str(), fb_dtype(port.dtype),
                                             &port.shape, arena_offset[port.buffer],
                                             shape_numel(port.shape) * dtype_size(port.dtype)));
    }
    return fbb.CreateVector(v);
  }
  std::vector<flatbuffers::Offset<fb::PlannedBuffer>> planned_buffers() {
    const ArenaLayout &arena = plan.arena;
    std::vector<flatbuffers::Offset<fb::PlannedBuffer>> planned;
    for (size_t i = 0; i < arena.buffers.size(); i++) {
      const Buffer &b = p.buffers[arena.buffers[i]];
      const ArenaRequest &r = arena.requests[i];
      planned.push_back(fb::CreatePlannedBufferDirect(fbb, b.name.c_str(), arena.plan.offsets[i],
                                                      r.size, r.first, r.last,
                                                      b.dtype == DType::f16));
    }
    return planned;
  }
  std::vector<flatbuffers::Offset<fb::Sample>> samples_add() {
    std::vector<flatbuffers::Offset<fb::Sample>> samples;
    if (info.sample_inputs.empty()) return samples;
    std::vector<flatbuffers::Offset<fb::TensorData>> ins, outs;
    for (size_t i = 0; i < info.sample_inputs.size(); i++)
      ins.push_back(
          fb::CreateTensorDataDirect(fbb, p.inputs[i].name.c_str(), &info.sample_inputs[i]));
    for (size_t i = 0; i < info.sample_outputs.size(); i++)
      outs.push_back(
          fb::CreateTensorDataDirect(fbb, p.outputs[i].name.c_str(), &info.sample_outputs[i]));
    samples.push_back(fb::CreateSample(fbb, fbb.CreateVector(ins), fbb.CreateVector(outs),
                                       (float)k_output_rel_tol));
    return samples;
  }
  flatbuffers::Offset<fb::Target> target_add(const CpuTarget &t) {
    return fb::CreateTargetDirect(fbb, t.name.c_str(), t.triple.c_str(), t.cpu.c_str(),
                                  t.features.c_str());
  }
  // The ports, the arena, the samples and the targets, then the Capture table itself.
  std::vector<uint8_t> capture_finish() {
    auto inputs = tensor_infos(p.inputs), outputs = tensor_infos(p.outputs);
    const std::vector<flatbuffers::Offset<fb::PlannedBuffer>> planned = planned_buffers();
    const std::vector<flatbuffers::Offset<fb::Sample>> samples = samples_add();
    auto target = target_add(tc.target);
    flatbuffers::Offset<fb::Target> twin_target = 0;
    if (twins) twin_target = target_add(tc.twin_target);
    // Every capture carries KernelBounds: 1.2 for CPU targets (format 1), 2.1 for targets with
    // kernel facts (format 2, the KernelFacts union; capture.fbs), or the newer minor version a
    // target's facts need (Adreno, NVIDIA: 2.2).
    const uint16_t minor = std::max<uint16_t>(tc.version_major == 1 ? 2 : 1, tc.version_minor);
    auto cap = fb::CreateCapture(
        fbb, tc.version_major, minor, fbb.CreateString("capgraph 0.1.0"),
        fbb.CreateString(info.model_name), target, inputs, outputs, fbb.CreateVector(weights),
        plan.arena.plan.size, plan.arena.plan.naive_size, fbb.CreateVector(planned),
        fbb.CreateVector(programs), fbb.CreateVector(kernels), fbb.CreateVector(steps),
        (uint32_t)info.threads, samples.empty() ? 0 : fbb.CreateVector(samples), twin_target,
        info.compile_options.empty() ? 0 : fbb.CreateVectorOfStrings(info.compile_options));
    fbb.Finish(cap, fb::CaptureIdentifier());
    return std::vector<uint8_t>(fbb.GetBufferPointer(), fbb.GetBufferPointer() + fbb.GetSize());
  }
};

}  // namespace

std::vector<uint8_t> capture_build(const Program &p, const TargetCode &tc, const CapturePlan &plan,
                                   const CaptureInfo &info) {
  return CaptureWriter(p, tc, plan, info).write();
}

std::vector<uint8_t> capture_build(const Program &p, const CodegenResult &code, const CpuTarget &t,
                                   const CapturePlan &plan, const CaptureInfo &info) {
  TargetCode tc;
  tc.target = t;
  tc.code = code;
  return capture_build(p, tc, plan, info);
}

}  // namespace capgraph
