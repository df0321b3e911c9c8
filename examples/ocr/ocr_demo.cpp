// capgraph-ocr: finds and reads the text in an image with two PaddleOCR models compiled by
// capgraph (PP-OCRv4 det and rec), using nothing but the runtime's C API. It is the quick
// start's main job and an example of embedding the runtime.
//
//   capgraph-ocr --det det.cap --rec rec.cap --keys ppocr_keys_v1.txt (--image FILE.ppm | --text
//   "HELLO 2026")
//
// With --text it renders the text itself (a 5x7 pixel font, scaled and smoothed), so the demo
// needs no image files; --image reads a binary PPM/PGM (P6/P5), e.g. from `convert photo.jpg
// x.ppm`. Pre/post-processing follows PaddleOCR's defaults: det normalises with ImageNet mean/std
// and thresholds the probability map at 0.3; rec takes 48-pixel-high crops scaled to [-1, 1] and is
// decoded greedily (CTC: argmax per step, repeats and blanks dropped).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "capgraph_runtime.h"

namespace {

struct Image {  // grayscale, 0..255
  int w = 0, h = 0;
  std::vector<float> px;
  float at(int x, int y) const {
    return px[(size_t)std::clamp(y, 0, h - 1) * w + std::clamp(x, 0, w - 1)];
  }
};

[[noreturn]] void die(const std::string &msg) {
  std::fprintf(stderr, "capgraph-ocr: error: %s\n", msg.c_str());
  std::exit(1);
}

// ---- a 5x7 pixel font (rows top to bottom, bit 4 = leftmost column) -----------------------------
struct Glyph {
  char c;
  uint8_t rows[7];
};
const Glyph kFont[] = {
    {'A', {14, 17, 17, 31, 17, 17, 17}}, {'B', {30, 17, 17, 30, 17, 17, 30}},
    {'C', {14, 17, 16, 16, 16, 17, 14}}, {'D', {30, 17, 17, 17, 17, 17, 30}},
    {'E', {31, 16, 16, 30, 16, 16, 31}}, {'F', {31, 16, 16, 30, 16, 16, 16}},
    {'G', {14, 17, 16, 23, 17, 17, 15}}, {'H', {17, 17, 17, 31, 17, 17, 17}},
    {'I', {14, 4, 4, 4, 4, 4, 14}},      {'J', {7, 2, 2, 2, 2, 18, 12}},
    {'K', {17, 18, 20, 24, 20, 18, 17}}, {'L', {16, 16, 16, 16, 16, 16, 31}},
    {'M', {17, 27, 21, 21, 17, 17, 17}}, {'N', {17, 17, 25, 21, 19, 17, 17}},
    {'O', {14, 17, 17, 17, 17, 17, 14}}, {'P', {30, 17, 17, 30, 16, 16, 16}},
    {'Q', {14, 17, 17, 17, 21, 18, 13}}, {'R', {30, 17, 17, 30, 20, 18, 17}},
    {'S', {15, 16, 16, 14, 1, 1, 30}},   {'T', {31, 4, 4, 4, 4, 4, 4}},
    {'U', {17, 17, 17, 17, 17, 17, 14}}, {'V', {17, 17, 17, 17, 17, 10, 4}},
    {'W', {17, 17, 17, 21, 21, 21, 10}}, {'X', {17, 17, 10, 4, 10, 17, 17}},
    {'Y', {17, 17, 10, 4, 4, 4, 4}},     {'Z', {31, 1, 2, 4, 8, 16, 31}},
    {'0', {14, 17, 19, 21, 25, 17, 14}}, {'1', {4, 12, 4, 4, 4, 4, 14}},
    {'2', {14, 17, 1, 2, 4, 8, 31}},     {'3', {31, 2, 4, 2, 1, 17, 14}},
    {'4', {2, 6, 10, 18, 31, 2, 2}},     {'5', {31, 16, 30, 1, 1, 17, 14}},
    {'6', {6, 8, 16, 30, 17, 17, 14}},   {'7', {31, 1, 2, 4, 8, 8, 8}},
    {'8', {14, 17, 17, 14, 17, 17, 14}}, {'9', {14, 17, 17, 15, 1, 2, 12}},
    {'.', {0, 0, 0, 0, 0, 12, 12}},      {'-', {0, 0, 0, 31, 0, 0, 0}},
    {':', {0, 12, 12, 0, 12, 12, 0}},    {' ', {0, 0, 0, 0, 0, 0, 0}},
};

// Renders lines of text (split at '|') dark on light, centred. The 5x7 bitmaps are enlarged by
// bilinear interpolation and re-thresholded softly, which rounds the strokes like a real font.
Image text_render(const std::string &text, int scale) {
  std::vector<std::string> lines(1);
  for (char c : text) {
    if (c == '|')
      lines.emplace_back();
    else
      lines.back() += (char)std::toupper((unsigned char)c);
  }
  size_t longest = 0;
  for (auto &l : lines) longest = std::max(longest, l.size());
  // The text on a grid of font pixels: 6 columns per glyph, 12 rows per line, a margin of 2.
  int gw = (int)longest * 6 + 4, gh = (int)lines.size() * 12 + 2;
  std::vector<float> ink((size_t)gw * gh, 0.0f);
  for (size_t li = 0; li < lines.size(); li++) {
    int x0 = (gw - (int)lines[li].size() * 6) / 2, y0 = 3 + (int)li * 12;
    for (size_t ci = 0; ci < lines[li].size(); ci++) {
      const Glyph *g = nullptr;
      for (const Glyph &f : kFont)
        if (f.c == lines[li][ci]) g = &f;
      if (!g)
        die(std::string("--text: no glyph for '") + lines[li][ci] +
            "' (A-Z, 0-9, space, . - : and | for a new line)");
      for (int r = 0; r < 7; r++)
        for (int c = 0; c < 5; c++)
          if (g->rows[r] >> (4 - c) & 1) ink[(size_t)(y0 + r) * gw + x0 + (int)ci * 6 + c] = 1.0f;
    }
  }
  Image im;
  // det wants sides that are multiples of 32
  im.w = (gw * scale + 31) / 32 * 32;
  im.h = (gh * scale + 31) / 32 * 32;
  im.px.assign((size_t)im.w * im.h, 235.0f);
  int ox = (im.w - gw * scale) / 2, oy = (im.h - gh * scale) / 2;
  for (int y = 0; y < gh * scale; y++)
    for (int x = 0; x < gw * scale; x++) {
      float fx = (x + 0.5f) / scale - 0.5f, fy = (y + 0.5f) / scale - 0.5f;
      int ix = (int)std::floor(fx), iy = (int)std::floor(fy);
      float ax = fx - ix, ay = fy - iy;
      auto at = [&](int cx, int cy) {
        return cx < 0 || cy < 0 || cx >= gw || cy >= gh ? 0.0f : ink[(size_t)cy * gw + cx];
      };
      float v = (1 - ay) * ((1 - ax) * at(ix, iy) + ax * at(ix + 1, iy)) +
                ay * ((1 - ax) * at(ix, iy + 1) + ax * at(ix + 1, iy + 1));
      v = std::clamp((v - 0.5f) * 3.0f + 0.5f, 0.0f, 1.0f);
      im.px[(size_t)(oy + y) * im.w + ox + x] = 235.0f - 210.0f * v;
    }
  return im;
}

Image ppm_read(const std::string &path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) die(path + ": cannot open");
  std::string magic;
  int w, h, maxv;
  f >> magic >> w >> h >> maxv;
  f.get();
  if (!f || (magic != "P6" && magic != "P5") || w <= 0 || h <= 0 || w > 8192 || h > 8192 ||
      maxv != 255)
    die(path + ": not a binary 8-bit PPM/PGM (P6/P5, maxval 255)");
  int ch = magic == "P6" ? 3 : 1;
  std::vector<uint8_t> raw((size_t)w * h * ch);
  if (!f.read((char *)raw.data(), (std::streamsize)raw.size()))
    die(path + ": truncated pixel data");
  Image im;
  im.w = w;
  im.h = h;
  im.px.resize((size_t)w * h);
  for (size_t i = 0; i < im.px.size(); i++)
    im.px[i] =
        ch == 1 ? raw[i] : 0.299f * raw[3 * i] + 0.587f * raw[3 * i + 1] + 0.114f * raw[3 * i + 2];
  return im;
}

