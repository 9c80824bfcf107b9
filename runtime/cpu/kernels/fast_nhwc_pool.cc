// Channels-last pools for steps with layout = "NHWC" (CPU plans' convolution regions, see
// passes/choose_layout.h): MaxPool (no Indices) and AveragePool on X [N, H, W, C] -> Y [N, H', W',
// C], GlobalAveragePool and GlobalMaxPool -> Y [N, 1, 1, C]. Channels are the innermost axis, so
// each window position is one contiguous row of C values and the loops run over channels in
// vectors. Every output value is the reference kernel's (nn_pool.cc): the same window ranges
// (ceil_mode, pads, dilations, count_include_pad), the same scan order and float accumulation
// per channel, the same NaN rules (MaxPool: NaN loses to any number and wins only an all-NaN
// window; GlobalMaxPool: a NaN running maximum takes the next value), so the results are bit for
// bit those of the NCHW kernels. f32, f16 and bf16; without a kernel here the backend runs the
// NCHW kernels between transposes.
#include <limits>
#include <vector>

#include "runtime/cpu/kernels/fast_math.h"
#include "runtime/cpu/kernels/fast_util.h"
#include "runtime/kernels/nn_window.h"

namespace precis::rt::fast {
namespace {

// [N, H, W, C] as ONNX's [N, C, H, W].
std::vector<int64_t> Spatial(const Tensor& t) { return {t.dims[1], t.dims[2]}; }

enum class Mode { kMax, kAverage };

// y[0, n) = Store<T>(acc[0, n)): a copy for f32, an array conversion for 16-bit T.
template <typename T>
void StoreRow(const float* acc, T* y, int64_t n) {
  if constexpr (std::is_same_v<T, float>) std::copy(acc, acc + n, y);
  else NarrowArray(acc, y, n);
}

template <Mode kMode>
class NhwcPoolKernel : public Kernel {
 public:
  Status Init(const KernelArgs& args, const CpuContext& ctx) override {
    const Tensor *x = args.in(0), *y = args.out(0);
    if (!x || !y) return Unimplemented("needs X and Y");
    if (args.out(1)) return Unimplemented("MaxPool with Indices runs NCHW");
    if (!DispatchFast(x->dtype, [](auto) {}) || y->dtype != x->dtype) return Unimplemented("channels-last pools: f32, f16 or bf16");
    if (x->rank() != 4 || y->rank() != 4) return Unimplemented("channels-last pools: 2-D");
    if (!args.attrs.Has("kernel_shape")) return args.Error("attribute kernel_shape is required");
    PRECIS_RETURN_IF_ERROR(ReadWindow(args, Spatial(*x), args.attrs.Ints("kernel_shape"), true, &win_));
    if (y->dims != std::vector<int64_t>{x->dims[0], win_.out[1], win_.out[2], x->dims[3]})
      return args.Error("output Y must be [N, H', W', C] for the window (channels-last)");
    for (int d = 0; d < 3; ++d) ranges_[d] = WindowRanges(win_, d);
    count_include_pad_ = args.attrs.Int("count_include_pad", 0) != 0;
    channels_ = x->dims[3];
    threads_ = std::max(ctx.threads, 1);
    return Status::Ok();
  }

  // Per thread: the running row (acc) and, for 16-bit data, one window row widened.
  size_t ScratchBytes() const override { return size_t(threads_) * 2 * RowBytes(); }

  Status Run(const KernelArgs& args, CpuContext& ctx) override {
    DispatchFast(args.in(0)->dtype, [&](auto tag) { RunTyped<decltype(tag)>(args, ctx); });
    return Status::Ok();
  }

 private:
  size_t RowBytes() const { return (size_t(channels_) * sizeof(float) + 63) / 64 * 64; }

