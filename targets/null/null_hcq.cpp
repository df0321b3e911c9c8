#include "null_hcq.h"

#include <cstring>

namespace capgraph::hcq {
namespace {

class null_encoder final : public encoder {
 public:
  explicit null_encoder(std::vector<uint32_t> *out) : encoder(out) {}

  void exec(const dispatch &d) override {
    const null_dispatch &f = d.facts_as<null_dispatch>();
    emit(null_op::exec, {lo(f.code), hi(f.code), lo(d.kernargs), hi(d.kernargs), d.groups});
  }
  void copy(uint64_t dst, uint64_t src, uint64_t size) override {
    emit(null_op::copy, {lo(dst), hi(dst), lo(src), hi(src), lo(size), hi(size)});
  }
  void signal(uint64_t addr, uint64_t value) override {
    emit(null_op::signal, {lo(addr), hi(addr), lo(value), hi(value)});
  }
  void wait(uint64_t addr, uint32_t value) override {
    emit(null_op::wait, {lo(addr), hi(addr), value});
  }
  void barrier() override { emit(null_op::barrier, {}); }
  void interrupt(uint64_t mailbox, uint32_t id) override {
    emit(null_op::interrupt, {lo(mailbox), hi(mailbox), id});
  }
  void timestamp(uint64_t addr) override { emit(null_op::timestamp, {lo(addr), hi(addr)}); }
  void call(uint64_t addr, uint64_t dwords) override {
    emit(null_op::call, {lo(addr), hi(addr), lo(dwords), hi(dwords)});
  }
  const std::string &error() const override { return error_; }

 private:
  static uint32_t lo(uint64_t v) { return uint32_t(v); }
  static uint32_t hi(uint64_t v) { return uint32_t(v >> 32); }
  void emit(null_op op, std::initializer_list<uint32_t> body) {
    out_->push_back(null_header(op, uint32_t(body.size())));
    out_->insert(out_->end(), body.begin(), body.end());
  }
  std::string error_;  // the null packets have room for every value
};

bool null_capture_matches(const char *capture_target) {
  return strcmp(capture_target, "null") == 0;
}

std::string null_capture_names() { return "null"; }

bool null_kernel_check(const fb::Capture *c, uint32_t i, std::string *why) {
  const fb::Kernel *k = c->kernels()->Get(i);
  const std::string what = "kernel " + std::to_string(i) + " '" + k->name()->str() + "'";
  const fb::Program *p = c->programs()->Get(k->program());
  if (p->format() != fb::ProgramFormat::null_code)
    return *why = what + ": its program " + std::to_string(k->program()) + " is not null_code",
           false;
  const fb::NullKernel *n = k->facts_as_NullKernel();
  if (!n) return *why = what + ": no NullKernel launch facts", false;
  if (n->code_offset() % 4 || uint64_t(n->code_offset()) + 4 > p->binary()->size())
    return *why = what + ": code_offset " + std::to_string(n->code_offset()) +
                  " is not a 4-byte word inside its " + std::to_string(p->binary()->size()) +
                  "-byte program",
           false;
  if (n->workgroup_size() < 1) return *why = what + ": workgroup_size 0", false;
  if (k->twin_program() < 0)
    return *why = what + ": no host twin, which is what the null device runs", false;
  return true;
}

capgraph_status null_device_check(const fb::Capture *, transport *, std::string *) {
  return CAPGRAPH_OK;  // one chip
}

capgraph_status null_kernel_resolve(const fb::Capture *c, uint32_t kernel, uint64_t program_gpu,
                                    dispatch *out, std::string *) {
  const fb::Kernel *k = c->kernels()->Get(kernel);
  const fb::NullKernel *n = k->facts_as_NullKernel();
  out->facts_as<null_dispatch>().code = program_gpu + n->code_offset();
  out->workgroup_size = n->workgroup_size();
  out->kernarg_size = 8 * (k->num_buffers() + k->num_scalars());
  out->kernarg_align = 16;
  return CAPGRAPH_OK;
}

std::unique_ptr<encoder> null_encoder_create(const fb::Capture *, queue_kind,
                                             std::vector<uint32_t> *out) {
  return std::make_unique<null_encoder>(out);  // one engine kind does every verb
}

}  // namespace

const target null_target = {"null",
                            fb::ProgramFormat::null_code,
                            &null_capture_matches,
                            &null_capture_names,
                            &null_kernel_check,
                            &null_device_check,
                            &null_kernel_resolve,
                            &null_encoder_create};

// Called by the runtime's generated targets_builtin_register (CAPGRAPH_TARGETS holds "null").
void target_null_register() {
  target_register(
      "null", &null_device_open, &null_target,
      [] {
        return std::string(
            "the null device (targets/null): runs captures compiled with --target null "
            "as their host twins, measures nothing\n");
      },
      &null_device_attach);
}

}  // namespace capgraph::hcq
