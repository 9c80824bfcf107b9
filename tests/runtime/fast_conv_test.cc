// The fast Conv variants of conv_kernels.h (direct depthwise, direct 1x1, 1x1 as a oneDNN
// matmul) against a plain double-precision loop written here and against the reference Conv
// kernel, on odd shapes: batch 1 and 3, channels 1, 3, 17 and 32 (and a few larger), planes 1x1,
// 5x7 and 14x14, strides, asymmetric pads, auto_pad, dilation, with and without bias, constant
// and non-constant weights. Each variant must take the steps it is meant for (Init OK) and
// decline the others (Unimplemented: channel multipliers, other groups, kernel sizes, strides,
// pads, dtypes); the registered fast Conv must match on every step, and its shape policy must
// send mobilenet-style layers to the intended variant. Scratch and outputs start as NaN so that
// reading stale memory shows.
//
// The channels-last Conv (MakeNhwcConvKernel, the kernel of layout = "NHWC" steps) runs the same
// cases on X, W and Y permuted to [N, H, W, C], [M, kH, kW, C/group] and [N, H', W', M], with and
// without a fused Relu or Clip post-op (applied to the exact value for the comparison), and maps
// NaN as ActivationEpilogue does (Relu: 0, Clip: its min).
//
// Tolerance: the variants accumulate in f32 in an order that differs from the loop here:
// |y - exact| <= 1e-5 * sum|terms| + 1e-6, where sum|terms| is the sum of the absolute values of
// the products and the bias that make up the element. That is about 80 f32 ulps of the absolute
// sum, above the order-dependent rounding for the reduction lengths here (<= 520 terms) and
// far below any indexing error (an O(1) relative error).
#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <string>

#include <gtest/gtest.h>

#include "runtime/base/cpu_features.h"
#include "runtime/base/half.h"
#include "runtime/cpu/kernel.h"
#include "tests/runtime/kernel_test_util.h"
#include "runtime/cpu/kernels/conv_kernels.h"
#include "runtime/cpu/kernels/convert_blocks.h"

namespace precis::rt {
namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

using testing::AttrList;
using testing::Buffer;
using testing::Numel;
using testing::Random;

// Runs one kernel; returns Init's status or Run's. Runs twice, with scratch and output poisoned
// each time: other steps share the scratch, so nothing may rely on what an earlier run left.
Status RunKernel(KernelFactory factory, const std::vector<Buffer*>& inputs, Buffer* y, Attributes attrs, int threads) {
  KernelArgs args;
  for (Buffer* b : inputs) args.inputs.push_back(b ? &b->t : nullptr);
  args.outputs.push_back(&y->t);
  args.attrs = attrs;
  args.node = "test";
  CpuContext ctx;
  ctx.threads = threads;
  std::unique_ptr<Kernel> kernel = factory();
  PRECIS_RETURN_IF_ERROR(kernel->Init(args, ctx));
  std::vector<float> scratch(kernel->ScratchBytes() / sizeof(float) + 16);
  auto addr = reinterpret_cast<uintptr_t>(scratch.data());
  ctx.scratch = reinterpret_cast<uint8_t*>((addr + 63) / 64 * 64);  // 64-byte aligned, as the session's
  for (int run = 0; run < 2; ++run) {
    std::fill(scratch.begin(), scratch.end(), kNaN);
    std::fill(y->data.begin(), y->data.end(), kNaN);
    PRECIS_RETURN_IF_ERROR(kernel->Run(args, ctx));
  }
  return Status::Ok();
}

struct ConvCase {
  std::vector<int64_t> x;  // N, C, spatial...
  int64_t m;               // output channels
  std::vector<int64_t> kernel;
  int64_t group = 1;
  std::vector<int64_t> strides = {}, dilations = {}, pads = {};
  std::string auto_pad = "";
  bool bias = true;
  bool w_constant = false;
  DataType storage = DataType::kF32;  // X, W and B rounded to this type (the exact value follows)
};

std::vector<int64_t> Or(const std::vector<int64_t>& v, size_t n, int64_t fill) { return v.empty() ? std::vector<int64_t>(n, fill) : v; }

std::string Describe(const ConvCase& c) {
  auto list = [](const std::vector<int64_t>& v) {
    std::string s = "[";
    for (int64_t d : v) s += (s.size() > 1 ? "," : "") + std::to_string(d);
    return s + "]";
  };
  return "Conv x " + list(c.x) + " m " + std::to_string(c.m) + " k " + list(c.kernel) + " group " + std::to_string(c.group) +
         " strides " + list(c.strides) + " dilations " + list(c.dilations) + " pads " + list(c.pads) + " auto_pad '" + c.auto_pad +
         "' bias " + std::to_string(c.bias) + " w_constant " + std::to_string(c.w_constant);
}

// A Conv step with its inputs, output and the exact result of each output element.
struct ConvStep {
  Buffer x, w, b, y;
  AttrList attrs;
  std::vector<double> value, magnitude;

