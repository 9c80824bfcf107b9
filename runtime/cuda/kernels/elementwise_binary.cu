// Broadcasting binary arithmetic on CUDA: Add, Sub, Mul, Div, Mod, PRelu (numeric; the output
// may be a different float width than the operands: a fused cast), And/Or/Xor (bool),
// BitwiseAnd/Or/Xor (integers), BitShift (unsigned), and Pow (base f32/f16/bf16/f64/i32/i64,
// exponent of any numeric dtype). Integer arithmetic wraps and never traps, as the CPU kernels
// define what ONNX leaves undefined: x / 0 = 0, MIN / -1 = MIN, x % 0 = 0, MIN % -1 = 0, shifts by
// the width or more give 0. The CPU kernels (elementwise.cc, activation_binary.cc) are the
// specification.
#include <cmath>

#include "runtime/cuda/kernels/elementwise.cuh"

namespace precis::rt::cuda::ew {
namespace {

enum class BinaryOp : int { kAdd, kSub, kMul, kDiv, kMod, kPRelu, kAnd, kOr, kXor, kBitAnd, kBitOr, kBitXor, kShiftLeft, kShiftRight };

struct ArithParams {
  BinaryOp op = BinaryOp::kAdd;
  bool fmod = false;  // Mod: the dividend's sign (C fmod) instead of the divisor's (Python)
};

template <typename C> PRECIS_EW_HD C IntDiv(C a, C b) {
  if (b == 0) return 0;
  if constexpr (std::is_signed_v<C>)
    if (a == std::numeric_limits<C>::lowest() && b == C(-1)) return a;
  return C(a / b);
}

template <typename C> PRECIS_EW_HD C ModOf(C a, C b, bool fmod) {
  C r;
  if constexpr (std::is_integral_v<C>) {
    if (b == 0) return 0;
    if constexpr (std::is_signed_v<C>)
      if (b == C(-1)) return 0;
    r = C(a % b);
  } else if constexpr (std::is_same_v<C, float>) {
    r = fmodf(a, b);
  } else {
    r = ::fmod(a, b);
  }
  if (!fmod && r != 0 && IsNegative(r) != IsNegative(b)) r = C(r + b);
  return r;
}

template <typename C> PRECIS_EW_HD C Shift(C a, C b, bool left) {
  if (b >= C(sizeof(C) * 8)) return 0;
  return left ? C(WrapOf<C>(a) << b) : C(a >> b);
}

#define PRECIS_EW_ZIP(expr)      \
  for (int j = 0; j < V; ++j) {  \
    const C x = a[j], y = b[j];  \
    r[j] = (expr);               \
  }                              \
  break

struct ArithOp {
  using Params = ArithParams;
  template <typename C> using Result = C;
  template <int V, typename C> static PRECIS_EW_HD void Apply(const Params& p, const C (&a)[V], const C (&b)[V], C (&r)[V]) {
    if constexpr (std::is_integral_v<C>) {
      switch (p.op) {
        case BinaryOp::kAdd: PRECIS_EW_ZIP(WrapAdd(x, y));
        case BinaryOp::kSub: PRECIS_EW_ZIP(WrapSub(x, y));
        case BinaryOp::kMul: PRECIS_EW_ZIP(WrapMul(x, y));
        case BinaryOp::kDiv: PRECIS_EW_ZIP(IntDiv(x, y));
        case BinaryOp::kMod: PRECIS_EW_ZIP(ModOf(x, y, p.fmod));
        case BinaryOp::kPRelu: PRECIS_EW_ZIP(IsNegative(x) ? WrapMul(y, x) : x);
        case BinaryOp::kAnd: PRECIS_EW_ZIP(C(x != 0 && y != 0));
        case BinaryOp::kOr: PRECIS_EW_ZIP(C(x != 0 || y != 0));
        case BinaryOp::kXor: PRECIS_EW_ZIP(C((x != 0) != (y != 0)));
        case BinaryOp::kBitAnd: PRECIS_EW_ZIP(C(x & y));
        case BinaryOp::kBitOr: PRECIS_EW_ZIP(C(x | y));
        case BinaryOp::kBitXor: PRECIS_EW_ZIP(C(x ^ y));
        case BinaryOp::kShiftLeft: PRECIS_EW_ZIP(Shift(x, y, true));
        case BinaryOp::kShiftRight: PRECIS_EW_ZIP(Shift(x, y, false));
      }
    } else {
      switch (p.op) {
        case BinaryOp::kAdd: PRECIS_EW_ZIP(x + y);
        case BinaryOp::kSub: PRECIS_EW_ZIP(x - y);
        case BinaryOp::kMul: PRECIS_EW_ZIP(x * y);
        case BinaryOp::kDiv: PRECIS_EW_ZIP(x / y);
        case BinaryOp::kMod: PRECIS_EW_ZIP(ModOf(x, y, p.fmod));
        case BinaryOp::kPRelu: PRECIS_EW_ZIP(x < C(0) ? y * x : x);
        default:  // integer-only ops: refused at Init
          for (int j = 0; j < V; ++j) r[j] = a[j];
          break;
      }
    }
  }
};
#undef PRECIS_EW_ZIP

enum class Operands { kNumeric, kBool, kInteger, kUnsigned };

Operands OperandsOf(BinaryOp op) {
  switch (op) {
    case BinaryOp::kAnd:
    case BinaryOp::kOr:
    case BinaryOp::kXor: return Operands::kBool;
    case BinaryOp::kBitAnd:
    case BinaryOp::kBitOr:
    case BinaryOp::kBitXor: return Operands::kInteger;
    case BinaryOp::kShiftLeft:
    case BinaryOp::kShiftRight: return Operands::kUnsigned;
    default: return Operands::kNumeric;
  }
}

class BinaryKernel : public Kernel {
 public:
  explicit BinaryKernel(BinaryOp op) { p_.op = op; }

