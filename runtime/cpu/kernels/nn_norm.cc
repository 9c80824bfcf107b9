// Reference normalization kernels over channels and rows: BatchNormalization (inference form),
// InstanceNormalization, LayerNormalization and GroupNormalization. Statistics use two passes
// (mean, then mean of squared deviations) with double accumulators, so they stay accurate for
// large slices and 16-bit inputs; the normalized value is computed in float (double for f64).
// Each slice's statistics are finished before any of its outputs is written, so Y may alias X.
#include <cmath>

#include "runtime/cpu/kernels/common.h"

namespace precis::rt {

namespace {

// Values of a float tensor of any float dtype, as doubles (parameter vectors sized by Init).
void ReadFloatParams(const Tensor& t, std::vector<double>& out) {
  DispatchFloat(t.dtype, [&](auto tag) {
    using T = decltype(tag);
    const T* p = t.As<T>();
    for (size_t i = 0; i < out.size() && int64_t(i) < t.numel; ++i) out[i] = double(Load(p[i]));
  });
}

template <typename T>
using Acc = std::conditional_t<std::is_same_v<T, double>, double, float>;

struct Moments {
  double mean = 0, inv_std = 0;
};

// Two-pass mean and 1/sqrt(var + eps) of x[0..n).
template <typename T>
Moments ComputeMoments(const T* x, int64_t n, double eps) {
  double sum = 0;
  for (int64_t i = 0; i < n; ++i) sum += double(Load(x[i]));
  double mean = n ? sum / double(n) : 0;
  double sq = 0;
  for (int64_t i = 0; i < n; ++i) {
    double d = double(Load(x[i])) - mean;
    sq += d * d;
  }
  double var = n ? sq / double(n) : 0;
  return {mean, 1.0 / std::sqrt(var + eps)};
}

Status CheckFloatTensors(const KernelArgs& args, size_t inputs) {
  if (!args.out(0)) return args.Error("output Y is missing");
  for (size_t i = 0; i < inputs; ++i) {
    const Tensor* t = args.in(i);
    if (!t) return args.Error("input " + std::to_string(i) + " is missing");
    if (!DispatchFloat(t->dtype, [](auto) {})) return args.Error("input " + std::to_string(i) + " has unsupported dtype " + DataTypeName(t->dtype));
  }
  if (args.out(0)->dtype != args.in(0)->dtype || args.out(0)->dims != args.in(0)->dims) return args.Error("Y must have X's type and shape");
  return Status::Ok();
}

Status CheckVector(const KernelArgs& args, size_t i, int64_t n, const char* what) {
  const Tensor* t = args.in(i);
  if (!t || t->numel != n) return args.Error(std::string(what) + " must have " + std::to_string(n) + " values");
  return Status::Ok();
}

// y = x * a[c] + b[c] with a = scale / sqrt(var + eps), b = B - mean * a. The channels-last
// form (`nhwc`: X [N, H, W, C], a step of a CPU plan's convolution region) computes the same
// values over rows of C channels, so both forms give identical bits.
class BatchNormKernel : public Kernel {
 public:
  explicit BatchNormKernel(bool nhwc = false) : nhwc_(nhwc) {}

