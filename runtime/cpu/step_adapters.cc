// ActivationEpilogue and NhwcStep (see step_adapters.h).
#include "runtime/cpu/step_adapters.h"

#include <cmath>
#include <cstring>

#include "runtime/cpu/kernels/common.h"

namespace precis::rt {
namespace {

size_t Align64(size_t n) { return (n + 63) / 64 * 64; }

}  // namespace

Status ReadFusedActivation(const KernelArgs& args, FusedActivationSpec* out) {
  *out = FusedActivationSpec{};
  if (!args.attrs.Has("activation")) return Status::Ok();
  std::string a = args.attrs.String("activation", "");
  if (a == "Relu") out->kind = FusedActivation::kRelu;
  else if (a == "Gelu") out->kind = FusedActivation::kGelu;
  else if (a == "GeluTanh") out->kind = FusedActivation::kGeluTanh;
  else if (a == "Clip") out->kind = FusedActivation::kClip;
  else return args.Error("unknown fused activation '" + a + "' (Relu, Gelu, GeluTanh or Clip)");
  if (out->kind == FusedActivation::kClip) {
    out->lo = args.attrs.Float("activation_min", -INFINITY);
    out->hi = args.attrs.Float("activation_max", INFINITY);
    if (!(out->lo <= out->hi)) return args.Error("fused Clip needs activation_min <= activation_max");
  }
  return Status::Ok();
}

Status ActivationEpilogue::Init(const KernelArgs& args, const CpuContext&) {
  PRECIS_RETURN_IF_ERROR(ReadFusedActivation(args, &activation_));
  const Tensor* y = args.out(0);
  if (!y || !DispatchFloat(y->dtype, [](auto) {})) return args.Error("a fused activation needs a float output");
  return Status::Ok();
}

Status ActivationEpilogue::Run(const KernelArgs& args, CpuContext& ctx) {
  PRECIS_RETURN_IF_ERROR(inner_->Run(args, ctx));
  Tensor& y = *args.out(0);
  FusedActivationSpec act = activation_;
  DispatchFloat(y.dtype, [&](auto tag) {
    using T = decltype(tag);
    using C = typename ComputeOf<T>::type;
    T* p = y.As<T>();
    for (int64_t i = 0; i < y.numel; ++i) {
      C v = Load(p[i]);
      switch (act.kind) {
        case FusedActivation::kRelu: v = v > C(0) ? v : C(0); break;  // as the Relu kernel: NaN gives 0
        case FusedActivation::kGelu: v = GeluValue(v, false); break;
        case FusedActivation::kGeluTanh: v = GeluValue(v, true); break;
        case FusedActivation::kClip:  // NaN gives lo, as oneDNN's clip post-op
          v = v > C(act.lo) ? v : C(act.lo);
          v = v < C(act.hi) ? v : C(act.hi);
          break;
        case FusedActivation::kNone: break;
      }
      p[i] = Store<T>(v);
    }
  });
  return Status::Ok();
}

void Permute4D(const uint8_t* src, uint8_t* dst, const int64_t (&dims)[4], const int (&perm)[4], size_t element) {
  int64_t stride[4];
  stride[3] = 1;
  for (int i = 3; i-- > 0;) stride[i] = stride[i + 1] * dims[i + 1];
  int64_t od[4], os[4];
  for (int i = 0; i < 4; ++i) od[i] = dims[perm[i]], os[i] = stride[perm[i]];
  for (int64_t a = 0; a < od[0]; ++a)
    for (int64_t b = 0; b < od[1]; ++b)
      for (int64_t c = 0; c < od[2]; ++c) {
        const uint8_t* s = src + size_t(a * os[0] + b * os[1] + c * os[2]) * element;
        for (int64_t d = 0; d < od[3]; ++d, dst += element) std::memcpy(dst, s + size_t(d * os[3]) * element, element);
      }
}

namespace {
constexpr int kToNchw[4] = {0, 3, 1, 2};  // NHWC -> NCHW (also OHWI -> OIHW)
constexpr int kToNhwc[4] = {0, 2, 3, 1};
void Dims4(const Tensor& t, int64_t (&d)[4]) {
  for (int i = 0; i < 4; ++i) d[i] = t.dims[size_t(i)];
}
}  // namespace

Status NhwcStep::Init(const KernelArgs& args, const CpuContext&) {
  Tensor *x = args.in(0), *w = weights_ ? args.in(1) : nullptr, *y = args.out(0);
  if (!x || !y) return args.Error("needs X and an output");
  if (weights_ && !w) return args.Error("needs W");
  for (size_t i = 1; i < args.outputs.size(); ++i)
    if (args.outputs[i]) return args.Error("layout NHWC takes one output (no Indices or training statistics)");
  if (x->rank() != 4 || y->rank() != 4 || (w && w->rank() != 4)) return args.Error("layout NHWC needs 4-D X, Y (and W)");
  if (w && x->dtype != w->dtype) return args.Error("X and W dtypes differ");
  inner_args_ = KernelArgs{{}, {}, args.attrs, args.node};
  auto nchw = [&](const Tensor& t) -> Tensor* {
    Tensor& n = nchw_.emplace_back(t);
    n.dims = {t.dims[0], t.dims[3], t.dims[1], t.dims[2]};
    n.data = nullptr;
    return &n;
  };
  x_ = nchw(*x);
  y_ = nchw(*y);
  size_t offset = 0;
  x_offset_ = offset, offset += Align64(x->bytes);
  y_offset_ = offset, offset += Align64(y->bytes);
  inner_args_.inputs = {x_};
  if (w) {  // a convolution's W; other inputs (B, BatchNormalization's vectors) pass through
    w_ = nchw(*w);
    w_in_scratch_ = !w->is_constant;
    if (w_in_scratch_) {
      w_offset_ = offset, offset += Align64(w->bytes);
    } else {
      owned_w_.resize(w->bytes);
      int64_t d[4];
      Dims4(*w, d);
      Permute4D(w->data, owned_w_.data(), d, kToNchw, DataTypeSize(w->dtype));
      w_->data = owned_w_.data();
    }
    inner_args_.inputs.push_back(w_);
  }
  for (size_t i = inner_args_.inputs.size(); i < args.inputs.size(); ++i) inner_args_.inputs.push_back(args.inputs[i]);
  shadow_bytes_ = offset;
  inner_args_.outputs = {y_};
  PRECIS_ASSIGN_OR_RETURN(inner_, choose_(inner_args_));
  inner_scratch_ = Align64(inner_->ScratchBytes());
  return Status::Ok();
}

Status NhwcStep::Run(const KernelArgs& args, CpuContext& ctx) {
  const Tensor& x = *args.in(0);
  Tensor& y = *args.out(0);
  uint8_t* base = ctx.scratch + inner_scratch_;
  x_->data = base + x_offset_;
  y_->data = base + y_offset_;
  int64_t d[4];
  Dims4(x, d);
  Permute4D(x.data, x_->data, d, kToNchw, DataTypeSize(x.dtype));
  if (w_in_scratch_) {
    const Tensor& w = *args.in(1);
    w_->data = base + w_offset_;
    Dims4(w, d);
    Permute4D(w.data, w_->data, d, kToNchw, DataTypeSize(w.dtype));
  }
  PRECIS_RETURN_IF_ERROR(inner_->Run(inner_args_, ctx));
  Dims4(*y_, d);
  Permute4D(y_->data, y.data, d, kToNhwc, DataTypeSize(y.dtype));
  return Status::Ok();
}

}  // namespace precis::rt
