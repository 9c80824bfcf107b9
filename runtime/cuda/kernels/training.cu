// CUDA kernels of the internal training operators (compiler/ops/training.cc), mirroring the CPU
// reference kernels (runtime/cpu/kernels/training.cc, MaxPoolGrad in nn_pool.cc):
//
// - BatchNormalizationTraining and its gradient: one block per channel; the channel's sums (mean,
//   then squared deviations; dB and dscale) accumulate in double per thread and combine in a
//   fixed tree (BlockSum), so results do not depend on timing. Every element is then read and
//   written by the thread that read it for the sums: Y may share X's storage.
// - DropoutTraining: one thread per element, the mask from Philox (runtime/kernels/philox.h),
//   the same bits as the CPU's for the same (seed, counter, stream, index).
// - ReluGrad: elementwise, dY and X of any float dtypes.
// - UnscaleGradients: multi-tensor: up to kMaxChunk gradients per launch, passed by value (their
//   pointers, sizes, dtypes and first block); found_inf is cleared on the stream first and set by
//   any thread that reads an Inf or NaN (every writer stores the same 1). No host sync: the
//   optimizer's predicated steps read found_inf on the device.
// - MaxPoolGrad: one thread per element of dX gathers the windows that contain it and whose
//   maximum (chosen as the CPU chooses it: the first in scan order, NaN losing to numbers) is this
//   element, in the CPU's window order, summing in double: no atomics, deterministic.
// Kernels are written for both nvcc and the fiber emulator (tests/cuda/emulation/fiber_cuda.h).
#include <cmath>
#include <limits>
#include <string>

#include "runtime/cuda/device_util.cuh"
#include "runtime/cuda/kernels/register.h"
#include "runtime/kernels/nn_window.h"
#include "runtime/kernels/philox.h"

