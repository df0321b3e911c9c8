#include "target/target_table.h"

#include <iterator>

#include "error.h"
#include "knobs.h"

namespace capgraph {

// The targets this build carries, in the order messages list them (kTargets, generated).
#include "target_list.inc"

const std::vector<const TargetEntry *> &target_entries() {
  static const std::vector<const TargetEntry *> all(std::begin(kTargets), std::end(kTargets));
  return all;
}

const TargetEntry &target_find(const std::string &name) {
  for (const TargetEntry *t : kTargets)
    if (t->matches(name)) return *t;
  std::string known;
  for (const TargetEntry *t : kTargets) known += (known.empty() ? "" : ", ") + t->names();
  throw Error("unknown target '" + name + "': known targets are " + known);
}

void target_twins_add(TargetCode &code, const Program &p, int jobs) {
  // The twins run where the fakes run: this machine, or (CAPGRAPH_TWIN_TARGET=cpu-aarch64) the
  // aarch64 build of the runtime under qemu (targets/adreno/adreno_aarch64_e2e.sh).
  const char *twin = knob_get("CAPGRAPH_TWIN_TARGET");
  code.twin_target = cpu_target_named(twin && *twin ? twin : "cpu");
  code.twins = cpu_codegen(p, code.twin_target, jobs);
}

}  // namespace capgraph
