// The static memory plan: every buffer alive during a replay gets a fixed (offset, size) in one
// arena. Buffers whose lifetimes do not overlap share space. Computed once at compile time and
// applied blindly by the runtime.
#pragma once
#include <cstdint>
#include <vector>

namespace capgraph {

struct ArenaRequest {
  uint64_t size = 0;    // bytes
  int first = 0;        // first step that touches it
  int last = 0;         // last step that touches it (inclusive)
  bool pinned = false;  // alive for the whole replay and between replays (inputs, outputs)
};

struct ArenaPlan {
  std::vector<uint64_t> offsets;  // one per request, aligned
  uint64_t size = 0;              // arena bytes
  uint64_t naive_size = 0;        // sum of aligned sizes: the cost without reuse
};

// Greedy by size: the largest buffers are placed first, each at the lowest aligned offset where
// it overlaps no already placed buffer whose lifetime overlaps its own.
ArenaPlan arena_plan(const std::vector<ArenaRequest> &reqs, uint64_t alignment = 64);

// True if no two requests with overlapping lifetimes overlap in memory (used by tests and as a
// self-check before a capture is written).
bool arena_plan_valid(const std::vector<ArenaRequest> &reqs, const ArenaPlan &plan);

}  // namespace capgraph
