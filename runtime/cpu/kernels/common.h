// Helpers shared by CPU kernels: dtype dispatch, broadcasting index maps, reading small
// integer tensors (axes, shapes), and float conversion of 16-bit types.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include "runtime/base/half.h"
#include "runtime/cpu/kernel.h"

namespace precis::rt {

// 16-bit float storage types, distinct for dispatch.
struct Half { uint16_t bits; };
struct BFloat16 { uint16_t bits; };

template <typename T> inline float ToFloat(T v) { return float(v); }
template <> inline float ToFloat(Half v) { return HalfToFloat(v.bits); }
template <> inline float ToFloat(BFloat16 v) { return Bf16ToFloat(v.bits); }
template <typename T> inline T FromFloat(float v) { return T(v); }
template <> inline Half FromFloat(float v) { return Half{FloatToHalf(v)}; }
template <> inline BFloat16 FromFloat(float v) { return BFloat16{FloatToBf16(v)}; }

// Compute type for a storage type: 16-bit floats compute in float.
template <typename T> struct ComputeOf { using type = T; };
template <> struct ComputeOf<Half> { using type = float; };
template <> struct ComputeOf<BFloat16> { using type = float; };

template <typename T> inline typename ComputeOf<T>::type Load(const T& v) {
  if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) return ToFloat(v);
  else return v;
}
template <typename T, typename C> inline T Store(C v) {
  if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) return FromFloat<T>(float(v));
  else return T(v);
}

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

// Calls fn(T{}) with T the storage type of `t`; returns false for unsupported types.
template <typename Fn>
bool DispatchFloat(DataType t, Fn&& fn) {
  switch (t) {
    case DataType::kF32: fn(float{}); return true;
    case DataType::kF64: fn(double{}); return true;
    case DataType::kF16: fn(Half{}); return true;
    case DataType::kBF16: fn(BFloat16{}); return true;
    default: return false;
  }
}

template <typename Fn>
bool DispatchInteger(DataType t, Fn&& fn) {
  switch (t) {
    case DataType::kI8: fn(int8_t{}); return true;
    case DataType::kI16: fn(int16_t{}); return true;
    case DataType::kI32: fn(int32_t{}); return true;
    case DataType::kI64: fn(int64_t{}); return true;
    case DataType::kU8: fn(uint8_t{}); return true;
    case DataType::kU16: fn(uint16_t{}); return true;
    case DataType::kU32: fn(uint32_t{}); return true;
    case DataType::kU64: fn(uint64_t{}); return true;
    default: return false;
  }
}

template <typename Fn>
bool DispatchNumeric(DataType t, Fn&& fn) {
  return DispatchFloat(t, fn) || DispatchInteger(t, fn);
}

// Every type, bool included (as uint8_t storage): for data movement kernels.
template <typename Fn>
bool DispatchAny(DataType t, Fn&& fn) {
  if (t == DataType::kBool) {
    fn(uint8_t{});
    return true;
  }
  return DispatchNumeric(t, fn);
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
// Row-major strides of dims.
std::vector<int64_t> Strides(const std::vector<int64_t>& dims);

}  // namespace precis::rt
