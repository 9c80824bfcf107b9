// Convolution, pooling and normalization: each case compiles a one-node model from text IR with
// random inputs (fixed seed, never zeros), runs it on the CPU and compares every output with a
// plain double-precision reference written here from the ONNX definitions. Shapes are odd on
// purpose (prime sizes, groups, dilations, asymmetric pads). Shape inference with symbolic dims
// is checked on the OpDefs directly.
//
// Tolerances, as a normalized error max|got - want| / max(1, max|want|):
//   f32 and f64: 1e-5 (float accumulation over at most a few hundred terms);
//   f16 and bf16: inputs are rounded to the storage type before the reference runs, so only the
//   output rounding and float accumulation remain: 2e-3 for f16 (2^-11 per rounding, a few
//   roundings), 1e-2 for bf16 (2^-8 per rounding).
#include <cmath>
#include <functional>
#include <random>

#include <gtest/gtest.h>

#include "compiler/ir/text.h"
#include "compiler/ops/op_registry.h"
#include "compiler/driver/compile.h"
#include "precis/session.h"
#include "runtime/base/half.h"

namespace precis {
namespace {

struct Input {
  std::string name;
  std::vector<int64_t> dims;
  std::vector<double> values;
};

int64_t Numel(const std::vector<int64_t>& d) {
  int64_t n = 1;
  for (int64_t v : d) n *= v;
  return n;
}

std::string DimsText(const std::vector<int64_t>& d) {
  std::string s = "[";
  for (size_t i = 0; i < d.size(); ++i) s += (i ? "," : "") + std::to_string(d[i]);
  return s + "]";
}

Input Random(const std::string& name, std::vector<int64_t> dims, uint32_t seed, double lo = -1, double hi = 1) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(lo, hi);
  Input in{name, std::move(dims), {}};
  for (int64_t i = 0; i < Numel(in.dims); ++i) {
    double v = u(rng);
    in.values.push_back(std::fabs(v) < 1e-3 ? 0.5 : v);  // never zero
  }
  return in;
}

// Storage round trip: the values the kernel will actually read.
double RoundTo(const std::string& dtype, double v) {
  if (dtype == "f16") return HalfToFloat(FloatToHalf(float(v)));
  if (dtype == "bf16") return Bf16ToFloat(FloatToBf16(float(v)));
  if (dtype == "f32") return float(v);
  return v;
}

DataType DTypeOf(const std::string& dtype) {
  if (dtype == "f16") return DataType::kF16;
  if (dtype == "bf16") return DataType::kBF16;
  if (dtype == "f64") return DataType::kF64;
  return DataType::kF32;
}

std::vector<uint8_t> Encode(const std::string& dtype, const std::vector<double>& v) {
  std::vector<uint8_t> out(v.size() * DataTypeSize(DTypeOf(dtype)));
  for (size_t i = 0; i < v.size(); ++i) {
    if (dtype == "f16") { uint16_t h = FloatToHalf(float(v[i])); std::memcpy(&out[i * 2], &h, 2); }
    else if (dtype == "bf16") { uint16_t h = FloatToBf16(float(v[i])); std::memcpy(&out[i * 2], &h, 2); }
    else if (dtype == "f64") std::memcpy(&out[i * 8], &v[i], 8);
    else { float f = float(v[i]); std::memcpy(&out[i * 4], &f, 4); }
  }
  return out;
}

double Decode(DataType t, const uint8_t* p, size_t i) {
  switch (t) {
    case DataType::kF16: { uint16_t h; std::memcpy(&h, p + i * 2, 2); return HalfToFloat(h); }
    case DataType::kBF16: { uint16_t h; std::memcpy(&h, p + i * 2, 2); return Bf16ToFloat(h); }
    case DataType::kF64: { double d; std::memcpy(&d, p + i * 8, 8); return d; }
    case DataType::kI64: { int64_t d; std::memcpy(&d, p + i * 8, 8); return double(d); }
    default: { float f; std::memcpy(&f, p + i * 4, 4); return f; }
  }
}

struct Output {
  std::vector<int64_t> dims;
  std::vector<double> values;
};

// Compiles `%outs = node` over `inputs` (all of `dtype`, all graph inputs) and runs it.
std::vector<Output> RunNode(const std::string& node, const std::vector<Input>& inputs, const std::vector<std::string>& outs,
                            const std::string& dtype = "f32", int opset = 18) {
  std::string text = "model {ir_version = 8, producer_name = \"t\", producer_version = \"\", domain = \"\", model_version = 0, opsets = {\"\" = " +
                     std::to_string(opset) + "}}\ngraph \"g\" {\n";
  for (const auto& in : inputs) text += "  input %" + in.name + ": " + dtype + DimsText(in.dims) + "\n";
  text += " ";
  for (size_t i = 0; i < outs.size(); ++i) text += std::string(i ? ", %" : " %") + outs[i];
  text += " = " + node + "\n";
  for (const auto& o : outs) text += "  output %" + o + "\n";
  text += "}\n";
  auto model = ir::ParseModel(text);
  EXPECT_TRUE(model.ok()) << model.status().ToString() << "\n" << text;
  if (!model.ok()) return {};
  driver::CompileOptions options;
  options.codegen = false;  // the operators' own kernels, not a fused step
  auto compiled = driver::Compile(**model, options);
  EXPECT_TRUE(compiled.ok()) << compiled.status().ToString() << "\n" << text;
  if (!compiled.ok()) return {};
  SessionOptions session_options;
  session_options.reference_kernels = true;  // these tests are about the reference kernels
  auto session = Session::FromBuffer(compiled->plan.bytes.data(), compiled->plan.bytes.size(), session_options);
  EXPECT_TRUE(session.ok()) << session.status().ToString();
  if (!session.ok()) return {};
  for (const auto& in : inputs) {
    auto bytes = Encode(dtype, in.values);
    EXPECT_TRUE((*session)->SetInput(in.name, DTypeOf(dtype), in.dims, bytes.data(), bytes.size()).ok());
  }
  auto st = (*session)->Run();
  EXPECT_TRUE(st.ok()) << st.ToString();
  std::vector<Output> result;
  for (const auto& o : outs) {
    auto t = (*session)->Output(o);
    EXPECT_TRUE(t.ok());
    if (!t.ok()) return {};
    Output out{t->info.dims, {}};
    for (int64_t i = 0; i < t->info.NumElements(); ++i)
      out.values.push_back(Decode(t->info.dtype, static_cast<const uint8_t*>(t->data), size_t(i)));
    result.push_back(out);
  }
  return result;
}

double Tolerance(const std::string& dtype) { return dtype == "f16" ? 2e-3 : dtype == "bf16" ? 1e-2 : 1e-5; }

void ExpectClose(const Output& got, const std::vector<int64_t>& dims, const std::vector<double>& want, double tol) {
  ASSERT_EQ(got.dims, dims);
  ASSERT_EQ(got.values.size(), want.size());
  double scale = 1, err = 0;
  for (double w : want) scale = std::max(scale, std::fabs(w));
  for (size_t i = 0; i < want.size(); ++i) err = std::max(err, std::fabs(got.values[i] - want[i]));
  EXPECT_LE(err / scale, tol);
}

// ---- convolution -------------------------------------------------------------------------

struct ConvCase {
  std::vector<int64_t> x, w;  // X [N, C, spatial], W [M, C/g, k] (ConvTranspose: [C, M/g, k])
  int64_t group = 1;
  std::vector<int64_t> strides, dilations, pads;  // pads: begins then ends
  bool bias = true;
};

std::string Attrs(const ConvCase& c) {
  return "{group = " + std::to_string(c.group) + ", strides = " + DimsText(c.strides) + ", dilations = " + DimsText(c.dilations) +
         ", pads = " + DimsText(c.pads) + "}";
}

// Direct N-D convolution (1 to 3 spatial dims) in double.
std::vector<double> RefConv(const ConvCase& c, const std::vector<double>& x, const std::vector<double>& w, const std::vector<double>* b,
                            std::vector<int64_t>& out_dims) {
  size_t n = c.x.size() - 2;
  std::vector<int64_t> in(3, 1), k(3, 1), s(3, 1), d(3, 1), p(3, 0), o(3, 1);
  for (size_t i = 0; i < n; ++i) {
    size_t j = 3 - n + i;
    in[j] = c.x[2 + i], k[j] = c.w[2 + i], s[j] = c.strides[i], d[j] = c.dilations[i], p[j] = c.pads[i];
    o[j] = (in[j] + c.pads[i] + c.pads[i + n] - (k[j] - 1) * d[j] - 1) / s[j] + 1;
  }
  int64_t N = c.x[0], C = c.x[1], M = c.w[0], Cg = C / c.group, Mg = M / c.group;
  out_dims = {N, M};
  for (size_t i = 0; i < n; ++i) out_dims.push_back(o[3 - n + i]);
  std::vector<double> y;
  for (int64_t b0 = 0; b0 < N; ++b0)
    for (int64_t m = 0; m < M; ++m)
      for (int64_t z = 0; z < o[0]; ++z)
        for (int64_t h = 0; h < o[1]; ++h)
          for (int64_t v = 0; v < o[2]; ++v) {
            double acc = b ? (*b)[size_t(m)] : 0;
            int64_t g = m / Mg;
            for (int64_t ci = 0; ci < Cg; ++ci)
              for (int64_t kz = 0; kz < k[0]; ++kz)
                for (int64_t kh = 0; kh < k[1]; ++kh)
                  for (int64_t kv = 0; kv < k[2]; ++kv) {
                    int64_t iz = z * s[0] - p[0] + kz * d[0], ih = h * s[1] - p[1] + kh * d[1], iv = v * s[2] - p[2] + kv * d[2];
                    if (iz < 0 || iz >= in[0] || ih < 0 || ih >= in[1] || iv < 0 || iv >= in[2]) continue;
                    double xv = x[size_t((((b0 * C + g * Cg + ci) * in[0] + iz) * in[1] + ih) * in[2] + iv)];
                    double wv = w[size_t((((m * Cg + ci) * k[0] + kz) * k[1] + kh) * k[2] + kv)];
                    acc += xv * wv;
                  }
            y.push_back(acc);
          }
  return y;
}

void CheckConv(const ConvCase& c, const std::string& dtype, uint32_t seed) {
  SCOPED_TRACE("Conv X" + DimsText(c.x) + " W" + DimsText(c.w) + " " + Attrs(c) + " " + dtype);
  std::vector<Input> in = {Random("x", c.x, seed), Random("w", c.w, seed + 1)};
  if (c.bias) in.push_back(Random("b", {c.w[0]}, seed + 2));
  for (auto& t : in)
    for (double& v : t.values) v = RoundTo(dtype, v);
  std::vector<int64_t> dims;
  auto want = RefConv(c, in[0].values, in[1].values, c.bias ? &in[2].values : nullptr, dims);
  auto got = RunNode(std::string("Conv(%x, %w") + (c.bias ? ", %b" : "") + ") " + Attrs(c), in, {"y"}, dtype);
  ASSERT_EQ(got.size(), 1u);
  ExpectClose(got[0], dims, want, Tolerance(dtype));
}

TEST(NnKernels, ConvMatchesDirectReference) {
  std::vector<ConvCase> cases = {
      {{2, 3, 11}, {5, 3, 3}, 1, {2}, {1}, {1, 2}},                                  // 1-D, asymmetric pads
      {{1, 4, 7, 9}, {6, 2, 3, 2}, 2, {1, 2}, {2, 1}, {1, 0, 2, 1}},                // groups, dilation
      {{1, 5, 9, 8}, {5, 1, 3, 3}, 5, {2, 2}, {1, 1}, {1, 1, 1, 1}},                // depthwise, strided
      {{2, 8, 6, 5}, {7, 8, 1, 1}, 1, {1, 1}, {1, 1}, {0, 0, 0, 0}, false},         // 1x1 direct path
      {{1, 3, 5, 6, 7}, {4, 3, 2, 3, 2}, 1, {1, 2, 1}, {2, 1, 1}, {0, 1, 1, 1, 0, 1}},  // 3-D
      {{1, 37, 13, 11}, {19, 37, 3, 3}, 1, {1, 1}, {1, 1}, {1, 1, 1, 1}},           // K > one GEMM block
  };
  uint32_t seed = 1;
  for (const auto& c : cases)
    for (const char* dtype : {"f32", "f64", "f16", "bf16"}) CheckConv(c, dtype, seed += 3);
}

TEST(NnKernels, ConvAutoPadSplitsExtraPadLikeOnnx) {
  // in 7, k 4, s 2: out 4, total pad 3 -> SAME_UPPER [1, 2], SAME_LOWER [2, 1].
  for (const char* mode : {"SAME_UPPER", "SAME_LOWER"}) {
    ConvCase c{{1, 2, 7, 6}, {3, 2, 4, 3}, 1, {2, 2}, {1, 1}, {}};
    c.pads = std::string(mode) == "SAME_UPPER" ? std::vector<int64_t>{1, 0, 2, 1} : std::vector<int64_t>{2, 1, 1, 0};
    std::vector<Input> in = {Random("x", c.x, 7), Random("w", c.w, 8)};
    std::vector<int64_t> dims;
    auto want = RefConv(c, in[0].values, in[1].values, nullptr, dims);
    auto got = RunNode("Conv(%x, %w) {auto_pad = \"" + std::string(mode) + "\", strides = [2, 2]}", in, {"y"});
    ASSERT_EQ(got.size(), 1u);
    ExpectClose(got[0], dims, want, 1e-5);
  }
}

// Scatter form of the transposed convolution with explicit begin pads and output size.
std::vector<double> RefConvTranspose(const ConvCase& c, const std::vector<int64_t>& out, const std::vector<double>& x,
                                     const std::vector<double>& w, const std::vector<double>& b) {
  int64_t N = c.x[0], C = c.x[1], Cg = C / c.group, Mg = c.w[1], M = Mg * c.group;
  int64_t H = c.x[2], W = c.x[3], KH = c.w[2], KW = c.w[3], OH = out[0], OW = out[1];
  std::vector<double> y(size_t(N * M * OH * OW));
  for (int64_t n = 0; n < N; ++n)
    for (int64_t m = 0; m < M; ++m)
      for (int64_t i = 0; i < OH * OW; ++i) y[size_t((n * M + m) * OH * OW + i)] = b[size_t(m)];
  for (int64_t n = 0; n < N; ++n)
    for (int64_t ci = 0; ci < C; ++ci)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t v = 0; v < W; ++v)
          for (int64_t mo = 0; mo < Mg; ++mo)
            for (int64_t kh = 0; kh < KH; ++kh)
              for (int64_t kv = 0; kv < KW; ++kv) {
                int64_t oh = h * c.strides[0] - c.pads[0] + kh * c.dilations[0];
                int64_t ov = v * c.strides[1] - c.pads[1] + kv * c.dilations[1];
                if (oh < 0 || oh >= OH || ov < 0 || ov >= OW) continue;
                int64_t m = ci / Cg * Mg + mo;
                y[size_t(((n * M + m) * OH + oh) * OW + ov)] +=
                    x[size_t(((n * C + ci) * H + h) * W + v)] * w[size_t(((ci * Mg + mo) * KH + kh) * KW + kv)];
              }
  return y;
}

