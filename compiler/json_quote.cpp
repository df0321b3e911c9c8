#include "json_quote.h"

#include <cstdio>
#include <string>

namespace capgraph {

namespace {

// Length of the valid UTF-8 sequence at s[i], or 0 when the bytes there are not one
// (overlong forms, surrogates and code points above U+10FFFF are invalid; RFC 3629 section 4).
size_t utf8_length(const std::string &s, size_t i) {
  const unsigned char c = (unsigned char)s[i];
  size_t n;
  unsigned cp;
  if (c < 0x80) return 1;
  if (c >= 0xc2 && c <= 0xdf)
    n = 2, cp = c & 0x1f;
  else if (c >= 0xe0 && c <= 0xef)
    n = 3, cp = c & 0x0f;
  else if (c >= 0xf0 && c <= 0xf4)
    n = 4, cp = c & 0x07;
  else
    return 0;
  if (i + n > s.size()) return 0;
  for (size_t k = 1; k < n; k++) {
    const unsigned char d = (unsigned char)s[i + k];
    if ((d & 0xc0) != 0x80) return 0;
    cp = cp << 6 | (d & 0x3f);
  }
  if ((n == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
      (n == 4 && (cp < 0x10000 || cp > 0x10ffff)))
    return 0;
  return n;
}

}  // namespace

std::string json_quote(const std::string &s) {
  std::string r = "\"";
  for (size_t i = 0; i < s.size();) {
    const unsigned char c = (unsigned char)s[i];
    const size_t n = utf8_length(s, i);
    char buf[8];
    if (n == 0) {
      r += "\\ufffd";
      i++;
      continue;
    }
    if (n == 3 && c == 0xe2 && (unsigned char)s[i + 1] == 0x80 &&
        ((unsigned char)s[i + 2] | 1) == 0xa9) {
      r += (unsigned char)s[i + 2] == 0xa8 ? "\\u2028"
                                           : "\\u2029";  // line/paragraph separators end a JS line
    } else if (c == '"' || c == '\\') {
      r += '\\';
      r += (char)c;
    } else if (c < 0x20 || c == 0x7f || c == '<' || c == '>' || c == '&') {
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      r += buf;
    } else {
      r.append(s, i, n);
    }
    i += n;
  }
  return r + "\"";
}

}  // namespace capgraph
