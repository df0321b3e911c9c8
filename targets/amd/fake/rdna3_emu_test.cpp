// The RDNA3 emulator on small hand-written kernels. Their machine words were assembled with
// `llvm-mc-19 -arch=amdgcn -mcpu=gfx1100 -filetype=obj` and read back with llvm-objdump-19; the
// assembly is beside each word.
#include "rdna3_emu.h"

#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <vector>

using namespace capgraph::amd;

namespace {

// One region of "GPU memory": code at +0, kernel arguments at +0x1000, buffers from +0x2000.
struct gpu_memory {
  // buf0 and buf1 hold 4096 floats each (the 64 x 64 dispatch below) without overlapping: when
  // buf1 began 8 KiB after buf0, that test's stores overwrote inputs other host threads had yet to
  // read, and it failed about one run in five depending on the threads' order.
  static constexpr uint64_t base = 0x7f0000000ull, args = base + 0x1000, buf0 = base + 0x2000,
                            buf1 = base + 0x6000;
  std::vector<uint8_t> bytes = std::vector<uint8_t>(0xA000, 0);
  rdna3_region_find find = [this](uint64_t a) {
    return a >= base && a < base + bytes.size() ? rdna3_region{base, bytes.size(), bytes.data()}
                                                : rdna3_region{};
  };
  void code(const std::vector<uint32_t> &words) {
    std::memcpy(bytes.data(), words.data(), 4 * words.size());
  }
  template <typename T>
  T *at(uint64_t gpu) {
    return reinterpret_cast<T *>(bytes.data() + (gpu - base));
  }
  void arg(int i, uint64_t v) { std::memcpy(bytes.data() + 0x1000 + 8 * i, &v, 8); }
};

// A dispatch as the fake builds it: kernarg pointer in s[0:1] (2 user SGPRs), workgroup id X in
// s2 (RSRC2 bit 7), 8 VGPRs (RSRC1 granule 0), `lds_blocks` * 512 bytes of LDS.
rdna3_dispatch dispatch_of(uint32_t groups, uint32_t size, uint32_t lds_blocks = 0) {
  rdna3_dispatch d;
  d.kernel = "test_kernel";
  d.code = gpu_memory::base;
  d.rsrc1 = 0;
  d.rsrc2 = (2u << 1) | (1u << 7) | (lds_blocks << 15);
  d.user_data[0] = uint32_t(gpu_memory::args);
  d.user_data[1] = uint32_t(gpu_memory::args >> 32);
  d.groups = groups;
  d.workgroup_size = size;
  return d;
}

std::string run(gpu_memory &m, const rdna3_dispatch &d, rdna3_counts *n = nullptr) {
  rdna3_program p;
  std::string err;
  if (!rdna3_program_decode(d, m.find, &p, &err)) return err;
  rdna3_counts local;
  if (!rdna3_dispatch_run(d, p, m.find, n ? n : &local, &err)) return err;
  return "";
}

const std::vector<uint32_t> scale_code = {
    0xF4080100, 0xF8000000,  // s_load_b128 s[4:7], s[0:1], 0x0      (in, out)
    0xD6460000, 0x04010C02,  // v_lshl_add_u32 v0, s2, 6, v0          gid = group * 64 + lane
    0x30000082,              // v_lshlrev_b32_e32 v0, 2, v0
    0xBF89FC07,              // s_waitcnt lgkmcnt(0)
    0xDC520000, 0x01040000,  // global_load_b32 v1, v0, s[4:5]
    0xBF8903F7,              // s_waitcnt vmcnt(0)
    0xD6130001, 0x03C9E901,  // v_fma_f32 v1, v1, 2.0, 1.0
    0xDC6A0000, 0x00060100,  // global_store_b32 v0, v1, s[6:7]
    0xBFB00000,              // s_endpgm
};

}  // namespace

TEST_CASE(
    "rdna3: scalar loads, workgroup ids, global loads and stores, VOP3 with inline constants") {
  gpu_memory m;
  m.code(scale_code);
  m.arg(0, gpu_memory::buf0);
  m.arg(1, gpu_memory::buf1);
  float *in = m.at<float>(gpu_memory::buf0), *out = m.at<float>(gpu_memory::buf1);
  for (int i = 0; i < 128; i++) in[i] = 0.25f * float(i) - 7.0f;
  rdna3_counts n;
  REQUIRE(run(m, dispatch_of(2, 64), &n) == "");
  for (int i = 0; i < 128; i++) CHECK(out[i] == in[i] * 2.0f + 1.0f);
  CHECK(out[128] == 0.0f);  // nothing past the grid
  CHECK(n.waves == 4);
  CHECK(n.vmem_load_bytes == 128 * 4);
  CHECK(n.vmem_store_bytes == 128 * 4);
  CHECK(n.valu == 4 * 3);
  CHECK(n.waits == 4 * 2);
  CHECK(n.smem == 4);
}

