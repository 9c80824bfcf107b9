// Activation-family operators (unary math, comparisons, Cast, Clip, Where, PRelu, Pow, Mod,
// variadic Max/Min/Sum/Mean, Identity, Dropout): each case compiles a small model from text IR,
// runs it on the CPU and compares with values computed here. The ONNX backend tests cover the
// common paths; these cases cover what they do not: every float storage type against a double
// reference on odd shapes, the behaviour this runtime defines where ONNX leaves it undefined
// (float -> int overflow and NaN, integer division by zero, wide shifts, MIN overflow), exact
// f64 -> f16 rounding, multi-way broadcasting, in-place chains, and compile-time refusals.
//
// Tolerances, as a normalized error max|got - want| / max(1, max|want|): f32 and f64 1e-5
// (one float evaluation of a libm function); f16 2e-3 and bf16 1e-2 (inputs are rounded to the
// storage type before the reference runs; one output rounding of 2^-11 resp. 2^-8 remains).
// Integer and bool results must match exactly.
#include <cmath>
#include <functional>
#include <limits>
#include <random>

#include <gtest/gtest.h>

#include "compiler/ir/text.h"
#include "passes/infer_shapes.h"
#include "compiler/driver/compile.h"
#include "precis/session.h"
#include "runtime/base/half.h"

