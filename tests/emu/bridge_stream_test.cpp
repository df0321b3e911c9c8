// End to end: streamed memory TLPs (BRIDGE_REQ_MEM_STREAM) through the real
// firmware image into the simulated endpoint's BAR memory, their faults, and
// what they cost on the wire against one TLP per dword.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>

#include "bridge_rig.h"

using namespace capgraph;
using namespace capgraph::emu_test;
using TS = usb::TransferStatus;

namespace {

constexpr uint64_t kBar0 = 0x800000000ull;  // 256 MiB, 64-bit: 4DW TLPs
constexpr uint64_t kBar5 = 0xD0000000u;     // 512 KiB, 32-bit: 3DW TLPs
constexpr uint64_t kBar5Size = 512u << 10;

// Boots, powers PCIe, programs the switch chain, and places the GPU's BAR0
// above 4 GiB and BAR5 below (inside the bridges' windows), memory on.
void bring_up(Rig &r) {
  REQUIRE(r.boot());
  const uint8_t gpu = pcie_bring_up(r).endpoint_bus;
  REQUIRE(r.bridge.config_write32(gpu, 0, 0, 0x10, uint32_t(kBar0) | 0xC).ok());
  REQUIRE(r.bridge.config_write32(gpu, 0, 0, 0x14, uint32_t(kBar0 >> 32)).ok());
  REQUIRE(r.bridge.config_write32(gpu, 0, 0, 0x24, uint32_t(kBar5)).ok());
  REQUIRE(r.bridge.config_write32(gpu, 0, 0, 0x04, 0x6).ok());
}

std::vector<uint32_t> random_words(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint32_t> v(n);
  for (auto &w : v) w = rng();
  return v;
}

uint32_t endpoint_word(Rig &r, uint64_t addr) {
  bool claimed = false;
  uint32_t v = r.dev.endpoint.mem_read32(addr, &claimed);
  REQUIRE(claimed);
  return v;
}

std::vector<uint8_t> stream_header(uint8_t op, uint16_t count, uint64_t addr, uint16_t tag = 7) {
  std::vector<uint8_t> h(BRIDGE_STREAM_SIZE, 0);
  h[BRIDGE_STREAM_OFF_OP] = op;
  h[BRIDGE_STREAM_OFF_COUNT] = uint8_t(count);
  h[BRIDGE_STREAM_OFF_COUNT + 1] = uint8_t(count >> 8);
  for (int i = 0; i < 4; ++i) {
    h[BRIDGE_STREAM_OFF_ADDR_LO + i] = uint8_t(addr >> (8 * i));
    h[BRIDGE_STREAM_OFF_ADDR_HI + i] = uint8_t(addr >> (32 + 8 * i));
  }
  h[BRIDGE_STREAM_OFF_TAG] = uint8_t(tag);
  h[BRIDGE_STREAM_OFF_TAG + 1] = uint8_t(tag >> 8);
  return h;
}

}  // namespace

TEST_CASE("streamed TLPs: blocks land bit-exact in BAR memory, 32- and 64-bit, many requests") {
  if (!have_image()) return;
  Rig r;
  bring_up(r);
  REQUIRE(r.bridge.info().proto_minor >= 1);
  // 3000 dwords: three requests (1022 + 1022 + 956), starting mid-page.
  for (uint64_t base : {kBar0 + 0x1004, kBar5 + 0x2000}) {
    CAPTURE(base);
    auto src = random_words(3000, uint32_t(base));
    size_t done = 0;
    auto st = r.bridge.mem_write_block(base, src.data(), src.size(), &done);
    REQUIRE_MESSAGE(st.ok(), st.message);
    CHECK(done == src.size());
    for (size_t i = 0; i < src.size(); ++i)
      if (endpoint_word(r, base + 4 * i) != src[i]) FAIL("dword " << i << " differs in BAR memory");
    std::vector<uint32_t> back(src.size(), 0);
    st = r.bridge.mem_read_block(base, back.data(), back.size(), &done);
    REQUIRE_MESSAGE(st.ok(), st.message);
    CHECK(done == src.size());
    CHECK(back == src);
    uint32_t one = 0;  // the single-TLP path agrees
    REQUIRE(r.bridge.mem_read32(base + 4 * 2999, &one).ok());
    CHECK(one == src[2999]);
  }
  // A 1-dword stream and the largest single request.
  uint32_t w = 0xA5A55A5A, got = 0;
  REQUIRE(r.bridge.mem_write_block(kBar5, &w, 1).ok());
  REQUIRE(r.bridge.mem_read_block(kBar5, &got, 1).ok());
  CHECK(got == w);
  auto big = random_words(BRIDGE_STREAM_MAX_DWORDS, 99);
  std::vector<uint32_t> back(big.size());
  REQUIRE(r.bridge.mem_write_block(kBar0, big.data(), big.size()).ok());
  REQUIRE(r.bridge.mem_read_block(kBar0, back.data(), back.size()).ok());
  CHECK(back == big);
  CHECK(r.dev.protocol_violations == 0);
}

