// The kernel interpreter on hand-built kernels: every out-of-range rule (skip, clamp, reflect,
// wrap), divisors, iota, gathers, reductions, and the integer and NaN semantics the code
// generators are compared against.
#include "schedule/interpret.h"

#include <doctest/doctest.h>

#include <cmath>
#include <cstring>

#include "error.h"
#include "schedule/kernel_test_util.h"

using namespace capgraph;

namespace {

// A program of buffers the test fills and reads as doubles.
struct bench {
  Program p;
  std::vector<std::vector<uint8_t>> host;

  int buffer(DType t, const std::vector<double> &values, Buffer::Kind kind = Buffer::Kind::input) {
    Buffer b;
    b.kind = kind;
    b.dtype = t;
    b.numel = (int64_t)values.size();
    p.buffers.push_back(b);
    host.emplace_back(values.size() * dtype_size(t));
    for (size_t i = 0; i < values.size(); i++)
      element_store(t, host.back().data(), (int64_t)i, values[i]);
    return (int)p.buffers.size() - 1;
  }
  int output(DType t, int64_t n) {
    return buffer(t, std::vector<double>(n, -999), Buffer::Kind::output);
  }

  std::vector<double> run(const Kernel &k, int out) {
    kernel_check(k, p);
    std::vector<uint8_t *> ptrs;
    for (auto &h : host) ptrs.push_back(h.data());
    kernel_interpret(k, p, ptrs);
    std::vector<double> r;
    for (int64_t i = 0; i < p.buffers[out].numel; i++)
      r.push_back(element_load(p.buffers[out].dtype, host[out].data(), i));
    return r;
  }
};

using capgraph::test::dim;

Access access1(int buf, DimIndex d, double fill = 0) {
  Access a;
  a.buffer = buf;
  a.dims = {std::move(d)};
  a.fill = fill;
  return a;
}

// Y[i] = X[coef * i + shift] with `bound`, over n points.
std::vector<double> gather1(const std::vector<double> &x, int64_t n, int64_t coef, int64_t shift,
                            Bound bound, double fill = 0) {
  bench b;
  int xb = b.buffer(DType::f32, x), yb = b.output(DType::f32, n);
  Kernel k;
  k.name = "gather1";
  k.axes = {n};
  k.n_parallel = 1;
  k.result = k.expr_load(access1(xb, dim({{0, coef}}, (int64_t)x.size(), 1, shift, bound), fill),
                         DType::f32);
  k.store = access1(yb, dim({{0, 1}}, n, 1));
  return b.run(k, yb);
}

// numpy.pad's 'reflect' index for i, written independently: mirror until inside.
int64_t reflect_ref(int64_t i, int64_t n) {
  if (n == 1) return 0;
  while (i < 0 || i >= n) i = i < 0 ? -i : 2 * (n - 1) - i;
  return i;
}

const std::vector<double> X5 = {10, 11, 12, 13, 14};

}  // namespace

TEST_CASE("bounds: skip reads the fill, clamp repeats the edge, reflect mirrors, wrap is modulo") {
  CHECK(gather1(X5, 9, 1, -2, Bound::skip, -1) ==
        std::vector<double>{-1, -1, 10, 11, 12, 13, 14, -1, -1});
  CHECK(gather1(X5, 9, 1, -2, Bound::clamp) ==
        std::vector<double>{10, 10, 10, 11, 12, 13, 14, 14, 14});
  CHECK(gather1(X5, 9, 1, -2, Bound::reflect) ==
        std::vector<double>{12, 11, 10, 11, 12, 13, 14, 13, 12});
  CHECK(gather1(X5, 9, 1, -2, Bound::wrap) ==
        std::vector<double>{13, 14, 10, 11, 12, 13, 14, 10, 11});
  // far outside: several periods, negative coefficients
  std::vector<double> r = gather1(X5, 40, -1, 17, Bound::reflect),
                      w = gather1(X5, 40, -1, 17, Bound::wrap);
  for (int64_t i = 0; i < 40; i++) {
    CAPTURE(i);
    CHECK(r[i] == X5[reflect_ref(17 - i, 5)]);
    CHECK(w[i] == X5[((17 - i) % 5 + 5) % 5]);
  }
  CHECK(gather1({7}, 5, 1, -2, Bound::reflect) == std::vector<double>(5, 7));
  CHECK(gather1({7}, 5, 3, -6, Bound::wrap) == std::vector<double>(5, 7));
}

