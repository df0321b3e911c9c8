#include "fake_nv.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>

#include "clock_text.h"
#include "hcq/target.h"
#include "nv_abi.h"
#include "nv_methods.h"
#include "nv_qmd.h"
#include "nv_transport.h"

namespace capgraph::nv {
namespace {

using namespace abi;

// RM status codes (src/common/sdk/nvidia/inc/nvstatuscodes.h).
constexpr uint32_t NV_ERR_INVALID_ADDRESS = 0x1E, NV_ERR_INVALID_ARGUMENT = 0x1F,
                   NV_ERR_INVALID_CLASS = 0x22, NV_ERR_INVALID_CLIENT = 0x23,
                   NV_ERR_INVALID_OBJECT_HANDLE = 0x33, NV_ERR_INVALID_OBJECT_PARENT = 0x36,
                   NV_ERR_INVALID_PARAM_STRUCT = 0x3A, NV_ERR_INVALID_STATE = 0x40,
                   NV_ERR_NOT_SUPPORTED = 0x56, NV_ERR_UVM_ADDRESS_IN_USE = 0x68;

enum fd_kind { kCtl = 1, kDevice = 2, kUvm = 3 };

const uint8_t kUuid[16] = {0x47, 0x50, 0x55, 0x2d, 0x66, 0x61, 0x6b, 0x65,
                           0x2d, 0x6e, 0x76, 0x00, 0x12, 0x34, 0x56, 0x78};
constexpr uint32_t kGpuId = 0x100;

// The names the transport gives the calls (nv_abi.h), for injected failures.
std::string ioctl_name(int kind, unsigned long request) {
  if (kind == kUvm) switch (request) {
      case UVM_INITIALIZE: return "UVM_INITIALIZE";
      case UVM_MM_INITIALIZE: return "UVM_MM_INITIALIZE";
      case UVM_REGISTER_GPU: return "UVM_REGISTER_GPU";
      case UVM_REGISTER_GPU_VASPACE: return "UVM_REGISTER_GPU_VASPACE";
      case UVM_REGISTER_CHANNEL: return "UVM_REGISTER_CHANNEL";
      case UVM_CREATE_EXTERNAL_RANGE: return "UVM_CREATE_EXTERNAL_RANGE";
      case UVM_MAP_EXTERNAL_ALLOCATION: return "UVM_MAP_EXTERNAL_ALLOCATION";
      case UVM_FREE: return "UVM_FREE";
      default: return "UVM ioctl " + std::to_string(request);
    }
  switch (request & 0xff) {
    case NV_ESC_CARD_INFO: return "NV_ESC_CARD_INFO";
    case NV_ESC_REGISTER_FD: return "NV_ESC_REGISTER_FD";
    case NV_ESC_CHECK_VERSION_STR: return "NV_ESC_CHECK_VERSION_STR";
    case NV_ESC_RM_FREE: return "NV_ESC_RM_FREE";
    case NV_ESC_RM_CONTROL: return "NV_ESC_RM_CONTROL";
    case NV_ESC_RM_ALLOC: return "NV_ESC_RM_ALLOC";
    case NV_ESC_RM_MAP_MEMORY: return "NV_ESC_RM_MAP_MEMORY";
  }
  return "RM ioctl " + std::to_string(request & 0xff);
}

// PCI device ids of one part per chip (RTX 3090, RTX 4090, H100 SXM5), for CARD_INFO.
uint16_t device_id(const chip &c) { return c.sm == 90 ? 0x2330 : c.sm == 89 ? 0x2684 : 0x2204; }

}  // namespace

fake_rm::fake_rm(const chip &c, std::string version, bool wedged, fake_nv_mode mode,
                 fake::fault_plan faults)
    : chip_(c),
      version_(std::move(version)),
      wedged_(wedged),
      faults_("fake-nv", faults),
      mode_(mode) {}

bool fake_rm::fault_inject(const std::string &what, int default_error) {
  int e = 0;
  if (!faults_.call(what, default_error, &e)) return false;
  calls_.push_back(what + " (injected " + fake::errno_name(e) + ")");
  errno = e;
  return true;
}

fake_rm::~fake_rm() {
  // What the transport left: its teardown ran before the transport let go of this fake.
  faults_.finish(client_live());
  if (profile_ && !kernel_names_.empty()) hcq::device_profile_deliver(profile_report());
  for (auto &[h, o] : objects_) {
    if (o.host) ::munmap(o.host, o.size);
    if (o.memfd >= 0) ::close(o.memfd);
  }
}

std::string fake_rm::what() const {
  const char *runs = mode_ == fake_nv_mode::ptx ? "kernels' PTX interpreted"
                     : mode_ == fake_nv_mode::twin
                         ? "kernels run as host twins"
                         : "kernels' PTX interpreted and checked against host twins";
  return "a fake RM/UVM (fake-nv: " + std::string(chip_.family) + "; " + runs +
         ", no SASS, no time)";
}

bool fake_rm::raise(const std::string &why) {
  if (fault_.empty()) fault_ = why;
  return false;
}

uint64_t fake_rm::clock() const {
  return uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(
                      std::chrono::steady_clock::now().time_since_epoch())
                      .count());
}

int fake_rm::open(const char *path, int) {
  if (fault_inject(std::string("open ") + path, ENODEV)) return -1;
  const std::string p = path;
  int kind = p == "/dev/nvidiactl"    ? kCtl
             : p == "/dev/nvidia-uvm" ? kUvm
             : p == "/dev/nvidia0"    ? kDevice
                                      : 0;
  if (!kind) {
    errno = ENOENT;
    return -1;
  }
  calls_.push_back("open " + p);
  fds_[next_fd_] = kind;
  return next_fd_++;
}

int fake_rm::close(int fd) {
  const bool injected = fault_inject("close", EIO);  // released all the same, as close(2)
  const int e = errno;
  if (!fds_.erase(fd)) {
    errno = EBADF;
    return -1;
  }
  registered_.erase(fd);
  pending_map_.erase(fd);
  if (injected) errno = e;
  return injected ? -1 : 0;
}

void *fake_rm::mmap(void *addr, size_t length, int prot, int flags, int fd, off_t offset) {
  if (fault_inject("mmap", ENOMEM)) return MAP_FAILED;
  if (fd < 0) {
    void *p = ::mmap(addr, length, prot, flags, fd, offset);
    if (p != MAP_FAILED) host_maps_[uintptr_t(p)] = length;
    return p;
  }
  auto it = fds_.find(fd);
  auto pm = pending_map_.find(fd);
  if (it == fds_.end() || it->second != kDevice || pm == pending_map_.end()) {
    raise("mmap of fd " + std::to_string(fd) + " with no RM_MAP_MEMORY pending on it");
    errno = EINVAL;
    return MAP_FAILED;
  }
  const object &o = objects_.at(pm->second);
  if (offset != 0 || length > o.size) {
    raise("mmap of " + std::to_string(length) + " bytes of RM memory " + hex(pm->second) +
          " that holds " + std::to_string(o.size));
    errno = EINVAL;
    return MAP_FAILED;
  }
  void *p = ::mmap(addr, length, prot, flags, o.memfd, 0);
  if (p != MAP_FAILED && pm->second == usermode_memory_) usermode_cpu_ = static_cast<uint8_t *>(p);
  if (p != MAP_FAILED) host_maps_[uintptr_t(p)] = length;
  pending_map_.erase(pm);
  calls_.push_back("mmap");
  return p;
}

int fake_rm::munmap(void *addr, size_t length) {
  const bool injected = fault_inject("munmap", EINVAL);  // unmapped all the same
  const int e = errno;
  const uintptr_t a = uintptr_t(addr);
  for (auto it = host_maps_.lower_bound(a); it != host_maps_.end() && it->first < a + length;)
    it = host_maps_.erase(it);
  const int r = ::munmap(addr, length);
  if (injected) errno = e;
  return injected ? -1 : r;
}

