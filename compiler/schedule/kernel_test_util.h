// Helpers for tests that build kernels by hand (codegen and interpreter tests).
#pragma once
#include <utility>
#include <vector>

#include "schedule/kernel.h"

namespace capgraph::test {

// One index of an access: sum(terms) + shift over a view dimension of `extent` elements `stride`
// apart, with the rule for indices outside it.
inline DimIndex dim(std::vector<AxisTerm> terms, int64_t extent, int64_t stride, int64_t shift = 0,
                    Bound bound = Bound::none) {
  DimIndex d;
  d.terms = std::move(terms);
  d.extent = extent;
  d.stride = stride;
  d.shift = shift;
  d.bound = bound;
  return d;
}

}  // namespace capgraph::test
