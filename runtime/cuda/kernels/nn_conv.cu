// Conv and ConvTranspose on CUDA, with the window geometry shared with the CPU kernels (ReadWindow
// and ReadTransposeWindow of runtime/kernels/nn_window.h). cuDNN (CudnnConv) runs
// them with 1-D convolutions as 2-D ones of height 1: Conv pads the input into scratch when its
// pads are asymmetric (cuDNN pads symmetrically), ConvTranspose is cuDNN's backward-data
// convolution, computed in full and cropped when its begin and end pads do not fit cuDNN's
// symmetric form. The bias is written into Y first and the convolution added to it (beta = 1),
// so a 16-bit Y is rounded once, as on the CPU; a fused Relu is a pass after (it commutes with
// the rounding). FP16/BF16 Conv steps with a bias or Relu run all three as one cuDNN graph
// (CudnnFusedConv) where cuDNN has an engine for it. Whatever cuDNN refuses runs a direct
// kernel: one thread per output element,
// FP32 accumulation (f64 in double). ConvFilterGrad (the filter gradient of training plans) is
// cuDNN's backward-filter convolution, with a direct kernel (one thread per filter element) as
// its fallback.
#include <algorithm>
#include <vector>

#include "runtime/cuda/kernels/nn_device.cuh"
#include "runtime/kernels/nn_window.h"