int fake_rm::ioctl(int fd, unsigned long request, void *arg) {
  auto it = fds_.find(fd);
  const int kind = it == fds_.end() ? 0 : it->second;
  const bool release = kind == kUvm ? request == UVM_FREE : (request & 0xff) == NV_ESC_RM_FREE;
  const bool alloc =
      kind == kUvm
          ? request == UVM_CREATE_EXTERNAL_RANGE || request == UVM_MAP_EXTERNAL_ALLOCATION
          : (request & 0xff) == NV_ESC_RM_ALLOC || (request & 0xff) == NV_ESC_RM_MAP_MEMORY;
  if (fault_inject(ioctl_name(kind, request), alloc ? ENOMEM : ENODEV)) {
    if (!release) return -1;
    const int e = errno;
    ioctl_body(fd, request, arg);  // a release is done, then reported failed
    errno = e;
    return -1;
  }
  return ioctl_body(fd, request, arg);
}

int fake_rm::ioctl_body(int fd, unsigned long request, void *arg) {
  auto it = fds_.find(fd);
  if (it == fds_.end()) {
    errno = EBADF;
    return -1;
  }
  if (it->second == kUvm) return uvm(request, arg);
  const unsigned nr = request & 0xff;
  const size_t size = request >> 16 & 0x3fff;
  if ((request >> 8 & 0xff) != 'F') {
    errno = ENOTTY;
    return -1;
  }
  if (it->second == kDevice) {
    if (nr != NV_ESC_REGISTER_FD || size != sizeof(nv_ioctl_register_fd_t)) {
      raise("ioctl " + std::to_string(nr) + " on a device fd");
      errno = EINVAL;
      return -1;
    }
    const int ctl = static_cast<nv_ioctl_register_fd_t *>(arg)->ctl_fd;
    if (!fds_.count(ctl) || fds_[ctl] != kCtl) {
      errno = EINVAL;
      return -1;
    }
    calls_.push_back("REGISTER_FD");
    registered_[fd] = uint32_t(ctl);
    return 0;
  }
  return rm(nr, size, arg);
}

// The escape layer checks each struct's size exactly (escape.c); a wrong one is EINVAL.
int fake_rm::rm(unsigned nr, size_t size, void *arg) {
  const auto want = [&](size_t s, const char *name) {
    if (size == s) return true;
    raise(std::string(name) + " with a " + std::to_string(size) +
          "-byte argument (the 580 ABI's is " + std::to_string(s) + ")");
    errno = EINVAL;
    return false;
  };
  switch (nr) {
    case NV_ESC_CHECK_VERSION_STR: {
      if (!want(sizeof(nv_ioctl_rm_api_version_t), "NV_ESC_CHECK_VERSION_STR")) return -1;
      auto *v = static_cast<nv_ioctl_rm_api_version_t *>(arg);
      calls_.push_back("CHECK_VERSION_STR");
      version_checked_ = true;
      if (v->cmd == NV_RM_API_VERSION_CMD_QUERY) {
        memset(v->versionString, 0, sizeof v->versionString);
        memcpy(v->versionString, version_.data(),
               std::min(version_.size(), sizeof v->versionString - 1));
        v->reply = NV_RM_API_VERSION_REPLY_RECOGNIZED;
      }
      return 0;
    }
    case NV_ESC_CARD_INFO: {
      if (!want(64 * sizeof(nv_ioctl_card_info_t), "NV_ESC_CARD_INFO")) return -1;
      auto *cards = static_cast<nv_ioctl_card_info_t *>(arg);
      memset(cards, 0, 64 * sizeof *cards);
      cards[0].valid = 1;
      cards[0].gpu_id = kGpuId;
      cards[0].pci_info.vendor_id = 0x10de;
      cards[0].pci_info.device_id = device_id(chip_);
      cards[0].minor_number = 0;
      calls_.push_back("CARD_INFO");
      return 0;
    }
    case NV_ESC_RM_ALLOC: {
      if (!want(sizeof(NVOS21_PARAMETERS), "NV_ESC_RM_ALLOC")) return -1;
      auto *p = static_cast<NVOS21_PARAMETERS *>(arg);
      p->status = rm_alloc(p);
      return 0;
    }
    case NV_ESC_RM_FREE: {
      if (!want(sizeof(NVOS00_PARAMETERS), "NV_ESC_RM_FREE")) return -1;
      auto *p = static_cast<NVOS00_PARAMETERS *>(arg);
      calls_.push_back("RM_FREE");
      if (!objects_.count(p->hObjectOld)) {
        p->status = NV_ERR_INVALID_OBJECT_HANDLE;
        return 0;
      }
      // Freeing an object frees everything under it.
      std::vector<uint32_t> gone{p->hObjectOld};
      for (size_t i = 0; i < gone.size(); ++i)
        for (auto &[h, o] : objects_)
          if (o.parent == gone[i] && h != gone[i]) gone.push_back(h);
      for (uint32_t h : gone) {
        object &o = objects_[h];
        if (o.host) ::munmap(o.host, o.size);
        if (o.memfd >= 0) ::close(o.memfd);
        channels_.erase(h);
        objects_.erase(h);
      }
      if (p->hObjectOld == client_) client_ = 0;
      p->status = NV_OK;
      return 0;
    }
    case NV_ESC_RM_CONTROL: {
      if (!want(sizeof(NVOS54_PARAMETERS), "NV_ESC_RM_CONTROL")) return -1;
      auto *p = static_cast<NVOS54_PARAMETERS *>(arg);
      p->status = rm_control(p);
      return 0;
    }
    case NV_ESC_RM_MAP_MEMORY: {
      if (!want(sizeof(nv_ioctl_nvos33_parameters_with_fd), "NV_ESC_RM_MAP_MEMORY")) return -1;
      auto *p = static_cast<nv_ioctl_nvos33_parameters_with_fd *>(arg);
      calls_.push_back("RM_MAP_MEMORY");
      auto o = objects_.find(p->params.hMemory);
      if (p->params.hClient != client_ || o == objects_.end() || !o->second.memfd ||
          o->second.memfd < 0) {
        p->params.status = NV_ERR_INVALID_OBJECT_HANDLE;
        return 0;
      }
      if (!registered_.count(p->fd)) {
        raise("RM_MAP_MEMORY names fd " + std::to_string(p->fd) +
              ", which is not a registered device fd");
        p->params.status = NV_ERR_INVALID_ARGUMENT;
        return 0;
      }
      if (p->params.offset + p->params.length > o->second.size) {
        p->params.status = NV_ERR_INVALID_ARGUMENT;
        return 0;
      }
      pending_map_[p->fd] = p->params.hMemory;
      p->params.status = NV_OK;
      return 0;
    }
    default:
      raise("RM escape " + hex(nr) + " is not one the fake knows");
      errno = EINVAL;
      return -1;
  }
}

uint32_t fake_rm::handle_new(uint32_t wanted) {
  if (wanted && !objects_.count(wanted)) return wanted;
  while (objects_.count(next_handle_)) ++next_handle_;
  return next_handle_++;
}

const fake_rm::object *fake_rm::find(uint32_t handle, uint32_t cls) const {
  auto it = objects_.find(handle);
  return it != objects_.end() && it->second.cls == cls ? &it->second : nullptr;
}