  std::vector<Buffer*> Inputs(bool bias) { return bias ? std::vector<Buffer*>{&x, &w, &b} : std::vector<Buffer*>{&x, &w}; }
};

// Spatial dims padded to three (kernel and sizes 1, strides and dilations 1, pads 0).
std::vector<int64_t> Pad3(std::vector<int64_t> v, int64_t fill) {
  v.insert(v.begin(), 3 - v.size(), fill);
  return v;
}

void MakeStep(const ConvCase& c, ConvStep* s) {
  size_t n = c.kernel.size();
  int64_t N = c.x[0], C = c.x[1], G = c.group, Cg = C / G, M = c.m, Mg = M / G;
  std::vector<int64_t> in(c.x.begin() + 2, c.x.end()), st = Or(c.strides, n, 1), d = Or(c.dilations, n, 1),
      p = Or(c.pads, 2 * n, 0), out(n), lead(n);
  for (size_t i = 0; i < n; ++i) {
    int64_t ext = (c.kernel[i] - 1) * d[i] + 1;
    if (c.auto_pad == "SAME_UPPER" || c.auto_pad == "SAME_LOWER") {
      out[i] = (in[i] + st[i] - 1) / st[i];
      int64_t total = std::max<int64_t>(0, (out[i] - 1) * st[i] + ext - in[i]);
      lead[i] = c.auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
    } else {
      out[i] = (in[i] + p[i] + p[i + n] - ext) / st[i] + 1;
      lead[i] = p[i];
    }
  }
  std::vector<int64_t> wd = {M, Cg}, yd = {N, M};
  wd.insert(wd.end(), c.kernel.begin(), c.kernel.end());
  yd.insert(yd.end(), out.begin(), out.end());
  s->x = Random(c.x, 1);
  s->w = Random(wd, 2, c.w_constant);
  s->b = Random({M}, 3, true);
  s->y = Random(yd, 4);
  if (c.storage != DataType::kF32)
    for (Buffer* b : {&s->x, &s->w, &s->b})
      for (float& v : b->data) v = c.storage == DataType::kF16 ? HalfToFloat(FloatToHalf(v)) : Bf16ToFloat(FloatToBf16(v));
  auto I = Pad3(in, 1), O = Pad3(out, 1), K = Pad3(c.kernel, 1), S = Pad3(st, 1), D = Pad3(d, 1), P = Pad3(lead, 0);
  int64_t osz = O[0] * O[1] * O[2], isz = I[0] * I[1] * I[2], ksz = K[0] * K[1] * K[2];
  s->value.assign(size_t(N * M * osz), 0.0);
  s->magnitude.assign(s->value.size(), 0.0);
  for (int64_t ni = 0; ni < N; ++ni)
    for (int64_t mi = 0; mi < M; ++mi)
      for (int64_t o = 0; o < osz; ++o) {
        int64_t o0 = o / (O[1] * O[2]), o1 = o / O[2] % O[1], o2 = o % O[2];
        double v = c.bias ? s->b.data[size_t(mi)] : 0.0, mag = std::fabs(v);
        for (int64_t ci = 0; ci < Cg; ++ci)
          for (int64_t k = 0; k < ksz; ++k) {
            int64_t k0 = k / (K[1] * K[2]), k1 = k / K[2] % K[1], k2 = k % K[2];
            int64_t i0 = o0 * S[0] - P[0] + k0 * D[0], i1 = o1 * S[1] - P[1] + k1 * D[1], i2 = o2 * S[2] - P[2] + k2 * D[2];
            if (i0 < 0 || i0 >= I[0] || i1 < 0 || i1 >= I[1] || i2 < 0 || i2 >= I[2]) continue;
            double t = double(s->x.data[size_t((ni * C + mi / Mg * Cg + ci) * isz + (i0 * I[1] + i1) * I[2] + i2)]) *
                       s->w.data[size_t((mi * Cg + ci) * ksz + k)];
            v += t;
            mag += std::fabs(t);
          }
        s->value[size_t((ni * M + mi) * osz + o)] = v;
        s->magnitude[size_t((ni * M + mi) * osz + o)] = mag;
      }
  s->attrs.Ints("kernel_shape", c.kernel).Int("group", G);
  if (!c.strides.empty()) s->attrs.Ints("strides", c.strides);
  if (!c.dilations.empty()) s->attrs.Ints("dilations", c.dilations);
  if (!c.pads.empty()) s->attrs.Ints("pads", c.pads);
  if (!c.auto_pad.empty()) s->attrs.String("auto_pad", c.auto_pad);
}

void ExpectClose(const ConvStep& s, const std::string& what) {
  int bad = 0;
  for (size_t i = 0; i < s.value.size() && bad < 5; ++i) {
    double tol = 1e-5 * s.magnitude[i] + 1e-6;
    if (!(std::fabs(double(s.y.data[i]) - s.value[i]) <= tol)) {
      ADD_FAILURE() << what << ": element " << i << " is " << s.y.data[i] << ", expected " << s.value[i] << " (tol " << tol << ")";
      ++bad;
    }
  }
}

// `variant` must take the step and match the loop on 1 and 2 threads; so must the registered
// fast Conv and the reference kernel.
void CheckTakes(KernelFactory variant, const ConvCase& c) {
  SCOPED_TRACE(Describe(c));
  ConvStep s;
  MakeStep(c, &s);
  Attributes a = s.attrs.Finish();
  const KernelRegistry& r = KernelRegistry::Cpu();
  for (auto [factory, name] : {std::pair{variant, "variant"}, {r.FindFast("Conv"), "fast Conv"}, {r.Find("Conv"), "reference"}}) {
    for (int threads : {1, 2}) {
      Status st = RunKernel(factory, s.Inputs(c.bias), &s.y, a, threads);
      ASSERT_TRUE(st.ok()) << name << ": " << st.ToString();
      ExpectClose(s, std::string(name) + ", " + std::to_string(threads) + " threads");
    }
  }
}

void CheckDeclines(KernelFactory variant, const ConvCase& c, DataType dtype = DataType::kF32) {
  SCOPED_TRACE(Describe(c));
  ConvStep s;
  MakeStep(c, &s);
  for (Buffer* b : {&s.x, &s.w, &s.b, &s.y}) b->t.dtype = dtype;
  Status st = RunKernel(variant, s.Inputs(c.bias), &s.y, s.attrs.Finish(), 2);
  EXPECT_EQ(st.code(), StatusCode::kUnimplemented) << st.ToString();
}

TEST(DepthwiseConv, MatchesLoop) {
  for (int64_t n : {1, 3})
    for (int64_t ch : {1, 3, 17, 32})
      for (bool bias : {false, true}) {
        CheckTakes(MakeDepthwiseConvKernel, {{n, ch, 14, 14}, ch, {3, 3}, ch, {}, {}, {1, 1, 1, 1}, "", bias});
        CheckTakes(MakeDepthwiseConvKernel, {{n, ch, 14, 14}, ch, {3, 3}, ch, {2, 2}, {}, {1, 1, 1, 1}, "", bias, true});
        CheckTakes(MakeDepthwiseConvKernel, {{n, ch, 5, 7}, ch, {3, 3}, ch, {}, {}, {0, 2, 1, 0}, "", bias});
        CheckTakes(MakeDepthwiseConvKernel, {{n, ch, 1, 1}, ch, {3, 3}, ch, {}, {}, {1, 1, 1, 1}, "", bias});
      }
}

TEST(DepthwiseConv, StridesPadsDilationsKernels) {
  for (bool bias : {false, true}) {
    CheckTakes(MakeDepthwiseConvKernel, {{1, 3, 5, 7}, 3, {3, 3}, 3, {2, 2}, {}, {1, 0, 0, 1}, "", bias});
    CheckTakes(MakeDepthwiseConvKernel, {{3, 17, 14, 14}, 17, {5, 5}, 17, {}, {}, {2, 2, 2, 2}, "", bias});
    CheckTakes(MakeDepthwiseConvKernel, {{1, 17, 5, 7}, 17, {5, 5}, 17, {2, 2}, {}, {2, 1, 2, 3}, "", bias});
    CheckTakes(MakeDepthwiseConvKernel, {{1, 3, 14, 14}, 3, {3, 3}, 3, {}, {2, 1}, {2, 1, 2, 1}, "", bias});  // dilation
    CheckTakes(MakeDepthwiseConvKernel, {{1, 32, 5, 7}, 32, {3, 3}, 32, {2, 2}, {}, {}, "SAME_UPPER", bias});
    CheckTakes(MakeDepthwiseConvKernel, {{3, 3, 14, 14}, 3, {3, 3}, 3, {2, 2}, {}, {}, "SAME_LOWER", bias});
    CheckTakes(MakeDepthwiseConvKernel, {{1, 17, 5, 7}, 17, {3, 3}, 17, {}, {}, {}, "VALID", bias});
    CheckTakes(MakeDepthwiseConvKernel, {{1, 3, 14, 14}, 3, {3, 3}, 3, {}, {5, 5}, {}, "", bias});  // taps never all inside
  }
}

TEST(DepthwiseConv, Declines) {
  CheckDeclines(MakeDepthwiseConvKernel, {{1, 3, 5, 7}, 6, {3, 3}, 3, {}, {}, {1, 1, 1, 1}});     // channel multiplier 2
  CheckDeclines(MakeDepthwiseConvKernel, {{1, 4, 5, 7}, 4, {3, 3}, 2, {}, {}, {1, 1, 1, 1}});     // grouped, not depthwise
  CheckDeclines(MakeDepthwiseConvKernel, {{1, 3, 5, 7}, 3, {3, 3}, 1, {}, {}, {1, 1, 1, 1}});     // group 1
  CheckDeclines(MakeDepthwiseConvKernel, {{1, 3, 9, 9}, 3, {7, 7}, 3, {}, {}, {}});               // 7x7
  CheckDeclines(MakeDepthwiseConvKernel, {{1, 3, 9, 9}, 3, {3, 5}, 3, {}, {}, {}});               // not square
  CheckDeclines(MakeDepthwiseConvKernel, {{1, 3, 9, 9}, 3, {3, 3}, 3, {3, 3}, {}, {}});           // stride 3
  CheckDeclines(MakeDepthwiseConvKernel, {{1, 3, 9, 9}, 3, {3, 3}, 3, {1, 2}, {}, {}});           // mixed strides
  CheckDeclines(MakeDepthwiseConvKernel, {{1, 3, 9}, 3, {3}, 3, {}, {}, {1, 1}});                 // 1-D
  CheckDeclines(MakeDepthwiseConvKernel, {{1, 3, 5, 7}, 3, {3, 3}, 3, {}, {}, {1, 1, 1, 1}}, DataType::kF16);
}

// Both 1x1 variants: the direct kernel and the oneDNN matmul.
constexpr KernelFactory kPointwise[] = {MakeDirectPointwiseConvKernel, MakePointwiseConvKernel};

TEST(PointwiseConv, MatchesLoop) {
  for (KernelFactory variant : kPointwise)
    for (int64_t n : {1, 3})
      for (int64_t c : {1, 3, 17, 32})
        for (int64_t m : {1, 3, 17, 32})
          for (bool bias : {false, true}) {
            bool wc = (c + m) % 2 == 0;  // constant and non-constant weights both show up
            CheckTakes(variant, {{n, c, 14, 14}, m, {1, 1}, 1, {}, {}, {}, "", bias, wc});
            CheckTakes(variant, {{n, c, 5, 7}, m, {1, 1}, 1, {}, {}, {}, "", bias, !wc});
            CheckTakes(variant, {{n, c, 1, 1}, m, {1, 1}, 1, {}, {}, {}, "", bias, wc});
          }
}

// Past one pass of k (256), several column blocks, rows split across items, rows and columns
// that are not whole tiles (6 x 16).
TEST(PointwiseConv, LargerShapes) {
  for (KernelFactory variant : kPointwise)
    for (bool wc : {false, true}) {
      CheckTakes(variant, {{1, 300, 5, 7}, 13, {1, 1}, 1, {}, {}, {}, "", true, wc});
      CheckTakes(variant, {{3, 3, 40, 41}, 20, {1, 1}, 1, {}, {}, {}, "", true, wc});
      CheckTakes(variant, {{1, 17, 14, 14}, 100, {1, 1}, 1, {}, {}, {}, "", false, wc});
      CheckTakes(variant, {{2, 520, 3, 3}, 7, {1, 1}, 1, {}, {}, {}, "", true, wc});
    }
}

TEST(PointwiseConv, OtherRanksAndAutoPad) {
  for (KernelFactory variant : kPointwise) {
    CheckTakes(variant, {{3, 17, 9}, 5, {1}, 1, {}, {}, {}, ""});
    CheckTakes(variant, {{1, 3, 2, 5, 7}, 17, {1, 1, 1}, 1, {}, {}, {}, "", false});
    CheckTakes(variant, {{1, 17, 5, 7}, 3, {1, 1}, 1, {}, {2, 2}, {}, "SAME_UPPER"});
    CheckTakes(variant, {{1, 17, 5, 7}, 3, {1, 1}, 1, {}, {}, {0, 0, 0, 0}, "VALID"});
  }
}

TEST(PointwiseConv, Declines) {
  for (KernelFactory variant : kPointwise) {
    CheckDeclines(variant, {{1, 3, 5, 7}, 4, {1, 1}, 1, {2, 2}, {}, {}});          // stride 2
    CheckDeclines(variant, {{1, 3, 5, 7}, 4, {1, 1}, 1, {}, {}, {1, 0, 0, 0}});    // padded
    CheckDeclines(variant, {{1, 4, 5, 7}, 6, {1, 1}, 2, {}, {}, {}});              // grouped
    CheckDeclines(variant, {{1, 3, 5, 7}, 3, {1, 1}, 3, {}, {}, {}});              // depthwise
    CheckDeclines(variant, {{1, 3, 5, 7}, 4, {3, 3}, 1, {}, {}, {1, 1, 1, 1}});    // 3x3
    CheckDeclines(variant, {{1, 3, 5, 7}, 4, {1, 1}, 1, {}, {}, {}}, DataType::kF16);
  }
}

// What neither variant takes still runs through the registered fast Conv (oneDNN's general
// convolution) and matches: channel multipliers, grouped and 7x7 convolutions.
TEST(FastConv, OtherStepsFallThrough) {
  CheckTakes(MakeDnnlConvKernel, {{1, 3, 5, 7}, 6, {3, 3}, 3, {}, {}, {1, 1, 1, 1}});
  CheckTakes(MakeDnnlConvKernel, {{3, 4, 14, 14}, 6, {3, 3}, 2, {2, 2}, {}, {1, 1, 1, 1}});
  CheckTakes(MakeDnnlConvKernel, {{1, 3, 9, 9}, 3, {7, 7}, 3, {}, {}, {3, 3, 3, 3}});
  CheckTakes(MakeDnnlConvKernel, {{1, 3, 5, 7}, 4, {1, 1}, 1, {2, 2}, {}, {}, "", false});
}

// The registered fast Conv's choice (the first variant it prefers that takes the step, as
// FastConvKernel tries them) on mobilenet_v2-like layers (batch 8).
TEST(FastConv, ShapePolicy) {
  auto prefers = [](const ConvCase& c) {
    ConvStep s;
    MakeStep(c, &s);
    KernelArgs args;
    args.inputs = {&s.x.t, &s.w.t, &s.b.t};
    args.outputs = {&s.y.t};
    args.attrs = s.attrs.Finish();
    CpuContext ctx;
    ctx.threads = 2;
    for (KernelFactory f : {MakeDepthwiseConvKernel, MakeDirectPointwiseConvKernel, MakePointwiseConvKernel, MakeDnnlConvKernel})
      if (PreferConvVariant(args, f) && f()->Init(args, ctx).ok()) return f;
    return KernelFactory(nullptr);
  };
  EXPECT_EQ(prefers({{8, 32, 56, 56}, 32, {3, 3}, 32, {}, {}, {1, 1, 1, 1}}), MakeDepthwiseConvKernel);
  EXPECT_EQ(prefers({{8, 32, 7, 7}, 32, {3, 3}, 32, {}, {}, {1, 1, 1, 1}}), MakeDnnlConvKernel);
  EXPECT_EQ(prefers({{8, 16, 28, 28}, 96, {1, 1}, 1}), MakeDirectPointwiseConvKernel);
  EXPECT_EQ(prefers({{8, 96, 28, 28}, 24, {1, 1}, 1}), MakePointwiseConvKernel);
  EXPECT_EQ(prefers({{8, 32, 7, 7}, 128, {1, 1}, 1}), MakeDnnlConvKernel);
  EXPECT_EQ(prefers({{8, 3, 28, 28}, 32, {3, 3}, 1, {2, 2}, {}, {1, 1, 1, 1}}), MakeDnnlConvKernel);
}

// [a, b, c, d] -> [a, c, d, b] (NCHW -> NHWC; W [M, C/group, kH, kW] -> [M, kH, kW, C/group]).
Buffer ChannelsLast(const Buffer& b) {
  const auto& d = b.t.dims;
  Buffer out = b;
  out.t.dims = {d[0], d[2], d[3], d[1]};
  for (int64_t i = 0; i < d[0]; ++i)
    for (int64_t c = 0; c < d[1]; ++c)
      for (int64_t h = 0; h < d[2]; ++h)
        for (int64_t w = 0; w < d[3]; ++w)
          out.data[size_t(((i * d[2] + h) * d[3] + w) * d[1] + c)] = b.data[size_t(((i * d[1] + c) * d[2] + h) * d[3] + w)];
  out.t.data = reinterpret_cast<uint8_t*>(out.data.data());
  return out;
}

struct Activation {
  std::string name;  // "", "Relu" or "Clip"
  float lo = 0, hi = 0;
  double Apply(double v) const {
    if (name == "Relu") return v > 0 ? v : 0;
    if (name == "Clip") return std::min(std::max(v, double(lo)), double(hi));
    return v;
  }
};

// The step of `c` with the channels-last layout and the fused activation `act`.
Attributes ChannelsLastStep(const ConvCase& c, const Activation& act, ConvStep* s) {
  MakeStep(c, s);
  s->attrs.String("layout", "NHWC");
  if (!act.name.empty()) s->attrs.String("activation", act.name);
  if (act.name == "Clip") s->attrs.Float("activation_min", act.lo).Float("activation_max", act.hi);
  return s->attrs.Finish();
}

// Y ([N, H', W', M], element i read by get(i)) against the exact values of `s` after `act`:
// |y - exact| <= 1e-5 * sum|terms| + 1e-6, plus rel * |exact| + abs (a storage type's rounding).
template <typename Get>
void ExpectChannelsLast(const ConvStep& s, const Activation& act, const std::vector<int64_t>& yd, Get&& get, double rel, double abs, int threads) {
  const int64_t N = yd[0], OH = yd[1], OW = yd[2], M = yd[3];
  int bad = 0;
  for (int64_t n = 0; n < N && bad < 5; ++n)
    for (int64_t m = 0; m < M; ++m)
      for (int64_t o = 0; o < OH * OW; ++o) {
        size_t exact = size_t((n * M + m) * OH * OW + o);
        double want = act.Apply(s.value[exact]), tol = 1e-5 * s.magnitude[exact] + 1e-6 + rel * std::fabs(want) + abs;
        float got = get((n * OH * OW + o) * M + m);
        if (!(std::fabs(double(got) - want) <= tol) && bad++ < 5)
          ADD_FAILURE() << threads << " threads: y[n " << n << ", m " << m << ", position " << o << "] is " << got << ", expected " << want;
      }
}

void CheckChannelsLast(const ConvCase& c, const Activation& act = {}, bool want_winograd = false) {
  SCOPED_TRACE(Describe(c) + " activation '" + act.name + "'");
  ConvStep s;
  Attributes a = ChannelsLastStep(c, act, &s);
  Buffer x = ChannelsLast(s.x), w = ChannelsLast(s.w), y = ChannelsLast(s.y);
  std::vector<Buffer*> inputs = c.bias ? std::vector<Buffer*>{&x, &w, &s.b} : std::vector<Buffer*>{&x, &w};
  {
    KernelArgs args;
    for (Buffer* b : inputs) args.inputs.push_back(&b->t);
    args.outputs.push_back(&y.t);
    args.attrs = a;
    args.node = "test";
    std::unique_ptr<Kernel> k = MakeNhwcConvKernel();
    Status st = k->Init(args, CpuContext{});
    ASSERT_TRUE(st.ok()) << st.ToString();
    EXPECT_EQ(k->AppliesActivation(), !act.name.empty());
    // FP32 steps run in oneDNN's convolution as they are: direct, or Winograd for 3x3 stride-1
    // steps of constant weights without groups where oneDNN has it (AVX-512).
    const bool winograd_shape = c.kernel == std::vector<int64_t>{3, 3} && Or(c.strides, 2, 1) == std::vector<int64_t>{1, 1} &&
                                Or(c.dilations, 2, 1) == std::vector<int64_t>{1, 1} && c.group == 1 && c.w_constant;
    if (k->Variant()) {
      EXPECT_STREQ(k->Variant(), "Winograd");
      EXPECT_TRUE(winograd_shape) << "Winograd for a step that is not a 3x3 stride-1 convolution of constant weights";
    }
    if (want_winograd) {
      EXPECT_STREQ(k->Variant(), "Winograd") << "the step did not take oneDNN's Winograd kernel";
    }
  }
  for (int threads : {1, 2}) {
    Status st = RunKernel(MakeNhwcConvKernel, inputs, &y, a, threads);
    ASSERT_TRUE(st.ok()) << st.ToString();
    ExpectChannelsLast(s, act, y.t.dims, [&](int64_t i) { return y.data[size_t(i)]; }, 0.0, 0.0, threads);
  }
}

TEST(ChannelsLastConv, MatchesLoop) {
  for (int64_t n : {1, 3})
    for (bool bias : {false, true}) {
      CheckChannelsLast({{n, 3, 14, 14}, 16, {3, 3}, 1, {2, 2}, {}, {1, 1, 1, 1}, "", bias, true});  // a stem
      CheckChannelsLast({{n, 17, 5, 7}, 32, {1, 1}, 1, {}, {}, {}, "", bias, true});                 // 1x1 expansion
      CheckChannelsLast({{n, 32, 14, 14}, 17, {1, 1}, 1, {}, {}, {}, "", bias, true});               // 1x1 projection
      CheckChannelsLast({{n, 32, 14, 14}, 32, {3, 3}, 32, {}, {}, {1, 1, 1, 1}, "", bias, true});    // depthwise
      CheckChannelsLast({{n, 17, 14, 14}, 17, {5, 5}, 17, {2, 2}, {}, {2, 1, 2, 3}, "", bias, true});  // depthwise 5x5, asymmetric
      CheckChannelsLast({{n, 4, 14, 14}, 6, {3, 3}, 2, {2, 2}, {}, {1, 1, 1, 1}, "", bias, true});   // grouped
      CheckChannelsLast({{n, 3, 5, 7}, 6, {3, 3}, 3, {}, {}, {1, 1, 1, 1}, "", bias, true});         // channel multiplier
      CheckChannelsLast({{n, 8, 9, 9}, 8, {7, 7}, 1, {}, {}, {3, 3, 3, 3}, "", bias, true});         // 7x7
      CheckChannelsLast({{n, 16, 14, 14}, 8, {3, 3}, 1, {}, {2, 2}, {2, 2, 2, 2}, "", bias, true});  // dilation
      CheckChannelsLast({{n, 16, 5, 7}, 8, {3, 3}, 1, {2, 2}, {}, {}, "SAME_UPPER", bias, true});
      CheckChannelsLast({{n, 16, 5, 7}, 8, {3, 3}, 1, {2, 2}, {}, {}, "SAME_LOWER", bias, true});
      CheckChannelsLast({{n, 16, 5, 7}, 8, {3, 2}, 1, {}, {}, {}, "VALID", bias, true});
      CheckChannelsLast({{n, 8, 1, 1}, 8, {3, 3}, 1, {}, {}, {1, 1, 1, 1}, "", bias, true});         // 1x1 plane, pads only
    }
}

// FP32 3x3 stride-1 steps of constant weights take oneDNN's Winograd F(2x2, 3x3) on AVX-512
// CPUs (asserted here; CheckChannelsLast asserts that no other step does); its outputs are held
// to the same bound as the direct form's (1e-5 of the sum of |terms|): ResNet's shapes, planes
// not a multiple of the tiles, no bias, a fused Relu.
TEST(ChannelsLastConv, WinogradMatchesLoop) {
  if (!HostCpuFeatures().x86_64_v4) GTEST_SKIP() << "oneDNN's FP32 Winograd convolution needs AVX-512 (x86-64-v4); this CPU has not";
  for (int64_t n : {1, 2}) {
    CheckChannelsLast({{n, 64, 14, 14}, 64, {3, 3}, 1, {}, {}, {1, 1, 1, 1}, "", true, true}, {}, true);
    CheckChannelsLast({{n, 32, 7, 9}, 48, {3, 3}, 1, {}, {}, {1, 1, 1, 1}, "", false, true}, {}, true);
    CheckChannelsLast({{n, 16, 13, 13}, 16, {3, 3}, 1, {}, {}, {}, "", true, true}, {}, true);  // no padding
  }
  CheckChannelsLast({{1, 64, 14, 14}, 64, {3, 3}, 1, {}, {}, {1, 1, 1, 1}, "", true, true}, Activation{"Relu"}, true);
  // A fused Clip: oneDNN's Winograd kernel declines that post-op, so the direct form.
  CheckChannelsLast({{1, 64, 14, 14}, 64, {3, 3}, 1, {}, {}, {1, 1, 1, 1}, "", true, true}, Activation{"Clip", 0.0f, 6.0f});
}

TEST(ChannelsLastConv, FusedActivations) {
  for (const Activation& act : {Activation{"Relu"}, Activation{"Clip", 0.0f, 6.0f}, Activation{"Clip", -0.25f, 0.5f}}) {
    CheckChannelsLast({{1, 16, 14, 14}, 32, {1, 1}, 1, {}, {}, {}, "", true, true}, act);
    CheckChannelsLast({{3, 32, 14, 14}, 32, {3, 3}, 32, {2, 2}, {}, {1, 1, 1, 1}, "", true, true}, act);
    CheckChannelsLast({{1, 3, 14, 14}, 16, {3, 3}, 1, {2, 2}, {}, {1, 1, 1, 1}, "", false, true}, act);
  }
}

// A 16-channel output whose position 5 a NaN in X reached (y(i): element i of [.., 16]): NaN
// there without an activation, 0 through a fused Relu, the min through a fused Clip; position 4
// untouched.
template <typename Get>
void ExpectNanMapped(const Activation& act, Get&& y) {
  for (int64_t m = 0; m < 16; ++m) {
    const float got = y(5 * 16 + m);
    if (act.name.empty()) EXPECT_TRUE(std::isnan(got)) << m;
    else EXPECT_EQ(got, act.name == "Relu" ? 0.0f : act.lo) << m;
    EXPECT_FALSE(std::isnan(y(4 * 16 + m))) << m;
  }
}

// NaN in X: the positions it reaches are NaN without an activation, 0 through a fused Relu and
// the min through a fused Clip, as ActivationEpilogue maps them (the unfused plan's Relu gives 0;
// its Clip keeps NaN, which passes/fuse_epilogues.h documents).
TEST(ChannelsLastConv, NanThroughFusedActivations) {
  for (const Activation& act : {Activation{}, Activation{"Relu"}, Activation{"Clip", -1.0f, 6.0f}}) {
    SCOPED_TRACE(act.name);
    ConvStep s;
    MakeStep({{1, 16, 6, 6}, 16, {1, 1}, 1, {}, {}, {}, "", true, true}, &s);
    s.attrs.String("layout", "NHWC");
    if (!act.name.empty()) s.attrs.String("activation", act.name);
    if (act.name == "Clip") s.attrs.Float("activation_min", act.lo).Float("activation_max", act.hi);
    Buffer x = ChannelsLast(s.x), w = ChannelsLast(s.w), y = ChannelsLast(s.y);
    x.data[5 * 16 + 3] = kNaN;  // position 5 (row 0, column 5), channel 3: every output channel there
    ASSERT_TRUE(RunKernel(MakeNhwcConvKernel, {&x, &w, &s.b}, &y, s.attrs.Finish(), 2).ok());
    ExpectNanMapped(act, [&](int64_t i) { return y.data[size_t(i)]; });
  }
}

// Steps initialized while it lives take HalfWeightsConv (mode 1, where the CPU has the
// instructions) or not (mode 0: bands or widened), whatever the CPU's default.
struct HalfWeightsMode {
  int saved;
  explicit HalfWeightsMode(int mode) : saved(SetHalfWeightsGemmForTesting(mode)) {}
  ~HalfWeightsMode() { SetHalfWeightsGemmForTesting(saved); }
};

// A channels-last step whose W (and B) are stored in c.storage (16-bit), X in `x_type` and Y in
// `y_type` (c.storage or FP32), through MakeNhwcConvKernel on 1 and 2 threads: the channels-last
// Conv must choose `variant` (the kernel made by `make` must take the step) and match the exact
// value over the rounded inputs, then the activation, then one rounding to Y's type: tolerance
// that of the FP32 kernels plus, for a 16-bit Y, half an ulp of the type (2^-11 FP16, 2^-8 BF16)
// and FP16's smallest subnormal.
void CheckHalfStep(KernelFactory make, const char* variant, const ConvCase& c, const Activation& act = {}, DataType x_type = DataType::kF32,
                   DataType y_type = DataType::kF32) {
  if (x_type == DataType::kF32) x_type = c.storage;
  if (y_type == DataType::kF32) y_type = c.storage;
  SCOPED_TRACE(Describe(c) + " storage " + DataTypeName(c.storage) + " X " + DataTypeName(x_type) + " Y " + DataTypeName(y_type) +
               " activation '" + act.name + "'");
  ConvStep s;
  Attributes a = ChannelsLastStep(c, act, &s);
  auto typed = [&](const Buffer& b, DataType type, bool constant) {
    Buffer nhwc = ChannelsLast(b);
    testing::TypedBuffer t(type, nhwc.t.dims);
    for (int64_t i = 0; i < t.t.numel; ++i) t.Set(i, nhwc.data[size_t(i)]);
    t.t.is_constant = constant;
    return t;
  };
  testing::TypedBuffer x = typed(s.x, x_type, false), w = typed(s.w, c.storage, c.w_constant), y = typed(s.y, y_type, false);
  testing::TypedBuffer b(c.storage, {c.m});
  for (int64_t i = 0; i < c.m; ++i) b.Set(i, s.b.data[size_t(i)]);
  b.t.is_constant = true;
  std::vector<testing::TypedBuffer*> inputs = c.bias ? std::vector<testing::TypedBuffer*>{&x, &w, &b} : std::vector<testing::TypedBuffer*>{&x, &w};
  {
    KernelArgs args;
    for (auto* t : inputs) args.inputs.push_back(&t->t);
    args.outputs.push_back(&y.t);
    args.attrs = a;
    args.node = "test";
    CpuContext ctx;
    ctx.threads = 2;
    Status st = make()->Init(args, ctx);
    ASSERT_TRUE(st.ok()) << variant << " must take this step: " << st.ToString();
    std::unique_ptr<Kernel> nhwc = MakeNhwcConvKernel();  // and the channels-last Conv chooses it, and says so
    ASSERT_TRUE(nhwc->Init(args, ctx).ok());
    ASSERT_NE(nhwc->Variant(), nullptr);
    EXPECT_STREQ(nhwc->Variant(), variant);
    EXPECT_EQ(nhwc->AppliesActivation(), !act.name.empty());
  }
  const double half_ulp = y_type == DataType::kF16 ? std::ldexp(1.0, -11) : y_type == DataType::kBF16 ? std::ldexp(1.0, -8) : 0.0;
  const double subnormal = y_type == DataType::kF32 ? 0.0 : 6e-8;
  for (int threads : {1, 2}) {
    Status st = testing::RunKernel(MakeNhwcConvKernel, inputs, {&y}, a, threads);
    ASSERT_TRUE(st.ok()) << st.ToString();
    ExpectChannelsLast(s, act, y.t.dims, [&](int64_t i) { return y.Get(i); }, half_ulp, subnormal, threads);
  }
}

// Bands, with HalfWeightsConv and HalfDepthwiseConv turned off (steps of group 1 and depthwise
// ones take them by default where the CPU has AVX2, FMA and F16C).
void CheckHalfBands(const ConvCase& c, const Activation& act = {}) {
  HalfWeightsMode off(0);
  CheckHalfStep(MakeBandedHalfConvKernel, "16-bit in bands", c, act);
}

TEST(ChannelsLastConv, HalfStepsInBands) {
  const DataType f16 = DataType::kF16;
  CheckHalfBands({{1, 16, 128, 128}, 32, {1, 1}, 1, {}, {}, {}, "", true, true, f16});                 // 1x1 expansion
  CheckHalfBands({{2, 32, 72, 72}, 32, {3, 3}, 32, {}, {}, {1, 1, 1, 1}, "", false, true, f16});       // depthwise, batch 2
  CheckHalfBands({{1, 32, 129, 127}, 32, {3, 3}, 32, {2, 2}, {}, {0, 1, 1, 0}, "", true, true, f16});  // stride 2, asymmetric pads
  CheckHalfBands({{1, 3, 224, 224}, 32, {3, 3}, 1, {2, 2}, {}, {1, 1, 1, 1}, "", true, true, f16});    // a stem
  CheckHalfBands({{1, 16, 131, 128}, 16, {3, 3}, 1, {}, {2, 2}, {2, 2, 2, 2}, "", true, true, f16});   // dilation, a short last band
  CheckHalfBands({{1, 16, 128, 128}, 32, {1, 1}, 1, {}, {}, {}, "", true, true, f16}, Activation{"Clip", 0.0f, 6.0f});
  CheckHalfBands({{1, 16, 160, 160}, 32, {3, 3}, 1, {2, 2}, {}, {}, "SAME_UPPER", true, true, f16}, Activation{"Relu"});
  if (!NativeBf16Enabled())  // else BF16 steps run in oneDNN as they are
    CheckHalfBands({{1, 16, 128, 128}, 32, {3, 3}, 1, {}, {}, {1, 1, 1, 1}, "", true, true, DataType::kBF16});
}

const Activation kHalfActivations[] = {Activation{"Relu"}, Activation{"Clip", 0.0f, 6.0f}, Activation{"Clip", -0.25f, 0.5f}};

// Every case through MakeHalfWeightsConvKernel, chosen by the channels-last Conv as `variant`
// (BF16 cases only where oneDNN has no native BF16); then `typed` with X and Y in FP32 and mixed,
// and `activated` with a fused Relu and two Clips.
void CheckHalfCases(const char* variant, const std::vector<ConvCase>& cases, const ConvCase& typed, const ConvCase& activated) {
  const DataType f16 = DataType::kF16, f32 = DataType::kF32;
  for (const ConvCase& c : cases) {
    if (c.storage == DataType::kBF16 && NativeBf16Enabled()) continue;  // BF16 steps run in oneDNN as they are there
    CheckHalfStep(MakeHalfWeightsConvKernel, variant, c);
  }
  CheckHalfStep(MakeHalfWeightsConvKernel, variant, typed, {}, f32, f32);
  CheckHalfStep(MakeHalfWeightsConvKernel, variant, typed, {}, f16, f32);
  CheckHalfStep(MakeHalfWeightsConvKernel, variant, typed, {}, f32, f16);
  for (const Activation& act : kHalfActivations) CheckHalfStep(MakeHalfWeightsConvKernel, variant, activated, act);
}

// Group-1 steps with 16-bit weights (HalfWeightsConv): the windows packed from X, W widened slice
// by slice. Shapes around its blocking: 6-row tiles and 16-column panels (M 20, 33), C not a
// multiple of 8 (3, 12), K past one 256-deep slice (3x3 x 32 = 288) and past what one block of
// 240 rows holds at full width (3x3 x 256 = 2304: 222 rows), images that split by rows (30 x 30,
// 32 channels out: 900 rows, 4 blocks) and by panels (7 x 7, 64 out), batches whose rows cross images; ResNet's
// stem, 1x1 and downsampling steps; strides, dilation, SAME padding, asymmetric pads, a 1x1
// plane; non-constant weights (a training plan's working copies); X and Y 16-bit or FP32.
TEST(ChannelsLastConv, HalfWeightsMatchLoop) {
  if (!HalfWeightsGemmAvailable()) GTEST_SKIP() << "HalfWeightsConv needs AVX2, FMA and F16C, which this CPU lacks";
  HalfWeightsMode on(-1);
  const DataType f16 = DataType::kF16, bf16 = DataType::kBF16, f32 = DataType::kF32;
  const std::vector<ConvCase> cases = {
      {{1, 3, 30, 30}, 20, {7, 7}, 1, {2, 2}, {}, {3, 3, 3, 3}, "", true, true, f16},    // the stem
      {{2, 12, 9, 11}, 33, {3, 3}, 1, {}, {}, {1, 1, 1, 1}, "", true, true, f16},        // batch 2, C 12, M 33
      {{1, 32, 30, 30}, 32, {3, 3}, 1, {}, {}, {1, 1, 1, 1}, "", false, true, f16},      // split by rows, 4 blocks
      {{1, 256, 7, 7}, 64, {3, 3}, 1, {}, {}, {1, 1, 1, 1}, "", true, true, f16},        // K 2304, split by panels
      {{2, 64, 14, 14}, 48, {1, 1}, 1, {}, {}, {}, "", true, true, f16},                 // 1x1
      {{1, 32, 15, 15}, 40, {1, 1}, 1, {2, 2}, {}, {}, "", true, true, f16},             // downsampling 1x1
      {{1, 16, 14, 14}, 8, {3, 3}, 1, {}, {2, 2}, {2, 2, 2, 2}, "", true, true, f16},    // dilation
      {{1, 16, 5, 7}, 8, {3, 3}, 1, {2, 2}, {}, {}, "SAME_UPPER", true, true, f16},
      {{1, 16, 9, 8}, 24, {3, 2}, 1, {2, 1}, {}, {0, 1, 2, 0}, "", true, true, f16},     // asymmetric
      {{1, 8, 1, 1}, 8, {3, 3}, 1, {}, {}, {1, 1, 1, 1}, "", true, true, f16},           // 1x1 plane, pads only
      {{1, 24, 10, 10}, 17, {3, 3}, 1, {}, {}, {1, 1, 1, 1}, "", true, false, f16},      // non-constant W
      {{1, 24, 10, 10}, 17, {3, 3}, 1, {}, {}, {1, 1, 1, 1}, "", true, true, bf16},
  };
  CheckHalfCases("16-bit weights", cases, cases[1], cases[2]);
  for (const Activation& act : kHalfActivations) CheckHalfStep(MakeHalfWeightsConvKernel, "16-bit weights", cases[3], act, f16, f32);
}

// Depthwise steps with 16-bit weights (HalfDepthwiseConv): X read where it lies, the weights
// widened into the scratch at every run. Channels in blocks of 32, of 8 and one at a time (32,
// 40, 24, 17), 3x3 and 5x5, strides, dilation, asymmetric and SAME padding, a
// batch, rows split among threads; X and Y 16-bit or FP32; Relu and Clip.
TEST(ChannelsLastConv, HalfDepthwiseMatchLoop) {
  if (!HalfWeightsGemmAvailable()) GTEST_SKIP() << "HalfDepthwiseConv needs AVX2, FMA and F16C, which this CPU lacks";
  HalfWeightsMode on(-1);
  const DataType f16 = DataType::kF16, bf16 = DataType::kBF16;
  const std::vector<ConvCase> cases = {
      {{1, 32, 14, 14}, 32, {3, 3}, 32, {}, {}, {1, 1, 1, 1}, "", true, true, f16},
      {{2, 17, 9, 11}, 17, {3, 3}, 17, {2, 2}, {}, {0, 1, 1, 0}, "", true, true, f16},    // batch 2, C 17, stride 2, asymmetric
      {{1, 24, 13, 13}, 24, {5, 5}, 24, {}, {2, 2}, {4, 4, 4, 4}, "", false, true, f16},  // 5x5, dilation, no bias
      {{1, 16, 7, 9}, 16, {3, 3}, 16, {2, 2}, {}, {}, "SAME_UPPER", true, false, f16},     // non-constant W
      {{1, 40, 10, 10}, 40, {3, 3}, 40, {}, {}, {1, 1, 1, 1}, "", true, true, bf16},
  };
  CheckHalfCases("16-bit weights, depthwise", cases, cases[1], cases[1]);
}

// What HalfWeightsConv declines, and NaN in a 16-bit X through it: NaN without an activation, 0
// through a fused Relu, the min through a fused Clip.
TEST(ChannelsLastConv, HalfWeightsDeclinesAndNan) {
  if (!HalfWeightsGemmAvailable()) GTEST_SKIP() << "HalfWeightsConv needs AVX2, FMA and F16C, which this CPU lacks";
  HalfWeightsMode on(-1);
  // The step of `c` channels-last, its tensors relabelled as type `t` (their values do not matter
  // to Init).
  auto step = [](const ConvCase& c, DataType t, ConvStep* s) {
    MakeStep(c, s);
    s->attrs.String("layout", "NHWC");
    s->x = ChannelsLast(s->x), s->w = ChannelsLast(s->w), s->y = ChannelsLast(s->y);
    for (Buffer* b : {&s->x, &s->w, &s->b, &s->y}) b->t.dtype = t;
    return s->attrs.Finish();
  };
  {
    ConvStep s;  // grouped
    Attributes a = step({{1, 8, 5, 7}, 8, {3, 3}, 2, {}, {}, {1, 1, 1, 1}}, DataType::kF16, &s);
    Status st = RunKernel(MakeHalfWeightsConvKernel, s.Inputs(true), &s.y, a, 2);
    EXPECT_EQ(st.code(), StatusCode::kUnimplemented) << st.ToString();
    ConvStep m;  // depthwise with a channel multiplier (two output channels per channel)
    a = step({{1, 4, 5, 7}, 8, {3, 3}, 4, {}, {}, {1, 1, 1, 1}}, DataType::kF16, &m);
    st = RunKernel(MakeHalfWeightsConvKernel, m.Inputs(true), &m.y, a, 2);
    EXPECT_EQ(st.code(), StatusCode::kUnimplemented) << st.ToString();
  }
  {
    ConvStep s;  // FP32 weights
    Attributes a = step({{1, 8, 5, 7}, 8, {3, 3}, 1, {}, {}, {1, 1, 1, 1}}, DataType::kF32, &s);
    Status st = RunKernel(MakeHalfWeightsConvKernel, s.Inputs(true), &s.y, a, 2);
    EXPECT_EQ(st.code(), StatusCode::kUnimplemented) << st.ToString();
  }
  {
    ConvStep s;  // FP32 copies of weights asked for (--fp32-weights)
    Attributes a = step({{1, 8, 5, 7}, 8, {3, 3}, 1, {}, {}, {1, 1, 1, 1}}, DataType::kF16, &s);
    KernelArgs args;
    for (Buffer* b : s.Inputs(true)) args.inputs.push_back(&b->t);
    args.outputs.push_back(&s.y.t);
    args.attrs = a;
    args.node = "test";
    CpuContext ctx;
    ASSERT_TRUE(MakeHalfWeightsConvKernel()->Init(args, ctx).ok());
    ctx.fp32_weights = true;
    EXPECT_EQ(MakeHalfWeightsConvKernel()->Init(args, ctx).code(), StatusCode::kUnimplemented);
  }
  {
    HalfWeightsMode off(0);  // turned off: the channels-last Conv does not choose it
    ConvStep s;
    Attributes a = step({{1, 8, 5, 7}, 8, {3, 3}, 1, {}, {}, {1, 1, 1, 1}}, DataType::kF16, &s);
    EXPECT_EQ(RunKernel(MakeHalfWeightsConvKernel, s.Inputs(true), &s.y, a, 2).code(), StatusCode::kUnimplemented);
  }
  for (const Activation& act : {Activation{}, Activation{"Relu"}, Activation{"Clip", -1.0f, 6.0f}}) {
    SCOPED_TRACE(act.name);
    ConvStep s;
    MakeStep({{1, 16, 6, 6}, 16, {1, 1}, 1, {}, {}, {}, "", true, true}, &s);
    s.attrs.String("layout", "NHWC");
    if (!act.name.empty()) s.attrs.String("activation", act.name);
    if (act.name == "Clip") s.attrs.Float("activation_min", act.lo).Float("activation_max", act.hi);
    Buffer xf = ChannelsLast(s.x), wf = ChannelsLast(s.w);
    testing::TypedBuffer x(DataType::kF16, xf.t.dims), w(DataType::kF16, wf.t.dims), y(DataType::kF16, {1, 6, 6, 16});
    for (int64_t i = 0; i < x.t.numel; ++i) x.Set(i, xf.data[size_t(i)]);
    for (int64_t i = 0; i < w.t.numel; ++i) w.Set(i, wf.data[size_t(i)]);
    w.t.is_constant = true;
    x.Set(5 * 16 + 3, kNaN);  // position 5, channel 3: every output channel there
    ASSERT_TRUE(testing::RunKernel(MakeHalfWeightsConvKernel, {&x, &w}, {&y}, s.attrs.Finish(), 2).ok());
    ExpectNanMapped(act, [&](int64_t i) { return y.Get(i); });
  }
}

TEST(ChannelsLastConv, Declines) {
  // Not 2-D: the layout pass never marks these, and the kernel refuses them.
  ConvStep s;
  MakeStep({{1, 3, 9}, 4, {3}, 1, {}, {}, {1, 1}}, &s);
  s.attrs.String("layout", "NHWC");
  EXPECT_EQ(RunKernel(MakeNhwcConvKernel, s.Inputs(true), &s.y, s.attrs.Finish(), 2).code(), StatusCode::kUnimplemented);
  // FP16 with small activations and HalfWeightsConv off: widened by the backend instead.
  HalfWeightsMode off(0);
  ConvStep h;
  MakeStep({{1, 8, 5, 7}, 8, {3, 3}, 1, {}, {}, {1, 1, 1, 1}}, &h);
  for (Buffer* b : {&h.x, &h.w, &h.b, &h.y}) b->t.dtype = DataType::kF16;
  EXPECT_EQ(RunKernel(MakeNhwcConvKernel, h.Inputs(true), &h.y, h.attrs.Finish(), 2).code(), StatusCode::kUnimplemented);
}

}  // namespace
}  // namespace precis::rt