TEST_CASE("bounds: an index outside a 'none' dimension is an internal error naming the kernel") {
  CHECK_THROWS_WITH_AS(gather1(X5, 6, 1, 0, Bound::none), doctest::Contains("gather1"), Error);
  CHECK_THROWS_WITH_AS(gather1(X5, 3, 1, -1, Bound::none), doctest::Contains("outside"), Error);
}

TEST_CASE("divisor: only exactly divisible raw indices read; the others are skipped") {
  bench b;
  int xb = b.buffer(DType::f32, X5), yb = b.output(DType::f32, 10);
  Kernel k;
  k.name = "divisor";
  k.axes = {10};
  k.n_parallel = 1;
  DimIndex d = dim({{0, 1}}, 5, 1, -1, Bound::skip);
  d.divisor = 2;
  k.result = k.expr_load(access1(xb, d, -1), DType::f32);
  k.store = access1(yb, dim({{0, 1}}, 10, 1));
  CHECK(b.run(k, yb) == std::vector<double>{-1, 10, -1, 11, -1, 12, -1, 13, -1, 14});
  // a divisor without a skip bound cannot express "no element here"
  k.loads[0].dims[0].bound = Bound::clamp;
  CHECK_THROWS_AS(b.run(k, yb), Error);
}

TEST_CASE("divisor inside a reduction: skipped points add nothing (transposed convolution)") {
  // y[o] = sum_k x[(o - k) / 2] * 1 for k in [0, 3), reading only where 2 divides o - k
  bench b;
  int xb = b.buffer(DType::f32, {1, 10, 100}), yb = b.output(DType::f32, 7);
  Kernel k;
  k.name = "convtranspose";
  k.axes = {7, 3};
  k.n_parallel = 1;
  DimIndex d = dim({{0, 1}, {1, -1}}, 3, 1, 0, Bound::skip);
  d.divisor = 2;
  k.body = k.expr_load(access1(xb, d), DType::f32);
  k.reduce = Reduce::sum;
  k.result = k.expr_unary(Op::acc, -1, DType::f32);
  k.store = access1(yb, dim({{0, 1}}, 7, 1));
  std::vector<double> want(7, 0);
  for (int o = 0; o < 7; o++)
    for (int kk = 0; kk < 3; kk++)
      if ((o - kk) % 2 == 0 && (o - kk) / 2 >= 0 && (o - kk) / 2 < 3)
        want[o] += std::vector<double>{1, 10, 100}[(o - kk) / 2];
  CHECK(b.run(k, yb) == want);
}

TEST_CASE("iota and a 2-D strided store: Y[j][i] = 10 i + j (a transposed write)") {
  bench b;
  int yb = b.output(DType::i32, 12);
  Kernel k;
  k.name = "iota";
  k.axes = {3, 4};
  k.n_parallel = 2;
  int i = k.expr_iota(0, DType::i64), j = k.expr_iota(1, DType::i64);
  k.result = k.expr_cast(
      k.expr_binary(Op::add, k.expr_binary(Op::mul, i, k.expr_const(10, DType::i64), DType::i64), j,
                    DType::i64),
      DType::i32);
  k.store_dtype = DType::i32;
  k.store.buffer = yb;
  k.store.dims = {dim({{0, 1}}, 3, 1), dim({{1, 1}}, 4, 3)};
  std::vector<double> want(12);
  for (int a = 0; a < 3; a++)
    for (int c = 0; c < 4; c++) want[c * 3 + a] = 10 * a + c;
  CHECK(b.run(k, yb) == want);
}

TEST_CASE("gather: an index read from a buffer (with clamp) selects the element") {
  bench b;
  int xb = b.buffer(DType::f32, X5), ib = b.buffer(DType::i64, {4, 0, -3, 9, 2}),
      yb = b.output(DType::f32, 5);
  Kernel k;
  k.name = "gather";
  k.axes = {5};
  k.n_parallel = 1;
  int idx = k.expr_load(access1(ib, dim({{0, 1}}, 5, 1)), DType::i64);
  DimIndex d = dim({}, 5, 1, 0, Bound::clamp);
  d.expr = idx;
  k.result = k.expr_load(access1(xb, d), DType::f32);
  k.store = access1(yb, dim({{0, 1}}, 5, 1));
  CHECK(b.run(k, yb) == std::vector<double>{14, 10, 10, 14, 12});
}

