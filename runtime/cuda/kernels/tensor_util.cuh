// Helpers of the CUDA tensor kernels (tensor*.cu): data movement by storage unit (1 to 16
// bytes, so that every dtype moves with the same code and wide rows move 16 bytes at a time),
// strided copies through 32-bit index maps with multiply-shift division, index values read from
// any integer dtype on the device, and host-side validation shared by the family.
//
// The per-element work of each kernel is a functor with a __host__ __device__ operator(): the
// device runs it through ForEach; a test build without a GPU defines
// PRECIS_TENSOR_HOST_EMULATION and runs the same functors on the host (Launch, CopyAsync,
// FillAsync and the few block-level kernels have a host loop for that build), so that the
// index math can be compared with the CPU reference kernels on any machine.
#pragma once

#include <cstring>
#include <string>
#include <vector>

#include "runtime/cuda/device_util.cuh"
#include "runtime/kernels/index_util.h"
#include "runtime/kernels/strided_views.h"

namespace precis::rt::cuda::tensor {

// ---- launches (host emulation in GPU-less test builds) -----------------------------------------

template <typename Op> cudaError_t Launch(int64_t n, cudaStream_t stream, const Op& op) {
#ifdef PRECIS_TENSOR_HOST_EMULATION
  (void)stream;
  for (int64_t i = 0; i < n; ++i) op(i);
  return cudaSuccess;
#else
  return ForEach(n, stream, op);
#endif
}

// Device-to-device copy and byte fill on the stream (capturable).
inline cudaError_t CopyAsync(void* dst, const void* src, size_t bytes, cudaStream_t stream) {
  if (bytes == 0 || dst == src) return cudaSuccess;
#ifdef PRECIS_TENSOR_HOST_EMULATION
  (void)stream;
  std::memmove(dst, src, bytes);
  return cudaSuccess;
#else
  return cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream);
#endif
}
inline cudaError_t FillAsync(void* dst, int byte, size_t bytes, cudaStream_t stream) {
  if (bytes == 0) return cudaSuccess;
#ifdef PRECIS_TENSOR_HOST_EMULATION
  (void)stream;
  std::memset(dst, byte, bytes);
  return cudaSuccess;
#else
  return cudaMemsetAsync(dst, byte, bytes, stream);
#endif
}

// RaiseError for code that also runs on the host.
__host__ __device__ inline void Raise(int* flag, int code) {
#ifdef __CUDA_ARCH__
  atomicCAS(flag, 0, code);
#else
  if (*flag == 0) *flag = code;
#endif
}

// IEEE double operations without contraction into FMA: the CPU reference (x86-64, no FMA)
// rounds the product and the sum separately.
__host__ __device__ inline double MulRn(double a, double b) {
#ifdef __CUDA_ARCH__
  return __dmul_rn(a, b);
#else
  return a * b;
#endif
}
__host__ __device__ inline double AddRn(double a, double b) {
#ifdef __CUDA_ARCH__
  return __dadd_rn(a, b);
#else
  return a + b;
#endif
}

// ---- storage units ----------------------------------------------------------------------------

// Calls fn(U{}) with U an unsigned type of `unit` bytes (1, 2, 4, 8, or 16 as uint4).
template <typename Fn> bool DispatchUnit(size_t unit, Fn&& fn) {
  switch (unit) {
    case 1: fn(uint8_t{}); return true;
    case 2: fn(uint16_t{}); return true;
    case 4: fn(uint32_t{}); return true;
    case 8: fn(uint64_t{}); return true;
    case 16: fn(uint4{}); return true;
    default: return false;
  }
}

// The widest unit (a power of two from `esize` to 16 bytes) that divides `bytes`, a row length
// of the kernel (16 when `bytes` is 0).
size_t WidestUnit(size_t esize, size_t bytes);
// `unit` halved (not below esize) until p is aligned to it.
size_t AlignUnit(size_t unit, size_t esize, const void* p);

