#include "memory/arena_plan.h"

#include <algorithm>
#include <numeric>

namespace capgraph {

static uint64_t align_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

static bool lifetimes_overlap(const ArenaRequest &a, const ArenaRequest &b) {
  if (a.pinned || b.pinned) return true;
  return a.first <= b.last && b.first <= a.last;
}

// The steps every unpinned request lives in, when each is a proper range: then two unpinned
// requests overlap exactly when they share a step, and the planner finds a request's conflicts by
// looking at its own steps instead of at every placed request (linear in a chain, where it was
// quadratic). Returns 0 steps and false if some range is not proper.
static bool lifetimes_bucketable(const std::vector<ArenaRequest> &reqs, int &steps) {
  steps = 0;
  for (const ArenaRequest &r : reqs)
    if (!r.pinned) {
      if (r.first < 0 || r.first > r.last) return false;
      steps = std::max(steps, r.last + 1);
    }
  return true;
}

ArenaPlan arena_plan(const std::vector<ArenaRequest> &reqs, uint64_t alignment) {
  ArenaPlan plan;
  plan.offsets.assign(reqs.size(), 0);
  std::vector<size_t> order(reqs.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return reqs[a].size > reqs[b].size; });
  int steps = 0;
  const bool bucketed = lifetimes_bucketable(reqs, steps);
  std::vector<std::vector<size_t>> alive(steps);  // placed unpinned requests by step
  std::vector<size_t> placed, placed_pinned;
  std::vector<size_t> seen(reqs.size(), SIZE_MAX);  // the request whose conflicts last listed it
  std::vector<std::pair<uint64_t, uint64_t>> busy;
  for (size_t i : order) {
    uint64_t size = align_up(std::max<uint64_t>(reqs[i].size, 1), alignment);
    plan.naive_size += size;
    // Conflicting placed buffers sorted by offset; take the first gap that fits. (The order they
    // are found in does not matter: the list is sorted.)
    busy.clear();
    auto conflict = [&](size_t j) {
      if (seen[j] == i) return;
      seen[j] = i;
      busy.push_back({plan.offsets[j],
                      plan.offsets[j] + align_up(std::max<uint64_t>(reqs[j].size, 1), alignment)});
    };
    if (!bucketed || reqs[i].pinned) {
      for (size_t j : placed)
        if (lifetimes_overlap(reqs[i], reqs[j])) conflict(j);
    } else {
      for (size_t j : placed_pinned) conflict(j);
      for (int t = reqs[i].first; t <= reqs[i].last; t++)
        for (size_t j : alive[t]) conflict(j);
    }
    std::sort(busy.begin(), busy.end());
    uint64_t at = 0;
    for (auto [lo, hi] : busy) {
      if (lo >= at + size) break;
      at = std::max(at, hi);
    }
    plan.offsets[i] = at;
    plan.size = std::max(plan.size, at + size);
    placed.push_back(i);
    if (reqs[i].pinned)
      placed_pinned.push_back(i);
    else if (bucketed)
      for (int t = reqs[i].first; t <= reqs[i].last; t++) alive[t].push_back(i);
  }
  return plan;
}

bool arena_plan_valid(const std::vector<ArenaRequest> &reqs, const ArenaPlan &plan) {
  for (size_t i = 0; i < reqs.size(); i++)
    if (plan.offsets[i] + reqs[i].size > plan.size) return false;
  int steps = 0;
  if (!lifetimes_bucketable(reqs, steps)) {
    for (size_t i = 0; i < reqs.size(); i++)
      for (size_t j = i + 1; j < reqs.size(); j++) {
        if (!lifetimes_overlap(reqs[i], reqs[j]) || !reqs[i].size || !reqs[j].size) continue;
        bool disjoint = plan.offsets[i] + reqs[i].size <= plan.offsets[j] ||
                        plan.offsets[j] + reqs[j].size <= plan.offsets[i];
        if (!disjoint) return false;
      }
    return true;
  }
  // Per step, everything alive then (pinned requests always are) must be disjoint: sorted by
  // offset, each must end before the next begins (if any two overlap, some neighbours do).
  std::vector<std::vector<size_t>> alive(std::max(steps, 1));
  for (size_t i = 0; i < reqs.size(); i++) {
    if (!reqs[i].size) continue;
    if (reqs[i].pinned)
      for (auto &a : alive) a.push_back(i);
    else
      for (int t = reqs[i].first; t <= reqs[i].last; t++) alive[t].push_back(i);
  }
  std::vector<std::pair<uint64_t, uint64_t>> ranges;
  for (const auto &a : alive) {
    ranges.clear();
    for (size_t i : a) ranges.push_back({plan.offsets[i], plan.offsets[i] + reqs[i].size});
    std::sort(ranges.begin(), ranges.end());
    for (size_t k = 1; k < ranges.size(); k++)
      if (ranges[k - 1].second > ranges[k].first) return false;
  }
  return true;
}

}  // namespace capgraph