TEST_CASE("reductions: sum, max, min, prod per row, and an epilogue reading the accumulator") {
  const std::vector<double> m = {1, 5, -2, 4, /**/ 3, 3, 3, 3, /**/ -1, -7, 0.5, 2};
  struct red {
    Reduce r;
    std::vector<double> want;
  };
  for (const red &c : {red{Reduce::sum, {8, 12, -5.5}}, red{Reduce::max, {5, 3, 2}},
                       red{Reduce::min, {-2, 3, -7}}, red{Reduce::prod, {-40, 81, 7}}}) {
    CAPTURE(int(c.r));
    bench b;
    int xb = b.buffer(DType::f32, m), yb = b.output(DType::f32, 3);
    Kernel k;
    k.name = "reduce";
    k.axes = {3, 4};
    k.n_parallel = 1;
    Access a;
    a.buffer = xb;
    a.dims = {dim({{0, 1}}, 3, 4), dim({{1, 1}}, 4, 1)};
    k.body = k.expr_load(a, DType::f32);
    k.reduce = c.r;
    k.result = k.expr_unary(Op::acc, -1, DType::f32);
    k.store = access1(yb, dim({{0, 1}}, 3, 1));
    CHECK(b.run(k, yb) == c.want);
    // mean-like epilogue
    k.result = k.expr_binary(Op::div, k.result, k.expr_const(4, DType::f32), DType::f32);
    std::vector<double> quarter;
    for (double v : c.want) quarter.push_back(v / 4);
    CHECK(b.run(k, yb) == quarter);
  }
}

TEST_CASE(
    "reductions: skipped points (padding) are not counted; NaN propagates through max and min") {
  bench b;
  int xb = b.buffer(DType::f32, {1, 2, 3, 4}), yb = b.output(DType::f32, 4);
  // y[i] = max over k in [0,3) of x[i + k - 1], skipping the padding
  Kernel k;
  k.name = "maxpool";
  k.axes = {4, 3};
  k.n_parallel = 1;
  k.body = k.expr_load(access1(xb, dim({{0, 1}, {1, 1}}, 4, 1, -1, Bound::skip), -100), DType::f32);
  k.reduce = Reduce::max;
  k.result = k.expr_unary(Op::acc, -1, DType::f32);
  k.store = access1(yb, dim({{0, 1}}, 4, 1));
  CHECK(b.run(k, yb) == std::vector<double>{2, 3, 4, 4});
  k.reduce = Reduce::min;
  CHECK(b.run(k, yb) == std::vector<double>{1, 1, 2, 3});
  k.reduce = Reduce::sum;
  CHECK(b.run(k, yb) == std::vector<double>{3, 6, 9, 7});
  bench n;
  int nb = n.buffer(DType::f32, {1, NAN, 3, 4}), ny = n.output(DType::f32, 4);
  k.loads[0].buffer = nb;
  k.store.buffer = ny;
  for (Reduce r : {Reduce::max, Reduce::min}) {
    k.reduce = r;
    std::vector<double> got = n.run(k, ny);
    CHECK(std::isnan(got[0]));
    CHECK(std::isnan(got[1]));
    CHECK(std::isnan(got[2]));
    CHECK(got[3] == (r == Reduce::max ? 4 : 3));
  }
}

TEST_CASE("integer semantics: division truncates, by zero gives 0; mod takes the divisor's sign") {
  const std::vector<double> a = {7, -7, 7, -7, 5, 0, INT32_MAX}, d = {2, 2, -2, -2, 0, 3, 1};
  auto binop = [&](Op op, DType t) {
    bench b;
    int ab = b.buffer(t, a), db = b.buffer(t, d), yb = b.output(t, 7);
    Kernel k;
    k.name = op_name(op);
    k.axes = {7};
    k.n_parallel = 1;
    int x = k.expr_load(access1(ab, dim({{0, 1}}, 7, 1)), t),
        y = k.expr_load(access1(db, dim({{0, 1}}, 7, 1)), t);
    k.result = k.expr_binary(op, x, y, t);
    k.store = access1(yb, dim({{0, 1}}, 7, 1));
    k.store_dtype = t;
    return b.run(k, yb);
  };
  for (DType t : {DType::i32, DType::i64}) {
    CAPTURE(dtype_name(t));
    CHECK(binop(Op::div, t) == std::vector<double>{3, -3, -3, 3, 0, 0, INT32_MAX});
    CHECK(binop(Op::mod, t) == std::vector<double>{1, 1, -1, -1, 0, 0, 0});
  }
  std::vector<double> fm = binop(Op::mod, DType::f32);
  CHECK(fm[0] == 1);
  CHECK(fm[1] == 1);
  CHECK(fm[2] == -1);
  CHECK(std::isnan(fm[4]));
}

