// CUDA BatchNormalization (inference form), InstanceNormalization, GroupNormalization and
// LayerNormalization, mirroring runtime/cpu/kernels/nn_norm.cc.
//
// Statistics are the CPU's two passes (mean, then mean of squared deviations) accumulated in
// double over one slice of reduce_common.cuh (a row for LayerNormalization, an (n, group)
// block of channels for Instance/GroupNormalization); the normalized value is computed in float
// (double for f64) from the same double-derived factors as the CPU, and rounded once. Each
// slice's statistics are complete (a slice-wide reduction) before any of its outputs is written,
// and every element is then read and written by the same thread: Y may share X's storage.
// Parameter vectors (scale, bias, mean, var) may have any float dtype, read as double.
// BatchNormalization also runs with layout = "NHWC" (inside the compiler's NHWC regions): the
// channel of element i is then i % C.
#include "runtime/base/half.h"
#include "runtime/cuda/kernels/reduce_common.cuh"
#include "runtime/cuda/kernels/register.h"

namespace precis::rt::cuda {
namespace reduce {
namespace {

// The arithmetic type of the normalized values: float, double for f64 (nn_norm.cc's Acc).
template <typename T>
using NormAcc = std::conditional_t<std::is_same_v<T, double>, double, float>;

Status CheckFloatTensors(const KernelArgs& args, size_t inputs) {
  if (!args.out(0)) return args.Error("output Y is missing");
  for (size_t i = 0; i < inputs; ++i) {
    const Tensor* t = args.in(i);
    if (!t) return args.Error("input " + std::to_string(i) + " is missing");
    if (!DispatchFloat(t->dtype, [](auto) {}))
      return DtypeError(args, "input " + std::to_string(i) + " has unsupported dtype " + DataTypeName(t->dtype));
  }
  if (args.out(0)->dims != args.in(0)->dims) return args.Error("Y must have X's type and shape");
  if (args.out(0)->dtype != args.in(0)->dtype) return DtypeError(args, "Y must have X's type and shape");
  return Status::Ok();
}

Status CheckVector(const KernelArgs& args, size_t i, int64_t n, const char* what) {
  const Tensor* t = args.in(i);
  if (!t || t->numel != n) return args.Error(std::string(what) + " must have " + std::to_string(n) + " values");
  return Status::Ok();
}

// A host-readable float tensor of any float dtype, as doubles.
std::vector<double> HostDoubles(const Tensor& t) {
  std::vector<double> v(size_t(t.numel));
  for (int64_t i = 0; i < t.numel; ++i) {
    switch (t.dtype) {
      case DataType::kF16: v[size_t(i)] = HalfToFloat(t.As<uint16_t>()[i]); break;
      case DataType::kBF16: v[size_t(i)] = Bf16ToFloat(t.As<uint16_t>()[i]); break;
      case DataType::kF64: v[size_t(i)] = t.As<double>()[i]; break;
      default: v[size_t(i)] = t.As<float>()[i]; break;
    }
  }
  return v;
}

// ---- BatchNormalization: y = x * a[c] + b[c], a = scale / sqrt(var + eps), b = B - mean * a ----

struct BnParams {
  const void *scale, *bias, *mean, *var;
  DataType st, bt, mt, vt;
};

// Folds the parameters on the device (when they are not constants), as the CPU's Fold.
template <typename A>
__global__ void BnFoldKernel(BnParams p, double eps, int64_t channels, A* ab) {
  for (int64_t c = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; c < channels; c += int64_t(gridDim.x) * blockDim.x) {
    double a = LoadAsDouble(p.scale, p.st, c) / sqrt(LoadAsDouble(p.var, p.vt, c) + eps);
    ab[c] = A(a);
    ab[channels + c] = A(LoadAsDouble(p.bias, p.bt, c) - LoadAsDouble(p.mean, p.mt, c) * a);
  }
}

struct BnPlan {
  int64_t numel = 0, channels = 0, inner = 0;  // inner = 1 for NHWC: channels are X's last axis
  double eps = 0;
  const void* folded = nullptr;  // device a[C], b[C] in NormAcc, when the parameters are constants
};

template <typename T>
cudaError_t LaunchBatchNorm(const BnPlan& p, const KernelArgs& args, void* scratch, cudaStream_t stream) {
  using A = NormAcc<T>;
  const A* ab = static_cast<const A*>(p.folded);
  if (!ab) {
    BnParams bp{args.in(1)->data, args.in(2)->data, args.in(3)->data, args.in(4)->data,
                args.in(1)->dtype, args.in(2)->dtype, args.in(3)->dtype, args.in(4)->dtype};
    BnFoldKernel<A><<<Blocks(p.channels), kThreads, 0, stream>>>(bp, p.eps, p.channels, static_cast<A*>(scratch));
    cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess) return e;
    ab = static_cast<const A*>(scratch);
  }
  const T* x = args.in(0)->As<T>();
  T* y = args.out(0)->As<T>();
  int64_t channels = p.channels, inner = p.inner;
  return ForEach(p.numel, stream, [=] __device__(int64_t i) {
    int64_t c = (i / inner) % channels;
    y[i] = Store<T>(A(Load(x[i])) * ab[c] + ab[channels + c]);
  });
}

using BnLaunch = cudaError_t (*)(const BnPlan& p, const KernelArgs& args, void* scratch, cudaStream_t stream);

class BatchNormKernel : public Kernel {
 public:
  Status Init(const KernelArgs& args, CudaContext& ctx) override {
    PRECIS_RETURN_IF_ERROR(CheckFloatTensors(args, 5));
    const Tensor& x = *args.in(0);
    if (x.rank() < 2) return args.Error("X must have rank >= 2");
    for (size_t i = 1; i < args.outputs.size(); ++i)
      if (args.out(i)) return args.Error("training outputs are not supported");
    std::string layout = args.attrs.String("layout", "NCHW");
    if (layout != "NCHW" && layout != "NHWC") return args.Error("unknown layout '" + layout + "' (NCHW or NHWC)");
    bool nhwc = layout == "NHWC";
    if (nhwc && x.rank() != 4) return args.Error("layout NHWC needs a 4-D X");
    p_.channels = nhwc ? x.dims[3] : x.dims[1];
    const char* names[] = {"", "scale", "B", "mean", "var"};
    for (size_t i = 1; i < 5; ++i) PRECIS_RETURN_IF_ERROR(CheckVector(args, i, p_.channels, names[i]));
    p_.numel = x.numel;
    p_.inner = nhwc ? 1 : x.dims[0] * p_.channels > 0 ? x.numel / (x.dims[0] * p_.channels) : 0;
    p_.eps = double(args.attrs.Float("epsilon", 1e-5f));
    bool f64 = x.dtype == DataType::kF64;
    DispatchFloat(x.dtype, [&](auto tag) { launch_ = &LaunchBatchNorm<decltype(tag)>; });
    acc_bytes_ = f64 ? sizeof(double) : sizeof(float);
    if (args.in(1)->is_constant && args.in(2)->is_constant && args.in(3)->is_constant && args.in(4)->is_constant) {
      std::vector<double> scale = HostDoubles(*args.in(1)), bias = HostDoubles(*args.in(2)), mean = HostDoubles(*args.in(3)),
                          var = HostDoubles(*args.in(4));
      std::vector<double> ab(size_t(2 * p_.channels));
      for (size_t c = 0; c < size_t(p_.channels); ++c) {
        ab[c] = scale[c] / std::sqrt(var[c] + p_.eps);
        ab[size_t(p_.channels) + c] = bias[c] - mean[c] * ab[c];
      }
      if (f64) {
        PRECIS_ASSIGN_OR_RETURN(p_.folded, UploadTable(ctx, ab, args.node + ": folded parameters"));
      } else {
        std::vector<float> abf(ab.begin(), ab.end());
        PRECIS_ASSIGN_OR_RETURN(p_.folded, UploadTable(ctx, abf, args.node + ": folded parameters"));
      }
    }
    return Status::Ok();
  }

