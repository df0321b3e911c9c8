// knob_get remembers every knob it is asked for; knobs_set lists those that are set, so a new
// output-changing knob is recorded in captures without being listed anywhere.
#include "knobs.h"

#include <doctest/doctest.h>

#include <cstdlib>

using namespace capgraph;

TEST_CASE("knobs_set lists the knobs read that are set, NAME=value, sorted by name") {
  setenv("CAPGRAPH_KNOBS_TEST_B", "2", 1);
  unsetenv("CAPGRAPH_KNOBS_TEST_A");
  using List = std::vector<std::string>;
  CHECK(knobs_set() == List{});  // set, but never read
  CHECK(std::string(knob_get("CAPGRAPH_KNOBS_TEST_B")) == "2");
  CHECK(knob_get("CAPGRAPH_KNOBS_TEST_A") == nullptr);
  CHECK(knobs_set() == List{"CAPGRAPH_KNOBS_TEST_B=2"});
  // A knob read while unset is recorded once it is set (as the next compile would read it).
  setenv("CAPGRAPH_KNOBS_TEST_A", "1", 1);
  CHECK(knobs_set() == List{"CAPGRAPH_KNOBS_TEST_A=1", "CAPGRAPH_KNOBS_TEST_B=2"});
  unsetenv("CAPGRAPH_KNOBS_TEST_B");
  CHECK(knobs_set() == List{"CAPGRAPH_KNOBS_TEST_A=1"});
  unsetenv("CAPGRAPH_KNOBS_TEST_A");
  CHECK(knobs_set() == List{});
}