uint32_t fake_rm::rm_alloc(void *arg) {
  auto *p = static_cast<NVOS21_PARAMETERS *>(arg);
  const uint32_t cls = p->hClass;
  calls_.push_back("RM_ALLOC " + hex(cls));
  if (!version_checked_)
    return raise("RM_ALLOC before the driver version was read"), NV_ERR_INVALID_STATE;
  // RM copies as many bytes as the class's own struct (alloc_free.c); the fake checks the size the
  // caller meant matches, which the real driver cannot.
  const auto params = [&](size_t s) {
    if (s == 0) return p->pAllocParms == 0 || p->paramsSize == 0;
    return p->pAllocParms != 0 && p->paramsSize == s;
  };
  if (cls == NV01_ROOT_CLIENT) {
    if (client_) return NV_ERR_INVALID_STATE;
    client_ = p->hObjectNew = handle_new(p->hObjectNew);
    objects_[client_] = object{cls, 0};
    return NV_OK;
  }
  if (p->hRoot != client_ || !client_) return NV_ERR_INVALID_CLIENT;
  auto parent = objects_.find(p->hObjectParent);
  if (parent == objects_.end()) return NV_ERR_INVALID_OBJECT_PARENT;
  const uint32_t pcls = parent->second.cls;
  void *a = reinterpret_cast<void *>(uintptr_t(p->pAllocParms));
  object o{cls, p->hObjectParent};
  const auto bad = [&](const std::string &why) {
    raise("RM_ALLOC " + hex(cls) + ": " + why);
    return NV_ERR_INVALID_ARGUMENT;
  };
  const auto mem_new = [&](uint64_t size) {
    o.size = size;
    o.memfd = memfd_create("fake-nv", MFD_CLOEXEC);
    if (o.memfd < 0 || ftruncate(o.memfd, off_t(size)) != 0) return false;
    void *h = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, o.memfd, 0);
    if (h == MAP_FAILED) return false;
    o.host = static_cast<uint8_t *>(h);
    return true;
  };
  if (cls == NV01_DEVICE_0) {
    if (pcls != NV01_ROOT_CLIENT || !params(sizeof(NV0080_ALLOC_PARAMETERS)))
      return bad("parent or parameters");
    if (static_cast<NV0080_ALLOC_PARAMETERS *>(a)->deviceId != 0) return NV_ERR_INVALID_ARGUMENT;
  } else if (cls == NV20_SUBDEVICE_0) {
    if (pcls != NV01_DEVICE_0 || !params(sizeof(NV2080_ALLOC_PARAMETERS)))
      return bad("parent or parameters");
  } else if (cls == chip_.usermode_class || cls == TURING_USERMODE_A) {
    if (pcls != NV20_SUBDEVICE_0 || !params(0)) return bad("parent or parameters");
    if (!mem_new(USERMODE_BYTES)) return NV_ERR_INVALID_STATE;
  } else if (cls == FERMI_VASPACE_A) {
    if (pcls != NV01_DEVICE_0 || !params(sizeof(NV_VASPACE_ALLOCATION_PARAMETERS)))
      return bad("parent or parameters");
    o.flags = static_cast<NV_VASPACE_ALLOCATION_PARAMETERS *>(a)->flags;
  } else if (cls == NV1_MEMORY_USER || cls == NV1_MEMORY_SYSTEM) {
    if (pcls != NV01_DEVICE_0 || !params(sizeof(NV_MEMORY_ALLOCATION_PARAMS)))
      return bad("parent or parameters");
    const auto *m = static_cast<NV_MEMORY_ALLOCATION_PARAMS *>(a);
    if (m->size == 0 || m->size > (64ull << 30) || (m->alignment && m->size % m->alignment))
      return bad("size " + std::to_string(m->size));
    const bool vid = (m->attr >> 25 & 3) == 0;
    if (vid != (cls == NV1_MEMORY_USER)) return bad("ATTR_LOCATION disagrees with the class");
    if (!mem_new(m->size)) return NV_ERR_INVALID_STATE;
  } else if (cls == KEPLER_CHANNEL_GROUP_A) {
    if (pcls != NV01_DEVICE_0 || !params(sizeof(NV_CHANNEL_GROUP_ALLOCATION_PARAMETERS)))
      return bad("parent or parameters");
  } else if (cls == FERMI_CONTEXT_SHARE_A) {
    if (pcls != KEPLER_CHANNEL_GROUP_A || !params(sizeof(NV_CTXSHARE_ALLOCATION_PARAMETERS)))
      return bad("parent or parameters");
    if (!find(static_cast<NV_CTXSHARE_ALLOCATION_PARAMETERS *>(a)->hVASpace, FERMI_VASPACE_A))
      return bad("hVASpace is not a VA space");
  } else if (cls == chip_.gpfifo_class) {
    if (pcls != KEPLER_CHANNEL_GROUP_A || !params(sizeof(NV_CHANNEL_ALLOC_PARAMS)))
      return bad("parent or parameters");
    const auto *c = static_cast<NV_CHANNEL_ALLOC_PARAMS *>(a);
    if (!find(c->hContextShare, FERMI_CONTEXT_SHARE_A)) return bad("hContextShare");
    if (!find(c->hObjectError, NV1_MEMORY_SYSTEM)) return bad("hObjectError is not system memory");
    const object *userd = find(c->hUserdMemory[0], NV1_MEMORY_USER);
    if (!userd || c->userdOffset[0] + 0x200 > userd->size)
      return bad("hUserdMemory[0] / userdOffset[0]");
    if (!c->gpFifoEntries || (c->gpFifoEntries & (c->gpFifoEntries - 1)))
      return bad("gpFifoEntries not a power of two");
    if (!host(c->gpFifoOffset, 8ull * c->gpFifoEntries))
      return bad("the GPFIFO at " + hex(c->gpFifoOffset) + " is not mapped for the GPU");
    // USERD lies in hUserdMemory: find where the GPU sees it.
    uint64_t userd_gpu = 0;
    for (auto &[base, m] : maps_)
      if (m.memory == c->hUserdMemory[0]) userd_gpu = base + c->userdOffset[0];
    if (!userd_gpu) return bad("its USERD memory is not mapped for the GPU");
    p->hObjectNew = handle_new(p->hObjectNew);
    channel ch;
    ch.handle = p->hObjectNew;
    ch.group = p->hObjectParent;
    ch.token = 0x1000 + uint32_t(channels_.size());
    ch.ring = c->gpFifoOffset;
    ch.entries = c->gpFifoEntries;
    ch.userd = userd_gpu;
    channels_[ch.handle] = ch;
    objects_[p->hObjectNew] = o;
    return NV_OK;
  } else if (cls == chip_.compute_class || cls == chip_.copy_class) {
    auto ch = channels_.find(p->hObjectParent);
    if (ch == channels_.end() || !params(0)) return bad("parent is not a channel, or parameters");
    if (ch->second.engine) return bad("the channel already has an engine object");
    ch->second.engine = cls;
  } else {
    raise("RM_ALLOC: class " + hex(cls) + " is not one " + chip_.family +
          " offers to capgraph's sequence");
    return NV_ERR_INVALID_CLASS;
  }
  p->hObjectNew = handle_new(p->hObjectNew);
  if (cls == chip_.usermode_class || cls == TURING_USERMODE_A) usermode_memory_ = p->hObjectNew;
  objects_[p->hObjectNew] = o;
  return NV_OK;
}

