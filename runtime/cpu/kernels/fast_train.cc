// Fast kernels of training plans: MaxPool and its gradient MaxPoolGrad, ReluGrad, UnscaleGradients and
// BatchNormalizationTraining with its gradient (reference kernels: nn_pool.cc, training.cc).
//
// MaxPool / MaxPoolGrad (f32, f16, bf16; no Indices output): planes in parallel; each window's
// maximum found branch-free with the reference kernel's choice (the first maximum in scan order,
// NaN losing to any number and winning only an all-NaN window), so both kernels pick the same
// positions as the reference. MaxPoolGrad adds in float rather than double: a position receives
// at most a few windows' gradients, so results differ from the reference by a float rounding.
//
// BatchNormalizationTraining and its gradient (f32): channels in parallel; the per-channel sums
// in double over kLanes lanes (fast_util.h), Y computed with the reference kernel's float
// formula, dX with its algebra rearranged to a * dY + b * X + c in double; outputs match the
// reference to a float ulp or two (fast_kernels_test.cc).
#include <omp.h>

#if defined(__x86_64__)
#include <emmintrin.h>
#endif

#include <atomic>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "runtime/cpu/kernels/fast_math.h"
#include "runtime/cpu/kernels/fast_util.h"
#include "runtime/cpu/kernels/register.h"
#include "runtime/kernels/nn_window.h"

namespace precis::rt::fast {
namespace {

// Whether x holds a -0 (vectorized: no branch in the loop).
bool HasNegativeZero(const float* x, int64_t n) {
  uint32_t any = 0;
  for (int64_t i = 0; i < n; ++i) {
    uint32_t bits;
    std::memcpy(&bits, x + i, 4);
    any |= uint32_t(bits == 0x80000000u);
  }
  return any != 0;
}

// The window geometry of a MaxPool step and the scan that both pooling kernels share.
class MaxWindows {
 public:
  Status Read(const KernelArgs& args, const Tensor& x) {
    if (x.rank() < 3 || x.rank() > 5) return Unimplemented("MaxPool: 1 to 3 spatial dims");
    if (!args.attrs.Has("kernel_shape")) return Unimplemented("MaxPool: kernel_shape is required");
    std::vector<int64_t> in(x.dims.begin() + 2, x.dims.end());
    PRECIS_RETURN_IF_ERROR(ReadWindow(args, in, args.attrs.Ints("kernel_shape"), true, &win_));
    for (int d = 0; d < 3; ++d) ranges_[d] = WindowRanges(win_, d);
    planes_ = x.dims[0] * x.dims[1];
    int32_positions_ = win_.InSize() < (int64_t(1) << 31);
    // [full_begin_, full_end_): the W outputs whose whole window lies inside the input (the
    // ranges are monotonic: padding only at the two ends).
    full_begin_ = full_end_ = 0;
    for (size_t o = 0; o < ranges_[2].size(); ++o) {
      bool full = ranges_[2][o].lo == 0 && ranges_[2][o].hi == win_.kernel[2];
      if (full && full_end_ == full_begin_) full_begin_ = o, full_end_ = o + 1;
      else if (full && full_end_ == o) full_end_ = o + 1;
    }
    return Status::Ok();
  }
  const Window& window() const { return win_; }
  int64_t planes() const { return planes_; }