namespace precis::rt::cuda {
namespace {

// Window in device form: 3 right-aligned spatial slots (leading ones of size 1).
struct ConvWindow {
  int64_t in[3], out[3], kernel[3], stride[3], dilation[3], pad[3];
};

ConvWindow DeviceWindow(const Window& w) {
  ConvWindow d;
  for (int i = 0; i < 3; ++i) {
    d.in[i] = w.in[size_t(i)];
    d.out[i] = w.out[size_t(i)];
    d.kernel[i] = w.kernel[size_t(i)];
    d.stride[i] = w.stride[size_t(i)];
    d.dilation[i] = w.dilation[size_t(i)];
    d.pad[i] = w.pad_begin[size_t(i)];
  }
  return d;
}

struct DirectConvParams {
  int64_t C = 0, M = 0, Cg = 0, Mg = 0;  // input and output channels, and per group
  ConvWindow w;
  int activation = 0;
};

// Y[n, m, o] = act(sum_{c in group, k} X[n, c, o * s - pad + k * d] W[m, c, k] + B[m]).
template <typename T> struct DirectConv {
  DirectConvParams p;
  const T *x, *w, *b;
  T* y;
  PRECIS_NN_HD void operator()(int64_t i) const {
    using A = FloatAcc<T>;
    const ConvWindow& g = p.w;
    int64_t ow = i % g.out[2], t = i / g.out[2];
    int64_t oh = t % g.out[1];
    t /= g.out[1];
    int64_t od = t % g.out[0];
    t /= g.out[0];
    int64_t m = t % p.M, n = t / p.M;
    int64_t in_size = g.in[0] * g.in[1] * g.in[2], ks = g.kernel[0] * g.kernel[1] * g.kernel[2];
    const T* xg = x + (n * p.C + m / p.Mg * p.Cg) * in_size;
    const T* wm = w + m * p.Cg * ks;
    A acc = 0;
    for (int64_t c = 0; c < p.Cg; ++c) {
      const T* xc = xg + c * in_size;
      const T* wc = wm + c * ks;
      for (int64_t kd = 0; kd < g.kernel[0]; ++kd) {
        int64_t id = od * g.stride[0] - g.pad[0] + kd * g.dilation[0];
        if (id < 0 || id >= g.in[0]) continue;
        for (int64_t kh = 0; kh < g.kernel[1]; ++kh) {
          int64_t ih = oh * g.stride[1] - g.pad[1] + kh * g.dilation[1];
          if (ih < 0 || ih >= g.in[1]) continue;
          for (int64_t kw = 0; kw < g.kernel[2]; ++kw) {
            int64_t iw = ow * g.stride[2] - g.pad[2] + kw * g.dilation[2];
            if (iw < 0 || iw >= g.in[2]) continue;
            acc += A(LoadN(xc[(id * g.in[1] + ih) * g.in[2] + iw])) * A(LoadN(wc[(kd * g.kernel[1] + kh) * g.kernel[2] + kw]));
          }
        }
      }
    }
    if (b) acc += A(LoadN(b[m]));
    y[i] = StoreN<T>(ApplyActivation(acc, p.activation));
  }
};

// Channels last (2-D, layout "NHWC", where cuDNN refuses the step or its pads are asymmetric):
// Y[n, oh, ow, m] = act(sum_{c in group, kh, kw} X[n, ih, iw, c] W[m, kh, kw, c] + B[m]), the same
// sums in the same order as DirectConv (channel outermost).
template <typename T> struct DirectConvNhwc {
  DirectConvParams p;
  const T *x, *w, *b;
  T* y;
  PRECIS_NN_HD void operator()(int64_t i) const {
    using A = FloatAcc<T>;
    const ConvWindow& g = p.w;
    int64_t m = i % p.M, t = i / p.M;
    int64_t ow = t % g.out[2];
    t /= g.out[2];
    int64_t oh = t % g.out[1], n = t / g.out[1];
    const T* xn = x + n * g.in[1] * g.in[2] * p.C + m / p.Mg * p.Cg;
    const T* wm = w + m * g.kernel[1] * g.kernel[2] * p.Cg;
    A acc = 0;
    for (int64_t c = 0; c < p.Cg; ++c)
      for (int64_t kh = 0; kh < g.kernel[1]; ++kh) {
        int64_t ih = oh * g.stride[1] - g.pad[1] + kh * g.dilation[1];
        if (ih < 0 || ih >= g.in[1]) continue;
        for (int64_t kw = 0; kw < g.kernel[2]; ++kw) {
          int64_t iw = ow * g.stride[2] - g.pad[2] + kw * g.dilation[2];
          if (iw < 0 || iw >= g.in[2]) continue;
          acc += A(LoadN(xn[(ih * g.in[2] + iw) * p.C + c])) * A(LoadN(wm[(kh * g.kernel[2] + kw) * p.Cg + c]));
        }
      }
    if (b) acc += A(LoadN(b[m]));
    y[i] = StoreN<T>(ApplyActivation(acc, p.activation));
  }
};

// ConvTranspose: Y[n, m, o] = act(sum_{c in group, k: o = i * s - pad + k * d} X[n, c, i] W[c, m % Mg, k] + B[m]),
// here with w.in the spatial dims of X and w.out those of Y.
template <typename T> struct DirectConvTranspose {
  DirectConvParams p;
  const T *x, *w, *b;
  T* y;
  PRECIS_NN_HD void operator()(int64_t i) const {
    using A = FloatAcc<T>;
    const ConvWindow& g = p.w;
    int64_t ow = i % g.out[2], t = i / g.out[2];
    int64_t oh = t % g.out[1];
    t /= g.out[1];
    int64_t od = t % g.out[0];
    t /= g.out[0];
    int64_t m = t % p.M, n = t / p.M, grp = m / p.Mg, mm = m % p.Mg;
    int64_t in_size = g.in[0] * g.in[1] * g.in[2], ks = g.kernel[0] * g.kernel[1] * g.kernel[2];
    A acc = 0;
    for (int64_t c = 0; c < p.Cg; ++c) {
      int64_t ci = grp * p.Cg + c;
      const T* xc = x + (n * p.C + ci) * in_size;
      const T* wc = w + (ci * p.Mg + mm) * ks;
      for (int64_t kd = 0; kd < g.kernel[0]; ++kd) {
        int64_t td = od + g.pad[0] - kd * g.dilation[0];
        if (td < 0 || td % g.stride[0] != 0 || td / g.stride[0] >= g.in[0]) continue;
        for (int64_t kh = 0; kh < g.kernel[1]; ++kh) {
          int64_t th = oh + g.pad[1] - kh * g.dilation[1];
          if (th < 0 || th % g.stride[1] != 0 || th / g.stride[1] >= g.in[1]) continue;
          for (int64_t kw = 0; kw < g.kernel[2]; ++kw) {
            int64_t tw = ow + g.pad[2] - kw * g.dilation[2];
            if (tw < 0 || tw % g.stride[2] != 0 || tw / g.stride[2] >= g.in[2]) continue;
            int64_t at = (td / g.stride[0] * g.in[1] + th / g.stride[1]) * g.in[2] + tw / g.stride[2];
            acc += A(LoadN(xc[at])) * A(LoadN(wc[(kd * g.kernel[1] + kh) * g.kernel[2] + kw]));
          }
        }
      }
    }
    if (b) acc += A(LoadN(b[m]));
    y[i] = StoreN<T>(ApplyActivation(acc, p.activation));
  }
};

// ConvFilterGrad: dW[m, c, k] = sum over n and o of dY[n, m, o] * X[n, group(m) * Cg + c, o * s - pad + k * d]
// (positions outside X contribute nothing), one thread per element of dW, FP32 accumulation
// (f64 in double); here w.in are X's spatial dims and w.out dY's.
template <typename T> struct DirectFilterGrad {
  DirectConvParams p;
  int64_t N = 0;
  const T *x, *dy;
  T* dw;
  PRECIS_NN_HD void operator()(int64_t i) const {
    using A = FloatAcc<T>;
    const ConvWindow& g = p.w;
    int64_t kw = i % g.kernel[2], t = i / g.kernel[2];
    int64_t kh = t % g.kernel[1];
    t /= g.kernel[1];
    int64_t kd = t % g.kernel[0];
    t /= g.kernel[0];
    int64_t c = t % p.Cg, m = t / p.Cg;
    int64_t in_size = g.in[0] * g.in[1] * g.in[2], out_size = g.out[0] * g.out[1] * g.out[2];
    A acc = 0;
    for (int64_t n = 0; n < N; ++n) {
      const T* xc = x + (n * p.C + m / p.Mg * p.Cg + c) * in_size;
      const T* gm = dy + (n * p.M + m) * out_size;
      for (int64_t od = 0; od < g.out[0]; ++od) {
        int64_t id = od * g.stride[0] - g.pad[0] + kd * g.dilation[0];
        if (id < 0 || id >= g.in[0]) continue;
        for (int64_t oh = 0; oh < g.out[1]; ++oh) {
          int64_t ih = oh * g.stride[1] - g.pad[1] + kh * g.dilation[1];
          if (ih < 0 || ih >= g.in[1]) continue;
          for (int64_t ow = 0; ow < g.out[2]; ++ow) {
            int64_t iw = ow * g.stride[2] - g.pad[2] + kw * g.dilation[2];
            if (iw < 0 || iw >= g.in[2]) continue;
            acc += A(LoadN(gm[(od * g.out[1] + oh) * g.out[2] + ow])) * A(LoadN(xc[(id * g.in[1] + ih) * g.in[2] + iw]));
          }
        }
      }
    }
    dw[i] = StoreN<T>(acc);
  }
};

// Planes of `in` placed into planes of `out` (3 spatial slots) with `before` positions ahead of
// each dim (negative: cropped); positions outside `in` read as zero. Explicit padding, cropping.
struct Reframe {
  int64_t in[3], out[3], before[3];

