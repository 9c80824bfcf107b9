// Direct 1x1 convolution on NCHW (f32, group 1, stride 1, no padding, 1 to 3 spatial dims,
// optional bias): Y[n] (M x HW) = W (M x C) * X[n] (C x HW) + B, a GEMM per image with the bias
// folded into the accumulators' start, so Y is written once and X is read in place (oneDNN's
// convolution reorders both to channel-blocked layouts; its matmul has no per-row bias).
//
// Blocking: W is packed at load into 6-row panels ([M/6][C][6], zero rows at the end). Work
// items are (image, column block, row block) and run in parallel. An item takes k in passes of
// 256: it packs its X block (256 x up to 1024 columns, ~128 KiB, L2) into 16-column strips, then
// sweeps the W panels over it with a 6 x 16 register tile (12 AVX2 accumulators, FMA); the first
// pass starts from the bias, later ones from Y. AVX2+FMA only: elsewhere the step is declined
// and oneDNN takes it. Accumulates in float, bias first, then k in order (fast_conv_test.cc
// states the bound).
#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "runtime/cpu/kernels/conv_kernels.h"
#include "runtime/cpu/kernels/fast_tile.h"
#include "runtime/cpu/kernels/fast_util.h"

namespace precis::rt::fast {
namespace {

constexpr int64_t kRows = 6;         // W rows per register tile
constexpr int64_t kCols = 16;        // Y columns per register tile (two 8-float vectors)
constexpr int64_t kDepth = 256;      // k per pass: a 16-column strip of X is 16 KiB (L1)
constexpr int64_t kXBlockBytes = 128 * 1024;  // X block (kDepth x columns) per work item (L2)

// One 6 x 16 tile (fewer rows/columns at the edges): y[r][j] = bias[r] + sum_k a[k][r] * x[k][j]
// for r < rows, j < cols. `a` is a packed panel [c][6], `x` has row stride ldx, `y` ldy.
template <bool kFull>
__attribute__((target("avx2,fma"))) void Tile(const float* a, const float* x, int64_t ldx, int64_t c, const float* bias, float* y,
                                              int64_t ldy, int64_t rows, int64_t cols) {
  __m256i m0, m1;
  ColumnMasks(cols, &m0, &m1);
  // The accumulators start from the bias, or from y when `bias` is null (a later block of k).
  Acc6x16 acc;
  for (int64_t r = 0; r < kRows; ++r) {
    __m256 lo = _mm256_setzero_ps(), hi = _mm256_setzero_ps();
    if (bias) lo = hi = _mm256_set1_ps(bias[r]);
    else if (r < rows) Load16<kFull>(y + r * ldy, m0, m1, &lo, &hi);
    SetRow(acc, r, lo, hi);
  }
  Accumulate6x16<kFull>(acc, a, x, ldx, c, m0, m1);
  Store6x16<kFull>(acc, y, ldy, rows, m0, m1);
}

class PointwiseConvKernel : public Kernel {
 public:
  Status Init(const KernelArgs& args, const CpuContext& ctx) override {
    threads_ = std::max(ctx.threads, 1);
    if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma")) return Unimplemented("pointwise conv: needs AVX2 and FMA");
    const Tensor *x = args.in(0), *w = args.in(1), *b = args.in(2), *y = args.out(0);
    if (!x || !w || !y) return Unimplemented("pointwise conv: needs X, W and Y");
    for (const Tensor* t : {x, w, b, y})
      if (t && t->dtype != DataType::kF32) return Unimplemented("pointwise conv: f32 only");
    if (x->rank() < 3 || x->rank() > 5 || w->rank() != x->rank() || y->rank() != x->rank()) return Unimplemented("pointwise conv: 1 to 3 spatial dims");
    size_t n = size_t(x->rank()) - 2;
    if (args.attrs.Int("group", 1) != 1 || w->dims[1] != x->dims[1]) return Unimplemented("pointwise conv: group 1 only");
    for (size_t i = 2; i < w->dims.size(); ++i)
      if (w->dims[i] != 1) return Unimplemented("pointwise conv: 1x1 kernel only");
    if (args.attrs.Ints("kernel_shape", std::vector<int64_t>(n, 1)) != std::vector<int64_t>(n, 1)) return Unimplemented("pointwise conv: kernel_shape differs from W");
    // With a 1x1 kernel and stride 1, SAME_* and VALID both mean no padding.
    std::string auto_pad = args.attrs.String("auto_pad", "NOTSET");
    bool explicit_pads = auto_pad.empty() || auto_pad == "NOTSET";
    if (!explicit_pads && auto_pad != "VALID" && auto_pad != "SAME_UPPER" && auto_pad != "SAME_LOWER") return Unimplemented("pointwise conv: unknown auto_pad");
    if (args.attrs.Ints("strides", std::vector<int64_t>(n, 1)) != std::vector<int64_t>(n, 1)) return Unimplemented("pointwise conv: stride 1 only");
    if (explicit_pads && args.attrs.Ints("pads", std::vector<int64_t>(2 * n, 0)) != std::vector<int64_t>(2 * n, 0)) return Unimplemented("pointwise conv: no padding only");
    std::vector<int64_t> out = x->dims;
    out[1] = w->dims[0];
    if (y->dims != out) return Unimplemented("pointwise conv: planned output shape differs");
    if (b && (b->rank() != 1 || b->dims[0] != out[1])) return Unimplemented("pointwise conv: bias must be [M]");
    if (x->numel == 0 || y->numel == 0) return Unimplemented("pointwise conv: empty tensor");
    images_ = x->dims[0], c_ = x->dims[1], m_ = out[1], hw_ = x->numel / (images_ * c_);
    panels_ = (m_ + kRows - 1) / kRows;
    block_cols_ = std::clamp<int64_t>(kXBlockBytes / int64_t(sizeof(float)) / std::min(c_, kDepth) / kCols * kCols, kCols, 1024);
    // Items run in (image, row block, column block) order, so each thread writes one contiguous
    // slice of Y, whole channels where it can: the next step (Clip, a depthwise conv) splits
    // its work the same way and finds its part in this thread's cache. Rows are split only
    // when there are fewer images than threads (each row block packs X again).
    panels_per_block_ = images_ >= threads_ ? panels_ : (panels_ + threads_ - 1) / threads_;
    w_constant_ = w->is_constant;
    if (w_constant_) {
      packed_.resize(size_t(panels_ * c_ * kRows));
      Pack(w->As<float>(), packed_.data());
    }
    return Status::Ok();
  }

