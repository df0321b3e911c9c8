// Every supported op with a malformed node (issue 16, finding 4): its first input missing, its
// second input missing, no outputs. Each model goes through the whole front end (import,
// inference, folding, lowering, scheduling); the compile must either succeed or throw Error, and
// the cases the arity table forbids must name the node and its op. Before the table, 58 ops
// segfaulted on a missing first input and 64 on a node without outputs.
#include "graph/op_arity.h"

#include <doctest/doctest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <set>

#include "compile.h"
#include "error.h"
#include "onnx_writer.h"
#include "schedule/lower.h"

using namespace capgraph;
using namespace capgraph::model_gen;

namespace {

std::string model_path() {
  static std::string p = "/tmp/capgraph_op_arity_test_" + std::to_string(getpid()) + ".onnx";
  return p;
}

// Compiles a one-node model: input x f32 2x3x4x4, node 'n1' (op, inputs, outputs), graph output
// `out`. Returns "" when it compiled, else the Error's message. Any other exception fails the test.
std::string compile_one(int64_t opset, const std::string &op, std::vector<std::string> ins,
                        std::vector<std::string> outs, const std::string &out) {
  ModelBuilder b(opset);
  b.input("x", DataType::float32, {2, 3, 4, 4});
  b.node(op, ins, outs).name = "n1";
  b.output(out, DataType::float32);
  b.save(model_path());
  try {
    compile_schedule(model_path(), CompileOptions{}, nullptr);
  } catch (const Error &e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("op_arity: every op the lowering supports has a row, and every row is a supported op") {
  std::vector<std::string> ops = lower_ops();
  CHECK(ops.size() >= 88);
  for (const std::string &op : ops) {
    INFO(op);
    CHECK(op_arity_find(op) != nullptr);
  }
  for (const OpArity &a : op_arity_table()) {
    INFO(a.op);
    CHECK(std::find(ops.begin(), ops.end(), a.op) != ops.end());
    CHECK(a.min_inputs <= a.max_inputs + (a.max_inputs < 0 ? 1 << 20 : 0));
  }
}

TEST_CASE(
    "op_arity: a node missing its first input, missing its second, or with no outputs never "
    "crashes") {
  for (int64_t opset : {9, 13, 18}) {
    for (const std::string &op : lower_ops()) {
      const OpArity *a = op_arity_find(op);
      REQUIRE(a);
      int required =
          a->since_opset && opset >= a->since_opset ? a->min_inputs_since : a->min_inputs;
      int n_in = std::max(required, 2);
      INFO(op << " at opset " << opset);
      // First input missing.
      std::vector<std::string> ins(n_in, "x");
      ins[0] = "";
      std::string msg = compile_one(opset, op, ins, {"y"}, "y");
      if (required >= 1) {
        CHECK(msg.find("input 0 is missing") != std::string::npos);
        CHECK(msg.find(op + " node 'n1'") != std::string::npos);
      }
      // Second input missing (compiles when it is optional).
      ins.assign(n_in, "x");
      ins[1] = "";
      msg = compile_one(opset, op, ins, {"y"}, "y");
      if (required >= 2) CHECK(msg.find("input 1 is missing") != std::string::npos);
      // No outputs: the graph's output is its input.
      ins.assign(required, "x");
      msg = compile_one(opset, op, ins, {}, "x");
      CHECK(msg.find("output 0 is missing") != std::string::npos);
      CHECK(msg.find(op + " node 'n1'") != std::string::npos);
      // Output 0 omitted by name, a later one given: refused, except by the recurrent layers, whose
      // outputs are all optional (a model may want only Y_h).
      msg = compile_one(opset, op, ins, {"", "y"}, "y");
      if (op != "RNN" && op != "GRU" && op != "LSTM")
        CHECK(msg.find("output 0 is missing") != std::string::npos);
      else
        CHECK(msg.find("output 0 is missing") == std::string::npos);
    }
  }
  std::remove(model_path().c_str());
}

TEST_CASE("op_arity: too many inputs or outputs are refused naming the node") {
  std::string msg = compile_one(13, "Relu", {"x", "x"}, {"y"}, "y");
  CHECK(msg.find("Relu node 'n1': has 2 inputs; Relu takes at most 1") != std::string::npos);
  msg = compile_one(13, "Add", {"x", "x"}, {"y", "z"}, "y");
  CHECK(msg.find("Add node 'n1': has 2 outputs; Add has at most 1") != std::string::npos);
  // Trailing omitted inputs are the same as absent ones.
  CHECK(compile_one(13, "Relu", {"x", ""}, {"y"}, "y") == "");
  // The arity that changed with the opset: Slice's starts and ends are inputs since 10.
  msg = compile_one(13, "Slice", {"x"}, {"y"}, "y");
  CHECK(msg.find("input 1 is missing (Slice needs 3 inputs at opset 13)") != std::string::npos);
  std::remove(model_path().c_str());
}

// The README's "What is supported" op list is the compiler's op table (issue 18): an op added
// without the README, or listed without being supported, fails here naming it.
TEST_CASE("README: the supported-op list names exactly the ops the lowering supports") {
  std::ifstream f(std::string(CAPGRAPH_REPO_DIR) + "/README.md");
  REQUIRE(f);
  std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  size_t section = text.find("## What is supported");
  REQUIRE(section != std::string::npos);
  size_t begin = text.find("Ops: ", section), end = text.find("Anything else", section);
  REQUIRE(begin != std::string::npos);
  REQUIRE(end != std::string::npos);
  std::string list = text.substr(begin + 5, end - begin - 5);
  // Parenthesised notes go; "A and B" and "ReduceMean/Sum/..." expand to their op names.
  std::string flat;
  int depth = 0;
  for (char c : list) {
    if (c == '(')
      depth++;
    else if (c == ')')
      depth--;
    else if (depth == 0)
      flat += c == '\n' ? ' ' : c;
  }
  std::set<std::string> listed;
  std::string token;
  auto token_end = [&] {
    std::string t = token;
    token.clear();
    while (!t.empty() && (t.back() == ' ' || t.back() == '.')) t.pop_back();
    while (!t.empty() && t.front() == ' ') t.erase(t.begin());
    for (size_t at; (at = t.find(" and ")) != std::string::npos;) {
      listed.insert(t.substr(0, at));
      t = t.substr(at + 5);
    }
    if (t.empty()) return;
    size_t slash = t.find('/');
    if (slash == std::string::npos) {
      listed.insert(t);
      return;
    }
    // ReduceMean/Sum/Max: the first names the prefix ("Reduce") the others share.
    std::string first = t.substr(0, slash),
                prefix = first.substr(0, first.find_first_of("ABCDEFGHIJKLMNOPQRSTUVWXYZ", 1));
    listed.insert(first);
    for (size_t from = slash + 1; from <= t.size();) {
      size_t next = t.find('/', from);
      if (next == std::string::npos) next = t.size();
      listed.insert(prefix + t.substr(from, next - from));
      from = next + 1;
    }
  };
  for (char c : flat) {
    if (c == ',')
      token_end();
    else
      token += c;
  }
  token_end();
  std::vector<std::string> ops = lower_ops();
  std::set<std::string> supported(ops.begin(), ops.end());
  for (const std::string &op : supported)
    CHECK_MESSAGE(listed.count(op), op << " is supported but not in README.md's list");
  for (const std::string &op : listed)
    CHECK_MESSAGE(supported.count(op), op << " is in README.md's list but not supported");
}