  // The element of `in` under output element i, or -1 outside; *plane gets i's plane.
  PRECIS_NN_HD int64_t Source(int64_t i, int64_t* plane) const {
    int64_t w = i % out[2], t = i / out[2];
    int64_t h = t % out[1];
    t /= out[1];
    int64_t d = t % out[0];
    *plane = t / out[0];
    int64_t sd = d - before[0], sh = h - before[1], sw = w - before[2];
    if (sd < 0 || sd >= in[0] || sh < 0 || sh >= in[1] || sw < 0 || sw >= in[2]) return -1;
    return ((*plane * in[0] + sd) * in[1] + sh) * in[2] + sw;
  }
};

template <typename U> struct ReframeCopy {
  Reframe r;
  const U* src;
  U* dst;
  PRECIS_NN_HD void operator()(int64_t i) const {
    int64_t plane, at = r.Source(i, &plane);
    dst[i] = at >= 0 ? src[at] : U(0);
  }
};

// Y[i] = B[(i / plane) % M]: the bias broadcast over each output plane.
template <typename U> struct FillBias {
  const U* b;
  U* y;
  int64_t plane, M;
  PRECIS_NN_HD void operator()(int64_t i) const { y[i] = b[i / plane % M]; }
};

// Y[n, m, o] = act(full[n, m, o - before] + B[m]), zero where that falls outside `full`.
template <typename T> struct CropBiasActivate {
  Reframe r;
  const T *full, *b;
  T* y;
  int64_t M;
  int activation;
  PRECIS_NN_HD void operator()(int64_t i) const {
    using A = FloatAcc<T>;
    int64_t plane, at = r.Source(i, &plane);
    A v = at >= 0 ? A(LoadN(full[at])) : A(0);
    if (b) v += A(LoadN(b[plane % M]));
    y[i] = StoreN<T>(ApplyActivation(v, activation));
  }
};

// Shared validation of X, W, B, Y (as the CPU's CheckConvTypes).
Status CheckConvTypes(const KernelArgs& args) {
  Tensor *x = args.in(0), *w = args.in(1), *b = args.in(2), *y = args.out(0);
  if (!x || !w || !y) return args.Error("needs inputs X and W and output Y");
  if (!DispatchFloat(x->dtype, [](auto) {})) return args.Error(std::string("unsupported dtype ") + DataTypeName(x->dtype));
  if (w->dtype != x->dtype || y->dtype != x->dtype || (b && b->dtype != x->dtype)) return DtypeRefusal(args, "X, W, B and Y dtypes differ");
  if (x->rank() < 3 || x->rank() > 5 || w->rank() != x->rank())
    return args.Error("X and W must both have rank 3 to 5 (N, C and 1 to 3 spatial dims)");
  return Status::Ok();
}

int64_t Product(const int64_t (&v)[3]) { return v[0] * v[1] * v[2]; }

// The forward convolution's geometry for cuDNN, which pads symmetrically: the symmetric part of
// each dim's pads goes into `s`, the rest into `pad` (X into its explicitly padded copy). True
// when some dim's pads are asymmetric (the copy is needed).
bool ForwardShape(const Window& win, int64_t N, int64_t C, int64_t M, int64_t group, ConvShape* s, Reframe* pad) {
  int nd = std::max(win.spatial, 2), first = Window::kMaxSpatial - nd;
  s->in = {N, C};
  s->filter = {M, C / group};
  s->out = {N, M};
  s->group = group;
  bool asymmetric = false;
  for (int d = 0; d < 3; ++d) {
    int64_t pb = win.pad_begin[size_t(d)], pe = win.pad_end[size_t(d)], sym = std::min(pb, pe);
    pad->in[d] = win.in[size_t(d)];
    pad->before[d] = pb - sym;
    pad->out[d] = win.in[size_t(d)] + pb + pe - 2 * sym;
    asymmetric = asymmetric || pb != pe;
    if (d < first) continue;
    s->in.push_back(pad->out[d]);
    s->filter.push_back(win.kernel[size_t(d)]);
    s->out.push_back(win.out[size_t(d)]);
    s->pads.push_back(sym);
    s->strides.push_back(win.stride[size_t(d)]);
    s->dilations.push_back(win.dilation[size_t(d)]);
  }
  return asymmetric;
}

// What Conv and ConvTranspose share: dtype, the direct kernel's parameters, the cuDNN plan.
class ConvBase : public Kernel {
 public:
  size_t ScratchBytes() const override { return scratch_; }
  size_t WorkspaceBytes() const override {
    if (!use_cudnn_) return 0;
    return use_fused_ ? std::max(cudnn_.WorkspaceBytes(), fused_.WorkspaceBytes()) : cudnn_.WorkspaceBytes();
  }

