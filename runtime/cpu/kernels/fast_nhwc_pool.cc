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

  size_t ScratchBytes() const override { return size_t(threads_) * RowBytes(); }

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
      float* acc = reinterpret_cast<float*>(ctx.scratch + RowBytes() * size_t(omp_get_thread_num()));
      for (int64_t row = begin; row < end; ++row) {
        int64_t n = row / OH, oh = row % OH;
        const WindowRange& rh = ranges_[1][size_t(oh)];
        const T* xn = px + n * win_.in[1] * IW * C;
        for (int64_t ow = 0; ow < OW; ++ow) {
          const WindowRange& rw = ranges_[2][size_t(ow)];
          T* yp = py + ((n * OH + oh) * OW + ow) * C;
          bool first = true;
          for (int64_t kh = rh.lo; kh < rh.hi; ++kh)
            for (int64_t kw = rw.lo; kw < rw.hi; ++kw) {
              const T* xp = xn + ((rh.start + kh * dh) * IW + rw.start + kw * dw) * C;
              if (first) {  // 0 + v as the reference's sum starts (-0 gives +0)
                for (int64_t c = 0; c < C; ++c) acc[c] = kMode == Mode::kMax ? float(Load(xp[c])) : 0.0f + float(Load(xp[c]));
              } else if constexpr (std::is_same_v<T, float>) {  // the AVX2 clones of fast_math.cc
                if constexpr (kMode == Mode::kMax) MaxPoolInto(acc, xp, C);
                else AddInto(acc, xp, C);
              } else if constexpr (kMode == Mode::kMax) {
                for (int64_t c = 0; c < C; ++c) {
                  float v = Load(xp[c]), b = acc[c];
                  acc[c] = (v > b || (b != b && v == v)) ? v : b;
                }
              } else {
                for (int64_t c = 0; c < C; ++c) acc[c] += float(Load(xp[c]));
              }
              first = false;
            }
          if constexpr (kMode == Mode::kMax) {
            if (first) {  // a window of padding only
              for (int64_t c = 0; c < C; ++c) yp[c] = Store<T>(std::numeric_limits<float>::lowest());
            } else {
              for (int64_t c = 0; c < C; ++c) yp[c] = Store<T>(acc[c]);
            }
          } else {
            int64_t count = count_include_pad_ ? rh.padded * rw.padded : (rh.hi - rh.lo) * (rw.hi - rw.lo);
            if (count <= 0 || first) {
              for (int64_t c = 0; c < C; ++c) yp[c] = Store<T>(0.0f);
            } else {
              float div = float(count);
              for (int64_t c = 0; c < C; ++c) yp[c] = Store<T>(acc[c] / div);
            }
          }
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

  size_t ScratchBytes() const override { return size_t(threads_) * RowBytes(channels_); }

  Status Run(const KernelArgs& args, CpuContext& ctx) override {
    DispatchFast(args.in(0)->dtype, [&](auto tag) { RunTyped<decltype(tag)>(args, ctx); });
    return Status::Ok();
  }

 private:
  static size_t RowBytes(int64_t c) { return (size_t(c) * sizeof(float) + 63) / 64 * 64; }

  template <typename T>
  void RunTyped(const KernelArgs& args, CpuContext& ctx) {
    const Tensor &x = *args.in(0);
    Tensor &y = *args.out(0);
    const int64_t N = x.dims[0], HW = x.dims[1] * x.dims[2], C = x.dims[3];
    const T* px = x.As<T>();
    T* py = y.As<T>();
    // Channel blocks of at most 256 per task, so one image still spreads over the threads.
    const int64_t block = 256, blocks = (C + block - 1) / block;
    ParallelFor(N * blocks, HW * std::min(C, block), std::min(ctx.threads, threads_), [&](int64_t begin, int64_t end) {
      float* acc = reinterpret_cast<float*>(ctx.scratch + RowBytes(channels_) * size_t(omp_get_thread_num()));
      for (int64_t task = begin; task < end; ++task) {
        int64_t n = task / blocks, c0 = task % blocks * block, c1 = std::min(C, c0 + block);
        const T* xn = px + n * HW * C;
        T* yn = py + n * C;
        if (HW == 0) {
          for (int64_t c = c0; c < c1; ++c) yn[c] = Store<T>(0.0f);
          continue;
        }
        for (int64_t c = c0; c < c1; ++c) acc[c] = kMode == Mode::kMax ? float(Load(xn[c])) : 0.0f + float(Load(xn[c]));
        for (int64_t i = 1; i < HW; ++i) {
          const T* xp = xn + i * C;
          if constexpr (kMode == Mode::kMax) {
            for (int64_t c = c0; c < c1; ++c) {
              float v = Load(xp[c]), r = acc[c];
              acc[c] = (v > r || r != r) ? v : r;
            }
          } else {
            for (int64_t c = c0; c < c1; ++c) acc[c] += float(Load(xp[c]));
          }
        }
        if constexpr (kMode == Mode::kMax) {
          for (int64_t c = c0; c < c1; ++c) yn[c] = Store<T>(acc[c]);
        } else {
          float div = float(HW);
          for (int64_t c = c0; c < c1; ++c) yn[c] = Store<T>(acc[c] / div);
        }
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
