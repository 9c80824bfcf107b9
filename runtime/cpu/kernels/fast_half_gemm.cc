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
//
// HalfWeightsConv is the same product for a channels-last convolution: A is the implicit matrix of
// windows, packed straight from X (PackWindowRows), W is [M, KH x KW x C] (trans_b), a fused Relu
// or Clip is applied to the FP32 sums, and threads split the rows or the panels, whichever
// converts fewer values (no FP32 copy of the weights at load: the widened convolutions keep one).
#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "runtime/base/cpu_features.h"
#include "runtime/base/half.h"
#include "runtime/base/half_array.h"
#include "runtime/cpu/kernels/convert_blocks.h"
#include "runtime/cpu/kernels/fast_half_load.h"
#include "runtime/cpu/kernels/fast_tile.h"
#include "runtime/cpu/kernels/fast_util.h"

namespace precis::rt {
namespace {

using fast::Load1;
using fast::Load8;
using fast::Widen1;
using fast::Widen8;

constexpr int64_t kRows = 6;                     // rows of A per register tile
constexpr int64_t kCols = 16;                    // columns of W per panel and tile (two 8-float vectors)
constexpr int64_t kDepth = 256;                  // k per slice: a widened panel slice is 16 KiB (L1)
constexpr int64_t kMaxRowBlock = 240;            // rows of A per block
constexpr int64_t kPackedBytes = 2 << 20;        // packed rows of A per thread, all of K
constexpr int64_t kGroupBytes = 256 * 1024;      // Y of a block's column group (L2)

// Rows of A per block at this K: at most kMaxRowBlock and what kPackedBytes holds (a multiple
// of 6).
int64_t MostRows(int64_t K) {
  return std::clamp<int64_t>(kPackedBytes / (4 * std::max<int64_t>(K, 1)) / kRows * kRows, kRows, kMaxRowBlock);
}

// Rows per block for M rows: at most MostRows(K), the blocks of M balanced.
int64_t RowBlock(int64_t M, int64_t K) {
  const int64_t most = MostRows(K);
  const int64_t blocks = (M + most - 1) / most;
  return std::min(most, ((M + blocks - 1) / blocks + kRows - 1) / kRows * kRows);
}

// Panels per group: their block of Y (rows x 16 columns each) about kGroupBytes, at least one.
int64_t GroupPanels(int64_t rows) { return std::max<int64_t>(1, kGroupBytes / (rows * kCols * 4)); }

// Floats of a thread's FP32 block of Y (a 16-bit Y): one group's columns for blocks of up to
// `block` rows (rows x GroupPanels(rows) x 16 is at most the larger of the two bounds).
int64_t YBlockFloats(int64_t block) { return (std::max(kGroupBytes / 4, block * kCols) + 15) / 16 * 16; }

// Floats of a block of rows of A packed over all of K, and the two the packing writes past its
// end (PackRuns), rounded up to 16.
constexpr int64_t kSpill = 2;
int64_t PackedFloats(int64_t block, int64_t K) { return (block * std::max<int64_t>(K, 1) + kSpill + 15) / 16 * 16; }

// Floats of scratch per thread for blocks of up to `block` rows: one widened slice, a block of
// rows of A packed over all of K, a block of Y; a multiple of 16 (each thread's part stays
// 64-byte aligned).
int64_t ThreadFloats(int64_t block, int64_t K) {
  return kDepth * kCols + PackedFloats(block, K) + YBlockFloats(block);
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

// v[i][j] becomes v[j][i] (an 8 x 8 block of floats).
__attribute__((target("avx2"), always_inline)) inline void Transpose8(__m256 v[8]) {
  const __m256 t0 = _mm256_unpacklo_ps(v[0], v[1]), t1 = _mm256_unpackhi_ps(v[0], v[1]);
  const __m256 t2 = _mm256_unpacklo_ps(v[2], v[3]), t3 = _mm256_unpackhi_ps(v[2], v[3]);
  const __m256 t4 = _mm256_unpacklo_ps(v[4], v[5]), t5 = _mm256_unpackhi_ps(v[4], v[5]);
  const __m256 t6 = _mm256_unpacklo_ps(v[6], v[7]), t7 = _mm256_unpackhi_ps(v[6], v[7]);
  const __m256 s0 = _mm256_shuffle_ps(t0, t2, _MM_SHUFFLE(1, 0, 1, 0)), s1 = _mm256_shuffle_ps(t0, t2, _MM_SHUFFLE(3, 2, 3, 2));
  const __m256 s2 = _mm256_shuffle_ps(t1, t3, _MM_SHUFFLE(1, 0, 1, 0)), s3 = _mm256_shuffle_ps(t1, t3, _MM_SHUFFLE(3, 2, 3, 2));
  const __m256 s4 = _mm256_shuffle_ps(t4, t6, _MM_SHUFFLE(1, 0, 1, 0)), s5 = _mm256_shuffle_ps(t4, t6, _MM_SHUFFLE(3, 2, 3, 2));
  const __m256 s6 = _mm256_shuffle_ps(t5, t7, _MM_SHUFFLE(1, 0, 1, 0)), s7 = _mm256_shuffle_ps(t5, t7, _MM_SHUFFLE(3, 2, 3, 2));
  v[0] = _mm256_permute2f128_ps(s0, s4, 0x20), v[1] = _mm256_permute2f128_ps(s1, s5, 0x20);
  v[2] = _mm256_permute2f128_ps(s2, s6, 0x20), v[3] = _mm256_permute2f128_ps(s3, s7, 0x20);
  v[4] = _mm256_permute2f128_ps(s0, s4, 0x31), v[5] = _mm256_permute2f128_ps(s1, s5, 0x31);
  v[6] = _mm256_permute2f128_ps(s2, s6, 0x31), v[7] = _mm256_permute2f128_ps(s3, s7, 0x31);
}

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
  // W [N, K]: row n0 + j holds column j of the panel, contiguous in k. Eight values of k of eight
  // rows at a time, transposed in registers.
  int64_t k = 0;
  for (; k + 8 <= depth; k += 8) {
    for (int64_t half = 0; half < kCols; half += 8) {
      __m256 v[8];
      for (int64_t i = 0; i < 8; ++i)
        v[i] = half + i < cols ? Widen8(f16, w + (n0 + half + i) * K + k0 + k) : _mm256_setzero_ps();
      Transpose8(v);
      for (int64_t i = 0; i < 8; ++i) _mm256_store_ps(out + (k + i) * kCols + half, v[i]);
    }
  }
  for (; k < depth; ++k)
    for (int64_t j = 0; j < kCols; ++j) out[k * kCols + j] = j < cols ? Widen1(f16, w[(n0 + j) * K + k0 + k]) : 0.0f;
}

// Values j .. j + 8 of a run of A (FP32, FP16 or BF16) whose values [lo, hi) lie at base + j and
// the rest are zero; A has `numel` values. Loaded at once where all eight lie inside [lo, hi);
// zero where none does; else loaded at once where the eight lie inside A, the others masked to
// zero (bits, so NaN goes too), or through a zeroed buffer at A's ends (nothing outside A is read).
__attribute__((target("avx2,f16c"))) inline __m256 RunChunk(DataType t, const void* a, int64_t numel, int64_t base, int64_t lo, int64_t hi,
                                                            int64_t j) {
  if (j >= lo && j + 8 <= hi) return Load8(t, a, base + j);
  const int64_t from = std::max(j, lo), to = std::min(j + 8, hi);
  if (from >= to) return _mm256_setzero_ps();
  if (base + j >= 0 && base + j + 8 <= numel && j + 8 < (int64_t(1) << 31)) {  // lanes compared as int32
    const __m256i lane = _mm256_add_epi32(_mm256_set1_epi32(int32_t(j)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    const __m256i keep = _mm256_andnot_si256(_mm256_cmpgt_epi32(_mm256_set1_epi32(int32_t(lo)), lane),
                                             _mm256_cmpgt_epi32(_mm256_set1_epi32(int32_t(hi)), lane));
    return _mm256_and_ps(Load8(t, a, base + j), _mm256_castsi256_ps(keep));
  }
  const int64_t size = t == DataType::kF32 ? 4 : 2;
  alignas(32) uint8_t buffer[32] = {};
  std::memcpy(buffer + (from - j) * size, static_cast<const uint8_t*>(a) + (base + from) * size, size_t((to - from) * size));
  return Load8(t, buffer, 0);
}

// Six runs of `len` values of A (one per row of a tile; run r's values [lo[r], hi[r]) at base[r]
// + j, zero elsewhere) as FP32 out[j * 6 + r]: eight values of each row at a time, transposed in
// registers, each value of k stored as eight floats, the six rows' and two that the next store
// overwrites (the last store writes two floats past the run: kSpill).
__attribute__((target("avx2,f16c"))) void PackRuns(DataType t, const void* a, int64_t numel, const int64_t* base, const int64_t* lo,
                                                   const int64_t* hi, int64_t len, float* out) {
  bool whole = true;  // every row's run lies inside A: no checks before the last chunk
  for (int64_t r = 0; r < kRows; ++r) whole = whole && lo[r] == 0 && hi[r] == len;
  for (int64_t j = 0; j < len; j += 8) {
    __m256 v[8];
    if (whole && j + 8 <= len) {
      for (int64_t r = 0; r < kRows; ++r) v[r] = Load8(t, a, base[r] + j);
    } else {
      for (int64_t r = 0; r < kRows; ++r) v[r] = RunChunk(t, a, numel, base[r], lo[r], hi[r], j);
    }
    v[6] = v[7] = _mm256_setzero_ps();
    Transpose8(v);
    const int64_t count = std::min<int64_t>(8, len - j);
    float* to = out + j * kRows;
    for (int64_t i = 0; i < count; ++i) _mm256_storeu_ps(to + i * kRows, v[i]);
  }
}

// Rows m0 .. m0 + rows of A [M, K] (FP32, FP16 or BF16) as FP32 [ceil(rows / 6)][K][6] (zero rows
// at the end): a tile's rows for the slice at k0 are the depth x 6 floats at t * K * 6 + k0 * 6.
void PackRows(DataType atype, const void* a, int64_t M, int64_t K, int64_t m0, int64_t rows, float* out) {
  for (int64_t t = 0; t * kRows < rows; ++t) {
    int64_t base[kRows], lo[kRows] = {}, hi[kRows];
    for (int64_t r = 0; r < kRows; ++r) {
      const bool have = t * kRows + r < rows;
      base[r] = have ? (m0 + t * kRows + r) * K : 0;
      hi[r] = have ? K : 0;
    }
    PackRuns(atype, a, M * K, base, lo, hi, K, out + t * K * kRows);
  }
}

// The same for the rows of a channels-last convolution's implicit A: row m = (n, oh, ow) of
// [N x OH x OW, KH x KW x C] holds the window of output pixel (n, oh, ow), k = (kh, kw, c), zero
// where the window reaches into the padding. For each kh, the KW x C values of a window's row lie
// together in X's row of pixels when the dilation along W is 1 (else each kw's C values do): one
// run, zero where it lies outside the row (the padding left and right) or the row outside the
// image (above, below).
void PackWindowRows(DataType xtype, const void* x, const HalfConvGeometry& g, int64_t m0, int64_t rows, float* out) {
  const int64_t C = g.C, K = g.KH * g.KW * C, row_len = g.W * C;
  const bool merged = g.dilation_w == 1;
  const int64_t runs = merged ? 1 : g.KW, len = merged ? g.KW * C : C;
  // Output pixel (n, oh, ow) of the next row, counted on from m0's.
  int64_t ow = m0 % g.OW, oh = m0 / g.OW % g.OH, n = m0 / g.OW / g.OH;
  for (int64_t t = 0; t * kRows < rows; ++t) {
    float* panel = out + t * K * kRows;
    const int64_t have = std::min(kRows, rows - t * kRows);
    int64_t image[kRows], ih0[kRows], iw0[kRows];
    for (int64_t r = 0; r < have; ++r) {
      image[r] = n * g.H * row_len;
      ih0[r] = oh * g.stride_h - g.pad_top;
      iw0[r] = ow * g.stride_w - g.pad_left;
      if (++ow == g.OW) {
        ow = 0;
        if (++oh == g.OH) oh = 0, ++n;
      }
    }
    for (int64_t kh = 0; kh < g.KH; ++kh) {
      for (int64_t run = 0; run < runs; ++run) {
        int64_t base[kRows], lo[kRows], hi[kRows];
        for (int64_t r = 0; r < kRows; ++r) {
          const int64_t ih = r < have ? ih0[r] + kh * g.dilation_h : -1;
          base[r] = lo[r] = hi[r] = 0;
          if (ih < 0 || ih >= g.H) continue;
          const int64_t start = (iw0[r] + run * g.dilation_w) * C;  // within the row of pixels
          base[r] = image[r] + ih * row_len + start;
          lo[r] = std::clamp<int64_t>(-start, 0, len);
          hi[r] = std::clamp<int64_t>(row_len - start, 0, len);
        }
        PackRuns(xtype, x, g.N * g.H * row_len, base, lo, hi, len, panel + (kh * g.KW + run) * C * kRows);
      }
    }
  }
}

// A fused activation applied to the FP32 sums before they are stored or rounded: max(v, lo)
// first, so NaN becomes lo (as oneDNN's relu and clip post-ops do), then min(v, hi).
struct Bounds {
  bool on = false;
  float lo = 0, hi = 0;
};

__attribute__((target("avx2"))) void ClampRows(float* y, int64_t ld, int64_t rows, int64_t cols, const Bounds& b) {
  if (ld == cols) cols *= rows, rows = 1;  // one pass over rows that lie together
  const __m256 lo = _mm256_set1_ps(b.lo), hi = _mm256_set1_ps(b.hi);
  for (int64_t r = 0; r < rows; ++r) {
    float* p = y + r * ld;
    int64_t j = 0;
    for (; j + 8 <= cols; j += 8) _mm256_storeu_ps(p + j, _mm256_min_ps(_mm256_max_ps(_mm256_loadu_ps(p + j), lo), hi));
    for (; j < cols; ++j) {
      const float v = p[j] > b.lo ? p[j] : b.lo;
      p[j] = v < b.hi ? v : b.hi;
    }
  }
}

// Rows [m0, m0 + rows) and columns [n0, n1) of the FP32 block `from` (row stride ld) rounded into
// the 16-bit Y.
void NarrowRows(DataType ytype, const float* from, int64_t ld, int64_t rows, int64_t n0, int64_t n1, uint16_t* y, int64_t ldy, int64_t m0) {
  if (ld == n1 - n0 && ldy == ld) {  // the rows lie together at both ends: one pass
    rows *= ld;
    ld = ldy = n1 - n0;
    n1 = n0 + rows;
    rows = 1;
  }
  for (int64_t r = 0; r < rows; ++r) {
    uint16_t* to = y + (m0 + r) * ldy + n0;
    if (ytype == DataType::kF16) FloatToHalfArray(from + r * ld, to, size_t(n1 - n0));
    else FloatToBf16Array(from + r * ld, to, size_t(n1 - n0));
  }
}

// Panels [p0, p1) of Y for rows [mb, me) in blocks of `block` rows, with this thread's scratch
// (ThreadFloats(block, K)). Per block of rows: A packed once (pack(m0, rows, out), as PackRows);
// then groups of panels whose Y block stays in L2 while the slices of k go by (for a 16-bit Y, in
// the thread's FP32 block, rounded into Y when the group is done).
template <class PackA>
void Panels(bool f16, const PackA& pack, int64_t mb, int64_t me, int64_t block, int64_t K, const uint16_t* w, int64_t N, bool trans_b,
            const float* bias, const Bounds& bounds, DataType ytype, void* y, int64_t ldy, int64_t p0, int64_t p1, float* scratch) {
  float* slice = scratch;  // 64-byte aligned (the slice's vector stores need 32)
  float* packed = scratch + kDepth * kCols;
  float* yblock = packed + PackedFloats(block, K);
  const bool wide_y = ytype == DataType::kF32;
  for (int64_t m0 = mb; m0 < me; m0 += block) {
    const int64_t rows = std::min(block, me - m0), tiles = (rows + kRows - 1) / kRows;
    pack(m0, rows, packed);
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
      if (bounds.on) ClampRows(yg, ldg, rows, std::min(N, g1 * kCols) - g0 * kCols, bounds);
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
  return int64_t(std::max(threads, 1)) * ThreadFloats(RowBlock(M, K), K) * int64_t(sizeof(float));
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
  const int64_t panels = (N + kCols - 1) / kCols, block = RowBlock(M, K);
  const auto pack = [&](int64_t m0, int64_t rows, float* out) { PackRows(atype, a, M, K, m0, rows, out); };
  // A thread's part of the scratch: its number in ParallelFor's region, or the first part where
  // ParallelFor runs the panels here (called from another region, e.g. one batch per thread,
  // omp_get_thread_num() would name the outer thread).
  const int level = omp_get_level();
  fast::ParallelFor(panels, M * K * kCols, threads, [&](int64_t p0, int64_t p1) {
    const int slot = omp_get_level() > level ? omp_get_thread_num() : 0;
    float* mine = reinterpret_cast<float*>(scratch) + ThreadFloats(block, K) * slot;
    Panels(f16, pack, 0, M, block, K, wb, N, trans_b, bias, Bounds{}, ytype, y, ldy, p0, p1, mine);
  });
}

int64_t HalfWeightsConvScratchBytes(const HalfConvGeometry& g, int threads) {
  const int64_t K = std::max<int64_t>(g.KH * g.KW * g.C, 1);
  return int64_t(std::max(threads, 1)) * ThreadFloats(MostRows(K), K) * int64_t(sizeof(float));
}

void HalfWeightsConv(DataType wtype, DataType xtype, const void* x, const HalfConvGeometry& g, const uint8_t* w, const float* bias,
                     const float* clamp, DataType ytype, void* y, uint8_t* scratch, int threads) {
  const int64_t M = g.N * g.OH * g.OW, K = g.KH * g.KW * g.C, N = g.M;
  if (M <= 0 || N <= 0 || K <= 0) return;
  const bool f16 = wtype == DataType::kF16;
  const uint16_t* wb = reinterpret_cast<const uint16_t*>(w);
  Bounds bounds;
  if (clamp) bounds = Bounds{true, clamp[0], clamp[1]};
  const auto pack = [&](int64_t m0, int64_t rows, float* out) { PackWindowRows(xtype, x, g, m0, rows, out); };
  const int64_t panels = (N + kCols - 1) / kCols, tiles = (M + kRows - 1) / kRows, per_thread = ThreadFloats(MostRows(K), K);
  const int level = omp_get_level();
  const auto mine = [&] {
    const int slot = omp_get_level() > level ? omp_get_thread_num() : 0;
    return reinterpret_cast<float*>(scratch) + per_thread * slot;
  };
  // Threads split the rows (each packs its own windows once and widens all of W once per block of
  // its rows) or the panels (each widens its part of W once per block of rows and packs every
  // window itself): whichever converts fewer values. Images with many pixels and few channels
  // (ResNet's first stage: 3136 rows, 64 columns) split the rows, 7 x 7 maps with 512 or 2048
  // channels the panels.
  const int64_t T = std::max(threads, 1), most = MostRows(K), rows_each = (tiles + T - 1) / T * kRows;
  const int64_t by_rows = M * K + T * ((rows_each + most - 1) / most) * N * K;
  const int64_t by_panels = std::min<int64_t>(T, panels) * M * K + ((M + most - 1) / most) * N * K;
  if (T > 1 && by_rows < by_panels) {
    fast::ParallelFor(tiles, kRows * K * N, threads, [&](int64_t t0, int64_t t1) {
      const int64_t mb = t0 * kRows, me = std::min(M, t1 * kRows);
      Panels(f16, pack, mb, me, RowBlock(me - mb, K), K, wb, N, true, bias, bounds, ytype, y, N, 0, panels, mine());
    });
    return;
  }
  const int64_t block = RowBlock(M, K);
  fast::ParallelFor(panels, M * K * kCols, threads, [&](int64_t p0, int64_t p1) {
    Panels(f16, pack, 0, M, block, K, wb, N, true, bias, bounds, ytype, y, N, p0, p1, mine());
  });
}

}  // namespace precis::rt
