// CPU kernels that convert or pass values through: Cast (also CastLike, which the compiler
// lowers to the same kernel: the target type is the output tensor's dtype), Clip, Identity and
// inference Dropout.
//
// Cast rules: float -> integer truncates toward zero; NaN gives 0 and out-of-range values
// saturate (ONNX leaves both undefined). Integer -> integer wraps (two's complement), as numpy.
// Anything -> bool is "!= 0" (NaN is true), bool -> anything 0 or 1. Conversions to f16/bf16
// round to nearest even once: from f64 and from integers the value is first rounded to float
// with round-to-odd, which makes the second rounding exact (float keeps more than two extra bits).
#include <cmath>

#include "runtime/base/small_types.h"
#include "runtime/cpu/kernels/activation_internal.h"
#include "runtime/cpu/kernels/shape_checks.h"
#include "runtime/kernels/dropout_mode.h"

namespace precis::rt::activation {
namespace {

// Storage tag for bool, distinct from uint8_t so that casts to bool normalize to 0/1.
struct Bool { uint8_t v; };

template <typename Fn>
bool DispatchCastType(DataType t, Fn&& fn) {
  if (t == DataType::kBool) return fn(Bool{}), true;
  return DispatchNumeric(t, fn);
}

// double -> float rounding to odd: truncate, then set the last bit when inexact.
inline float RoundToOddFloat(double d) {
  if (std::isnan(d) || std::isinf(d)) return float(d);
  constexpr float kMax = std::numeric_limits<float>::max();  // odd: rounds on to infinity
  if (std::fabs(d) > double(kMax)) return d > 0 ? kMax : -kMax;
  float f = static_cast<float>(d);
  if (double(f) == d) return f;
  if (std::fabs(double(f)) > std::fabs(d)) f = std::nextafter(f, 0.0f);
  return BitsFloat(FloatBits(f) | 1u);
}

// The source value in a type that converts to any destination without loss: integers stay
// integers, 16-bit floats become float.
template <typename S> auto Widen(S s) {
  if constexpr (std::is_same_v<S, Bool>) return uint8_t(s.v != 0);
  else return Load(s);
}

template <typename D, typename S>
D Convert(S s) {
  auto v = Widen(s);
  using V = decltype(v);
  if constexpr (std::is_same_v<D, Bool>) {
    return Bool{uint8_t(v != V(0))};
  } else if constexpr (std::is_same_v<D, Half> || std::is_same_v<D, BFloat16>) {
    if constexpr (std::is_same_v<V, float>) return FromFloat<D>(v);
    else return FromFloat<D>(RoundToOddFloat(double(v)));
  } else if constexpr (std::is_integral_v<D> && std::is_floating_point_v<V>) {
    return SaturateCast<D>(v);
  } else {
    return static_cast<D>(v);  // int -> int wraps (C++20), int/float -> float rounds to nearest
  }
}

class CastKernel : public Kernel {
 public:
  Status Init(const KernelArgs& args, const CpuContext&) override {
    const Tensor *x = args.in(0), *y = args.out(0);
    if (!x || !y) return args.Error("needs an input and an output");
    auto castable = [](DataType t) { return IsSmallType(t) || (t != DataType::kBool && DispatchCastType(t, [](auto) {})); };
    small_ = IsSmallType(x->dtype) || IsSmallType(y->dtype);
    if (!(small_ ? castable(x->dtype) && castable(y->dtype) : DispatchCastType(x->dtype, [](auto) {}) && DispatchCastType(y->dtype, [](auto) {})))
      return args.Error(std::string("unsupported cast from ") + DataTypeName(x->dtype) + " to " + DataTypeName(y->dtype));
    saturate_ = args.attrs.Int("saturate", 1) != 0;
    std::string round = args.attrs.String("round_mode", "up");
    rounding_ = round == "down" ? E8M0Rounding::kDown : round == "nearest" ? E8M0Rounding::kNearest : E8M0Rounding::kUp;
    return CheckSameDims(args, *x, *y);
  }
  Status Run(const KernelArgs& args, CpuContext&) override {
    const Tensor& x = *args.in(0);
    Tensor& y = *args.out(0);
    if (x.dtype == y.dtype) {
      if (x.data != y.data && y.bytes > 0) std::memcpy(y.data, x.data, y.bytes);
      return Status::Ok();
    }
    if (small_) {  // through double: exact for every value of these types and of the wider ones
      for (int64_t i = 0; i < x.numel; ++i) {
        double v = IsSmallType(x.dtype) ? SmallToDouble(x.dtype, x.data[i]) : ReadAt(x, i);
        if (IsSmallType(y.dtype)) y.data[i] = SmallFromDouble(y.dtype, v, saturate_, rounding_);
        else WriteAt(y, i, v);
      }
      return Status::Ok();
    }
    DispatchCastType(x.dtype, [&](auto src_tag) {
      using S = decltype(src_tag);
      DispatchCastType(y.dtype, [&](auto dst_tag) {
        using D = decltype(dst_tag);
        const S* px = x.As<S>();
        D* py = y.As<D>();
        for (int64_t i = 0; i < x.numel; ++i) py[i] = Convert<D>(px[i]);
      });
    });
    return Status::Ok();
  }

