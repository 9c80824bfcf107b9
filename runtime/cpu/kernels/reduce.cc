// Reference reduction kernels: the Reduce* family and ArgMax/ArgMin. Float types accumulate in
// double and are stored once at the end (these kernels are the oracle for faster ones);
// integer sums and products wrap in 64 bits and are then narrowed, as numpy's fixed-width
// arithmetic does; ReduceMean, ReduceL2, ReduceLogSum and ReduceLogSumExp of integers are
// computed in double and truncated. Reducing an empty set gives the operation's identity: sum 0,
// product 1, max -inf (or the type's lowest), min +inf (or its highest), log-sum -inf. Max and
// min propagate NaN like np.maximum.
//
// The input is walked as (kept groups) x (reduced groups): size-1 dimensions are dropped and
// neighbouring dimensions of the same kind merged, so most reductions become one strided inner
// loop. The Softmax family, CumSum/TopK and Einsum live in reduce_softmax.cc, reduce_scan.cc
// and reduce_einsum.cc.
#include <algorithm>
#include <cmath>
#include <limits>

#include "runtime/cpu/kernels/common.h"
#include "runtime/cpu/kernels/register.h"

namespace precis::rt {

void AddSoftmaxKernels(KernelRegistry& r);         // reduce_softmax.cc
void AddScanAndTopKKernels(KernelRegistry& r);     // reduce_scan.cc
void AddEinsumKernels(KernelRegistry& r);          // reduce_einsum.cc

namespace {

enum class ReduceOp { kSum, kMean, kMax, kMin, kProd, kL1, kL2, kSumSquare, kLogSum, kLogSumExp };

template <typename T>
constexpr bool kIsFloat = !std::is_integral_v<T>;

// double -> T with NaN -> 0 and saturation for integers (the ONNX reference casts with numpy,
// whose out-of-range conversions are undefined; saturating is at least defined).
template <typename T>
T Narrow(double v) {
  if constexpr (kIsFloat<T>) {
    return Store<T>(v);
  } else {
    if (std::isnan(v)) return T(0);
    if (v <= double(std::numeric_limits<T>::lowest())) return std::numeric_limits<T>::lowest();
    if (v >= double(std::numeric_limits<T>::max())) return std::numeric_limits<T>::max();
    return T(v);
  }
}

template <ReduceOp kOp>
class ReduceKernel : public Kernel {
 public:
  Status Init(const KernelArgs& args, const CpuContext&) override {
    Tensor *x = args.in(0), *y = args.out(0);
    if (!x || !y) return args.Error("needs an input and an output");
    if (x->dtype != y->dtype) return args.Error("output dtype differs from the input's");
    bool bool_ok = (kOp == ReduceOp::kMax || kOp == ReduceOp::kMin) && x->dtype == DataType::kBool;
    if (!bool_ok && !DispatchNumeric(x->dtype, [](auto) {}))
      return args.Error(std::string("unsupported dtype ") + DataTypeName(x->dtype));
    std::vector<bool> reduced;
    PRECIS_RETURN_IF_ERROR(ReducedAxes(args, x->rank(), reduced));
    if (axes_at_run_) return Status::Ok();
    BuildGroups(x->dims, reduced);
    if (y->numel != out_count_)
      return args.Error("output has " + std::to_string(y->numel) + " elements, expected " + std::to_string(out_count_));
    return Status::Ok();
  }

  Status Run(const KernelArgs& args, CpuContext&) override {
    if (check_axes_at_run_) PRECIS_RETURN_IF_ERROR(CheckAllAxes(args));
    if (axes_at_run_) PRECIS_RETURN_IF_ERROR(AxesAtRun(args));
    const Tensor& x = *args.in(0);
    Tensor& y = *args.out(0);
    auto run = [&](auto tag) { RunTyped<decltype(tag)>(x, y); };
    if (x.dtype == DataType::kBool) {
      run(uint8_t{});
      if (kOp == ReduceOp::kMin && red_count_ == 0) std::fill(y.As<uint8_t>(), y.As<uint8_t>() + y.numel, 1);  // min of {} is true
    } else {
      DispatchNumeric(x.dtype, run);
    }
    return Status::Ok();
  }

