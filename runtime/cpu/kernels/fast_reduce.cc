// Fast ReduceSum and ReduceMean for f32, f16 and bf16 whose reduced axes form one contiguous
// block of the input's dims (after dropping size-1 dims): the input is [outer, reduced, inner]
// and y[o, i] = sum over r of x[o, r, i]. Training plans are full of these: the gradient of a
// broadcast bias, or of a batched MatMul's weight, sums over the leading axes ([reduced, inner]),
// which the reference kernel walks with a stride per output element. Here the inner elements are
// accumulated side by side (vectorized, one block of them per thread), each in double and in the
// reference's order (r increasing), so such sums give the reference's bits; rows (inner 1) are
// summed in double over 8 interleaved lanes (fast_util.h SumDouble), which may move the double sum
// by a few double ulps, so the stored result is the reference's or one float ulp away
// (fast_kernels_test.cc). Other axis patterns, axes computed at run time and other types take the
// reference kernel.
#include <omp.h>

#include <algorithm>
#include <vector>

#include "runtime/cpu/kernels/fast_util.h"
#include "runtime/cpu/kernels/register.h"

namespace precis::rt::fast {
namespace {

template <bool kMean>
class FastReduceSumKernel : public Kernel {
 public:
  Status Init(const KernelArgs& args, const CpuContext& ctx) override {
    const Tensor *x = args.in(0), *y = args.out(0);
    // One dtype, or 16-bit X summed into an f32 Y (training plans' gradient sums).
    if (!x || !y || !DispatchFast(x->dtype, [](auto) {}) || (x->dtype != y->dtype && y->dtype != DataType::kF32))
      return Unimplemented("fast ReduceSum: f32, f16 and bf16, into the same dtype or f32");
    const int64_t rank = x->rank();
    std::vector<int64_t> axes;
    bool noop = args.attrs.Int("noop_with_empty_axes", 0) != 0;
    if (args.attrs.Has("axes")) {
      axes = args.attrs.Ints("axes");
    } else if (const Tensor* a = args.in(1)) {
      if (!a->is_constant || (a->dtype != DataType::kI64 && a->dtype != DataType::kI32)) return Unimplemented("fast ReduceSum: axes computed at run time");
      axes = ReadInts(*a);
    }
    std::vector<bool> reduced(size_t(rank), axes.empty() && !noop);
    for (int64_t v : axes) {
      if (v < -rank || v >= rank) return Unimplemented("fast ReduceSum: bad axis");  // the reference kernel says why
      if (reduced[size_t(v < 0 ? v + rank : v)]) return Unimplemented("fast ReduceSum: repeated axis");
      reduced[size_t(v < 0 ? v + rank : v)] = true;
    }
    // [outer, reduced, inner]: the reduced dims (size-1 dims aside) must be one block.
    outer_ = red_ = inner_ = 1;
    int state = 0;  // 0: before the reduced block, 1: in it, 2: after it
    for (int64_t d = 0; d < rank; ++d) {
      int64_t n = x->dims[size_t(d)];
      if (n == 1) continue;
      if (reduced[size_t(d)]) {
        if (state == 2) return Unimplemented("fast ReduceSum: the reduced axes are not one block");
        state = 1;
        red_ *= n;
      } else {
        if (state == 1) state = 2;
        (state == 0 ? outer_ : inner_) *= n;
      }
    }
    if (state == 0) inner_ = 1, outer_ = x->numel;  // nothing of size > 1 reduced
    if (y->numel != outer_ * inner_ || x->numel != outer_ * red_ * inner_) return Unimplemented("fast ReduceSum: output size");
    threads_ = std::max(ctx.threads, 1);
    return Status::Ok();
  }

  size_t ScratchBytes() const override { return size_t(threads_) * (kColumns * sizeof(double) + kBlock * sizeof(float)); }

  Status Run(const KernelArgs& args, CpuContext& ctx) override {
    DispatchFast(args.in(0)->dtype, [&](auto tag) {
      using T = decltype(tag);
      if (args.out(0)->dtype == args.in(0)->dtype) RunTyped<T, T>(args, ctx);
      else RunTyped<T, float>(args, ctx);
    });
    return Status::Ok();
  }

 private:
  // X of T, Y of U (T, or f32 for 16-bit X): each sum rounded once, from double, to U.
  template <typename T, typename U>
  void RunTyped(const KernelArgs& args, CpuContext& ctx) {
    const T* px = args.in(0)->As<T>();
      U* py = args.out(0)->As<U>();
      auto scratch = [&] { return ctx.scratch + size_t(omp_get_thread_num()) * (kColumns * sizeof(double) + kBlock * sizeof(float)); };
      if (inner_ == 1) {
        // Row sums: 8 interleaved double lanes along each row.
        ParallelFor(outer_, red_, std::min(ctx.threads, threads_), [&](int64_t begin, int64_t end) {
          for (int64_t o = begin; o < end; ++o) {
            double sum = 0;
            FloatBlocks(px + o * red_, red_, [&](const float* x, int64_t, int64_t m) { sum += SumDouble(x, m); });
            py[o] = Store<U>(kMean ? sum / double(red_) : sum);
          }
        });
        return;
      }
      // Columns: blocks of kColumns inner elements, accumulated side by side over r.
      const int64_t blocks = (inner_ + kColumns - 1) / kColumns;
      ParallelFor(outer_ * blocks, red_ * std::min<int64_t>(inner_, kColumns), std::min(ctx.threads, threads_), [&](int64_t begin, int64_t end) {
        double* acc = reinterpret_cast<double*>(scratch());
        float* buf = reinterpret_cast<float*>(scratch() + kColumns * sizeof(double));
        for (int64_t task = begin; task < end; ++task) {
          const int64_t o = task / blocks, i0 = task % blocks * kColumns, m = std::min(kColumns, inner_ - i0);
          std::fill(acc, acc + m, 0.0);
          const T* base = px + o * red_ * inner_ + i0;
          for (int64_t r = 0; r < red_; ++r) {
            const T* src = base + r * inner_;
            if constexpr (std::is_same_v<T, float>) {
              for (int64_t k = 0; k < m; ++k) acc[k] += double(src[k]);
            } else {
              for (int64_t k0 = 0; k0 < m; k0 += kBlock) {
                int64_t mm = std::min(kBlock, m - k0);
                WidenArray(src + k0, buf, mm);
                for (int64_t k = 0; k < mm; ++k) acc[k0 + k] += double(buf[k]);
              }
            }
          }
          U* dst = py + o * inner_ + i0;
          if (kMean) {
            for (int64_t k = 0; k < m; ++k) dst[k] = Store<U>(acc[k] / double(red_));
          } else {
            for (int64_t k = 0; k < m; ++k) dst[k] = Store<U>(acc[k]);
          }
        }
      });
  }

  static constexpr int64_t kColumns = 512;  // inner elements accumulated side by side per task
  int64_t outer_ = 1, red_ = 1, inner_ = 1;
  int threads_ = 1;
};

}  // namespace

void AddFastReduceKernels(KernelRegistry& r) {
  r.RegisterFast("ReduceSum", Make<FastReduceSumKernel<false>>);
  r.RegisterFast("ReduceMean", Make<FastReduceSumKernel<true>>);
}

}  // namespace precis::rt::fast
