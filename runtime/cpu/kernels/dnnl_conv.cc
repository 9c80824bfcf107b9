// oneDNN Conv, ConvTranspose and ConvFilterGrad (training plans' filter gradient) (1 to 3
// spatial dims, groups incl. depthwise, strides, dilations, explicit or auto_pad padding,
// optional bias; f32, and BF16 X and W with BF16/F32 B and Y on CPUs with native BF16, see
// dnnl_kernel.h; ConvFilterGrad: BF16 X and dY, FP32 or BF16 dW). oneDNN picks the
// activation and weight layouts (format_tag::any, usually channel-blocked): X is reordered into
// a temporary in the step's scratch and the result reordered back into Y when oneDNN's choice
// differs from plain NC..., and constant weights are reordered once at load. Padding follows
// ONNX exactly (SAME_* computed from the shapes as the reference kernels do); any geometry that
// does not reproduce the planned output shape is left to the reference kernel.
//
// The registered fast Conv first tries variants that work on the plain layouts (conv_kernels.h,
// chosen by shape in PreferConvVariant): a direct depthwise loop, a direct 1x1 GEMM kernel and
// a 1x1 convolution through oneDNN's matmul. Mobilenet-style networks are almost all such steps,
// and there the reorders around oneDNN's convolution cost as much as the convolutions did. These
// variants take f32 only: a BF16 step goes to oneDNN's convolution (native BF16) or is widened.
//
// Steps of CPU plans' channels-last regions (layout = "NHWC") go to the same oneDNN convolution
// with X and Y described as nhwc and W as ohwi/gohwi (MakeNhwcConvKernel): no reorders at all at
// run time. A fused Relu or Clip runs as a post-op there and in the NCHW oneDNN convolution.
#include <algorithm>
#include <string>

#include "runtime/cpu/kernels/conv_columns.h"
#include "runtime/cpu/kernels/conv_kernels.h"
#include "runtime/cpu/kernels/dnnl_kernel.h"
#include "runtime/cpu/step_adapters.h"