  // The maxima alone (MaxPool's forward): per output row of D and H, the column maxima over the
  // window's input rows, then the maxima of the full W windows at every input position (both
  // over whole rows, vectorized: fast::MaxPoolInto), read at the windows' starts; windows that
  // reach into the padding one at a time. The maximum that skips NaN (NaN only where every value
  // is: a NaN never replaces the canonical NaN a window starts from) does not depend on the
  // order the values come in, except for the sign of a zero maximum where both zeros occur (the
  // scan keeps the first): a plane holding a -0 goes through Scan. So this gives Scan's maxima,
  // bit for bit; an empty window gives lowest() as there. `col` holds two input rows.
  void MaxValues(const float* xp, float* yp, float* col) const {
    if (HasNegativeZero(xp, win_.InSize())) {
      Scan(xp, [&](int64_t o, float best, int64_t) { yp[o] = best; });
      return;
    }
    const int64_t IH = win_.in[1], IW = win_.in[2], KW = win_.kernel[2];
    const int64_t dd = win_.dilation[0], dh = win_.dilation[1], dw = win_.dilation[2];
    const float nan = std::numeric_limits<float>::quiet_NaN();
    float* span = col + IW;                   // span[j]: the maximum of the full window starting at input j
    const int64_t spans = IW - (KW - 1) * dw;  // full windows start at [0, spans)
    for (const WindowRange& rd : ranges_[0])
      for (const WindowRange& rh : ranges_[1]) {
        if (rd.hi <= rd.lo || rh.hi <= rh.lo) {
          yp = std::fill_n(yp, ranges_[2].size(), std::numeric_limits<float>::lowest());
          continue;
        }
        std::fill_n(col, IW, nan);
        for (int64_t kd = rd.lo; kd < rd.hi; ++kd)
          for (int64_t kh = rh.lo; kh < rh.hi; ++kh) MaxPoolInto(col, xp + ((rd.start + kd * dd) * IH + rh.start + kh * dh) * IW, IW);
        if (full_end_ > full_begin_ && spans > 0) {
          std::copy(col, col + spans, span);
          for (int64_t kw = 1; kw < KW; ++kw) MaxPoolInto(span, col + kw * dw, spans);
        }
        for (size_t ow = 0; ow < ranges_[2].size(); ++ow) {
          const WindowRange& rw = ranges_[2][ow];
          if (ow >= full_begin_ && ow < full_end_) {
            *yp++ = span[rw.start];
            continue;
          }
          float best = rw.hi <= rw.lo ? std::numeric_limits<float>::lowest() : nan;
          for (int64_t kw = rw.lo; kw < rw.hi; ++kw) {
            float v = col[rw.start + kw * dw];
            best = (v > best) | ((best != best) & (v == v)) ? v : best;
          }
          *yp++ = best;
        }
      }
  }

  // Calls emit(output index, maximum, its position in the plane or -1) for every window of one
  // plane, in output order. On x86, f32 windows whose W range lies inside the input go kGroup at
  // a time through SSE2 selects (GroupSse2); the others one at a time.
  template <typename T, typename Emit>
  void Scan(const T* xp, Emit&& emit) const {
    const int64_t IH = win_.in[1], IW = win_.in[2];
    const int64_t dd = win_.dilation[0], dh = win_.dilation[1], dw = win_.dilation[2];
    int64_t out_i = 0;
    for (const WindowRange& rd : ranges_[0])
      for (const WindowRange& rh : ranges_[1]) {
        size_t ow = 0;
        while (ow < ranges_[2].size()) {
          const WindowRange& rw = ranges_[2][ow];
          if (rd.hi <= rd.lo || rh.hi <= rh.lo || rw.hi <= rw.lo) {
            emit(out_i++, std::numeric_limits<float>::lowest(), int64_t(-1));
            ++ow;
            continue;
          }
#if defined(__x86_64__)
          if constexpr (std::is_same_v<T, float>) {
            if (int32_positions_ && ow >= full_begin_ && ow + kGroup <= full_end_) {
              float best[kGroup];
              int64_t best_i[kGroup];
              GroupSse2(xp, rd, rh, rw.start, best, best_i);
              for (int j = 0; j < kGroup; ++j) emit(out_i++, best[j], best_i[j]);
              ow += kGroup;
              continue;
            }
          }
#endif
          // best starts as NaN at the first position: a number replaces it, a NaN does not, so
          // an all-NaN window keeps its first position as the reference does.
          float best = std::numeric_limits<float>::quiet_NaN();
          int64_t best_i = ((rd.start + rd.lo * dd) * IH + rh.start + rh.lo * dh) * IW + rw.start + rw.lo * dw;
          for (int64_t kd = rd.lo; kd < rd.hi; ++kd)
            for (int64_t kh = rh.lo; kh < rh.hi; ++kh) {
              int64_t base = ((rd.start + kd * dd) * IH + rh.start + kh * dh) * IW + rw.start;
              for (int64_t kw = rw.lo; kw < rw.hi; ++kw) {
                int64_t at = base + kw * dw;
                float v = Load(xp[at]);
                bool take = (v > best) | ((best != best) & (v == v));
                best = take ? v : best;
                best_i = take ? at : best_i;
              }
            }
          emit(out_i++, best, best_i);
          ++ow;
        }
      }
  }

