// Reference CumSum, CumProd and TopK.
//
// CumSum/CumProd: running sums/products along the axis given by input 1 (read at run time; the
// shape does not depend on it), optionally exclusive and/or reversed. Floats accumulate in double,
// integers wrap in 64 bits. Each element is read before its position is written: safe in place.
//
// TopK: k is the output size along the axis (the compiler fixed it from the attribute or the
// constant input 1; a k input is still checked against it at run time). Elements are ordered by
// value, NaN above every number (as numpy's sort puts it last), ties by lower index first as
// ONNX specifies; the result is always sorted, which "sorted = 0" permits.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "runtime/cpu/kernels/common.h"
#include "runtime/cpu/kernels/register.h"

namespace precis::rt {
namespace {

bool IsIndexType(DataType t) { return t == DataType::kI64 || t == DataType::kI32; }

int64_t ReadIndex(const Tensor& t) { return t.dtype == DataType::kI64 ? t.As<int64_t>()[0] : t.As<int32_t>()[0]; }

template <bool kProduct>
class CumulativeKernel : public Kernel {
 public:
  Status Init(const KernelArgs& args, const CpuContext&) override {
    Tensor *x = args.in(0), *axis = args.in(1), *y = args.out(0);
    if (!x || !axis || !y) return args.Error("needs inputs x and axis and an output");
    if (x->dtype != y->dtype || x->dims != y->dims) return args.Error("output type differs from the input's");
    if (!DispatchNumeric(x->dtype, [](auto) {})) return args.Error(std::string("unsupported dtype ") + DataTypeName(x->dtype));
    if (!IsIndexType(axis->dtype) || axis->numel != 1) return args.Error("axis must be one int32 or int64 value");
    if (x->rank() == 0) return args.Error("input must have rank >= 1");
    exclusive_ = args.attrs.Int("exclusive", 0) != 0;
    reverse_ = args.attrs.Int("reverse", 0) != 0;
    return Status::Ok();
  }

  Status Run(const KernelArgs& args, CpuContext&) override {
    const Tensor& x = *args.in(0);
    Tensor& y = *args.out(0);
    int64_t rank = x.rank(), axis = ReadIndex(*args.in(1));
    if (axis < -rank || axis >= rank) return args.Error("axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
    if (axis < 0) axis += rank;
    int64_t outer = 1, n = x.dims[size_t(axis)], inner = 1;
    for (int64_t d = 0; d < axis; ++d) outer *= x.dims[size_t(d)];
    for (int64_t d = axis + 1; d < rank; ++d) inner *= x.dims[size_t(d)];
    DispatchNumeric(x.dtype, [&](auto tag) {
      using T = decltype(tag);
      using Acc = std::conditional_t<std::is_integral_v<T>, uint64_t, double>;
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t i = 0; i < inner; ++i) {
          const T* px = x.As<T>() + o * n * inner + i;
          T* py = y.As<T>() + o * n * inner + i;
          Acc acc = kProduct ? 1 : 0;
          for (int64_t s = 0; s < n; ++s) {
            int64_t k = (reverse_ ? n - 1 - s : s) * inner;
            Acc v = Acc(Load(px[k]));
            if (exclusive_) {
              py[k] = Out<T>(acc);
              acc = kProduct ? acc * v : acc + v;
            } else {
              acc = kProduct ? acc * v : acc + v;
              py[k] = Out<T>(acc);
            }
          }
        }
    });
    return Status::Ok();
  }

 private:
  template <typename T, typename Acc>
  static T Out(Acc v) {
    if constexpr (std::is_integral_v<T>) return T(v);
    else return Store<T>(v);
  }

