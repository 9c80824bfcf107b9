// CUDA CumSum and TopK, mirroring runtime/cpu/kernels/reduce_scan.cc.
//
// CumSum: running sums along the axis of input 1, optionally exclusive and/or reversed; floats
// accumulate in double, integers wrap in 64 bits. A constant axis (the usual case) is read at
// Init: lines along the innermost axis are scanned by a block each (warp-shuffle scans of
// blockDim-element chunks plus a running carry: the double sums are associated differently from
// the CPU's sequential loop, which the double accumulator hides), other lines by a thread each
// in the CPU's order. An axis computed at run time is read on the device (an out-of-range axis
// raises kBadValue), every line then a thread. Each element is read before the same thread
// writes its position: Y may share X's storage.
//
// TopK: per (outer, inner) line, k rounds of selection: round j takes the first element, in the
// CPU's total order (value, NaN above every number, ties by lower index), among those after
// round j-1's pick. O(n * k) per line, spread over a warp or block per line (a thread per line
// when the axis is not innermost); deterministic, always sorted (which "sorted = 0" permits).
#include "runtime/cuda/kernels/reduce_common.cuh"
#include "runtime/cuda/kernels/register.h"

namespace precis::rt::cuda {
namespace reduce {
namespace {

bool IsIndexType(DataType t) { return t == DataType::kI64 || t == DataType::kI32; }

// ---- CumSum -------------------------------------------------------------------------------------

// Floats accumulate in double, integers wrap in 64 bits (reduce_scan.cc).
template <typename S>
using ScanAcc = std::conditional_t<S::kFloat, double, uint64_t>;

template <typename S>
__device__ __forceinline__ void ScanPut(const S& src, void* y, int64_t i, ScanAcc<S> v) {
  if constexpr (S::kFloat) src.PutDouble(y, i, v);
  else src.Put(y, i, typename S::C(v));  // truncates, as the CPU's T(acc)
}

struct CumSumPlan {
  bool known = true;          // the axis is a constant: outer, n, inner hold
  int64_t outer = 0, n = 0, inner = 0;
  int rank = 0;               // a run-time axis: the dims to split at it
  int64_t dims[kMaxRank] = {};
  int64_t numel = 0;
  bool axis64 = true;
  bool exclusive = false, reverse = false;
};

// A thread per line, the CPU's loop. With a run-time axis every thread reads it first.
template <typename S>
__global__ void CumSumLines(CumSumPlan p, S src, const void* x, void* y, const void* axis, int* error) {
  using Acc = ScanAcc<S>;
  int64_t outer = p.outer, n = p.n, inner = p.inner;
  if (!p.known) {
    int64_t a = LoadIndex(axis, p.axis64, 0);
    if (a < -p.rank || a >= p.rank) {
      if (blockIdx.x == 0 && threadIdx.x == 0) RaiseError(error, kBadValue);
      return;
    }
    if (a < 0) a += p.rank;
    outer = n = inner = 1;
#pragma unroll
    for (int d = 0; d < kMaxRank; ++d) {
      if (d >= p.rank) break;
      if (d < a) outer *= p.dims[d];
      else if (d == a) n = p.dims[d];
      else inner *= p.dims[d];
    }
  }
  int64_t lines = outer * inner;
  for (int64_t line = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; line < lines; line += int64_t(gridDim.x) * blockDim.x) {
    int64_t o = line / inner, i = line - o * inner, base = o * n * inner + i;
    Acc acc = 0;
    for (int64_t s = 0; s < n; ++s) {
      int64_t k = base + (p.reverse ? n - 1 - s : s) * inner;
      Acc v = Acc(src.Load(x, k));
      if (p.exclusive) {
        ScanPut(src, y, k, acc);
        acc += v;
      } else {
        acc += v;
        ScanPut(src, y, k, acc);
      }
    }
  }
}

// A block per contiguous line, in chunks of blockDim elements (blockDim a multiple of 32).
template <typename S>
__global__ void CumSumBlocks(S src, const void* x, void* y, int64_t lines, int64_t n, bool exclusive, bool reverse) {
  using Acc = ScanAcc<S>;
  __shared__ Acc warp_sums[32];
  int lane = int(threadIdx.x) & 31, warp = int(threadIdx.x) >> 5, warps = int(blockDim.x) >> 5;
  for (int64_t line = blockIdx.x; line < lines; line += gridDim.x) {
    int64_t base = line * n;
    Acc carry = 0;
    for (int64_t chunk = 0; chunk < n; chunk += blockDim.x) {
      int64_t s = chunk + threadIdx.x, k = base + (reverse ? n - 1 - s : s);
      Acc v = s < n ? Acc(src.Load(x, k)) : Acc(0);
      Acc incl = v;  // inclusive scan within the warp
      for (int o = 1; o < 32; o <<= 1) {
        Acc u = __shfl_up_sync(0xffffffffu, incl, o);
        if (lane >= o) incl += u;
      }
      Acc excl = __shfl_up_sync(0xffffffffu, incl, 1);
      if (lane == 0) excl = 0;
      if (lane == 31) warp_sums[warp] = incl;
      __syncthreads();
      if (warp == 0) {  // inclusive scan of the warp sums
        Acc w = lane < warps ? warp_sums[lane] : Acc(0);
        for (int o = 1; o < 32; o <<= 1) {
          Acc u = __shfl_up_sync(0xffffffffu, w, o);
          if (lane >= o) w += u;
        }
        if (lane < warps) warp_sums[lane] = w;
      }
      __syncthreads();
      Acc before = carry + (warp > 0 ? warp_sums[warp - 1] : Acc(0));
      if (s < n) ScanPut(src, y, k, before + (exclusive ? excl : incl));
      carry += warp_sums[warps - 1];
      __syncthreads();  // warp_sums is rewritten by the next chunk
    }
  }
}

template <typename S>
cudaError_t LaunchCumSum(const CumSumPlan& p, const KernelArgs& args, int* error, cudaStream_t stream) {
  S src = S::Make(args.in(0)->dtype);
  const void* x = args.in(0)->data;
  void* y = args.out(0)->data;
  if (p.known) {
    int64_t lines = p.outer * p.inner;
    if (lines <= 0 || p.n <= 0) return cudaSuccess;
    if (p.inner == 1 && p.n >= 64) {
      unsigned threads = p.n >= 256 ? 256 : p.n >= 128 ? 128 : 64;
      CumSumBlocks<S><<<unsigned(std::min<int64_t>(lines, int64_t(1) << 20)), threads, 0, stream>>>(src, x, y, lines, p.n, p.exclusive, p.reverse);
    } else {
      CumSumLines<S><<<Blocks(lines), kThreads, 0, stream>>>(p, src, x, y, nullptr, nullptr);
    }
    return cudaGetLastError();
  }
  if (p.numel <= 0) return cudaSuccess;
  CumSumLines<S><<<Blocks(p.numel), kThreads, 0, stream>>>(p, src, x, y, args.in(1)->data, error);
  return cudaGetLastError();
}

using CumSumLaunch = cudaError_t (*)(const CumSumPlan& p, const KernelArgs& args, int* error, cudaStream_t stream);

class CumSumKernel : public Kernel {
 public:
  Status Init(const KernelArgs& args, CudaContext&) override {
    Tensor *x = args.in(0), *axis = args.in(1), *y = args.out(0);
    if (!x || !axis || !y) return args.Error("needs inputs x and axis and an output");
    if (x->dims != y->dims) return args.Error("output type differs from the input's");
    if (x->dtype != y->dtype) return DtypeError(args, "output type differs from the input's");
    if (!DispatchStorage(x->dtype, false, [&](auto storage) { launch_ = &LaunchCumSum<decltype(storage)>; }))
      return DtypeError(args, std::string("unsupported dtype ") + DataTypeName(x->dtype));
    if (!IsIndexType(axis->dtype) || axis->numel != 1) return args.Error("axis must be one int32 or int64 value");
    int64_t rank = x->rank();
    if (rank == 0) return args.Error("input must have rank >= 1");
    p_.exclusive = args.attrs.Int("exclusive", 0) != 0;
    p_.reverse = args.attrs.Int("reverse", 0) != 0;
    p_.numel = x->numel;
    p_.axis64 = axis->dtype == DataType::kI64;
    if (axis->is_constant) {
      // The CPU reads the axis at every run; a constant one fails the same way, only earlier.
      int64_t a = ReadHostInts(*axis)[0];
      if (!NormalizeAxis(a, rank, &a))
        return args.Error("axis " + std::to_string(ReadHostInts(*axis)[0]) + " is out of range for rank " + std::to_string(rank));
      p_.outer = p_.inner = 1;
      for (int64_t d = 0; d < a; ++d) p_.outer *= x->dims[size_t(d)];
      for (int64_t d = a + 1; d < rank; ++d) p_.inner *= x->dims[size_t(d)];
      p_.n = x->dims[size_t(a)];
      return Status::Ok();
    }
    if (rank > kMaxRank) return Unimplemented(args.node + ": a run-time axis over more than 8 dimensions");
    p_.known = false;
    p_.rank = int(rank);
    for (int64_t d = 0; d < rank; ++d) p_.dims[d] = x->dims[size_t(d)];
    return Status::Ok();
  }

