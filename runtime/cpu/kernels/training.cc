// Reference kernels of the internal training operators (compiler/ops/training.cc):
// BatchNormalizationTraining (normalization with the batch statistics, which it also returns),
// its gradient, DropoutTraining (mask from runtime/kernels/philox.h), ConvFilterGrad and ReluGrad
// (MaxPoolGrad is with the pooling kernels, nn_pool.cc). Statistics and
// per-channel sums accumulate in double over two passes, so FP32 plans match PyTorch to a few ulps
// and f64 plans are exact enough for finite-difference checks.
#include <cmath>

#include "runtime/cpu/kernels/common.h"
#include "runtime/kernels/nn_window.h"
#include "runtime/kernels/philox.h"

namespace precis::rt {

namespace {

// X [N, C, inner...]: the layout every kernel here walks (channel c of sample n is one run of
// `inner` values).
struct ChannelLayout {
  int64_t N = 0, C = 0, inner = 1;
  int64_t count() const { return N * inner; }  // values per channel
};

StatusOr<ChannelLayout> LayoutOf(const KernelArgs& args, const Tensor& x) {
  if (x.rank() < 2) return args.Error("X must have rank >= 2 (N x C x ...)");
  ChannelLayout l{x.dims[0], x.dims[1], 1};
  for (size_t d = 2; d < x.dims.size(); ++d) l.inner *= x.dims[d];
  return l;
}

Status CheckChannelVector(const KernelArgs& args, const Tensor* t, int64_t C, const char* what) {
  if (!t || t->numel != C) return args.Error(std::string(what) + " must have " + std::to_string(C) + " values");
  if (!DispatchFloat(t->dtype, [](auto) {})) return args.Error(std::string(what) + " has unsupported dtype " + DataTypeName(t->dtype));
  return Status::Ok();
}


// Y = (X - mean_c) / sqrt(var_c + eps) * scale_c + B_c with the batch's mean and biased variance
// of channel c (over N and the spatial axes); outputs 1 and 2 (optional) return them.
class BatchNormTrainingKernel : public Kernel {
 public:
  Status Init(const KernelArgs& args, const CpuContext&) override {
    const Tensor* x = args.in(0);
    if (!x || !DispatchFloat(x->dtype, [](auto) {})) return args.Error("X must be a float tensor");
    PRECIS_ASSIGN_OR_RETURN(l_, LayoutOf(args, *x));
    if (l_.count() < 1) return args.Error("a batch without values has no statistics");
    PRECIS_RETURN_IF_ERROR(CheckChannelVector(args, args.in(1), l_.C, "scale"));
    PRECIS_RETURN_IF_ERROR(CheckChannelVector(args, args.in(2), l_.C, "B"));
    if (!args.out(0) || args.out(0)->dims != x->dims || args.out(0)->dtype != x->dtype) return args.Error("Y must have X's type and shape");
    for (size_t i = 1; i < 3; ++i)
      if (args.out(i)) PRECIS_RETURN_IF_ERROR(CheckChannelVector(args, args.out(i), l_.C, i == 1 ? "the batch mean" : "the batch variance"));
    eps_ = args.attrs.Float("epsilon", 1e-5f);
    return Status::Ok();
  }

  Status Run(const KernelArgs& args, CpuContext&) override {
    DispatchFloat(args.in(0)->dtype, [&](auto tag) { RunTyped<decltype(tag)>(args); });
    return Status::Ok();
  }

