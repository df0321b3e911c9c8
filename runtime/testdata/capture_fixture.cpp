#include "capture_fixture.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <stdexcept>

#include "capture_hash.h"

namespace capgraph::test {

std::vector<uint8_t> file_read(const std::string &path) {
  std::vector<uint8_t> bytes;
  FILE *f = fopen(path.c_str(), "rb");
  if (!f) return bytes;
  uint8_t buf[1 << 16];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, f)) > 0) bytes.insert(bytes.end(), buf, buf + n);
  fclose(f);
  return bytes;
}

void file_write(const std::string &path, const std::vector<uint8_t> &bytes) {
  FILE *f = fopen(path.c_str(), "wb");
  if (!f) throw std::runtime_error("cannot create " + path);
  fwrite(bytes.data(), 1, bytes.size(), f);
  fclose(f);
}

namespace {
struct scratch_dir {
  std::string path;
  scratch_dir() {
    const char *tmp = getenv("TMPDIR");
    std::string tmpl = std::string(tmp && *tmp ? tmp : "/tmp") + "/capgraph_rt_XXXXXX";
    if (!mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
    path = tmpl;
  }
  ~scratch_dir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
};
}  // namespace

std::string temp_path(const std::string &name) {
  static scratch_dir dir;
  static int counter = 0;
  return dir.path + "/" + std::to_string(counter++) + "_" + name;
}

std::vector<uint8_t> kernel_object(const char *name) {
  return file_read(std::string(CAPGRAPH_TEST_KERNELS_DIR) + "/" + name);
}
bool have_llc() { return CAPGRAPH_TEST_HAVE_LLC; }
bool have_llvm_mc() { return CAPGRAPH_TEST_HAVE_LLVM_MC; }

const char *host_target_name() {
#if defined(__x86_64__)
  return "cpu-x86_64";
#else
  return "cpu-aarch64";
#endif
}

std::vector<uint8_t> capture_build(const capture_spec &s) {
  flatbuffers::FlatBufferBuilder b(4096);
  auto tensors = [&](const std::vector<tensor_spec> &list) {
    std::vector<flatbuffers::Offset<fb::TensorInfo>> out;
    for (const tensor_spec &t : list)
      out.push_back(
          fb::CreateTensorInfoDirect(b, t.name.c_str(), t.dtype, &t.shape, t.offset, t.size));
    return out;
  };
  const auto inputs = tensors(s.inputs);
  const auto outputs = tensors(s.outputs);
  std::vector<flatbuffers::Offset<fb::Weight>> weights;
  for (const weight_spec &w : s.weights) {
    if (!w.misaligned) {
      weights.push_back(fb::CreateWeightDirect(b, w.name.c_str(), &w.data));
      continue;
    }
    // Align as if the vector were 4 bytes longer: its data then starts 4 bytes before a 64-byte
    // boundary.
    const auto name = b.CreateString(w.name);
    b.ForceVectorAlignment(w.data.size() + 4, 1, 64);
    const auto data = b.CreateVector(w.data);
    weights.push_back(fb::CreateWeight(b, name, data));
  }
  std::vector<flatbuffers::Offset<fb::PlannedBuffer>> planned;
  for (const planned_spec &p : s.buffers)
    planned.push_back(fb::CreatePlannedBufferDirect(b, p.name.c_str(), p.offset, p.size, 0, 0));
  std::vector<flatbuffers::Offset<fb::Program>> programs;
  for (const program_spec &p : s.programs) {
    std::vector<flatbuffers::Offset<flatbuffers::String>> imports;
    for (const std::string &i : p.imports) imports.push_back(b.CreateString(i));
    uint64_t hash = capture_hash(p.binary.data(), p.binary.size()) ^ (p.hash_wrong ? 1 : 0);
    programs.push_back(fb::CreateProgramDirect(b, p.format, &p.binary, &imports, hash));
  }
  // Each launch's bytes per binding, as written below (explicit, or to the end of the region).
  const auto launch_sizes = [&](const launch_spec &l) {
    std::vector<uint64_t> sizes = l.buffer_sizes;
    if (sizes.empty())
      for (const fb::BufferRef &r : l.buffers) {
        uint64_t region = r.space() == fb::Space::arena  ? s.arena_size
                          : r.index() < s.weights.size() ? s.weights[r.index()].data.size()
                                                         : 0;
        sizes.push_back(region > r.offset() ? region - r.offset() : 0);
      }
    return sizes;
  };
  std::vector<flatbuffers::Offset<fb::Kernel>> kernels;
  for (size_t i = 0; i < s.kernels.size(); ++i) {
    const kernel_spec &k = s.kernels[i];
    const amd_kernel_spec none;
    const amd_kernel_spec &a = i < s.amd.size() ? s.amd[i] : none;
    flatbuffers::Offset<void> facts;
    if (i < s.nv.size()) {
      const nv_kernel_spec &n = s.nv[i];
      fb::NvKernelBuilder nb(b);
      nb.add_sm(n.sm);
      nb.add_qmd_version(n.qmd_version);
      nb.add_text_offset(n.text_offset);
      nb.add_text_size(n.text_size);
      nb.add_text_align(n.text_align);
      nb.add_registers(n.registers);
      nb.add_barriers(n.barriers);
      nb.add_shared_bytes(n.shared_bytes);
      nb.add_frame_bytes(n.frame_bytes);
      nb.add_cbank0_bytes(n.cbank0_bytes);
      nb.add_param_offset(n.param_offset);
      nb.add_param_bytes(n.param_bytes);
      nb.add_block_x(n.block_x);
      facts = nb.Finish().Union();
    } else if (i < s.amd.size())
      facts = fb::CreateAmdKernel(b, a.descriptor_offset, a.kernarg_size, a.kernarg_align, 0,
                                  a.private_segment_size, 0, 0, a.rsrc1, a.rsrc2, a.rsrc3,
                                  a.kernel_code_properties, a.wavefront_size, a.workgroup_size)
                  .Union();
    flatbuffers::Offset<fb::KernelBounds> bounds;
    if (k.bounds) {
      uint64_t work = k.bounds_work_size;
      std::vector<uint64_t> sizes = k.bounds_sizes;
      std::vector<int64_t> scalars;
      bool first = true;
      for (const step_spec &st : s.steps) {
        if (!st.with_launch || st.launch.kernel != i) continue;
        if (!k.bounds_work_size) work = std::max(work, st.launch.work_size);
        const std::vector<uint64_t> ls = launch_sizes(st.launch);
        if (k.bounds_sizes.empty()) {
          if (first) sizes = ls;
          for (size_t j = 0; j < sizes.size() && j < ls.size(); ++j)
            sizes[j] = std::min(sizes[j], ls[j]);
        }
        if (first) scalars = st.launch.scalars;
        first = false;
      }
      if (k.bounds_scalars) scalars = *k.bounds_scalars;
      // Consistent with the kernel even where a test makes its launches disagree with it.
      if (k.bounds_sizes.empty()) sizes.resize(k.num_buffers, 0);
      if (!k.bounds_scalars) scalars.resize(k.num_scalars, 0);
      const uint64_t program_hash = k.program < s.programs.size()
                                        ? capture_hash(s.programs[k.program].binary.data(),
                                                       s.programs[k.program].binary.size())
                                        : 0;
      capture_bounds_hash h(program_hash);
      h.str(k.entry.data(), k.entry.size());
      h.str(a.twin_entry.data(), a.twin_entry.size());
      h.u64(a.twin_work_size);
      h.u64(work);
      h.u64(sizes.size());
      for (uint64_t v : sizes) h.u64(v);
      h.u64(scalars.size());
      for (int64_t v : scalars) h.u64(uint64_t(v));
      h.u64(k.index_tables.size());
      std::vector<flatbuffers::Offset<fb::IndexTable>> tables;
      for (const index_table_spec &t : k.index_tables) {
        h.u64(t.buffer);
        h.u64(uint64_t(t.dtype));
        h.u64(uint64_t(t.low));
        h.u64(uint64_t(t.high));
        tables.push_back(fb::CreateIndexTable(b, t.buffer, t.dtype, t.low, t.high));
      }
      h.u64(k.written.size());
      for (uint32_t w : k.written) h.u64(w);
      bounds = fb::CreateKernelBoundsDirect(
          b, work, &sizes, scalars.empty() ? nullptr : &scalars, tables.empty() ? nullptr : &tables,
          k.written.empty() ? nullptr : &k.written, h.value() ^ (k.bounds_hash_wrong ? 1 : 0));
    }
    kernels.push_back(fb::CreateKernelDirect(
        b, k.name.c_str(), k.program, k.entry.c_str(), k.num_buffers, k.num_scalars, a.twin_program,
        a.twin_entry.empty() ? nullptr : a.twin_entry.c_str(), a.twin_work_size,
        i < s.nv.size()    ? fb::KernelFacts::NvKernel
        : i < s.amd.size() ? fb::KernelFacts::AmdKernel
                           : fb::KernelFacts::NONE,
        facts, bounds));
  }
  std::vector<flatbuffers::Offset<fb::Step>> steps;
  for (const step_spec &st : s.steps) {
    flatbuffers::Offset<fb::Launch> launch;
    flatbuffers::Offset<fb::Copy> copy;
    if (st.with_launch) {
      const launch_spec &l = st.launch;
      std::vector<flatbuffers::Offset<flatbuffers::String>> nodes;
      for (const std::string &n : l.nodes) nodes.push_back(b.CreateString(n));
      std::vector<uint64_t> sizes = launch_sizes(l);
      flatbuffers::Offset<flatbuffers::Vector<uint64_t>> partition;
      if (l.partition_misaligned) {
        // Written byte by byte, aligned as if it were 4 bytes longer: its data then starts 4
        // bytes before an 8-byte boundary (a flatbuffers writer would never do this).
        const size_t bytes = l.partition.size() * 8;
        b.ForceVectorAlignment(bytes + 4, 1, 8);
        b.StartVector(bytes, 1);
        b.PushBytes(reinterpret_cast<const uint8_t *>(l.partition.data()), bytes);
        partition =
            flatbuffers::Offset<flatbuffers::Vector<uint64_t>>(b.EndVector(l.partition.size()));
      } else {
        partition = b.CreateVector(l.partition);
      }
      launch = fb::CreateLaunch(b, l.kernel, b.CreateVectorOfStructs(l.buffers),
                                l.scalars.empty() ? 0 : b.CreateVector(l.scalars), l.work_size,
                                partition, b.CreateVector(nodes), 0, 0, 0, b.CreateVector(sizes));
    }
    if (st.with_copy) copy = fb::CreateCopy(b, &st.copy.src, &st.copy.dst, st.copy.size);
    steps.push_back(fb::CreateStep(b, st.kind, launch, copy));
  }
  const auto target = fb::CreateTargetDirect(b, s.target.c_str(), nullptr, nullptr,
                                             s.features.empty() ? nullptr : s.features.c_str());
  flatbuffers::Offset<fb::Target> twin_target;
  if (!s.twin_target.empty()) twin_target = fb::CreateTargetDirect(b, s.twin_target.c_str());
  const auto root = fb::CreateCaptureDirect(b, s.version_major, s.version_minor, "capgraph tests",
                                            "fixture.onnx", target, &inputs, &outputs, &weights,
                                            s.arena_size, s.arena_size, &planned, &programs,
                                            &kernels, &steps, s.threads, nullptr, twin_target);
  fb::FinishCaptureBuffer(b, root);
  return std::vector<uint8_t>(b.GetBufferPointer(), b.GetBufferPointer() + b.GetSize());
}

const uint8_t *capture_program_code(const std::vector<uint8_t> &capture, uint32_t index) {
  const fb::Capture *c = fb::GetCapture(capture.data());
  if (!c->programs() || index >= c->programs()->size()) return nullptr;
  return c->programs()->Get(index)->binary()->data();
}

fb::BufferRef arena_ref(uint64_t offset) { return fb::BufferRef(fb::Space::arena, 0, offset); }
fb::BufferRef weight_ref(uint32_t index, uint64_t offset) {
  return fb::BufferRef(fb::Space::weight, index, offset);
}

std::vector<uint64_t> partition_even(uint64_t work, uint32_t threads) {
  std::vector<uint64_t> p;
  for (uint32_t t = 0; t <= threads; ++t) p.push_back(work * t / threads);
  return p;
}

step_spec launch_step(uint32_t kernel, std::vector<fb::BufferRef> buffers, uint64_t work,
                      uint32_t threads, std::vector<int64_t> scalars) {
  step_spec s;
  s.kind = fb::StepKind::launch;
  s.launch.kernel = kernel;
  s.launch.buffers = std::move(buffers);
  s.launch.scalars = std::move(scalars);
  s.launch.work_size = work;
  s.launch.partition = partition_even(work, threads);
  s.launch.nodes = {"node_" + std::to_string(kernel)};
  return s;
}

step_spec copy_step(fb::BufferRef src, fb::BufferRef dst, uint64_t size) {
  step_spec s;
  s.kind = fb::StepKind::copy;
  s.with_launch = false;
  s.with_copy = true;
  s.copy = {src, dst, size};
  return s;
}

void reference_inputs(int64_t n, std::vector<float> *a, std::vector<float> *b) {
  a->resize(size_t(n));
  b->resize(size_t(n));
  for (int64_t i = 0; i < n; ++i) {
    (*a)[size_t(i)] = float(i % 17) * 0.125f - 1.0f;
    (*b)[size_t(i)] = float(i) * 0.5f;
  }
}

std::vector<float> reference_weight(int64_t n) {
  std::vector<float> w(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) w[size_t(i)] = float(i % 5) * 0.25f - 0.5f;
  return w;
}

reference_outputs reference_expected(const std::vector<float> &a, const std::vector<float> &b,
                                     const std::vector<float> &w) {
  static const float table[8] = {1.0f, 0.5f, 0.25f, 2.0f, 3.0f, -1.0f, 0.125f, 4.0f};
  reference_outputs out;
  for (size_t i = 0; i < a.size(); ++i) {
    const float t0 = a[i] + w[i] * table[i & 7];
    // The kernel is compiled separately: whether it fuses the multiply-add is its business, so
    // compare with a tolerance, not bit for bit.
    out.y.push_back(std::exp(t0 * 1.7f + 0.3f));
    out.z.push_back(b[i]);
    out.rows.push_back(t0);
  }
  return out;
}

capture_spec reference_spec(uint32_t threads, int64_t n) {
  const uint64_t bytes = uint64_t(n) * 4, slot = (bytes + 63) / 64 * 64;
  enum : uint64_t { a, b, t0, t1, y, z, rows, count };
  auto at = [&](uint64_t k) { return k * slot; };
  capture_spec s;
  s.threads = threads;
  s.arena_size = count * slot;
  s.inputs = {{"a", fb::DType::f32, {n}, at(a), bytes}, {"b", fb::DType::f32, {n}, at(b), bytes}};
  s.outputs = {{"y:0", fb::DType::f32, {n}, at(y), bytes},
               {"z", fb::DType::f32, {n}, at(z), bytes},
               {"rows/r", fb::DType::f32, {n / 4, 4}, at(rows), bytes}};
  const std::vector<float> w = reference_weight(n);
  weight_spec ws{"w", std::vector<uint8_t>(bytes)};
  memcpy(ws.data.data(), w.data(), bytes);
  s.weights = {ws};
  s.buffers = {{"t0", at(t0), bytes}, {"t1", at(t1), bytes}};
  s.programs = {{kernel_object("kernels_c.o"), {"expf", "memcpy"}}};
  s.kernels = {{"add_table", 0, "c_add_table", 3, 0},
               {"scale", 0, "c_scale", 2, 0},
               {"exp", 0, "c_exp", 2, 0},
               {"copy_rows", 0, "c_copy_rows", 2, 1}};
  s.steps = {
      launch_step(0, {arena_ref(at(a)), weight_ref(0), arena_ref(at(t0))}, uint64_t(n), threads),
      launch_step(1, {arena_ref(at(t0)), arena_ref(at(t1))}, uint64_t(n), threads),
      launch_step(2, {arena_ref(at(t1)), arena_ref(at(y))}, uint64_t(n), threads),
      copy_step(arena_ref(at(b)), arena_ref(at(z)), bytes),
      launch_step(3, {arena_ref(at(t0)), arena_ref(at(rows))}, uint64_t(n) / 4, threads, {4})};
  // Each binding touches its tensor's bytes only, as the compiler writes it.
  for (step_spec &st : s.steps)
    if (st.kind == fb::StepKind::launch)
      st.launch.buffer_sizes.assign(st.launch.buffers.size(), bytes);
  return s;
}

}  // namespace capgraph::test
