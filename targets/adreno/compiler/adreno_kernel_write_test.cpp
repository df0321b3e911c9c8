// The Adreno kernel facts survive their capture form (AdrenoKernel in schema/capture.fbs)
// unchanged, and the reader refuses values the a6xx registers cannot hold. With Mesa, the facts
// come from a real ir3 compile; without it, from a hand-made set (the format does not depend on
// Mesa).
#include "adreno_kernel_write.h"

#include <doctest/doctest.h>
#include <unistd.h>

#include <filesystem>

#include "compile.h"
#include "error.h"
#include "onnx_writer.h"

using namespace capgraph;
using namespace capgraph::model_gen;
namespace fs = std::filesystem;

namespace {

AdrenoKernelFacts facts_made() {
  AdrenoKernelFacts f;
  f.instr_dwords = 40;
  f.instr_count = 23;
  f.full_regs = 5;
  f.half_regs = 2;
  f.branch_stack = 1;
  f.private_memory_bytes = 64;
  f.shared_memory_bytes = 2048;
  f.double_threadsize = true;
  f.constlen_vec4 = 8;
  f.params_offset_vec4 = 0;
  f.params_bytes = 24;
  f.immediates_offset_vec4 = 2;
  f.immediates = {0x3f800000u, 7, 0xffffffffu};
  f.driver_params_offset_vec4 = 4;
  f.workgroup_id_regid = 0x0;
  f.local_id_regid = 0xc0;
  f.workgroup_size[0] = 128;
  f.grid[0] = 300;
  f.lanes = 4;
  f.reduce_split = 16;
  // A 64 x 96 float16 weight read as 16 texels x 96 rows (128-byte rows).
  f.images = {{1, adreno::fmt6_16_16_16_16_float, 16, 96, 128}};
  return f;
}

AdrenoKernelFacts facts_real() {
  if (!adreno_available()) {
    MESSAGE("no Mesa in this build: the round trip uses hand-made facts");
    return facts_made();
  }
  char tmpl[] = "/tmp/capgraph_adreno_kw_XXXXXX";
  REQUIRE(mkdtemp(tmpl) != nullptr);
  fs::path dir = tmpl;
  ModelBuilder b(13);
  b.input("x", DataType::float32, {2, 300});
  b.node("Softmax", {"x"}, {"y"}, {attr_int("axis", 1)});
  b.output("y", DataType::float32);
  b.save((dir / "softmax.onnx").string());
  CompileOptions opt;
  opt.target = adreno_a630().name;
  Program p = compile_schedule((dir / "softmax.onnx").string(), opt, nullptr);
  fs::remove_all(dir);
  AdrenoCodegenResult r = adreno_codegen(p, adreno_a630());
  REQUIRE(!r.unique.empty());
  return r.unique.back();
}

std::vector<uint8_t> written(const AdrenoKernelFacts &f) {
  flatbuffers::FlatBufferBuilder fbb;
  fbb.Finish(adreno_kernel_write(fbb, f, adreno_a630()));
  return std::vector<uint8_t>(fbb.GetBufferPointer(), fbb.GetBufferPointer() + fbb.GetSize());
}

void facts_equal(const AdrenoKernelFacts &a, const AdrenoKernelFacts &b) {
  CHECK(a.instr_dwords == b.instr_dwords);
  CHECK(a.instr_count == b.instr_count);
  CHECK(a.full_regs == b.full_regs);
  CHECK(a.half_regs == b.half_regs);
  CHECK(a.merged_regs == b.merged_regs);
  CHECK(a.branch_stack == b.branch_stack);
  CHECK(a.private_memory_bytes == b.private_memory_bytes);
  CHECK(a.shared_memory_bytes == b.shared_memory_bytes);
  CHECK(a.double_threadsize == b.double_threadsize);
  CHECK(a.constlen_vec4 == b.constlen_vec4);
  CHECK(a.params_offset_vec4 == b.params_offset_vec4);
  CHECK(a.params_bytes == b.params_bytes);
  CHECK(a.immediates_offset_vec4 == b.immediates_offset_vec4);
  CHECK(a.immediates == b.immediates);
  CHECK(a.driver_params_offset_vec4 == b.driver_params_offset_vec4);
  CHECK(a.workgroup_id_regid == b.workgroup_id_regid);
  CHECK(a.local_id_regid == b.local_id_regid);
  for (int i = 0; i < 3; i++) {
    CHECK(a.workgroup_size[i] == b.workgroup_size[i]);
    CHECK(a.grid[i] == b.grid[i]);
  }
  CHECK(a.lanes == b.lanes);
  CHECK(a.reduce_split == b.reduce_split);
  REQUIRE(a.images.size() == b.images.size());
  for (size_t i = 0; i < a.images.size(); i++) {
    CHECK(a.images[i].slot == b.images[i].slot);
    CHECK(a.images[i].format == b.images[i].format);
    CHECK(a.images[i].width == b.images[i].width);
    CHECK(a.images[i].height == b.images[i].height);
    CHECK(a.images[i].pitch == b.images[i].pitch);
  }
}

}  // namespace

