// Unary elementwise kernels on CUDA: math functions and activations (computed in float for
// f32/f16/bf16, in double for f64, with the accurate libdevice functions), Abs/Neg/Sign/Relu
// and Clip (integers too, wrapping like the CPU kernels), Not, BitwiseNot, IsNaN and IsInf.
// One kernel per (input, output) storage pair with the op switched at run time; the output may
// be a different float width than the input (a fused cast). Contiguous 16-byte aligned tensors
// take a vector path (16 bytes per thread). The CPU kernels (activation.cc, elementwise.cc'
// Relu, activation_cast.cc's Clip) are the specification, expression for expression.
#include <cmath>

#include "runtime/cuda/kernels/elementwise.cuh"

namespace precis::rt::cuda::ew {
namespace {

enum class UnaryOp : int {
  // Any numeric dtype.
  kAbs, kNeg, kSign, kRelu, kClip,
  // Bool / integers.
  kNot, kBitwiseNot,
  // Floats.
  kExp, kLog, kSqrt, kReciprocal, kFloor, kCeil, kRound, kSin, kCos, kTan, kAsin, kAcos, kAtan, kSinh, kCosh,
  kAsinh, kAcosh, kAtanh, kTanh, kErf, kSigmoid, kSoftplus, kSoftsign, kMish, kHardSwish, kElu, kSelu, kCelu,
  kLeakyRelu, kThresholdedRelu, kHardSigmoid, kGelu, kGeluTanh,
};

struct UnaryParams {
  UnaryOp op = UnaryOp::kAbs;
  float alpha = 0, beta = 0, gamma = 0;
  // Clip: bounds from attributes (before opset 11) in alpha/beta, else optional device scalars.
  bool clip_attrs = false;
  const void* lo = nullptr;
  const void* hi = nullptr;
};

// float and double overloads of the math library (accurate versions, never the intrinsics).
#define PRECIS_EW_MATH(Name, fn)                             \
  PRECIS_EW_HD float Name(float x) { return fn##f(x); }         \
  PRECIS_EW_HD double Name(double x) { return fn(x); }
PRECIS_EW_MATH(Fabs, fabs)
PRECIS_EW_MATH(Exp, exp)
PRECIS_EW_MATH(Expm1, expm1)
PRECIS_EW_MATH(Log, log)
PRECIS_EW_MATH(Log1p, log1p)
PRECIS_EW_MATH(Sqrt, sqrt)
PRECIS_EW_MATH(Floor, floor)
PRECIS_EW_MATH(Ceil, ceil)
PRECIS_EW_MATH(Rint, rint)
PRECIS_EW_MATH(Sin, sin)
PRECIS_EW_MATH(Cos, cos)
PRECIS_EW_MATH(Tan, tan)
PRECIS_EW_MATH(Asin, asin)
PRECIS_EW_MATH(Acos, acos)
PRECIS_EW_MATH(Atan, atan)
PRECIS_EW_MATH(Sinh, sinh)
PRECIS_EW_MATH(Cosh, cosh)
PRECIS_EW_MATH(Asinh, asinh)
PRECIS_EW_MATH(Acosh, acosh)
PRECIS_EW_MATH(Atanh, atanh)
PRECIS_EW_MATH(Tanh, tanh)
PRECIS_EW_MATH(Erf, erf)
#undef PRECIS_EW_MATH

// Clamps with NaN kept NaN.
template <typename C> PRECIS_EW_HD C Clamp(C v, C lo, C hi) { return v < lo ? lo : v > hi ? hi : v; }
// Overflow-free forms, as the CPU's: exp of a large positive argument never appears.
template <typename C> PRECIS_EW_HD C Sigmoid(C x) {
  if (x >= C(0)) return C(1) / (C(1) + Exp(-x));
  C e = Exp(x);
  return e / (C(1) + e);
}
template <typename C> PRECIS_EW_HD C Softplus(C x) { return x > C(0) ? x + Log1p(Exp(-x)) : Log1p(Exp(x)); }

// Clip bounds in the compute type: the type's range (infinities for floats), the attributes, or
// the device scalars.
template <typename T> PRECIS_EW_HD void ClipBounds(const UnaryParams& p, Compute<T>& lo, Compute<T>& hi) {
  using C = Compute<T>;
  if constexpr (std::is_floating_point_v<C>) {
    lo = p.clip_attrs ? C(p.alpha) : -C(INFINITY);
    hi = p.clip_attrs ? C(p.beta) : C(INFINITY);
  } else {
    lo = std::numeric_limits<C>::lowest();
    hi = std::numeric_limits<C>::max();
  }
  if (p.lo) lo = LoadC(*static_cast<const T*>(p.lo));
  if (p.hi) hi = LoadC(*static_cast<const T*>(p.hi));
}

// The less common float ops, out of line: one copy per compute type instead of one per pack
// element of every kernel, which keeps the family's compile time and code size down.
template <typename C> __host__ __device__ __noinline__ C UnaryMathRare(UnaryOp op, C alpha, C gamma, C x) {
  switch (op) {
    case UnaryOp::kLog: return Log(x);
    case UnaryOp::kSin: return Sin(x);
    case UnaryOp::kCos: return Cos(x);
    case UnaryOp::kTan: return Tan(x);
    case UnaryOp::kAsin: return Asin(x);
    case UnaryOp::kAcos: return Acos(x);
    case UnaryOp::kAtan: return Atan(x);
    case UnaryOp::kSinh: return Sinh(x);
    case UnaryOp::kCosh: return Cosh(x);
    case UnaryOp::kAsinh: return Asinh(x);
    case UnaryOp::kAcosh: return Acosh(x);
    case UnaryOp::kAtanh: return Atanh(x);
    case UnaryOp::kSoftplus: return Softplus(x);
    case UnaryOp::kMish: return x * Tanh(Softplus(x));
    case UnaryOp::kElu: return x < C(0) ? alpha * Expm1(x) : x;
    case UnaryOp::kSelu: return x <= C(0) ? gamma * (MulRn(alpha, Exp(x)) - alpha) : gamma * x;
    case UnaryOp::kCelu: return x > C(0) ? x : alpha * Expm1(x / alpha);
    default: return x;
  }
}

// v[j] = op(v[j]) for a pack of V values; the switch runs once per pack.
#define PRECIS_EW_MAP(expr)        \
  for (int j = 0; j < V; ++j) {    \
    const C x = v[j];              \
    v[j] = (expr);                 \
  }                                \
  break

template <typename T, int V> PRECIS_EW_HD void UnaryPack(const UnaryParams& p, Compute<T> (&v)[V]) {
  using C = Compute<T>;
  if (p.op == UnaryOp::kClip) {
    C lo, hi;
    ClipBounds<T>(p, lo, hi);
    for (int j = 0; j < V; ++j) {
      C x = v[j];
      if (x < lo) x = lo;
      if (x > hi) x = hi;
      v[j] = x;
    }
    return;
  }
  if constexpr (std::is_integral_v<C>) {
    switch (p.op) {
      case UnaryOp::kAbs: PRECIS_EW_MAP(IsNegative(x) ? WrapSub(C(0), x) : x);
      case UnaryOp::kNeg: PRECIS_EW_MAP(WrapSub(C(0), x));
      case UnaryOp::kSign: PRECIS_EW_MAP(x > C(0) ? C(1) : IsNegative(x) ? C(-1) : C(0));
      case UnaryOp::kRelu: PRECIS_EW_MAP(x > C(0) ? x : C(0));
      case UnaryOp::kNot: PRECIS_EW_MAP(C(x == 0));
      case UnaryOp::kBitwiseNot: PRECIS_EW_MAP(C(~x));
      default: break;
    }
  } else {
    const C alpha = C(p.alpha), beta = C(p.beta), gamma = C(p.gamma);
    switch (p.op) {
      case UnaryOp::kAbs: PRECIS_EW_MAP(Fabs(x));
      case UnaryOp::kNeg: PRECIS_EW_MAP(-x);
      case UnaryOp::kSign: PRECIS_EW_MAP(x > C(0) ? C(1) : x < C(0) ? C(-1) : x == C(0) ? C(0) : x);
      case UnaryOp::kRelu: PRECIS_EW_MAP(x > C(0) ? x : C(0));
      case UnaryOp::kExp: PRECIS_EW_MAP(Exp(x));
      case UnaryOp::kSqrt: PRECIS_EW_MAP(Sqrt(x));
      case UnaryOp::kReciprocal: PRECIS_EW_MAP(C(1) / x);
      case UnaryOp::kFloor: PRECIS_EW_MAP(Floor(x));
      case UnaryOp::kCeil: PRECIS_EW_MAP(Ceil(x));
      case UnaryOp::kRound: PRECIS_EW_MAP(Rint(x));  // halves to even
      case UnaryOp::kTanh: PRECIS_EW_MAP(Tanh(x));
      case UnaryOp::kErf: PRECIS_EW_MAP(Erf(x));
      case UnaryOp::kSigmoid: PRECIS_EW_MAP(Sigmoid(x));
      case UnaryOp::kSoftsign: PRECIS_EW_MAP(x / (C(1) + Fabs(x)));
      case UnaryOp::kHardSwish: PRECIS_EW_MAP(x * Clamp(x / C(6) + C(0.5), C(0), C(1)));
      case UnaryOp::kLeakyRelu: PRECIS_EW_MAP(x < C(0) ? alpha * x : x);
      case UnaryOp::kThresholdedRelu: PRECIS_EW_MAP(x > alpha ? x : C(0));
      case UnaryOp::kHardSigmoid: PRECIS_EW_MAP(Clamp(AddRn(MulRn(alpha, x), beta), C(0), C(1)));
      case UnaryOp::kGelu: PRECIS_EW_MAP(C(0.5) * x * (C(1) + Erf(x * C(0.7071067811865476))));  // x / sqrt(2)
      case UnaryOp::kGeluTanh:  // k = sqrt(2 / pi)
        PRECIS_EW_MAP(C(0.5) * x * (C(1) + Tanh(C(0.7978845608028654) * AddRn(x, MulRn(MulRn(MulRn(C(0.044715), x), x), x)))));
      default: PRECIS_EW_MAP(UnaryMathRare<C>(p.op, alpha, gamma, x));
    }
  }
}
#undef PRECIS_EW_MAP

// y = op(x) over n elements: packs of V on the vector path (thread i takes elements
// [i*V, i*V + V), the last one fewer), else one element per thread.
template <typename T, typename Y> struct UnaryFn {
  static constexpr int V = kPack<T, Y>;
  const T* x;
  Y* y;
  int64_t n;
  bool vec;
  UnaryParams p;
  PRECIS_EW_HD void operator()(int64_t i) const {
    using C = Compute<T>;
    if (vec) {
      int64_t base = i * V;
      if (base + V <= n) {
        C v[V];
        LoadPack<V>(x, base, v);
        UnaryPack<T, V>(p, v);
        StorePack<V>(y, base, v);
        return;
      }
      for (int64_t k = base; k < n; ++k) One(k);
      return;
    }
    One(i);
  }
  PRECIS_EW_HD void One(int64_t i) const {
    Compute<T> v[1] = {LoadC(x[i])};
    UnaryPack<T, 1>(p, v);
    y[i] = StoreC<Y>(v[0]);
  }
};

template <typename T, typename Y> cudaError_t LaunchUnary(const T* x, Y* y, int64_t n, const UnaryParams& p, cudaStream_t stream) {
  constexpr int V = UnaryFn<T, Y>::V;
  bool vec = Aligned(x, sizeof(T) * V) && Aligned(y, sizeof(Y) * V);
  return Launch(vec ? (n + V - 1) / V : n, stream, UnaryFn<T, Y>{x, y, n, vec, p});
}

enum class Accepts { kNumeric, kFloat, kBool, kInteger };

Accepts AcceptsOf(UnaryOp op) {
  switch (op) {
    case UnaryOp::kAbs:
    case UnaryOp::kNeg:
    case UnaryOp::kSign:
    case UnaryOp::kRelu:
    case UnaryOp::kClip: return Accepts::kNumeric;
    case UnaryOp::kNot: return Accepts::kBool;
    case UnaryOp::kBitwiseNot: return Accepts::kInteger;
    default: return Accepts::kFloat;
  }
}

class UnaryKernel : public Kernel {
 public:
  explicit UnaryKernel(UnaryOp op) { p_.op = op; }

  Status Init(const KernelArgs& args, CudaContext&) override {
    const Tensor *x = args.in(0), *y = args.out(0);
    if (!x || !y) return args.Error("needs one input and one output");
    bool ok = false;
    switch (AcceptsOf(p_.op)) {
      case Accepts::kNumeric: ok = IsNumericType(x->dtype); break;
      case Accepts::kFloat: ok = IsFloatType(x->dtype); break;
      case Accepts::kBool: ok = x->dtype == DataType::kBool && y->dtype == DataType::kBool; break;
      case Accepts::kInteger: ok = IsIntType(x->dtype); break;
    }
    if (!ok) return args.Error(std::string("unsupported dtype ") + DataTypeName(x->dtype));
    if (x->dtype != y->dtype && (AcceptsOf(p_.op) == Accepts::kInteger || !PairSupported(x->dtype, y->dtype)))
      return args.Error(std::string("output dtype ") + DataTypeName(y->dtype) + " differs from the input's " + DataTypeName(x->dtype));
    if (x->numel != y->numel) return args.Error("input and output sizes differ");
    if (p_.op == UnaryOp::kClip) return InitClip(args);
    return InitAttributes(args);
  }

  Status Run(const KernelArgs& args, CudaContext& ctx) override {
    const Tensor& x = *args.in(0);
    Tensor& y = *args.out(0);
    UnaryParams p = p_;
    if (p.op == UnaryOp::kClip) {
      p.lo = lo_input_ ? args.in(1)->data : nullptr;
      p.hi = hi_input_ ? args.in(2)->data : nullptr;
    }
    cudaError_t e = cudaSuccess;
    DispatchPair(x.dtype, y.dtype, [&](auto t, auto u) {
      using T = decltype(t);
      using Y = decltype(u);
      e = LaunchUnary(x.As<T>(), y.As<Y>(), x.numel, p, ctx.stream);
    });
    PRECIS_CUDA_CHECK(args, e);
    return Status::Ok();
  }

 private:
  // Float attributes with the CPU kernels' defaults.
  Status InitAttributes(const KernelArgs& args) {
    const Attributes& a = args.attrs;
    switch (p_.op) {
      case UnaryOp::kElu: p_.alpha = a.Float("alpha", 1.0f); break;
      case UnaryOp::kSelu:
        p_.alpha = a.Float("alpha", 1.67326319217681884765625f);
        p_.gamma = a.Float("gamma", 1.05070102214813232421875f);
        break;
      case UnaryOp::kCelu:
        p_.alpha = a.Float("alpha", 1.0f);
        if (p_.alpha == 0) return args.Error("alpha must not be 0");
        break;
      case UnaryOp::kLeakyRelu: p_.alpha = a.Float("alpha", 0.01f); break;
      case UnaryOp::kThresholdedRelu: p_.alpha = a.Float("alpha", 1.0f); break;
      case UnaryOp::kHardSigmoid:
        p_.alpha = a.Float("alpha", 0.2f);
        p_.beta = a.Float("beta", 0.5f);
        break;
      case UnaryOp::kGelu: {
        std::string approximate = a.String("approximate", "none");
        if (approximate != "none" && approximate != "tanh") return args.Error("unknown approximate '" + approximate + "'");
        if (approximate == "tanh") p_.op = UnaryOp::kGeluTanh;
        break;
      }
      default: break;
    }
    return Status::Ok();
  }

  // Clip: min/max attributes (the kernel form of versions before 11; floats only) or optional
  // scalar inputs.
  Status InitClip(const KernelArgs& args) {
    const Tensor& x = *args.in(0);
    p_.clip_attrs = args.attrs.Has("min") || args.attrs.Has("max");
    if (p_.clip_attrs) {
      p_.alpha = args.attrs.Float("min", -INFINITY);
      p_.beta = args.attrs.Float("max", INFINITY);
      if (!IsFloatType(x.dtype)) return args.Error("integer Clip takes its bounds as inputs (opset 12 or later)");
      return Status::Ok();
    }
    for (size_t i = 1; i <= 2; ++i) {
      const Tensor* b = args.in(i);
      const char* what = i == 1 ? "min" : "max";
      if (b && b->dtype != x.dtype) return DtypeMismatch(args, x.dtype, b->dtype, std::string(what) + " dtype differs from the input's");
      if (b && b->numel > 1) return args.Error(std::string(what) + " must be a scalar");
    }
    lo_input_ = args.in(1) && args.in(1)->numel == 1;
    hi_input_ = args.in(2) && args.in(2)->numel == 1;
    return Status::Ok();
  }

  UnaryParams p_;
  bool lo_input_ = false, hi_input_ = false;
};

// IsNaN / IsInf: float in, bool out.
template <typename T> struct ClassifyFn {
  const T* x;
  uint8_t* y;
  bool is_inf, negative, positive;
  PRECIS_EW_HD void operator()(int64_t i) const {
    auto v = LoadC(x[i]);
    using C = decltype(v);
    if (is_inf) y[i] = (v == C(INFINITY) && positive) || (v == -C(INFINITY) && negative);
    else y[i] = v != v;
  }
};

template <bool kIsInf>
class ClassifyKernel : public Kernel {
 public:
  Status Init(const KernelArgs& args, CudaContext&) override {
    const Tensor *x = args.in(0), *y = args.out(0);
    if (!x || !y) return args.Error("needs one input and one output");
    if (y->dtype != DataType::kBool) return args.Error("output must be bool");
    if (!IsFloatType(x->dtype)) return args.Error(std::string("unsupported dtype ") + DataTypeName(x->dtype));
    if (x->numel != y->numel) return args.Error("input and output sizes differ");
    negative_ = args.attrs.Int("detect_negative", 1) != 0;
    positive_ = args.attrs.Int("detect_positive", 1) != 0;
    return Status::Ok();
  }
  Status Run(const KernelArgs& args, CudaContext& ctx) override {
    const Tensor& x = *args.in(0);
    cudaError_t e = cudaSuccess;
    DispatchFloat(x.dtype, [&](auto t) {
      using T = decltype(t);
      e = Launch(x.numel, ctx.stream, ClassifyFn<T>{x.As<T>(), args.out(0)->data, kIsInf, negative_, positive_});
    });
    PRECIS_CUDA_CHECK(args, e);
    return Status::Ok();
  }

 private:
  bool negative_ = true, positive_ = true;
};

template <UnaryOp kOp> std::unique_ptr<Kernel> MakeUnary() { return std::make_unique<UnaryKernel>(kOp); }

}  // namespace

void AddUnaryKernels(KernelRegistry& r) {
  r.Register("Abs", MakeUnary<UnaryOp::kAbs>);
  r.Register("Neg", MakeUnary<UnaryOp::kNeg>);
  r.Register("Sign", MakeUnary<UnaryOp::kSign>);
  r.Register("Relu", MakeUnary<UnaryOp::kRelu>);
  r.Register("Clip", MakeUnary<UnaryOp::kClip>);
  r.Register("Not", MakeUnary<UnaryOp::kNot>);
  r.Register("BitwiseNot", MakeUnary<UnaryOp::kBitwiseNot>);
  r.Register("Exp", MakeUnary<UnaryOp::kExp>);
  r.Register("Log", MakeUnary<UnaryOp::kLog>);
  r.Register("Sqrt", MakeUnary<UnaryOp::kSqrt>);
  r.Register("Reciprocal", MakeUnary<UnaryOp::kReciprocal>);
  r.Register("Floor", MakeUnary<UnaryOp::kFloor>);
  r.Register("Ceil", MakeUnary<UnaryOp::kCeil>);
  r.Register("Round", MakeUnary<UnaryOp::kRound>);
  r.Register("Sin", MakeUnary<UnaryOp::kSin>);
  r.Register("Cos", MakeUnary<UnaryOp::kCos>);
  r.Register("Tan", MakeUnary<UnaryOp::kTan>);
  r.Register("Asin", MakeUnary<UnaryOp::kAsin>);
  r.Register("Acos", MakeUnary<UnaryOp::kAcos>);
  r.Register("Atan", MakeUnary<UnaryOp::kAtan>);
  r.Register("Sinh", MakeUnary<UnaryOp::kSinh>);
  r.Register("Cosh", MakeUnary<UnaryOp::kCosh>);
  r.Register("Asinh", MakeUnary<UnaryOp::kAsinh>);
  r.Register("Acosh", MakeUnary<UnaryOp::kAcosh>);
  r.Register("Atanh", MakeUnary<UnaryOp::kAtanh>);
  r.Register("Tanh", MakeUnary<UnaryOp::kTanh>);
  r.Register("Erf", MakeUnary<UnaryOp::kErf>);
  r.Register("Sigmoid", MakeUnary<UnaryOp::kSigmoid>);
  r.Register("Softplus", MakeUnary<UnaryOp::kSoftplus>);
  r.Register("Softsign", MakeUnary<UnaryOp::kSoftsign>);
  r.Register("Mish", MakeUnary<UnaryOp::kMish>);
  r.Register("HardSwish", MakeUnary<UnaryOp::kHardSwish>);
  r.Register("Elu", MakeUnary<UnaryOp::kElu>);
  r.Register("Selu", MakeUnary<UnaryOp::kSelu>);
  r.Register("Celu", MakeUnary<UnaryOp::kCelu>);
  r.Register("LeakyRelu", MakeUnary<UnaryOp::kLeakyRelu>);
  r.Register("ThresholdedRelu", MakeUnary<UnaryOp::kThresholdedRelu>);
  r.Register("HardSigmoid", MakeUnary<UnaryOp::kHardSigmoid>);
  r.Register("Gelu", MakeUnary<UnaryOp::kGelu>);
  r.Register("IsNaN", Make<ClassifyKernel<false>>);
  r.Register("IsInf", Make<ClassifyKernel<true>>);
}

}  // namespace precis::rt::cuda::ew
