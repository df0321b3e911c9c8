#include "run_files.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "npy.h"

namespace capgraph {

std::string shape_text(const int64_t *shape, int rank) {
  std::string s;
  for (int i = 0; i < rank; i++) s += (i ? "x" : "") + std::to_string(shape[i]);
  return s.empty() ? "scalar" : s;
}

bool inputs_bind(capgraph_model *m, const std::string &model_path,
                 const std::vector<std::pair<std::string, std::string>> &inputs, bool allow_missing,
                 std::string *err) {
  const int32_t n = capgraph_num_inputs(m);
  std::vector<bool> given(size_t(n), false);
  for (const auto &[name, path] : inputs) {
    const int32_t index = capgraph_input_index(m, name.c_str());
    if (index < 0) {
      std::string names;
      for (int32_t i = 0; i < n; i++) {
        capgraph_tensor t;
        capgraph_input(m, i, &t);
        names += std::string(i ? ", " : "") + t.name;
      }
      *err = model_path + ": the model has no input '" + name + "' (its inputs: " + names + ")";
      return false;
    }
    capgraph_tensor t;
    capgraph_input(m, index, &t);
    npy_array a;
    if (!npy_read(path, &a, err)) return false;
    // A bfloat16 input reads a uint16 file of its bits (NumPy has no bfloat16).
    const bool bf16_bits = t.dtype == CAPGRAPH_BF16 && a.dtype == CAPGRAPH_U16;
    if ((a.dtype != t.dtype && !bf16_bits) || a.shape.size() != size_t(t.rank) ||
        !std::equal(a.shape.begin(), a.shape.end(), t.shape)) {
      *err = path + ": input '" + name + "' must be " + npy_descr(t.dtype) + " " +
             shape_text(t.shape, t.rank) + " but the file holds " + npy_descr(a.dtype) + " " +
             shape_text(a.shape.data(), int(a.shape.size()));
      return false;
    }
    // An empty tensor's vector may have no storage at all (memcpy from NULL is undefined even
    // for 0 bytes: UBSan, the onnx_node suite's zero-size inputs under the sanitizer job).
    if (t.size_bytes) memcpy(t.data, a.data.data(), t.size_bytes);
    given[size_t(index)] = true;
  }
  for (int32_t i = 0; i < n && !allow_missing; i++) {
    if (given[size_t(i)]) continue;
    capgraph_tensor t;
    capgraph_input(m, i, &t);
    *err = model_path + ": missing input '" + t.name + "' (" + npy_descr(t.dtype) + " " +
           shape_text(t.shape, t.rank) + "): pass --input " + t.name + "=FILE.npy";
    return false;
  }
  return true;
}

std::string output_file_name(const char *output_name) {
  std::string s = output_name;
  for (char &c : s)
    if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' ||
          c == '_' || c == '-'))
      c = '_';
  return s + ".npy";
}

bool output_dir_create(const std::string &dir, std::string *err) {
  // Every missing level, as mkdir -p does: "a/b/c" makes a, a/b and a/b/c.
  for (size_t end = dir.find('/', 1);; end = dir.find('/', end + 1)) {
    const std::string level = dir.substr(0, end);
    struct stat st;
    if (stat(level.c_str(), &st) == 0) {
      if (!S_ISDIR(st.st_mode)) {
        *err = dir + ": cannot write outputs there: " + (level == dir ? std::string("it") : level) +
               " is not a directory";
        return false;
      }
    } else if (mkdir(level.c_str(), 0755) != 0 && errno != EEXIST) {
      *err = dir + ": cannot write outputs there: cannot create " +
             (level == dir ? std::string("it") : level) + ": " + strerror(errno);
      return false;
    }
    if (end == std::string::npos) return true;
  }
}

}  // namespace capgraph
