// Broadcasting comparisons on CUDA: Equal, Greater, GreaterOrEqual, Less, LessOrEqual on two
// operands of one dtype (numeric or bool), with a bool output. 16-bit floats compare in float,
// bool operands compare their stored bytes, as the CPU kernels (activation_binary.cc) do.
#include "runtime/cuda/kernels/elementwise.cuh"

namespace precis::rt::cuda::ew {
namespace {

enum class CompareOp : int { kEqual, kGreater, kGreaterOrEqual, kLess, kLessOrEqual };

#define PRECIS_EW_ZIP(expr)                  \
  for (int j = 0; j < V; ++j) r[j] = (expr); \
  break

struct CompareFn {
  using Params = CompareOp;
  template <typename C> using Result = uint8_t;
  template <int V, typename C> static PRECIS_EW_HD void Apply(const Params& op, const C (&a)[V], const C (&b)[V], uint8_t (&r)[V]) {
    switch (op) {
      case CompareOp::kEqual: PRECIS_EW_ZIP(a[j] == b[j]);
      case CompareOp::kGreater: PRECIS_EW_ZIP(a[j] > b[j]);
      case CompareOp::kGreaterOrEqual: PRECIS_EW_ZIP(a[j] >= b[j]);
      case CompareOp::kLess: PRECIS_EW_ZIP(a[j] < b[j]);
      case CompareOp::kLessOrEqual: PRECIS_EW_ZIP(a[j] <= b[j]);
    }
  }
};
#undef PRECIS_EW_ZIP

class CompareKernel : public Kernel {
 public:
  explicit CompareKernel(CompareOp op) : op_(op) {}

  Status Init(const KernelArgs& args, CudaContext&) override {
    const Tensor *a = args.in(0), *b = args.in(1), *y = args.out(0);
    if (!a || !b || !y) return args.Error("needs two inputs and one output");
    std::string types = std::string(DataTypeName(a->dtype)) + " and " + DataTypeName(b->dtype);
    if (a->dtype != b->dtype) return DtypeMismatch(args, a->dtype, b->dtype, "needs two operands of one dtype, got " + types);
    if (y->dtype != DataType::kBool || !DispatchStorage(a->dtype, [](auto) {}))
      return args.Error("needs two operands of one numeric dtype and a bool output, got " + types);
    return PlanBroadcast(args, y->dims, {a->dims, b->dims}, &plan_);
  }

  Status Run(const KernelArgs& args, CudaContext& ctx) override {
    const Tensor &a = *args.in(0), &b = *args.in(1);
    cudaError_t e = cudaSuccess;
    DispatchStorage(a.dtype, [&](auto t) {
      using T = decltype(t);
      e = LaunchBinary<CompareFn>(plan_, a.As<T>(), b.As<T>(), args.out(0)->data, op_, ctx.stream);
    });
    PRECIS_CUDA_CHECK(args, e);
    return Status::Ok();
  }

 private:
  CompareOp op_;
  BroadcastPlan plan_;
};

template <CompareOp kOp> std::unique_ptr<Kernel> MakeCompare() { return std::make_unique<CompareKernel>(kOp); }

}  // namespace

void AddCompareKernels(KernelRegistry& r) {
  r.Register("Equal", MakeCompare<CompareOp::kEqual>);
  r.Register("Greater", MakeCompare<CompareOp::kGreater>);
  r.Register("GreaterOrEqual", MakeCompare<CompareOp::kGreaterOrEqual>);
  r.Register("Less", MakeCompare<CompareOp::kLess>);
  r.Register("LessOrEqual", MakeCompare<CompareOp::kLessOrEqual>);
}

}  // namespace precis::rt::cuda::ew