namespace precis {
namespace {

struct Tensor {
  std::string dtype;  // IR spelling: f32, f16, bf16, f64, i8 ... u64, bool
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

DataType DTypeOf(const std::string& t) {
  static const std::pair<const char*, DataType> kTypes[] = {
      {"f32", DataType::kF32}, {"f64", DataType::kF64}, {"f16", DataType::kF16}, {"bf16", DataType::kBF16},
      {"i8", DataType::kI8},   {"i16", DataType::kI16}, {"i32", DataType::kI32}, {"i64", DataType::kI64},
      {"u8", DataType::kU8},   {"u16", DataType::kU16}, {"u32", DataType::kU32}, {"u64", DataType::kU64},
      {"bool", DataType::kBool}};
  for (const auto& [name, dt] : kTypes)
    if (t == name) return dt;
  ADD_FAILURE() << "unknown dtype " << t;
  return DataType::kUndefined;
}

template <typename T> void Put(std::vector<uint8_t>& out, T v) {
  size_t at = out.size();
  out.resize(at + sizeof(T));
  std::memcpy(&out[at], &v, sizeof(T));
}

std::vector<uint8_t> Encode(const Tensor& t) {
  std::vector<uint8_t> out;
  for (double v : t.values) {
    const std::string& d = t.dtype;
    if (d == "f32") Put(out, float(v));
    else if (d == "f64") Put(out, v);
    else if (d == "f16") Put(out, FloatToHalf(float(v)));
    else if (d == "bf16") Put(out, FloatToBf16(float(v)));
    else if (d == "i8") Put(out, int8_t(v));
    else if (d == "i16") Put(out, int16_t(v));
    else if (d == "i32") Put(out, int32_t(v));
    else if (d == "i64") Put(out, int64_t(v));
    else if (d == "u8") Put(out, uint8_t(v));
    else if (d == "u16") Put(out, uint16_t(v));
    else if (d == "u32") Put(out, uint32_t(v));
    else if (d == "u64") Put(out, uint64_t(v));
    else if (d == "bool") Put(out, uint8_t(v != 0));
  }
  return out;
}

template <typename T> double Get(const uint8_t* p, size_t i) {
  T v;
  std::memcpy(&v, p + i * sizeof(T), sizeof(T));
  return double(v);
}

double Decode(DataType t, const uint8_t* p, size_t i) {
  switch (t) {
    case DataType::kF32: return Get<float>(p, i);
    case DataType::kF64: return Get<double>(p, i);
    case DataType::kF16: { uint16_t h; std::memcpy(&h, p + i * 2, 2); return HalfToFloat(h); }
    case DataType::kBF16: { uint16_t h; std::memcpy(&h, p + i * 2, 2); return Bf16ToFloat(h); }
    case DataType::kI8: return Get<int8_t>(p, i);
    case DataType::kI16: return Get<int16_t>(p, i);
    case DataType::kI32: return Get<int32_t>(p, i);
    case DataType::kI64: return Get<int64_t>(p, i);
    case DataType::kU8: case DataType::kBool: return Get<uint8_t>(p, i);
    case DataType::kU16: return Get<uint16_t>(p, i);
    case DataType::kU32: return Get<uint32_t>(p, i);
    case DataType::kU64: return Get<uint64_t>(p, i);
    default: ADD_FAILURE() << "unexpected output dtype"; return 0;
  }
}

struct Output {
  DataType dtype = DataType::kUndefined;
  std::vector<int64_t> dims;
  std::vector<double> values;
  std::vector<uint16_t> bits16;  // raw storage of 16-bit float outputs
};

std::string ModelText(int opset, const std::vector<std::pair<std::string, Tensor>>& inputs, const std::string& body,
                      const std::vector<std::string>& outputs) {
  std::string text = "model {ir_version = 8, opsets = {\"\" = " + std::to_string(opset) + "}}\ngraph \"g\" {\n";
  for (const auto& [name, t] : inputs) text += "  input %" + name + ": " + t.dtype + DimsText(t.dims) + "\n";
  text += body + "\n";
  for (const auto& o : outputs) text += "  output %" + o + "\n";
  return text + "}\n";
}

// Without code generation: these tests are about the operators' own kernels, which a fused
// elementwise step would replace (tests/codegen and fused_elementwise_test.py cover fusion).
StatusOr<driver::CompileResult> CompileText(const std::string& text) {
  PRECIS_ASSIGN_OR_RETURN(auto model, ir::ParseModel(text));
  driver::CompileOptions options;
  options.codegen = false;
  return driver::Compile(*model, options);
}

// Compiles and runs; `inputs` are graph inputs (so nothing folds unless the body has constants).
std::vector<Output> RunModel(int opset, const std::vector<std::pair<std::string, Tensor>>& inputs, const std::string& body,
                        const std::vector<std::string>& outputs, int* inplace_count = nullptr) {
  std::string text = ModelText(opset, inputs, body, outputs);
  auto compiled = CompileText(text);
  EXPECT_TRUE(compiled.ok()) << compiled.status().ToString() << "\n" << text;
  if (!compiled.ok()) return {};
  if (inplace_count) *inplace_count = compiled->plan.inplace_count;
  auto session = Session::FromBuffer(compiled->plan.bytes.data(), compiled->plan.bytes.size());
  EXPECT_TRUE(session.ok()) << session.status().ToString();
  if (!session.ok()) return {};
  for (const auto& [name, t] : inputs) {
    auto bytes = Encode(t);
    Status s = (*session)->SetInput(name, DTypeOf(t.dtype), t.dims, bytes.data(), bytes.size());
    EXPECT_TRUE(s.ok()) << s.ToString();
  }
  Status st = (*session)->Run();
  EXPECT_TRUE(st.ok()) << st.ToString();
  std::vector<Output> result;
  for (const auto& o : outputs) {
    auto t = (*session)->Output(o);
    EXPECT_TRUE(t.ok()) << t.status().ToString();
    if (!t.ok()) return {};
    Output out{t->info.dtype, t->info.dims, {}, {}};
    const auto* p = static_cast<const uint8_t*>(t->data);
    for (int64_t i = 0; i < Numel(out.dims); ++i) {
      out.values.push_back(Decode(out.dtype, p, size_t(i)));
      if (out.dtype == DataType::kF16 || out.dtype == DataType::kBF16) out.bits16.push_back(uint16_t(Get<uint16_t>(p, size_t(i))));
    }
    result.push_back(std::move(out));
  }
  return result;
}

// One-node shorthand: %y = `node` over inputs named a, b, c, ...
Output RunNode(const std::string& node, const std::vector<Tensor>& inputs, int opset = 18, int* inplace_count = nullptr) {
  std::vector<std::pair<std::string, Tensor>> named;
  std::string args;
  for (size_t i = 0; i < inputs.size(); ++i) {
    std::string name(1, char('a' + i));
    named.push_back({name, inputs[i]});
    args += (i ? ", %" : "%") + name;
  }
  std::string op = node.substr(0, node.find(' '));
  std::string attrs = node.find(' ') == std::string::npos ? "" : node.substr(node.find(' '));
  auto outs = RunModel(opset, named, "  %y = " + op + "(" + args + ")" + attrs, {"y"}, inplace_count);
  return outs.empty() ? Output{} : outs[0];
}

void ExpectExact(const Output& got, const std::vector<double>& want, DataType dtype) {
  EXPECT_EQ(got.dtype, dtype);
  ASSERT_EQ(got.values.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(got.values[i], want[i]) << "element " << i;
}

double RoundTo(const std::string& dtype, double v) {
  if (dtype == "f16") return HalfToFloat(FloatToHalf(float(v)));
  if (dtype == "bf16") return Bf16ToFloat(FloatToBf16(float(v)));
  if (dtype == "f32") return float(v);
  return v;
}

double Tolerance(const std::string& dtype) { return dtype == "f16" ? 2e-3 : dtype == "bf16" ? 1e-2 : 1e-5; }

void ExpectClose(const Output& got, const std::vector<double>& want, double tol) {
  ASSERT_EQ(got.values.size(), want.size());
  double scale = 1, err = 0;
  for (double w : want) scale = std::max(scale, std::fabs(w));
  for (size_t i = 0; i < want.size(); ++i) {
    if (std::isnan(want[i])) {
      EXPECT_TRUE(std::isnan(got.values[i])) << "element " << i;
      continue;
    }
    err = std::max(err, std::fabs(got.values[i] - want[i]));
  }
  EXPECT_LE(err / scale, tol);
}

Tensor Random(const std::string& dtype, std::vector<int64_t> dims, uint32_t seed, double lo, double hi) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(lo, hi);
  Tensor t{dtype, std::move(dims), {}};
  for (int64_t i = 0; i < Numel(t.dims); ++i) {
    double v = u(rng);
    t.values.push_back(RoundTo(dtype, std::fabs(v) < 1e-3 ? (lo + hi) / 2 + 0.25 : v));  // never zero
  }
  return t;
}

// ---- unary float ops on every float storage type ------------------------------------------

struct UnaryCase {
  std::string node;  // operator and attributes
  double lo, hi;     // input range inside the function's domain
  std::function<double(double)> ref;
};

double Sigmoid(double x) { return 1 / (1 + std::exp(-x)); }
double Softplus(double x) { return std::log1p(std::exp(-std::fabs(x))) + std::max(x, 0.0); }

const std::vector<UnaryCase>& UnaryCases() {
  static const std::vector<UnaryCase> cases = {
      {"Abs", -3, 3, [](double x) { return std::fabs(x); }},
      {"Neg", -3, 3, [](double x) { return -x; }},
      {"Sign", -3, 3, [](double x) { return double((x > 0) - (x < 0)); }},
      {"Sigmoid", -30, 30, Sigmoid},
      {"Tanh", -5, 5, [](double x) { return std::tanh(x); }},
      {"Exp", -5, 5, [](double x) { return std::exp(x); }},
      {"Log", 0.01, 50, [](double x) { return std::log(x); }},
      {"Sqrt", 0.01, 50, [](double x) { return std::sqrt(x); }},
      {"Reciprocal", 0.5, 4, [](double x) { return 1 / x; }},
      {"Floor", -9, 9, [](double x) { return std::floor(x); }},
      {"Ceil", -9, 9, [](double x) { return std::ceil(x); }},
      {"Sin", -6, 6, [](double x) { return std::sin(x); }},
      {"Cos", -6, 6, [](double x) { return std::cos(x); }},
      {"Tan", -1.2, 1.2, [](double x) { return std::tan(x); }},
      {"Asin", -0.99, 0.99, [](double x) { return std::asin(x); }},
      {"Acos", -0.99, 0.99, [](double x) { return std::acos(x); }},
      {"Atan", -9, 9, [](double x) { return std::atan(x); }},
      {"Sinh", -4, 4, [](double x) { return std::sinh(x); }},
      {"Cosh", -4, 4, [](double x) { return std::cosh(x); }},
      {"Asinh", -9, 9, [](double x) { return std::asinh(x); }},
      {"Acosh", 1.01, 9, [](double x) { return std::acosh(x); }},
      {"Atanh", -0.95, 0.95, [](double x) { return std::atanh(x); }},
      {"Erf", -3, 3, [](double x) { return std::erf(x); }},
      {"Softplus", -40, 40, Softplus},
      {"Softsign", -9, 9, [](double x) { return x / (1 + std::fabs(x)); }},
      {"Elu {alpha = 0.7}", -4, 4, [](double x) { return x < 0 ? 0.7 * (std::exp(x) - 1) : x; }},
      {"Selu", -4, 4, [](double x) { return 1.0507009873554805 * (x <= 0 ? 1.6732632423543772 * (std::exp(x) - 1) : x); }},
      {"Celu {alpha = 2.0}", -4, 4, [](double x) { return std::max(0.0, x) + std::min(0.0, 2 * (std::exp(x / 2) - 1)); }},
      {"LeakyRelu {alpha = 0.1}", -4, 4, [](double x) { return x < 0 ? 0.1 * x : x; }},
      {"ThresholdedRelu {alpha = 0.5}", -4, 4, [](double x) { return x > 0.5 ? x : 0; }},
      {"HardSigmoid {alpha = 0.3, beta = 0.4}", -4, 4, [](double x) { return std::clamp(0.3 * x + 0.4, 0.0, 1.0); }},
      {"HardSwish", -5, 5, [](double x) { return x * std::clamp(x / 6 + 0.5, 0.0, 1.0); }},
      {"Mish", -6, 6, [](double x) { return x * std::tanh(Softplus(x)); }},
      {"Gelu", -5, 5, [](double x) { return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))); }},
      {"Gelu {approximate = \"tanh\"}", -5, 5,
       [](double x) { return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x))); }},
  };
  return cases;
}