TEST_CASE("element conversions: value_as rounds like the type; load/store round-trip every dtype") {
  CHECK(value_as(DType::f32, 0.1) == (double)0.1f);
  CHECK(value_as(DType::f64, 0.1) == 0.1);
  CHECK(value_as(DType::i32, -2.7) == -2);
  CHECK(value_as(DType::i64, 2.7) == 2);
  CHECK(value_as(DType::i8, NAN) == 0);
  CHECK(value_as(DType::boolean, -0.5) == 1);
  CHECK(value_as(DType::boolean, 0) == 0);
  for (DType t : {DType::f32, DType::f64, DType::i8, DType::u8, DType::i16, DType::i32, DType::i64,
                  DType::boolean}) {
    CAPTURE(dtype_name(t));
    std::vector<uint8_t> buf(3 * dtype_size(t));
    for (double v : {0.0, 1.0, 100.0}) {
      element_store(t, buf.data(), 2, v);
      CHECK(element_load(t, buf.data(), 2) == (t == DType::boolean ? (v != 0) : v));
    }
  }
  uint8_t half[2] = {0x00, 0x3c};  // 1.0 in float16
  CHECK(element_load(DType::f16, half, 0) == 1.0);
  element_store(DType::f16, half, 0, -2.5);  // float16 results fold (Cast to float16)
  CHECK(half[0] == 0x00);
  CHECK(half[1] == 0xc1);
  CHECK(element_load(DType::f16, half, 0) == -2.5);
  uint8_t i8[1];
  element_store(DType::i8, i8, 0, -3);
  CHECK(element_load(DType::i8, i8, 0) == -3);
}

TEST_CASE("kernel_check refuses malformed kernels naming them") {
  bench b;
  int xb = b.buffer(DType::f32, X5), yb = b.output(DType::f32, 5);
  Kernel k;
  k.name = "broken";
  k.axes = {5};
  k.n_parallel = 1;
  k.result = k.expr_load(access1(xb, dim({{0, 1}}, 5, 1)), DType::f32);
  k.store = access1(yb, dim({{0, 1}}, 5, 1));
  CHECK_NOTHROW(kernel_check(k, b.p));
  Kernel bad = k;
  bad.loads[0].buffer = 9;
  CHECK_THROWS_WITH_AS(kernel_check(bad, b.p), doctest::Contains("broken"), Error);
  bad = k;
  bad.store.dims[0].terms[0].axis = 1;
  CHECK_THROWS_AS(kernel_check(bad, b.p), Error);
  bad = k;
  bad.exprs.push_back(Expr{Op::add, DType::f32, 0, 2});  // refers forward
  bad.result = 1;
  CHECK_THROWS_AS(kernel_check(bad, b.p), Error);
  bad = k;
  bad.axes = {0};
  CHECK_THROWS_AS(kernel_check(bad, b.p), Error);
  bad = k;
  bad.reduce = Reduce::sum;
  CHECK_THROWS_WITH_AS(kernel_check(bad, b.p), doctest::Contains("reduce"), Error);
}

TEST_CASE("float16 results fold with one rounding to nearest even") {
  using capgraph::half_from_double;
  using capgraph::half_to_float;
  CHECK(half_from_double(1.0) == 0x3c00);
  CHECK(half_from_double(-2.0) == 0xc000);
  CHECK(half_from_double(65504.0) == 0x7bff);
  CHECK(half_from_double(65519.99) == 0x7bff);
  CHECK(half_from_double(65520.0) == 0x7c00);           // the midpoint rounds to even: infinity
  CHECK(half_from_double(1.0 + 1.0 / 2048) == 0x3c00);  // a tie between 1 and 1+2^-10: even
  CHECK(half_from_double(1.0 + 3.0 / 2048) == 0x3c02);  // the other tie: up to even
  // Through float this rounds twice (to 1 + 2^-11 exactly, then to even 1.0); once, it is above the
  // tie.
  CHECK(half_from_double(1.0 + 1.0 / 2048 + 1e-12) == 0x3c01);
  CHECK(half_from_double(std::ldexp(1.0, -24)) == 0x0001);  // the smallest subnormal
  CHECK(half_from_double(std::ldexp(1.0, -26)) == 0x0000);  // under half of it: zero
  CHECK(half_from_double(-0.0) == 0x8000);
  CHECK((half_from_double(std::nan("")) & 0x7c00) == 0x7c00);
  for (uint32_t h = 0; h < 0x7c00; h++) CHECK(half_from_double(half_to_float((uint16_t)h)) == h);
}
