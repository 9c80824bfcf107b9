// Reference pooling kernels: MaxPool (optional Indices), AveragePool, LpPool and the Global*
// pools, for 1 to 3 spatial dims. Init tabulates, per spatial dim and output index, the range of
// kernel offsets that land inside the input, so Run visits only real elements. AveragePool with
// count_include_pad divides by the window positions inside input + explicit pads (positions in
// the extra ceil_mode tail are never counted), as the ONNX reference does. Sums accumulate in
// float (double for f64).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "runtime/cpu/kernels/common.h"
#include "runtime/kernels/index_util.h"
#include "runtime/kernels/nn_window.h"

namespace precis::rt {
namespace {

template <typename T>
using Acc = std::conditional_t<std::is_same_v<T, double>, double, float>;

enum class PoolMode { kMax, kAverage, kLp };

template <PoolMode kMode>
class PoolKernel : public Kernel {
 public:
  Status Init(const KernelArgs& args, const CpuContext&) override {
    Tensor *x = args.in(0), *y = args.out(0), *indices = args.out(1);
    if (!x || !y) return args.Error("needs input X and output Y");
    bool ok = kMode == PoolMode::kMax ? DispatchNumeric(x->dtype, [](auto) {}) : DispatchFloat(x->dtype, [](auto) {});
    if (!ok) return args.Error(std::string("unsupported dtype ") + DataTypeName(x->dtype));
    if (y->dtype != x->dtype) return args.Error("X and Y dtypes differ");
    if (x->rank() < 3 || x->rank() > 5) return args.Error("X must have rank 3 to 5 (N, C and 1 to 3 spatial dims)");
    if (!args.attrs.Has("kernel_shape")) return args.Error("attribute kernel_shape is required");
    std::vector<int64_t> in(x->dims.begin() + 2, x->dims.end());
    PRECIS_RETURN_IF_ERROR(ReadWindow(args, in, args.attrs.Ints("kernel_shape"), true, &win_));
    planes_ = x->dims[0] * x->dims[1];
    PRECIS_RETURN_IF_ERROR(CheckWindowOutput(args, *y, x->dims[0], x->dims[1], win_, "output Y"));
    if (indices) {
      if (kMode != PoolMode::kMax) return args.Error("only MaxPool has an Indices output");
      if (indices->dtype != DataType::kI64 || indices->dims != y->dims) return args.Error("Indices must be int64 with Y's shape");
      column_major_ = args.attrs.Int("storage_order", 0) != 0;
      if (column_major_ && win_.spatial > 2) return args.Error("storage_order=1 Indices need 1 or 2 spatial dims");
    }
    count_include_pad_ = args.attrs.Int("count_include_pad", 0) != 0;
    p_ = args.attrs.Int("p", 2);
    if (kMode == PoolMode::kLp && p_ <= 0) return args.Error("p must be positive");
    for (int d = 0; d < 3; ++d) ranges_[d] = WindowRanges(win_, d);
    return Status::Ok();
  }

  Status Run(const KernelArgs& args, CpuContext&) override {
    if constexpr (kMode == PoolMode::kMax)
      DispatchNumeric(args.in(0)->dtype, [&](auto tag) { RunTyped<decltype(tag)>(args); });
    else
      DispatchFloat(args.in(0)->dtype, [&](auto tag) { RunTyped<decltype(tag)>(args); });
    return Status::Ok();
  }

