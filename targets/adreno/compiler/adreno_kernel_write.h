// The Adreno kernel facts (adreno_codegen.h) in their capture form (AdrenoKernel,
// schema/adreno_kernel.fbs) and back. Only the round-trip test reads them back through
// adreno_kernel_read (inspect and the runtime read the flatbuffers table directly); the round trip
// keeps the two sides from drifting.
#pragma once
#include <flatbuffers/flatbuffers.h>

#include "adreno_codegen.h"
#include "capgraph/capture_generated.h"

namespace capgraph {

flatbuffers::Offset<fb::AdrenoKernel> adreno_kernel_write(flatbuffers::FlatBufferBuilder &fbb,
                                                          const AdrenoKernelFacts &f,
                                                          const AdrenoTarget &t);
// The facts a capture holds (everything but the binary, which lives in its Program). Throws Error
// naming `what` when a field is out of the range the a6xx registers can hold.
AdrenoKernelFacts adreno_kernel_read(const fb::AdrenoKernel &k, const std::string &what);

}  // namespace capgraph
