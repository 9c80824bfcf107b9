// HalfWeightsGemm (convert_blocks.h): Y = A x W (+ bias) for FP32 A and a 16-bit W (constant
// weights, a training plan's working copies, an activation) read where it lies at every run, for
// CPUs with AVX2, FMA and F16C. The widened-block form of dnnl_matmul.cc
// widens all of W into the step's scratch at every run and hands it to oneDNN, which on AVX2
// (gemm:jit, plain weights) packs it again inside every run; on a 2-core AMD EPYC that made
// ViT-B/16's FP16 plan 1.7x slower than its FP32 plan. Here the conversion is part of the GEMM:
//
// - W is cut into panels of 16 columns. For each slice of kDepth (256) values of k, a thread
//   widens one panel's slice ([256][16] floats, 16 KiB, L1) and sweeps it with 6 x 16 register
//   tiles (12 AVX2 accumulators, FMA) over a block of rows of A packed as [rows / 6][K][6] (at most
//   240 rows and 2 MiB; the blocks of M balanced). W's 16-bit bytes are read once per block of
//   rows (once per run for up to 240 rows at K <= 2184), and no copy of W is kept.
// - Within a block, panels go in groups whose block of Y (about 256 KiB) stays in L2 while the
//   slices of k go by; rows of W lie N values apart, so the lines of the slice after next are
//   prefetched while the tiles run.
// - Threads take contiguous ranges of panels, so each writes its own columns of Y. Each packs the
//   block of A for itself (the same copy twice on 2 threads: 197 x 768 floats, against 0.9 GFLOP
//   of products; sharing it would cost a barrier per block).
// - Accumulation is FP32: bias first (or 0), then k in order, one FMA per term (the tests state
//   the bound).
// - A and Y may be 16-bit as well (an FP16 plan's activations): A is widened as its rows are packed
//   (exact), and a 16-bit Y is accumulated in FP32 in the thread's block of Y (the L2 group above)
//   and rounded to nearest even once, when the group's last slice of k is done. So no FP32 copy of
//   A or Y goes through memory, and the result has the bits of the FP32 product rounded once.
#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "runtime/base/cpu_features.h"
#include "runtime/base/half.h"
#include "runtime/base/half_array.h"
#include "runtime/cpu/kernels/convert_blocks.h"
#include "runtime/cpu/kernels/fast_tile.h"
#include "runtime/cpu/kernels/fast_util.h"

