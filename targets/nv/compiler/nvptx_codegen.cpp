#include "nvptx_codegen.h"

#include <fcntl.h>
#include <llvm/IR/IntrinsicsNVPTX.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Metadata.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <thread>

#include "codegen/gpu_work_item.h"
#include "codegen/kernel_emit.h"
#include "codegen/llvm_gpu.h"
#include "error.h"

namespace capgraph {

namespace fs = std::filesystem;

namespace {

using llvm::Value;

// ptxas takes milliseconds per kernel (nv_plan.md §3); a minute means it hangs.
constexpr int kPtxasTimeoutS = 120;

bool executable(const std::string &p) {
  struct stat st;
  return !p.empty() && stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
         access(p.c_str(), X_OK) == 0;
}

// Runs argv[0] with stdout and stderr into `log`; its exit status, or throws when it cannot start,
// dies of a signal or runs past `timeout_s` (then it is killed).
int process_run(const std::vector<std::string> &argv, const std::string &log, int timeout_s) {
  std::vector<char *> args;
  for (const std::string &a : argv) args.push_back(const_cast<char *>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = fork();
  if (pid < 0) throw Error("cannot start " + argv[0] + ": fork failed");
  if (pid == 0) {
    int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) {
      dup2(fd, 1);
      dup2(fd, 2);
    }
    execv(args[0], args.data());
    _exit(127);
  }
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  int status = 0;
  while (waitpid(pid, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      throw Error(argv[0] + " ran for more than " + std::to_string(timeout_s) +
                  " s and was stopped");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  if (!WIFEXITED(status))
    throw Error(argv[0] + " died of signal " + std::to_string(WTERMSIG(status)));
  if (WEXITSTATUS(status) == 127) throw Error("cannot run " + argv[0]);
  return WEXITSTATUS(status);
}

std::string file_text(const fs::path &p) {
  std::ifstream f(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

struct TempDir {
  fs::path path;
  TempDir() {
    const char *tmp = getenv("TMPDIR");
    std::string tmpl = std::string(tmp && *tmp ? tmp : "/tmp") + "/capgraph_ptxas_XXXXXX";
    if (!mkdtemp(tmpl.data()))
      throw Error("cannot create a temporary directory for ptxas in " + tmpl);
    path = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

// Marks `f` a kernel entry with a required 1-D block. LLVM 19 reads both from !nvvm.annotations
// (Source: LLVM NVPTXUsage "Kernel Metadata"); `reqntidx` becomes PTX `.reqntid`, which ptxas
// records as EIATTR_REQNTID.
void kernel_annotate(llvm::Function *f, const NvTarget &t) {
  llvm::LLVMContext &ctx = f->getContext();
  auto *i32 = llvm::Type::getInt32Ty(ctx);
  llvm::NamedMDNode *md = f->getParent()->getOrInsertNamedMetadata("nvvm.annotations");
  auto entry = [&](const char *key, uint32_t v) {
    md->addOperand(
        llvm::MDNode::get(ctx, {llvm::ValueAsMetadata::get(f), llvm::MDString::get(ctx, key),
                                llvm::ConstantAsMetadata::get(llvm::ConstantInt::get(i32, v))}));
  };
  entry("kernel", 1);
  entry("reqntidx", t.block_size);
}

// `tile` false: the facts of a GPU without shared memory, so no kernel is tiled (gpu_tile_plan).
GpuFacts nv_gpu_facts(const NvTarget &t, bool tile = true) {
  return {t.block_size, 32, tile ? t.shared_bytes : 0, t.registers};
}

void nv_kernel_emit(KernelEmitter &e, const std::string &symbol, const NvTarget &t, bool tile) {
  gpu_kernel_emit(
      e, symbol,
      [&](llvm::Function *fn) {
        fn->addFnAttr("target-cpu", t.cpu);
        fn->addFnAttr("no-builtins");  // NVPTX has no libcalls (no libm): everything is inline
        fn->addFnAttr(llvm::Attribute::NoUnwind);
        kernel_annotate(fn, t);
      },
      // bar.sync also orders the block's shared-memory accesses. Source: PTX ISA "bar, barrier".
      {llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_x, llvm::Intrinsic::nvvm_read_ptx_sreg_tid_x,
       llvm::Intrinsic::nvvm_barrier0, false},
      nv_gpu_facts(t, tile));
}

// PTX text -> cubin through ptxas.
std::vector<uint8_t> ptxas_assemble(const std::string &ptxas, const std::string &ptx,
                                    const NvTarget &t) {
  TempDir dir;
  fs::path in = dir.path / "kernels.ptx", out = dir.path / "kernels.cubin",
           log = dir.path / "ptxas.log";
  {
    std::ofstream f(in, std::ios::binary);
    f << ptx;
    if (!f) throw Error("cannot write " + in.string());
  }
  int rc = process_run({ptxas, "-arch=" + t.cpu, "-O3", "-o", out.string(), in.string()},
                       log.string(), kPtxasTimeoutS);
  if (rc != 0)
    throw Error(ptxas + " -arch=" + t.cpu + " failed (exit " + std::to_string(rc) +
                "): " + file_text(log).substr(0, 2000));
  std::string bytes = file_text(out);
  if (bytes.empty()) throw Error(ptxas + " wrote no cubin");
  return std::vector<uint8_t>(bytes.begin(), bytes.end());
}

}  // namespace

std::string ptxas_find() {
  if (const char *forced = getenv("CAPGRAPH_PTXAS")) {
    if (std::string(forced) == "none") return "";  // as on a machine without the CUDA toolkit
    if (!executable(forced))
      throw Error(std::string("CAPGRAPH_PTXAS=") + forced + " is not an executable file");
    return forced;
  }
  std::vector<std::string> dirs;
  if (const char *path = getenv("PATH")) {
    std::stringstream ss(path);
    std::string d;
    while (std::getline(ss, d, ':'))
      if (!d.empty()) dirs.push_back(d);
  }
  if (const char *cuda = getenv("CUDA_PATH")) dirs.push_back(std::string(cuda) + "/bin");
  dirs.push_back("/usr/local/cuda/bin");
  dirs.push_back("/usr/bin");  // Debian's nvidia-cuda-toolkit (non-free)
  for (const std::string &d : dirs)
    if (executable(d + "/ptxas")) return d + "/ptxas";
  return "";
}

std::string ptxas_version(const std::string &ptxas) {
  TempDir dir;
  fs::path log = dir.path / "version.log";
  int rc = process_run({ptxas, "--version"}, log.string(), 30);
  std::string text = file_text(log);
  if (rc != 0) throw Error(ptxas + " --version failed: " + text.substr(0, 500));
  size_t at = text.find("release ");
  if (at == std::string::npos)
    throw Error(ptxas + " --version does not name a release: " + text.substr(0, 500));
  size_t end = text.find('\n', at);
  return text.substr(at, end == std::string::npos ? std::string::npos : end - at);
}

NvCodegenResult nvptx_codegen(const Program &p, const NvTarget &t, int jobs) {
  NvCodegenResult r;
  r.ptxas = ptxas_find();
  if (r.ptxas.empty())
    throw Error(
        "target " + t.name +
        " needs ptxas to assemble its kernels, and there is none (searched $PATH, $CUDA_PATH/bin, "
        "/usr/local/cuda/bin, /usr/bin; set CAPGRAPH_PTXAS or install the CUDA toolkit or Debian's "
        "nvidia-cuda-toolkit)");
  r.ptxas_version = ptxas_version(r.ptxas);
  std::vector<std::map<std::string, NvKernelFacts>> facts(kLlvmGpuObjects);  // per object
  r.ptx.resize(facts.size());
  LlvmGpuFamily family{
      .target = t.name,
      .triple = "nvptx64-nvidia-cuda",
      .cpu = t.cpu,
      .features = "",
      .module_prefix = "capgraph_nv_",
      .item_name = "threads",
      .launch_name = "launch",
      // The launch grid's x extent is at most 2^31 - 1 blocks. Source: CUDA C++ Programming Guide,
      // "Compute Capabilities", maximum x-dimension of a grid of thread blocks.
      .max_work_size = (int64_t)INT32_MAX * t.block_size,
      .gpu_facts = [&](bool tile) { return nv_gpu_facts(t, tile); },
      .kernel_emit = [&](KernelEmitter &e, const std::string &symbol,
                         bool tile) { nv_kernel_emit(e, symbol, t, tile); },
      // A kernel to which ptxas gives a local-memory frame (a few dozen bytes of spills seen on
      // sm_86 and sm_90 for some tiled 3x3 convolutions): no kernel of ours keeps anything in
      // local memory (nvptx_codegen_test).
      .object_build =
          [&](int o, llvm::Module &m, llvm::TargetMachine &tm) {
            std::vector<uint8_t> ptx = module_compile(m, tm, llvm::CodeGenFileType::AssemblyFile);
            r.ptx[o].assign(ptx.begin(), ptx.end());
            LlvmGpuObject obj;
            obj.bytes = ptxas_assemble(r.ptxas, r.ptx[o], t);
            // A graph with no kernels (a NonMaxSuppression whose output has zero rows) gives
            // an object without any: a valid cubin that has nothing to read.
            const bool has_kernels = std::any_of(
                m.begin(), m.end(), [](const llvm::Function &f) { return !f.isDeclaration(); });
            if (has_kernels) facts[o] = nv_cubin_read(obj.bytes, t.sm);
            for (const auto &[symbol, kf] : facts[o])
              if (kf.frame_bytes > 0 || kf.min_stack_bytes > 0) obj.spilled.insert(symbol);
            return obj;
          },
  };
  r.code = llvm_gpu_codegen(p, family, jobs);
  const CodegenResult &c = r.code;
  r.ptx.resize(c.objects.size());
  r.facts.resize(p.kernels.size());
  for (size_t i = 0; i < p.kernels.size(); i++) {
    const CodegenKernel &ck = c.kernels[i];
    auto it = facts[ck.object].find(ck.symbol);
    if (it == facts[ck.object].end())
      throw Error("internal: kernel " + p.kernels[i].name + " is missing from its " + t.name +
                  " cubin");
    const NvKernelFacts &f = it->second;
    std::string where = "kernel " + p.kernels[i].name + " for " + t.name;
    // The capture's NVIDIA kernel ABI: one 8-byte pointer per slot, in slot order, nothing else.
    if (f.param_bytes != 8 * ck.slots.size() || f.param_count != ck.slots.size())
      throw Error(where + ": its parameters take " + std::to_string(f.param_bytes) + " bytes in " +
                  std::to_string(f.param_count) + " parameters, the capture's ABI has " +
                  std::to_string(ck.slots.size()) + " pointers");
    for (size_t s = 0; s < ck.slots.size(); s++)
      if (f.param_offsets[s] != 8 * s || f.param_sizes[s] != 8)
        throw Error(where + ": parameter " + std::to_string(s) +
                    " is not the 8-byte pointer at offset " + std::to_string(8 * s));
    if (f.reqntid[0] != t.block_size || f.reqntid[1] != 1 || f.reqntid[2] != 1)
      throw Error(where + ": the cubin does not require the " + std::to_string(t.block_size) +
                  "-thread block it is launched with");
    r.facts[i] = f;
  }
  return r;
}

}  // namespace capgraph
