// Reference kernels of the quantization operators: QuantizeLinear, DequantizeLinear (per tensor,
// per axis, or in blocks along an axis), DynamicQuantizeLinear, MatMulInteger, ConvInteger,
// QLinearMatMul and QLinearConv. Quantized values are 8- or 16-bit integers; products accumulate
// exactly in int32 (int64 inside, checked); rescaling computes in float as onnxruntime and the
// ONNX reference do, rounding half to even, then saturates to the output type.
#include <algorithm>
#include <cmath>
#include <limits>

#include "runtime/base/small_types.h"
#include "runtime/cpu/kernels/common.h"
#include "runtime/cpu/kernels/register.h"
#include "runtime/kernels/index_util.h"
#include "runtime/kernels/nn_window.h"

namespace precis::rt {
namespace {

bool IsQuantType(DataType t) {
  return t == DataType::kU8 || t == DataType::kI8 || t == DataType::kU16 || t == DataType::kI16 || (IsSmallType(t) && t != DataType::kF8E8M0);
}

// The integer range of int4/uint4/int2/uint2 (quantization saturates; Cast wraps).
bool SmallIntRange(DataType t, double& lo, double& hi) {
  switch (t) {
    case DataType::kI4: lo = -8, hi = 7; return true;
    case DataType::kU4: lo = 0, hi = 15; return true;
    case DataType::kI2: lo = -2, hi = 1; return true;
    case DataType::kU2: lo = 0, hi = 3; return true;
    default: return false;
  }
}

// Round half to even (the default rounding mode), then clamp to T's range.
template <typename T>
T Saturate(float v) {
  double r = std::nearbyint(double(v));
  if (!(r >= double(std::numeric_limits<T>::lowest()))) return std::isnan(r) ? T(0) : std::numeric_limits<T>::lowest();
  if (r > double(std::numeric_limits<T>::max())) return std::numeric_limits<T>::max();
  return T(r);
}

// Which scale/zero point each element of x uses: one for all, one per index along `axis`, or
// one per block of `block` indices along `axis` (the parameters then have x's rank).
struct QuantParams {
  int64_t outer = 1, len = 1, inner = 1, block = 0, blocks = 1;
  enum { kTensor, kAxis, kBlocked } kind = kTensor;