  Status Init(const KernelArgs& args, CudaContext&) override {
    const Tensor *a = args.in(0), *b = args.in(1), *y = args.out(0);
    if (!a || !b || !y) return args.Error("needs two inputs and one output");
    if (a->dtype != b->dtype)
      return DtypeMismatch(args, a->dtype, b->dtype, std::string("operand dtypes differ: ") + DataTypeName(a->dtype) + " and " + DataTypeName(b->dtype));
    Operands kind = OperandsOf(p_.op);
    bool ok = false;
    switch (kind) {
      case Operands::kNumeric: ok = IsNumericType(a->dtype); break;
      case Operands::kBool: ok = a->dtype == DataType::kBool; break;
      case Operands::kInteger: ok = IsIntType(a->dtype); break;
      case Operands::kUnsigned: ok = IsUnsignedType(a->dtype); break;
    }
    if (!ok) return args.Error(std::string("unsupported operand dtype ") + DataTypeName(a->dtype));
    if (kind == Operands::kNumeric ? !PairSupported(a->dtype, y->dtype) : a->dtype != y->dtype)
      return args.Error(std::string("output dtype ") + DataTypeName(y->dtype) + " differs from the operands' " + DataTypeName(a->dtype));
    std::vector<int64_t> b_dims = b->dims;
    if (p_.op == BinaryOp::kPRelu) {
      // "slope_per_channel" (versions before 7): a 1-D slope of X's dim-1 size is per channel.
      if (args.attrs.Int("slope_per_channel", 0) != 0 && b_dims.size() == 1 && a->rank() >= 2 && b_dims[0] == a->dims[1])
        b_dims.resize(size_t(a->rank() - 1), 1);
    }
    if (p_.op == BinaryOp::kMod) p_.fmod = args.attrs.Int("fmod", 0) != 0;
    if (p_.op == BinaryOp::kShiftLeft) {
      std::string d = args.attrs.String("direction", "");
      if (d != "LEFT" && d != "RIGHT") return args.Error("direction must be LEFT or RIGHT, got '" + d + "'");
      if (d == "RIGHT") p_.op = BinaryOp::kShiftRight;
    }
    return PlanBroadcast(args, y->dims, {a->dims, b_dims}, &plan_);
  }

