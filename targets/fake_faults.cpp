#include "fake_faults.h"

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace capgraph::fake {
namespace {

// The errnos a kernel driver returns from the calls the transports make (ioctl(2), mmap(2),
// open(2); libusb's transfer errors map onto ETIMEDOUT, EPIPE, ENODEV, EIO).
struct errno_entry {
  const char *name;
  int value;
};
constexpr errno_entry kErrnos[] = {
    {"EPERM", EPERM},         {"ENOENT", ENOENT},   {"EINTR", EINTR},         {"EIO", EIO},
    {"EBADF", EBADF},         {"EAGAIN", EAGAIN},   {"ENOMEM", ENOMEM},       {"EACCES", EACCES},
    {"EFAULT", EFAULT},       {"EBUSY", EBUSY},     {"ENODEV", ENODEV},       {"EINVAL", EINVAL},
    {"ENOSPC", ENOSPC},       {"EPIPE", EPIPE},     {"ENOTTY", ENOTTY},       {"EPROTO", EPROTO},
    {"ETIMEDOUT", ETIMEDOUT}, {"EDEADLK", EDEADLK}, {"ECANCELED", ECANCELED},
};

std::mutex g_last_lock;
fault_session g_last;
std::atomic<uint64_t> g_calls_now{0};

}  // namespace

std::string errno_name(int e) {
  for (const errno_entry &x : kErrnos)
    if (x.value == e) return x.name;
  return std::to_string(e);
}

bool fault_word(const std::string &word, fault_plan *plan, std::string *err) {
  if (word == "count") return plan->count = true;
  if (word.rfind("fail=", 0) == 0) {
    char *end = nullptr;
    const unsigned long long n = strtoull(word.c_str() + 5, &end, 10);
    if (word.size() == 5 || *end || n == 0) {
      *err = "'" + word + "': fail=N wants a call number from 1";
      return true;
    }
    plan->fail_at = n;
    return true;
  }
  // The ERRNO word after fail=N: a name, "short" (USB), or a number.
  if (!plan->fail_at || plan->error || plan->short_transfer) return false;
  if (word == "short") return plan->short_transfer = true;
  for (const errno_entry &x : kErrnos)
    if (word == x.name) return plan->error = x.value, true;
  char *end = nullptr;
  const long n = strtol(word.c_str(), &end, 10);
  if (!word.empty() && !*end && n > 0 && n < 4096) return plan->error = int(n), true;
  return false;
}

bool fault_counter::call(const std::string &what, int default_error, int *error) {
  g_calls_now = ++calls_;
  if (calls_ != plan_.fail_at) return false;
  failed_ = what;
  *error = error_ = plan_.error ? plan_.error : default_error;
  return true;
}

std::string fault_counter::injected_text() const {
  return "injected at device call " + std::to_string(plan_.fail_at) + " of " + device_;
}

void fault_counter::finish(int64_t live) {
  if (finished_) return;
  finished_ = true;
  if (plan_.count) fprintf(stderr, "device calls: %llu\n", (unsigned long long)calls_);
  if (!calls_) return;  // never used through its seam (a fake inside another device model)
  std::lock_guard<std::mutex> hold(g_last_lock);
  g_last = {device_, calls_, failed_, error_, live, true};
}

uint64_t fault_calls_now() { return g_calls_now; }

fault_session fault_session_last() {
  std::lock_guard<std::mutex> hold(g_last_lock);
  return g_last;
}

}  // namespace capgraph::fake
