// Elementwise arithmetic kernels with numpy broadcasting: Add, Sub, Mul, Div, and the unary
// Relu. 16-bit floats are stored as such and computed in float. Integer division by zero gives
// 0 instead of undefined behaviour (ONNX leaves it undefined).
#include <limits>
#include <type_traits>

#include "runtime/cpu/kernels/common.h"
#include "runtime/cpu/kernels/register.h"
#include "runtime/cpu/kernels/shape_checks.h"

namespace precis::rt {
namespace {

// Integers wrap around (common.h): an overflow is not undefined behaviour.
struct AddOp {
  template <typename C> C operator()(C a, C b) const {
    if constexpr (std::is_integral_v<C>) return WrapAdd(a, b);
    else return a + b;
  }
};
struct SubOp {
  template <typename C> C operator()(C a, C b) const {
    if constexpr (std::is_integral_v<C>) return WrapSub(a, b);
    else return a - b;
  }
};
struct MulOp {
  template <typename C> C operator()(C a, C b) const {
    if constexpr (std::is_integral_v<C>) return WrapMul(a, b);
    else return a * b;
  }
};
struct DivOp {
  template <typename C> C operator()(C a, C b) const {
    if constexpr (std::is_integral_v<C>) {
      if (b == 0) return 0;
      if constexpr (std::is_signed_v<C>)
        if (a == std::numeric_limits<C>::min() && b == C(-1)) return a;
    }
    return a / b;
  }
};

template <typename Op>
class BinaryKernel : public Kernel {
 public:
  Status Init(const KernelArgs& args, const CpuContext&) override {
    Tensor *a = args.in(0), *b = args.in(1), *y = args.out(0);
    if (!a || !b || !y) return args.Error("needs two inputs and one output");
    if (a->dtype != b->dtype || a->dtype != y->dtype) return args.Error("operand dtypes differ");
    if (!DispatchNumeric(a->dtype, [](auto) {})) return args.Error(std::string("unsupported dtype ") + DataTypeName(a->dtype));
    PRECIS_RETURN_IF_ERROR(CheckBroadcast(args, y->dims, {a->dims, b->dims}));
    map_a_ = BroadcastMap(y->dims, a->dims);
    map_b_ = BroadcastMap(y->dims, b->dims);
    return Status::Ok();
  }
  Status Run(const KernelArgs& args, CpuContext&) override {
    const Tensor &a = *args.in(0), &b = *args.in(1);
    Tensor& y = *args.out(0);
    DispatchNumeric(y.dtype, [&](auto tag) {
      using T = decltype(tag);
      const T* pa = a.As<T>();
      const T* pb = b.As<T>();
      T* py = y.As<T>();
      Op op;
      if (map_a_.identity() && map_b_.identity()) {
        for (int64_t i = 0; i < y.numel; ++i) py[i] = Store<T>(op(Load(pa[i]), Load(pb[i])));
      } else if (map_a_.identity() && b.numel == 1) {
        auto vb = Load(pb[0]);
        for (int64_t i = 0; i < y.numel; ++i) py[i] = Store<T>(op(Load(pa[i]), vb));
      } else {
        for (int64_t i = 0; i < y.numel; ++i) py[i] = Store<T>(op(Load(pa[map_a_.Map(i)]), Load(pb[map_b_.Map(i)])));
      }
    });
    return Status::Ok();
  }

 private:
  BroadcastMap map_a_, map_b_;
};

class ReluKernel : public Kernel {
 public:
  Status Init(const KernelArgs& args, const CpuContext&) override {
    if (!args.in(0) || !args.out(0)) return args.Error("needs one input and one output");
    // A Relu writing another dtype (a fused cast) runs widened.
    if (args.out(0)->dtype != args.in(0)->dtype) return args.Error("output dtype differs from the input's");
    if (!DispatchNumeric(args.in(0)->dtype, [](auto) {})) return args.Error("unsupported dtype");
    return CheckSameDims(args, *args.in(0), *args.out(0));
  }
  Status Run(const KernelArgs& args, CpuContext&) override {
    const Tensor& x = *args.in(0);
    Tensor& y = *args.out(0);
    DispatchNumeric(x.dtype, [&](auto tag) {
      using T = decltype(tag);
      const T* px = x.As<T>();
      T* py = y.As<T>();
      for (int64_t i = 0; i < x.numel; ++i) {
        auto v = Load(px[i]);
        py[i] = Store<T>(v > 0 ? v : decltype(v)(0));
      }
    });
    return Status::Ok();
  }
};

}  // namespace

void RegisterElementwiseKernels(KernelRegistry& r) {
  r.Register("Add", Make<BinaryKernel<AddOp>>);
  r.Register("Sub", Make<BinaryKernel<SubOp>>);
  r.Register("Mul", Make<BinaryKernel<MulOp>>);
  r.Register("Div", Make<BinaryKernel<DivOp>>);
  r.Register("Relu", Make<ReluKernel>);
}

}  // namespace precis::rt