  Status Run(const KernelArgs& args, CudaContext& ctx) override {
    const Tensor &a = *args.in(0), &b = *args.in(1);
    Tensor& y = *args.out(0);
    cudaError_t e = cudaSuccess;
    DispatchPair(a.dtype, y.dtype, [&](auto t, auto u) {
      using T = decltype(t);
      using Y = decltype(u);
      e = LaunchBinary<ArithOp>(plan_, a.As<T>(), b.As<T>(), y.As<Y>(), p_, ctx.stream);
    });
    PRECIS_CUDA_CHECK(args, e);
    return Status::Ok();
  }

 private:
  ArithParams p_;
  BroadcastPlan plan_;
};

// ---- Pow ----------------------------------------------------------------------------------------

// One element of the exponent, read through its run-time dtype: integers keep sign and
// magnitude (exact integer powers), every value also as double.
struct Exponent {
  bool is_int = false, negative = false;
  uint64_t magnitude = 0;
  double value = 0;
};

template <typename E> PRECIS_EW_HD Exponent MakeExponent(E e) {
  Exponent x;
  auto v = LoadC(e);
  x.value = double(v);
  if constexpr (std::is_integral_v<E>) {
    x.is_int = true;
    x.negative = IsNegative(e);
    x.magnitude = x.negative ? uint64_t(0) - uint64_t(e) : uint64_t(e);
  }
  return x;
}

PRECIS_EW_HD Exponent LoadExponent(const void* p, DataType t, int64_t i) {
  switch (t) {
    case DataType::kF32: return MakeExponent(static_cast<const float*>(p)[i]);
    case DataType::kF16: return MakeExponent(static_cast<const half*>(p)[i]);
    case DataType::kBF16: return MakeExponent(static_cast<const bf16*>(p)[i]);
    case DataType::kF64: return MakeExponent(static_cast<const double*>(p)[i]);
    case DataType::kI8: return MakeExponent(static_cast<const int8_t*>(p)[i]);
    case DataType::kU8: return MakeExponent(static_cast<const uint8_t*>(p)[i]);
    case DataType::kI16: return MakeExponent(static_cast<const int16_t*>(p)[i]);
    case DataType::kU16: return MakeExponent(static_cast<const uint16_t*>(p)[i]);
    case DataType::kI32: return MakeExponent(static_cast<const int32_t*>(p)[i]);
    case DataType::kU32: return MakeExponent(static_cast<const uint32_t*>(p)[i]);
    case DataType::kI64: return MakeExponent(static_cast<const int64_t*>(p)[i]);
    default: return MakeExponent(static_cast<const uint64_t*>(p)[i]);
  }
}

// Integer power by squaring, wrapping. Negative exponents: 1 / base^n truncated (1 for base 1,
// +-1 for base -1, else 0, base 0 included).
template <typename T> PRECIS_EW_HD T IntPow(T base, bool negative, uint64_t n) {
  if (negative) {
    if (base == 1) return 1;
    if constexpr (std::is_signed_v<T>)
      if (base == -1) return (n & 1) ? T(-1) : T(1);
    return 0;
  }
  using W = WrapOf<T>;
  W result = 1, b = W(base);
  for (; n; n >>= 1) {
    if (n & 1) result *= b;
    b *= b;
  }
  return T(result);
}

// Out of line: one copy of the double pow for every Pow kernel.
__host__ __device__ __noinline__ double PowD(double x, double e) { return ::pow(x, e); }

template <typename T> inline constexpr bool kPowBase =
    std::is_same_v<T, float> || std::is_same_v<T, half> || std::is_same_v<T, bf16> || std::is_same_v<T, double> ||
    std::is_same_v<T, int32_t> || std::is_same_v<T, int64_t>;

// y = base ^ exponent, the output in the base's type (or another float width). Float bases
// compute in double; integer bases stay exact with an integer exponent and otherwise convert
// the double result back by saturating truncation.
template <typename T, typename Y, typename I> struct PowFn {
  const T* a;
  const void* b;
  DataType exponent_type;
  Y* y;
  BcastIndex<I, 2> idx;
  PRECIS_EW_HD void operator()(int64_t i) const {
    I off[2];
    idx.Map(I(i), off);
    auto x = LoadC(a[off[0]]);
    Exponent e = LoadExponent(b, exponent_type, int64_t(off[1]));
    if constexpr (std::is_integral_v<T>) {
      if (e.is_int) y[i] = Y(IntPow<T>(x, e.negative, e.magnitude));
      else y[i] = Y(SaturateCast<T>(PowD(double(x), e.value)));
    } else {
      y[i] = StoreC<Y>(PowD(double(x), e.value));
    }
  }
};

bool IsPowBase(DataType t) { return IsFloatType(t) || t == DataType::kI32 || t == DataType::kI64; }

class PowKernel : public Kernel {
 public:
  Status Init(const KernelArgs& args, CudaContext&) override {
    const Tensor *a = args.in(0), *b = args.in(1), *y = args.out(0);
    if (!a || !b || !y) return args.Error("needs two inputs and one output");
    if (!IsPowBase(a->dtype) || !IsNumericType(b->dtype) || !PairSupported(a->dtype, y->dtype))
      return args.Error(std::string("unsupported base/exponent/output dtypes ") + DataTypeName(a->dtype) + ", " + DataTypeName(b->dtype) +
                        " and " + DataTypeName(y->dtype));
    return PlanBroadcast(args, y->dims, {a->dims, b->dims}, &plan_);
  }
  Status Run(const KernelArgs& args, CudaContext& ctx) override {
    const Tensor &a = *args.in(0), &b = *args.in(1);
    Tensor& y = *args.out(0);
    cudaError_t e = cudaSuccess;
    DispatchPair(a.dtype, y.dtype, [&](auto t, auto u) {
      using T = decltype(t);
      using Y = decltype(u);
      if constexpr (kPowBase<T>) {
        if (plan_.narrow)
          e = Launch(plan_.numel, ctx.stream, PowFn<T, Y, uint32_t>{a.As<T>(), b.data, b.dtype, y.As<Y>(), plan_.Index<uint32_t, 2>()});
        else
          e = Launch(plan_.numel, ctx.stream, PowFn<T, Y, int64_t>{a.As<T>(), b.data, b.dtype, y.As<Y>(), plan_.Index<int64_t, 2>()});
      }
    });
    PRECIS_CUDA_CHECK(args, e);
    return Status::Ok();
  }