TEST(NnKernels, ConvTransposeMatchesScatterReference) {
  // X [1, 4, 5, 4], W [4, 3, 3, 2], group 2, strides [2, 3], dilations [1, 2], pads [1, 0, 0, 1],
  // output_padding [1, 0]: out = s*(in-1) + op + eff_k - pads = [8+1+3-1, 9+0+3-1] = [11, 11].
  ConvCase c{{1, 4, 5, 4}, {4, 3, 3, 2}, 2, {2, 3}, {1, 2}, {1, 0, 0, 1}};
  for (const char* dtype : {"f32", "f16", "f64"}) {
    std::vector<Input> in = {Random("x", c.x, 21), Random("w", c.w, 22), Random("b", {6}, 23)};
    for (auto& t : in)
      for (double& v : t.values) v = RoundTo(dtype, v);
    auto want = RefConvTranspose(c, {11, 11}, in[0].values, in[1].values, in[2].values);
    auto got = RunNode("ConvTranspose(%x, %w, %b) {group = 2, strides = [2, 3], dilations = [1, 2], pads = [1, 0, 0, 1], "
                       "output_padding = [1, 0]}",
                       in, {"y"}, dtype);
    ASSERT_EQ(got.size(), 1u);
    ExpectClose(got[0], {1, 6, 11, 11}, want, Tolerance(dtype));
  }
}