 private:
#if defined(__x86_64__)
  // The kGroup windows at W start `w_start` in two SSE2 vectors of 4 (compilers turn the scalar
  // selects into branches, which mispredict on random data); positions as int32.
  void GroupSse2(const float* xp, const WindowRange& rd, const WindowRange& rh, int64_t w_start, float* best, int64_t* best_i) const {
    const int64_t IH = win_.in[1], IW = win_.in[2], KW = win_.kernel[2], S = win_.stride[2];
    const int64_t dd = win_.dilation[0], dh = win_.dilation[1], dw = win_.dilation[2];
    const int s = int(S);
    int64_t first = ((rd.start + rd.lo * dd) * IH + rh.start + rh.lo * dh) * IW + w_start;  // NaN's start position
    __m128 b0 = _mm_set1_ps(std::numeric_limits<float>::quiet_NaN()), b1 = b0;
    const __m128i lanes = _mm_setr_epi32(0, s, 2 * s, 3 * s), step4 = _mm_set1_epi32(4 * s);
    __m128i i0 = _mm_add_epi32(_mm_set1_epi32(int32_t(first)), lanes), i1 = _mm_add_epi32(i0, step4);
    for (int64_t kd = rd.lo; kd < rd.hi; ++kd)
      for (int64_t kh = rh.lo; kh < rh.hi; ++kh) {
        int64_t base = ((rd.start + kd * dd) * IH + rh.start + kh * dh) * IW + w_start;
        for (int64_t kw = 0; kw < KW; ++kw) {
          int64_t at = base + kw * dw;
          const float* q = xp + at;
          __m128 v0 = _mm_setr_ps(q[0], q[S], q[2 * S], q[3 * S]);
          __m128 v1 = _mm_setr_ps(q[4 * S], q[5 * S], q[6 * S], q[7 * S]);
          __m128i a0 = _mm_add_epi32(_mm_set1_epi32(int32_t(at)), lanes), a1 = _mm_add_epi32(a0, step4);
          __m128 t0 = _mm_or_ps(_mm_cmpgt_ps(v0, b0), _mm_and_ps(_mm_cmpunord_ps(b0, b0), _mm_cmpord_ps(v0, v0)));
          __m128 t1 = _mm_or_ps(_mm_cmpgt_ps(v1, b1), _mm_and_ps(_mm_cmpunord_ps(b1, b1), _mm_cmpord_ps(v1, v1)));
          b0 = _mm_or_ps(_mm_and_ps(t0, v0), _mm_andnot_ps(t0, b0));
          b1 = _mm_or_ps(_mm_and_ps(t1, v1), _mm_andnot_ps(t1, b1));
          __m128i m0 = _mm_castps_si128(t0), m1 = _mm_castps_si128(t1);
          i0 = _mm_or_si128(_mm_and_si128(m0, a0), _mm_andnot_si128(m0, i0));
          i1 = _mm_or_si128(_mm_and_si128(m1, a1), _mm_andnot_si128(m1, i1));
        }
      }
    alignas(16) int32_t idx[kGroup];
    _mm_storeu_ps(best, b0);
    _mm_storeu_ps(best + 4, b1);
    _mm_store_si128(reinterpret_cast<__m128i*>(idx), i0);
    _mm_store_si128(reinterpret_cast<__m128i*>(idx + 4), i1);
    for (int j = 0; j < kGroup; ++j) best_i[j] = idx[j];
  }
#endif

