// Helpers shared by the reduce family's CUDA kernels (reductions, Softmax, norms, losses, TopK,
// CumSum): the slice view of a tensor, the thread layout that walks it, slice-wide reductions of
// any accumulator type, and small numeric helpers. Include from the reduce*.cu files only.
//
// The slice view: every op of the family reduces (or normalizes, or scans) sets of elements that
// the CPU kernels call groups. A tensor is seen as `count` slices; slice s starts at kept(s) and
// holds runs * run elements: run r starts at outer(r) from there and is `run` elements apart by
// `step`. For a reduction over any axis set, the kept axes index the slices, the innermost
// reduced axis group is the run and the other reduced axes the runs (as the CPU kernels walk
// them: size-1 axes dropped, neighbouring axes of the same kind merged).
//
// The layout: a block holds X slices of Y threads each. Either a slice's Y threads are
// consecutive (runs are contiguous in memory: they read consecutive elements, and the slice
// reductions are warp shuffles, plus shared memory when Y > 32), or the X slices are
// consecutive threads (the innermost axis is kept: neighbouring threads read neighbouring
// elements) and Y > 1 splits each slice's elements when there are too few slices to fill the
// GPU. Every thread of a block walks the same tiles, so block-wide synchronization is uniform.
// Reductions are deterministic: each thread's share is fixed by the layout and the combining
// tree does not depend on timing. A slice never spans blocks, so a few very large slices (a
// full reduction of a big tensor) run on a few SMs.
// TODO(reduce): split such slices over blocks, with a second pass combining the partials.
#pragma once

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "runtime/cuda/device_util.cuh"

