// Pooling on CUDA, mirroring the CPU reference (nn_pool.cc) with its window geometry
// (ReadWindow: kernel, strides, dilations, pads, auto_pad, ceil_mode). MaxPool (with the
// optional Indices output and storage_order), AveragePool (count_include_pad counts the window
// positions inside input + explicit pads, never the ceil_mode tail) and LpPool run one thread
// per output window (MaxPool and AveragePool also channels-last, layout = "NHWC", inside the
// compiler's NHWC regions); the global pools one warp per (n, c) plane. cuDNN's pooling is not used:
// it does not cover dilations, asymmetric pads, ceil_mode's ONNX counting or Indices.
// Sums accumulate in float (double for f64); NaN loses to any number in a max and wins only an
// all-NaN window, as on the CPU.
#include <cmath>
#include <limits>

#include "runtime/cuda/kernels/nn_device.cuh"
#include "runtime/kernels/nn_window.h"

namespace precis::rt::cuda {
namespace {

enum PoolMode : int { kMaxPool = 0, kAveragePool = 1, kLpPool = 2 };

struct PoolParams {
  int64_t in[3], out[3], kernel[3], stride[3], dilation[3], pad_begin[3], pad_end[3];
  int mode = kMaxPool;
  bool count_include_pad = false, column_major = false;
  int64_t p = 2;
  int64_t channels = 0;  // > 0: layout NHWC (2-D, X and Y channels last, C = channels)
};

template <typename C> PRECIS_NN_HD C PowOf(C a, C e) {
  if constexpr (std::is_same_v<C, double>) return pow(a, e);
  else return powf(a, e);
}
template <typename C> PRECIS_NN_HD C SqrtOf(C a) {
  if constexpr (std::is_same_v<C, double>) return sqrt(a);
  else return sqrtf(a);
}

// |v|^p with the CPU's special cases for p = 1 and 2.
template <typename C> PRECIS_NN_HD C LpTerm(C v, int64_t p) {
  C a = v < C(0) ? -v : v;
  return p == 1 ? a : p == 2 ? a * a : PowOf(a, C(p));
}
template <typename C> PRECIS_NN_HD C LpRoot(C sum, int64_t p) {
  return p == 1 ? sum : p == 2 ? SqrtOf(sum) : PowOf(sum, C(1) / C(p));
}

// One output window: Y[i] (and Indices[i] for MaxPool).
template <typename T> struct PoolWindow {
  PoolParams p;
  const T* x;
  T* y;
  int64_t* indices;
  __host__ __device__ void operator()(int64_t i) const;
};

template <typename T> __host__ __device__ void PoolWindow<T>::operator()(int64_t i) const {
  using C = std::conditional_t<std::is_integral_v<T>, T, FloatAcc<T>>;
  int64_t o[3];
  // NHWC: i is (n, oh, ow, c); the window walks X with a stride of C elements.
  int64_t channel = p.channels ? i % p.channels : 0, step = p.channels ? p.channels : 1;
  int64_t spatial = p.channels ? i / p.channels : i;
  o[2] = spatial % p.out[2];
  int64_t t = spatial / p.out[2];
  o[1] = t % p.out[1];
  t /= p.out[1];
  o[0] = t % p.out[0];
  int64_t plane = t / p.out[0];
  // Per dim: window start, kernel offsets [lo, hi) inside the input, offsets inside input + pads.
  int64_t start[3], lo[3], hi[3], padded[3];
  for (int d = 0; d < 3; ++d) {
    int64_t dil = p.dilation[d], k = p.kernel[d], in = p.in[d];
    start[d] = o[d] * p.stride[d] - p.pad_begin[d];
    lo[d] = start[d] >= 0 ? 0 : (-start[d] + dil - 1) / dil;
    hi[d] = start[d] < in ? std::min(k, (in - start[d] + dil - 1) / dil) : 0;
    int64_t limit = in + p.pad_end[d];
    padded[d] = start[d] < limit ? std::min(k, (limit - start[d] + dil - 1) / dil) : 0;
    lo[d] = std::min(lo[d], std::max(hi[d], int64_t(0)));
  }
  const int64_t IH = p.in[1], IW = p.in[2], in_size = p.in[0] * IH * IW;
  const T* xp = p.channels ? x + plane * in_size * p.channels + channel : x + plane * in_size;  // plane: n in NHWC
  C best = std::numeric_limits<C>::lowest(), sum = 0;
  int64_t best_i = -1;
  for (int64_t kd = lo[0]; kd < hi[0]; ++kd)
    for (int64_t kh = lo[1]; kh < hi[1]; ++kh) {
      int64_t base = ((start[0] + kd * p.dilation[0]) * IH + start[1] + kh * p.dilation[1]) * IW + start[2];
      for (int64_t kw = lo[2]; kw < hi[2]; ++kw) {
        int64_t at = base + kw * p.dilation[2];
        C v = C(LoadN(xp[at * step]));
        if (p.mode == kMaxPool) {
          if (best_i < 0 || v > best || (best != best && v == v)) {
            best = v;
            best_i = at;
          }
        } else if constexpr (!std::is_integral_v<T>) {
          sum += p.mode == kAveragePool ? v : LpTerm(v, p.p);
        }
      }
    }
  if (p.mode == kMaxPool) {
    y[i] = StoreN<T>(best);
    if (indices) {
      int64_t at = p.column_major ? best_i % IW * IH + best_i / IW : best_i;  // (h, w) -> w * H + h
      indices[i] = best_i < 0 ? -1 : plane * in_size + at;
    }
    return;
  }
  if constexpr (!std::is_integral_v<T>) {
    if (p.mode == kAveragePool) {
      int64_t count = p.count_include_pad ? padded[0] * padded[1] * padded[2] : (hi[0] - lo[0]) * (hi[1] - lo[1]) * (hi[2] - lo[2]);
      y[i] = StoreN<T>(count > 0 ? sum / C(count) : C(0));
    } else {
      y[i] = StoreN<T>(LpRoot(sum, p.p));
    }
  }
}

template <typename T> cudaError_t Pool(const PoolParams& p, const void* x, void* y, int64_t* indices, int64_t total, cudaStream_t stream) {
  return NnLaunch(total, stream, PoolWindow<T>{p, static_cast<const T*>(x), static_cast<T*>(y), indices});
}

class PoolKernel : public Kernel {
 public:
  explicit PoolKernel(PoolMode mode) : mode_(mode) {}