  Status Init(const KernelArgs& args, const Tensor& x, const Tensor& scale, const Tensor* zero) {
    int64_t rank = x.rank(), axis = args.attrs.Int("axis", 1);
    block = args.attrs.Int("block_size", 0);
    if (zero && zero->dims != scale.dims && !(zero->numel == 1 && scale.numel == 1 && zero->rank() <= 1 && scale.rank() <= 1))
      return args.Error("zero point and scale shapes differ");
    if (scale.numel == 1 && block == 0) return Status::Ok();
    if (axis < -rank || axis >= rank) return args.Error("axis " + std::to_string(axis) + " is out of range");
    if (axis < 0) axis += rank;
    outer = DimProduct(x.dims, 0, size_t(axis));
    len = x.dims[size_t(axis)];
    inner = DimProduct(x.dims, size_t(axis) + 1, x.dims.size());
    if (block == 0) {
      if (scale.rank() != 1 || scale.numel != len) return args.Error("a per-axis scale must have one value per index of axis " + std::to_string(axis));
      kind = kAxis;
      return Status::Ok();
    }
    if (block < 0) return args.Error("block_size must be positive");
    blocks = (len + block - 1) / block;
    std::vector<int64_t> want = x.dims;
    want[size_t(axis)] = blocks;
    if (scale.dims != want) return args.Error("a blocked scale must have x's shape with ceil(dim / block_size) along the axis");
    kind = kBlocked;
    return Status::Ok();
  }
  // The parameter index of element k of x.
  int64_t Index(int64_t k) const {
    if (kind == kTensor) return 0;
    int64_t i = k % inner, a = (k / inner) % len;
    if (kind == kAxis) return a;
    int64_t o = k / (inner * len);
    return (o * blocks + a / block) * inner + i;
  }
};

class QuantizeLinearKernel : public Kernel {
 public:
  Status Init(const KernelArgs& args, const CpuContext&) override {
    const Tensor *x = args.in(0), *scale = args.in(1), *zero = args.in(2), *y = args.out(0);
    if (!x || !scale || !y) return args.Error("needs x, y_scale and an output");
    if (!DispatchFloat(x->dtype, [](auto) {}) && x->dtype != DataType::kI32) return args.Error("x must be a float or int32 tensor");
    if (!DispatchFloat(scale->dtype, [](auto) {})) return args.Error("y_scale must be a float tensor");
    if (!IsQuantType(y->dtype) || (zero && zero->dtype != y->dtype)) return args.Error("the output and zero point must be one 8- or 16-bit integer type");
    if (y->dims != x->dims) return args.Error("output shape differs from x");
    saturate_ = args.attrs.Int("saturate", 1) != 0;
    return params_.Init(args, *x, *scale, zero);
  }
  Status Run(const KernelArgs& args, CpuContext&) override {
    const Tensor &x = *args.in(0), &scale = *args.in(1);
    const Tensor* zero = args.in(2);
    Tensor& y = *args.out(0);
    if (IsSmallType(y.dtype)) {
      // As ONNX's reference: int4/int2 round, add the zero point and clamp; float8 converts x / scale
      // (saturating unless saturate = 0; no zero point); float4 converts x / scale + zero point.
      double lo = 0, hi = 0;
      bool integer = SmallIntRange(y.dtype, lo, hi);
      bool float8 = !integer && y.dtype != DataType::kF4E2M1;
      for (int64_t k = 0; k < x.numel; ++k) {
        int64_t p = params_.Index(k);
        double q = double(float(ReadAt(x, k)) / float(ReadAt(scale, p)));
        double z = zero ? SmallToDouble(zero->dtype, zero->data[p]) : 0.0;
        if (integer) y.data[k] = SmallFromDouble(y.dtype, std::isnan(q) ? lo : std::clamp(std::nearbyint(q) + z, lo, hi));
        else y.data[k] = SmallFromDouble(y.dtype, float8 ? q : double(float(q + z)), saturate_);
      }
      return Status::Ok();
    }
    DispatchInteger(y.dtype, [&](auto tag) {
      using T = decltype(tag);
      T* out = y.As<T>();
      for (int64_t k = 0; k < x.numel; ++k) {
        int64_t p = params_.Index(k);
        float q = float(ReadAt(x, k)) / float(ReadAt(scale, p));
        float z = zero ? float(zero->As<T>()[p]) : 0.f;
        out[k] = Saturate<T>(float(std::nearbyint(double(q))) + z);
      }
    });
    return Status::Ok();
  }

 private:
  QuantParams params_;
  bool saturate_ = true;
};

class DequantizeLinearKernel : public Kernel {
 public:
  Status Init(const KernelArgs& args, const CpuContext&) override {
    const Tensor *x = args.in(0), *scale = args.in(1), *zero = args.in(2), *y = args.out(0);
    if (!x || !scale || !y) return args.Error("needs x, x_scale and an output");
    if (!IsQuantType(x->dtype) && x->dtype != DataType::kI32) return args.Error("x must be an 8-, 16- or 32-bit integer tensor");
    if (zero && zero->dtype != x->dtype) return args.Error("the zero point's type differs from x");
    if (!DispatchFloat(scale->dtype, [](auto) {}) || y->dtype != scale->dtype) return args.Error("the output must have x_scale's float type");
    if (y->dims != x->dims) return args.Error("output shape differs from x");
    return params_.Init(args, *x, *scale, zero);
  }
  Status Run(const KernelArgs& args, CpuContext&) override {
    const Tensor &x = *args.in(0), &scale = *args.in(1);
    const Tensor* zero = args.in(2);
    Tensor& y = *args.out(0);
    DispatchFloat(y.dtype, [&](auto tag) {
      using T = decltype(tag);
      T* out = y.As<T>();
      for (int64_t k = 0; k < x.numel; ++k) {
        int64_t p = params_.Index(k);
        auto value = [](const Tensor& t, int64_t i) { return IsSmallType(t.dtype) ? float(SmallToDouble(t.dtype, t.data[i])) : float(ReadAt(t, i)); };
        float v = (value(x, k) - (zero ? value(*zero, p) : 0.f)) * float(ReadAt(scale, p));
        out[k] = Store<T>(v);
      }
    });
    return Status::Ok();
  }

