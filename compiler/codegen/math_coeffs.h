// The constants of the inline transcendental functions, once for both emitters that build them:
// the LLVM one (math_ir.cpp: CPU, AMDGPU, NVPTX) and the NIR one (adreno_nir_emit.cpp), so their
// approximations cannot drift apart. Polynomials are Horner coefficient arrays, highest degree
// first: {c_n, ..., c_1, c_0} is ((c_n x + c_(n-1)) x + ...) x + c_0. Dependency-free.
#pragma once

namespace capgraph::math_coeffs {

inline constexpr double log2_e = 1.4426950408889634;  // 1 / ln 2

// exp(x) = 2^n exp(r), n = round(x log2_e), r = x - n ln2 with ln2 split in two (Cody & Waite:
// ln2_hi has few enough bits that n * ln2_hi is exact), and exp(r) by its Taylor series (error
// below 2e-7 relative for float).
inline constexpr double ln2_hi = 0.693145751953125, ln2_lo = 1.428606820309417232e-6;
inline constexpr double exp_series_f32[] = {1.0 / 5040, 1.0 / 720, 1.0 / 120, 1.0 / 24,
                                            1.0 / 6,    0.5,       1,         1};
inline constexpr double exp_series_f64[] = {
    1.0 / 39916800, 1.0 / 3628800, 1.0 / 362880, 1.0 / 40320, 1.0 / 5040, 1.0 / 720,
    1.0 / 120,      1.0 / 24,      1.0 / 6,      0.5,         1,          1};
// Where exp saturates: below lo to 0, above hi (where expf / exp overflow) to inf.
inline constexpr double exp_f32_lo = -87.33, exp_f32_hi = 88.72283935546875;
inline constexpr double exp_f64_lo = -708.0, exp_f64_hi = 709.782712893384;

// log(m) = 2 atanh(s) = s P(s^2), s = (m - 1) / (m + 1), m in [sqrt(1/2), sqrt(2)).
inline constexpr double log_series_f32[] = {2.0 / 9, 2.0 / 7, 2.0 / 5, 2.0 / 3, 2};
inline constexpr double log_series_f64[] = {2.0 / 19, 2.0 / 17, 2.0 / 15, 2.0 / 13, 2.0 / 11,
                                            2.0 / 9,  2.0 / 7,  2.0 / 5,  2.0 / 3,  2};

// tanh(x) = sign(x) (1 - 2 / (exp(2|x|) + 1)), which loses relative accuracy near 0: there,
// for |x| < tanh_series_below, the odd Taylor series x P(x^2) = x - x^3/3 + 2x^5/15 - 17x^7/315.
inline constexpr double tanh_series[] = {-17.0 / 315, 2.0 / 15, -1.0 / 3, 1};
inline constexpr double tanh_series_below = 0.0625;

// erf(x) = sign(x) (1 - t P(t) exp(-x^2)), t = 1 / (1 + erf_p |x|), P = {a5, a4, a3, a2, a1}:
// absolute error below 1.5e-7. Source: Abramowitz & Stegun, Handbook of Mathematical Functions
// (1964), formula 7.1.26.
inline constexpr double erf_p = 0.3275911;
inline constexpr double erf_series[] = {1.061405429, -1.453152027, 1.421413741, -0.284496736,
                                        0.254829592};

}  // namespace capgraph::math_coeffs
