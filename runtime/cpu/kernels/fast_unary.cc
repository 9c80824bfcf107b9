// Fast Exp, Erf, Tanh, Sigmoid and Gelu for f32, f16 and bf16: the vectorized approximations of
// fast_math.h (error bounds there), run over contiguous chunks in parallel. 16-bit data is
// converted to float in blocks and rounded back with Store<T>, as the reference kernels do.
// f64 stays with the reference kernels (libm in double).
#include <string>

#include "runtime/cpu/kernels/fast_math.h"
#include "runtime/cpu/kernels/fast_util.h"
#include "runtime/cpu/kernels/register.h"

namespace precis::rt::fast {
namespace {

using ArrayFn = void (*)(const float*, float*, int64_t);

// y = fn(x) elementwise; `cost` weighs one element against a simple operation for threading.
template <ArrayFn kFn, int64_t kCost>
class FastUnaryKernel : public Kernel {
 public:
  Status Init(const KernelArgs& args, const CpuContext&) override {
    const Tensor *x = args.in(0), *y = args.out(0);
    if (!x || !y || x->dtype != y->dtype || x->dims != y->dims || !DispatchFast(x->dtype, [](auto) {}))
      return Unimplemented("fast unary: f32, f16 and bf16 of one shape only");
    return Status::Ok();
  }
  Status Run(const KernelArgs& args, CpuContext& ctx) override {
    const Tensor& x = *args.in(0);
    Tensor& y = *args.out(0);
    DispatchFast(x.dtype, [&](auto tag) {
      using T = decltype(tag);
      const T* px = x.As<T>();
      T* py = y.As<T>();
      ParallelFor(x.numel, kCost, ctx.threads, [&](int64_t begin, int64_t end) { ApplyFloatRoutine(px + begin, py + begin, end - begin, kFn); });
    });
    return Status::Ok();
  }
};

// Gelu: the attribute picks the erf or the tanh form; anything else is the reference's error.
class FastGeluKernel : public Kernel {
 public:
  Status Init(const KernelArgs& args, const CpuContext& ctx) override {
    std::string approximate = args.attrs.String("approximate", "none");
    if (approximate != "none" && approximate != "tanh") return Unimplemented("fast Gelu: unknown approximate");
    fn_ = approximate == "tanh" ? GeluTanhArray : GeluErfArray;
    return erf_.Init(args, ctx);  // the same operand checks
  }
  Status Run(const KernelArgs& args, CpuContext& ctx) override {
    const Tensor& x = *args.in(0);
    Tensor& y = *args.out(0);
    DispatchFast(x.dtype, [&](auto tag) {
      using T = decltype(tag);
      const T* px = x.As<T>();
      T* py = y.As<T>();
      ParallelFor(x.numel, 16, ctx.threads, [&](int64_t begin, int64_t end) { ApplyFloatRoutine(px + begin, py + begin, end - begin, fn_); });
    });
    return Status::Ok();
  }

 private:
  ArrayFn fn_ = GeluErfArray;
  FastUnaryKernel<ErfArray, 16> erf_;
};

}  // namespace

void AddFastUnaryKernels(KernelRegistry& r) {
  r.RegisterFast("Exp", Make<FastUnaryKernel<ExpArray, 8>>);
  r.RegisterFast("Erf", Make<FastUnaryKernel<ErfArray, 16>>);
  r.RegisterFast("Tanh", Make<FastUnaryKernel<TanhArray, 16>>);
  r.RegisterFast("Sigmoid", Make<FastUnaryKernel<SigmoidArray, 12>>);
  r.RegisterFast("Gelu", Make<FastGeluKernel>);
}

}  // namespace precis::rt::fast
