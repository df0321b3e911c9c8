#include "amd_am_transport.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <iterator>
#include <thread>

#include "amd_chips.h"
#include "amd_packets.h"
#include "hcq/signal.h"
#include "hcq/wait.h"

namespace capgraph::amd {
namespace {

using am::device_layout;

uint64_t align_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

std::string hex(uint64_t v) {
  char b[32];
  snprintf(b, sizeof b, "0x%llx", (unsigned long long)v);
  return b;
}

// The top of VRAM holds the IP discovery table (am_discovery.h: VRAM end - 64 KiB); leave the
// last MiB alone.
constexpr uint64_t kVramReservedTop = 1ull << 20;
// A GC VM fault status read every this many polls: a fault ends the wait early at the cost of
// one register read per few VRAM reads.
constexpr uint64_t kFaultCheckEvery = 8;

}  // namespace

am_session::am_session(am::device &d, std::string l) : dev(d), label(std::move(l)) {
  sdma_words.reserve(64);
  bounce.resize(size_t(dev.pci().staging_bytes()));
}

void am_session::vram_ready() {
  // The VRAM size is known once the device booted; the first allocation comes after that.
  if (free_ready_) return;
  free_ready_ = true;
  const uint64_t limit =
      dev.vram_bytes() > kVramReservedTop ? dev.vram_bytes() - kVramReservedTop : 0;
  if (limit > device_layout::free_start)
    free_[device_layout::free_start] = limit - device_layout::free_start;
}

bool am_session::vram_take(uint64_t bytes, uint64_t *pa, uint64_t *largest) {
  vram_ready();
  *largest = 0;
  for (auto it = free_.begin(); it != free_.end(); ++it) {
    if (it->second < bytes) {
      *largest = std::max(*largest, it->second);
      continue;
    }
    *pa = it->first;
    if (it->second > bytes) free_[it->first + bytes] = it->second - bytes;
    free_.erase(it);
    return true;
  }
  return false;
}

void am_session::vram_give(uint64_t pa, uint64_t bytes) {
  auto next = free_.lower_bound(pa);
  if (next != free_.end() && pa + bytes == next->first) {  // joins the range after it
    bytes += next->second;
    next = free_.erase(next);
  }
  if (next != free_.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second == pa) {  // and the one before
      prev->second += bytes;
      return;
    }
  }
  free_[pa] = bytes;
}

uint64_t am_session::vram_free_bytes() {
  vram_ready();
  uint64_t n = 0;
  for (const auto &[pa, bytes] : free_) n += bytes;
  return n;
}

am_transport::am_transport(am::device &dev, std::string label)
    : am_transport(std::make_shared<am_session>(dev, label), label) {}

am_transport::am_transport(std::shared_ptr<am_session> session, std::string label)
    : s_(std::move(session)), dev_(s_->dev), label_(std::move(label)) {}

am_transport::~am_transport() {
  std::lock_guard<std::recursive_mutex> hold(s_->lock);
  for (auto &f : closing_) f();
  // What the graph did not free goes back, so the other models' session keeps its VRAM.
  for (const auto &[h, a] : allocs_) s_->vram_give(a.pa, a.size);
}

std::string am_transport::name() const {
  return label_ + " (AM driver, device memory not CPU-mapped)";
}

std::string am_transport::chip_name() const { return dev_.chip_info().name; }
uint64_t am_transport::clock_hz() const {
  const amd::chip *c = amd::chip_find(dev_.chip_info().name.c_str());
  return c ? c->timestamp_hz : 0;
}

capgraph_status am_transport::alloc(uint64_t size, hcq::memory_kind, hcq::memory *out,
                                    std::string *err) {
  // Everything in VRAM: with GMMU=0 the GPU reaches it at vm_base + pa, and the host reaches it
  // only through BAR0 transfers anyway, so system memory would buy nothing.
  std::lock_guard<std::recursive_mutex> hold(s_->lock);
  const uint64_t bytes = align_up(size ? size : 1, 4096);
  uint64_t pa = 0, largest = 0;
  if (bytes < size || !s_->vram_take(bytes, &pa, &largest)) {
    *err = name() + ": " + std::to_string(bytes) + " bytes do not fit the VRAM left (" +
           std::to_string(s_->vram_free_bytes()) + " bytes free, the largest free range " +
           std::to_string(largest) + ")";
    return CAPGRAPH_ERR_MEMORY;
  }
  allocation a;
  a.pa = pa;
  a.size = bytes;
  try {
    a.shadow.assign(bytes, 0);
  } catch (const std::bad_alloc &) {
    s_->vram_give(pa, bytes);
    *err = name() + ": cannot allocate a host shadow of " + std::to_string(bytes) + " bytes";
    return CAPGRAPH_ERR_MEMORY;
  }
  const uint64_t handle = next_handle_++;
  allocation &kept = allocs_[handle] = std::move(a);
  out->cpu = kept.shadow.data();
  out->gpu = am::device::vram_va(pa);
  out->size = bytes;
  out->handle = handle;
  return CAPGRAPH_OK;
}

