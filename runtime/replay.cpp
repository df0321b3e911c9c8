#include "replay.h"

#include <chrono>
#include <cstdlib>
#include <cstring>

#include "clock_text.h"

namespace capgraph {

namespace {

// A launch that stays whole on thread 0 when the runtime splits work itself: one unit of work, or
// a known cost below k_split_min_cost (a capture that gives no cost, all zero, is split).
bool launch_runs_whole(const fb::Launch &l) {
  if (l.work_size() <= 1) return true;
  const unsigned __int128 cost = (unsigned __int128)l.flops() + l.bytes_read() + l.bytes_written();
  return cost > 0 && cost < k_split_min_cost;
}

}  // namespace

void replay_plan_build(const fb::Capture *c, uint8_t *arena,
                       const std::vector<const uint8_t *> &weights,
                       const std::vector<kernel_entry> &kernels, int threads, replay_plan *out) {
  replay_plan &p = *out;
  p.threads = threads;
  const auto arena_at = [](const fb::BufferRef &b) {
    return b.space() == fb::Space::arena ? b.offset() : k_not_arena;
  };
  const auto address = [&](const fb::BufferRef &b) -> uint8_t * {
    const uint8_t *base = b.space() == fb::Space::arena ? arena : weights[b.index()];
    // Kernels get non-const pointers by ABI; weights are only ever read through them.
    return const_cast<uint8_t *>(base) + b.offset();
  };
  // Offsets into the storage vectors first, pointers once the vectors stop growing.
  struct offsets {
    size_t buffers, scalars, bounds;
  };
  std::vector<offsets> at;
  for (const fb::Step *s : *c->steps()) {
    replay_step step{};
    offsets o{p.buffers.size(), p.scalars.size(), p.bounds.size()};
    if (s->kind() == fb::StepKind::copy) {
      const fb::Copy *cp = s->copy();
      step.dst = address(*cp->dst());
      step.src = address(*cp->src());
      step.size = cp->size();
      p.copies_dst_at.push_back(arena_at(*cp->dst()));
      p.copies_src_at.push_back(arena_at(*cp->src()));
    } else {
      p.copies_dst_at.push_back(k_not_arena);
      p.copies_src_at.push_back(k_not_arena);
      const fb::Launch *l = s->launch();
      step.entry = kernels[l->kernel()];
      for (uint32_t j = 0; j < l->buffers()->size(); ++j) {
        const fb::BufferRef *b = l->buffers()->Get(j);
        p.buffers.push_back(address(*b));
        p.buffers_at.push_back(arena_at(*b));
        p.buffers_size.push_back(l->buffer_sizes()->Get(j));  // one per binding (verified at load)
      }
      if (l->scalars())
        p.scalars.insert(p.scalars.end(), l->scalars()->begin(), l->scalars()->end());
      if (uint32_t(threads) == c->threads()) {
        for (uint64_t v : *l->partition()) p.bounds.push_back(int64_t(v));
      } else if (launch_runs_whole(*l)) {
        p.bounds.push_back(0);
        for (int t = 1; t <= threads; ++t) p.bounds.push_back(int64_t(l->work_size()));
      } else {
        // floor(work * t / threads), as the compiler splits; 128-bit so it cannot overflow.
        const unsigned __int128 work = l->work_size();
        for (uint64_t t = 0; t <= uint64_t(threads); ++t)
          p.bounds.push_back(int64_t(work * t / uint64_t(threads)));
      }
      if (!l->scalars() || l->scalars()->size() == 0) o.scalars = SIZE_MAX;
    }
    p.steps.push_back(step);
    at.push_back(o);
  }
  for (size_t i = 0; i < p.steps.size(); ++i) {
    replay_step &s = p.steps[i];
    if (!s.entry) continue;
    s.buffers = p.buffers.data() + at[i].buffers;
    s.scalars = at[i].scalars == SIZE_MAX ? nullptr : p.scalars.data() + at[i].scalars;
    s.bounds = p.bounds.data() + at[i].bounds;
  }
  replay_plan_barriers(&p);
}

void replay_plan_rebase(replay_plan *plan, uint64_t offset, uint64_t size, uint8_t *base) {
  const auto inside = [&](uint64_t at) {
    return at != k_not_arena && at >= offset && at - offset < size;
  };
  for (size_t i = 0; i < plan->buffers.size(); ++i)
    if (inside(plan->buffers_at[i])) plan->buffers[i] = base + (plan->buffers_at[i] - offset);
  for (size_t i = 0; i < plan->steps.size(); ++i) {
    if (inside(plan->copies_dst_at[i]))
      plan->steps[i].dst = base + (plan->copies_dst_at[i] - offset);
    if (inside(plan->copies_src_at[i]))
      plan->steps[i].src = base + (plan->copies_src_at[i] - offset);
  }
}

int64_t replay_plan_straddles(const replay_plan &plan, uint64_t offset, uint64_t size) {
  const auto straddles = [&](uint64_t at, uint64_t bytes) {
    if (at == k_not_arena) return false;
    const bool overlaps = at < offset + size && offset < at + bytes;
    const bool within = at >= offset && at + bytes <= offset + size;
    return overlaps && !within;
  };
  // A launch's bindings are its run of `buffers`, up to the next launch's (or the end).
  std::vector<size_t> launch_at;
  for (const replay_step &s : plan.steps)
    if (s.entry) launch_at.push_back(size_t(s.buffers - plan.buffers.data()));
  launch_at.push_back(plan.buffers.size());
  size_t launch = 0;
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    const replay_step &s = plan.steps[i];
    if (!s.entry) {
      if (straddles(plan.copies_dst_at[i], s.size) || straddles(plan.copies_src_at[i], s.size))
        return int64_t(i);
      continue;
    }
    for (size_t b = launch_at[launch]; b < launch_at[launch + 1]; ++b)
      if (straddles(plan.buffers_at[b], plan.buffers_size[b])) return int64_t(i);
    ++launch;
  }
  return -1;
}

