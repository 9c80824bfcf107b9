// Helpers shared by the elementwise kernel files (elementwise*.cu): the launch hook, host-and-
// device loads and stores, dtype classes and (input, output) dtype-pair dispatch, a joint
// broadcast index with 32-bit magic-number division, 16-byte packs for vector access, and the
// functions each file registers its kernels with.
//
// Everything that runs per element is __host__ __device__ and launched through Launch(): built
// with PRECIS_EW_HOST_EMULATION, a launch runs its loop on the host, so that the kernels' index
// and dtype logic can be checked against the CPU kernels on a machine without a GPU.
#pragma once

#include <cstring>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "runtime/cuda/device_util.cuh"
#include "runtime/cuda/kernels/register.h"

#define PRECIS_EW_HD __host__ __device__ __forceinline__
// `#pragma unroll` for device code only (host compilers warn about the unknown pragma).
#ifdef __CUDA_ARCH__
#define PRECIS_EW_UNROLL _Pragma("unroll")
#else
#define PRECIS_EW_UNROLL
#endif

namespace precis::rt::cuda::ew {

// ---- launches -----------------------------------------------------------------------------------

// Runs fn(i) for i in [0, n) on the stream (ForEach), or on the host under emulation.
template <typename Fn> cudaError_t Launch(int64_t n, cudaStream_t stream, const Fn& fn) {
#ifdef PRECIS_EW_HOST_EMULATION
  (void)stream;
  for (int64_t i = 0; i < n; ++i) fn(i);
  return cudaSuccess;
#else
  return ForEach(n, stream, fn);
#endif
}

// Device-to-device copy of `bytes` on the stream (a memcpy under emulation).
inline cudaError_t CopyBytes(void* dst, const void* src, size_t bytes, cudaStream_t stream) {
  if (bytes == 0 || dst == src) return cudaSuccess;
#ifdef PRECIS_EW_HOST_EMULATION
  (void)stream;
  std::memmove(dst, src, bytes);
  return cudaSuccess;
#else
  return cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream);
#endif
}

PRECIS_EW_HD void RaiseErrorHD(int* flag, int code) {
#ifdef __CUDA_ARCH__
  RaiseError(flag, code);
#else
  if (*flag == 0) *flag = code;
#endif
}

// ---- loads, stores, exact arithmetic ------------------------------------------------------------

// Bool tensors are read and written as uint8_t (0/1 on write; any nonzero byte is true on read,
// as the CPU kernels do).
template <typename T> PRECIS_EW_HD Compute<T> LoadC(T v) {
  if constexpr (std::is_same_v<T, half>) return __half2float(v);
  else if constexpr (std::is_same_v<T, bf16>) return __bfloat162float(v);
  else return v;
}
// 16-bit floats round once to nearest even from float (a double goes through float first, as
// the CPU's Store<T> does).
template <typename T, typename C> PRECIS_EW_HD T StoreC(C v) {
  if constexpr (std::is_same_v<T, half>) return __float2half_rn(float(v));
  else if constexpr (std::is_same_v<T, bf16>) return __float2bfloat16_rn(float(v));
  else return T(v);
}

// Products and sums that must not be contracted into an FMA: the CPU reference rounds each.
PRECIS_EW_HD float MulRn(float a, float b) {
#ifdef __CUDA_ARCH__
  return __fmul_rn(a, b);
#else
  return a * b;
#endif
}
PRECIS_EW_HD double MulRn(double a, double b) {
#ifdef __CUDA_ARCH__
  return __dmul_rn(a, b);
#else
  return a * b;
#endif
}
PRECIS_EW_HD float AddRn(float a, float b) {
#ifdef __CUDA_ARCH__
  return __fadd_rn(a, b);
#else
  return a + b;
#endif
}
PRECIS_EW_HD double AddRn(double a, double b) {
#ifdef __CUDA_ARCH__
  return __dadd_rn(a, b);
#else
  return a + b;
#endif
}

// Unsigned type for wrap-around arithmetic on T, at least as wide as unsigned int (integer
// promotion never turns it back into an overflowing signed int).
template <typename T>
using WrapOf = std::conditional_t<(sizeof(T) < sizeof(unsigned)), unsigned, std::make_unsigned_t<T>>;
template <typename T> PRECIS_EW_HD T WrapAdd(T a, T b) { return T(WrapOf<T>(a) + WrapOf<T>(b)); }
template <typename T> PRECIS_EW_HD T WrapSub(T a, T b) { return T(WrapOf<T>(a) - WrapOf<T>(b)); }
template <typename T> PRECIS_EW_HD T WrapMul(T a, T b) { return T(WrapOf<T>(a) * WrapOf<T>(b)); }

