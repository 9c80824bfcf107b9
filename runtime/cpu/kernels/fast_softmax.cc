// Fast Softmax and LogSoftmax for f32, f16 and bf16. Over the last axis (inner stride 1: the
// opset-13 form with axis = -1, or the legacy 2-D coercion) rows run in parallel; per row:
// the max (vectorized), e = exp(x - max) with fast_math.h's ExpApprox and the subtraction's
// rounding error compensated, the sum of e in double, then e / sum (Softmax) or
// x - (max + log(sum)) in double (LogSoftmax). Rows whose max is NaN or infinite take the
// reference kernel's double-precision path, so special values behave exactly as there.
// Measured error against the double reference: see fast_kernels_test.cc (<= 1e-6 relative).
// Each row is read fully before any of it is written, so Y may share X's storage. Over a middle
// axis (a loss over [N, C, d...] logits) the same arithmetic runs on columns, 64 side by side.
#include <omp.h>

#include <cmath>
#include <limits>

#include "runtime/cpu/kernels/fast_math.h"
#include "runtime/cpu/kernels/fast_util.h"
#include "runtime/cpu/kernels/register.h"

namespace precis::rt::fast {
namespace {

template <bool kLog>
class FastSoftmaxKernel : public Kernel {
 public:
  Status Init(const KernelArgs& args, const CpuContext& ctx) override {
    Tensor *x = args.in(0), *y = args.out(0);
    if (!x || !y || x->dtype != y->dtype || x->dims != y->dims || !DispatchFast(x->dtype, [](auto) {}))
      return Unimplemented("fast softmax: f32, f16 and bf16 only");
    bool legacy = args.attrs.Int("coerce_2d", 0) != 0;
    int64_t rank = x->rank(), axis = args.attrs.Int("axis", legacy ? 1 : -1);
    if (legacy ? (axis < -rank || axis > rank) : (axis < -rank || axis >= rank)) return Unimplemented("fast softmax: bad axis");
    if (axis < 0) axis += rank;
    rows_ = n_ = inner_ = 1;
    for (int64_t d = 0; d < rank; ++d) {
      int64_t v = x->dims[size_t(d)];
      if (d < axis) rows_ *= v;
      else if (d == axis || legacy) n_ *= v;
      else inner_ *= v;  // a softmax over a middle axis: columns
    }
    threads_ = std::max(ctx.threads, 1);
    row_bytes_ = (size_t(n_) * sizeof(float) + 63) / 64 * 64;
    return Status::Ok();
  }

  size_t ScratchBytes() const override { return row_bytes_ * size_t(threads_); }

  Status Run(const KernelArgs& args, CpuContext& ctx) override {
    const Tensor& x = *args.in(0);
    Tensor& y = *args.out(0);
    if (n_ == 0 || inner_ == 0) return Status::Ok();
    DispatchFast(x.dtype, [&](auto tag) {
      using T = decltype(tag);
      const T* px = x.As<T>();
      T* py = y.As<T>();
      if (inner_ > 1) {
        const int64_t blocks = (inner_ + kColumns - 1) / kColumns;
        ParallelFor(rows_ * blocks, n_ * std::min(inner_, kColumns) * 16, std::min(ctx.threads, threads_), [&](int64_t begin, int64_t end) {
          for (int64_t task = begin; task < end; ++task) {
            int64_t o = task / blocks, i0 = task % blocks * kColumns;
            Columns(px + o * n_ * inner_ + i0, py + o * n_ * inner_ + i0, std::min(kColumns, inner_ - i0));
          }
        });
        return;
      }
      ParallelFor(rows_, n_ * 16, std::min(ctx.threads, threads_), [&](int64_t begin, int64_t end) {
        float* buf = reinterpret_cast<float*>(ctx.scratch + row_bytes_ * size_t(omp_get_thread_num()));
        for (int64_t r = begin; r < end; ++r) Row(px + r * n_, py + r * n_, buf);
      });
    });
    return Status::Ok();
  }

