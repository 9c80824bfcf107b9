// Reference Softmax, LogSoftmax and Hardmax. With "coerce_2d" (the kernel form of versions
// before 13) the input is coerced to a 2-D matrix at `axis` and each row of the flattened
// trailing block is normalized; otherwise only `axis` is. Both are a walk over (outer, n, inner) rows: the max
// is subtracted for stability and the sums run in double. Each row is read fully before any of
// it is written, and then element by element, so the output may share storage with the input.
#include <cmath>
#include <limits>

#include "runtime/cpu/kernels/common.h"
#include "runtime/cpu/kernels/register.h"

namespace precis::rt {
namespace {

enum class SoftmaxOp { kSoftmax, kLogSoftmax, kHardmax };

template <SoftmaxOp kOp>
class SoftmaxKernel : public Kernel {
 public:
  Status Init(const KernelArgs& args, const CpuContext&) override {
    Tensor *x = args.in(0), *y = args.out(0);
    if (!x || !y) return args.Error("needs an input and an output");
    if (x->dtype != y->dtype || x->dims != y->dims) return args.Error("output type differs from the input's");
    if (!DispatchFloat(x->dtype, [](auto) {})) return args.Error(std::string("unsupported dtype ") + DataTypeName(x->dtype));
    bool legacy = args.attrs.Int("coerce_2d", 0) != 0;
    int64_t rank = x->rank(), axis = args.attrs.Int("axis", legacy ? 1 : -1);
    if (legacy ? (axis < -rank || axis > rank) : (axis < -rank || axis >= rank))
      return args.Error("axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
    if (axis < 0) axis += rank;
    outer_ = n_ = inner_ = 1;
    for (int64_t d = 0; d < rank; ++d) {
      int64_t v = x->dims[size_t(d)];
      if (d < axis) outer_ *= v;
      else if (d == axis || legacy) n_ *= v;
      else inner_ *= v;
    }
    return Status::Ok();
  }

  Status Run(const KernelArgs& args, CpuContext&) override {
    const Tensor& x = *args.in(0);
    Tensor& y = *args.out(0);
    DispatchFloat(x.dtype, [&](auto tag) {
      using T = decltype(tag);
      for (int64_t o = 0; o < outer_; ++o)
        for (int64_t i = 0; i < inner_; ++i) {
          int64_t base = o * n_ * inner_ + i;
          Row<T>(x.As<T>() + base, y.As<T>() + base);
        }
    });
    return Status::Ok();
  }

 private:
  template <typename T>
  void Row(const T* x, T* y) const {
    if (n_ == 0) return;
    double m = -std::numeric_limits<double>::infinity();
    int64_t arg = 0;
    for (int64_t k = 0; k < n_; ++k) {
      double v = double(Load(x[k * inner_]));
      if (v > m || (std::isnan(v) && !std::isnan(m))) {  // the first NaN wins, as np.argmax
        m = v;
        arg = k;
      }
    }
    if constexpr (kOp == SoftmaxOp::kHardmax) {
      for (int64_t k = 0; k < n_; ++k) y[k * inner_] = Store<T>(k == arg ? 1.0f : 0.0f);
    } else {
      if (std::isinf(m)) m = 0;  // all -inf (or some +inf): let the infinities decide alone
      double sum = 0;
      for (int64_t k = 0; k < n_; ++k) sum += std::exp(double(Load(x[k * inner_])) - m);
      double log_sum = std::log(sum);
      for (int64_t k = 0; k < n_; ++k) {
        double v = double(Load(x[k * inner_])) - m;
        if constexpr (kOp == SoftmaxOp::kSoftmax) y[k * inner_] = Store<T>(std::exp(v) / sum);
        else y[k * inner_] = Store<T>(v - log_sum);
      }
    }
  }

  int64_t outer_ = 0, n_ = 0, inner_ = 0;
};

}  // namespace

void AddSoftmaxKernels(KernelRegistry& r) {
  r.Register("Softmax", Make<SoftmaxKernel<SoftmaxOp::kSoftmax>>);
  r.Register("LogSoftmax", Make<SoftmaxKernel<SoftmaxOp::kLogSoftmax>>);
  r.Register("Hardmax", Make<SoftmaxKernel<SoftmaxOp::kHardmax>>);
}

}  // namespace precis::rt