template <typename C> PRECIS_EW_HD bool IsNan(C v) {
  if constexpr (std::is_floating_point_v<C>) return v != v;
  else return false;
}
template <typename C> PRECIS_EW_HD bool IsNegative(C v) {
  if constexpr (std::is_signed_v<C>) return v < C(0);
  else return false;
}

// Float -> integer: truncation toward zero; NaN gives 0 and out-of-range values saturate (the
// CPU's activation::SaturateCast).
template <typename I, typename F> PRECIS_EW_HD I SaturateCast(F x) {
  if (x != x) return 0;
  if (x >= F(std::numeric_limits<I>::max())) return std::numeric_limits<I>::max();
  if (x <= F(std::numeric_limits<I>::lowest())) return std::numeric_limits<I>::lowest();
  return I(x);
}

// ---- dtypes -------------------------------------------------------------------------------------

inline bool IsFloat16or32(DataType t) { return t == DataType::kF32 || t == DataType::kF16 || t == DataType::kBF16; }
inline bool IsFloatType(DataType t) { return IsFloat16or32(t) || t == DataType::kF64; }
inline bool IsIntType(DataType t) { return DispatchInt(t, [](auto) {}); }
inline bool IsUnsignedType(DataType t) {
  return t == DataType::kU8 || t == DataType::kU16 || t == DataType::kU32 || t == DataType::kU64;
}
inline bool IsNumericType(DataType t) { return IsFloatType(t) || IsIntType(t); }

// Operand dtypes that differ: Unimplemented when they differ only in float width (f16/bf16/f32;
// the backend then runs the step widened to FP32, where they agree), else InvalidArgument.
inline Status DtypeMismatch(const KernelArgs& args, DataType a, DataType b, const std::string& message) {
  if (IsFloat16or32(a) && IsFloat16or32(b)) return Unimplemented(args.node + ": " + message);
  return args.Error(message);
}

// Calls fn(T{}) with T the storage type: numeric types, and bool as uint8_t.
template <typename Fn> bool DispatchStorage(DataType t, Fn&& fn) {
  if (t == DataType::kBool) {
    fn(uint8_t{});
    return true;
  }
  return DispatchFloat(t, fn) || DispatchInt(t, fn);
}

// Calls fn(T{}, Y{}) for an (input, output) pair computed natively: equal dtypes (bool as
// uint8_t), or two different dtypes among f32/f16/bf16 (a cast fused into the op).
template <typename Fn> bool DispatchPair(DataType in, DataType out, Fn&& fn) {
  if (in == out) return DispatchStorage(in, [&](auto t) { fn(t, t); });
  if (!IsFloat16or32(in) || !IsFloat16or32(out)) return false;
  auto with_out = [&](auto t) {
    switch (out) {
      case DataType::kF32: fn(t, float{}); break;
      case DataType::kF16: fn(t, half{}); break;
      default: fn(t, bf16{}); break;
    }
  };
  switch (in) {
    case DataType::kF32: with_out(float{}); break;
    case DataType::kF16: with_out(half{}); break;
    default: with_out(bf16{}); break;
  }
  return true;
}

// Output dtype check of ops whose output takes the input's dtype: equal, or a fused float cast.
inline bool PairSupported(DataType in, DataType out) { return in == out || (IsFloat16or32(in) && IsFloat16or32(out)); }

// ---- 16-byte packs ------------------------------------------------------------------------------

// Elements per thread on the vector path: 16 bytes of the wider of the two storage types.
template <typename T, typename Y> inline constexpr int kPack = int(16 / (sizeof(T) > sizeof(Y) ? sizeof(T) : sizeof(Y)));

template <typename T, int V> struct alignas(sizeof(T) * V) Pack {
  T v[V];
};

