// Reference kernels for the remaining normalizations: LRN (across channels), LpNormalization
// (L1/L2 along one axis) and MeanVarianceNormalization (over any set of axes). Sums accumulate in
// double; values are computed in float (double for f64).
#include <cmath>

#include "runtime/cpu/kernels/common.h"

namespace precis::rt {
namespace {

template <typename T>
using Acc = std::conditional_t<std::is_same_v<T, double>, double, float>;

Status CheckUnary(const KernelArgs& args) {
  const Tensor *x = args.in(0), *y = args.out(0);
  if (!x || !y) return args.Error("needs input X and output Y");
  if (!DispatchFloat(x->dtype, [](auto) {})) return args.Error(std::string("unsupported dtype ") + DataTypeName(x->dtype));
  if (y->dtype != x->dtype || y->dims != x->dims) return args.Error("Y must have X's type and shape");
  return Status::Ok();
}

// y = x / (bias + alpha / size * sum of x^2 over channels [c - floor((size-1)/2), c + ceil((size-1)/2)])^beta
class LrnKernel : public Kernel {
 public:
  Status Init(const KernelArgs& args, const CpuContext&) override {
    PRECIS_RETURN_IF_ERROR(CheckUnary(args));
    const Tensor& x = *args.in(0);
    if (x.rank() < 2) return args.Error("X must have rank >= 2");
    size_ = args.attrs.Int("size", 0);
    if (size_ <= 0) return args.Error("size must be positive");
    alpha_ = args.attrs.Float("alpha", 1e-4f);
    beta_ = args.attrs.Float("beta", 0.75f);
    bias_ = args.attrs.Float("bias", 1.0f);
    N_ = x.dims[0];
    C_ = x.dims[1];
    inner_ = (N_ > 0 && C_ > 0) ? x.numel / (N_ * C_) : 0;
    return Status::Ok();
  }
  size_t ScratchBytes() const override { return size_t(inner_) * sizeof(double); }

  Status Run(const KernelArgs& args, CpuContext& ctx) override {
    double* sq = reinterpret_cast<double*>(ctx.scratch);
    int64_t before = (size_ - 1) / 2, after = size_ / 2;  // floor and ceil of (size-1)/2
    DispatchFloat(args.in(0)->dtype, [&](auto tag) {
      using T = decltype(tag);
      const T* px = args.in(0)->As<T>();
      T* py = args.out(0)->As<T>();
      for (int64_t n = 0; n < N_; ++n)
        for (int64_t c = 0; c < C_; ++c) {
          std::fill(sq, sq + inner_, 0.0);
          for (int64_t k = std::max<int64_t>(0, c - before); k <= std::min(C_ - 1, c + after); ++k) {
            const T* xk = px + (n * C_ + k) * inner_;
            for (int64_t i = 0; i < inner_; ++i) {
              double v = double(Load(xk[i]));
              sq[i] += v * v;
            }
          }
          const T* xc = px + (n * C_ + c) * inner_;
          T* yc = py + (n * C_ + c) * inner_;
          double scale = double(alpha_) / double(size_);
          for (int64_t i = 0; i < inner_; ++i)
            yc[i] = Store<T>(double(Load(xc[i])) / std::pow(double(bias_) + scale * sq[i], double(beta_)));
        }
    });
    return Status::Ok();
  }

 private:
  int64_t size_ = 1, N_ = 0, C_ = 0, inner_ = 0;
  float alpha_ = 1e-4f, beta_ = 0.75f, bias_ = 1.0f;
};

// y = x / ||x||_p along `axis`; a zero vector stays zero.
class LpNormKernel : public Kernel {
 public:
  Status Init(const KernelArgs& args, const CpuContext&) override {
    PRECIS_RETURN_IF_ERROR(CheckUnary(args));
    const Tensor& x = *args.in(0);
    p_ = args.attrs.Int("p", 2);
    if (p_ != 1 && p_ != 2) return args.Error("p must be 1 or 2");
    int64_t rank = x.rank(), axis = args.attrs.Int("axis", -1);
    if (rank == 0) {
      outer_ = len_ = inner_ = 1;
      return Status::Ok();
    }
    if (axis < -rank || axis >= rank) return args.Error("axis " + std::to_string(axis) + " is out of range");
    if (axis < 0) axis += rank;
    outer_ = inner_ = 1;
    for (int64_t i = 0; i < axis; ++i) outer_ *= x.dims[size_t(i)];
    for (int64_t i = axis + 1; i < rank; ++i) inner_ *= x.dims[size_t(i)];
    len_ = x.dims[size_t(axis)];
    return Status::Ok();
  }