uint32_t fake_rm::rm_control(void *arg) {
  auto *p = static_cast<NVOS54_PARAMETERS *>(arg);
  calls_.push_back("RM_CONTROL " + hex(p->cmd));
  if (p->hClient != client_ || !client_) return NV_ERR_INVALID_CLIENT;
  auto obj = objects_.find(p->hObject);
  if (obj == objects_.end()) return NV_ERR_INVALID_OBJECT_HANDLE;
  void *a = reinterpret_cast<void *>(uintptr_t(p->params));
  // control.c rejects a paramsSize that is not the control's.
  const auto sized = [&](size_t s, uint32_t cls) {
    if (obj->second.cls != cls)
      return raise("RM_CONTROL " + hex(p->cmd) + " on an object of class " + hex(obj->second.cls)),
             false;
    if (p->paramsSize != s || !a)
      return raise("RM_CONTROL " + hex(p->cmd) + " with paramsSize " +
                   std::to_string(p->paramsSize) + " (the 580 ABI's is " + std::to_string(s) + ")"),
             false;
    return true;
  };
  switch (p->cmd) {
    case NV0000_CTRL_CMD_GPU_GET_ID_INFO_V2: {
      if (!sized(sizeof(NV0000_CTRL_GPU_GET_ID_INFO_V2_PARAMS), NV01_ROOT_CLIENT))
        return NV_ERR_INVALID_PARAM_STRUCT;
      auto *q = static_cast<NV0000_CTRL_GPU_GET_ID_INFO_V2_PARAMS *>(a);
      if (q->gpuId != kGpuId) return NV_ERR_INVALID_ARGUMENT;
      q->deviceInstance = 0;
      q->subDeviceInstance = 0;
      return NV_OK;
    }
    case NV0080_CTRL_CMD_GPU_GET_CLASSLIST_V2: {
      if (!sized(sizeof(NV0080_CTRL_GPU_GET_CLASSLIST_V2_PARAMS), NV01_DEVICE_0))
        return NV_ERR_INVALID_PARAM_STRUCT;
      auto *q = static_cast<NV0080_CTRL_GPU_GET_CLASSLIST_V2_PARAMS *>(a);
      const uint32_t list[] = {NV01_ROOT_CLIENT,       NV01_DEVICE_0,         NV20_SUBDEVICE_0,
                               NV1_MEMORY_SYSTEM,      NV1_MEMORY_USER,       FERMI_VASPACE_A,
                               KEPLER_CHANNEL_GROUP_A, FERMI_CONTEXT_SHARE_A, TURING_USERMODE_A,
                               chip_.usermode_class,   chip_.gpfifo_class,    chip_.copy_class,
                               chip_.compute_class};
      q->numClasses = 0;
      for (uint32_t c : list) q->classList[q->numClasses++] = c;
      return NV_OK;
    }
    case NV2080_CTRL_CMD_GPU_GET_GID_INFO: {
      if (!sized(sizeof(NV2080_CTRL_GPU_GET_GID_INFO_PARAMS), NV20_SUBDEVICE_0))
        return NV_ERR_INVALID_PARAM_STRUCT;
      auto *q = static_cast<NV2080_CTRL_GPU_GET_GID_INFO_PARAMS *>(a);
      if ((q->flags & 3) != NV2080_GPU_CMD_GPU_GET_GID_FLAGS_FORMAT_BINARY)
        return NV_ERR_INVALID_ARGUMENT;
      q->length = 16;
      memcpy(q->data, kUuid, 16);
      return NV_OK;
    }
    case NVC36F_CTRL_CMD_GPFIFO_GET_WORK_SUBMIT_TOKEN: {
      if (!sized(sizeof(NVC36F_CTRL_CMD_GPFIFO_GET_WORK_SUBMIT_TOKEN_PARAMS), chip_.gpfifo_class))
        return NV_ERR_INVALID_PARAM_STRUCT;
      static_cast<NVC36F_CTRL_CMD_GPFIFO_GET_WORK_SUBMIT_TOKEN_PARAMS *>(a)->workSubmitToken =
          channels_.at(p->hObject).token;
      return NV_OK;
    }
    case NVA06C_CTRL_CMD_GPFIFO_SCHEDULE: {
      if (!sized(sizeof(NVA06C_CTRL_GPFIFO_SCHEDULE_PARAMS), KEPLER_CHANNEL_GROUP_A))
        return NV_ERR_INVALID_PARAM_STRUCT;
      obj->second.scheduled = static_cast<NVA06C_CTRL_GPFIFO_SCHEDULE_PARAMS *>(a)->bEnable != 0;
      return NV_OK;
    }
    default:
      raise("RM_CONTROL " + hex(p->cmd) + " is not one the fake knows");
      return NV_ERR_NOT_SUPPORTED;
  }
}

int fake_rm::uvm(unsigned long request, void *arg) {
  uint32_t status = NV_OK;
  uint32_t *out = nullptr;
  const auto need = [&](bool ok, const std::string &why, uint32_t code) {
    if (!ok && status == NV_OK) {
      raise(why);
      status = code;
    }
    return ok;
  };
  switch (request) {
    case UVM_INITIALIZE: {
      auto *q = static_cast<UVM_INITIALIZE_PARAMS *>(arg);
      out = &q->rmStatus;
      calls_.push_back("UVM_INITIALIZE");
      uvm_ready_ = true;
      break;
    }
    case UVM_MM_INITIALIZE: {
      auto *q = static_cast<UVM_MM_INITIALIZE_PARAMS *>(arg);
      out = &q->rmStatus;
      calls_.push_back("UVM_MM_INITIALIZE");
      need(fds_.count(q->uvmFd) && fds_[q->uvmFd] == kUvm,
           "UVM_MM_INITIALIZE names fd " + std::to_string(q->uvmFd) + ", not a UVM fd",
           NV_ERR_INVALID_ARGUMENT);
      break;
    }
    case UVM_REGISTER_GPU: {
      auto *q = static_cast<UVM_REGISTER_GPU_PARAMS *>(arg);
      out = &q->rmStatus;
      calls_.push_back("UVM_REGISTER_GPU");
      need(uvm_ready_, "UVM_REGISTER_GPU before UVM_INITIALIZE", NV_ERR_INVALID_STATE);
      need(memcmp(q->gpu_uuid, kUuid, 16) == 0, "UVM_REGISTER_GPU: unknown GPU UUID",
           NV_ERR_INVALID_ARGUMENT);
      gpu_registered_ = status == NV_OK;
      break;
    }
    case UVM_REGISTER_GPU_VASPACE: {
      auto *q = static_cast<UVM_REGISTER_GPU_VASPACE_PARAMS *>(arg);
      out = &q->rmStatus;
      calls_.push_back("UVM_REGISTER_GPU_VASPACE");
      const object *va = find(q->hVaSpace, FERMI_VASPACE_A);
      need(gpu_registered_, "UVM_REGISTER_GPU_VASPACE before UVM_REGISTER_GPU",
           NV_ERR_INVALID_STATE);
      need(q->hClient == client_ && va,
           "UVM_REGISTER_GPU_VASPACE: hVaSpace is not a VA space of the client",
           NV_ERR_INVALID_OBJECT_HANDLE);
      need(va && (va->flags & NV_VASPACE_ALLOCATION_FLAGS_IS_EXTERNALLY_OWNED),
           "UVM_REGISTER_GPU_VASPACE: the VA space is not externally owned",
           NV_ERR_INVALID_ARGUMENT);
      need(fds_.count(q->rmCtrlFd) && fds_[q->rmCtrlFd] == kCtl,
           "UVM_REGISTER_GPU_VASPACE: rmCtrlFd is not the control fd", NV_ERR_INVALID_ARGUMENT);
      vaspace_registered_ = status == NV_OK;
      break;
    }
    case UVM_REGISTER_CHANNEL: {
      auto *q = static_cast<UVM_REGISTER_CHANNEL_PARAMS *>(arg);
      out = &q->rmStatus;
      calls_.push_back("UVM_REGISTER_CHANNEL");
      need(vaspace_registered_, "UVM_REGISTER_CHANNEL before UVM_REGISTER_GPU_VASPACE",
           NV_ERR_INVALID_STATE);
      need(channels_.count(q->hChannel), "UVM_REGISTER_CHANNEL: hChannel is not a channel",
           NV_ERR_INVALID_OBJECT_HANDLE);
      need(q->length && q->base % 4096 == 0, "UVM_REGISTER_CHANNEL: empty or unaligned range",
           NV_ERR_INVALID_ADDRESS);
      break;
    }
    case UVM_CREATE_EXTERNAL_RANGE: {
      auto *q = static_cast<UVM_CREATE_EXTERNAL_RANGE_PARAMS *>(arg);
      out = &q->rmStatus;
      calls_.push_back("UVM_CREATE_EXTERNAL_RANGE");
      need(q->length && q->base % 4096 == 0 && q->length % 4096 == 0,
           "UVM_CREATE_EXTERNAL_RANGE: unaligned", NV_ERR_INVALID_ADDRESS);
      auto next = ranges_.lower_bound(q->base);
      bool overlap = next != ranges_.end() && next->first < q->base + q->length;
      if (next != ranges_.begin()) {
        auto prev = std::prev(next);
        overlap |= prev->first + prev->second > q->base;
      }
      need(!overlap, "UVM_CREATE_EXTERNAL_RANGE: " + hex(q->base) + " overlaps a range",
           NV_ERR_UVM_ADDRESS_IN_USE);
      if (status == NV_OK) ranges_[q->base] = q->length;
      break;
    }
    case UVM_MAP_EXTERNAL_ALLOCATION: {
      auto *q = static_cast<UVM_MAP_EXTERNAL_ALLOCATION_PARAMS *>(arg);
      out = &q->rmStatus;
      calls_.push_back("UVM_MAP_EXTERNAL_ALLOCATION");
      auto r = ranges_.find(q->base);
      auto o = objects_.find(q->hMemory);
      need(vaspace_registered_, "UVM_MAP_EXTERNAL_ALLOCATION before the VA space was registered",
           NV_ERR_INVALID_STATE);
      need(r != ranges_.end() && q->length <= r->second,
           "UVM_MAP_EXTERNAL_ALLOCATION: " + hex(q->base) + " is not an external range",
           NV_ERR_INVALID_ADDRESS);
      need(
          o != objects_.end() && o->second.host && q->offset + q->length <= o->second.size,
          "UVM_MAP_EXTERNAL_ALLOCATION: hMemory " + hex(q->hMemory) + " is not memory of that size",
          NV_ERR_INVALID_OBJECT_HANDLE);
      need(q->gpuAttributesCount == 1 && memcmp(q->perGpuAttributes[0].gpuUuid, kUuid, 16) == 0,
           "UVM_MAP_EXTERNAL_ALLOCATION: the mapping does not name this GPU",
           NV_ERR_INVALID_ARGUMENT);
      if (status == NV_OK)
        maps_[q->base] = mapping{q->length, o->second.host + q->offset, q->hMemory};
      break;
    }
    case UVM_FREE: {
      auto *q = static_cast<UVM_FREE_PARAMS *>(arg);
      out = &q->rmStatus;
      calls_.push_back("UVM_FREE");
      need(ranges_.erase(q->base) == 1, "UVM_FREE: " + hex(q->base) + " is not a range",
           NV_ERR_INVALID_ADDRESS);
      maps_.erase(q->base);
      break;
    }
    default:
      raise("UVM ioctl " + std::to_string(request) + " is not one the fake knows");
      errno = EINVAL;
      return -1;
  }
  *out = status;
  return 0;
}