 protected:
  // Plans cuDNN; on Unimplemented the direct kernel stays in charge.
  Status PlanCudnn(const KernelArgs& args, CudaContext& ctx, CudnnConv::Direction direction, const ConvShape& shape) {
    Status s = cudnn_.Init(args, ctx, direction, dtype_, shape);
    if (!s.ok() && s.code() == StatusCode::kUnimplemented) {
      fallback_ = "cuDNN refused it (" + s.message() + "): the direct kernel runs it";
      return Status::Ok();
    }
    PRECIS_RETURN_IF_ERROR(s);
    use_cudnn_ = true;
    return Status::Ok();
  }

 public:
  std::string Fallback() const override { return fallback_; }

 protected:
  std::string fallback_;

  Status BiasThenActivate(const KernelArgs& args, CudaContext& ctx, bool after) {
    Tensor& y = *args.out(0);
    if (!after && args.in(2)) {
      int64_t plane = total_ / (y.dims[0] * y.dims[1]);
      cudaError_t e = cudaErrorInvalidValue;
      int64_t channels = y.dims[1];
      if (nhwc_) plane = 1, channels = y.dims[3];  // channels last: the bias repeats every M values
      DispatchBySize(DataTypeSize(dtype_), [&](auto tag) {
        using U = decltype(tag);
        e = NnLaunch(total_, ctx.stream, FillBias<U>{reinterpret_cast<const U*>(args.in(2)->data), reinterpret_cast<U*>(y.data), plane, channels});
      });
      PRECIS_CUDA_CHECK(args, e);
    }
    if (after && activation_ != Activation::kNone) PRECIS_CUDA_CHECK(args, ActivateInPlace(dtype_, y.data, total_, activation_, ctx.stream));
    return Status::Ok();
  }

