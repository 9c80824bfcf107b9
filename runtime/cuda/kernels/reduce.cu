// CUDA Reduce* family and ArgMax/ArgMin, mirroring runtime/cpu/kernels/reduce.cc, and the
// registration of the whole reduce family (Softmax, norms, losses, CumSum and TopK live in the
// other reduce_*.cu files).
//
// One kernel walks any reduction through the slice view of reduce_common.cuh: a warp or block
// per output when the innermost axis is reduced, a thread (or a few) per output otherwise. It is
// instantiated per reducer type (one per accumulator, the op a runtime field) and storage policy
// (one per float dtype, one per integer signedness, reduce_common.cuh):
//   DoubleReducer   float sums, means, norms, products and log-sums; integer mean, L2 and
//                   log-sum. Accumulates in double, as the CPU reference does (the GPU result
//                   is compared with it at ~1e-5 relative; a float accumulator over long rows
//                   would not stay there, and the loop is memory-bound either way).
//   WrapReducer     integer sum, product, L1 and sum of squares, wrapping in 64 bits.
//   ExtremeReducer  max and min in the compute type (NaN propagates), bool included.
//   LseReducer      log-sum-exp in double: an online (max, sum) pair per thread, so that it
//                   needs one pass; non-finite values are kept apart so that infinities and NaN
//                   give the CPU's results (all -inf: -inf; +inf: +inf; NaN: NaN).
//   ArgReducer      ArgMax/ArgMin: the CPU's sequential rule per thread (NaN is the extreme,
//                   ties to the first or, with select_last_index, the last index), combined
//                   across threads by index, which gives the same answer.
// Results are the same from run to run. Float sums, products and log-sum-exps associate
// differently from the CPU's loop; the double accumulator hides that after rounding to the
// output type (up to rare one-ulp differences).
#include "runtime/cuda/kernels/reduce_common.cuh"
#include "runtime/cuda/kernels/register.h"