  static constexpr int kGroup = 8;
  Window win_;
  std::vector<WindowRange> ranges_[3];
  int64_t planes_ = 0;
  size_t full_begin_ = 0, full_end_ = 0;
  bool int32_positions_ = false;  // every position of a plane fits in int32
};

class FastMaxPoolKernel : public Kernel {
 public:
  Status Init(const KernelArgs& args, const CpuContext& ctx) override {
    const Tensor *x = args.in(0), *y = args.out(0);
    if (!x || !y) return Unimplemented("MaxPool needs X and Y");
    if (args.out(1)) return Unimplemented("MaxPool with Indices runs on the reference kernel");
    if (!DispatchFast(x->dtype, [](auto) {}) || y->dtype != x->dtype) return Unimplemented("MaxPool: f32, f16 or bf16");
    PRECIS_RETURN_IF_ERROR(windows_.Read(args, *x));
    threads_ = std::max(ctx.threads, 1);
    // 16-bit planes are widened whole (vector conversions) and scanned as float; the output
    // plane is narrowed whole. Each thread also has two input rows of maxima (MaxValues).
    row_floats_ = 2 * size_t(windows_.window().in[2]);
    plane_floats_ = (x->dtype == DataType::kF32 ? 0 : size_t(windows_.window().InSize() + windows_.window().OutSize())) + row_floats_;
    return CheckWindowOutput(args, *y, x->dims[0], x->dims[1], windows_.window(), "output Y");
  }

  size_t ScratchBytes() const override { return plane_floats_ * sizeof(float) * size_t(threads_); }

  Status Run(const KernelArgs& args, CpuContext& ctx) override {
    const int64_t in_size = windows_.window().InSize(), out_size = windows_.window().OutSize();
    DispatchFast(args.in(0)->dtype, [&](auto tag) {
      using T = decltype(tag);
      const T* px = args.in(0)->As<T>();
      T* py = args.out(0)->As<T>();
      ParallelFor(windows_.planes(), out_size * windows_.window().KernelSize(), std::min(ctx.threads, threads_), [&](int64_t begin, int64_t end) {
        float* col = reinterpret_cast<float*>(ctx.scratch) + plane_floats_ * size_t(omp_get_thread_num());
        for (int64_t p = begin; p < end; ++p) {
          T* yp = py + p * out_size;
          if constexpr (std::is_same_v<T, float>) {
            windows_.MaxValues(px + p * in_size, yp, col);
          } else {
            float* xf = col + row_floats_;
            float* yf = xf + in_size;
            WidenArray(px + p * in_size, xf, in_size);
            windows_.MaxValues(xf, yf, col);
            NarrowArray(yf, yp, out_size);
          }
        }
      });
    });
    return Status::Ok();
  }

 private:
  MaxWindows windows_;
  int threads_ = 1;
  size_t plane_floats_ = 0, row_floats_ = 0;
};

// MaxPoolGrad(dY, X) -> dX.
class FastMaxPoolGradKernel : public Kernel {
 public:
  Status Init(const KernelArgs& args, const CpuContext& ctx) override {
    const Tensor *dy = args.in(0), *x = args.in(1), *dx = args.out(0);
    if (!dy || !x || !dx) return Unimplemented("MaxPoolGrad needs dY, X and dX");
    if (!DispatchFast(x->dtype, [](auto) {}) || dy->dtype != x->dtype || dx->dtype != x->dtype || dx->dims != x->dims)
      return Unimplemented("MaxPoolGrad: f32, f16 or bf16 of one dtype");
    PRECIS_RETURN_IF_ERROR(windows_.Read(args, *x));
    PRECIS_RETURN_IF_ERROR(CheckWindowOutput(args, *dy, x->dims[0], x->dims[1], windows_.window(), "dY"));
    threads_ = std::max(ctx.threads, 1);
    plane_bytes_ = x->dtype == DataType::kF32 ? 0 : size_t(windows_.window().InSize()) * sizeof(float);
    return Status::Ok();
  }

  // 16-bit steps: per thread, the plane's sums and its X widened (vector conversions, then the
  // window scan over floats: the same maxima, as widening is exact).
  size_t ScratchBytes() const override { return 2 * plane_bytes_ * size_t(threads_); }

