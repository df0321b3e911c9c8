// capgraph inspect: what is inside a capture. The JSON form (--json) is stable: keys are only
// added, never renamed; see README.md "inspect --json".
#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "capgraph/capture_generated.h"
#include "cli/commands.h"
#include "codegen/cpu_target.h"
#include "error.h"
#include "graph/tensor.h"

namespace capgraph {

namespace {

std::string json_str(const std::string &s) {
  std::string r = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') r += '\\', r += c;
    else if ((unsigned char)c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      r += buf;
    } else r += c;
  }
  return r + "\"";
}

std::string shape_of(const flatbuffers::Vector<int64_t> *s) {
  Shape v(s->begin(), s->end());
  return shape_str(v);
}

}  // namespace

std::string cpu_host_description() {
  CpuTarget t = cpu_target_named("cpu");
  std::string f = t.features;
  if (f.size() > 60) f = f.substr(0, 60) + "...";
  return t.name + " " + t.cpu;
}

std::vector<uint8_t> capture_read_verified(const std::string &path) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) throw Error(path + ": cannot open: " + std::strerror(errno));
  if (!S_ISREG(st.st_mode)) throw Error(path + ": not a regular file");
  std::ifstream f(path, std::ios::binary);
  if (!f) throw Error(path + ": cannot open");
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  flatbuffers::Verifier v(bytes.data(), bytes.size(), 64, 100000000);
  if (bytes.size() < 8 || !fb::CaptureBufferHasIdentifier(bytes.data())) throw Error(path + ": not a capgraph capture (no CAPG identifier)");
  {
    // The version first, as the runtime reads it: another major version may lay out the other
    // tables differently, and deserves "version" rather than "corrupt" (or a misreading).
    flatbuffers::Verifier vv(bytes.data(), bytes.size());
    const auto *root = vv.VerifyOffset(0) ? flatbuffers::GetRoot<flatbuffers::Table>(bytes.data()) : nullptr;
    if (!root || !root->VerifyTableStart(vv) || !root->VerifyField<uint16_t>(vv, fb::Capture::VT_VERSION_MAJOR, 2) ||
        !root->VerifyField<uint16_t>(vv, fb::Capture::VT_VERSION_MINOR, 2))
      throw Error(path + ": the capture is corrupt or truncated (its root table is invalid)");
    const unsigned major = root->GetField<uint16_t>(fb::Capture::VT_VERSION_MAJOR, 1);
    const unsigned minor = root->GetField<uint16_t>(fb::Capture::VT_VERSION_MINOR, 0);
    if (major != 1)
      throw Error(path + ": capture format version " + std::to_string(major) + "." + std::to_string(minor) +
                  " cannot be read by this capgraph, which reads version 1.x");
  }
  if (!fb::VerifyCaptureBuffer(v)) throw Error(path + ": the capture is corrupt or truncated (flatbuffers verification failed)");
  return bytes;
}

