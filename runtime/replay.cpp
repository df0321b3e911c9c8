#include "replay.h"

#include <chrono>
#include <cstring>

namespace capgraph {

void replay_plan_build(const fb::Capture *c, uint8_t *arena,
                       const std::vector<const uint8_t *> &weights,
                       const std::vector<kernel_entry> &kernels, int threads, replay_plan *out) {
  replay_plan &p = *out;
  p.threads = threads;
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
    } else {
      const fb::Launch *l = s->launch();
      step.entry = kernels[l->kernel()];
      for (const fb::BufferRef *b : *l->buffers()) p.buffers.push_back(address(*b));
      if (l->scalars())
        p.scalars.insert(p.scalars.end(), l->scalars()->begin(), l->scalars()->end());
      if (uint32_t(threads) == c->threads()) {
        for (uint64_t v : *l->partition()) p.bounds.push_back(int64_t(v));
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
}

namespace {

uint64_t now_ns() noexcept {
  return (uint64_t)std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// step_end_ns (profiling only, thread 0): when each step finished on every thread. The last step's
// end is taken by the caller, after the pool's final barrier.
void replay_slice(const replay_plan &p, int t, thread_pool *pool, uint64_t *step_end_ns) noexcept {
  const size_t n = p.steps.size();
  for (size_t i = 0; i < n; ++i) {
    const replay_step &s = p.steps[i];
    if (s.entry) {
      const int64_t begin = s.bounds[t], end = s.bounds[t + 1];
      if (begin < end) s.entry(s.buffers, s.scalars, begin, end);
    } else if (t == 0 && s.size) {
      memcpy(s.dst, s.src, s.size);
    }
    // Every step may read what the previous one wrote. The pool's end-of-run barrier covers
    // the last step.
    if (pool && i + 1 < n) pool->barrier();
    if (step_end_ns && t == 0) step_end_ns[i] = now_ns();
  }
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

void replay_run(const replay_plan &plan, thread_pool *pool) noexcept {
  if (!pool) {
    replay_slice(plan, 0, nullptr, nullptr);
    return;
  }
  replay_job job{&plan, pool, nullptr};
  pool->run(&replay_job_run, &job);
}

void replay_run_timed(const replay_plan &plan, thread_pool *pool, uint64_t *step_ns) noexcept {
  const size_t n = plan.steps.size();
  if (n == 0) return;
  const uint64_t start = now_ns();
  if (!pool) {
    replay_slice(plan, 0, nullptr, step_ns);
  } else {
    replay_job job{&plan, pool, step_ns};
    pool->run(&replay_job_run, &job);
    step_ns[n - 1] = now_ns();  // after the final barrier: every thread is done
  }
  // end times -> durations
  for (size_t i = n; i-- > 1;) step_ns[i] -= step_ns[i - 1];
  step_ns[0] -= start;
}

}  // namespace capgraph
