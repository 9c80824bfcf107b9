// CPU kernels of the family's broadcasting operators with two or more inputs: comparisons
// (bool out), And/Or/Xor, bitwise operators and BitShift, Pow (base and exponent of different
// types), Mod, PRelu, Where and the variadic Max/Min/Sum/Mean. Integer arithmetic wraps
// (two's complement) and never divides by zero: what ONNX leaves undefined is defined here and
// noted at each operator.
#include <cmath>

#include "runtime/cpu/kernels/activation_internal.h"
#include "runtime/cpu/kernels/shape_checks.h"

namespace precis::rt::activation {
namespace {

struct EqualOp { template <typename C> bool operator()(C a, C b) const { return a == b; } };
struct GreaterOp { template <typename C> bool operator()(C a, C b) const { return a > b; } };
struct GreaterOrEqualOp { template <typename C> bool operator()(C a, C b) const { return a >= b; } };
struct LessOp { template <typename C> bool operator()(C a, C b) const { return a < b; } };
struct LessOrEqualOp { template <typename C> bool operator()(C a, C b) const { return a <= b; } };

Status CheckBinary(const KernelArgs& args) {
  if (!args.in(0) || !args.in(1) || !args.out(0)) return args.Error("needs two inputs and one output");
  return Status::Ok();
}

std::string DTypeText(const Tensor& t) { return DataTypeName(t.dtype); }

// Comparisons: numeric (and, for Equal, bool) operands of one dtype, bool output.
template <typename Op>
class CompareKernel : public Kernel {
 public:
  Status Init(const KernelArgs& args, const CpuContext&) override {
    PRECIS_RETURN_IF_ERROR(CheckBinary(args));
    const Tensor &a = *args.in(0), &b = *args.in(1), &y = *args.out(0);
    if (a.dtype != b.dtype || y.dtype != DataType::kBool || !DispatchAny(a.dtype, [](auto) {}))
      return args.Error("needs two operands of one numeric dtype and a bool output, got " + DTypeText(a) + " and " + DTypeText(b));
    PRECIS_RETURN_IF_ERROR(CheckBroadcast(args, y.dims, {a.dims, b.dims}));
    rb_.Init(y.dims, {a.dims, b.dims});
    return Status::Ok();
  }
  Status Run(const KernelArgs& args, CpuContext&) override {
    const Tensor &a = *args.in(0), &b = *args.in(1);
    DispatchAny(a.dtype, [&](auto tag) {
      using T = decltype(tag);
      BinaryLoop(rb_, a.As<T>(), b.As<T>(), args.out(0)->As<uint8_t>(),
                 [](T u, T v) -> uint8_t { return Op()(Load(u), Load(v)); });
    });
    return Status::Ok();
  }

