// One bounded wait for every transport (and fake): poll the signal until it reaches the target, the
// device reports a fault, or the bound passes. A transport brings two small hooks, as tinygrad's
// HCQSignal.wait takes its _sleep: how to read the value (a CPU mapping, a word over USB) and
// check for faults, and how to pass the time between polls (block in the kernel driver on an
// event or timestamp, or nap). Header-only and allocation-free on success (the hooks are template
// parameters, not std::function).
#pragma once
#include <chrono>
#include <cstdint>
#include <string>
#include <thread>

#include "capgraph_runtime.h"
#include "clock_text.h"
#include "signal.h"

namespace capgraph::hcq {

// How long a wait spins before it starts to nap: a replay that is nearly done costs no sleep.
constexpr uint64_t k_wait_spin_ns = 100'000;

// The default nap: 1 µs, doubling to at most 1 ms (a GPU that takes a while costs little CPU; one
// that finishes soon is seen within a millisecond).
struct wait_nap {
  uint64_t us = 0;
  capgraph_status operator()(uint64_t /*left_ns*/, std::string * /*err*/) {
    us = us ? (us * 2 > 1000 ? 1000 : us * 2) : 1;
    std::this_thread::sleep_for(std::chrono::microseconds(us));
    return CAPGRAPH_OK;
  }
};

// Reads the 64-bit signal at `value` through the CPU mapping (acquire: what the device wrote
// before the signal is visible after it). A poll hook for transports with nothing else to check.
inline capgraph_status wait_read(const volatile uint64_t *value, uint64_t *now) {
  *now = __atomic_load_n(value, __ATOMIC_ACQUIRE);
  return CAPGRAPH_OK;
}

// Waits until poll's value reaches `target` (wrap-safe, signal.h), at most timeout_ns.
//   poll(uint64_t *now, std::string *err): reads the value; anything but CAPGRAPH_OK (a fault the
//     device reported, a transfer that failed) ends the wait with that status and *err
//   nap(uint64_t left_ns, std::string *err): passes time between polls once the first
//     k_wait_spin_ns are spent; at most left_ns. Anything but CAPGRAPH_OK ends the wait.
// On timeout: CAPGRAPH_ERR_TIMEOUT and *err = "timed out after N ms waiting for signal value T
// (it holds V)"; the caller puts its name in front and may add what it knows.
template <typename Poll, typename Nap>
capgraph_status wait_bounded(uint64_t target, uint64_t timeout_ns, Poll &&poll, Nap &&nap,
                             std::string *err) {
  const uint64_t start = now_ns();
  uint64_t now = 0;
  for (;;) {
    if (capgraph_status st = poll(&now, err); st != CAPGRAPH_OK) return st;
    if (timeline_reached(now, target)) return CAPGRAPH_OK;
    const uint64_t spent = now_ns() - start;
    if (spent >= timeout_ns) break;
    if (spent <= k_wait_spin_ns) continue;
    if (capgraph_status st = nap(timeout_ns - spent, err); st != CAPGRAPH_OK) return st;
  }
  *err = "timed out after " + std::to_string(timeout_ns / 1000000) +
         " ms waiting for signal value " + std::to_string(target) + " (it holds " +
         std::to_string(now) + ")";
  return CAPGRAPH_ERR_TIMEOUT;
}

}  // namespace capgraph::hcq