  Status Init(const KernelArgs& args, CudaContext&) override {
    Tensor *x = args.in(0), *y = args.out(0), *indices = args.out(1);
    if (!x || !y) return args.Error("needs input X and output Y");
    std::string layout = args.attrs.String("layout", "NCHW");
    if (layout != "NCHW" && layout != "NHWC") return args.Error("unknown layout '" + layout + "' (NCHW or NHWC)");
    bool nhwc = layout == "NHWC";
    if (nhwc && (x->rank() != 4 || y->rank() != 4 || indices)) return args.Error("layout NHWC needs 4-D X and Y and no Indices");
    // The geometry below reads NCHW dims; an NHWC step's tensors are viewed in that order.
    Tensor xv = *x, yv = *y;
    if (nhwc) {
      xv.dims = {x->dims[0], x->dims[3], x->dims[1], x->dims[2]};
      yv.dims = {y->dims[0], y->dims[3], y->dims[1], y->dims[2]};
      x = &xv;
      y = &yv;
      params_.channels = xv.dims[1];
    }
    bool ok = DispatchFloat(x->dtype, [](auto) {}) || (mode_ == kMaxPool && DispatchInt(x->dtype, [](auto) {}));
    if (!ok) return args.Error(std::string("unsupported dtype ") + DataTypeName(x->dtype));
    if (y->dtype != x->dtype) return DtypeRefusal(args, "X and Y dtypes differ");
    if (x->rank() < 3 || x->rank() > 5) return args.Error("X must have rank 3 to 5 (N, C and 1 to 3 spatial dims)");
    if (!args.attrs.Has("kernel_shape")) return args.Error("attribute kernel_shape is required");
    std::vector<int64_t> in(x->dims.begin() + 2, x->dims.end());
    Window win;
    PRECIS_RETURN_IF_ERROR(ReadWindow(args, in, args.attrs.Ints("kernel_shape"), true, &win));
    PRECIS_RETURN_IF_ERROR(CheckWindowOutput(args, *y, x->dims[0], x->dims[1], win, "output Y"));
    if (indices) {
      if (mode_ != kMaxPool) return args.Error("only MaxPool has an Indices output");
      if (indices->dtype != DataType::kI64 || indices->dims != y->dims) return args.Error("Indices must be int64 with Y's shape");
      params_.column_major = args.attrs.Int("storage_order", 0) != 0;
      if (params_.column_major && win.spatial > 2) return args.Error("storage_order=1 Indices need 1 or 2 spatial dims");
    }
    params_.count_include_pad = args.attrs.Int("count_include_pad", 0) != 0;
    params_.p = args.attrs.Int("p", 2);
    if (mode_ == kLpPool && params_.p <= 0) return args.Error("p must be positive");
    params_.mode = mode_;
    for (size_t d = 0; d < 3; ++d) {
      params_.in[d] = win.in[d];
      params_.out[d] = win.out[d];
      params_.kernel[d] = win.kernel[d];
      params_.stride[d] = win.stride[d];
      params_.dilation[d] = win.dilation[d];
      params_.pad_begin[d] = win.pad_begin[d];
      params_.pad_end[d] = win.pad_end[d];
    }
    dtype_ = x->dtype;
    total_ = y->numel;
    return Status::Ok();
  }

