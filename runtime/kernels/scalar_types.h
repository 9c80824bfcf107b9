// Host scalar types shared by the kernels of every backend's host code: distinct 16-bit float
// storage types, their float conversions (Load/Store compute 16-bit floats in float), and the
// dispatch of a dtype to its storage type. Used by the CPU kernels and the shared geometry that
// reads constant inputs on the host (runtime/kernels/resize_taps.cc).
#pragma once

#include <cstdint>
#include <type_traits>

#include "precis/types.h"
#include "runtime/base/half.h"

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

}  // namespace precis::rt