 private:
  bool small_ = false, saturate_ = true;
  E8M0Rounding rounding_ = E8M0Rounding::kUp;
};

// BitCast: the input's bytes as the output's type (the compiler checked that the widths agree).
class BitCastKernel : public Kernel {
 public:
  Status Init(const KernelArgs& args, const CpuContext&) override {
    const Tensor *x = args.in(0), *y = args.out(0);
    if (!x || !y) return args.Error("needs an input and an output");
    if (DataTypeSize(x->dtype) == 0 || DataTypeSize(x->dtype) != DataTypeSize(y->dtype) || x->bytes != y->bytes)
      return args.Error(std::string("cannot reinterpret ") + DataTypeName(x->dtype) + " as " + DataTypeName(y->dtype));
    return CheckSameDims(args, *x, *y);
  }
  Status Run(const KernelArgs& args, CpuContext&) override {
    const Tensor& x = *args.in(0);
    Tensor& y = *args.out(0);
    if (x.data != y.data && y.bytes > 0) std::memcpy(y.data, x.data, y.bytes);
    return Status::Ok();
  }
};

// Clip: min/max attributes (the kernel form of versions before 11) or optional scalar inputs 1
// and 2. Applies
// max(x, min) then min(., max), so min > max gives max everywhere (as ONNX specifies); NaN stays.
class ClipKernel : public Kernel {
 public:
  Status Init(const KernelArgs& args, const CpuContext&) override {
    const Tensor *x = args.in(0), *y = args.out(0);
    if (!x || !y) return args.Error("needs an input and an output");
    if (x->dtype != y->dtype || !DispatchNumeric(x->dtype, [](auto) {}))
      return args.Error(std::string("unsupported dtype ") + DataTypeName(x->dtype));
    PRECIS_RETURN_IF_ERROR(CheckSameDims(args, *x, *y));
    attr_form_ = args.attrs.Has("min") || args.attrs.Has("max");
    if (attr_form_) {
      lo_ = args.attrs.Float("min", -INFINITY);
      hi_ = args.attrs.Float("max", INFINITY);
      if (!DispatchFloat(x->dtype, [](auto) {})) return args.Error("integer Clip takes its bounds as inputs (opset 12 or later)");
    }
    for (size_t i = 1; i <= 2 && !attr_form_; ++i) {
      const Tensor* b = args.in(i);
      if (b && b->dtype != x->dtype) return args.Error(std::string(i == 1 ? "min" : "max") + " dtype differs from the input's");
      if (b && b->numel > 1) return args.Error(std::string(i == 1 ? "min" : "max") + " must be a scalar");
    }
    return Status::Ok();
  }
  Status Run(const KernelArgs& args, CpuContext&) override {
    const Tensor& x = *args.in(0);
    Tensor& y = *args.out(0);
    DispatchNumeric(x.dtype, [&](auto tag) {
      using T = decltype(tag);
      using C = typename ComputeOf<T>::type;
      C lo = std::numeric_limits<C>::lowest(), hi = std::numeric_limits<C>::max();
      if constexpr (std::is_floating_point_v<C>) {
        lo = C(-INFINITY);
        hi = C(INFINITY);
        if (attr_form_) {
          lo = C(lo_);
          hi = C(hi_);
        }
      }
      if (!attr_form_) {
        if (const Tensor* b = args.in(1); b && b->numel == 1) lo = Load(b->As<T>()[0]);
        if (const Tensor* b = args.in(2); b && b->numel == 1) hi = Load(b->As<T>()[0]);
      }
      const T* px = x.As<T>();
      T* py = y.As<T>();
      for (int64_t i = 0; i < x.numel; ++i) {
        C v = Load(px[i]);
        if (v < lo) v = lo;
        if (v > hi) v = hi;
        py[i] = Store<T>(v);
      }
    });
    return Status::Ok();
  }

 private:
  bool attr_form_ = false;
  float lo_ = -INFINITY, hi_ = INFINITY;
};

// Identity, and Dropout at inference (output = input; the optional mask all true, or all 1 of
// the input's type before opset 10; training mode only with ratio 0, checked when the step runs
// where either is computed at run time: dropout_mode.h). Both may
// run in place.
template <bool kDropout>
class PassThroughKernel : public Kernel {
 public:
  Status Init(const KernelArgs& args, const CpuContext&) override {
    const Tensor *x = args.in(0), *y = args.out(0);
    if (!x || !y) return args.Error("needs an input and an output");
    if (x->dtype != y->dtype || x->bytes != y->bytes) return args.Error("output type differs from the input's");
    if constexpr (kDropout) {
      std::string why;
      DropoutPlan plan = PlanDropout(args, &why);
      if (plan == DropoutPlan::kRefused) return args.Error(why);
      check_training_ = plan != DropoutPlan::kIdentity;
      if (const Tensor* m = args.out(1); m && !DispatchAny(m->dtype, [](auto) {}))
        return args.Error(std::string("unsupported mask dtype ") + DataTypeName(m->dtype));
    }
    return Status::Ok();
  }
  Status Run(const KernelArgs& args, CpuContext&) override {
    const Tensor& x = *args.in(0);
    Tensor& y = *args.out(0);
    if (x.data != y.data && y.bytes > 0) std::memcpy(y.data, x.data, y.bytes);
    if constexpr (kDropout) {
      if (std::string why; check_training_ && !DropoutRunIsIdentity(args, &why)) return args.Unsupported(why);
      if (Tensor* m = args.out(1)) {
        DispatchAny(m->dtype, [&](auto tag) {
          using T = decltype(tag);
          T* pm = m->As<T>();
          for (int64_t i = 0; i < m->numel; ++i) pm[i] = Store<T>(1.0f);
        });
      }
    }
    return Status::Ok();
  }

 private:
  bool check_training_ = false;
};

}  // namespace

void AddCastKernels(KernelRegistry& r) {
  r.Register("Cast", Make<CastKernel>);
  r.Register("BitCast", Make<BitCastKernel>);
  r.Register("Clip", Make<ClipKernel>);
  r.Register("Identity", Make<PassThroughKernel<false>>);
  r.Register("Dropout", Make<PassThroughKernel<true>>);
}

}  // namespace precis::rt::activation