  Status Run(const KernelArgs& args, CudaContext& ctx) override {
    if (total_ == 0) return Status::Ok();
    int64_t* indices = args.out(1) ? args.out(1)->As<int64_t>() : nullptr;
    const void* x = args.in(0)->data;
    void* y = args.out(0)->data;
    cudaError_t e = cudaErrorInvalidValue;
    auto launch = [&](auto tag) { e = Pool<decltype(tag)>(params_, x, y, indices, total_, ctx.stream); };
    if (!DispatchFloat(dtype_, launch)) DispatchInt(dtype_, launch);
    PRECIS_CUDA_CHECK(args, e);
    return Status::Ok();
  }

 private:
  PoolMode mode_;
  PoolParams params_{};
  DataType dtype_ = DataType::kUndefined;
  int64_t total_ = 0;
};

// One warp per (n, c) plane.
constexpr int kPlanesPerBlock = kThreads / 32;

// A lane's share of one plane: elements lane, lane + lanes, ... combined, and the combination of
// two shares. fmax drops NaN against a number: a max that ignores NaN unless all are NaN, as
// the CPU's.
// The plane's elements are `stride` apart (1 in NCHW, C in NHWC).
template <typename T>
PRECIS_NN_HD FloatAcc<T> PlanePart(const T* xp, int64_t plane_size, int lane, int lanes, int mode, int64_t p, int64_t stride = 1) {
  using C = FloatAcc<T>;
  C r = mode == kMaxPool ? C(NAN) : C(0);
  for (int64_t i = lane; i < plane_size; i += lanes) {
    C v = C(LoadN(xp[i * stride]));
    r = mode == kMaxPool ? fmax(r, v) : r + (mode == kAveragePool ? v : LpTerm(v, p));
  }
  return r;
}
template <typename C> PRECIS_NN_HD C PlaneResult(C r, int64_t plane_size, int mode, int64_t p) {
  if (mode == kMaxPool) return plane_size ? r : C(0);
  if (mode == kAveragePool) return plane_size ? r / C(plane_size) : C(0);
  return LpRoot(r, p);
}

template <typename T>
__global__ void GlobalPoolKernel(const T* x, T* y, int64_t planes, int64_t plane_size, int mode, int64_t p) {
  using C = FloatAcc<T>;
  int64_t plane = int64_t(blockIdx.x) * kPlanesPerBlock + threadIdx.x / 32;
  int lane = threadIdx.x & 31;
  if (plane >= planes) return;  // the whole warp leaves together
  C r = PlanePart(x + plane * plane_size, plane_size, lane, 32, mode, p);
  if (mode == kMaxPool)
    for (int o = 16; o > 0; o >>= 1) r = fmax(r, __shfl_xor_sync(0xffffffffu, r, o));
  else
    r = WarpSum(r);
  if (lane == 0) y[plane] = StoreN<T>(PlaneResult(r, plane_size, mode, p));
}

// NHWC (X [N, H, W, C], Y [N, 1, 1, C]): a block serves 32 channels of one image, its 8 warps
// each taking every 8th position of the plane, so that neighbouring threads read neighbouring
// channels (coalesced) and a large plane is shared by 256 threads; the 8 partial results per
// channel then combine in shared memory (a tree: + 4, + 2, + 1).
constexpr int kNhwcChannels = 32, kNhwcGroups = kThreads / kNhwcChannels;

template <typename C> PRECIS_NN_HD C Combine(C a, C b, int mode) { return mode == kMaxPool ? fmax(a, b) : a + b; }

template <typename T>
__global__ void GlobalPoolNhwcKernel(const T* x, T* y, int64_t batch, int64_t channels, int64_t plane_size, int mode, int64_t p) {
  using C = FloatAcc<T>;
  __shared__ C part[kNhwcGroups][kNhwcChannels];
  int lane = int(threadIdx.x) % kNhwcChannels, group = int(threadIdx.x) / kNhwcChannels;
  int64_t c = int64_t(blockIdx.x) * kNhwcChannels + lane;
  for (int64_t n = blockIdx.y; n < batch; n += gridDim.y) {  // every thread of the block runs the same iterations
    C r = mode == kMaxPool ? C(NAN) : C(0);
    if (c < channels) r = PlanePart(x + n * plane_size * channels + c, plane_size, group, kNhwcGroups, mode, p, channels);
    part[group][lane] = r;
    __syncthreads();
    for (int s = kNhwcGroups / 2; s > 0; s /= 2) {
      if (group < s) part[group][lane] = Combine(part[group][lane], part[group + s][lane], mode);
      __syncthreads();
    }
    if (group == 0 && c < channels) y[n * channels + c] = StoreN<T>(PlaneResult(part[0][lane], plane_size, mode, p));
    __syncthreads();  // part is reused by the next image
  }
}

// NHWC when `nhwc` (channels = C, planes = N * C), else NCHW planes.
template <typename T>
cudaError_t GlobalPool(const void* x, void* y, int64_t planes, int64_t plane_size, bool nhwc, int64_t channels, int mode, int64_t p,
                       cudaStream_t stream) {
  const T* px = static_cast<const T*>(x);
  T* py = static_cast<T*>(y);
#ifdef PRECIS_NN_HOST_EMULATION
  (void)stream;
  using C = FloatAcc<T>;
  for (int64_t plane = 0; plane < planes; ++plane) {
    if (!nhwc) {
      py[plane] = StoreN<T>(PlaneResult(PlanePart(px + plane * plane_size, plane_size, 0, 1, mode, p), plane_size, mode, p));
      continue;
    }
    // The device kernel's order: 8 strided partial results, combined as its tree.
    const T* xp = px + plane / channels * plane_size * channels + plane % channels;
    C part[kNhwcGroups];
    for (int g = 0; g < kNhwcGroups; ++g) part[g] = PlanePart(xp, plane_size, g, kNhwcGroups, mode, p, channels);
    for (int s = kNhwcGroups / 2; s > 0; s /= 2)
      for (int g = 0; g < s; ++g) part[g] = Combine(part[g], part[g + s], mode);
    py[plane] = StoreN<T>(PlaneResult(part[0], plane_size, mode, p));
  }
  return cudaSuccess;
#else
  if (nhwc) {
    if (planes == 0) return cudaSuccess;
    int64_t batch = planes / channels;
    dim3 grid(unsigned((channels + kNhwcChannels - 1) / kNhwcChannels), unsigned(std::min<int64_t>(batch, 65535)));
    GlobalPoolNhwcKernel<T><<<grid, kThreads, 0, stream>>>(px, py, batch, channels, plane_size, mode, p);
    return cudaGetLastError();
  }
  int64_t blocks = (planes + kPlanesPerBlock - 1) / kPlanesPerBlock;
  GlobalPoolKernel<T><<<unsigned(blocks), kThreads, 0, stream>>>(px, py, planes, plane_size, mode, p);
  return cudaGetLastError();
#endif
}

class GlobalPoolKernelBase : public Kernel {
 public:
  explicit GlobalPoolKernelBase(PoolMode mode) : mode_(mode) {}

