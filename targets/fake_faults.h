// Fault injection for the fake devices (tests only; never linked into the shipped runtime). Each
// fake (fake-amd, fake-adreno, fake-nv, fake-usb) counts the calls our driver code makes across
// its seam (the system calls under KGSL and RM/UVM, the transport calls of fake-amd, the USB
// transfers of fake-usb) with one fault_counter, and takes two more words after its name:
//   :fail=N[:ERRNO]  the Nth device call (from 1) fails the way the real driver fails it: the
//                    ioctl/mmap returns -1 with errno ERRNO (a name such as ENOMEM, EIO, ENODEV,
//                    ETIMEDOUT, or a number; default: the call's most likely one), the USB transfer
//                    times out (ETIMEDOUT), stalls (EPIPE), reports no device (ENODEV), an I/O
//                    error (EIO), or moves half its bytes ("short"). Only that one call fails. A
//                    call that releases something (close, munmap, a free) releases it, then reports
//                    the error, as close(2) does: the driver must still not reuse what it released.
//   :count           at the end of the session, one line on stderr: "device calls: K" (every call
//                    the open, load, replays and teardown made).
// At the end each fake also says how many objects the driver left with it (buffers, mappings, file
// descriptors, queues: fault_counter::finish): the sweep tests (tests/faults) read that back with
// fault_session_last() and expect zero after every failure.
#pragma once
#include <cstdint>
#include <mutex>
#include <string>

namespace capgraph::fake {

// What the device name asked for.
struct fault_plan {
  uint64_t fail_at = 0;         // 0: no failure
  int error = 0;                // errno to report; 0: the call's own default
  bool short_transfer = false;  // USB: move half the bytes instead of an error
  bool count = false;
};

// Reads one word after a fake's name ("fail=N", "count", and the ERRNO word that may follow
// fail=N). Returns true when the word was one of these (*err set when it was malformed).
bool fault_word(const std::string &word, fault_plan *plan, std::string *err);
// The words a fake's usage message lists.
constexpr const char *fault_words_usage = "fail=N[:ERRNO], count";

// What one session of a fake did, kept when it ends (for tests in the same process).
struct fault_session {
  std::string device;       // "fake-adreno"
  uint64_t calls = 0;       // device calls made
  std::string failed_call;  // the call the plan failed ("" if none)
  int error = 0;            // the errno it reported
  int64_t live_at_end = 0;  // objects the driver left behind when the session ended
  bool ended = false;
};
fault_session fault_session_last();
// Device calls the session in progress has made so far (the last counter that counted one): how a
// test tells a load's calls from a replay's and the teardown's.
uint64_t fault_calls_now();
// errno's symbolic name ("ENOMEM"), or its number.
std::string errno_name(int e);

class fault_counter {
 public:
  fault_counter(std::string device, fault_plan plan) : device_(std::move(device)), plan_(plan) {}
  ~fault_counter() { finish(-1); }
  fault_counter(const fault_counter &) = delete;
  fault_counter &operator=(const fault_counter &) = delete;

  // Every device call goes through this once: true when the plan fails this one; *error is then
  // the errno to report (the plan's, or `default_error`). `what` names the call in messages
  // ("ioctl IOCTL_KGSL_GPUOBJ_ALLOC").
  bool call(const std::string &what, int default_error, int *error);
  uint64_t calls() const { return calls_; }
  const fault_plan &plan() const { return plan_; }
  // The injected failure, for a fake's own messages: "injected at device call 7 of fake-amd".
  std::string injected_text() const;
  // Ends the session once (later calls do nothing): prints the ":count" line, keeps the record
  // fault_session_last() returns. live < 0: not known (a fake that never got to say).
  void finish(int64_t live);

 private:
  std::string device_;
  fault_plan plan_;
  uint64_t calls_ = 0;
  std::string failed_;
  int error_ = 0;
  bool finished_ = false;
};

}  // namespace capgraph::fake