 private:
  template <typename T>
  void RunTyped(const KernelArgs& args) {
    using A = std::conditional_t<std::is_same_v<T, double>, double, float>;
    const T* px = args.in(0)->As<T>();
    T* py = args.out(0)->As<T>();
    const double n = double(l_.count());
    for (int64_t c = 0; c < l_.C; ++c) {
      double sum = 0, sq = 0;
      for (int64_t b = 0; b < l_.N; ++b) {
        const T* row = px + (b * l_.C + c) * l_.inner;
        for (int64_t i = 0; i < l_.inner; ++i) sum += double(Load(row[i]));
      }
      double mean = sum / n;
      for (int64_t b = 0; b < l_.N; ++b) {
        const T* row = px + (b * l_.C + c) * l_.inner;
        for (int64_t i = 0; i < l_.inner; ++i) sq += (double(Load(row[i])) - mean) * (double(Load(row[i])) - mean);
      }
      double var = sq / n;
      double a = ReadAt(*args.in(1), c) / std::sqrt(var + double(eps_));
      double shift = ReadAt(*args.in(2), c) - mean * a;
      for (int64_t b = 0; b < l_.N; ++b) {
        int64_t off = (b * l_.C + c) * l_.inner;
        for (int64_t i = 0; i < l_.inner; ++i) py[off + i] = Store<T>(A(Load(px[off + i])) * A(a) + A(shift));
      }
      if (args.out(1)) WriteAt(*args.out(1), c, mean);
      if (args.out(2)) WriteAt(*args.out(2), c, var);
    }
  }

  ChannelLayout l_;
  float eps_ = 1e-5f;
};

// With xhat = (x - mean) * r, r = 1/sqrt(var + eps), M values per channel:
//   dB = sum(dY), dscale = sum(dY * xhat), dX = scale * r / M * (M * dY - dB - xhat * dscale)
// (the batch statistics depend on X: the mean and xhat * dscale terms are their gradient).
class BatchNormTrainingGradKernel : public Kernel {
 public:
  Status Init(const KernelArgs& args, const CpuContext&) override {
    const Tensor* dy = args.in(0);
    const Tensor* x = args.in(1);
    if (!dy || !x || !DispatchFloat(x->dtype, [](auto) {}) || dy->dtype != x->dtype || dy->dims != x->dims)
      return args.Error("dY and X must be float tensors of one type and shape");
    PRECIS_ASSIGN_OR_RETURN(l_, LayoutOf(args, *x));
    const char* names[] = {"", "", "scale", "mean", "var"};
    for (size_t i = 2; i < 5; ++i) PRECIS_RETURN_IF_ERROR(CheckChannelVector(args, args.in(i), l_.C, names[i]));
    if (args.out(0) && (args.out(0)->dims != x->dims || args.out(0)->dtype != x->dtype)) return args.Error("dX must have X's type and shape");
    for (size_t i = 1; i < 3; ++i)
      if (args.out(i)) PRECIS_RETURN_IF_ERROR(CheckChannelVector(args, args.out(i), l_.C, i == 1 ? "dscale" : "dB"));
    eps_ = args.attrs.Float("epsilon", 1e-5f);
    return Status::Ok();
  }

  Status Run(const KernelArgs& args, CpuContext&) override {
    DispatchFloat(args.in(1)->dtype, [&](auto tag) { RunTyped<decltype(tag)>(args); });
    return Status::Ok();
  }

 private:
  template <typename T>
  void RunTyped(const KernelArgs& args) {
    const T* pg = args.in(0)->As<T>();
    const T* px = args.in(1)->As<T>();
    T* pdx = args.out(0) ? args.out(0)->As<T>() : nullptr;
    const double m = double(l_.count());
    for (int64_t c = 0; c < l_.C; ++c) {
      double mean = ReadAt(*args.in(3), c), r = 1.0 / std::sqrt(ReadAt(*args.in(4), c) + double(eps_));
      double db = 0, dscale = 0;
      for (int64_t b = 0; b < l_.N; ++b) {
        int64_t off = (b * l_.C + c) * l_.inner;
        for (int64_t i = 0; i < l_.inner; ++i) {
          double g = double(Load(pg[off + i]));
          db += g;
          dscale += g * (double(Load(px[off + i])) - mean) * r;
        }
      }
      if (args.out(1)) WriteAt(*args.out(1), c, dscale);
      if (args.out(2)) WriteAt(*args.out(2), c, db);
      if (!pdx) continue;
      double k = ReadAt(*args.in(2), c) * r / m;
      for (int64_t b = 0; b < l_.N; ++b) {
        int64_t off = (b * l_.C + c) * l_.inner;
        for (int64_t i = 0; i < l_.inner; ++i) {
          double xhat = (double(Load(px[off + i])) - mean) * r;
          pdx[off + i] = Store<T>(k * (m * double(Load(pg[off + i])) - db - xhat * dscale));
        }
      }
    }
  }