 private:
  // Axes: the "axes" attribute (versions before ReduceSum 13 and the others' 18), else input 1
  // (constant, or of length 0 or rank when computed at run time).
  Status ReducedAxes(const KernelArgs& args, int64_t rank, std::vector<bool>& reduced) {
    std::vector<int64_t> axes;
    bool noop = false;
    if (args.attrs.Has("axes")) {
      axes = args.attrs.Ints("axes");
    } else if (const Tensor* a = args.in(1)) {
      noop = args.attrs.Int("noop_with_empty_axes", 0) != 0;
      if (a->dtype != DataType::kI64 && a->dtype != DataType::kI32) return args.Error("axes must be int64");
      if (a->is_constant) {
        axes = ReadInts(*a);
      } else if (a->numel == rank && rank > 0) {
        check_axes_at_run_ = true;
        seen_.assign(size_t(rank), 0);
        reduced.assign(size_t(rank), true);
        return Status::Ok();
      } else if (a->numel != 0) {
        // Some of the axes, known when the kernel runs (a dynamic plan's value input).
        if (a->numel > rank) return args.Error("axes name more axes than the input has");
        axes_at_run_ = true;
        return Status::Ok();
      }
    } else {
      noop = args.attrs.Int("noop_with_empty_axes", 0) != 0;
    }
    reduced.assign(size_t(rank), axes.empty() && !noop);
    for (int64_t a : axes) {
      if (a < -rank || a >= rank) return args.Error("axis " + std::to_string(a) + " is out of range");
      int64_t n = a < 0 ? a + rank : a;
      if (reduced[size_t(n)]) return args.Error("axis " + std::to_string(a) + " is given twice");
      reduced[size_t(n)] = true;
    }
    return Status::Ok();
  }

  // Axes read when the kernel runs: the groups rebuilt where they changed, the output checked.
  Status AxesAtRun(const KernelArgs& args) {
    const Tensor& a = *args.in(1);
    const Tensor& x = *args.in(0);
    int64_t rank = x.rank();
    std::vector<bool> reduced(size_t(rank), false);
    for (int64_t i = 0; i < a.numel; ++i) {
      int64_t v = a.dtype == DataType::kI64 ? a.As<int64_t>()[i] : a.As<int32_t>()[i];
      if (v < -rank || v >= rank) return args.Error("axis " + std::to_string(v) + " is out of range");
      int64_t n = v < 0 ? v + rank : v;
      if (reduced[size_t(n)]) return args.Error("axis " + std::to_string(v) + " is given twice");
      reduced[size_t(n)] = true;
    }
    if (reduced != run_reduced_) {
      BuildGroups(x.dims, reduced);
      run_reduced_ = reduced;
    }
    if (args.out(0)->numel != out_count_)
      return args.Error("output has " + std::to_string(args.out(0)->numel) + " elements, expected " + std::to_string(out_count_));
    return Status::Ok();
  }

  // A run-time axes input of length rank must name every axis once.
  Status CheckAllAxes(const KernelArgs& args) {
    const Tensor& a = *args.in(1);
    int64_t rank = int64_t(seen_.size());
    std::fill(seen_.begin(), seen_.end(), 0);
    for (int64_t i = 0; i < a.numel; ++i) {
      int64_t v = a.dtype == DataType::kI64 ? a.As<int64_t>()[i] : a.As<int32_t>()[i];
      if (v < -rank || v >= rank) return args.Error("axis " + std::to_string(v) + " is out of range");
      uint8_t& s = seen_[size_t(v < 0 ? v + rank : v)];
      if (s) return args.Error("axis " + std::to_string(v) + " is given twice");
      s = 1;
    }
    return Status::Ok();
  }

  void BuildGroups(const std::vector<int64_t>& dims, const std::vector<bool>& reduced) {
    std::vector<int64_t> strides = Strides(dims);
    int last_kind = -1;  // 0 kept, 1 reduced
    out_count_ = red_count_ = 1;
    kept_sizes_.clear(), kept_strides_.clear(), red_sizes_.clear(), red_strides_.clear();
    for (size_t d = 0; d < dims.size(); ++d) {
      int kind = reduced[d] ? 1 : 0;
      (kind ? red_count_ : out_count_) *= dims[d];
      if (dims[d] == 1) continue;
      auto& sizes = kind ? red_sizes_ : kept_sizes_;
      auto& strs = kind ? red_strides_ : kept_strides_;
      if (kind == last_kind) {
        sizes.back() *= dims[d];
        strs.back() = strides[d];
      } else {
        sizes.push_back(dims[d]);
        strs.push_back(strides[d]);
      }
      last_kind = kind;
    }
    kept_counter_.assign(kept_sizes_.size(), 0);
    red_counter_.assign(red_sizes_.size(), 0);
  }