template <int V, typename T> PRECIS_EW_HD void LoadPack(const T* p, int64_t base, Compute<T> (&out)[V]) {
  Pack<T, V> pk = *reinterpret_cast<const Pack<T, V>*>(p + base);
  PRECIS_EW_UNROLL
  for (int j = 0; j < V; ++j) out[j] = LoadC(pk.v[j]);
}
template <int V, typename Y, typename R> PRECIS_EW_HD void StorePack(Y* p, int64_t base, const R (&in)[V]) {
  Pack<Y, V> pk;
  PRECIS_EW_UNROLL
  for (int j = 0; j < V; ++j) pk.v[j] = StoreC<Y>(in[j]);
  *reinterpret_cast<Pack<Y, V>*>(p + base) = pk;
}

inline bool Aligned(const void* p, size_t bytes) { return reinterpret_cast<uintptr_t>(p) % bytes == 0; }

// ---- joint broadcast index ------------------------------------------------------------------------

inline constexpr int kMaxOperands = 8;

#ifdef PRECIS_EW_HOST_EMULATION
inline bool force_wide_index = false;  // emulation tests: take the 64-bit index path everywhere
#endif

// Unsigned 32-bit division by a constant d (1 <= d < 2^31) for dividends below 2^31:
// q = (umulhi(n, magic) + n) >> shift.
struct FastDiv {
  uint32_t magic = 1, shift = 0;
  static FastDiv Make(uint32_t d);
  PRECIS_EW_HD uint32_t Div(uint32_t n) const {
#ifdef __CUDA_ARCH__
    uint32_t t = __umulhi(n, magic);
#else
    uint32_t t = uint32_t((uint64_t(n) * magic) >> 32);
#endif
    return (t + n) >> shift;
  }
};

// Offsets of N operands for a linear output index, through one shared walk of the output's
// collapsed dims (innermost first): one division per dim, whatever N. I is uint32_t (magic
// division; every index below 2^31) or int64_t.
template <typename I, int N> struct BcastIndex {
  int rank = 0;
  I dims[kMaxRank] = {};
  FastDiv div[kMaxRank] = {};
  I strides[N][kMaxRank] = {};

  PRECIS_EW_HD void Map(I i, I (&off)[N]) const {
    PRECIS_EW_UNROLL
    for (int k = 0; k < N; ++k) off[k] = 0;
    PRECIS_EW_UNROLL
    for (int d = 0; d < kMaxRank; ++d) {
      if (d + 1 >= rank) {  // the outermost dim (or a single element): no division
        PRECIS_EW_UNROLL
        for (int k = 0; k < N; ++k) off[k] += i * strides[k][d];
        break;
      }
      I q;
      if constexpr (std::is_same_v<I, uint32_t>) q = div[d].Div(i);
      else q = i / dims[d];
      I c = i - q * dims[d];
      PRECIS_EW_UNROLL
      for (int k = 0; k < N; ++k) off[k] += c * strides[k][d];
      i = q;
    }
  }
};

// The broadcast of up to kMaxOperands operands to an output shape (numpy rules), collapsed:
// size-1 output dims dropped, adjacent dims merged where every operand steps through them
// contiguously. dims and strides are innermost first.
struct BroadcastPlan {
  std::vector<int64_t> dims;
  std::vector<std::vector<int64_t>> strides;  // [operand][dim]
  int64_t numel = 0;
  bool narrow = false;                        // every index fits 32-bit magic division

  // False when an operand does not broadcast to `out`.
  bool Make(const std::vector<int64_t>& out, const std::vector<std::vector<int64_t>>& ins);
  int rank() const { return int(dims.size()); }
  // Rank <= 1: operand k steps by strides (0: a scalar, 1: contiguous).
  bool flat() const { return dims.size() <= 1; }
  bool scalar(size_t k) const { return dims.empty() || strides[k][0] == 0; }

  template <typename I, int N> BcastIndex<I, N> Index() const {
    BcastIndex<I, N> x;
    x.rank = rank();
    for (int d = 0; d < rank(); ++d) {
      x.dims[d] = I(dims[size_t(d)]);
      if constexpr (std::is_same_v<I, uint32_t>) x.div[d] = FastDiv::Make(uint32_t(dims[size_t(d)]));
      for (size_t k = 0; k < strides.size() && k < size_t(N); ++k) x.strides[k][d] = I(strides[k][size_t(d)]);
    }
    return x;
  }
};

// Plans the broadcast of `ins` to `out` for a kernel: errors name the step; a collapsed rank
// above kMaxRank is Unimplemented.
Status PlanBroadcast(const KernelArgs& args, const std::vector<int64_t>& out, const std::vector<std::vector<int64_t>>& ins,
                     BroadcastPlan* plan);

