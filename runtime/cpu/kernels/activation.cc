// CPU kernels of the unary elementwise operators: math functions and activations (computed in
// float for f32/f16/bf16 and in double for f64), Abs/Neg/Sign (also on integers, with
// two's-complement wrap for the minimum value), IsNaN/IsInf, Not and BitwiseNot. The family's
// binary operators live in activation_binary.cc, Cast/Clip/Identity/Dropout in
// activation_cast.cc; RegisterActivationKernels registers all of them.
#include <cmath>

#include "runtime/cpu/kernels/activation_internal.h"
#include "runtime/cpu/kernels/register.h"
#include "runtime/cpu/kernels/shape_checks.h"

namespace precis::rt {
namespace {

// Clamps with NaN kept NaN (std::min/max would turn it into a bound).
template <typename C> C Clamp(C v, C lo, C hi) { return v < lo ? lo : v > hi ? hi : v; }

struct NoAttrs {
  Status Init(const KernelArgs&) { return Status::Ok(); }
};

// Integer-capable ops.
struct AbsOp : NoAttrs {
  template <typename C> C operator()(C x) const {
    if constexpr (std::is_unsigned_v<C>) return x;
    else if constexpr (std::is_integral_v<C>) return x < 0 ? C(activation::WrapOf<C>(0) - activation::WrapOf<C>(x)) : x;
    else return std::fabs(x);
  }
};
struct NegOp : NoAttrs {
  template <typename C> C operator()(C x) const {
    if constexpr (std::is_integral_v<C>) return C(activation::WrapOf<C>(0) - activation::WrapOf<C>(x));
    else return -x;
  }
};
struct SignOp : NoAttrs {
  template <typename C> C operator()(C x) const { return x > C(0) ? C(1) : x < C(0) ? C(-1) : x == C(0) ? C(0) : x; }
};

// Float-only ops (C is float or double).
#define PRECIS_FLOAT_UNARY(Name, expr) \
  struct Name : NoAttrs {              \
    template <typename C> C operator()(C x) const { return expr; } \
  };
PRECIS_FLOAT_UNARY(ExpOp, std::exp(x))
PRECIS_FLOAT_UNARY(LogOp, std::log(x))
PRECIS_FLOAT_UNARY(SqrtOp, std::sqrt(x))
PRECIS_FLOAT_UNARY(ReciprocalOp, C(1) / x)
PRECIS_FLOAT_UNARY(FloorOp, std::floor(x))
PRECIS_FLOAT_UNARY(CeilOp, std::ceil(x))
PRECIS_FLOAT_UNARY(RoundOp, std::nearbyint(x))  // default rounding mode: halves to even, as ONNX asks
PRECIS_FLOAT_UNARY(SinOp, std::sin(x))
PRECIS_FLOAT_UNARY(CosOp, std::cos(x))
PRECIS_FLOAT_UNARY(TanOp, std::tan(x))
PRECIS_FLOAT_UNARY(AsinOp, std::asin(x))
PRECIS_FLOAT_UNARY(AcosOp, std::acos(x))
PRECIS_FLOAT_UNARY(AtanOp, std::atan(x))
PRECIS_FLOAT_UNARY(SinhOp, std::sinh(x))
PRECIS_FLOAT_UNARY(CoshOp, std::cosh(x))
PRECIS_FLOAT_UNARY(AsinhOp, std::asinh(x))
PRECIS_FLOAT_UNARY(AcoshOp, std::acosh(x))
PRECIS_FLOAT_UNARY(AtanhOp, std::atanh(x))
PRECIS_FLOAT_UNARY(TanhOp, std::tanh(x))
PRECIS_FLOAT_UNARY(ErfOp, std::erf(x))
PRECIS_FLOAT_UNARY(SoftsignOp, x / (C(1) + std::fabs(x)))
#undef PRECIS_FLOAT_UNARY

// Overflow-free forms: exp of a large positive argument never appears.
template <typename C> C Sigmoid(C x) {
  if (x >= C(0)) return C(1) / (C(1) + std::exp(-x));
  C e = std::exp(x);
  return e / (C(1) + e);
}
template <typename C> C Softplus(C x) { return x > C(0) ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x)); }

