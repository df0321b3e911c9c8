// A small JSON reader for tests that check what `capgraph inspect --json` prints. Strict: a
// document that is not valid JSON (RFC 8259) fails the parse, so the test sees broken output.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace capgraph::view_test {

struct JsonValue {
  enum class Kind { null, boolean, number, string, array, object } kind = Kind::null;
  bool boolean = false;
  double number = 0;
  uint64_t integer = 0;  // the exact value when the number is a non-negative integer
  std::string string;
  std::vector<JsonValue> array;
  std::map<std::string, JsonValue> object;
  std::vector<std::string> keys;  // object keys in document order

  // The member `key`; throws std::runtime_error naming it when absent or not an object.
  const JsonValue &at(const std::string &key) const;
  const JsonValue &operator[](size_t i) const;
};

// Parses a whole document; throws std::runtime_error with the byte offset on bad input.
JsonValue json_parse(const std::string &text);

}  // namespace capgraph::view_test
