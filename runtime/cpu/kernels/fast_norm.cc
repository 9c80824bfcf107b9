// Fast LayerNormalization for f32, f16 and bf16 with Scale and B covering the normalized dims
// (no broadcasting inside them: other steps take the reference kernel). Rows run in parallel.
// The statistics are the reference kernel's: two passes (mean, then mean of squared deviations)
// accumulated in double, here in eight interleaved lanes so that they vectorize; the normalized
// value is the reference's float expression. Only the summation order differs, which moves the
// double mean and variance by a few double ulps: outputs match the reference to within a float
// ulp or two (fast_kernels_test.cc). Each row's statistics are done before its outputs are
// written, so Y may share X's storage.
#include <omp.h>

#include <cmath>

#include "runtime/cpu/kernels/fast_util.h"
#include "runtime/cpu/kernels/register.h"

namespace precis::rt::fast {
namespace {

class FastLayerNormKernel : public Kernel {
 public:
  Status Init(const KernelArgs& args, const CpuContext& ctx) override {
    const Tensor *x = args.in(0), *scale = args.in(1), *b = args.in(2), *y = args.out(0);
    if (!x || !scale || !y || !DispatchFast(x->dtype, [](auto) {})) return Unimplemented("fast LayerNormalization: f32, f16 and bf16 only");
    if (y->dtype != x->dtype || y->dims != x->dims || scale->dtype != x->dtype || (b && b->dtype != x->dtype))
      return Unimplemented("fast LayerNormalization: operand types differ");
    int64_t rank = x->rank(), axis = args.attrs.Int("axis", -1);
    if (axis < -rank || axis >= rank || args.attrs.Int("stash_type", 1) != 1) return Unimplemented("fast LayerNormalization: bad axis or stash_type");
    if (axis < 0) axis += rank;
    cols_ = 1;
    for (int64_t d = axis; d < rank; ++d) cols_ *= x->dims[size_t(d)];
    rows_ = cols_ ? x->numel / cols_ : 0;
    // Scale and B must hold the normalized dims exactly (leading 1s allowed).
    for (const Tensor* t : {scale, b}) {
      if (!t) continue;
      if (t->numel != cols_ || t->rank() > rank - axis) return Unimplemented("fast LayerNormalization: Scale/B broadcast");
      for (size_t k = 0; k < t->dims.size(); ++k)
        if (t->dims[k] != x->dims[size_t(rank) - t->dims.size() + k]) return Unimplemented("fast LayerNormalization: Scale/B broadcast");
    }
    for (size_t i = 1; i < 3; ++i)
      if (const Tensor* t = args.out(i); t && (t->dtype != DataType::kF32 || t->numel != rows_))
        return Unimplemented("fast LayerNormalization: Mean/InvStdDev shape");
    eps_ = args.attrs.Float("epsilon", 1e-5f);
    threads_ = std::max(ctx.threads, 1);
    // 16-bit types: a float copy of the row and float Scale and B.
    row_bytes_ = x->dtype == DataType::kF32 ? 0 : (size_t(cols_) * sizeof(float) + 63) / 64 * 64;
    return Status::Ok();
  }

  size_t ScratchBytes() const override { return row_bytes_ * size_t(threads_); }

  Status Run(const KernelArgs& args, CpuContext& ctx) override {
    DispatchFast(args.in(0)->dtype, [&](auto tag) {
      using T = decltype(tag);
      const T* px = args.in(0)->As<T>();
      const T* ps = args.in(1)->As<T>();
      const T* pb = args.in(2) ? args.in(2)->As<T>() : nullptr;
      T* py = args.out(0)->As<T>();
      float* mean_out = args.out(1) ? args.out(1)->As<float>() : nullptr;
      float* inv_out = args.out(2) ? args.out(2)->As<float>() : nullptr;
      ParallelFor(rows_, cols_ * 6, std::min(ctx.threads, threads_), [&](int64_t begin, int64_t end) {
        float* buf = reinterpret_cast<float*>(ctx.scratch + row_bytes_ * size_t(omp_get_thread_num()));
        for (int64_t r = begin; r < end; ++r) {
          const T* xr = px + r * cols_;
          const float* xf = nullptr;
          if constexpr (std::is_same_v<T, float>) {
            xf = xr;
          } else {
            for (int64_t j = 0; j < cols_; ++j) buf[j] = Load(xr[j]);
            xf = buf;
          }
          double mean = cols_ ? SumDouble(xf, cols_) / double(cols_) : 0;
          double var = cols_ ? SquaredDeviations(xf, cols_, mean) / double(cols_) : 0;
          double inv_std = 1.0 / std::sqrt(var + double(eps_));
          Normalize(xf, ps, pb, py + r * cols_, float(mean), float(inv_std));
          if (mean_out) mean_out[r] = float(mean);
          if (inv_out) inv_out[r] = float(inv_std);
        }
      });
    });
    return Status::Ok();
  }

 private:
  template <typename T>
  void Normalize(const float* x, const T* s, const T* b, T* y, float mean, float inv) const {
    if (b) {
      for (int64_t j = 0; j < cols_; ++j) y[j] = Store<T>((x[j] - mean) * inv * Load(s[j]) + Load(b[j]));
    } else {
      for (int64_t j = 0; j < cols_; ++j) y[j] = Store<T>((x[j] - mean) * inv * Load(s[j]) + 0.0f);
    }
  }

  int64_t rows_ = 0, cols_ = 0;
  float eps_ = 1e-5f;
  int threads_ = 1;
  size_t row_bytes_ = 0;
};

}  // namespace

void AddFastNormKernels(KernelRegistry& r) { r.RegisterFast("LayerNormalization", Make<FastLayerNormKernel>); }

}  // namespace precis::rt::fast