  ChannelLayout l_;
  float eps_ = 1e-5f;
};

// Y = X * keep / (1 - ratio), keep drawn per element from (seed, counter, stream, index).
class DropoutTrainingKernel : public Kernel {
 public:
  Status Init(const KernelArgs& args, const CpuContext&) override {
    const Tensor* x = args.in(0);
    if (!x || !DispatchFloat(x->dtype, [](auto) {})) return args.Error("X must be a float tensor");
    for (size_t i = 1; i < 3; ++i)
      if (!args.in(i) || args.in(i)->dtype != DataType::kI64 || args.in(i)->numel != 1)
        return args.Error(std::string(i == 1 ? "seed" : "counter") + " must be an i64 scalar");
    if (!args.out(0) || args.out(0)->dims != x->dims || args.out(0)->dtype != x->dtype) return args.Error("Y must have X's type and shape");
    if (args.out(1) && (args.out(1)->dtype != DataType::kBool || args.out(1)->numel != x->numel)) return args.Error("mask must be bool of X's shape");
    float ratio = args.attrs.Float("ratio", -1.0f);
    if (!(ratio >= 0.0f && ratio < 1.0f)) return args.Error("ratio " + std::to_string(ratio) + " is outside [0, 1)");
    threshold_ = DropoutThreshold(ratio);
    scale_ = 1.0f / (1.0f - ratio);
    stream_ = uint32_t(args.attrs.Int("stream", 0));
    return Status::Ok();
  }

  Status Run(const KernelArgs& args, CpuContext&) override {
    uint64_t seed = uint64_t(*args.in(1)->As<int64_t>()), counter = uint64_t(*args.in(2)->As<int64_t>());
    bool* mask = args.out(1) ? args.out(1)->As<bool>() : nullptr;
    DispatchFloat(args.in(0)->dtype, [&](auto tag) {
      using T = decltype(tag);
      using A = std::conditional_t<std::is_same_v<T, double>, double, float>;
      const T* px = args.in(0)->As<T>();
      T* py = args.out(0)->As<T>();
      for (int64_t i = 0; i < args.in(0)->numel; ++i) {
        bool keep = DropoutWord(seed, counter, stream_, uint64_t(i)) >= threshold_;
        py[i] = Store<T>(keep ? A(Load(px[i])) * A(scale_) : A(0));
        if (mask) mask[i] = keep;
      }
    });
    return Status::Ok();
  }