 private:
  QuantParams params_;
};

// uint8 with a scale covering [min(0, min x), max(0, max x)] and the zero point that maps 0 to an integer.
class DynamicQuantizeLinearKernel : public Kernel {
 public:
  Status Init(const KernelArgs& args, const CpuContext&) override {
    const Tensor *x = args.in(0), *y = args.out(0), *scale = args.out(1), *zero = args.out(2);
    if (!x || !y || !scale || !zero || x->dtype != DataType::kF32 || y->dtype != DataType::kU8 || scale->dtype != DataType::kF32 ||
        zero->dtype != DataType::kU8 || scale->numel != 1 || zero->numel != 1 || y->dims != x->dims)
      return args.Error("needs a float x and outputs y (uint8, x's shape), y_scale (float) and y_zero_point (uint8) scalars");
    return Status::Ok();
  }
  Status Run(const KernelArgs& args, CpuContext&) override {
    const float* x = args.in(0)->As<float>();
    int64_t n = args.in(0)->numel;
    float lo = 0, hi = 0;
    for (int64_t k = 0; k < n; ++k) lo = std::min(lo, x[k]), hi = std::max(hi, x[k]);
    // As the ONNX reference: scale 1/255 when the range is empty (all zeros), the zero point
    // clamped to [0, 255] before it is rounded.
    float scale = (hi == lo ? 1.f : hi - lo) / 255.f;
    uint8_t zero = Saturate<uint8_t>(std::clamp(0.f - lo / scale, 0.f, 255.f));
    uint8_t* y = args.out(0)->As<uint8_t>();
    for (int64_t k = 0; k < n; ++k) y[k] = Saturate<uint8_t>(float(std::nearbyint(double(x[k] / scale))) + float(zero));
    *args.out(1)->As<float>() = scale;
    *args.out(2)->As<uint8_t>() = zero;
    return Status::Ok();
  }
};

// Zero points and scales of a quantized product operand: one value, or one per row of A / per
// column of B / per output channel.
Status CheckPerIndex(const KernelArgs& args, const Tensor* t, int64_t n, const char* what) {
  if (t && t->numel != 1 && !(t->rank() == 1 && t->numel == n))
    return args.Error(std::string(what) + " must hold one value or " + std::to_string(n));
  return Status::Ok();
}
double PerIndex(const Tensor* t, int64_t i) { return t ? ReadAt(*t, t->numel == 1 ? 0 : i) : 0.0; }

// QLinearMatMul/QLinearConv: float scales at inputs 1 (one or per row), 4 (one or per column /
// output channel) and 6 (one), y_zero_point (input 7) one value of the output type.
Status CheckQLinear(const KernelArgs& args, const Tensor& y, int64_t rows, int64_t cols) {
  for (int i : {1, 4, 6})
    if (!args.in(size_t(i)) || !DispatchFloat(args.in(size_t(i))->dtype, [](auto) {})) return args.Error("scales must be float tensors");
  PRECIS_RETURN_IF_ERROR(CheckPerIndex(args, args.in(1), rows, "the first operand's scale"));
  PRECIS_RETURN_IF_ERROR(CheckPerIndex(args, args.in(4), cols, "the second operand's scale"));
  PRECIS_RETURN_IF_ERROR(CheckPerIndex(args, args.in(6), 1, "y_scale"));
  if (args.in(7) && (args.in(7)->dtype != y.dtype || args.in(7)->numel != 1)) return args.Error("y_zero_point must be one value of the output type");
  return Status::Ok();
}

// Output element `at` of a QLinear product: the int accumulator rescaled by the operands' scales
// over y_scale (in float, as onnxruntime), rounded half to even, plus y_zero_point, saturated.
void StoreRequantized(const KernelArgs& args, Tensor& y, int64_t at, int64_t acc, int64_t row, int64_t col) {
  float scale = float(PerIndex(args.in(1), row)) * float(PerIndex(args.in(4), col)) / float(PerIndex(args.in(6), 0));
  float zy = float(PerIndex(args.in(7), 0));
  DispatchInteger(y.dtype, [&](auto tag) {
    using T = decltype(tag);
    y.As<T>()[at] = Saturate<T>(float(std::nearbyint(double(float(acc) * scale))) + zy);
  });
}

// MatMulInteger (int32 output) and QLinearMatMul (quantized output): numpy matmul shapes.
// Inputs of QLinearMatMul: a, a_scale, a_zero_point, b, b_scale, b_zero_point, y_scale, y_zero_point.
class QuantMatMulKernel : public Kernel {
 public:
  explicit QuantMatMulKernel(bool qlinear) : qlinear_(qlinear) {}
  Status Init(const KernelArgs& args, const CpuContext&) override {
    a_ = 0, b_ = qlinear_ ? 3 : 1;
    const Tensor *a = args.in(a_), *b = args.in(b_), *y = args.out(0);
    if (!a || !b || !y) return args.Error("needs A, B and an output");
    if (!IsQuantType(a->dtype) || !IsQuantType(b->dtype)) return args.Error("A and B must be 8- or 16-bit integer tensors");
    if (qlinear_ ? !IsQuantType(y->dtype) : y->dtype != DataType::kI32) return args.Error("unsupported output type");
    std::vector<int64_t> ad = a->dims, bd = b->dims;
    if (ad.empty() || bd.empty()) return args.Error("operands must have rank >= 1");
    if (ad.size() == 1) ad.insert(ad.begin(), 1);
    if (bd.size() == 1) bd.push_back(1);
    M_ = ad[ad.size() - 2], K_ = ad.back(), N_ = bd.back();
    if (bd[bd.size() - 2] != K_) return args.Error("inner dimensions differ");
    std::vector<int64_t> abatch(ad.begin(), ad.end() - 2), bbatch(bd.begin(), bd.end() - 2);
    size_t rank = std::max(abatch.size(), bbatch.size());
    abatch.insert(abatch.begin(), rank - abatch.size(), 1);
    bbatch.insert(bbatch.begin(), rank - bbatch.size(), 1);
    std::vector<int64_t> batch(rank);
    for (size_t i = 0; i < rank; ++i) {
      if (abatch[i] != bbatch[i] && abatch[i] != 1 && bbatch[i] != 1) return args.Error("batch dims do not broadcast");
      batch[i] = std::max(abatch[i], bbatch[i]);
    }
    map_a_ = BroadcastMap(batch, abatch);
    map_b_ = BroadcastMap(batch, bbatch);
    batches_ = DimProduct(batch, 0, batch.size());
    if (y->numel != batches_ * M_ * N_) return args.Error("output size does not match");
    const Tensor* azp = args.in(qlinear_ ? 2 : 2);
    const Tensor* bzp = args.in(qlinear_ ? 5 : 3);
    PRECIS_RETURN_IF_ERROR(CheckPerIndex(args, azp, M_, "a_zero_point"));
    PRECIS_RETURN_IF_ERROR(CheckPerIndex(args, bzp, N_, "b_zero_point"));
    return qlinear_ ? CheckQLinear(args, *y, M_, N_) : Status::Ok();
  }
  Status Run(const KernelArgs& args, CpuContext&) override {
    const Tensor &a = *args.in(a_), &b = *args.in(b_);
    const Tensor* azp = args.in(2);
    const Tensor* bzp = args.in(qlinear_ ? 5 : 3);
    Tensor& y = *args.out(0);
    for (int64_t bi = 0; bi < batches_; ++bi) {
      int64_t oa = map_a_.Map(bi) * M_ * K_, ob = map_b_.Map(bi) * K_ * N_;
      for (int64_t m = 0; m < M_; ++m)
        for (int64_t n = 0; n < N_; ++n) {
          int64_t acc = 0, za = int64_t(PerIndex(azp, m)), zb = int64_t(PerIndex(bzp, n));
          for (int64_t k = 0; k < K_; ++k) acc += (int64_t(ReadAt(a, oa + m * K_ + k)) - za) * (int64_t(ReadAt(b, ob + k * N_ + n)) - zb);
          int64_t at = bi * M_ * N_ + m * N_ + n;
          if (qlinear_) StoreRequantized(args, y, at, acc, m, n);
          else y.As<int32_t>()[at] = int32_t(acc);  // wraps past 2^31 as int32 accumulation does
        }
    }
    return Status::Ok();
  }

