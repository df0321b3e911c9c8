#include "view_models.h"

#include <doctest/doctest.h>

#include <vector>

#include "cli_harness.h"
#include "onnx_writer.h"

namespace capgraph::view_test {

using namespace capgraph::cli_test;
using namespace capgraph::model_gen;

const char kHostileNode[] =
    "</script><img src=http://example.invalid/node.png><!-- \"q\" 'q' &amp; \xe2\x80\xa8 end";
const char kHostileValue[] =
    "value\"</SCRIPT ><script>document.body.dataset.status='hacked'</script>";

namespace {

std::vector<float> weights(size_t n, float scale) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; i++) v[i] = scale * float(int(i * 7 % 11) - 5);
  return v;
}

}  // namespace

std::string model_small_cnn() {
  const std::string path = scratch_path("small_cnn.onnx");
  if (file_exists(path)) return path;
  ModelBuilder b(13);
  b.input("x", DataType::float32, {1, 3, 16, 16});
  b.initializer("w_stem", weights(8 * 3 * 9, 0.05f), {8, 3, 3, 3});
  b.initializer("w_mid", weights(8 * 8 * 9, 0.02f), {8, 8, 3, 3});
  b.initializer("w_down", weights(16 * 8 * 9, 0.02f), {16, 8, 3, 3});
  b.initializer("w_fc", weights(16 * 10, 0.1f), {16, 10});
  b.initializer("b_fc", weights(10, 0.01f), {10});
  b.node("Conv", {"x", "w_stem"}, {"stem_conv"}, {attr_ints("pads", {1, 1, 1, 1})}).name = "stem";
  b.node("Relu", {"stem_conv"}, {"stem_out"}).name = "stem_relu";
  b.node("Conv", {"stem_out", "w_mid"}, {"mid"}, {attr_ints("pads", {1, 1, 1, 1})}).name =
      kHostileNode;
  b.node("Add", {"mid", "stem_out"}, {kHostileValue}).name = "residual_add";
  b.node("Conv", {kHostileValue, "w_down"}, {"down"},
         {attr_ints("pads", {1, 1, 1, 1}), attr_ints("strides", {2, 2})})
      .name = "down";
  b.node("GlobalAveragePool", {"down"}, {"pooled"}).name = "pool";
  b.node("Flatten", {"pooled"}, {"flat"}).name = "flatten";
  b.node("Gemm", {"flat", "w_fc", "b_fc"}, {"logits"}).name = "fc";
  b.node("Softmax", {"logits"}, {"y"}).name = "softmax";
  b.output("y", DataType::float32, {1, 10});
  b.save(path);
  return path;
}

std::string capture_small_cnn() {
  const std::string path = scratch_path("small_cnn.cap");
  if (file_exists(path)) return path;
  // 120 s: on an AVX2 machine this CNN takes ~25 CPU-s to compile (NOTES.md, "One folder per GPU
  // family": fixed border tiles), and beside other tests on a loaded 2-core machine over 30.
  const cli_result r = cli_run({"compile", model_small_cnn(), "-o", path}, 120000);
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  return path;
}

}  // namespace capgraph::view_test