namespace precis::rt::cuda {

void AddSoftmaxKernels(KernelRegistry& r);  // reduce_softmax.cu
void AddNormKernels(KernelRegistry& r);     // reduce_norm.cu
void AddLossKernels(KernelRegistry& r);     // reduce_loss.cu
void AddScanKernels(KernelRegistry& r);     // reduce_scan.cu (CumSum, TopK)

namespace reduce {
namespace {

enum class ReduceOp : int { kSum, kMean, kMax, kMin, kProd, kL1, kL2, kSumSquare, kLogSum, kLogSumExp, kArgMax, kArgMin };

// Everything a reducer needs, set at Init.
struct ReducePlan {
  ReduceOp op = ReduceOp::kSum;
  DataType dtype = DataType::kF32;  // the data's storage dtype
  double count = 0;                 // elements per output (ReduceMean's divisor)
  bool is_bool = false;             // ReduceMax/Min of bool
  bool last = false;                // select_last_index
  Slices s;
  Layout l;
};

// Reducers: Acc, Identity(), Add(acc, value, index), Combine(a, b) (commutative) and
// Write(y, i, acc), reading and writing the data through a storage policy S (reduce_common.cuh).
template <typename S>
struct DoubleReducer {
  using Acc = double;
  S src;
  ReduceOp op;
  double count;
  explicit DoubleReducer(const ReducePlan& p) : src(S::Make(p.dtype)), op(p.op), count(p.count) {}
  __device__ Acc Identity() const { return op == ReduceOp::kProd ? 1.0 : 0.0; }
  __device__ void Add(Acc& a, typename S::C c, int64_t) const {
    double v = double(c);
    switch (op) {
      case ReduceOp::kProd: a *= v; break;
      case ReduceOp::kL1: a += fabs(v); break;
      case ReduceOp::kL2:
      case ReduceOp::kSumSquare: a += v * v; break;
      default: a += v; break;
    }
  }
  __device__ Acc Combine(Acc a, Acc b) const { return op == ReduceOp::kProd ? a * b : a + b; }
  __device__ void Write(void* y, int64_t i, Acc a) const {
    // An integer mean of nothing is 0 on the CPU; 0/0 = NaN saturates to 0 here.
    if (op == ReduceOp::kMean) a /= count;
    else if (op == ReduceOp::kL2) a = sqrt(a);
    else if (op == ReduceOp::kLogSum) a = log(a);
    src.PutDouble(y, i, a);
  }
};

template <typename W>
struct WrapReducer {
  using Acc = uint64_t;
  IntStorage<W> src;
  ReduceOp op;
  explicit WrapReducer(const ReducePlan& p) : src(IntStorage<W>::Make(p.dtype)), op(p.op) {}
  __device__ Acc Identity() const { return op == ReduceOp::kProd ? 1 : 0; }
  __device__ void Add(Acc& a, W c, int64_t) const {
    uint64_t v = uint64_t(c);
    switch (op) {
      case ReduceOp::kProd: a *= v; break;
      case ReduceOp::kL1:
        if constexpr (std::is_signed_v<W>) a += c < 0 ? uint64_t(0) - v : v;
        else a += v;
        break;
      case ReduceOp::kSumSquare: a += v * v; break;
      default: a += v; break;
    }
  }
  __device__ Acc Combine(Acc a, Acc b) const { return op == ReduceOp::kProd ? a * b : a + b; }
  __device__ void Write(void* y, int64_t i, Acc a) const { src.Put(y, i, W(a)); }  // truncates, as the CPU's T(acc)
};

template <typename S>
struct ExtremeReducer {
  using C = typename S::C;
  using Acc = C;
  S src;
  bool max, is_bool;
  explicit ExtremeReducer(const ReducePlan& p) : src(S::Make(p.dtype)), max(p.op == ReduceOp::kMax), is_bool(p.is_bool) {}
  // Floats: -inf / +inf; integers: the storage dtype's lowest / highest.
  __device__ Acc Identity() const { return max ? src.lowest : src.highest; }
  __device__ void Add(Acc& a, Acc v, int64_t) const {
    if (max ? v > a : v < a) a = v;
    if constexpr (S::kFloat)
      if (v != v) a = v;
  }
  __device__ Acc Combine(Acc a, Acc b) const {
    if constexpr (S::kFloat) {
      if (a != a) return a;
      if (b != b) return b;
    }
    return (max ? b > a : b < a) ? b : a;
  }
  __device__ void Write(void* y, int64_t i, Acc a) const {
    // The min of no bools is true (the identity 255 here), the max false.
    src.Put(y, i, is_bool ? C(a != 0 ? 1 : 0) : a);
  }
};

struct LseAcc {
  double m;        // the largest finite value seen (-inf: none yet)
  double s;        // sum of exp(v - m) over the finite values
  double special;  // sum of the +inf and NaN values (their exp, whatever the shift)
};

template <typename S>
struct LseReducer {
  using Acc = LseAcc;
  S src;
  explicit LseReducer(const ReducePlan& p) : src(S::Make(p.dtype)) {}
  __device__ Acc Identity() const { return {-INFINITY, 0.0, 0.0}; }
  __device__ void Add(Acc& a, typename S::C c, int64_t) const {
    double v = double(c);
    if (isfinite(v)) {
      if (v > a.m) {
        a.s = a.s * exp(a.m - v) + 1.0;
        a.m = v;
      } else {
        a.s += exp(v - a.m);
      }
    } else if (!(v < 0)) {
      a.special += v;  // +inf or NaN; -inf adds exp(-inf) = 0
    }
  }
  __device__ Acc Combine(Acc a, Acc b) const {
    double m = a.m > b.m ? a.m : b.m;
    double s = m == -INFINITY ? 0.0 : a.s * exp(a.m - m) + b.s * exp(b.m - m);
    return {m, s, a.special + b.special};
  }
  __device__ void Write(void* y, int64_t i, Acc a) const {
    // No finite value: the CPU shifts by 0 and the infinities decide alone.
    double m = a.m == -INFINITY ? 0.0 : a.m;
    src.PutDouble(y, i, log(a.s + a.special) + m);
  }
};

template <typename C>
struct ArgAcc {
  C v;
  int64_t idx;  // -1: nothing seen
};

template <typename S>
struct ArgReducer {
  using C = typename S::C;
  using Acc = ArgAcc<C>;
  S src;
  bool max, last;
  explicit ArgReducer(const ReducePlan& p) : src(S::Make(p.dtype)), max(p.op == ReduceOp::kArgMax), last(p.last) {}
  __device__ Acc Identity() const { return {C(0), -1}; }
  // reduce.cc's rule for a value v coming after `best` in the scan.
  __device__ bool Takes(C v, C best) const {
    bool v_nan = v != v, best_nan = best != best;
    bool better = (v_nan && !best_nan) || (!best_nan && (max ? v > best : v < best));
    bool equal = (v_nan && best_nan) || v == best;
    return better || (last && equal);
  }
  __device__ void Add(Acc& a, C v, int64_t j) const {
    if (a.idx < 0 || Takes(v, a.v)) a = {v, j};  // each thread scans its indices in increasing order
  }
  __device__ Acc Combine(Acc a, Acc b) const {
    if (a.idx < 0) return b;
    if (b.idx < 0) return a;
    // Order the two by index (selecting members, not objects, keeps them in registers).
    bool a_first = a.idx < b.idx;
    C first_v = a_first ? a.v : b.v, second_v = a_first ? b.v : a.v;
    return Takes(second_v, first_v) == a_first ? b : a;
  }
  __device__ void Write(void* y, int64_t i, Acc a) const { static_cast<int64_t*>(y)[i] = a.idx < 0 ? 0 : a.idx; }
};

template <typename R>
__global__ void __launch_bounds__(kMaxSliceThreads) ReduceKernel(R r, const void* x, void* y, Slices s, Layout l) {
  PRECIS_REDUCE_SHARED(smem);
  int xi = l.x(), yi = l.y();
  int64_t tiles = (s.count + l.X - 1) / l.X;
  for (int64_t t = blockIdx.x; t < tiles; t += gridDim.x) {
    int64_t slice = t * l.X + xi;
    typename R::Acc acc = r.Identity();
    if (slice < s.count)
      Visit(s, l, s.kept(slice), yi, [&](int64_t off, int64_t run, int64_t k) { r.Add(acc, r.src.Load(x, off), run * s.run + k); });
    acc = SliceReduce(acc, l, [&](const typename R::Acc& a, const typename R::Acc& b) { return r.Combine(a, b); }, smem);
    if (slice < s.count && yi == 0) r.Write(y, slice, acc);
  }
}

using LaunchFn = cudaError_t (*)(const ReducePlan& p, const void* x, void* y, cudaStream_t stream);

template <typename R>
cudaError_t Launch(const ReducePlan& p, const void* x, void* y, cudaStream_t stream) {
  if (p.s.count <= 0) return cudaSuccess;
  size_t smem = SharedBytes(p.l, sizeof(typename R::Acc));
  ReduceKernel<R><<<GridFor(p.s, p.l), unsigned(p.l.threads()), smem, stream>>>(R(p), x, y, p.s, p.l);
  return cudaGetLastError();
}

// A run-time axes input of length rank must name every axis once (the CPU checks it at Run).
__global__ void CheckAllAxesKernel(const void* axes, bool is64, int64_t rank, int* error) {
  uint64_t seen = 0;
  for (int64_t i = 0; i < rank; ++i) {
    int64_t v = LoadIndex(axes, is64, i);
    if (v < -rank || v >= rank) return RaiseError(error, kBadValue);
    uint64_t bit = uint64_t(1) << (v < 0 ? v + rank : v);
    if (seen & bit) return RaiseError(error, kBadValue);
    seen |= bit;
  }
}

class ReduceKernelBase : public Kernel {
 public:
  explicit ReduceKernelBase(ReduceOp op) { plan_.op = op; }