TEST_CASE(
    "rdna3: D16 loads write one half of the VGPR and keep the other; D16_HI stores take the high "
    "half") {
  // LLVM emits these for 8- and 16-bit data (QLinearMatMul's uint8 operands); the op-conformance
  // suite found global_load_d16_b16 (GLOBAL opcode 0x20) missing.
  const std::vector<uint32_t> code = {
      0xF4080100, 0xF8000000,  // s_load_b128 s[4:7], s[0:1], 0x0      (in, out)
      0x30000082,              // v_lshlrev_b32 v0, 2, v0                byte offset = 4 * lane
      0xBF89FC07,              // s_waitcnt lgkmcnt(0)
      0x7E0202FF, 0x12345678,  // v_mov_b32 v1, 0x12345678
      0x7E0402FF, 0x12345678,  // v_mov_b32 v2, 0x12345678
      0x7E0602FF, 0x12345678,  // v_mov_b32 v3, 0x12345678
      0xDC7A0000, 0x01040000,  // global_load_d16_u8 v1, v0, s[4:5]
      0xDC8A0000, 0x02040000,  // global_load_d16_hi_i8 v2, v0, s[4:5]
      0xDC820002, 0x03040000,  // global_load_d16_b16 v3, v0, s[4:5] offset:2
      0xBF8903F7,              // s_waitcnt vmcnt(0)
      0xDC6A0000, 0x00060100,  // global_store_b32 v0, v1, s[6:7]
      0xDC6A0080, 0x00060200,  // global_store_b32 v0, v2, s[6:7] offset:128
      0xDC6A0100, 0x00060300,  // global_store_b32 v0, v3, s[6:7] offset:256
      0xDC960180, 0x00060200,  // global_store_d16_hi_b16 v0, v2, s[6:7] offset:384
      0xBFB00000,              // s_endpgm
  };
  gpu_memory m;
  m.code(code);
  m.arg(0, gpu_memory::buf0);
  m.arg(1, gpu_memory::buf1);
  uint8_t *in = m.at<uint8_t>(gpu_memory::buf0);
  for (int i = 0; i < 128; i++) in[i] = uint8_t(i * 37 + 11);
  REQUIRE(run(m, dispatch_of(1, 32)) == "");
  const uint32_t *out = m.at<uint32_t>(gpu_memory::buf1);
  for (int l = 0; l < 32; l++) {
    const uint8_t *b = in + 4 * l;
    const uint32_t sext = uint32_t(int32_t(int8_t(b[0]))) & 0xffff;
    CHECK(out[l] == (0x12340000u | b[0]));
    CHECK(out[32 + l] == (sext << 16 | 0x5678u));
    CHECK(out[64 + l] == (0x12340000u | b[2] | uint32_t(b[3]) << 8));
    CHECK(out[96 + l] == sext);  // two bytes stored over zeros
  }
}

TEST_CASE("rdna3: f16 compares read the low halves and take inline constants as halves") {
  // LLVM emits VOPC f16 compares for float16 MaxPool; the op-conformance suite found
  // v_cmp_neq_f16 (VOPC opcode 0xd) missing.
  const std::vector<uint32_t> code = {
      0xF4080100, 0xF8000000,  // s_load_b128 s[4:7], s[0:1], 0x0
      0x30000082,              // v_lshlrev_b32 v0, 2, v0
      0xBF89FC07,              // s_waitcnt lgkmcnt(0)
      0xDC520000, 0x01040000,  // global_load_b32 v1, v0, s[4:5]
      0xBF8903F7,              // s_waitcnt vmcnt(0)
      0x7C0202F0,              // v_cmp_lt_f16 vcc_lo, 0.5, v1
      0xD5010002, 0x01A90280,  // v_cndmask_b32 v2, 0, 1, vcc_lo
      0x7C1A0301,              // v_cmp_neq_f16 vcc_lo, v1, v1        true only for NaN
      0xD5010003, 0x01A90480,  // v_cndmask_b32 v3, 0, 2, vcc_lo
      0x38040702,              // v_or_b32 v2, v2, v3
      0xDC6A0000, 0x00060200,  // global_store_b32 v0, v2, s[6:7]
      0xBFB00000,              // s_endpgm
  };
  // Low halves (the high halves hold 0xABCD, which must not matter) and 1 if 0.5 < x, plus 2 if
  // NaN.
  const struct {
    uint16_t half;
    uint32_t want;
  } cases[] = {
      {0x3800, 0}, {0x3C00, 1}, {0x0000, 0}, {0x7E00, 2},
      {0xBC00, 0}, {0x3801, 1}, {0x7C00, 1}, {0xFC00, 0},
  };
  gpu_memory m;
  m.code(code);
  m.arg(0, gpu_memory::buf0);
  m.arg(1, gpu_memory::buf1);
  uint32_t *in = m.at<uint32_t>(gpu_memory::buf0);
  for (int l = 0; l < 32; l++) in[l] = 0xABCD0000u | cases[l % 8].half;
  REQUIRE(run(m, dispatch_of(1, 32)) == "");
  const uint32_t *out = m.at<uint32_t>(gpu_memory::buf1);
  for (int l = 0; l < 32; l++)
    CHECK_MESSAGE(out[l] == cases[l % 8].want, "half " << cases[l % 8].half);
}