TEST(ActivationKernels, UnaryFloatOpsMatchDoubleReference) {
  uint32_t seed = 1;
  for (const UnaryCase& c : UnaryCases()) {
    for (const char* dtype : {"f32", "f64", "f16", "bf16"}) {
      SCOPED_TRACE(c.node + " " + dtype);
      Tensor x = Random(dtype, {3, 5, 7}, seed++, c.lo, c.hi);
      std::vector<double> want;
      for (double v : x.values) want.push_back(c.ref(v));
      Output y = RunNode(c.node, {x}, 20);
      EXPECT_EQ(y.dtype, DTypeOf(dtype));
      ExpectClose(y, want, Tolerance(dtype));
    }
  }
}

TEST(ActivationKernels, RoundHalvesToEvenAndSpecialValues) {
  const double inf = INFINITY, nan = NAN;
  Tensor x{"f32", {10}, {0.5, 1.5, 2.5, -0.5, -1.5, 2.4999, 3.7, inf, -inf, nan}};
  ExpectClose(RunNode("Round", {x}), {0, 2, 2, -0, -2, 2, 4, inf, -inf, nan}, 0);
  Output isnan = RunNode("IsNaN", {x});
  ExpectExact(isnan, {0, 0, 0, 0, 0, 0, 0, 0, 0, 1}, DataType::kBool);
  ExpectExact(RunNode("IsInf {detect_negative = 0}", {x}), {0, 0, 0, 0, 0, 0, 0, 1, 0, 0}, DataType::kBool);
  // NaN passes through the clamping activations instead of becoming a bound.
  ExpectClose(RunNode("HardSigmoid", {Tensor{"f32", {1}, {nan}}}), {nan}, 0);
}

