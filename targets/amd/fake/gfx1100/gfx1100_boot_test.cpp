// The AM boot (drivers/am/am_device) against the register-model gfx1100,
// directly (no bridge; targets/amd/fake/gfx1100/gfx1100_bridge_test runs the same
// boot through the emulated bridge and our firmware). Checks: a cold boot
// breaks none of the model's rules and leaves every engine up; its trace
// equals the checked-in golden one; teardown and a partial boot; page
// tables the GPU really walks; and the faults (PSP silent, firmware missing
// or cut, the device gone mid-boot), each a clear error and a clean next boot.
#include <doctest/doctest.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "am_device.h"
#include "am_firmware_synthetic.h"
#include "am_ih.h"
#include "am_protocol.h"
#include "amd_hcq.h"
#include "gfx1100_direct.h"
#include "gfx1100_firmware_dir.h"
#include "gfx1100_model.h"

using namespace capgraph;
using namespace capgraph::am;
using capgraph::emu::gfx1100_direct;
using capgraph::emu::gfx1100_model;
namespace fs = std::filesystem;

namespace {

device_options opts(unsigned timeout_ms = 500) {
  device_options o;
  o.firmware_dir = emu::synthetic_fw_dir();
  o.timeout_ms = timeout_ms;
  return o;
}

std::string joined(const std::vector<std::string> &v) {
  std::string s;
  for (const auto &l : v) s += l + "\n";
  return s;
}

}  // namespace

TEST_CASE("cold boot: every engine up, no rule broken, trace equals the golden one") {
  gfx1100_model m;
  gfx1100_direct pci(m);
  device d(pci, opts());
  std::string err;
  REQUIRE_MESSAGE(d.boot(&err), err);
  CHECK_MESSAGE(m.faults.empty(), joined(m.faults));
  CHECK(!d.stats().partial);
  CHECK(d.chip_info().name == "gfx1100");
  CHECK(m.sos_alive());
  CHECK(m.rlc_autoloaded());
  CHECK(m.mec_running());
  CHECK(m.hqd_active(1, 0, 0));
  CHECK(m.sdma_active());
  CHECK(m.reg(regSCRATCH_REG7) == kAmBootMagic);
  CHECK(m.reg(regSCRATCH_REG6) == 1);
  // SMU first, then the eleven pieces of sdma/mec/imu/rlc (usbgpu_am_plan.md §1.9).
  REQUIRE(m.psp_loaded.size() == 12);
  CHECK(m.psp_loaded.front() == "SMU");
  // KDB twice, SYS_DRV, SOS, TOC and the 12 pieces: 1,251,632 bytes, the
  // figure computed from Debian's headers (usbgpu_am_plan.md §1.9).
  CHECK(d.stats().staged_bytes == 1251632);

  // The golden trace: register writes by name and engine events, in order.
  const std::string got = joined(m.trace);
  const char *update = std::getenv("CAPGRAPH_UPDATE_GOLDEN");
  if (update && *update == '1') {
    std::ofstream(CAPGRAPH_GFX1100_GOLDEN) << got;
  }
  std::ifstream in(CAPGRAPH_GFX1100_GOLDEN);
  REQUIRE_MESSAGE(in.good(), "missing golden trace " CAPGRAPH_GFX1100_GOLDEN
                             " (CAPGRAPH_UPDATE_GOLDEN=1 writes it)");
  std::stringstream want;
  want << in.rdbuf();
  CHECK_MESSAGE(got == want.str(), "boot trace differs from " CAPGRAPH_GFX1100_GOLDEN
                                   " (if the change is intended: CAPGRAPH_UPDATE_GOLDEN=1)");
}

