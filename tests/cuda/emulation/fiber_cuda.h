// A host emulation of the CUDA runtime features that block- and warp-cooperative kernels use, for
// checking them without a GPU: the CUDA headers (cuda_runtime.h, cuda_fp16.h, ...) are replaced
// by forwarders to this file, and launches `k<<<g, b, s, st>>>(args)` in copies of the sources are
// rewritten to `emu::Launch(k, g, b, s, st)(args)` (fiber_rewrite.py).
//
// Blocks run one after another; the threads of a block are cooperative fibers on one OS thread
// that switch only at __syncthreads and warp shuffles, in a fresh random order at every round,
// so results that depend on which thread runs first show up as mismatches. A barrier that cannot
// complete (a shuffle or __syncthreads not reached by every thread: divergence) aborts with a
// message. Shared memory starts as garbage. Device pointers are host pointers. x86-64 only (the
// fiber switch is a few lines of assembly). Not emulated: memory races outside barriers, atomics
// across blocks, real device math (host libm is used), launch limits other than 1024 threads.
#pragma once
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <tuple>
#include <utility>
#include <vector>
#include <limits>
#include <algorithm>
#include "runtime/base/half.h"

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __align__(n) alignas(n)
#define __shared__ static
#define __restrict__

enum cudaError_t { cudaSuccess = 0, cudaErrorInvalidConfiguration = 9, cudaErrorUnknown = 999 };
enum cublasStatus_t { CUBLAS_STATUS_SUCCESS = 0 };
enum cudnnStatus_t { CUDNN_STATUS_SUCCESS = 0 };
enum cudaMemcpyKind { cudaMemcpyHostToDevice = 1, cudaMemcpyDeviceToHost = 2 };
typedef struct CUstream_st* cudaStream_t;
typedef struct cublasLtContext* cublasLtHandle_t;
typedef struct cudnnContext* cudnnHandle_t;
struct cudaDeviceProp {
  char name[256] = "emulated";
  int multiProcessorCount = 132;
  int maxThreadsPerMultiProcessor = 2048;
};
struct dim3 {
  unsigned x = 1, y = 1, z = 1;
  dim3(unsigned a = 1, unsigned b = 1, unsigned c = 1) : x(a), y(b), z(c) {}
};
extern dim3 threadIdx, blockIdx, blockDim, gridDim;

namespace emu {
extern cudaError_t last_error;
void BlockBarrier();
void WarpBarrier();
void Exchange(uint64_t v, int src_lane, uint64_t* out);  // warp-wide: write v, read lane src
unsigned char* DynamicShared();
void RunBlock(dim3 grid, dim3 block, dim3 bidx, size_t smem, void (*body)(void*), void* arg);

template <typename... P>
struct Launcher {
  void (*fn)(P...);
  dim3 grid, block;
  size_t smem;
  template <typename... A>
  void operator()(A&&... a) {
    if (block.x == 0 || block.x > 1024 || grid.x == 0) {
      std::fprintf(stderr, "emu: bad launch config grid %u block %u\n", grid.x, block.x);
      last_error = cudaErrorInvalidConfiguration;
      return;
    }
    std::tuple<std::decay_t<P>...> params(std::forward<A>(a)...);
    struct Ctx { void (*fn)(P...); std::tuple<std::decay_t<P>...>* params; } ctx{fn, &params};
    for (unsigned b = 0; b < grid.x; ++b)
      RunBlock(grid, block, dim3(b), smem, [](void* c) {
        Ctx* k = static_cast<Ctx*>(c);
        std::apply(k->fn, *k->params);  // every thread gets its own copy of the parameters
      }, &ctx);
    last_error = cudaSuccess;
  }
};
template <typename... P>
Launcher<P...> Launch(void (*fn)(P...), dim3 grid, dim3 block, size_t smem = 0, cudaStream_t = nullptr) {
  return Launcher<P...>{fn, grid, block, smem};
}
}  // namespace emu

// Dynamic shared memory (`extern __shared__ T name[]`): rewritten to this by fiber_rewrite.py.
#define PRECIS_EMU_SHARED(name) unsigned char* name = emu::DynamicShared()

inline void __syncthreads() { emu::BlockBarrier(); }
template <typename T>
T __shfl_xor_sync(unsigned, T v, int lane_mask, int = 32) {
  static_assert(sizeof(T) <= 8);
  uint64_t w = 0, r = 0;
  std::memcpy(&w, &v, sizeof(T));
  emu::Exchange(w, int(threadIdx.x & 31) ^ lane_mask, &r);
  T out;
  std::memcpy(&out, &r, sizeof(T));
  return out;
}
template <typename T>
T __shfl_up_sync(unsigned, T v, unsigned delta, int = 32) {
  uint64_t w = 0, r = 0;
  std::memcpy(&w, &v, sizeof(T));
  int lane = int(threadIdx.x & 31);
  emu::Exchange(w, lane >= int(delta) ? lane - int(delta) : lane, &r);
  T out;
  std::memcpy(&out, &r, sizeof(T));
  return out;
}
inline int atomicCAS(int* p, int cmp, int val) {
  int old = *p;
  if (old == cmp) *p = val;
  return old;
}

inline cudaError_t cudaGetLastError() { cudaError_t e = emu::last_error; emu::last_error = cudaSuccess; return e; }
inline const char* cudaGetErrorName(cudaError_t) { return "cudaErrorEmu"; }
inline const char* cudaGetErrorString(cudaError_t) { return "emulated error"; }
inline cudaError_t cudaMalloc(void** p, size_t n) { *p = std::malloc(n); return cudaSuccess; }
inline cudaError_t cudaFree(void* p) { std::free(p); return cudaSuccess; }
inline cudaError_t cudaMemcpy(void* d, const void* s, size_t n, cudaMemcpyKind) { std::memcpy(d, s, n); return cudaSuccess; }
inline cudaError_t cudaMemcpyAsync(void* d, const void* s, size_t n, cudaMemcpyKind, cudaStream_t) { std::memcpy(d, s, n); return cudaSuccess; }
inline cudaError_t cudaStreamSynchronize(cudaStream_t) { return cudaSuccess; }  // launches run to completion
inline const char* cublasLtGetStatusName(cublasStatus_t) { return "emu"; }
inline const char* cublasLtGetStatusString(cublasStatus_t) { return "emu"; }
inline const char* cudnnGetErrorString(cudnnStatus_t) { return "emu"; }

// 16-bit floats.
struct __half {
  uint16_t bits = 0;
};
struct __nv_bfloat16 {
  uint16_t bits = 0;
};
inline float __half2float(__half h) { return precis::HalfToFloat(h.bits); }
inline __half __float2half_rn(float f) { return __half{precis::FloatToHalf(f)}; }
inline float __bfloat162float(__nv_bfloat16 h) { return precis::Bf16ToFloat(h.bits); }
inline __nv_bfloat16 __float2bfloat16_rn(float f) { return __nv_bfloat16{precis::FloatToBf16(f)}; }

using std::isfinite;
using std::isinf;
using std::isnan;