uint8_t *fake_rm::host(uint64_t gpu, uint64_t size) const {
  auto it = maps_.upper_bound(gpu);
  if (it == maps_.begin()) return nullptr;
  --it;
  if (gpu - it->first > it->second.size || size > it->second.size - (gpu - it->first))
    return nullptr;
  return it->second.host + (gpu - it->first);
}

capgraph_status fake_rm::capture_attach(const fb::Capture *c,
                                        const std::vector<uint64_t> &program_gpu,
                                        std::string *err) {
  capture_ = c;
  program_gpu_ = program_gpu;
  twins_ = hcq::host_twins();
  counts_.clear();
  dispatches_.clear();
  timeline_.clear();
  kernel_names_.clear();
  for (uint32_t k = 0; c->kernels() && k < c->kernels()->size(); ++k)
    kernel_names_.push_back(c->kernels()->Get(k)->name()->str());
  if (mode_ != fake_nv_mode::ptx) {
    const capgraph_status st = twins_.link(c, "fake-nv", err);
    if (st != CAPGRAPH_OK) return *err = "nv (fake driver): " + *err, st;
  }
  if (mode_ != fake_nv_mode::twin && !ptx_attach(err)) {
    *err = "nv (fake driver): " + *err;
    return CAPGRAPH_ERR_FORMAT;
  }
  return CAPGRAPH_OK;
}

void fake_rm::doorbell_write(volatile uint32_t *at, uint32_t token) {
  if (!usermode_cpu_ ||
      reinterpret_cast<volatile uint8_t *>(at) != usermode_cpu_ + USERMODE_DOORBELL) {
    raise("a doorbell written outside the usermode page's NV_VIRTUAL_FUNCTION_DOORBELL (+0x90)");
    return;
  }
  *at = token;
  bool known = false;
  for (auto &[h, ch] : channels_) known |= ch.token == token;
  if (!known) {
    raise("doorbell with work-submit token " + hex(token) + ", which no channel has");
    return;
  }
  if (wedged_) return;  // a hung GPU: nothing runs, waits must time out
  run();
}

void fake_rm::run() {
  // Every channel until none moves (a copy channel stalled on a semaphore the compute channel
  // releases resumes in a later pass).
  for (bool progress = true; progress && fault_.empty();) {
    progress = false;
    for (auto &[h, ch] : channels_) {
      const uint32_t before = ch.gp_get;
      const uint64_t at = ch.at;
      channel_run(ch);
      progress |= ch.gp_get != before || ch.at != at;
    }
  }
}

bool fake_rm::channel_run(channel &ch) {
  if (!objects_.at(ch.group).scheduled)
    return raise("a doorbell for a channel whose group was never scheduled (GPFIFO_SCHEDULE)");
  uint8_t *userd = host(ch.userd, 0x200);
  if (!userd) return raise("the channel's USERD is not mapped");
  uint32_t put;
  memcpy(&put, userd + USERD_GP_PUT, 4);
  if (put >= ch.entries)
    return raise("GPPut " + std::to_string(put) + " is past the GPFIFO's " +
                 std::to_string(ch.entries) + " entries");
  while (ch.gp_get != put) {
    const uint8_t *e = host(ch.ring + 8ull * ch.gp_get, 8);
    uint32_t w0, w1;
    memcpy(&w0, e, 4);
    memcpy(&w1, e + 4, 4);
    const uint64_t addr = (w0 & ~3u) | uint64_t(w1 & 0xff) << 32;
    const uint32_t len = w1 >> 10 & 0x1fffff;
    const uint32_t *push = reinterpret_cast<const uint32_t *>(host(addr, 4ull * len));
    if (!push)
      return raise("GP entry " + std::to_string(ch.gp_get) + " points at " + hex(addr) + " (+" +
                   std::to_string(len) + " words), which is not mapped");
    if (ch.at == 0) ++gp_entries_;
    while (ch.at < len) {
      if (!ch.left) {
        const uint32_t h = push[ch.at];
        if (h >> 29 != 1)
          return raise("push word " + hex(h) + " at " + hex(addr + 4 * ch.at) + ": SEC_OP " +
                       std::to_string(h >> 29) + " is not INC_METHOD");
        ch.left = h >> 16 & 0x1fff;
        ch.subch = h >> 13 & 7;
        ch.method = (h & 0xfff) << 2;
        if (!ch.left || ch.at + ch.left >= len)
          return raise("method header " + hex(h) + " runs past its push buffer");
        ++ch.at;
      }
      while (ch.left) {
        if (!method(ch, ch.subch, ch.method, push[ch.at])) return false;  // stalled: resume here
        ch.blocked.clear();
        ++ch.at;
        --ch.left;
        ch.method += 4;
      }
    }
    ch.at = 0;
    ch.gp_get = (ch.gp_get + 1) % ch.entries;
    memcpy(userd + USERD_GP_GET, &ch.gp_get, 4);
  }
  return true;
}