TEST_CASE("the GPU reaches VRAM and the staging window through the tables the driver wrote") {
  gfx1100_model m;
  gfx1100_direct pci(m);
  device d(pci, opts());
  std::string err;
  REQUIRE_MESSAGE(d.boot(&err), err);
  uint64_t pa = 0;
  bool sys = true;
  std::string why;
  for (uint64_t off : {uint64_t(0), uint64_t(0x123000), m.vram_bytes() - 4096}) {
    REQUIRE_MESSAGE(m.gpu_translate(true, device::vram_va(off), &pa, &sys, &why), why);
    CHECK(pa == off);
    CHECK(!sys);
  }
  REQUIRE_MESSAGE(m.gpu_translate(false, device_layout::staging_va + 0x4000, &pa, &sys, &why), why);
  CHECK(pa == gfx1100_direct::kStagingBus + 0x4000);
  CHECK(sys);
  // Outside every mapping: a page fault, reported in the fault status
  // register and as an IH ring entry.
  CHECK(m.faults.empty());
  CHECK(!m.gpu_translate(true, device::vram_va(m.vram_bytes()) + (1ull << 30), &pa, &sys, &why));
  CHECK(m.reg(regGCVM_L2_PROTECTION_FAULT_STATUS) != 0);
  CHECK(m.reg(regIH_RB_WPTR) == 32);
  uint32_t entry[8] = {};
  m.vram_read(device_layout::ih_ring, entry, sizeof entry);
  CHECK(entry[0] == kIhClientGfx);  // soc21 client GFX (the GC hub's UTCL2), src 0, vmid 0
  CHECK((uint64_t(entry[5]) << 44 | uint64_t(entry[4]) << 12) ==
        ((device::vram_va(m.vram_bytes()) + (1ull << 30)) & 0xFFFFFFFFF000ull));
}

TEST_CASE("VRAM copies that start or end inside a dword keep the bytes around them") {
  // The BAR moves whole dwords: an early vram_write padded a ragged tail with zeros over the next
  // bytes (found in review). Both directions, at every head and tail alignment.
  gfx1100_model m;
  gfx1100_direct pci(m);
  device d(pci, opts());
  std::string err;
  REQUIRE_MESSAGE(d.boot(&err), err);
  const uint64_t base = device_layout::free_start;
  for (uint64_t head = 0; head < 4; ++head)
    for (size_t n : {size_t(1), size_t(2), size_t(3), size_t(5), size_t(9), size_t(14)}) {
      std::vector<uint8_t> around(32, 0xEE), back(32), src(n);
      REQUIRE_MESSAGE(d.vram_copy_in(base, around.data(), around.size(), &err), err);
      for (size_t i = 0; i < n; ++i) src[i] = uint8_t(0x10 + i);
      REQUIRE_MESSAGE(d.vram_copy_in(base + 8 + head, src.data(), n, &err), err);
      REQUIRE_MESSAGE(d.vram_copy_out(base, back.data(), back.size(), &err), err);
      for (size_t i = 0; i < back.size(); ++i) {
        const bool inside = i >= 8 + head && i < 8 + head + n;
        CHECK_MESSAGE(back[i] == (inside ? src[i - 8 - head] : 0xEE),
                      "head " << head << " n " << n << " byte " << i);
      }
      std::vector<uint8_t> part(n);  // and read back from the same unaligned place
      REQUIRE_MESSAGE(d.vram_copy_out(base + 8 + head, part.data(), n, &err), err);
      CHECK(part == src);
    }
}

TEST_CASE("teardown, then a second session boots partially") {
  gfx1100_model m;
  gfx1100_direct pci(m);
  std::string err;
  boot_stats cold;
  {
    device d(pci, opts());
    REQUIRE_MESSAGE(d.boot(&err), err);
    cold = d.stats();
    REQUIRE_MESSAGE(d.teardown(&err), err);
  }
  CHECK(!m.hqd_active(1, 0, 0));
  CHECK(!m.sdma_active());
  CHECK(m.reg(regSCRATCH_REG6) == 0);
  m.trace.clear();
  device d2(pci, opts());
  REQUIRE_MESSAGE(d2.boot(&err), err);
  CHECK(d2.stats().partial);
  CHECK(d2.stats().mode1_resets == 0);
  CHECK(d2.stats().staged_bytes == 0);  // no firmware again
  CHECK(d2.stats().reg_writes < cold.reg_writes / 2);
  CHECK_MESSAGE(m.faults.empty(), joined(m.faults));
  CHECK(m.hqd_active(1, 0, 0));
  CHECK(m.sdma_active());
  for (const auto &l : m.trace) CHECK_MESSAGE(l.find("psp") == std::string::npos, l);
  MESSAGE("cold boot: " << cold.reg_reads << " register reads, " << cold.reg_writes << " writes, "
                        << cold.vram_bytes_written << " VRAM bytes written, " << cold.staged_bytes
                        << " staged; partial: " << d2.stats().reg_reads << " reads, "
                        << d2.stats().reg_writes << " writes");
}