 private:
  bool qlinear_;
  size_t a_ = 0, b_ = 1;
  int64_t M_ = 0, N_ = 0, K_ = 0, batches_ = 0;
  BroadcastMap map_a_, map_b_;
};

// ConvInteger (int32 output) and QLinearConv (quantized output): a direct convolution in int64,
// padding contributing 0 after the zero point is taken off. QLinearConv inputs: x, x_scale,
// x_zero_point, w, w_scale, w_zero_point, y_scale, y_zero_point, B (int32 bias).
class QuantConvKernel : public Kernel {
 public:
  explicit QuantConvKernel(bool qlinear) : qlinear_(qlinear) {}
  Status Init(const KernelArgs& args, const CpuContext&) override {
    x_ = 0, w_ = qlinear_ ? 3 : 1;
    const Tensor *x = args.in(x_), *w = args.in(w_), *y = args.out(0);
    if (!x || !w || !y) return args.Error("needs X, W and an output");
    if (!IsQuantType(x->dtype) || !IsQuantType(w->dtype)) return args.Error("X and W must be 8- or 16-bit integer tensors");
    if (qlinear_ ? !IsQuantType(y->dtype) : y->dtype != DataType::kI32) return args.Error("unsupported output type");
    if (x->rank() < 3 || x->rank() > 5 || w->rank() != x->rank()) return args.Error("X and W must be [N, C, spatial...] with 1 to 3 spatial dims");
    group_ = args.attrs.Int("group", 1);
    if (group_ <= 0 || x->dims[1] != w->dims[1] * group_ || w->dims[0] % group_ != 0) return args.Error("channels do not match the group");
    std::vector<int64_t> in(x->dims.begin() + 2, x->dims.end()), kernel(w->dims.begin() + 2, w->dims.end());
    PRECIS_RETURN_IF_ERROR(ReadWindow(args, in, kernel, false, &win_));
    PRECIS_RETURN_IF_ERROR(CheckWindowOutput(args, *y, x->dims[0], w->dims[0], win_, "output"));
    const Tensor* xzp = args.in(2);
    const Tensor* wzp = args.in(qlinear_ ? 5 : 3);
    PRECIS_RETURN_IF_ERROR(CheckPerIndex(args, xzp, 1, "x_zero_point"));
    PRECIS_RETURN_IF_ERROR(CheckPerIndex(args, wzp, w->dims[0], "w_zero_point"));
    if (qlinear_) {
      PRECIS_RETURN_IF_ERROR(CheckQLinear(args, *y, 1, w->dims[0]));
      if (const Tensor* bias = args.in(8); bias && (bias->dtype != DataType::kI32 || bias->numel != w->dims[0]))
        return args.Error("B must hold one int32 per output channel");
    }
    for (int d = 0; d < Window::kMaxSpatial; ++d) ranges_[size_t(d)] = WindowRanges(win_, d);
    return Status::Ok();
  }
  Status Run(const KernelArgs& args, CpuContext&) override {
    const Tensor &x = *args.in(x_), &w = *args.in(w_);
    const Tensor* wzp = args.in(qlinear_ ? 5 : 3);
    Tensor& y = *args.out(0);
    int64_t N = x.dims[0], C = x.dims[1], M = w.dims[0], cg = C / group_, mg = M / group_;
    int64_t zx = int64_t(PerIndex(args.in(2), 0));
    const auto &in = win_.in, &out = win_.out, &kern = win_.kernel, &dil = win_.dilation;
    for (int64_t n = 0; n < N; ++n)
      for (int64_t m = 0; m < M; ++m) {
        int64_t g = m / mg, zw = int64_t(PerIndex(wzp, m));
        for (int64_t o0 = 0; o0 < out[0]; ++o0)
          for (int64_t o1 = 0; o1 < out[1]; ++o1)
            for (int64_t o2 = 0; o2 < out[2]; ++o2) {
              const WindowRange &r0 = ranges_[0][size_t(o0)], &r1 = ranges_[1][size_t(o1)], &r2 = ranges_[2][size_t(o2)];
              int64_t acc = 0;
              for (int64_t c = 0; c < cg; ++c) {
                int64_t xc = (n * C + g * cg + c) * win_.InSize(), wc = (m * cg + c) * win_.KernelSize();
                for (int64_t k0 = r0.lo; k0 < r0.hi; ++k0)
                  for (int64_t k1 = r1.lo; k1 < r1.hi; ++k1)
                    for (int64_t k2 = r2.lo; k2 < r2.hi; ++k2) {
                      int64_t i0 = r0.start + k0 * dil[0], i1 = r1.start + k1 * dil[1], i2 = r2.start + k2 * dil[2];
                      int64_t xv = int64_t(ReadAt(x, xc + (i0 * in[1] + i1) * in[2] + i2)) - zx;
                      int64_t wv = int64_t(ReadAt(w, wc + (k0 * kern[1] + k1) * kern[2] + k2)) - zw;
                      acc += xv * wv;
                    }
              }
              int64_t at = ((n * M + m) * out[0] + o0) * out[1] * out[2] + o1 * out[2] + o2;
              if (!qlinear_) {
                y.As<int32_t>()[at] = int32_t(acc);
                continue;
              }
              if (const Tensor* bias = args.in(8)) acc += bias->As<int32_t>()[m];
              StoreRequantized(args, y, at, acc, 0, m);
            }
      }
    return Status::Ok();
  }

 private:
  bool qlinear_;
  size_t x_ = 0, w_ = 1;
  int64_t group_ = 1;
  Window win_;
  std::array<std::vector<WindowRange>, Window::kMaxSpatial> ranges_;
};

}  // namespace

void RegisterQuantizeKernels(KernelRegistry& r) {
  r.Register("QuantizeLinear", Make<QuantizeLinearKernel>);
  r.Register("DequantizeLinear", Make<DequantizeLinearKernel>);
  r.Register("DynamicQuantizeLinear", Make<DynamicQuantizeLinearKernel>);
  r.Register("MatMulInteger", [] { return std::unique_ptr<Kernel>(new QuantMatMulKernel(false)); });
  r.Register("QLinearMatMul", [] { return std::unique_ptr<Kernel>(new QuantMatMulKernel(true)); });
  r.Register("ConvInteger", [] { return std::unique_ptr<Kernel>(new QuantConvKernel(false)); });
  r.Register("QLinearConv", [] { return std::unique_ptr<Kernel>(new QuantConvKernel(true)); });
}

}  // namespace precis::rt