// ---- binary launches ------------------------------------------------------------------------------

// y = op(a, b) under broadcasting, for an op policy:
//   struct Op {
//     using Params = ...;                              // the op and its attributes, by value
//     template <typename C> using Result = ...;        // C, or uint8_t for a bool result
//     template <int V, typename C, typename R>
//     static PRECIS_EW_HD void Apply(const Params&, const C (&a)[V], const C (&b)[V], R (&r)[V]);
//   };
// Flat broadcasts (rank <= 1: each operand contiguous or a scalar) with 16-byte aligned tensors
// take packs of kPack<T, Y> elements per thread; the rest index through BcastIndex.
template <typename Op, typename T, typename Y> struct BinaryVecFn {
  static constexpr int V = kPack<T, Y>;
  using C = Compute<T>;
  using R = typename Op::template Result<C>;
  const T* a;
  const T* b;
  Y* y;
  int64_t n;
  bool a_scalar, b_scalar;
  typename Op::Params p;
  PRECIS_EW_HD void operator()(int64_t i) const {
    int64_t base = i * V;
    if (base + V > n) {
      for (int64_t k = base; k < n; ++k) One(k);
      return;
    }
    C va[V], vb[V];
    if (a_scalar) {
      C s = LoadC(a[0]);
      PRECIS_EW_UNROLL
      for (int j = 0; j < V; ++j) va[j] = s;
    } else {
      LoadPack<V>(a, base, va);
    }
    if (b_scalar) {
      C s = LoadC(b[0]);
      PRECIS_EW_UNROLL
      for (int j = 0; j < V; ++j) vb[j] = s;
    } else {
      LoadPack<V>(b, base, vb);
    }
    R r[V];
    Op::template Apply<V>(p, va, vb, r);
    StorePack<V>(y, base, r);
  }
  PRECIS_EW_HD void One(int64_t k) const {
    C va[1] = {LoadC(a[a_scalar ? 0 : k])}, vb[1] = {LoadC(b[b_scalar ? 0 : k])};
    R r[1];
    Op::template Apply<1>(p, va, vb, r);
    y[k] = StoreC<Y>(r[0]);
  }
};

template <typename Op, typename T, typename Y, typename I> struct BinaryIdxFn {
  using C = Compute<T>;
  using R = typename Op::template Result<C>;
  const T* a;
  const T* b;
  Y* y;
  BcastIndex<I, 2> idx;
  typename Op::Params p;
  PRECIS_EW_HD void operator()(int64_t i) const {
    I off[2];
    idx.Map(I(i), off);
    C va[1] = {LoadC(a[off[0]])}, vb[1] = {LoadC(b[off[1]])};
    R r[1];
    Op::template Apply<1>(p, va, vb, r);
    y[i] = StoreC<Y>(r[0]);
  }
};

template <typename Op, typename T, typename Y>
cudaError_t LaunchBinary(const BroadcastPlan& plan, const T* a, const T* b, Y* y, const typename Op::Params& p, cudaStream_t stream) {
  constexpr int V = kPack<T, Y>;
  const int64_t n = plan.numel;
  if (plan.flat()) {
    bool sa = plan.scalar(0), sb = plan.scalar(1);
    if ((sa || Aligned(a, sizeof(T) * V)) && (sb || Aligned(b, sizeof(T) * V)) && Aligned(y, sizeof(Y) * V))
      return Launch((n + V - 1) / V, stream, BinaryVecFn<Op, T, Y>{a, b, y, n, sa, sb, p});
  }
  if (plan.narrow) return Launch(n, stream, BinaryIdxFn<Op, T, Y, uint32_t>{a, b, y, plan.Index<uint32_t, 2>(), p});
  return Launch(n, stream, BinaryIdxFn<Op, T, Y, int64_t>{a, b, y, plan.Index<int64_t, 2>(), p});
}

// ---- registration -------------------------------------------------------------------------------

void AddUnaryKernels(KernelRegistry& r);     // elementwise_unary.cu
void AddBinaryKernels(KernelRegistry& r);    // elementwise_binary.cu
void AddCompareKernels(KernelRegistry& r);   // elementwise_compare.cu
void AddVariadicKernels(KernelRegistry& r);  // elementwise_variadic.cu
void AddCastKernels(KernelRegistry& r);      // elementwise_cast.cu

}  // namespace precis::rt::cuda::ew