 private:
  RowBroadcast rb_;
};

// Binary ops whose operands and output share one dtype, drawn from a dispatch class.
enum class Types { kBool, kInteger, kUnsigned, kNumeric };

template <Types kTypes, typename Fn>
bool DispatchTypes(DataType t, Fn&& fn) {
  if constexpr (kTypes == Types::kBool) {
    if (t != DataType::kBool) return false;
    fn(uint8_t{});
    return true;
  } else if constexpr (kTypes == Types::kInteger) {
    return DispatchInteger(t, fn);
  } else if constexpr (kTypes == Types::kUnsigned) {
    switch (t) {
      case DataType::kU8: fn(uint8_t{}); return true;
      case DataType::kU16: fn(uint16_t{}); return true;
      case DataType::kU32: fn(uint32_t{}); return true;
      case DataType::kU64: fn(uint64_t{}); return true;
      default: return false;
    }
  } else {
    return DispatchNumeric(t, fn);
  }
}

struct AndOp { template <typename T> T operator()(T a, T b) const { return T(a != 0 && b != 0); } };
struct OrOp { template <typename T> T operator()(T a, T b) const { return T(a != 0 || b != 0); } };
struct XorOp { template <typename T> T operator()(T a, T b) const { return T((a != 0) != (b != 0)); } };
struct BitAndOp { template <typename T> T operator()(T a, T b) const { return T(a & b); } };
struct BitOrOp { template <typename T> T operator()(T a, T b) const { return T(a | b); } };
struct BitXorOp { template <typename T> T operator()(T a, T b) const { return T(a ^ b); } };

// Shifts by the type's width or more give 0 (C++ leaves them undefined).
struct BitShiftOp {
  bool left = true;
  Status Init(const KernelArgs& args) {
    std::string d = args.attrs.String("direction", "");
    if (d != "LEFT" && d != "RIGHT") return args.Error("direction must be LEFT or RIGHT, got '" + d + "'");
    left = d == "LEFT";
    return Status::Ok();
  }
  template <typename T> T operator()(T a, T b) const {
    if (b >= T(sizeof(T) * 8)) return 0;
    return left ? T(WrapOf<T>(a) << b) : T(a >> b);
  }
};

// Mod: fmod=1 keeps the dividend's sign (C fmod), fmod=0 the divisor's (Python). Integer
// division by zero gives 0, and MIN % -1 gives 0.
struct ModOp {
  bool fmod = false;
  Status Init(const KernelArgs& args) {
    fmod = args.attrs.Int("fmod", 0) != 0;
    return Status::Ok();
  }
  template <typename C> C operator()(C a, C b) const {
    C r;
    if constexpr (std::is_integral_v<C>) {
      if (b == 0) return 0;
      if constexpr (std::is_signed_v<C>)
        if (b == C(-1)) return 0;
      r = C(a % b);
    } else {
      r = std::fmod(a, b);
    }
    if (!fmod && r != 0 && ((r < 0) != (b < 0))) r = C(r + b);
    return r;
  }
};

// Ops with no attributes get a no-op Init through this wrapper.
template <typename Op>
struct WithInit : Op {
  Status Init(const KernelArgs&) { return Status::Ok(); }
};

template <typename Op, Types kTypes>
class SameTypeBinaryKernel : public Kernel {
 public:
  Status Init(const KernelArgs& args, const CpuContext&) override {
    PRECIS_RETURN_IF_ERROR(CheckBinary(args));
    const Tensor &a = *args.in(0), &b = *args.in(1), &y = *args.out(0);
    if (a.dtype != b.dtype || a.dtype != y.dtype || !DispatchTypes<kTypes>(a.dtype, [](auto) {}))
      return args.Error("unsupported operand dtypes " + DTypeText(a) + " and " + DTypeText(b));
    std::vector<int64_t> b_dims = b.dims;
    if constexpr (requires { Op::OperandDims(args, b_dims); }) Op::OperandDims(args, b_dims);
    PRECIS_RETURN_IF_ERROR(CheckBroadcast(args, y.dims, {a.dims, b_dims}));
    rb_.Init(y.dims, {a.dims, b_dims});
    return op_.Init(args);
  }
  Status Run(const KernelArgs& args, CpuContext&) override {
    const Tensor &a = *args.in(0), &b = *args.in(1);
    DispatchTypes<kTypes>(a.dtype, [&](auto tag) {
      using T = decltype(tag);
      BinaryLoop(rb_, a.As<T>(), b.As<T>(), args.out(0)->As<T>(), [&](T u, T v) { return Store<T>(op_(Load(u), Load(v))); });
    });
    return Status::Ok();
  }

