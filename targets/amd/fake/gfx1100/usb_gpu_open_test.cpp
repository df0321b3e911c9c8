// The open sequence `--device usb` and `--device fake-usb` share (targets/amd/amd_usb.h), on the
// emulated bridge running our firmware image: another card behind the switch chain is refused
// with an error naming its ids and bus before anything touches its BARs; no bridge firmware
// answering is an error naming the bridge step.
#include <doctest/doctest.h>

#include "amd_usb.h"
#include "bridge_rig.h"

using namespace capgraph;
using namespace capgraph::emu_test;

TEST_CASE(
    "usb_gpu_open: a card other than 1002:744c behind the bridge is refused, naming its ids") {
  if (!have_image()) return;
  Rig r;
  r.dev.endpoint.ids_set(0x10DE, 0x2684);  // an NVIDIA card in the slot
  REQUIRE(r.boot());
  amd::usb_gpu g(r.t);
  std::string err;
  CHECK_FALSE(amd::usb_gpu_open(g, am::device_options{}, &err));
  CHECK_MESSAGE(err.find("10de:2684") != std::string::npos, err);
  CHECK_MESSAGE(err.find("1002:744c") != std::string::npos, err);
  CHECK_MESSAGE(err.find("bus 4") != std::string::npos, err);
  MESSAGE(err);
  CHECK(g.gpu == nullptr);                 // nothing booted
  CHECK(r.dev.endpoint.bar_base(0) == 0);  // its BARs untouched
}

TEST_CASE("usb_gpu_open: a bridge whose firmware is not running gives the bridge step's error") {
  if (!have_image()) return;
  Rig r;  // never powered on: every transfer fails
  amd::usb_gpu g(r.t);
  std::string err;
  CHECK_FALSE(amd::usb_gpu_open(g, am::device_options{}, &err));
  CHECK_MESSAGE(err.rfind("bridge: ", 0) == 0, err);
}
