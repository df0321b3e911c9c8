// The Adreno code generator when capgraph is built without Mesa (CAPGRAPH_ADRENO=OFF, or no
// build from scripts/mesa_ir3.sh): every entry point says how to get it.
#include "adreno_codegen.h"
#include "error.h"

namespace capgraph {

namespace {
[[noreturn]] void adreno_unavailable(const std::string &what) {
  throw Error(what +
              ": this capgraph was built without Mesa's ir3 (CAPGRAPH_ADRENO=OFF); run "
              "scripts/mesa_ir3.sh BUILD_DIR and "
              "configure again");
}
}  // namespace

bool adreno_available() { return false; }
bool adreno_nir_validated() { return false; }
AdrenoCodegenResult adreno_codegen(const Program &, const AdrenoTarget &t) {
  adreno_unavailable("cannot compile for " + t.name);
}
AdrenoDisassembly adreno_disassemble(const AdrenoKernelFacts &, const AdrenoTarget &t) {
  adreno_unavailable("cannot disassemble for " + t.name);
}
AdrenoDisassembly adreno_disassemble_words(const std::vector<uint8_t> &, const AdrenoTarget &t) {
  adreno_unavailable("cannot disassemble for " + t.name);
}

}  // namespace capgraph