  Status Init(const KernelArgs& args, const CpuContext&) override {
    PRECIS_RETURN_IF_ERROR(CheckFloatTensors(args, 5));
    const Tensor& x = *args.in(0);
    if (x.rank() < 2) return args.Error("X must have rank >= 2");
    if (nhwc_ && x.rank() != 4) return Unimplemented("channels-last BatchNormalization: 4-D X");
    for (size_t i = 1; i < args.outputs.size(); ++i)
      if (args.out(i)) return args.Error("training outputs are not supported");
    C_ = nhwc_ ? x.dims[3] : x.dims[1];
    const char* names[] = {"", "scale", "B", "mean", "var"};
    for (size_t i = 1; i < 5; ++i) PRECIS_RETURN_IF_ERROR(CheckVector(args, i, C_, names[i]));
    inner_ = 1;  // the spatial size (an empty batch has one too: no division by N)
    for (size_t d = nhwc_ ? 1 : 2; d < x.dims.size() - (nhwc_ ? 1 : 0); ++d) inner_ *= x.dims[d];
    N_ = x.dims[0];
    eps_ = args.attrs.Float("epsilon", 1e-5f);
    for (auto& p : params_) p.resize(size_t(C_));
    a_.resize(size_t(C_));
    b_.resize(size_t(C_));
    af_.resize(size_t(C_));
    bf_.resize(size_t(C_));
    constant_ = args.in(1)->is_constant && args.in(2)->is_constant && args.in(3)->is_constant && args.in(4)->is_constant;
    if (constant_) Fold(args);
    return Status::Ok();
  }

  Status Run(const KernelArgs& args, CpuContext&) override {
    if (!constant_) Fold(args);
    DispatchFloat(args.in(0)->dtype, [&](auto tag) {
      using T = decltype(tag);
      using A = Acc<T>;
      const T* px = args.in(0)->As<T>();
      T* py = args.out(0)->As<T>();
      if (nhwc_) {
        const A* a = Coefficients<A>(a_, af_);
        const A* b = Coefficients<A>(b_, bf_);
        for (int64_t r = 0; r < N_ * inner_; ++r) {
          const T* xr = px + r * C_;
          T* yr = py + r * C_;
          for (int64_t c = 0; c < C_; ++c) yr[c] = Store<T>(A(Load(xr[c])) * a[c] + b[c]);
        }
        return;
      }
      for (int64_t n = 0; n < N_; ++n)
        for (int64_t c = 0; c < C_; ++c) {
          A a = A(a_[size_t(c)]), b = A(b_[size_t(c)]);
          int64_t off = (n * C_ + c) * inner_;
          for (int64_t i = 0; i < inner_; ++i) py[off + i] = Store<T>(A(Load(px[off + i])) * a + b);
        }
    });
    return Status::Ok();
  }

 private:
  // The coefficients in the accumulation type: float copies of the double ones (as A(a_[c])).
  template <typename A>
  static const A* Coefficients(const std::vector<double>& wide, const std::vector<float>& narrow) {
    if constexpr (std::is_same_v<A, double>) return wide.data();
    else return narrow.data();
  }

  void Fold(const KernelArgs& args) {
    for (size_t i = 0; i < 4; ++i) ReadFloatParams(*args.in(i + 1), params_[i]);
    for (size_t c = 0; c < size_t(C_); ++c) {
      a_[c] = params_[0][c] / std::sqrt(params_[3][c] + double(eps_));
      b_[c] = params_[1][c] - params_[2][c] * a_[c];
      af_[c] = float(a_[c]);
      bf_[c] = float(b_[c]);
    }
  }

  bool nhwc_ = false;
  int64_t N_ = 0, C_ = 0, inner_ = 0;
  float eps_ = 1e-5f;
  bool constant_ = false;
  std::vector<double> params_[4], a_, b_;  // params: scale, B, mean, var
  std::vector<float> af_, bf_;
};

std::unique_ptr<Kernel> MakeNhwcBatchNorm() { return std::make_unique<BatchNormKernel>(true); }

// InstanceNormalization (one slice per (n, c)) and GroupNormalization (one slice per (n, group),
// contiguous channels). With "per_group_params" (GroupNormalization before version 21) scale and bias
// have one value per group.
class ChannelNormKernel : public Kernel {
 public:
  explicit ChannelNormKernel(bool group) : group_(group) {}