namespace precis::rt {
namespace {

constexpr int64_t kRows = 6;                     // rows of A per register tile
constexpr int64_t kCols = 16;                    // columns of W per panel and tile (two 8-float vectors)
constexpr int64_t kDepth = 256;                  // k per slice: a widened panel slice is 16 KiB (L1)
constexpr int64_t kMaxRowBlock = 240;            // rows of A per block
constexpr int64_t kPackedBytes = 2 << 20;        // packed rows of A per thread, all of K
constexpr int64_t kGroupBytes = 256 * 1024;      // Y of a block's column group (L2)

// Rows per block: at most kMaxRowBlock and what kPackedBytes holds at this K (a multiple of 6),
// the blocks of M balanced.
int64_t RowBlock(int64_t M, int64_t K) {
  const int64_t most = std::clamp<int64_t>(kPackedBytes / (4 * std::max<int64_t>(K, 1)) / kRows * kRows, kRows, kMaxRowBlock);
  const int64_t blocks = (M + most - 1) / most;
  return std::min(most, ((M + blocks - 1) / blocks + kRows - 1) / kRows * kRows);
}

// Panels per group: their block of Y (rows x 16 columns each) about kGroupBytes, at least one.
int64_t GroupPanels(int64_t rows) { return std::max<int64_t>(1, kGroupBytes / (rows * kCols * 4)); }

// Floats of a thread's FP32 block of Y (a 16-bit Y): one group's columns for any block of rows
// (rows x GroupPanels(rows) x 16 is at most the larger of the two bounds).
int64_t YBlockFloats(int64_t M, int64_t K) { return (std::max(kGroupBytes / 4, RowBlock(M, K) * kCols) + 15) / 16 * 16; }

// Floats of scratch per thread: one widened slice, a block of rows of A packed over all of K, a
// block of Y; a multiple of 16 (each thread's part stays 64-byte aligned).
int64_t ThreadFloats(int64_t M, int64_t K) {
  return kDepth * kCols + (RowBlock(M, K) * std::max<int64_t>(K, 1) + 15) / 16 * 16 + YBlockFloats(M, K);
}

// One 6 x 16 tile: y[r][j] (+)= sum_k a[k][r] * b[k][j] for r < rows, j < cols. `a` is a packed
// panel [depth][6], `b` a widened slice [depth][16]. The accumulators start from y (`from_y`, a
// later slice of k), else from bias[j] (when not null), else 0.
template <bool kFull>
__attribute__((target("avx2,fma"))) void Tile(const float* a, const float* b, int64_t depth, const float* bias, bool from_y, float* y,
                                              int64_t ldy, int64_t rows, int64_t cols) {
  __m256i m0, m1;
  fast::ColumnMasks(cols, &m0, &m1);
  __m256 b_lo = _mm256_setzero_ps(), b_hi = _mm256_setzero_ps();
  if (bias && !from_y) fast::Load16<kFull>(bias, m0, m1, &b_lo, &b_hi);
  fast::Acc6x16 acc;
  for (int64_t r = 0; r < kRows; ++r) {
    __m256 lo = b_lo, hi = b_hi;
    if (from_y && r < rows) fast::Load16<kFull>(y + r * ldy, m0, m1, &lo, &hi);
    fast::SetRow(acc, r, lo, hi);
  }
  fast::Accumulate6x16<true>(acc, a, b, kCols, depth, m0, m1);  // the slice is padded with zero columns
  fast::Store6x16<kFull>(acc, y, ldy, rows, m0, m1);
}

// Eight 16-bit values at p widened to floats.
__attribute__((target("avx2,f16c"))) inline __m256 Widen8(bool f16, const uint16_t* p) {
  const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  if (f16) return _mm256_cvtph_ps(h);
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}

inline float Widen1(bool f16, uint16_t v) { return f16 ? HalfToFloat(v) : Bf16ToFloat(v); }

// out[k][j] = W(k0 + k, n0 + j) for k < depth, j < 16 (0 past `cols`): W [K, N] row-major, or
// [N, K] when `trans`.
__attribute__((target("avx2,f16c"))) void WidenSlice(bool f16, const uint16_t* w, int64_t K, int64_t N, bool trans, int64_t k0,
                                                     int64_t depth, int64_t n0, int64_t cols, float* out) {
  if (!trans) {
    const uint16_t* from = w + k0 * N + n0;
    if (cols == kCols) {
      for (int64_t k = 0; k < depth; ++k, from += N) {
        _mm256_store_ps(out + k * kCols, Widen8(f16, from));
        _mm256_store_ps(out + k * kCols + 8, Widen8(f16, from + 8));
      }
    } else {
      for (int64_t k = 0; k < depth; ++k, from += N) {
        int64_t j = 0;
        for (; j < cols; ++j) out[k * kCols + j] = Widen1(f16, from[j]);
        for (; j < kCols; ++j) out[k * kCols + j] = 0.0f;
      }
    }
    return;
  }
  // W [N, K]: row n0 + j holds column j of the panel, contiguous in k. Eight values of k of each
  // row at a time, transposed through a small buffer.
  int64_t k = 0;
  for (; k + 8 <= depth; k += 8) {
    alignas(32) float t[kCols][8];
    for (int64_t j = 0; j < kCols; ++j) {
      if (j < cols) _mm256_store_ps(t[j], Widen8(f16, w + (n0 + j) * K + k0 + k));
      else _mm256_store_ps(t[j], _mm256_setzero_ps());
    }
    for (int64_t i = 0; i < 8; ++i)
      for (int64_t j = 0; j < kCols; ++j) out[(k + i) * kCols + j] = t[j][i];
  }
  for (; k < depth; ++k)
    for (int64_t j = 0; j < kCols; ++j) out[k * kCols + j] = j < cols ? Widen1(f16, w[(n0 + j) * K + k0 + k]) : 0.0f;
}

// Element i of A (FP32, FP16 or BF16) as a float, and eight from i on.
__attribute__((target("avx2,f16c"))) inline float Load1(DataType t, const void* a, int64_t i) {
  if (t == DataType::kF32) return static_cast<const float*>(a)[i];
  const uint16_t v = static_cast<const uint16_t*>(a)[i];
  return t == DataType::kF16 ? _cvtsh_ss(v) : Bf16ToFloat(v);
}
__attribute__((target("avx2,f16c"))) inline __m256 Load8(DataType t, const void* a, int64_t i) {
  if (t == DataType::kF32) return _mm256_loadu_ps(static_cast<const float*>(a) + i);
  return Widen8(t == DataType::kF16, static_cast<const uint16_t*>(a) + i);
}

// Rows m0 .. m0 + rows of A [M, K] (FP32, FP16 or BF16) as FP32 [ceil(rows / 6)][K][6] (zero rows
// at the end): a tile's rows for the slice at k0 are the depth x 6 floats at t * K * 6 + k0 * 6.
// Eight values of k of the six rows at a time, transposed through a small buffer, so the panel is
// written in order.
__attribute__((target("avx2,f16c"))) void PackRows(DataType atype, const void* a, int64_t K, int64_t m0, int64_t rows, float* out) {
  for (int64_t t = 0; t * kRows < rows; ++t) {
    float* panel = out + t * K * kRows;
    const int64_t have = std::min(kRows, rows - t * kRows), first = (m0 + t * kRows) * K;
    int64_t k = 0;
    for (; k + 8 <= K; k += 8) {
      alignas(32) float part[kRows][8];
      for (int64_t r = 0; r < kRows; ++r) _mm256_store_ps(part[r], r < have ? Load8(atype, a, first + r * K + k) : _mm256_setzero_ps());
      for (int64_t i = 0; i < 8; ++i)
        for (int64_t r = 0; r < kRows; ++r) panel[(k + i) * kRows + r] = part[r][i];
    }
    for (; k < K; ++k)
      for (int64_t r = 0; r < kRows; ++r) panel[k * kRows + r] = r < have ? Load1(atype, a, first + r * K + k) : 0.0f;
  }
}

// Rows [m0, m0 + rows) and columns [n0, n1) of the FP32 block `from` (row stride ld) rounded into
// the 16-bit Y.
void NarrowRows(DataType ytype, const float* from, int64_t ld, int64_t rows, int64_t n0, int64_t n1, uint16_t* y, int64_t ldy, int64_t m0) {
  for (int64_t r = 0; r < rows; ++r) {
    uint16_t* to = y + (m0 + r) * ldy + n0;
    if (ytype == DataType::kF16) FloatToHalfArray(from + r * ld, to, size_t(n1 - n0));
    else FloatToBf16Array(from + r * ld, to, size_t(n1 - n0));
  }
}

// Panels [p0, p1) of Y for all rows, with this thread's scratch. Per block of rows: A packed once;
// then groups of panels whose Y block stays in L2 while the slices of k go by (for a 16-bit Y, in
// the thread's FP32 block, rounded into Y when the group is done).
void Panels(bool f16, DataType atype, const void* a, int64_t M, int64_t K, const uint16_t* w, int64_t N, bool trans_b, const float* bias,
            DataType ytype, void* y, int64_t ldy, int64_t p0, int64_t p1, float* scratch) {
  const int64_t block = RowBlock(M, K);
  float* slice = scratch;  // 64-byte aligned (the slice's vector stores need 32)
  float* packed = scratch + kDepth * kCols;
  float* yblock = packed + (block * K + 15) / 16 * 16;
  const bool wide_y = ytype == DataType::kF32;
  for (int64_t m0 = 0; m0 < M; m0 += block) {
    const int64_t rows = std::min(block, M - m0), tiles = (rows + kRows - 1) / kRows;
    PackRows(atype, a, K, m0, rows, packed);
    const int64_t group = GroupPanels(rows);
    for (int64_t g0 = p0; g0 < p1; g0 += group) {
      const int64_t g1 = std::min(p1, g0 + group);
      // Where the group's tiles accumulate: Y itself, or the thread's FP32 block (columns from g0).
      float* yg = wide_y ? static_cast<float*>(y) + m0 * ldy + g0 * kCols : yblock;
      const int64_t ldg = wide_y ? ldy : (g1 - g0) * kCols;
      for (int64_t k0 = 0; k0 < K; k0 += kDepth) {
        const int64_t depth = std::min(kDepth, K - k0);
        for (int64_t p = g0; p < g1; ++p) {
          const int64_t n0 = p * kCols, cols = std::min(kCols, N - n0);
          WidenSlice(f16, w, K, N, trans_b, k0, depth, n0, cols, slice);
          // The lines of the slice after the next one (the next panel shares most of this one's
          // lines), fetched while the tiles run: W's rows lie N values apart, too far for the
          // hardware prefetchers, so a plain WidenSlice waits on each row.
          const int64_t ahead = p + 2 < g1 ? p + 2 : -1, per_tile = (depth + tiles - 1) / tiles;
          const float* b = bias ? bias + n0 : nullptr;
          for (int64_t t = 0; t < tiles; ++t) {
            if (ahead >= 0 && !trans_b)
              for (int64_t k = t * per_tile; k < std::min(depth, (t + 1) * per_tile); ++k)
                _mm_prefetch(reinterpret_cast<const char*>(w + (k0 + k) * N + ahead * kCols), _MM_HINT_T0);
            float* yt = yg + t * kRows * ldg + (p - g0) * kCols;
            const float* at = packed + t * K * kRows + k0 * kRows;
            const int64_t r = std::min(kRows, rows - t * kRows);
            if (cols == kCols) Tile<true>(at, slice, depth, b, k0 > 0, yt, ldg, r, cols);
            else Tile<false>(at, slice, depth, b, k0 > 0, yt, ldg, r, cols);
          }
        }
      }
      if (!wide_y) NarrowRows(ytype, yblock, ldg, rows, g0 * kCols, std::min(N, g1 * kCols), static_cast<uint16_t*>(y), ldy, m0);
    }
  }
}

}  // namespace

bool HalfWeightsGemmAvailable() {
  const CpuFeatures& f = HostCpuFeatures();
  return f.avx2 && f.f16c && __builtin_cpu_supports("fma");
}

int64_t HalfWeightsGemmScratchBytes(int64_t M, int64_t K, int threads) {
  return int64_t(std::max(threads, 1)) * ThreadFloats(M, K) * int64_t(sizeof(float));
}

void HalfWeightsGemm(DataType wtype, DataType atype, const void* a, int64_t M, int64_t K, const uint8_t* w, int64_t N, bool trans_b,
                     const float* bias, DataType ytype, void* y, int64_t ldy, uint8_t* scratch, int threads) {
  if (M <= 0 || N <= 0) return;
  if (K <= 0) {  // an empty sum: the bias, or 0
    std::vector<float> row(static_cast<size_t>(N));
    for (int64_t n = 0; n < N; ++n) row[size_t(n)] = bias ? bias[n] : 0.0f;
    for (int64_t m = 0; m < M; ++m) {
      if (ytype == DataType::kF32) std::memcpy(static_cast<float*>(y) + m * ldy, row.data(), size_t(N) * 4);
      else NarrowRows(ytype, row.data(), 0, 1, 0, N, static_cast<uint16_t*>(y), ldy, m);
    }
    return;
  }
  const bool f16 = wtype == DataType::kF16;
  const uint16_t* wb = reinterpret_cast<const uint16_t*>(w);
  const int64_t panels = (N + kCols - 1) / kCols;
  // A thread's part of the scratch: its number in ParallelFor's region, or the first part where
  // ParallelFor runs the panels here (called from another region, e.g. one batch per thread,
  // omp_get_thread_num() would name the outer thread).
  const int level = omp_get_level();
  fast::ParallelFor(panels, M * K * kCols, threads, [&](int64_t p0, int64_t p1) {
    const int slot = omp_get_level() > level ? omp_get_thread_num() : 0;
    float* mine = reinterpret_cast<float*>(scratch) + ThreadFloats(M, K) * slot;
    Panels(f16, atype, a, M, K, wb, N, trans_b, bias, ytype, y, ldy, p0, p1, mine);
  });
}

}  // namespace precis::rt
