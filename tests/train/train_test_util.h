// Helpers of the training tests that compare precis with PyTorch references: reading .npy data
// as float or double, and the relative L2 error the tolerances are stated in.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "tools/precis/tensor_io.h"

namespace precis::train_test {

// The folder an environment variable names (set by ctest to the reference script's output).
inline std::string EnvDir(const char* variable) {
  const char* d = std::getenv(variable);
  return d ? d : "";
}

inline std::vector<float> Floats(const tools::HostTensor& t) {
  std::vector<float> v(t.data.size() / 4);
  std::memcpy(v.data(), t.data.data(), t.data.size());
  return v;
}

// F32 or F64 data as doubles (float64 references).
inline std::vector<double> Doubles(const tools::HostTensor& t) {
  if (t.dtype != DataType::kF64) {
    std::vector<float> f = Floats(t);
    return std::vector<double>(f.begin(), f.end());
  }
  std::vector<double> v(t.data.size() / 8);
  std::memcpy(v.data(), t.data.data(), t.data.size());
  return v;
}

// ||got - want|| / ||want|| over want.size() values; `got` is a vector or a pointer.
template <typename Got, typename Want>
double RelL2(const Got& got, const Want& want) {
  double num = 0, den = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    double d = double(got[i]) - double(want[i]);
    num += d * d;
    den += double(want[i]) * double(want[i]);
  }
  return std::sqrt(num / std::max(den, 1e-30));
}

}  // namespace precis::train_test