// ---- the models --------------------------------------------------------------------------------
struct Model {
  capgraph_model *m = nullptr;
  capgraph_tensor in{}, out{};
  double load_ms = 0;
  explicit Model(const std::string &path) {
    char err[1024] = {0};
    auto t0 = std::chrono::steady_clock::now();
    if (capgraph_load(path.c_str(), nullptr, &m, err, sizeof err) != CAPGRAPH_OK) die(err);
    load_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (capgraph_num_inputs(m) != 1 || capgraph_num_outputs(m) != 1)
      die(path + ": expected one input and one output");
    capgraph_input(m, 0, &in);
    capgraph_output(m, 0, &out);
    if (in.dtype != CAPGRAPH_F32 || in.rank != 4 || in.shape[1] != 3)
      die(path + ": expected a float32 1x3xHxW input");
  }
  ~Model() { capgraph_free(m); }
  double run() {
    auto t0 = std::chrono::steady_clock::now();
    if (capgraph_run(m) != CAPGRAPH_OK) die(capgraph_error(m));
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  }
};

struct Box {
  int x0, y0, x1, y1;
  float score;
};

// Connected regions of the thresholded probability map, grown like PaddleOCR's "unclip"
// (offset = area * 1.5 / perimeter), in reading order.
std::vector<Box> boxes_find(const float *prob, int w, int h) {
  std::vector<int> label((size_t)w * h, -1);
  std::vector<Box> boxes;
  std::vector<int> stack;
  for (int y = 0; y < h; y++)
    for (int x = 0; x < w; x++) {
      size_t i = (size_t)y * w + x;
      if (prob[i] < 0.3f || label[i] >= 0) continue;
      Box b{x, y, x, y, 0};
      double sum = 0;
      int n = 0;
      stack.assign(1, (int)i);
      label[i] = (int)boxes.size();
      while (!stack.empty()) {
        int j = stack.back();
        stack.pop_back();
        int jx = j % w, jy = j / w;
        b.x0 = std::min(b.x0, jx), b.x1 = std::max(b.x1, jx), b.y0 = std::min(b.y0, jy),
        b.y1 = std::max(b.y1, jy);
        sum += prob[j];
        n++;
        const int nb[4][2] = {{1, 0}, {-1, 0}, {0, 1}, {0, -1}};
        for (auto &d : nb) {
          int nx = jx + d[0], ny = jy + d[1];
          if (nx < 0 || ny < 0 || nx >= w || ny >= h) continue;
          size_t k = (size_t)ny * w + nx;
          if (prob[k] >= 0.3f && label[k] < 0) {
            label[k] = label[i];
            stack.push_back((int)k);
          }
        }
      }
      b.score = (float)(sum / n);
      int bw = b.x1 - b.x0 + 1, bh = b.y1 - b.y0 + 1;
      if (bw < 6 || bh < 4 || b.score < 0.6f) continue;
      int off = (int)std::lround((double)bw * bh * 1.5 / (2.0 * (bw + bh)));
      b.x0 = std::max(0, b.x0 - off), b.y0 = std::max(0, b.y0 - off);
      b.x1 = std::min(w - 1, b.x1 + off), b.y1 = std::min(h - 1, b.y1 + off);
      boxes.push_back(b);
    }
  std::sort(boxes.begin(), boxes.end(), [](const Box &a, const Box &b) {
    return std::abs(a.y0 - b.y0) > 10 ? a.y0 < b.y0 : a.x0 < b.x0;
  });
  return boxes;
}

