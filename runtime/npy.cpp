#include "npy.h"

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace capgraph {

namespace {

struct dtype_entry {
  capgraph_dtype dtype;
  const char *descr;  // without the byte-order character
  size_t size;
};

const dtype_entry k_dtypes[] = {
    {CAPGRAPH_F32, "f4", 4},
    {CAPGRAPH_F16, "f2", 2},
    {CAPGRAPH_F64, "f8", 8},
    {CAPGRAPH_I8, "i1", 1},
    {CAPGRAPH_U8, "u1", 1},
    {CAPGRAPH_I16, "i2", 2},
    {CAPGRAPH_I32, "i4", 4},
    {CAPGRAPH_I64, "i8", 8},
    {CAPGRAPH_BOOL, "b1", 1},
    // NumPy has no bfloat16: its bits travel as uint16 (what onnx.numpy_helper gives for it). A
    // '<u2' file parses as U16 (the later entry wins in npy_parse); inputs_bind takes it for a
    // bfloat16 input.
    {CAPGRAPH_BF16, "u2", 2},
    {CAPGRAPH_U16, "u2", 2},
    {CAPGRAPH_U32, "u4", 4},
    {CAPGRAPH_U64, "u8", 8},
};

const char k_magic[] = "\x93NUMPY";

// A tiny reader for the header, a Python dict literal such as
//   {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
class header_reader {
 public:
  explicit header_reader(const std::string &s) : s_(s) {}

  // The text of `key`'s value, up to the next top-level ',' or '}'.
  bool value(const char *key, std::string *out) const {
    for (const char quote : {'\'', '"'}) {
      const std::string k = std::string(1, quote) + key + quote;
      size_t p = s_.find(k);
      if (p == std::string::npos) continue;
      p = s_.find(':', p + k.size());
      if (p == std::string::npos) return false;
      size_t e = ++p;
      int depth = 0;
      for (; e < s_.size(); ++e) {
        const char c = s_[e];
        if (c == '(' || c == '[')
          ++depth;
        else if (c == ')' || c == ']')
          --depth;
        else if ((c == ',' || c == '}') && depth == 0)
          break;
      }
      *out = trim(s_.substr(p, e - p));
      return true;
    }
    return false;
  }

  static std::string trim(std::string v) {
    while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.erase(0, 1);
    while (!v.empty() && (v.back() == ' ' || v.back() == '\t' || v.back() == '\n')) v.pop_back();
    return v;
  }

 private:
  const std::string &s_;
};

bool fail(std::string *err, const char *label, const std::string &what) {
  *err = std::string(label) + ": " + what;
  return false;
}

}  // namespace

const char *npy_descr(capgraph_dtype dtype) {
  switch (dtype) {
    case CAPGRAPH_F32: return "<f4";
    case CAPGRAPH_F16: return "<f2";
    case CAPGRAPH_F64: return "<f8";
    case CAPGRAPH_I8: return "|i1";
    case CAPGRAPH_U8: return "|u1";
    case CAPGRAPH_I16: return "<i2";
    case CAPGRAPH_I32: return "<i4";
    case CAPGRAPH_I64: return "<i8";
    case CAPGRAPH_BOOL: return "|b1";
    case CAPGRAPH_BF16: return "<u2";
    case CAPGRAPH_U16: return "<u2";
    case CAPGRAPH_U32: return "<u4";
    case CAPGRAPH_U64: return "<u8";
  }
  return "?";
}

size_t npy_dtype_size(capgraph_dtype dtype) {
  for (const dtype_entry &e : k_dtypes)
    if (e.dtype == dtype) return e.size;
  return 0;
}

bool npy_parse(const uint8_t *bytes, size_t size, const char *label, npy_array *out,
               std::string *err) {
  if (size < 10 || memcmp(bytes, k_magic, 6) != 0)
    return fail(err, label, "not a .npy file (no \\x93NUMPY magic)");
  const unsigned major = bytes[6];
  size_t header_len = 0, header_start = 0;
  if (major == 1) {
    header_len = size_t(bytes[8]) | size_t(bytes[9]) << 8;
    header_start = 10;
  } else if (major == 2 || major == 3) {
    if (size < 12) return fail(err, label, "truncated .npy header");
    header_len = size_t(bytes[8]) | size_t(bytes[9]) << 8 | size_t(bytes[10]) << 16 |
                 size_t(bytes[11]) << 24;
    header_start = 12;
  } else {
    return fail(err, label, ".npy format version " + std::to_string(major) + " is not supported");
  }
  if (header_len > size - header_start) return fail(err, label, "truncated .npy header");
  const std::string header(reinterpret_cast<const char *>(bytes + header_start), header_len);
  const header_reader h(header);

  std::string descr, fortran, shape;
  if (!h.value("descr", &descr) || !h.value("fortran_order", &fortran) || !h.value("shape", &shape))
    return fail(err, label, "the .npy header lacks descr, fortran_order or shape: " + header);
  if (fortran != "False")
    return fail(err, label,
                "array is in Fortran order; save it in C order "
                "(numpy.ascontiguousarray)");
  if (descr.size() < 3 || (descr.front() != '\'' && descr.front() != '"'))
    return fail(err, label, "unsupported descr " + descr);
  descr = descr.substr(1, descr.size() - 2);
  if (descr.empty()) return fail(err, label, "empty descr");
  const char order = descr[0];
  if (order == '>')
    return fail(err, label,
                "array is big-endian (" + descr +
                    "); save it little-endian "
                    "(array.astype(array.dtype.newbyteorder('<')))");
  const std::string kind = (order == '<' || order == '|' || order == '=') ? descr.substr(1) : descr;
  const dtype_entry *type = nullptr;
  for (const dtype_entry &e : k_dtypes)
    if (kind == e.descr) type = &e;
  if (!type)
    return fail(err, label,
                "dtype " + descr + " is not supported (f4 f8 f2 i8 i4 i2 i1 u1 u2 u4 u8 b1)");
  if (order == '|' && type->size != 1)
    return fail(err, label, "dtype " + descr + " has no byte order");

  // shape: "()", "(3,)", "(2, 3)"
  if (shape.size() < 2 || shape.front() != '(' || shape.back() != ')')
    return fail(err, label, "bad shape " + shape);
  out->shape.clear();
  uint64_t count = 1;
  size_t p = 1;
  while (p < shape.size() - 1) {
    while (p < shape.size() - 1 && (shape[p] == ' ' || shape[p] == ',')) ++p;
    if (p >= shape.size() - 1) break;
    size_t digits = 0;
    uint64_t dim = 0;
    while (p < shape.size() - 1 && shape[p] >= '0' && shape[p] <= '9') {
      dim = dim * 10 + uint64_t(shape[p++] - '0');
      if (++digits > 15) return fail(err, label, "shape dimension too large in " + shape);
    }
    if (!digits) return fail(err, label, "bad shape " + shape);
    if (dim && count > (uint64_t(1) << 48) / dim) return fail(err, label, "shape too large");
    count *= dim;
    out->shape.push_back(int64_t(dim));
  }
  const uint64_t bytes_needed = count * type->size;
  const size_t data_start = header_start + header_len;
  if (size - data_start < bytes_needed)
    return fail(err, label,
                "truncated data: " + std::to_string(size - data_start) + " bytes for " +
                    std::to_string(bytes_needed));
  out->dtype = type->dtype;
  out->data.assign(bytes + data_start, bytes + data_start + bytes_needed);
  return true;
}

bool npy_read(const std::string &path, npy_array *out, std::string *err) {
  FILE *f = fopen(path.c_str(), "rb");
  if (!f) return fail(err, path.c_str(), std::string("cannot open: ") + strerror(errno));
  std::vector<uint8_t> bytes;
  uint8_t buf[1 << 16];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, f)) > 0) bytes.insert(bytes.end(), buf, buf + n);
  const bool read_error = ferror(f);
  fclose(f);
  if (read_error) return fail(err, path.c_str(), "read error");
  return npy_parse(bytes.data(), bytes.size(), path.c_str(), out, err);
}