  Status Run(const KernelArgs& args, CudaContext& ctx) override {
    PRECIS_CUDA_CHECK(args, launch_(p_, args, ctx.error, ctx.stream));
    return Status::Ok();
  }

 private:
  CumSumPlan p_;
  CumSumLaunch launch_ = nullptr;
};

// ---- TopK ---------------------------------------------------------------------------------------

template <typename C>
struct Candidate {
  C v;
  int64_t idx;  // -1: none
};

// reduce_scan.cc's order: a before b when its value is greater (smaller without `largest`),
// NaN above every number, ties by the lower index.
template <typename C>
struct BeforeOp {
  bool largest;
  __device__ static bool Greater(C a, C b) {
    if constexpr (kIsFloat<C>) return (a != a && b == b) || a > b;
    else return a > b;
  }
  __device__ bool Before(const Candidate<C>& a, const Candidate<C>& b) const {
    bool ab = largest ? Greater(a.v, b.v) : Greater(b.v, a.v);
    bool ba = largest ? Greater(b.v, a.v) : Greater(a.v, b.v);
    return ab || (!ba && a.idx < b.idx);
  }
  __device__ Candidate<C> operator()(const Candidate<C>& a, const Candidate<C>& b) const {
    if (a.idx < 0) return b;
    if (b.idx < 0) return a;
    return Before(a, b) ? a : b;
  }
};

struct TopKPlan {
  Slices s;  // one slice per (outer, inner) line
  Layout l;
  int64_t k = 0, inner = 1;
  bool largest = true;
};

template <typename S>
__global__ void __launch_bounds__(kMaxSliceThreads) TopKLines(TopKPlan p, S src, const void* x, void* values, int64_t* indices) {
  using C = typename S::C;
  PRECIS_REDUCE_SHARED(smem);
  const Slices& s = p.s;
  const Layout& l = p.l;
  BeforeOp<C> order{p.largest};
  int xi = l.x(), yi = l.y();
  int64_t tiles = (s.count + l.X - 1) / l.X;
  for (int64_t t = blockIdx.x; t < tiles; t += gridDim.x) {
    int64_t line = t * l.X + xi;
    bool valid = line < s.count;
    int64_t base = valid ? s.kept(line) : 0;
    int64_t out = valid ? (line / p.inner) * p.k * p.inner + line % p.inner : 0;
    Candidate<C> prev{C(0), -1};
    for (int64_t j = 0; j < p.k; ++j) {
      Candidate<C> best{C(0), -1};
      if (valid)
        Visit(s, l, base, yi, [&](int64_t off, int64_t r, int64_t k) {
          Candidate<C> c{src.Load(x, off), r * s.run + k};
          if (prev.idx >= 0 && !order.Before(prev, c)) return;  // taken by an earlier round
          if (best.idx < 0 || order.Before(c, best)) best = c;
        });
      best = SliceReduce(best, l, order, smem);
      if (valid && yi == 0) {
        // A line is a single run of `run` elements `step` apart (one element: offset 0).
        if (values) src.Copy(values, out + j * p.inner, x, base + best.idx * s.step);
        if (indices) indices[out + j * p.inner] = best.idx;
      }
      prev = best;
    }
  }
}

// k given as an input that is not a constant: the CPU checks it against the plan at every run.
__global__ void CheckKKernel(const void* k, bool is64, int64_t want, int* error) {
  if (LoadIndex(k, is64, 0) != want) RaiseError(error, kBadValue);
}

template <typename S>
cudaError_t LaunchTopK(const TopKPlan& p, const KernelArgs& args, cudaStream_t stream) {
  if (p.s.count <= 0 || p.k <= 0) return cudaSuccess;
  TopKLines<S><<<GridFor(p.s, p.l), unsigned(p.l.threads()), SharedBytes(p.l, sizeof(Candidate<typename S::C>)), stream>>>(
      p, S::Make(args.in(0)->dtype), args.in(0)->data, args.out(0) ? args.out(0)->data : nullptr,
      args.out(1) ? args.out(1)->As<int64_t>() : nullptr);
  return cudaGetLastError();
}

using TopKLaunch = cudaError_t (*)(const TopKPlan& p, const KernelArgs& args, cudaStream_t stream);

class TopKKernel : public Kernel {
 public:
  Status Init(const KernelArgs& args, CudaContext& ctx) override {
    Tensor *x = args.in(0), *values = args.out(0), *indices = args.out(1);
    if (!x || (!values && !indices)) return args.Error("needs an input and an output");
    if (!DispatchStorage(x->dtype, false, [&](auto storage) { launch_ = &LaunchTopK<decltype(storage)>; }))
      return DtypeError(args, std::string("unsupported dtype ") + DataTypeName(x->dtype));
    if (values && values->dtype != x->dtype) return DtypeError(args, "values dtype differs from the input's");
    if (indices && indices->dtype != DataType::kI64) return args.Error("indices must be int64");
    if (values && indices && values->dims != indices->dims) return args.Error("values and indices shapes differ");
    const std::vector<int64_t>& out_dims = values ? values->dims : indices->dims;
    int64_t rank = x->rank(), axis = args.attrs.Int("axis", -1);
    if (rank == 0 || !NormalizeAxis(axis, rank, &axis)) return args.Error("axis " + std::to_string(args.attrs.Int("axis", -1)) + " is out of range");
    if (int64_t(out_dims.size()) != rank) return args.Error("output rank differs from the input's");
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < rank; ++d) {
      if (d != axis && out_dims[size_t(d)] != x->dims[size_t(d)]) return args.Error("output shape does not match the input");
      if (d < axis) outer *= x->dims[size_t(d)];
      if (d > axis) inner *= x->dims[size_t(d)];
    }
    int64_t n = x->dims[size_t(axis)];
    p_.k = out_dims[size_t(axis)];
    p_.inner = inner;
    if (p_.k > n) return args.Error("k = " + std::to_string(p_.k) + " exceeds the axis size " + std::to_string(n));
    if (args.attrs.Has("k") && args.attrs.Int("k", p_.k) != p_.k) return args.Error("attribute k does not match the output");
    if (const Tensor* k = args.in(1)) {
      if (!IsIndexType(k->dtype) || k->numel != 1) return args.Error("k must be one int64 value");
      if (k->is_constant) {
        int64_t v = ReadHostInts(*k)[0];
        if (v != p_.k) return args.Error("k = " + std::to_string(v) + ", but the plan was built for " + std::to_string(p_.k));
      } else {
        check_k_ = true;
      }
    }
    p_.largest = args.attrs.Int("largest", 1) != 0;
    if (!MakeAxisSlices(outer, n, inner, &p_.s)) return Unimplemented(args.node + ": shape too complex for the CUDA kernel");
    p_.l = ChooseLayout(p_.s, ctx.prop);
    return Status::Ok();
  }

  Status Run(const KernelArgs& args, CudaContext& ctx) override {
    if (check_k_) {
      const Tensor& k = *args.in(1);
      CheckKKernel<<<1, 1, 0, ctx.stream>>>(k.data, k.dtype == DataType::kI64, p_.k, ctx.error);
      PRECIS_CUDA_CHECK(args, cudaGetLastError());
    }
    PRECIS_CUDA_CHECK(args, launch_(p_, args, ctx.stream));
    return Status::Ok();
  }

 private:
  TopKPlan p_;
  TopKLaunch launch_ = nullptr;
  bool check_k_ = false;
};

}  // namespace
}  // namespace reduce

void AddScanKernels(KernelRegistry& r) {
  r.Register("CumSum", Make<reduce::CumSumKernel>);
  r.Register("TopK", Make<reduce::TopKKernel>);
}

}  // namespace precis::rt::cuda