TEST(ActivationKernels, IntegerUnaryOpsWrapAtTheMinimum) {
  ExpectExact(RunNode("Neg", {Tensor{"i8", {3}, {-128, 5, 0}}}), {-128, -5, 0}, DataType::kI8);
  ExpectExact(RunNode("Abs", {Tensor{"i32", {3}, {-2147483648.0, -7, 7}}}), {-2147483648.0, 7, 7}, DataType::kI32);
  ExpectExact(RunNode("Sign", {Tensor{"i16", {3}, {-9, 0, 9}}}), {-1, 0, 1}, DataType::kI16);
  ExpectExact(RunNode("BitwiseNot", {Tensor{"u8", {2}, {0, 0x0f}}}), {255, 0xf0}, DataType::kU8);
  ExpectExact(RunNode("Not", {Tensor{"bool", {2}, {0, 1}}}), {1, 0}, DataType::kBool);
}

// ---- Cast ----------------------------------------------------------------------------------

TEST(ActivationKernels, CastFloatToIntegerTruncatesAndSaturates) {
  const double inf = INFINITY, nan = NAN;
  Tensor x{"f32", {9}, {nan, inf, -inf, 3e9, -3e9, 2.7, -2.7, 127.5, -0.9}};
  ExpectExact(RunNode("Cast {to = 6}", {x}), {0, 2147483647, -2147483648.0, 2147483647, -2147483648.0, 2, -2, 127, 0}, DataType::kI32);
  ExpectExact(RunNode("Cast {to = 3}", {x}), {0, 127, -128, 127, -128, 2, -2, 127, 0}, DataType::kI8);
  ExpectExact(RunNode("Cast {to = 2}", {x}), {0, 255, 0, 255, 0, 2, 0, 127, 0}, DataType::kU8);
  ExpectExact(RunNode("Cast {to = 9}", {x}), {1, 1, 1, 1, 1, 1, 1, 1, 1}, DataType::kBool);
  Tensor d{"f64", {3}, {1e300, -1e19, 9e18}};
  ExpectExact(RunNode("Cast {to = 7}", {d}), {9223372036854775807.0, -9223372036854775808.0, 9e18}, DataType::kI64);
}