namespace precis::rt {
namespace {

// oneDNN-style geometry: dilations count the gaps (ONNX dilation - 1), pads may be asymmetric.
using Geometry = ConvWindowGeometry;

dnnl::memory::dims Concat(dnnl::memory::dims a, const dnnl::memory::dims& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

constexpr int64_t kMaxWindowValue = int64_t(1) << 31, kMaxDim = int64_t(1) << 50;

// Reads and checks the attributes shared by Conv and ConvTranspose.
Status ReadCommon(const KernelArgs& args, size_t n, dnnl::memory::dims* strides, dnnl::memory::dims* dilations,
                  dnnl::memory::dims* pads, std::string* auto_pad) {
  *strides = args.attrs.Ints("strides", dnnl::memory::dims(n, 1));
  *dilations = args.attrs.Ints("dilations", dnnl::memory::dims(n, 1));
  *pads = args.attrs.Ints("pads", dnnl::memory::dims(2 * n, 0));
  *auto_pad = args.attrs.String("auto_pad", "NOTSET");
  if (auto_pad->empty()) *auto_pad = "NOTSET";
  if (strides->size() != n || dilations->size() != n || pads->size() != 2 * n)
    return Unimplemented("strides, dilations or pads do not match the spatial rank");
  if (*auto_pad != "NOTSET" && *auto_pad != "VALID" && *auto_pad != "SAME_UPPER" && *auto_pad != "SAME_LOWER")
    return Unimplemented("unknown auto_pad '" + *auto_pad + "'");
  for (size_t i = 0; i < n; ++i)
    if ((*strides)[i] <= 0 || (*dilations)[i] <= 0) return Unimplemented("strides and dilations must be positive");
  // As the reference kernels' window (runtime/kernels/nn_window.cc), which then names the error:
  // beyond 2^31 the geometry below could overflow.
  for (int64_t v : Concat(Concat(*strides, *dilations), *pads))
    if (v > kMaxWindowValue || v < -kMaxWindowValue) return Unimplemented("strides, dilations or pads beyond 2^31");
  return Status::Ok();
}

// Conv: out = floor((in + pb + pe - ext) / s) + 1, ext = (k - 1) * d + 1; SAME_* pads the total
// max(0, (ceil(in / s) - 1) * s + ext - in), the odd unit at the end for SAME_UPPER.
Status ConvGeometry(const KernelArgs& args, const dnnl::memory::dims& in, const dnnl::memory::dims& kernel, Geometry* g) {
  size_t n = in.size();
  dnnl::memory::dims strides, dilations, pads;
  std::string auto_pad;
  PRECIS_RETURN_IF_ERROR(ReadCommon(args, n, &strides, &dilations, &pads, &auto_pad));
  bool same = auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER";
  for (size_t i = 0; i < n; ++i) {
    if (kernel[i] > kMaxWindowValue) return Unimplemented("kernel beyond 2^31");
    int64_t s = strides[i], d = dilations[i], ext = (kernel[i] - 1) * d + 1, pb = pads[i], pe = pads[i + n];
    if (auto_pad == "VALID") pb = pe = 0;
    if (same) {
      int64_t total = std::max<int64_t>(0, ((in[i] + s - 1) / s - 1) * s + ext - in[i]);
      pb = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
      pe = total - pb;
    }
    if (pb < 0 || pe < 0 || in[i] + pb + pe < ext) return Unimplemented("window does not fit");
    g->strides.push_back(s);
    g->dilations.push_back(d - 1);
    g->pad_l.push_back(pb);
    g->pad_r.push_back(pe);
    g->out.push_back((in[i] + pb + pe - ext) / s + 1);
  }
  return Status::Ok();
}

// ConvTranspose, as the reference kernel reads it: full = s * (in - 1) + output_padding + ext;
// out = output_shape, or in * s for SAME_*, else full - pads; SAME_* splits full - out (floor
// half at the start for SAME_UPPER). oneDNN's deconvolution has out = s * (in - 1) + ext - pl -
// pr, so output_padding shows up as a smaller (possibly negative) right pad.
Status TransposeGeometry(const KernelArgs& args, const dnnl::memory::dims& in, const dnnl::memory::dims& kernel, Geometry* g) {
  size_t n = in.size();
  dnnl::memory::dims strides, dilations, pads;
  std::string auto_pad;
  PRECIS_RETURN_IF_ERROR(ReadCommon(args, n, &strides, &dilations, &pads, &auto_pad));
  auto output_padding = args.attrs.Ints("output_padding", dnnl::memory::dims(n, 0));
  auto output_shape = args.attrs.Ints("output_shape");
  if (output_padding.size() != n || (!output_shape.empty() && output_shape.size() != n && output_shape.size() != n + 2))
    return Unimplemented("output_padding or output_shape do not match the spatial rank");
  bool same = auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER";
  if (auto_pad == "VALID") pads.assign(2 * n, 0);
  for (size_t i = 0; i < n; ++i) {
    if (kernel[i] > kMaxWindowValue || output_padding[i] > kMaxWindowValue || output_padding[i] < -kMaxWindowValue ||
        (in[i] > 1 && strides[i] > kMaxDim / (in[i] - 1)))
      return Unimplemented("kernel or output_padding beyond 2^31, or an output beyond 2^50");
    int64_t s = strides[i], d = dilations[i], ext = (kernel[i] - 1) * d + 1;
    int64_t full = s * (in[i] - 1) + output_padding[i] + ext;
    int64_t out = !output_shape.empty() ? output_shape[output_shape.size() - n + i] : same ? in[i] * s : full - pads[i] - pads[i + n];
    if (out <= 0 || out > kMaxDim) return Unimplemented("empty or oversized output");
    int64_t pb = pads[i];
    if (same) {
      int64_t total = full - out;
      int64_t half = total >= 0 ? total / 2 : -((-total + 1) / 2);
      pb = auto_pad == "SAME_UPPER" ? half : total - half;
    }
    g->strides.push_back(s);
    g->dilations.push_back(d - 1);
    g->pad_l.push_back(pb);
    g->pad_r.push_back(s * (in[i] - 1) + ext - pb - out);
    g->out.push_back(out);
  }
  return Status::Ok();
}

// Checks the types and shapes shared by the kernels and returns the spatial dims of X and W.
// `allow_bf16`: BF16 operands too (oneDNN's convolution and transposed convolution); the plain
// layout variants take f32 steps only. `xd`, `wd`
// and `yd` are X, W and Y's dims in ONNX's order (N, C, spatial...; M, C/group, k...): the
// tensors' own, or the logical dims of a channels-last step.
Status CheckOperands(const KernelArgs& args, bool allow_bf16, const dnnl::memory::dims& xd, const dnnl::memory::dims& wd,
                     const dnnl::memory::dims& yd, dnnl::memory::dims* in, dnnl::memory::dims* kernel) {
  const Tensor *x = args.in(0), *w = args.in(1), *b = args.in(2), *y = args.out(0);
  if (!x || !w || !y) return Unimplemented("needs X, W and Y");
  if (allow_bf16) {
    PRECIS_RETURN_IF_ERROR(CheckDnnlTypes("oneDNN convolution", {x, w}, {b, y}));
  } else {
    for (const Tensor* t : {x, w, b, y})
      if (t && t->dtype != DataType::kF32) return Unimplemented("oneDNN convolution: f32 only for this kernel");
  }
  if (xd.size() < 3 || xd.size() > 5 || wd.size() != xd.size() || yd.size() != xd.size())
    return Unimplemented("oneDNN convolution: 1 to 3 spatial dims");
  if (x->numel == 0 || w->numel == 0 || y->numel == 0) return Unimplemented("empty tensor");
  if (b && b->rank() != 1) return Unimplemented("bias must be 1-D");
  in->assign(xd.begin() + 2, xd.end());
  kernel->assign(wd.begin() + 2, wd.end());
  if (args.attrs.Ints("kernel_shape", *kernel) != *kernel) return Unimplemented("kernel_shape differs from W");
  return Status::Ok();
}

Status CheckOperands(const KernelArgs& args, bool allow_bf16, dnnl::memory::dims* in, dnnl::memory::dims* kernel) {
  if (!args.in(0) || !args.in(1) || !args.out(0)) return Unimplemented("needs X, W and Y");
  return CheckOperands(args, allow_bf16, args.in(0)->dims, args.in(1)->dims, args.out(0)->dims, in, kernel);
}

// [a, b, c, d] (channels-last: N, H, W, C; or W's M, kH, kW, C/group) in ONNX's order [a, d, b, c].
dnnl::memory::dims ChannelsFirst(const std::vector<int64_t>& d) { return {d[0], d[3], d[1], d[2]}; }

// Convolution gradients that run as matrix products over image columns (conv_columns.h): BF16
// operands, 2-D, group 1, a kernel larger than 1x1 and an output plane (the data gradient's input
// plane) of at most kColumnsPlane positions, with columns of at most kColumnsBytes. Measured in a
// ResNet-18 BF16 training step (2 threads, AMX, batch 32, 512 channels, 3x3, 4x4 planes): the
// filter gradient 10.4-10.9 ms through oneDNN's convolution, 4.6-5.1 ms as a product; the data
// gradient 5.0 ms and 3.9-4.3 ms. On 7x7 planes (256 channels) the products were slower (filter
// gradient 3.5 ms against 4.2, data gradient 2.8 against 6.5, the columns' scatter dominating),
// and so was the forward convolution on 4x4 planes (no gain): those stay with oneDNN.
constexpr int64_t kColumnsPlane = 16;
constexpr int64_t kColumnsBytes = int64_t(256) << 20;

bool UseColumns(const Tensor& x, int64_t group, const dnnl::memory::dims& kernel, const ColumnGeometry& c) {
  return x.dtype == DataType::kBF16 && group == 1 && kernel.size() == 2 && kernel[0] * kernel[1] > 1 && c.P() <= kColumnsPlane &&
         c.N * c.P() * c.K() * 2 <= kColumnsBytes;
}

// The image-columns geometry of a convolution over an image [N, C, in...] with oneDNN geometry g
// (its dilations count the gaps) and output plane `out`.
ColumnGeometry Columns(int64_t N, int64_t C, const dnnl::memory::dims& in, const dnnl::memory::dims& kernel, const Geometry& g,
                       const dnnl::memory::dims& out) {
  ColumnGeometry c;
  c.N = N, c.C = C, c.H = in[0], c.W = in[1], c.KH = kernel[0], c.KW = kernel[1], c.OH = out[0], c.OW = out[1];
  c.sh = g.strides[0], c.sw = g.strides[1], c.dh = g.dilations[0] + 1, c.dw = g.dilations[1] + 1, c.ph = g.pad_l[0], c.pw = g.pad_l[1];
  return c;
}

// Shared tail: oneDNN chose the layouts in `pd`; bind X, W, B and Y around the primitive.
template <typename PrimitiveDesc, typename Primitive>
class DnnlConvBase : public DnnlKernel {
 protected:
  // `w_given` describes W's ONNX layout in oneDNN's logical weight dims.
  Status Finish(const KernelArgs& args, const PrimitiveDesc& pd, const md& w_given) {
    const Tensor &x = *args.in(0), &y = *args.out(0);
    return Finish(args, pd, Plain(x.dims, DnnlType(x)), w_given, Plain(y.dims, DnnlType(y)));
  }
  // The same with X and Y in the layouts `x_plain` and `y_plain` (channels-last steps).
  Status Finish(const KernelArgs& args, const PrimitiveDesc& pd, const md& x_plain, const md& w_given, const md& y_plain) {
    if (IsReferenceImpl(pd)) return Unimplemented("oneDNN has only its reference convolution for this step");
    dnnl::memory src = Input(0, x_plain);
    if (pd.src_desc() != x_plain) {
      dnnl::memory blocked = Temporary(pd.src_desc());
      AppendReorder(src, blocked);
      src = blocked;
    }
    std::vector<std::pair<int, dnnl::memory>> margs = {{DNNL_ARG_SRC, src},
                                                       {DNNL_ARG_WEIGHTS, Arrange(args, 1, w_given, pd.weights_desc())}};
    if (args.in(2)) margs.push_back({DNNL_ARG_BIAS, Input(2, Plain(args.in(2)->dims, DnnlType(*args.in(2))))});
    dnnl::memory dst = Output(0, y_plain);
    bool reorder_dst = pd.dst_desc() != y_plain;
    dnnl::memory computed = reorder_dst ? Temporary(pd.dst_desc()) : dst;
    margs.push_back({DNNL_ARG_DST, computed});
    Append(Primitive(pd), margs, pd.scratchpad_desc());
    if (reorder_dst) AppendReorder(computed, dst);
    return Status::Ok();
  }
};

// Conv through oneDNN's convolution. A channels-last step (`nhwc`: X [N, H, W, C], W [M, kH, kW,
// C/group], Y [N, H', W', M], see passes/choose_layout.h) is described to oneDNN in those layouts
// and computed without reorders of X or Y. A fused Relu or Clip (`activation`) becomes an eltwise
// post-op applied to the FP32 result before Y is stored; other activations are left to the
// backend's epilogue.
class DnnlConvKernel : public DnnlConvBase<dnnl::convolution_forward::primitive_desc, dnnl::convolution_forward> {
 public:
  explicit DnnlConvKernel(bool nhwc = false) : nhwc_(nhwc) {}
  bool AppliesActivation() const override { return applies_activation_; }

 protected:
  Status Setup(const KernelArgs& args) override {
    const Tensor *xt = args.in(0), *wt = args.in(1), *yt = args.out(0);
    if (!xt || !wt || !yt) return Unimplemented("needs X, W and Y");
    if (nhwc_ && (xt->rank() != 4 || wt->rank() != 4 || yt->rank() != 4)) return Unimplemented("channels-last: 2-D convolutions only");
    dims xd = nhwc_ ? ChannelsFirst(xt->dims) : xt->dims, wd = nhwc_ ? ChannelsFirst(wt->dims) : wt->dims;
    dims yd = nhwc_ ? ChannelsFirst(yt->dims) : yt->dims;
    dims in, kernel;
    PRECIS_RETURN_IF_ERROR(CheckOperands(args, true, xd, wd, yd, &in, &kernel));
    const Tensor &x = *xt, &y = *yt;
    int64_t group = args.attrs.Int("group", 1), N = xd[0], C = xd[1], M = wd[0];
    if (group <= 0 || C % group != 0 || M % group != 0 || wd[1] * group != C) return Unimplemented("channels do not match group");
    if (args.in(2) && args.in(2)->dims[0] != M) return Unimplemented("bias size differs from M");
    Geometry g;
    PRECIS_RETURN_IF_ERROR(ConvGeometry(args, in, kernel, &g));
    if (yd != Concat({N, M}, g.out)) return Unimplemented("planned output shape differs from the convolution's");
    // Grouped weights are [group, M/group, C/group, k...]: the same bytes as ONNX's [M, C/group, k...]
    // (channels-last: [group, M/group, kH, kW, C/group], oneDNN's gohwi).
    dims w_dims = group == 1 ? wd : Concat({group, M / group, C / group}, kernel);
    dt in_type = DnnlType(x), out_type = DnnlType(y);
    md bias = args.in(2) ? Plain({M}, DnnlType(*args.in(2))) : md();
    using tag = dnnl::memory::format_tag;
    md x_given = nhwc_ ? md(xd, in_type, tag::nhwc) : Plain(x.dims, in_type);
    md y_given = nhwc_ ? md(yd, out_type, tag::nhwc) : Plain(y.dims, out_type);
    md w_given = !nhwc_ ? Plain(w_dims, in_type) : md(w_dims, in_type, group == 1 ? tag::ohwi : tag::gohwi);
    dnnl::primitive_attr attr = Attr();
    PRECIS_RETURN_IF_ERROR(PostOps(args, &attr));
    // FP32 3x3 stride-1 convolutions with constant weights: oneDNN's Winograd F(2x2, 3x3) where it
    // has one (AVX-512; 2.25x fewer multiplications, the weights transformed once at Init). Its
    // rounding differs from the direct form's by the transforms' few extra float operations per
    // output; measured on ResNet-50 (13 such steps, 2 threads): 20% less time per step, and the
    // output as close to onnxruntime's as the direct form's. Elsewhere oneDNN declines it.
    if (in_type == dt::f32 && out_type == dt::f32 && wt->is_constant && group == 1 && kernel == dims{3, 3} && g.strides == dims{1, 1} &&
        g.dilations == dims{0, 0}) {
      dnnl::convolution_forward::primitive_desc pd;
      try {
        dnnl::convolution_forward::desc wino(dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_winograd, Any(xd, in_type),
                                             Any(w_dims, in_type), bias, Any(yd, out_type), g.strides, g.dilations, g.pad_l, g.pad_r);
        pd = dnnl::convolution_forward::primitive_desc(wino, attr, Engine());
      } catch (const dnnl::error&) {  // no Winograd kernel for this CPU, shape or post-op: the direct form
      }
      if (pd && !IsReferenceImpl(pd)) {
        winograd_ = true;
        return Finish(args, pd, x_given, w_given, y_given);
      }
    }
    dnnl::convolution_forward::desc desc(dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct,
                                         nhwc_ ? x_given : Any(xd, in_type), Any(w_dims, in_type), bias,
                                         nhwc_ ? y_given : Any(yd, out_type), g.strides, g.dilations, g.pad_l, g.pad_r);
    return Finish(args, dnnl::convolution_forward::primitive_desc(desc, attr, Engine()), x_given, w_given, y_given);
  }

 private:
  Status PostOps(const KernelArgs& args, dnnl::primitive_attr* attr) { return ConvActivationPostOps(args, attr, &applies_activation_); }

 public:
  const char* Variant() const override { return winograd_ ? "Winograd" : nullptr; }

 private:
  bool nhwc_ = false, applies_activation_ = false, winograd_ = false;
};

class DnnlConvTransposeKernel : public DnnlConvBase<dnnl::deconvolution_forward::primitive_desc, dnnl::deconvolution_forward> {
 protected:
  Status Setup(const KernelArgs& args) override {
    dims in, kernel;
    PRECIS_RETURN_IF_ERROR(CheckOperands(args, true, &in, &kernel));
    const Tensor &x = *args.in(0), &w = *args.in(1), &y = *args.out(0);
    int64_t group = args.attrs.Int("group", 1), N = x.dims[0], C = x.dims[1], Mg = w.dims[1], M = Mg * group;
    if (group <= 0 || w.dims[0] != C || C % group != 0) return Unimplemented("channels do not match group");
    if (args.in(2) && args.in(2)->dims[0] != M) return Unimplemented("bias size differs from M");
    Geometry g;
    PRECIS_RETURN_IF_ERROR(TransposeGeometry(args, in, kernel, &g));
    if (y.dims != Concat({N, M}, g.out)) return Unimplemented("planned output shape differs from the transposed convolution's");
    // ONNX W is [C, M/group, k...] = [group][C/group][M/group][k...]; oneDNN's logical weight
    // dims are (group,) out, in, k...: describe the ONNX bytes with strides.
    int64_t Cg = C / group, K = 1;
    for (int64_t k : kernel) K *= k;
    dims k_strides(kernel.size(), 1);
    for (size_t i = kernel.size(); i-- > 1;) k_strides[i - 1] = k_strides[i] * kernel[i];
    dims w_dims = group == 1 ? Concat({M, C}, kernel) : Concat({group, Mg, Cg}, kernel);
    dims w_strides = group == 1 ? Concat({K, Mg * K}, k_strides) : Concat({Cg * Mg * K, K, Mg * K}, k_strides);
    md bias = args.in(2) ? Plain({M}, DnnlType(*args.in(2))) : md();
    if (x.rank() == 4 && (!args.in(2) || args.in(2)->dtype == DataType::kF32)) {
      // The image is the transposed convolution's output; its input plane is the columns' plane.
      ColumnGeometry c = Columns(N, M, g.out, kernel, g, in);
      if (UseColumns(x, group, kernel, c) && ColumnsTransposed(args, c, C)) return Status::Ok();
    }
    dnnl::deconvolution_forward::desc desc(dnnl::prop_kind::forward_inference, dnnl::algorithm::deconvolution_direct,
                                           Any(x.dims, DnnlType(x)), Any(w_dims, DnnlType(w)), bias, Any(y.dims, DnnlType(y)), g.strides,
                                           g.dilations, g.pad_l, g.pad_r);
    return Finish(args, dnnl::deconvolution_forward::primitive_desc(desc, Attr(), Engine()), Strided(w_dims, w_strides, DnnlType(w)));
  }

 private:
  // columns = X^T x W ([N*P, C] x [C, K], X moved to [C, N*P] first), then added back into the
  // image Y (the adjoint of the convolution's columns) with the FP32 bias.
  bool ColumnsTransposed(const KernelArgs& args, const ColumnGeometry& c, int64_t C) {
    const int64_t NP = c.N * c.P(), K = c.K();
    md x_t = Strided({NP, C}, {1, NP}, dt::bf16), w = Plain({C, K}, DnnlType(*args.in(1))), prod = Plain({NP, K});
    dnnl::matmul::primitive_desc pd;
    if (!FastMatMul(x_t, w, prod, &pd)) return false;
    dnnl::memory moved = Temporary(Plain({C, NP}, dt::bf16)), product = Temporary(prod);
    dnnl::memory work = Temporary(Plain({int64_t(threads_) * c.H * c.W}));
    const size_t at_moved = TemporaryOffset(moved), at_prod = TemporaryOffset(product), at_work = TemporaryOffset(work);
    AppendHost([=](const KernelArgs& r, uint8_t* scratch, int threads) {
      ToChannelMajor(r.in(0)->data, scratch + at_moved, 2, c.N, C, c.P(), threads);
    });
    Append(dnnl::matmul(pd), {{DNNL_ARG_SRC, TemporaryView(x_t, moved, 0)}, {DNNL_ARG_WEIGHTS, Input(1, w)}, {DNNL_ARG_DST, product}},
           pd.scratchpad_desc());
    const DataType yt = args.out(0)->dtype;
    const bool bias = args.in(2) != nullptr;
    AppendHost([=](const KernelArgs& r, uint8_t* scratch, int threads) {
      ColumnsToImage(reinterpret_cast<const float*>(scratch + at_prod), bias ? reinterpret_cast<const float*>(r.in(2)->data) : nullptr,
                     r.out(0)->data, yt, c, threads, reinterpret_cast<float*>(scratch + at_work));
    });
    return true;
  }
};

// 1x1, group 1, stride 1, unpadded: Y[n] (M x HW) = W (M x C) * X[n] (C x HW) + B. oneDNN's
// matmul broadcasts W over the images ([1, M, C] x [N, C, HW]) and adds B as [1, M, 1]; every
// operand keeps its plain layout, so nothing is reordered.
class DnnlPointwiseConvKernel : public DnnlKernel {
 protected:
  Status Setup(const KernelArgs& args) override {
    dims in, kernel;
    PRECIS_RETURN_IF_ERROR(CheckOperands(args, false, &in, &kernel));
    const Tensor &x = *args.in(0), &w = *args.in(1), &y = *args.out(0);
    int64_t N = x.dims[0], C = x.dims[1], M = w.dims[0], HW = 1;
    if (args.attrs.Int("group", 1) != 1 || w.dims[1] != C) return Unimplemented("pointwise conv: group 1 only");
    for (int64_t k : kernel)
      if (k != 1) return Unimplemented("pointwise conv: 1x1 kernel only");
    Geometry g;
    PRECIS_RETURN_IF_ERROR(ConvGeometry(args, in, kernel, &g));
    for (size_t i = 0; i < in.size(); ++i)
      if (g.strides[i] != 1 || g.pad_l[i] != 0 || g.pad_r[i] != 0) return Unimplemented("pointwise conv: stride 1, no padding only");
    if (y.dims != Concat({N, M}, in)) return Unimplemented("planned output shape differs from the convolution's");
    if (args.in(2) && args.in(2)->dims[0] != M) return Unimplemented("bias size differs from M");
    for (int64_t d : in) HW *= d;
    md src = Plain({1, M, C}), wei = Plain({N, C, HW}), dst = Plain({N, M, HW}), bias = Plain({1, M, 1});
    // oneDNN 2.6's GEMM-based matmul has no per-row bias (its bias broadcasts along rows): B is
    // added by a binary post-op instead.
    dnnl::primitive_attr attr = Attr();
    if (args.in(2)) {
      dnnl::post_ops ops;
      ops.append_binary(dnnl::algorithm::binary_add, bias);
      attr.set_post_ops(ops);
    }
    dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(src, wei, dst), attr, Engine());
    if (IsReferenceImpl(pd)) return Unimplemented("oneDNN has only its reference matmul for this step");
    std::vector<std::pair<int, dnnl::memory>> margs = {{DNNL_ARG_SRC, Input(1, src)}, {DNNL_ARG_WEIGHTS, Input(0, wei)}};
    if (args.in(2)) margs.push_back({DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1, Input(2, bias)});
    margs.push_back({DNNL_ARG_DST, Output(0, dst)});
    Append(dnnl::matmul(pd), margs, pd.scratchpad_desc());
    return Status::Ok();
  }
};

// ConvFilterGrad(X, dY) -> dW through oneDNN's backward-weights convolution (f32; BF16 X and dY
// with an FP32 or BF16 dW on CPUs with native BF16, FP32 accumulation): X and dY are
// reordered into the layouts oneDNN chose and dW reordered back to ONNX's [M, C/group, k...].
class DnnlConvFilterGradKernel : public DnnlKernel {
 protected:
  Status Setup(const KernelArgs& args) override {
    const Tensor *x = args.in(0), *dy = args.in(1), *dw = args.out(0);
    if (!x || !dy || !dw) return Unimplemented("needs X, dY and dW");
    // f32, or BF16 X and dY with an f32 or BF16 dW (mixed-precision training: weight gradients
    // in FP32), on CPUs with native BF16 (CheckDnnlTypes).
    PRECIS_RETURN_IF_ERROR(CheckDnnlTypes("oneDNN filter gradient", {x, dy}, {dw}));
    const dt in_t = DnnlType(*x), w_t = DnnlType(*dw);
    if (x->rank() < 3 || x->rank() > 5 || dy->rank() != x->rank() || dw->rank() != x->rank())
      return Unimplemented("oneDNN filter gradient: 1 to 3 spatial dims");
    if (x->numel == 0 || dy->numel == 0 || dw->numel == 0) return Unimplemented("empty tensor");
    dims in(x->dims.begin() + 2, x->dims.end()), kernel(dw->dims.begin() + 2, dw->dims.end());
    if (args.attrs.Ints("kernel_shape", kernel) != kernel) return Unimplemented("kernel_shape differs from dW");
    int64_t group = args.attrs.Int("group", 1), N = x->dims[0], C = x->dims[1], M = dy->dims[1];
    if (group <= 0 || C % group != 0 || M % group != 0 || dw->dims[0] != M || dw->dims[1] * group != C)
      return Unimplemented("channels do not match group");
    Geometry g;
    PRECIS_RETURN_IF_ERROR(ConvGeometry(args, in, kernel, &g));
    if (dy->dims != Concat({N, M}, g.out)) return Unimplemented("dY's shape differs from the convolution's output");
    dims w_dims = group == 1 ? dw->dims : Concat({group, M / group, C / group}, kernel);
    if (x->rank() == 4) {
      ColumnGeometry c = Columns(N, C, in, kernel, g, g.out);
      if (UseColumns(*x, group, kernel, c) && ColumnsFilterGrad(c, M, w_t)) return Status::Ok();
    }
    dnnl::convolution_forward::desc forward(dnnl::prop_kind::forward_training, dnnl::algorithm::convolution_direct, Any(x->dims, in_t),
                                            Any(w_dims, in_t), md(), Any(dy->dims, in_t), g.strides, g.dilations, g.pad_l, g.pad_r);
    dnnl::convolution_forward::primitive_desc hint(forward, Engine());
    dnnl::convolution_backward_weights::desc desc(dnnl::algorithm::convolution_direct, Any(x->dims, in_t), Any(w_dims, w_t),
                                                  Any(dy->dims, in_t), g.strides, g.dilations, g.pad_l, g.pad_r);
    dnnl::convolution_backward_weights::primitive_desc pd(desc, Attr(), Engine(), hint);
    if (IsReferenceImpl(pd)) return Unimplemented("oneDNN has only its reference filter gradient for this step");
    dnnl::memory src = Arranged(Input(0, Plain(x->dims, in_t)), pd.src_desc());
    dnnl::memory diff_dst = Arranged(Input(1, Plain(dy->dims, in_t)), pd.diff_dst_desc());
    md w_plain = Plain(w_dims, w_t);
    dnnl::memory dst = Output(0, w_plain);
    bool reorder_dst = pd.diff_weights_desc() != w_plain;
    dnnl::memory computed = reorder_dst ? Temporary(pd.diff_weights_desc()) : dst;
    Append(dnnl::convolution_backward_weights(pd),
           {{DNNL_ARG_SRC, src}, {DNNL_ARG_DIFF_DST, diff_dst}, {DNNL_ARG_DIFF_WEIGHTS, computed}}, pd.scratchpad_desc());
    if (reorder_dst) AppendReorder(computed, dst);
    return Status::Ok();
  }