// Load/Store of device_util.cuh for code that also runs on the host.
template <typename T> __host__ __device__ inline Compute<T> LoadValue(T v) {
  if constexpr (std::is_same_v<T, half>) return __half2float(v);
  else if constexpr (std::is_same_v<T, bf16>) return __bfloat162float(v);
  else return v;
}
template <typename T, typename C> __host__ __device__ inline T StoreValue(C v) {
  if constexpr (std::is_same_v<T, half>) return __float2half_rn(float(v));
  else if constexpr (std::is_same_v<T, bf16>) return __float2bfloat16_rn(float(v));
  else return T(v);
}

// ---- index values -----------------------------------------------------------------------------

// Element i of an integer tensor of dtype t as int64 (the CPU's IndexAt).
__host__ __device__ inline int64_t LoadIndex(const void* p, DataType t, int64_t i) {
  switch (t) {
    case DataType::kI8: return static_cast<const int8_t*>(p)[i];
    case DataType::kI16: return static_cast<const int16_t*>(p)[i];
    case DataType::kI32: return static_cast<const int32_t*>(p)[i];
    case DataType::kI64: return static_cast<const int64_t*>(p)[i];
    case DataType::kU8: return static_cast<const uint8_t*>(p)[i];
    case DataType::kU16: return static_cast<const uint16_t*>(p)[i];
    case DataType::kU32: return static_cast<const uint32_t*>(p)[i];
    case DataType::kU64: return int64_t(static_cast<const uint64_t*>(p)[i]);
    default: return 0;
  }
}

// Element i of a numeric tensor as double (16-bit floats through float, as the CPU's Load).
__host__ __device__ inline double LoadDouble(const void* p, DataType t, int64_t i) {
  switch (t) {
    case DataType::kF32: return static_cast<const float*>(p)[i];
    case DataType::kF64: return static_cast<const double*>(p)[i];
    case DataType::kF16: return __half2float(static_cast<const half*>(p)[i]);
    case DataType::kBF16: return __bfloat162float(static_cast<const bf16*>(p)[i]);
    case DataType::kBool: return static_cast<const uint8_t*>(p)[i];
    default: return double(LoadIndex(p, t, i));
  }
}

// Whether element i is nonzero (Load(x) != 0 on the CPU: -0.0 is zero, NaN is not).
__host__ __device__ inline bool NonZeroAt(const void* p, DataType t, int64_t i) {
  switch (t) {
    case DataType::kF32: return static_cast<const float*>(p)[i] != 0.f;
    case DataType::kF64: return static_cast<const double*>(p)[i] != 0.0;
    case DataType::kF16: return __half2float(static_cast<const half*>(p)[i]) != 0.f;
    case DataType::kBF16: return __bfloat162float(static_cast<const bf16*>(p)[i]) != 0.f;
    case DataType::kBool: return static_cast<const uint8_t*>(p)[i] != 0;
    case DataType::kU64: return static_cast<const uint64_t*>(p)[i] != 0;
    default: return LoadIndex(p, t, i) != 0;
  }
}

// Wraps a negative index into [0, n); false when out of range (the CPU's WrapIndex).
__host__ __device__ inline bool Wrap(int64_t& index, int64_t n) {
  if (index < 0) index += n;
  return index >= 0 && index < n;
}

// q = a / b and r = a % b for a >= 0, b > 0; in 32 bits when both fit (much cheaper on the GPU).
__host__ __device__ inline int64_t DivMod(int64_t a, int64_t b, int64_t& r) {
  if (((a | b) >> 32) == 0) {
    uint32_t q = uint32_t(a) / uint32_t(b);
    r = a - int64_t(q) * b;
    return q;
  }
  int64_t q = a / b;
  r = a - q * b;
  return q;
}

// ---- strided index maps -----------------------------------------------------------------------