TEST_CASE("rdna3: f16 compares apply abs and neg to the half's own sign bit") {
  // VOP3 modifiers on a 16-bit source act on bit 15 of the half opsel names, not on bit 31 of the
  // register (the emulator once applied them to the whole register: the high half's sign flipped).
  const std::vector<uint32_t> code = {
      0xF4080100, 0xF8000000,  // s_load_b128 s[4:7], s[0:1], 0x0
      0x30000082,              // v_lshlrev_b32 v0, 2, v0
      0xBF89FC07,              // s_waitcnt lgkmcnt(0)
      0xDC520000, 0x01040000,  // global_load_b32 v1, v0, s[4:5]
      0xBF8903F7,              // s_waitcnt vmcnt(0)
      0xD4010008, 0x20010101,  // v_cmp_lt_f16_e64 s8, -v1, 0      a > 0
      0xD5010002, 0x00210280,  // v_cndmask_b32_e64 v2, 0, 1, s8
      0xD4010108, 0x0001E501,  // v_cmp_lt_f16_e64 s8, |v1|, 1.0   |a| < 1
      0xD5010003, 0x00210480,  // v_cndmask_b32_e64 v3, 0, 2, s8
      0x38040702,              // v_or_b32 v2, v2, v3
      0xDC6A0000, 0x00060200,  // global_store_b32 v0, v2, s[6:7]
      0xBFB00000,              // s_endpgm
  };
  // Low halves (the high halves hold 0xABCD, whose sign must not matter): 1 if a > 0, plus 2 if |a|
  // < 1.
  const struct {
    uint16_t half;
    uint32_t want;
  } cases[] = {
      {0x3800, 3}, {0xB800, 2}, {0x3C00, 1}, {0xBC01, 0},
      {0x0000, 2}, {0x7E00, 0}, {0x4400, 1}, {0x8001, 2},
  };
  gpu_memory m;
  m.code(code);
  m.arg(0, gpu_memory::buf0);
  m.arg(1, gpu_memory::buf1);
  uint32_t *in = m.at<uint32_t>(gpu_memory::buf0);
  for (int l = 0; l < 32; l++) in[l] = 0xABCD0000u | cases[l % 8].half;
  REQUIRE(run(m, dispatch_of(1, 32)) == "");
  const uint32_t *out = m.at<uint32_t>(gpu_memory::buf1);
  for (int l = 0; l < 32; l++)
    CHECK_MESSAGE(out[l] == cases[l % 8].want, "half " << cases[l % 8].half);
}