TEST_CASE("Adreno kernel facts survive the capture form") {
  for (const AdrenoKernelFacts &f : {facts_made(), facts_real()}) {
    std::vector<uint8_t> bytes = written(f);
    flatbuffers::Verifier v(bytes.data(), bytes.size());
    REQUIRE(v.VerifyBuffer<fb::AdrenoKernel>(nullptr));
    const fb::AdrenoKernel *k = flatbuffers::GetRoot<fb::AdrenoKernel>(bytes.data());
    CHECK(k->gpu_id() == 630);
    CHECK(k->chip_id() == 0x06030001u);
    facts_equal(adreno_kernel_read(*k, "test"), f);
  }
}

TEST_CASE("the reader refuses facts the a6xx registers cannot hold, naming the kernel") {
  struct Case {
    const char *what;
    void (*spoil)(AdrenoKernelFacts &);
  };
  const Case cases[] = {
      {"register footprint", [](AdrenoKernelFacts &f) { f.full_regs = 64; }},
      {"workgroup size", [](AdrenoKernelFacts &f) { f.workgroup_size[0] = 2048; }},
      {"empty launch grid", [](AdrenoKernelFacts &f) { f.grid[1] = 0; }},
      {"parameters outside", [](AdrenoKernelFacts &f) { f.params_offset_vec4 = 7; }},
      {"immediates outside", [](AdrenoKernelFacts &f) { f.immediates.resize(40); }},
      {"64-bit instructions", [](AdrenoKernelFacts &f) { f.instr_dwords = 41; }},
      // Image facts a texture descriptor cannot hold (adreno_texture.h).
      {"image 0: format 7", [](AdrenoKernelFacts &f) { f.images[0].format = 7; }},
      {"image 0: size 16x0", [](AdrenoKernelFacts &f) { f.images[0].height = 0; }},
      {"image 0: size 20000x96", [](AdrenoKernelFacts &f) { f.images[0].width = 20000; }},
      {"image 0: pitch 100", [](AdrenoKernelFacts &f) { f.images[0].pitch = 100; }},
      {"image 0: pitch 64", [](AdrenoKernelFacts &f) { f.images[0].pitch = 64; }},
      {"more than 16 images", [](AdrenoKernelFacts &f) { f.images.assign(17, f.images[0]); }},
  };
  for (const Case &c : cases) {
    INFO(c.what);
    AdrenoKernelFacts f = facts_made();
    c.spoil(f);
    std::vector<uint8_t> bytes = written(f);
    try {
      adreno_kernel_read(*flatbuffers::GetRoot<fb::AdrenoKernel>(bytes.data()), "kernel conv_7");
      FAIL("accepted");
    } catch (const Error &e) {
      std::string m = e.what();
      CHECK(m.find("kernel conv_7") != std::string::npos);
      CHECK(m.find(c.what) != std::string::npos);
    }
  }
}