 private:
  // dW = dY x columns(X) ([M, N*P] x [N*P, K], dY moved to [M, N*P] first), written in dW's dtype.
  bool ColumnsFilterGrad(const ColumnGeometry& c, int64_t M, dt w_t) {
    const int64_t NP = c.N * c.P(), K = c.K();
    md dy_t = Plain({M, NP}, dt::bf16), cols_md = Plain({NP, K}, dt::bf16), dw = Plain({M, K}, w_t);
    dnnl::matmul::primitive_desc pd;
    if (!FastMatMul(dy_t, cols_md, dw, &pd)) return false;
    dnnl::memory moved = Temporary(dy_t), cols = Temporary(cols_md);
    const size_t at_moved = TemporaryOffset(moved), at_cols = TemporaryOffset(cols);
    AppendHost([=](const KernelArgs& r, uint8_t* scratch, int threads) {
      ImageToColumns(r.in(0)->data, scratch + at_cols, 2, c, threads);
      ToChannelMajor(r.in(1)->data, scratch + at_moved, 2, c.N, M, c.P(), threads);
    });
    Append(dnnl::matmul(pd), {{DNNL_ARG_SRC, moved}, {DNNL_ARG_WEIGHTS, cols}, {DNNL_ARG_DST, Output(0, dw)}}, pd.scratchpad_desc());
    return true;
  }