  // Per thread: the packed X block; then W packed when it is not constant.
  size_t StripBytes() const { return size_t(std::min(c_, kDepth) * ((block_cols_ + kCols - 1) / kCols * kCols)) * sizeof(float); }
  size_t ScratchBytes() const override {
    return StripBytes() * size_t(threads_) + (w_constant_ ? 0 : size_t(panels_ * c_ * kRows) * sizeof(float));
  }

  Status Run(const KernelArgs& args, CpuContext& ctx) override {
    const float* a = packed_.data();
    if (!w_constant_) {
      float* w = reinterpret_cast<float*>(ctx.scratch + StripBytes() * size_t(threads_));
      Pack(args.in(1)->As<float>(), w);
      a = w;
    }
    const float *x = args.in(0)->As<float>(), *b = args.in(2) ? args.in(2)->As<float>() : nullptr;
    float* y = args.out(0)->As<float>();
    int64_t col_blocks = (hw_ + block_cols_ - 1) / block_cols_, row_blocks = (panels_ + panels_per_block_ - 1) / panels_per_block_;
    int64_t items = images_ * col_blocks * row_blocks;
    ParallelFor(items, m_ * c_ * std::min(block_cols_, hw_) / row_blocks, std::min(ctx.threads, threads_), [&](int64_t begin, int64_t end) {
      float* strips = reinterpret_cast<float*>(ctx.scratch + StripBytes() * size_t(omp_get_thread_num()));
      for (int64_t i = begin; i < end; ++i)
        Item(i / col_blocks % row_blocks, i % col_blocks, i / (row_blocks * col_blocks), a, x, b, y, strips);
    });
    return Status::Ok();
  }