namespace precis::rt::cuda {
namespace {

// The arithmetic type of normalized values: float, double for f64 (as the CPU's).
template <typename T>
using TrainAcc = std::conditional_t<std::is_same_v<T, double>, double, float>;

// Element i of a float tensor of any float dtype, as double; and the store back (rounded once).
__device__ __forceinline__ double LoadAny(const void* p, DataType dtype, int64_t i) {
  switch (dtype) {
    case DataType::kF16: return double(__half2float(static_cast<const half*>(p)[i]));
    case DataType::kBF16: return double(__bfloat162float(static_cast<const bf16*>(p)[i]));
    case DataType::kF64: return static_cast<const double*>(p)[i];
    default: return double(static_cast<const float*>(p)[i]);
  }
}
__device__ __forceinline__ void StoreAny(void* p, DataType dtype, int64_t i, double v) {
  switch (dtype) {
    case DataType::kF16: static_cast<half*>(p)[i] = __float2half_rn(float(v)); break;
    case DataType::kBF16: static_cast<bf16*>(p)[i] = __float2bfloat16_rn(float(v)); break;
    case DataType::kF64: static_cast<double*>(p)[i] = v; break;
    default: static_cast<float*>(p)[i] = float(v); break;
  }
}

bool IsFloatType(DataType t) { return DispatchFloat(t, [](auto) {}); }

// X [N, C, inner...]: channel c of sample n is one run of `inner` values.
struct Channels {
  int64_t N = 0, C = 0, inner = 1;
  __host__ __device__ int64_t count() const { return N * inner; }  // values per channel
  __host__ __device__ int64_t Offset(int64_t c, int64_t j) const { return ((j / inner) * C + c) * inner + j % inner; }
};

Status ChannelsOf(const KernelArgs& args, const Tensor& x, Channels* l) {
  if (x.rank() < 2) return args.Error("X must have rank >= 2 (N x C x ...)");
  *l = Channels{x.dims[0], x.dims[1], 1};
  for (size_t d = 2; d < x.dims.size(); ++d) l->inner *= x.dims[d];
  return Status::Ok();
}

Status CheckChannelVector(const KernelArgs& args, const Tensor* t, int64_t C, const char* what) {
  if (!t || t->numel != C) return args.Error(std::string(what) + " must have " + std::to_string(C) + " values");
  if (!IsFloatType(t->dtype)) return args.Error(std::string(what) + " has unsupported dtype " + DataTypeName(t->dtype));
  return Status::Ok();
}

// Blocks for one-block-per-channel launches (a grid-stride loop covers the rest).
unsigned ChannelBlocks(int64_t C) { return unsigned(C < 1 ? 1 : C > 65535 ? 65535 : C); }

// ---- BatchNormalizationTraining ---------------------------------------------------------------

struct BnTrainParams {
  Channels l;
  double eps = 0;
  const void *scale = nullptr, *bias = nullptr;
  void *mean = nullptr, *var = nullptr;  // optional outputs
  DataType st = DataType::kF32, bt = DataType::kF32, mt = DataType::kF32, vt = DataType::kF32;
};

template <typename T>
__global__ void __launch_bounds__(kThreads) BnTrainKernel(const T* x, T* y, BnTrainParams p) {
  using A = TrainAcc<T>;
  __shared__ double sh[32];
  const double n = double(p.l.count());
  for (int64_t c = blockIdx.x; c < p.l.C; c += gridDim.x) {
    double sum = 0;
    for (int64_t j = threadIdx.x; j < p.l.count(); j += blockDim.x) sum += double(Load(x[p.l.Offset(c, j)]));
    double mean = BlockSum(sum, sh) / n;
    double sq = 0;
    for (int64_t j = threadIdx.x; j < p.l.count(); j += blockDim.x) {
      double d = double(Load(x[p.l.Offset(c, j)])) - mean;
      sq += d * d;
    }
    double var = BlockSum(sq, sh) / n;
    double a = LoadAny(p.scale, p.st, c) / sqrt(var + p.eps);
    double shift = LoadAny(p.bias, p.bt, c) - mean * a;
    for (int64_t j = threadIdx.x; j < p.l.count(); j += blockDim.x) {
      int64_t off = p.l.Offset(c, j);
      y[off] = Store<T>(A(Load(x[off])) * A(a) + A(shift));
    }
    if (threadIdx.x == 0) {
      if (p.mean) StoreAny(p.mean, p.mt, c, mean);
      if (p.var) StoreAny(p.var, p.vt, c, var);
    }
  }
}

class BatchNormTrainingKernel : public Kernel {
 public:
  Status Init(const KernelArgs& args, CudaContext&) override {
    const Tensor* x = args.in(0);
    if (!x || !IsFloatType(x->dtype)) return args.Error("X must be a float tensor");
    PRECIS_RETURN_IF_ERROR(ChannelsOf(args, *x, &p_.l));
    if (p_.l.count() < 1) return args.Error("a batch without values has no statistics");
    PRECIS_RETURN_IF_ERROR(CheckChannelVector(args, args.in(1), p_.l.C, "scale"));
    PRECIS_RETURN_IF_ERROR(CheckChannelVector(args, args.in(2), p_.l.C, "B"));
    if (!args.out(0) || args.out(0)->dims != x->dims || args.out(0)->dtype != x->dtype) return args.Error("Y must have X's type and shape");
    for (size_t i = 1; i < 3; ++i)
      if (args.out(i)) PRECIS_RETURN_IF_ERROR(CheckChannelVector(args, args.out(i), p_.l.C, i == 1 ? "the batch mean" : "the batch variance"));
    p_.eps = double(args.attrs.Float("epsilon", 1e-5f));
    return Status::Ok();
  }

  Status Run(const KernelArgs& args, CudaContext& ctx) override {
    BnTrainParams p = p_;
    p.scale = args.in(1)->data;
    p.bias = args.in(2)->data;
    p.st = args.in(1)->dtype;
    p.bt = args.in(2)->dtype;
    if (args.out(1)) p.mean = args.out(1)->data, p.mt = args.out(1)->dtype;
    if (args.out(2)) p.var = args.out(2)->data, p.vt = args.out(2)->dtype;
    DispatchFloat(args.in(0)->dtype, [&](auto tag) {
      using T = decltype(tag);
      BnTrainKernel<T><<<ChannelBlocks(p.l.C), kThreads, 0, ctx.stream>>>(args.in(0)->As<T>(), args.out(0)->As<T>(), p);
    });
    PRECIS_CUDA_CHECK(args, cudaGetLastError());
    return Status::Ok();
  }

