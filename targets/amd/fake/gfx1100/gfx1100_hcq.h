// gfx1100_hcq — the HCQ transport a test or `--device fake-usb` puts over the AM driver booted on
// the register-model gfx1100: amd::am_transport (the real host code, unchanged) plus what the fake
// needs at load, linking the capture's kernels to the packet interpreter the model's queues run on
// (`--device fake-usb`'s capture_attach hook calls it; tests pass graph_options()).
#pragma once

#include "amd_am_transport.h"
#include "fake_amd.h"
#include "gfx1100_model.h"

namespace capgraph::emu {

// Hands the capture of the model loaded on `t` to `model`'s packet engine, beside those of the
// other models on the GPU, until `t` closes (the engine then forgets it: its memory goes with
// the model).
inline capgraph_status gfx1100_capture_attach(amd::am_transport &t, gfx1100_model &model,
                                              const fb::Capture *c,
                                              const std::vector<uint64_t> &program_gpu,
                                              std::string *err) {
  std::lock_guard<std::recursive_mutex> hold(
      t.session()->lock);  // the engine may be running another's
  const capgraph_status st = model.engine().capture_attach(c, program_gpu, err, &t);
  if (st == CAPGRAPH_OK) {
    const void *owner = &t;
    t.at_close([&model, owner] { model.engine().capture_detach(owner); });
  }
  return st;
}

class gfx1100_transport : public amd::am_transport {
 public:
  gfx1100_transport(am::device &dev, gfx1100_model &model, std::string label)
      : am_transport(dev, std::move(label)), model_(model) {}
  // One model's transport over a session other models on the GPU share (`--device fake-usb`).
  gfx1100_transport(std::shared_ptr<amd::am_session> s, gfx1100_model &model, std::string label)
      : am_transport(std::move(s), std::move(label)), model_(model) {}
  capgraph_status capture_attach(const fb::Capture *c, const std::vector<uint64_t> &program_gpu,
                                 std::string *err) {
    return gfx1100_capture_attach(*this, model_, c, program_gpu, err);
  }
  // Options that hand the capture to the model's engine at load (tests that build a graph).
  hcq::graph_options graph_options(hcq::graph_options o = {}) {
    o.capture_attach = [this](const fb::Capture *c, const std::vector<uint64_t> &at,
                              std::string *err) { return capture_attach(c, at, err); };
    return o;
  }

 private:
  gfx1100_model &model_;
};

}  // namespace capgraph::emu