  Status Run(const KernelArgs& args, CpuContext& ctx) override {
    const int64_t in_size = windows_.window().InSize(), out_size = windows_.window().OutSize();
    DispatchFast(args.in(1)->dtype, [&](auto tag) {
      using T = decltype(tag);
      const T* pg = args.in(0)->As<T>();
      const T* px = args.in(1)->As<T>();
      T* pdx = args.out(0)->As<T>();
      ParallelFor(windows_.planes(), out_size * windows_.window().KernelSize(), std::min(ctx.threads, threads_),
                  [&](int64_t begin, int64_t end) {
                    float *sums = nullptr, *xw = nullptr;
                    if constexpr (!std::is_same_v<T, float>) {
                      sums = reinterpret_cast<float*>(ctx.scratch + 2 * plane_bytes_ * size_t(omp_get_thread_num()));
                      xw = sums + in_size;
                    }
                    for (int64_t p = begin; p < end; ++p) {
                      const T* gp = pg + p * out_size;
                      if constexpr (std::is_same_v<T, float>) {
                        sums = pdx + p * in_size;
                        std::fill(sums, sums + in_size, 0.0f);
                        windows_.Scan(px + p * in_size, [&](int64_t o, float, int64_t at) {
                          if (at >= 0) sums[at] += gp[o];
                        });
                      } else {
                        std::fill(sums, sums + in_size, 0.0f);
                        WidenArray(px + p * in_size, xw, in_size);
                        windows_.Scan(static_cast<const float*>(xw), [&](int64_t o, float, int64_t at) {
                          if (at >= 0) sums[at] += Load(gp[o]);
                        });
                        NarrowArray(sums, pdx + p * in_size, in_size);
                      }
                    }
                  });
    });
    return Status::Ok();
  }

 private:
  MaxWindows windows_;
  int threads_ = 1;
  size_t plane_bytes_ = 0;
};

// ReluGrad(dY, X) -> dY where X > 0, else 0; dY and X of one fast dtype.
class FastReluGradKernel : public Kernel {
 public:
  Status Init(const KernelArgs& args, const CpuContext&) override {
    const Tensor *dy = args.in(0), *x = args.in(1), *dx = args.out(0);
    if (!dy || !x || !dx || !DispatchFast(dy->dtype, [](auto) {}) || x->dtype != dy->dtype || dx->dtype != dy->dtype)
      return Unimplemented("ReluGrad: dY, X and dX of one dtype (f32, f16 or bf16)");
    if (x->dims != dy->dims || dx->dims != dy->dims) return Unimplemented("ReluGrad: one shape");
    return Status::Ok();
  }

  Status Run(const KernelArgs& args, CpuContext& ctx) override {
    const DataType dt = args.in(0)->dtype;
    if (dt != DataType::kF32) {
      const uint16_t* pg = args.in(0)->As<uint16_t>();
      const uint16_t* px = args.in(1)->As<uint16_t>();
      uint16_t* pdx = args.out(0)->As<uint16_t>();
      ParallelFor(args.in(0)->numel, 1, ctx.threads, [&](int64_t begin, int64_t end) {
        if (dt == DataType::kF16) ReluGradBits<0x7c00, 0x0200>(pg + begin, px + begin, pdx + begin, end - begin);
        else ReluGradBits<0x7f80, 0x0040>(pg + begin, px + begin, pdx + begin, end - begin);
      });
      return Status::Ok();
    }
    const float* pg = args.in(0)->As<float>();
    const float* px = args.in(1)->As<float>();
    float* pdx = args.out(0)->As<float>();
    ParallelFor(args.in(0)->numel, 1, ctx.threads, [&](int64_t begin, int64_t end) {
      // dY is read unconditionally so that the select vectorizes (a conditional read does not).
      for (int64_t i = begin; i < end; ++i) {
        float g = pg[i];
        pdx[i] = px[i] > 0.0f ? g : 0.0f;
      }
    });
    return Status::Ok();
  }

