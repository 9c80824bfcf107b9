// Device helpers of the CUDA nn family: the launch hook, host-and-device loads and stores,
// accumulator types (as the CPU reference kernels use them) and the fused activations.
// Include from nn*.cu only.
//
// Per-element work is a functor with a __host__ __device__ operator(), launched through
// NnLaunch: a test build without a GPU defines PRECIS_NN_HOST_EMULATION and runs the same
// functors on the host (tests/cuda/emulation/nn_harness.cc, with cuBLASLt and cuDNN emulated),
// so that the index math can be compared with the CPU reference kernels on any machine.
#pragma once

#include <algorithm>
#include <cmath>
#include <type_traits>

#include "runtime/cuda/device_util.cuh"
#include "runtime/cuda/kernels/nn_common.h"

#define PRECIS_NN_HD __host__ __device__ __forceinline__

namespace precis::rt::cuda {

// Runs fn(i) for i in [0, n) on the stream (ForEach), or on the host under emulation.
template <typename Fn> cudaError_t NnLaunch(int64_t n, cudaStream_t stream, const Fn& fn) {
#ifdef PRECIS_NN_HOST_EMULATION
  (void)stream;
  for (int64_t i = 0; i < n; ++i) fn(i);
  return cudaSuccess;
#else
  return ForEach(n, stream, fn);
#endif
}

// Load/Store of device_util.cuh, callable on the host too.
template <typename T> PRECIS_NN_HD Compute<T> LoadN(T v) {
  if constexpr (std::is_same_v<T, half>) return __half2float(v);
  else if constexpr (std::is_same_v<T, bf16>) return __bfloat162float(v);
  else return v;
}
template <typename T, typename C> PRECIS_NN_HD T StoreN(C v) {
  if constexpr (std::is_same_v<T, half>) return __float2half_rn(float(v));
  else if constexpr (std::is_same_v<T, bf16>) return __float2bfloat16_rn(float(v));
  else return T(v);
}

// Float accumulator of the CPU's matrix products, convolutions and pools: double for f64,
// float for the other floats.
template <typename T> using FloatAcc = std::conditional_t<std::is_same_v<T, double>, double, float>;

template <typename C> PRECIS_NN_HD C ApplyActivation(C v, int activation) {
  switch (activation) {
    case int(Activation::kRelu): return v > C(0) ? v : C(0);  // the Relu kernels' rule: NaN gives 0
    case int(Activation::kGelu):
      if constexpr (std::is_same_v<C, double>) return 0.5 * v * (1.0 + erf(v * 0.70710678118654752440));
      else return 0.5f * v * (1.0f + erff(v * 0.70710678118654752440f));
    case int(Activation::kGeluTanh):
      if constexpr (std::is_same_v<C, double>) return 0.5 * v * (1.0 + tanh(0.79788456080286535588 * (v + 0.044715 * v * v * v)));
      else return 0.5f * v * (1.0f + tanhf(0.79788456080286535588f * (v + 0.044715f * v * v * v)));
    default: return v;
  }
}

// Applies `activation` in place to n elements of a float tensor (a pass after a library call
// that could not fuse it).
cudaError_t ActivateInPlace(DataType dtype, void* data, int64_t n, Activation activation, cudaStream_t stream);

}  // namespace precis::rt::cuda