TEST(ActivationKernels, CastBetweenIntegersWrapsAndBoolNormalizes) {
  ExpectExact(RunNode("Cast {to = 2}", {Tensor{"i32", {4}, {257, -1, 255, 0}}}), {1, 255, 255, 0}, DataType::kU8);
  ExpectExact(RunNode("Cast {to = 9}", {Tensor{"i32", {3}, {-3, 0, 256}}}), {1, 0, 1}, DataType::kBool);
  ExpectExact(RunNode("Cast {to = 1}", {Tensor{"bool", {2}, {1, 0}}}), {1, 0}, DataType::kF32);
  ExpectExact(RunNode("Cast {to = 10}", {Tensor{"i32", {3}, {65504, 65519, 65520}}}), {65504, 65504, INFINITY}, DataType::kF16);
}

TEST(ActivationKernels, CastF64ToF16RoundsOnce) {
  // 1 + 2^-11 + 2^-40 lies just above the halfway point between the f16 values 1 and 1 + 2^-10:
  // a direct rounding gives 1 + 2^-10 (0x3c01); rounding through float first loses 2^-40 and
  // the tie then goes to even, 1.0 (0x3c00).
  Tensor x{"f64", {3}, {1 + std::ldexp(1, -11) + std::ldexp(1, -40), 1 + std::ldexp(1, -11), 70000.0}};
  Output y = RunNode("Cast {to = 10}", {x});
  ASSERT_EQ(y.bits16.size(), 3u);
  EXPECT_EQ(y.bits16[0], 0x3c01);
  EXPECT_EQ(y.bits16[1], 0x3c00);  // exact tie: to even
  EXPECT_EQ(y.bits16[2], 0x7c00);  // overflow: inf
  // bf16 likewise: 1 + 2^-8 + 2^-40 rounds up to 1 + 2^-7 (0x3f81).
  Output b = RunNode("Cast {to = 16}", {Tensor{"f64", {1}, {1 + std::ldexp(1, -8) + std::ldexp(1, -40)}}});
  ASSERT_EQ(b.bits16.size(), 1u);
  EXPECT_EQ(b.bits16[0], 0x3f81);
}

TEST(ActivationKernels, CastFoldsConstantsAndRefusesStrings) {
  auto outs = RunModel(13, {}, "  const %c: f32[3] = [1.5, -2.5, 300.0]\n  %y = Cast(%c) {to = 3}", {"y"});
  ASSERT_EQ(outs.size(), 1u);
  ExpectExact(outs[0], {1, -2, 127}, DataType::kI8);
  auto s = CompileText(ModelText(13, {{"x", Tensor{"f32", {2}, {}}}}, "  %y = Cast(%x) {to = 8}", {"y"}));
  EXPECT_EQ(s.status().code(), StatusCode::kUnimplemented) << s.status().ToString();
  // float8 e4m3fn (to = 17) and back: 448 is its largest value, 500 saturates to it, -0.3 rounds
  // to -0.3125 (steps of 2^-5 between 0.25 and 0.5); without saturation 500 becomes NaN (no Inf).
  auto f8 = RunModel(19, {}, "  const %c: f32[3] = [448.0, 500.0, -0.3]\n  %q = Cast(%c) {to = 17}\n  %y = Cast(%q) {to = 1}", {"y"});
  ASSERT_EQ(f8.size(), 1u);
  ExpectClose(f8[0], {448, 448, -0.3125}, 0);
  auto raw = RunModel(19, {}, "  const %c: f32[1] = [500.0]\n  %q = Cast(%c) {to = 17, saturate = 0}\n  %y = Cast(%q) {to = 1}", {"y"});
  ASSERT_EQ(raw.size(), 1u);
  EXPECT_TRUE(std::isnan(raw[0].values[0]));
}

// ---- integer arithmetic ONNX leaves undefined -----------------------------------------------

