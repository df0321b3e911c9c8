#include "half_calibrate_inputs.h"

#include <algorithm>
#include <array>
#include <cmath>

#include "schedule/interpret.h"

namespace capgraph {

namespace {

constexpr double kPi = 3.141592653589793;

// A fixed pseudo-random sequence (splitmix64), so a compile gives the same capture every time.
struct Sequence {
  uint64_t s;
  uint64_t next() {
    uint64_t z = (s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  double uniform() { return (double)(next() >> 11) * 0x1.0p-53; }  // [0, 1)
  double uniform(double lo, double hi) { return lo + (hi - lo) * uniform(); }
  int64_t below(int64_t n) { return n > 0 ? (int64_t)(next() % (uint64_t)n) : 0; }
  double normal() {  // Box-Muller
    const double u = 1 - uniform(), v = uniform();
    return std::sqrt(-2 * std::log(u)) * std::cos(2 * kPi * v);
  }
};

// The image: channels x height x width values, p[(c * h + y) * w + x].
struct Image {
  int64_t c, h, w;
  std::vector<float> p;
  float &at(int64_t ch, int64_t y, int64_t x) { return p[(size_t)((ch * h + y) * w + x)]; }
  // Adds v over the rectangle [y0, y1) x [x0, x1) of every channel (clipped).
  void add_rect(int64_t y0, int64_t y1, int64_t x0, int64_t x1, const std::vector<float> &v) {
    y0 = std::max<int64_t>(y0, 0), x0 = std::max<int64_t>(x0, 0);
    y1 = std::min(y1, h), x1 = std::min(x1, w);
    for (int64_t ch = 0; ch < c; ch++)
      for (int64_t y = y0; y < y1; y++)
        for (int64_t x = x0; x < x1; x++) at(ch, y, x) += v[(size_t)ch];
  }
  // Sets the rectangle to v in every channel (clipped): ink over paper.
  void set_rect(int64_t y0, int64_t y1, int64_t x0, int64_t x1, float v) {
    y0 = std::max<int64_t>(y0, 0), x0 = std::max<int64_t>(x0, 0);
    y1 = std::min(y1, h), x1 = std::min(x1, w);
    for (int64_t ch = 0; ch < c; ch++)
      for (int64_t y = y0; y < y1; y++)
        for (int64_t x = x0; x < x1; x++) at(ch, y, x) = v;
  }
  // Stretches the values to fill [0, 1].
  void stretch() {
    if (p.empty()) return;
    const auto [lo, hi] = std::minmax_element(p.begin(), p.end());
    const float a = *lo, d = *hi - *lo;
    for (float &v : p) v = d > 0 ? (v - a) / d : 0.5f;
  }
};

// Per-channel weights of a shared component: channels of an image are correlated (an RGB
// pixel's channels move together), not copies.
std::vector<float> channel_mix(Sequence &s, int64_t c, double lo, double hi) {
  std::vector<float> m((size_t)c);
  for (float &v : m) v = (float)s.uniform(lo, hi);
  return m;
}

void smooth(Image &im, Sequence &s) {
  // Four long waves (periods between a quarter and twice the image's size) shared by the
  // channels with weights of their own, one weaker wave per channel.
  auto wave = [&](double amp) {
    const double fy = s.uniform(0.5, 4) / (double)im.h, fx = s.uniform(0.5, 4) / (double)im.w;
    const double ph = s.uniform(0, 2 * kPi);
    return std::array<double, 4>{amp, fy, fx, ph};
  };
  std::vector<std::array<double, 4>> shared;
  for (int i = 0; i < 4; i++) shared.push_back(wave(s.uniform(0.3, 1)));
  std::vector<std::vector<float>> mix;
  for (size_t i = 0; i < shared.size(); i++) mix.push_back(channel_mix(s, im.c, 0.5, 1));
  for (int64_t ch = 0; ch < im.c; ch++) {
    const auto own = wave(s.uniform(0.1, 0.3));
    for (int64_t y = 0; y < im.h; y++)
      for (int64_t x = 0; x < im.w; x++) {
        double v = own[0] * std::cos(2 * kPi * (own[1] * y + own[2] * x) + own[3]);
        for (size_t i = 0; i < shared.size(); i++) {
          const auto &q = shared[i];
          v += mix[i][(size_t)ch] * q[0] * std::cos(2 * kPi * (q[1] * y + q[2] * x) + q[3]);
        }
        im.at(ch, y, x) = (float)v;
      }
  }
  // Rectangles (5-40% of each side) with a constant offset each: edges and flat regions.
  for (int i = 0; i < 8; i++) {
    const int64_t rh = std::max<int64_t>(1, (int64_t)(im.h * s.uniform(0.05, 0.4)));
    const int64_t rw = std::max<int64_t>(1, (int64_t)(im.w * s.uniform(0.05, 0.4)));
    const int64_t y0 = s.below(im.h), x0 = s.below(im.w);
    const double off = s.uniform(-1.5, 1.5);
    std::vector<float> v = channel_mix(s, im.c, 0.6, 1);
    for (float &x : v) x *= (float)off;
    im.add_rect(y0, y0 + rh, x0, x0 + rw, v);
  }
}

void page(Image &im, Sequence &s) {
  // Paper: bright, lit unevenly (a gentle gradient), slightly tinted per channel.
  const std::vector<float> tint = channel_mix(s, im.c, 0.9, 1);
  const double gy = s.uniform(-0.1, 0.1), gx = s.uniform(-0.1, 0.1);
  for (int64_t ch = 0; ch < im.c; ch++)
    for (int64_t y = 0; y < im.h; y++)
      for (int64_t x = 0; x < im.w; x++)
        im.at(ch, y, x) =
            tint[(size_t)ch] * (float)(0.85 + gy * y / (double)im.h + gx * x / (double)im.w);
  // Lines of glyphs: each glyph a cell of 2-4 strokes (horizontal and vertical bars, the
  // strokes of printed characters), words of 2-8 glyphs, lines 12-35 pixels high (at most half
  // the image's height), margins and gaps between them.
  const int64_t lh =
      std::max<int64_t>(4, std::min<int64_t>(std::max<int64_t>(im.h / 2, 1), 12 + s.below(24)));
  const int64_t thick = std::max<int64_t>(1, lh / 8), gw = std::max<int64_t>(3, lh * 7 / 10);
  for (int64_t top = s.below(lh); top + lh <= im.h; top += lh + lh / 2 + s.below(lh)) {
    const float ink = (float)s.uniform(0, 0.25);
    int64_t x = s.below(2 * gw);
    while (x + gw <= im.w) {
      const int64_t glyphs = 2 + s.below(7);
      for (int64_t g = 0; g < glyphs && x + gw <= im.w; g++, x += gw + thick) {
        for (int64_t k = 0, n = 2 + s.below(3); k < n; k++) {
          if (s.below(2)) {  // a horizontal bar
            const int64_t y = top + s.below(lh - thick + 1), x0 = x + s.below(gw / 2);
            im.set_rect(y, y + thick, x0, x0 + gw / 2 + s.below(gw / 2 + 1), ink);
          } else {  // a vertical one
            const int64_t xx = x + s.below(gw - thick + 1), y0 = top + s.below(lh / 2);
            im.set_rect(y0, y0 + lh / 2 + s.below(lh / 2 + 1), xx, xx + thick, ink);
          }
        }
      }
      x += gw + s.below(3 * gw);  // the space between words
    }
  }
}

// Bilinear interpolation of a coarse grid of random values, `cell` pixels apart, added with
// weight `amp` x the channel's mix.
void octave(Image &im, Sequence &s, int64_t cell, double amp, const std::vector<float> &mix) {
  const int64_t gh = im.h / cell + 2, gw = im.w / cell + 2;
  std::vector<float> g((size_t)(gh * gw));
  for (float &v : g) v = (float)s.uniform(-1, 1);
  for (int64_t ch = 0; ch < im.c; ch++)
    for (int64_t y = 0; y < im.h; y++) {
      const double fy = (double)y / (double)cell;
      const int64_t y0 = (int64_t)fy;
      const double ty = fy - (double)y0;
      for (int64_t x = 0; x < im.w; x++) {
        const double fx = (double)x / (double)cell;
        const int64_t x0 = (int64_t)fx;
        const double tx = fx - (double)x0;
        auto G = [&](int64_t a, int64_t b) { return (double)g[(size_t)(a * gw + b)]; };
        const double v = (1 - ty) * ((1 - tx) * G(y0, x0) + tx * G(y0, x0 + 1)) +
                         ty * ((1 - tx) * G(y0 + 1, x0) + tx * G(y0 + 1, x0 + 1));
        im.at(ch, y, x) += (float)(amp * mix[(size_t)ch] * v);
      }
    }
}

void texture(Image &im, Sequence &s) {
  for (int64_t cell : {2, 5, 13, 32, 80}) {
    octave(im, s, cell, std::sqrt((double)cell), channel_mix(s, im.c, 0.5, 1));
    octave(im, s, cell, 0.3 * std::sqrt((double)cell), channel_mix(s, im.c, -1, 1));
  }
  // Straight steps across the image: one side of a random line raised or lowered.
  for (int i = 0; i < 3; i++) {
    const double a = s.uniform(0, 2 * kPi), cy = s.uniform(0, (double)im.h),
                 cx = s.uniform(0, (double)im.w), off = s.uniform(-6, 6);
    for (int64_t ch = 0; ch < im.c; ch++)
      for (int64_t y = 0; y < im.h; y++)
        for (int64_t x = 0; x < im.w; x++)
          if (std::cos(a) * ((double)y - cy) + std::sin(a) * ((double)x - cx) > 0)
            im.at(ch, y, x) += (float)off;
  }
}

}  // namespace

const char *calibration_kind_name(CalibrationKind k) {
  switch (k) {
    case CalibrationKind::smooth: return "smooth";
    case CalibrationKind::page: return "page";
    case CalibrationKind::texture: return "texture";
    case CalibrationKind::noise: return "noise";
  }
  return "?";
}

void calibration_input_fill(CalibrationKind k, DType t, const Shape &shape, uint64_t seed,
                            std::vector<uint8_t> &bytes) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  Sequence s{seed * 4 + (uint64_t)k};
  const bool is_float = dtype_is_float(t), is_u8 = t == DType::u8;
  if (!is_float && !is_u8) {
    for (int64_t i = 0; i < n; i++) element_store(t, bytes.data(), i, 0);
    return;
  }
  if (k == CalibrationKind::noise) {
    for (int64_t i = 0; i < n; i++)
      element_store(t, bytes.data(), i, is_float ? s.normal() : (double)s.below(256));
    return;
  }
  Image im;
  const size_t r = shape.size();
  im.w = r >= 1 ? shape[r - 1] : 1;
  im.h = r >= 2 ? shape[r - 2] : 1;
  im.c = (im.w > 0 && im.h > 0) ? n / (im.w * im.h) : 0;
  if (n == 0) return;
  im.p.assign((size_t)n, 0);
  if (k == CalibrationKind::smooth) smooth(im, s);
  if (k == CalibrationKind::page) page(im, s);
  if (k == CalibrationKind::texture) texture(im, s);
  im.stretch();
  static constexpr double mean[3] = {0.485, 0.456, 0.406}, stdev[3] = {0.229, 0.224, 0.225};
  for (int64_t i = 0; i < n; i++) {
    const double p = im.p[(size_t)i];
    const int64_t ch = i / (im.h * im.w);
    element_store(t, bytes.data(), i,
                  is_u8 ? std::nearbyint(p * 255) : (p - mean[ch % 3]) / stdev[ch % 3]);
  }
}

}  // namespace capgraph