  // `given` in the layout `wanted`: itself, or a reorder into a temporary appended to the run.
  dnnl::memory Arranged(const dnnl::memory& given, const md& wanted) {
    if (given.get_desc() == wanted) return given;
    dnnl::memory t = Temporary(wanted);
    AppendReorder(given, t);
    return t;
  }
};

}  // namespace

// Whether a step a variant could take should go to it rather than to the next one. Measured on
// mobilenet_v2's layers (batch 1 and 8, 2 threads, AVX2; oneDNN's blocked convolution including
// its reorders): the direct depthwise loop is 1.3-3x faster on output rows 28 to 112 wide when X
// is larger than the L2 caches (1.5 MiB; below, oneDNN's reorders stay in cache and its kernel
// wins), and 2-3x slower on rows 7 and 14 wide (mostly edge columns); the direct 1x1 kernel is
// up to 2x faster on expansions (C < M) of planes 14x14 and up; the 1x1 matmul is faster on
// projections (C >= M, often small M, where reading the large X dominates) of such planes; on
// 7x7 planes oneDNN's blocked convolution wins (small tensors, cheap reorders).
bool PreferConvVariant(const KernelArgs& args, KernelFactory variant) {
  if (variant == MakeDnnlConvKernel) return true;
  const Tensor &x = *args.in(0), &y = *args.out(0);
  if (x.rank() < 3 || y.rank() != x.rank()) return false;
  int64_t plane = 1;
  for (size_t i = 2; i < y.dims.size(); ++i) plane *= y.dims[i];
  bool expands = x.dims[1] < y.dims[1];
  if (variant == MakeDepthwiseConvKernel) return y.dims.back() >= 20 && x.bytes >= (size_t(3) << 19);
  if (variant == MakeDirectPointwiseConvKernel) return expands && plane >= 14 * 14;
  if (variant == MakePointwiseConvKernel) return !expands && plane >= 14 * 14;
  return false;
}

namespace {

// The registered fast Conv: the first variant of conv_kernels.h that PreferConvVariant picks and
// whose Init takes the step.
class FastConvKernel : public Kernel {
 public:
  Status Init(const KernelArgs& args, const CpuContext& ctx) override {
    if (!args.in(0) || !args.out(0)) return Unimplemented("Conv needs X and Y");
    std::string last;  // why the oneDNN convolution, tried last, declined
    for (KernelFactory make : {MakeDepthwiseConvKernel, MakeDirectPointwiseConvKernel, MakePointwiseConvKernel, MakeDnnlConvKernel}) {
      if (!PreferConvVariant(args, make)) continue;
      std::unique_ptr<Kernel> k = make();
      Status s = k->Init(args, ctx);
      if (s.ok()) {
        chosen_ = std::move(k);
        return s;
      }
      if (s.code() != StatusCode::kUnimplemented) return s;
      last = s.message();
    }
    return Unimplemented("no fast convolution takes this step (" + last + ")");
  }
  Status Run(const KernelArgs& args, CpuContext& ctx) override { return chosen_->Run(args, ctx); }
  const char* Variant() const override { return chosen_ ? chosen_->Variant() : nullptr; }
  size_t ScratchBytes() const override { return chosen_ ? chosen_->ScratchBytes() : 0; }
  bool AppliesActivation() const override { return chosen_ && chosen_->AppliesActivation(); }
  bool ReadsConstantInput(size_t i) const override { return !chosen_ || chosen_->ReadsConstantInput(i); }