TEST(ActivationKernels, ModFollowsDivisorSignAndGuardsZero) {
  Tensor a{"i32", {6}, {7, -7, 7, -7, 5, -2147483648.0}}, b{"i32", {6}, {3, 3, -3, -3, 0, -1}};
  ExpectExact(RunNode("Mod", {a, b}), {1, 2, -2, -1, 0, 0}, DataType::kI32);
  ExpectExact(RunNode("Mod {fmod = 1}", {a, b}), {1, -1, 1, -1, 0, 0}, DataType::kI32);
  Tensor fa{"f16", {3}, {5.5, -5.5, 1}}, fb{"f16", {3}, {2, 2, 0}};
  ExpectClose(RunNode("Mod {fmod = 1}", {fa, fb}), {1.5, -1.5, NAN}, 0);
  auto bad = CompileText(ModelText(13, {{"a", Tensor{"f32", {2}, {}}}, {"b", Tensor{"f32", {2}, {}}}}, "  %y = Mod(%a, %b)", {"y"}));
  EXPECT_FALSE(bad.ok());  // float Mod needs fmod = 1
}

TEST(ActivationKernels, PowMixesTypesAndDefinesNegativeIntegerExponents) {
  Tensor base{"i32", {6}, {2, -2, 1, -1, 0, 3}}, e{"i32", {6}, {10, 3, -5, -3, -1, 0}};
  ExpectExact(RunNode("Pow", {base, e}), {1024, -8, 1, -1, 0, 1}, DataType::kI32);
  ExpectExact(RunNode("Pow", {Tensor{"i64", {2}, {4, 10}}, Tensor{"f32", {2}, {0.5, -1}}}), {2, 0}, DataType::kI64);
  ExpectClose(RunNode("Pow", {Tensor{"f16", {2}, {1.5, -2}}, Tensor{"i64", {1}, {3}}}), {3.375, -8}, 0);
  ExpectClose(RunNode("Pow", {Tensor{"f32", {2, 1}, {2, 9}}, Tensor{"f64", {3}, {0.5, 2, -1}}}),
              {std::sqrt(2.0), 4, 0.5, 3, 81, 1 / 9.0}, 1e-6);
}

TEST(ActivationKernels, BitShiftByTheWidthOrMoreGivesZero) {
  Tensor a{"u8", {4}, {1, 255, 128, 6}}, b{"u8", {4}, {7, 8, 200, 1}};
  ExpectExact(RunNode("BitShift {direction = \"LEFT\"}", {a, b}), {128, 0, 0, 12}, DataType::kU8);
  ExpectExact(RunNode("BitShift {direction = \"RIGHT\"}", {a, b}), {0, 0, 0, 3}, DataType::kU8);
  Tensor c{"u64", {2}, {1, 1}}, s{"u64", {2}, {63, 64}};
  ExpectExact(RunNode("BitShift {direction = \"LEFT\"}", {c, s}), {9223372036854775808.0, 0}, DataType::kU64);
  ExpectExact(RunNode("BitwiseXor", {Tensor{"i16", {2, 1}, {-1, 3}}, Tensor{"i16", {2}, {5, 0}}}), {-6, -1, 6, 3}, DataType::kI16);
}

// ---- broadcasting ---------------------------------------------------------------------------

// Flat index of `out_index` (row-major over `out`) within an operand of shape `in` (numpy rules).
int64_t BroadcastIndex(const std::vector<int64_t>& out, const std::vector<int64_t>& in, int64_t flat) {
  int64_t off = 0, stride = 1;
  for (size_t k = 0; k < out.size(); ++k) {
    size_t d = out.size() - 1 - k;
    int64_t c = flat % out[d];
    flat /= out[d];
    if (k < in.size()) {
      int64_t n = in[in.size() - 1 - k];
      if (n != 1) off += c * stride;
      stride *= n;
    }
  }
  return off;
}

TEST(ActivationKernels, WhereBroadcastsThreeWays) {
  Tensor c{"bool", {3, 1, 5}, {}}, x = Random("f32", {4, 1}, 7, -2, 2), y{"f32", {}, {42}};
  for (int i = 0; i < 15; ++i) c.values.push_back((i * 7) % 3 == 0);
  std::vector<int64_t> out = {3, 4, 5};
  std::vector<double> want;
  for (int64_t i = 0; i < 60; ++i)
    want.push_back(c.values[size_t(BroadcastIndex(out, c.dims, i))] ? x.values[size_t(BroadcastIndex(out, x.dims, i))] : 42);
  Output got = RunNode("Where", {c, x, y});
  EXPECT_EQ(got.dims, out);
  ExpectClose(got, want, 0);
}