// ---- pooling -----------------------------------------------------------------------------

TEST(NnKernels, PoolsMatchReference) {
  // X [2, 3, 7, 8], kernel [3, 2], strides [2, 3], dilations [2, 1], pads [1, 0, 1, 2], ceil_mode:
  // out H = ceil((7 + 2 - 5) / 2) + 1 = 3; out W = ceil((8 + 2 - 2) / 3) + 1 = 4, but that window would
  // start at 3 * 3 - 0 = 9 >= 8 + 0, inside the end padding: dropped, 3.
  Input x = Random("x", {2, 3, 7, 8}, 31, -2, 2);
  const int64_t H = 7, W = 8, OH = 3, OW = 3, K[2] = {3, 2}, S[2] = {2, 3}, D[2] = {2, 1}, PB[2] = {1, 0}, PE[2] = {1, 2};
  std::vector<double> max_v, avg_v, avg_pad_v, lp_v, idx_v;
  for (int64_t plane = 0; plane < 6; ++plane)
    for (int64_t oh = 0; oh < OH; ++oh)
      for (int64_t ow = 0; ow < OW; ++ow) {
        double best = -1e300, sum = 0, sq = 0;
        int64_t best_i = -1, count = 0, count_pad = 0;
        for (int64_t kh = 0; kh < K[0]; ++kh)
          for (int64_t kw = 0; kw < K[1]; ++kw) {
            int64_t h = oh * S[0] - PB[0] + kh * D[0], w = ow * S[1] - PB[1] + kw * D[1];
            if (h < H + PE[0] && w < W + PE[1]) ++count_pad;
            if (h < 0 || h >= H || w < 0 || w >= W) continue;
            int64_t at = (plane * H + h) * W + w;
            double v = x.values[size_t(at)];
            if (v > best) best = v, best_i = at;
            sum += v, sq += v * v, ++count;
          }
        max_v.push_back(best), idx_v.push_back(double(best_i)), avg_v.push_back(sum / double(count));
        avg_pad_v.push_back(sum / double(count_pad)), lp_v.push_back(std::sqrt(sq));
      }
  std::string attrs = "kernel_shape = [3, 2], strides = [2, 3], dilations = [2, 1], pads = [1, 0, 1, 2], ceil_mode = 1";
  std::vector<int64_t> dims = {2, 3, OH, OW};
  auto mp = RunNode("MaxPool(%x) {" + attrs + "}", {x}, {"y", "i"});
  ASSERT_EQ(mp.size(), 2u);
  ExpectClose(mp[0], dims, max_v, 1e-6);
  ExpectClose(mp[1], dims, idx_v, 0);
  auto ap = RunNode("AveragePool(%x) {" + attrs + "}", {x}, {"y"}, "f32", 19);
  ASSERT_EQ(ap.size(), 1u);
  ExpectClose(ap[0], dims, avg_v, 1e-6);
  auto app = RunNode("AveragePool(%x) {" + attrs + ", count_include_pad = 1}", {x}, {"y"}, "f32", 19);
  ASSERT_EQ(app.size(), 1u);
  ExpectClose(app[0], dims, avg_pad_v, 1e-6);
  auto lp = RunNode("LpPool(%x) {" + attrs + ", p = 2}", {x}, {"y"}, "f32", 18);
  ASSERT_EQ(lp.size(), 1u);
  ExpectClose(lp[0], dims, lp_v, 1e-6);
}