TEST_CASE(
    "rdna3: f16 VOP2/VOP3 arithmetic rounds once to half, honours half modifiers and opsel, keeps "
    "the other half") {
  // LLVM emits these once a float16 buffer that fusion removes still rounds (the sixth session):
  // the op-conformance suite found VOP2 0x32 (v_add_f16) and 0x35 (v_mul_f16) missing. Encodings
  // from llvm-mc-19 -mcpu=gfx1100; expected halves computed independently (Python's IEEE half
  // packing of the exact double result): ties to even, overflow to inf, subnormals, NaN, -0.
  const std::vector<uint32_t> code = {
      0xF4080100, 0xF8000000,  // s_load_b128 s[4:7], s[0:1], 0x0
      0x30000082,              // v_lshlrev_b32_e32 v0, 2, v0
      0xBF89FC07,              // s_waitcnt lgkmcnt(0)
      0xDC520000, 0x01040000,  // global_load_b32 v1, v0, s[4:5]
      0xBF8903F7,              // s_waitcnt vmcnt(0)
      0x32040290,              // v_lshrrev_b32_e32 v2, 16, v1
      0x7E0602FF, 0x12340000,  // v_mov_b32_e32 v3, 0x12340000
      0x64060501,              // v_add_f16_e32 v3, v1, v2
      0x7E0802FF, 0x12340000,  // v_mov_b32_e32 v4, 0x12340000
      0x6A080501,              // v_mul_f16_e32 v4, v1, v2
      0x7E0A02FF, 0x12340000,  // v_mov_b32_e32 v5, 0x12340000
      0x660A0501,              // v_sub_f16_e32 v5, v1, v2
      0x7E0C02FF, 0x3C003C00,  // v_mov_b32_e32 v6, 0x3c003c00
      0x6C0C0501,              // v_fmac_f16_e32 v6, v1, v2
      0x7E0E0280,              // v_mov_b32_e32 v7, 0
      0x720E0501,              // v_max_f16_e32 v7, v1, v2
      0xD5350007, 0x2001E107,  // v_mul_f16_e64 v7, -v7, 0.5
      0x7E1002FF, 0x56780000,  // v_mov_b32_e32 v8, 0x56780000
      0xD5320108, 0x40020501,  // v_add_f16_e64 v8, |v1|, -v2
      0x7E1202FF, 0x11112222,  // v_mov_b32_e32 v9, 0x11112222
      0xD6485009, 0x04060501,  // v_fma_f16 v9, v1, v2, v1 op_sel:[0,1,0,1]
      0xDC6A0000, 0x00060300,  // global_store_b32 v0, v3, s[6:7]
      0xDC6A0080, 0x00060400,  // global_store_b32 v0, v4, s[6:7] offset:128
      0xDC6A0100, 0x00060500,  // global_store_b32 v0, v5, s[6:7] offset:256
      0xDC6A0180, 0x00060600,  // global_store_b32 v0, v6, s[6:7] offset:384
      0xDC6A0200, 0x00060700,  // global_store_b32 v0, v7, s[6:7] offset:512
      0xDC6A0280, 0x00060800,  // global_store_b32 v0, v8, s[6:7] offset:640
      0xDC6A0300, 0x00060900,  // global_store_b32 v0, v9, s[6:7] offset:768
      0xBFB00000,              // s_endpgm
  };
  // Input lane l: low half a, high half b (v2 = b in its low half). Outputs: v3 = a + b, v4 = a *
  // b, v5 = a - b (high halves 0x1234 kept), v6 = a * b + 1.0 (high half 1.0 kept), v7 = -max(a, b)
  // * 0.5, v8 = |a| - b (high half 0x5678 kept), v9 = high half fma(a, v2.hi = 0, a), low 0x2222
  // kept.
  const struct {
    uint16_t a, b;
    uint32_t add, mul, sub, fmac, negmax, absdiff, fma_hi;
  } cases[] = {
      {0x3C00, 0x1000, 0x12343C00, 0x12341000, 0x12343BFF, 0x3C003C00, 0x0000B800, 0x56783BFF,
       0x3C002222},
      {0x3C01, 0x1000, 0x12343C02, 0x12341001, 0x12343C00, 0x3C003C01, 0x0000B801, 0x56783C00,
       0x3C012222},
      {0x7BFF, 0x7BFF, 0x12347C00, 0x12347C00, 0x12340000, 0x3C007C00, 0x0000F7FF, 0x56780000,
       0x7BFF2222},
      {0x0400, 0x3800, 0x12343800, 0x12340200, 0x1234B800, 0x3C003C00, 0x0000B400, 0x5678B800,
       0x04002222},
      {0x4200, 0xC000, 0x12343C00, 0x1234C600, 0x12344500, 0x3C00C500, 0x0000BE00, 0x56784500,
       0x42002222},
      {0x7E00, 0x3C00, 0x12347E00, 0x12347E00, 0x12347E00, 0x3C007E00, 0x0000B800, 0x56787E00,
       0x7E002222},
      {0x0001, 0x3800, 0x12343800, 0x12340000, 0x1234B800, 0x3C003C00, 0x0000B400, 0x5678B800,
       0x00012222},
      {0x8000, 0x8000, 0x12348000, 0x12340000, 0x12340000, 0x3C003C00, 0x00000000, 0x56780000,
       0x80002222},
  };
  gpu_memory m;
  m.code(code);
  m.arg(0, gpu_memory::buf0);
  m.arg(1, gpu_memory::buf1);
  uint32_t *in = m.at<uint32_t>(gpu_memory::buf0);
  for (int l = 0; l < 32; l++) in[l] = uint32_t(cases[l % 8].b) << 16 | cases[l % 8].a;
  rdna3_dispatch d = dispatch_of(1, 32);
  d.rsrc1 = 1;  // 16 VGPRs (granule 1)
  REQUIRE(run(m, d) == "");
  const uint32_t *out = m.at<uint32_t>(gpu_memory::buf1);
  for (int l = 0; l < 32; l++) {
    const auto &c = cases[l % 8];
    CAPTURE(c.a);
    CAPTURE(c.b);
    CHECK(out[l] == c.add);
    CHECK(out[32 + l] == c.mul);
    CHECK(out[64 + l] == c.sub);
    CHECK(out[96 + l] == c.fmac);
    CHECK(out[128 + l] == c.negmax);
    CHECK(out[160 + l] == c.absdiff);
    CHECK(out[192 + l] == c.fma_hi);
  }
}

