// CUDA Softmax, LogSoftmax and Hardmax, mirroring runtime/cpu/kernels/reduce_softmax.cc (and,
// for the numerics of float rows, fast_softmax.cc). Before opset 13 the input is coerced to 2-D
// at `axis` (default 1); from 13 on only `axis` (default -1) is normalized. Each (outer, inner)
// row is a slice of reduce_common.cuh: a warp or block per row when the axis is innermost,
// a thread (or a few) per row otherwise.
//
// Per row, three passes over global memory (the second and third mostly hit the cache):
//   1. the max m, NaN propagating (Hardmax: the index of the first max, the first NaN winning);
//   2. m = 0 when it is infinite (the infinities then decide alone, as on the CPU), and
//      sum = sum of exp(x - m) in double, exp in float with the subtraction's rounding error
//      compensated (fast_softmax.cc; f64 rows use double throughout, as the reference);
//   3. Softmax: exp(x - m) * (1 / sum) rounded once; LogSoftmax: (x - m) - log(sum) in double.
// A row is read fully by its threads before the slice reduction that ends pass 2, and each
// element is then read and written by the same thread: Y may share X's storage.
#include "runtime/cuda/kernels/reduce_common.cuh"
#include "runtime/cuda/kernels/register.h"

namespace precis::rt::cuda {
namespace reduce {
namespace {

enum class SoftmaxOp : int { kSoftmax, kLogSoftmax, kHardmax };

template <typename C>
struct FirstMax {
  C v;
  int64_t idx;  // -1: nothing seen
};

// reduce_softmax.cc's rule: v replaces the running max when larger, or NaN over a number.
template <typename C>
__device__ __forceinline__ bool Beats(C v, C best) {
  return v > best || (v != v && best == best);
}

struct FirstMaxOp {
  template <typename A>
  __device__ A operator()(const A& a, const A& b) const {
    if (a.idx < 0) return b;
    if (b.idx < 0) return a;
    bool a_first = a.idx < b.idx;
    auto first_v = a_first ? a.v : b.v, second_v = a_first ? b.v : a.v;
    return Beats(second_v, first_v) == a_first ? b : a;
  }
};

template <typename T>
__global__ void __launch_bounds__(kMaxSliceThreads) SoftmaxKernel(const T* x, T* y, Slices s, Layout l, SoftmaxOp op) {
  using C = Compute<T>;  // float, double for f64
  PRECIS_REDUCE_SHARED(smem);
  int xi = l.x(), yi = l.y();
  int64_t tiles = (s.count + l.X - 1) / l.X;
  for (int64_t t = blockIdx.x; t < tiles; t += gridDim.x) {
    int64_t slice = t * l.X + xi;
    bool valid = slice < s.count;
    int64_t base = valid ? s.kept(slice) : 0;
    if (op == SoftmaxOp::kHardmax) {
      FirstMax<C> best{C(0), -1};
      if (valid)
        Visit(s, l, base, yi, [&](int64_t off, int64_t r, int64_t k) {
          C v = Load(x[off]);
          if (best.idx < 0 || Beats(v, best.v)) best = {v, r * s.run + k};  // increasing indices
        });
      best = SliceReduce(best, l, FirstMaxOp{}, smem);
      if (valid)
        Visit(s, l, base, yi, [&](int64_t off, int64_t r, int64_t k) { y[off] = Store<T>(C(r * s.run + k == best.idx ? 1 : 0)); });
      continue;
    }
    C m = -std::numeric_limits<C>::infinity();
    if (valid) Visit(s, l, base, yi, [&](int64_t off, int64_t, int64_t) { m = NanMaxOp{}(m, Load(x[off])); });
    m = SliceReduce(m, l, NanMaxOp{}, smem);
    if (isinf(m)) m = 0;  // all -inf (or some +inf): let the infinities decide alone
    double sum = 0;
    if (valid) Visit(s, l, base, yi, [&](int64_t off, int64_t, int64_t) { sum += double(ExpShifted(Load(x[off]), m)); });
    sum = SliceReduce(sum, l, SumOp{}, smem);
    if (!valid) continue;
    if (op == SoftmaxOp::kSoftmax) {
      double inv = 1.0 / sum;
      Visit(s, l, base, yi, [&](int64_t off, int64_t, int64_t) {
        if constexpr (std::is_same_v<C, double>) y[off] = exp(Load(x[off]) - m) / sum;  // the reference's expression
        else y[off] = Store<T>(float(double(ExpShifted(Load(x[off]), m)) * inv));
      });
    } else {
      double log_sum = log(sum);
      Visit(s, l, base, yi, [&](int64_t off, int64_t, int64_t) { y[off] = Store<T>((double(Load(x[off])) - double(m)) - log_sum); });
    }
  }
}

struct SoftmaxPlan {
  Slices s;
  Layout l;
  SoftmaxOp op;
};
using SoftmaxLaunch = cudaError_t (*)(const SoftmaxPlan& p, const void* x, void* y, cudaStream_t stream);

template <typename T>
cudaError_t LaunchSoftmax(const SoftmaxPlan& p, const void* x, void* y, cudaStream_t stream) {
  if (p.s.count <= 0) return cudaSuccess;
  size_t smem = SharedBytes(p.l, sizeof(FirstMax<Compute<T>>) > sizeof(double) ? sizeof(FirstMax<Compute<T>>) : sizeof(double));
  SoftmaxKernel<T><<<GridFor(p.s, p.l), unsigned(p.l.threads()), smem, stream>>>(static_cast<const T*>(x), static_cast<T*>(y), p.s, p.l, p.op);
  return cudaGetLastError();
}

template <SoftmaxOp kOp>
class SoftmaxKernelT : public Kernel {
 public:
  Status Init(const KernelArgs& args, CudaContext& ctx) override {
    Tensor *x = args.in(0), *y = args.out(0);
    if (!x || !y) return args.Error("needs an input and an output");
    if (x->dims != y->dims) return args.Error("output type differs from the input's");
    if (x->dtype != y->dtype) return DtypeError(args, "output type differs from the input's");
    if (!DispatchFloat(x->dtype, [&](auto tag) { launch_ = &LaunchSoftmax<decltype(tag)>; }))
      return DtypeError(args, std::string("unsupported dtype ") + DataTypeName(x->dtype));
    bool legacy = args.attrs.Int("coerce_2d", 0) != 0;
    int64_t rank = x->rank(), axis = args.attrs.Int("axis", legacy ? 1 : -1);
    if (legacy ? (axis < -rank || axis > rank) : (axis < -rank || axis >= rank))
      return args.Error("axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
    if (axis < 0) axis += rank;
    int64_t outer = 1, n = 1, inner = 1;
    for (int64_t d = 0; d < rank; ++d) {
      int64_t v = x->dims[size_t(d)];
      if (d < axis) outer *= v;
      else if (d == axis || legacy) n *= v;
      else inner *= v;
    }
    plan_.op = kOp;
    if (!MakeAxisSlices(outer, n, inner, &plan_.s)) return Unimplemented(args.node + ": shape too complex for the CUDA kernel");
    plan_.l = ChooseLayout(plan_.s, ctx.prop);
    return Status::Ok();
  }

  Status Run(const KernelArgs& args, CudaContext& ctx) override {
    PRECIS_CUDA_CHECK(args, launch_(plan_, args.in(0)->data, args.out(0)->data, ctx.stream));
    return Status::Ok();
  }

 private:
  SoftmaxPlan plan_;
  SoftmaxLaunch launch_ = nullptr;
};

}  // namespace
}  // namespace reduce

void AddSoftmaxKernels(KernelRegistry& r) {
  using reduce::SoftmaxOp;
  r.Register("Softmax", Make<reduce::SoftmaxKernelT<SoftmaxOp::kSoftmax>>);
  r.Register("LogSoftmax", Make<reduce::SoftmaxKernelT<SoftmaxOp::kLogSoftmax>>);
  r.Register("Hardmax", Make<reduce::SoftmaxKernelT<SoftmaxOp::kHardmax>>);
}

}  // namespace precis::rt::cuda