// ---- normalization -----------------------------------------------------------------------

// Normalizes x over groups of `size` consecutive values (two-pass, double).
std::vector<double> Standardize(const std::vector<double>& x, size_t size, double eps) {
  std::vector<double> y(x.size());
  for (size_t g = 0; g < x.size(); g += size) {
    double mean = 0, var = 0;
    for (size_t i = 0; i < size; ++i) mean += x[g + i];
    mean /= double(size);
    for (size_t i = 0; i < size; ++i) var += (x[g + i] - mean) * (x[g + i] - mean);
    var /= double(size);
    for (size_t i = 0; i < size; ++i) y[g + i] = (x[g + i] - mean) / std::sqrt(var + eps);
  }
  return y;
}

TEST(NnKernels, NormalizationsMatchReference) {
  // Large offset: E[x^2] - E[x]^2 in float would lose every digit here.
  Input x = Random("x", {2, 6, 5, 7}, 41, 1000, 1001);
  Input s6 = Random("s", {6}, 42), b6 = Random("b", {6}, 43);
  auto inst = Standardize(x.values, 35, 1e-5);
  for (size_t i = 0; i < inst.size(); ++i) inst[i] = inst[i] * s6.values[i / 35 % 6] + b6.values[i / 35 % 6];
  auto got = RunNode("InstanceNormalization(%x, %s, %b)", {x, s6, b6}, {"y"});
  ASSERT_EQ(got.size(), 1u);
  ExpectClose(got[0], x.dims, inst, 1e-3);  // x is stored in float: 1000 + noise keeps ~4 noise digits
  // GroupNormalization-21 (per-channel scale) and -18 (per-group scale), 3 groups of 2 channels.
  Input y = Random("x", {2, 6, 5, 7}, 44, -3, 3);
  auto grp = Standardize(y.values, 70, 1e-5);
  auto g21 = grp, g18 = grp;
  Input s3 = Random("s", {3}, 45), b3 = Random("b", {3}, 46);
  for (size_t i = 0; i < grp.size(); ++i) {
    size_t c = i / 35 % 6;
    g21[i] = grp[i] * s6.values[c] + b6.values[c];
    g18[i] = grp[i] * s3.values[c / 2] + b3.values[c / 2];
  }
  auto got21 = RunNode("GroupNormalization(%x, %s, %b) {num_groups = 3}", {y, s6, b6}, {"y"}, "f32", 21);
  ASSERT_EQ(got21.size(), 1u);
  ExpectClose(got21[0], y.dims, g21, 1e-5);
  auto got18 = RunNode("GroupNormalization(%x, %s, %b) {num_groups = 3}", {y, s3, b3}, {"y"}, "f32", 18);
  ASSERT_EQ(got18.size(), 1u);
  ExpectClose(got18[0], y.dims, g18, 1e-5);
  // LayerNormalization over the last two axes, Scale broadcast along axis 2, Mean and InvStdDev.
  Input sc = Random("s", {1, 7}, 47), bl = Random("b", {5, 7}, 48);
  auto ln = Standardize(y.values, 35, 1e-5);
  std::vector<double> means, invs;
  for (size_t g = 0; g < y.values.size(); g += 35) {
    double m = 0, v = 0;
    for (size_t i = 0; i < 35; ++i) m += y.values[g + i];
    m /= 35;
    for (size_t i = 0; i < 35; ++i) v += (y.values[g + i] - m) * (y.values[g + i] - m);
    means.push_back(m), invs.push_back(1 / std::sqrt(v / 35 + 1e-5));
  }
  for (size_t i = 0; i < ln.size(); ++i) ln[i] = ln[i] * sc.values[i % 7] + bl.values[i % 35];
  for (const char* dtype : {"f32", "f16", "bf16"}) {
    SCOPED_TRACE(dtype);
    Input yr = y, scr = sc, blr = bl;
    for (Input* t : {&yr, &scr, &blr})
      for (double& v : t->values) v = RoundTo(dtype, v);
    auto want = Standardize(yr.values, 35, 1e-5);
    for (size_t i = 0; i < want.size(); ++i) want[i] = want[i] * scr.values[i % 7] + blr.values[i % 35];
    auto got = RunNode("LayerNormalization(%x, %s, %b) {axis = -2}", {yr, scr, blr}, {"y", "mean", "inv"}, dtype, 17);
    ASSERT_EQ(got.size(), 3u);
    ExpectClose(got[0], y.dims, want, Tolerance(dtype) * 4);
    if (std::string(dtype) == "f32") {
      ExpectClose(got[0], y.dims, ln, 1e-5);
      ExpectClose(got[1], {2, 6, 1, 1}, means, 1e-6);
      ExpectClose(got[2], {2, 6, 1, 1}, invs, 1e-5);
    }
  }
}