TEST_CASE("a session that did not end cleanly: the next boot resets the GPU and loads everything") {
  gfx1100_model m;
  gfx1100_direct pci(m);
  std::string err;
  {
    device d(pci, opts());
    REQUIRE_MESSAGE(d.boot(&err), err);
  }  // no teardown: SCRATCH_REG6 stays 1
  device d2(pci, opts());
  REQUIRE_MESSAGE(d2.boot(&err), err);
  CHECK(!d2.stats().partial);
  CHECK(d2.stats().mode1_resets == 1);
  CHECK(m.mode1_resets == 1);
  CHECK_MESSAGE(m.faults.empty(), joined(m.faults));
  CHECK(m.hqd_active(1, 0, 0));
}

TEST_CASE("the PSP never answering: a timeout naming the step, and a clean boot after") {
  gfx1100_model m;
  gfx1100_direct pci(m);
  m.psp_silent = true;
  std::string err;
  {
    device d(pci, opts(50));
    CHECK(!d.boot(&err));
    CHECK_MESSAGE(err.find("PSP bootloader KDB") != std::string::npos, err);
    CHECK_MESSAGE(err.find("timed out after 50 ms") != std::string::npos, err);
    CHECK_MESSAGE(err.find("C2PMSG_35=0x0") != std::string::npos, err);  // the fault read-out
  }
  m.psp_silent = false;
  device d2(pci, opts());
  REQUIRE_MESSAGE(d2.boot(&err), err);
  CHECK_MESSAGE(m.faults.empty(), joined(m.faults));
  CHECK(m.sdma_active());
}

TEST_CASE("the SMU never answering names the message") {
  gfx1100_model m;
  gfx1100_direct pci(m);
  m.smu_silent = true;
  device d(pci, opts(50));
  std::string err;
  CHECK(!d.boot(&err));
  CHECK_MESSAGE(err.find("SMU: SMU message 0xe answer: timed out") != std::string::npos, err);
}