std::vector<uint8_t> npy_format(capgraph_dtype dtype, const int64_t *shape, int rank,
                                const void *data, size_t size) {
  // NumPy's spelling: "()", "(3,)", "(2, 3)".
  std::string dims;
  for (int i = 0; i < rank; ++i) dims.append(i ? ", " : "").append(std::to_string(shape[i]));
  if (rank == 1) dims += ',';
  std::string header = std::string("{'descr': '") + npy_descr(dtype) +
                       "', 'fortran_order': False, 'shape': (" + dims + "), }";
  // NumPy pads the header with spaces and a newline so the data starts 64-byte aligned.
  const bool v2 = header.size() + 10 + 1 > 65535;
  const size_t prefix = v2 ? 12 : 10;
  const size_t total = (prefix + header.size() + 1 + 63) / 64 * 64;
  header.append(total - prefix - header.size() - 1, ' ');
  header += '\n';
  std::vector<uint8_t> out(k_magic, k_magic + 6);
  out.push_back(v2 ? 2 : 1);
  out.push_back(0);
  const size_t len = header.size();
  out.push_back(uint8_t(len));
  out.push_back(uint8_t(len >> 8));
  if (v2) {
    out.push_back(uint8_t(len >> 16));
    out.push_back(uint8_t(len >> 24));
  }
  out.insert(out.end(), header.begin(), header.end());
  const uint8_t *d = static_cast<const uint8_t *>(data);
  out.insert(out.end(), d, d + size);
  return out;
}

bool npy_write(const std::string &path, capgraph_dtype dtype, const int64_t *shape, int rank,
               const void *data, size_t size, std::string *err) {
  const std::vector<uint8_t> bytes = npy_format(dtype, shape, rank, data, size);
  FILE *f = fopen(path.c_str(), "wb");
  if (!f) return fail(err, path.c_str(), std::string("cannot create: ") + strerror(errno));
  const bool ok = fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size();
  if (fclose(f) != 0 || !ok) return fail(err, path.c_str(), "write error");
  return true;
}

}  // namespace capgraph