TEST_CASE("rdna3: v_dot2acc_f32_f16 adds both halves' products to the f32 accumulator") {
  // LLVM emits it for float16 Gemm (the op-conformance suite's float16_small_cnn).
  const std::vector<uint32_t> code = {
      0xF4080100, 0xF8000000,  // s_load_b128 s[4:7], s[0:1], 0x0
      0x30000082,              // v_lshlrev_b32 v0, 2, v0
      0xBF89FC07,              // s_waitcnt lgkmcnt(0)
      0xDC520000, 0x01040000,  // global_load_b32 v1, v0, s[4:5]             a (two halves)
      0xDC520080, 0x02040000,  // global_load_b32 v2, v0, s[4:5] offset:128  b (two halves)
      0xDC520100, 0x03040000,  // global_load_b32 v3, v0, s[4:5] offset:256  c (f32)
      0xBF8903F7,              // s_waitcnt vmcnt(0)
      0x04060501,              // v_dot2acc_f32_f16 v3, v1, v2
      0xDC6A0000, 0x00060300,  // global_store_b32 v0, v3, s[6:7]
      0xBFB00000,              // s_endpgm
  };
  gpu_memory m;
  m.code(code);
  m.arg(0, gpu_memory::buf0);
  m.arg(1, gpu_memory::buf1);
  uint32_t *in = m.at<uint32_t>(gpu_memory::buf0);
  // Halves: 1.5 (0x3E00), -2 (0xC000), 0.25 (0x3400), 3 (0x4200); exact in f32 either way.
  const uint16_t h[4] = {0x3E00, 0xC000, 0x3400, 0x4200};
  const float v[4] = {1.5f, -2.0f, 0.25f, 3.0f};
  for (int l = 0; l < 32; l++) {
    in[l] = h[l % 4] | uint32_t(h[(l + 1) % 4]) << 16;
    in[32 + l] = h[(l + 2) % 4] | uint32_t(h[(l + 3) % 4]) << 16;
    const float c = 0.5f * float(l);
    std::memcpy(&in[64 + l], &c, 4);
  }
  REQUIRE(run(m, dispatch_of(1, 32)) == "");
  const float *out = m.at<float>(gpu_memory::buf1);
  for (int l = 0; l < 32; l++)
    CHECK(out[l] == v[l % 4] * v[(l + 2) % 4] + v[(l + 1) % 4] * v[(l + 3) % 4] + 0.5f * float(l));
}

TEST_CASE("rdna3: workgroups shared by host threads give the same results and counts") {
  gpu_memory m;
  m.code(scale_code);
  m.arg(0, gpu_memory::buf0);
  m.arg(1, gpu_memory::buf1);
  float *in = m.at<float>(gpu_memory::buf0), *out = m.at<float>(gpu_memory::buf1);
  REQUIRE(gpu_memory::buf0 + 64 * 64 * 4 <= gpu_memory::buf1);
  REQUIRE(gpu_memory::buf1 - gpu_memory::base + 64 * 64 * 4 <= m.bytes.size());
  for (int i = 0; i < 64 * 64; i++) in[i] = float(i % 97) * 0.5f;
  rdna3_dispatch d = dispatch_of(64, 64);
  d.threads = 4;
  rdna3_counts n;
  REQUIRE(run(m, d, &n) == "");
  for (int i = 0; i < 64 * 64; i++) CHECK(out[i] == in[i] * 2.0f + 1.0f);
  CHECK(n.waves == 128);
  CHECK(n.vmem_store_bytes == 64 * 64 * 4);
}

TEST_CASE("rdna3: a partial last wave runs only its live lanes") {
  gpu_memory m;
  m.code(scale_code);
  m.arg(0, gpu_memory::buf0);
  m.arg(1, gpu_memory::buf1);
  float *in = m.at<float>(gpu_memory::buf0), *out = m.at<float>(gpu_memory::buf1);
  for (int i = 0; i < 64; i++) in[i] = float(i);
  for (int i = 0; i < 64; i++) out[i] = -1.0f;
  // Workgroups of 40 work-items: the second wave has 8 live lanes; gid = group * 64 + lane.
  REQUIRE(run(m, dispatch_of(1, 40)) == "");
  for (int i = 0; i < 64; i++) CHECK(out[i] == (i < 40 ? float(i) * 2 + 1 : -1.0f));
}

TEST_CASE("rdna3: scalar loop on SCC, EXEC masking with saveexec and execz") {
  gpu_memory m;
  m.code({
      0xF4040100, 0xF8000000,  // s_load_b64 s[4:5], s[0:1], 0x0
      0xD6460000, 0x04010C02,  // v_lshl_add_u32 v0, s2, 6, v0
      0x36020081,              // v_and_b32_e32 v1, 1, v0
      0x30040082,              // v_lshlrev_b32_e32 v2, 2, v0
      0x7E060280,              // v_mov_b32_e32 v3, 0
      0xBE880080,              // s_mov_b32 s8, 0
      0xBE890080,              // s_mov_b32 s9, 0
      0x81090809,              // loop: s_add_i32 s9, s9, s8
      0x81088108,              // s_add_i32 s8, s8, 1
      0xBF078A08,              // s_cmp_lg_u32 s8, 10
      0xBFA2FFFC,              // s_cbranch_scc1 loop
      0x7C940281,              // v_cmp_eq_u32_e32 vcc_lo, 1, v1
      0xBE8A206A,              // s_and_saveexec_b32 s10, vcc_lo
      0xBFA50001,              // s_cbranch_execz skip
      0x4C060080,              // v_sub_nc_u32_e32 v3, 0, v0
      0x8C7E0A7E,              // skip: s_or_b32 exec_lo, exec_lo, s10
      0x4A060609,              // v_add_nc_u32_e32 v3, s9, v3
      0xBF89FC07,              // s_waitcnt lgkmcnt(0)
      0xDC6A0000, 0x00040302,  // global_store_b32 v2, v3, s[4:5]
      0xBFB00000,              // s_endpgm
  });
  m.arg(0, gpu_memory::buf0);
  int32_t *out = m.at<int32_t>(gpu_memory::buf0);
  rdna3_counts n;
  REQUIRE(run(m, dispatch_of(2, 64), &n) == "");
  int sum = 0;
  for (int i = 0; i < 10; i++) sum += i;
  for (int i = 0; i < 128; i++) CHECK(out[i] == sum + (i % 2 ? -i : 0));
  CHECK(n.branches == 4 * (10 + 1));
}