 private:
  BnTrainParams p_;
};

// ---- BatchNormalizationTrainingGrad -----------------------------------------------------------
// With xhat = (x - mean) * r, r = 1/sqrt(var + eps), M values per channel:
//   dB = sum(dY), dscale = sum(dY * xhat), dX = scale * r / M * (M * dY - dB - xhat * dscale).

struct BnGradParams {
  Channels l;
  double eps = 0;
  const void *scale = nullptr, *mean = nullptr, *var = nullptr;
  void *dscale = nullptr, *dbias = nullptr;  // optional outputs
  DataType st = DataType::kF32, mt = DataType::kF32, vt = DataType::kF32, dst = DataType::kF32, dbt = DataType::kF32;
};

template <typename T>
__global__ void __launch_bounds__(kThreads) BnGradKernel(const T* g, const T* x, T* dx, BnGradParams p) {
  __shared__ double sh[32];
  const double m = double(p.l.count());
  for (int64_t c = blockIdx.x; c < p.l.C; c += gridDim.x) {
    double mean = LoadAny(p.mean, p.mt, c), r = 1.0 / sqrt(LoadAny(p.var, p.vt, c) + p.eps);
    double db = 0, ds = 0;
    for (int64_t j = threadIdx.x; j < p.l.count(); j += blockDim.x) {
      int64_t off = p.l.Offset(c, j);
      double gv = double(Load(g[off]));
      db += gv;
      ds += gv * (double(Load(x[off])) - mean) * r;
    }
    db = BlockSum(db, sh);
    ds = BlockSum(ds, sh);
    if (threadIdx.x == 0) {
      if (p.dscale) StoreAny(p.dscale, p.dst, c, ds);
      if (p.dbias) StoreAny(p.dbias, p.dbt, c, db);
    }
    if (!dx) continue;
    double k = LoadAny(p.scale, p.st, c) * r / m;
    for (int64_t j = threadIdx.x; j < p.l.count(); j += blockDim.x) {
      int64_t off = p.l.Offset(c, j);
      double xhat = (double(Load(x[off])) - mean) * r;
      dx[off] = Store<T>(k * (m * double(Load(g[off])) - db - xhat * ds));
    }
  }
}

class BatchNormTrainingGradKernel : public Kernel {
 public:
  Status Init(const KernelArgs& args, CudaContext&) override {
    const Tensor *dy = args.in(0), *x = args.in(1);
    if (!dy || !x || !IsFloatType(x->dtype) || dy->dtype != x->dtype || dy->dims != x->dims)
      return args.Error("dY and X must be float tensors of one type and shape");
    PRECIS_RETURN_IF_ERROR(ChannelsOf(args, *x, &p_.l));
    const char* names[] = {"", "", "scale", "mean", "var"};
    for (size_t i = 2; i < 5; ++i) PRECIS_RETURN_IF_ERROR(CheckChannelVector(args, args.in(i), p_.l.C, names[i]));
    if (args.out(0) && (args.out(0)->dims != x->dims || args.out(0)->dtype != x->dtype)) return args.Error("dX must have X's type and shape");
    for (size_t i = 1; i < 3; ++i)
      if (args.out(i)) PRECIS_RETURN_IF_ERROR(CheckChannelVector(args, args.out(i), p_.l.C, i == 1 ? "dscale" : "dB"));
    p_.eps = double(args.attrs.Float("epsilon", 1e-5f));
    return Status::Ok();
  }

  Status Run(const KernelArgs& args, CudaContext& ctx) override {
    BnGradParams p = p_;
    p.scale = args.in(2)->data, p.st = args.in(2)->dtype;
    p.mean = args.in(3)->data, p.mt = args.in(3)->dtype;
    p.var = args.in(4)->data, p.vt = args.in(4)->dtype;
    if (args.out(1)) p.dscale = args.out(1)->data, p.dst = args.out(1)->dtype;
    if (args.out(2)) p.dbias = args.out(2)->data, p.dbt = args.out(2)->dtype;
    DispatchFloat(args.in(1)->dtype, [&](auto tag) {
      using T = decltype(tag);
      T* dx = args.out(0) ? args.out(0)->As<T>() : nullptr;
      BnGradKernel<T><<<ChannelBlocks(p.l.C), kThreads, 0, ctx.stream>>>(args.in(0)->As<T>(), args.in(1)->As<T>(), dx, p);
    });
    PRECIS_CUDA_CHECK(args, cudaGetLastError());
    return Status::Ok();
  }

