// The RM/UVM transport against the fake driver at the ioctl boundary (targets/nv/fake/fake_nv.h):
// the order of the calls, the refusal of a driver branch whose ABI it does not know, memory that
// both sides see at one address, and the plain errors of a machine without the driver.
#include "nv_transport.h"

#include <doctest/doctest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "fake_nv.h"
#include "nv_abi.h"

using namespace capgraph;
using namespace capgraph::nv;

namespace {

size_t position(const std::vector<std::string> &calls, const std::string &name) {
  return size_t(std::find(calls.begin(), calls.end(), name) - calls.begin());
}

}  // namespace

TEST_CASE("the transport opens a GPU with the driver version first and UVM-only GPU mappings") {
  for (const char *name : {"sm90", "sm86"}) {
    CAPTURE(name);
    auto sys = std::make_shared<fake_rm>(*chip_find(name), "580.159.04", false);
    std::unique_ptr<hcq::transport> t;
    std::string err;
    REQUIRE_MESSAGE(nv_open_with(sys, nv_paths{}, "nv", &t, &err) == CAPGRAPH_OK, err);
    CHECK(t->chip_name() == name);
    CHECK(t->name().find("driver 580.159.04") != std::string::npos);
    CHECK(sys->fault() == "");
    const auto &calls = sys->calls();
    REQUIRE(calls.size() > 20);
    CHECK(calls[0] == "open /dev/nvidiactl");
    CHECK(calls[1] == "CHECK_VERSION_STR");  // before any RM object exists
    char hex[16];
    const auto cls = [&](uint32_t c) {
      snprintf(hex, sizeof hex, "0x%x", c);
      return std::string("RM_ALLOC ") + hex;
    };
    const size_t client = position(calls, cls(abi::NV01_ROOT_CLIENT)),
                 device = position(calls, cls(abi::NV01_DEVICE_0)),
                 vaspace = position(calls, cls(abi::FERMI_VASPACE_A)),
                 reg_gpu = position(calls, "UVM_REGISTER_GPU"),
                 reg_va = position(calls, "UVM_REGISTER_GPU_VASPACE"),
                 tsg = position(calls, cls(abi::KEPLER_CHANNEL_GROUP_A)),
                 gpfifo = position(calls, cls(chip_find(name)->gpfifo_class)),
                 compute = position(calls, cls(chip_find(name)->compute_class)),
                 copy = position(calls, cls(chip_find(name)->copy_class)),
                 token = position(calls, "RM_CONTROL 0xc36f0108"),
                 channel = position(calls, "UVM_REGISTER_CHANNEL"),
                 schedule = position(calls, "RM_CONTROL 0xa06c0101"),
                 map = position(calls, "UVM_MAP_EXTERNAL_ALLOCATION");
    CHECK(client < device);
    CHECK(device < vaspace);
    CHECK(vaspace < reg_gpu);
    CHECK(reg_gpu < reg_va);
    CHECK(reg_va < map);  // memory is mapped for the GPU only once UVM owns the VA space
    CHECK(reg_va < tsg);
    CHECK(tsg < gpfifo);
    CHECK(gpfifo < compute);
    CHECK(compute < token);
    CHECK(token < channel);
    CHECK(compute < copy);
    CHECK(schedule == calls.size() - 1);                // the group runs once both channels exist
    CHECK(position(calls, cls(0x70)) == calls.size());  // no NV01_MEMORY_VIRTUAL (nv_plan.md §0.6)

    // Memory: one address for both sides, RM memory behind a UVM mapping.
    hcq::memory m;
    REQUIRE(t->alloc(10000, hcq::memory_kind::device, &m, &err) == CAPGRAPH_OK);
    CHECK(m.cpu == reinterpret_cast<uint8_t *>(m.gpu));
    CHECK(m.size == 12288);
    CHECK(m.gpu < (1ull << 40));
    memset(m.cpu, 0x5a, m.size);
    const uint64_t before = sys->live_objects();
    t->free(m);
    CHECK(sys->live_objects() == before - 1);
    CHECK(sys->fault() == "");
  }
}

