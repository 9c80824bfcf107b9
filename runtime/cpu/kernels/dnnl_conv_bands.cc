// BandedHalfConv: a channels-last convolution with 16-bit X and Y of one type (FP16; BF16 where
// oneDNN has no native BF16) computed in FP32 by oneDNN one band of output rows at a time.
//
// oneDNN 2.6 has no FP16 convolution, so such a step used to run widened (widen_kernel.h): all of
// X widened into an FP32 copy, the convolution over the copy, all of Y rounded from an FP32 copy.
// Those copies are the size of the activations (MobileNet-V2's 1x1 expansions: 4.8 MB of FP32
// output) and travel through the outer caches twice: in MobileNet-V2 FP16 the conversions took
// 1.5 of 5.2 ms. Here each thread widens the input rows of one band of output rows (zero rows
// where the window reaches into the padding), runs a single-threaded oneDNN convolution of that
// band and rounds the band into Y, so the FP32 rows stay in the thread's cache. Threads take
// bands round-robin (ParallelJobs); oneDNN runs inside them on one thread, as it does when
// called from a parallel region.
//
// Numerics: those of the widened form (exact widening, FP32 accumulation by oneDNN, the fused
// Relu/Clip in FP32, one rounding to nearest even); only oneDNN's order of summation may differ
// with the band's shape. Weights and bias are widened and reordered once at Init; the plan's
// 16-bit weights are not read afterwards.
#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <cstring>
#include <vector>

#include "runtime/base/cpu_features.h"
#include "runtime/base/foreign_call.h"
#include "runtime/base/half_array.h"
#include "runtime/cpu/kernels/conv_kernels.h"
#include "runtime/cpu/kernels/convert_blocks.h"
#include "runtime/cpu/kernels/dnnl_kernel.h"
#include "runtime/cpu/step_adapters.h"