namespace {
std::vector<uint32_t> lds_code(bool barrier) {
  return {
      0xF4040100,
      0xF8000000,  // s_load_b64 s[4:5], s[0:1], 0x0
      0x30020082,  // v_lshlrev_b32_e32 v1, 2, v0
      0xD8340000,
      0x00000001,                           // ds_store_b32 v1, v0
      0xBF89FC07,                           // s_waitcnt lgkmcnt(0)
      barrier ? 0xBFBD0000u : 0xBF800000u,  // s_barrier (or s_nop 0)
      0x4C0400BF,                           // v_sub_nc_u32_e32 v2, 63, v0
      0x30040482,                           // v_lshlrev_b32_e32 v2, 2, v2
      0xD8D80000,
      0x03000002,  // ds_load_b32 v3, v2
      0xBF89FC07,  // s_waitcnt lgkmcnt(0)
      0xD7000604,
      0x00020204,  // v_add_co_u32 v4, s6, s4, v1
      0xD5207C05,
      0x00190005,  // v_add_co_ci_u32_e64 v5, null, s5, 0, s6
      0xCA080103,
      0x060606F2,  // v_dual_mov_b32 v6, v3 :: v_dual_add_f32 v7, 1.0, v3
      0xDC6A0000,
      0x007C0604,  // global_store_b32 v[4:5], v6, off
      0xBFB00000,  // s_endpgm
  };
}
}  // namespace

TEST_CASE("rdna3: LDS is shared by the waves of a workgroup and s_barrier orders them") {
  gpu_memory m;
  m.code(lds_code(true));
  m.arg(0, gpu_memory::buf0);
  int32_t *out = m.at<int32_t>(gpu_memory::buf0);
  rdna3_counts n;
  REQUIRE(run(m, dispatch_of(1, 64, 1), &n) == "");
  for (int i = 0; i < 64; i++) CHECK(out[i] == 63 - i);  // wave 0 reads what wave 1 wrote
  CHECK(n.lds_bytes == 64 * 4 * 2);
  CHECK(n.valu == 2 * 7);  // per wave 5 VALU and one VOPD, which counts twice
  // Without the barrier wave 0 runs to its end first and reads LDS that wave 1 has not written.
  m.code(lds_code(false));
  REQUIRE(run(m, dispatch_of(1, 64, 1)) == "");
  CHECK(out[0] == 0);
  CHECK(out[1] == 0);  // 62 with the barrier
  // LDS is bounded by what RSRC2 allocates.
  m.code(lds_code(true));
  CHECK(run(m, dispatch_of(1, 64, 0)).find("past the 0 bytes the dispatch allocated") !=
        std::string::npos);
}

TEST_CASE(
    "rdna3: SOPK compares (SIMM16 sign-extended for _i32, zero-extended for _u32) and cache "
    "invalidations") {
  // LLVM compares against 16-bit constants with s_cmpk_* and fences a workgroup barrier with
  // buffer_gl0_inv / buffer_gl1_inv (gpu_tile.h's kernels); the emulator has no caches, so the
  // invalidations must run and change nothing.
  const std::vector<uint32_t> code = {
      0xF4040100, 0xF8000000,  // s_load_b64 s[4:5], s[0:1], 0x0
      0xB003FFFB,              // s_movk_i32 s3, 0xfffb             s3 = -5
      0xB3830000,              // s_cmpk_lt_i32 s3, 0x0              -5 < 0: 1
      0x98068081,              // s_cselect_b32 s6, 1, 0
      0xB6830010,              // s_cmpk_lt_u32 s3, 0x10             0xfffffffb < 16: 0
      0x98078081,              // s_cselect_b32 s7, 1, 0
      0xB0088000,              // s_movk_i32 s8, 0x8000
      0x8B08FF08, 0x0000FFFF,  // s_and_b32 s8, s8, 0xffff           s8 = 0x8000
      0xB4888000,              // s_cmpk_eq_u32 s8, 0x8000           zero-extended: 1
      0x98098081,              // s_cselect_b32 s9, 1, 0
      0xB303FFFB,              // s_cmpk_ge_i32 s3, 0xfffb           -5 >= -5: 1
      0x980A8081,              // s_cselect_b32 s10, 1, 0
      0xE0AC0000, 0x00000000,  // buffer_gl0_inv
      0xE0B00000, 0x00000000,  // buffer_gl1_inv
      0xBF89FC07,              // s_waitcnt lgkmcnt(0)
      0x7E020206,              // v_mov_b32_e32 v1, s6
      0x7E040207,              // v_mov_b32_e32 v2, s7
      0x7E060209,              // v_mov_b32_e32 v3, s9
      0x7E08020A,              // v_mov_b32_e32 v4, s10
      0x7E000280,              // v_mov_b32_e32 v0, 0
      0xDC760000, 0x00040100,  // global_store_b128 v0, v[1:4], s[4:5]
      0xBFB00000,              // s_endpgm
  };
  gpu_memory m;
  m.code(code);
  m.arg(0, gpu_memory::buf0);
  uint32_t *out = m.at<uint32_t>(gpu_memory::buf0);
  REQUIRE(run(m, dispatch_of(1, 32)) == "");
  CHECK(out[0] == 1);
  CHECK(out[1] == 0);
  CHECK(out[2] == 1);
  CHECK(out[3] == 1);
}

