// The KGSL (Qualcomm's Adreno kernel driver, /dev/kgsl-3d0) ioctl interface: the few ioctls and
// argument structs capgraph uses, written here from the UAPI header's facts (no kernel header on
// the build machine has them). Field order, types and sizes follow msm_kgsl.h (KGSL_VERSION 3.14)
// exactly; the layouts are the same on every LP64 Linux (x86-64 hosts with the fake, aarch64 on
// comma devices). The static_asserts hold the sizes and ioctl numbers that were checked by
// compiling the header itself (../shared/research/adreno_plan.md §2.1).
// Sources: Linux include/uapi/linux/msm_kgsl.h (Qualcomm downstream kernels; tinygrad's copy
// extra/qcom_gpu_driver/msm_kgsl.h, Mesa's src/freedreno/vulkan/msm_kgsl.h); ioctl semantics
// from Mesa's tu_knl_kgsl.cc and src/freedreno/decode/replay.c (facts only).
#pragma once
#include <linux/ioctl.h>

#include <cstddef>
#include <cstdint>

namespace capgraph::kgsl {

constexpr unsigned kgsl_ioc_type = 0x09;

// KGSL_PROP_DEVICE_INFO: the chip.
constexpr uint32_t prop_device_info = 0x1;

struct device_getproperty {  // struct kgsl_device_getproperty
  uint32_t type;
  uint64_t value;  // user pointer (void __user *)
  uint64_t sizebytes;
};
static_assert(sizeof(device_getproperty) == 24 && offsetof(device_getproperty, value) == 8);

struct devinfo {  // struct kgsl_devinfo
  uint32_t device_id;
  uint32_t chip_id;  // a630: 0x06030001 (core 6, major 3, minor 0, patch 1)
  uint32_t mmu_enabled;
  uint64_t gmem_gpubaseaddr;
  uint32_t gpu_id;
  uint64_t gmem_sizebytes;
};
static_assert(sizeof(devinfo) == 40 && offsetof(devinfo, gpu_id) == 24);

// KGSL_CONTEXT_* flags for DRAWCTXT_CREATE.
constexpr uint32_t context_no_gmem_alloc = 0x00000002;
constexpr uint32_t context_preamble = 0x00000010;
constexpr uint32_t context_no_fault_tolerance = 0x00000200;
constexpr uint32_t context_priority_shift = 12;       // KGSL_CONTEXT_PRIORITY_MASK 0xF000
constexpr uint32_t context_preempt_style_shift = 25;  // KGSL_CONTEXT_PREEMPT_STYLE_MASK
constexpr uint32_t context_preempt_finegrain = 2;     // KGSL_CONTEXT_PREEMPT_STYLE_FINEGRAIN

struct drawctxt_create {  // struct kgsl_drawctxt_create
  uint32_t flags;
  uint32_t drawctxt_id;  // out
};
static_assert(sizeof(drawctxt_create) == 8);

struct drawctxt_destroy {  // struct kgsl_drawctxt_destroy
  uint32_t drawctxt_id;
};

// KGSL_MEMFLAGS_* and the alignment field of GPUOBJ_ALLOC / MAP_USER_MEM flags.
constexpr uint64_t memflags_use_cpu_map = 0x10000000;  // GPU address = the CPU mmap address
constexpr uint32_t memalign_shift = 16;                // KGSL_MEMALIGN_SHIFT: log2 alignment
constexpr uint32_t cachemode_shift = 26;               // KGSL_CACHEMODE_SHIFT
constexpr uint32_t cachemode_uncached = 1;             // KGSL_CACHEMODE_UNCACHED

struct gpuobj_alloc {  // struct kgsl_gpuobj_alloc
  uint64_t size;
  uint64_t flags;
  uint64_t va_len;
  uint64_t mmapsize;  // out
  uint32_t id;        // out: mmap offset is id << 12
  uint32_t metadata_len;
  uint64_t metadata;
};
static_assert(sizeof(gpuobj_alloc) == 48 && offsetof(gpuobj_alloc, id) == 32);

struct gpuobj_free {  // struct kgsl_gpuobj_free
  uint64_t flags;
  uint64_t priv;
  uint32_t id;
  uint32_t type;
  uint32_t len;
};
static_assert(sizeof(gpuobj_free) == 32 && offsetof(gpuobj_free, id) == 16);

// KGSL_USER_MEM_TYPE_ADDR: import anonymous user memory by its address.
constexpr uint32_t user_mem_type_addr = 2;

struct map_user_mem {  // struct kgsl_map_user_mem
  int32_t fd;
  uint64_t gpuaddr;  // out (unsigned long)
  uint64_t len;
  uint64_t offset;
  uint64_t hostptr;
  uint32_t memtype;  // enum kgsl_user_mem_type
  uint32_t flags;
};
static_assert(sizeof(map_user_mem) == 48 && offsetof(map_user_mem, hostptr) == 32 &&
              offsetof(map_user_mem, memtype) == 40);

struct sharedmem_free {  // struct kgsl_sharedmem_free
  uint64_t gpuaddr;
};

// KGSL_CMDLIST_IB: a command object that is an indirect buffer of PM4 words.
constexpr uint32_t cmdlist_ib = 0x00000001;

struct command_object {  // struct kgsl_command_object
  uint64_t offset;
  uint64_t gpuaddr;
  uint64_t size;  // bytes
  uint32_t flags;
  uint32_t id;
};
static_assert(sizeof(command_object) == 32);

struct gpu_command {  // struct kgsl_gpu_command
  uint64_t flags;
  uint64_t cmdlist;  // user pointer to command_object[numcmds]
  uint32_t cmdsize;  // sizeof(command_object)
  uint32_t numcmds;
  uint64_t objlist;
  uint32_t objsize;
  uint32_t numobjs;
  uint64_t synclist;
  uint32_t syncsize;
  uint32_t numsyncs;
  uint32_t context_id;
  uint32_t timestamp;  // out
};
static_assert(sizeof(gpu_command) == 64 && offsetof(gpu_command, context_id) == 56);

struct device_waittimestamp_ctxtid {  // struct kgsl_device_waittimestamp_ctxtid
  uint32_t context_id;
  uint32_t timestamp;
  uint32_t timeout;  // milliseconds
};
static_assert(sizeof(device_waittimestamp_ctxtid) == 12);

constexpr unsigned long ioctl_device_getproperty = _IOWR(kgsl_ioc_type, 0x2, device_getproperty);
constexpr unsigned long ioctl_device_waittimestamp_ctxtid =
    _IOW(kgsl_ioc_type, 0x7, device_waittimestamp_ctxtid);
constexpr unsigned long ioctl_drawctxt_create = _IOWR(kgsl_ioc_type, 0x13, drawctxt_create);
constexpr unsigned long ioctl_drawctxt_destroy = _IOW(kgsl_ioc_type, 0x14, drawctxt_destroy);
constexpr unsigned long ioctl_map_user_mem = _IOWR(kgsl_ioc_type, 0x15, map_user_mem);
constexpr unsigned long ioctl_sharedmem_free = _IOW(kgsl_ioc_type, 0x21, sharedmem_free);
constexpr unsigned long ioctl_gpuobj_alloc = _IOWR(kgsl_ioc_type, 0x45, gpuobj_alloc);
constexpr unsigned long ioctl_gpuobj_free = _IOW(kgsl_ioc_type, 0x46, gpuobj_free);
constexpr unsigned long ioctl_gpu_command = _IOWR(kgsl_ioc_type, 0x4A, gpu_command);
// The numbers as compiled from msm_kgsl.h (adreno_plan.md §2.1).
static_assert(ioctl_device_getproperty == 0xC0180902);
static_assert(ioctl_device_waittimestamp_ctxtid == 0x400C0907);
static_assert(ioctl_drawctxt_create == 0xC0080913);
static_assert(ioctl_drawctxt_destroy == 0x40040914);
static_assert(ioctl_map_user_mem == 0xC0300915);
static_assert(ioctl_sharedmem_free == 0x40080921);
static_assert(ioctl_gpuobj_alloc == 0xC0300945);
static_assert(ioctl_gpuobj_free == 0x40200946);
static_assert(ioctl_gpu_command == 0xC040094A);

}  // namespace capgraph::kgsl
