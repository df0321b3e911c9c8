// `--device fake-usb`: the host code of a GPU behind the USB bridge (drivers/usb's Bridge and
// pci_function_usb, drivers/am's boot, targets/amd's am_transport), run against the emulated
// ASM2464PD executing our firmware image with the register-model gfx1100 behind it, whose
// queues run on fake-amd's packet interpreter and RDNA3 emulator. Each open plugs a fresh
// emulated bridge in, walks PCIe, boots the GPU and hands the transport out; closing it tears
// the GPU down. The GPU model lives as long as the process, so a second open in one process
// finds the last session clean and partial-boots. Across processes the GPU keeps its state the way
// a real one does when the driver's process exits, through a state file:
//   CAPGRAPH_FAKE_USB_STATE=PATH       the model is loaded from PATH when the process first opens
//                                      the device (absent: a cold GPU, as after a power cycle) and
//                                      saved there (temp file + rename) each time a session ends;
//                                      a corrupt or truncated file is refused with its path
//   CAPGRAPH_FAKE_USB_NO_TEARDOWN=1    the session ends without the driver's teardown, as when the
//                                      process is killed: the GPU stays dirty and the next boot
//                                      resets it (mode 1) and boots cold
// The bridge is plugged in fresh on every open (its state is not saved): the open sequence powers
// PCIe and numbers the switch chain every time anyway, as it must with a bridge it did not set up.
#include "fake_usb.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>

#include "am_device.h"
#include "am_firmware_synthetic.h"
#include "amd_hcq.h"
#include "amd_usb.h"
#include "asm2464_model.h"
#include "bridge.h"
#include "bridge_protocol.h"
#include "emu_transport.h"
#include "fake_faults.h"
#include "gfx1100_hcq.h"
#include "gfx1100_model.h"
#include "usb_pci.h"

namespace capgraph::emu {

gfx1100_model &fake_usb_gpu_model() {
  // Its trace (every register write and engine event, for the golden-trace tests) would grow
  // ~0.5 KB per replay for the life of the process: the fake-usb soak's growth (scripts/soak.sh).
  static gfx1100_model gpu;
  static const bool untraced = (gpu.trace_on = false, true);
  (void)untraced;
  return gpu;
}

namespace {

gfx1100_model &gpu_model() { return fake_usb_gpu_model(); }

const char *state_path() {
  const char *p = std::getenv("CAPGRAPH_FAKE_USB_STATE");
  return p && *p ? p : nullptr;
}

// Once per process, before the first boot: the GPU as the last process left it.
bool gpu_state_load(std::string *err) {
  static bool done = false;
  static std::string error;
  if (done) return error.empty() || (*err = error, false);
  done = true;
  const char *path = state_path();
  if (!path || !std::filesystem::exists(path)) return true;
  std::ifstream in(path, std::ios::binary);
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)),
                             std::istreambuf_iterator<char>());
  std::string why;
  if (!in.good() && !in.eof())
    why = "cannot be read";
  else if (!gpu_model().state_load(bytes.data(), bytes.size(), &why))
    why = "refused: " + why;
  if (why.empty()) return true;
  error = std::string("state file ") + path + " (CAPGRAPH_FAKE_USB_STATE) " + why +
          "; delete it to start from a cold GPU";
  *err = error;
  return false;
}

// After each session: written beside PATH, then renamed over it, so a reader never sees half.
void gpu_state_save() {
  const char *path = state_path();
  if (!path) return;
  const std::vector<uint8_t> bytes = gpu_model().state_save();
  const std::string tmp = std::string(path) + ".tmp." + std::to_string(::getpid());
  bool ok = false;
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char *>(bytes.data()), std::streamsize(bytes.size()));
    out.flush();
    ok = out.good();
  }
  std::error_code ec;
  if (ok) std::filesystem::rename(tmp, path, ec);
  if (!ok || ec) {
    std::filesystem::remove(tmp, ec);
    fprintf(stderr, "fake-usb: cannot write the state file %s (CAPGRAPH_FAKE_USB_STATE)\n", path);
  }
}