struct SigmoidOp : NoAttrs {
  template <typename C> C operator()(C x) const { return Sigmoid(x); }
};
struct SoftplusOp : NoAttrs {
  template <typename C> C operator()(C x) const { return Softplus(x); }
};
struct MishOp : NoAttrs {
  template <typename C> C operator()(C x) const { return x * std::tanh(Softplus(x)); }
};
struct HardSwishOp : NoAttrs {
  template <typename C> C operator()(C x) const { return x * Clamp(x / C(6) + C(0.5), C(0), C(1)); }
};

// Ops with float attributes (read once in Init).
struct EluOp {
  float alpha = 1;
  Status Init(const KernelArgs& a) {
    alpha = a.attrs.Float("alpha", 1.0f);
    return Status::Ok();
  }
  template <typename C> C operator()(C x) const { return x < C(0) ? C(alpha) * std::expm1(x) : x; }
};
struct SeluOp {
  float alpha = 1.67326319217681884765625f, gamma = 1.05070102214813232421875f;
  Status Init(const KernelArgs& a) {
    alpha = a.attrs.Float("alpha", alpha);
    gamma = a.attrs.Float("gamma", gamma);
    return Status::Ok();
  }
  template <typename C> C operator()(C x) const { return x <= C(0) ? C(gamma) * (C(alpha) * std::exp(x) - C(alpha)) : C(gamma) * x; }
};
struct CeluOp {
  float alpha = 1;
  Status Init(const KernelArgs& a) {
    alpha = a.attrs.Float("alpha", 1.0f);
    if (alpha == 0) return a.Error("alpha must not be 0");
    return Status::Ok();
  }
  template <typename C> C operator()(C x) const { return x > C(0) ? x : C(alpha) * std::expm1(x / C(alpha)); }
};
struct LeakyReluOp {
  float alpha = 0.01f;
  Status Init(const KernelArgs& a) {
    alpha = a.attrs.Float("alpha", 0.01f);
    return Status::Ok();
  }
  template <typename C> C operator()(C x) const { return x < C(0) ? C(alpha) * x : x; }
};
struct ThresholdedReluOp {
  float alpha = 1;
  Status Init(const KernelArgs& a) {
    alpha = a.attrs.Float("alpha", 1.0f);
    return Status::Ok();
  }
  template <typename C> C operator()(C x) const { return x > C(alpha) ? x : C(0); }
};
// Shrink: x + bias below -lambd, x - bias above lambd, 0 between (integers too).
struct ShrinkOp {
  float bias = 0, lambd = 0.5f;
  Status Init(const KernelArgs& a) {
    bias = a.attrs.Float("bias", 0.0f);
    lambd = a.attrs.Float("lambd", 0.5f);
    return Status::Ok();
  }
  template <typename C> C operator()(C x) const {
    double v = double(x), r = v < -double(lambd) ? v + double(bias) : v > double(lambd) ? v - double(bias) : 0.0;
    // Integers saturate (an unsigned result below 0 would be undefined).
    if constexpr (std::is_integral_v<C>) {
      if (r >= double(std::numeric_limits<C>::max())) return std::numeric_limits<C>::max();
      if (r <= double(std::numeric_limits<C>::lowest())) return std::numeric_limits<C>::lowest();
    }
    return C(r);
  }
};
struct HardSigmoidOp {
  float alpha = 0.2f, beta = 0.5f;
  Status Init(const KernelArgs& a) {
    alpha = a.attrs.Float("alpha", 0.2f);
    beta = a.attrs.Float("beta", 0.5f);
    return Status::Ok();
  }
  template <typename C> C operator()(C x) const { return Clamp(C(alpha) * x + C(beta), C(0), C(1)); }
};
struct GeluOp {
  bool tanh_approx = false;
  Status Init(const KernelArgs& a) {
    std::string approximate = a.attrs.String("approximate", "none");
    if (approximate != "none" && approximate != "tanh") return a.Error("unknown approximate '" + approximate + "'");
    tanh_approx = approximate == "tanh";
    return Status::Ok();
  }
  template <typename C> C operator()(C x) const { return GeluValue(x, tanh_approx); }
};