  // After the legacy plan: FP16/BF16 Conv steps with a bias or a Relu try the fused graph
  // (convolution, bias and Relu in one cuDNN call) and keep the legacy path where it is refused.
  void PlanFused(const KernelArgs& args, CudaContext& ctx, const ConvShape& shape) {
    bool bias = args.in(2) != nullptr, relu = activation_ == Activation::kRelu;
    use_fused_ = use_cudnn_ && (bias || relu) && fused_.Init(args, ctx, dtype_, shape, bias, relu).ok();
  }

  DataType dtype_ = DataType::kUndefined;
  int64_t total_ = 0;
  Activation activation_ = Activation::kNone;
  DirectConvParams direct_;
  CudnnConv cudnn_;
  CudnnFusedConv fused_;
  bool use_cudnn_ = false, use_fused_ = false;
  bool nhwc_ = false;  // layout = "NHWC" (Conv only): X, Y channels last, W [M, kH, kW, C/group]
  size_t scratch_ = 0;
};

class ConvKernel : public ConvBase {
 public:
  Status Init(const KernelArgs& args, CudaContext& ctx) override {
    PRECIS_RETURN_IF_ERROR(CheckConvTypes(args));
    std::string layout = args.attrs.String("layout", "NCHW");
    if (layout != "NCHW" && layout != "NHWC") return args.Error("unknown layout '" + layout + "' (NCHW or NHWC)");
    nhwc_ = layout == "NHWC";
    if (nhwc_ && args.in(0)->rank() != 4) return args.Error("layout NHWC needs a 2-D convolution");
    // The geometry below reads NCHW dims; an NHWC step's tensors are viewed in that order.
    auto as_nchw = [&](const Tensor& t) {
      Tensor v = t;
      if (nhwc_) v.dims = {t.dims[0], t.dims[3], t.dims[1], t.dims[2]};
      return v;
    };
    const Tensor x = as_nchw(*args.in(0)), w = as_nchw(*args.in(1)), y = as_nchw(*args.out(0));
    const Tensor* b = args.in(2);
    int64_t group = args.attrs.Int("group", 1), N = x.dims[0], C = x.dims[1], M = w.dims[0];
    if (group <= 0 || C % group != 0 || M % group != 0 || w.dims[1] * group != C)
      return args.Error("channels (X " + std::to_string(C) + ", W " + std::to_string(M) + "x" + std::to_string(w.dims[1]) +
                        ") do not match group " + std::to_string(group));
    if (b && (b->rank() != 1 || b->dims[0] != M)) return args.Error("bias must have " + std::to_string(M) + " values");
    std::vector<int64_t> in(x.dims.begin() + 2, x.dims.end()), kernel(w.dims.begin() + 2, w.dims.end());
    if (args.attrs.Ints("kernel_shape", kernel) != kernel) return args.Error("kernel_shape differs from W's spatial dims");
    Window win;
    PRECIS_RETURN_IF_ERROR(ReadWindow(args, in, kernel, false, &win));
    PRECIS_RETURN_IF_ERROR(CheckWindowOutput(args, y, N, M, win, "output Y"));
    PRECIS_RETURN_IF_ERROR(ReadActivation(args, false, &activation_));
    dtype_ = x.dtype;
    direct_ = {C, M, C / group, M / group, DeviceWindow(win), int(activation_)};
    total_ = y.numel;
    if (total_ == 0) return Status::Ok();

    // cuDNN pads symmetrically: the symmetric part goes to cuDNN, the rest is padded into scratch.
    ConvShape s;
    bool pad = ForwardShape(win, N, C, M, group, &s, &pad_);
    if (nhwc_) {
      // cuDNN takes channels-last data as it is; where it refuses the step (or the pads are
      // asymmetric), the channels-last direct kernel runs it.
      if (pad) {
        fallback_ = "asymmetric pads in layout NHWC: the direct kernel runs it";
        return Status::Ok();
      }
      s.nhwc = true;
      Status planned = PlanCudnn(args, ctx, CudnnConv::Direction::kForward, s);
      if (!planned.ok()) return planned.WithContext("layout NHWC");
      PlanFused(args, ctx, s);
      return Status::Ok();
    }
    PRECIS_RETURN_IF_ERROR(PlanCudnn(args, ctx, CudnnConv::Direction::kForward, s));
    PlanFused(args, ctx, s);
    padded_ = use_cudnn_ && pad;
    padded_total_ = N * C * Product(pad_.out);
    scratch_ = padded_ ? size_t(padded_total_) * DataTypeSize(dtype_) : 0;
    return Status::Ok();
  }

