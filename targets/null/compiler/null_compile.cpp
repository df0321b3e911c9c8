// The null target in the compiler's table (targets/null/README.md). Its "device code" is one word
// per kernel (the kernel's index in the capture), so the runtime has a program to load; the
// computation is the host twins, built for this machine's CPU exactly as a GPU target's twins are.
#include <map>

#include "target/target_table.h"

namespace capgraph {

namespace {

bool null_matches(const std::string &name) { return name == "null"; }
std::string null_names() { return "null"; }

TargetCode null_codegen(const Program &p, const std::string &, int jobs) {
  TargetCode c;
  c.target = {"null", "", "", ""};
  c.format = fb::ProgramFormat::null_code;
  target_twins_add(c, p, jobs);
  // The capture writer keeps one Kernel per distinct entry, in order of first use: the same
  // numbering here gives each entry its word.
  std::map<std::string, uint32_t> index_of;
  std::vector<uint32_t> word_of(p.kernels.size());
  std::vector<uint8_t> words;
  for (size_t i = 0; i < p.kernels.size(); i++) {
    const CodegenKernel &twin = c.twins.kernels[i];
    auto [it, added] = index_of.emplace(twin.symbol, (uint32_t)index_of.size());
    if (added)
      for (int b = 0; b < 4; b++) words.push_back(uint8_t(it->second >> (8 * b)));  // little-endian
    word_of[i] = it->second;
    c.code.kernels.push_back({0, twin.symbol, twin.slots, twin.work_size});
  }
  c.code.objects.push_back(std::move(words));
  c.code.unique_kernels = (int)index_of.size();
  c.facts = [word_of](flatbuffers::FlatBufferBuilder &fbb, size_t i) {
    return std::make_pair(fb::KernelFacts::NullKernel,
                          fb::CreateNullKernel(fbb, 4 * word_of[i], 1).Union());
  };
  c.version_major = 2;
  return c;
}

}  // namespace

extern const TargetEntry null_target_entry;
const TargetEntry null_target_entry = {.family = "null",
                                       .matches = &null_matches,
                                       .names = &null_names,
                                       .threads = false,
                                       .codegen = &null_codegen};

}  // namespace capgraph