// Unsigned division by a constant through a multiply and a shift (Granlund-Montgomery), exact
// for dividends below 2^31.
struct FastDiv {
  uint32_t d = 1, m = 1, s = 0;
  FastDiv() = default;
  explicit FastDiv(uint32_t divisor);
  __host__ __device__ uint32_t Div(uint32_t n) const {
#ifdef __CUDA_ARCH__
    uint32_t t = __umulhi(n, m);
#else
    uint32_t t = uint32_t((uint64_t(n) * m) >> 32);
#endif
    return (t + n) >> s;
  }
};

inline constexpr int kViewRank = 16;

// Views in elements are the shared StridedView (runtime/kernels/strided_views.h).
// Drops size-1 dims and merges dims the source steps through contiguously (the CPU's Coalesce;
// an empty view becomes dims {0}).
StridedView CoalesceSpec(const StridedView& view);

// The 32-bit map: every offset and the element count below 2^31, at most kMaxRank dims.
struct View32 {
  int rank = 0;
  FastDiv div[kMaxRank];
  uint32_t strides[kMaxRank] = {};  // two's complement: sums wrap back into range
  uint32_t base = 0;
  __host__ __device__ int64_t operator()(int64_t linear) const {
    uint32_t lin = uint32_t(linear), off = base;
#ifdef __CUDA_ARCH__
#pragma unroll
#endif
    for (int d = kMaxRank - 1; d >= 0; --d) {
      if (d >= rank) continue;
      uint32_t q = div[d].Div(lin);
      off += (lin - q * div[d].d) * strides[d];
      lin = q;
    }
    return int32_t(off);
  }
};
// The general map (64-bit, up to kViewRank dims).
struct View64 {
  int rank = 0;
  int64_t dims[kViewRank] = {};
  int64_t strides[kViewRank] = {};
  int64_t base = 0;
  __host__ __device__ int64_t operator()(int64_t linear) const {
    int64_t off = base;
    for (int d = rank - 1; d >= 0; --d) {
      int64_t q = linear / dims[d];
      off += (linear - q * dims[d]) * strides[d];
      linear = q;
    }
    return off;
  }
};

// dst[k] = src[view(k)] for every element of a view, moving the widest storage unit the
// layout allows (chosen at Init) and the pointers allow (checked at Run).
class StridedCopy {
 public:
  // `view` in elements of `esize` bytes (coalesced here).
  Status Plan(const KernelArgs& args, const StridedView& view, size_t esize);
  Status Run(const KernelArgs& args, const void* src, void* dst, cudaStream_t stream) const;

 private:
  struct Variant {
    size_t unit = 0;
    int64_t count = 0;          // units copied
    bool contiguous = false;    // one run: a plain copy from `offset`
    int64_t offset = 0;         // in units, for contiguous variants
    bool narrow = false;        // View32 applies
    View32 v32;
    View64 v64;
  };
  std::vector<Variant> variants_;  // widest unit first; the last one is the element size
};

// ---- host helpers -----------------------------------------------------------------------------
// (DenseStrides, DimProduct and IsIndexType are the shared ones of runtime/kernels/index_util.h.)

// Whether any tensor of the step is FP16/BF16: dtype combinations a kernel does not take are
// then Unimplemented (the backend runs the step widened, as the CPU session does).
bool HasHalfTensors(const KernelArgs& args);
// A dtype problem: Unimplemented when widening could resolve it, else InvalidArgument.
Status DtypeError(const KernelArgs& args, const std::string& message);
// A limit of the CUDA kernel (rank above what its index maps hold).
Status RankLimit(const KernelArgs& args, const std::string& what);
// The bytes of `v` stored in dtype t (saturating integers, NaN -> 0; floats round to nearest
// even; bool as uint8, the CPU's SaturatingCast over DispatchAny), little-endian in a uint64.
uint64_t SaturatedBits(DataType t, double v);

}  // namespace precis::rt::cuda::tensor