 private:
  template <typename T>
  void RunTyped(const KernelArgs& args) {
    using C = std::conditional_t<std::is_integral_v<T>, T, Acc<T>>;
    const T* px = args.in(0)->As<T>();
    T* py = args.out(0)->As<T>();
    int64_t* pi = args.out(1) ? args.out(1)->As<int64_t>() : nullptr;
    const int64_t IH = win_.in[1], IW = win_.in[2], in_size = win_.InSize();
    const int64_t dd = win_.dilation[0], dh = win_.dilation[1], dw = win_.dilation[2];
    int64_t out_i = 0;
    for (int64_t plane = 0; plane < planes_; ++plane) {
      const T* xp = px + plane * in_size;
      for (const WindowRange& rd : ranges_[0])
        for (const WindowRange& rh : ranges_[1])
          for (const WindowRange& rw : ranges_[2]) {
            C best = std::numeric_limits<C>::lowest();
            int64_t best_i = -1;
            C sum = 0;
            for (int64_t kd = rd.lo; kd < rd.hi; ++kd)
              for (int64_t kh = rh.lo; kh < rh.hi; ++kh) {
                int64_t base = ((rd.start + kd * dd) * IH + rh.start + kh * dh) * IW + rw.start;
                for (int64_t kw = rw.lo; kw < rw.hi; ++kw) {
                  int64_t at = base + kw * dw;
                  C v = C(Load(xp[at]));
                  if constexpr (kMode == PoolMode::kMax) {
                    // NaN loses to any number and wins only an all-NaN window.
                    if (best_i < 0 || v > best || (best != best && v == v)) {
                      best = v;
                      best_i = at;
                    }
                  } else if constexpr (kMode == PoolMode::kAverage) {
                    sum += v;
                  } else {
                    C a = v < 0 ? -v : v;
                    sum += p_ == 1 ? a : p_ == 2 ? a * a : C(std::pow(a, C(p_)));
                  }
                }
              }
            if constexpr (kMode == PoolMode::kMax) {
              py[out_i] = Store<T>(best);
              if (pi) {
                int64_t at = column_major_ ? best_i % IW * IH + best_i / IW : best_i;  // (h, w) -> w * H + h
                pi[out_i] = best_i < 0 ? -1 : plane * in_size + at;
              }
            } else if constexpr (kMode == PoolMode::kAverage) {
              int64_t count = count_include_pad_ ? rd.padded * rh.padded * rw.padded
                                                 : (rd.hi - rd.lo) * (rh.hi - rh.lo) * (rw.hi - rw.lo);
              py[out_i] = Store<T>(count > 0 ? sum / C(count) : C(0));
            } else {
              py[out_i] = Store<T>(p_ == 1 ? sum : p_ == 2 ? std::sqrt(sum) : C(std::pow(sum, C(1) / C(p_))));
            }
            ++out_i;
          }
    }
  }

  Window win_;
  std::vector<WindowRange> ranges_[3];
  int64_t planes_ = 0, p_ = 2;
  bool count_include_pad_ = false, column_major_ = false;
};

// Global pools reduce each (n, c) plane to one value; Y is [N, C, 1, ...].
template <PoolMode kMode>
class GlobalPoolKernel : public Kernel {
 public:
  Status Init(const KernelArgs& args, const CpuContext&) override {
    Tensor *x = args.in(0), *y = args.out(0);
    if (!x || !y) return args.Error("needs input X and output Y");
    if (!DispatchFloat(x->dtype, [](auto) {})) return args.Error(std::string("unsupported dtype ") + DataTypeName(x->dtype));
    if (y->dtype != x->dtype) return args.Error("X and Y dtypes differ");
    if (x->rank() < 2) return args.Error("X must have rank >= 2 (N, C, spatial dims)");
    planes_ = x->dims[0] * x->dims[1];
    if (y->numel != planes_ || y->rank() != x->rank()) return args.Error("Y must have shape [N, C, 1, ...]");
    plane_size_ = planes_ ? x->numel / planes_ : 0;
    p_ = args.attrs.Int("p", 2);
    if (kMode == PoolMode::kLp && p_ <= 0) return args.Error("p must be positive");
    return Status::Ok();
  }

  Status Run(const KernelArgs& args, CpuContext&) override {
    DispatchFloat(args.in(0)->dtype, [&](auto tag) {
      using T = decltype(tag);
      using C = Acc<T>;
      const T* px = args.in(0)->As<T>();
      T* py = args.out(0)->As<T>();
      for (int64_t plane = 0; plane < planes_; ++plane) {
        const T* xp = px + plane * plane_size_;
        C r = 0;
        if constexpr (kMode == PoolMode::kMax) {
          r = plane_size_ ? C(Load(xp[0])) : C(0);
          for (int64_t i = 1; i < plane_size_; ++i) {
            C v = C(Load(xp[i]));
            if (v > r || r != r) r = v;
          }
        } else if constexpr (kMode == PoolMode::kAverage) {
          for (int64_t i = 0; i < plane_size_; ++i) r += C(Load(xp[i]));
          r = plane_size_ ? r / C(plane_size_) : C(0);
        } else {
          for (int64_t i = 0; i < plane_size_; ++i) {
            C a = std::fabs(C(Load(xp[i])));
            r += p_ == 1 ? a : p_ == 2 ? a * a : C(std::pow(a, C(p_)));
          }
          r = p_ == 1 ? r : p_ == 2 ? std::sqrt(r) : C(std::pow(r, C(1) / C(p_)));
        }
        py[plane] = Store<T>(r);
      }
    });
    return Status::Ok();
  }