 private:
  uint32_t threshold_ = 0, stream_ = 0;
  float scale_ = 1;
};

// ConvFilterGrad(X [N, C, in...], dY [N, M, out...]) -> dW [M, C/group, k...]:
// dW[m, c, k] = sum over n and o of dY[n, m, o] * X[n, group(m) * C/group + c, o * s + k * d - p],
// positions outside X contributing nothing; sums in double.
class ConvFilterGradKernel : public Kernel {
 public:
  Status Init(const KernelArgs& args, const CpuContext&) override {
    const Tensor *x = args.in(0), *dy = args.in(1), *dw = args.out(0);
    if (!x || !dy || !dw) return args.Error("needs X, dY and dW");
    if (!DispatchFloat(x->dtype, [](auto) {}) || dy->dtype != x->dtype || dw->dtype != x->dtype)
      return args.Error("X, dY and dW must be float tensors of one dtype");
    if (x->rank() < 3 || x->rank() > 5 || dy->rank() != x->rank()) return args.Error("X and dY must have rank 3 to 5 (N, C, spatial dims)");
    group_ = args.attrs.Int("group", 1);
    int64_t C = x->dims[1], M = dy->dims[1];
    if (group_ < 1 || C % group_ != 0 || M % group_ != 0) return args.Error("group does not divide the channels of X and dY");
    std::vector<int64_t> in(x->dims.begin() + 2, x->dims.end()), kernel = args.attrs.Ints("kernel_shape");
    PRECIS_RETURN_IF_ERROR(ReadWindow(args, in, kernel, false, &win_));
    PRECIS_RETURN_IF_ERROR(CheckWindowOutput(args, *dy, x->dims[0], M, win_, "dY"));
    std::vector<int64_t> want = {M, C / group_};
    want.insert(want.end(), kernel.begin(), kernel.end());
    if (dw->dims != want) return args.Error("dW must have shape [M, C/group, kernel...]");
    sums_.assign(size_t(dw->numel), 0.0);
    return Status::Ok();
  }

  Status Run(const KernelArgs& args, CpuContext&) override {
    DispatchFloat(args.in(0)->dtype, [&](auto tag) { RunTyped<decltype(tag)>(args); });
    return Status::Ok();
  }

 private:
  template <typename T>
  void RunTyped(const KernelArgs& args) {
    const Tensor &x = *args.in(0), &dy = *args.in(1);
    const T* px = x.As<T>();
    const T* pg = dy.As<T>();
    const int64_t N = x.dims[0], C = x.dims[1], M = dy.dims[1], Cg = C / group_, Mg = M / group_;
    const int64_t in_size = win_.InSize(), out_size = win_.OutSize(), K = win_.KernelSize();
    std::fill(sums_.begin(), sums_.end(), 0.0);
    for (int64_t n = 0; n < N; ++n)
      for (int64_t m = 0; m < M; ++m) {
        const T* g = pg + (n * M + m) * out_size;
        for (int64_t c = 0; c < Cg; ++c) {
          const T* xp = px + (n * C + m / Mg * Cg + c) * in_size;
          double* w = sums_.data() + (m * Cg + c) * K;
          int64_t k = 0;
          for (int64_t kd = 0; kd < win_.kernel[0]; ++kd)
            for (int64_t kh = 0; kh < win_.kernel[1]; ++kh)
              for (int64_t kw = 0; kw < win_.kernel[2]; ++kw, ++k) {
                double acc = 0;
                int64_t o = 0;
                for (int64_t od = 0; od < win_.out[0]; ++od)
                  for (int64_t oh = 0; oh < win_.out[1]; ++oh)
                    for (int64_t ow = 0; ow < win_.out[2]; ++ow, ++o) {
                      int64_t id = od * win_.stride[0] + kd * win_.dilation[0] - win_.pad_begin[0];
                      int64_t ih = oh * win_.stride[1] + kh * win_.dilation[1] - win_.pad_begin[1];
                      int64_t iw = ow * win_.stride[2] + kw * win_.dilation[2] - win_.pad_begin[2];
                      if (id < 0 || id >= win_.in[0] || ih < 0 || ih >= win_.in[1] || iw < 0 || iw >= win_.in[2]) continue;
                      acc += double(Load(g[o])) * double(Load(xp[(id * win_.in[1] + ih) * win_.in[2] + iw]));
                    }
                w[k] += acc;
              }
        }
      }
    T* pw = args.out(0)->As<T>();
    for (size_t i = 0; i < sums_.size(); ++i) pw[i] = Store<T>(sums_[i]);
  }