std::vector<std::string> keys_read(const std::string &path) {
  std::ifstream f(path);
  if (!f) die(path + ": cannot open the character list");
  std::vector<std::string> keys = {""};  // index 0: the CTC blank
  std::string line;
  while (std::getline(f, line)) keys.push_back(line);
  keys.push_back(" ");  // PaddleOCR appends the space character
  return keys;
}

}  // namespace

int main(int argc, char **argv) {
  std::string det_path, rec_path, keys_path, image_path, text;
  for (int i = 1; i < argc; i++) {
    std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) die(a + " needs a value");
      return argv[++i];
    };
    if (a == "--det")
      det_path = next();
    else if (a == "--rec")
      rec_path = next();
    else if (a == "--keys")
      keys_path = next();
    else if (a == "--image")
      image_path = next();
    else if (a == "--text")
      text = next();
    else
      die("unknown option " + a);
  }
  if (det_path.empty() || rec_path.empty() || keys_path.empty() ||
      (image_path.empty() == text.empty()))
    die("usage: capgraph-ocr --det DET.cap --rec REC.cap --keys KEYS.txt (--image FILE.ppm | "
        "--text \"TEXT|NEXT LINE\")");

  Image im = text.empty() ? ppm_read(image_path) : text_render(text, 4);
  Model det(det_path), rec(rec_path);
  std::vector<std::string> keys = keys_read(keys_path);
  int H = (int)det.in.shape[2], W = (int)det.in.shape[3];
  std::printf("image: %dx%d %s\n", im.w, im.h,
              text.empty() ? image_path.c_str() : ("rendered \"" + text + "\"").c_str());
  std::printf("models loaded in %.1f ms (det, input %dx%d) and %.1f ms (rec, input %lldx%lld)\n",
              det.load_ms, W, H, rec.load_ms, (long long)rec.in.shape[3],
              (long long)rec.in.shape[2]);

  // det input: the image resized to the compiled size, ImageNet normalisation.
  const float mean[3] = {0.485f, 0.456f, 0.406f}, stdv[3] = {0.229f, 0.224f, 0.225f};
  float *d = (float *)det.in.data;
  for (int c = 0; c < 3; c++)
    for (int y = 0; y < H; y++)
      for (int x = 0; x < W; x++) {
        float v = im.at(x * im.w / W, y * im.h / H) / 255.0f;
        d[((size_t)c * H + y) * W + x] = (v - mean[c]) / stdv[c];
      }
  double det_ms = det.run();
  std::vector<Box> boxes = boxes_find((const float *)det.out.data, W, H);
  std::printf("det: %.1f ms, %zu text region(s)\n", det_ms, boxes.size());

  // What det saw, as text: one character per 8x16 pixel cell.
  for (int y = 0; y < H; y += 16) {
    std::string row = "  |";
    for (int x = 0; x < W; x += 8) {
      float p = 0;  // the cell's strongest response
      for (int yy = y; yy < std::min(H, y + 16); yy++)
        for (int xx = x; xx < std::min(W, x + 8); xx++)
          p = std::max(p, ((const float *)det.out.data)[(size_t)yy * W + xx]);
      row += p > 0.6f ? '#' : p > 0.3f ? '+' : ' ';
    }
    std::printf("%s|\n", row.c_str());
  }

  int RH = (int)rec.in.shape[2], RW = (int)rec.in.shape[3];
  int steps = (int)rec.out.shape[1], classes = (int)rec.out.shape[2];
  if ((int)keys.size() != classes)
    die("the character list has " + std::to_string(keys.size()) + " entries, the rec model " +
        std::to_string(classes));
  for (size_t bi = 0; bi < boxes.size(); bi++) {
    const Box &b = boxes[bi];
    // box in image coordinates
    float sx = (float)im.w / W, sy = (float)im.h / H;
    float bx0 = b.x0 * sx, by0 = b.y0 * sy, bw = (b.x1 - b.x0 + 1) * sx,
          bh = (b.y1 - b.y0 + 1) * sy;
    int cw = std::min(RW, std::max(1, (int)std::lround(bw * RH / bh)));
    float *r = (float *)rec.in.data;
    for (int c = 0; c < 3; c++)
      for (int y = 0; y < RH; y++)
        for (int x = 0; x < RW; x++)
          r[((size_t)c * RH + y) * RW + x] =
              x < cw
                  ? (im.at((int)(bx0 + (x + 0.5f) * bw / cw), (int)(by0 + (y + 0.5f) * bh / RH)) /
                         255.0f -
                     0.5f) /
                        0.5f
                  : 0.0f;
    double rec_ms = rec.run();
    const float *p = (const float *)rec.out.data;
    std::string s;
    int prev = 0;
    double conf = 0;
    int n = 0;
    for (int t = 0; t < steps; t++) {
      const float *row = p + (size_t)t * classes;
      int best = (int)(std::max_element(row, row + classes) - row);
      if (best != 0 && best != prev) {
        s += keys[best];
        conf += row[best];
        n++;
      }
      prev = best;
    }
    std::printf("text %zu at (%d,%d)-(%d,%d): \"%s\" (confidence %.2f, rec %.1f ms)\n", bi + 1,
                (int)bx0, (int)by0, (int)(bx0 + bw), (int)(by0 + bh), s.c_str(), n ? conf / n : 0.0,
                rec_ms);
  }
  return 0;
}
