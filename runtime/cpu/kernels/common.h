// Helpers shared by CPU kernels: broadcasting index maps, reading small integer tensors (axes,
// shapes), GELU; dtype dispatch and 16-bit float conversion come from runtime/kernels/scalar_types.h.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include "runtime/cpu/kernel.h"
#include "runtime/kernels/scalar_types.h"

namespace precis::rt {

// GELU in the compute type: the erf form, or the tanh approximation (ONNX Gelu approximate="tanh").
// Shared by the Gelu kernel and fused activations so both compute the same expression.
template <typename C>
inline C GeluValue(C x, bool tanh_approx) {
  if (tanh_approx) {
    const C k = C(0.7978845608028654);  // sqrt(2 / pi)
    return C(0.5) * x * (C(1) + std::tanh(k * (x + C(0.044715) * x * x * x)));
  }
  return C(0.5) * x * (C(1) + std::erf(x * C(0.7071067811865476)));  // x / sqrt(2)
}

// Maps output flat indices to input flat indices under numpy broadcasting.
class BroadcastMap {
 public:
  BroadcastMap() = default;
  // `out` is the broadcast result shape; `in` one operand's shape (rank <= out rank).
  BroadcastMap(const std::vector<int64_t>& out, const std::vector<int64_t>& in);
  bool identity() const { return identity_; }
  // Input offset of output flat index i (slow path, any shape).
  int64_t Map(int64_t i) const {
    if (identity_) return i;
    int64_t off = 0;
    for (size_t d = out_dims_.size(); d-- > 0;) {
      int64_t c = i % out_dims_[d];
      i /= out_dims_[d];
      off += c * strides_[d];
    }
    return off;
  }

 private:
  std::vector<int64_t> out_dims_, strides_;
  bool identity_ = true;
};

// Values of a small integer (or bool) tensor, any integer width.
std::vector<int64_t> ReadInts(const Tensor& t);
// Element i of a numeric tensor as double (16-bit floats widened), and a double stored into one
// (rounded to 16-bit floats, converted to integers as a cast does). For scalar inputs and
// reference kernels, not inner loops.
double ReadAt(const Tensor& t, int64_t i);
void WriteAt(Tensor& t, int64_t i, double v);
// Row-major strides of dims.
std::vector<int64_t> Strides(const std::vector<int64_t>& dims);

// Data dims (plan.fbs Plan.data_symbols): the step's "data_dim_axis" attribute, or -1 when its
// output size is fixed. Such a step's output is planned for an upper bound; the kernel writes the
// output at its actual size (row-major for that size) and records it with SetDataDim, which the
// session reads after the step.
int64_t DataDimAxis(const KernelArgs& args);
Status SetDataDim(const KernelArgs& args, Tensor& out, int64_t axis, int64_t size);
// Init of a step whose output `out` has a data dim: the step's data_dim_axis must be `axis` and
// out's dims those of `expected` except at that axis (a plan that says otherwise would have the
// kernel write past the bytes planned for out).
Status CheckDataDimOutput(const KernelArgs& args, const Tensor& out, int64_t axis, const std::vector<int64_t>& expected);

// Wrap-around integer arithmetic (two's complement, as numpy and onnxruntime compute): WrapOf<T>
// is an unsigned type for T at least as wide as unsigned int, so that integer promotion never
// turns it back into an (overflowing) signed int.
template <typename T>
using WrapOf = std::conditional_t<(sizeof(T) < sizeof(unsigned)), unsigned, std::make_unsigned_t<T>>;
template <typename T> T WrapAdd(T a, T b) { return T(WrapOf<T>(a) + WrapOf<T>(b)); }
template <typename T> T WrapSub(T a, T b) { return T(WrapOf<T>(a) - WrapOf<T>(b)); }
template <typename T> T WrapMul(T a, T b) { return T(WrapOf<T>(a) * WrapOf<T>(b)); }

}  // namespace precis::rt