 private:
  int64_t planes_ = 0, plane_size_ = 0, p_ = 2;
};

// MaxPoolGrad(dY, X) -> dX: every window's dY added at the position of the window's maximum in
// X, chosen as PoolKernel<kMax> chooses it (the first maximum in scan order; NaN loses to any
// number and wins only an all-NaN window); windows of padding only add nothing. Each plane sums
// in double and stores once.
class MaxPoolGradKernel : public Kernel {
 public:
  Status Init(const KernelArgs& args, const CpuContext&) override {
    const Tensor *dy = args.in(0), *x = args.in(1), *dx = args.out(0);
    if (!dy || !x || !dx) return args.Error("needs dY, X and dX");
    if (!DispatchFloat(x->dtype, [](auto) {}) || dy->dtype != x->dtype || dx->dtype != x->dtype)
      return args.Error("dY, X and dX must be float tensors of one dtype");
    if (x->rank() < 3 || x->rank() > 5) return args.Error("X must have rank 3 to 5 (N, C and 1 to 3 spatial dims)");
    if (dx->dims != x->dims) return args.Error("dX must have X's shape");
    if (!args.attrs.Has("kernel_shape")) return args.Error("attribute kernel_shape is required");
    std::vector<int64_t> in(x->dims.begin() + 2, x->dims.end());
    PRECIS_RETURN_IF_ERROR(ReadWindow(args, in, args.attrs.Ints("kernel_shape"), true, &win_));
    PRECIS_RETURN_IF_ERROR(CheckWindowOutput(args, *dy, x->dims[0], x->dims[1], win_, "dY"));
    planes_ = x->dims[0] * x->dims[1];
    for (int d = 0; d < 3; ++d) ranges_[d] = WindowRanges(win_, d);
    sums_.assign(size_t(win_.InSize()), 0.0);
    return Status::Ok();
  }

  Status Run(const KernelArgs& args, CpuContext&) override {
    DispatchFloat(args.in(1)->dtype, [&](auto tag) {
      using T = decltype(tag);
      using C = Acc<T>;
      const T* pg = args.in(0)->As<T>();
      const T* px = args.in(1)->As<T>();
      T* pdx = args.out(0)->As<T>();
      const int64_t IH = win_.in[1], IW = win_.in[2], in_size = win_.InSize(), out_size = win_.OutSize();
      const int64_t dd = win_.dilation[0], dh = win_.dilation[1], dw = win_.dilation[2];
      for (int64_t plane = 0; plane < planes_; ++plane) {
        const T* xp = px + plane * in_size;
        const T* gp = pg + plane * out_size;
        std::fill(sums_.begin(), sums_.end(), 0.0);
        int64_t out_i = 0;
        for (const WindowRange& rd : ranges_[0])
          for (const WindowRange& rh : ranges_[1])
            for (const WindowRange& rw : ranges_[2]) {
              C best = std::numeric_limits<C>::lowest();
              int64_t best_i = -1;
              for (int64_t kd = rd.lo; kd < rd.hi; ++kd)
                for (int64_t kh = rh.lo; kh < rh.hi; ++kh) {
                  int64_t base = ((rd.start + kd * dd) * IH + rh.start + kh * dh) * IW + rw.start;
                  for (int64_t kw = rw.lo; kw < rw.hi; ++kw) {
                    int64_t at = base + kw * dw;
                    C v = C(Load(xp[at]));
                    if (best_i < 0 || v > best || (best != best && v == v)) {
                      best = v;
                      best_i = at;
                    }
                  }
                }
              if (best_i >= 0) sums_[size_t(best_i)] += C(Load(gp[out_i]));
              ++out_i;
            }
        for (int64_t i = 0; i < in_size; ++i) pdx[plane * in_size + i] = Store<T>(C(sums_[size_t(i)]));
      }
    });
    return Status::Ok();
  }