  size_t ScratchBytes() const override { return p_.folded ? 0 : size_t(2 * p_.channels) * acc_bytes_; }

  Status Run(const KernelArgs& args, CudaContext& ctx) override {
    PRECIS_CUDA_CHECK(args, launch_(p_, args, ctx.scratch, ctx.stream));
    return Status::Ok();
  }

 private:
  BnPlan p_;
  BnLaunch launch_ = nullptr;
  size_t acc_bytes_ = sizeof(float);
};

// ---- InstanceNormalization and GroupNormalization ----------------------------------------------

struct ChannelNormPlan {
  Slices stats;   // one slice per (n, group): its channels' elements as one contiguous run
  Slices write;   // the same slices as runs of channels (the run index is the channel in the group)
  Layout l, wl;   // the same threads, wl splitting the channels where they are short
  int64_t groups = 1, per_group = 1;
  bool per_group_params = false;
  double eps = 0;
};

template <typename T>
__global__ void __launch_bounds__(kMaxSliceThreads) ChannelNormKernel(ChannelNormPlan p, const T* x, const void* scale, DataType st, const void* bias, DataType bt, T* y) {
  using A = NormAcc<T>;
  PRECIS_REDUCE_SHARED(smem);
  const Layout& l = p.l;
  int xi = l.x(), yi = l.y();
  int64_t tiles = (p.stats.count + l.X - 1) / l.X;
  for (int64_t t = blockIdx.x; t < tiles; t += gridDim.x) {
    int64_t slice = t * l.X + xi;
    bool valid = slice < p.stats.count;
    int64_t base = valid ? p.stats.kept(slice) : 0;
    Moments m = SliceMoments(x, p.stats, l, valid, base, yi, smem);
    if (!valid) continue;
    double n = double(p.stats.size());
    double var = n > 0 ? m.sq / n : 0.0;
    double inv_std = 1.0 / sqrt(var + p.eps);
    int64_t g = slice % p.groups, cur = -1;
    A a = 0, b = 0;
    Visit(p.write, p.wl, base, yi, [&](int64_t off, int64_t c, int64_t) {
      if (c != cur) {  // nn_norm.cc's per-channel factors, in double, then rounded
        cur = c;
        int64_t q = p.per_group_params ? g : g * p.per_group + c;
        double sc = LoadAsDouble(scale, st, q);
        a = A(inv_std * sc);
        b = A(LoadAsDouble(bias, bt, q) - m.mean * inv_std * sc);
      }
      y[off] = Store<T>(A(Load(x[off])) * a + b);
    });
  }
}

template <typename T>
cudaError_t LaunchChannelNorm(const ChannelNormPlan& p, const KernelArgs& args, cudaStream_t stream) {
  if (p.stats.count <= 0) return cudaSuccess;
  ChannelNormKernel<T><<<GridFor(p.stats, p.l), unsigned(p.l.threads()), SharedBytes(p.l, sizeof(double)), stream>>>(
      p, args.in(0)->As<T>(), args.in(1)->data, args.in(1)->dtype, args.in(2)->data, args.in(2)->dtype, args.out(0)->As<T>());
  return cudaGetLastError();
}

using ChannelNormLaunch = cudaError_t (*)(const ChannelNormPlan& p, const KernelArgs& args, cudaStream_t stream);

// InstanceNormalization (one slice per (n, c)) and GroupNormalization (one per (n, group) of
// contiguous channels; before opset 21 one scale/bias per group).
class ChannelNormKernelBase : public Kernel {
 public:
  explicit ChannelNormKernelBase(bool group) : group_(group) {}

