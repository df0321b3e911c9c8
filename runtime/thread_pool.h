// A persistent pool: threads-1 workers started once at load, plus the calling thread. A run hands
// every thread the same job; inside it, threads meet at barriers (one per launch in replay).
//
// Synchronisation is one centralised barrier: arrivals count up, the last one bumps a generation
// word. Waiters spin briefly (a launch is often short) and then sleep on the generation word with
// a futex, so idle workers between runs cost nothing. No allocation, no exceptions while running.
#pragma once
#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

namespace capgraph {

class thread_pool {
 public:
  using job_fn = void (*)(void *ctx, int thread);

  // Starts threads-1 workers (threads >= 2). Throws std::system_error if a thread cannot start
  // (this only happens at load).
  explicit thread_pool(int threads);
  ~thread_pool();
  thread_pool(const thread_pool &) = delete;
  thread_pool &operator=(const thread_pool &) = delete;

  int threads() const { return threads_; }

  // Runs job(ctx, t) on every thread t (the caller is thread 0); returns when all have finished.
  void run(job_fn job, void *ctx) noexcept;

  // Called by every thread inside a job: returns once all threads have arrived.
  void barrier() noexcept;

 private:
  void worker_main(int thread) noexcept;
  void release_all() noexcept;

  const int threads_;
  job_fn job_ = nullptr;
  void *ctx_ = nullptr;
  alignas(64) std::atomic<uint32_t> arrived_{0};
  alignas(64) std::atomic<uint32_t> generation_{0};
  std::atomic<uint32_t> sleepers_{0};
  std::atomic<bool> stop_{false};
  std::vector<std::thread> workers_;
};

}  // namespace capgraph
