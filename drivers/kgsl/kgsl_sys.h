// The seam under the KGSL transport: the five system calls of hcq::host_sys, so a fake KGSL
// (targets/adreno/fake/fake_kgsl.*) can sit at the ioctl boundary and the real transport code
// runs unchanged against it, plus what sits behind it, for messages.
#pragma once
#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "capgraph/capture_generated.h"
#include "capgraph_runtime.h"
#include "hcq/host_sys.h"

namespace capgraph::kgsl {

class kgsl_sys : public hcq::host_sys {
 public:
  // For messages: "" for the real driver, "fake " for a fake.
  virtual std::string kind() const { return ""; }
};

// The real system calls.
std::shared_ptr<kgsl_sys> kgsl_sys_host();

}  // namespace capgraph::kgsl