 private:
  std::unique_ptr<Kernel> chosen_;
};

}  // namespace

std::unique_ptr<Kernel> MakePointwiseConvKernel() { return std::make_unique<DnnlPointwiseConvKernel>(); }
std::unique_ptr<Kernel> MakeDnnlConvKernel() { return std::make_unique<DnnlConvKernel>(); }
Status ConvWindow(const KernelArgs& args, const dnnl::memory::dims& in, const dnnl::memory::dims& kernel, ConvWindowGeometry* g) {
  return ConvGeometry(args, in, kernel, g);
}

// oneDNN's relu with alpha 0 and its clip take max(x, lo) first, so NaN gives 0 or lo, as
// ActivationEpilogue does.
Status ConvActivationPostOps(const KernelArgs& args, dnnl::primitive_attr* attr, bool* applied) {
  FusedActivationSpec act;
  PRECIS_RETURN_IF_ERROR(ReadFusedActivation(args, &act));
  dnnl::post_ops ops;
  if (act.kind == FusedActivation::kRelu) ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_relu, 0.0f, 0.0f);
  else if (act.kind == FusedActivation::kClip) ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_clip, act.lo, act.hi);
  else return Status::Ok();
  attr->set_post_ops(ops);
  *applied = true;
  return Status::Ok();
}