  // Calls fn(value) for every element reduced into one output, starting at p.
  template <typename T, typename Fn>
  void ForEachReduced(const T* p, Fn&& fn) {
    if (red_count_ == 0) return;
    size_t g = red_sizes_.size();
    if (g == 0) {
      fn(Load(p[0]));
      return;
    }
    int64_t n = red_sizes_[g - 1], s = red_strides_[g - 1];
    int64_t outer = red_count_ / n, off = 0;
    std::fill(red_counter_.begin(), red_counter_.end(), 0);
    for (int64_t o = 0; o < outer; ++o) {
      const T* q = p + off;
      for (int64_t i = 0; i < n; ++i) fn(Load(q[i * s]));
      for (size_t k = g - 1; k-- > 0;) {
        off += red_strides_[k];
        if (++red_counter_[k] < red_sizes_[k]) break;
        off -= red_strides_[k] * red_sizes_[k];
        red_counter_[k] = 0;
      }
    }
  }

  template <typename T>
  void RunTyped(const Tensor& x, Tensor& y) {
    const T* px = x.As<T>();
    T* py = y.As<T>();
    int64_t base = 0;
    std::fill(kept_counter_.begin(), kept_counter_.end(), 0);
    for (int64_t o = 0; o < out_count_; ++o) {
      py[o] = ReduceOne<T>(px + base);
      for (size_t k = kept_sizes_.size(); k-- > 0;) {
        base += kept_strides_[k];
        if (++kept_counter_[k] < kept_sizes_[k]) break;
        base -= kept_strides_[k] * kept_sizes_[k];
        kept_counter_[k] = 0;
      }
    }
  }

  template <typename T>
  T ReduceOne(const T* p) {
    using C = typename ComputeOf<T>::type;
    constexpr bool kFloat = kIsFloat<T>;
    if constexpr (kOp == ReduceOp::kMax || kOp == ReduceOp::kMin) {
      constexpr bool kMax = kOp == ReduceOp::kMax;
      C acc = kFloat ? (kMax ? -std::numeric_limits<C>::infinity() : std::numeric_limits<C>::infinity())
                     : (kMax ? std::numeric_limits<C>::lowest() : std::numeric_limits<C>::max());
      ForEachReduced(p, [&](C v) {
        if (kMax ? v > acc : v < acc) acc = v;
        if constexpr (kFloat)
          if (std::isnan(v)) acc = v;  // NaN propagates, as np.maximum
      });
      return Store<T>(acc);
    } else if constexpr (kOp == ReduceOp::kLogSumExp) {
      double m = -std::numeric_limits<double>::infinity();
      ForEachReduced(p, [&](C v) {
        if (std::isfinite(double(v)) && double(v) > m) m = double(v);
      });
      // No finite value: the infinities decide alone, so all -inf gives -inf as the spec's
      // log(sum(exp(x))) does (the onnx reference's shifted form gives NaN there).
      if (!std::isfinite(m)) m = 0;
      double sum = 0;
      ForEachReduced(p, [&](C v) { sum += std::exp(double(v) - m); });
      return Narrow<T>(std::log(sum) + m);
    } else if constexpr (kFloat || kOp == ReduceOp::kMean || kOp == ReduceOp::kL2 || kOp == ReduceOp::kLogSum) {
      double acc = kOp == ReduceOp::kProd ? 1.0 : 0.0;
      ForEachReduced(p, [&](C c) {
        double v = double(c);
        if constexpr (kOp == ReduceOp::kProd) acc *= v;
        else if constexpr (kOp == ReduceOp::kL1) acc += std::fabs(v);
        else if constexpr (kOp == ReduceOp::kL2 || kOp == ReduceOp::kSumSquare) acc += v * v;
        else acc += v;
      });
      if constexpr (kOp == ReduceOp::kMean) {
        if constexpr (!kFloat)  // integral T only: clang 14 has no C++20 T(0) for the 16-bit float structs
          if (red_count_ == 0) return T(0);
        acc /= double(red_count_);
      }
      if constexpr (kOp == ReduceOp::kL2) acc = std::sqrt(acc);
      if constexpr (kOp == ReduceOp::kLogSum) acc = std::log(acc);
      return Narrow<T>(acc);
    } else {
      // Integer sum, product, L1, sum of squares: wrap in 64 bits like fixed-width arithmetic.
      uint64_t acc = kOp == ReduceOp::kProd ? 1 : 0;
      ForEachReduced(p, [&](C c) {
        uint64_t v = uint64_t(c);
        if constexpr (kOp == ReduceOp::kProd) acc *= v;
        else if constexpr (kOp == ReduceOp::kL1 && std::is_signed_v<C>) acc += c < 0 ? uint64_t(0) - v : v;
        else if constexpr (kOp == ReduceOp::kSumSquare) acc += v * v;
        else acc += v;
      });
      return T(acc);
    }
  }

