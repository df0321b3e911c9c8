#include "thread_pool.h"

#include <linux/futex.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <climits>
#include <ctime>

#include "clock_text.h"

namespace capgraph {

namespace {

// Waiting goes through three stages: a short busy poll (a poll notices the last arrival fastest),
// then polling with sched_yield (when there are more threads than free cores, the thread everyone
// waits for may need this core), then sleeping on a futex (an idle model costs nothing).
// The poll is kept short, about 1 us (a pause takes 37 ns on the 2-core EPYC of README
// "Performance"): on a busy machine both threads often share a core, and every barrier then costs
// the whole poll before the waiter yields. 256 pauses made 200 barriers cost 1.65 ms there, 32 make
// them 0.53 ms, and PP-OCR cls replays on 2 threads in 0.83 ms instead of 1.17 ms; when each thread
// has its own core a sched_yield returns at once, so polling with it is nearly as quick.
// The yield stage is long (4096 yields, about 1-2 ms on an idle core) because a sleeper costs the
// releaser a futex wake and itself tens of microseconds to get running again: with 64 yields,
// mobilenet_v2's 54 steps on 2 threads took 5.6-6.8 ms instead of 4.9 ms in scripts/bench.sh,
// whose waits between steps are often longer than 64 yields. Oversubscribed threads lose
// nothing by it: each yield hands the core to the thread being waited for.
constexpr int k_spin = 32;
constexpr int k_yield = 4096;

inline void cpu_relax() {
#if defined(__x86_64__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ volatile("yield");
#endif
}

// futex(2) on the 32-bit word of a std::atomic<uint32_t> (lock-free, same size and
// representation on Linux, as libstdc++'s own atomic wait relies on). Sleeps at most wait_ns
// (0: no bound).
void futex_wait(std::atomic<uint32_t> *word, uint32_t expected, uint64_t wait_ns) {
  struct timespec ts = {time_t(wait_ns / 1000000000u), long(wait_ns % 1000000000u)};
  syscall(SYS_futex, reinterpret_cast<uint32_t *>(word), FUTEX_WAIT_PRIVATE, expected,
          wait_ns ? &ts : nullptr, nullptr, 0);
}

void futex_wake_all(std::atomic<uint32_t> *word) {
  syscall(SYS_futex, reinterpret_cast<uint32_t *>(word), FUTEX_WAKE_PRIVATE, INT_MAX, nullptr,
          nullptr, 0);
}

}  // namespace

thread_pool::thread_pool(int threads, uint64_t timeout_ns)
    : threads_(threads), timeout_ns_(timeout_ns) {
  static_assert(sizeof(std::atomic<uint32_t>) == sizeof(uint32_t));
  static_assert(std::atomic<uint32_t>::is_always_lock_free);
  workers_.reserve(size_t(threads - 1));
  try {
    for (int t = 1; t < threads; ++t) {
      workers_running_.fetch_add(1, std::memory_order_relaxed);
      try {
        workers_.emplace_back(&thread_pool::worker_main, this, t);
      } catch (...) {
        workers_running_.fetch_sub(1, std::memory_order_relaxed);
        throw;
      }
    }
  } catch (...) {
    release_all();
    for (std::thread &w : workers_) w.join();
    throw;
  }
}

thread_pool::~thread_pool() {
  release_all();
  for (std::thread &w : workers_) w.join();
}

// Wakes every waiter for good: used to stop the workers.
void thread_pool::release_all() noexcept {
  stop_.store(true, std::memory_order_seq_cst);
  generation_.fetch_add(1, std::memory_order_seq_cst);
  futex_wake_all(&generation_);
}

bool thread_pool::barrier_wait(uint64_t timeout_ns) noexcept {
  if (broken_.load(std::memory_order_acquire)) return false;
  // Read the generation before arriving: the last arrival bumps it only after every arrival.
  const uint32_t gen = generation_.load(std::memory_order_acquire);
  if (arrived_.fetch_add(1, std::memory_order_acq_rel) + 1 == uint32_t(threads_)) {
    arrived_.store(0, std::memory_order_relaxed);
    generation_.store(gen + 1, std::memory_order_seq_cst);
    // Dekker pairing with the sleeper's increment below: either we see it and wake, or the
    // sleeper sees the new generation and the futex returns at once.
    if (sleepers_.load(std::memory_order_seq_cst)) futex_wake_all(&generation_);
    return !broken_.load(std::memory_order_acquire);
  }
  for (int i = 0; i < k_spin; ++i) {
    if (generation_.load(std::memory_order_acquire) != gen) return !broken();
    cpu_relax();
  }
  // The clock starts after the spin (a barrier that gets this far is already slow). A yield can
  // take milliseconds on a loaded machine, so the yield stage watches the deadline too.
  const uint64_t deadline = timeout_ns ? now_ns() + timeout_ns : 0;
  for (int i = 0; i < k_yield; ++i) {
    if (generation_.load(std::memory_order_acquire) != gen) return !broken();
    // A worker started or arriving just as the pool is destroyed: on a loaded machine 4096 yields
    // can take minutes, so stopping is noticed here too.
    if (stop_.load(std::memory_order_relaxed)) return false;
    if (deadline && i % 64 == 63 && now_ns() >= deadline) break;
    sched_yield();
  }
  while (generation_.load(std::memory_order_acquire) == gen) {
    if (stop_.load(std::memory_order_acquire)) return false;
    uint64_t left = 0;
    if (deadline) {
      const uint64_t now = now_ns();
      if (now >= deadline) {
        // Whoever is missing may never come: break the pool and release everyone waiting. The
        // late thread finds the pool broken at its next barrier and returns from its job.
        broken_.store(true, std::memory_order_seq_cst);
        generation_.fetch_add(1, std::memory_order_seq_cst);
        futex_wake_all(&generation_);
        return false;
      }
      left = deadline - now;
    }
    sleepers_.fetch_add(1, std::memory_order_seq_cst);
    if (generation_.load(std::memory_order_seq_cst) == gen) futex_wait(&generation_, gen, left);
    sleepers_.fetch_sub(1, std::memory_order_relaxed);
  }
  return !broken();
}

bool thread_pool::run(job_fn job, void *ctx) noexcept {
  if (broken()) return false;
  job_ = job;
  ctx_ = ctx;
  // start: publishes job_/ctx_ to the workers (release/acquire on generation_)
  if (!barrier()) return false;
  job(ctx, 0);
  return barrier();  // end: every worker finished the job
}

void thread_pool::worker_main(int thread) noexcept {
  for (;;) {
    barrier_wait(0);  // the next run may be a long time coming
    if (stop_.load(std::memory_order_acquire) || broken()) break;
    job_(ctx_, thread);
    if (!barrier()) break;
  }
  workers_running_.fetch_sub(1, std::memory_order_acq_rel);
}

bool thread_pool::workers_stopped_wait(uint64_t wait_ns) noexcept {
  const uint64_t deadline = now_ns() + wait_ns;
  while (workers_running_.load(std::memory_order_acquire) > 0) {
    if (now_ns() >= deadline) return false;
    struct timespec ms = {0, 1000000};
    nanosleep(&ms, nullptr);
  }
  return true;
}

}  // namespace capgraph