  template <typename T>
  void RunTyped(const KernelArgs& args, CpuContext& ctx) {
    const Tensor &x = *args.in(0);
    Tensor &y = *args.out(0);
    const int64_t N = x.dims[0], IW = win_.in[2], C = x.dims[3], OH = win_.out[1], OW = win_.out[2];
    const int64_t dh = win_.dilation[1], dw = win_.dilation[2];
    const T* px = x.As<T>();
    T* py = y.As<T>();
    ParallelFor(N * OH, OW * C * win_.KernelSize(), std::min(ctx.threads, threads_), [&](int64_t begin, int64_t end) {
      uint8_t* mine = ctx.scratch + 2 * RowBytes() * size_t(omp_get_thread_num());
      float* acc = reinterpret_cast<float*>(mine);
      float* row = reinterpret_cast<float*>(mine + RowBytes());
      // Window row xp as floats: the data itself for f32, else widened into `row` (array
      // conversions: the per-element Load of a 16-bit type is a scalar routine).
      auto floats = [&](const T* xp) -> const float* {
        if constexpr (std::is_same_v<T, float>) {
          return xp;
        } else {
          WidenArray(xp, row, C);
          return row;
        }
      };
      for (int64_t r = begin; r < end; ++r) {
        int64_t n = r / OH, oh = r % OH;
        const WindowRange& rh = ranges_[1][size_t(oh)];
        const T* xn = px + n * win_.in[1] * IW * C;
        for (int64_t ow = 0; ow < OW; ++ow) {
          const WindowRange& rw = ranges_[2][size_t(ow)];
          T* yp = py + ((n * OH + oh) * OW + ow) * C;
          bool first = true;
          for (int64_t kh = rh.lo; kh < rh.hi; ++kh)
            for (int64_t kw = rw.lo; kw < rw.hi; ++kw) {
              const float* xf = floats(xn + ((rh.start + kh * dh) * IW + rw.start + kw * dw) * C);
              if (first) {  // 0 + v as the reference's sum starts (-0 gives +0)
                for (int64_t c = 0; c < C; ++c) acc[c] = kMode == Mode::kMax ? xf[c] : 0.0f + xf[c];
              } else if constexpr (kMode == Mode::kMax) {  // the AVX2 clones of fast_math.cc
                MaxPoolInto(acc, xf, C);
              } else {
                AddInto(acc, xf, C);
              }
              first = false;
            }
          if constexpr (kMode == Mode::kMax) {
            if (first)  // a window of padding only
              for (int64_t c = 0; c < C; ++c) acc[c] = std::numeric_limits<float>::lowest();
          } else {
            int64_t count = count_include_pad_ ? rh.padded * rw.padded : (rh.hi - rh.lo) * (rw.hi - rw.lo);
            if (count <= 0 || first) {
              for (int64_t c = 0; c < C; ++c) acc[c] = 0.0f;
            } else {
              float div = float(count);
              for (int64_t c = 0; c < C; ++c) acc[c] /= div;
            }
          }
          StoreRow(acc, yp, C);
        }
      }
    });
  }

  Window win_;
  std::vector<WindowRange> ranges_[3];
  int64_t channels_ = 0;
  int threads_ = 1;
  bool count_include_pad_ = false;
};

// Y [N, 1, 1, C]: per image, every channel reduced over the H * W positions in order.
template <Mode kMode>
class NhwcGlobalPoolKernel : public Kernel {
 public:
  Status Init(const KernelArgs& args, const CpuContext& ctx) override {
    const Tensor *x = args.in(0), *y = args.out(0);
    if (!x || !y) return Unimplemented("needs X and Y");
    if (!DispatchFast(x->dtype, [](auto) {}) || y->dtype != x->dtype) return Unimplemented("channels-last pools: f32, f16 or bf16");
    if (x->rank() != 4 || y->dims != std::vector<int64_t>{x->dims[0], 1, 1, x->dims[3]})
      return Unimplemented("channels-last global pools: X [N, H, W, C], Y [N, 1, 1, C]");
    channels_ = x->dims[3];
    threads_ = std::max(ctx.threads, 1);
    return Status::Ok();
  }