TEST_CASE(
    "a driver branch whose ABI the transport does not know is refused by version, before any RM "
    "call") {
  for (const char *version : {"590.44.01", "570.86.16", "garbage"}) {
    CAPTURE(version);
    auto sys = std::make_shared<fake_rm>(*chip_find("sm90"), version, false);
    std::unique_ptr<hcq::transport> t;
    std::string err;
    CHECK(nv_open_with(sys, nv_paths{}, "nv", &t, &err) == CAPGRAPH_ERR_DEVICE);
    CHECK(err.find(std::string("NVIDIA driver ") + version) != std::string::npos);
    CHECK(err.find("knows the 580 branch") != std::string::npos);
    for (const std::string &c : sys->calls()) CHECK(c.rfind("RM_", 0) != 0);
  }
  CHECK(nv_branch("580.142") == 580);
  CHECK(nv_branch("580.159.04") == 580);
  CHECK(nv_branch("590.44.01") == 590);
  CHECK(nv_branch("580") == 0);
  CHECK(nv_branch("") == 0);
  CHECK(nv_branch("x.1") == 0);
}

TEST_CASE("without the driver the errors say what is missing") {
  nv_paths p;
  p.ctl = "/nonexistent/nvidiactl";
  std::unique_ptr<hcq::transport> t;
  std::string err;
  CHECK(nv_open_with(nv_sys_linux(), p, "nv", &t, &err) == CAPGRAPH_ERR_DEVICE);
  CHECK(err.find("/nonexistent/nvidiactl is missing: no NVIDIA kernel driver is loaded") !=
        std::string::npos);
  CHECK(nv_open_with(nv_sys_linux(), p, "nv:x", &t, &err) == CAPGRAPH_ERR_ARGUMENT);
  CHECK(err.find("an NVIDIA device is nv or nv:N") != std::string::npos);
  // The fake has one GPU: a second is refused by count.
  auto sys = std::make_shared<fake_rm>(*chip_find("sm90"), "580.142", false);
  CHECK(nv_open_with(sys, nv_paths{}, "nv:1", &t, &err) == CAPGRAPH_ERR_DEVICE);
  CHECK(err.find("no such GPU (the driver reports 1)") != std::string::npos);
  if (access("/dev/nvidiactl", F_OK) != 0) {
    const std::string d = nv_devices_describe();
    CHECK(d.find("nv: no NVIDIA GPU (/dev/nvidiactl is missing") == 0);
  } else {
    MESSAGE("this machine has /dev/nvidiactl: " << nv_devices_describe());
  }
}

TEST_CASE("without room for its 128 GiB ranges the transport takes a smaller one low in memory") {
  // What AddressSanitizer's shadow gap does to the usual ranges (the sanitizer job): here the six
  // 128 GiB candidates from 64 GiB up are taken by this process first (where not already unusable).
  std::vector<std::pair<void *, size_t>> taken;
  for (int i = 0; i < 6; ++i) {
    void *want = reinterpret_cast<void *>(0x1000000000ull + uint64_t(i) * 0x2000000000ull);
    void *got = ::mmap(want, 0x2000000000ull, PROT_NONE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE, -1, 0);
    if (got == want)
      taken.emplace_back(got, 0x2000000000ull);
    else if (got != MAP_FAILED)
      ::munmap(got, 0x2000000000ull);
  }
  auto sys = std::make_shared<fake_rm>(*chip_find("sm90"), "580.159.04", false);
  std::unique_ptr<hcq::transport> t;
  std::string err;
  REQUIRE_MESSAGE(nv_open_with(sys, nv_paths{}, "nv", &t, &err) == CAPGRAPH_OK, err);
  hcq::memory m;
  REQUIRE(t->alloc(1 << 20, hcq::memory_kind::device, &m, &err) == CAPGRAPH_OK);
  CHECK(m.gpu >= 0x10000000ull);
  CHECK(m.gpu < 0x70000000ull);
  CHECK(m.cpu == reinterpret_cast<uint8_t *>(m.gpu));
  // A low range is 384 MiB: more is a clear error, not a mapping elsewhere.
  hcq::memory big;
  CHECK(t->alloc(512ull << 20, hcq::memory_kind::device, &big, &err) != CAPGRAPH_OK);
  CHECK(err.find("384 MiB GPU address range is used up") != std::string::npos);
  t->free(m);
  t.reset();
  for (auto &[p, n] : taken) ::munmap(p, n);
}