 private:
  Window win_;
  std::vector<WindowRange> ranges_[3];
  int64_t planes_ = 0;
  std::vector<double> sums_;  // one plane of dX
};

// MaxUnpool: X and the flat indices I (of MaxPool over the unpooled shape, inferred from the
// attributes: (in - 1) * stride - pads + kernel) scattered into zeros; with output_shape larger
// than the inferred shape, the inferred block sits at its origin (as the ONNX reference does).
class MaxUnpoolKernel : public Kernel {
 public:
  Status Init(const KernelArgs& args, const CpuContext&) override {
    const Tensor *x = args.in(0), *idx = args.in(1), *y = args.out(0);
    if (!x || !idx || !y || x->dtype != y->dtype || DataTypeSize(x->dtype) == 0 || idx->dims != x->dims || !IsIndexType(idx->dtype) ||
        x->rank() < 3 || y->rank() != x->rank())
      return args.Error("needs X, indices of X's shape and an output of X's rank");
    std::vector<int64_t> kernel = args.attrs.Ints("kernel_shape");
    size_t n = size_t(x->rank() - 2);
    std::vector<int64_t> strides = args.attrs.Ints("strides", std::vector<int64_t>(n, 1)), pads = args.attrs.Ints("pads", std::vector<int64_t>(2 * n, 0));
    if (kernel.size() != n || strides.size() != n || pads.size() != 2 * n) return args.Error("kernel_shape, strides and pads do not match X's spatial dims");
    inferred_ = {x->dims[0], x->dims[1]};
    for (size_t d = 0; d < n; ++d) inferred_.push_back((x->dims[d + 2] - 1) * strides[d] - pads[d] - pads[n + d] + kernel[d]);
    for (size_t d = 0; d < inferred_.size(); ++d)
      if (inferred_[d] < 0 || inferred_[d] > y->dims[d]) return args.Error("the output is smaller than the unpooled shape " + DimsToString(inferred_));
    return Status::Ok();
  }
  Status Run(const KernelArgs& args, CpuContext&) override {
    const Tensor &x = *args.in(0), &idx = *args.in(1);
    Tensor& y = *args.out(0);
    if (y.bytes) std::memset(y.data, 0, y.bytes);
    int64_t total = DimProduct(inferred_, 0, inferred_.size());
    size_t esize = DataTypeSize(x.dtype);
    std::vector<int64_t> strides = DenseStrides(y.dims);
    for (int64_t k = 0; k < x.numel; ++k) {
      int64_t flat = IndexAt(idx, k);
      if (flat < 0 || flat >= total) return args.Error("index " + std::to_string(flat) + " is outside the unpooled shape " + DimsToString(inferred_));
      int64_t at = 0;  // the same coordinates in the output
      for (size_t d = inferred_.size(); d-- > 0;) {
        at += (flat % inferred_[d]) * strides[d];
        flat /= inferred_[d];
      }
      std::memcpy(y.data + size_t(at) * esize, x.data + size_t(k) * esize, esize);
    }
    return Status::Ok();
  }

 private:
  std::vector<int64_t> inferred_;
};

}  // namespace

void RegisterPoolKernels(KernelRegistry& r) {
  r.Register("MaxUnpool", Make<MaxUnpoolKernel>);
  r.Register("MaxPoolGrad", Make<MaxPoolGradKernel>);
  r.Register("MaxPool", Make<PoolKernel<PoolMode::kMax>>);
  r.Register("AveragePool", Make<PoolKernel<PoolMode::kAverage>>);
  r.Register("LpPool", Make<PoolKernel<PoolMode::kLp>>);
  r.Register("GlobalMaxPool", Make<GlobalPoolKernel<PoolMode::kMax>>);
  r.Register("GlobalAveragePool", Make<GlobalPoolKernel<PoolMode::kAverage>>);
  r.Register("GlobalLpPool", Make<GlobalPoolKernel<PoolMode::kLp>>);
}

}  // namespace precis::rt
