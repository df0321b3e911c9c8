// The NVIDIA chips capgraph knows, written once: Ampere GA10x (sm_86), Ada AD10x (sm_89), Hopper
// GH100 (sm_90), with their classes, the QMD version their compute class takes and the
// shared-memory carve-out. The compiler (nv_target.cpp: which SMs it assembles for, which QMD
// version a capture records), the runtime (nv_hcq.cpp), the RM/UVM driver (drivers/nv: which chip a
// device's class list offers) and the fake all read this one table. Dependency-free (the facts
// layer, targets/add_target.cmake FACTS).
#pragma once
#include <cstdint>
#include <string>

namespace capgraph::nv {

// Launch descriptor (QMD) versions: V03_00 on Ampere/Ada (AMPERE_COMPUTE_B, ADA_COMPUTE_A), V04_00
// on Hopper (HOPPER_COMPUTE_A). Sources: ../shared/research/nv_plan.md §0.2 and §2.7 (open-gpu-doc
// clc6c0qmd.h, clcbc0qmd.h; Mesa NVK nak/qmd.rs selects Qmd4_0 for HOPPER_COMPUTE_A and later).
enum class qmd_version : uint8_t { V03_00, V04_00 };
// The QMD_MAJOR_VERSION field's value, which is also the version a capture's NvKernel records.
constexpr uint32_t qmd_major(qmd_version v) { return v == qmd_version::V03_00 ? 3 : 4; }

struct chip {
  const char *name;    // "sm90": the part of the capture target after "nv-"
  uint32_t sm;         // 86, 89, 90: the SM version a cubin's ELF header carries
  const char *family;  // for messages
  uint32_t compute_class, copy_class, gpfifo_class, usermode_class;
  qmd_version qmd;
  uint32_t max_shared_kb;  // the largest shared-memory carve-out (MAX_SM_CONFIG_SHARED_MEM_SIZE)
};
const chip *chip_find(const char *name);          // "sm90"; nullptr when unknown
const chip *chip_by_compute_class(uint32_t cls);  // what a device's class list offers
const chip *chips_all(unsigned *count);           // every known chip, in table order
std::string chip_names();                         // "nv-sm86, nv-sm89, nv-sm90"

}  // namespace capgraph::nv