  Status Init(const KernelArgs& args, CudaContext&) override {
    Tensor *x = args.in(0), *y = args.out(0);
    if (!x || !y) return args.Error("needs input X and output Y");
    if (!DispatchFloat(x->dtype, [](auto) {})) return args.Error(std::string("unsupported dtype ") + DataTypeName(x->dtype));
    if (y->dtype != x->dtype) return DtypeRefusal(args, "X and Y dtypes differ");
    if (x->rank() < 2) return args.Error("X must have rank >= 2 (N, C, spatial dims)");
    std::string layout = args.attrs.String("layout", "NCHW");
    if (layout != "NCHW" && layout != "NHWC") return args.Error("unknown layout '" + layout + "' (NCHW or NHWC)");
    nhwc_ = layout == "NHWC";
    if (nhwc_) {
      if (x->rank() != 4 || y->dims != std::vector<int64_t>{x->dims[0], 1, 1, x->dims[3]})
        return args.Error("layout NHWC needs a 4-D X and Y of shape [N, 1, 1, C]");
      channels_ = x->dims[3];
    } else {
      channels_ = x->dims[1];
      std::vector<int64_t> want(x->dims.size(), 1);
      want[0] = x->dims[0];
      want[1] = channels_;
      if (y->dims != want) return args.Error("Y must have shape [N, C, 1, ...]");
    }
    planes_ = x->dims[0] * channels_;
    plane_size_ = planes_ ? x->numel / planes_ : 0;
    p_ = args.attrs.Int("p", 2);
    if (mode_ == kLpPool && p_ <= 0) return args.Error("p must be positive");
    if ((planes_ + kPlanesPerBlock - 1) / kPlanesPerBlock > int64_t(INT32_MAX)) return args.Error("too many planes");
    dtype_ = x->dtype;
    return Status::Ok();
  }

