#include "model_inputs.h"

#include <cstring>
#include <random>

#include "npy.h"

namespace capgraph {

bool model_inputs_fill(capgraph_model *m, const std::vector<std::string> &files, std::string *err) {
  std::vector<bool> given(size_t(capgraph_num_inputs(m)), false);
  for (const std::string &arg : files) {
    const size_t eq = arg.find('=');
    if (eq == std::string::npos || eq == 0) {
      *err = "--input expects NAME=FILE.npy, got '" + arg + "'";
      return false;
    }
    const std::string name = arg.substr(0, eq), path = arg.substr(eq + 1);
    const int32_t index = capgraph_input_index(m, name.c_str());
    capgraph_tensor t;
    if (index < 0 || capgraph_input(m, index, &t) != CAPGRAPH_OK) {
      *err = "the model has no input '" + name + "'";
      return false;
    }
    npy_array a;
    if (!npy_read(path, &a, err)) return false;
    if (a.dtype != t.dtype || a.data.size() != t.size_bytes) {
      *err = path + ": input '" + name + "' needs " + npy_descr(t.dtype) + ", " +
             std::to_string(t.size_bytes) + " bytes";
      return false;
    }
    std::memcpy(t.data, a.data.data(), t.size_bytes);
    given[size_t(index)] = true;
  }
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> value(-1.0f, 1.0f);
  for (int32_t i = 0; i < capgraph_num_inputs(m); ++i) {
    if (given[size_t(i)]) continue;
    capgraph_tensor t;
    capgraph_input(m, i, &t);
    std::memset(t.data, 0, t.size_bytes);
    if (t.dtype == CAPGRAPH_F32)
      for (size_t k = 0; k < t.size_bytes / sizeof(float); ++k)
        static_cast<float *>(t.data)[k] = value(rng);
  }
  return true;
}

}  // namespace capgraph