void am_transport::free(hcq::memory &m) {
  std::lock_guard<std::recursive_mutex> hold(s_->lock);
  auto it = allocs_.find(m.handle);
  if (it != allocs_.end()) {
    s_->vram_give(it->second.pa, it->second.size);
    allocs_.erase(it);
  }
  m = hcq::memory{};
}

capgraph_status am_transport::queue_create(hcq::queue_kind kind, uint64_t ring_bytes,
                                           hcq::queue *out, std::string *err) {
  std::lock_guard<std::recursive_mutex> hold(s_->lock);
  // The boot made exactly one queue of each kind (every model's transport uses them: the write
  // pointers are the device's, so submissions of two models follow each other on one ring); their
  // rings are fixed in device_layout.
  const int i = kind == hcq::queue_kind::copy ? 1 : 0;
  if (queue_used_[i]) {
    *err = name() + ": its one " + (i ? "SDMA" : "compute") + " queue is already in use";
    return CAPGRAPH_ERR_DEVICE;
  }
  if (!dev_.booted()) {
    *err = name() + ": the GPU is not booted";
    return CAPGRAPH_ERR_DEVICE;
  }
  // The graph sizes a copy ring to hold its copy commands twice; the boot's SDMA ring is fixed.
  // (A compute ring only carries the per-replay call and signal: the default request is no need.)
  if (i == 1 && ring_bytes > device_layout::sdma_ring_bytes) {
    *err = name() + ": the copy commands need a " + std::to_string(ring_bytes) +
           "-byte ring; the SDMA ring has " + std::to_string(device_layout::sdma_ring_bytes);
    return CAPGRAPH_ERR_DEVICE;
  }
  queue_used_[i] = true;
  *out = hcq::queue{};
  out->kind = kind;
  out->ring.gpu = am::device::vram_va(i ? device_layout::sdma_ring : device_layout::compute_ring);
  out->ring.size = i ? device_layout::sdma_ring_bytes : device_layout::compute_ring_bytes;
  out->write_ptr = &write_ptr_[i];
  out->read_ptr = &write_ptr_[i];
  out->write_ptr_unit = i ? 1 : 4;
  out->no_wrap = i == 1;
  out->handle = uint64_t(i);
  return CAPGRAPH_OK;
}

void am_transport::queue_destroy(hcq::queue &q) {
  std::lock_guard<std::recursive_mutex> hold(s_->lock);
  queue_used_[q.handle ? 1 : 0] = false;
  q = hcq::queue{};
}

uint64_t am_transport::submit(hcq::queue &q, const uint32_t *words, uint64_t count) noexcept {
  std::lock_guard<std::recursive_mutex> hold(s_->lock);
  ++stats_.submits;
  std::string e;
  if (!dev_.queue_submit(q.kind == hcq::queue_kind::copy, words, count, &e) &&
      submit_error_.empty())
    submit_error_ = e;   // a wait comes next; it reports this instead of timing out
  return count + 2 + 2;  // the words, a 64-bit write pointer, a 64-bit doorbell
}

const am_transport::allocation *am_transport::shadow_find(const volatile void *p,
                                                          uint64_t *offset) const {
  const auto *b = reinterpret_cast<const volatile uint8_t *>(p);
  for (const auto &[h, a] : allocs_) {
    const uint8_t *s = a.shadow.data();
    if (b >= s && b + 8 <= s + a.size) {
      *offset = uint64_t(b - s);
      return &a;
    }
  }
  return nullptr;
}