  Window win_;
  int64_t group_ = 1;
  std::vector<double> sums_;
};

// ReluGrad(dY, X) -> dX = dY where X > 0, else 0 (NaN X gives 0).
class ReluGradKernel : public Kernel {
 public:
  Status Init(const KernelArgs& args, const CpuContext&) override {
    const Tensor *dy = args.in(0), *x = args.in(1), *dx = args.out(0);
    if (!dy || !x || !dx || !DispatchFloat(dy->dtype, [](auto) {}) || !DispatchFloat(x->dtype, [](auto) {}))
      return args.Error("dY and X must be float tensors");
    if (dy->dims != x->dims || dx->dims != x->dims || dx->dtype != dy->dtype) return args.Error("dY, X and dX must have one shape, dX dY's dtype");
    return Status::Ok();
  }

  Status Run(const KernelArgs& args, CpuContext&) override {
    const Tensor &dy = *args.in(0), &x = *args.in(1);
    Tensor& dx = *args.out(0);
    for (int64_t i = 0; i < dy.numel; ++i) WriteAt(dx, i, ReadAt(x, i) > 0 ? ReadAt(dy, i) : 0.0);
    return Status::Ok();
  }
};

// UnscaleGradients(inv_scale, g1..gn) -> g1'..gn', found_inf: gi' = gi * inv_scale in f32 and
// found_inf = some gi holds an Inf or NaN (checked before the multiply, as PyTorch's
// _amp_foreach_non_finite_check_and_unscale_; a multiplier of 1 leaves values as they are).
class UnscaleGradientsKernel : public Kernel {
 public:
  Status Init(const KernelArgs& args, const CpuContext&) override {
    size_t n = args.inputs.size();
    if (n < 2 || args.outputs.size() != n) return args.Error("needs inv_scale, the gradients, their outputs and found_inf");
    if (!args.in(0) || args.in(0)->dtype != DataType::kF32 || args.in(0)->numel != 1) return args.Error("inv_scale must be an f32 scalar");
    for (size_t i = 1; i < n; ++i) {
      const Tensor *g = args.in(i), *o = args.out(i - 1);
      if (!g || !DispatchFloat(g->dtype, [](auto) {})) return args.Error("gradient " + std::to_string(i) + " must be a float tensor");
      if (!o || o->dtype != g->dtype || o->numel != g->numel) return args.Error("output " + std::to_string(i - 1) + " must have its gradient's type");
    }
    const Tensor* f = args.out(n - 1);
    if (!f || f->dtype != DataType::kBool || f->numel != 1) return args.Error("found_inf must be a bool scalar");
    return Status::Ok();
  }

  Status Run(const KernelArgs& args, CpuContext&) override {
    const float inv = *args.in(0)->As<float>();
    bool found = false;
    for (size_t i = 1; i < args.inputs.size(); ++i) {
      const Tensor& g = *args.in(i);
      Tensor& o = *args.out(i - 1);
      DispatchFloat(g.dtype, [&](auto tag) {
        using T = decltype(tag);
        using A = std::conditional_t<std::is_same_v<T, double>, double, float>;
        const T* pg = g.As<T>();
        T* po = o.As<T>();
        bool bad = false;
        for (int64_t j = 0; j < g.numel; ++j) {
          A v = A(Load(pg[j]));
          bad |= !std::isfinite(v);
          po[j] = inv == 1.0f ? pg[j] : Store<T>(v * A(inv));
        }
        found |= bad;
      });
    }
    *args.out(args.outputs.size() - 1)->As<bool>() = found;
    return Status::Ok();
  }
};

}  // namespace

void RegisterTrainingKernels(KernelRegistry& r) {
  r.Register("UnscaleGradients", Make<UnscaleGradientsKernel>);
  r.Register("ConvFilterGrad", Make<ConvFilterGradKernel>);
  r.Register("ReluGrad", Make<ReluGradKernel>);
  r.Register("BatchNormalizationTraining", Make<BatchNormTrainingKernel>);
  r.Register("BatchNormalizationTrainingGrad", Make<BatchNormTrainingGradKernel>);
  r.Register("DropoutTraining", Make<DropoutTrainingKernel>);
}

}  // namespace precis::rt
