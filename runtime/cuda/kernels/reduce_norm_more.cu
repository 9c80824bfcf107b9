// CUDA LRN, LpNormalization and MeanVarianceNormalization, mirroring
// runtime/cpu/kernels/nn_norm_more.cc: sums accumulate in double, values are computed in float
// (double for f64). LpNormalization and MeanVarianceNormalization walk slices of
// reduce_common.cuh (statistics complete before a slice is written, each element read and
// written by one thread: Y may share X's storage); LRN is a thread per element summing its
// channel window in the CPU's order (its output never shares X's storage).
#include "runtime/cuda/kernels/reduce_common.cuh"
#include "runtime/cuda/kernels/register.h"

namespace precis::rt::cuda {
namespace reduce {
namespace {

template <typename T>
using NormAcc = std::conditional_t<std::is_same_v<T, double>, double, float>;

Status CheckUnary(const KernelArgs& args) {
  const Tensor *x = args.in(0), *y = args.out(0);
  if (!x || !y) return args.Error("needs input X and output Y");
  if (!DispatchFloat(x->dtype, [](auto) {})) return DtypeError(args, std::string("unsupported dtype ") + DataTypeName(x->dtype));
  if (y->dims != x->dims) return args.Error("Y must have X's type and shape");
  if (y->dtype != x->dtype) return DtypeError(args, "Y must have X's type and shape");
  return Status::Ok();
}

// ---- LRN: y = x / (bias + alpha / size * sum of x^2 over the channel window)^beta ---------------

struct LrnPlan {
  int64_t numel = 0, channels = 0, inner = 0, before = 0, after = 0;
  double bias = 0, scale = 0, beta = 0;
};

template <typename T>
cudaError_t LaunchLrn(const LrnPlan& p, const KernelArgs& args, cudaStream_t stream) {
  const T* x = args.in(0)->As<T>();
  T* y = args.out(0)->As<T>();
  return ForEach(p.numel, stream, [=] __device__(int64_t i) {
    int64_t q = i / p.inner, c = q % p.channels, plane = q - c;  // plane = n * C
    int64_t pos = i - q * p.inner;
    int64_t lo = c - p.before > 0 ? c - p.before : 0, hi = c + p.after < p.channels - 1 ? c + p.after : p.channels - 1;
    double sq = 0;
    for (int64_t k = lo; k <= hi; ++k) {
      double v = double(Load(x[(plane + k) * p.inner + pos]));
      sq += v * v;
    }
    y[i] = Store<T>(double(Load(x[i])) / pow(p.bias + p.scale * sq, p.beta));
  });
}

using LrnLaunch = cudaError_t (*)(const LrnPlan& p, const KernelArgs& args, cudaStream_t stream);

class LrnKernel : public Kernel {
 public:
  Status Init(const KernelArgs& args, CudaContext&) override {
    PRECIS_RETURN_IF_ERROR(CheckUnary(args));
    const Tensor& x = *args.in(0);
    if (x.rank() < 2) return args.Error("X must have rank >= 2");
    int64_t size = args.attrs.Int("size", 0);
    if (size <= 0) return args.Error("size must be positive");
    float alpha = args.attrs.Float("alpha", 1e-4f), beta = args.attrs.Float("beta", 0.75f), bias = args.attrs.Float("bias", 1.0f);
    p_.numel = x.numel;
    p_.channels = x.dims[1];
    p_.inner = (x.dims[0] > 0 && p_.channels > 0) ? x.numel / (x.dims[0] * p_.channels) : 0;
    p_.before = (size - 1) / 2;  // floor and ceil of (size - 1) / 2
    p_.after = size / 2;
    p_.bias = double(bias);
    p_.scale = double(alpha) / double(size);
    p_.beta = double(beta);
    DispatchFloat(x.dtype, [&](auto tag) { launch_ = &LaunchLrn<decltype(tag)>; });
    return Status::Ok();
  }

  Status Run(const KernelArgs& args, CudaContext& ctx) override {
    PRECIS_CUDA_CHECK(args, launch_(p_, args, ctx.stream));
    return Status::Ok();
  }

