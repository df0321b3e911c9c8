// The model the view and inspect tests compile: small enough to compile in about a second, big
// enough that the memory plan reuses the arena, and named to break a careless web page.
#pragma once
#include <string>

namespace capgraph::view_test {

// ONNX names taken from an attacker's model: they end a <script> element, open an HTML comment,
// carry quotes, an ampersand entity and a U+2028 line separator (which ends a JavaScript line).
extern const char kHostileNode[];   // a Conv node's name (a launch's source_nodes)
extern const char kHostileValue[];  // the residual Add's output (a planned buffer's name)

// small_cnn.onnx in the scratch directory: x f32 1x3x16x16 -> Conv+Relu 'stem' -> Conv (named
// kHostileNode) -> Add with the stem's output (into kHostileValue) -> Conv stride 2 ->
// GlobalAveragePool -> Flatten -> Gemm -> Softmax -> y f32 1x10.
std::string model_small_cnn();
// The same compiled with `capgraph compile` (cached in the scratch directory).
std::string capture_small_cnn();

}  // namespace capgraph::view_test
