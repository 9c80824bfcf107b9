// Reference NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss. The input is viewed as
// [N, C, D] (D = product of the trailing dims), the target as [N, D]. Each position (n, d) with
// class t = target[n, d] contributes -w[t] * x[n, t, d] (x = LogSoftmax over C for
// SoftmaxCrossEntropyLoss, computed per position in double); w = 1 without a weight input.
// Positions whose target equals ignore_index (when the attribute is set) contribute 0 and weight
// 0. "mean" divides the sum by the sum of the applied weights (as the ONNX reference: 0/0 gives
// NaN). Any other target outside [0, C) is an error at run time; nothing is read out of bounds.
#include <algorithm>
#include <cmath>
#include <limits>

#include "runtime/cpu/kernels/common.h"
#include "runtime/cpu/kernels/register.h"

namespace precis::rt {
namespace {

enum class Reduction { kNone, kSum, kMean };

template <bool kSoftmax>
class LossKernel : public Kernel {
 public:
  Status Init(const KernelArgs& args, const CpuContext&) override {
    Tensor *x = args.in(0), *t = args.in(1), *w = args.in(2), *y = args.out(0);
    if (!x || !t || !y) return args.Error("needs an input, a target and an output");
    if (!DispatchFloat(x->dtype, [](auto) {})) return args.Error(std::string("unsupported dtype ") + DataTypeName(x->dtype));
    if (t->dtype != DataType::kI32 && t->dtype != DataType::kI64)
      return args.Error(std::string("unsupported target dtype ") + DataTypeName(t->dtype));
    if (x->rank() < 2) return args.Error("input must have rank >= 2");
    if (t->rank() + 1 != x->rank()) return args.Error("target rank must be the input rank minus 1");
    n_ = x->dims[0];
    c_ = x->dims[1];
    d_ = 1;
    for (int64_t i = 2; i < x->rank(); ++i) d_ *= x->dims[size_t(i)];
    if (t->dims[0] != n_) return args.Error("target dim 0 differs from the input's");
    for (int64_t i = 2; i < x->rank(); ++i)
      if (t->dims[size_t(i - 1)] != x->dims[size_t(i)]) return args.Error("target dims differ from the input's");
    if (w) {
      if (w->dtype != x->dtype) return args.Error("weight dtype differs from the input's");
      if (w->rank() != 1 || w->dims[0] != c_) return args.Error("weight must be [C]");
    }
    std::string r = args.attrs.String("reduction", "mean");
    if (r == "none") reduction_ = Reduction::kNone;
    else if (r == "sum") reduction_ = Reduction::kSum;
    else if (r == "mean") reduction_ = Reduction::kMean;
    else return args.Error("unknown reduction '" + r + "'");
    if (y->dtype != x->dtype) return args.Error("output dtype differs from the input's");
    if (reduction_ == Reduction::kNone ? y->numel != n_ * d_ : y->numel != 1)
      return args.Error("output has an unexpected size");
    has_ignore_ = args.attrs.Has("ignore_index");
    ignore_ = args.attrs.Int("ignore_index", 0);
    Tensor* lp = args.out(1);
    if (lp) {
      if (!kSoftmax) return args.Error("has one output");
      if (lp->dtype != x->dtype || lp->dims != x->dims) return args.Error("log_prob output type differs from the input's");
    }
    return Status::Ok();
  }

  Status Run(const KernelArgs& args, CpuContext&) override {
    Status status = Status::Ok();
    DispatchFloat(args.in(0)->dtype, [&](auto tag) {
      using T = decltype(tag);
      if (args.in(1)->dtype == DataType::kI32) status = Compute<T, int32_t>(args);
      else status = Compute<T, int64_t>(args);
    });
    return status;
  }

 private:
  template <typename T, typename I>
  Status Compute(const KernelArgs& args) const {
    const T* x = args.in(0)->As<T>();
    const I* target = args.in(1)->As<I>();
    const T* w = args.in(2) ? args.in(2)->As<T>() : nullptr;
    T* y = args.out(0)->As<T>();
    T* lp = kSoftmax && args.out(1) ? args.out(1)->As<T>() : nullptr;
    double sum = 0, wsum = 0;
    for (int64_t n = 0; n < n_; ++n)
      for (int64_t d = 0; d < d_; ++d) {
        const T* row = x + n * c_ * d_ + d;  // class k at row[k * d_]
        double m = 0, log_sum = 0;
        if constexpr (kSoftmax) {
          if (c_ > 0) {
            m = -std::numeric_limits<double>::infinity();
            for (int64_t k = 0; k < c_; ++k) m = std::max(m, double(Load(row[k * d_])));
            if (std::isinf(m)) m = 0;
            double s = 0;
            for (int64_t k = 0; k < c_; ++k) s += std::exp(double(Load(row[k * d_])) - m);
            log_sum = std::log(s);
            if (lp)
              for (int64_t k = 0; k < c_; ++k)
                lp[n * c_ * d_ + d + k * d_] = Store<T>(double(Load(row[k * d_])) - m - log_sum);
          }
        }
        int64_t i = n * d_ + d;
        int64_t t = int64_t(target[i]);
        double loss = 0, weight = 0;
        if (!(has_ignore_ && t == ignore_)) {
          if (t < 0 || t >= c_)
            return args.Error("target " + std::to_string(t) + " at index " + std::to_string(i) +
                              " is out of range [0, " + std::to_string(c_) + ")");
          weight = w ? double(Load(w[t])) : 1.0;
          double v = double(Load(row[t * d_]));
          if constexpr (kSoftmax) v = v - m - log_sum;
          loss = -weight * v;
        }
        if (reduction_ == Reduction::kNone) y[i] = Store<T>(loss);
        sum += loss;
        wsum += weight;
      }
    if (reduction_ == Reduction::kSum) y[0] = Store<T>(sum);
    else if (reduction_ == Reduction::kMean) y[0] = Store<T>(sum / wsum);
    return Status::Ok();
  }

  int64_t n_ = 0, c_ = 0, d_ = 0;
  Reduction reduction_ = Reduction::kMean;
  bool has_ignore_ = false;
  int64_t ignore_ = 0;
};

}  // namespace

void RegisterLossKernels(KernelRegistry& r) {
  r.Register("NegativeLogLikelihoodLoss", Make<LossKernel<false>>);
  r.Register("SoftmaxCrossEntropyLoss", Make<LossKernel<true>>);
}

}  // namespace precis::rt