  Status Run(const KernelArgs& args, CudaContext& ctx) override {
    if (total_ == 0) return Status::Ok();
    const void* x = args.in(0)->data;
    const void* w = args.in(1)->data;
    const void* b = args.in(2) ? args.in(2)->data : nullptr;
    void* y = args.out(0)->data;
    cudaError_t e = cudaErrorInvalidValue;
    if (!use_cudnn_) {
      DispatchFloat(dtype_, [&](auto tag) {
        using T = decltype(tag);
        auto xt = static_cast<const T*>(x), wt = static_cast<const T*>(w), bt = static_cast<const T*>(b);
        e = nhwc_ ? NnLaunch(total_, ctx.stream, DirectConvNhwc<T>{direct_, xt, wt, bt, static_cast<T*>(y)})
                  : NnLaunch(total_, ctx.stream, DirectConv<T>{direct_, xt, wt, bt, static_cast<T*>(y)});
      });
      PRECIS_CUDA_CHECK(args, e);
      return Status::Ok();
    }
    if (padded_) {
      DispatchBySize(DataTypeSize(dtype_), [&](auto tag) {
        using U = decltype(tag);
        e = NnLaunch(padded_total_, ctx.stream, ReframeCopy<U>{pad_, static_cast<const U*>(x), reinterpret_cast<U*>(ctx.scratch)});
      });
      PRECIS_CUDA_CHECK(args, e);
      x = ctx.scratch;
    }
    if (use_fused_) return fused_.Run(args, ctx, x, w, b, y);
    PRECIS_RETURN_IF_ERROR(BiasThenActivate(args, ctx, false));
    PRECIS_RETURN_IF_ERROR(cudnn_.Run(args, ctx, x, w, y, b != nullptr));
    return BiasThenActivate(args, ctx, true);
  }