TEST(NnKernels, BatchNormLrnLpNormMvnMatchReference) {
  Input x = Random("x", {3, 5, 4, 3}, 51, -2, 2);
  Input sc = Random("s", {5}, 52), bi = Random("b", {5}, 53), mean = Random("m", {5}, 54), var = Random("v", {5}, 55, 0.1, 2);
  std::vector<double> bn, lrn, l1, mvn(x.values.size());
  for (size_t i = 0; i < x.values.size(); ++i) {
    size_t c = i / 12 % 5;
    bn.push_back((x.values[i] - mean.values[c]) / std::sqrt(var.values[c] + 1e-3) * sc.values[c] + bi.values[c]);
    double sq = 0;  // LRN size 4: channels [c - 1, c + 2]
    for (int64_t k = int64_t(c) - 1; k <= int64_t(c) + 2; ++k)
      if (k >= 0 && k < 5) sq += std::pow(x.values[i + size_t((k - int64_t(c)) * 12)], 2);
    lrn.push_back(x.values[i] / std::pow(2.0 + 0.5 / 4 * sq, 0.6));
    double n1 = 0;  // L1 along axis 1
    for (size_t k = 0; k < 5; ++k) n1 += std::fabs(x.values[i - c * 12 + k * 12]);
    l1.push_back(x.values[i] / n1);
  }
  for (size_t c = 0; c < 5; ++c) {  // MVN over axes [0, 2, 3]
    double m = 0, v = 0;
    for (size_t n = 0; n < 3; ++n)
      for (size_t j = 0; j < 12; ++j) m += x.values[(n * 5 + c) * 12 + j];
    m /= 36;
    for (size_t n = 0; n < 3; ++n)
      for (size_t j = 0; j < 12; ++j) v += std::pow(x.values[(n * 5 + c) * 12 + j] - m, 2);
    for (size_t n = 0; n < 3; ++n)
      for (size_t j = 0; j < 12; ++j) mvn[(n * 5 + c) * 12 + j] = (x.values[(n * 5 + c) * 12 + j] - m) / (std::sqrt(v / 36) + 1e-9);
  }
  auto got = RunNode("BatchNormalization(%x, %s, %b, %m, %v) {epsilon = 1e-3}", {x, sc, bi, mean, var}, {"y"}, "f32", 15);
  ASSERT_EQ(got.size(), 1u);
  ExpectClose(got[0], x.dims, bn, 1e-5);
  // An empty batch gives an empty output (the kernel once divided by N to find the spatial size).
  Input empty{"x", {0, 5, 4, 3}, {}};
  got = RunNode("BatchNormalization(%x, %s, %b, %m, %v) {epsilon = 1e-3}", {empty, sc, bi, mean, var}, {"y"}, "f32", 15);
  ASSERT_EQ(got.size(), 1u);
  ExpectClose(got[0], empty.dims, {}, 1e-5);
  got = RunNode("LRN(%x) {size = 4, alpha = 0.5, beta = 0.6, bias = 2.0}", {x}, {"y"});
  ASSERT_EQ(got.size(), 1u);
  ExpectClose(got[0], x.dims, lrn, 1e-5);
  got = RunNode("LpNormalization(%x) {axis = 1, p = 1}", {x}, {"y"});
  ASSERT_EQ(got.size(), 1u);
  ExpectClose(got[0], x.dims, l1, 1e-5);
  got = RunNode("MeanVarianceNormalization(%x)", {x}, {"y"});
  ASSERT_EQ(got.size(), 1u);
  ExpectClose(got[0], x.dims, mvn, 1e-5);
}

