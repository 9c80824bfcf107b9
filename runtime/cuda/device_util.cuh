// Device-side helpers shared by the CUDA kernels: storage types per DataType, float load/store of
// 16-bit types, launch shapes, strided index maps (broadcasting, transposes, slices) and warp/block
// reductions. Include from .cu files only.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>
#include <vector>

#include "runtime/cuda/cuda_kernel.h"
#include "runtime/kernels/index_util.h"  // DenseStrides

namespace precis::rt::cuda {

// ---- storage types ----------------------------------------------------------------------------

using half = __half;
using bf16 = __nv_bfloat16;

template <typename T> struct IsHalf : std::false_type {};
template <> struct IsHalf<half> : std::true_type {};
template <> struct IsHalf<bf16> : std::true_type {};
template <typename T> inline constexpr bool kIsFloat = std::is_floating_point_v<T> || IsHalf<T>::value;

// The arithmetic type of a storage type: 16-bit floats compute in float (FP32 accumulation).
template <typename T> struct ComputeOf { using type = T; };
template <> struct ComputeOf<half> { using type = float; };
template <> struct ComputeOf<bf16> { using type = float; };
template <typename T> using Compute = typename ComputeOf<T>::type;

template <typename T> __device__ __forceinline__ Compute<T> Load(T v) {
  if constexpr (std::is_same_v<T, half>) return __half2float(v);
  else if constexpr (std::is_same_v<T, bf16>) return __bfloat162float(v);
  else return v;
}
// Rounds to nearest even for 16-bit floats (as the CPU backend's FloatToHalf/FloatToBf16).
template <typename T, typename C> __device__ __forceinline__ T Store(C v) {
  if constexpr (std::is_same_v<T, half>) return __float2half_rn(float(v));
  else if constexpr (std::is_same_v<T, bf16>) return __float2bfloat16_rn(float(v));
  else return T(v);
}

// Calls fn(T{}) with T the device storage type of `dtype`; false when the dtype is not listed.
// Float: f32, f16, bf16, f64. Any: also the integers and bool (stored as uint8 0/1 -> bool).
template <typename Fn> bool DispatchFloat(DataType dtype, Fn&& fn) {
  switch (dtype) {
    case DataType::kF32: fn(float{}); return true;
    case DataType::kF16: fn(half{}); return true;
    case DataType::kBF16: fn(bf16{}); return true;
    case DataType::kF64: fn(double{}); return true;
    default: return false;
  }
}
template <typename Fn> bool DispatchInt(DataType dtype, Fn&& fn) {
  switch (dtype) {
    case DataType::kI8: fn(int8_t{}); return true;
    case DataType::kU8: fn(uint8_t{}); return true;
    case DataType::kI16: fn(int16_t{}); return true;
    case DataType::kU16: fn(uint16_t{}); return true;
    case DataType::kI32: fn(int32_t{}); return true;
    case DataType::kU32: fn(uint32_t{}); return true;
    case DataType::kI64: fn(int64_t{}); return true;
    case DataType::kU64: fn(uint64_t{}); return true;
    default: return false;
  }
}
template <typename Fn> bool DispatchAny(DataType dtype, Fn&& fn) {
  if (dtype == DataType::kBool) {
    fn(bool{});
    return true;
  }
  return DispatchFloat(dtype, fn) || DispatchInt(dtype, fn);
}
// Same element size: kernels that only move bytes dispatch on the size (1, 2, 4, 8).
template <typename Fn> bool DispatchBySize(size_t size, Fn&& fn) {
  switch (size) {
    case 1: fn(uint8_t{}); return true;
    case 2: fn(uint16_t{}); return true;
    case 4: fn(uint32_t{}); return true;
    case 8: fn(uint64_t{}); return true;
    default: return false;
  }
}

// ---- launches ---------------------------------------------------------------------------------

inline constexpr int kThreads = 256;

// Blocks for a grid-stride loop over n items (capped: the loop covers the rest).
inline unsigned Blocks(int64_t n, int threads = kThreads) {
  int64_t b = (n + threads - 1) / threads;
  if (b < 1) b = 1;
  if (b > 65535 * 8) b = 65535 * 8;
  return unsigned(b);
}

template <typename Fn> __global__ void ForEachKernel(int64_t n, Fn fn) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) fn(i);
}
// Runs fn(i) for i in [0, n) on the stream: the generic element-per-thread launch. fn is a
// __device__ lambda or functor copied by value (keep its captures small: pointers, sizes, an
// Indexer). Returns the launch status.
template <typename Fn> cudaError_t ForEach(int64_t n, cudaStream_t stream, Fn fn) {
  if (n <= 0) return cudaSuccess;
  ForEachKernel<<<Blocks(n), kThreads, 0, stream>>>(n, fn);
  return cudaGetLastError();
}

// Stores the first error code of a step (later ones are dropped).
__device__ __forceinline__ void RaiseError(int* flag, int code) { atomicCAS(flag, 0, code); }

// ---- strided index maps -----------------------------------------------------------------------

inline constexpr int kMaxRank = 8;

// Maps the linear index of an element of a dense tensor of shape `dims` to an offset through
// per-axis strides (0 on broadcast axes; any permutation for transposes; steps for slices).
// Build on the host with Make(), pass by value to the kernel.
struct Indexer {
  int rank = 0;
  int64_t dims[kMaxRank] = {};
  int64_t strides[kMaxRank] = {};
  int64_t base = 0;

  __host__ __device__ int64_t operator()(int64_t linear) const {
    int64_t offset = base;
    for (int d = rank - 1; d >= 0; --d) {
      int64_t q = linear / dims[d];
      offset += (linear - q * dims[d]) * strides[d];
      linear = q;
    }
    return offset;
  }
  // dims: the iteration shape; strides: per axis of dims. Fails for ranks above kMaxRank after
  // merging (MakeIndexer merges adjacent axes that are contiguous in the strides).
  static bool Make(const std::vector<int64_t>& dims, const std::vector<int64_t>& strides, int64_t base, Indexer* out);
};

// The strides with which an input of shape `in` is read when broadcast to `out` (numpy rules:
// right-aligned, size-1 axes get stride 0).
std::vector<int64_t> BroadcastStrides(const std::vector<int64_t>& in, const std::vector<int64_t>& out);

// ---- reductions -------------------------------------------------------------------------------

template <typename T> __device__ __forceinline__ T WarpSum(T v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
template <typename T> __device__ __forceinline__ T WarpMax(T v) {
  for (int o = 16; o > 0; o >>= 1) v = max(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}
// Sum over the block (blockDim.x a multiple of 32, at most 1024); every thread gets the result.
// `shared` holds 32 values; the call synchronizes the block.
template <typename T> __device__ T BlockSum(T v, T* shared) {
  int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = (blockDim.x + 31) >> 5;
  v = WarpSum(v);
  __syncthreads();
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  v = lane < warps ? shared[lane] : T(0);
  return WarpSum(v);
}
template <typename T> __device__ T BlockMax(T v, T* shared, T lowest) {
  int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = (blockDim.x + 31) >> 5;
  v = WarpMax(v);
  __syncthreads();
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  v = lane < warps ? shared[lane] : lowest;
  return WarpMax(v);
}

}  // namespace precis::rt::cuda