 private:
  BnGradParams p_;
};

// ---- DropoutTraining --------------------------------------------------------------------------

template <typename T>
struct DropoutFn {
  const T* x;
  T* y;
  uint8_t* mask;
  const int64_t *seed, *counter;
  uint32_t threshold, stream;
  float scale;
  __device__ void operator()(int64_t i) const {
    using A = TrainAcc<T>;
    bool keep = DropoutWord(uint64_t(*seed), uint64_t(*counter), stream, uint64_t(i)) >= threshold;
    y[i] = Store<T>(keep ? A(Load(x[i])) * A(scale) : A(0));
    if (mask) mask[i] = keep ? 1 : 0;
  }
};

class DropoutTrainingKernel : public Kernel {
 public:
  Status Init(const KernelArgs& args, CudaContext&) override {
    const Tensor* x = args.in(0);
    if (!x || !IsFloatType(x->dtype)) return args.Error("X must be a float tensor");
    for (size_t i = 1; i < 3; ++i)
      if (!args.in(i) || args.in(i)->dtype != DataType::kI64 || args.in(i)->numel != 1)
        return args.Error(std::string(i == 1 ? "seed" : "counter") + " must be an i64 scalar");
    if (!args.out(0) || args.out(0)->dims != x->dims || args.out(0)->dtype != x->dtype) return args.Error("Y must have X's type and shape");
    if (args.out(1) && (args.out(1)->dtype != DataType::kBool || args.out(1)->numel != x->numel)) return args.Error("mask must be bool of X's shape");
    float ratio = args.attrs.Float("ratio", -1.0f);
    if (!(ratio >= 0.0f && ratio < 1.0f)) return args.Error("ratio " + std::to_string(ratio) + " is outside [0, 1)");
    threshold_ = DropoutThreshold(ratio);
    scale_ = 1.0f / (1.0f - ratio);
    stream_ = uint32_t(args.attrs.Int("stream", 0));
    return Status::Ok();
  }

  Status Run(const KernelArgs& args, CudaContext& ctx) override {
    const int64_t* seed = args.in(1)->As<int64_t>();
    const int64_t* counter = args.in(2)->As<int64_t>();
    uint8_t* mask = args.out(1) ? args.out(1)->As<uint8_t>() : nullptr;
    cudaError_t e = cudaSuccess;
    DispatchFloat(args.in(0)->dtype, [&](auto tag) {
      using T = decltype(tag);
      e = ForEach(args.in(0)->numel, ctx.stream,
                  DropoutFn<T>{args.in(0)->As<T>(), args.out(0)->As<T>(), mask, seed, counter, threshold_, stream_, scale_});
    });
    PRECIS_CUDA_CHECK(args, e);
    return Status::Ok();
  }

 private:
  uint32_t threshold_ = 0, stream_ = 0;
  float scale_ = 1;
};

// ---- ReluGrad ---------------------------------------------------------------------------------

template <typename G, typename X>
struct ReluGradFn {
  const G* g;
  const X* x;
  G* dx;
  __device__ void operator()(int64_t i) const { dx[i] = Load(x[i]) > Compute<X>(0) ? g[i] : Store<G>(Compute<G>(0)); }
};

class ReluGradKernel : public Kernel {
 public:
  Status Init(const KernelArgs& args, CudaContext&) override {
    const Tensor *dy = args.in(0), *x = args.in(1), *dx = args.out(0);
    if (!dy || !x || !dx || !IsFloatType(dy->dtype) || !IsFloatType(x->dtype)) return args.Error("dY and X must be float tensors");
    if (dy->dims != x->dims || dx->dims != x->dims || dx->dtype != dy->dtype) return args.Error("dY, X and dX must have one shape, dX dY's dtype");
    return Status::Ok();
  }