  Status Init(const KernelArgs& args, CudaContext& ctx) override {
    Tensor *x = args.in(0), *y = args.out(0);
    if (!x || !y) return args.Error("needs an input and an output");
    if (x->dtype != y->dtype) return DtypeError(args, "output dtype differs from the input's");
    ReduceOp op = plan_.op;
    bool extreme = op == ReduceOp::kMax || op == ReduceOp::kMin;
    bool double_path = op == ReduceOp::kMean || op == ReduceOp::kL2 || op == ReduceOp::kLogSum;
    auto pick = [&](auto storage) {
      using S = decltype(storage);
      if (extreme) launch_ = &Launch<ExtremeReducer<S>>;
      else if (op == ReduceOp::kLogSumExp) launch_ = &Launch<LseReducer<S>>;
      else if (S::kFloat || double_path) launch_ = &Launch<DoubleReducer<S>>;
      else if constexpr (!S::kFloat) launch_ = &Launch<WrapReducer<typename S::C>>;
    };
    plan_.dtype = x->dtype;
    plan_.is_bool = x->dtype == DataType::kBool;
    if (!DispatchStorage(x->dtype, extreme, pick)) return DtypeError(args, std::string("unsupported dtype ") + DataTypeName(x->dtype));
    std::vector<bool> reduced;
    PRECIS_RETURN_IF_ERROR(ReducedAxes(args, x->rank(), reduced));
    if (!MakeSlices(x->dims, reduced, &plan_.s)) return Unimplemented(args.node + ": too many axes for the CUDA kernel after merging");
    if (y->numel != plan_.s.count)
      return args.Error("output has " + std::to_string(y->numel) + " elements, expected " + std::to_string(plan_.s.count));
    plan_.count = double(plan_.s.size());
    plan_.l = ChooseLayout(plan_.s, ctx.prop);
    return Status::Ok();
  }