  Status Init(const KernelArgs& args, CudaContext& ctx) override {
    PRECIS_RETURN_IF_ERROR(CheckFloatTensors(args, 3));
    const Tensor& x = *args.in(0);
    if (x.rank() < 2) return args.Error("X must have rank >= 2");
    int64_t n = x.dims[0], channels = x.dims[1];
    int64_t inner = (n > 0 && channels > 0) ? x.numel / (n * channels) : 0;
    p_.eps = double(args.attrs.Float("epsilon", 1e-5f));
    p_.groups = channels;
    int64_t params = channels;
    if (group_) {
      p_.groups = args.attrs.Int("num_groups", 0);
      if (p_.groups <= 0 || channels % p_.groups != 0) return args.Error("num_groups must be positive and divide the channels");
      if (args.attrs.Int("per_group_params", 0) != 0) params = p_.groups;
    }
    PRECIS_RETURN_IF_ERROR(CheckVector(args, 1, params, "scale"));
    PRECIS_RETURN_IF_ERROR(CheckVector(args, 2, params, "bias"));
    p_.per_group_params = group_ && args.attrs.Int("per_group_params", 0) != 0;
    p_.per_group = channels / p_.groups;
    int64_t slices = n * p_.groups;
    Slices& w = p_.write;
    w.count = slices;
    w.runs = p_.per_group;
    w.run = inner;
    w.step = 1;
    if (!MakeAxisSlices(slices, p_.per_group * inner, 1, &p_.stats) || !Indexer::Make({slices}, {p_.per_group * inner}, 0, &w.kept) ||
        !Indexer::Make({p_.per_group}, {inner}, 0, &w.outer))
      return Unimplemented(args.node + ": shape too complex for the CUDA kernel");
    p_.l = ChooseLayout(p_.stats, ctx.prop);
    p_.wl = p_.l;
    p_.wl.by_runs = w.runs > 1 && w.run < p_.l.Y;
    DispatchFloat(x.dtype, [&](auto tag) { launch_ = &LaunchChannelNorm<decltype(tag)>; });
    return Status::Ok();
  }

