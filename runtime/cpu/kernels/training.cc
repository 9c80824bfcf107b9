// Reference kernels of the internal training operators (compiler/ops/training.cc):
// BatchNormalizationTraining (normalization with the batch statistics, which it also returns),
// its gradient, and DropoutTraining (mask from runtime/kernels/philox.h). Statistics and
// per-channel sums accumulate in double over two passes, so FP32 plans match PyTorch to a few ulps
// and f64 plans are exact enough for finite-difference checks.
#include <cmath>

#include "runtime/cpu/kernels/common.h"
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

double ReadAt(const Tensor& t, int64_t i) {
  double v = 0;
  DispatchFloat(t.dtype, [&](auto tag) { v = double(Load(t.As<decltype(tag)>()[i])); });
  return v;
}

void WriteAt(Tensor& t, int64_t i, double v) {
  DispatchFloat(t.dtype, [&](auto tag) {
    using T = decltype(tag);
    t.As<T>()[i] = Store<T>(v);
  });
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

}  // namespace

void RegisterTrainingKernels(KernelRegistry& r) {
  r.Register("BatchNormalizationTraining", Make<BatchNormTrainingKernel>);
  r.Register("BatchNormalizationTrainingGrad", Make<BatchNormTrainingGradKernel>);
  r.Register("DropoutTraining", Make<DropoutTrainingKernel>);
}

}  // namespace precis::rt
