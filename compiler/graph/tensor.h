// Element types and constant tensors: the values the compiler knows at compile time
// (initializers, Constant nodes, and everything constant folding derives from them).
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace capgraph {

// Same numbering as schema/capture.fbs DType.
// Values are schema/capture.fbs DType's. bf16 and the wide unsigned types are storage: loads widen
// to the compute type (bf16 -> float32, u16/u32 -> int64, u64 stays 64-bit, compared and divided
// unsigned), stores narrow (bf16 rounds to nearest even).
enum class DType : uint8_t {
  f32 = 0,
  f16 = 1,
  f64 = 2,
  i8 = 3,
  u8 = 4,
  i16 = 5,
  i32 = 6,
  i64 = 7,
  boolean = 8,
  bf16 = 9,
  u16 = 10,
  u32 = 11,
  u64 = 12
};

size_t dtype_size(DType t);
const char *dtype_name(DType t);
bool dtype_is_float(DType t);

// IEEE binary16 from and to its bits (folding computes in double and stores float16 results).
float half_to_float(uint16_t h);
uint16_t half_from_double(double v);
// bfloat16 from and to its bits: the upper half of a float32; narrowing rounds to nearest even
// and keeps NaN a (quiet) NaN. Sources: Intel BF16 whitepaper (rev 1.0, 2018) section 2,
// "round to nearest even"; ONNX Cast (current onnx/backend/test/case/node/cast.py: ml_dtypes).
float bf16_to_float(uint16_t h);
uint16_t bf16_from_float(float v);

using Shape = std::vector<int64_t>;
// The most elements one tensor may have: counts and byte sizes (x8) stay far inside int64.
constexpr int64_t kMaxElements = int64_t(1) << 48;
// A double as int64, truncated toward zero, saturating at the int64 limits (NaN gives 0): folding
// converts values a model file chose, and an out-of-range float-to-int cast is undefined behaviour.
int64_t int64_saturate(double v);
// Element count; throws Error for a negative dimension or more than kMaxElements elements.
int64_t shape_numel(const Shape &s);
std::string shape_str(const Shape &s);  // "1x3x224x224"
Shape shape_strides(const Shape &s);    // row-major strides in elements

// A constant tensor. Data is immutable once built and shared between values that alias it.
struct Tensor {
  DType dtype = DType::f32;
  Shape shape;
  std::shared_ptr<const std::vector<uint8_t>> bytes;

  int64_t numel() const { return shape_numel(shape); }
  const uint8_t *data() const { return bytes->data(); }
  // Element i converted to double / int64 (any dtype).
  double at_f64(int64_t i) const;
  int64_t at_i64(int64_t i) const;
  std::vector<int64_t> to_i64() const;
  std::vector<float> to_f32() const;
  bool all_equal() const;  // every element equal to the first (true for empty)

  static Tensor from_bytes(DType t, Shape shape, std::vector<uint8_t> data);
  static Tensor from_f64(DType t, Shape shape, const std::vector<double> &v);
  static Tensor from_i64(DType t, Shape shape, const std::vector<int64_t> &v);
  static Tensor from_f32(Shape shape, const std::vector<float> &v);
};

}  // namespace capgraph
