// The NVIDIA kernel facts survive their capture form (schema/nv_kernel.fbs) unchanged, and the
// reader refuses values the GPU or the launch descriptor cannot take. With ptxas, the facts come
// from a real compile for each target; without it, from a hand-made set (the format does not
// depend on ptxas).
#include "nv_kernel_write.h"

#include <doctest/doctest.h>
#include <unistd.h>

#include <filesystem>

#include "compile.h"
#include "error.h"
#include "nvptx_codegen.h"
#include "onnx_writer.h"

using namespace capgraph;
using namespace capgraph::model_gen;
namespace fs = std::filesystem;

namespace {

NvKernelFacts facts_made() {
  NvKernelFacts f;
  f.sm = 90;
  f.text_offset = 0x600;
  f.text_size = 384;
  f.text_align = 128;
  f.registers = 10;
  f.max_registers = 255;
  f.barriers = 1;
  f.shared_bytes = 2048;
  f.frame_bytes = 256;
  f.min_stack_bytes = 256;
  f.max_stack_bytes = 512;
  f.crs_stack_bytes = 16;
  f.cbank0_bytes = 0x230;
  f.param_offset = 0x210;
  f.param_bytes = 16;
  f.param_count = 2;
  f.param_offsets = {0, 8};
  f.param_sizes = {8, 8};
  f.reqntid[0] = 256, f.reqntid[1] = 1, f.reqntid[2] = 1;
  return f;
}

// Real facts for `t`: the last kernel of a softmax model.
std::vector<NvKernelFacts> facts_real(const NvTarget &t) {
  if (ptxas_find().empty()) {
    MESSAGE("no ptxas here: the round trip uses hand-made facts only");
    return {};
  }
  char tmpl[] = "/tmp/capgraph_nv_kw_XXXXXX";
  REQUIRE(mkdtemp(tmpl) != nullptr);
  fs::path dir = tmpl;
  ModelBuilder b(13);
  b.input("x", DataType::float32, {2, 300});
  b.node("Softmax", {"x"}, {"y"}, {attr_int("axis", 1)});
  b.output("y", DataType::float32);
  b.save((dir / "softmax.onnx").string());
  CompileOptions opt;
  opt.target = t.name;
  Program p = compile_schedule((dir / "softmax.onnx").string(), opt, nullptr);
  fs::remove_all(dir);
  NvCodegenResult r = nvptx_codegen(p, t, 1);
  REQUIRE(!r.facts.empty());
  return r.facts;
}

std::vector<uint8_t> written(const NvKernelFacts &f, const NvTarget &t) {
  flatbuffers::FlatBufferBuilder fbb;
  fbb.Finish(nv_kernel_write(fbb, f, t, "release 13.0, V13.0.88"));
  return std::vector<uint8_t>(fbb.GetBufferPointer(), fbb.GetBufferPointer() + fbb.GetSize());
}

void facts_equal(const NvKernelFacts &a, const NvKernelFacts &b) {
  CHECK(a.sm == b.sm);
  CHECK(a.text_offset == b.text_offset);
  CHECK(a.text_size == b.text_size);
  CHECK(a.text_align == b.text_align);
  CHECK(a.registers == b.registers);
  CHECK(a.max_registers == b.max_registers);
  CHECK(a.barriers == b.barriers);
  CHECK(a.shared_bytes == b.shared_bytes);
  CHECK(a.frame_bytes == b.frame_bytes);
  CHECK(a.min_stack_bytes == b.min_stack_bytes);
  CHECK(a.max_stack_bytes == b.max_stack_bytes);
  CHECK(a.crs_stack_bytes == b.crs_stack_bytes);
  CHECK(a.cbank0_bytes == b.cbank0_bytes);
  CHECK(a.param_offset == b.param_offset);
  CHECK(a.param_bytes == b.param_bytes);
  CHECK(a.param_count == b.param_count);
  CHECK(a.param_offsets == b.param_offsets);
  CHECK(a.param_sizes == b.param_sizes);
  for (int i = 0; i < 3; i++) CHECK(a.reqntid[i] == b.reqntid[i]);
}

}  // namespace

TEST_CASE("NVIDIA kernel facts survive the capture form") {
  for (const char *name : {"nv-sm86", "nv-sm89", "nv-sm90"}) {
    NvTarget t = nv_target_named(name);
    std::vector<NvKernelFacts> all = facts_real(t);
    if (t.sm == 90) all.push_back(facts_made());
    for (const NvKernelFacts &f : all) {
      INFO(std::string(name));
      std::vector<uint8_t> bytes = written(f, t);
      flatbuffers::Verifier v(bytes.data(), bytes.size());
      REQUIRE(fb::VerifyNvKernelBuffer(v));
      const fb::NvKernel *k = fb::GetNvKernel(bytes.data());
      CHECK(k->qmd_version() == t.qmd_version);
      REQUIRE(k->ptxas_version() != nullptr);
      CHECK(k->ptxas_version()->str() == "release 13.0, V13.0.88");
      facts_equal(nv_kernel_read(*k, "test"), f);
    }
  }
}

TEST_CASE("the reader refuses facts the GPU or the QMD cannot take, naming the kernel") {
  struct Case {
    const char *what;
    void (*spoil)(NvKernelFacts &);
  };
  const Case cases[] = {
      {"for sm_75", [](NvKernelFacts &f) { f.sm = 75; }},
      {"registers per thread", [](NvKernelFacts &f) { f.registers = 256; }},
      {"barriers", [](NvKernelFacts &f) { f.barriers = 17; }},
      {"shared memory", [](NvKernelFacts &f) { f.shared_bytes = 228 * 1024; }},
      {"local memory", [](NvKernelFacts &f) { f.frame_bytes = 600 * 1024; }},
      {"empty block", [](NvKernelFacts &f) { f.reqntid[1] = 0; }},
      {"more than 1024 threads", [](NvKernelFacts &f) { f.reqntid[0] = 2048; }},
      {"outside constant bank 0", [](NvKernelFacts &f) { f.param_offset = 0x228; }},
      {"not aligned", [](NvKernelFacts &f) { f.text_offset = 0x610; }},
  };
  NvTarget t = nv_target_named("nv-sm90");
  for (const Case &c : cases) {
    INFO(c.what);
    NvKernelFacts f = facts_made();
    c.spoil(f);
    std::vector<uint8_t> bytes = written(f, t);
    try {
      nv_kernel_read(*fb::GetNvKernel(bytes.data()), "kernel conv_7");
      FAIL("accepted");
    } catch (const Error &e) {
      std::string m = e.what();
      CHECK(m.find("kernel conv_7") != std::string::npos);
      CHECK(m.find(c.what) != std::string::npos);
    }
  }
  // A QMD version that does not fit the SM.
  std::vector<uint8_t> bytes = written(facts_made(), nv_target_named("nv-sm86"));
  CHECK_THROWS_WITH_AS(nv_kernel_read(*fb::GetNvKernel(bytes.data()), "k"),
                       doctest::Contains("QMD version 3"), Error);
}
