// The HCQ transport over the AM driver (drivers/am): a gfx1100 that no kernel driver owns, reached
// through an am::pci_function (the USB bridge; the register-model GPU in tests). Nothing of it is
// CPU-mapped (behind the bridge nothing can be), so the transport is a shadowed one
// (transport.h): every allocation is VRAM (GMMU=0: the boot mapped all of VRAM once at
// device_layout::vm_base, so GPU address = vm_base + physical offset) with a host shadow, and
// bytes cross only when the graph uploads or downloads a range. Queues are the two the boot made
// (one compute HQD, SDMA queue 0); submit goes through am::device::queue_submit (ring words,
// write pointer in VRAM, doorbell). Waits poll the signal's VRAM word with a bound and read the
// GC VM fault status every few polls, so a page fault ends the wait with the fault, not a timeout.
// Bytes cross the way tinygrad's USB path moves them (ops_amd.py AMDAllocator._copyin/_copyout
// on USBIface): a range of at least kSdmaMinInBytes (out: kSdmaMinOutBytes) goes in as a
// bulk write into the bridge SRAM (the staging window) that SDMA queue 0 copies into VRAM, with a
// fence in VRAM polled with a bound; out, SDMA copies VRAM into the SRAM and writes the bridge's
// trigger dword, and the host's armed bulk read collects it; both chunked by the SRAM's size.
// Smaller ranges (the words a replay patches, signals) and a PCI function without staging reads go
// as BAR transfers.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "am_device.h"
#include "hcq/transport.h"

namespace capgraph::amd {

struct am_transport_stats {
  uint64_t uploads = 0, upload_bytes = 0, downloads = 0, download_bytes = 0;
  uint64_t submits = 0, polls = 0;
  uint64_t watches = 0;  // waits the bridge watched while the host slept (protocol >= 1.3)
  uint64_t sdma_chunks_in = 0, sdma_chunks_out = 0;  // copies through the staging window
};

// From this many bytes on the SDMA path is the cheaper one. Counted with drivers/usb's
// BridgeCounters on the emulated bridge: BAR writes cost 3 transfers per 4088 bytes and BAR reads
// 2, the SDMA path 13 transfers in (DMA arm, bulk, the submission's three BAR writes of 3, a fence
// read of 2) and 12 out; priced as in the cost report (drivers/am/README.md: 125 us per transfer,
// streamed TLPs at the measured 3.6 MB/s write / 1.8 MB/s read, SRAM DMA at 381 MB/s) the
// break-even is ~4.5 KB in and ~2.3 KB out.
constexpr uint64_t kSdmaMinInBytes = 4096, kSdmaMinOutBytes = 2048;

// One booted AM device and what every transport over it shares. Each model loaded on the GPU has
// a transport of its own (its allocations, its use of the two queues) over the one session of its
// device: two models on one USB GPU share the boot, the bridge and the queues, never reboot the
// GPU under each other (amd_usb.h: the sessions of a process, by bridge). Shared: the VRAM past
// the boot's fixed layout (first fit, so one model's free leaves another's memory in place), the
// sequence of the SDMA copy fence (one VRAM word every copy through the bridge SRAM signals: two
// counters over it would see each other's values), the bounce buffer of those copies, and the
// lock every transport call holds, so one model's transfers never interleave with another's on
// the wire; a replay or a load holds it whole (hcq::transport::exclusive), so replays on two
// threads take turns at the GPU (a model's copy queue, waiting for its compute signal, would
// otherwise hold the SDMA engine the other's copies through the SRAM need).
// Destroying the session (the last transport's close) is its owner's business: a USB session
// tears the GPU down then (amd_usb.cpp).
class am_session {
 public:
  // `dev` must be booted and outlive the session; `label` names the device ("usb 1-2 ... (cold
  // boot)").
  am_session(am::device &dev, std::string label);
  virtual ~am_session() = default;
  am::device &dev;
  const std::string label;
  std::recursive_mutex lock;  // a replay holds it, and each of its calls again

  // `bytes` (4 KiB multiple) of VRAM: false when no free range holds them (*largest: the
  // largest that would fit).
  bool vram_take(uint64_t bytes, uint64_t *pa, uint64_t *largest);
  void vram_give(uint64_t pa, uint64_t bytes);
  uint64_t vram_free_bytes();