  Status Run(const KernelArgs& args, CudaContext& ctx) override {
    PRECIS_CUDA_CHECK(args, launch_(p_, args, ctx.stream));
    return Status::Ok();
  }

 private:
  bool group_;
  ChannelNormPlan p_;
  ChannelNormLaunch launch_ = nullptr;
};

class InstanceNormKernel : public ChannelNormKernelBase {
 public:
  InstanceNormKernel() : ChannelNormKernelBase(false) {}
};
class GroupNormKernel : public ChannelNormKernelBase {
 public:
  GroupNormKernel() : ChannelNormKernelBase(true) {}
};

// ---- LayerNormalization ------------------------------------------------------------------------

struct LayerNormPlan {
  Slices s;  // one slice per row of prod(X[axis:]) elements
  Layout l;
  double eps = 0;
  const int64_t* scale_map = nullptr;  // normalized position -> Scale element; null: the same
  const int64_t* bias_map = nullptr;
};

template <typename T>
__global__ void __launch_bounds__(kMaxSliceThreads) LayerNormRows(LayerNormPlan p, const T* x, const T* scale, const T* bias, T* y, float* mean_out, float* inv_out) {
  using A = NormAcc<T>;
  PRECIS_REDUCE_SHARED(smem);
  const Layout& l = p.l;
  int xi = l.x(), yi = l.y();
  int64_t tiles = (p.s.count + l.X - 1) / l.X;
  for (int64_t t = blockIdx.x; t < tiles; t += gridDim.x) {
    int64_t row = t * l.X + xi;
    bool valid = row < p.s.count;
    int64_t base = valid ? p.s.kept(row) : 0;
    Moments m = SliceMoments(x, p.s, l, valid, base, yi, smem);
    if (!valid) continue;
    double n = double(p.s.size());
    double var = n > 0 ? m.sq / n : 0.0;
    double inv_std = 1.0 / sqrt(var + p.eps);
    A mean = A(m.mean), inv = A(inv_std);
    Visit(p.s, l, base, yi, [&](int64_t off, int64_t r, int64_t k) {
      int64_t j = r * p.s.run + k;
      A sc = A(Load(scale[p.scale_map ? p.scale_map[j] : j]));
      A b = bias ? A(Load(bias[p.bias_map ? p.bias_map[j] : j])) : A(0);
      y[off] = Store<T>((A(Load(x[off])) - mean) * inv * sc + b);
    });
    if (yi == 0) {
      if (mean_out) mean_out[row] = float(m.mean);
      if (inv_out) inv_out[row] = float(inv_std);
    }
  }
}

template <typename T>
cudaError_t LaunchLayerNorm(const LayerNormPlan& p, const KernelArgs& args, cudaStream_t stream) {
  if (p.s.count <= 0) return cudaSuccess;
  LayerNormRows<T><<<GridFor(p.s, p.l), unsigned(p.l.threads()), SharedBytes(p.l, sizeof(double)), stream>>>(
      p, args.in(0)->As<T>(), args.in(1)->As<T>(), args.in(2) ? args.in(2)->As<T>() : nullptr, args.out(0)->As<T>(),
      args.out(1) ? args.out(1)->As<float>() : nullptr, args.out(2) ? args.out(2)->As<float>() : nullptr);
  return cudaGetLastError();
}

using LayerNormLaunch = cudaError_t (*)(const LayerNormPlan& p, const KernelArgs& args, cudaStream_t stream);

// LayerNormalization: rows = prod(X[:axis]), each normalized over prod(X[axis:]); Scale and B
// broadcast to X[axis:] (through index tables when they are not the full normalized shape).
// Optional Mean and InvStdDev outputs are float, one value per row.
class LayerNormKernel : public Kernel {
 public:
  Status Init(const KernelArgs& args, CudaContext& ctx) override {
    PRECIS_RETURN_IF_ERROR(CheckFloatTensors(args, 2));
    const Tensor &x = *args.in(0), &scale = *args.in(1);
    const Tensor* b = args.in(2);
    if (b && b->dtype != scale.dtype) return DtypeError(args, "Scale and B dtypes differ");
    if (scale.dtype != x.dtype) return DtypeError(args, "Scale dtype differs from X");
    int64_t rank = x.rank(), axis = args.attrs.Int("axis", -1);
    if (!NormalizeAxis(axis, rank, &axis)) return args.Error("axis " + std::to_string(args.attrs.Int("axis", -1)) + " is out of range");
    if (args.attrs.Int("stash_type", 1) != 1) return args.Error("only stash_type=1 is supported");
    std::vector<int64_t> norm(x.dims.begin() + axis, x.dims.end());
    int64_t cols = 1;
    for (int64_t d : norm) cols *= d;
    int64_t rows = cols ? x.numel / cols : 0;
    PRECIS_RETURN_IF_ERROR(MapOperand(args, ctx, scale, norm, &p_.scale_map));
    if (b) PRECIS_RETURN_IF_ERROR(MapOperand(args, ctx, *b, norm, &p_.bias_map));
    for (size_t i = 1; i < 3; ++i) {
      const Tensor* t = args.out(i);
      if (t && (t->dtype != DataType::kF32 || t->numel != rows)) return args.Error("Mean and InvStdDev must be float with one value per row");
    }
    p_.eps = double(args.attrs.Float("epsilon", 1e-5f));
    if (!MakeAxisSlices(rows, cols, 1, &p_.s)) return Unimplemented(args.node + ": shape too complex for the CUDA kernel");
    p_.l = ChooseLayout(p_.s, ctx.prop);
    DispatchFloat(x.dtype, [&](auto tag) { launch_ = &LaunchLayerNorm<decltype(tag)>; });
    return Status::Ok();
  }

