// json_quote: what JSON needs, plus what keeps a string inert inside an HTML <script> element,
// and valid UTF-8 out of any bytes.
#include "json_quote.h"

#include <doctest/doctest.h>

using capgraph::json_quote;

TEST_CASE("json_quote: plain text, quotes, backslashes and control characters") {
  CHECK(json_quote("") == "\"\"");
  CHECK(json_quote("conv1/Relu:0") == "\"conv1/Relu:0\"");
  CHECK(json_quote("a\"b\\c") == "\"a\\\"b\\\\c\"");
  CHECK(json_quote(std::string("\n\t\x01\x1f\x7f", 5)) ==
        "\"\\u000a\\u0009\\u0001\\u001f\\u007f\"");
  CHECK(json_quote(std::string("a\0b", 3)) == "\"a\\u0000b\"");
}

TEST_CASE("json_quote: nothing that could end a <script> element or a JavaScript line survives") {
  CHECK(json_quote("</script><!--&amp;") == "\"\\u003c/script\\u003e\\u003c!--\\u0026amp;\"");
  CHECK(json_quote("a\xe2\x80\xa8"
                   "b\xe2\x80\xa9"
                   "c") == "\"a\\u2028b\\u2029c\"");
}

TEST_CASE("json_quote: valid UTF-8 is kept, anything else becomes U+FFFD") {
  CHECK(json_quote("caf\xc3\xa9 \xe6\x97\xa5 \xf0\x9f\x99\x82") ==
        "\"caf\xc3\xa9 \xe6\x97\xa5 \xf0\x9f\x99\x82\"");
  CHECK(json_quote("\xff") == "\"\\ufffd\"");
  CHECK(json_quote("a\xc3") == "\"a\\ufffd\"");                      // truncated sequence
  CHECK(json_quote("\xc0\x80") == "\"\\ufffd\\ufffd\"");             // overlong NUL
  CHECK(json_quote("\xed\xa0\x80") == "\"\\ufffd\\ufffd\\ufffd\"");  // a surrogate
  CHECK(json_quote("\xf4\x90\x80\x80") == "\"\\ufffd\\ufffd\\ufffd\\ufffd\"");  // above U+10FFFF
  CHECK(json_quote("\xe2\x82") == "\"\\ufffd\\ufffd\"");  // cut short by the end
}
