// Element types and constant tensors: the values the compiler knows at compile time
// (initializers, Constant nodes, and everything constant folding derives from them).
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace capgraph {

// Same numbering as schema/capture.fbs DType.
enum class DType : uint8_t { f32 = 0, f16 = 1, f64 = 2, i8 = 3, u8 = 4, i16 = 5, i32 = 6, i64 = 7, boolean = 8 };

size_t dtype_size(DType t);
const char *dtype_name(DType t);
bool dtype_is_float(DType t);

// IEEE binary16 from and to its bits (folding computes in double and stores float16 results).
float half_to_float(uint16_t h);
uint16_t half_from_double(double v);

using Shape = std::vector<int64_t>;
// The most elements one tensor may have: counts and byte sizes (x8) stay far inside int64.
constexpr int64_t kMaxElements = int64_t(1) << 48;
// A double as int64, truncated toward zero, saturating at the int64 limits (NaN gives 0): folding
// converts values a model file chose, and an out-of-range float-to-int cast is undefined behaviour.
int64_t int64_saturate(double v);
// Element count; throws Error for a negative dimension or more than kMaxElements elements.
int64_t shape_numel(const Shape &s);
std::string shape_str(const Shape &s);          // "1x3x224x224"
Shape shape_strides(const Shape &s);            // row-major strides in elements

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
  bool all_equal() const;   // every element equal to the first (true for empty)

  static Tensor from_bytes(DType t, Shape shape, std::vector<uint8_t> data);
  static Tensor from_f64(DType t, Shape shape, const std::vector<double> &v);
  static Tensor from_i64(DType t, Shape shape, const std::vector<int64_t> &v);
  static Tensor from_f32(Shape shape, const std::vector<float> &v);
};

}  // namespace capgraph
