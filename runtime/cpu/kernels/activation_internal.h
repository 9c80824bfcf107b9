// Helpers shared by the activation family's kernel files (activation.cc, activation_binary.cc,
// activation_cast.cc): a row-wise broadcast walker, wrap-around integer arithmetic, a defined
// float -> integer conversion, and the registration helpers RegisterActivationKernels calls.
#pragma once

#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

#include "runtime/cpu/kernels/common.h"

namespace precis::rt::activation {

// Walks a broadcast output row by row (a row = the output's last dimension), giving for each
// operand the offset of the row's first element and the step along the row (1, or 0 where the
// operand broadcasts along the last dimension). One BroadcastMap lookup per row keeps the inner
// loop free of index arithmetic.
class RowBroadcast {
 public:
  void Init(const std::vector<int64_t>& out, const std::vector<std::vector<int64_t>>& ins) {
    maps_.clear();
    steps_.clear();
    len_ = out.empty() ? 1 : out.back();
    int64_t numel = 1;
    for (int64_t d : out) numel *= d;
    rows_ = len_ == 0 ? 0 : numel / len_;
    for (const auto& in : ins) {
      maps_.emplace_back(out, in);
      steps_.push_back(!in.empty() && in.back() != 1 ? 1 : 0);
    }
  }
  int64_t rows() const { return rows_; }
  int64_t row_len() const { return len_; }
  int64_t Base(size_t k, int64_t row) const { return maps_[k].Map(row * len_); }
  int64_t Step(size_t k) const { return steps_[k]; }

 private:
  std::vector<BroadcastMap> maps_;
  std::vector<int64_t> steps_;
  int64_t rows_ = 0, len_ = 1;
};

// y = f(a, b) under broadcasting (operands 0 and 1 of `rb`). Safe in place (y == a with a's
// shape equal to y's): each position is read before it is written.
template <typename A, typename B, typename Y, typename F>
void BinaryLoop(const RowBroadcast& rb, const A* a, const B* b, Y* y, F&& f) {
  const int64_t len = rb.row_len(), sa = rb.Step(0), sb = rb.Step(1);
  for (int64_t r = 0; r < rb.rows(); ++r) {
    const A* pa = a + rb.Base(0, r);
    const B* pb = b + rb.Base(1, r);
    Y* py = y + r * len;
    for (int64_t j = 0; j < len; ++j) py[j] = f(pa[j * sa], pb[j * sb]);
  }
}

// Wrap-around integer arithmetic (common.h).
using rt::WrapAdd;
using rt::WrapMul;
using rt::WrapOf;

// Float -> integer as ONNX/numpy do for in-range values (truncation toward zero). Out-of-range
// values, which ONNX leaves undefined (and C++ makes UB), saturate to the type's limits; NaN
// gives 0.
template <typename I, typename F>
I SaturateCast(F x) {
  static_assert(std::is_integral_v<I> && std::is_floating_point_v<F>);
  if (x != x) return 0;
  // F(max) rounds up to a power of two for wide types, so ">=" catches every value that does
  // not fit; F(lowest) is exact (zero or minus a power of two).
  if (x >= F(std::numeric_limits<I>::max())) return std::numeric_limits<I>::max();
  if (x <= F(std::numeric_limits<I>::lowest())) return std::numeric_limits<I>::lowest();
  return I(x);
}

// Called by RegisterActivationKernels (activation.cc).
void AddBinaryKernels(KernelRegistry& r);  // activation_binary.cc
void AddCastKernels(KernelRegistry& r);    // activation_cast.cc

}  // namespace precis::rt::activation
