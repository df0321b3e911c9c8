// The compiler's target table: every target a capture can be compiled for, and what each one
// decides. compile.cpp and the capture writer ask the table; they branch on no target name.
//
// Adding a target: its family folder targets/<name>/ (targets/null/README.md) has a
// compiler/<name>_compile.cpp defining <name>_target_entry (targets/null/compiler/null_compile.cpp
// is the smallest); the build lists it when it carries the family (the list is generated).
#pragma once
#include <flatbuffers/flatbuffers.h>

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "capgraph/capture_generated.h"
#include "codegen/cpu_codegen.h"
#include "codegen/cpu_target.h"
#include "schedule/kernel.h"

namespace capgraph {

struct CompileReport;  // compile.h

// What a target's code generation gives the capture writer.
struct TargetCode {
  CpuTarget target;  // the capture's Target table (name, triple, cpu, features)
  fb::ProgramFormat format = fb::ProgramFormat::elf_relocatable;  // of code.objects
  CodegenResult code;     // programs, and per Program kernel its entry, slots and work range
  CodegenResult twins;    // host twins of the kernels (no objects: none)
  CpuTarget twin_target;  // what the twins were built for
  // Kernel facts of Program kernel i (a KernelFacts member), or NONE for targets without any.
  std::function<std::pair<fb::KernelFacts, flatbuffers::Offset<void>>(
      flatbuffers::FlatBufferBuilder &, size_t)>
      facts;
  uint16_t version_major = 1, version_minor = 0;  // capture format version it needs (the writer
                                                  // raises the minor to the bounds version)
};

struct TargetEntry {
  const char *family;  // "cpu", "amd", "null"
  // Whether `name` (a --target value) is this family's, known or not ("amd-gfx9999" is AMD's).
  bool (*matches)(const std::string &name);
  // The names it knows, comma separated, for messages.
  std::string (*names)();
  // Whether launches are split over CPU threads (--threads); false: one device queue.
  bool threads;
  // Compiles the scheduled program for target `name`; `jobs` threads.
  TargetCode (*codegen)(const Program &p, const std::string &name, int jobs);
  // The target's layout choices on the scheduled program before code generation (channel-blocked
  // activations, packed weights: schedule/layout.h), counted in `r`; nullptr: none.
  void (*layouts)(Program &p, const std::string &name, CompileReport &r) = nullptr;
  // Optional, for `capgraph inspect`: this family's kernel facts in a capture as a text table
  // ("" when no kernel has them), and as the `,\n "<family>_kernels": [...]` member that closes
  // the inspect --json object ("" likewise).
  std::string (*facts_text)(const fb::Capture *c) = nullptr;
  std::string (*facts_json)(const fb::Capture *c) = nullptr;
  // --precision's default: "fp16" stores weights and activations as float16
  // (schedule/half_storage.h), "fp32" as they are.
  const char *precision = "fp32";
};

// The entry for a --target value ("" or "cpu": this machine's CPU). Throws naming every known
// target when no entry knows it.
const TargetEntry &target_find(const std::string &name);

// Every entry this build carries, the CPU's first, in the order messages list them.
const std::vector<const TargetEntry *> &target_entries();

// The CPU's entry (target/cpu.cpp); the others are defined in
// targets/<name>/compiler/<name>_compile.cpp.
extern const TargetEntry cpu_target_entry;

// Host twins for a GPU target: the program compiled for this machine's CPU.
void target_twins_add(TargetCode &code, const Program &p, int jobs);

}  // namespace capgraph
