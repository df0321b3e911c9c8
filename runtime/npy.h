// NumPy .npy files (format versions 1, 2 and 3): the input and output files of capgraph-run and
// `capgraph run`. Little-endian data in C order only; anything else is refused with a message.
//
// Source: numpy/lib/format.py ("A Simple File Format for NumPy Arrays", NEP 1).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "capgraph_runtime.h"

namespace capgraph {

struct npy_array {
  capgraph_dtype dtype = CAPGRAPH_F32;
  std::vector<int64_t> shape;  // empty for a 0-d array
  std::vector<uint8_t> data;   // product(shape) * element size bytes
};

// Parses .npy bytes. On failure returns false and sets *err to "<label>: <what is wrong>".
bool npy_parse(const uint8_t *bytes, size_t size, const char *label, npy_array *out,
               std::string *err);
bool npy_read(const std::string &path, npy_array *out, std::string *err);

// The .npy bytes (version 1.0 unless the header needs 2.0) for `size` bytes of `data`.
std::vector<uint8_t> npy_format(capgraph_dtype dtype, const int64_t *shape, int rank,
                                const void *data, size_t size);
bool npy_write(const std::string &path, capgraph_dtype dtype, const int64_t *shape, int rank,
               const void *data, size_t size, std::string *err);

// "<f4", "|u1", ...: the NumPy type string for a dtype.
const char *npy_descr(capgraph_dtype dtype);
size_t npy_dtype_size(capgraph_dtype dtype);

}  // namespace capgraph