namespace precis::rt {
namespace {

using dims = dnnl::memory::dims;
using md = dnnl::memory::desc;
using tag = dnnl::memory::format_tag;
using dt = dnnl::memory::data_type;

// FP32 bytes of one band's input and output rows that a thread keeps (about half an L2).
constexpr int64_t kBandBytes = int64_t(512) << 10;
// Below this many FP32 bytes of X and Y per thread the step runs widened as a whole.
constexpr int64_t kMinImageBytes = int64_t(1) << 20;
constexpr size_t kAlign = 64;
size_t AlignUp(size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

void WidenRow(DataType type, const uint8_t* src, float* dst, int64_t n) {
  const uint16_t* s = reinterpret_cast<const uint16_t*>(src);
  if (type == DataType::kF16) HalfToFloatArray(s, dst, size_t(n));
  else Bf16ToFloatArray(s, dst, size_t(n));
}

void NarrowRow(DataType type, const float* src, uint8_t* dst, int64_t n) {
  uint16_t* d = reinterpret_cast<uint16_t*>(dst);
  if (type == DataType::kF16) FloatToHalfArray(src, d, size_t(n));
  else FloatToBf16Array(src, d, size_t(n));
}

// A constant FP16/BF16/F32 tensor as FP32 values.
std::vector<float> WidenConstant(const Tensor& t) {
  std::vector<float> out(size_t(t.numel));
  if (t.dtype == DataType::kF32) std::memcpy(out.data(), t.data, out.size() * 4);
  else WidenRow(t.dtype, t.data, out.data(), t.numel);
  return out;
}

class BandedHalfConvKernel : public Kernel {
 public:
  Status Init(const KernelArgs& args, const CpuContext& ctx) override {
    // Primitives made for one thread: each band runs on the thread that took it.
    OmpThreadScope one(1);
    try {
      return Setup(args, ctx);
    } catch (const dnnl::error& e) {
      std::string what = args.node + ": oneDNN: " + e.what();
      if (e.status == dnnl_unimplemented || e.status == dnnl_invalid_arguments) return Unimplemented(what);
      return Internal(what);
    }
  }

  Status Run(const KernelArgs& args, CpuContext& ctx) override {
    RunContext rc{this, args.in(0)->data, args.out(0)->data, ctx.scratch, {}};
    ForeignCallScope in_onednn;
    ParallelJobs(N_ * bands_, threads_, &RunJob, &rc);
    if (rc.failed.load(std::memory_order_relaxed)) return args.Error("oneDNN: primitive execution failed");
    return Status::Ok();
  }

  size_t ScratchBytes() const override { return per_thread_ * size_t(threads_); }
  bool AppliesActivation() const override { return applies_activation_; }
  // W and B were widened and reordered at Init.
  bool ReadsConstantInput(size_t i) const override { return i == 0; }

 private:
  struct RunContext {
    const BandedHalfConvKernel* k;
    const uint8_t* x;
    uint8_t* y;
    uint8_t* scratch;
    std::atomic<bool> failed;
  };
  // One thread's oneDNN objects for the full bands [0] and the last, shorter band [1].
  struct PerThread {
    dnnl::stream stream;
    std::array<dnnl::memory, 2> src, dst;
    dnnl::memory scratchpad;
    std::array<std::array<dnnl_exec_arg_t, 5>, 2> args;
    std::array<int, 2> nargs{};
  };

  Status Setup(const KernelArgs& args, const CpuContext& ctx) {
    const Tensor *x = args.in(0), *w = args.in(1), *b = args.in(2), *y = args.out(0);
    if (!x || !w || !y) return Unimplemented("needs X, W and Y");
    if (x->rank() != 4 || w->rank() != 4 || y->rank() != 4) return Unimplemented("bands: 2-D channels-last convolutions only");
    if (!IsHalf(x->dtype) || (x->dtype == DataType::kBF16 && NativeBf16Enabled()))
      return Unimplemented("bands: for 16-bit X that oneDNN does not take as it is");
    if (y->dtype != x->dtype) return Unimplemented("bands: Y of X's type");
    for (const Tensor* t : {w, b})
      if (t && (!t->is_constant || (!IsHalf(t->dtype) && t->dtype != DataType::kF32))) return Unimplemented("bands: constant W and B");
    x_type_ = x->dtype, y_type_ = y->dtype;
    N_ = x->dims[0], H_ = x->dims[1], W_ = x->dims[2], C_ = x->dims[3];
    M_ = w->dims[0], OH_ = y->dims[1], OW_ = y->dims[2];
    const int64_t KH = w->dims[1], KW = w->dims[2], group = args.attrs.Int("group", 1);
    if (group <= 0 || C_ % group || M_ % group || w->dims[3] * group != C_ || y->dims[0] != N_ || y->dims[3] != M_)
      return Unimplemented("channels do not match group");
    if (b && (b->rank() != 1 || b->dims[0] != M_)) return Unimplemented("bias size differs from M");
    if (x->numel == 0 || y->numel == 0) return Unimplemented("empty tensor");
    ConvWindowGeometry g;
    PRECIS_RETURN_IF_ERROR(ConvWindow(args, {H_, W_}, {KH, KW}, &g));
    if (g.out != dims{OH_, OW_}) return Unimplemented("planned output shape differs from the convolution's");
    stride_ = g.strides[0], pad_top_ = g.pad_l[0], ext_ = (KH - 1) * (g.dilations[0] + 1) + 1;
    threads_ = std::max(ctx.threads, 1);
    // Activations that stay in the caches anyway (small planes, many channels: the weights are
    // the traffic there) gain nothing from bands and lose the threads' split of the weights.
    if (N_ * 4 * (H_ * W_ * C_ + OH_ * OW_ * M_) <= kMinImageBytes * threads_) return Unimplemented("bands: small activations");
    ChooseBands();
    // Each band reads all the weights: where that is more traffic than the activations (ResNet's
    // wide 3x3 layers), the bands lose.
    const int64_t act = N_ * 4 * (H_ * W_ * C_ + OH_ * OW_ * M_), weight_bytes = 4 * w->numel;
    if (weight_bytes * N_ * bands_ * 2 > act) return Unimplemented("bands: weights larger than the activations");

    dnnl::primitive_attr attr = DnnlKernel::Attr();
    PRECIS_RETURN_IF_ERROR(ConvActivationPostOps(args, &attr, &applies_activation_));
    dims w_dims = group == 1 ? dims{M_, C_, KH, KW} : dims{group, M_ / group, C_ / group, KH, KW};
    md bias_md = b ? md({M_}, dt::f32, tag::x) : md();
    const dnnl::engine& engine = DnnlKernel::Engine();
    std::array<dnnl::convolution_forward::primitive_desc, 2> pd;
    md w_wanted(w_dims, dt::f32, tag::any);
    for (int k = 0; k < (rows_[1] ? 2 : 1); ++k) {
      dnnl::convolution_forward::desc desc(dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct, BandSrc(rows_[k]), w_wanted,
                                           bias_md, BandDst(rows_[k]), g.strides, g.dilations, dims{0, g.pad_l[1]}, dims{0, g.pad_r[1]});
      pd[k] = dnnl::convolution_forward::primitive_desc(desc, attr, engine);
      if (DnnlKernel::IsReferenceImpl(pd[k])) return Unimplemented("oneDNN has only its reference convolution for this band");
      w_wanted = pd[k].weights_desc();  // the last band shares the weights' layout
      primitive_[k] = dnnl::convolution_forward(pd[k]);
    }

    // Weights (and bias) widened once and reordered into the layout oneDNN chose.
    std::vector<float> wide = WidenConstant(*w);
    dnnl::memory given(md(w_dims, dt::f32, group == 1 ? tag::ohwi : tag::gohwi), engine, wide.data());
    weights_ = dnnl::memory(pd[0].weights_desc(), engine);
    dnnl::stream stream(engine);
    dnnl::reorder(given, weights_).execute(stream, given, weights_);
    stream.wait();
    if (b) bias_values_ = WidenConstant(*b);
    if (b) bias_ = dnnl::memory(bias_md, engine, bias_values_.data());

    src_bytes_ = AlignUp(size_t(InRows(rows_[0]) * W_ * C_) * 4);
    dst_bytes_ = AlignUp(size_t(rows_[0] * OW_ * M_) * 4);
    size_t pad_bytes = 0;
    for (int k = 0; k < (rows_[1] ? 2 : 1); ++k) pad_bytes = std::max(pad_bytes, pd[k].scratchpad_desc().get_size());
    per_thread_ = src_bytes_ + dst_bytes_ + AlignUp(pad_bytes);
    threads_ = int(std::min<int64_t>(threads_, N_ * bands_));
    per_thread_state_.resize(size_t(threads_));
    for (PerThread& t : per_thread_state_) {
      t.stream = dnnl::stream(engine);
      t.scratchpad = dnnl::memory(md({int64_t(pad_bytes)}, dt::u8, tag::x), engine, DNNL_MEMORY_NONE);
      for (int k = 0; k < (rows_[1] ? 2 : 1); ++k) {
        t.src[k] = dnnl::memory(BandSrc(rows_[k]), engine, DNNL_MEMORY_NONE);
        t.dst[k] = dnnl::memory(BandDst(rows_[k]), engine, DNNL_MEMORY_NONE);
        auto& a = t.args[k];
        int n = 0;
        a[n++] = {DNNL_ARG_SRC, t.src[k].get()};
        a[n++] = {DNNL_ARG_WEIGHTS, weights_.get()};
        if (b) a[n++] = {DNNL_ARG_BIAS, bias_.get()};
        a[n++] = {DNNL_ARG_DST, t.dst[k].get()};
        a[n++] = {DNNL_ARG_SCRATCHPAD, t.scratchpad.get()};
        t.nargs[k] = n;
      }
    }
    return Status::Ok();
  }

  // Bands of equal height (the last one may be shorter) whose FP32 rows fit kBandBytes, and at
  // least one band per thread where the image has the rows.
  void ChooseBands() {
    int64_t row_bytes = 4 * (OW_ * M_ + stride_ * W_ * C_);
    int64_t rows = std::clamp<int64_t>(kBandBytes / std::max<int64_t>(row_bytes, 1), 1, OH_);
    int64_t per_image = (threads_ + N_ - 1) / N_;
    rows = std::min(rows, std::max<int64_t>(1, (OH_ + per_image - 1) / per_image));
    bands_ = (OH_ + rows - 1) / rows;
    rows = (OH_ + bands_ - 1) / bands_;  // even bands
    bands_ = (OH_ + rows - 1) / rows;
    rows_[0] = rows;
    rows_[1] = OH_ - (bands_ - 1) * rows == rows ? 0 : OH_ - (bands_ - 1) * rows;
  }

  int64_t InRows(int64_t out_rows) const { return (out_rows - 1) * stride_ + ext_; }
  md BandSrc(int64_t out_rows) const { return md({1, C_, InRows(out_rows), W_}, dt::f32, tag::nhwc); }
  md BandDst(int64_t out_rows) const { return md({1, M_, out_rows, OW_}, dt::f32, tag::nhwc); }

  // Band `job % bands_` of image `job / bands_` on thread `thread`.
  static void RunJob(void* context, int64_t job, int thread) {
    RunContext& rc = *static_cast<RunContext*>(context);
    const BandedHalfConvKernel& k = *rc.k;
    const PerThread& t = k.per_thread_state_[size_t(thread)];
    const int64_t n = job / k.bands_, band = job % k.bands_, o0 = band * k.rows_[0];
    const int last = band == k.bands_ - 1 && k.rows_[1] ? 1 : 0;
    const int64_t out_rows = k.rows_[last], in_rows = k.InRows(out_rows), row = k.W_ * k.C_, out_row = k.OW_ * k.M_;
    uint8_t* mine = rc.scratch + size_t(thread) * k.per_thread_;
    float* src = reinterpret_cast<float*>(mine);
    const uint8_t* x = rc.x + size_t(n * k.H_) * size_t(row) * 2;
    for (int64_t r = 0, i = o0 * k.stride_ - k.pad_top_; r < in_rows; ++r, ++i) {
      if (i < 0 || i >= k.H_) std::memset(src + r * row, 0, size_t(row) * 4);
      else WidenRow(k.x_type_, x + size_t(i * row) * 2, src + r * row, row);
    }
    const size_t y_at = size_t((n * k.OH_ + o0) * out_row);
    float* dst = reinterpret_cast<float*>(mine + k.src_bytes_);
    bool ok = dnnl_memory_set_data_handle_v2(t.src[last].get(), src, nullptr) == dnnl_success &&
              dnnl_memory_set_data_handle_v2(t.dst[last].get(), dst, nullptr) == dnnl_success &&
              dnnl_memory_set_data_handle_v2(t.scratchpad.get(), mine + k.src_bytes_ + k.dst_bytes_, nullptr) == dnnl_success &&
              dnnl_primitive_execute(k.primitive_[last].get(), t.stream.get(), t.nargs[last], t.args[last].data()) == dnnl_success &&
              dnnl_stream_wait(t.stream.get()) == dnnl_success;
    if (!ok) {
      rc.failed.store(true, std::memory_order_relaxed);
      return;
    }
    NarrowRow(k.y_type_, dst, rc.y + y_at * 2, out_rows * out_row);
  }

  DataType x_type_ = DataType::kF16, y_type_ = DataType::kF16;
  int64_t N_ = 0, H_ = 0, W_ = 0, C_ = 0, M_ = 0, OH_ = 0, OW_ = 0, stride_ = 1, pad_top_ = 0, ext_ = 1;
  int64_t bands_ = 1;
  std::array<int64_t, 2> rows_{};  // output rows of a band, of the last band when shorter (else 0)
  int threads_ = 1;
  bool applies_activation_ = false;
  std::array<dnnl::primitive, 2> primitive_;
  dnnl::memory weights_, bias_;
  std::vector<float> bias_values_;
  std::vector<PerThread> per_thread_state_;
  size_t src_bytes_ = 0, dst_bytes_ = 0, per_thread_ = 0;
};

// HalfWeightsConv (convert_blocks.h) for a channels-last 2-D convolution of group 1 whose W is
// FP16 (BF16 where oneDNN has no native BF16): the windows packed from X and W widened slice by
// slice inside the product, so no FP32 copy of W is made at load (the widened and banded forms
// keep one for the plan's life) and none of X or Y at run time; HalfDepthwiseConv for a
// depthwise one (its few weights widened into the scratch at every run). Bias widened at Init
// (FP32 bias read where it lies); a fused Relu or Clip applied to the FP32 sums before rounding.
class HalfWeightsConvKernel : public Kernel {
 public:
  Status Init(const KernelArgs& args, const CpuContext& ctx) override {
    const Tensor *x = args.in(0), *w = args.in(1), *b = args.in(2), *y = args.out(0);
    if (!x || !w || !y) return Unimplemented("needs X, W and Y");
    if (!UseHalfWeightsConv()) return Unimplemented("16-bit weights: not on this CPU, or turned off (PRECIS_CPU_HALF_GEMM=0)");
    if (ctx.fp32_weights) return Unimplemented("16-bit weights: FP32 copies of weights asked for");
    if (!IsHalf(w->dtype) || (w->dtype == DataType::kBF16 && NativeBf16Enabled()))
      return Unimplemented("16-bit weights: for 16-bit W that oneDNN does not take as it is");
    for (const Tensor* t : {x, y})
      if (!IsHalf(t->dtype) && t->dtype != DataType::kF32) return Unimplemented("16-bit weights: FP32, FP16 or BF16 X and Y");
    if (x->rank() != 4 || w->rank() != 4 || y->rank() != 4) return Unimplemented("16-bit weights: 2-D convolutions only");
    HalfConvGeometry& g = geometry_;
    g.N = x->dims[0], g.H = x->dims[1], g.W = x->dims[2], g.C = x->dims[3];
    g.M = w->dims[0], g.KH = w->dims[1], g.KW = w->dims[2], g.OH = y->dims[1], g.OW = y->dims[2];
    const int64_t group = args.attrs.Int("group", 1);
    depthwise_ = group != 1 && group == g.C && g.M == g.C && w->dims[3] == 1;
    if (group != 1 && !depthwise_) return Unimplemented("16-bit weights: group 1 or depthwise (one output channel per channel) only");
    if (w->dims[3] * group != g.C || y->dims[0] != g.N || y->dims[3] != g.M) return Unimplemented("channels of X, W and Y do not match");
    if (x->numel == 0 || w->numel == 0 || y->numel == 0) return Unimplemented("empty tensor");
    ConvWindowGeometry window;
    PRECIS_RETURN_IF_ERROR(ConvWindow(args, {g.H, g.W}, {g.KH, g.KW}, &window));
    if (window.out != dims{g.OH, g.OW}) return Unimplemented("planned output shape differs from the convolution's");
    g.stride_h = window.strides[0], g.stride_w = window.strides[1];
    g.dilation_h = window.dilations[0] + 1, g.dilation_w = window.dilations[1] + 1;  // oneDNN counts the gaps
    g.pad_top = window.pad_l[0], g.pad_left = window.pad_l[1];
    if (b) {
      if (b->rank() != 1 || b->dims[0] != g.M) return Unimplemented("bias size differs from M");
      if (IsHalf(b->dtype) && !b->is_constant) return Unimplemented("16-bit weights: a 16-bit bias must be constant");
      if (!IsHalf(b->dtype) && b->dtype != DataType::kF32) return Unimplemented("16-bit weights: FP32, FP16 or BF16 bias");
      wide_bias_ = IsHalf(b->dtype);
      if (wide_bias_) bias_ = WidenConstant(*b);
    }
    FusedActivationSpec act;
    PRECIS_RETURN_IF_ERROR(ReadFusedActivation(args, &act));
    if (act.kind == FusedActivation::kRelu) clamp_ = {0.0f, INFINITY}, applies_activation_ = true;
    if (act.kind == FusedActivation::kClip) clamp_ = {act.lo, act.hi}, applies_activation_ = true;
    threads_ = std::max(ctx.threads, 1);
    return Status::Ok();
  }

  Status Run(const KernelArgs& args, CpuContext& ctx) override {
    const Tensor *x = args.in(0), *w = args.in(1), *b = args.in(2), *y = args.out(0);
    const float* bias = wide_bias_ ? bias_.data() : b ? reinterpret_cast<const float*>(b->data) : nullptr;
    const float* clamp = applies_activation_ ? clamp_.data() : nullptr;
    if (depthwise_) HalfDepthwiseConv(w->dtype, x->dtype, x->data, geometry_, w->data, bias, clamp, y->dtype, y->data, ctx.scratch, threads_);
    else HalfWeightsConv(w->dtype, x->dtype, x->data, geometry_, w->data, bias, clamp, y->dtype, y->data, ctx.scratch, threads_);
    return Status::Ok();
  }

  const char* Variant() const override { return depthwise_ ? "16-bit weights, depthwise" : "16-bit weights"; }
  size_t ScratchBytes() const override {
    return size_t(depthwise_ ? HalfDepthwiseConvScratchBytes(geometry_, threads_) : HalfWeightsConvScratchBytes(geometry_, threads_));
  }
  bool AppliesActivation() const override { return applies_activation_; }
  bool ReadsConstantInput(size_t i) const override { return i != 2 || !wide_bias_; }

 private:
  HalfConvGeometry geometry_;
  std::vector<float> bias_;
  bool wide_bias_ = false, applies_activation_ = false, depthwise_ = false;
  std::array<float, 2> clamp_{};
  int threads_ = 1;
};

}  // namespace

std::unique_ptr<Kernel> MakeBandedHalfConvKernel() { return std::make_unique<BandedHalfConvKernel>(); }
std::unique_ptr<Kernel> MakeHalfWeightsConvKernel() { return std::make_unique<HalfWeightsConvKernel>(); }

}  // namespace precis::rt