  Status Init(const KernelArgs& args, const CpuContext&) override {
    PRECIS_RETURN_IF_ERROR(CheckFloatTensors(args, 3));
    const Tensor& x = *args.in(0);
    if (x.rank() < 2) return args.Error("X must have rank >= 2");
    N_ = x.dims[0];
    C_ = x.dims[1];
    inner_ = (N_ > 0 && C_ > 0) ? x.numel / (N_ * C_) : 0;
    eps_ = args.attrs.Float("epsilon", 1e-5f);
    groups_ = C_;
    int64_t params = C_;
    if (group_) {
      groups_ = args.attrs.Int("num_groups", 0);
      if (groups_ <= 0 || C_ % groups_ != 0) return args.Error("num_groups must be positive and divide the channels");
      if (args.attrs.Int("per_group_params", 0) != 0) params = groups_;
    }
    PRECIS_RETURN_IF_ERROR(CheckVector(args, 1, params, "scale"));
    PRECIS_RETURN_IF_ERROR(CheckVector(args, 2, params, "bias"));
    per_group_params_ = group_ && args.attrs.Int("per_group_params", 0) != 0;
    scale_.resize(size_t(params));
    bias_.resize(size_t(params));
    return Status::Ok();
  }

  Status Run(const KernelArgs& args, CpuContext&) override {
    ReadFloatParams(*args.in(1), scale_);
    ReadFloatParams(*args.in(2), bias_);
    int64_t cpg = C_ / groups_;  // channels per group (1 for InstanceNorm)
    DispatchFloat(args.in(0)->dtype, [&](auto tag) {
      using T = decltype(tag);
      using A = Acc<T>;
      const T* px = args.in(0)->As<T>();
      T* py = args.out(0)->As<T>();
      for (int64_t n = 0; n < N_; ++n)
        for (int64_t g = 0; g < groups_; ++g) {
          int64_t off = (n * C_ + g * cpg) * inner_;
          Moments m = ComputeMoments(px + off, cpg * inner_, double(eps_));
          for (int64_t c = 0; c < cpg; ++c) {
            size_t p = size_t(per_group_params_ ? g : g * cpg + c);
            A a = A(m.inv_std * scale_[p]), b = A(bias_[p] - m.mean * m.inv_std * scale_[p]);
            const T* xc = px + off + c * inner_;
            T* yc = py + off + c * inner_;
            for (int64_t i = 0; i < inner_; ++i) yc[i] = Store<T>(A(Load(xc[i])) * a + b);
          }
        }
    });
    return Status::Ok();
  }

 private:
  bool group_;
  int64_t N_ = 0, C_ = 0, inner_ = 0, groups_ = 1;
  float eps_ = 1e-5f;
  bool per_group_params_ = false;
  std::vector<double> scale_, bias_;
};

class InstanceNormKernel : public ChannelNormKernel {
 public:
  InstanceNormKernel() : ChannelNormKernel(false) {}
};
class GroupNormKernel : public ChannelNormKernel {
 public:
  GroupNormKernel() : ChannelNormKernel(true) {}
};

// LayerNormalization: rows = prod(X[:axis]), each normalized over prod(X[axis:]); Scale and B
// broadcast to X[axis:]. Optional Mean and InvStdDev outputs are float, one value per row.
class LayerNormKernel : public Kernel {
 public:
  Status Init(const KernelArgs& args, const CpuContext&) override {
    PRECIS_RETURN_IF_ERROR(CheckFloatTensors(args, 2));
    const Tensor &x = *args.in(0), &scale = *args.in(1);
    const Tensor* b = args.in(2);
    if (b && b->dtype != scale.dtype) return args.Error("Scale and B dtypes differ");
    if (scale.dtype != x.dtype) return args.Error("Scale dtype differs from X");
    int64_t rank = x.rank(), axis = args.attrs.Int("axis", -1);
    if (axis < -rank || axis >= rank) return args.Error("axis " + std::to_string(axis) + " is out of range");
    if (axis < 0) axis += rank;
    if (args.attrs.Int("stash_type", 1) != 1) return args.Error("only stash_type=1 is supported");
    std::vector<int64_t> norm(x.dims.begin() + axis, x.dims.end());
    cols_ = 1;
    for (int64_t d : norm) cols_ *= d;
    rows_ = cols_ ? x.numel / cols_ : 0;
    PRECIS_RETURN_IF_ERROR(MapOperand(args, scale, norm, scale_map_));
    if (b) PRECIS_RETURN_IF_ERROR(MapOperand(args, *b, norm, bias_map_));
    for (size_t i = 1; i < 3; ++i) {
      const Tensor* t = args.out(i);
      if (t && (t->dtype != DataType::kF32 || t->numel != rows_)) return args.Error("Mean and InvStdDev must be float with one value per row");
    }
    eps_ = args.attrs.Float("epsilon", 1e-5f);
    return Status::Ok();
  }

