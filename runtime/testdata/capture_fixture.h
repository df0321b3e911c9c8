// Builds real captures for the runtime's tests with the flatbuffers builder. The kernels are
// real ELF objects compiled at build time from testdata/ (kernels.c with the C compiler,
// kernels.ll with llc, relocs_<arch>.s with llvm-mc) and read from CAPGRAPH_TEST_KERNELS_DIR.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "capgraph/capture_generated.h"

namespace capgraph::test {

// Bytes of a kernel object built for this architecture ("kernels_c.o", "kernels_ll_static.o",
// "kernels_ll_pic.o", "relocs.o"); empty if it was not built (no llc / llvm-mc).
std::vector<uint8_t> kernel_object(const char *name);
bool have_llc();
bool have_llvm_mc();

std::vector<uint8_t> file_read(const std::string &path);
void file_write(const std::string &path, const std::vector<uint8_t> &bytes);
// A fresh path in this process's scratch directory under $TMPDIR (removed at exit).
std::string temp_path(const std::string &name);

const char *host_target_name();  // "cpu-x86_64" or "cpu-aarch64"

struct tensor_spec {
  std::string name;
  fb::DType dtype = fb::DType::f32;
  std::vector<int64_t> shape;
  uint64_t offset = 0;
  uint64_t size = 0;
};
struct weight_spec {
  std::string name;
  std::vector<uint8_t> data;
  bool misaligned = false;  // place the data off a 64-byte boundary (a writer ignoring force_align)
};
struct program_spec {
  std::vector<uint8_t> binary;
  std::vector<std::string> imports;
  fb::ProgramFormat format = fb::ProgramFormat::elf_relocatable;
  bool hash_wrong = false;  // store a hash that does not match the binary
};
struct index_table_spec {
  uint32_t buffer = 0;
  fb::DType dtype = fb::DType::i32;
  int64_t low = 0, high = 0;
};
struct kernel_spec {
  std::string name;
  uint32_t program = 0;
  std::string entry;
  uint32_t num_buffers = 0;
  uint32_t num_scalars = 0;
  // KernelBounds (capture.fbs). By default derived from the launches of this kernel: the largest
  // work size, the smallest bytes each binding is given, the first launch's scalars.
  bool bounds = true;                       // false: none (a capture from before version 1.2)
  bool bounds_hash_wrong = false;           // store a hash that does not match the facts
  uint64_t bounds_work_size = 0;            // 0: derived
  std::vector<uint64_t> bounds_sizes = {};  // empty: derived
  std::optional<std::vector<int64_t>> bounds_scalars = std::nullopt;  // none: derived
  std::vector<index_table_spec> index_tables = {};
  std::vector<uint32_t> written = {};  // KernelBounds.written
};
// A GPU kernel's extra facts: AmdKernel (capture.fbs, a KernelFacts member) and its host twin.
struct amd_kernel_spec {
  uint64_t descriptor_offset = 0;
  uint32_t kernarg_size = 0, kernarg_align = 8;
  uint32_t rsrc1 = 0, rsrc2 = 0, rsrc3 = 0;
  uint16_t kernel_code_properties = 0;
  uint32_t wavefront_size = 32, workgroup_size = 256;
  uint32_t private_segment_size = 0;
  int32_t twin_program = -1;
  std::string twin_entry;
  uint64_t twin_work_size = 0;
};
// An NVIDIA kernel's NvKernel facts (schema/nv_kernel.fbs); its twin comes from amd_kernel_spec's
// twin fields (capture_spec::amd), whose AmdKernel facts are then not written.
struct nv_kernel_spec {
  uint32_t sm = 90, qmd_version = 4;
  uint64_t text_offset = 0, text_size = 128;
  uint32_t text_align = 128, registers = 16, barriers = 0, shared_bytes = 0, frame_bytes = 0;
  uint32_t cbank0_bytes = 0x230, param_offset = 0x210, param_bytes = 0, block_x = 256;
};
struct planned_spec {
  std::string name;
  uint64_t offset = 0, size = 0;
};
struct launch_spec {
  uint32_t kernel = 0;
  std::vector<fb::BufferRef> buffers;
  std::vector<int64_t> scalars;
  uint64_t work_size = 0;
  std::vector<uint64_t> partition;
  std::vector<std::string> nodes;
  // Bytes per binding; empty: each binding reaches to the end of its arena or weight.
  std::vector<uint64_t> buffer_sizes;
  bool partition_misaligned = false;  // place the partition's data 4 bytes off an 8-byte boundary
};
struct copy_spec {
  fb::BufferRef src, dst;
  uint64_t size = 0;
};
struct step_spec {
  fb::StepKind kind = fb::StepKind::launch;
  launch_spec launch;
  copy_spec copy;
  bool with_launch = true, with_copy = false;  // which tables are written (kind may disagree)
};
struct capture_spec {
  uint16_t version_major = 1, version_minor = 2;
  std::string target = host_target_name();
  std::string features;
  std::vector<tensor_spec> inputs, outputs;
  std::vector<weight_spec> weights;
  uint64_t arena_size = 0;
  std::vector<planned_spec> buffers;
  std::vector<program_spec> programs;
  std::vector<kernel_spec> kernels;
  std::vector<step_spec> steps;
  uint32_t threads = 1;
  std::string twin_target;           // Capture.twin_target.name; empty: none
  std::vector<amd_kernel_spec> amd;  // GPU captures: one per kernel (Kernel.amd and twin)
  std::vector<nv_kernel_spec>
      nv;  // NVIDIA captures: one per kernel (NvKernel instead of AmdKernel)
};

std::vector<uint8_t> capture_build(const capture_spec &spec);

fb::BufferRef arena_ref(uint64_t offset);
// Where program `index`'s code lies inside a built capture (for damaging it in tests).
const uint8_t *capture_program_code(const std::vector<uint8_t> &capture, uint32_t index);
fb::BufferRef weight_ref(uint32_t index, uint64_t offset = 0);
// An even split of `work` over `threads`, as the compiler would write it.
std::vector<uint64_t> partition_even(uint64_t work, uint32_t threads);
step_spec launch_step(uint32_t kernel, std::vector<fb::BufferRef> buffers, uint64_t work,
                      uint32_t threads, std::vector<int64_t> scalars = {});
step_spec copy_step(fb::BufferRef src, fb::BufferRef dst, uint64_t size);

// The reference model, on the C kernels (program 0 = kernels_c.o):
//   inputs  a[n], b[n] f32; weight w[n]
//   t0 = a + w * table[i % 8]   (c_add_table)      t1 = t0 * 1.7 + 0.3   (c_scale)
//   "y:0" = exp(t1)              (c_exp)            "z" = b              (a copy step)
//   "rows/r" = t0 row by row     (c_copy_rows, rows of 4 floats: work n / 4)
// n must be a multiple of 4.
constexpr int64_t k_reference_n = 1000;
capture_spec reference_spec(uint32_t threads, int64_t n = k_reference_n);
// Inputs a, b and weight w as reference_spec fills them, and the outputs they must give.
void reference_inputs(int64_t n, std::vector<float> *a, std::vector<float> *b);
std::vector<float> reference_weight(int64_t n);
struct reference_outputs {
  std::vector<float> y, z, rows;
};
reference_outputs reference_expected(const std::vector<float> &a, const std::vector<float> &b,
                                     const std::vector<float> &w);

}  // namespace capgraph::test