TEST_CASE(
    "streamed TLPs: a read that runs off the BAR names the failing dword; the rest is 0xFFFFFFFF") {
  if (!have_image()) return;
  Rig r;
  bring_up(r);
  auto src = random_words(10, 5);
  const uint64_t start = kBar5 + kBar5Size - 40;  // 10 dwords inside, then unclaimed
  REQUIRE(r.bridge.mem_write_block(start, src.data(), src.size()).ok());
  std::vector<uint32_t> out(20, 0x12345678u);
  size_t done = 99;
  auto st = r.bridge.mem_read_block(start, out.data(), out.size(), &done);
  CHECK_FALSE(st.ok());
  MESSAGE(st.message);
  CHECK(done == 10);
  CHECK(st.device_error == BRIDGE_ERR_TLP_COMPLETION);
  CHECK(st.message.find("dword 10 at 0xd0080000") != std::string::npos);
  CHECK(st.message.find("Unsupported Request") != std::string::npos);
  for (size_t i = 0; i < 10; ++i) CHECK(out[i] == src[i]);
  for (size_t i = 10; i < 20; ++i) CHECK(out[i] == 0xFFFFFFFFu);
  usb::BridgeInfo info;  // INFO names the request and the error too
  REQUIRE(r.bridge.read_info(&info).ok());
  CHECK(info.last_request == BRIDGE_REQ_MEM_STREAM);
  CHECK(info.last_error == BRIDGE_ERR_TLP_COMPLETION);
}

TEST_CASE(
    "streamed TLPs: the device hangs mid-write; the dwords after it are untouched; recovery") {
  if (!have_image()) return;
  // Only a firmware that waits for each write's COMPLETE can see a hang mid
  // write, and only on an engine that flags posted writes (research R1).
  Asm2464::Options o;
  o.posted_write_completes = true;
  Rig r(o);
  bring_up(r);
  r.bridge.set_posted_writes_wait(true);
  const size_t n = 100;
  std::vector<uint32_t> before(n, 0xEEEEEEEEu);
  REQUIRE(r.bridge.mem_write_block(kBar0, before.data(), n).ok());
  auto src = random_words(n, 11);
  r.dev.endpoint.hang_from_request = r.dev.endpoint.requests + 38;  // dword 37 is lost
  size_t done = 0;
  auto st = r.bridge.mem_write_block(kBar0, src.data(), n, &done);
  CHECK_FALSE(st.ok());
  MESSAGE(st.message);
  CHECK(st.transfer == TS::timeout);
  CHECK(done == 37);
  CHECK(st.message.find("dword 37 at 0x800000094") != std::string::npos);
  CHECK(st.message.find("no completion") != std::string::npos);
  for (size_t i = 0; i < n; ++i)
    CHECK(endpoint_word(r, kBar0 + 4 * i) == (i < 37 ? src[i] : before[i]));
  // The engine is idle again: the next stream works.
  r.dev.endpoint.hang_from_request = UINT64_MAX;
  std::vector<uint32_t> back(n);
  REQUIRE(r.bridge.mem_read_block(kBar0, back.data(), n, &done).ok());
  CHECK(back[36] == src[36]);
  CHECK(back[37] == before[37]);
  // With the link down every stream fails at dword 0 in the engine.
  REQUIRE(r.bridge.pcie_power(false).ok());
  st = r.bridge.mem_read_block(kBar0, back.data(), 4, &done);
  CHECK_FALSE(st.ok());
  CHECK(done == 0);
  CHECK(st.device_error == BRIDGE_ERR_TLP_ENGINE);
  CHECK(r.dev.protocol_violations == 0);
}