bool fake_rm::semaphore_write(uint64_t addr, uint64_t payload, bool wide, bool stamp) {
  uint8_t *p = host(addr, stamp ? 16 : wide ? 8 : 4);
  if (!p || addr % (wide ? 8 : 4))
    return raise("semaphore release at " + hex(addr) + ": not mapped or misaligned");
  if (stamp) {
    const uint64_t t = clock();
    memcpy(p + 8, &t, 8);
  }
  if (wide)
    __atomic_store_n(reinterpret_cast<uint64_t *>(p), payload, __ATOMIC_RELEASE);
  else
    __atomic_store_n(reinterpret_cast<uint32_t *>(p), uint32_t(payload), __ATOMIC_RELEASE);
  return true;
}

bool fake_rm::method(channel &ch, uint32_t subch, uint32_t offset, uint32_t data) {
  const std::string where = "method " + hex(offset) + " on subchannel " + std::to_string(subch);
  if (offset == 0) {  // SET_OBJECT binds a class to the subchannel
    const uint32_t cls = data & 0xffff;
    const bool ok =
        cls == ch.engine && ((cls == chip_.compute_class && subch == kSubchannelCompute) ||
                             (cls == chip_.copy_class && subch == kSubchannelCopy));
    if (!ok)
      return raise("SET_OBJECT " + hex(cls) + " on subchannel " + std::to_string(subch) +
                   " of a channel whose object is " + hex(ch.engine));
    ch.bound[subch] = cls;
    return true;
  }
  if (offset < 0x100) {  // the host class, on any subchannel
    switch (offset) {
      case 0x5c: ch.sem_addr = (ch.sem_addr & ~0xffffffffull) | (data & ~3u); return true;
      case 0x60:
        ch.sem_addr = (ch.sem_addr & 0xffffffffull) | uint64_t(data & 0xff) << 32;
        return true;
      case 0x64: ch.sem_payload = (ch.sem_payload & ~0xffffffffull) | data; return true;
      case 0x68:
        ch.sem_payload = (ch.sem_payload & 0xffffffffull) | uint64_t(data) << 32;
        return true;
      case 0x78: return true;  // WFI: every grid here has finished when its launch returns
      case 0x20: return true;  // NON_STALL_INTERRUPT: nobody listens
      case 0x6c: {
        const uint32_t op = data & 7;
        const bool wide = data >> 24 & 1, stamp = data >> 25 & 1;
        if (op == SEM_EXECUTE_OPERATION_RELEASE)
          return semaphore_write(ch.sem_addr, ch.sem_payload, wide, stamp);
        if (op == SEM_EXECUTE_OPERATION_ACQ_CIRC_GEQ) {
          const uint8_t *p = host(ch.sem_addr, wide ? 8 : 4);
          if (!p) return raise("semaphore acquire at " + hex(ch.sem_addr) + ": not mapped");
          bool done;
          if (wide)
            done =
                int64_t(__atomic_load_n(reinterpret_cast<const uint64_t *>(p), __ATOMIC_ACQUIRE) -
                        ch.sem_payload) >= 0;
          else
            done =
                int32_t(__atomic_load_n(reinterpret_cast<const uint32_t *>(p), __ATOMIC_ACQUIRE) -
                        uint32_t(ch.sem_payload)) >= 0;
          if (!done)
            ch.blocked = "SEM_EXECUTE ACQ_CIRC_GEQ " + hex(ch.sem_addr) +
                         " >= " + std::to_string(ch.sem_payload);
          return done;
        }
        return raise("SEM_EXECUTE operation " + std::to_string(op) + " is not one the fake runs");
      }
      default: return raise("host " + where + " is not one the fake knows");
    }
  }
  const uint32_t cls = ch.bound[subch];
  if (!cls) return raise(where + " before any SET_OBJECT on it");
  if (cls == chip_.compute_class) {
    switch (offset) {
      case 0x02a0:
        ch.shared_window = (ch.shared_window & 0xffffffffull) | uint64_t(data) << 32;
        return true;
      case 0x02a4: ch.shared_window = (ch.shared_window & ~0xffffffffull) | data; return true;
      case 0x07b0:
        ch.local_window = (ch.local_window & 0xffffffffull) | uint64_t(data) << 32;
        return true;
      case 0x07b4: ch.local_window = (ch.local_window & ~0xffffffffull) | data; return true;
      case 0x1698:
      case 0x0288: return true;  // cache invalidation, QMD version: nothing cached here
      case 0x02b4: ch.pcas = uint64_t(data) << 8; return true;
      case 0x02c0: {
        const uint32_t action = data & 0xf;
        if (action != PCAS_ACTION_SCHEDULE && action != PCAS_ACTION_PREFETCH_SCHEDULE &&
            action != PCAS_ACTION_INVALIDATE_COPY_SCHEDULE)
          return raise("SEND_SIGNALING_PCAS2_B action " + std::to_string(action) +
                       " does not schedule the QMD");
        return qmd_launch(ch, ch.pcas);
      }
      default: return raise("compute (" + hex(cls) + ") " + where + " is not one the fake knows");
    }
  }
  switch (offset) {  // the copy engine
    case 0x0400: ch.ce_in = (ch.ce_in & 0xffffffffull) | uint64_t(data) << 32; return true;
    case 0x0404: ch.ce_in = (ch.ce_in & ~0xffffffffull) | data; return true;
    case 0x0408: ch.ce_out = (ch.ce_out & 0xffffffffull) | uint64_t(data) << 32; return true;
    case 0x040c: ch.ce_out = (ch.ce_out & ~0xffffffffull) | data; return true;
    case 0x0418: ch.ce_len = data; return true;
    case 0x041c: ch.ce_lines = data; return true;
    case 0x0240: ch.ce_sem = (ch.ce_sem & 0xffffffffull) | uint64_t(data) << 32; return true;
    case 0x0244: ch.ce_sem = (ch.ce_sem & ~0xffffffffull) | data; return true;
    case 0x0248: ch.ce_payload = data; return true;
    case 0x0300: {
      const uint32_t transfer = data & 3, semaphore = data >> 3 & 3;
      if (transfer) {
        if ((data >> 7 & 1) != LAUNCH_DMA_MEMORY_LAYOUT_PITCH ||
            (data >> 8 & 1) != LAUNCH_DMA_MEMORY_LAYOUT_PITCH || (data >> 9 & 1))
          return raise("LAUNCH_DMA " + hex(data) +
                       ": only single-line pitch copies are known to the fake");
        const uint8_t *src = host(ch.ce_in, ch.ce_len);
        uint8_t *dst = host(ch.ce_out, ch.ce_len);
        if (!src || !dst)
          return raise("LAUNCH_DMA copy of " + std::to_string(ch.ce_len) + " bytes " +
                       hex(ch.ce_in) + " -> " + hex(ch.ce_out) + ": not mapped");
        memmove(dst, src, ch.ce_len);
      }
      if (semaphore == LAUNCH_DMA_SEMAPHORE_TYPE_RELEASE_ONE_WORD_SEMAPHORE)
        return semaphore_write(ch.ce_sem, ch.ce_payload, false, false);
      if (semaphore == LAUNCH_DMA_SEMAPHORE_TYPE_RELEASE_FOUR_WORD_SEMAPHORE)
        return semaphore_write(ch.ce_sem, ch.ce_payload, true, true);
      if (semaphore)
        return raise("LAUNCH_DMA semaphore type " + std::to_string(semaphore) +
                     " is not one the fake knows");
      return true;
    }
    default: return raise("copy (" + hex(cls) + ") " + where + " is not one the fake knows");
  }
}