capgraph_status am_transport::wait(const volatile uint64_t *value, uint64_t target,
                                   uint64_t timeout_ns, std::string *err) {
  std::lock_guard<std::recursive_mutex> hold(s_->lock);
  if (!submit_error_.empty()) {
    *err = submit_error_;
    submit_error_.clear();
    return CAPGRAPH_ERR_DEVICE;
  }
  uint64_t off = 0;
  const allocation *a = shadow_find(value, &off);
  if (!a) {
    *err = name() + ": a wait on memory this transport did not allocate";
    return CAPGRAPH_ERR_ARGUMENT;
  }
  const uint64_t va = am::device::vram_va(a->pa + off);
  // The GC VM's fault status: a page fault ends the wait at once instead of at the bound.
  const auto fault_check = [&](uint64_t v, std::string *e) {
    uint32_t fault = 0;
    if (!dev_.rreg(am::regGCVM_L2_PROTECTION_FAULT_STATUS, &fault)) {
      *e = name() + ": reading the GC VM fault status while waiting: the device does not answer";
      return CAPGRAPH_ERR_DEVICE;
    }
    if (!fault) return CAPGRAPH_OK;
    *e = name() + ": GPU page fault (GCVM_L2_PROTECTION_FAULT_STATUS=" + hex(fault) +
         ") while waiting for signal " + hex(va) + " to reach " + std::to_string(target) +
         " (it is " + std::to_string(v) + ")";
    return CAPGRAPH_ERR_DEVICE;
  };
  // The bridge watches the signal (its firmware reads it between USB events, protocol >= 1.3):
  // one request and one bulk IN the host sleeps on in the kernel, however long the GPU takes.
  if (watch_usable_) {
    const uint64_t ms64 = (timeout_ns + 999999) / 1000000;
    const unsigned ms = unsigned(std::min<uint64_t>(std::max<uint64_t>(ms64, 1), 1u << 30));
    uint64_t now_v = 0;
    uint32_t fault = 0;
    std::string e;
    switch (dev_.vram_watch64(a->pa + off, target, am::regGCVM_L2_PROTECTION_FAULT_STATUS, ms,
                              &now_v, &fault, &e)) {
      using o = am::pci_function::watch_outcome;
      case o::reached:
        ++stats_.watches;
        *const_cast<volatile uint64_t *>(value) = now_v;  // the shadow follows the device
        return CAPGRAPH_OK;
      case o::fault:
        *err = name() + ": GPU page fault (GCVM_L2_PROTECTION_FAULT_STATUS=" + hex(fault) +
               ") while waiting for signal " + hex(va) + " to reach " + std::to_string(target) +
               " (it is " + std::to_string(now_v) + ")";
        return CAPGRAPH_ERR_DEVICE;
      case o::timeout: {
        uint64_t v = 0;
        if (!dev_.vram_copy_out(a->pa + off, &v, 8, err)) return CAPGRAPH_ERR_DEVICE;
        // The watch's answer can be lost on the cable while the GPU did finish (or finish just
        // as the transfer timed out): the signal read after it decides.
        if (hcq::timeline_reached(v, target)) {
          *const_cast<volatile uint64_t *>(value) = v;
          return CAPGRAPH_OK;
        }
        if (fault_check(v, err) != CAPGRAPH_OK) return CAPGRAPH_ERR_DEVICE;
        *err = name() + ": the signal at " + hex(va) + " is " + std::to_string(v) + ", not " +
               std::to_string(target) + " after " + std::to_string(timeout_ns / 1000000) +
               " ms (the bridge watched it; no GPU page fault reported)";
        return CAPGRAPH_ERR_TIMEOUT;
      }
      case o::error: *err = name() + ": " + e; return CAPGRAPH_ERR_DEVICE;
      case o::unsupported: watch_usable_ = false; break;  // older firmware: poll below
    }
  }
  uint64_t polls = 0, v = 0;
  const auto read = [&](uint64_t *now, std::string *e) {
    ++stats_.polls;
    if (!dev_.vram_copy_out(a->pa + off, now, 8, e)) return CAPGRAPH_ERR_DEVICE;
    v = *now;
    if (hcq::timeline_reached(v, target)) {
      *const_cast<volatile uint64_t *>(value) = v;  // the shadow follows the device
      return CAPGRAPH_OK;
    }
    return ++polls % kFaultCheckEvery == 0 ? fault_check(v, e) : CAPGRAPH_OK;
  };
  // Firmware that cannot watch: poll over the bridge with a growing pause between reads (50 us
  // doubling to 2 ms), never a spin: a GPU that takes long costs a read every 2 ms, one that
  // finishes soon is seen within the pause.
  uint64_t nap_us = 0;
  const auto nap = [&](uint64_t left_ns, std::string *) {
    nap_us = nap_us ? std::min<uint64_t>(nap_us * 2, 2000) : 50;
    std::this_thread::sleep_for(
        std::chrono::microseconds(std::min<uint64_t>(nap_us, left_ns / 1000 + 1)));
    return CAPGRAPH_OK;
  };
  const capgraph_status st = hcq::wait_bounded(target, timeout_ns, read, nap, err);
  if (st != CAPGRAPH_ERR_TIMEOUT) return st;
  if (fault_check(v, err) != CAPGRAPH_OK) return CAPGRAPH_ERR_DEVICE;
  *err = name() + ": the signal at " + hex(va) + " is " + std::to_string(v) + ", not " +
         std::to_string(target) + " after " + std::to_string(timeout_ns / 1000000) +
         " ms (no GPU page fault reported)";
  return CAPGRAPH_ERR_TIMEOUT;
}

