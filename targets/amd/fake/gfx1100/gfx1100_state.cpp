// gfx1100_model::state_save / state_load: the GPU model as bytes, so `--device fake-usb` can
// outlive its process the way a real GPU outlives the driver's
// (targets/amd/fake/gfx1100/fake_usb.cpp). Layout, little-endian: "CGGFX110" magic, u32 version,
// u64 VRAM bytes, then the fields in the order written below, then a 64-bit FNV-1a of everything
// before it. A file that is short, has trailing bytes or fails the sum is refused as a whole
// (nothing half-loaded).
#include <cstring>

#include "fake_amd.h"
#include "gfx1100_model.h"

namespace capgraph::emu {
namespace {

constexpr char kMagic[8] = {'C', 'G', 'G', 'F', 'X', '1', '1', '0'};
constexpr uint32_t kVersion = 1;
constexpr uint64_t kPage = 4096;

uint64_t fnv1a(const uint8_t *p, size_t n) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 0x100000001b3ull;
  return h;
}

struct writer {
  std::vector<uint8_t> &out;
  void u64(uint64_t v) {
    for (int i = 0; i < 8; ++i) out.push_back(uint8_t(v >> (8 * i)));
  }
  void u32(uint32_t v) { u64(v); }  // one width for every number: simpler to read back
  void flag(bool b) { out.push_back(b ? 1 : 0); }
  void bytes(const void *p, size_t n) {
    const size_t at = out.size();
    out.resize(at + n);
    if (n) std::memcpy(out.data() + at, p, n);
  }
  void str(const std::string &s) {
    u64(s.size());
    bytes(s.data(), s.size());
  }
};

struct reader {
  const uint8_t *p;
  size_t n, at = 0;
  bool bad = false;
  bool take(void *dst, size_t k) {
    if (bad || k > n - at) return !(bad = true);
    std::memcpy(dst, p + at, k);
    at += k;
    return true;
  }
  uint64_t u64() {
    uint8_t b[8] = {};
    take(b, 8);
    uint64_t v = 0;
    for (int i = 7; i >= 0; --i) v = v << 8 | b[i];
    return v;
  }
  uint32_t u32() {
    const uint64_t v = u64();
    if (v >> 32) bad = true;
    return uint32_t(v);
  }
  bool flag() {
    uint8_t b = 0;
    take(&b, 1);
    if (b > 1) bad = true;
    return b == 1;
  }
  uint64_t count(uint64_t each_at_least) {  // a count the rest of the file can hold
    const uint64_t c = u64();
    if (c > (n - at) / each_at_least) bad = true;
    return bad ? 0 : c;
  }
  std::string str() {
    std::string s(size_t(count(1)), '\0');
    take(s.data(), s.size());
    return s;
  }
};

}  // namespace

std::vector<uint8_t> gfx1100_model::state_save() const {
  std::vector<uint8_t> out;
  writer w{out};
  w.bytes(kMagic, sizeof kMagic);
  w.u32(kVersion);
  w.u64(opt_.vram_bytes);
  w.u64(regs_.size());
  for (const auto &[a, v] : regs_) w.u32(a), w.u32(v);
  w.u64(hqd_regs_.size());
  for (const auto &[k, v] : hqd_regs_) w.u32(k), w.u32(v);
  w.flag(sos_alive_), w.flag(bl_busy_forever_), w.flag(ring_ready_);
  w.u64(bl_done_.size());
  for (uint32_t c : bl_done_) w.u32(c);
  w.u32(psp_rptr_);
  w.flag(toc_loaded_), w.flag(tmr_set_), w.flag(smu_fw_), w.flag(rlc_autoload_);
  w.u64(fw_loaded_.size());
  for (uint32_t f : fw_loaded_) w.u32(f);
  w.flag(smu_dram_hi_), w.flag(smu_dram_lo_), w.flag(smu_features_), w.flag(mec_running_);
  for (int i = 0; i < 2; ++i) w.u64(root_latched_[i]), w.flag(latched_[i]);
  w.u32(mode1_resets);
  w.u64(psp_loaded.size());
  for (const std::string &s : psp_loaded) w.str(s);
  // VRAM: the pages that are not all zero (a fresh model's are, calloc'ed).
  const uint8_t *v = vram_.get();
  uint64_t pages = 0;
  const size_t count_at = out.size();
  w.u64(0);
  static const uint8_t zero[kPage] = {};
  for (uint64_t pa = 0; pa < opt_.vram_bytes; pa += kPage) {
    if (std::memcmp(v + pa, zero, kPage) == 0) continue;
    w.u64(pa / kPage);
    w.bytes(v + pa, kPage);
    ++pages;
  }
  for (int i = 0; i < 8; ++i) out[count_at + i] = uint8_t(pages >> (8 * i));
  w.u64(fnv1a(out.data(), out.size()));
  return out;
}