// y = op(x), same dtype. kIntegers: the op also accepts integer tensors.
template <typename Op, bool kIntegers = false>
class UnaryKernel : public Kernel {
 public:
  Status Init(const KernelArgs& args, const CpuContext&) override {
    const Tensor *x = args.in(0), *y = args.out(0);
    if (!x || !y) return args.Error("needs one input and one output");
    if (x->dtype != y->dtype) return args.Error("output dtype differs from the input's");
    bool ok = kIntegers ? DispatchNumeric(x->dtype, [](auto) {}) : DispatchFloat(x->dtype, [](auto) {});
    if (!ok) return args.Error(std::string("unsupported dtype ") + DataTypeName(x->dtype));
    PRECIS_RETURN_IF_ERROR(CheckSameDims(args, *x, *y));
    return op_.Init(args);
  }
  Status Run(const KernelArgs& args, CpuContext&) override {
    const Tensor& x = *args.in(0);
    Tensor& y = *args.out(0);
    auto body = [&](auto tag) {
      using T = decltype(tag);
      const T* px = x.As<T>();
      T* py = y.As<T>();
      for (int64_t i = 0; i < x.numel; ++i) py[i] = Store<T>(op_(Load(px[i])));
    };
    if constexpr (kIntegers) DispatchNumeric(x.dtype, body);
    else DispatchFloat(x.dtype, body);
    return Status::Ok();
  }

 private:
  Op op_;
};

// IsNaN / IsInf: float in, bool out.
template <bool kIsInf>
class FloatClassKernel : public Kernel {
 public:
  Status Init(const KernelArgs& args, const CpuContext&) override {
    const Tensor *x = args.in(0), *y = args.out(0);
    if (!x || !y) return args.Error("needs one input and one output");
    if (y->dtype != DataType::kBool) return args.Error("output must be bool");
    if (!DispatchFloat(x->dtype, [](auto) {})) return args.Error(std::string("unsupported dtype ") + DataTypeName(x->dtype));
    PRECIS_RETURN_IF_ERROR(CheckSameDims(args, *x, *y));
    negative_ = args.attrs.Int("detect_negative", 1) != 0;
    positive_ = args.attrs.Int("detect_positive", 1) != 0;
    return Status::Ok();
  }
  Status Run(const KernelArgs& args, CpuContext&) override {
    const Tensor& x = *args.in(0);
    uint8_t* py = args.out(0)->As<uint8_t>();
    DispatchFloat(x.dtype, [&](auto tag) {
      using T = decltype(tag);
      const T* px = x.As<T>();
      for (int64_t i = 0; i < x.numel; ++i) {
        auto v = Load(px[i]);
        if constexpr (kIsInf) py[i] = std::isinf(v) && (v > 0 ? positive_ : negative_);
        else py[i] = std::isnan(v);
      }
    });
    return Status::Ok();
  }

 private:
  bool negative_ = true, positive_ = true;
};

class NotKernel : public Kernel {
 public:
  Status Init(const KernelArgs& args, const CpuContext&) override {
    const Tensor *x = args.in(0), *y = args.out(0);
    if (!x || !y) return args.Error("needs one input and one output");
    if (x->dtype != DataType::kBool || y->dtype != DataType::kBool) return args.Error("input and output must be bool");
    return CheckSameDims(args, *x, *y);
  }
  Status Run(const KernelArgs& args, CpuContext&) override {
    const uint8_t* px = args.in(0)->As<uint8_t>();
    uint8_t* py = args.out(0)->As<uint8_t>();
    for (int64_t i = 0; i < args.in(0)->numel; ++i) py[i] = px[i] == 0;
    return Status::Ok();
  }
};