TEST(ActivationKernels, VariadicOpsBroadcastAllInputs) {
  Tensor a = Random("f32", {2, 1, 3}, 11, -3, 3), b = Random("f32", {4, 1}, 12, -3, 3), c = Random("f32", {3}, 13, -3, 3);
  std::vector<int64_t> out = {2, 4, 3};
  auto at = [&](const Tensor& t, int64_t i) { return t.values[size_t(BroadcastIndex(out, t.dims, i))]; };
  std::vector<double> mx, mn, sum, mean;
  for (int64_t i = 0; i < 24; ++i) {
    double u = at(a, i), v = at(b, i), w = at(c, i);
    mx.push_back(std::max({u, v, w}));
    mn.push_back(std::min({u, v, w}));
    sum.push_back(u + v + w);
    mean.push_back((u + v + w) / 3);
  }
  ExpectClose(RunNode("Max", {a, b, c}), mx, 0);
  ExpectClose(RunNode("Min", {a, b, c}), mn, 0);
  ExpectClose(RunNode("Sum", {a, b, c}), sum, 1e-6);
  ExpectClose(RunNode("Mean", {a, b, c}), mean, 1e-6);
  ExpectExact(RunNode("Max", {Tensor{"u16", {2}, {3, 65535}}}), {3, 65535}, DataType::kU16);
  ExpectClose(RunNode("Max", {Tensor{"f32", {2}, {NAN, 1}}, Tensor{"f32", {2}, {0, NAN}}}), {NAN, NAN}, 0);
}

TEST(ActivationKernels, PReluBroadcastsSlopeToInputAndComparesBroadcast) {
  Tensor x = Random("f32", {2, 3, 4, 5}, 21, -2, 2), slope = Random("f32", {3, 1, 1}, 22, 0.1, 0.9);
  std::vector<double> want;
  for (int64_t i = 0; i < 120; ++i) {
    double v = x.values[size_t(i)];
    want.push_back(v < 0 ? v * slope.values[size_t(BroadcastIndex(x.dims, slope.dims, i))] : v);
  }
  ExpectClose(RunNode("PRelu", {x, slope}), want, 1e-6);
  auto bad = CompileText(ModelText(16, {{"x", Tensor{"f32", {3}, {}}}, {"s", Tensor{"f32", {2, 3}, {}}}}, "  %y = PRelu(%x, %s)", {"y"}));
  EXPECT_FALSE(bad.ok());  // the slope may not widen the output
  Tensor a{"f16", {2, 1}, {1, 2}}, b{"f16", {3}, {0.5, 1, 2}};
  ExpectExact(RunNode("LessOrEqual", {a, b}), {0, 1, 1, 0, 0, 1}, DataType::kBool);
  ExpectExact(RunNode("Xor", {Tensor{"bool", {2, 1}, {0, 1}}, Tensor{"bool", {2}, {0, 1}}}), {0, 1, 1, 0}, DataType::kBool);
}

// ---- Clip, Dropout, Identity, in place --------------------------------------------------------

TEST(ActivationKernels, ClipAttributeAndInputForms) {
  Tensor x{"f32", {5}, {-3, -0.5, 0.25, 2, NAN}};
  ExpectClose(RunNode("Clip {min = -1.0, max = 1.0}", {x}, 6), {-1, -0.5, 0.25, 1, NAN}, 0);
  ExpectClose(RunNode("Clip", {x, Tensor{"f32", {}, {0}}}, 13), {0, 0, 0.25, 2, NAN}, 0);
  // min > max: every value becomes max.
  Tensor i{"i32", {3}, {-5, 0, 5}};
  ExpectExact(RunNode("Clip", {i, Tensor{"i32", {}, {3}}, Tensor{"i32", {}, {1}}}, 13), {1, 1, 1}, DataType::kI32);
  auto outs = RunModel(13, {{"x", x}, {"hi", Tensor{"f32", {}, {0.5}}}}, "  %y = Clip(%x, _, %hi)", {"y"});
  ASSERT_EQ(outs.size(), 1u);
  ExpectClose(outs[0], {-3, -0.5, 0.25, 0.5, NAN}, 0);
}

