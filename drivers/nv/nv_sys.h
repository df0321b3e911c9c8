// The seam under the NVIDIA transport: every call it makes into the operating system. The real
// one (nv_sys_linux) is hcq::host_sys's five calls and a plain store for the doorbell; a fake
// (targets/nv/fake/fake_nv.h) answers the same calls at the ioctl boundary, so the transport's
// whole RM/UVM sequence runs unchanged in the tests.
#pragma once
#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "capgraph/capture_generated.h"
#include "hcq/host_sys.h"

namespace capgraph::nv {

class nv_sys : public hcq::host_sys {
 public:
  // The doorbell: a 32-bit store of the channel's work-submit token into the usermode page.
  virtual void doorbell_write(volatile uint32_t *at, uint32_t token) = 0;
  // A fake's fault, reported by waits ("" when none).
  virtual std::string fault() const { return ""; }
  // What sits behind the seam, for messages ("" for the real driver).
  virtual std::string what() const { return ""; }
};

std::shared_ptr<nv_sys> nv_sys_linux();

}  // namespace capgraph::nv