  Status Run(const KernelArgs& args, CudaContext& ctx) override {
    if (planes_ == 0) return Status::Ok();
    cudaError_t e = cudaErrorInvalidValue;
    DispatchFloat(dtype_, [&](auto tag) {
      e = GlobalPool<decltype(tag)>(args.in(0)->data, args.out(0)->data, planes_, plane_size_, nhwc_, channels_, mode_, p_, ctx.stream);
    });
    PRECIS_CUDA_CHECK(args, e);
    return Status::Ok();
  }

 private:
  PoolMode mode_;
  DataType dtype_ = DataType::kUndefined;
  bool nhwc_ = false;
  int64_t planes_ = 0, plane_size_ = 0, channels_ = 0, p_ = 2;
};

}  // namespace

std::unique_ptr<Kernel> MakeMaxPoolKernel() { return std::make_unique<PoolKernel>(kMaxPool); }
std::unique_ptr<Kernel> MakeAveragePoolKernel() { return std::make_unique<PoolKernel>(kAveragePool); }
std::unique_ptr<Kernel> MakeLpPoolKernel() { return std::make_unique<PoolKernel>(kLpPool); }
std::unique_ptr<Kernel> MakeGlobalMaxPoolKernel() { return std::make_unique<GlobalPoolKernelBase>(kMaxPool); }
std::unique_ptr<Kernel> MakeGlobalAveragePoolKernel() { return std::make_unique<GlobalPoolKernelBase>(kAveragePool); }
std::unique_ptr<Kernel> MakeGlobalLpPoolKernel() { return std::make_unique<GlobalPoolKernelBase>(kLpPool); }

}  // namespace precis::rt::cuda
