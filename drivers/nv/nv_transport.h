// The HCQ transport for NVIDIA GPUs through the kernel driver's RM and UVM interfaces
// (/dev/nvidiactl, /dev/nvidiaN, /dev/nvidia-uvm), with no CUDA library: the driver's branch is
// read first (an unknown branch is an error naming its version), then a client, the device and
// subdevice, a UVM-owned GPU address space, a channel group with a compute and a copy GPFIFO
// channel, their work-submit tokens and the doorbell page. GPU memory is mapped through UVM only
// (no RM_MAP_MEMORY_DMA, no NV01_MEMORY_VIRTUAL, which sandboxing proxies refuse: nv_plan.md §0.6)
// and for the CPU at the same address. Layouts: nv_abi.h; order: nv_plan.md §2.2 and §6.6.
#pragma once
#include <memory>
#include <string>

#include "hcq/transport.h"
#include "nv_sys.h"

namespace capgraph::nv {

struct nv_paths {
  std::string ctl = "/dev/nvidiactl";
  std::string uvm = "/dev/nvidia-uvm";
  std::string dev = "/dev/nvidia";  // + the minor number
};

// Opens "nv" (the first GPU) or "nv:N" through the real driver.
capgraph_status nv_open(const char *device, std::unique_ptr<hcq::transport> *out, std::string *err);
// The same through any seam (a fake at the ioctl boundary in the tests and `--device fake-nv`).
capgraph_status nv_open_with(std::shared_ptr<nv_sys> sys, const nv_paths &paths, const char *device,
                             std::unique_ptr<hcq::transport> *out, std::string *err);

// One line per GPU for `capgraph devices`, or one line saying why there is none.
std::string nv_devices_describe();

// Parses the driver's version string ("580.142", "580.159.04") into its branch (580); 0 when it
// is not a version.
unsigned nv_branch(const std::string &version);

}  // namespace capgraph::nv