 private:
  // 16-bit ReluGrad on the bits, no conversion: X > 0 is a clear sign bit and a magnitude in
  // (0, inf] (NaN and both zeros are not); dY passes as Store(Load(dY)) passes it: unchanged, a
  // NaN with its quiet bit set. Branch-free 16-bit lanes (the widening form took 5x the FP32
  // kernel's time in a ResNet-18 FP16 training step).
  template <uint16_t kInf, uint16_t kQuiet>
  static void ReluGradBits(const uint16_t* g, const uint16_t* x, uint16_t* out, int64_t n) {
    for (int64_t i = 0; i < n; ++i) {
      int16_t xi = int16_t(x[i]);
      uint16_t gi = g[i];
      uint16_t passed = uint16_t(gi & 0x7fff) > kInf ? uint16_t(gi | kQuiet) : gi;
      out[i] = xi > 0 && xi <= int16_t(kInf) ? passed : uint16_t(0);
    }
  }
};

// UnscaleGradients(inv_scale, g1..gn) -> g1'..gn', found_inf, as the reference kernel
// (training.cc): the non-finite check before the multiply, a multiplier of 1 leaving values as
// they are. Elements of each gradient split among the threads; f32, f16 and bf16 gradients.
class FastUnscaleGradientsKernel : public Kernel {
 public:
  Status Init(const KernelArgs& args, const CpuContext&) override {
    size_t n = args.inputs.size();
    if (n < 2 || args.outputs.size() != n || !args.in(0) || args.in(0)->dtype != DataType::kF32 || args.in(0)->numel != 1)
      return Unimplemented("UnscaleGradients: the reference kernel checks this step");
    for (size_t i = 1; i < n; ++i) {
      const Tensor *g = args.in(i), *o = args.out(i - 1);
      if (!g || !o || !DispatchFast(g->dtype, [](auto) {}) || o->dtype != g->dtype || o->numel != g->numel)
        return Unimplemented("UnscaleGradients: f32, f16 or bf16 gradients, each output of its gradient's type");
    }
    const Tensor* f = args.out(n - 1);
    if (!f || f->dtype != DataType::kBool || f->numel != 1) return Unimplemented("UnscaleGradients: found_inf must be a bool scalar");
    return Status::Ok();
  }

  Status Run(const KernelArgs& args, CpuContext& ctx) override {
    const float inv = *args.in(0)->As<float>();
    std::atomic<bool> found{false};
    for (size_t i = 1; i < args.inputs.size(); ++i) {
      const Tensor& g = *args.in(i);
      Tensor& o = *args.out(i - 1);
      DispatchFast(g.dtype, [&](auto tag) {
        using T = decltype(tag);
        const T* pg = g.As<T>();
        T* po = o.As<T>();
        ParallelFor(g.numel, 2, ctx.threads, [&](int64_t begin, int64_t end) {
          bool bad = false;
          FloatBlocks(pg + begin, end - begin, [&](const float* v, int64_t offset, int64_t m) {
            uint32_t nonfinite = 0;
            for (int64_t j = 0; j < m; ++j) {
              uint32_t bits;
              std::memcpy(&bits, v + j, 4);
              nonfinite |= uint32_t((bits & 0x7f800000u) == 0x7f800000u);
            }
            bad |= nonfinite != 0;
            if (inv == 1.0f) {
              if (static_cast<const void*>(pg) != static_cast<const void*>(po)) std::memcpy(po + begin + offset, pg + begin + offset, size_t(m) * sizeof(T));
              return;
            }
            float block[kBlock];
            for (int64_t done = 0; done < m; done += kBlock) {
              int64_t k = std::min(kBlock, m - done);
              for (int64_t j = 0; j < k; ++j) block[j] = v[done + j] * inv;
              StoreBlock(block, po + begin + offset, done, k);
            }
          });
          if (bad) found.store(true, std::memory_order_relaxed);
        });
      });
    }
    *args.out(args.outputs.size() - 1)->As<bool>() = found.load();
    return Status::Ok();
  }
};

// [N, C, inner...] tensors walked per channel: channel c of sample n is one row of `inner`.
// X, Y, dY and dX are f32, f16 or bf16 (one dtype); 16-bit rows are widened in blocks of kBlock
// into the thread's stack (exact) and results rounded once when stored. Scale, B and the batch
// statistics are f32.
struct Channels {
  int64_t N = 0, C = 0, inner = 1;
  int64_t count() const { return N * inner; }
};

Status ReadChannels(const Tensor& x, Channels* l) {
  if (!DispatchFast(x.dtype, [](auto) {}) || x.rank() < 2)
    return Unimplemented("BatchNormalizationTraining: f32, f16 or bf16 [N, C, ...] only");
  *l = {x.dims[0], x.dims[1], 1};
  for (size_t d = 2; d < x.dims.size(); ++d) l->inner *= x.dims[d];
  if (l->count() < 1) return Unimplemented("empty batch");
  return Status::Ok();
}

bool F32Vector(const Tensor* t, int64_t c) { return t && t->dtype == DataType::kF32 && t->numel == c; }

class FastBatchNormTrainingKernel : public Kernel {
 public:
  Status Init(const KernelArgs& args, const CpuContext&) override {
    const Tensor* x = args.in(0);
    if (!x || !args.out(0)) return Unimplemented("needs X and Y");
    PRECIS_RETURN_IF_ERROR(ReadChannels(*x, &l_));
    if (args.out(0)->dims != x->dims || args.out(0)->dtype != x->dtype) return Unimplemented("Y must have X's type and shape");
    if (!F32Vector(args.in(1), l_.C) || !F32Vector(args.in(2), l_.C)) return Unimplemented("f32 scale and B");
    for (size_t i = 1; i < 3; ++i)
      if (args.out(i) && !F32Vector(args.out(i), l_.C)) return Unimplemented("f32 batch statistics");
    eps_ = args.attrs.Float("epsilon", 1e-5f);
    return Status::Ok();
  }

