// GPU plans on the CPU backend: the rewrites of `--device cuda` compiles (epilogue fusion,
// NHWC regions for tensor-core convolutions) must keep every result. Each case compiles a small
// model from text IR for the GPU, checks that the rewrite happened, runs the plan on the CPU
// (which runs GPU plans through step adapters) and compares with
//   - a plain double-precision reference written here from the ONNX definitions, on the inputs
//     and weights rounded to the plan's storage dtype; tolerances as a normalized error
//     max|got - want| / max(1, max|want|): FP32 1e-5 (float accumulation over <= 150 terms);
//     FP16 4e-3 (every stored activation rounds to 11 bits, 2^-11 = 4.9e-4, and a block stores
//     four of them in a chain: two convolutions, the sum and the activation);
//   - the same model compiled without the rewrite (`layout = nchw`, no epilogue fusion): NHWC
//     regions only move bytes and a fused Relu is applied to the stored output as the separate
//     Relu did, so those pairs must agree bit for bit.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <random>

#include <gtest/gtest.h>

#include "compiler/ir/text.h"
#include "compiler/driver/compile.h"
#include "passes/choose_layout.h"
#include "precis/session.h"
#include "runtime/base/half.h"
#include "runtime/cpu/capabilities.h"
#include "runtime/cpu/step_adapters.h"
#include "runtime/cuda/capabilities.h"
#include "runtime/plan/plan_format.h"
#include "tests/runtime/kernel_test_util.h"
#include "tests/runtime/plan_test_util.h"