 private:
  // W [M][C] into 6-row panels [panel][c][6], rows past M zero.
  void Pack(const float* w, float* packed) const {
    for (int64_t p = 0; p < panels_; ++p)
      for (int64_t k = 0; k < c_; ++k)
        for (int64_t r = 0; r < kRows; ++r) {
          int64_t m = p * kRows + r;
          packed[(p * c_ + k) * kRows + r] = m < m_ ? w[m * c_ + k] : 0.0f;
        }
  }

  // Rows of the row block x columns of the column block of one image, k in passes of kDepth
  // (the first starts from the bias, the others from Y). Each pass packs its X block into
  // `strips` ([strip][k][16], zero past the last column: sequential reads, no TLB misses on
  // rows HW apart) and sweeps the W panels over it; each panel writes 6 rows of the block.
  void Item(int64_t row_block, int64_t col_block, int64_t image, const float* a, const float* x, const float* b, float* y,
            float* strips) const {
    int64_t p_begin = row_block * panels_per_block_, p_end = std::min(panels_, p_begin + panels_per_block_);
    int64_t j_begin = col_block * block_cols_, j_end = std::min(hw_, j_begin + block_cols_);
    const float* xi = x + image * c_ * hw_;
    float* yi = y + image * m_ * hw_;
    for (int64_t k = 0; k < c_; k += kDepth) {
      int64_t depth = std::min(kDepth, c_ - k);
      for (int64_t j = j_begin; j < j_end; j += kCols) {
        int64_t cols = std::min(kCols, j_end - j);
        float* strip = strips + (j - j_begin) * depth;
        for (int64_t kk = 0; kk < depth; ++kk) {
          const float* from = xi + (k + kk) * hw_ + j;
          float* to = strip + kk * kCols;
          if (cols == kCols) {
            std::memcpy(to, from, kCols * sizeof(float));
          } else {
            std::memcpy(to, from, size_t(cols) * sizeof(float));
            std::fill(to + cols, to + kCols, 0.0f);
          }
        }
      }
      for (int64_t p = p_begin; p < p_end; ++p) {
        int64_t m = p * kRows, rows = std::min(kRows, m_ - m);
        float bias[kRows] = {};
        for (int64_t r = 0; r < rows && b; ++r) bias[r] = b[m + r];
        const float* ap = a + (p * c_ + k) * kRows;
        const float* start = k == 0 ? bias : nullptr;
        for (int64_t j = j_begin; j < j_end; j += kCols) {
          int64_t cols = std::min(kCols, j_end - j);
          const float* strip = strips + (j - j_begin) * depth;
          if (cols == kCols) Tile<true>(ap, strip, kCols, depth, start, yi + m * hw_ + j, hw_, rows, cols);
          else Tile<false>(ap, strip, kCols, depth, start, yi + m * hw_ + j, hw_, rows, cols);
        }
      }
    }
  }

  int64_t images_ = 0, c_ = 0, m_ = 0, hw_ = 0, panels_ = 0, panels_per_block_ = 1, block_cols_ = kCols;
  int threads_ = 1;
  bool w_constant_ = false;
  std::vector<float> packed_;
};

}  // namespace
}  // namespace precis::rt::fast

namespace precis::rt {

std::unique_ptr<Kernel> MakeDirectPointwiseConvKernel() { return std::make_unique<fast::PointwiseConvKernel>(); }

}  // namespace precis::rt