  Status Run(const KernelArgs& args, CpuContext&) override {
    DispatchFloat(args.in(0)->dtype, [&](auto tag) {
      using T = decltype(tag);
      using A = Acc<T>;
      const T* px = args.in(0)->As<T>();
      const T* ps = args.in(1)->As<T>();
      const T* pb = args.in(2) ? args.in(2)->As<T>() : nullptr;
      T* py = args.out(0)->As<T>();
      float* mean_out = args.out(1) ? args.out(1)->As<float>() : nullptr;
      float* inv_out = args.out(2) ? args.out(2)->As<float>() : nullptr;
      for (int64_t r = 0; r < rows_; ++r) {
        const T* xr = px + r * cols_;
        T* yr = py + r * cols_;
        Moments m = ComputeMoments(xr, cols_, double(eps_));
        A mean = A(m.mean), inv = A(m.inv_std);
        for (int64_t j = 0; j < cols_; ++j) {
          A s = A(Load(ps[scale_map_.empty() ? j : scale_map_[size_t(j)]]));
          A b = pb ? A(Load(pb[bias_map_.empty() ? j : bias_map_[size_t(j)]])) : A(0);
          yr[j] = Store<T>((A(Load(xr[j])) - mean) * inv * s + b);
        }
        if (mean_out) mean_out[r] = float(m.mean);
        if (inv_out) inv_out[r] = float(m.inv_std);
      }
    });
    return Status::Ok();
  }

 private:
  // Index table from a normalized position to the operand's element; empty when they coincide.
  static Status MapOperand(const KernelArgs& args, const Tensor& t, const std::vector<int64_t>& norm, std::vector<int64_t>& map) {
    if (t.rank() > int64_t(norm.size())) return args.Error("Scale/B rank exceeds the normalized rank");
    for (size_t k = 0; k < t.dims.size(); ++k) {
      int64_t want = norm[norm.size() - t.dims.size() + k];
      if (t.dims[k] != 1 && t.dims[k] != want) return args.Error("Scale/B do not broadcast to the normalized dims");
    }
    BroadcastMap bm(norm, t.dims);
    int64_t cols = 1;
    for (int64_t d : norm) cols *= d;
    if (bm.identity() && t.numel == cols) return Status::Ok();
    map.resize(size_t(cols));
    for (int64_t j = 0; j < cols; ++j) map[size_t(j)] = bm.Map(j);
    return Status::Ok();
  }

  int64_t rows_ = 0, cols_ = 0;
  float eps_ = 1e-5f;
  std::vector<int64_t> scale_map_, bias_map_;
};

}  // namespace

void RegisterNormKernels(KernelRegistry& r) {
  r.Register("BatchNormalization", Make<BatchNormKernel>);
  r.RegisterNhwc("BatchNormalization", MakeNhwcBatchNorm);
  r.Register("InstanceNormalization", Make<InstanceNormKernel>);
  r.Register("GroupNormalization", Make<GroupNormKernel>);
  r.Register("LayerNormalization", Make<LayerNormKernel>);
}

}  // namespace precis::rt