TEST(ActivationKernels, DropoutIsIdentityWithTrueMask) {
  Tensor x = Random("f32", {2, 3}, 31, -1, 1);
  auto outs = RunModel(13, {{"x", x}}, "  %y, %m = Dropout(%x)", {"y", "m"});
  ASSERT_EQ(outs.size(), 2u);
  ExpectClose(outs[0], x.values, 0);
  ExpectExact(outs[1], std::vector<double>(6, 1), DataType::kBool);
  auto old = RunModel(9, {{"x", x}}, "  %y, %m = Dropout(%x) {ratio = 0.3}", {"y", "m"});
  ASSERT_EQ(old.size(), 2u);
  ExpectExact(old[1], std::vector<double>(6, 1), DataType::kF32);  // mask of the input's type before opset 10
  auto train = CompileText(ModelText(13, {{"x", x}}, "  const %t: bool[] = [true]\n  %y = Dropout(%x, _, %t)", {"y"}));
  EXPECT_EQ(train.status().code(), StatusCode::kUnimplemented) << train.status().ToString();
}

TEST(ActivationKernels, UnaryChainsRunInPlace) {
  Tensor x = Random("f32", {4, 7}, 41, -2, 2);
  int inplace = 0;
  auto outs = RunModel(13, {{"x", x}}, "  %e = Exp(%x)\n  %s = Sigmoid(%e)\n  %n = Neg(%s)\n  %y = Identity(%n)", {"y"}, &inplace);
  ASSERT_EQ(outs.size(), 1u);
  std::vector<double> want;
  for (double v : x.values) want.push_back(-Sigmoid(std::exp(v)));
  ExpectClose(outs[0], want, 1e-6);
  EXPECT_GE(inplace, 2);
}

TEST(ActivationKernels, LegacyOpsetForms) {
  // PRelu before opset 7: a 1-D slope is per channel (dim 1), not numpy-aligned to the last dim.
  Tensor x{"f32", {1, 2, 3}, {-1, -2, 3, -4, 5, -6}}, slope{"f32", {2}, {0.5, 0.25}};
  ExpectClose(RunNode("PRelu", {x, slope}, 6), {-0.5, -1, 3, -1, 5, -1.5}, 0);
  ExpectExact(RunNode("Cast {to = \"INT32\"}", {Tensor{"f32", {2}, {2.5, -3.5}}}, 1), {2, -3}, DataType::kI32);
  auto test = RunModel(6, {{"x", x}}, "  %y, %m = Dropout(%x) {is_test = 1}", {"y", "m"});
  ASSERT_EQ(test.size(), 2u);
  ExpectClose(test[0], x.values, 0);
  auto train = CompileText(ModelText(6, {{"x", x}}, "  %y = Dropout(%x)", {"y"}));
  EXPECT_EQ(train.status().code(), StatusCode::kUnimplemented) << train.status().ToString();
  // broadcast = 1 with axis = 1: b's dims align with a's from dim 1 (b becomes [2, 1]).
  ExpectClose(RunNode("Pow {broadcast = 1, axis = 1}", {x, Tensor{"f32", {2}, {2, 3}}}, 6), {1, 4, 9, -64, 125, -216}, 0);
  auto past_end = CompileText(ModelText(6, {{"a", x}, {"b", slope}}, "  %y = Pow(%a, %b) {broadcast = 1, axis = 2}", {"y"}));
  EXPECT_EQ(past_end.status().code(), StatusCode::kInvalidArgument) << past_end.status().ToString();
  auto unequal = CompileText(ModelText(6, {{"a", x}, {"b", slope}}, "  %y = Add(%a, %b)", {"y"}));
  EXPECT_EQ(unequal.status().code(), StatusCode::kInvalidArgument) << unequal.status().ToString();
  ExpectClose(RunNode("Pow {broadcast = 1}", {x, Tensor{"f32", {3}, {2, 1, 0}}}, 6), {1, -2, 1, 16, 5, 1}, 0);
}

TEST(ActivationKernels, InferenceKeepsSymbolicDims) {
  std::string text =
      "model {ir_version = 8, opsets = {\"\" = 16}}\ngraph \"g\" {\n  input %c: bool[N, 1]\n  input %x: f32[1, 5]\n"
      "  input %s: f32[N, 1]\n  %y = Where(%c, %x, %x)\n  %p = PRelu(%y, %s)\n  %w = Cast(%p) {to = 7}\n"
      "  %v = Max(%w, %w)\n  output %v\n}\n";
  auto model = ir::ParseModel(text);
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  ASSERT_TRUE(passes::InferShapesAndFold(**model, passes::InferOptions()).ok());
  const ir::Value* v = (*model)->graph->outputs()[0];
  EXPECT_EQ(ir::PrintType(v->type()), "i64[N,5]");
}

}  // namespace
}  // namespace precis
