#include "json_value.h"

#include <cstdlib>
#include <stdexcept>

namespace capgraph::view_test {

const JsonValue &JsonValue::at(const std::string &key) const {
  auto it = object.find(key);
  if (kind != Kind::object || it == object.end())
    throw std::runtime_error("JSON: no member '" + key + "'");
  return it->second;
}

const JsonValue &JsonValue::operator[](size_t i) const {
  if (kind != Kind::array || i >= array.size())
    throw std::runtime_error("JSON: no element " + std::to_string(i));
  return array[i];
}

namespace {

struct Parser {
  const std::string &s;
  size_t i = 0;

  [[noreturn]] void fail(const std::string &what) {
    throw std::runtime_error("JSON: " + what + " at byte " + std::to_string(i));
  }
  void space() {
    while (i < s.size() && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r')) i++;
  }
  void expect(char c) {
    space();
    if (i >= s.size() || s[i] != c) fail(std::string("expected '") + c + "'");
    i++;
  }
  bool literal(const char *word) {
    const std::string w = word;
    if (s.compare(i, w.size(), w) != 0) return false;
    i += w.size();
    return true;
  }
  unsigned hex4() {
    if (i + 4 > s.size()) fail("short \\u escape");
    unsigned v = 0;
    for (int k = 0; k < 4; k++) {
      const char c = s[i++];
      v <<= 4;
      if (c >= '0' && c <= '9')
        v |= unsigned(c - '0');
      else if (c >= 'a' && c <= 'f')
        v |= unsigned(c - 'a' + 10);
      else if (c >= 'A' && c <= 'F')
        v |= unsigned(c - 'A' + 10);
      else
        fail("bad \\u escape");
    }
    return v;
  }
  static void utf8_append(std::string &out, unsigned cp) {
    if (cp < 0x80)
      out += char(cp);
    else if (cp < 0x800)
      out += char(0xc0 | cp >> 6), out += char(0x80 | (cp & 0x3f));
    else if (cp < 0x10000)
      out += char(0xe0 | cp >> 12), out += char(0x80 | (cp >> 6 & 0x3f)),
          out += char(0x80 | (cp & 0x3f));
    else
      out += char(0xf0 | cp >> 18), out += char(0x80 | (cp >> 12 & 0x3f)),
          out += char(0x80 | (cp >> 6 & 0x3f)), out += char(0x80 | (cp & 0x3f));
  }
  std::string string() {
    expect('"');
    std::string out;
    while (true) {
      if (i >= s.size()) fail("unterminated string");
      const unsigned char c = (unsigned char)s[i++];
      if (c == '"') return out;
      if (c < 0x20) fail("raw control character in a string");
      if (c != '\\') {
        out += char(c);
        continue;
      }
      if (i >= s.size()) fail("unterminated escape");
      const char e = s[i++];
      switch (e) {
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        case '/': out += '/'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'u': {
          unsigned cp = hex4();
          if (cp >= 0xd800 && cp < 0xdc00) {
            if (!literal("\\u")) fail("lone surrogate");
            const unsigned lo = hex4();
            if (lo < 0xdc00 || lo > 0xdfff) fail("bad surrogate pair");
            cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
          } else if (cp >= 0xdc00 && cp <= 0xdfff) {
            fail("lone surrogate");
          }
          utf8_append(out, cp);
          break;
        }
        default: fail("bad escape");
      }
    }
  }
  JsonValue value() {
    space();
    JsonValue v;
    if (i >= s.size()) fail("unexpected end");
    const char c = s[i];
    if (c == '{') {
      i++;
      v.kind = JsonValue::Kind::object;
      space();
      if (i < s.size() && s[i] == '}') return i++, v;
      while (true) {
        std::string key = string();
        expect(':');
        if (v.object.count(key)) fail("duplicate key '" + key + "'");
        v.keys.push_back(key);
        v.object[key] = value();
        space();
        if (i < s.size() && s[i] == ',') {
          i++;
          continue;
        }
        expect('}');
        return v;
      }
    }
    if (c == '[') {
      i++;
      v.kind = JsonValue::Kind::array;
      space();
      if (i < s.size() && s[i] == ']') return i++, v;
      while (true) {
        v.array.push_back(value());
        space();
        if (i < s.size() && s[i] == ',') {
          i++;
          continue;
        }
        expect(']');
        return v;
      }
    }
    if (c == '"') {
      v.kind = JsonValue::Kind::string;
      v.string = string();
      return v;
    }
    if (literal("true")) return v.kind = JsonValue::Kind::boolean, v.boolean = true, v;
    if (literal("false")) return v.kind = JsonValue::Kind::boolean, v;
    if (literal("null")) return v;
    // A number: -?int frac? exp? (RFC 8259 section 6).
    const size_t start = i;
    if (s[i] == '-') i++;
    auto digits = [&] {
      const size_t d = i;
      while (i < s.size() && s[i] >= '0' && s[i] <= '9') i++;
      if (i == d) fail("expected a digit");
    };
    if (i < s.size() && s[i] == '0')
      i++;
    else
      digits();
    bool integral = s[start] != '-';
    if (i < s.size() && s[i] == '.') i++, digits(), integral = false;
    if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
      i++;
      if (i < s.size() && (s[i] == '+' || s[i] == '-')) i++;
      digits();
      integral = false;
    }
    const std::string text = s.substr(start, i - start);
    v.kind = JsonValue::Kind::number;
    v.number = std::strtod(text.c_str(), nullptr);
    if (integral) v.integer = std::strtoull(text.c_str(), nullptr, 10);
    return v;
  }
};

}  // namespace

JsonValue json_parse(const std::string &text) {
  Parser p{text};
  JsonValue v = p.value();
  p.space();
  if (p.i != text.size()) p.fail("trailing characters");
  return v;
}

}  // namespace capgraph::view_test