TEST_CASE("firmware missing or cut: the file and the package named, nothing sent to the GPU") {
  fs::path dir =
      fs::temp_directory_path() / ("capgraph_gfx1100_badfw_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::string err;
  REQUIRE(synthetic_firmware_write(dir.string(), &err));
  device_options o = opts();
  o.firmware_dir = dir.string();
  {
    fs::remove(dir / "smu_13_0_0.bin");
    gfx1100_model m;
    gfx1100_direct pci(m);
    device d(pci, o);
    CHECK(!d.boot(&err));
    CHECK_MESSAGE(err.find("smu_13_0_0.bin") != std::string::npos, err);
    CHECK_MESSAGE(err.find("firmware-amd-graphics") != std::string::npos, err);
    CHECK(m.trace.empty());  // only reads happened
  }
  {
    REQUIRE(synthetic_firmware_write(dir.string(), &err));
    const fs::path rlc = dir / "gc_11_0_0_rlc.bin";
    fs::resize_file(rlc, fs::file_size(rlc) / 2);
    gfx1100_model m;
    gfx1100_direct pci(m);
    device d(pci, o);
    CHECK(!d.boot(&err));
    CHECK_MESSAGE(err.find("gc_11_0_0_rlc.bin") != std::string::npos, err);
    CHECK(m.trace.empty());
  }
  fs::remove_all(dir);
}

TEST_CASE(
    "the device gone mid-boot: an error naming the step and the access, and a clean boot once "
    "back") {
  gfx1100_model m;
  gfx1100_direct pci(m);
  std::string err;
  for (uint64_t after : {uint64_t(20), uint64_t(60), uint64_t(120)}) {
    pci.accesses = 0;
    pci.unplug_after = after;
    device d(pci, opts(50));
    CHECK(!d.boot(&err));
    CHECK_MESSAGE(err.find("unplugged") != std::string::npos, err);
    CHECK_MESSAGE(err.find(": ") != std::string::npos, err);
    CHECK(!d.teardown(&err));
    CHECK_MESSAGE(err.find("teardown") != std::string::npos, err);
  }
  pci.unplug_after = UINT64_MAX;
  m.faults.clear();
  device d(pci, opts());
  REQUIRE_MESSAGE(d.boot(&err), err);
  CHECK_MESSAGE(m.faults.empty(), joined(m.faults));
  CHECK(m.hqd_active(1, 0, 0));
}

TEST_CASE("a VM fault left pending by the last session forces a cold boot") {
  gfx1100_model m;
  gfx1100_direct pci(m);
  std::string err;
  {
    device d(pci, opts());
    REQUIRE_MESSAGE(d.boot(&err), err);
    uint64_t pa = 0;
    bool sys = false;
    std::string why;
    CHECK(!m.gpu_translate(true, device_layout::vm_base - 4096, &pa, &sys,
                           &why));  // below the context: faults
    CHECK_MESSAGE(why.find("outside VM context 0") != std::string::npos, why);
    REQUIRE_MESSAGE(d.teardown(&err), err);
  }
  m.faults.clear();
  device d2(pci, opts());
  REQUIRE_MESSAGE(d2.boot(&err), err);
  CHECK(!d2.stats().partial);
  CHECK(d2.stats().mode1_resets == 1);
  CHECK_MESSAGE(m.faults.empty(), joined(m.faults));
}

TEST_CASE("doorbells: refused until the driver opens the aperture, seen after") {
  gfx1100_model m;
  gfx1100_direct pci(m);
  std::string err;
  const uint32_t v[2] = {0x40, 0};
  REQUIRE(pci.bar_write(kBarDoorbell, kDoorbellMecRing0 * 8, v, 2, &err));
  REQUIRE(m.faults.size() == 1);
  CHECK_MESSAGE(m.faults[0].find("doorbell aperture off") != std::string::npos, m.faults[0]);
  m.faults.clear();
  device d(pci, opts());
  REQUIRE_MESSAGE(d.boot(&err), err);
  REQUIRE(pci.bar_write(kBarDoorbell, kDoorbellMecRing0 * 8, v, 2, &err));
  CHECK(m.faults.empty());
  CHECK(m.trace.back() == "doorbell 0x3 = 0x40");
}

TEST_CASE(
    "the booted queues run the HCQ encoders' packets from VRAM; a packet into unmapped memory is a "
    "VM fault") {
  gfx1100_model m;
  gfx1100_direct pci(m);
  device d(pci, opts());
  std::string err;
  REQUIRE_MESSAGE(d.boot(&err), err);
  const amd::chip &chip = *amd::chip_find("gfx1100");
  const uint64_t base = device_layout::free_start;
  const uint32_t src[4] = {0x11, 0x22, 0x33, 0x44};
  REQUIRE(pci.bar_write(kBarVram, base + 0x1000, src, 4, &err));

  // Compute: wait for nothing, copy nothing; signal 7 (RELEASE_MEM end of pipe).
  std::vector<uint32_t> words;
  auto enc = hcq::amd_compute_encoder(chip, &words);
  enc->signal(device::vram_va(base), 7);
  REQUIRE_MESSAGE(d.queue_submit(false, words.data(), words.size(), &err), err);
  REQUIRE_MESSAGE(d.wait_vram64(base, 7, 500, &err), err);

  // SDMA: copy 16 bytes VRAM -> VRAM, then signal 9 (FENCE).
  words.clear();
  auto cp = hcq::amd_copy_encoder(chip, &words);
  cp->copy(device::vram_va(base + 0x2000), device::vram_va(base + 0x1000), 16);
  cp->signal(device::vram_va(base + 0x100), 9);
  REQUIRE_MESSAGE(d.queue_submit(true, words.data(), words.size(), &err), err);
  REQUIRE_MESSAGE(d.wait_vram64(base + 0x100, 9, 500, &err), err);
  uint32_t got[4] = {};
  REQUIRE(pci.bar_read(kBarVram, base + 0x2000, got, 4, &err));
  CHECK(std::equal(got, got + 4, src));
  CHECK_MESSAGE(m.faults.empty(), joined(m.faults));

  // A signal into a VA nothing maps: the engine faults, the wait times out
  // with the GC fault status in its message.
  words.clear();
  auto bad = hcq::amd_compute_encoder(chip, &words);
  bad->signal(device::vram_va(m.vram_bytes()) + 0x1000, 3);
  REQUIRE_MESSAGE(d.queue_submit(false, words.data(), words.size(), &err), err);
  CHECK(!d.wait_vram64(base + 0x300, 3, 50, &err));
  CHECK_MESSAGE(err.find("GCVM_L2_PROTECTION_FAULT_STATUS=0x100") != std::string::npos, err);
  // The IH ring's entry, decoded: who faulted and where (the page of the bad signal address).
  char want[96];
  std::snprintf(want, sizeof want, "IH ring: 1 new entry: UTCL2 (GC hub) VM fault at 0x%llx vmid 0",
                (unsigned long long)((device::vram_va(m.vram_bytes()) + 0x1000) & ~0xFFFull));
  CHECK_MESSAGE(err.find(want) != std::string::npos, err);
  // Read out once: the read pointer moved past it, a second timeout shows no new entries.
  CHECK(!d.wait_vram64(base + 0x300, 3, 10, &err));
  CHECK_MESSAGE(err.find("IH ring: no new entries") != std::string::npos, err);
  REQUIRE(!m.faults.empty());
  CHECK_MESSAGE(m.faults.back().find("compute queue") != std::string::npos, m.faults.back());
}

TEST_CASE(
    "a firmware piece whose bytes are not the file's: the fake PSP refuses it, the error names the "
    "piece") {
  fs::path dir =
      fs::temp_directory_path() / ("capgraph_gfx1100_flipfw_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::string err;
  REQUIRE(synthetic_firmware_write(dir.string(), &err));
  // Flip one byte inside the MEC code (past the 256-byte headers): the
  // container stays valid, only what the PSP is handed differs.
  {
    std::fstream f(dir / "gc_11_0_0_mec.bin", std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(300);
    char c = 0;
    f.read(&c, 1);
    f.seekp(300);
    c = char(c ^ 0x5A);
    f.write(&c, 1);
  }
  device_options o = opts(100);
  o.firmware_dir = dir.string();
  gfx1100_model m;
  gfx1100_direct pci(m);
  device d(pci, o);
  CHECK(!d.boot(&err));
  CHECK_MESSAGE(err.find("PSP LOAD_IP_FW RS64_MEC (gc_11_0_0_mec.bin): PSP refused the command") !=
                    std::string::npos,
                err);
  REQUIRE(!m.faults.empty());
  CHECK_MESSAGE(m.faults.back().find("RS64_MEC byte") != std::string::npos, m.faults.back());
  CHECK(!m.rlc_autoloaded());
  fs::remove_all(dir);
}

namespace {

// A driver that skips one boot step, played by dropping that register's
// writes between the driver and the model (gfx1100_direct::drop_mmio_writes).
struct skipped_step {
  gfx1100_model m;
  gfx1100_direct pci{m};
  std::string err;
  bool booted = false;
  explicit skipped_step(std::initializer_list<reg> skip, unsigned timeout_ms = 50) {
    for (reg r : skip) pci.drop_mmio_writes.insert(uint64_t(m.regs()[r]) * 4);
    device d(pci, opts(timeout_ms));
    booted = d.boot(&err);
  }
  bool faulted(const std::string &what) const {
    return std::any_of(m.faults.begin(), m.faults.end(),
                       [&](const std::string &f) { return f.find(what) != std::string::npos; });
  }
};

}  // namespace

TEST_CASE(
    "GC hub without its L2 cache: the queue's first read page-faults, the error carries the IH "
    "entry") {
  skipped_step s({regGCVM_L2_CNTL});
  CHECK(!s.booted);
  CHECK_MESSAGE(
      s.err.find("compute queue: the compute queue did not become active") != std::string::npos,
      s.err);
  CHECK_MESSAGE(s.faulted("GC hub L2 cache off (VM_L2_CNTL.enable_l2_cache)"), joined(s.m.faults));
  // The MQD read faulted: GC fault status, and the IH entry decoded in the message.
  CHECK_MESSAGE(s.err.find("GCVM_L2_PROTECTION_FAULT_STATUS=0x100") != std::string::npos, s.err);
  char want[80];
  std::snprintf(want, sizeof want, "UTCL2 (GC hub) VM fault at 0x%llx vmid 0",
                (unsigned long long)device::vram_va(device_layout::mqd));
  CHECK_MESSAGE(s.err.find(want) != std::string::npos, s.err);
  CHECK(!s.m.hqd_active(1, 0, 0));
}

TEST_CASE(
    "MM hub without its L1 TLB, or with AGP left open: the PSP cannot read its firmware, the error "
    "names the fault") {
  for (reg skip : {regMMMC_VM_MX_L1_TLB_CNTL, regMMMC_VM_AGP_BOT}) {
    const std::string skipped = reg_info(skip).name;
    CAPTURE(skipped);
    skipped_step s({skip});
    CHECK(!s.booted);
    CHECK_MESSAGE(s.err.find("PSP bootloader KDB: bootloader done: timed out") != std::string::npos,
                  s.err);
    CHECK_MESSAGE(
        s.err.find("IH ring: 1 new entry: VMC (MM hub) VM fault at 0x110000000000 vmid 0") !=
            std::string::npos,
        s.err);
    CHECK_MESSAGE(s.faulted(skip == regMMMC_VM_AGP_BOT ? "MM hub AGP aperture open"
                                                       : "MM hub L1 TLB not set up"),
                  joined(s.m.faults));
  }
}

TEST_CASE("no TLB invalidation answer: the poll is bounded and names the ack register") {
  skipped_step s({regMMVM_INVALIDATE_ENG17_REQ});
  CHECK(!s.booted);
  CHECK_MESSAGE(s.err.find("MM hub: MM TLB invalidate ack: timed out after 50 ms waiting for "
                           "regMMVM_INVALIDATE_ENG17_ACK") != std::string::npos,
                s.err);
}

TEST_CASE("no HDP flush after CPU writes of VRAM: the fake sees the GPU read unflushed data") {
  // Without the remap the driver's flushes land on no register.
  skipped_step s({regBIF_BX0_REMAP_HDP_MEM_FLUSH_CNTL}, 500);
  CHECK_MESSAGE(s.faulted("HDP: MM TLB invalidation (the page walker) read VRAM while CPU writes "
                          "over BAR0 were not flushed"),
                joined(s.m.faults));
  // With it, a clean boot leaves nothing unflushed and counts its flushes.
  gfx1100_model m;
  gfx1100_direct pci(m);
  device d(pci, opts());
  std::string err;
  REQUIRE_MESSAGE(d.boot(&err), err);
  CHECK_MESSAGE(m.faults.empty(), joined(m.faults));
  CHECK(!m.hdp_dirty());
  CHECK(d.stats().hdp_flushes >= 3);  // page tables, PSP commands, the MQD, the SDMA words
  // A CPU write the driver does not flush is caught at the next doorbell.
  const uint32_t v = 1;
  REQUIRE(pci.bar_write(kBarVram, device_layout::free_start, &v, 1, &err));
  const uint32_t db[2] = {0, 0};
  REQUIRE(pci.bar_write(kBarDoorbell, kDoorbellSdma0 * 8, db, 2, &err));
  REQUIRE(!m.faults.empty());
  CHECK_MESSAGE(m.faults.back().find("HDP: the SDMA queue read VRAM") != std::string::npos,
                m.faults.back());
}

TEST_CASE("SH_MEM for VMID 0 not programmed: the compute queue refuses to start") {
  skipped_step s({regSH_MEM_CONFIG});
  CHECK(!s.booted);
  CHECK_MESSAGE(s.faulted("CP_HQD_ACTIVE: SH_MEM_CONFIG/SH_MEM_BASES for VMID 0 not set up"),
                joined(s.m.faults));
}

TEST_CASE("clock gating: changed only inside RLC safe mode, which the running RLC acknowledges") {
  {
    gfx1100_model m;
    gfx1100_direct pci(m);
    device d(pci, opts());
    std::string err;
    REQUIRE_MESSAGE(d.boot(&err), err);
    CHECK(!m.rlc_safe_mode());  // left again
    CHECK(m.reg(regRLC_CGCG_CGLS_CTRL) == 0x363f);
    CHECK_MESSAGE(m.faults.empty(), joined(m.faults));
  }
  skipped_step s({regRLC_SAFE_MODE});
  CHECK_MESSAGE(s.faulted("RLC_CGCG_CGLS_CTRL changed outside RLC safe mode"), joined(s.m.faults));
  // No RLC running (no autoload): safe mode is never acknowledged.
  gfx1100_model m;
  gfx1100_direct pci(m);
  std::string err;
  REQUIRE(pci.bar_write(kBarMmio, uint64_t(m.regs()[regRLC_SAFE_MODE]) * 4,
                        std::array<uint32_t, 1>{3}.data(), 1, &err));
  CHECK(m.reg(regRLC_SAFE_MODE) == 3);
}

TEST_CASE(
    "the model's state outlives the model: saved after a clean session, a new model boots "
    "partially; bad files refused") {
  std::vector<uint8_t> saved;
  std::string err;
  {
    gfx1100_model m;
    gfx1100_direct pci(m);
    device d(pci, opts());
    REQUIRE_MESSAGE(d.boot(&err), err);
    // Something of the session in VRAM, beyond the boot's own pages.
    const uint32_t mark = 0x5EED1234;
    REQUIRE_MESSAGE(d.vram_copy_in(device_layout::free_start + 0x3000, &mark, 4, &err), err);
    REQUIRE_MESSAGE(d.teardown(&err), err);
    saved = m.state_save();
  }
  CHECK(saved.size() < 4u << 20);  // only the pages in use
  {
    gfx1100_model m;  // another process's: cold until it loads the state
    REQUIRE_MESSAGE(m.state_load(saved.data(), saved.size(), &err), err);
    CHECK(m.sos_alive());
    CHECK(m.rlc_autoloaded());
    gfx1100_direct pci(m);
    device d(pci, opts());
    REQUIRE_MESSAGE(d.boot(&err), err);
    CHECK(d.stats().partial);
    CHECK(d.stats().staged_bytes == 0);
    CHECK_MESSAGE(m.faults.empty(), joined(m.faults));
    CHECK(m.hqd_active(1, 0, 0));
    CHECK(m.sdma_active());
    uint32_t mark = 0;
    REQUIRE_MESSAGE(d.vram_copy_out(device_layout::free_start + 0x3000, &mark, 4, &err), err);
    CHECK(mark == 0x5EED1234);
  }
  // Without the state (a power cycle) the same model boots cold.
  {
    gfx1100_model m;
    gfx1100_direct pci(m);
    device d(pci, opts());
    REQUIRE_MESSAGE(d.boot(&err), err);
    CHECK(!d.stats().partial);
  }
  // Truncated, one bit flipped, trailing bytes, not a state at all: refused, the model cold.
  gfx1100_model m;
  std::vector<uint8_t> bad(saved.begin(), saved.begin() + saved.size() / 2);
  CHECK(!m.state_load(bad.data(), bad.size(), &err));
  CHECK_MESSAGE(err.find("truncated or corrupt") != std::string::npos, err);
  bad = saved;
  bad[bad.size() / 3] ^= 0x10;
  CHECK(!m.state_load(bad.data(), bad.size(), &err));
  CHECK_MESSAGE(err.find("truncated or corrupt") != std::string::npos, err);
  bad = saved;
  bad.push_back(0);
  CHECK(!m.state_load(bad.data(), bad.size(), &err));
  const uint8_t junk[64] = {1, 2, 3};
  CHECK(!m.state_load(junk, sizeof junk, &err));
  CHECK_MESSAGE(err.find("CGGFX110") != std::string::npos, err);
  CHECK(!m.sos_alive());
  gfx1100_direct pci(m);
  device d(pci, opts());
  REQUIRE_MESSAGE(d.boot(&err), err);
  CHECK(!d.stats().partial);
}
