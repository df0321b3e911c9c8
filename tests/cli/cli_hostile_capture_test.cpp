// Issue 16: captures of real compiled models, edited the way an attacker would, through `capgraph
// run`. The weights (index tables among them) carry no checksum, and neither do launches, buffers
// or the arena: every such edit must give a clear load error or a safe run, never a read or write
// outside what was allocated (release would often not even crash: the sanitizer build tells).
#include <doctest/doctest.h>

#include <cstring>
#include <random>

#include "capgraph/capture_generated.h"
#include "cli_harness.h"
#include "onnx_writer.h"

using namespace capgraph;
using namespace capgraph::cli_test;
using namespace capgraph::model_gen;

namespace {

std::string compiled(const ModelBuilder &b, const std::string &name) {
  const std::string onnx = scratch_path(name + ".onnx"), cap = scratch_path(name + ".cap");
  if (file_exists(cap)) return cap;
  b.save(onnx);
  const cli_result r = cli_run({"compile", onnx, "-o", cap});
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  return cap;
}

// x f32 5x6 -> Gather(axis 0) with constant indices {4, 0, 2, 2, 1, 3} -> y 6x6
std::string capture_gather() {
  ModelBuilder b(13);
  b.input("x", DataType::float32, {5, 6});
  b.initializer("idx", std::vector<int64_t>{4, 0, 2, 2, 1, 3}, {6});
  b.node("Gather", {"x", "idx"}, {"y"}, {attr_int("axis", 0)}).name = "gather1";
  b.output("y", DataType::float32, {6, 6});
  return compiled(b, "gather");
}

// x f32 1x1x3x5 -> Resize(nearest, scales 1,1,2,3) -> y 1x1x6x15
std::string capture_resize() {
  ModelBuilder b(13);
  b.input("x", DataType::float32, {1, 1, 3, 5});
  b.initializer("scales", std::vector<float>{1, 1, 2, 3}, {4});
  b.node("Resize", {"x", "", "scales"}, {"y"}, {attr_string("mode", "nearest")}).name = "resize1";
  b.output("y", DataType::float32, {1, 1, 6, 15});
  return compiled(b, "resize");
}

struct table_at {
  size_t offset;  // in the file
  size_t bytes;
  fb::DType dtype;
};

// Where the index tables of a capture's launches lie in the file.
std::vector<table_at> index_tables(const std::vector<uint8_t> &cap) {
  std::vector<table_at> out;
  const fb::Capture *c = fb::GetCapture(cap.data());
  for (const fb::Step *s : *c->steps()) {
    if (!s->launch()) continue;
    const fb::KernelBounds *b = c->kernels()->Get(s->launch()->kernel())->bounds();
    if (!b || !b->index_tables()) continue;
    for (const fb::IndexTable *t : *b->index_tables()) {
      const fb::BufferRef *r = s->launch()->buffers()->Get(t->buffer());
      const uint8_t *data = c->weights()->Get(r->index())->data()->data() + r->offset();
      out.push_back(
          {size_t(data - cap.data()), size_t(b->buffer_sizes()->Get(t->buffer())), t->dtype()});
    }
  }
  return out;
}

void table_entry_write(std::vector<uint8_t> &cap, const table_at &t, size_t i, int64_t v) {
  if (t.dtype == fb::DType::i64) {
    memcpy(&cap[t.offset + 8 * i], &v, 8);
  } else {
    const int32_t v32 = int32_t(v);
    memcpy(&cap[t.offset + 4 * i], &v32, 4);
  }
}

// The file offset of a scalar field of a table (present in the file: not a default value).
size_t field_offset(const std::vector<uint8_t> &cap, const void *table, uint16_t vt) {
  const uint8_t *p = reinterpret_cast<const flatbuffers::Table *>(table)->GetAddressOf(vt);
  REQUIRE(p != nullptr);
  return size_t(p - cap.data());
}

void u64_write(std::vector<uint8_t> &cap, size_t at, uint64_t v) { memcpy(&cap[at], &v, 8); }

std::string variant(const std::string &name, const std::vector<uint8_t> &bytes) {
  const std::string path = scratch_path(name);
  file_write(path, bytes);
  return path;
}

// Changing index tables: out of range is refused at load, in range runs; random flips do one or
// the other, never crash.
void index_tables_attack(const std::string &cap, const std::vector<std::string> &inputs,
                         const std::string &name) {
  const std::vector<uint8_t> good = file_read(cap);
  std::vector<std::string> run = {"run", cap};
  for (const std::string &in : inputs) run.insert(run.end(), {"--input", in});
  check_success(cli_run(run));
  const std::vector<table_at> tables = index_tables(good);
  REQUIRE_MESSAGE(!tables.empty(), "the compiled " << name << " reads no index table");
  for (int64_t bad : {int64_t(1) << 20, int64_t(-1), int64_t(100), int64_t(INT32_MAX)}) {
    std::vector<uint8_t> edited = good;
    table_entry_write(edited, tables[0], 1, bad);
    const std::string path = variant(name + "_table_" + std::to_string(bad) + ".cap", edited);
    run[1] = path;
    INFO("entry " << bad);
    check_clean_failure(cli_run(run), {path, "index table", std::to_string(bad)});
  }
  std::vector<uint8_t> edited = good;
  table_entry_write(edited, tables[0], 1, 0);  // another index in range: runs
  run[1] = variant(name + "_table_0.cap", edited);
  check_success(cli_run(run));
  int ran = 0, refused = 0;
  for (unsigned seed = 1; seed <= 30; seed++) {
    std::mt19937 rng(seed);
    std::vector<uint8_t> bad = good;
    const table_at &t = tables[rng() % tables.size()];
    bad[t.offset + rng() % t.bytes] ^= uint8_t(1u << (rng() % 8));
    run[1] = variant(name + "_flip_" + std::to_string(seed) + ".cap", bad);
    const cli_result r = cli_run(run);
    INFO("seed " << seed << ": " << r.output);
    CHECK(crash_sign(r).empty());
    if (r.exit_code == 0) {
      ran++;
    } else {
      refused++;
      check_clean_failure(r, {run[1], "index table"});
    }
  }
  MESSAGE(name << ": " << ran << " flipped tables ran, " << refused << " were refused");
  CHECK(refused > 0);
}

}  // namespace

