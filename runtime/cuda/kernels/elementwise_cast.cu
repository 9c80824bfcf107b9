// Cast on CUDA (also CastLike, lowered to the same kernel): every pair of bool and the numeric
// dtypes, with the CPU kernel's rules (activation_cast.cc): float -> integer truncates toward
// zero, NaN gives 0 and out-of-range values saturate; integer -> integer wraps; anything ->
// bool is "!= 0" (NaN is true), bool -> anything 0 or 1; conversions to f16/bf16 round to
// nearest even once (from f64 and integers through a round-to-odd float, which makes the second
// rounding exact). Float <-> float casts take 16-byte packs; the other pairs switch on the
// output dtype at run time (one kernel per input dtype).
#include <cfloat>
#include <cmath>

#include "runtime/cuda/kernels/elementwise.cuh"

namespace precis::rt::cuda::ew {
namespace {

// Bool storage, distinct from uint8_t so that casts to bool normalize to 0/1.
struct BoolTag {
  uint8_t v;
};

PRECIS_EW_HD uint32_t FloatToBits(float f) {
#ifdef __CUDA_ARCH__
  return __float_as_uint(f);
#else
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
#endif
}
PRECIS_EW_HD float BitsToFloat(uint32_t u) {
#ifdef __CUDA_ARCH__
  return __uint_as_float(u);
#else
  float f;
  std::memcpy(&f, &u, 4);
  return f;
#endif
}

// double -> float rounding to odd: truncate, then set the last bit when inexact.
PRECIS_EW_HD float RoundToOddFloat(double d) {
  if (d != d || d == double(INFINITY) || d == -double(INFINITY)) return float(d);
  constexpr float kMax = FLT_MAX;  // odd: rounds on to infinity
  if (::fabs(d) > double(kMax)) return d > 0 ? kMax : -kMax;
  float f = float(d);
  if (double(f) == d) return f;
  if (::fabs(double(f)) > ::fabs(d)) f = ::nextafterf(f, 0.0f);
  return BitsToFloat(FloatToBits(f) | 1u);
}

// The source value in a type that converts to any destination without loss: integers stay
// integers, bool becomes 0/1, 16-bit floats become float.
template <typename S> PRECIS_EW_HD auto Widen(S s) {
  if constexpr (std::is_same_v<S, BoolTag>) return uint8_t(s.v != 0);
  else return LoadC(s);
}

template <typename D, typename V> PRECIS_EW_HD D ConvertValue(V v) {
  if constexpr (std::is_same_v<D, BoolTag>) {
    return BoolTag{uint8_t(v != V(0))};
  } else if constexpr (std::is_same_v<D, half> || std::is_same_v<D, bf16>) {
    if constexpr (std::is_same_v<V, float>) return StoreC<D>(v);
    else return StoreC<D>(RoundToOddFloat(double(v)));
  } else if constexpr (std::is_integral_v<D> && std::is_floating_point_v<V>) {
    return SaturateCast<D>(v);
  } else {
    return static_cast<D>(v);  // int -> int wraps, int/float -> float rounds to nearest
  }
}

// Float -> float casts (f32, f16, bf16, f64), packs of V on the vector path.
template <typename S, typename D> struct CastFloatFn {
  static constexpr int V = kPack<S, D>;
  const S* x;
  D* y;
  int64_t n;
  bool vec;
  PRECIS_EW_HD void operator()(int64_t i) const {
    if (!vec) {
      y[i] = ConvertValue<D>(LoadC(x[i]));
      return;
    }
    int64_t base = i * V;
    if (base + V > n) {
      for (int64_t k = base; k < n; ++k) y[k] = ConvertValue<D>(LoadC(x[k]));
      return;
    }
    Compute<S> v[V];
    LoadPack<V>(x, base, v);
    Pack<D, V> out;
    PRECIS_EW_UNROLL
    for (int j = 0; j < V; ++j) out.v[j] = ConvertValue<D>(v[j]);
    *reinterpret_cast<Pack<D, V>*>(y + base) = out;
  }
};

// Any other pair: the output dtype switched per element (uniform across the launch).
template <typename S> struct CastAnyFn {
  const S* x;
  void* y;
  DataType to;
  PRECIS_EW_HD void operator()(int64_t i) const {
    auto v = Widen(x[i]);
    switch (to) {
      case DataType::kF32: static_cast<float*>(y)[i] = ConvertValue<float>(v); break;
      case DataType::kF16: static_cast<half*>(y)[i] = ConvertValue<half>(v); break;
      case DataType::kBF16: static_cast<bf16*>(y)[i] = ConvertValue<bf16>(v); break;
      case DataType::kF64: static_cast<double*>(y)[i] = ConvertValue<double>(v); break;
      case DataType::kI8: static_cast<int8_t*>(y)[i] = ConvertValue<int8_t>(v); break;
      case DataType::kU8: static_cast<uint8_t*>(y)[i] = ConvertValue<uint8_t>(v); break;
      case DataType::kI16: static_cast<int16_t*>(y)[i] = ConvertValue<int16_t>(v); break;
      case DataType::kU16: static_cast<uint16_t*>(y)[i] = ConvertValue<uint16_t>(v); break;
      case DataType::kI32: static_cast<int32_t*>(y)[i] = ConvertValue<int32_t>(v); break;
      case DataType::kU32: static_cast<uint32_t*>(y)[i] = ConvertValue<uint32_t>(v); break;
      case DataType::kI64: static_cast<int64_t*>(y)[i] = ConvertValue<int64_t>(v); break;
      case DataType::kU64: static_cast<uint64_t*>(y)[i] = ConvertValue<uint64_t>(v); break;
      default: static_cast<uint8_t*>(y)[i] = ConvertValue<BoolTag>(v).v; break;  // kBool
    }
  }
};

// fn(S{}) for the Cast storage types: bool (as BoolTag) and the numeric dtypes.
template <typename Fn> bool DispatchCastType(DataType t, Fn&& fn) {
  if (t == DataType::kBool) {
    fn(BoolTag{});
    return true;
  }
  return DispatchFloat(t, fn) || DispatchInt(t, fn);
}

class CastKernel : public Kernel {
 public:
  Status Init(const KernelArgs& args, CudaContext&) override {
    const Tensor *x = args.in(0), *y = args.out(0);
    if (!x || !y) return args.Error("needs an input and an output");
    if (!DispatchCastType(x->dtype, [](auto) {}) || !DispatchCastType(y->dtype, [](auto) {}))
      return args.Error(std::string("unsupported cast from ") + DataTypeName(x->dtype) + " to " + DataTypeName(y->dtype));
    if (x->numel != y->numel) return args.Error("input and output sizes differ");
    return Status::Ok();
  }

