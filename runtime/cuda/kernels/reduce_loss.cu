// CUDA NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss, mirroring
// runtime/cpu/kernels/loss.cc. The input is viewed as [N, C, D], the target as [N, D]; position
// (n, d) with class t contributes -w[t] * x[n, t, d] (x = LogSoftmax over C for
// SoftmaxCrossEntropyLoss), weight w[t] (1 without weights), or 0 and weight 0 when t equals
// ignore_index. A target outside [0, C) raises kIndexOutOfRange (nothing is read out of bounds).
//
// NLL: a thread per position. SoftmaxCrossEntropy: a slice of reduce_common.cuh per position
// (the max and the sum of exp over the classes as in reduce_softmax.cu, the log-probabilities
// written when asked for). With reduction "sum" or "mean" every position stores its loss and
// weight in the scratch as doubles, and one block then adds them up in a fixed order (mean:
// sum / sum of weights, 0/0 = NaN as on the CPU).
#include "runtime/cuda/kernels/reduce_common.cuh"
#include "runtime/cuda/kernels/register.h"

namespace precis::rt::cuda {
namespace reduce {
namespace {

enum class Reduction { kNone, kSum, kMean };

struct LossPlan {
  int64_t n = 0, c = 0, d = 0;
  bool has_ignore = false;
  int64_t ignore = 0;
  bool target64 = true;
  Reduction reduction = Reduction::kMean;
  Slices s;  // SoftmaxCrossEntropyLoss: one slice per position, over the classes
  Layout l;
};

// One position's loss: v is x[n, t, d] (log-probability for SoftmaxCrossEntropyLoss) read
// through `value` only when t is a valid class. Stores the result or its scratch entries.
template <typename T, typename ValueFn>
__device__ void PositionLoss(const LossPlan& p, int64_t i, const void* target, const T* w, T* y, double* partial, int* error,
                             ValueFn value) {
  int64_t t = LoadIndex(target, p.target64, i);
  double loss = 0, weight = 0;
  if (!(p.has_ignore && t == p.ignore)) {
    if (t < 0 || t >= p.c) {
      RaiseError(error, kIndexOutOfRange);
    } else {
      weight = w ? double(Load(w[t])) : 1.0;
      loss = -weight * value(t);
    }
  }
  if (p.reduction == Reduction::kNone) {
    y[i] = Store<T>(loss);
  } else {
    partial[i] = loss;
    partial[p.n * p.d + i] = weight;
  }
}

template <typename T>
__global__ void NllKernel(LossPlan p, const T* x, const void* target, const T* w, T* y, double* partial, int* error) {
  int64_t positions = p.n * p.d;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < positions; i += int64_t(gridDim.x) * blockDim.x) {
    int64_t base = (i / p.d) * p.c * p.d + i % p.d;
    PositionLoss(p, i, target, w, y, partial, error, [&](int64_t t) { return double(Load(x[base + t * p.d])); });
  }
}

template <typename T>
__global__ void __launch_bounds__(kMaxSliceThreads) SoftmaxLossKernel(LossPlan p, const T* x, const void* target, const T* w, T* y, T* lp, double* partial, int* error) {
  using C = Compute<T>;
  PRECIS_REDUCE_SHARED(smem);
  const Slices& s = p.s;
  const Layout& l = p.l;
  int xi = l.x(), yi = l.y();
  int64_t tiles = (s.count + l.X - 1) / l.X;
  for (int64_t tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
    int64_t slice = tile * l.X + xi;  // the position n * D + d
    bool valid = slice < s.count;
    int64_t base = valid ? s.kept(slice) : 0;
    // The max only shifts the exponentials: NaN propagating here or ignored as on the CPU, a
    // NaN makes the sum, and so every log-probability of the position, NaN either way.
    C m = -std::numeric_limits<C>::infinity();
    if (valid) Visit(s, l, base, yi, [&](int64_t off, int64_t, int64_t) { m = NanMaxOp{}(m, Load(x[off])); });
    m = SliceReduce(m, l, NanMaxOp{}, smem);
    if (isinf(m)) m = 0;
    double sum = 0;
    if (valid) Visit(s, l, base, yi, [&](int64_t off, int64_t, int64_t) { sum += double(ExpShifted(Load(x[off]), m)); });
    sum = SliceReduce(sum, l, SumOp{}, smem);
    if (!valid) continue;
    double log_sum = log(sum);
    if (lp) Visit(s, l, base, yi, [&](int64_t off, int64_t, int64_t) { lp[off] = Store<T>((double(Load(x[off])) - double(m)) - log_sum); });
    if (yi == 0)
      PositionLoss(p, slice, target, w, y, partial, error,
                   [&](int64_t t) { return (double(Load(x[base + t * p.d])) - double(m)) - log_sum; });
  }
}

// Adds the positions' losses and weights in one block, in a fixed order.
template <typename T>
__global__ void __launch_bounds__(kMaxSliceThreads) FinishLossKernel(const double* partial, int64_t positions, bool mean, T* y) {
  __shared__ double sh[32];
  double sum = 0, wsum = 0;
  for (int64_t i = threadIdx.x; i < positions; i += blockDim.x) {
    sum += partial[i];
    wsum += partial[positions + i];
  }
  sum = BlockSum(sum, sh);
  wsum = BlockSum(wsum, sh);
  if (threadIdx.x == 0) y[0] = Store<T>(mean ? sum / wsum : sum);
}

struct LossTensors {
  const void *x, *target, *w;
  void *y, *lp;
  double* partial;
  int* error;
};
using LossLaunch = cudaError_t (*)(const LossPlan& p, bool softmax, const LossTensors& t, cudaStream_t stream);

template <typename T>
cudaError_t LaunchLoss(const LossPlan& p, bool softmax, const LossTensors& t, cudaStream_t stream) {
  const T* x = static_cast<const T*>(t.x);
  const T* w = static_cast<const T*>(t.w);
  T* y = static_cast<T*>(t.y);
  int64_t positions = p.n * p.d;
  if (positions > 0) {
    if (softmax) {
      size_t smem = SharedBytes(p.l, sizeof(double));
      SoftmaxLossKernel<T><<<GridFor(p.s, p.l), unsigned(p.l.threads()), smem, stream>>>(p, x, t.target, w, y, static_cast<T*>(t.lp),
                                                                                           t.partial, t.error);
    } else {
      NllKernel<T><<<Blocks(positions), kThreads, 0, stream>>>(p, x, t.target, w, y, t.partial, t.error);
    }
    cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess) return e;
  }
  if (p.reduction == Reduction::kNone) return cudaSuccess;
  FinishLossKernel<T><<<1, 1024, 0, stream>>>(t.partial, positions, p.reduction == Reduction::kMean, y);
  return cudaGetLastError();
}

template <bool kSoftmax>
class LossKernel : public Kernel {
 public:
  Status Init(const KernelArgs& args, CudaContext& ctx) override {
    Tensor *x = args.in(0), *t = args.in(1), *w = args.in(2), *y = args.out(0);
    if (!x || !t || !y) return args.Error("needs an input, a target and an output");
    if (!DispatchFloat(x->dtype, [&](auto tag) { launch_ = &LaunchLoss<decltype(tag)>; }))
      return DtypeError(args, std::string("unsupported dtype ") + DataTypeName(x->dtype));
    if (t->dtype != DataType::kI32 && t->dtype != DataType::kI64)
      return args.Error(std::string("unsupported target dtype ") + DataTypeName(t->dtype));
    if (x->rank() < 2) return args.Error("input must have rank >= 2");
    if (t->rank() + 1 != x->rank()) return args.Error("target rank must be the input rank minus 1");
    p_.n = x->dims[0];
    p_.c = x->dims[1];
    p_.d = 1;
    for (int64_t i = 2; i < x->rank(); ++i) p_.d *= x->dims[size_t(i)];
    if (t->dims[0] != p_.n) return args.Error("target dim 0 differs from the input's");
    for (int64_t i = 2; i < x->rank(); ++i)
      if (t->dims[size_t(i - 1)] != x->dims[size_t(i)]) return args.Error("target dims differ from the input's");
    if (w) {
      if (w->dtype != x->dtype) return DtypeError(args, "weight dtype differs from the input's");
      if (w->rank() != 1 || w->dims[0] != p_.c) return args.Error("weight must be [C]");
    }
    std::string r = args.attrs.String("reduction", "mean");
    if (r == "none") p_.reduction = Reduction::kNone;
    else if (r == "sum") p_.reduction = Reduction::kSum;
    else if (r == "mean") p_.reduction = Reduction::kMean;
    else return args.Error("unknown reduction '" + r + "'");
    if (y->dtype != x->dtype) return DtypeError(args, "output dtype differs from the input's");
    if (p_.reduction == Reduction::kNone ? y->numel != p_.n * p_.d : y->numel != 1) return args.Error("output has an unexpected size");
    p_.has_ignore = args.attrs.Has("ignore_index");
    p_.ignore = args.attrs.Int("ignore_index", 0);
    p_.target64 = t->dtype == DataType::kI64;
    if (Tensor* lp = args.out(1)) {
      if (!kSoftmax) return args.Error("has one output");
      if (lp->dims != x->dims) return args.Error("log_prob output type differs from the input's");
      if (lp->dtype != x->dtype) return DtypeError(args, "log_prob output type differs from the input's");
    }
    if (kSoftmax) {
      if (!MakeAxisSlices(p_.n, p_.c, p_.d, &p_.s)) return Unimplemented(args.node + ": shape too complex for the CUDA kernel");
      p_.l = ChooseLayout(p_.s, ctx.prop);
    }
    scratch_ = p_.reduction == Reduction::kNone ? 0 : size_t(2 * p_.n * p_.d) * sizeof(double);
    return Status::Ok();
  }

  size_t ScratchBytes() const override { return scratch_; }

  Status Run(const KernelArgs& args, CudaContext& ctx) override {
    LossTensors t{args.in(0)->data, args.in(1)->data, args.in(2) ? args.in(2)->data : nullptr, args.out(0)->data,
                  args.out(1) ? args.out(1)->data : nullptr, reinterpret_cast<double*>(ctx.scratch), ctx.error};
    PRECIS_CUDA_CHECK(args, launch_(p_, kSoftmax, t, ctx.stream));
    return Status::Ok();
  }

 private:
  LossPlan p_;
  LossLaunch launch_ = nullptr;
  size_t scratch_ = 0;
};

}  // namespace
}  // namespace reduce

void AddLossKernels(KernelRegistry& r) {
  r.Register("NegativeLogLikelihoodLoss", Make<reduce::LossKernel<false>>);
  r.Register("SoftmaxCrossEntropyLoss", Make<reduce::LossKernel<true>>);
}

}  // namespace precis::rt::cuda