  Status Run(const KernelArgs& args, CudaContext& ctx) override {
    if (check_axes_at_run_) {
      const Tensor& a = *args.in(1);
      CheckAllAxesKernel<<<1, 1, 0, ctx.stream>>>(a.data, a.dtype == DataType::kI64, a.numel, ctx.error);
      PRECIS_CUDA_CHECK(args, cudaGetLastError());
    }
    PRECIS_CUDA_CHECK(args, launch_(plan_, args.in(0)->data, args.out(0)->data, ctx.stream));
    return Status::Ok();
  }

 private:
  // reduce.cc's ReducedAxes: the "axes" attribute before the opset that moved them to input 1
  // (ReduceSum 13, the others 18); from then on input 1 (constant, or of length 0 or rank when
  // computed at run time).
  Status ReducedAxes(const KernelArgs& args, int64_t rank, std::vector<bool>& reduced) {
    std::vector<int64_t> axes;
    bool noop = false;
    if (args.attrs.Has("axes")) {
      axes = args.attrs.Ints("axes");
    } else if (const Tensor* a = args.in(1)) {
      noop = args.attrs.Int("noop_with_empty_axes", 0) != 0;
      if (a->dtype != DataType::kI64 && a->dtype != DataType::kI32) return args.Error("axes must be int64");
      if (a->is_constant) {
        axes = ReadHostInts(*a);
      } else if (a->numel == rank && rank > 0) {
        if (rank > 64) return Unimplemented(args.node + ": run-time axes over more than 64 dimensions");
        check_axes_at_run_ = true;
        reduced.assign(size_t(rank), true);
        return Status::Ok();
      } else if (a->numel != 0) {
        return args.Error("axes computed at run time must be empty or name every axis");
      }
    } else {
      noop = args.attrs.Int("noop_with_empty_axes", 0) != 0;
    }
    reduced.assign(size_t(rank), axes.empty() && !noop);
    for (int64_t a : axes) {
      int64_t n = 0;
      if (!NormalizeAxis(a, rank, &n)) return args.Error("axis " + std::to_string(a) + " is out of range");
      if (reduced[size_t(n)]) return args.Error("axis " + std::to_string(a) + " is given twice");
      reduced[size_t(n)] = true;
    }
    return Status::Ok();
  }