bool gfx1100_model::state_load(const uint8_t *p, size_t n, std::string *err) {
  char magic[8] = {};
  if (n < sizeof magic + 8 + 8 || std::memcmp(p, kMagic, sizeof kMagic) != 0) {
    *err = "not a gfx1100 model state (no CGGFX110 header)";
    return false;
  }
  uint64_t sum = 0;
  for (int i = 7; i >= 0; --i) sum = sum << 8 | p[n - 8 + i];
  if (sum != fnv1a(p, n - 8)) {
    *err = "checksum mismatch: the file is truncated or corrupt";
    return false;
  }
  reader r{p, n - 8};
  r.take(magic, sizeof magic);
  if (r.u32() != kVersion) {
    *err = "state version is not " + std::to_string(kVersion);
    return false;
  }
  if (r.u64() != opt_.vram_bytes) {
    *err = "saved for a different VRAM size";
    return false;
  }
  power_cycle();  // from a known base; everything below overwrites it
  regs_.clear();
  for (uint64_t i = 0, c = r.count(16); i < c; ++i) {
    const uint32_t a = r.u32();
    regs_[a] = r.u32();
  }
  for (uint64_t i = 0, c = r.count(16); i < c; ++i) {
    const uint32_t k = r.u32();
    hqd_regs_[k] = r.u32();
  }
  sos_alive_ = r.flag(), bl_busy_forever_ = r.flag(), ring_ready_ = r.flag();
  for (uint64_t i = 0, c = r.count(8); i < c; ++i) bl_done_.push_back(r.u32());
  psp_rptr_ = r.u32();
  toc_loaded_ = r.flag(), tmr_set_ = r.flag(), smu_fw_ = r.flag(), rlc_autoload_ = r.flag();
  for (uint64_t i = 0, c = r.count(8); i < c; ++i) fw_loaded_.insert(r.u32());
  smu_dram_hi_ = r.flag(), smu_dram_lo_ = r.flag(), smu_features_ = r.flag(),
  mec_running_ = r.flag();
  for (int i = 0; i < 2; ++i) root_latched_[i] = r.u64(), latched_[i] = r.flag();
  mode1_resets = r.u32();
  for (uint64_t i = 0, c = r.count(8); i < c; ++i) psp_loaded.push_back(r.str());
  for (uint64_t i = 0, c = r.count(8 + kPage); i < c && !r.bad; ++i) {
    const uint64_t page = r.u64();
    if (page >= opt_.vram_bytes / kPage)
      r.bad = true;
    else
      r.take(vram_.get() + page * kPage, kPage);
  }
  if (r.bad || r.at != r.n) {
    power_cycle();
    *err = r.bad ? "a field is out of range or the file ends early"
                 : "bytes after the end of the state";
    return false;
  }
  // Queues were stopped by the teardown that ends a clean session; a session that ended without
  // one left SCRATCH_REG6 set, so the next boot resets the GPU before it uses any queue.
  return true;
}

}  // namespace capgraph::emu