  Status Run(const KernelArgs& args, CpuContext&) override {
    DispatchFloat(args.in(0)->dtype, [&](auto tag) {
      using T = decltype(tag);
      using A = Acc<T>;
      const T* px = args.in(0)->As<T>();
      T* py = args.out(0)->As<T>();
      for (int64_t o = 0; o < outer_; ++o)
        for (int64_t i = 0; i < inner_; ++i) {
          int64_t base = o * len_ * inner_ + i;
          double norm = 0;
          for (int64_t k = 0; k < len_; ++k) {
            double v = double(Load(px[base + k * inner_]));
            norm += p_ == 1 ? std::fabs(v) : v * v;
          }
          if (p_ == 2) norm = std::sqrt(norm);
          A inv = norm > 0 ? A(1.0 / norm) : A(0);
          for (int64_t k = 0; k < len_; ++k) py[base + k * inner_] = Store<T>(A(Load(px[base + k * inner_])) * inv);
        }
    });
    return Status::Ok();
  }

 private:
  int64_t p_ = 2, outer_ = 1, len_ = 1, inner_ = 1;
};

// y = (x - mean) / (sqrt(var) + 1e-9) with mean and (population) variance over `axes`, matching
// the ONNX function body's epsilon. Offsets of the kept and reduced index spaces are tabulated so
// each group is a gather over reduced_offsets_ from a kept base.
class MeanVarianceNormKernel : public Kernel {
 public:
  Status Init(const KernelArgs& args, const CpuContext&) override {
    PRECIS_RETURN_IF_ERROR(CheckUnary(args));
    const Tensor& x = *args.in(0);
    int64_t rank = x.rank();
    auto axes = args.attrs.Ints("axes", {0, 2, 3});
    std::vector<bool> reduced(size_t(rank), false);
    for (int64_t a : axes) {
      if (a < -rank || a >= rank) return args.Error("axis " + std::to_string(a) + " is out of range");
      reduced[size_t(a < 0 ? a + rank : a)] = true;
    }
    std::vector<int64_t> strides = Strides(x.dims), kept_dims, kept_strides, red_dims, red_strides;
    for (size_t i = 0; i < size_t(rank); ++i) {
      (reduced[i] ? red_dims : kept_dims).push_back(x.dims[i]);
      (reduced[i] ? red_strides : kept_strides).push_back(strides[i]);
    }
    Offsets(kept_dims, kept_strides, kept_offsets_);
    Offsets(red_dims, red_strides, reduced_offsets_);
    if (x.numel == 0) kept_offsets_.clear();
    return Status::Ok();
  }

  Status Run(const KernelArgs& args, CpuContext&) override {
    DispatchFloat(args.in(0)->dtype, [&](auto tag) {
      using T = decltype(tag);
      using A = Acc<T>;
      const T* px = args.in(0)->As<T>();
      T* py = args.out(0)->As<T>();
      double n = double(reduced_offsets_.size());
      for (int64_t base : kept_offsets_) {
        double sum = 0, sq = 0;
        for (int64_t off : reduced_offsets_) sum += double(Load(px[base + off]));
        double mean = sum / n;
        for (int64_t off : reduced_offsets_) {
          double d = double(Load(px[base + off])) - mean;
          sq += d * d;
        }
        A inv = A(1.0 / (std::sqrt(sq / n) + 1e-9)), m = A(mean);
        for (int64_t off : reduced_offsets_) py[base + off] = Store<T>((A(Load(px[base + off])) - m) * inv);
      }
    });
    return Status::Ok();
  }

 private:
  // All flat offsets sum(idx[i] * strides[i]) over the index space `dims`, in row-major order.
  static void Offsets(const std::vector<int64_t>& dims, const std::vector<int64_t>& strides, std::vector<int64_t>& out) {
    out.assign(1, 0);
    for (size_t i = 0; i < dims.size(); ++i) {
      std::vector<int64_t> next;
      next.reserve(out.size() * size_t(dims[i]));
      for (int64_t base : out)
        for (int64_t k = 0; k < dims[i]; ++k) next.push_back(base + k * strides[i]);
      out.swap(next);
    }
  }

  std::vector<int64_t> kept_offsets_, reduced_offsets_;
};

}  // namespace

void RegisterNormMoreKernels(KernelRegistry& r) {
  r.Register("LRN", Make<LrnKernel>);
  r.Register("LpNormalization", Make<LpNormKernel>);
  r.Register("MeanVarianceNormalization", Make<MeanVarianceNormKernel>);
}

}  // namespace precis::rt
