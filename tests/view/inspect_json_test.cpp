// `capgraph inspect --json` against the capture itself, read here independently with the
// flatbuffers reader: every number it prints agrees with the file, its keys are the documented
// ones (cli/README.md "inspect --json"), and hostile names come back intact.
#include <doctest/doctest.h>

#include <algorithm>

#include "capgraph/capture_generated.h"
#include "cli_harness.h"
#include "json_value.h"
#include "view_models.h"

using namespace capgraph;
using namespace capgraph::cli_test;
using namespace capgraph::view_test;

namespace {

std::vector<std::string> keys_sorted(const JsonValue &v) {
  std::vector<std::string> k = v.keys;
  std::sort(k.begin(), k.end());
  return k;
}

std::vector<std::string> sorted(std::vector<std::string> v) {
  std::sort(v.begin(), v.end());
  return v;
}

JsonValue inspect_json(const std::string &cap) {
  const cli_result r = cli_run({"inspect", cap, "--json"});
  check_success(r);
  try {
    return json_parse(r.output);
  } catch (const std::exception &e) {
    FAIL("inspect --json printed invalid JSON (" << e.what() << "):\n" << r.output);
  }
  return {};
}

bool binding_overlaps(const JsonValue &b, uint64_t offset, uint64_t size) {
  return b.at("space").string == "arena" && b.at("offset").integer < offset + size &&
         offset < b.at("offset").integer + std::max<uint64_t>(b.at("bytes").integer, 1);
}

}  // namespace