int cmd_inspect(int argc, char **argv) {
  std::string path;
  bool json = false;
  for (int i = 2; i < argc; i++) {
    std::string a = argv[i];
    if (a == "--json") json = true;
    else if (!a.empty() && a[0] == '-') throw Error("inspect: unknown option " + a);
    else path = a;
  }
  if (path.empty()) throw Error("usage: capgraph inspect MODEL.cap [--json]");
  std::vector<uint8_t> bytes = capture_read_verified(path);
  const fb::Capture *c = fb::GetCapture(bytes.data());
  uint64_t weight_bytes = 0, flops = 0;
  if (c->weights())
    for (const auto *w : *c->weights()) weight_bytes += w->data()->size();
  int launches = 0, copies = 0;
  for (const auto *s : *c->steps()) {
    if (s->kind() == fb::StepKind::launch && s->launch()) {
      launches++;
      flops += s->launch()->flops();
    } else {
      copies++;
    }
  }
  auto kernel_name = [&](const fb::Launch *l) {
    return c->kernels() && l->kernel() < c->kernels()->size() ? c->kernels()->Get(l->kernel())->name()->str() : std::string("?");
  };
  if (json) {
    std::printf("{\"file\": %s, \"version\": \"%u.%u\", \"target\": %s, \"threads\": %u,\n", json_str(path).c_str(), c->version_major(),
                c->version_minor(), json_str(c->target()->name()->str()).c_str(), c->threads());
    auto ports = [&](const char *key, const flatbuffers::Vector<flatbuffers::Offset<fb::TensorInfo>> *v) {
      std::printf(" \"%s\": [", key);
      for (size_t i = 0; i < v->size(); i++) {
        const auto *t = v->Get(i);
        std::printf("%s{\"name\": %s, \"dtype\": \"%s\", \"shape\": [", i ? ", " : "", json_str(t->name()->str()).c_str(),
                    dtype_name((DType)t->dtype()));
        for (size_t d = 0; d < t->shape()->size(); d++) std::printf("%s%lld", d ? ", " : "", (long long)t->shape()->Get(d));
        std::printf("], \"offset\": %llu, \"bytes\": %llu}", (unsigned long long)t->offset(), (unsigned long long)t->size());
      }
      std::printf("],\n");
    };
    ports("inputs", c->inputs());
    ports("outputs", c->outputs());
    std::printf(" \"arena_bytes\": %llu, \"arena_naive_bytes\": %llu, \"weights\": %u, \"weight_bytes\": %llu, \"programs\": %u,\n",
                (unsigned long long)c->arena_size(), (unsigned long long)c->arena_naive_size(), c->weights() ? c->weights()->size() : 0,
                (unsigned long long)weight_bytes, c->programs() ? c->programs()->size() : 0);
    std::printf(" \"kernels\": %u, \"launches\": %d, \"copies\": %d, \"flops\": %llu,\n \"steps\": [\n", c->kernels() ? c->kernels()->size() : 0,
                launches, copies, (unsigned long long)flops);
    for (size_t i = 0; i < c->steps()->size(); i++) {
      const auto *s = c->steps()->Get(i);
      if (s->kind() == fb::StepKind::launch && s->launch()) {
        const auto *l = s->launch();
        std::string srcs;
        if (l->source_nodes())
          for (size_t j = 0; j < l->source_nodes()->size(); j++) srcs += (j ? ", " : "") + json_str(l->source_nodes()->Get(j)->str());
        std::printf("  {\"kind\": \"launch\", \"kernel\": %s, \"sources\": [%s], \"work\": %llu, \"flops\": %llu, \"bytes_read\": %llu, "
                    "\"bytes_written\": %llu}%s\n",
                    json_str(kernel_name(l)).c_str(), srcs.c_str(), (unsigned long long)l->work_size(), (unsigned long long)l->flops(),
                    (unsigned long long)l->bytes_read(), (unsigned long long)l->bytes_written(), i + 1 < c->steps()->size() ? "," : "");
      } else {
        std::printf("  {\"kind\": \"copy\", \"bytes\": %llu}%s\n", s->copy() ? (unsigned long long)s->copy()->size() : 0ull,
                    i + 1 < c->steps()->size() ? "," : "");
      }
    }
    std::printf(" ]}\n");
    return 0;
  }
  std::printf("%s: capture v%u.%u for %s (%s %s), %u thread(s)\n", path.c_str(), c->version_major(), c->version_minor(),
              c->target()->name()->c_str(), c->target()->triple() ? c->target()->triple()->c_str() : "",
              c->target()->cpu() ? c->target()->cpu()->c_str() : "", c->threads());
  for (const auto *t : *c->inputs()) std::printf("  input  %-24s %-8s %s\n", t->name()->c_str(), dtype_name((DType)t->dtype()), shape_of(t->shape()).c_str());
  for (const auto *t : *c->outputs()) std::printf("  output %-24s %-8s %s\n", t->name()->c_str(), dtype_name((DType)t->dtype()), shape_of(t->shape()).c_str());
  std::printf("  %d launches of %u kernels, %d copies, %.3f GFLOP\n", launches, c->kernels() ? c->kernels()->size() : 0, copies, flops / 1e9);
  std::printf("  arena %.2f MiB (sum of intermediates %.2f MiB), weights %.2f MiB in %u blobs\n", c->arena_size() / 1048576.0,
              c->arena_naive_size() / 1048576.0, weight_bytes / 1048576.0, c->weights() ? c->weights()->size() : 0);
  std::printf("  %-4s %-40s %-28s %10s %12s\n", "step", "kernel", "first ONNX node", "work", "MFLOP");
  for (size_t i = 0; i < c->steps()->size(); i++) {
    const auto *s = c->steps()->Get(i);
    if (s->kind() != fb::StepKind::launch || !s->launch()) continue;
    const auto *l = s->launch();
    std::string src = l->source_nodes() && l->source_nodes()->size() ? l->source_nodes()->Get(0)->str() : "";
    if (l->source_nodes() && l->source_nodes()->size() > 1) src += " +" + std::to_string(l->source_nodes()->size() - 1);
    std::printf("  %-4zu %-40.40s %-28.28s %10llu %12.2f\n", i, kernel_name(l).c_str(), src.c_str(), (unsigned long long)l->work_size(),
                l->flops() / 1e6);
  }
  return 0;
}

}  // namespace capgraph