  bool exclusive_ = false, reverse_ = false;
};

class TopKKernel : public Kernel {
 public:
  Status Init(const KernelArgs& args, const CpuContext&) override {
    Tensor *x = args.in(0), *values = args.out(0), *indices = args.out(1);
    if (!x || (!values && !indices)) return args.Error("needs an input and an output");
    if (!DispatchNumeric(x->dtype, [](auto) {})) return args.Error(std::string("unsupported dtype ") + DataTypeName(x->dtype));
    if (values && values->dtype != x->dtype) return args.Error("values dtype differs from the input's");
    if (indices && indices->dtype != DataType::kI64) return args.Error("indices must be int64");
    if (values && indices && values->dims != indices->dims) return args.Error("values and indices shapes differ");
    const std::vector<int64_t>& out_dims = values ? values->dims : indices->dims;
    int64_t rank = x->rank(), axis = args.attrs.Int("axis", -1);
    if (rank == 0 || axis < -rank || axis >= rank) return args.Error("axis " + std::to_string(axis) + " is out of range");
    if (axis < 0) axis += rank;
    if (int64_t(out_dims.size()) != rank) return args.Error("output rank differs from the input's");
    outer_ = inner_ = 1;
    for (int64_t d = 0; d < rank; ++d) {
      if (d != axis && out_dims[size_t(d)] != x->dims[size_t(d)]) return args.Error("output shape does not match the input");
      if (d < axis) outer_ *= x->dims[size_t(d)];
      if (d > axis) inner_ *= x->dims[size_t(d)];
    }
    n_ = x->dims[size_t(axis)];
    k_ = out_dims[size_t(axis)];
    if (k_ > n_) return args.Error("k = " + std::to_string(k_) + " exceeds the axis size " + std::to_string(n_));
    if (args.attrs.Has("k") && args.attrs.Int("k", k_) != k_) return args.Error("attribute k does not match the output");
    if (const Tensor* k = args.in(1))
      if (!IsIndexType(k->dtype) || k->numel != 1) return args.Error("k must be one int64 value");
    largest_ = args.attrs.Int("largest", 1) != 0;
    return Status::Ok();
  }

  size_t ScratchBytes() const override { return size_t(n_) * sizeof(int64_t); }

  Status Run(const KernelArgs& args, CpuContext& ctx) override {
    if (const Tensor* k = args.in(1))
      if (ReadIndex(*k) != k_) return args.Error("k = " + std::to_string(ReadIndex(*k)) + ", but the plan was built for " + std::to_string(k_));
    const Tensor& x = *args.in(0);
    Tensor *values = args.out(0), *indices = args.out(1);
    auto* order = reinterpret_cast<int64_t*>(ctx.scratch);
    DispatchNumeric(x.dtype, [&](auto tag) {
      using T = decltype(tag);
      using C = typename ComputeOf<T>::type;
      auto greater = [](C a, C b) {
        if constexpr (std::is_integral_v<C>) return a > b;
        else return (std::isnan(a) && !std::isnan(b)) || a > b;
      };
      for (int64_t o = 0; o < outer_; ++o)
        for (int64_t i = 0; i < inner_; ++i) {
          const T* px = x.As<T>() + o * n_ * inner_ + i;
          std::iota(order, order + n_, int64_t(0));
          auto before = [&](int64_t a, int64_t b) {
            C va = Load(px[a * inner_]), vb = Load(px[b * inner_]);
            bool ab = largest_ ? greater(va, vb) : greater(vb, va);
            bool ba = largest_ ? greater(vb, va) : greater(va, vb);
            return ab || (!ba && a < b);
          };
          std::partial_sort(order, order + k_, order + n_, before);
          int64_t out_base = o * k_ * inner_ + i;
          for (int64_t j = 0; j < k_; ++j) {
            if (values) values->As<T>()[out_base + j * inner_] = px[order[j] * inner_];
            if (indices) indices->As<int64_t>()[out_base + j * inner_] = order[j];
          }
        }
    });
    return Status::Ok();
  }

 private:
  int64_t outer_ = 0, n_ = 0, inner_ = 0, k_ = 0;
  bool largest_ = true;
};

}  // namespace

void AddScanAndTopKKernels(KernelRegistry& r) {
  r.Register("CumSum", Make<CumulativeKernel<false>>);
  r.Register("CumProd", Make<CumulativeKernel<true>>);
  r.Register("TopK", Make<TopKKernel>);
}

}  // namespace precis::rt
