// Variadic Max, Min (numeric) and Sum, Mean (floats) on CUDA: 1..N broadcast inputs, folded
// left to right in the compute type (float for 16-bit floats) and rounded once, as the CPU
// kernel (activation_binary.cc) does; Max and Min propagate NaN. One pass reads up to
// kMaxOperands inputs; more inputs take several passes that carry the running result in the
// step's scratch, in the compute type, so the rounding still happens once.
#include "runtime/cuda/kernels/elementwise.cuh"

namespace precis::rt::cuda::ew {
namespace {

enum class VariadicOp : int { kMax, kMin, kSum, kMean };

template <typename C> PRECIS_EW_HD C Combine(VariadicOp op, C acc, C v) {
  switch (op) {
    case VariadicOp::kMax: return v > acc || IsNan(v) ? v : acc;
    case VariadicOp::kMin: return v < acc || IsNan(v) ? v : acc;
    default:
      if constexpr (std::is_integral_v<C>) return WrapAdd(acc, v);
      else return acc + v;
  }
}

// One pass: acc = acc_in[i] (or input 0), folded with the pass's inputs; the last pass divides
// (Mean) and stores y, the others store acc_out.
template <typename T, typename Y, typename I> struct VariadicFn {
  using C = Compute<T>;
  const T* in[kMaxOperands];
  int count;
  const C* acc_in;
  C* acc_out;
  Y* y;
  VariadicOp op;
  int total;
  BcastIndex<I, kMaxOperands> idx;
  PRECIS_EW_HD void operator()(int64_t i) const {
    I off[kMaxOperands];
    idx.Map(I(i), off);
    C acc = acc_in ? acc_in[i] : LoadC(in[0][off[0]]);
    const int first = acc_in ? 0 : 1;
    PRECIS_EW_UNROLL
    for (int k = 0; k < kMaxOperands; ++k)
      if (k >= first && k < count) acc = Combine(op, acc, LoadC(in[k][off[k]]));
    if (acc_out) {
      acc_out[i] = acc;
      return;
    }
    if (op == VariadicOp::kMean) acc = acc / C(total);
    y[i] = StoreC<Y>(acc);
  }
};

class VariadicKernel : public Kernel {
 public:
  explicit VariadicKernel(VariadicOp op) : op_(op) {}

  Status Init(const KernelArgs& args, CudaContext&) override {
    const Tensor* y = args.out(0);
    if (!y || args.inputs.empty()) return args.Error("needs at least one input and one output");
    const DataType t = args.inputs[0] ? args.inputs[0]->dtype : DataType::kUndefined;
    std::vector<std::vector<int64_t>> dims;
    for (size_t k = 0; k < args.inputs.size(); ++k) {
      const Tensor* x = args.in(k);
      if (!x) return args.Error("input " + std::to_string(k) + " is missing");
      if (x->dtype != t)
        return DtypeMismatch(args, t, x->dtype, "input " + std::to_string(k) + " has dtype " + DataTypeName(x->dtype) + ", input 0 " + DataTypeName(t));
      dims.push_back(x->dims);
    }
    if (!PairSupported(t, y->dtype)) return DtypeMismatch(args, t, y->dtype, std::string("output dtype ") + DataTypeName(y->dtype) + " differs from the inputs' " + DataTypeName(t));
    bool float_only = op_ == VariadicOp::kSum || op_ == VariadicOp::kMean;
    if (float_only ? !IsFloatType(t) : !IsNumericType(t)) return args.Error(std::string("unsupported dtype ") + DataTypeName(t));
    passes_.clear();
    for (size_t first = 0; first < dims.size(); first += kMaxOperands) {
      size_t last = std::min(dims.size(), first + size_t(kMaxOperands));
      Pass pass{first, last, {}};
      PRECIS_RETURN_IF_ERROR(PlanBroadcast(args, y->dims, std::vector<std::vector<int64_t>>(dims.begin() + first, dims.begin() + last), &pass.plan));
      passes_.push_back(std::move(pass));
    }
    size_t acc_size = t == DataType::kF64 ? 8 : IsFloatType(t) ? 4 : DataTypeSize(t);
    scratch_ = passes_.size() > 1 ? size_t(y->numel) * acc_size : 0;
    return Status::Ok();
  }

  Status Run(const KernelArgs& args, CudaContext& ctx) override {
    Tensor& y = *args.out(0);
    cudaError_t e = cudaSuccess;
    DispatchPair(args.in(0)->dtype, y.dtype, [&](auto t, auto u) {
      using T = decltype(t);
      using Y = decltype(u);
      using C = Compute<T>;
      C* acc = reinterpret_cast<C*>(ctx.scratch);
      for (size_t p = 0; p < passes_.size() && e == cudaSuccess; ++p) {
        const Pass& pass = passes_[p];
        bool last = p + 1 == passes_.size();
        const C* acc_in = p > 0 ? acc : nullptr;
        C* acc_out = last ? nullptr : acc;
        const T* in[kMaxOperands] = {};
        for (size_t k = pass.first; k < pass.last; ++k) in[k - pass.first] = args.in(k)->As<T>();
        int count = int(pass.last - pass.first);
        int total = int(args.inputs.size());
        if (pass.plan.narrow) {
          VariadicFn<T, Y, uint32_t> fn{{}, count, acc_in, acc_out, y.As<Y>(), op_, total, pass.plan.Index<uint32_t, kMaxOperands>()};
          std::copy(in, in + kMaxOperands, fn.in);
          e = Launch(pass.plan.numel, ctx.stream, fn);
        } else {
          VariadicFn<T, Y, int64_t> fn{{}, count, acc_in, acc_out, y.As<Y>(), op_, total, pass.plan.Index<int64_t, kMaxOperands>()};
          std::copy(in, in + kMaxOperands, fn.in);
          e = Launch(pass.plan.numel, ctx.stream, fn);
        }
      }
    });
    PRECIS_CUDA_CHECK(args, e);
    return Status::Ok();
  }

  size_t ScratchBytes() const override { return scratch_; }

 private:
  struct Pass {
    size_t first, last;  // the inputs [first, last) this pass reads
    BroadcastPlan plan;
  };
  VariadicOp op_;
  std::vector<Pass> passes_;
  size_t scratch_ = 0;
};

template <VariadicOp kOp> std::unique_ptr<Kernel> MakeVariadic() { return std::make_unique<VariadicKernel>(kOp); }

}  // namespace

void AddVariadicKernels(KernelRegistry& r) {
  r.Register("Max", MakeVariadic<VariadicOp::kMax>);
  r.Register("Min", MakeVariadic<VariadicOp::kMin>);
  r.Register("Sum", MakeVariadic<VariadicOp::kSum>);
  r.Register("Mean", MakeVariadic<VariadicOp::kMean>);
}

}  // namespace precis::rt::cuda::ew
