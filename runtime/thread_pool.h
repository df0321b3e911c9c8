// A persistent pool: threads-1 workers started once at load, plus the calling thread. A run hands
// every thread the same job; inside it, threads meet at barriers (one per launch in replay).
//
// Synchronisation is one centralised barrier: arrivals count up, the last one bumps a generation
// word. Waiters spin briefly (a launch is often short) and then sleep on the generation word with
// a futex, so idle workers between runs cost nothing. No allocation, no exceptions while running.
//
// Every wait inside a run is bounded (DESIGN: a hung device is an error, not a hang): a thread
// that waits longer than the pool's timeout at a barrier marks the pool broken and releases every
// waiter; run() then returns false, and so does every later run. Only the clock is read in the
// sleeping stage, so a barrier costs what it did before. Workers waiting for the next run wait
// without a bound (an idle model may stay idle for ever).
#pragma once
#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

namespace capgraph {

class thread_pool {
 public:
  using job_fn = void (*)(void *ctx, int thread);

  // Starts threads-1 workers (threads >= 2); timeout_ns bounds each wait at a barrier inside a
  // run (0: no bound). Throws std::system_error if a thread cannot start (this only happens at
  // load).
  explicit thread_pool(int threads, uint64_t timeout_ns = 0);
  ~thread_pool();
  thread_pool(const thread_pool &) = delete;
  thread_pool &operator=(const thread_pool &) = delete;

  int threads() const { return threads_; }

  // Runs job(ctx, t) on every thread t (the caller is thread 0); returns true when all have
  // finished, false (at once, for a broken pool) when a thread did not arrive in time.
  bool run(job_fn job, void *ctx) noexcept;

  // Called by every thread inside a job: returns true once all threads have arrived, false when
  // the pool broke (this thread or another waited past the timeout); the job should then return.
  bool barrier() noexcept { return barrier_wait(timeout_ns_); }

  bool broken() const noexcept { return broken_.load(std::memory_order_acquire); }
  // For a broken pool: waits up to wait_ns for every worker to leave its job and stop; true when
  // they all did (the pool may then be destroyed), false when one is still inside a job.
  bool workers_stopped_wait(uint64_t wait_ns) noexcept;
  uint64_t timeout_ns() const noexcept { return timeout_ns_; }

 private:
  bool barrier_wait(uint64_t timeout_ns) noexcept;
  void worker_main(int thread) noexcept;
  void release_all() noexcept;

  const int threads_;
  const uint64_t timeout_ns_;
  std::atomic<bool> broken_{false};
  std::atomic<int> workers_running_{0};
  job_fn job_ = nullptr;
  void *ctx_ = nullptr;
  alignas(64) std::atomic<uint32_t> arrived_{0};
  alignas(64) std::atomic<uint32_t> generation_{0};
  std::atomic<uint32_t> sleepers_{0};
  std::atomic<bool> stop_{false};
  std::vector<std::thread> workers_;
};

}  // namespace capgraph
