// JSON string literals for what the tools print (inspect --json, profile --json, view's page), and
// the target families' inspect hooks (compiler/target/target_table.h).
#pragma once
#include <string>

namespace capgraph {

// s as a JSON string literal, quotes included. Besides what JSON requires, it escapes < > & and
// U+2028/U+2029 (so the literal is also safe inside an HTML <script> element) and turns bytes that
// are not UTF-8 into U+FFFD (names come from ONNX files, which nothing forces to be valid UTF-8).
std::string json_quote(const std::string &s);

}  // namespace capgraph