  Status Run(const KernelArgs& args, CudaContext& ctx) override {
    cudaError_t e = cudaSuccess;
    DispatchFloat(args.in(0)->dtype, [&](auto gtag) {
      DispatchFloat(args.in(1)->dtype, [&](auto xtag) {
        using G = decltype(gtag);
        using X = decltype(xtag);
        e = ForEach(args.in(0)->numel, ctx.stream, ReluGradFn<G, X>{args.in(0)->As<G>(), args.in(1)->As<X>(), args.out(0)->As<G>()});
      });
    });
    PRECIS_CUDA_CHECK(args, e);
    return Status::Ok();
  }
};

// ---- UnscaleGradients -------------------------------------------------------------------------

constexpr int kMaxChunk = 24;          // gradients per launch (the parameters stay under 1 KiB)
constexpr int64_t kUnscaleItems = 8;   // elements per thread before a tensor gets another block

struct UnscaleChunk {
  int count = 0;
  const void* in[kMaxChunk] = {};
  void* out[kMaxChunk] = {};
  int64_t numel[kMaxChunk] = {};
  int64_t first_block[kMaxChunk + 1] = {};  // tensor t owns blocks [first_block[t], first_block[t + 1])
  DataType dtype[kMaxChunk] = {};
};

__global__ void ClearFlagKernel(uint8_t* flag) {
  if (threadIdx.x == 0) *flag = 0;
}

template <typename T>
__device__ __forceinline__ bool UnscaleRange(const void* in, void* out, int64_t begin, int64_t n, int64_t step, float inv) {
  using A = TrainAcc<T>;
  const T* g = static_cast<const T*>(in);
  T* o = static_cast<T*>(out);
  bool bad = false;
  for (int64_t j = begin; j < n; j += step) {
    T raw = g[j];
    A v = A(Load(raw));
    bad |= !isfinite(v);
    o[j] = inv == 1.0f ? raw : Store<T>(v * A(inv));
  }
  return bad;
}

__global__ void __launch_bounds__(kThreads) UnscaleKernel(UnscaleChunk c, const float* inv_scale, uint8_t* found) {
  int t = 0;
  while (t + 1 < c.count && int64_t(blockIdx.x) >= c.first_block[t + 1]) ++t;
  int64_t blocks = c.first_block[t + 1] - c.first_block[t];
  int64_t begin = (int64_t(blockIdx.x) - c.first_block[t]) * blockDim.x + threadIdx.x, step = blocks * blockDim.x;
  float inv = *inv_scale;
  bool bad = false;
  switch (c.dtype[t]) {
    case DataType::kF16: bad = UnscaleRange<half>(c.in[t], c.out[t], begin, c.numel[t], step, inv); break;
    case DataType::kBF16: bad = UnscaleRange<bf16>(c.in[t], c.out[t], begin, c.numel[t], step, inv); break;
    case DataType::kF64: bad = UnscaleRange<double>(c.in[t], c.out[t], begin, c.numel[t], step, inv); break;
    default: bad = UnscaleRange<float>(c.in[t], c.out[t], begin, c.numel[t], step, inv); break;
  }
  if (bad) *found = 1;  // every writer stores the same value
}

class UnscaleGradientsKernel : public Kernel {
 public:
  Status Init(const KernelArgs& args, CudaContext&) override {
    size_t n = args.inputs.size();
    if (n < 2 || args.outputs.size() != n) return args.Error("needs inv_scale, the gradients, their outputs and found_inf");
    if (!args.in(0) || args.in(0)->dtype != DataType::kF32 || args.in(0)->numel != 1) return args.Error("inv_scale must be an f32 scalar");
    for (size_t i = 1; i < n; ++i) {
      const Tensor *g = args.in(i), *o = args.out(i - 1);
      if (!g || !IsFloatType(g->dtype)) return args.Error("gradient " + std::to_string(i) + " must be a float tensor");
      if (!o || o->dtype != g->dtype || o->numel != g->numel) return args.Error("output " + std::to_string(i - 1) + " must have its gradient's type");
    }
    const Tensor* f = args.out(n - 1);
    if (!f || f->dtype != DataType::kBool || f->numel != 1) return args.Error("found_inf must be a bool scalar");
    return Status::Ok();
  }