TEST_CASE(
    "streamed TLPs: malformed headers STALL and run nothing; wrong bulk length writes nothing") {
  if (!have_image()) return;
  Rig r;
  bring_up(r);
  struct Case {
    std::vector<uint8_t> hdr;
    uint16_t wlength;
    uint8_t err;
    const char *what;
  };
  auto h = [](uint8_t op, uint16_t count, uint64_t addr) { return stream_header(op, count, addr); };
  std::vector<Case> cases = {
      {h(BRIDGE_STREAM_READ, 4, kBar5), 15, BRIDGE_ERR_BAD_LENGTH, "header 15 bytes"},
      {h(BRIDGE_STREAM_READ, 4, kBar5), 17, BRIDGE_ERR_BAD_LENGTH, "header 17 bytes"},
      {h(BRIDGE_STREAM_READ, 0, kBar5), 16, BRIDGE_ERR_BAD_LENGTH, "0 dwords"},
      {h(BRIDGE_STREAM_WRITE, BRIDGE_STREAM_MAX_DWORDS + 1, kBar5), 16, BRIDGE_ERR_BAD_LENGTH,
       "1023 dwords"},
      {h(BRIDGE_STREAM_READ, 0xFFFF, kBar5), 16, BRIDGE_ERR_BAD_LENGTH, "65535 dwords"},
      {h(3, 4, kBar5), 16, BRIDGE_ERR_BAD_ARGUMENT, "unknown op"},
      {h(BRIDGE_STREAM_READ, 4, kBar5 + 2), 16, BRIDGE_ERR_BAD_ARGUMENT, "not dword aligned"},
      {h(BRIDGE_STREAM_READ, 5, 0x1FFFFFFF0ull), 16, BRIDGE_ERR_BAD_ARGUMENT, "crosses 4 GiB"},
  };
  auto flags = h(BRIDGE_STREAM_READ, 4, kBar5);
  flags[BRIDGE_STREAM_OFF_FLAGS] = 1;
  cases.push_back({flags, 16, BRIDGE_ERR_BAD_ARGUMENT, "POSTED on a read"});
  auto flags2 = h(BRIDGE_STREAM_WRITE, 4, kBar5);
  flags2[BRIDGE_STREAM_OFF_FLAGS] = 2;
  cases.push_back({flags2, 16, BRIDGE_ERR_BAD_ARGUMENT, "unknown flag on a write"});
  auto rsvd = h(BRIDGE_STREAM_READ, 4, kBar5);
  rsvd[BRIDGE_STREAM_OFF_RSVD + 1] = 0x80;
  cases.push_back({rsvd, 16, BRIDGE_ERR_BAD_ARGUMENT, "reserved byte set"});
  const uint32_t requests = r.dev.endpoint.requests;
  for (auto &c : cases) {
    CAPTURE(c.what);
    c.hdr.resize(c.wlength, 0);
    CHECK(r.raw(BRIDGE_RT_VENDOR_OUT, BRIDGE_REQ_MEM_STREAM, 0, 0, c.wlength, c.hdr.data()) ==
          TS::stall);
    CHECK(r.last_error() == c.err);
  }
  CHECK(r.raw(BRIDGE_RT_VENDOR_IN, BRIDGE_REQ_MEM_STREAM, 0, 0, 16) == TS::stall);
  CHECK(r.last_error() == BRIDGE_ERR_UNKNOWN_REQUEST);
  CHECK(r.dev.endpoint.requests == requests);  // no TLP ran
  std::vector<uint8_t> in(4096);
  size_t got = 0;
  CHECK(r.t.bulk(BRIDGE_EP_BULK_IN, in.data(), in.size(), &got, 5) ==
        TS::timeout);  // nothing armed

  // A write whose bulk OUT is shorter than the header said: nothing written.
  std::vector<uint32_t> before(8, 0x11111111u);
  REQUIRE(r.bridge.mem_write_block(kBar5, before.data(), 8).ok());
  auto hdr = stream_header(BRIDGE_STREAM_WRITE, 8, kBar5, 0x4242);
  REQUIRE(r.raw(BRIDGE_RT_VENDOR_OUT, BRIDGE_REQ_MEM_STREAM, 0, 0, 16, hdr.data()) == TS::ok);
  std::vector<uint8_t> data(16, 0x99);
  REQUIRE(r.t.bulk(BRIDGE_EP_BULK_OUT, data.data(), data.size(), &got, 200) == TS::ok);
  uint8_t res[BRIDGE_STREAM_RESULT_SIZE] = {};
  REQUIRE(r.t.bulk(BRIDGE_EP_BULK_IN, res, sizeof res, &got, 200) == TS::ok);
  REQUIRE(got == sizeof res);
  CHECK(res[BRIDGE_STREAM_RESULT_OFF_MAGIC] == BRIDGE_STREAM_RESULT_MAGIC);
  CHECK((res[BRIDGE_STREAM_RESULT_OFF_TAG] | res[BRIDGE_STREAM_RESULT_OFF_TAG + 1] << 8) == 0x4242);
  CHECK(res[BRIDGE_STREAM_RESULT_OFF_ERR] == BRIDGE_ERR_BULK_LENGTH);
  CHECK(res[BRIDGE_STREAM_RESULT_OFF_DONE] == 0);
  for (size_t i = 0; i < 8; ++i) CHECK(endpoint_word(r, kBar5 + 4 * i) == 0x11111111u);

  // A write abandoned by CLEAR_FEATURE(halt) before its data: the data that
  // follows is not taken and nothing is written.
  REQUIRE(r.raw(BRIDGE_RT_VENDOR_OUT, BRIDGE_REQ_MEM_STREAM, 0, 0, 16, hdr.data()) == TS::ok);
  REQUIRE(r.raw(0x02, 1, 0, BRIDGE_EP_BULK_OUT, 0) == TS::ok);
  data.assign(32, 0x77);
  CHECK(r.t.bulk(BRIDGE_EP_BULK_OUT, data.data(), data.size(), &got, 20) == TS::timeout);
  for (size_t i = 0; i < 8; ++i) CHECK(endpoint_word(r, kBar5 + 4 * i) == 0x11111111u);
  // And the bridge still streams.
  std::vector<uint32_t> back(8);
  REQUIRE(r.bridge.mem_read_block(kBar5, back.data(), 8).ok());
  CHECK(back == before);
  CHECK(r.dev.protocol_violations == 0);
}

