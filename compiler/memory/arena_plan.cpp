#include "memory/arena_plan.h"

#include <algorithm>
#include <numeric>

namespace capgraph {

static uint64_t align_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

static bool lifetimes_overlap(const ArenaRequest &a, const ArenaRequest &b) {
  if (a.pinned || b.pinned) return true;
  return a.first <= b.last && b.first <= a.last;
}

ArenaPlan arena_plan(const std::vector<ArenaRequest> &reqs, uint64_t alignment) {
  ArenaPlan plan;
  plan.offsets.assign(reqs.size(), 0);
  std::vector<size_t> order(reqs.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return reqs[a].size > reqs[b].size; });
  std::vector<size_t> placed;
  for (size_t i : order) {
    uint64_t size = align_up(std::max<uint64_t>(reqs[i].size, 1), alignment);
    plan.naive_size += size;
    // Conflicting placed buffers sorted by offset; take the first gap that fits.
    std::vector<std::pair<uint64_t, uint64_t>> busy;
    for (size_t j : placed)
      if (lifetimes_overlap(reqs[i], reqs[j]))
        busy.push_back({plan.offsets[j], plan.offsets[j] + align_up(std::max<uint64_t>(reqs[j].size, 1), alignment)});
    std::sort(busy.begin(), busy.end());
    uint64_t at = 0;
    for (auto [lo, hi] : busy) {
      if (lo >= at + size) break;
      at = std::max(at, hi);
    }
    plan.offsets[i] = at;
    plan.size = std::max(plan.size, at + size);
    placed.push_back(i);
  }
  return plan;
}

bool arena_plan_valid(const std::vector<ArenaRequest> &reqs, const ArenaPlan &plan) {
  for (size_t i = 0; i < reqs.size(); i++) {
    if (plan.offsets[i] + reqs[i].size > plan.size) return false;
    for (size_t j = i + 1; j < reqs.size(); j++) {
      if (!lifetimes_overlap(reqs[i], reqs[j]) || !reqs[i].size || !reqs[j].size) continue;
      bool disjoint = plan.offsets[i] + reqs[i].size <= plan.offsets[j] || plan.offsets[j] + reqs[j].size <= plan.offsets[i];
      if (!disjoint) return false;
    }
  }
  return true;
}

}  // namespace capgraph