namespace {

// Channels-last Conv: 16-bit weights that oneDNN cannot take as they are read as they are by
// HalfWeightsConv (group 1) or HalfDepthwiseConv, other such steps in bands (BandedHalfConv), the
// rest (and 16-bit steps both decline) in oneDNN's convolution as they are or widened. Group-1
// steps with at most kFewChannels output channels or values per window (MobileNet-V2's first layers, ResNet's stem)
// try the bands first: there each value of the windows HalfWeightsConv packs feeds few products,
// and the bands were faster (2-core AMD EPYC, e.g. 16 -> 96 channels at 112 x 112: 0.48-0.69
// against 0.65-0.94 ms). The bands keep FP32 copies of such weights (at most 64 x K or N x 64 values, and only
// where the activations are larger: dnnl_conv_bands.cc).
constexpr int64_t kFewChannels = 64;

class NhwcConvKernel : public Kernel {
 public:
  Status Init(const KernelArgs& args, const CpuContext& ctx) override {
    const Tensor* w = args.in(1);
    const bool few = w && w->rank() == 4 && args.attrs.Int("group", 1) == 1 &&
                     (w->dims[0] <= kFewChannels || w->dims[1] * w->dims[2] * w->dims[3] <= kFewChannels);
    const KernelFactory first = few ? MakeBandedHalfConvKernel : MakeHalfWeightsConvKernel;
    for (KernelFactory make : {first, few ? MakeHalfWeightsConvKernel : MakeBandedHalfConvKernel}) {
      chosen_ = make();
      Status s = chosen_->Init(args, ctx);
      if (s.ok()) {
        banded_ = make == MakeBandedHalfConvKernel;
        return s;
      }
      if (s.code() != StatusCode::kUnimplemented) return s;
    }
    chosen_ = std::make_unique<DnnlConvKernel>(true);
    return chosen_->Init(args, ctx);
  }
  const char* Variant() const override { return banded_ ? "16-bit in bands" : chosen_->Variant(); }
  Status Run(const KernelArgs& args, CpuContext& ctx) override { return chosen_->Run(args, ctx); }
  size_t ScratchBytes() const override { return chosen_->ScratchBytes(); }
  bool AppliesActivation() const override { return chosen_->AppliesActivation(); }
  bool ReadsConstantInput(size_t i) const override { return chosen_->ReadsConstantInput(i); }

 private:
  std::unique_ptr<Kernel> chosen_;
  bool banded_ = false;
};

}  // namespace

std::unique_ptr<Kernel> MakeNhwcConvKernel() { return std::make_unique<NhwcConvKernel>(); }

void AddDnnlConvKernels(KernelRegistry& r) {
  r.RegisterFast("Conv", Make<FastConvKernel>);
  r.RegisterNhwc("Conv", MakeNhwcConvKernel);
  r.RegisterFast("ConvTranspose", Make<DnnlConvTransposeKernel>);
  r.RegisterFast("ConvFilterGrad", Make<DnnlConvFilterGradKernel>);
}

}  // namespace precis::rt