 private:
  RowBroadcast rb_;
  Op op_;
};

// PRelu: y = x < 0 ? slope * x : x, slope broadcast to x. Integer products wrap.
struct PReluOp {
  Status Init(const KernelArgs&) { return Status::Ok(); }
  // "slope_per_channel" (the kernel form of versions before 7): a 1-D slope of X's dim-1 size is
  // per channel: shape it [C, 1, ..., 1].
  static void OperandDims(const KernelArgs& args, std::vector<int64_t>& slope) {
    const Tensor& x = *args.in(0);
    if (args.attrs.Int("slope_per_channel", 0) != 0 && slope.size() == 1 && x.rank() >= 2 && slope[0] == x.dims[1])
      slope.resize(size_t(x.rank() - 1), 1);
  }
  template <typename C> C operator()(C x, C slope) const {
    if constexpr (std::is_integral_v<C>) return x < 0 ? WrapMul(slope, x) : x;
    else return x < C(0) ? slope * x : x;
  }
};

// Integer power by squaring, wrapping. Negative exponents: 1 / base^n truncated, i.e. 1 for base
// 1, +-1 for base -1, and 0 otherwise (base 0 included, where numpy raises).
template <typename T>
T IntPow(T base, bool negative, uint64_t n) {
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

// Pow base types: float types, int32, int64.
template <typename Fn>
bool DispatchPowBase(DataType t, Fn&& fn) {
  if (t == DataType::kI32) return fn(int32_t{}), true;
  if (t == DataType::kI64) return fn(int64_t{}), true;
  return DispatchFloat(t, fn);
}

// Pow: the output has the base's type. Float bases compute in double; integer bases with an
// integer exponent stay exact (wrapping); integer bases with a float exponent compute in
// double and convert back by truncation (saturating, NaN -> 0), as numpy's
// power(int, float).astype(int) does for representable results.
class PowKernel : public Kernel {
 public:
  Status Init(const KernelArgs& args, const CpuContext&) override {
    PRECIS_RETURN_IF_ERROR(CheckBinary(args));
    const Tensor &a = *args.in(0), &b = *args.in(1), &y = *args.out(0);
    if (a.dtype != y.dtype || !DispatchPowBase(a.dtype, [](auto) {}) || !DispatchNumeric(b.dtype, [](auto) {}))
      return args.Error("unsupported base/exponent dtypes " + DTypeText(a) + " and " + DTypeText(b));
    PRECIS_RETURN_IF_ERROR(CheckBroadcast(args, y.dims, {a.dims, b.dims}));
    rb_.Init(y.dims, {a.dims, b.dims});
    return Status::Ok();
  }
  Status Run(const KernelArgs& args, CpuContext&) override {
    const Tensor &a = *args.in(0), &b = *args.in(1);
    DispatchPowBase(a.dtype, [&](auto base_tag) {
      using T = decltype(base_tag);
      DispatchNumeric(b.dtype, [&](auto exp_tag) {
        using E = decltype(exp_tag);
        BinaryLoop(rb_, a.As<T>(), b.As<E>(), args.out(0)->As<T>(), [](T u, E v) { return Pow(u, v); });
      });
    });
    return Status::Ok();
  }

 private:
  template <typename T, typename E>
  static T Pow(T base, E exponent) {
    auto x = Load(base);
    auto e = Load(exponent);
    if constexpr (std::is_integral_v<T> && std::is_integral_v<decltype(e)>) {
      bool negative = false;
      if constexpr (std::is_signed_v<E>) negative = e < 0;
      uint64_t n = negative ? uint64_t(0) - uint64_t(e) : uint64_t(e);
      return IntPow<T>(x, negative, n);
    } else {
      double p = std::pow(double(x), double(e));
      if constexpr (std::is_integral_v<T>) return SaturateCast<T>(p);
      else return Store<T>(p);
    }
  }
  RowBroadcast rb_;
};

// Where: out = cond ? x : y, three-way broadcast.
class WhereKernel : public Kernel {
 public:
  Status Init(const KernelArgs& args, const CpuContext&) override {
    const Tensor *c = args.in(0), *x = args.in(1), *y = args.in(2), *out = args.out(0);
    if (!c || !x || !y || !out) return args.Error("needs three inputs and one output");
    if (c->dtype != DataType::kBool) return args.Error("condition must be bool");
    if (x->dtype != y->dtype || x->dtype != out->dtype || !DispatchAny(x->dtype, [](auto) {}))
      return args.Error("X and Y must share a supported dtype, got " + DTypeText(*x) + " and " + DTypeText(*y));
    PRECIS_RETURN_IF_ERROR(CheckBroadcast(args, out->dims, {c->dims, x->dims, y->dims}));
    rb_.Init(out->dims, {c->dims, x->dims, y->dims});
    return Status::Ok();
  }
  Status Run(const KernelArgs& args, CpuContext&) override {
    const uint8_t* pc = args.in(0)->As<uint8_t>();
    DispatchAny(args.out(0)->dtype, [&](auto tag) {
      using T = decltype(tag);
      const T* px = args.in(1)->As<T>();
      const T* py = args.in(2)->As<T>();
      T* po = args.out(0)->As<T>();
      const int64_t len = rb_.row_len(), sc = rb_.Step(0), sx = rb_.Step(1), sy = rb_.Step(2);
      for (int64_t r = 0; r < rb_.rows(); ++r) {
        const uint8_t* c = pc + rb_.Base(0, r);
        const T* x = px + rb_.Base(1, r);
        const T* y = py + rb_.Base(2, r);
        T* o = po + r * len;
        for (int64_t j = 0; j < len; ++j) o[j] = c[j * sc] ? x[j * sx] : y[j * sy];
      }
    });
    return Status::Ok();
  }

 private:
  RowBroadcast rb_;
};

// Max and Min propagate NaN (numpy maximum/minimum).
struct MaxOp {
  template <typename C> C operator()(C a, C b) const { return b > a || b != b ? b : a; }
};
struct MinOp {
  template <typename C> C operator()(C a, C b) const { return b < a || b != b ? b : a; }
};
struct SumOp {
  template <typename C> C operator()(C a, C b) const {
    if constexpr (std::is_integral_v<C>) return WrapAdd(a, b);
    else return a + b;
  }
};

// Max, Min, Sum, Mean over 1..N broadcast inputs, accumulating in the compute type (float for
// 16-bit floats) and rounding once.
template <typename Op, bool kMean, bool kFloatOnly>
class VariadicKernel : public Kernel {
 public:
  Status Init(const KernelArgs& args, const CpuContext&) override {
    const Tensor* y = args.out(0);
    if (!y || args.inputs.empty()) return args.Error("needs at least one input and one output");
    std::vector<std::vector<int64_t>> dims;
    for (size_t k = 0; k < args.inputs.size(); ++k) {
      const Tensor* x = args.in(k);
      if (!x) return args.Error("input " + std::to_string(k) + " is missing");
      if (x->dtype != y->dtype) return args.Error("input " + std::to_string(k) + " has dtype " + DTypeText(*x) + ", output " + DTypeText(*y));
      dims.push_back(x->dims);
    }
    bool ok = kFloatOnly ? DispatchFloat(y->dtype, [](auto) {}) : DispatchNumeric(y->dtype, [](auto) {});
    if (!ok) return args.Error("unsupported dtype " + DTypeText(*y));
    PRECIS_RETURN_IF_ERROR(CheckBroadcast(args, y->dims, dims));
    rb_.Init(y->dims, dims);
    bases_.assign(dims.size(), 0);
    return Status::Ok();
  }
  Status Run(const KernelArgs& args, CpuContext&) override {
    auto body = [&](auto tag) {
      using T = decltype(tag);
      const size_t n = args.inputs.size();
      T* py = args.out(0)->As<T>();
      const int64_t len = rb_.row_len();
      for (int64_t r = 0; r < rb_.rows(); ++r) {
        for (size_t k = 0; k < n; ++k) bases_[k] = rb_.Base(k, r);
        for (int64_t j = 0; j < len; ++j) {
          auto acc = Load(args.in(0)->As<T>()[bases_[0] + j * rb_.Step(0)]);
          for (size_t k = 1; k < n; ++k) acc = Op()(acc, Load(args.in(k)->As<T>()[bases_[k] + j * rb_.Step(k)]));
          if constexpr (kMean) acc = acc / decltype(acc)(n);
          py[r * len + j] = Store<T>(acc);
        }
      }
    };
    if constexpr (kFloatOnly) DispatchFloat(args.out(0)->dtype, body);
    else DispatchNumeric(args.out(0)->dtype, body);
    return Status::Ok();
  }

 private:
  RowBroadcast rb_;
  std::vector<int64_t> bases_;  // per-input row offsets, sized in Init so Run does not allocate
};

}  // namespace

void AddBinaryKernels(KernelRegistry& r) {
  r.Register("Equal", Make<CompareKernel<EqualOp>>);
  r.Register("Greater", Make<CompareKernel<GreaterOp>>);
  r.Register("GreaterOrEqual", Make<CompareKernel<GreaterOrEqualOp>>);
  r.Register("Less", Make<CompareKernel<LessOp>>);
  r.Register("LessOrEqual", Make<CompareKernel<LessOrEqualOp>>);
  r.Register("And", Make<SameTypeBinaryKernel<WithInit<AndOp>, Types::kBool>>);
  r.Register("Or", Make<SameTypeBinaryKernel<WithInit<OrOp>, Types::kBool>>);
  r.Register("Xor", Make<SameTypeBinaryKernel<WithInit<XorOp>, Types::kBool>>);
  r.Register("BitwiseAnd", Make<SameTypeBinaryKernel<WithInit<BitAndOp>, Types::kInteger>>);
  r.Register("BitwiseOr", Make<SameTypeBinaryKernel<WithInit<BitOrOp>, Types::kInteger>>);
  r.Register("BitwiseXor", Make<SameTypeBinaryKernel<WithInit<BitXorOp>, Types::kInteger>>);
  r.Register("BitShift", Make<SameTypeBinaryKernel<BitShiftOp, Types::kUnsigned>>);
  r.Register("Mod", Make<SameTypeBinaryKernel<ModOp, Types::kNumeric>>);
  r.Register("PRelu", Make<SameTypeBinaryKernel<PReluOp, Types::kNumeric>>);
  r.Register("Pow", Make<PowKernel>);
  r.Register("Where", Make<WhereKernel>);
  r.Register("Max", Make<VariadicKernel<MaxOp, false, false>>);
  r.Register("Min", Make<VariadicKernel<MinOp, false, false>>);
  r.Register("Sum", Make<VariadicKernel<SumOp, false, true>>);
  r.Register("Mean", Make<VariadicKernel<SumOp, true, true>>);
}

}  // namespace precis::rt::activation
