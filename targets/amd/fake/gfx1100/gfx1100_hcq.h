// gfx1100_hcq — the HCQ transport a test or `--device fake-usb` puts over the AM driver booted on
// the register-model gfx1100: amd::am_transport (the real host code, unchanged) plus what the fake
// needs at load, linking the capture's kernels to the packet interpreter the model's queues run on
// (`--device fake-usb`'s capture_attach hook calls it; tests pass graph_options()).
#pragma once

#include "amd_am_transport.h"
#include "fake_amd.h"
#include "gfx1100_model.h"

namespace capgraph::emu {

class gfx1100_transport : public amd::am_transport {
 public:
  gfx1100_transport(am::device &dev, gfx1100_model &model, std::string label)
      : am_transport(dev, std::move(label)), model_(model) {}
  capgraph_status capture_attach(const fb::Capture *c, const std::vector<uint64_t> &program_gpu,
                                 std::string *err) {
    return model_.engine().capture_attach(c, program_gpu, err);
  }
  hcq::graph_options graph_options(hcq::graph_options o = {}) {
    return amd::graph_options_for(model_.engine(), o);
  }

 private:
  gfx1100_model &model_;
};

}  // namespace capgraph::emu