// ---- shape inference ---------------------------------------------------------------------

// Infers output 0 of the single node in `graph_body` and returns its printed type.
std::string InferOutput(const std::string& graph_body, int opset = 18, size_t output = 0) {
  std::string text = "model {ir_version = 8, producer_name = \"t\", producer_version = \"\", domain = \"\", model_version = 0, opsets = {\"\" = " +
                     std::to_string(opset) + "}}\ngraph \"g\" {\n" + graph_body + "}\n";
  auto model = ir::ParseModel(text);
  EXPECT_TRUE(model.ok()) << model.status().ToString();
  if (!model.ok()) return "";
  const ir::Node& node = *(*model)->graph->nodes().front();
  const ops::OpDef* def = ops::OpRegistry::Get().Find("", node.op_type());
  EXPECT_NE(def, nullptr);
  if (!def) return "";
  ops::InferContext ctx(node, opset);
  Status st = def->infer(ctx);
  if (!st.ok()) return "error: " + st.message();
  return output < ctx.outputs().size() ? ir::PrintType(ctx.outputs()[output]) : "none";
}

TEST(NnShapes, ConvKeepsSymbolicDimsWithFloorDivisions) {
  // H: floor((H + 1 + 1 - 3) / 2) + 1 = floor((H + 1) / 2), written with the multiple taken out.
  EXPECT_EQ(InferOutput("  input %x: f32[N,3,H,31]\n  input %w: f32[M,3,3,4]\n  %y = Conv(%x, %w) {strides = [2, 3], pads = [1, 1, 1, 2]}\n"
                        "  output %y\n"),
            "f32[N,M,\"(H+1)/2\",11]");
  // Stride 1: no division (H + 2 - 3 + 1 = H); SAME_UPPER with stride 4: ceil(H / 4).
  EXPECT_EQ(InferOutput("  input %x: f32[N,3,H,W]\n  input %w: f32[8,3,3,3]\n  %y = Conv(%x, %w) {pads = [1, 1, 1, 1]}\n  output %y\n"),
            "f32[N,8,H,W]");
  EXPECT_EQ(InferOutput("  input %x: f32[N,3,H,W]\n  input %w: f32[8,3,3,3]\n  %y = Conv(%x, %w) {auto_pad = \"SAME_UPPER\", strides = [4, 1]}\n"
                        "  output %y\n"),
            "f32[N,8,\"(H+3)/4\",W]");
  // ceil_mode: whether the last window starts in the end padding depends on the value.
  EXPECT_EQ(InferOutput("  input %x: f32[N,C,H,8]\n  %y = MaxPool(%x) {kernel_shape = [3, 3], strides = [2, 2], ceil_mode = 1}\n  output %y\n"),
            "f32[N,C,?,4]");
  // SAME_LOWER: ceil(31 / 3) = 11 whatever the kernel.
  EXPECT_EQ(InferOutput("  input %x: f32[1,4,10,31]\n  input %w: f32[8,2,5,5]\n  %y = Conv(%x, %w) {group = 2, auto_pad = \"SAME_LOWER\", "
                        "strides = [4, 3]}\n  output %y\n"),
            "f32[1,8,3,11]");
  EXPECT_EQ(InferOutput("  input %x: f32[1,4,10,31]\n  input %w: f32[8,3,5,5]\n  %y = Conv(%x, %w) {group = 2}\n  output %y\n")
                .rfind("error:", 0),
            0u);
}