  Status Run(const KernelArgs& args, CudaContext& ctx) override {
    uint8_t* found = args.out(args.outputs.size() - 1)->As<uint8_t>();
    const float* inv = args.in(0)->As<float>();
    ClearFlagKernel<<<1, 32, 0, ctx.stream>>>(found);
    PRECIS_CUDA_CHECK(args, cudaGetLastError());
    UnscaleChunk c;
    auto flush = [&]() -> Status {
      if (c.count > 0 && c.first_block[c.count] > 0) {
        UnscaleKernel<<<unsigned(c.first_block[c.count]), kThreads, 0, ctx.stream>>>(c, inv, found);
        PRECIS_CUDA_CHECK(args, cudaGetLastError());
      }
      c = UnscaleChunk{};
      return Status::Ok();
    };
    for (size_t i = 1; i < args.inputs.size(); ++i) {
      const Tensor& g = *args.in(i);
      if (g.numel == 0) continue;
      int64_t blocks = (g.numel + kThreads * kUnscaleItems - 1) / (kThreads * kUnscaleItems);
      if (blocks > 4096) blocks = 4096;
      if (c.count == kMaxChunk || c.first_block[c.count] + blocks > 65535 * 8) PRECIS_RETURN_IF_ERROR(flush());
      c.in[c.count] = g.data;
      c.out[c.count] = args.out(i - 1)->data;
      c.numel[c.count] = g.numel;
      c.dtype[c.count] = g.dtype;
      c.first_block[c.count + 1] = c.first_block[c.count] + blocks;
      ++c.count;
    }
    return flush();
  }
};

// ---- MaxPoolGrad ------------------------------------------------------------------------------

struct PoolGradParams {
  int64_t in[3], out[3], kernel[3], stride[3], dilation[3], pad[3];
  int64_t in_size = 0, out_size = 0;
};

// The kernel offsets [lo, hi) of window o along dim d that land inside the input.
__device__ __forceinline__ void Inside(const PoolGradParams& p, int d, int64_t o, int64_t* start, int64_t* lo, int64_t* hi) {
  int64_t dil = p.dilation[d], k = p.kernel[d], in = p.in[d];
  *start = o * p.stride[d] - p.pad[d];
  *lo = *start >= 0 ? 0 : (-*start + dil - 1) / dil;
  *hi = *start < in ? (k < (in - *start + dil - 1) / dil ? k : (in - *start + dil - 1) / dil) : 0;
  if (*lo > *hi) *lo = *hi;
}

template <typename T>
__global__ void __launch_bounds__(kThreads) MaxPoolGradKernel(const T* g, const T* x, T* dx, int64_t total, PoolGradParams p) {
  using C = Compute<T>;
  for (int64_t e = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; e < total; e += int64_t(gridDim.x) * blockDim.x) {
    int64_t plane = e / p.in_size, at = e % p.in_size;
    int64_t pos[3] = {at / (p.in[1] * p.in[2]), at / p.in[2] % p.in[1], at % p.in[2]};
    const T* xp = x + plane * p.in_size;
    const T* gp = g + plane * p.out_size;
    double sum = 0;
    // Windows containing pos, in the CPU's order (output index ascending: kernel offset descending).
    for (int64_t kd = p.kernel[0] - 1; kd >= 0; --kd) {
      int64_t nd = pos[0] + p.pad[0] - kd * p.dilation[0];
      if (nd < 0 || nd % p.stride[0] || nd / p.stride[0] >= p.out[0]) continue;
      for (int64_t kh = p.kernel[1] - 1; kh >= 0; --kh) {
        int64_t nh = pos[1] + p.pad[1] - kh * p.dilation[1];
        if (nh < 0 || nh % p.stride[1] || nh / p.stride[1] >= p.out[1]) continue;
        for (int64_t kw = p.kernel[2] - 1; kw >= 0; --kw) {
          int64_t nw = pos[2] + p.pad[2] - kw * p.dilation[2];
          if (nw < 0 || nw % p.stride[2] || nw / p.stride[2] >= p.out[2]) continue;
          int64_t o[3] = {nd / p.stride[0], nh / p.stride[1], nw / p.stride[2]};
          int64_t start[3], lo[3], hi[3];
          for (int d = 0; d < 3; ++d) Inside(p, d, o[d], &start[d], &lo[d], &hi[d]);
          C best = std::numeric_limits<C>::lowest();
          int64_t best_i = -1;
          for (int64_t a = lo[0]; a < hi[0]; ++a)
            for (int64_t b = lo[1]; b < hi[1]; ++b)
              for (int64_t w = lo[2]; w < hi[2]; ++w) {
                int64_t i = ((start[0] + a * p.dilation[0]) * p.in[1] + start[1] + b * p.dilation[1]) * p.in[2] + start[2] + w * p.dilation[2];
                C v = Load(xp[i]);
                if (best_i < 0 || v > best || (best != best && v == v)) {
                  best = v;
                  best_i = i;
                }
              }
          if (best_i == at) sum += double(Load(gp[(o[0] * p.out[1] + o[1]) * p.out[2] + o[2]]));
        }
      }
    }
    dx[e] = Store<T>(C(sum));
  }
}

class MaxPoolGradKernelCuda : public Kernel {
 public:
  Status Init(const KernelArgs& args, CudaContext&) override {
    const Tensor *dy = args.in(0), *x = args.in(1), *dx = args.out(0);
    if (!dy || !x || !dx) return args.Error("needs dY, X and dX");
    if (!IsFloatType(x->dtype) || dy->dtype != x->dtype || dx->dtype != x->dtype) return args.Error("dY, X and dX must be float tensors of one dtype");
    if (x->rank() < 3 || x->rank() > 5) return args.Error("X must have rank 3 to 5 (N, C and 1 to 3 spatial dims)");
    if (dx->dims != x->dims) return args.Error("dX must have X's shape");
    if (!args.attrs.Has("kernel_shape")) return args.Error("attribute kernel_shape is required");
    Window win;
    std::vector<int64_t> in(x->dims.begin() + 2, x->dims.end());
    PRECIS_RETURN_IF_ERROR(ReadWindow(args, in, args.attrs.Ints("kernel_shape"), true, &win));
    PRECIS_RETURN_IF_ERROR(CheckWindowOutput(args, *dy, x->dims[0], x->dims[1], win, "dY"));
    for (int d = 0; d < 3; ++d) {
      p_.in[d] = win.in[d], p_.out[d] = win.out[d], p_.kernel[d] = win.kernel[d];
      p_.stride[d] = win.stride[d], p_.dilation[d] = win.dilation[d], p_.pad[d] = win.pad_begin[d];
    }
    p_.in_size = win.InSize();
    p_.out_size = win.OutSize();
    return Status::Ok();
  }

  Status Run(const KernelArgs& args, CudaContext& ctx) override {
    int64_t total = args.out(0)->numel;
    if (total == 0) return Status::Ok();
    DispatchFloat(args.in(1)->dtype, [&](auto tag) {
      using T = decltype(tag);
      MaxPoolGradKernel<T><<<Blocks(total), kThreads, 0, ctx.stream>>>(args.in(0)->As<T>(), args.in(1)->As<T>(), args.out(0)->As<T>(), total, p_);
    });
    PRECIS_CUDA_CHECK(args, cudaGetLastError());
    return Status::Ok();
  }

 private:
  PoolGradParams p_;
};

}  // namespace

void RegisterTrainingKernels(KernelRegistry& r) {
  r.Register("BatchNormalizationTraining", Make<BatchNormTrainingKernel>);
  r.Register("BatchNormalizationTrainingGrad", Make<BatchNormTrainingGradKernel>);
  r.Register("DropoutTraining", Make<DropoutTrainingKernel>);
  r.Register("MaxPoolGrad", Make<MaxPoolGradKernelCuda>);
  r.Register("ReluGrad", Make<ReluGradKernel>);
  r.Register("UnscaleGradients", Make<UnscaleGradientsKernel>);
}

}  // namespace precis::rt::cuda