capgraph_status am_transport::range_move(const hcq::memory &m, uint64_t offset, uint64_t size,
                                         bool in, std::string *err) {
  std::lock_guard<std::recursive_mutex> hold(s_->lock);
  auto it = allocs_.find(m.handle);
  if (it == allocs_.end() || offset > it->second.size || size > it->second.size - offset) {
    *err = name() + ": a transfer outside its allocation";
    return CAPGRAPH_ERR_ARGUMENT;
  }
  allocation &a = it->second;
  if (sdma_usable(size, in)) {
    std::string e;
    const bool ok = in ? sdma_copy_in(a.pa + offset, a.shadow.data() + offset, size, &e)
                       : sdma_copy_out(a.pa + offset, a.shadow.data() + offset, size, &e);
    if (!ok) {
      *err = e;
      return CAPGRAPH_ERR_DEVICE;
    }
    ++(in ? stats_.uploads : stats_.downloads);
    (in ? stats_.upload_bytes : stats_.download_bytes) += size;
    return CAPGRAPH_OK;
  }
  // BAR transfers move whole dwords; the shadow covers the allocation's whole pages, so widening
  // the range to dwords moves only bytes the shadow already holds.
  const uint64_t lo = offset & ~3ull, hi = align_up(offset + size, 4);
  std::string e;
  const bool ok = in ? dev_.vram_copy_in(a.pa + lo, a.shadow.data() + lo, hi - lo, &e)
                     : dev_.vram_copy_out(a.pa + lo, a.shadow.data() + lo, hi - lo, &e);
  if (!ok) {
    *err = e;
    return CAPGRAPH_ERR_DEVICE;
  }
  if (in) {
    ++stats_.uploads;
    stats_.upload_bytes += hi - lo;
  } else {
    ++stats_.downloads;
    stats_.download_bytes += hi - lo;
  }
  return CAPGRAPH_OK;
}

capgraph_status am_transport::upload(const hcq::memory &m, uint64_t offset, uint64_t size,
                                     std::string *err) {
  return range_move(m, offset, size, true, err);
}

capgraph_status am_transport::download(const hcq::memory &m, uint64_t offset, uint64_t size,
                                       std::string *err) {
  return range_move(m, offset, size, false, err);
}

// ---- copies through the bridge SRAM and SDMA ---------------------------------------------------
// Sources: tinygrad ops_amd.py AMDAllocator._copyin (USB: bulk into an SRAM window, SDMA
// COPY_LINEAR window -> VRAM, a fence the host reads) and _copyout (arm the bridge's read, SDMA
// COPY_LINEAR VRAM -> window, then a dword written at cq_buf + 12 = bus 0x82200C, which the
// bridge needs before it sends); shared/research/tinygrad_runtime.md §4.7. tinygrad pipelines two
// 256 KiB windows; this waits for each chunk (one 512 KiB window), which costs a fence read per
// chunk but no sentinels.

bool am_transport::sdma_usable(uint64_t size, bool in) const {
  // SDMA queue 0 runs once the GPU is booted (teardown stops it); copy-out also needs a staging
  // window the host can read back.
  return sdma_copies_ && dev_.booted() && size >= (in ? kSdmaMinInBytes : kSdmaMinOutBytes) &&
         !s_->bounce.empty() && (in || dev_.staging_trigger_va() != 0);
}

namespace {
unsigned sdma_timeout_ms(uint64_t n) { return unsigned(2000 + n / 100000); }  // >= 100 MB/s + slack
}  // namespace