 private:
  Reframe pad_{};  // X into its explicitly padded copy
  bool padded_ = false;
  int64_t padded_total_ = 0;
};

class ConvTransposeKernel : public ConvBase {
 public:
  Status Init(const KernelArgs& args, CudaContext& ctx) override {
    PRECIS_RETURN_IF_ERROR(CheckConvTypes(args));
    const Tensor &x = *args.in(0), &w = *args.in(1), &y = *args.out(0);
    const Tensor* b = args.in(2);
    int64_t group = args.attrs.Int("group", 1), N = x.dims[0], C = x.dims[1], Mg = w.dims[1];
    if (group <= 0 || w.dims[0] != C || C % group != 0)
      return args.Error("channels (X " + std::to_string(C) + ", W " + std::to_string(w.dims[0]) + ") do not match group " +
                        std::to_string(group));
    int64_t M = Mg * group;
    if (b && (b->rank() != 1 || b->dims[0] != M)) return args.Error("bias must have " + std::to_string(M) + " values");
    std::vector<int64_t> in(x.dims.begin() + 2, x.dims.end()), kernel(w.dims.begin() + 2, w.dims.end());
    if (args.attrs.Ints("kernel_shape", kernel) != kernel) return args.Error("kernel_shape differs from W's spatial dims");
    Window win;
    PRECIS_RETURN_IF_ERROR(ReadTransposeWindow(args, in, kernel, &win));
    PRECIS_RETURN_IF_ERROR(CheckWindowOutput(args, y, N, M, win, "output Y"));
    PRECIS_RETURN_IF_ERROR(ReadActivation(args, false, &activation_));
    dtype_ = x.dtype;
    direct_ = {C, M, C / group, Mg, DeviceWindow(win), int(activation_)};
    total_ = y.numel;
    if (total_ == 0) return Status::Ok();

    // cuDNN's backward data takes Y directly when a symmetric pad of pad_begin gives back X's
    // size; otherwise it computes the uncropped result into scratch, which is then cropped.
    int nd = std::max(win.spatial, 2), first = Window::kMaxSpatial - nd;
    bool direct = true;
    for (int d = first; d < 3; ++d) {
      int64_t s = win.stride[size_t(d)], eff = (win.kernel[size_t(d)] - 1) * win.dilation[size_t(d)] + 1, pb = win.pad_begin[size_t(d)];
      int64_t span = win.out[size_t(d)] + 2 * pb - eff;
      direct = direct && pb >= 0 && span >= 0 && span / s + 1 == win.in[size_t(d)];
    }
    ConvShape s;
    s.in = {N, M};
    s.filter = {C, Mg};
    s.out = {N, C};
    s.group = group;
    for (int d = 0; d < 3; ++d) {
      int64_t eff = (win.kernel[size_t(d)] - 1) * win.dilation[size_t(d)] + 1;
      crop_.in[d] = direct ? win.out[size_t(d)] : win.stride[size_t(d)] * (win.in[size_t(d)] - 1) + eff;
      crop_.out[d] = win.out[size_t(d)];
      crop_.before[d] = -win.pad_begin[size_t(d)];
      if (d < first) continue;
      s.in.push_back(crop_.in[d]);
      s.filter.push_back(win.kernel[size_t(d)]);
      s.out.push_back(win.in[size_t(d)]);
      s.pads.push_back(direct ? win.pad_begin[size_t(d)] : 0);
      s.strides.push_back(win.stride[size_t(d)]);
      s.dilations.push_back(win.dilation[size_t(d)]);
    }
    PRECIS_RETURN_IF_ERROR(PlanCudnn(args, ctx, CudnnConv::Direction::kBackwardData, s));
    cropped_ = use_cudnn_ && !direct;
    scratch_ = cropped_ ? size_t(N * M * Product(crop_.in)) * DataTypeSize(dtype_) : 0;
    return Status::Ok();
  }

  Status Run(const KernelArgs& args, CudaContext& ctx) override {
    if (total_ == 0) return Status::Ok();
    const void* x = args.in(0)->data;
    const void* w = args.in(1)->data;
    const void* b = args.in(2) ? args.in(2)->data : nullptr;
    Tensor& y = *args.out(0);
    cudaError_t e = cudaErrorInvalidValue;
    if (!use_cudnn_) {
      DispatchFloat(dtype_, [&](auto tag) {
        using T = decltype(tag);
        e = NnLaunch(total_, ctx.stream,
                     DirectConvTranspose<T>{direct_, static_cast<const T*>(x), static_cast<const T*>(w), static_cast<const T*>(b),
                                            reinterpret_cast<T*>(y.data)});
      });
      PRECIS_CUDA_CHECK(args, e);
      return Status::Ok();
    }
    if (!cropped_) {
      PRECIS_RETURN_IF_ERROR(BiasThenActivate(args, ctx, false));
      PRECIS_RETURN_IF_ERROR(cudnn_.Run(args, ctx, x, w, y.data, b != nullptr));
      return BiasThenActivate(args, ctx, true);
    }
    PRECIS_RETURN_IF_ERROR(cudnn_.Run(args, ctx, x, w, ctx.scratch, false));
    DispatchFloat(dtype_, [&](auto tag) {
      using T = decltype(tag);
      e = NnLaunch(total_, ctx.stream,
                   CropBiasActivate<T>{crop_, reinterpret_cast<const T*>(ctx.scratch), static_cast<const T*>(b), reinterpret_cast<T*>(y.data),
                                       y.dims[1], int(activation_)});
    });
    PRECIS_CUDA_CHECK(args, e);
    return Status::Ok();
  }