class BitwiseNotKernel : public Kernel {
 public:
  Status Init(const KernelArgs& args, const CpuContext&) override {
    const Tensor *x = args.in(0), *y = args.out(0);
    if (!x || !y) return args.Error("needs one input and one output");
    if (x->dtype != y->dtype || !DispatchInteger(x->dtype, [](auto) {}))
      return args.Error(std::string("needs integer input and output of one dtype, got ") + DataTypeName(x->dtype));
    return CheckSameDims(args, *x, *y);
  }
  Status Run(const KernelArgs& args, CpuContext&) override {
    const Tensor& x = *args.in(0);
    Tensor& y = *args.out(0);
    DispatchInteger(x.dtype, [&](auto tag) {
      using T = decltype(tag);
      const T* px = x.As<T>();
      T* py = y.As<T>();
      for (int64_t i = 0; i < x.numel; ++i) py[i] = T(~px[i]);
    });
    return Status::Ok();
  }
};

}  // namespace

void RegisterActivationKernels(KernelRegistry& r) {
  r.Register("Abs", Make<UnaryKernel<AbsOp, true>>);
  r.Register("Neg", Make<UnaryKernel<NegOp, true>>);
  r.Register("Sign", Make<UnaryKernel<SignOp, true>>);
  r.Register("Exp", Make<UnaryKernel<ExpOp>>);
  r.Register("Log", Make<UnaryKernel<LogOp>>);
  r.Register("Sqrt", Make<UnaryKernel<SqrtOp>>);
  r.Register("Reciprocal", Make<UnaryKernel<ReciprocalOp>>);
  r.Register("Floor", Make<UnaryKernel<FloorOp>>);
  r.Register("Ceil", Make<UnaryKernel<CeilOp>>);
  r.Register("Round", Make<UnaryKernel<RoundOp>>);
  r.Register("Sin", Make<UnaryKernel<SinOp>>);
  r.Register("Cos", Make<UnaryKernel<CosOp>>);
  r.Register("Tan", Make<UnaryKernel<TanOp>>);
  r.Register("Asin", Make<UnaryKernel<AsinOp>>);
  r.Register("Acos", Make<UnaryKernel<AcosOp>>);
  r.Register("Atan", Make<UnaryKernel<AtanOp>>);
  r.Register("Sinh", Make<UnaryKernel<SinhOp>>);
  r.Register("Cosh", Make<UnaryKernel<CoshOp>>);
  r.Register("Asinh", Make<UnaryKernel<AsinhOp>>);
  r.Register("Acosh", Make<UnaryKernel<AcoshOp>>);
  r.Register("Atanh", Make<UnaryKernel<AtanhOp>>);
  r.Register("Tanh", Make<UnaryKernel<TanhOp>>);
  r.Register("Erf", Make<UnaryKernel<ErfOp>>);
  r.Register("Sigmoid", Make<UnaryKernel<SigmoidOp>>);
  r.Register("Softplus", Make<UnaryKernel<SoftplusOp>>);
  r.Register("Softsign", Make<UnaryKernel<SoftsignOp>>);
  r.Register("Mish", Make<UnaryKernel<MishOp>>);
  r.Register("HardSwish", Make<UnaryKernel<HardSwishOp>>);
  r.Register("Elu", Make<UnaryKernel<EluOp>>);
  r.Register("Selu", Make<UnaryKernel<SeluOp>>);
  r.Register("Celu", Make<UnaryKernel<CeluOp>>);
  r.Register("LeakyRelu", Make<UnaryKernel<LeakyReluOp>>);
  r.Register("ThresholdedRelu", Make<UnaryKernel<ThresholdedReluOp>>);
  r.Register("Shrink", Make<UnaryKernel<ShrinkOp, true>>);
  r.Register("HardSigmoid", Make<UnaryKernel<HardSigmoidOp>>);
  r.Register("Gelu", Make<UnaryKernel<GeluOp>>);
  r.Register("IsNaN", Make<FloatClassKernel<false>>);
  r.Register("IsInf", Make<FloatClassKernel<true>>);
  r.Register("Not", Make<NotKernel>);
  r.Register("BitwiseNot", Make<BitwiseNotKernel>);
  activation::AddBinaryKernels(r);
  activation::AddCastKernels(r);
}

}  // namespace precis::rt