namespace {

constexpr int k_nobody = -1, k_several = -2;

// Who runs a step: k_nobody, one thread's index, or k_several.
int step_runner(const replay_step &s, int threads) {
  if (!s.entry) return s.size ? 0 : k_nobody;
  int runner = k_nobody;
  for (int t = 0; t < threads; ++t) {
    if (s.bounds[t] >= s.bounds[t + 1]) continue;
    if (runner != k_nobody) return k_several;
    runner = t;
  }
  return runner;
}

int runners_join(int a, int b) {
  if (a == k_nobody) return b;
  if (b == k_nobody || a == b) return a;
  return k_several;
}

}  // namespace

void replay_plan_barriers(replay_plan *plan) {
  std::vector<replay_step> &steps = plan->steps;
  int since_barrier = k_nobody;  // who ran the steps since the last barrier
  for (size_t i = 0; i < steps.size(); ++i) {
    const int runner = step_runner(steps[i], plan->threads);
    if (i > 0) {
      const bool meet = runners_join(since_barrier, runner) == k_several;
      steps[i - 1].barrier_after = meet;
      if (meet) since_barrier = k_nobody;
    }
    since_barrier = runners_join(since_barrier, runner);
  }
  if (!steps.empty()) steps.back().barrier_after = false;
  plan->workers_idle = true;
  for (const replay_step &s : steps) {
    const int runner = step_runner(s, plan->threads);
    if (runner != k_nobody && runner != 0) plan->workers_idle = false;
  }
}

namespace {

// step_end_ns (profiling only, thread 0): when each step finished on every thread. The last step's
// end is taken by the caller, after the pool's final barrier.
bool replay_slice(const replay_plan &p, int t, thread_pool *pool, uint64_t *step_end_ns) noexcept {
  const size_t n = p.steps.size();
  for (size_t i = 0; i < n; ++i) {
    const replay_step &s = p.steps[i];
    if (s.entry) {
      const int64_t begin = s.bounds[t], end = s.bounds[t + 1];
      if (begin < end) kernel_call(s.entry, s.buffers, s.scalars, begin, end);
    } else if (t == 0 && s.size) {
      memcpy(s.dst, s.src, s.size);
    }
    // A step may read what an earlier one wrote on another thread (replay_plan_barriers). The
    // pool's end-of-run barrier covers the last step. A timed replay meets after every step, so
    // that each step's time is its own.
    const bool meet = step_end_ns ? i + 1 < n : s.barrier_after;
    if (pool && meet && !pool->barrier()) return false;
    if (step_end_ns && t == 0) step_end_ns[i] = now_ns();
  }
  return true;
}

struct replay_job {
  const replay_plan *plan;
  thread_pool *pool;
  uint64_t *step_end_ns;
};

void replay_job_run(void *ctx, int thread) {
  const replay_job *job = static_cast<const replay_job *>(ctx);
  replay_slice(*job->plan, thread, job->pool, job->step_end_ns);
}

}  // namespace

bool replay_run(const replay_plan &plan, thread_pool *pool) noexcept {
  // Waking workers that have nothing to do would only make the caller wait for them.
  if (!pool || plan.workers_idle) return replay_slice(plan, 0, nullptr, nullptr);
  replay_job job{&plan, pool, nullptr};
  return pool->run(&replay_job_run, &job);
}

bool replay_run_timed(const replay_plan &plan, thread_pool *pool, uint64_t *step_ns) noexcept {
  const size_t n = plan.steps.size();
  if (n == 0) return true;
  const uint64_t start = now_ns();
  if (!pool) {
    replay_slice(plan, 0, nullptr, step_ns);
  } else {
    replay_job job{&plan, pool, step_ns};
    if (!pool->run(&replay_job_run, &job)) return false;
    step_ns[n - 1] = now_ns();  // after the final barrier: every thread is done
  }
  // end times -> durations
  for (size_t i = n; i-- > 1;) step_ns[i] -= step_ns[i - 1];
  step_ns[0] -= start;
  return true;
}

capgraph_status replay_timeout_from_env(uint64_t *timeout_ns, std::string *err) {
  *timeout_ns = 60'000'000'000ull;
  const char *ms = getenv("CAPGRAPH_TIMEOUT_MS");
  if (!ms) return CAPGRAPH_OK;
  char *end = nullptr;
  const unsigned long long v = strtoull(ms, &end, 10);
  if (!*ms || *end || v < 1 || v > 3600000) {
    *err = std::string("CAPGRAPH_TIMEOUT_MS must be 1 to 3600000 milliseconds, not '") + ms + "'";
    return CAPGRAPH_ERR_ARGUMENT;
  }
  *timeout_ns = v * 1000000ull;
  return CAPGRAPH_OK;
}

}  // namespace capgraph