  Status Run(const KernelArgs& args, CudaContext& ctx) override {
    PRECIS_CUDA_CHECK(args, launch_(p_, args, ctx.stream));
    return Status::Ok();
  }

 private:
  // nn_norm.cc's MapOperand: an index table from a normalized position to the operand's element,
  // uploaded once; none when they coincide.
  static Status MapOperand(const KernelArgs& args, CudaContext& ctx, const Tensor& t, const std::vector<int64_t>& norm, const int64_t** map) {
    if (t.rank() > int64_t(norm.size())) return args.Error("Scale/B rank exceeds the normalized rank");
    for (size_t k = 0; k < t.dims.size(); ++k) {
      int64_t want = norm[norm.size() - t.dims.size() + k];
      if (t.dims[k] != 1 && t.dims[k] != want) return args.Error("Scale/B do not broadcast to the normalized dims");
    }
    int64_t cols = 1;
    for (int64_t d : norm) cols *= d;
    std::vector<int64_t> padded(norm.size() - t.dims.size(), 1);
    padded.insert(padded.end(), t.dims.begin(), t.dims.end());
    if (padded == norm && t.numel == cols) return Status::Ok();
    std::vector<int64_t> strides = BroadcastStrides(t.dims, norm);
    std::vector<int64_t> table(static_cast<size_t>(cols));
    Indexer ix;
    if (!Indexer::Make(norm, strides, 0, &ix)) {
      // More than kMaxRank axes after merging: walk them on the host instead.
      for (int64_t j = 0; j < cols; ++j) {
        int64_t rest = j, off = 0;
        for (size_t d = norm.size(); d-- > 0;) {
          off += (rest % norm[d]) * strides[d];
          rest /= norm[d];
        }
        table[size_t(j)] = off;
      }
    } else {
      for (int64_t j = 0; j < cols; ++j) table[size_t(j)] = ix(j);
    }
    PRECIS_ASSIGN_OR_RETURN(*map, UploadTable(ctx, table, args.node + ": Scale/B index table"));
    return Status::Ok();
  }

  LayerNormPlan p_;
  LayerNormLaunch launch_ = nullptr;
};

}  // namespace
}  // namespace reduce

void AddNormMoreKernels(KernelRegistry& r);  // reduce_norm_more.cu

void AddNormKernels(KernelRegistry& r) {
  r.Register("BatchNormalization", Make<reduce::BatchNormKernel>);
  r.Register("InstanceNormalization", Make<reduce::InstanceNormKernel>);
  r.Register("GroupNormalization", Make<reduce::GroupNormKernel>);
  r.Register("LayerNormalization", Make<reduce::LayerNormKernel>);
  AddNormMoreKernels(r);
}

}  // namespace precis::rt::cuda