bool fake_rm::qmd_launch(channel &ch, uint64_t qmd) {
  // The QMD and every QMD chained after it (DEPENDENT_QMD0), bounded so a cycle is an error.
  for (uint32_t n = 0; qmd; ++n) {
    if (n > (1u << 20)) return raise("a chain of more than 2^20 dependent QMDs (a cycle?)");
    uint64_t next = 0;
    if (!qmd_one(ch, qmd, &next)) return false;
    if (n) ++chained_;
    qmd = next;
  }
  return true;
}

bool fake_rm::qmd_one(channel &ch, uint64_t addr, uint64_t *next) {
  const qmd_version v = chip_.qmd;
  const uint32_t dwords = qmd_dwords(v);
  const uint8_t *raw = host(addr, 4ull * dwords);
  if (!raw || addr % 256)
    return raise("QMD at " + hex(addr) + ": not mapped or not 256-byte aligned");
  std::vector<uint32_t> q(dwords);
  memcpy(q.data(), raw, 4ull * dwords);
  const auto get = [&](qmd_field f) { return qmd_get(q, v, f); };
  const std::string at = "QMD at " + hex(addr) + ": ";
  const uint64_t major = get(qmd_field::QMD_MAJOR_VERSION);
  if (major != (v == qmd_version::V03_00 ? 3u : 4u))
    return raise(at + "QMD_MAJOR_VERSION " + std::to_string(major) + ", " + chip_.name + " takes " +
                 (v == qmd_version::V03_00 ? "3" : "4"));
  if (!capture_) return raise(at + "a launch before any capture was attached");
  const uint64_t program =
      get(qmd_field::PROGRAM_ADDRESS_LOWER) | get(qmd_field::PROGRAM_ADDRESS_UPPER) << 32;
  int32_t found = -1;
  for (uint32_t k = 0; capture_->kernels() && k < capture_->kernels()->size() && found < 0; ++k) {
    const fb::Kernel *kern = capture_->kernels()->Get(k);
    const fb::NvKernel *n = kern->facts_as_NvKernel();
    if (n && program_gpu_[kern->program()] &&
        program_gpu_[kern->program()] + n->text_offset() == program)
      found = int32_t(k);
  }
  if (found < 0)
    return raise(at + "PROGRAM_ADDRESS " + hex(program) + " is not the code of any kernel");
  const fb::Kernel *k = capture_->kernels()->Get(uint32_t(found));
  const fb::NvKernel *n = k->facts_as_NvKernel();
  const std::string what = at + "kernel '" + k->name()->str() + "': ";
  const auto expect = [&](qmd_field f, uint64_t want) {
    const uint64_t got = get(f);
    if (got == want) return true;
    return raise(what + qmd_field_name(v, f) + " is " + std::to_string(got) +
                 ", the kernel's facts say " + std::to_string(want));
  };
  if (!expect(qmd_field::CTA_THREAD_DIMENSION0, n->block_x()) ||
      !expect(qmd_field::CTA_THREAD_DIMENSION1, 1) ||
      !expect(qmd_field::CTA_THREAD_DIMENSION2, 1) ||
      !expect(qmd_field::REGISTER_COUNT, n->registers()) ||
      !expect(qmd_field::BARRIER_COUNT, n->barriers()) ||
      !expect(qmd_field::SHARED_MEMORY_SIZE, (n->shared_bytes() + 255) / 256 * 256) ||
      !expect(qmd_field::SASS_VERSION, (n->sm() / 10) << 4 | n->sm() % 10) ||
      !expect(qmd_field::CONSTANT_BUFFER0_VALID, 1) ||
      !expect(qmd_field::CONSTANT_BUFFER0_SIZE_SHIFTED4, (n->cbank0_bytes() + 15) / 16) ||
      !expect(qmd_field::GRID_HEIGHT, 1) || !expect(qmd_field::GRID_DEPTH, 1))
    return false;
  const uint64_t config = get(qmd_field::MIN_SM_CONFIG_SHARED_MEM_SIZE);
  if (config == 0 || (config - 1) * 4096 < n->shared_bytes() ||
      get(qmd_field::MAX_SM_CONFIG_SHARED_MEM_SIZE) < config)
    return raise(what + "the shared-memory carve-out (MIN_SM_CONFIG " + std::to_string(config) +
                 ") does not hold its " + std::to_string(n->shared_bytes()) + " bytes");
  if (ch.shared_window == ~0ull || ch.local_window == ~0ull)
    return raise(what + "launched before the shared and local memory windows were set");
  if (chip_.sm >= 90 && ch.shared_window % (1ull << 32))
    return raise(what + "Hopper's shared window " + hex(ch.shared_window) +
                 " is not 4 GiB aligned");
  for (uint64_t w : {ch.shared_window, ch.local_window})
    if (host(w, 1) || host(w + (1ull << 32) - 1, 1))
      return raise(what + "a memory window at " + hex(w) + " overlaps mapped memory");
  const uint64_t cbank = v == qmd_version::V03_00
                             ? get(qmd_field::CONSTANT_BUFFER0_ADDR_LOWER) |
                                   get(qmd_field::CONSTANT_BUFFER0_ADDR_UPPER) << 32
                             : (get(qmd_field::CONSTANT_BUFFER0_ADDR_LOWER) |
                                get(qmd_field::CONSTANT_BUFFER0_ADDR_UPPER) << 32)
                                   << 6;
  const uint8_t *cb = host(cbank, n->cbank0_bytes());
  if (!cb)
    return raise(what + "constant bank 0 at " + hex(cbank) + " (" +
                 std::to_string(n->cbank0_bytes()) + " bytes) is not mapped");
  // The kernel's work range (KernelBounds.work_size, checked at load) counts GPU work items: a
  // tiled kernel's items each compute several outputs, so it is not the twin's output count.
  const uint64_t threads = get(qmd_field::GRID_WIDTH) * n->block_x();
  const uint64_t work = k->bounds() ? k->bounds()->work_size() : k->twin_work_size();
  if (threads < work)
    return raise(what + "the grid has " + std::to_string(threads) +
                 " threads, the kernel's work is " + std::to_string(work));
  const launch_args args{uint32_t(found),
                         cb,
                         {uint32_t(get(qmd_field::GRID_WIDTH)), 1, 1},
                         {uint32_t(get(qmd_field::CTA_THREAD_DIMENSION0)), 1, 1},
                         get(qmd_field::SHARED_MEMORY_SIZE),
                         ch.shared_window,
                         ch.local_window};
  if (mode_ == fake_nv_mode::ptx) {
    if (!kernel_run(args)) return false;
  } else {
    if (!twins_.has(uint32_t(found)))
      return raise(what + "the kernel has no host twin, so the fake cannot run it");
    const uint32_t nb = k->num_buffers(), ns = k->num_scalars();
    std::vector<void *> bufs(nb);
    for (uint32_t b = 0; b < nb; ++b) {
      uint64_t gpu;
      memcpy(&gpu, cb + n->param_offset() + 8 * b, 8);
      bufs[b] = host(gpu, 0);
      if (!bufs[b])
        return raise(what + "parameter " + std::to_string(b) + " (c[0x0][" +
                     hex(n->param_offset() + 8 * b) + "]) = " + hex(gpu) + " is not mapped");
    }
    std::vector<int64_t> scalars(ns);
    if (ns) memcpy(scalars.data(), cb + n->param_offset() + 8 * nb, 8ull * ns);
    if (mode_ == fake_nv_mode::twin)
      twins_.run(uint32_t(found), bufs.data(), ns ? scalars.data() : nullptr);
    else if (!kernel_check(args, bufs, scalars))
      return false;
  }
  if (launches_ < 32)
    qmd_log_ += "QMD " + hex(addr) + " (kernel '" + k->name()->str() + "')\n" + qmd_text(v, q);
  ++launches_;
  if (get(qmd_field::RELEASE0_ENABLE)) {
    const uint64_t ra =
        get(qmd_field::RELEASE0_ADDRESS_LOWER) | get(qmd_field::RELEASE0_ADDRESS_UPPER) << 32;
    const uint64_t payload =
        get(qmd_field::RELEASE0_PAYLOAD_LOWER) | get(qmd_field::RELEASE0_PAYLOAD_UPPER) << 32;
    const bool four = get(qmd_field::RELEASE0_STRUCTURE_SIZE) == 0;
    if (!semaphore_write(ra, payload, get(qmd_field::RELEASE0_PAYLOAD64B) != 0, four)) return false;
  }
  *next = 0;
  if (get(qmd_field::DEPENDENT_QMD0_ENABLE)) {
    if (get(qmd_field::DEPENDENT_QMD0_ACTION) != 1)
      return raise(what + "DEPENDENT_QMD0_ACTION " +
                   std::to_string(get(qmd_field::DEPENDENT_QMD0_ACTION)) + " is not SCHEDULE");
    *next = get(qmd_field::DEPENDENT_QMD0_POINTER) << 8;
  }
  return true;
}