TEST_CASE("inspect --json: the documented keys, and numbers that agree with the capture") {
  const std::string cap = capture_small_cnn();
  const JsonValue j = inspect_json(cap);
  const std::vector<uint8_t> bytes = file_read(cap);
  const fb::Capture *c = fb::GetCapture(bytes.data());

  // The keys cli/README.md documents; adding one is fine (update the README and this list),
  // renaming or removing one breaks users.
  CHECK(keys_sorted(j) ==
        sorted({"file", "version", "target", "threads", "compile_options", "inputs", "outputs",
                "arena_bytes", "arena_naive_bytes", "weights", "weight_bytes", "programs",
                "kernels", "launches", "copies", "flops", "steps", "buffers", "weight_blobs"}));
  CHECK(j.at("file").string == cap);
  CHECK(j.at("version").string ==
        std::to_string(c->version_major()) + "." + std::to_string(c->version_minor()));
  CHECK(j.at("target").string == c->target()->name()->str());
  CHECK(j.at("threads").integer == c->threads());
  CHECK(j.at("compile_options").array.size() ==
        (c->compile_options() ? c->compile_options()->size() : 0));
  CHECK(j.at("arena_bytes").integer == c->arena_size());
  CHECK(j.at("arena_naive_bytes").integer == c->arena_naive_size());
  CHECK(j.at("programs").integer == c->programs()->size());
  CHECK(j.at("kernels").integer == c->kernels()->size());

  uint64_t weight_bytes = 0;
  for (const fb::Weight *w : *c->weights()) weight_bytes += w->data()->size();
  CHECK(j.at("weights").integer == c->weights()->size());
  CHECK(j.at("weight_bytes").integer == weight_bytes);
  CHECK(weight_bytes >= (8 * 3 * 9 + 8 * 8 * 9 + 16 * 8 * 9 + 16 * 10 + 10) *
                            4);  // the model's weights, maybe repacked

  for (const char *key : {"inputs", "outputs"}) {
    const auto *ports = std::string(key) == "inputs" ? c->inputs() : c->outputs();
    REQUIRE(j.at(key).array.size() == ports->size());
    for (size_t i = 0; i < ports->size(); i++) {
      const JsonValue &p = j.at(key)[i];
      CHECK(p.at("name").string == ports->Get(i)->name()->str());
      CHECK(p.at("offset").integer == ports->Get(i)->offset());
      CHECK(p.at("bytes").integer == ports->Get(i)->size());
      REQUIRE(p.at("shape").array.size() == ports->Get(i)->shape()->size());
      for (size_t d = 0; d < p.at("shape").array.size(); d++)
        CHECK(int64_t(p.at("shape")[d].number) == ports->Get(i)->shape()->Get(d));
    }
  }

  const JsonValue &steps = j.at("steps");
  REQUIRE(steps.array.size() == c->steps()->size());
  uint64_t flops = 0;
  int launches = 0;
  for (size_t i = 0; i < steps.array.size(); i++) {
    CAPTURE(i);
    const fb::Launch *l = c->steps()->Get(i)->launch();
    REQUIRE(l);  // the compiler emits only launches today
    const JsonValue &s = steps[i];
    launches++;
    flops += l->flops();
    CHECK(s.at("kind").string == "launch");
    CHECK(s.at("kernel").string == c->kernels()->Get(l->kernel())->name()->str());
    CHECK(s.at("flops").integer == l->flops());
    CHECK(s.at("bytes_read").integer == l->bytes_read());
    CHECK(s.at("bytes_written").integer == l->bytes_written());
    CHECK(s.at("work").integer == l->work_size());
    CHECK(s.at("half_storage").boolean == c->kernels()->Get(l->kernel())->half_storage());
    REQUIRE(s.at("sources").array.size() == l->source_nodes()->size());
    for (size_t k = 0; k < l->source_nodes()->size(); k++)
      CHECK(s.at("sources")[k].string == l->source_nodes()->Get(k)->str());
    REQUIRE(s.at("bindings").array.size() == l->buffers()->size());
    for (size_t k = 0; k < l->buffers()->size(); k++) {
      const JsonValue &b = s.at("bindings")[k];
      const fb::BufferRef *r = l->buffers()->Get(k);
      CHECK(b.at("space").string == (r->space() == fb::Space::weight ? "weight" : "arena"));
      CHECK(b.at("offset").integer == r->offset());
      CHECK(b.at("bytes").integer == l->buffer_sizes()->Get(k));
      if (r->space() == fb::Space::weight) CHECK(b.at("index").integer == r->index());
    }
  }
  CHECK(j.at("launches").integer == uint64_t(launches));
  CHECK(j.at("copies").integer == 0);
  CHECK(j.at("flops").integer == flops);
  CHECK(flops > 2 * 8 * 3 * 9 * 16 * 16);  // at least the stem convolution's multiply-adds

  // The memory plan: each buffer as the file has it, and who writes and reads it. A writer's first
  // binding (its stored buffer) lies on the buffer within its lifetime; every intermediate is
  // written by its first step and read by its last.
  const JsonValue &buffers = j.at("buffers");
  REQUIRE(buffers.array.size() == c->buffers()->size());
  auto is_port = [&](const fb::PlannedBuffer *b, const auto *ports) {
    for (const fb::TensorInfo *t : *ports)
      if (t->offset() == b->offset() && t->name()->str() == b->name()->str()) return true;
    return false;
  };
  for (size_t i = 0; i < buffers.array.size(); i++) {
    CAPTURE(i);
    const fb::PlannedBuffer *pb = c->buffers()->Get(i);
    const JsonValue &b = buffers[i];
    CHECK(b.at("name").string == pb->name()->str());
    CHECK(b.at("offset").integer == pb->offset());
    CHECK(b.at("bytes").integer == pb->size());
    CHECK(b.at("first_step").integer == pb->first_step());
    CHECK(b.at("last_step").integer == pb->last_step());
    for (const JsonValue &w : b.at("writers").array) {
      CHECK(w.integer >= pb->first_step());
      CHECK(w.integer <= pb->last_step());
      CHECK(binding_overlaps(steps[w.integer].at("bindings")[0], pb->offset(), pb->size()));
    }
    for (const JsonValue &r : b.at("readers").array) {
      CHECK(r.integer >= pb->first_step());
      CHECK(r.integer <= pb->last_step());
      bool reads = false;
      const JsonValue &bindings = steps[r.integer].at("bindings");
      for (size_t k = 1; k < bindings.array.size(); k++)
        reads |= binding_overlaps(bindings[k], pb->offset(), pb->size());
      CHECK(reads);
    }
    if (!is_port(pb, c->inputs())) {
      REQUIRE(!b.at("writers").array.empty());
      CHECK(b.at("writers")[0].integer == pb->first_step());
    }
    if (!is_port(pb, c->outputs())) {
      REQUIRE(!b.at("readers").array.empty());
      CHECK(b.at("readers").array.back().integer == pb->last_step());
    }
  }

  const JsonValue &blobs = j.at("weight_blobs");
  REQUIRE(blobs.array.size() == c->weights()->size());
  for (size_t i = 0; i < blobs.array.size(); i++) {
    CAPTURE(i);
    CHECK(blobs[i].at("bytes").integer == c->weights()->Get(i)->data()->size());
    CHECK(!blobs[i].at("readers").array.empty());
    for (const JsonValue &r : blobs[i].at("readers").array) {
      bool binds = false;
      for (const JsonValue &b : steps[r.integer].at("bindings").array)
        binds |= b.at("space").string == "weight" && b.at("index").integer == i;
      CHECK(binds);
    }
  }
}

TEST_CASE("inspect --json: hostile ONNX names come back intact through valid JSON") {
  const JsonValue j = inspect_json(capture_small_cnn());
  bool node_seen = false;
  for (const JsonValue &s : j.at("steps").array)
    for (const JsonValue &src : s.at("sources").array) node_seen |= src.string == kHostileNode;
  CHECK(node_seen);
  bool value_seen = false;
  for (const JsonValue &b : j.at("buffers").array)
    value_seen |= b.at("name").string == kHostileValue;
  CHECK(value_seen);
}