  // The SDMA copy fence (device_layout::copy_fence): zeroed once per session, then each copy's
  // FENCE writes the next value.
  bool fence_ready = false;
  uint32_t copy_seq = 0;
  std::vector<uint32_t>
      sdma_words;               // one chunk's SDMA packets (reserved once: no replay allocation)
  std::vector<uint8_t> bounce;  // one chunk padded to the SRAM's 512-byte sectors

 private:
  std::map<uint64_t, uint64_t> free_;  // VRAM offset -> bytes, coalesced
  bool free_ready_ = false;
  void vram_ready();
};

class am_transport : public hcq::transport {
 public:
  // A transport of its own over `dev` (tests): `dev` must be booted and outlive it; `label` names
  // the device in messages.
  am_transport(am::device &dev, std::string label);
  // One more transport (model) over a session other transports may share; it keeps the session.
  am_transport(std::shared_ptr<am_session> session, std::string label);
  ~am_transport() override;
  std::string name() const override;
  std::string chip_name() const override;
  // The chip's timestamp rate (amd_chips.h). The graph does not download timestamps on a shadowed
  // transport.
  uint64_t clock_hz() const override;

  capgraph_status alloc(uint64_t size, hcq::memory_kind kind, hcq::memory *out,
                        std::string *err) override;
  void free(hcq::memory &m) override;
  capgraph_status queue_create(hcq::queue_kind kind, uint64_t ring_bytes, hcq::queue *out,
                               std::string *err) override;
  void queue_destroy(hcq::queue &q) override;
  void doorbell(hcq::queue &q, uint64_t write_ptr) override {}  // submit rings it
  uint64_t submit(hcq::queue &q, const uint32_t *words, uint64_t count) noexcept override;
  capgraph_status wait(const volatile uint64_t *value, uint64_t target, uint64_t timeout_ns,
                       std::string *err) override;

  void exclusive(bool on) override { on ? s_->lock.lock() : s_->lock.unlock(); }
  bool shadowed() const override { return true; }
  capgraph_status upload(const hcq::memory &m, uint64_t offset, uint64_t size,
                         std::string *err) override;
  capgraph_status download(const hcq::memory &m, uint64_t offset, uint64_t size,
                           std::string *err) override;

  const am_transport_stats &stats() const { return stats_; }
  const std::shared_ptr<am_session> &session() const { return s_; }
  // Runs `f` when the transport closes, under the session's lock (a fake's engine forgets the
  // capture this model attached).
  void at_close(std::function<void()> f) { closing_.push_back(std::move(f)); }
  // false: every range crosses as BAR transfers (for tests of the fallback, and comparisons).
  void sdma_copies(bool on) { sdma_copies_ = on; }
  // (VRAM offset, bytes) of each live allocation, oldest first; for diagnostics and tests.
  std::vector<std::pair<uint64_t, uint64_t>> allocations() const {
    std::vector<std::pair<uint64_t, uint64_t>> v;
    for (const auto &[h, a] : allocs_) v.push_back({a.pa, a.size});
    return v;
  }

 private:
  struct allocation {
    uint64_t pa = 0, size = 0;
    std::vector<uint8_t> shadow;
  };
  std::shared_ptr<am_session> s_;
  am::device &dev_;
  std::string label_;
  std::map<uint64_t, allocation> allocs_;  // by handle
  uint64_t next_handle_ = 1;
  bool queue_used_[2] = {false, false};  // compute, copy
  uint64_t write_ptr_[2] = {0, 0};       // what queue::write_ptr points at (unused by submit)
  std::string submit_error_;             // a failed submit, reported by the next wait
  am_transport_stats stats_;
  bool watch_usable_ = true;  // until the PCI function says it cannot watch
  bool sdma_copies_ = true;
  std::vector<std::function<void()>> closing_;
  const allocation *shadow_find(const volatile void *p, uint64_t *offset) const;
  bool sdma_usable(uint64_t size, bool in) const;
  bool sdma_copy_in(uint64_t pa, const uint8_t *src, uint64_t size, std::string *err);
  bool sdma_copy_out(uint64_t pa, uint8_t *dst, uint64_t size, std::string *err);
  capgraph_status range_move(const hcq::memory &m, uint64_t offset, uint64_t size, bool in,
                             std::string *err);
};

}  // namespace capgraph::amd