// The USB cable with fault injection (fake_faults.h): each control or bulk transfer is a device
// call; the failed one returns what libusb reports (libusb_transport.cpp maps LIBUSB_ERROR_TIMEOUT,
// _PIPE, _NO_DEVICE, _IO onto these) without reaching the bridge, or, "short", moves only half
// its bytes. A model that joins the open session with fault words of its own (fake-usb:fail=N
// loaded while another model holds the GPU) adds a second counter, from its load until its close:
// the Nth call on the cable from then on fails, whichever model makes it.
class fault_wire final : public usb::BridgeTransport {
 public:
  fault_wire(usb::BridgeTransport &inner, fake::fault_plan plan)
      : inner_(inner), faults("fake-usb", plan) {}
  usb::TransferStatus control(const usb::ControlRequest &r, uint8_t *data, uint16_t length,
                              size_t *actual, unsigned timeout_ms) override {
    int e = 0;
    const fake::fault_counter *by = nullptr;
    if (!fail_now("control transfer", &e, &by))
      return inner_.control(r, data, length, actual, timeout_ms);
    if (!by->plan().short_transfer) return *actual = 0, status_of(e);
    return short_of(inner_.control(r, data, length, actual, timeout_ms), length, actual);
  }
  usb::TransferStatus bulk(uint8_t endpoint, uint8_t *data, size_t length, size_t *actual,
                           unsigned timeout_ms) override {
    int e = 0;
    const fake::fault_counter *by = nullptr;
    if (!fail_now(endpoint & 0x80 ? "bulk IN transfer" : "bulk OUT transfer", &e, &by))
      return inner_.bulk(endpoint, data, length, actual, timeout_ms);
    if (!by->plan().short_transfer) return *actual = 0, status_of(e);
    return short_of(inner_.bulk(endpoint, data, length, actual, timeout_ms), length, actual);
  }
  std::string describe() const override { return inner_.describe(); }
  uint16_t vendor_id() const override { return inner_.vendor_id(); }
  uint16_t product_id() const override { return inner_.product_id(); }

 private:
  // Counts the call on the session's counter and the joined model's; true when either fails it.
  bool fail_now(const char *what, int *e, const fake::fault_counter **by) {
    if (faults.call(what, ETIMEDOUT, e)) *by = &faults;
    if (joined && joined->call(what, ETIMEDOUT, e)) *by = joined;
    return *by != nullptr;
  }
  // The host sees only half the bytes moved (the rest lost on the cable).
  static usb::TransferStatus short_of(usb::TransferStatus s, size_t length, size_t *actual) {
    if (*actual > length / 2) *actual = length / 2;
    return s;
  }
  static usb::TransferStatus status_of(int e) {
    return e == ETIMEDOUT ? usb::TransferStatus::timeout
           : e == EPIPE   ? usb::TransferStatus::stall
           : e == ENODEV  ? usb::TransferStatus::no_device
                          : usb::TransferStatus::error;
  }
  usb::BridgeTransport &inner_;

 public:
  fake::fault_counter faults;
  fake::fault_counter *joined = nullptr;  // a joined model's plan (one at a time)
};

// One plugged-in bridge and the booted GPU behind it.
struct rig {
  explicit rig(fake::fault_plan plan) : cable(wire, plan) {}
  ~rig() { cable.faults.finish(gpu_model().live_queues()); }
  Asm2464 dev;
  EmuTransport wire{dev};
  fault_wire cable;
  amd::usb_gpu g{cable};  // the same open sequence as `--device usb` (targets/amd/amd_usb.h)
};

// The rig as the session every model loaded on fake-usb in this process shares (amd_usb.h): the
// last model's close tears the GPU down (unless CAPGRAPH_FAKE_USB_NO_TEARDOWN) and saves its state.
class fake_usb_session final : public amd::am_session {
 public:
  fake_usb_session(std::unique_ptr<rig> r, std::string label)
      : am_session(*r->g.gpu, std::move(label)), r_(std::move(r)) {}
  ~fake_usb_session() override {
    std::string e;
    const char *keep = std::getenv("CAPGRAPH_FAKE_USB_NO_TEARDOWN");
    if (!(keep && std::string(keep) == "1") && !r_->g.gpu->teardown(&e))
      fprintf(stderr, "fake-usb: %s\n", e.c_str());
    gpu_state_save();
  }
  fault_wire &cable() { return r_->cable; }