 private:
  template <typename T>
  void Row(const T* x, T* y, float* buf) const {
    const float* xf = nullptr;
    if constexpr (std::is_same_v<T, float>) {
      xf = x;
    } else {
      for (int64_t k = 0; k < n_; ++k) buf[k] = Load(x[k]);
      xf = buf;
    }
    bool any_nan = false;
    float m = RowMax(xf, n_, &any_nan);
    if (any_nan || std::isinf(m)) return ReferenceRow(x, y);
    // Softmax keeps e in Y when Y is float (x[k] is read before y[k] is written); LogSoftmax
    // needs X afterwards, so e goes to the scratch row (which held X only for 16-bit types,
    // and LogSoftmax then reloads X from its storage).
    float* e = !kLog && std::is_same_v<T, float> ? reinterpret_cast<float*>(y) : buf;
    double sum = ExpShiftSum(xf, m, e, n_);
    if constexpr (kLog) {
      double c = double(m) + std::log(sum);
      for (int64_t k = 0; k < n_; ++k) y[k] = Store<T>(float(double(Load(x[k])) - c));
    } else {
      double inv = 1.0 / sum;
      if constexpr (std::is_same_v<T, float>) {
        ScaleByDouble(e, inv, y, n_);  // vectorized (the AVX2 clone): this loop was a third of the time
      } else {
        for (int64_t k = 0; k < n_; ++k) y[k] = Store<T>(float(double(e[k]) * inv));
      }
    }
  }

  // The reference kernel's row (reduce_softmax.cc) for rows (and columns: elements `stride`
  // apart) with NaN or infinities.
  template <typename T>
  void ReferenceRow(const T* x, T* y, int64_t stride = 1) const {
    double m = -std::numeric_limits<double>::infinity();
    for (int64_t k = 0; k < n_; ++k) {
      double v = double(Load(x[k * stride]));
      if (v > m || (std::isnan(v) && !std::isnan(m))) m = v;
    }
    if (std::isinf(m)) m = 0;
    double sum = 0;
    for (int64_t k = 0; k < n_; ++k) sum += std::exp(double(Load(x[k * stride])) - m);
    double log_sum = std::log(sum);
    for (int64_t k = 0; k < n_; ++k) {
      double v = double(Load(x[k * stride])) - m;
      y[k * stride] = kLog ? Store<T>(v - log_sum) : Store<T>(std::exp(v) / sum);
    }
  }

  // A softmax over a middle axis: `m` columns side by side (stride inner_ along the axis), with
  // the row path's arithmetic per column: the max, exp of the exact difference, the sum in double,
  // e * (1 / sum) (exp evaluated again instead of stored) or x - (max + log(sum)). Columns whose
  // max is NaN or infinite take the reference kernel's double-precision formula.
  template <typename T>
  void Columns(const T* x, T* y, int64_t m) const {
    // Branch-free loops over the columns (they vectorize): special columns run along with a
    // max of 0, keep their input bits in the output and are redone at the end.
    float mx[kColumns];
    bool special[kColumns];
    double sum[kColumns];
    std::fill(mx, mx + m, -std::numeric_limits<float>::infinity());
    std::fill(special, special + m, false);
    std::fill(sum, sum + m, 0.0);
    for (int64_t c = 0; c < n_; ++c) {
      const T* row = x + c * inner_;
      for (int64_t k = 0; k < m; ++k) {
        float v = Load(row[k]);
        special[k] = special[k] | (v != v);
        mx[k] = v > mx[k] ? v : mx[k];
      }
    }
    for (int64_t k = 0; k < m; ++k) {
      special[k] = special[k] || std::isinf(mx[k]);
      if (special[k]) mx[k] = 0;
    }
    for (int64_t c = 0; c < n_; ++c) {
      const T* row = x + c * inner_;
      for (int64_t k = 0; k < m; ++k) sum[k] += double(ExpOfDifference(Load(row[k]), mx[k]));
    }
    double factor[kColumns];  // 1 / sum, or log(sum) + max
    for (int64_t k = 0; k < m; ++k) factor[k] = kLog ? double(mx[k]) + std::log(sum[k]) : 1.0 / sum[k];
    for (int64_t c = 0; c < n_; ++c) {
      const T* row = x + c * inner_;
      T* out = y + c * inner_;
      for (int64_t k = 0; k < m; ++k) {
        T in = row[k];
        float v = Load(in);
        T result;
        if constexpr (kLog) result = Store<T>(float(double(v) - factor[k]));
        else result = Store<T>(float(double(ExpOfDifference(v, mx[k])) * factor[k]));
        out[k] = special[k] ? in : result;
      }
    }
    for (int64_t k = 0; k < m; ++k)
      if (special[k]) ReferenceRow(x + k, y + k, inner_);
  }

  static constexpr int64_t kColumns = 64;  // columns side by side per task
  int64_t rows_ = 0, n_ = 0, inner_ = 1;
  int threads_ = 1;
  size_t row_bytes_ = 0;
};

}  // namespace

void AddFastSoftmaxKernels(KernelRegistry& r) {
  r.RegisterFast("Softmax", Make<FastSoftmaxKernel<false>>);
  r.RegisterFast("LogSoftmax", Make<FastSoftmaxKernel<true>>);
}

}  // namespace precis::rt::fast