TEST_CASE("hostile capture: Gather's constant index table edited") {
  index_tables_attack(capture_gather(), {"x=" + npy_f32("x_5x6.npy", {5, 6})}, "gather");
}

TEST_CASE("hostile capture: Resize's index tables edited") {
  index_tables_attack(capture_resize(), {"x=" + npy_f32("x_1x1x3x5.npy", {1, 1, 3, 5})}, "resize");
}

TEST_CASE("hostile capture: a Relu launch declaring 1 MiB in a small arena, or 2^32 work items") {
  const std::string cap = capture_mul_add();
  const std::vector<uint8_t> good = file_read(cap);
  const fb::Capture *c = fb::GetCapture(good.data());
  REQUIRE(c->arena_size() < (1u << 20));
  const std::vector<std::string> inputs = {"--input", "x=" + npy_f32("x_2x3.npy", {2, 3}),
                                           "--input", "bias=" + npy_f32("bias_3.npy", {3})};
  auto run_of = [&](const std::string &path) {
    std::vector<std::string> a = {"run", path};
    a.insert(a.end(), inputs.begin(), inputs.end());
    return a;
  };
  check_success(cli_run(run_of(cap)));
  const fb::Launch *l = nullptr;
  for (const fb::Step *s : *c->steps())
    if (s->launch()) l = s->launch();
  REQUIRE(l != nullptr);
  const size_t last = l->buffer_sizes()->size() - 1;
  const size_t sizes_at =
      size_t(reinterpret_cast<const uint8_t *>(l->buffer_sizes()->Data()) - good.data());
  {  // the output binding declares 1 MiB
    std::vector<uint8_t> bad = good;
    u64_write(bad, sizes_at + 8 * last, 1u << 20);
    const std::string path = variant("relu_1mib.cap", bad);
    check_clean_failure(cli_run(run_of(path)), {path, "is outside the arena"});
  }
  {  // ... and the arena is made large enough for it: the kernel's code still touches only its
     // own bytes, so this one may run (the arena is allocated at the declared size).
    std::vector<uint8_t> bad = good;
    u64_write(bad, sizes_at + 8 * last, 1u << 20);
    u64_write(bad, field_offset(good, c, fb::Capture::VT_ARENA_SIZE), 2u << 20);
    const std::string path = variant("relu_1mib_big_arena.cap", bad);
    check_success(cli_run(run_of(path)));
  }
  {  // 2^32 work items, the partition edited to match
    std::vector<uint8_t> bad = good;
    const uint64_t work = uint64_t(1) << 32;
    u64_write(bad, field_offset(good, l, fb::Launch::VT_WORK_SIZE), work);
    const auto *part = l->partition();
    const size_t part_at = size_t(reinterpret_cast<const uint8_t *>(part->Data()) - good.data());
    for (uint32_t t = 1; t < part->size(); ++t)
      u64_write(bad, part_at + 8 * t, work * t / (part->size() - 1));
    const std::string path = variant("relu_2p32.cap", bad);
    check_clean_failure(cli_run(run_of(path), 20000),
                        {path, "work_size 4294967296 is more than the"});
  }
}