TEST(NnShapes, PoolCeilModeDropsWindowStartingInPadding) {
  // H: in 4, k 3, s 2, pads 1+1: floor gives 2, ceil((6 - 3) / 2) + 1 = 3 (starts at 3 < 4 + 1);
  // W: in 5, k 2, s 2, pads 0+1: ceil(4 / 2) + 1 = 3.
  EXPECT_EQ(InferOutput("  input %x: f32[N,C,4,5]\n  %y = MaxPool(%x) {kernel_shape = [3, 2], strides = [2, 2], pads = [1, 0, 1, 1], "
                        "ceil_mode = 1}\n  output %y\n"),
            "f32[N,C,3,3]");
  // H: in 2, k 1, s 2: ceil(1 / 2) + 1 = 2, but window 1 would start at 2 >= 2 + 0: dropped -> 1.
  EXPECT_EQ(InferOutput("  input %x: f32[1,1,2,6]\n  %y = AveragePool(%x) {kernel_shape = [1, 3], strides = [2, 3], ceil_mode = 1}\n"
                        "  output %y\n"),
            "f32[1,1,1,2]");
  EXPECT_EQ(InferOutput("  input %x: f32[1,1,5]\n  %y, %i = MaxPool(%x) {kernel_shape = [2], strides = [2]}\n  output %y\n  output %i\n",
                        18, 1),
            "i64[1,1,2]");
}