  Status Run(const KernelArgs& args, CpuContext& ctx) override {
    DispatchFast(args.in(0)->dtype, [&](auto tag) { RunTyped<decltype(tag)>(args, ctx); });
    return Status::Ok();
  }

 private:
  template <typename T>
  void RunTyped(const KernelArgs& args, CpuContext& ctx) {
    const T* px = args.in(0)->As<T>();
    const float* scale = args.in(1)->As<float>();
    const float* bias = args.in(2)->As<float>();
    T* py = args.out(0)->As<T>();
    float* mean_out = args.out(1) ? args.out(1)->As<float>() : nullptr;
    float* var_out = args.out(2) ? args.out(2)->As<float>() : nullptr;
    const int64_t C = l_.C, inner = l_.inner;
    const double n = double(l_.count());
    ParallelFor(C, l_.count() * 4, ctx.threads, [&](int64_t begin, int64_t end) {
      for (int64_t c = begin; c < end; ++c) {
        double sum = 0, sq = 0;
        for (int64_t b = 0; b < l_.N; ++b)
          FloatBlocks(px + (b * C + c) * inner, inner, [&](const float* x, int64_t, int64_t m) { sum += SumDouble(x, m); });
        double mean = sum / n;
        for (int64_t b = 0; b < l_.N; ++b)
          FloatBlocks(px + (b * C + c) * inner, inner, [&](const float* x, int64_t, int64_t m) { sq += SquaredDeviations(x, m, mean); });
        double var = sq / n;
        double a = double(scale[c]) / std::sqrt(var + double(eps_));
        float af = float(a), shift = float(double(bias[c]) - mean * a);
        for (int64_t b = 0; b < l_.N; ++b) {
          T* yr = py + (b * C + c) * inner;
          if constexpr (std::is_same_v<T, float>) {
            const float* xr = px + (b * C + c) * inner;
            for (int64_t i = 0; i < inner; ++i) yr[i] = xr[i] * af + shift;
          } else {
            FloatBlocks(px + (b * C + c) * inner, inner, [&](const float* x, int64_t offset, int64_t m) {
              float out[kBlock];
              for (int64_t i = 0; i < m; ++i) out[i] = x[i] * af + shift;
              StoreBlock(out, yr, offset, m);
            });
          }
        }
        if (mean_out) mean_out[c] = float(mean);
        if (var_out) var_out[c] = float(var);
      }
    });
  }

  Channels l_;
  float eps_ = 1e-5f;
};

// With r = 1/sqrt(var + eps), M values per channel, dB = sum(dY), dscale = r * sum(dY * (X - mean)),
// dX = scale * r / M * (M * dY - dB - (X - mean) * r * dscale) = a * dY + b * X + c.
class FastBatchNormTrainingGradKernel : public Kernel {
 public:
  Status Init(const KernelArgs& args, const CpuContext&) override {
    const Tensor *dy = args.in(0), *x = args.in(1);
    if (!dy || !x) return Unimplemented("needs dY and X");
    PRECIS_RETURN_IF_ERROR(ReadChannels(*x, &l_));
    if (dy->dtype != x->dtype || dy->dims != x->dims) return Unimplemented("dY must have X's type and shape");
    for (size_t i = 2; i < 5; ++i)
      if (!F32Vector(args.in(i), l_.C)) return Unimplemented("f32 scale, mean and var");
    if (args.out(0) && (args.out(0)->dims != x->dims || args.out(0)->dtype != x->dtype)) return Unimplemented("dX must have X's type and shape");
    for (size_t i = 1; i < 3; ++i)
      if (args.out(i) && !F32Vector(args.out(i), l_.C)) return Unimplemented("f32 dscale and dB");
    eps_ = args.attrs.Float("epsilon", 1e-5f);
    return Status::Ok();
  }

