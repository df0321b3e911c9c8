// capgraph inspect: what is inside a capture. The JSON form (--json) is stable: keys are only
// added, never renamed; see README.md "inspect --json".
#include <sys/stat.h>

#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "capgraph/capture_generated.h"
#include "capture_verify.h"
#include "cli/buffer_users.h"
#include "cli/commands.h"
#include "codegen/cpu_target.h"
#include "error.h"
#include "graph/tensor.h"
#include "target/target_table.h"

namespace capgraph {

namespace {

// printf into a string.
__attribute__((format(printf, 2, 3))) void appendf(std::string &out, const char *fmt, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  const int n = std::vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  if (n >= 0 && size_t(n) < sizeof buf) {
    out += buf;
    return;
  }
  std::string big(size_t(n > 0 ? n : 0) + 1, '\0');
  va_start(ap, fmt);
  std::vsnprintf(big.data(), big.size(), fmt, ap);
  va_end(ap);
  big.pop_back();
  out += big;
}

// What inspect's summary line and JSON header count.
struct Totals {
  uint64_t weight_bytes = 0, flops = 0;
  int launches = 0, copies = 0;
};

Totals totals_count(const fb::Capture *c) {
  Totals t;
  if (c->weights())
    for (const auto *w : *c->weights()) t.weight_bytes += w->data()->size();
  for (const auto *s : *c->steps()) {
    if (s->kind() == fb::StepKind::launch && s->launch()) {
      t.launches++;
      t.flops += s->launch()->flops();
    } else {
      t.copies++;
    }
  }
  return t;
}

std::string steps_list(const std::vector<uint32_t> &steps) {
  std::string r = "[";
  for (size_t i = 0; i < steps.size(); i++) r += (i ? ", " : "") + std::to_string(steps[i]);
  return r + "]";
}

// Whether a launch's kernel stores float16 (capture.fbs Kernel.half_storage).
bool kernel_half(const fb::Capture *c, const fb::Launch *l) {
  return c->kernels() && l->kernel() < c->kernels()->size() &&
         c->kernels()->Get(l->kernel())->half_storage();
}

std::string kernel_name(const fb::Capture *c, const fb::Launch *l) {
  return c->kernels() && l->kernel() < c->kernels()->size()
             ? c->kernels()->Get(l->kernel())->name()->str()
             : std::string("?");
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
  // The runtime's first look (capture_verify.h), in this command's words.
  const capture_preamble pre = capture_preamble_check(bytes.data(), bytes.size());
  switch (pre.status) {
    case capture_preamble_status::ok: break;
    case capture_preamble_status::no_identifier:
      throw Error(path + ": not a capgraph capture (no CAPG identifier)");
    case capture_preamble_status::too_large:
      throw Error(path + ": larger than the 2 GiB a flatbuffer can address");
    case capture_preamble_status::bad_root_offset:
    case capture_preamble_status::bad_root:
      throw Error(path + ": the capture is corrupt or truncated (its root table is invalid)");
    case capture_preamble_status::bad_version:
      throw Error(path + ": capture format version " + std::to_string(pre.major) + "." +
                  std::to_string(pre.minor) + " cannot be read by this capgraph, which reads " +
                  capture_versions_text());
    case capture_preamble_status::bad_layout:
      throw Error(path + ": the capture is corrupt or truncated (flatbuffers verification failed)");
  }
  return bytes;
}

std::string inspect_json(const std::string &path, const fb::Capture *c) {
  const Totals t = totals_count(c);
  std::string o;
  appendf(o, "{\"file\": %s, \"version\": \"%u.%u\", \"target\": %s, \"threads\": %u,\n",
          json_quote(path).c_str(), c->version_major(), c->version_minor(),
          json_quote(c->target()->name()->str()).c_str(), c->threads());
  // The environment knobs that changed the output (Capture.compile_options), [] for none.
  o += " \"compile_options\": [";
  if (c->compile_options())
    for (size_t i = 0; i < c->compile_options()->size(); i++)
      o += (i ? ", " : "") + json_quote(c->compile_options()->Get(i)->str());
  o += "],\n";
  auto ports = [&](const char *key,
                   const flatbuffers::Vector<flatbuffers::Offset<fb::TensorInfo>> *v) {
    appendf(o, " \"%s\": [", key);
    for (size_t i = 0; i < v->size(); i++) {
      const auto *t = v->Get(i);
      appendf(o, "%s{\"name\": %s, \"dtype\": \"%s\", \"shape\": [", i ? ", " : "",
              json_quote(t->name()->str()).c_str(), dtype_name((DType)t->dtype()));
      for (size_t d = 0; d < t->shape()->size(); d++)
        appendf(o, "%s%lld", d ? ", " : "", (long long)t->shape()->Get(d));
      appendf(o, "], \"offset\": %llu, \"bytes\": %llu}", (unsigned long long)t->offset(),
              (unsigned long long)t->size());
    }
    o += "],\n";
  };
  ports("inputs", c->inputs());
  ports("outputs", c->outputs());
  appendf(o,
          " \"arena_bytes\": %llu, \"arena_naive_bytes\": %llu, \"weights\": %u, \"weight_bytes\": "
          "%llu, \"programs\": %u,\n",
          (unsigned long long)c->arena_size(), (unsigned long long)c->arena_naive_size(),
          c->weights() ? c->weights()->size() : 0, (unsigned long long)t.weight_bytes,
          c->programs() ? c->programs()->size() : 0);
  appendf(
      o, " \"kernels\": %u, \"launches\": %d, \"copies\": %d, \"flops\": %llu,\n \"steps\": [\n",
      c->kernels() ? c->kernels()->size() : 0, t.launches, t.copies, (unsigned long long)t.flops);
  auto ref_json = [&](const fb::BufferRef *r, uint64_t bytes) {
    std::string j;
    if (!r) return std::string("null");
    if (r->space() == fb::Space::weight)
      appendf(j, "{\"space\": \"weight\", \"index\": %u, \"offset\": %llu, \"bytes\": %llu}",
              r->index(), (unsigned long long)r->offset(), (unsigned long long)bytes);
    else
      appendf(j, "{\"space\": \"arena\", \"offset\": %llu, \"bytes\": %llu}",
              (unsigned long long)r->offset(), (unsigned long long)bytes);
    return j;
  };
  std::vector<std::vector<uint32_t>> weight_readers(c->weights() ? c->weights()->size() : 0);
  for (uint32_t i = 0; i < c->steps()->size(); i++) {
    const auto *s = c->steps()->Get(i);
    const char *sep = i + 1 < c->steps()->size() ? "," : "";
    if (s->kind() == fb::StepKind::launch && s->launch()) {
      const auto *l = s->launch();
      std::string srcs, bindings;
      if (l->source_nodes())
        for (size_t j = 0; j < l->source_nodes()->size(); j++)
          srcs += (j ? ", " : "") + json_quote(l->source_nodes()->Get(j)->str());
      for (uint32_t j = 0; j < l->buffers()->size(); j++) {
        const fb::BufferRef *r = l->buffers()->Get(j);
        bindings += (j ? ", " : "") +
                    ref_json(r, j < l->buffer_sizes()->size() ? l->buffer_sizes()->Get(j) : 0);
        if (r->space() == fb::Space::weight && r->index() < weight_readers.size() &&
            (weight_readers[r->index()].empty() || weight_readers[r->index()].back() != i))
          weight_readers[r->index()].push_back(i);
      }
      appendf(o,
              "  {\"kind\": \"launch\", \"kernel\": %s, \"sources\": [%s], \"work\": %llu, "
              "\"flops\": %llu, \"bytes_read\": %llu, "
              "\"bytes_written\": %llu, \"half_storage\": %s, \"bindings\": [%s]}%s\n",
              json_quote(kernel_name(c, l)).c_str(), srcs.c_str(),
              (unsigned long long)l->work_size(), (unsigned long long)l->flops(),
              (unsigned long long)l->bytes_read(), (unsigned long long)l->bytes_written(),
              kernel_half(c, l) ? "true" : "false", bindings.c_str(), sep);
    } else {
      const fb::Copy *cp = s->copy();
      appendf(o, "  {\"kind\": \"copy\", \"bytes\": %llu, \"src\": %s, \"dst\": %s}%s\n",
              cp ? (unsigned long long)cp->size() : 0ull,
              ref_json(cp ? cp->src() : nullptr, cp ? cp->size() : 0).c_str(),
              ref_json(cp ? cp->dst() : nullptr, cp ? cp->size() : 0).c_str(), sep);
    }
  }
  o += " ],\n \"buffers\": [\n";
  const std::vector<BufferUsers> users = buffer_users(c);
  for (size_t i = 0; i < users.size(); i++) {
    const fb::PlannedBuffer *b = c->buffers()->Get(i);
    appendf(o,
            "  {\"name\": %s, \"float16\": %s, \"offset\": %llu, \"bytes\": %llu, "
            "\"first_step\": %u, \"last_step\": %u, \"writers\": %s, \"readers\": %s}%s\n",
            json_quote(b->name() ? b->name()->str() : "").c_str(), b->float16() ? "true" : "false",
            (unsigned long long)b->offset(), (unsigned long long)b->size(), b->first_step(),
            b->last_step(), steps_list(users[i].writers).c_str(),
            steps_list(users[i].readers).c_str(), i + 1 < users.size() ? "," : "");
  }
  o += " ],\n \"weight_blobs\": [\n";
  for (size_t i = 0; i < weight_readers.size(); i++) {
    const fb::Weight *w = c->weights()->Get(i);
    appendf(o, "  {\"name\": %s, \"float16\": %s, \"bytes\": %llu, \"readers\": %s}%s\n",
            json_quote(w->name() ? w->name()->str() : "").c_str(), w->float16() ? "true" : "false",
            (unsigned long long)w->data()->size(), steps_list(weight_readers[i]).c_str(),
            i + 1 < weight_readers.size() ? "," : "");
  }
  o += " ]";
  for (const TargetEntry *t : target_entries())  // each family's kernel facts, when it has some
    if (t->facts_json) o += t->facts_json(c);
  o += "}\n";
  return o;
}

int cmd_inspect(int argc, char **argv) {
  std::string path;
  bool json = false;
  for (int i = 2; i < argc; i++) {
    std::string a = argv[i];
    if (a == "--json")
      json = true;
    else if (!a.empty() && a[0] == '-')
      throw Error("inspect: unknown option " + a);
    else
      path = a;
  }
  if (path.empty()) throw Error("usage: capgraph inspect MODEL.cap [--json]");
  std::vector<uint8_t> bytes = capture_read_verified(path);
  const fb::Capture *c = fb::GetCapture(bytes.data());
  if (json) {
    std::fputs(inspect_json(path, c).c_str(), stdout);
    return 0;
  }
  const Totals t = totals_count(c);
  std::printf("%s: capture v%u.%u for %s (%s %s), %u thread(s)\n", path.c_str(), c->version_major(),
              c->version_minor(), c->target()->name()->c_str(),
              c->target()->triple() ? c->target()->triple()->c_str() : "",
              c->target()->cpu() ? c->target()->cpu()->c_str() : "", c->threads());
  if (c->compile_options())
    for (const auto *o : *c->compile_options()) std::printf("  compiled with %s\n", o->c_str());
  for (const auto *t : *c->inputs())
    std::printf("  input  %-24s %-8s %s\n", t->name()->c_str(), dtype_name((DType)t->dtype()),
                shape_of(t->shape()).c_str());
  for (const auto *t : *c->outputs())
    std::printf("  output %-24s %-8s %s\n", t->name()->c_str(), dtype_name((DType)t->dtype()),
                shape_of(t->shape()).c_str());
  std::printf("  %d launches of %u kernels, %d copies, %.3f GFLOP\n", t.launches,
              c->kernels() ? c->kernels()->size() : 0, t.copies, t.flops / 1e9);
  std::printf("  arena %.2f MiB (sum of intermediates %.2f MiB), weights %.2f MiB in %u blobs\n",
              c->arena_size() / 1048576.0, c->arena_naive_size() / 1048576.0,
              t.weight_bytes / 1048576.0, c->weights() ? c->weights()->size() : 0);
  // With float16 storage (--precision fp16) each step says whether its kernel stores float16.
  bool any_half = false;
  for (const auto *s : *c->steps())
    if (s->kind() == fb::StepKind::launch && s->launch() && kernel_half(c, s->launch()))
      any_half = true;
  if (any_half) {
    int half_buffers = 0, half_weights = 0;
    if (c->buffers())
      for (const auto *b : *c->buffers()) half_buffers += b->float16();
    if (c->weights())
      for (const auto *w : *c->weights()) half_weights += w->float16();
    std::printf("  float16 storage (math in float32): %d of %u planned buffers, %d of %u weights\n",
                half_buffers, c->buffers() ? c->buffers()->size() : 0, half_weights,
                c->weights() ? c->weights()->size() : 0);
  }
  std::printf("  %-4s %-40s %-28s %10s %12s%s\n", "step", "kernel", "first ONNX node", "work",
              "MFLOP", any_half ? "  store" : "");
  for (size_t i = 0; i < c->steps()->size(); i++) {
    const auto *s = c->steps()->Get(i);
    if (s->kind() != fb::StepKind::launch || !s->launch()) continue;
    const auto *l = s->launch();
    std::string src =
        l->source_nodes() && l->source_nodes()->size() ? l->source_nodes()->Get(0)->str() : "";
    if (l->source_nodes() && l->source_nodes()->size() > 1)
      src += " +" + std::to_string(l->source_nodes()->size() - 1);
    std::printf("  %-4zu %-40.40s %-28.28s %10llu %12.2f%s\n", i, kernel_name(c, l).c_str(),
                src.c_str(), (unsigned long long)l->work_size(), l->flops() / 1e6,
                !any_half           ? ""
                : kernel_half(c, l) ? "  f16"
                                    : "  f32");
  }
  for (const TargetEntry *t : target_entries())
    if (t->facts_text) std::fputs(t->facts_text(c).c_str(), stdout);
  return 0;
}

}  // namespace capgraph