 private:
  std::unique_ptr<rig> r_;
};

class fake_usb_transport final : public gfx1100_transport {
 public:
  fake_usb_transport(std::shared_ptr<fake_usb_session> s, std::string label,
                     std::unique_ptr<fake::fault_counter> joined_faults)
      : gfx1100_transport(s, gpu_model(), std::move(label)),
        s_(s.get()),
        joined_faults_(std::move(joined_faults)) {
    if (joined_faults_) s_->cable().joined = joined_faults_.get();
  }
  ~fake_usb_transport() override {
    if (!joined_faults_) return;
    std::lock_guard<std::recursive_mutex> hold(s_->lock);
    s_->cable().joined = nullptr;
    joined_faults_->finish(int64_t(allocations().size()));
  }

 private:
  fake_usb_session *s_;  // kept alive by the base's session pointer
  std::unique_ptr<fake::fault_counter> joined_faults_;
};

capgraph_status fail(std::string *err, const std::string &why) {
  *err = "fake-usb: " + why;
  return CAPGRAPH_ERR_DEVICE;
}

// The bridge firmware image: fake-usb:image=PATH, else $CAPGRAPH_BRIDGE_IMAGE, else bridge_fw.img
// beside the running program (the build copies it beside build/cli/capgraph; an install puts it
// beside the binary too). Never a build-tree path compiled in.
bool image_find(const std::string &option, std::string *path, std::string *why) {
  std::vector<std::string> tried;
  auto usable = [&](const std::string &p) {
    tried.push_back(p);
    return std::filesystem::is_regular_file(p);
  };
  if (!option.empty()) {
    if (usable(option)) return *path = option, true;
    *why = "no bridge firmware image at " + option + " (fake-usb:image=PATH)";
    return false;
  }
  if (const char *env = std::getenv("CAPGRAPH_BRIDGE_IMAGE"); env && *env) {
    if (usable(env)) return *path = env, true;
    *why = std::string("no bridge firmware image at ") + env + " (CAPGRAPH_BRIDGE_IMAGE)";
    return false;
  }
  std::error_code ec;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec && usable((self.parent_path() / "bridge_fw.img").string()))
    return *path = tried.back(), true;
  *why = "no bridge firmware image beside this program" +
         (tried.empty() ? std::string() : " (" + tried.back() + ")") +
         ": build it with sdcc (firmware/README.md), or name it with fake-usb:image=PATH or "
         "CAPGRAPH_BRIDGE_IMAGE";
  return false;
}

// "fake-usb[:fail=N[:ERRNO|:short]][:count][:image=PATH]" (image=, whose path may hold ':', last).
capgraph_status fake_usb_open(const char *device, std::unique_ptr<hcq::transport> *out,
                              std::string *err) {
  const std::string name = device;
  std::string option;
  fake::fault_plan faults;
  for (size_t at = name.find(':'); at != std::string::npos;) {
    if (name.compare(at + 1, 6, "image=") == 0) {
      option = name.substr(at + 7);
      break;
    }
    const size_t end = name.find(':', at + 1);
    const std::string word = name.substr(at + 1, end == std::string::npos ? end : end - at - 1);
    std::string why;
    if (!fake::fault_word(word, &faults, &why)) why = "not an option of fake-usb";
    if (!why.empty()) {
      *err = "fake-usb: '" + name + "': " + why + " (the fake has one bridge; its options are " +
             fake::fault_words_usage + ", image=PATH)";
      return CAPGRAPH_ERR_ARGUMENT;
    }
    at = end;
  }
  const std::string &fw_dir = fake_usb_firmware_dir();
  if (fw_dir.empty())
    return fail(err, "cannot write the synthetic gfx1100 firmware files to the temporary folder");
  const auto open = [&](std::shared_ptr<amd::am_session> *made, std::string *e) {
    std::string why;
    if (!gpu_state_load(&why)) return fail(e, why);
    auto r = std::make_unique<rig>(faults);
    if (!fake_usb_bridge_plug(r->dev, option, &why)) return fail(e, why);
    Enumeration en;
    if (!usb_enumerate(r->dev, &en, &why)) return fail(e, "USB enumeration: " + why);
    am::device_options o;
    o.firmware_dir = fw_dir;
    if (!amd::usb_gpu_open(r->g, o, &why)) return fail(e, why);
    std::string label = amd::usb_gpu_label(r->g, "fake-usb");
    *made = std::make_shared<fake_usb_session>(std::move(r), std::move(label));
    return CAPGRAPH_OK;
  };
  // One GPU model per process: every load joins the session a live model holds.
  std::shared_ptr<amd::am_session> s;
  bool joined = false;
  const capgraph_status st = amd::usb_gpu_session_get("fake-usb", open, &s, &joined, err);
  if (st != CAPGRAPH_OK) return st;
  auto session = std::static_pointer_cast<fake_usb_session>(s);
  const std::string label = amd::usb_gpu_model_label(*session, joined);
  // Which boot it was, for a person and the tests (the CLI prints no device line itself).
  fprintf(stderr, "%s\n", label.c_str());
  std::unique_ptr<fake::fault_counter> joined_faults;
  if (joined && (faults.fail_at || faults.count))
    joined_faults = std::make_unique<fake::fault_counter>("fake-usb", faults);
  std::lock_guard<std::recursive_mutex> hold(
      session->lock);  // the cable's counters change under it
  *out = std::make_unique<fake_usb_transport>(session, label, std::move(joined_faults));
  return CAPGRAPH_OK;
}

}  // namespace

