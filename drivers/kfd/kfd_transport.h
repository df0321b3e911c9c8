// The HCQ transport for desktop AMD GPUs through the amdgpu kernel driver's KFD interface
// (/dev/kfd plus the GPU's render node): memory, user-mode queues with doorbells, and bounded
// waits on signals in memory. Sources: Linux include/uapi/linux/kfd_ioctl.h (the ioctls and
// their argument structs, used here through the installed header), amdkfd/kfd_chardev.c
// (ioctl semantics), tinygrad runtime/ops_amd.py (the order of the calls: facts only).
#pragma once
#include <memory>
#include <string>

#include "hcq/host_sys.h"
#include "hcq/transport.h"
#include "kfd_topology.h"

namespace capgraph::kfd {

struct kfd_paths {
  std::string kfd = "/dev/kfd";
  std::string topology = topology_root;
  std::string dri = "/dev/dri";
  // The system calls (open, close, ioctl, mmap, munmap); null: the real ones. A fake KFD sits
  // here (drivers/kfd/kfd_transport_test.cpp) and the transport code runs unchanged against it.
  std::shared_ptr<hcq::host_sys> sys;
};

// Opens "amd" (the first GPU) or "amd:N" (the N-th, from 0). Errors say plainly what is missing:
// no /dev/kfd, no permission, no GPU node, an unsupported KFD version.
//
// Models loaded in one process share one session per GPU: KFD keeps one kfd_process per process
// (opening /dev/kfd again returns the same one) and binds each of its GPUs to one DRM file for
// the life of that process (AMDKFD_IOC_ACQUIRE_VM refuses another with EBUSY), and takes one
// event page per process. So the /dev/kfd and render-node files, the VM and the doorbell
// mapping are opened once and kept until the process exits (closing them would not free them:
// the kernel holds the DRM file, and a new one would be refused). Each model's transport has its
// own memory, queues and signal event, and frees them when the model is freed.
capgraph_status kfd_open(const char *device, std::unique_ptr<hcq::transport> *out,
                         std::string *err);
capgraph_status kfd_open_at(const kfd_paths &paths, const char *device,
                            std::unique_ptr<hcq::transport> *out, std::string *err);

// One line per GPU for `capgraph devices`, or one line saying why there are none.
std::string kfd_devices_describe(const kfd_paths &paths = {});

}  // namespace capgraph::kfd