  Status Run(const KernelArgs& args, CpuContext& ctx) override {
    DispatchFast(args.in(1)->dtype, [&](auto tag) { RunTyped<decltype(tag)>(args, ctx); });
    return Status::Ok();
  }

 private:
  template <typename T>
  void RunTyped(const KernelArgs& args, CpuContext& ctx) {
    const T* pg = args.in(0)->As<T>();
    const T* px = args.in(1)->As<T>();
    const float* scale = args.in(2)->As<float>();
    const float* means = args.in(3)->As<float>();
    const float* vars = args.in(4)->As<float>();
    T* pdx = args.out(0) ? args.out(0)->As<T>() : nullptr;
    float* dscale_out = args.out(1) ? args.out(1)->As<float>() : nullptr;
    float* db_out = args.out(2) ? args.out(2)->As<float>() : nullptr;
    const int64_t C = l_.C, inner = l_.inner;
    const double m = double(l_.count());
    ParallelFor(C, l_.count() * 5, ctx.threads, [&](int64_t begin, int64_t end) {
      for (int64_t c = begin; c < end; ++c) {
        double mean = double(means[c]), r = 1.0 / std::sqrt(double(vars[c]) + double(eps_));
        double db = 0, dot = 0;
        for (int64_t b = 0; b < l_.N; ++b)
          FloatBlocks2(pg + (b * C + c) * inner, px + (b * C + c) * inner, inner,
                       [&](const float* g, const float* x, int64_t, int64_t k) { fast::SumAndCenteredDot16(g, x, k, mean, &db, &dot); });
        double dscale = dot * r;
        if (dscale_out) dscale_out[c] = float(dscale);
        if (db_out) db_out[c] = float(db);
        if (!pdx) continue;
        double k = double(scale[c]) * r / m;
        double a = k * m, bx = -k * r * dscale, c0 = -k * db + k * r * dscale * mean;
        for (int64_t b = 0; b < l_.N; ++b) {
          T* dr = pdx + (b * C + c) * inner;
          if constexpr (std::is_same_v<T, float>) {
            fast::BatchNormGradArray(pg + (b * C + c) * inner, px + (b * C + c) * inner, a, bx, c0, dr, inner);
          } else {
            // 16-bit dX rounds to 8 or 11 bits: the float form (x centered) is well within that.
            const float af = float(a), bf = float(bx), meanf = float(mean), cf = float(-k * db);
            FloatBlocks2(pg + (b * C + c) * inner, px + (b * C + c) * inner, inner,
                         [&](const float* g, const float* x, int64_t offset, int64_t n) {
                           float out[kBlock];
                           fast::BatchNormGradArrayF(g, x, af, bf, meanf, cf, out, n);
                           StoreBlock(out, dr, offset, n);
                         });
          }
        }
      }
    });
  }

  Channels l_;
  float eps_ = 1e-5f;
};

}  // namespace

void AddFastTrainingKernels(KernelRegistry& r) {
  r.RegisterFast("MaxPool", Make<FastMaxPoolKernel>);
  r.RegisterFast("MaxPoolGrad", Make<FastMaxPoolGradKernel>);
  r.RegisterFast("ReluGrad", Make<FastReluGradKernel>);
  r.RegisterFast("UnscaleGradients", Make<FastUnscaleGradientsKernel>);
  r.RegisterFast("BatchNormalizationTraining", Make<FastBatchNormTrainingKernel>);
  r.RegisterFast("BatchNormalizationTrainingGrad", Make<FastBatchNormTrainingGradKernel>);
}

}  // namespace precis::rt::fast
