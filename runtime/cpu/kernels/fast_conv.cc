// Direct depthwise convolution on NCHW (f32, 2-D, group == C == M, square 3x3 or 5x5 kernel,
// stride 1 or 2, any dilation and padding, optional bias). oneDNN's depthwise convolution wants
// channel-blocked activations, and reordering X in and Y out around it cost as much as the
// convolution itself (mobilenet_v2); a plane-by-plane loop reads X and writes Y once. Planes
// (n, c) run in parallel; within a plane each output row is one pass over the output columns
// whose taps all lie inside the image (vectorized, AVX2+FMA when the CPU has it), with the few
// edge columns done tap by tap and rows outside the image read as a row of zeros.
// Accumulates in float, bias first, then taps row by row (fast_conv_test.cc states the bound).
#include <algorithm>
#include <string>
#include <vector>

#include "runtime/cpu/kernels/conv_kernels.h"
#include "runtime/cpu/kernels/fast_util.h"

namespace precis::rt::fast {
namespace {

// The geometry of one image plane: input h x w, output oh x ow, strides, dilations, leading pads.
struct Plane {
  int64_t h, w, oh, ow, sh, sw, dh, dw, pt, pl;
};

template <bool kFma>
inline float MulAdd(float a, float b, float c) {
  if constexpr (kFma) return __builtin_fmaf(a, b, c);
  return a * b + c;
}

// One output plane. Rows above or below the image read `zeros` (p.w zeros), so only columns near
// the left and right edges need bounds checks.
template <int K, int S, bool kFma>
inline __attribute__((always_inline)) void PlaneBody(const float* __restrict x, const float* __restrict w, float b,
                                                     float* __restrict y, const Plane& p, const float* zeros) {
  // Interior columns [lo, hi): ox * S - pl >= 0 and ox * S - pl + (K - 1) * dw <= w - 1.
  int64_t lo = std::min((p.pl + S - 1) / S, p.ow);
  int64_t last = p.w - 1 + p.pl - (K - 1) * p.dw;
  int64_t hi = std::max(last < 0 ? 0 : std::min(last / S + 1, p.ow), lo);
  for (int64_t oy = 0; oy < p.oh; ++oy) {
    const float* rows[K];
    for (int ky = 0; ky < K; ++ky) {
      int64_t iy = oy * p.sh - p.pt + ky * p.dh;
      rows[ky] = iy >= 0 && iy < p.h ? x + iy * p.w : zeros;
    }
    float* __restrict out = y + oy * p.ow;
    auto edge = [&](int64_t ox) {
      float s = b;
      for (int ky = 0; ky < K; ++ky)
        for (int kx = 0; kx < K; ++kx) {
          int64_t ix = ox * S - p.pl + kx * p.dw;
          if (ix >= 0 && ix < p.w) s = MulAdd<kFma>(w[ky * K + kx], rows[ky][ix], s);
        }
      out[ox] = s;
    };
    for (int64_t ox = 0; ox < lo; ++ox) edge(ox);
    for (int64_t ox = lo; ox < hi; ++ox) {
      float s = b;
      for (int ky = 0; ky < K; ++ky) {
        const float* r = rows[ky] + ox * S - p.pl;
        for (int kx = 0; kx < K; ++kx) s = MulAdd<kFma>(w[ky * K + kx], r[kx * p.dw], s);
      }
      out[ox] = s;
    }
    for (int64_t ox = hi; ox < p.ow; ++ox) edge(ox);
  }
}

using PlaneFn = void (*)(const float*, const float*, float, float*, const Plane&, const float*);

template <int K, int S>
void PlanePortable(const float* x, const float* w, float b, float* y, const Plane& p, const float* zeros) {
  PlaneBody<K, S, false>(x, w, b, y, p, zeros);
}

#if defined(__x86_64__)
template <int K, int S>
__attribute__((target("avx2,fma"))) void PlaneAvx2(const float* x, const float* w, float b, float* y, const Plane& p,
                                                   const float* zeros) {
  PlaneBody<K, S, true>(x, w, b, y, p, zeros);
}
#endif

template <int K, int S>
PlaneFn SelectPlane() {
#if defined(__x86_64__)
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return PlaneAvx2<K, S>;
#endif
  return PlanePortable<K, S>;
}

// ONNX padding for one spatial dim (explicit pads or auto_pad, as the reference kernel reads
// them): the leading pad and the output size; false when the window does not fit.
bool Geometry(int64_t in, int64_t k, int64_t s, int64_t d, int64_t pb, int64_t pe, const std::string& auto_pad, int64_t* lead,
              int64_t* out) {
  int64_t ext = (k - 1) * d + 1;
  if (auto_pad == "VALID") pb = pe = 0;
  if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
    int64_t total = std::max<int64_t>(0, ((in + s - 1) / s - 1) * s + ext - in);
    pb = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
    pe = total - pb;
  } else if (auto_pad != "NOTSET" && auto_pad != "VALID") {
    return false;
  }
  if (pb < 0 || pe < 0 || in + pb + pe < ext) return false;
  *lead = pb;
  *out = (in + pb + pe - ext) / s + 1;
  return true;
}

class DepthwiseConvKernel : public Kernel {
 public:
  Status Init(const KernelArgs& args, const CpuContext& ctx) override {
    (void)ctx;
    const Tensor *x = args.in(0), *w = args.in(1), *b = args.in(2), *y = args.out(0);
    if (!x || !w || !y) return Unimplemented("depthwise conv: needs X, W and Y");
    for (const Tensor* t : {x, w, b, y})
      if (t && t->dtype != DataType::kF32) return Unimplemented("depthwise conv: f32 only");
    if (x->rank() != 4 || w->rank() != 4 || y->rank() != 4) return Unimplemented("depthwise conv: 2-D only");
    int64_t C = x->dims[1], K = w->dims[2];
    if (args.attrs.Int("group", 1) != C || w->dims[0] != C || w->dims[1] != 1) return Unimplemented("depthwise conv: group == C == M only");
    if (w->dims[3] != K || (K != 3 && K != 5)) return Unimplemented("depthwise conv: 3x3 or 5x5 kernel only");
    if (args.attrs.Ints("kernel_shape", {K, K}) != std::vector<int64_t>{K, K}) return Unimplemented("depthwise conv: kernel_shape differs from W");
    if (b && (b->rank() != 1 || b->dims[0] != C)) return Unimplemented("depthwise conv: bias must be [C]");
    auto strides = args.attrs.Ints("strides", {1, 1}), dilations = args.attrs.Ints("dilations", {1, 1});
    auto pads = args.attrs.Ints("pads", {0, 0, 0, 0});
    std::string auto_pad = args.attrs.String("auto_pad", "NOTSET");
    if (auto_pad.empty()) auto_pad = "NOTSET";
    if (strides.size() != 2 || dilations.size() != 2 || pads.size() != 4) return Unimplemented("depthwise conv: bad attribute ranks");
    if (strides[0] != strides[1] || (strides[0] != 1 && strides[0] != 2)) return Unimplemented("depthwise conv: stride 1 or 2 only");
    if (dilations[0] <= 0 || dilations[1] <= 0) return Unimplemented("depthwise conv: dilations must be positive");
    Plane& p = plane_;
    p = {x->dims[2], x->dims[3], 0, 0, strides[0], strides[1], dilations[0], dilations[1], 0, 0};
    if (!Geometry(p.h, K, p.sh, p.dh, pads[0], pads[2], auto_pad, &p.pt, &p.oh) ||
        !Geometry(p.w, K, p.sw, p.dw, pads[1], pads[3], auto_pad, &p.pl, &p.ow))
      return Unimplemented("depthwise conv: window does not fit");
    if (y->dims != std::vector<int64_t>{x->dims[0], C, p.oh, p.ow}) return Unimplemented("depthwise conv: planned output shape differs");
    if (x->numel == 0 || y->numel == 0) return Unimplemented("depthwise conv: empty tensor");
    planes_ = x->dims[0] * C;
    channels_ = C;
    k_ = K;
    zeros_.assign(size_t(p.w), 0.0f);
    fn_ = K == 3 ? (p.sw == 1 ? SelectPlane<3, 1>() : SelectPlane<3, 2>()) : (p.sw == 1 ? SelectPlane<5, 1>() : SelectPlane<5, 2>());
    return Status::Ok();
  }

  Status Run(const KernelArgs& args, CpuContext& ctx) override {
    const float *x = args.in(0)->As<float>(), *w = args.in(1)->As<float>();
    const float* b = args.in(2) ? args.in(2)->As<float>() : nullptr;
    float* y = args.out(0)->As<float>();
    const Plane& p = plane_;
    int64_t in_plane = p.h * p.w, out_plane = p.oh * p.ow, taps = k_ * k_;
    ParallelFor(planes_, out_plane * taps, ctx.threads, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        int64_t c = i % channels_;
        fn_(x + i * in_plane, w + c * taps, b ? b[c] : 0.0f, y + i * out_plane, p, zeros_.data());
      }
    });
    return Status::Ok();
  }

 private:
  Plane plane_{};
  int64_t planes_ = 0, channels_ = 0, k_ = 0;
  std::vector<float> zeros_;
  PlaneFn fn_ = nullptr;
};

}  // namespace
}  // namespace precis::rt::fast

namespace precis::rt {

std::unique_ptr<Kernel> MakeDepthwiseConvKernel() { return std::make_unique<fast::DepthwiseConvKernel>(); }

}  // namespace precis::rt
