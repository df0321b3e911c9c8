#include "thread_pool.h"

#include <doctest/doctest.h>
#include <time.h>

#include <atomic>
#include <vector>

using capgraph::thread_pool;

namespace {

struct phases {
  thread_pool *pool;
  int rounds;
  std::vector<std::atomic<int>> *arrived;  // per round: how many threads reached it
  std::atomic<int> *errors;
};

// Each round every thread checks that all threads finished the previous round: a barrier that
// let one through early would show up as a short count.
void phases_run(void *ctx, int thread) {
  phases *p = static_cast<phases *>(ctx);
  const int n = p->pool->threads();
  for (int r = 0; r < p->rounds; ++r) {
    (*p->arrived)[size_t(r)].fetch_add(1);
    p->pool->barrier();
    if ((*p->arrived)[size_t(r)].load() != n) p->errors->fetch_add(1);
  }
}

void thread_id_write(void *ctx, int thread) { static_cast<int *>(ctx)[thread] += thread + 1; }

}  // namespace

TEST_CASE("every thread runs the job once per run") {
  for (int threads : {2, 3, 8}) {
    thread_pool pool(threads);
    std::vector<int> seen(size_t(threads), 0);
    for (int run = 0; run < 200; ++run) pool.run(&thread_id_write, seen.data());
    for (int t = 0; t < threads; ++t) CHECK(seen[size_t(t)] == 200 * (t + 1));
  }
}

TEST_CASE("barriers hold every thread until all arrive") {
  for (int threads : {2, 4, 7}) {
    thread_pool pool(threads);
    for (int run = 0; run < 50; ++run) {
      std::vector<std::atomic<int>> arrived(64);
      std::atomic<int> errors{0};
      phases p{&pool, 64, &arrived, &errors};
      pool.run(&phases_run, &p);
      CHECK(errors.load() == 0);
    }
  }
}

TEST_CASE("a pool can be destroyed idle, right after creation, or after sleeping") {
  for (int i = 0; i < 50; ++i) thread_pool pool(4);
  thread_pool pool(3);
  std::vector<int> seen(3, 0);
  pool.run(&thread_id_write, seen.data());
  // Workers fall asleep on the futex between runs; the next run must wake them.
  struct timespec ts = {0, 20 * 1000 * 1000};
  nanosleep(&ts, nullptr);
  pool.run(&thread_id_write, seen.data());
  CHECK(seen[2] == 6);
}
