#include "graph/tensor.h"

#include <cmath>
#include <cstring>

#include "error.h"
#include "hcq/half_float.h"

namespace capgraph {

size_t dtype_size(DType t) {
  switch (t) {
    case DType::f32:
    case DType::i32:
    case DType::u32: return 4;
    case DType::f16:
    case DType::i16:
    case DType::bf16:
    case DType::u16: return 2;
    case DType::f64:
    case DType::i64:
    case DType::u64: return 8;
    case DType::i8:
    case DType::u8:
    case DType::boolean: return 1;
  }
  return 0;
}

const char *dtype_name(DType t) {
  switch (t) {
    case DType::f32: return "float32";
    case DType::f16: return "float16";
    case DType::f64: return "float64";
    case DType::i8: return "int8";
    case DType::u8: return "uint8";
    case DType::i16: return "int16";
    case DType::i32: return "int32";
    case DType::i64: return "int64";
    case DType::boolean: return "bool";
    case DType::bf16: return "bfloat16";
    case DType::u16: return "uint16";
    case DType::u32: return "uint32";
    case DType::u64: return "uint64";
  }
  return "?";
}

bool dtype_is_float(DType t) {
  return t == DType::f32 || t == DType::f16 || t == DType::f64 || t == DType::bf16;
}

float bf16_to_float(uint16_t h) {
  uint32_t bits = (uint32_t)h << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

uint16_t bf16_from_float(float v) {
  uint32_t bits;
  std::memcpy(&bits, &v, 4);
  if (std::isnan(v)) return (uint16_t)((bits >> 16) | 0x40);  // quiet, sign and payload's top kept
  return (uint16_t)((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16);
}

int64_t int64_saturate(double v) {
  if (std::isnan(v)) return 0;
  if (v >= 9223372036854775807.0) return INT64_MAX;
  if (v <= -9223372036854775808.0) return INT64_MIN;
  return (int64_t)v;
}

// Shapes come from model files: every count is checked, never wrapped (signed overflow is UB, and a
// wrapped count would size a buffer smaller than what its kernels touch).
int64_t shape_numel(const Shape &s) {
  for (int64_t d : s)
    if (d < 0) throw Error("shape " + shape_str(s) + " has a negative dimension");
  for (int64_t d : s)
    if (d == 0) return 0;
  int64_t n = 1;
  for (int64_t d : s)
    if (__builtin_mul_overflow(n, d, &n) || n > kMaxElements)
      throw Error("shape " + shape_str(s) + " has too many elements (more than 2^48)");
  return n;
}

std::string shape_str(const Shape &s) {
  if (s.empty()) return "scalar";
  std::string r;
  for (size_t i = 0; i < s.size(); i++) r += (i ? "x" : "") + std::to_string(s[i]);
  return r;
}

Shape shape_strides(const Shape &s) {
  // An empty shape's strides are never used to address anything; its other dimensions may
  // still be huge, so the running product saturates instead of overflowing.
  bool empty = shape_numel(s) == 0;
  Shape st(s.size());
  int64_t acc = 1;
  for (size_t i = s.size(); i-- > 0;) {
    st[i] = acc;
    if (empty && s[i] != 0 && acc > kMaxElements / s[i])
      acc = kMaxElements;
    else
      acc *= s[i];
  }
  return st;
}

float half_to_float(uint16_t h) { return hcq::half_to_float(h); }

uint16_t half_from_double(double v) {
  // Rounded once, to nearest even, straight from the double (through float it could round twice).
  uint16_t sign = std::signbit(v) ? 0x8000 : 0;
  if (std::isnan(v)) return sign | 0x7e00;
  double a = std::fabs(v);
  if (a >= 65520.0) return sign | 0x7c00;  // past the midpoint of 65504 and 2^16: infinity
  if (a < std::ldexp(1.0, -14))
    return sign |
           (uint16_t)std::nearbyint(std::ldexp(a, 24));  // subnormal (1024 is the first normal)
  int e2;
  std::frexp(a, &e2);
  int e = e2 - 1;                                    // a in [2^e, 2^(e+1))
  double m = std::nearbyint(std::ldexp(a, 10 - e));  // in [1024, 2048]
  if (m == 2048) {
    m = 1024;
    e++;
  }
  if (e > 15) return sign | 0x7c00;
  return sign | (uint16_t)((e + 15) << 10) | (uint16_t)(m - 1024);
}

template <typename T>
static T load_as(const uint8_t *p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

double Tensor::at_f64(int64_t i) const {
  // Scalars a model supplies (a Pad value, a Range start) may come as empty tensors.
  if (i < 0 || (uint64_t)(i + 1) * dtype_size(dtype) > bytes->size())
    throw Error("a tensor of shape " + shape_str(shape) + " has no element " + std::to_string(i));
  const uint8_t *p = data() + i * dtype_size(dtype);
  switch (dtype) {
    case DType::f32: return load_as<float>(p);
    case DType::f16: return half_to_float(load_as<uint16_t>(p));
    case DType::f64: return load_as<double>(p);
    case DType::i8: return load_as<int8_t>(p);
    case DType::u8: return load_as<uint8_t>(p);
    case DType::i16: return load_as<int16_t>(p);
    case DType::i32: return load_as<int32_t>(p);
    case DType::i64: return (double)load_as<int64_t>(p);
    case DType::boolean: return load_as<uint8_t>(p) ? 1 : 0;
    case DType::bf16: return bf16_to_float(load_as<uint16_t>(p));
    case DType::u16: return load_as<uint16_t>(p);
    case DType::u32: return load_as<uint32_t>(p);
    case DType::u64: return (double)load_as<uint64_t>(p);
  }
  return 0;
}

int64_t Tensor::at_i64(int64_t i) const {
  // Scalars a model supplies (a Pad value, a Range start) may come as empty tensors.
  if (i < 0 || (uint64_t)(i + 1) * dtype_size(dtype) > bytes->size())
    throw Error("a tensor of shape " + shape_str(shape) + " has no element " + std::to_string(i));
  const uint8_t *p = data() + i * dtype_size(dtype);
  switch (dtype) {
    case DType::i64: return load_as<int64_t>(p);
    case DType::i32: return load_as<int32_t>(p);
    case DType::i16: return load_as<int16_t>(p);
    case DType::i8: return load_as<int8_t>(p);
    case DType::u8: return load_as<uint8_t>(p);
    case DType::u16: return load_as<uint16_t>(p);
    case DType::u32: return load_as<uint32_t>(p);
    case DType::u64: {  // beyond int64: saturated, as a float beyond it is
      uint64_t v = load_as<uint64_t>(p);
      return v > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)v;
    }
    case DType::boolean: return load_as<uint8_t>(p) ? 1 : 0;
    default: return int64_saturate(at_f64(i));
  }
}

std::vector<int64_t> Tensor::to_i64() const {
  std::vector<int64_t> v(numel());
  for (int64_t i = 0; i < numel(); i++) v[i] = at_i64(i);
  return v;
}

std::vector<float> Tensor::to_f32() const {
  std::vector<float> v(numel());
  for (int64_t i = 0; i < numel(); i++) v[i] = (float)at_f64(i);
  return v;
}

bool Tensor::all_equal() const {
  size_t es = dtype_size(dtype);
  for (int64_t i = 1; i < numel(); i++)
    if (std::memcmp(data(), data() + i * es, es) != 0) return false;
  return true;
}

Tensor Tensor::from_bytes(DType t, Shape shape, std::vector<uint8_t> data) {
  if ((int64_t)data.size() != shape_numel(shape) * (int64_t)dtype_size(t))
    throw Error("internal: tensor of shape " + shape_str(shape) + " given " +
                std::to_string(data.size()) + " bytes");
  Tensor r;
  r.dtype = t;
  r.shape = std::move(shape);
  r.bytes = std::make_shared<const std::vector<uint8_t>>(std::move(data));
  return r;
}

template <typename T>
static void store_as(uint8_t *p, T v) {
  std::memcpy(p, &v, sizeof(T));
}

static void store_f64(DType t, uint8_t *p, double v) {
  switch (t) {
    case DType::f32: store_as<float>(p, (float)v); break;
    case DType::f64: store_as<double>(p, v); break;
    case DType::i8: store_as<int8_t>(p, (int8_t)int64_saturate(v)); break;
    case DType::u8: store_as<uint8_t>(p, (uint8_t)int64_saturate(v)); break;
    case DType::i16: store_as<int16_t>(p, (int16_t)int64_saturate(v)); break;
    case DType::i32: store_as<int32_t>(p, (int32_t)int64_saturate(v)); break;
    case DType::i64: store_as<int64_t>(p, int64_saturate(v)); break;
    case DType::boolean: store_as<uint8_t>(p, v != 0); break;
    case DType::f16: store_as<uint16_t>(p, half_from_double(v)); break;
    case DType::bf16: store_as<uint16_t>(p, bf16_from_float((float)v)); break;
    case DType::u16: store_as<uint16_t>(p, (uint16_t)int64_saturate(v)); break;
    case DType::u32: store_as<uint32_t>(p, (uint32_t)int64_saturate(v)); break;
    case DType::u64:
      store_as<uint64_t>(p, v >= 18446744073709551616.0  ? UINT64_MAX
                            : v >= 9223372036854775808.0 ? (uint64_t)v
                                                         : (uint64_t)int64_saturate(v));
      break;
  }
}

Tensor Tensor::from_f64(DType t, Shape shape, const std::vector<double> &v) {
  std::vector<uint8_t> data(v.size() * dtype_size(t));
  for (size_t i = 0; i < v.size(); i++) store_f64(t, data.data() + i * dtype_size(t), v[i]);
  return from_bytes(t, std::move(shape), std::move(data));
}

Tensor Tensor::from_i64(DType t, Shape shape, const std::vector<int64_t> &v) {
  if (dtype_is_float(t)) {
    std::vector<double> d(v.begin(), v.end());
    return from_f64(t, std::move(shape), d);
  }
  std::vector<uint8_t> data(v.size() * dtype_size(t));
  for (size_t i = 0; i < v.size(); i++) {
    uint8_t *p = data.data() + i * dtype_size(t);
    switch (t) {
      case DType::i64: store_as<int64_t>(p, v[i]); break;
      case DType::i32: store_as<int32_t>(p, (int32_t)v[i]); break;
      case DType::i16: store_as<int16_t>(p, (int16_t)v[i]); break;
      case DType::i8: store_as<int8_t>(p, (int8_t)v[i]); break;
      case DType::u8: store_as<uint8_t>(p, (uint8_t)v[i]); break;
      case DType::u16: store_as<uint16_t>(p, (uint16_t)v[i]); break;
      case DType::u32: store_as<uint32_t>(p, (uint32_t)v[i]); break;
      case DType::u64: store_as<uint64_t>(p, (uint64_t)v[i]); break;
      case DType::boolean: store_as<uint8_t>(p, v[i] != 0); break;
      default: break;
    }
  }
  return from_bytes(t, std::move(shape), std::move(data));
}

Tensor Tensor::from_f32(Shape shape, const std::vector<float> &v) {
  std::vector<uint8_t> data(v.size() * 4);
  // An empty vector's data() may be null, and memcpy from null is UB even for 0 bytes (UBSan, on
  // a Conv with no output channels folded into a BatchNormalization).
  if (!data.empty()) std::memcpy(data.data(), v.data(), data.size());
  return from_bytes(DType::f32, std::move(shape), std::move(data));
}

}  // namespace capgraph