  Status Run(const KernelArgs& args, CudaContext& ctx) override {
    const Tensor& x = *args.in(0);
    Tensor& y = *args.out(0);
    if (x.dtype == y.dtype) {
      PRECIS_CUDA_CHECK(args, CopyBytes(y.data, x.data, y.bytes, ctx.stream));
      return Status::Ok();
    }
    cudaError_t e = cudaSuccess;
    if (IsFloatType(x.dtype) && IsFloatType(y.dtype)) {
      DispatchFloat(x.dtype, [&](auto s) {
        DispatchFloat(y.dtype, [&](auto d) {
          using S = decltype(s);
          using D = decltype(d);
          if constexpr (!std::is_same_v<S, D>) {
            constexpr int V = CastFloatFn<S, D>::V;
            bool vec = Aligned(x.data, sizeof(S) * V) && Aligned(y.data, sizeof(D) * V);
            e = Launch(vec ? (x.numel + V - 1) / V : x.numel, ctx.stream, CastFloatFn<S, D>{x.As<S>(), y.As<D>(), x.numel, vec});
          }
        });
      });
    } else {
      DispatchCastType(x.dtype, [&](auto s) {
        using S = decltype(s);
        e = Launch(x.numel, ctx.stream, CastAnyFn<S>{x.As<S>(), y.data, y.dtype});
      });
    }
    PRECIS_CUDA_CHECK(args, e);
    return Status::Ok();
  }
};

}  // namespace

void AddCastKernels(KernelRegistry& r) { r.Register("Cast", Make<CastKernel>); }

}  // namespace precis::rt::cuda::ew
