#include "bridge.h"

#include <algorithm>
#include <cstdio>
#include <vector>

#include "bridge_protocol.h"

namespace capgraph::usb {

const char *transfer_status_name(TransferStatus s) {
  switch (s) {
    case TransferStatus::ok: return "ok";
    case TransferStatus::stall: return "stalled";
    case TransferStatus::timeout: return "timed out";
    case TransferStatus::no_device: return "device gone";
    case TransferStatus::error: return "transfer error";
  }
  return "?";
}

const char *bridge_error_name(uint8_t code) {
  switch (code) {
    case BRIDGE_ERR_NONE: return "no error";
    case BRIDGE_ERR_UNKNOWN_REQUEST: return "unknown request";
    case BRIDGE_ERR_BAD_LENGTH: return "bad length";
    case BRIDGE_ERR_BAD_ARGUMENT: return "bad argument";
    case BRIDGE_ERR_TLP_TIMEOUT: return "PCIe TLP got no completion";
    case BRIDGE_ERR_TLP_ENGINE: return "PCIe TLP engine error (link down?)";
    case BRIDGE_ERR_FLASH_TIMEOUT: return "SPI flash timed out";
    case BRIDGE_ERR_BUSY: return "busy with a SPI program";
    case BRIDGE_ERR_LINK_DOWN: return "PCIe link did not come up";
    case BRIDGE_ERR_BULK_LENGTH: return "bulk data length mismatch";
    case BRIDGE_ERR_TLP_COMPLETION: return "PCIe completion with an error status";
  }
  return "unknown error code";
}

static void put_le32(uint8_t *p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = uint8_t(v >> (8 * i));
}
static uint32_t le32(const uint8_t *p) {
  return uint32_t(p[0] | p[1] << 8 | p[2] << 16 | uint32_t(p[3]) << 24);
}

std::string BridgeInfo::serial_hex() const {
  char b[9];
  if (!serial_ok) return "ffffffff";
  std::snprintf(b, sizeof b, "%02x%02x%02x%02x", serial[0], serial[1], serial[2], serial[3]);
  return b;
}

std::string BridgeInfo::version() const {
  return std::to_string(fw_major) + "." + std::to_string(fw_minor) + "." + std::to_string(fw_patch);
}

Bridge::Bridge(BridgeTransport &transport, unsigned timeout_ms)
    : t_(transport), timeout_ms_(timeout_ms) {}

TransferStatus Bridge::transfer_control(const ControlRequest &r, uint8_t *data, uint16_t length,
                                        size_t *actual, unsigned timeout_ms) {
  ++counters_.control;
  counters_.control_bytes += length;
  return t_.control(r, data, length, actual, timeout_ms);
}

TransferStatus Bridge::transfer_bulk(uint8_t endpoint, uint8_t *data, size_t length, size_t *actual,
                                     unsigned timeout_ms) {
  ++(endpoint & 0x80 ? counters_.bulk_in : counters_.bulk_out);
  (endpoint & 0x80 ? counters_.bulk_in_bytes : counters_.bulk_out_bytes) += length;
  return t_.bulk(endpoint, data, length, actual, timeout_ms);
}

static BridgeStatus bad_call(const std::string &who, const std::string &why) {
  BridgeStatus st;
  st.transfer = TransferStatus::error;
  st.message = who + ": " + why;
  return st;
}

BridgeStatus Bridge::fail(TransferStatus s, const char *what) {
  BridgeStatus st;
  st.transfer = s;
  std::string msg = t_.describe() + ": " + what + " " + transfer_status_name(s);
  if (s == TransferStatus::stall) {
    // The firmware says why it refused in INFO.last_error.
    uint8_t buf[BRIDGE_INFO_SIZE];
    size_t got = 0;
    ControlRequest r{BRIDGE_RT_VENDOR_IN, BRIDGE_REQ_INFO, 0, 0};
    if (transfer_control(r, buf, BRIDGE_INFO_SIZE, &got, timeout_ms_) == TransferStatus::ok &&
        got == BRIDGE_INFO_SIZE) {
      st.device_error = buf[BRIDGE_INFO_OFF_LAST_ERROR];
      msg += std::string(" (bridge says: ") + bridge_error_name(st.device_error) + ")";
    }
  } else if (s == TransferStatus::no_device) {
    msg += " (unplugged or reset; reconnect and retry)";
  }
  st.message = msg;
  return st;
}

BridgeStatus Bridge::control_in(uint8_t req, uint16_t value, uint16_t index, uint8_t *data,
                                uint16_t n, size_t *actual, const char *what, unsigned timeout_ms) {
  ControlRequest r{BRIDGE_RT_VENDOR_IN, req, value, index};
  TransferStatus s = transfer_control(r, data, n, actual, timeout_ms ? timeout_ms : timeout_ms_);
  if (s != TransferStatus::ok) return fail(s, what);
  return {};
}

BridgeStatus Bridge::control_out(uint8_t req, uint16_t value, uint16_t index, const uint8_t *data,
                                 uint16_t n, const char *what, unsigned timeout_ms) {
  ControlRequest r{BRIDGE_RT_VENDOR_OUT, req, value, index};
  std::vector<uint8_t> copy(data, data + n);
  size_t actual = 0;
  TransferStatus s =
      transfer_control(r, copy.data(), n, &actual, timeout_ms ? timeout_ms : timeout_ms_);
  if (s != TransferStatus::ok) return fail(s, what);
  // A control OUT's data stage moves all its bytes or the transfer fails (USB 2.0 9.3: the host
  // sends wLength bytes; a device cannot end it early), so fewer bytes than asked is an error of
  // the transfer, as an EIO is, never a request the firmware took whole (found by the fault
  // sweep's `fake-usb:fail=N:short`: a short TLP request passed unnoticed).
  if (actual != n)
    return bad_call(t_.describe(), std::string(what) + " (control OUT) moved " +
                                       std::to_string(actual) + " of " + std::to_string(n) +
                                       " bytes: a short transfer");
  return {};
}

BridgeStatus Bridge::read_info(BridgeInfo *out) {
  uint8_t b[BRIDGE_INFO_SIZE];
  size_t got = 0;
  BridgeStatus st = control_in(BRIDGE_REQ_INFO, 0, 0, b, BRIDGE_INFO_SIZE, &got, "INFO");
  if (!st.ok()) return st;
  if (got != BRIDGE_INFO_SIZE || b[0] != BRIDGE_INFO_MAGIC0 || b[1] != BRIDGE_INFO_MAGIC1 ||
      b[2] != BRIDGE_INFO_MAGIC2 || b[3] != BRIDGE_INFO_MAGIC3) {
    st.transfer = TransferStatus::error;
    st.message = t_.describe() + ": INFO reply is not capgraph bridge firmware";
    return st;
  }
  BridgeInfo i;
  i.proto_major = b[BRIDGE_INFO_OFF_PROTO_MAJOR];
  i.proto_minor = b[BRIDGE_INFO_OFF_PROTO_MINOR];
  i.fw_major = b[BRIDGE_INFO_OFF_FW_MAJOR];
  i.fw_minor = b[BRIDGE_INFO_OFF_FW_MINOR];
  i.fw_patch = b[BRIDGE_INFO_OFF_FW_PATCH];
  i.usb_speed = b[BRIDGE_INFO_OFF_USB_SPEED];
  i.chip_id = uint16_t(b[BRIDGE_INFO_OFF_CHIP_ID] | b[BRIDGE_INFO_OFF_CHIP_ID + 1] << 8);
  for (int k = 0; k < 4; ++k) i.serial[k] = b[BRIDGE_INFO_OFF_SERIAL + k];
  i.serial_ok = b[BRIDGE_INFO_OFF_SERIAL_OK];
  i.pcie_link = b[BRIDGE_INFO_OFF_PCIE_LINK];
  i.last_error = b[BRIDGE_INFO_OFF_LAST_ERROR];
  i.last_request = b[BRIDGE_INFO_OFF_LAST_REQUEST];
  i.op_busy = b[BRIDGE_INFO_OFF_OP_BUSY];
  i.max_ctrl = uint16_t(b[BRIDGE_INFO_OFF_MAX_CTRL] * 8);
  i.requests = uint16_t(b[BRIDGE_INFO_OFF_REQUESTS] | b[BRIDGE_INFO_OFF_REQUESTS + 1] << 8);
  *out = i;
  return st;
}

BridgeStatus Bridge::open() {
  BridgeStatus st = read_info(&info_);
  if (!st.ok()) return st;
  if (info_.proto_major != BRIDGE_PROTOCOL_MAJOR) {
    st.transfer = TransferStatus::error;
    st.message = t_.describe() + ": bridge firmware speaks protocol " +
                 std::to_string(info_.proto_major) + ".x, this capgraph speaks " +
                 std::to_string(BRIDGE_PROTOCOL_MAJOR) + ".x; update it with `capgraph flash`";
  }
  return st;
}

BridgeStatus Bridge::reg_read(uint16_t addr, uint8_t *out, size_t n, uint8_t bank) {
  if (uint32_t(addr) + n > 0x10000) return bad_call(t_.describe(), "register read past 0xFFFF");
  size_t done = 0;
  while (done < n) {
    uint16_t chunk = uint16_t(std::min<size_t>(n - done, BRIDGE_REG_MAX));
    size_t got = 0;
    BridgeStatus st = control_in(BRIDGE_REQ_REG_READ, uint16_t(addr + done), bank, out + done,
                                 chunk, &got, "REG_READ");
    if (!st.ok()) return st;
    if (got != chunk) return bad_call(t_.describe(), "REG_READ returned a short reply");
    done += chunk;
  }
  return {};
}

BridgeStatus Bridge::reg_write(uint16_t addr, const uint8_t *data, size_t n, uint8_t bank) {
  if (uint32_t(addr) + n > 0x10000) return bad_call(t_.describe(), "register write past 0xFFFF");
  size_t done = 0;
  while (done < n) {
    uint16_t chunk = uint16_t(std::min<size_t>(n - done, BRIDGE_REG_MAX));
    BridgeStatus st = control_out(BRIDGE_REQ_REG_WRITE, uint16_t(addr + done), bank, data + done,
                                  chunk, "REG_WRITE");
    if (!st.ok()) return st;
    done += chunk;
  }
  return {};
}

BridgeStatus Bridge::tlp(uint8_t fmt_type, uint64_t addr, uint32_t data, uint8_t byte_en,
                         TlpResult *result, uint8_t flags) {
  uint8_t req[BRIDGE_TLP_SIZE] = {};
  req[BRIDGE_TLP_OFF_FMT_TYPE] = fmt_type;
  req[BRIDGE_TLP_OFF_BYTE_EN] = byte_en;
  req[BRIDGE_TLP_OFF_FLAGS] = flags;
  put_le32(req + BRIDGE_TLP_OFF_ADDR_LO, uint32_t(addr));
  put_le32(req + BRIDGE_TLP_OFF_ADDR_HI, uint32_t(addr >> 32));
  put_le32(req + BRIDGE_TLP_OFF_DATA, data);
  BridgeStatus st = control_out(BRIDGE_REQ_TLP, 0, 0, req, BRIDGE_TLP_SIZE, "TLP");
  if (!st.ok()) return st;
  uint8_t r[BRIDGE_TLP_RESULT_SIZE];
  size_t got = 0;
  st = control_in(BRIDGE_REQ_TLP_RESULT, 0, 0, r, BRIDGE_TLP_RESULT_SIZE, &got, "TLP_RESULT");
  if (!st.ok()) return st;
  if (got != BRIDGE_TLP_RESULT_SIZE)  // the rest of `r` would be whatever the stack held
    return bad_call(t_.describe(), "TLP_RESULT returned " + std::to_string(got) + " of " +
                                       std::to_string(BRIDGE_TLP_RESULT_SIZE) +
                                       " bytes: a short reply");
  TlpResult out;
  out.data = le32(r + BRIDGE_TLP_RESULT_OFF_DATA);
  out.completion = r[BRIDGE_TLP_RESULT_OFF_CPL];
  out.has_data = r[BRIDGE_TLP_RESULT_OFF_HAS_DATA];
  out.status = r[BRIDGE_TLP_RESULT_OFF_STATUS];
  if (result) *result = out;
  char buf[160];
  if (out.status == BRIDGE_TLP_STATUS_TIMEOUT) {
    std::snprintf(buf, sizeof buf,
                  "PCIe TLP %02X to 0x%llx got no completion (device hung or absent)", fmt_type,
                  (unsigned long long)addr);
    st.transfer = TransferStatus::timeout;
    st.device_error = BRIDGE_ERR_TLP_TIMEOUT;
    st.message = t_.describe() + ": " + buf;
  } else if (out.status != BRIDGE_TLP_STATUS_OK && out.status != BRIDGE_TLP_STATUS_POSTED) {
    std::snprintf(buf, sizeof buf,
                  "PCIe TLP %02X to 0x%llx failed in the bridge's TLP engine "
                  "(PCIe link down? try PCIe power on)",
                  fmt_type, (unsigned long long)addr);
    st.transfer = TransferStatus::error;
    st.device_error = BRIDGE_ERR_TLP_ENGINE;
    st.message = t_.describe() + ": " + buf;
  }
  return st;
}

static uint32_t cfg_addr(uint8_t bus, uint8_t dev, uint8_t fn, uint16_t reg) {
  return uint32_t(bus) << 24 | uint32_t(dev & 31) << 19 | uint32_t(fn & 7) << 16 | (reg & 0xFFC);
}

static BridgeStatus completion_error(const std::string &who, const char *op, uint64_t addr,
                                     uint8_t cpl) {
  char buf[160];
  const char *name = cpl == 1   ? "Unsupported Request"
                     : cpl == 2 ? "Configuration Retry"
                     : cpl == 4 ? "Completer Abort"
                                : "error";
  std::snprintf(buf, sizeof buf, "%s at 0x%llx completed with %s", op, (unsigned long long)addr,
                name);
  BridgeStatus st;
  st.transfer = TransferStatus::error;
  st.message = who + ": " + buf;
  return st;
}

BridgeStatus Bridge::config_read32(uint8_t bus, uint8_t dev, uint8_t fn, uint16_t reg,
                                   uint32_t *v) {
  TlpResult r;
  uint32_t a = cfg_addr(bus, dev, fn, reg);
  BridgeStatus st = tlp(bus ? BRIDGE_TLP_CFGRD1 : BRIDGE_TLP_CFGRD0, a, 0, 0x0F, &r);
  if (!st.ok()) return st;
  if (r.completion != BRIDGE_CPL_SC) {
    *v = 0xFFFFFFFFu;
    return completion_error(t_.describe(), "config read", a, r.completion);
  }
  *v = r.data;
  return st;
}

BridgeStatus Bridge::config_write32(uint8_t bus, uint8_t dev, uint8_t fn, uint16_t reg,
                                    uint32_t v) {
  TlpResult r;
  uint32_t a = cfg_addr(bus, dev, fn, reg);
  BridgeStatus st = tlp(bus ? BRIDGE_TLP_CFGWR1 : BRIDGE_TLP_CFGWR0, a, v, 0x0F, &r);
  if (!st.ok()) return st;
  if (r.completion != BRIDGE_CPL_SC)
    return completion_error(t_.describe(), "config write", a, r.completion);
  return st;
}

BridgeStatus Bridge::mem_read32(uint64_t addr, uint32_t *v) {
  TlpResult r;
  BridgeStatus st = tlp(addr >> 32 ? BRIDGE_TLP_MRD64 : BRIDGE_TLP_MRD32, addr, 0, 0x0F, &r);
  if (!st.ok()) return st;
  if (r.completion != BRIDGE_CPL_SC) {
    *v = 0xFFFFFFFFu;
    return completion_error(t_.describe(), "memory read", addr, r.completion);
  }
  *v = r.data;
  return st;
}

BridgeStatus Bridge::mem_write32(uint64_t addr, uint32_t v) {
  TlpResult r;
  return tlp(addr >> 32 ? BRIDGE_TLP_MWR64 : BRIDGE_TLP_MWR32, addr, v, 0x0F, &r,
             posted_writes_wait() ? 0 : BRIDGE_TLP_FLAG_POSTED);
}

// ---- streamed memory TLPs (protocol >= 1.1), posted flag (>= 1.2) ----

bool Bridge::proto_at_least(uint8_t minor) const {
  // open() not called: assume a current firmware; the STALL would say so.
  if (info_.proto_major == 0) return true;
  return info_.proto_major == 1 && info_.proto_minor >= minor;
}

bool Bridge::has_streams() const { return proto_at_least(1); }
bool Bridge::has_posted_flag() const { return proto_at_least(2); }

static const char *completion_name(uint8_t cpl) {
  return cpl == BRIDGE_CPL_UR    ? "Unsupported Request"
         : cpl == BRIDGE_CPL_CRS ? "Configuration Retry"
         : cpl == BRIDGE_CPL_CA  ? "Completer Abort"
                                 : "an error status";
}

// One request: n <= BRIDGE_STREAM_MAX_DWORDS dwords inside one 4 GiB window.
BridgeStatus Bridge::stream_chunk(bool write, uint64_t addr, uint32_t *words, uint16_t n,
                                  size_t *done) {
  *done = 0;
  const uint16_t tag = ++stream_tag_;
  uint8_t hdr[BRIDGE_STREAM_SIZE] = {};
  hdr[BRIDGE_STREAM_OFF_OP] = write ? BRIDGE_STREAM_WRITE : BRIDGE_STREAM_READ;
  hdr[BRIDGE_STREAM_OFF_FLAGS] = write && !posted_writes_wait() ? BRIDGE_STREAM_FLAG_POSTED : 0;
  hdr[BRIDGE_STREAM_OFF_COUNT] = uint8_t(n);
  hdr[BRIDGE_STREAM_OFF_COUNT + 1] = uint8_t(n >> 8);
  put_le32(hdr + BRIDGE_STREAM_OFF_ADDR_LO, uint32_t(addr));
  put_le32(hdr + BRIDGE_STREAM_OFF_ADDR_HI, uint32_t(addr >> 32));
  hdr[BRIDGE_STREAM_OFF_TAG] = uint8_t(tag);
  hdr[BRIDGE_STREAM_OFF_TAG + 1] = uint8_t(tag >> 8);
  const char *what = write ? "memory write stream" : "memory read stream";
  BridgeStatus st = control_out(BRIDGE_REQ_MEM_STREAM, 0, 0, hdr, sizeof hdr, what);
  if (!st.ok()) return st;
  const size_t data_bytes = size_t(n) * 4;
  std::vector<uint8_t> buf(data_bytes + BRIDGE_STREAM_RESULT_SIZE);
  size_t got = 0;
  TransferStatus s;
  if (write) {
    for (size_t i = 0; i < n; ++i) put_le32(buf.data() + 4 * i, words[i]);
    s = transfer_bulk(BRIDGE_EP_BULK_OUT, buf.data(), data_bytes, &got, timeout_ms_);
    if (s != TransferStatus::ok) return fail(s, "memory write stream data");
    if (got != data_bytes)  // a bulk OUT the host counted short: the result read next is no proof
      return bad_call(t_.describe(), "memory write stream data moved " + std::to_string(got) +
                                         " of " + std::to_string(data_bytes) +
                                         " bytes: a short transfer");
    s = transfer_bulk(BRIDGE_EP_BULK_IN, buf.data() + data_bytes, BRIDGE_STREAM_RESULT_SIZE, &got,
                      timeout_ms_);
    got += data_bytes;
  } else {
    s = transfer_bulk(BRIDGE_EP_BULK_IN, buf.data(), buf.size(), &got, timeout_ms_);
  }
  if (s != TransferStatus::ok)
    return fail(s, write ? "memory write stream result" : "memory read stream data");
  const uint8_t *r = buf.data() + data_bytes;
  const uint16_t r_tag =
      uint16_t(r[BRIDGE_STREAM_RESULT_OFF_TAG] | r[BRIDGE_STREAM_RESULT_OFF_TAG + 1] << 8);
  const size_t r_done =
      size_t(r[BRIDGE_STREAM_RESULT_OFF_DONE] | r[BRIDGE_STREAM_RESULT_OFF_DONE + 1] << 8);
  if (got != buf.size() || r[BRIDGE_STREAM_RESULT_OFF_MAGIC] != BRIDGE_STREAM_RESULT_MAGIC ||
      r_tag != tag || r[BRIDGE_STREAM_RESULT_OFF_OP] != hdr[BRIDGE_STREAM_OFF_OP] || r_done > n)
    return bad_call(t_.describe(), std::string(what) +
                                       ": the bridge's reply is not the result of this "
                                       "request (" +
                                       std::to_string(got) + " bytes); nothing it says is trusted");
  *done = r_done;
  if (!write)
    for (size_t i = 0; i < n; ++i) words[i] = i < r_done ? le32(buf.data() + 4 * i) : 0xFFFFFFFFu;
  const uint8_t err = r[BRIDGE_STREAM_RESULT_OFF_ERR];
  if (err == BRIDGE_ERR_NONE && r_done == n) return st;
  char msg[256];
  const uint64_t at = addr + 4 * r_done;
  std::string why =
      err == BRIDGE_ERR_TLP_COMPLETION
          ? std::string("completed with ") + completion_name(r[BRIDGE_STREAM_RESULT_OFF_CPL])
          : bridge_error_name(err);
  std::snprintf(msg, sizeof msg, "%s: dword %zu at 0x%llx failed (%s); ", what, r_done,
                (unsigned long long)at, why.c_str());
  st.transfer = err == BRIDGE_ERR_TLP_TIMEOUT ? TransferStatus::timeout : TransferStatus::error;
  st.device_error = err;
  st.message =
      t_.describe() + ": " + msg +
      (r_done ? "the " + std::to_string(r_done) + " before it were " + (write ? "written" : "read")
              : std::string("none were ") + (write ? "written" : "read")) +
      (write ? ", none after it" : ", the rest read as 0xFFFFFFFF");
  return st;
}

// Splits [addr, addr + 4n) into requests: at most BRIDGE_STREAM_MAX_DWORDS
// dwords, never across a 4 GiB boundary (the firmware refuses those).
static uint16_t stream_piece(uint64_t addr, size_t left) {
  uint64_t to_boundary = ((addr | 0xFFFFFFFFull) + 1 - addr) / 4;
  return uint16_t(std::min<uint64_t>({left, BRIDGE_STREAM_MAX_DWORDS, to_boundary}));
}

BridgeStatus Bridge::mem_read_block(uint64_t addr, uint32_t *out, size_t n, size_t *done) {
  size_t ok = 0;
  if (done) *done = 0;
  if (addr % 4) return bad_call(t_.describe(), "memory read: address not dword aligned");
  if (!has_streams()) {
    for (; ok < n; ++ok) {
      BridgeStatus st = mem_read32(addr + 4 * ok, &out[ok]);
      if (!st.ok()) {
        std::fill(out + ok, out + n, 0xFFFFFFFFu);
        if (done) *done = ok;
        return st;
      }
    }
    if (done) *done = n;
    return {};
  }
  while (ok < n) {
    uint16_t piece = stream_piece(addr + 4 * ok, n - ok);
    size_t got = 0;
    BridgeStatus st = stream_chunk(false, addr + 4 * ok, out + ok, piece, &got);
    ok += got;
    if (done) *done = ok;
    if (!st.ok()) {
      std::fill(out + ok, out + n, 0xFFFFFFFFu);
      return st;
    }
  }
  return {};
}

BridgeStatus Bridge::mem_write_block(uint64_t addr, const uint32_t *data, size_t n, size_t *done) {
  size_t ok = 0;
  if (done) *done = 0;
  if (addr % 4) return bad_call(t_.describe(), "memory write: address not dword aligned");
  if (!has_streams()) {
    for (; ok < n; ++ok) {
      BridgeStatus st = mem_write32(addr + 4 * ok, data[ok]);
      if (done) *done = ok;
      if (!st.ok()) return st;
    }
    if (done) *done = n;
    return {};
  }
  std::vector<uint32_t> piece_words;
  while (ok < n) {
    uint16_t piece = stream_piece(addr + 4 * ok, n - ok);
    piece_words.assign(data + ok, data + ok + piece);
    size_t got = 0;
    BridgeStatus st = stream_chunk(true, addr + 4 * ok, piece_words.data(), piece, &got);
    ok += got;
    if (done) *done = ok;
    if (!st.ok()) return st;
  }
  return {};
}

BridgeStatus Bridge::pcie_power(bool on) {
  // Link training polls up to ~200 ms in the firmware.
  BridgeStatus st =
      control_out(BRIDGE_REQ_PCIE_POWER, on ? 1 : 0, 0, nullptr, 0, "PCIE_POWER", 2000);
  if (!st.ok()) return st;
  BridgeInfo i;
  st = read_info(&i);
  if (!st.ok()) return st;
  if (on && !i.pcie_link) {
    st.transfer = TransferStatus::error;
    st.device_error = BRIDGE_ERR_LINK_DOWN;
    st.message = t_.describe() + ": PCIe link did not come up (is a device attached and powered?)";
  }
  return st;
}

BridgeStatus Bridge::sram_dma_arm(uint32_t offset, size_t n, bool to_sram) {
  const char *what = to_sram ? "SRAM write" : "SRAM read";
  if (offset % BRIDGE_SLOT_SIZE || n == 0 || n % BRIDGE_SECTOR_SIZE ||
      offset + n > BRIDGE_SRAM_SIZE)
    return bad_call(t_.describe(),
                    std::string(what) +
                        ": offset must be a multiple of 16 KiB, size a non-zero multiple of 512, "
                        "and both inside the 512 KiB SRAM");
  uint16_t sectors = uint16_t(n / BRIDGE_SECTOR_SIZE);
  uint8_t first = uint8_t(offset / BRIDGE_SLOT_SIZE);
  uint8_t slots = uint8_t((n + BRIDGE_SLOT_SIZE - 1) / BRIDGE_SLOT_SIZE);
  uint16_t value = uint16_t(sectors | (to_sram ? 0 : BRIDGE_DMA_DIR_IN));
  return control_out(BRIDGE_REQ_DMA, value, uint16_t(first | slots << 8), nullptr, 0, "DMA");
}

// ~100 MB/s worst case plus a second of slack.
static unsigned sram_timeout_ms(size_t n) { return unsigned(1000 + n / 100000); }

BridgeStatus Bridge::sram_write(uint32_t offset, const uint8_t *data, size_t n) {
  BridgeStatus st = sram_dma_arm(offset, n, true);
  if (!st.ok()) return st;
  sram_read_armed_ = 0;  // a new DMA replaces an armed read
  // The transport's bulk() takes a mutable buffer for both directions; an OUT transfer only reads
  // it, and a copy here would allocate on every replay's input upload.
  size_t got = 0;
  counters_.sram_out_bytes += n;
  TransferStatus s =
      transfer_bulk(BRIDGE_EP_BULK_OUT, const_cast<uint8_t *>(data), n, &got, sram_timeout_ms(n));
  // A transfer that timed out having moved nothing leaves the DMA engine armed, and it would take
  // the next request's bulk OUT (a memory stream's data) as this write's: sent once more, the
  // armed write completes (found by the fault sweep, tests/faults: a lost SRAM write made the
  // teardown's register writes time out).
  if (s == TransferStatus::timeout && got == 0)
    s = transfer_bulk(BRIDGE_EP_BULK_OUT, const_cast<uint8_t *>(data), n, &got, sram_timeout_ms(n));
  if (s != TransferStatus::ok) return fail(s, "SRAM write");
  if (got != n)
    return bad_call(t_.describe(), "SRAM write moved " + std::to_string(got) + " of " +
                                       std::to_string(n) + " bytes");
  return st;
}

BridgeStatus Bridge::sram_read_arm(uint32_t offset, size_t n) {
  sram_read_armed_ = 0;
  BridgeStatus st = sram_dma_arm(offset, n, false);
  if (st.ok()) sram_read_armed_ = n;
  return st;
}

// How long a collect that timed out waits again for data lost on the cable: the bridge has sent
// it already then, so it is at the endpoint.
constexpr unsigned kSramRecollectMs = 200;

BridgeStatus Bridge::sram_read_collect(uint8_t *out, size_t n, unsigned timeout_ms) {
  if (sram_read_armed_ == 0)
    return bad_call(t_.describe(), "SRAM read: nothing armed (call sram_read_arm first)");
  if (n != sram_read_armed_)
    return bad_call(t_.describe(), "SRAM read: collecting " + std::to_string(n) + " bytes but " +
                                       std::to_string(sram_read_armed_) + " were armed");
  sram_read_armed_ = 0;
  size_t got = 0;
  counters_.sram_in_bytes += n;
  TransferStatus s =
      transfer_bulk(BRIDGE_EP_BULK_IN, out, n, &got, timeout_ms ? timeout_ms : sram_timeout_ms(n));
  // A read that timed out having moved nothing may have lost its data on the cable while the
  // bridge sent it (the GPU wrote the trigger): left there, it would be the next bulk IN's (a
  // memory stream's result). Collected once more, as sram_write resends, the data already queued
  // at the endpoint comes now (found by the fault sweep's `fake-usb:fail=N` on that transfer).
  if (s == TransferStatus::timeout && got == 0)
    s = transfer_bulk(BRIDGE_EP_BULK_IN, out, n, &got, kSramRecollectMs);
  if (s == TransferStatus::timeout) {
    char buf[200];
    std::snprintf(buf, sizeof buf,
                  ": SRAM read of %zu bytes got no data: the bridge sends only after "
                  "a PCIe write to its CQ window (0x%lx); did the GPU write the trigger?",
                  n, (unsigned long)BRIDGE_CQ_TRIGGER_BUS_ADDR);
    BridgeStatus st;
    st.transfer = s;
    st.message = t_.describe() + buf;
    return st;
  }
  if (s != TransferStatus::ok) return fail(s, "SRAM read");
  if (got != n)
    return bad_call(t_.describe(), "SRAM read moved " + std::to_string(got) + " of " +
                                       std::to_string(n) + " bytes");
  return {};
}

bool Bridge::has_watch() const { return proto_at_least(3); }

BridgeStatus Bridge::watch(uint64_t signal_addr, uint64_t target, uint64_t fault_addr,
                           unsigned timeout_ms, WatchResult *out) {
  if (!has_watch())
    return bad_call(t_.describe(),
                    "WATCH: the firmware speaks protocol " + std::to_string(info_.proto_major) +
                        "." + std::to_string(info_.proto_minor) + "; the signal watch needs 1.3");
  uint8_t req[BRIDGE_WATCH_SIZE];
  for (int i = 0; i < 8; ++i) {
    req[BRIDGE_WATCH_OFF_SIGNAL + i] = uint8_t(signal_addr >> (8 * i));
    req[BRIDGE_WATCH_OFF_TARGET + i] = uint8_t(target >> (8 * i));
    req[BRIDGE_WATCH_OFF_FAULT + i] = uint8_t(fault_addr >> (8 * i));
  }
  BridgeStatus st = control_out(BRIDGE_REQ_WATCH, 1, 0, req, BRIDGE_WATCH_SIZE, "WATCH");
  if (!st.ok()) return st;
  uint8_t r[BRIDGE_WATCH_RESULT_SIZE] = {};
  size_t got = 0;
  ++counters_.bulk_in;
  counters_.bulk_in_bytes += sizeof r;
  const TransferStatus s = t_.in_await(BRIDGE_EP_BULK_IN, r, sizeof r, &got, timeout_ms);
  if (s == TransferStatus::timeout) {
    // Stop it, so a late answer does not land in the next stream's bulk IN.
    const BridgeStatus stop = control_out(BRIDGE_REQ_WATCH, 0, 0, nullptr, 0, "WATCH stop");
    st.transfer = s;
    st.message =
        t_.describe() + ": WATCH: the signal did not reach the target in " +
        std::to_string(timeout_ms) + " ms" +
        (stop.ok() ? std::string() : " (and stopping the watch failed: " + stop.message + ")");
    return st;
  }
  if (s != TransferStatus::ok) return fail(s, "WATCH result");
  if (got != sizeof r || r[BRIDGE_WATCH_RESULT_OFF_MAGIC] != BRIDGE_WATCH_RESULT_MAGIC)
    return bad_call(t_.describe(), "WATCH: a result of " + std::to_string(got) +
                                       " bytes without its magic (another stream's data?)");
  out->value = 0;
  for (int i = 7; i >= 0; --i) out->value = out->value << 8 | r[BRIDGE_WATCH_RESULT_OFF_VALUE + i];
  out->fault = uint32_t(r[BRIDGE_WATCH_RESULT_OFF_FAULT]) |
               uint32_t(r[BRIDGE_WATCH_RESULT_OFF_FAULT + 1]) << 8 |
               uint32_t(r[BRIDGE_WATCH_RESULT_OFF_FAULT + 2]) << 16 |
               uint32_t(r[BRIDGE_WATCH_RESULT_OFF_FAULT + 3]) << 24;
  out->status = r[BRIDGE_WATCH_RESULT_OFF_STATUS];
  out->polls = r[BRIDGE_WATCH_RESULT_OFF_POLLS];
  if (out->status == BRIDGE_WATCH_READ_FAILED) {
    st.device_error = r[BRIDGE_WATCH_RESULT_OFF_ERR];
    st.message = t_.describe() + ": WATCH: the bridge could not read the signal (" +
                 bridge_error_name(st.device_error) + ")";
  }
  return st;
}

BridgeStatus Bridge::spi_read(uint32_t addr, uint8_t *out, size_t n) {
  size_t done = 0;
  while (done < n) {
    uint16_t chunk = uint16_t(std::min<size_t>(n - done, BRIDGE_SPI_READ_MAX));
    uint32_t a = addr + uint32_t(done);
    size_t got = 0;
    BridgeStatus st = control_in(BRIDGE_REQ_SPI_READ, uint16_t(a), uint16_t(a >> 16), out + done,
                                 chunk, &got, "SPI_READ");
    if (!st.ok()) return st;
    if (got != chunk) return bad_call(t_.describe(), "SPI_READ returned a short reply");
    done += chunk;
  }
  return {};
}

BridgeStatus Bridge::spi_erase_sector(uint32_t addr) {
  if (addr % BRIDGE_SPI_SECTOR)
    return bad_call(t_.describe(), "SPI erase address not 4 KiB aligned");
  return control_out(BRIDGE_REQ_SPI_ERASE, uint16_t(addr / BRIDGE_SPI_SECTOR), 0, nullptr, 0,
                     "SPI_ERASE", 2000);
}

BridgeStatus Bridge::spi_program_page(uint32_t addr, const uint8_t *data, size_t n) {
  BridgeStatus st = control_out(BRIDGE_REQ_SPI_PROGRAM, uint16_t(addr / BRIDGE_SPI_PAGE),
                                uint16_t(n), nullptr, 0, "SPI_PROGRAM");
  if (!st.ok()) return st;
  std::vector<uint8_t> copy(data, data + n);
  size_t got = 0;
  TransferStatus s = transfer_bulk(BRIDGE_EP_BULK_OUT, copy.data(), n, &got, timeout_ms_);
  if (s != TransferStatus::ok) return fail(s, "SPI_PROGRAM data");
  // Bounded poll: the page program takes well under 10 ms.
  for (int i = 0; i < 50; ++i) {
    BridgeInfo info;
    st = read_info(&info);
    if (!st.ok()) return st;
    if (!info.op_busy) {
      if (info.last_request == BRIDGE_REQ_SPI_PROGRAM && info.last_error != BRIDGE_ERR_NONE) {
        st.transfer = TransferStatus::error;
        st.device_error = info.last_error;
        char buf[96];
        std::snprintf(buf, sizeof buf, "SPI program at 0x%06x failed: ", addr);
        st.message = t_.describe() + ": " + buf + bridge_error_name(info.last_error);
      }
      return st;
    }
  }
  return bad_call(t_.describe(), "SPI program did not finish (bridge still busy)");
}

BridgeStatus Bridge::spi_program(uint32_t addr, const uint8_t *data, size_t n) {
  size_t done = 0;
  while (done < n) {
    uint32_t a = addr + uint32_t(done);
    size_t chunk = std::min<size_t>(n - done, BRIDGE_SPI_PAGE - (a % BRIDGE_SPI_PAGE));
    if (a % BRIDGE_SPI_PAGE) {
      // The request addresses whole pages; a partial start is not supported.
      return bad_call(t_.describe(), "SPI program address must be 256-byte aligned");
    }
    BridgeStatus st = spi_program_page(a, data + done, chunk);
    if (!st.ok()) return st;
    done += chunk;
  }
  return {};
}

}  // namespace capgraph::usb