TEST(NnShapes, ConvTransposeAndNorms) {
  EXPECT_EQ(InferOutput("  input %x: f32[N,4,5,?]\n  input %w: f32[4,3,3,2]\n  %y = ConvTranspose(%x, %w) {group = 2, strides = [2, 3], "
                        "output_padding = [1, 0]}\n  output %y\n"),
            "f32[N,6,12,?]");
  EXPECT_EQ(InferOutput("  input %x: f32[N,4,5,6]\n  input %w: f32[4,3,3,2]\n  %y = ConvTranspose(%x, %w) {output_shape = [10, 8]}\n"
                        "  output %y\n"),
            "f32[N,3,10,8]");
  EXPECT_EQ(InferOutput("  input %x: f16[B,S,D]\n  input %s: f16[D]\n  %y, %m, %r = LayerNormalization(%x, %s)\n  output %y\n"
                        "  output %m\n  output %r\n",
                        17, 2),
            "f32[B,S,1]");
  EXPECT_EQ(InferOutput("  input %x: f32[N,6,7]\n  input %s: f32[6]\n  input %b: f32[6]\n  %y = GroupNormalization(%x, %s, %b) "
                        "{num_groups = 3}\n  output %y\n",
                        18)
                .rfind("error:", 0),
            0u);  // opset 18 wants one scale per group
}

}  // namespace
}  // namespace precis