 private:
  Reframe crop_{};  // the uncropped result (in) to Y (out)
  bool cropped_ = false;
};

// ConvFilterGrad(X [N, C, in...], dY [N, M, out...]) -> dW [M, C/group, k...], the forward
// convolution's geometry in its attributes (explicit pads). cuDNN's backward-filter convolution
// (deterministic algorithms only), X padded into scratch when the pads are asymmetric; the
// direct kernel where cuDNN refuses.
class ConvFilterGradKernel : public ConvBase {
 public:
  Status Init(const KernelArgs& args, CudaContext& ctx) override {
    const Tensor *x = args.in(0), *dy = args.in(1), *dw = args.out(0);
    if (!x || !dy || !dw) return args.Error("needs X, dY and dW");
    if (!DispatchFloat(x->dtype, [](auto) {})) return args.Error(std::string("unsupported dtype ") + DataTypeName(x->dtype));
    if (dy->dtype != x->dtype || dw->dtype != x->dtype) return DtypeRefusal(args, "X, dY and dW dtypes differ");
    if (x->rank() < 3 || x->rank() > 5 || dy->rank() != x->rank()) return args.Error("X and dY must have rank 3 to 5 (N, C, spatial dims)");
    int64_t group = args.attrs.Int("group", 1), N = x->dims[0], C = x->dims[1], M = dy->dims[1];
    if (group < 1 || C % group != 0 || M % group != 0) return args.Error("group does not divide the channels of X and dY");
    std::vector<int64_t> in(x->dims.begin() + 2, x->dims.end()), kernel = args.attrs.Ints("kernel_shape");
    Window win;
    PRECIS_RETURN_IF_ERROR(ReadWindow(args, in, kernel, false, &win));
    PRECIS_RETURN_IF_ERROR(CheckWindowOutput(args, *dy, N, M, win, "dY"));
    std::vector<int64_t> want = {M, C / group};
    want.insert(want.end(), kernel.begin(), kernel.end());
    if (dw->dims != want) return args.Error("dW must have shape [M, C/group, kernel...]");
    dtype_ = x->dtype;
    n_ = N;
    direct_ = {C, M, C / group, M / group, DeviceWindow(win), 0};
    total_ = dw->numel;
    if (total_ == 0) return Status::Ok();
    // An empty batch or output: the direct kernel writes dW's zeros.
    if (x->numel == 0 || dy->numel == 0) return Status::Ok();

    ConvShape s;
    bool pad = ForwardShape(win, N, C, M, group, &s, &pad_);
    PRECIS_RETURN_IF_ERROR(PlanCudnn(args, ctx, CudnnConv::Direction::kBackwardFilter, s));
    padded_ = use_cudnn_ && pad;
    padded_total_ = N * C * Product(pad_.out);
    scratch_ = padded_ ? size_t(padded_total_) * DataTypeSize(dtype_) : 0;
    return Status::Ok();
  }

  Status Run(const KernelArgs& args, CudaContext& ctx) override {
    if (total_ == 0) return Status::Ok();
    const void* x = args.in(0)->data;
    const void* dy = args.in(1)->data;
    void* dw = args.out(0)->data;
    cudaError_t e = cudaErrorInvalidValue;
    if (!use_cudnn_) {
      DispatchFloat(dtype_, [&](auto tag) {
        using T = decltype(tag);
        e = NnLaunch(total_, ctx.stream, DirectFilterGrad<T>{direct_, n_, static_cast<const T*>(x), static_cast<const T*>(dy), static_cast<T*>(dw)});
      });
      PRECIS_CUDA_CHECK(args, e);
      return Status::Ok();
    }
    if (padded_) {
      DispatchBySize(DataTypeSize(dtype_), [&](auto tag) {
        using U = decltype(tag);
        e = NnLaunch(padded_total_, ctx.stream, ReframeCopy<U>{pad_, static_cast<const U*>(x), reinterpret_cast<U*>(ctx.scratch)});
      });
      PRECIS_CUDA_CHECK(args, e);
      x = ctx.scratch;
    }
    return cudnn_.Run(args, ctx, x, dy, dw, false);
  }

 private:
  Reframe pad_{};  // X into its explicitly padded copy
  bool padded_ = false;
  int64_t padded_total_ = 0, n_ = 0;
};

}  // namespace

std::unique_ptr<Kernel> MakeConvFilterGradKernel() { return std::make_unique<ConvFilterGradKernel>(); }
std::unique_ptr<Kernel> MakeConvKernel() { return std::make_unique<ConvKernel>(); }
std::unique_ptr<Kernel> MakeConvTransposeKernel() { return std::make_unique<ConvTransposeKernel>(); }

}  // namespace precis::rt::cuda