 private:
  BroadcastPlan plan_;
};

template <BinaryOp kOp> std::unique_ptr<Kernel> MakeBinary() { return std::make_unique<BinaryKernel>(kOp); }

}  // namespace

void AddBinaryKernels(KernelRegistry& r) {
  r.Register("Add", MakeBinary<BinaryOp::kAdd>);
  r.Register("Sub", MakeBinary<BinaryOp::kSub>);
  r.Register("Mul", MakeBinary<BinaryOp::kMul>);
  r.Register("Div", MakeBinary<BinaryOp::kDiv>);
  r.Register("Mod", MakeBinary<BinaryOp::kMod>);
  r.Register("PRelu", MakeBinary<BinaryOp::kPRelu>);
  r.Register("And", MakeBinary<BinaryOp::kAnd>);
  r.Register("Or", MakeBinary<BinaryOp::kOr>);
  r.Register("Xor", MakeBinary<BinaryOp::kXor>);
  r.Register("BitwiseAnd", MakeBinary<BinaryOp::kBitAnd>);
  r.Register("BitwiseOr", MakeBinary<BinaryOp::kBitOr>);
  r.Register("BitwiseXor", MakeBinary<BinaryOp::kBitXor>);
  r.Register("BitShift", MakeBinary<BinaryOp::kShiftLeft>);  // direction read at Init
  r.Register("Pow", Make<PowKernel>);
}

}  // namespace precis::rt::cuda::ew