namespace precis::rt::cuda::reduce {

struct Slices {
  Indexer kept;         // slice -> offset of its first element
  Indexer outer;        // run index -> offset of the run within the slice
  int64_t count = 0;    // slices
  int64_t runs = 1;     // runs per slice
  int64_t run = 1;      // elements per run
  int64_t step = 1;     // stride between the elements of a run
  __host__ __device__ int64_t size() const { return runs * run; }
};

// The most threads a layout puts in a block: every slice kernel is compiled for it
// (__launch_bounds__), so that it never needs more registers than such a launch has.
inline constexpr int kMaxSliceThreads = 1024;

struct Layout {
  int X = 1, Y = 1;      // slices per block, threads per slice
  bool x_fast = false;   // consecutive threads take consecutive slices (else consecutive elements)
  bool by_runs = false;  // a slice's threads split its runs (else the elements of each run)
  int threads() const { return X * Y; }
  __device__ int x() const { return x_fast ? int(threadIdx.x) % X : int(threadIdx.x) / Y; }
  __device__ int y() const { return x_fast ? int(threadIdx.x) / X : int(threadIdx.x) % Y; }
};

// Builds the slice view of a dense tensor of shape dims, `reduced` marking the axes inside a
// slice. False when the kept or the outer reduced axes need more than kMaxRank index dimensions.
bool MakeSlices(const std::vector<int64_t>& dims, const std::vector<bool>& reduced, Slices* out);
// The slices of an (outer, n, inner) view: n elements `inner` apart, one slice per (o, i).
bool MakeAxisSlices(int64_t outer, int64_t n, int64_t inner, Slices* out);
// The layout for walking `s` (see above); prop may be null (then an H100-sized GPU is assumed).
Layout ChooseLayout(const Slices& s, const cudaDeviceProp* prop);
// Blocks for a launch over s.count slices with layout l.
unsigned GridFor(const Slices& s, const Layout& l);
// Dynamic shared memory for SliceReduce of accumulators of `acc_bytes` under layout l.
size_t SharedBytes(const Layout& l, size_t acc_bytes);

// An axis in [-rank, rank) made non-negative; false when out of range.
bool NormalizeAxis(int64_t axis, int64_t rank, int64_t* out);

// Whether any of the step's tensors is FP16 or BF16: a dtype combination the kernels do not take
// is then Unimplemented (the backend widens the step to FP32), otherwise the CPU's error.
bool HasHalfTensors(const KernelArgs& args);
Status DtypeError(const KernelArgs& args, const std::string& message);

// The values of a small host-readable integer tensor (constant axes, k).
std::vector<int64_t> ReadHostInts(const Tensor& t);

// ---- device side ------------------------------------------------------------------------------

// Every kernel of the family declares its dynamic shared memory through this one symbol.
#define PRECIS_REDUCE_SHARED(name) extern __shared__ __align__(16) unsigned char name[]

// Calls fn(offset, run_index, index_in_run) for this thread's share of the slice at `base`.
template <typename Fn>
__host__ __device__ __forceinline__ void Visit(const Slices& s, const Layout& l, int64_t base, int y, Fn&& fn) {
  if (l.by_runs) {
    for (int64_t r = y; r < s.runs; r += l.Y) {
      int64_t b = base + s.outer(r);
      for (int64_t k = 0; k < s.run; ++k) fn(b + k * s.step, r, k);
    }
  } else {
    for (int64_t r = 0; r < s.runs; ++r) {
      int64_t b = base + s.outer(r);
      for (int64_t k = y; k < s.run; k += l.Y) fn(b + k * s.step, r, k);
    }
  }
}

// __shfl_xor_sync of any trivially copyable value, word by word.
template <typename A>
__device__ __forceinline__ A ShflXor(A a, int offset) {
  constexpr int kWords = int((sizeof(A) + 3) / 4);
  uint32_t w[kWords] = {};
  memcpy(w, &a, sizeof(A));
#pragma unroll
  for (int i = 0; i < kWords; ++i) w[i] = __shfl_xor_sync(0xffffffffu, w[i], offset);
  A r;
  memcpy(&r, w, sizeof(A));
  return r;
}

// Combines v over the Y threads of each slice; every thread of the slice gets the result.
// comb must be commutative (all threads then hold the same bits). Called by every thread of
// the block (it may synchronize the block); smem holds SharedBytes(l, sizeof(A)).
template <typename A, typename Comb>
__device__ A SliceReduce(A v, const Layout& l, Comb comb, unsigned char* smem) {
  A* sh = reinterpret_cast<A*>(smem);
  if (!l.x_fast) {
    int width = l.Y < 32 ? l.Y : 32;
    for (int o = width >> 1; o > 0; o >>= 1) v = comb(v, ShflXor(v, o));
    if (l.Y <= 32) return v;
    int lane = int(threadIdx.x) & 31, warp = int(threadIdx.x) >> 5, per_slice = l.Y >> 5;
    __syncthreads();  // the previous reduction's reads of sh are done
    if (lane == 0) sh[warp] = v;
    __syncthreads();
    v = sh[(warp / per_slice) * per_slice + lane % per_slice];
    for (int o = per_slice >> 1; o > 0; o >>= 1) v = comb(v, ShflXor(v, o));
    return v;
  }
  if (l.Y == 1) return v;
  int x = l.x(), y = l.y();
  __syncthreads();
  sh[y * l.X + x] = v;
  for (int s = l.Y >> 1; s > 0; s >>= 1) {
    __syncthreads();
    if (y < s) sh[y * l.X + x] = comb(sh[y * l.X + x], sh[(y + s) * l.X + x]);
  }
  __syncthreads();
  return sh[x];
}

struct SumOp {
  template <typename A> __device__ A operator()(A a, A b) const { return a + b; }
};
// Max that propagates NaN (as np.maximum and the CPU kernels' running max).
struct NanMaxOp {
  template <typename A> __device__ A operator()(A a, A b) const { return a != a ? a : b != b ? b : (b > a ? b : a); }
};

// The normalizations' statistics of one slice, as the CPU's two passes: the mean, then the sum
// of squared deviations from it, both accumulated in double. Called by every thread of the
// block; `valid` marks threads whose slice exists.
struct Moments {
  double mean, sq;
};
template <typename T>
__device__ Moments SliceMoments(const T* x, const Slices& s, const Layout& l, bool valid, int64_t base, int y, unsigned char* smem) {
  double sum = 0;
  if (valid) Visit(s, l, base, y, [&](int64_t off, int64_t, int64_t) { sum += double(Load(x[off])); });
  sum = SliceReduce(sum, l, SumOp{}, smem);
  double n = double(s.size());
  double mean = n > 0 ? sum / n : 0.0;
  double sq = 0;
  if (valid)
    Visit(s, l, base, y, [&](int64_t off, int64_t, int64_t) {
      double d = double(Load(x[off])) - mean;
      sq += d * d;
    });
  sq = SliceReduce(sq, l, SumOp{}, smem);
  return {mean, sq};
}

// exp(v - m) for float v, m with the subtraction's rounding error compensated (Knuth's TwoSum:
// d + lo = v - m exactly; exp(d + lo) ~ exp(d) * (1 + lo)), as fast_softmax.cc does on the CPU:
// a rounded d alone would cost |v - m| * 2^-24 of relative error. lo is dropped where exp
// underflows or d is not finite.
__device__ __forceinline__ float ExpShifted(float v, float m) {
  float d = v - m, bb = d - v, lo = (v - (d - bb)) + (-m - bb);
  float e = expf(d);
  return (d > -104.0f && d < 89.0f) ? fmaf(e, lo, e) : e;
}
__device__ __forceinline__ double ExpShifted(double v, double m) { return exp(v - m); }

// double -> T: floats round (16-bit ones through float, as the CPU's Store); integers take NaN
// as 0 and saturate (reduce.cc's Narrow).
template <typename T>
__device__ __forceinline__ T Narrow(double v) {
  if constexpr (kIsFloat<T>) {
    return Store<T>(v);
  } else {
    if (v != v) return T(0);
    if (v <= double(std::numeric_limits<T>::lowest())) return std::numeric_limits<T>::lowest();
    if (v >= double(std::numeric_limits<T>::max())) return std::numeric_limits<T>::max();
    return T(v);
  }
}

// Storage policies: how a kernel reads and writes the elements of its data tensor.
// FloatStorage: one instantiation per float dtype, values in its compute type (float, double).
// IntStorage: the eight integer dtypes and bool through the widest type of the same signedness
// (W = int64_t or uint64_t), the storage dtype a runtime field: one kernel per signedness
// instead of one per width (compile time). Sign or zero extension keeps values and order;
// stores truncate (wrapping, as the CPU's T(v)) or, from double, saturate (reduce.cc's Narrow).
template <typename T>
struct FloatStorage {
  using C = Compute<T>;
  static constexpr bool kFloat = true;
  C lowest = -std::numeric_limits<C>::infinity(), highest = std::numeric_limits<C>::infinity();
  static FloatStorage Make(DataType) { return {}; }
  __device__ C Load(const void* p, int64_t i) const { return cuda::Load(static_cast<const T*>(p)[i]); }
  __device__ void Put(void* p, int64_t i, C v) const { static_cast<T*>(p)[i] = Store<T>(v); }
  __device__ void PutDouble(void* p, int64_t i, double v) const { static_cast<T*>(p)[i] = Store<T>(v); }
  __device__ void Copy(void* dst, int64_t i, const void* src, int64_t j) const { static_cast<T*>(dst)[i] = static_cast<const T*>(src)[j]; }
};

template <typename W>
struct IntStorage {
  using C = W;
  static constexpr bool kFloat = false;
  DataType dtype = DataType::kI64;
  W lowest = 0, highest = 0;             // the storage dtype's range
  double lowest_d = 0, highest_d = 0;    // the same as double (for saturation)
  static IntStorage Make(DataType dtype);
  __device__ W Load(const void* p, int64_t i) const {
    switch (dtype) {
      case DataType::kI8: return W(static_cast<const int8_t*>(p)[i]);
      case DataType::kI16: return W(static_cast<const int16_t*>(p)[i]);
      case DataType::kI32: return W(static_cast<const int32_t*>(p)[i]);
      case DataType::kI64: return W(static_cast<const int64_t*>(p)[i]);
      case DataType::kU16: return W(static_cast<const uint16_t*>(p)[i]);
      case DataType::kU32: return W(static_cast<const uint32_t*>(p)[i]);
      case DataType::kU64: return W(static_cast<const uint64_t*>(p)[i]);
      default: return W(static_cast<const uint8_t*>(p)[i]);  // u8, bool
    }
  }
  __device__ void Put(void* p, int64_t i, W v) const {
    switch (dtype) {
      case DataType::kI8: static_cast<int8_t*>(p)[i] = int8_t(v); break;
      case DataType::kI16: static_cast<int16_t*>(p)[i] = int16_t(v); break;
      case DataType::kI32: static_cast<int32_t*>(p)[i] = int32_t(v); break;
      case DataType::kI64: static_cast<int64_t*>(p)[i] = int64_t(v); break;
      case DataType::kU16: static_cast<uint16_t*>(p)[i] = uint16_t(v); break;
      case DataType::kU32: static_cast<uint32_t*>(p)[i] = uint32_t(v); break;
      case DataType::kU64: static_cast<uint64_t*>(p)[i] = uint64_t(v); break;
      default: static_cast<uint8_t*>(p)[i] = uint8_t(v); break;
    }
  }
  __device__ void Copy(void* dst, int64_t i, const void* src, int64_t j) const { Put(dst, i, Load(src, j)); }
  // NaN -> 0, out of range -> the nearest bound, else truncated toward zero.
  __device__ void PutDouble(void* p, int64_t i, double v) const {
    Put(p, i, v != v ? W(0) : v <= lowest_d ? lowest : v >= highest_d ? highest : W(v));
  }
};

template <typename W>
IntStorage<W> IntStorage<W>::Make(DataType dtype) {
  IntStorage s;
  s.dtype = dtype;
  auto range = [&](auto tag) {
    using T = decltype(tag);
    s.lowest = W(std::numeric_limits<T>::lowest());
    s.highest = W(std::numeric_limits<T>::max());
    s.lowest_d = double(std::numeric_limits<T>::lowest());
    s.highest_d = double(std::numeric_limits<T>::max());
  };
  if (!DispatchInt(dtype, range)) range(uint8_t{});  // bool
  return s;
}

// Calls fn(S{}) with S the storage policy of a numeric dtype (bool too when `with_bool`);
// false for other dtypes.
template <typename Fn>
bool DispatchStorage(DataType dtype, bool with_bool, Fn&& fn) {
  if (DispatchFloat(dtype, [&](auto tag) { fn(FloatStorage<decltype(tag)>{}); })) return true;
  switch (dtype) {
    case DataType::kI8: case DataType::kI16: case DataType::kI32: case DataType::kI64:
      fn(IntStorage<int64_t>{});
      return true;
    case DataType::kU8: case DataType::kU16: case DataType::kU32: case DataType::kU64:
      fn(IntStorage<uint64_t>{});
      return true;
    case DataType::kBool:
      if (!with_bool) return false;
      fn(IntStorage<uint64_t>{});
      return true;
    default: return false;
  }
}

// Element i of a float tensor of any float dtype, as double (parameter vectors whose dtype may
// differ from the data's: one kernel per data dtype instead of one per combination).
__device__ __forceinline__ double LoadAsDouble(const void* p, DataType dtype, int64_t i) {
  switch (dtype) {
    case DataType::kF16: return double(__half2float(static_cast<const half*>(p)[i]));
    case DataType::kBF16: return double(__bfloat162float(static_cast<const bf16*>(p)[i]));
    case DataType::kF64: return static_cast<const double*>(p)[i];
    default: return double(static_cast<const float*>(p)[i]);
  }
}

// An index input (int32 or int64) on the device.
__device__ __forceinline__ int64_t LoadIndex(const void* p, bool is64, int64_t i) {
  return is64 ? static_cast<const int64_t*>(p)[i] : int64_t(static_cast<const int32_t*>(p)[i]);
}

}  // namespace precis::rt::cuda::reduce
