// The raw-float file I/O shared by the attention drivers (attention_io.cpp, attention_dense_io.cpp)
// that the numpy tests run: a truncated input names the file and what was being read.
#pragma once

#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "util/error.h"

namespace ringlm::tools {

template <typename T>
void read_into(std::ifstream& in, std::vector<T>& v, std::size_t n, const char* what, const std::string& path) {
  v.resize(n);
  in.read(reinterpret_cast<char*>(v.data()), static_cast<std::streamsize>(n * sizeof(T)));
  if (!in) ringlm::fail(path, ": truncated while reading ", what, " (", n, " values)");
}

// One output path: a 16-byte zero-padded name, then the floats.
inline void write_path(std::ofstream& out, const char* name, const std::vector<float>& y) {
  char buf[16] = {};
  std::strncpy(buf, name, sizeof buf - 1);
  out.write(buf, sizeof buf);
  out.write(reinterpret_cast<const char*>(y.data()), static_cast<std::streamsize>(y.size() * sizeof(float)));
}

}  // namespace ringlm::tools