std::string qmd_text(qmd_version v, const std::vector<uint32_t> &qmd) {
  std::string s;
  for (uint32_t f = 0; f < uint32_t(qmd_field::count_); ++f) {
    const qmd_field_desc &d = qmd_field_info(v, qmd_field(f));
    const uint64_t value = qmd_get(qmd, v, qmd_field(f));
    if (d.name && value) s += std::string("  ") + d.name + " = " + hex(value) + "\n";
  }
  return s;
}

std::string push_text(const chip &c, const uint32_t *words, size_t count) {
  std::string s;
  uint32_t bound[8] = {};
  for (size_t i = 0; i < count;) {
    const uint32_t h = words[i];
    if (h == kCallToken && i + 2 < count) {
      const uint64_t addr = (words[i + 1] & ~3u) | uint64_t(words[i + 2] & 0xff) << 32;
      s += "CALL (GP entry) " + hex(addr) + " " + std::to_string(words[i + 2] >> 10 & 0x1fffff) +
           " words\n";
      i += 3;
      continue;
    }
    const uint32_t n = push_words(h);
    if (!n || i + n > count) {
      s += "ERROR: word " + hex(h) + "\n";
      break;
    }
    const uint32_t subch = h >> 13 & 7;
    for (uint32_t j = 0; j + 1 < n; ++j) {
      const uint32_t offset = ((h & 0xfff) << 2) + 4 * j, data = words[i + 1 + j];
      if (offset == 0) bound[subch] = data & 0xffff;
      const method_family fam = offset < 0x100 && offset       ? method_family::host
                                : bound[subch] == c.copy_class ? method_family::copy
                                                               : method_family::compute;
      const method_desc *d = nullptr;
      for (uint32_t m = 0; m < uint32_t(method::count_) && !d; ++m) {
        const method_desc &x = method_info(method(m));
        if (x.offset == offset &&
            (x.family == fam ||
             (offset == 0 && x.family == (subch == kSubchannelCopy ? method_family::host
                                                                   : method_family::compute))))
          d = &x;
      }
      s += "[" + std::to_string(subch) + "] ";
      if (!d) {
        s += "ERROR: method " + hex(offset) + " = " + hex(data) + "\n";
        continue;
      }
      s += d->name;
      for (uint32_t f = 0; f < d->num_fields; ++f) {
        const method_field &fd = d->fields[f];
        const uint32_t width = fd.hi - fd.lo + 1;
        const uint32_t v = width == 32 ? data : data >> fd.lo & ((1u << width) - 1);
        s += std::string(" ") + fd.name + "=" + hex(v);
      }
      s += "\n";
    }
    i += n;
  }
  return s;
}

namespace {

// Which fake driver is behind each transport fake_open made (the real RM/UVM transport keeps its
// system-call seam to itself): how the capture_attach hook finds it. An entry goes when its fake
// goes (the transport owns the fake; a new transport at a reused address replaces the entry).
std::mutex g_behind_lock;
std::map<const hcq::transport *, std::weak_ptr<fake_rm>> g_behind;

capgraph_status fake_attach(hcq::transport *dev, const fb::Capture *c,
                            const std::vector<uint64_t> &program_gpu, std::string *err) {
  std::shared_ptr<fake_rm> rm;
  {
    std::lock_guard<std::mutex> hold(g_behind_lock);
    auto it = g_behind.find(dev);
    if (it != g_behind.end()) rm = it->second.lock();
  }
  if (!rm) {
    *err = "fake-nv: this transport was not opened by fake-nv";
    return CAPGRAPH_ERR_DEVICE;
  }
  return rm->capture_attach(c, program_gpu, err);
}

// "fake-nv[:sm86|:sm89|:sm90][:wedge][:driver=VERSION][:fail=N[:ERRNO]][:count]", in any order
// after the name.
capgraph_status fake_open(const char *device, std::unique_ptr<hcq::transport> *out,
                          std::string *err) {
  const chip *c = chip_find("sm90");
  fake::fault_plan faults;
  bool wedge = false;
  fake_nv_mode mode = fake_nv_mode::ptx;
  bool profile = false;
  std::string version = "580.142";
  for (const char *p = strchr(device, ':'); p; p = strchr(p + 1, ':')) {
    const char *end = strchr(p + 1, ':');
    const std::string word(p + 1, end ? size_t(end - p - 1) : strlen(p + 1));
    std::string why;
    if (fake::fault_word(word, &faults, &why)) {
      if (why.empty()) continue;
      *err = "fake-nv: " + why;
      return CAPGRAPH_ERR_ARGUMENT;
    }
    if (word == "wedge")
      wedge = true;
    else if (word == "twin")
      mode = fake_nv_mode::twin;
    else if (word == "check")
      mode = fake_nv_mode::check;
    else if (word == "profile")
      profile = true;
    else if (word.rfind("driver=", 0) == 0)
      version = word.substr(7);
    else if (!(c = chip_find(word.c_str()))) {
      *err = "fake-nv: '" + word +
             "' is neither a chip (sm86, sm89, sm90) nor twin, check, profile, wedge, "
             "driver=VERSION, " +
             fake::fault_words_usage;
      return CAPGRAPH_ERR_ARGUMENT;
    }
  }
  auto rm = std::make_shared<fake_rm>(*c, version, wedge, mode, faults);
  rm->profile(profile && mode != fake_nv_mode::twin);
  const capgraph_status st = nv_open_with(rm, nv_paths{}, "nv", out, err);
  if (st == CAPGRAPH_OK) {
    std::lock_guard<std::mutex> hold(g_behind_lock);
    for (auto it = g_behind.begin(); it != g_behind.end();)  // forget fakes that are gone
      it = it->second.expired() ? g_behind.erase(it) : std::next(it);
    g_behind[out->get()] = rm;
  }
  return st;
}

}  // namespace

void fake_nv_register() {
  hcq::target_register(
      "fake-nv", &fake_open, &hcq::nv_target,
      [] {
        return std::string(
            "a fake NVIDIA GPU for tests (sm90; fake-nv:sm86, fake-nv:sm89): the real RM/UVM "
            "transport against a fake driver at the ioctl boundary; checks GPFIFO, methods and "
            "QMDs and executes each kernel's PTX in an interpreter (fake-nv:twin runs host twins, "
            "fake-nv:check compares the two), measures no time\n");
      },
      &fake_attach);
}

}  // namespace capgraph::nv