namespace precis {
namespace {

std::vector<double> RandomValues(size_t n, uint32_t seed, double scale = 1) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(-1, 1);
  std::vector<double> v(n);
  for (double& x : v) {
    x = u(rng) * scale;
    if (std::fabs(x) < 1e-3 * scale) x = 0.5 * scale;
  }
  return v;
}

std::string Values(const std::vector<double>& v) {
  std::string s = "[";
  char buf[32];
  for (size_t i = 0; i < v.size(); ++i) {
    std::snprintf(buf, sizeof buf, "%s%.9g", i ? ", " : "", float(v[i]));
    s += buf;
  }
  return s + "]";
}

double Round(bool half, double v) { return half ? HalfToFloat(FloatToHalf(float(v))) : double(float(v)); }
std::vector<double> Round(bool half, std::vector<double> v) {
  for (double& x : v) x = Round(half, x);
  return v;
}

struct Compiled {
  driver::CompileResult result;
  std::vector<double> output;
  std::vector<int64_t> dims;
};

// Compiles `text` for `target`, runs it on the CPU with input x, returns output y.
Compiled CompileAndRun(const std::string& text, const std::string& precision, const std::string& target, const std::vector<int64_t>& x_dims,
                       const std::vector<double>& x, bool fuse = true, const std::string& layout = "auto", bool reference = false) {
  Compiled c;
  auto model = ir::ParseModel(text);
  EXPECT_TRUE(model.ok()) << model.status().ToString();
  if (!model.ok()) return c;
  driver::CompileOptions options;
  options.precision = precision;
  options.target = target;
  options.fuse_epilogues = fuse;
  options.layout = layout;
  auto compiled = driver::Compile(**model, options);
  EXPECT_TRUE(compiled.ok()) << compiled.status().ToString();
  if (!compiled.ok()) return c;
  c.result = std::move(*compiled);
  SessionOptions so;
  so.reference_kernels = reference;
  so.threads = 2;
  auto session = Session::FromBuffer(c.result.plan.bytes.data(), c.result.plan.bytes.size(), so);
  EXPECT_TRUE(session.ok()) << session.status().ToString();
  if (!session.ok()) return c;
  DataType x_dtype = (*session)->inputs().at(0).dtype;
  if (x_dtype == DataType::kF16) {
    std::vector<uint16_t> xh;
    for (double v : x) xh.push_back(FloatToHalf(float(v)));
    EXPECT_TRUE((*session)->SetInput("x", x_dtype, x_dims, xh.data(), xh.size() * 2).ok());
  } else {
    std::vector<float> xf(x.begin(), x.end());
    EXPECT_TRUE((*session)->SetInput("x", DataType::kF32, x_dims, xf.data(), xf.size() * 4).ok());
  }
  Status st = (*session)->Run();
  EXPECT_TRUE(st.ok()) << st.ToString();
  auto y = (*session)->Output("y");
  EXPECT_TRUE(y.ok());
  if (!y.ok()) return c;
  c.dims = y->info.dims;
  for (int64_t i = 0; i < y->info.NumElements(); ++i) {
    if (y->info.dtype == DataType::kF16) c.output.push_back(HalfToFloat(static_cast<const uint16_t*>(y->data)[i]));
    else c.output.push_back(static_cast<const float*>(y->data)[i]);
  }
  return c;
}

double NormalizedError(const std::vector<double>& got, const std::vector<double>& want) {
  EXPECT_EQ(got.size(), want.size());
  double scale = 1, err = 0;
  for (double w : want) scale = std::max(scale, std::fabs(w));
  for (size_t i = 0; i < std::min(got.size(), want.size()); ++i) err = std::max(err, std::fabs(got[i] - want[i]));
  return err / scale;
}

const char* kHeader = "model {ir_version = 8, producer_name = \"t\", producer_version = \"\", domain = \"\", model_version = 0, opsets = {\"\" = 17}}\n";

// ---- NHWC regions ----------------------------------------------------------------------------

// y = Relu(Conv1x1(Relu(Conv3x3(x) + b1)) + x): a residual block, C = 16, pads 1.
constexpr int64_t kN = 2, kC = 16, kH = 5, kW = 6;

struct Block {
  std::vector<double> w1, b1, w2;
  std::string text;
};

// `dtype`: the model's own input and output dtype (an FP16 model keeps the residual in FP16; with
// an FP32 input the Add would read FP32 and the second convolution write FP32 for it).
Block MakeBlock(const std::string& dtype = "f32") {
  Block b;
  b.w1 = RandomValues(size_t(kC * kC * 9), 11, 0.25);
  b.b1 = RandomValues(size_t(kC), 12, 0.5);
  b.w2 = RandomValues(size_t(kC * kC), 13, 0.5);
  std::string c = std::to_string(kC);
  b.text = std::string(kHeader) + "graph \"block\" {\n  input %x: " + dtype + "[" + std::to_string(kN) + "," + c + "," + std::to_string(kH) + "," +
           std::to_string(kW) + "]\n  const %w1: " + dtype + "[" + c + "," + c + ",3,3] = " + Values(b.w1) + "\n  const %b1: " + dtype + "[" + c + "] = " +
           Values(b.b1) + "\n  const %w2: " + dtype + "[" + c + "," + c + ",1,1] = " + Values(b.w2) + "\n" +
           "  %a = Conv(%x, %w1, %b1) {kernel_shape = [3, 3], pads = [1, 1, 1, 1]} name \"conv1\"\n"
           "  %r = Relu(%a) name \"relu1\"\n"
           "  %c = Conv(%r, %w2) {kernel_shape = [1, 1]} name \"conv2\"\n"
           "  %s = Add(%c, %x) name \"add\"\n"
           "  %y = Relu(%s) name \"relu2\"\n"
           "  output %y\n}\n";
  return b;
}

// The block in double, NCHW, each stored tensor rounded as the plan stores it.
std::vector<double> RefBlock(const Block& b, const std::vector<double>& x_in, bool half) {
  std::vector<double> x = Round(half, x_in), w1 = Round(half, b.w1), b1 = Round(half, b.b1), w2 = Round(half, b.w2);
  auto at = [](int64_t n, int64_t c, int64_t h, int64_t w) { return size_t(((n * kC + c) * kH + h) * kW + w); };
  std::vector<double> r(x.size()), y(x.size());
  for (int64_t n = 0; n < kN; ++n)
    for (int64_t m = 0; m < kC; ++m)
      for (int64_t h = 0; h < kH; ++h)
        for (int64_t w = 0; w < kW; ++w) {
          double acc = b1[size_t(m)];
          for (int64_t c = 0; c < kC; ++c)
            for (int64_t i = 0; i < 3; ++i)
              for (int64_t j = 0; j < 3; ++j) {
                int64_t ih = h - 1 + i, iw = w - 1 + j;
                if (ih < 0 || ih >= kH || iw < 0 || iw >= kW) continue;
                acc += x[at(n, c, ih, iw)] * w1[size_t(((m * kC + c) * 3 + i) * 3 + j)];
              }
          r[at(n, m, h, w)] = Round(half, std::max(0.0, acc));
        }
  for (int64_t n = 0; n < kN; ++n)
    for (int64_t m = 0; m < kC; ++m)
      for (int64_t h = 0; h < kH; ++h)
        for (int64_t w = 0; w < kW; ++w) {
          double acc = 0;
          for (int64_t c = 0; c < kC; ++c) acc += r[at(n, c, h, w)] * w2[size_t(m * kC + c)];
          double s = Round(half, Round(half, acc) + x[at(n, m, h, w)]);
          y[at(n, m, h, w)] = Round(half, std::max(0.0, s));
        }
  return y;
}

TEST(GpuPlans, ResidualBlockRunsNhwcInFp16) {
  Block b = MakeBlock("f16");
  std::vector<int64_t> dims{kN, kC, kH, kW};
  std::vector<double> x = RandomValues(size_t(kN * kC * kH * kW), 14);
  for (bool reference : {false, true}) {
    SCOPED_TRACE(reference ? "reference kernels" : "fast kernels");
    Compiled nhwc = CompileAndRun(b.text, "fp16", "cuda", dims, x, true, "auto", reference);
    EXPECT_EQ(nhwc.result.layout.nhwc_convs, 2);
    EXPECT_EQ(nhwc.result.layout.region_ops, 2);      // the Add and the second Relu (the first is fused)
    EXPECT_EQ(nhwc.result.layout.transposes, 2);      // X in, Y out
    EXPECT_EQ(nhwc.result.epilogues.activations, 1);  // conv1 + relu1
    ASSERT_EQ(nhwc.dims, dims);
    EXPECT_LE(NormalizedError(nhwc.output, RefBlock(b, x, true)), 4e-3);
    Compiled nchw = CompileAndRun(b.text, "fp16", "cuda", dims, x, true, "nchw", reference);
    EXPECT_EQ(nchw.result.layout.nhwc_convs, 0);
    EXPECT_EQ(nhwc.output, nchw.output) << "NHWC regions must only move bytes";
  }
}

// The ops that join NHWC regions besides convolutions, in one FP16 model: a Concat with an NCHW
// input (x) and an NHWC one, BatchNormalization, a squeeze-and-excitation block (global pool,
// two 1x1 convolutions on [N, C, 1, 1] -- the squeeze to 4 channels stays NCHW, its edges are
// in-place Reshapes --, Sigmoid, a broadcast Mul), a Mul by a per-channel [C, 1, 1] constant
// (permuted at compile time), a residual Sum and a global max pool. The plan must compute
// exactly what the same plan with every convolution NCHW computes: the rewrites move bytes.
TEST(GpuPlans, ChannelOpsAndSqueezeExcitationRunNhwc) {
  std::string c = std::to_string(kC), c2 = std::to_string(2 * kC);
  std::string dims = std::to_string(kN) + "," + c + "," + std::to_string(kH) + "," + std::to_string(kW);
  auto positive = [](std::vector<double> v) {
    for (double& x : v) x = std::fabs(x) + 0.25;
    return v;
  };
  std::string text = std::string(kHeader) + "graph \"channels\" {\n  input %x: f16[" + dims + "]\n" +
                     "  const %w1: f16[" + c + "," + c + ",3,3] = " + Values(RandomValues(size_t(kC * kC * 9), 31, 0.25)) + "\n" +
                     "  const %scale: f16[" + c2 + "] = " + Values(positive(RandomValues(size_t(2 * kC), 32))) + "\n" +
                     "  const %bias: f16[" + c2 + "] = " + Values(RandomValues(size_t(2 * kC), 33)) + "\n" +
                     "  const %mean: f16[" + c2 + "] = " + Values(RandomValues(size_t(2 * kC), 34)) + "\n" +
                     "  const %var: f16[" + c2 + "] = " + Values(positive(RandomValues(size_t(2 * kC), 35))) + "\n" +
                     "  const %w2: f16[" + c + "," + c2 + ",1,1] = " + Values(RandomValues(size_t(2 * kC * kC), 36, 0.25)) + "\n" +
                     "  const %sq: f16[4," + c + ",1,1] = " + Values(RandomValues(size_t(4 * kC), 37, 0.5)) + "\n" +
                     "  const %ex: f16[" + c + ",4,1,1] = " + Values(RandomValues(size_t(4 * kC), 38, 0.5)) + "\n" +
                     "  const %k: f16[" + c + ",1,1] = " + Values(RandomValues(size_t(kC), 39)) + "\n" +
                     "  %a = Conv(%x, %w1) {kernel_shape = [3, 3], pads = [1, 1, 1, 1]} name \"conv1\"\n"
                     "  %cat = Concat(%x, %a) {axis = 1} name \"cat\"\n"
                     "  %n = BatchNormalization(%cat, %scale, %bias, %mean, %var) name \"bn\"\n"
                     "  %r = Relu(%n) name \"relu\"\n"
                     "  %b = Conv(%r, %w2) {kernel_shape = [1, 1]} name \"conv2\"\n"
                     "  %p = GlobalAveragePool(%b) name \"squeeze_pool\"\n"
                     "  %q = Conv(%p, %sq) {kernel_shape = [1, 1]} name \"squeeze\"\n"
                     "  %qr = Relu(%q) name \"squeeze_relu\"\n"
                     "  %e = Conv(%qr, %ex) {kernel_shape = [1, 1]} name \"excite\"\n"
                     "  %g = Sigmoid(%e) name \"gate\"\n"
                     "  %se = Mul(%b, %g) name \"scale\"\n"
                     "  %m = Mul(%se, %k) name \"per_channel\"\n"
                     "  %s = Sum(%m, %a) name \"residual\"\n"
                     "  %y = GlobalMaxPool(%s) name \"pool\"\n"
                     "  output %y\n}\n";
  std::vector<int64_t> x_dims{kN, kC, kH, kW};
  std::vector<double> x = RandomValues(size_t(kN * kC * kH * kW), 40);
  for (bool reference : {false, true}) {
    SCOPED_TRACE(reference ? "reference kernels" : "fast kernels");
    Compiled nhwc = CompileAndRun(text, "fp16", "cuda", x_dims, x, true, "auto", reference);
    EXPECT_EQ(nhwc.result.layout.nhwc_convs, 2);  // conv1, conv2; squeeze and excite have 4 channels
    EXPECT_EQ(nhwc.result.layout.transposes, 1);  // x, into conv1 and the Concat
    EXPECT_EQ(nhwc.result.layout.reshapes, 3);    // around the squeeze convolutions, and the [N, C, 1, 1] result
    ASSERT_EQ(nhwc.dims, (std::vector<int64_t>{kN, kC, 1, 1}));
    Compiled nchw = CompileAndRun(text, "fp16", "cuda", x_dims, x, true, "nchw", reference);
    EXPECT_EQ(nchw.result.layout.nhwc_convs, 0);
    EXPECT_EQ(nhwc.output, nchw.output) << "NHWC regions must only move bytes";
    double largest = 0;
    for (double v : nhwc.output) largest = std::max(largest, std::fabs(v));
    EXPECT_GT(largest, 0.1) << "the comparison needs a nontrivial output";
  }
}

TEST(GpuPlans, Fp32PlansKeepNchwAndFuseExactly) {
  Block b = MakeBlock();
  std::vector<int64_t> dims{kN, kC, kH, kW};
  std::vector<double> x = RandomValues(size_t(kN * kC * kH * kW), 15);
  Compiled fused = CompileAndRun(b.text, "fp32", "cuda", dims, x);
  EXPECT_EQ(fused.result.layout.nhwc_convs, 0);
  EXPECT_EQ(fused.result.epilogues.activations, 1);
  EXPECT_LE(NormalizedError(fused.output, RefBlock(b, x, false)), 1e-5);
  Compiled plain = CompileAndRun(b.text, "fp32", "cuda", dims, x, false);
  EXPECT_EQ(plain.result.epilogues.activations, 0);
  EXPECT_EQ(fused.output, plain.output) << "a fused Relu applies to the stored output, as the Relu step did";
}

// ---- MatMul + bias + GELU epilogue -----------------------------------------------------------

constexpr int64_t kB = 2, kS = 3, kK = 24, kM = 16;

TEST(GpuPlans, MatMulBiasGeluBecomesOneGemm) {
  std::vector<double> w = RandomValues(size_t(kK * kM), 21, 0.3), bias = RandomValues(size_t(kM), 22);
  std::string text = std::string(kHeader) + "graph \"ffn\" {\n  input %x: f32[2,3,24]\n  const %w: f32[24,16] = " + Values(w) +
                     "\n  const %b: f32[16] = " + Values(bias) +
                     "\n  const %sqrt2: f32[] = [1.41421354]\n  const %one: f32[] = [1.0]\n  const %half: f32[] = [0.5]\n"
                     "  %h0 = MatMul(%x, %w) name \"mm\"\n  %h = Add(%h0, %b) name \"bias\"\n  %a = Div(%h, %sqrt2) name \"div\"\n"
                     "  %e = Erf(%a) name \"erf\"\n  %p = Add(%e, %one) name \"add1\"\n  %m = Mul(%h, %p) name \"mul\"\n"
                     "  %y = Mul(%m, %half) name \"mulhalf\"\n  output %y\n}\n";
  // The GELU's output is the graph output: it keeps its name, so only the bias is fused there.
  std::vector<double> x = RandomValues(size_t(kB * kS * kK), 23);
  Compiled out = CompileAndRun(text, "fp32", "cuda", {kB, kS, kK}, x);
  EXPECT_EQ(out.result.epilogues.bias, 1);
  EXPECT_EQ(out.result.epilogues.activations, 0);
  // Inside a graph (a second product reads it) the GELU fuses too.
  std::string inner = text;
  inner.replace(inner.find("%y = Mul(%m, %half)"), std::string("%y = Mul(%m, %half)").size(), "%g = Mul(%m, %half)");
  inner.replace(inner.find("  output %y"), std::string("  output %y").size(),
                "  const %v: f32[16,4] = " + Values(RandomValues(64, 24, 0.5)) + "\n  %y = MatMul(%g, %v) name \"mm2\"\n  output %y");
  std::vector<double> v = RandomValues(64, 24, 0.5);
  for (const char* precision : {"fp32", "fp16"}) {
    SCOPED_TRACE(precision);
    bool half = std::string(precision) == "fp16";
    Compiled fused = CompileAndRun(inner, precision, "cuda", {kB, kS, kK}, x);
    EXPECT_EQ(fused.result.epilogues.bias, 1);
    EXPECT_EQ(fused.result.epilogues.activations, 1);
    // Reference: rows of x times w in double, plus the bias, GELU (stored), times v.
    std::vector<double> xr = Round(half, x), wr = Round(half, w), br = Round(half, bias), vr = Round(half, v), want;
    for (int64_t r = 0; r < kB * kS; ++r) {
      std::vector<double> g(kM);
      for (int64_t j = 0; j < kM; ++j) {
        double acc = br[size_t(j)];
        for (int64_t k = 0; k < kK; ++k) acc += xr[size_t(r * kK + k)] * wr[size_t(k * kM + j)];
        g[size_t(j)] = Round(half, 0.5 * acc * (1 + std::erf(acc / std::sqrt(2.0))));
      }
      for (int64_t o = 0; o < 4; ++o) {
        double acc = 0;
        for (int64_t j = 0; j < kM; ++j) acc += g[size_t(j)] * vr[size_t(j * 4 + o)];
        want.push_back(acc);
      }
    }
    ASSERT_EQ(fused.dims, (std::vector<int64_t>{kB, kS, 4}));
    // FP16: the GELU input is rounded once less than the unfused plan's (no stored product).
    EXPECT_LE(NormalizedError(fused.output, want), half ? 4e-3 : 1e-5);
  }
}

// ---- mixed-dtype steps on the reference kernels ----------------------------------------------

// A Gemm that feeds a Softmax writes FP32 from FP16 operands and an FP16 bias; a Relu with a
// fused cast reads FP16 and writes FP32. The reference kernels must refuse such steps so that
// they run widened (they once read the operands in the output's dtype).
TEST(GpuPlans, MixedDtypeStepsRunWidenedOnReferenceKernels) {
  std::vector<double> w = RandomValues(8 * 6, 31, 0.5), bias = RandomValues(6, 32);
  std::string text = std::string(kHeader) + "graph \"mixed\" {\n  input %x: f32[4,8]\n  const %w: f32[6,8] = " + Values(w) +
                     "\n  const %b: f32[6] = " + Values(bias) +
                     "\n  %h = Gemm(%x, %w, %b) {transB = 1} name \"gemm\"\n  %y = Softmax(%h) {axis = 1} name \"softmax\"\n  output %y\n}\n";
  std::vector<double> x = RandomValues(32, 33);
  for (bool reference : {true, false}) {
    SCOPED_TRACE(reference ? "reference kernels" : "fast kernels");
    Compiled out = CompileAndRun(text, "fp16", "cpu", {4, 8}, x, true, "auto", reference);
    std::vector<double> xr = Round(true, x), wr = Round(true, w), br = Round(true, bias), want;
    for (int r = 0; r < 4; ++r) {
      std::vector<double> h(6);
      double sum = 0, mx = -1e300;
      for (int j = 0; j < 6; ++j) {
        h[size_t(j)] = br[size_t(j)];
        for (int k = 0; k < 8; ++k) h[size_t(j)] += xr[size_t(r * 8 + k)] * wr[size_t(j * 8 + k)];
        mx = std::max(mx, h[size_t(j)]);
      }
      for (double& v : h) sum += (v = std::exp(v - mx));
      for (double v : h) want.push_back(v / sum);
    }
    // FP32 output computed from FP16 operands: only float accumulation and exp remain.
    EXPECT_LE(NormalizedError(out.output, want), 1e-5);
  }
}

// The compiler marks where each backend runs a step widened (Step.widen, from the capability
// tables); the CPU backend widens only marked steps. The FP16 Gemm writing FP32 for the Softmax:
// widened on the CPU (oneDNN's matmul takes FP32 operands), not on CUDA (cuBLASLt writes FP32
// from FP16 operands); the Softmax runs on FP32 as it is. With the Gemm's mark cleared, the plan
// is refused at load with a message naming the missing mark (nothing is widened silently). The
// Gemm has alpha 0.5: with alpha 1 the CPU's kernel for constant 16-bit weights (which widens the
// weights block by block inside the step) would take it as it is, mark or not.
TEST(GpuPlans, OnlyMarkedStepsRunWidened) {
  std::vector<double> w = RandomValues(8 * 6, 31, 0.5), bias = RandomValues(6, 32);
  std::string text = std::string(kHeader) + "graph \"mixed\" {\n  input %x: f32[4,8]\n  const %w: f32[6,8] = " + Values(w) +
                     "\n  const %b: f32[6] = " + Values(bias) +
                     "\n  %h = Gemm(%x, %w, %b) {transB = 1, alpha = 0.5} name \"gemm\"\n  %y = Softmax(%h) {axis = 1} name \"softmax\"\n  output %y\n}\n";
  Compiled out = CompileAndRun(text, "fp16", "cpu", {4, 8}, RandomValues(32, 33));
  std::vector<uint8_t> bytes = out.result.plan.bytes;
  auto view = plan::ValidatePlan(bytes.data(), bytes.size());
  ASSERT_TRUE(view.ok()) << view.status().ToString();
  const plan::Step* gemm = nullptr;
  for (const plan::Step* st : *view->meta->programs()->Get(0)->steps()) {
    if (st->kernel()->str() == "Gemm") gemm = st;
    if (st->kernel()->str() == "Softmax") {
      EXPECT_EQ(st->widen(), 0) << "Softmax on FP32 is not widened";
    }
  }
  ASSERT_NE(gemm, nullptr);
  EXPECT_EQ(gemm->widen(), 1) << "Gemm: widened on the CPU only";
  // The report names the decision, its backend and its reason code.
  std::string json;  // the report without whitespace
  for (char ch : out.result.report.json)
    if (!std::isspace(static_cast<unsigned char>(ch))) json += ch;
  EXPECT_NE(json.find("\"name\":\"gemm\""), std::string::npos);
  EXPECT_NE(json.find("\"widened\":[{\"backend\":\"cpu\",\"reason\":\"widened-kernel\""), std::string::npos) << json;
  EXPECT_NE(json.find("\"widened_steps\":{\"cpu\":1,\"cuda\":0}"), std::string::npos) << json;
  // Clear the mark in the file (the field is stored: it is not the default 0) and reseal.
  const uint8_t* field = reinterpret_cast<const flatbuffers::Table*>(gemm)->GetAddressOf(plan::Step::VT_WIDEN);
  ASSERT_NE(field, nullptr);
  bytes[size_t(field - bytes.data())] = 0;
  testing::Reseal(bytes);
  auto s = Session::FromBuffer(bytes.data(), bytes.size());
  ASSERT_FALSE(s.ok()) << "an unmarked FP16 Gemm writing FP32 must not be widened at load";
  EXPECT_NE(s.status().message().find("does not mark it widened"), std::string::npos) << s.status().ToString();
}

// GPU plans run on the CPU too: every kernel CUDA takes NHWC steps for, the CPU does; and the
// layout pass puts exactly the CUDA table's NHWC kernels in NHWC regions.
TEST(GpuPlans, NhwcListsAgree) {
  for (std::string_view k : rt::cuda_capabilities::kNhwcKernels)
    EXPECT_NE(std::find(rt::cpu_capabilities::kNhwcKernels.begin(), rt::cpu_capabilities::kNhwcKernels.end(), k),
              rt::cpu_capabilities::kNhwcKernels.end())
        << k;
  std::vector<std::string> cuda(rt::cuda_capabilities::kNhwcKernels.begin(), rt::cuda_capabilities::kNhwcKernels.end());
  std::vector<std::string> pass = passes::NhwcOps();
  std::sort(cuda.begin(), cuda.end());
  std::sort(pass.begin(), pass.end());
  EXPECT_EQ(pass, cuda);
}

// ---- adapter errors --------------------------------------------------------------------------

class NullKernel : public rt::Kernel {
 public:
  Status Run(const rt::KernelArgs&, rt::CpuContext&) override { return Status::Ok(); }
};

TEST(GpuPlans, UnknownFusedActivationIsAClearError) {
  rt::testing::AttrList attrs;
  attrs.String("activation", "Swish");
  rt::testing::Buffer y = rt::testing::Random({2, 2}, 1);
  rt::KernelArgs args{{}, {&y.t}, attrs.Finish(), "Gemm 'g'"};
  rt::ActivationEpilogue k(std::make_unique<NullKernel>());
  Status s = k.Init(args, rt::CpuContext{});
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("Gemm 'g': unknown fused activation 'Swish'"), std::string::npos) << s.ToString();
}

TEST(GpuPlans, Permute4DRoundTrip) {
  const int64_t dims[4] = {2, 3, 4, 5};
  std::vector<uint16_t> src(120), nhwc(120), back(120);
  for (size_t i = 0; i < src.size(); ++i) src[i] = uint16_t(i * 7 + 1);
  const int to_nhwc[4] = {0, 2, 3, 1}, to_nchw[4] = {0, 3, 1, 2};
  rt::Permute4D(reinterpret_cast<const uint8_t*>(src.data()), reinterpret_cast<uint8_t*>(nhwc.data()), dims, to_nhwc, 2);
  // nhwc[n][h][w][c] == src[n][c][h][w]
  EXPECT_EQ(nhwc[size_t(((1 * 4 + 2) * 5 + 3) * 3 + 1)], src[size_t(((1 * 3 + 1) * 4 + 2) * 5 + 3)]);
  const int64_t nhwc_dims[4] = {2, 4, 5, 3};
  rt::Permute4D(reinterpret_cast<const uint8_t*>(nhwc.data()), reinterpret_cast<uint8_t*>(back.data()), nhwc_dims, to_nchw, 2);
  EXPECT_EQ(back, src);
}

}  // namespace
}  // namespace precis
