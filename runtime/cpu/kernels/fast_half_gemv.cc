// HalfWeightsGemv (convert_blocks.h): Y = A x W (+ bias) for a few rows of A and 16-bit constant
// weights W, reading W once per run in its stored 16 bits. A widened-block matmul (dnnl_matmul.cc)
// converts and reorders all of W at every run before oneDNN reads it again, which at one row costs
// several times the FP32 matmul (ResNet-50's 2048 x 1000 classifier: 2.2 ms against 0.4). Here each
// thread widens short pieces of W into a buffer that stays in L1 and multiplies them at once, so
// the run is bound by reading W's 16-bit bytes, half of what an FP32 plan reads.
// Accumulation is FP32 (16 independent partial sums per dot product, added at the end), as in the
// widened form; the order of the additions differs from oneDNN's.
#include <algorithm>
#include <cstring>

#include "runtime/base/half_array.h"
#include "runtime/cpu/kernels/convert_blocks.h"
#include "runtime/cpu/kernels/fast_math.h"
#include "runtime/cpu/kernels/fast_util.h"

namespace precis::rt {
namespace {

constexpr int64_t kPiece = 4096;  // elements of W widened at a time (16 KiB of floats)

void Widen(DataType t, const uint16_t* from, float* to, int64_t n) {
  if (t == DataType::kF16) HalfToFloatArray(from, to, size_t(n));
  else Bf16ToFloatArray(from, to, size_t(n));
}

}  // namespace

int64_t HalfWeightsGemvScratchBytes(int64_t M, int threads) {
  // Per thread: one widened piece of W and M x kPiece partial rows of Y.
  return int64_t(std::max(threads, 1)) * (kPiece + M * kPiece) * int64_t(sizeof(float));
}

void HalfWeightsGemv(DataType wtype, const float* a, int64_t M, int64_t K, const uint8_t* w, int64_t N, bool trans_b,
                     const float* bias, float* y, int64_t ldy, uint8_t* scratch, int threads) {
  const uint16_t* wb = reinterpret_cast<const uint16_t*>(w);
  const int64_t per_thread = kPiece + M * kPiece;
  if (trans_b) {
    // W [N, K]: Y[m, n] = dot(A[m, :], W[n, :]), rows of W split among the threads.
    fast::ParallelFor(N, M * K, threads, [&](int64_t begin, int64_t end) {
      float* buf = reinterpret_cast<float*>(scratch) + per_thread * omp_get_thread_num();
      float* sums = buf + kPiece;
      for (int64_t n = begin; n < end; ++n) {
        std::fill(sums, sums + M, 0.0f);
        for (int64_t k0 = 0; k0 < K; k0 += kPiece) {
          const int64_t len = std::min(kPiece, K - k0);
          Widen(wtype, wb + n * K + k0, buf, len);
          for (int64_t m = 0; m < M; ++m) sums[m] += fast::DotF32(a + m * K + k0, buf, len);
        }
        for (int64_t m = 0; m < M; ++m) y[m * ldy + n] = bias ? sums[m] + bias[n] : sums[m];
      }
    });
    return;
  }
  // W [K, N]: Y[m, n0:n1] = sum_k A[m, k] * W[k, n0:n1] over column pieces split among threads.
  // Pieces of ceil(N / threads) columns rounded up to 64 (every thread gets columns), at most kPiece.
  const int64_t per_thread_cols = (N + std::max(threads, 1) - 1) / std::max(threads, 1);
  const int64_t cols = std::clamp<int64_t>((per_thread_cols + 63) / 64 * 64, 64, kPiece);
  const int64_t chunks = (N + cols - 1) / cols;
  fast::ParallelFor(chunks, M * K * cols, threads, [&](int64_t begin, int64_t end) {
    float* buf = reinterpret_cast<float*>(scratch) + per_thread * omp_get_thread_num();
    float* acc = buf + kPiece;
    for (int64_t c = begin; c < end; ++c) {
      const int64_t n0 = c * cols, len = std::min(cols, N - n0);
      std::fill(acc, acc + M * len, 0.0f);
      for (int64_t k = 0; k < K; ++k) {
        Widen(wtype, wb + k * N + n0, buf, len);
        for (int64_t m = 0; m < M; ++m) fast::AxpyF32(acc + m * len, a[m * K + k], buf, len);
      }
      for (int64_t m = 0; m < M; ++m)
        for (int64_t i = 0; i < len; ++i) y[m * ldy + n0 + i] = bias ? acc[m * len + i] + bias[n0 + i] : acc[m * len + i];
    }
  });
}

}  // namespace precis::rt