TEST_CASE(
    "rdna3: integer to float conversions and v_fmac_f32's VOP3 form (its accumulator is the "
    "destination)") {
  gpu_memory m;
  m.code({
      0xF4040100, 0xF8000000,  // s_load_b64 s[4:5], s[0:1], 0x0
      0x30020082,              // v_lshlrev_b32_e32 v1, 2, v0
      0x7E040B00,              // v_cvt_f32_i32_e32 v2, v0          lane
      0x4C060080,              // v_sub_nc_u32_e32 v3, 0, v0
      0x7E060B03,              // v_cvt_f32_i32_e32 v3, v3          -lane
      0x7E0A0D00,              // v_cvt_f32_u32_e32 v5, v0          lane
      0x7E0802F2,              // v_mov_b32_e32 v4, 1.0
      0xD52B0004, 0x00020702,  // v_fmac_f32_e64 v4, v2, v3         1 - lane^2
      0x06080B04,              // v_add_f32_e32 v4, v4, v5          1 - lane^2 + lane
      0xBF89FC07,              // s_waitcnt lgkmcnt(0)
      0xDC6A0000, 0x00040401,  // global_store_b32 v1, v4, s[4:5]
      0xBFB00000,              // s_endpgm
  });
  m.arg(0, gpu_memory::buf0);
  REQUIRE(run(m, dispatch_of(1, 32)) == "");
  const float *out = m.at<float>(gpu_memory::buf0);
  for (int l = 0; l < 32; l++) CHECK(out[l] == 1.0f - float(l * l) + float(l));
}

TEST_CASE(
    "rdna3: LLVM's fdiv sequence (div_scale, rcp, fma, div_fmas, div_fixup) is IEEE division") {
  gpu_memory m;
  m.code({
      0xF4080100, 0xF8000000,  // s_load_b128 s[4:7], s[0:1], 0x0     (a, b)
      0xF4040200, 0xF8000010,  // s_load_b64 s[8:9], s[0:1], 0x10     (a / b)
      0xD6460000, 0x04010A02,  // v_lshl_add_u32 v0, s2, 5, v0
      0x30000082,              // v_lshlrev_b32_e32 v0, 2, v0
      0xBF89FC07,              // s_waitcnt lgkmcnt(0)
      0xDC520000, 0x01040000,  // global_load_b32 v1, v0, s[4:5]
      0xDC520000, 0x02060000,  // global_load_b32 v2, v0, s[6:7]
      0xBF8903F7,              // s_waitcnt vmcnt(0)
      0xD6FC7C03, 0x04060502,  // v_div_scale_f32 v3, null, v2, v2, v1
      0x7E085503,              // v_rcp_f32_e32 v4, v3
      0xD6130005, 0x23CA0903,  // v_fma_f32 v5, -v3, v4, 1.0
      0x56080905,              // v_fmac_f32_e32 v4, v5, v4
      0xD6FC6A05, 0x04060501,  // v_div_scale_f32 v5, vcc_lo, v1, v2, v1
      0x100C0905,              // v_mul_f32_e32 v6, v5, v4
      0xD6130007, 0x24160D03,  // v_fma_f32 v7, -v3, v6, v5
      0x560C0907,              // v_fmac_f32_e32 v6, v7, v4
      0xD6130003, 0x24160D03,  // v_fma_f32 v3, -v3, v6, v5
      0xD6370003, 0x041A0903,  // v_div_fmas_f32 v3, v3, v4, v6
      0xD6270001, 0x04060503,  // v_div_fixup_f32 v1, v3, v2, v1
      0xDC6A0000, 0x00080100,  // global_store_b32 v0, v1, s[8:9]
      0xBFB00000,              // s_endpgm
  });
  // Ordinary quotients and the ends of the range, where the scaling steps matter (a huge
  // denominator such as 1 + exp(80) in a sigmoid, tiny ones, denormals, zeros, infinities, NaN).
  const float special[] = {1.0f,      -3.5f,  7.0f,     1e-3f,  3e38f,   1.5e38f,  9e37f,
                           1e30f,     1e-30f, 1e-38f,   1e-40f, 0.0f,    -0.0f,    INFINITY,
                           -INFINITY, NAN,    2.5e-45f, 6e37f,  1.7e38f, 123456.0f};
  const int n = int(sizeof special / sizeof special[0]);
  std::vector<float> a, b;
  for (int i = 0; i < n; i++)
    for (int j = 0; j < n; j++) a.push_back(special[i]), b.push_back(special[j]);
  for (int i = 0; i < 200; i++)
    a.push_back(float(i) * 0.37f - 20.0f), b.push_back(float(i % 13) * 1.3f - 7.7f);
  const size_t count = a.size(), groups = (count + 31) / 32;
  REQUIRE(count * 4 <= 0x1000);
  uint64_t pa = gpu_memory::base + 0x2000, pb = pa + 0x1000, pc = pb + 0x1000;
  std::memcpy(m.at<float>(pa), a.data(), 4 * count);
  std::memcpy(m.at<float>(pb), b.data(), 4 * count);
  m.arg(0, pa);
  m.arg(1, pb);
  m.arg(2, pc);
  REQUIRE(run(m, dispatch_of(uint32_t(groups), 32)) == "");
  const float *q = m.at<float>(pc);
  for (size_t i = 0; i < count; i++) {
    const float want = a[i] / b[i];
    if (std::isnan(want)) {
      CHECK_MESSAGE(std::isnan(q[i]), a[i], " / ", b[i], " gave ", q[i]);
    } else {
      CHECK_MESSAGE(std::memcmp(&q[i], &want, 4) == 0, a[i], " / ", b[i], " gave ", q[i], ", not ",
                    want);
    }
  }
}