TEST_CASE("protocol cost of MMIO: one TLP per dword against streamed TLPs, per MiB each way") {
  if (!have_image()) return;
  Rig r;
  bring_up(r);
  struct Cost {
    double transfers, transactions, bytes;
  };
  auto wire = [&](const emu::WireStats &s, double mib) {
    return Cost{double(s.control_transfers + s.bulk_out_transfers + s.bulk_in_transfers) / mib,
                double(s.control_transactions + s.bulk_out_packets + s.bulk_in_packets) / mib,
                double(s.control_bytes + s.bulk_out_bytes + s.bulk_in_bytes) / mib};
  };
  auto report = [](const char *what, const Cost &c) {
    char line[200];
    std::snprintf(line, sizeof line,
                  "%-26s %9.0f transfers %10.0f transactions %11.0f bytes per MiB", what,
                  c.transfers, c.transactions, c.bytes);
    MESSAGE(line);
  };
  // Streams: a full MiB each way. Single TLPs: 16 KiB each way, scaled to a
  // MiB (every dword costs the same two control transfers).
  const size_t mib_words = (1u << 20) / 4, single_words = 4096;
  auto src = random_words(mib_words, 3);
  std::vector<uint32_t> back(mib_words);
  r.dev.stats = {};
  REQUIRE(r.bridge.mem_write_block(kBar0, src.data(), mib_words).ok());
  Cost stream_out = wire(r.dev.stats, 1.0);
  r.dev.stats = {};
  REQUIRE(r.bridge.mem_read_block(kBar0, back.data(), mib_words).ok());
  Cost stream_in = wire(r.dev.stats, 1.0);
  CHECK(back == src);
  const double scale = double(single_words * 4) / double(1u << 20);
  r.dev.stats = {};
  for (size_t i = 0; i < single_words; ++i)
    REQUIRE(r.bridge.mem_write32(kBar5 + 4 * i, src[i]).ok());
  Cost single_out = wire(r.dev.stats, scale);
  r.dev.stats = {};
  for (size_t i = 0; i < single_words; ++i)
    REQUIRE(r.bridge.mem_read32(kBar5 + 4 * i, &back[i]).ok());
  Cost single_in = wire(r.dev.stats, scale);
  CHECK(std::equal(back.begin(), back.begin() + single_words, src.begin()));
  report("MMIO write, single TLPs:", single_out);
  report("MMIO write, streamed:", stream_out);
  report("MMIO read, single TLPs:", single_in);
  report("MMIO read, streamed:", stream_in);
  // What the numbers must be, from the protocol (USB 3: 512-byte EP0,
  // 1024-byte bulk packets): a single TLP is a 16-byte OUT and an 8-byte IN
  // control transfer; a stream of 1022 dwords is one 16-byte OUT control
  // transfer plus bulk data and an 8-byte result.
  CHECK(single_out.transfers == doctest::Approx(2.0 * mib_words));
  CHECK(single_in.transfers == doctest::Approx(2.0 * mib_words));
  const double streams = std::ceil(double(mib_words) / BRIDGE_STREAM_MAX_DWORDS);
  CHECK(stream_out.transfers == doctest::Approx(3 * streams));  // control + bulk OUT + bulk IN
  CHECK(stream_in.transfers == doctest::Approx(2 * streams));   // control + bulk IN
  CHECK(stream_out.bytes == doctest::Approx((1u << 20) + streams * (8 + 16 + 8)));
  CHECK(stream_in.bytes == doctest::Approx((1u << 20) + streams * (8 + 16 + 8)));
  CHECK(single_in.transactions / stream_in.transactions > 100);
  CHECK(r.dev.protocol_violations == 0);
}
