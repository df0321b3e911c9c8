#include "graph/op_arity.h"

#include "error.h"

namespace capgraph {

// Sources: the ONNX operator specification (onnx/docs/Operators.md), each op's inputs and outputs
// over opsets 7 to 21. Where a later opset turned an attribute into a required input (Reshape's
// shape since 5, Upsample's scales since 9, Slice's starts/ends since 10, Pad's pads since 11,
// Unsqueeze's axes since 13), the row says since when.
const std::vector<OpArity> &op_arity_table() {
  static const std::vector<OpArity> table = {
      // Elementwise, one input.
      {"Relu", 1, 1, 1},
      {"Sigmoid", 1, 1, 1},
      {"Tanh", 1, 1, 1},
      {"Exp", 1, 1, 1},
      {"Log", 1, 1, 1},
      {"Sqrt", 1, 1, 1},
      {"Erf", 1, 1, 1},
      {"Reciprocal", 1, 1, 1},
      {"Floor", 1, 1, 1},
      {"Ceil", 1, 1, 1},
      {"Round", 1, 1, 1},
      {"Softplus", 1, 1, 1},
      {"Mish", 1, 1, 1},
      {"Softsign", 1, 1, 1},
      {"HardSigmoid", 1, 1, 1},
      {"HardSwish", 1, 1, 1},
      {"Elu", 1, 1, 1},
      {"Selu", 1, 1, 1},
      {"LeakyRelu", 1, 1, 1},
      {"ThresholdedRelu", 1, 1, 1},
      {"Gelu", 1, 1, 1},
      {"Neg", 1, 1, 1},
      {"Abs", 1, 1, 1},
      {"Sign", 1, 1, 1},
      {"Not", 1, 1, 1},
      {"Identity", 1, 1, 1},
      {"Cast", 1, 1, 1},
      {"Dropout", 1, 3, 2},  // ratio and training_mode inputs since opset 12; mask output
      {"Clip", 1, 3, 1},     // min and max inputs since opset 11, both optional
      // Elementwise, two or three inputs.
      {"Add", 2, 2, 1},
      {"Sub", 2, 2, 1},
      {"Mul", 2, 2, 1},
      {"Div", 2, 2, 1},
      {"Pow", 2, 2, 1},
      {"Equal", 2, 2, 1},
      {"Less", 2, 2, 1},
      {"Greater", 2, 2, 1},
      {"LessOrEqual", 2, 2, 1},
      {"GreaterOrEqual", 2, 2, 1},
      {"And", 2, 2, 1},
      {"Or", 2, 2, 1},
      {"Mod", 2, 2, 1},
      {"PRelu", 2, 2, 1},
      {"Where", 3, 3, 1},
      {"Sum", 1, -1, 1},
      {"Mean", 1, -1, 1},
      {"Max", 1, -1, 1},
      {"Min", 1, -1, 1},
      // Movement and shape.
      {"Reshape", 2, 2, 1},
      {"Flatten", 1, 1, 1},
      {"Squeeze", 1, 2, 1},
      {"Unsqueeze", 1, 2, 1, 13, 2},
      {"Transpose", 1, 1, 1},
      {"Slice", 1, 5, 1, 10, 3},
      {"Expand", 2, 2, 1},
      {"Concat", 1, -1, 1},
      {"Split", 1, 2, -1},
      {"Gather", 2, 2, 1},
      {"Pad", 1, 4, 1, 11, 2},
      {"Tile", 2, 2, 1},
      {"Resize", 1, 4, 1},
      {"Upsample", 1, 2, 1, 9, 2},
      {"DepthToSpace", 1, 1, 1},
      {"SpaceToDepth", 1, 1, 1},
      {"Shape", 1, 1, 1},
      {"Size", 1, 1, 1},
      {"Constant", 0, 0, 1},
      {"ConstantOfShape", 1, 1, 1},
      {"Range", 3, 3, 1},
      // Neural network.
      {"Conv", 2, 3, 1},
      {"ConvTranspose", 2, 3, 1},
      {"MaxPool", 1, 1, 2},
      {"AveragePool", 1, 1, 1},
      {"GlobalAveragePool", 1, 1, 1},
      {"GlobalMaxPool", 1, 1, 1},
      {"MatMul", 2, 2, 1},
      {"Gemm", 2, 3, 1},
      {"BatchNormalization", 5, 5, 5},
      // Reductions and normalisations.
      {"ReduceMean", 1, 2, 1},
      {"ReduceSum", 1, 2, 1},
      {"ReduceMax", 1, 2, 1},
      {"ReduceMin", 1, 2, 1},
      {"ReduceProd", 1, 2, 1},
      {"ReduceSumSquare", 1, 2, 1},
      {"ReduceL1", 1, 2, 1},
      {"ReduceL2", 1, 2, 1},
      {"ReduceLogSumExp", 1, 2, 1},
      {"Softmax", 1, 1, 1},
      {"LogSoftmax", 1, 1, 1},
      {"InstanceNormalization", 3, 3, 1},
      {"LayerNormalization", 2, 3, 3},
      {"ArgMax", 1, 1, 1},
      {"ArgMin", 1, 1, 1},
      {"ReduceLogSum", 1, 2, 1},
      {"Hardmax", 1, 1, 1},
      // Issue 18 (ONNX node tests): positions, indices and a few more elementwise ops.
      {"GatherElements", 2, 2, 1},
      {"Trilu", 1, 2, 1},
      {"CumSum", 2, 2, 1},
      {"OneHot", 3, 3, 1},
      {"EyeLike", 1, 1, 1},
      {"Xor", 2, 2, 1},
      {"IsNaN", 1, 1, 1},
      {"IsInf", 1, 1, 1},
      {"Celu", 1, 1, 1},
      {"Shrink", 1, 1, 1},
      {"CastLike", 2, 2, 1},
      {"Sin", 1, 1, 1},
      {"Cos", 1, 1, 1},
      {"Tan", 1, 1, 1},
      {"Asin", 1, 1, 1},
      {"Acos", 1, 1, 1},
      {"Atan", 1, 1, 1},
      {"Sinh", 1, 1, 1},
      {"Cosh", 1, 1, 1},
      {"Asinh", 1, 1, 1},
      {"Acosh", 1, 1, 1},
      {"Atanh", 1, 1, 1},
      {"LRN", 1, 1, 1},
      {"GatherND", 2, 2, 1},
      {"ScatterND", 3, 3, 1},
      {"ScatterElements", 3, 3, 1},
      {"Scatter", 3, 3, 1},
      {"TopK", 1, 2, 2, 10, 2},  // K is an input since opset 10
      {"QuantizeLinear", 2, 3, 1},
      {"DequantizeLinear", 2, 3, 1},
      {"MeanVarianceNormalization", 1, 1, 1},
      {"NegativeLogLikelihoodLoss", 2, 3, 1},
      {"SoftmaxCrossEntropyLoss", 2, 3, 2},
      {"Einsum", 1, -1, 1},
      {"Compress", 2, 2, 1},
      {"NonZero", 1, 1, 1},
      {"Unique", 1, 1, 4},
      {"ReverseSequence", 2, 2, 1},
      {"HannWindow", 1, 1, 1},
      {"HammingWindow", 1, 1, 1},
      {"BlackmanWindow", 1, 1, 1},
      {"ConvInteger", 2, 4, 1},
      {"MatMulInteger", 2, 4, 1},
      {"QLinearConv", 8, 9, 1},
      {"QLinearMatMul", 8, 8, 1},
      {"DynamicQuantizeLinear", 1, 1, 3},
      {"RNN", 3, 6, 2},
      {"GRU", 3, 6, 2},
      {"LSTM", 3, 8, 3},
      {"GridSample", 2, 2, 1},
      {"NonMaxSuppression", 2, 5, 1},
      {"RoiAlign", 3, 3, 1},
  };
  return table;
}

const OpArity *op_arity_find(const std::string &op) {
  for (const OpArity &a : op_arity_table())
    if (op == a.op) return &a;
  return nullptr;
}

void node_arity_check(const Node &n, int64_t opset, const std::string &origin) {
  const OpArity *a = op_arity_find(n.op);
  if (!a) return;
  auto fail = [&](const std::string &msg) { throw Error(origin + ": " + n.label() + ": " + msg); };
  int required = a->since_opset && opset >= a->since_opset ? a->min_inputs_since : a->min_inputs;
  // Trailing omitted inputs ("") are the same as absent ones.
  size_t given = n.inputs.size();
  while (given > 0 && !n.inputs[given - 1]) given--;
  for (int i = 0; i < required; i++)
    if (i >= (int)n.inputs.size() || !n.inputs[i])
      fail("input " + std::to_string(i) + " is missing (" + n.op + " needs " +
           std::to_string(required) + (required == 1 ? " input" : " inputs") + " at opset " +
           std::to_string(opset) + ")");
  if (a->max_inputs >= 0 && given > (size_t)a->max_inputs)
    fail("has " + std::to_string(given) + " inputs; " + n.op + " takes at most " +
         std::to_string(a->max_inputs));
  // The recurrent layers' outputs are all optional (a model may want only Y_h); at least one is
  // named.
  bool any_output = false;
  for (const Value *o : n.outputs) any_output = any_output || !o->name.empty();
  bool recurrent = n.op == "RNN" || n.op == "GRU" || n.op == "LSTM";
  if (n.outputs.empty() || (recurrent ? !any_output : n.outputs[0]->name.empty()))
    fail(recurrent ? "output 0 is missing, and no other output is named"
                   : "output 0 is missing (every node must name its first output)");
  size_t outs = n.outputs.size();
  while (outs > 0 && n.outputs[outs - 1]->name.empty()) outs--;
  if (a->max_outputs >= 0 && outs > (size_t)a->max_outputs)
    fail("has " + std::to_string(outs) + " outputs; " + n.op + " has at most " +
         std::to_string(a->max_outputs));
}

}  // namespace capgraph