TEST_CASE(
    "rdna3: what the emulator does not know is an error naming the kernel and the instruction") {
  gpu_memory m;
  m.arg(0, gpu_memory::buf0);
  // buffer_load_b32 v1, off, s[8:11], 0 (MUBUF) at offset 0xc.
  m.code({0xF4040100, 0xF8000000, 0x7E020280, 0xE0500000, 0x80020100, 0xBFB00000});
  std::string e = run(m, dispatch_of(1, 32));
  CHECK(e.find("kernel 'test_kernel'") != std::string::npos);
  CHECK(e.find("offset 0xc") != std::string::npos);
  CHECK(e.find("MUBUF") != std::string::npos);
  // A gfx10 s_endpgm (SOPP opcode 1) is no gfx11 instruction the emulator knows.
  m.code({0xBF810000});
  e = run(m, dispatch_of(1, 32));
  CHECK(e.find("unknown SOPP opcode 0x1") != std::string::npos);
  // A VGPR beyond what COMPUTE_PGM_RSRC1 grants: v_mov_b32 v9, 0 with 8 VGPRs.
  m.code({0x7E120280, 0xBFB00000});
  e = run(m, dispatch_of(1, 32));
  CHECK(e.find("uses v9 but COMPUTE_PGM_RSRC1 grants 8 VGPRs") != std::string::npos);
  // A store outside GPU memory names the lane and address.
  m.code(scale_code);
  m.arg(0, gpu_memory::buf0);
  m.arg(1, 0x1000);
  e = run(m, dispatch_of(1, 32));
  CHECK(e.find("global_store_b32 at offset 0x2c: lane 0 writes 4 bytes at 0x1000, which is not GPU "
               "memory") != std::string::npos);
  // A wave that never ends: s_branch to itself.
  m.code({0xBFA0FFFF});
  rdna3_dispatch d = dispatch_of(1, 32);
  rdna3_program p;
  std::string err;
  REQUIRE(rdna3_program_decode(d, m.find, &p, &err));
  CHECK(p.insts.size() == 1);
  CHECK(p.insts[0].target == 0);
}

TEST_CASE("rdna3: the opcode table is what llvm-mc-19 assembles (skipped without it)") {
  if (std::system(
          "command -v llvm-mc-19 > /dev/null 2>&1 && command -v python3 > /dev/null 2>&1") != 0) {
    MESSAGE("SKIPPED: llvm-mc-19 or python3 is not installed; the table was not regenerated");
    return;
  }
  const char *out = "/tmp/capgraph_rdna3_ops_regen.inc";
  REQUIRE(std::system((std::string("python3 fake/rdna3_ops_gen.py ") + out).c_str()) == 0);
  auto slurp = [](const char *p) {
    std::ifstream f(p);
    std::stringstream s;
    s << f.rdbuf();
    return s.str();
  };
  CHECK(slurp(out) == slurp("fake/rdna3_ops.inc"));
  std::remove(out);
}
