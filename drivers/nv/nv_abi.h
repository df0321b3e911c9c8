// The NVIDIA kernel driver's RM and UVM ioctl ABI as capgraph uses it, for the 580 driver branch
// (580.65.06 .. 580.142 keep these layouts: ../shared/research/nv_plan.md §2.11). Written by us
// from NVIDIA/open-gpu-kernel-modules at tag 580.142 (MIT-licensed headers; facts only, layouts
// re-declared here); every struct's size is checked below against the header's. Who fixes the
// layout: the driver, per branch; an unknown branch is refused before the first RM call
// (nv_transport.cpp), never called with a guessed layout.
#pragma once
#include <cstddef>
#include <cstdint>

namespace capgraph::nv::abi {

// The driver branches whose layouts are these (the major version).
constexpr unsigned kBranches[] = {580};

// ioctl numbers. Sources: kernel-open/common/inc/nv-ioctl-numbers.h (NV_IOCTL_MAGIC 'F',
// NV_IOCTL_BASE 200, NV_ESC_CARD_INFO +0, REGISTER_FD +1, CHECK_VERSION_STR +10),
// src/nvidia/arch/nvalloc/unix/include/nv_escape.h (RM escapes); the request is
// _IOWR('F', nr, size) (nv_plan.md §2.1).
constexpr unsigned NV_ESC_CARD_INFO = 200, NV_ESC_REGISTER_FD = 201, NV_ESC_CHECK_VERSION_STR = 210;
constexpr unsigned NV_ESC_RM_FREE = 0x29, NV_ESC_RM_CONTROL = 0x2A, NV_ESC_RM_ALLOC = 0x2B,
                   NV_ESC_RM_MAP_MEMORY = 0x4E;
constexpr unsigned long nv_ioctl(unsigned nr, size_t size) {
  return (3ul << 30) | ((unsigned long)(size & 0x3fff) << 16) | ((unsigned long)'F' << 8) | nr;
}
// UVM takes plain numbers (kernel-open/nvidia-uvm/uvm_ioctl.h UVM_IOCTL_BASE(i) = i on Linux,
// uvm_linux_ioctl.h UVM_INITIALIZE).
constexpr unsigned long UVM_INITIALIZE = 0x30000001, UVM_REGISTER_GPU_VASPACE = 25,
                        UVM_REGISTER_CHANNEL = 27, UVM_MAP_EXTERNAL_ALLOCATION = 33, UVM_FREE = 34,
                        UVM_REGISTER_GPU = 37, UVM_CREATE_EXTERNAL_RANGE = 73,
                        UVM_MM_INITIALIZE = 75;

// Classes. Sources: src/common/sdk/nvidia/inc/class/cl*.h, nvos.h; which chip offers which:
// src/nvidia/generated/g_gpu_class_list.c (nv_plan.md §2.5).
constexpr uint32_t NV01_ROOT_CLIENT = 0x41, NV01_DEVICE_0 = 0x80, NV20_SUBDEVICE_0 = 0x2080,
                   NV1_MEMORY_SYSTEM = 0x3E, NV1_MEMORY_USER = 0x40, FERMI_VASPACE_A = 0x90F1,
                   KEPLER_CHANNEL_GROUP_A = 0xA06C, FERMI_CONTEXT_SHARE_A = 0x9067,
                   TURING_USERMODE_A = 0xC461, HOPPER_USERMODE_A = 0xC661,
                   AMPERE_CHANNEL_GPFIFO_A = 0xC56F, HOPPER_CHANNEL_GPFIFO_A = 0xC86F,
                   AMPERE_COMPUTE_B = 0xC7C0, ADA_COMPUTE_A = 0xC9C0, HOPPER_COMPUTE_A = 0xCBC0,
                   AMPERE_DMA_COPY_B = 0xC7B5, HOPPER_DMA_COPY_A = 0xC8B5;

// Controls. Sources: ctrl/ctrl0000/ctrl0000gpu.h:172, ctrl/ctrl0080/ctrl0080gpu.h:506,
// ctrl/ctrl2080/ctrl2080gpu.h:1775, ctrl/ctrlc36f.h:79, ctrl/ctrla06c.h:97.
constexpr uint32_t NV0000_CTRL_CMD_GPU_GET_ID_INFO_V2 = 0x205,
                   NV0080_CTRL_CMD_GPU_GET_CLASSLIST_V2 = 0x800292,
                   NV2080_CTRL_CMD_GPU_GET_GID_INFO = 0x2080014A,
                   NVC36F_CTRL_CMD_GPFIFO_GET_WORK_SUBMIT_TOKEN = 0xC36F0108,
                   NVA06C_CTRL_CMD_GPFIFO_SCHEDULE = 0xA06C0101;

// Values. Sources: nvos.h 884-1461 (NVOS32_*), 1766-1826 (NVOS33_FLAGS_*), 2853
// (NV_DEVICE_ALLOCATION_VAMODE_*), 3170-3173 (NV_VASPACE_ALLOCATION_FLAGS_*), 3241
// (NV_CTXSHARE_ALLOCATION_FLAGS_SUBCONTEXT_ASYNC); class/cl2080_notification.h:282
// (NV2080_ENGINE_TYPE_GRAPHICS); ctrl2080gpu.h:1795 (GID FORMAT_BINARY); nv-ioctl.h:105-110.
constexpr uint32_t NVOS32_TYPE_IMAGE = 0, NVOS32_TYPE_NOTIFIER = 13;
constexpr uint32_t NVOS32_ALLOC_FLAGS_IGNORE_BANK_PLACEMENT = 0x1,
                   NVOS32_ALLOC_FLAGS_ALIGNMENT_FORCE = 0x100,
                   NVOS32_ALLOC_FLAGS_MEMORY_HANDLE_PROVIDED = 0x4000,
                   NVOS32_ALLOC_FLAGS_MAP_NOT_REQUIRED = 0x8000,
                   NVOS32_ALLOC_FLAGS_PERSISTENT_VIDMEM = 0x10000;
constexpr uint32_t NVOS32_ATTR_PAGE_SIZE_4KB = 1u << 23, NVOS32_ATTR_PAGE_SIZE_HUGE = 3u << 23,
                   NVOS32_ATTR_LOCATION_VIDMEM = 0u << 25, NVOS32_ATTR_LOCATION_PCI = 1u << 25,
                   NVOS32_ATTR_PHYSICALITY_CONTIGUOUS = 2u << 27,
                   NVOS32_ATTR_PHYSICALITY_NONCONTIGUOUS = 1u << 27,
                   NVOS32_ATTR_COHERENCY_UNCACHED = 0u << 29,
                   NVOS32_ATTR_COHERENCY_CACHED = 1u << 29,
                   NVOS32_ATTR_COHERENCY_WRITE_COMBINE = 2u << 29;
constexpr uint32_t NVOS32_ATTR2_GPU_CACHEABLE_YES = 1u << 2,
                   NVOS32_ATTR2_GPU_CACHEABLE_NO = 2u << 2;
constexpr uint32_t NVOS33_FLAGS_CACHING_TYPE_CACHED = 0u << 23,
                   NVOS33_FLAGS_CACHING_TYPE_WRITECOMBINED = 2u << 23;
constexpr uint32_t NV_DEVICE_ALLOCATION_VAMODE_OPTIONAL_MULTIPLE_VASPACES = 0;
constexpr uint32_t NV_VASPACE_ALLOCATION_FLAGS_IS_EXTERNALLY_OWNED = 1u << 3,
                   NV_VASPACE_ALLOCATION_FLAGS_ENABLE_PAGE_FAULTING = 1u << 6;
constexpr uint32_t NV_CTXSHARE_ALLOCATION_FLAGS_SUBCONTEXT_ASYNC = 1;
constexpr uint32_t NV2080_ENGINE_TYPE_GRAPHICS = 1;
constexpr uint32_t NV2080_GPU_CMD_GPU_GET_GID_FLAGS_FORMAT_BINARY = 2;
constexpr uint32_t NV_RM_API_VERSION_CMD_QUERY = '2', NV_RM_API_VERSION_REPLY_RECOGNIZED = 1;
constexpr uint32_t NV_OK = 0;
// UVM mapping attribute: UvmGpuMappingTypeReadWriteAtomic (uvm_types.h UvmGpuMappingType).
constexpr uint32_t UvmGpuMappingTypeReadWriteAtomic = 1;

// Escape-level structs (their sizes are checked by the driver: escape.c).
struct nv_ioctl_rm_api_version_t {  // nv-ioctl.h:98
  uint32_t cmd, reply;
  char versionString[64];
};
struct nv_pci_info_t {  // nv-ioctl.h
  uint32_t domain;
  uint8_t bus, slot, function;
  uint16_t vendor_id, device_id;
};
struct nv_ioctl_card_info_t {  // nv-ioctl.h:55-66
  uint8_t valid;
  nv_pci_info_t pci_info;
  uint32_t gpu_id;
  uint16_t interrupt_line;
  alignas(8) uint64_t reg_address, reg_size, fb_address, fb_size;
  uint32_t minor_number;
  uint8_t dev_name[10];
};
struct nv_ioctl_register_fd_t {  // nv-ioctl.h:124
  int ctl_fd;
};
struct NVOS21_PARAMETERS {  // nvos.h:461-471 (RM_ALLOC)
  uint32_t hRoot, hObjectParent, hObjectNew, hClass;
  alignas(8) uint64_t pAllocParms;
  uint32_t paramsSize, status;
};
struct NVOS00_PARAMETERS {  // nvos.h (RM_FREE)
  uint32_t hRoot, hObjectParent, hObjectOld, status;
};
struct NVOS54_PARAMETERS {  // nvos.h:2228-2238 (RM_CONTROL)
  uint32_t hClient, hObject, cmd, flags;
  alignas(8) uint64_t params;
  uint32_t paramsSize, status;
};
struct NVOS33_PARAMETERS {  // nvos.h:1843-1854 (RM_MAP_MEMORY)
  uint32_t hClient, hDevice, hMemory;
  alignas(8) uint64_t offset, length, pLinearAddress;
  uint32_t status, flags;
};
struct nv_ioctl_nvos33_parameters_with_fd {  // nv-unix-nvos-params-wrappers.h:42-46
  NVOS33_PARAMETERS params;
  int fd;
};

// Allocation parameters (RM_ALLOC copies as many bytes as the class's own struct: alloc_free.c).
struct NV0080_ALLOC_PARAMETERS {  // class/cl0080.h:54
  uint32_t deviceId, hClientShare, hTargetClient, hTargetDevice, flags;
  alignas(8) uint64_t vaSpaceSize, vaStartInternal, vaLimitInternal;
  uint32_t vaMode;
};
struct NV2080_ALLOC_PARAMETERS {  // class/cl2080.h:43
  uint32_t subDeviceId;
};
struct NV_MEMORY_ALLOCATION_PARAMS {  // nvos.h:1607-1642
  uint32_t owner, type, flags, width, height;
  int32_t pitch;
  uint32_t attr, attr2, format, comprCovg, zcullCovg;
  alignas(8) uint64_t rangeLo, rangeHi, size, alignment, offset, limit, address;
  uint32_t ctagOffset, hVASpace, internalflags, tag;
  int32_t numaNode;
};
struct NV_VASPACE_ALLOCATION_PARAMETERS {  // nvos.h:3155-3164
  uint32_t index, flags;
  alignas(8) uint64_t vaSize, vaStartInternal, vaLimitInternal;
  uint32_t bigPageSize;
  alignas(8) uint64_t vaBase;
  uint32_t pasid;
};
struct NV_CHANNEL_GROUP_ALLOCATION_PARAMETERS {  // nvos.h:2904-2911
  uint32_t hObjectError, hObjectEccError, hVASpace, engineType;
  uint8_t bIsCallingContextVgpuPlugin;
};
struct NV_CTXSHARE_ALLOCATION_PARAMETERS {  // nvos.h:3233-3237
  uint32_t hVASpace, flags, subctxId;
};
struct NV_MEMORY_DESC_PARAMS {  // alloc/alloc_channel.h
  alignas(8) uint64_t base, size;
  uint32_t addressSpace, cacheAttrib;
};
struct NV_CHANNEL_ALLOC_PARAMS {  // alloc/alloc_channel.h:296-342
  uint32_t hObjectError, hObjectBuffer;
  alignas(8) uint64_t gpFifoOffset;
  uint32_t gpFifoEntries, flags, hContextShare, hVASpace;
  uint32_t hUserdMemory[8];
  alignas(8) uint64_t userdOffset[8];
  uint32_t engineType, cid, subDeviceId, hObjectEccError;
  NV_MEMORY_DESC_PARAMS instanceMem, userdMem, ramfcMem, mthdbufMem;
  uint32_t hPhysChannelGroup, internalFlags;
  NV_MEMORY_DESC_PARAMS errorNotifierMem, eccErrorNotifierMem;
  uint32_t ProcessID, SubProcessID;
  uint32_t encryptIv[3], decryptIv[3], hmacNonce[8];
  uint32_t tpcConfigID;
};

// Control parameters (RM_CONTROL checks paramsSize against these: control.c).
struct NV0000_CTRL_GPU_GET_ID_INFO_V2_PARAMS {  // ctrl0000gpu.h:176-185
  uint32_t gpuId, gpuFlags, deviceInstance, subDeviceInstance, sliStatus, boardId, gpuInstance;
  int32_t numaId;
};
struct NV0080_CTRL_GPU_GET_CLASSLIST_V2_PARAMS {  // ctrl0080gpu.h:510-513
  uint32_t numClasses;
  uint32_t classList[200];
};
struct NV2080_CTRL_GPU_GET_GID_INFO_PARAMS {  // ctrl2080gpu.h:1785-1790
  uint32_t index, flags, length;
  uint8_t data[256];
};
struct NVC36F_CTRL_CMD_GPFIFO_GET_WORK_SUBMIT_TOKEN_PARAMS {  // ctrlc36f.h:84
  uint32_t workSubmitToken;
};
struct NVA06C_CTRL_GPFIFO_SCHEDULE_PARAMS {  // ctrla06c.h (= NVA06F's): bEnable, bSkipSubmit,
                                             // bSkipEnable
  uint8_t bEnable, bSkipSubmit, bSkipEnable;
};

// UVM (kernel-open/nvidia-uvm/uvm_ioctl.h, uvm_linux_ioctl.h, uvm_types.h). UVM checks no sizes:
// a stale layout would be read silently, which is why the branch is checked first.
struct UVM_INITIALIZE_PARAMS {  // uvm_linux_ioctl.h:34-38
  alignas(8) uint64_t flags;
  uint32_t rmStatus;
};
struct UVM_MM_INITIALIZE_PARAMS {  // uvm_ioctl.h:1088-1092
  int32_t uvmFd;
  uint32_t rmStatus;
};
struct UVM_REGISTER_GPU_PARAMS {  // uvm_ioctl.h:534-543
  uint8_t gpu_uuid[16];
  uint8_t numaEnabled;
  int32_t numaNodeId, rmCtrlFd;
  uint32_t hClient, hSmcPartRef, rmStatus;
};
struct UVM_REGISTER_GPU_VASPACE_PARAMS {  // uvm_ioctl.h:402-409
  uint8_t gpuUuid[16];
  int32_t rmCtrlFd;
  uint32_t hClient, hVaSpace, rmStatus;
};
struct UVM_REGISTER_CHANNEL_PARAMS {  // uvm_ioctl.h:427-436
  uint8_t gpuUuid[16];
  int32_t rmCtrlFd;
  uint32_t hClient, hChannel;
  alignas(8) uint64_t base, length;
  uint32_t rmStatus;
};
struct UVM_CREATE_EXTERNAL_RANGE_PARAMS {  // uvm_ioctl.h:1043-1048
  alignas(8) uint64_t base, length;
  uint32_t rmStatus;
};
struct UvmGpuMappingAttributes {  // uvm_types.h:84-94
  uint8_t gpuUuid[16];
  uint32_t gpuMappingType, gpuCachingType, gpuFormatType, gpuElementBits, gpuCompressionType;
};
struct UVM_MAP_EXTERNAL_ALLOCATION_PARAMS {  // uvm_ioctl.h:492-504; UVM_MAX_GPUS = 32 * 8
                                             // (uvm_types.h:64)
  alignas(8) uint64_t base, length, offset;
  UvmGpuMappingAttributes perGpuAttributes[256];
  alignas(8) uint64_t gpuAttributesCount;
  int32_t rmCtrlFd;
  uint32_t hClient, hMemory, rmStatus;
};
struct UVM_FREE_PARAMS {  // uvm_ioctl.h:510-515 (16 bytes from 590: the branch check matters)
  alignas(8) uint64_t base, length;
  uint32_t rmStatus;
};

// Sizes as compiled from the 580.105.08 / 580.142 headers (nv_plan.md §2.11,
// scripts/nv_rm_struct_sizes.c there) and offsets the plan pinned.
static_assert(sizeof(nv_ioctl_card_info_t) == 72);
static_assert(sizeof(nv_ioctl_rm_api_version_t) == 72);
static_assert(sizeof(NVOS21_PARAMETERS) == 32);
static_assert(sizeof(NVOS00_PARAMETERS) == 16);
static_assert(sizeof(NVOS54_PARAMETERS) == 32);
static_assert(sizeof(nv_ioctl_nvos33_parameters_with_fd) == 56);
static_assert(sizeof(NV0080_ALLOC_PARAMETERS) == 56);
static_assert(sizeof(NV2080_ALLOC_PARAMETERS) == 4);
static_assert(sizeof(NV_MEMORY_ALLOCATION_PARAMS) == 128);
static_assert(sizeof(NV_VASPACE_ALLOCATION_PARAMETERS) == 56);
static_assert(sizeof(NV_CHANNEL_GROUP_ALLOCATION_PARAMETERS) == 20);
static_assert(sizeof(NV_CTXSHARE_ALLOCATION_PARAMETERS) == 12);
static_assert(sizeof(NV_CHANNEL_ALLOC_PARAMS) == 368);
static_assert(offsetof(NV_CHANNEL_ALLOC_PARAMS, hUserdMemory) == 32);
static_assert(offsetof(NV_CHANNEL_ALLOC_PARAMS, userdOffset) == 64);
static_assert(offsetof(NV_CHANNEL_ALLOC_PARAMS, engineType) == 128);
static_assert(sizeof(NVC36F_CTRL_CMD_GPFIFO_GET_WORK_SUBMIT_TOKEN_PARAMS) == 4);
static_assert(sizeof(NVA06C_CTRL_GPFIFO_SCHEDULE_PARAMS) == 3);
static_assert(sizeof(NV0080_CTRL_GPU_GET_CLASSLIST_V2_PARAMS) == 804);
static_assert(sizeof(NV0000_CTRL_GPU_GET_ID_INFO_V2_PARAMS) == 32);
static_assert(sizeof(NV2080_CTRL_GPU_GET_GID_INFO_PARAMS) == 268);
static_assert(sizeof(UVM_INITIALIZE_PARAMS) == 16);
static_assert(sizeof(UVM_MM_INITIALIZE_PARAMS) == 8);
static_assert(sizeof(UVM_REGISTER_GPU_PARAMS) == 40);
static_assert(sizeof(UVM_REGISTER_GPU_VASPACE_PARAMS) == 32);
static_assert(sizeof(UVM_REGISTER_CHANNEL_PARAMS) == 56);
static_assert(sizeof(UVM_CREATE_EXTERNAL_RANGE_PARAMS) == 24);
static_assert(sizeof(UVM_MAP_EXTERNAL_ALLOCATION_PARAMS) == 9264);
static_assert(sizeof(UVM_FREE_PARAMS) == 24);

// USERD (the channel's control page): GPGet at +0x88, GPPut at +0x8C (clc86f.h Nvc86fControl,
// nv_plan.md §2.4). Doorbell: the work-submit token written to the usermode page + 0x90
// (NV_VIRTUAL_FUNCTION_DOORBELL, ga100/dev_vm.h:131).
constexpr uint32_t USERD_GP_GET = 0x88, USERD_GP_PUT = 0x8C, USERMODE_DOORBELL = 0x90;
constexpr uint64_t USERMODE_BYTES = 0x10000;

}  // namespace capgraph::nv::abi
