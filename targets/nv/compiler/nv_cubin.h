// Cubins (the ELF files ptxas writes): reading each kernel's launch facts with our own ELF reader,
// no NVIDIA library. The runtime never parses a cubin; the compiler reads these facts once and
// writes them into the capture (schema/nv_kernel.fbs).
//
// Where each fact lives (sources: ../shared/research/nv_plan.md §2.8-§2.9, verified on ptxas 13.0
// cubins for sm_86/89/90; the attribute names are the ones NVIDIA's cuobjdump -elf prints; this
// reader is checked against `ptxas -v` for every kernel by nvptx_codegen_test.cpp):
//   SM version        ELF e_flags: ABI version >= 8 (CUDA 12.8+) keeps the SM in bits 15:8
//                     (0x06005A04 = sm_90); older cubins in bits 7:0 (0x005A055A).
//   code              section .text.<kernel>: its file offset and size.
//   registers         .nv.info EIATTR_REGCOUNT (per function, symbol-indexed); sm_86 also keeps
//                     it in .text.<kernel> sh_info bits 31:24 (cross-checked when non-zero).
//   local memory      .nv.info EIATTR_FRAME_SIZE, EIATTR_MIN_STACK_SIZE, EIATTR_MAX_STACK_SIZE.
//   parameters        .nv.info.<kernel> EIATTR_PARAM_CBANK (offset in bits 15:0, size in 31:16 of
//                     constant bank 0), EIATTR_CBANK_PARAM_SIZE, EIATTR_KPARAM_INFO per parameter.
//   constant bank 0   section .nv.constant0.<kernel>: its size is the bank the launch must bind.
//   shared memory     section .nv.shared.<kernel> (NOBITS) size; on sm_90 it includes the 1 KiB
//                     .nv.reservedSmem area.
//   barriers          .nv.info.<kernel> EIATTR_NUM_BARRIERS (absent: 0).
//   block             .nv.info.<kernel> EIATTR_REQNTID (from .reqntid), EIATTR_MAX_THREADS
//                     (from .maxntid), EIATTR_MAXREG_COUNT.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace capgraph {

// .nv.info attribute codes this reader uses (u8 in each record). Source: nv_plan.md §2.9, the
// values seen in ptxas 13.0 output for the samples there and in this module's tests.
enum class Eiattr : uint8_t {
  param_cbank = 0x0a,     // SVAL 8: u32 symbol of .nv.constant0.<k>, u16 offset, u16 size
  reqntid = 0x10,         // SVAL 12: u32 x, y, z
  frame_size = 0x11,      // SVAL 8: u32 symbol, u32 bytes per thread
  min_stack_size = 0x12,  // SVAL 8: u32 symbol, u32 bytes per thread
  kparam_info = 0x17,     // SVAL 12: u32 index, u16 ordinal, u16 offset, u32 flags (size in 31:18)
  cbank_param_size = 0x19,  // HVAL: bytes of parameters
  maxreg_count = 0x1b,      // HVAL: register limit ptxas honoured (0xff: none given)
  max_threads = 0x05,       // SVAL 12: u32 x, y, z (from .maxntid)
  crs_stack_size = 0x1e,    // SVAL 4: bytes (call/return stack)
  max_stack_size = 0x23,    // SVAL 8: u32 symbol, u32 bytes
  regcount = 0x2f,          // SVAL 8: u32 symbol, u32 registers per thread
  num_barriers = 0x4c,      // HVAL/BVAL: named barriers used
};

struct NvKernelFacts {
  uint32_t sm = 0;                          // from the ELF header
  uint64_t text_offset = 0, text_size = 0;  // .text.<kernel> in the cubin file
  uint32_t text_align = 0;                  // its sh_addralign: the program address alignment
  uint32_t registers = 0;
  uint32_t barriers = 0;
  uint32_t shared_bytes = 0;        // static shared memory per block (incl. sm_90's reservation)
  uint32_t frame_bytes = 0;         // EIATTR_FRAME_SIZE: local memory per thread
  uint32_t min_stack_bytes = 0;     // EIATTR_MIN_STACK_SIZE
  uint32_t max_stack_bytes = 0;     // EIATTR_MAX_STACK_SIZE (0 when absent)
  uint32_t crs_stack_bytes = 0;     // EIATTR_CRS_STACK_SIZE (0 when absent)
  uint32_t cbank0_bytes = 0;        // size of .nv.constant0.<kernel>
  uint32_t param_offset = 0;        // where the parameters start in constant bank 0
  uint32_t param_bytes = 0;         // their size (EIATTR_PARAM_CBANK, = CBANK_PARAM_SIZE)
  uint32_t param_count = 0;         // EIATTR_KPARAM_INFO records
  uint32_t reqntid[3] = {0, 0, 0};  // required block, 0 when not given
  uint32_t max_threads[3] = {0, 0, 0};  // .maxntid, 0 when not given
  uint32_t max_registers = 0;           // EIATTR_MAXREG_COUNT, 0 when absent
  // Per parameter (ordinal order): offset from param_offset and size in bytes.
  std::vector<uint32_t> param_offsets, param_sizes;
};

// Reads and checks a cubin: ELF64 little-endian, EM_CUDA (190), SM `sm`, every kernel with its
// .text, .nv.constant0 and .nv.info sections, attribute records inside their sections, parameters
// inside constant bank 0. Returns the facts by kernel (entry symbol) name. Throws an Error naming
// the kernel, section or attribute on anything malformed or missing.
std::map<std::string, NvKernelFacts> nv_cubin_read(const std::vector<uint8_t> &cubin, uint32_t sm);

}  // namespace capgraph