 private:
  LrnPlan p_;
  LrnLaunch launch_ = nullptr;
};

// ---- LpNormalization and MeanVarianceNormalization ---------------------------------------------

enum class SliceNormOp : int { kL1, kL2, kMeanVariance };

struct SliceNormPlan {
  Slices s;
  Layout l;
  SliceNormOp op = SliceNormOp::kL2;
};

template <typename T>
__global__ void __launch_bounds__(kMaxSliceThreads) SliceNormKernel(SliceNormPlan p, const T* x, T* y) {
  using A = NormAcc<T>;
  PRECIS_REDUCE_SHARED(smem);
  const Slices& s = p.s;
  const Layout& l = p.l;
  int xi = l.x(), yi = l.y();
  int64_t tiles = (s.count + l.X - 1) / l.X;
  for (int64_t t = blockIdx.x; t < tiles; t += gridDim.x) {
    int64_t slice = t * l.X + xi;
    bool valid = slice < s.count;
    int64_t base = valid ? s.kept(slice) : 0;
    A shift = 0, factor = 0;
    if (p.op == SliceNormOp::kMeanVariance) {
      // y = (x - mean) / (sqrt(var) + 1e-9), the ONNX function body's epsilon.
      Moments m = SliceMoments(x, s, l, valid, base, yi, smem);
      double n = double(s.size());
      shift = A(m.mean);
      factor = A(1.0 / (sqrt(m.sq / n) + 1e-9));
    } else {
      // y = x / ||x||_p; a zero vector stays zero.
      bool l1 = p.op == SliceNormOp::kL1;
      double norm = 0;
      if (valid)
        Visit(s, l, base, yi, [&](int64_t off, int64_t, int64_t) {
          double v = double(Load(x[off]));
          norm += l1 ? fabs(v) : v * v;
        });
      norm = SliceReduce(norm, l, SumOp{}, smem);
      if (!l1) norm = sqrt(norm);
      factor = norm > 0 ? A(1.0 / norm) : A(0);
    }
    if (!valid) continue;
    Visit(s, l, base, yi, [&](int64_t off, int64_t, int64_t) { y[off] = Store<T>((A(Load(x[off])) - shift) * factor); });
  }
}

template <typename T>
cudaError_t LaunchSliceNorm(const SliceNormPlan& p, const KernelArgs& args, cudaStream_t stream) {
  if (p.s.count <= 0) return cudaSuccess;
  SliceNormKernel<T><<<GridFor(p.s, p.l), unsigned(p.l.threads()), SharedBytes(p.l, sizeof(double)), stream>>>(
      p, args.in(0)->As<T>(), args.out(0)->As<T>());
  return cudaGetLastError();
}

using SliceNormLaunch = cudaError_t (*)(const SliceNormPlan& p, const KernelArgs& args, cudaStream_t stream);

class SliceNormKernelBase : public Kernel {
 public:
  Status Run(const KernelArgs& args, CudaContext& ctx) override {
    PRECIS_CUDA_CHECK(args, launch_(p_, args, ctx.stream));
    return Status::Ok();
  }

 protected:
  Status Finish(const KernelArgs& args, CudaContext& ctx, bool made) {
    if (!made) return Unimplemented(args.node + ": shape too complex for the CUDA kernel");
    p_.l = ChooseLayout(p_.s, ctx.prop);
    DispatchFloat(args.in(0)->dtype, [&](auto tag) { launch_ = &LaunchSliceNorm<decltype(tag)>; });
    return Status::Ok();
  }

  SliceNormPlan p_;
  SliceNormLaunch launch_ = nullptr;
};

// y = x / ||x||_p along `axis` (p = 1 or 2).
class LpNormKernel : public SliceNormKernelBase {
 public:
  Status Init(const KernelArgs& args, CudaContext& ctx) override {
    PRECIS_RETURN_IF_ERROR(CheckUnary(args));
    const Tensor& x = *args.in(0);
    int64_t p = args.attrs.Int("p", 2);
    if (p != 1 && p != 2) return args.Error("p must be 1 or 2");
    p_.op = p == 1 ? SliceNormOp::kL1 : SliceNormOp::kL2;
    int64_t rank = x.rank(), axis = args.attrs.Int("axis", -1);
    if (rank == 0) return Finish(args, ctx, MakeAxisSlices(1, 1, 1, &p_.s));
    if (!NormalizeAxis(axis, rank, &axis)) return args.Error("axis " + std::to_string(args.attrs.Int("axis", -1)) + " is out of range");
    int64_t outer = 1, inner = 1;
    for (int64_t i = 0; i < axis; ++i) outer *= x.dims[size_t(i)];
    for (int64_t i = axis + 1; i < rank; ++i) inner *= x.dims[size_t(i)];
    return Finish(args, ctx, MakeAxisSlices(outer, x.dims[size_t(axis)], inner, &p_.s));
  }
};

// Mean and (population) variance over `axes` (default {0, 2, 3}).
class MeanVarianceNormKernel : public SliceNormKernelBase {
 public:
  Status Init(const KernelArgs& args, CudaContext& ctx) override {
    PRECIS_RETURN_IF_ERROR(CheckUnary(args));
    const Tensor& x = *args.in(0);
    int64_t rank = x.rank();
    std::vector<bool> reduced(size_t(rank), false);
    for (int64_t a : args.attrs.Ints("axes", {0, 2, 3})) {
      int64_t n = 0;
      if (!NormalizeAxis(a, rank, &n)) return args.Error("axis " + std::to_string(a) + " is out of range");
      reduced[size_t(n)] = true;
    }
    p_.op = SliceNormOp::kMeanVariance;
    return Finish(args, ctx, MakeSlices(x.dims, reduced, &p_.s));
  }
};

}  // namespace
}  // namespace reduce

void AddNormMoreKernels(KernelRegistry& r) {
  r.Register("LRN", Make<reduce::LrnKernel>);
  r.Register("LpNormalization", Make<reduce::LpNormKernel>);
  r.Register("MeanVarianceNormalization", Make<reduce::MeanVarianceNormKernel>);
}

}  // namespace precis::rt::cuda