bool am_transport::sdma_copy_in(uint64_t pa, const uint8_t *src, uint64_t size, std::string *err) {
  am::pci_function &pci = dev_.pci();
  std::vector<uint8_t> &bounce = s_->bounce;
  std::vector<uint32_t> &sdma_words = s_->sdma_words;
  uint32_t &copy_seq = s_->copy_seq;
  if (!s_->fence_ready) {
    // FENCE writes 32 bits and the wait reads 64: start from a zeroed word, once per session.
    const uint64_t zero = 0;
    if (!dev_.vram_copy_in(device_layout::copy_fence, &zero, 8, err)) return false;
    copy_seq = 0;
    s_->fence_ready = true;
  }
  const uint64_t chunk = bounce.size();
  for (uint64_t done = 0; done < size; done += chunk) {
    const uint64_t n = std::min(chunk, size - done);
    const uint64_t padded = align_up(n, 512);  // the SRAM DMA moves whole sectors
    std::memcpy(bounce.data(), src + done, size_t(n));
    std::memset(bounce.data() + n, 0, size_t(padded - n));
    std::string e;
    if (!pci.staging_write(0, bounce.data(), size_t(padded), &e)) {
      *err = name() + ": copying " + std::to_string(n) + " bytes into the bridge SRAM: " + e;
      return false;
    }
    sdma_words.clear();
    packet_writer w(&sdma_words);
    using copy = fields::SDMA_COPY_LINEAR;
    using fence = fields::SDMA_FENCE;
    w.emit({{copy::count, n - 1},
            {copy::src, device_layout::staging_va},
            {copy::dst, am::device::vram_va(pa + done)}});
    w.emit(
        {{fence::addr, am::device::vram_va(device_layout::copy_fence)}, {fence::data, ++copy_seq}});
    if (!w.error().empty()) {
      *err = name() + ": SDMA copy-in packets: " + w.error();
      return false;
    }
    if (!dev_.queue_submit(true, sdma_words.data(), sdma_words.size(), &e) ||
        !dev_.wait_vram64(device_layout::copy_fence, copy_seq, sdma_timeout_ms(n), &e)) {
      *err = name() + ": SDMA copy of " + std::to_string(n) +
             " bytes from the bridge SRAM into VRAM " + hex(pa + done) + ": " + e;
      return false;
    }
    ++stats_.sdma_chunks_in;
  }
  return true;
}

bool am_transport::sdma_copy_out(uint64_t pa, uint8_t *dst, uint64_t size, std::string *err) {
  am::pci_function &pci = dev_.pci();
  std::vector<uint8_t> &bounce = s_->bounce;
  std::vector<uint32_t> &sdma_words = s_->sdma_words;
  const uint64_t chunk = bounce.size();
  for (uint64_t done = 0; done < size; done += chunk) {
    const uint64_t n = std::min(chunk, size - done);
    const uint64_t padded = align_up(n, 512);
    std::string e;
    sdma_words.clear();
    packet_writer w(&sdma_words);
    using copy = fields::SDMA_COPY_LINEAR;
    w.emit({{copy::count, n - 1},
            {copy::src, am::device::vram_va(pa + done)},
            {copy::dst, device_layout::staging_va}});
    // The trigger: any dword written there (tinygrad writes 0). The engine runs packets in order,
    // so the copy has landed in the SRAM when the bridge sees it; no fence read is needed.
    w.emit({{fields::SDMA_FENCE::addr, dev_.staging_trigger_va()}, {fields::SDMA_FENCE::data, 0}});
    if (!w.error().empty()) {
      *err = name() + ": SDMA copy-out packets: " + w.error();
      return false;
    }
    // The ring words go first (a BAR stream, whose result comes back on bulk IN); then the arm
    // (the bridge counts only a trigger after it, and from it on the bulk IN pipe carries the
    // SRAM data); then the write pointer and doorbell over control transfers only.
    if (!dev_.queue_write(true, sdma_words.data(), sdma_words.size(), &e)) {
      *err = name() + ": SDMA copy-out: " + e;
      return false;
    }
    if (!pci.staging_read_arm(0, size_t(padded), &e)) {
      *err = name() + ": arming the bridge SRAM read: " + e;
      return false;
    }
    if (!dev_.queue_kick(true, true, &e)) {
      *err = name() + ": SDMA copy-out: " + e;
      return false;
    }
    if (!pci.staging_read_collect(bounce.data(), size_t(padded), &e)) {
      uint32_t fault = 0;
      const bool read = dev_.rreg(am::regGCVM_L2_PROTECTION_FAULT_STATUS, &fault);
      *err = name() + ": SDMA copy of " + std::to_string(n) + " bytes from VRAM " + hex(pa + done) +
             " out through the bridge SRAM: " + e +
             (!read   ? " (the GC VM fault status does not read)"
              : fault ? " (GPU page fault: GCVM_L2_PROTECTION_FAULT_STATUS=" + hex(fault) + ")"
                      : "");
      return false;
    }
    std::memcpy(dst + done, bounce.data(), size_t(n));
    ++stats_.sdma_chunks_out;
  }
  return true;
}

}  // namespace capgraph::amd