bool fake_usb_gpu_state_load(std::string *err) { return gpu_state_load(err); }
void fake_usb_gpu_state_save() { gpu_state_save(); }

const std::string &fake_usb_firmware_dir() {
  // Our synthetic gfx1100 firmware files (the model checks every byte the PSP is handed), once.
  static const std::string dir = [] {
    namespace fs = std::filesystem;
    const fs::path d =
        fs::temp_directory_path() / ("capgraph_fake_usb_fw_" + std::to_string(::getpid()));
    std::error_code ec;
    fs::create_directories(d, ec);
    std::string e;
    return am::synthetic_firmware_write(d.string(), &e) ? d.string() : std::string();
  }();
  return dir;
}

bool fake_usb_bridge_plug(Asm2464 &dev, const std::string &image_option, std::string *why) {
  std::string image_path;
  if (!image_find(image_option, &image_path, why)) return false;
  std::vector<uint8_t> image;
  {
    std::ifstream in(image_path, std::ios::binary);
    if (in) image.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  if (image.empty()) return *why = "cannot read the bridge firmware image " + image_path, false;
  std::fill(dev.flash.data.begin(), dev.flash.data.end(), 0xFF);
  if (BRIDGE_FLASH_IMAGE_ADDR + image.size() > dev.flash.data.size())
    return *why = "the bridge firmware image does not fit the emulated flash", false;
  std::copy(image.begin(), image.end(), dev.flash.data.begin() + BRIDGE_FLASH_IMAGE_ADDR);
  dev.flash.set_otp_serial(0x0BADCAFE);
  gpu_model().attach(dev.endpoint);
  if (dev.power_on() != Asm2464::Mode::firmware)
    return *why = "the emulated bridge did not start its firmware", false;
  return true;
}

}  // namespace capgraph::emu

namespace capgraph::amd {

void fake_usb_register() {
  using namespace emu;
  hcq::target_register(
      "fake-usb", &fake_usb_open, &hcq::amd_target,
      [] {
        return std::string(
            "fake-usb: a fake gfx1100 behind the emulated USB bridge running our firmware image: "
            "the "
            "`usb` device's host code end to end (boot, AM transport), kernels in the RDNA3 "
            "emulator; "
            "cold boot, then partial boot while the GPU keeps its state (in one process, or across "
            "processes with CAPGRAPH_FAKE_USB_STATE=PATH" +
            std::string(
                state_path()
                    ? std::string(": ") + state_path() +
                          (std::filesystem::exists(state_path()) ? ", present" : ", absent: cold")
                    : "") +
            "); measures no time\n");
      },
      [](hcq::transport *dev, const fb::Capture *c, const std::vector<uint64_t> &at,
         std::string *err) {
        // fake_usb_open makes a fake_usb_transport, a gfx1100_transport.
        return static_cast<gfx1100_transport *>(dev)->capture_attach(c, at, err);
      });
}

}  // namespace capgraph::amd