  int64_t out_count_ = 0, red_count_ = 0;
  std::vector<int64_t> kept_sizes_, kept_strides_, red_sizes_, red_strides_;
  std::vector<int64_t> kept_counter_, red_counter_;  // odometers, reused by every Run
  bool check_axes_at_run_ = false;
  bool axes_at_run_ = false;       // some axes, read at run time
  std::vector<bool> run_reduced_;  // the axes the groups were built for
  std::vector<uint8_t> seen_;
};

// ArgMax / ArgMin along one axis; NaN counts as the extreme value, as numpy's argmax/argmin.
template <bool kMax>
class ArgReduceKernel : public Kernel {
 public:
  Status Init(const KernelArgs& args, const CpuContext&) override {
    Tensor *x = args.in(0), *y = args.out(0);
    if (!x || !y) return args.Error("needs an input and an output");
    if (y->dtype != DataType::kI64) return args.Error("output must be int64");
    if (!DispatchNumeric(x->dtype, [](auto) {})) return args.Error(std::string("unsupported dtype ") + DataTypeName(x->dtype));
    int64_t rank = x->rank(), axis = args.attrs.Int("axis", 0);
    if (rank == 0 || axis < -rank || axis >= rank) return args.Error("axis " + std::to_string(axis) + " is out of range");
    if (axis < 0) axis += rank;
    outer_ = inner_ = 1;
    for (int64_t d = 0; d < axis; ++d) outer_ *= x->dims[size_t(d)];
    for (int64_t d = axis + 1; d < rank; ++d) inner_ *= x->dims[size_t(d)];
    n_ = x->dims[size_t(axis)];
    if (y->numel != outer_ * inner_) return args.Error("output size does not match");
    if (n_ == 0 && y->numel > 0) return args.Error("the reduced axis has size 0");
    last_ = args.attrs.Int("select_last_index", 0) != 0;
    return Status::Ok();
  }
  Status Run(const KernelArgs& args, CpuContext&) override {
    const Tensor& x = *args.in(0);
    int64_t* py = args.out(0)->As<int64_t>();
    DispatchNumeric(x.dtype, [&](auto tag) {
      using T = decltype(tag);
      using C = typename ComputeOf<T>::type;
      for (int64_t o = 0; o < outer_; ++o)
        for (int64_t i = 0; i < inner_; ++i) {
          const T* p = x.As<T>() + o * n_ * inner_ + i;
          C best = Load(p[0]);
          int64_t best_k = 0;
          for (int64_t k = 1; k < n_; ++k) {
            C v = Load(p[k * inner_]);
            bool v_nan = v != v, best_nan = best != best;
            bool better = (v_nan && !best_nan) || (!best_nan && (kMax ? v > best : v < best));
            bool equal = (v_nan && best_nan) || v == best;
            if (better || (last_ && equal)) {
              best = v;
              best_k = k;
            }
          }
          py[o * inner_ + i] = best_k;
        }
    });
    return Status::Ok();
  }

 private:
  int64_t outer_ = 0, n_ = 0, inner_ = 0;
  bool last_ = false;
};

}  // namespace

void RegisterReduceKernels(KernelRegistry& r) {
  r.Register("ReduceSum", Make<ReduceKernel<ReduceOp::kSum>>);
  r.Register("ReduceMean", Make<ReduceKernel<ReduceOp::kMean>>);
  r.Register("ReduceMax", Make<ReduceKernel<ReduceOp::kMax>>);
  r.Register("ReduceMin", Make<ReduceKernel<ReduceOp::kMin>>);
  r.Register("ReduceProd", Make<ReduceKernel<ReduceOp::kProd>>);
  r.Register("ReduceL1", Make<ReduceKernel<ReduceOp::kL1>>);
  r.Register("ReduceL2", Make<ReduceKernel<ReduceOp::kL2>>);
  r.Register("ReduceSumSquare", Make<ReduceKernel<ReduceOp::kSumSquare>>);
  r.Register("ReduceLogSum", Make<ReduceKernel<ReduceOp::kLogSum>>);
  r.Register("ReduceLogSumExp", Make<ReduceKernel<ReduceOp::kLogSumExp>>);
  r.Register("ArgMax", Make<ArgReduceKernel<true>>);
  r.Register("ArgMin", Make<ArgReduceKernel<false>>);
  AddSoftmaxKernels(r);
  AddScanAndTopKKernels(r);
  AddEinsumKernels(r);
}

}  // namespace precis::rt
