// The NVIDIA kernel facts (nv_cubin.h) in their capture form (schema/nv_kernel.fbs) and
// back. Only the round-trip test reads them back through nv_kernel_read (inspect and the runtime
// read the flatbuffers table directly); the round trip keeps the two sides from drifting.
#pragma once
#include <flatbuffers/flatbuffers.h>

#include <string>

#include "capgraph/nv_kernel_generated.h"
#include "nv_cubin.h"
#include "nv_target.h"

namespace capgraph {

// `ptxas_version` names the assembler that made the cubin (NvCodegenResult::ptxas_version);
// `ptx`, the module it was assembled from, or nullptr to leave it out (kernels of one module
// share the string: CreateSharedString).
flatbuffers::Offset<fb::NvKernel> nv_kernel_write(flatbuffers::FlatBufferBuilder &fbb,
                                                  const NvKernelFacts &f, const NvTarget &t,
                                                  const std::string &ptxas_version,
                                                  const std::string *ptx = nullptr);
// The facts a capture holds (everything but the cubin, which lives in its Program; the parameters
// are the capture's ABI: 8-byte pointers at 8 * i; max_threads is not carried). Throws Error
// naming `what` when a field is out of the range the GPU or the launch descriptor can take.
NvKernelFacts nv_kernel_read(const fb::NvKernel &k, const std::string &what);

}  // namespace capgraph