  ReducePlan plan_;
  LaunchFn launch_ = nullptr;
  bool check_axes_at_run_ = false;
};

template <ReduceOp kOp>
class ReduceOpKernel : public ReduceKernelBase {
 public:
  ReduceOpKernel() : ReduceKernelBase(kOp) {}
};

// ArgMax / ArgMin along one axis (reduce.cc's ArgReduceKernel).
template <bool kMax>
class ArgReduceKernel : public Kernel {
 public:
  Status Init(const KernelArgs& args, CudaContext& ctx) override {
    Tensor *x = args.in(0), *y = args.out(0);
    if (!x || !y) return args.Error("needs an input and an output");
    if (y->dtype != DataType::kI64) return DtypeError(args, "output must be int64");
    plan_.op = kMax ? ReduceOp::kArgMax : ReduceOp::kArgMin;
    plan_.dtype = x->dtype;
    if (!DispatchStorage(x->dtype, false, [&](auto storage) { launch_ = &Launch<ArgReducer<decltype(storage)>>; }))
      return DtypeError(args, std::string("unsupported dtype ") + DataTypeName(x->dtype));
    int64_t rank = x->rank(), axis = args.attrs.Int("axis", 0);
    if (rank == 0 || !NormalizeAxis(axis, rank, &axis)) return args.Error("axis " + std::to_string(args.attrs.Int("axis", 0)) + " is out of range");
    int64_t outer = 1, inner = 1, n = x->dims[size_t(axis)];
    for (int64_t d = 0; d < axis; ++d) outer *= x->dims[size_t(d)];
    for (int64_t d = axis + 1; d < rank; ++d) inner *= x->dims[size_t(d)];
    if (y->numel != outer * inner) return args.Error("output size does not match");
    if (n == 0 && y->numel > 0) return args.Error("the reduced axis has size 0");
    plan_.last = args.attrs.Int("select_last_index", 0) != 0;
    if (!MakeAxisSlices(outer, n, inner, &plan_.s)) return Unimplemented(args.node + ": shape too complex for the CUDA kernel");
    plan_.l = ChooseLayout(plan_.s, ctx.prop);
    return Status::Ok();
  }

  Status Run(const KernelArgs& args, CudaContext& ctx) override {
    PRECIS_CUDA_CHECK(args, launch_(plan_, args.in(0)->data, args.out(0)->data, ctx.stream));
    return Status::Ok();
  }

 private:
  ReducePlan plan_;
  LaunchFn launch_ = nullptr;
};

}  // namespace
}  // namespace reduce

void RegisterReduceKernels(KernelRegistry& r) {
  using reduce::ReduceOp;
  using reduce::ReduceOpKernel;
  r.Register("ReduceSum", Make<ReduceOpKernel<ReduceOp::kSum>>);
  r.Register("ReduceMean", Make<ReduceOpKernel<ReduceOp::kMean>>);
  r.Register("ReduceMax", Make<ReduceOpKernel<ReduceOp::kMax>>);
  r.Register("ReduceMin", Make<ReduceOpKernel<ReduceOp::kMin>>);
  r.Register("ReduceProd", Make<ReduceOpKernel<ReduceOp::kProd>>);
  r.Register("ReduceL1", Make<ReduceOpKernel<ReduceOp::kL1>>);
  r.Register("ReduceL2", Make<ReduceOpKernel<ReduceOp::kL2>>);
  r.Register("ReduceSumSquare", Make<ReduceOpKernel<ReduceOp::kSumSquare>>);
  r.Register("ReduceLogSum", Make<ReduceOpKernel<ReduceOp::kLogSum>>);
  r.Register("ReduceLogSumExp", Make<ReduceOpKernel<ReduceOp::kLogSumExp>>);
  r.Register("ArgMax", Make<reduce::ArgReduceKernel<true>>);
  r.Register("ArgMin", Make<reduce::ArgReduceKernel<false>>);
  AddSoftmaxKernels(r);
  AddNormKernels(r);
  AddLossKernels(r);
  AddScanKernels(r);
}

}  // namespace precis::rt::cuda