  // Per thread: the running row (acc) and, for 16-bit data, one block of a row widened.
  size_t ScratchBytes() const override { return size_t(threads_) * (RowBytes(channels_) + RowBytes(kBlockC)); }

  Status Run(const KernelArgs& args, CpuContext& ctx) override {
    DispatchFast(args.in(0)->dtype, [&](auto tag) { RunTyped<decltype(tag)>(args, ctx); });
    return Status::Ok();
  }

 private:
  // Channel blocks of at most 256 per task, so one image still spreads over the threads.
  static constexpr int64_t kBlockC = 256;
  static size_t RowBytes(int64_t c) { return (size_t(c) * sizeof(float) + 63) / 64 * 64; }

  template <typename T>
  void RunTyped(const KernelArgs& args, CpuContext& ctx) {
    const Tensor &x = *args.in(0);
    Tensor &y = *args.out(0);
    const int64_t N = x.dims[0], HW = x.dims[1] * x.dims[2], C = x.dims[3];
    const T* px = x.As<T>();
    T* py = y.As<T>();
    const int64_t blocks = (C + kBlockC - 1) / kBlockC;
    ParallelFor(N * blocks, HW * std::min(C, kBlockC), std::min(ctx.threads, threads_), [&](int64_t begin, int64_t end) {
      uint8_t* mine = ctx.scratch + (RowBytes(channels_) + RowBytes(kBlockC)) * size_t(omp_get_thread_num());
      float* acc = reinterpret_cast<float*>(mine);
      float* row = reinterpret_cast<float*>(mine + RowBytes(channels_));
      for (int64_t task = begin; task < end; ++task) {
        int64_t n = task / blocks, c0 = task % blocks * kBlockC, c1 = std::min(C, c0 + kBlockC), m = c1 - c0;
        const T* xn = px + n * HW * C + c0;
        float* a = acc + c0;
        // Channels [c0, c1) of position i as floats (16-bit data widened into `row`).
        auto floats = [&](int64_t i) -> const float* {
          if constexpr (std::is_same_v<T, float>) {
            return xn + i * C;
          } else {
            WidenArray(xn + i * C, row, m);
            return row;
          }
        };
        if (HW == 0) {
          for (int64_t c = 0; c < m; ++c) a[c] = 0.0f;
        } else {
          const float* x0 = floats(0);
          for (int64_t c = 0; c < m; ++c) a[c] = kMode == Mode::kMax ? x0[c] : 0.0f + x0[c];
          for (int64_t i = 1; i < HW; ++i) {
            const float* xf = floats(i);
            if constexpr (kMode == Mode::kMax) {
              for (int64_t c = 0; c < m; ++c) {
                float v = xf[c], r = a[c];
                a[c] = (v > r || r != r) ? v : r;
              }
            } else {
              AddInto(a, xf, m);
            }
          }
          if constexpr (kMode == Mode::kAverage) {
            float div = float(HW);
            for (int64_t c = 0; c < m; ++c) a[c] /= div;
          }
        }
        StoreRow(a, py + n * C + c0, m);
      }
    });
  }

  int64_t channels_ = 0;
  int threads_ = 1;
};

}  // namespace

void AddFastNhwcPoolKernels(KernelRegistry& r) {
  r.RegisterNhwc("MaxPool", Make<NhwcPoolKernel<Mode::kMax>>);
  r.RegisterNhwc("AveragePool", Make<NhwcPoolKernel<Mode::kAverage>>);
  r.RegisterNhwc("GlobalAveragePool", Make<NhwcGlobalPoolKernel<Mode::kAverage>>);
  r.RegisterNhwc("GlobalMaxPool", Make<NhwcGlobalPoolKernel<Mode::kMax>>);
}

}  // namespace precis::rt::fast
