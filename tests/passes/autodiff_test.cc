// Every gradient rule against central finite differences in float64. Each case is a small f64
// graph y = f(inputs); the loss is sum(y * r) with r a fixed random tensor, so the output
// gradient is non-uniform. The autodiff graph is compiled and run on the CPU, and every element
// of every input gradient is compared with (L(x + h) - L(x - h)) / 2h computed by running the
// forward plan. Inputs are drawn away from kinks (|x| >= 0.1 for Relu/Abs, positive where Log,
// Sqrt and Pow need it).
//
// Tolerance: f64 with h = 1e-5 gives a truncation error ~h^2 * f''' (~1e-10 here) and a rounding
// error ~1e-16 / h (~1e-11): |autodiff - fd| <= 1e-6 * max(1, |fd|) leaves a wide margin while a
// wrong rule (a missing factor, a wrong transpose or broadcast) is off by O(1).
#include <cmath>
#include <random>
#include <sstream>

#include <gtest/gtest.h>

#include "compiler/emit/plan_emitter.h"
#include "compiler/ir/text.h"
#include "compiler/ops/gradient.h"
#include "passes/autodiff.h"
#include "passes/infer_shapes.h"
#include "precis/session.h"

namespace precis {
namespace {

struct Input {
  std::string name;
  std::vector<int64_t> dims;
  double lo = -2, hi = 2;   // values drawn uniformly from [lo, hi]
  double min_abs = 0;       // and kept at least this far from 0
};

struct Case {
  std::string name;
  std::vector<Input> inputs;
  std::string body;                 // IR lines computing %y from the inputs
  std::vector<int64_t> y_dims;
  std::vector<std::string> wrt = {};  // default: every input
  int opset = 17;
  double h = 1e-5, tol = 1e-6;        // finite-difference step and relative tolerance
};

std::string Dims(const std::vector<int64_t>& d) {
  std::string s = "[";
  for (size_t i = 0; i < d.size(); ++i) s += (i ? "," : "") + std::to_string(d[i]);
  return s + "]";
}

int64_t Count(const std::vector<int64_t>& d) {
  int64_t n = 1;
  for (int64_t x : d) n *= x;
  return n;
}

std::string ModelText(const Case& c, const std::vector<double>& r) {
  std::ostringstream t;
  t.precision(17);
  t << "model {ir_version = 8, producer_name = \"t\", producer_version = \"\", domain = \"\", model_version = 0, opsets = {\"\" = "
    << c.opset << "}}\ngraph \"g\" {\n";
  for (const Input& in : c.inputs) t << "  input %" << in.name << ": f64" << Dims(in.dims) << "\n";
  t << "  const %r: f64" << Dims(c.y_dims) << " = [";
  for (size_t i = 0; i < r.size(); ++i) t << (i ? ", " : "") << r[i];
  t << "]\n" << c.body << "\n  %yr = Mul(%y, %r)\n  %loss = ReduceSum(%yr) {keepdims = 0}\n  output %loss\n}\n";
  return t.str();
}

struct Compiled {
  std::vector<uint8_t> forward, backward;
};

StatusOr<std::vector<uint8_t>> Emit(ir::Model& m) {
  PRECIS_RETURN_IF_ERROR(passes::InferShapesAndFold(m).status());
  PRECIS_ASSIGN_OR_RETURN(emit::EmittedPlan p, emit::EmitPlan(m, emit::EmitOptions{}));
  return p.bytes;
}

StatusOr<Compiled> Compile(const Case& c, const std::vector<double>& r) {
  std::string text = ModelText(c, r);
  Compiled out;
  PRECIS_ASSIGN_OR_RETURN(auto fwd, ir::ParseModel(text));
  PRECIS_ASSIGN_OR_RETURN(out.forward, Emit(*fwd));
  PRECIS_ASSIGN_OR_RETURN(auto bwd, ir::ParseModel(text));
  PRECIS_RETURN_IF_ERROR(passes::InferShapesAndFold(*bwd).status());
  std::vector<std::string> wrt = c.wrt;
  if (wrt.empty())
    for (const Input& in : c.inputs) wrt.push_back(in.name);
  PRECIS_ASSIGN_OR_RETURN(passes::GradientResult grads, passes::BuildGradients(*bwd, "loss", wrt));
  for (const std::string& w : wrt) bwd->graph->AddOutput(grads.grads.at(w));
  PRECIS_ASSIGN_OR_RETURN(out.backward, Emit(*bwd));
  return out;
}

double RunLoss(Session& s, const Case& c, const std::vector<std::vector<double>>& values) {
  for (size_t i = 0; i < c.inputs.size(); ++i)
    EXPECT_TRUE(s.SetInput(c.inputs[i].name, DataType::kF64, c.inputs[i].dims, values[i].data(), values[i].size() * 8).ok());
  EXPECT_TRUE(s.Run().ok());
  return *static_cast<const double*>(s.Output("loss")->data);
}

void CheckGradients(const Case& c) {
  SCOPED_TRACE(c.name);
  std::mt19937_64 rng(std::hash<std::string>()(c.name));
  std::uniform_real_distribution<double> unit(0, 1);
  std::vector<double> r(size_t(Count(c.y_dims)));
  for (double& v : r) v = 0.25 + 1.5 * unit(rng);  // non-uniform output gradient
  std::vector<std::vector<double>> x;
  for (const Input& in : c.inputs) {
    std::vector<double>& v = x.emplace_back(size_t(Count(in.dims)));
    for (double& e : v) {
      do e = in.lo + (in.hi - in.lo) * unit(rng);
      while (std::fabs(e) < in.min_abs);
    }
  }
  auto compiled = Compile(c, r);
  ASSERT_TRUE(compiled.ok()) << compiled.status().ToString();
  auto fwd = Session::FromBuffer(compiled->forward.data(), compiled->forward.size());
  auto bwd = Session::FromBuffer(compiled->backward.data(), compiled->backward.size());
  ASSERT_TRUE(fwd.ok() && bwd.ok()) << fwd.status().ToString() << bwd.status().ToString();
  RunLoss(**bwd, c, x);
  std::vector<std::string> wrt = c.wrt;
  if (wrt.empty())
    for (const Input& in : c.inputs) wrt.push_back(in.name);
  const std::vector<TensorInfo>& outs = (*bwd)->outputs();
  ASSERT_EQ(outs.size(), wrt.size() + 1);
  const double h = c.h;
  for (size_t k = 0; k < wrt.size(); ++k) {
    size_t i = 0;
    while (c.inputs[i].name != wrt[k]) ++i;
    auto grad = (*bwd)->Output(outs[k + 1].name);
    ASSERT_TRUE(grad.ok());
    ASSERT_EQ(grad->info.dims, c.inputs[i].dims) << wrt[k];
    const double* g = static_cast<const double*>(grad->data);
    for (size_t e = 0; e < x[i].size(); ++e) {
      auto plus = x, minus = x;
      plus[i][e] += h;
      minus[i][e] -= h;
      double fd = (RunLoss(**fwd, c, plus) - RunLoss(**fwd, c, minus)) / (2 * h);
      EXPECT_NEAR(g[e], fd, c.tol * std::max(1.0, std::fabs(fd))) << wrt[k] << "[" << e << "]";
    }
  }
}

std::vector<Case> Cases() {
  Input a{"a", {2, 3}}, row{"b", {3}}, col{"b", {2, 1}};
  Input pos{"a", {2, 3}, 0.5, 2.0};
  return {
      {"Add broadcast row", {a, row}, "  %y = Add(%a, %b)", {2, 3}},
      {"Add broadcast column", {a, col}, "  %y = Add(%a, %b)", {2, 3}},
      {"Sub", {a, col}, "  %y = Sub(%a, %b)", {2, 3}},
      {"Mul broadcast", {a, row}, "  %y = Mul(%a, %b)", {2, 3}},
      {"Mul(x, x): a repeated input", {a}, "  %y = Mul(%a, %a)", {2, 3}},
      {"Div", {a, {"b", {3}, 0.5, 2.0}}, "  %y = Div(%a, %b)", {2, 3}},
      {"Pow", {pos, {"b", {3}, 0.5, 2.0}}, "  %y = Pow(%a, %b)", {2, 3}},
      {"Neg and fan-out", {a}, "  %n = Neg(%a)\n  %y = Add(%n, %a)\n  %z = Mul(%y, %a)", {2, 3}},
      {"Relu", {{"a", {2, 3}, -2, 2, 0.1}}, "  %y = Relu(%a)", {2, 3}},
      {"Abs", {{"a", {2, 3}, -2, 2, 0.1}}, "  %y = Abs(%a)", {2, 3}},
      {"Sigmoid", {a}, "  %y = Sigmoid(%a)", {2, 3}},
      {"Tanh", {a}, "  %y = Tanh(%a)", {2, 3}},
      {"Exp", {a}, "  %y = Exp(%a)", {2, 3}},
      {"Log", {pos}, "  %y = Log(%a)", {2, 3}},
      {"Sqrt", {pos}, "  %y = Sqrt(%a)", {2, 3}},
      {"Erf", {a}, "  %y = Erf(%a)", {2, 3}},
      {"MatMul", {{"a", {2, 4}}, {"b", {4, 3}}}, "  %y = MatMul(%a, %b)", {2, 3}},
      {"MatMul batched with a shared right operand", {{"a", {2, 3, 4}}, {"b", {4, 5}}}, "  %y = MatMul(%a, %b)", {2, 3, 5}},
      {"MatMul rank 4 with a shared right operand", {{"a", {2, 2, 3, 4}}, {"b", {4, 5}}}, "  %y = MatMul(%a, %b)", {2, 2, 3, 5}},
      {"MatMul with a shared right operand, opset 9 (Transpose and MatMul: Gemm needs C)", {{"a", {2, 3, 4}}, {"b", {4, 5}}},
       "  %y = MatMul(%a, %b)", {2, 3, 5}, {}, 9},
      {"MatMul batch broadcast", {{"a", {1, 3, 4}}, {"b", {2, 4, 2}}}, "  %y = MatMul(%a, %b)", {2, 3, 2}},
      {"Gemm", {{"a", {2, 4}}, {"b", {4, 3}}, {"c", {3}}}, "  %y = Gemm(%a, %b, %c) {alpha = 0.5, beta = 2.0}", {2, 3}},
      {"Gemm transA", {{"a", {4, 2}}, {"b", {4, 3}}, {"c", {2, 3}}}, "  %y = Gemm(%a, %b, %c) {transA = 1}", {2, 3}},
      {"Gemm transB", {{"a", {2, 4}}, {"b", {3, 4}}}, "  %y = Gemm(%a, %b) {transB = 1, alpha = 1.5}", {2, 3}},
      {"Gemm transA transB", {{"a", {4, 2}}, {"b", {3, 4}}, {"c", {2, 1}}}, "  %y = Gemm(%a, %b, %c) {transA = 1, transB = 1}", {2, 3}},
      {"Transpose", {{"a", {2, 3, 4}}}, "  %y = Transpose(%a) {perm = [2, 0, 1]}", {4, 2, 3}},
      {"Reshape", {{"a", {2, 6}}}, "  const %s: i64[3] = [3, 2, 2]\n  %y = Reshape(%a, %s)", {3, 2, 2}},
      {"Flatten", {{"a", {2, 3, 2}}}, "  %y = Flatten(%a) {axis = 1}", {2, 6}},
      {"Unsqueeze and Squeeze", {a}, "  const %ax: i64[1] = [1]\n  %u = Unsqueeze(%a, %ax)\n  %v = Mul(%u, %u)\n  %y = Squeeze(%v, %ax)", {2, 3}},
      {"ReduceSum keepdims", {{"a", {2, 3, 4}}}, "  const %ax: i64[1] = [1]\n  %y = ReduceSum(%a, %ax) {keepdims = 1}", {2, 1, 4}},
      {"ReduceSum", {{"a", {2, 3, 4}}}, "  const %ax: i64[2] = [0, -1]\n  %y = ReduceSum(%a, %ax) {keepdims = 0}", {3}},
      {"ReduceMean", {{"a", {2, 3, 4}}}, "  %y = ReduceMean(%a) {axes = [2], keepdims = 0}", {2, 3}},
      {"Softmax", {{"a", {2, 5}}}, "  %y = Softmax(%a) {axis = 1}", {2, 5}},
      {"Softmax inner axis", {{"a", {2, 3, 4}}}, "  %y = Softmax(%a) {axis = 1}", {2, 3, 4}},
      {"LogSoftmax", {{"a", {3, 4}}}, "  %y = LogSoftmax(%a)", {3, 4}},
      // Through f32 the forward loss carries f32 rounding (~1e-7 relative): the loss is quadratic
      // in a, so a large step h = 1e-2 is exact but for rounding (~1e-7 * |L| / h ~ 1e-4).
      {"Cast round trip", {a}, "  %c = Cast(%a) {to = 1}\n  %d = Mul(%c, %c)\n  %y = Cast(%d) {to = 11}", {2, 3}, {}, 17, 1e-2, 1e-3},
      {"Where", {a, row}, "  const %z: f64[] = [0.0]\n  %m = Greater(%a, %z)\n  %y = Where(%m, %a, %b)", {2, 3}},
      {"Concat", {a, {"b", {2, 2}}}, "  %y = Concat(%a, %b) {axis = 1}", {2, 5}},
      {"Identity", {a}, "  %y = Identity(%a)", {2, 3}},
      {"SoftmaxCrossEntropyLoss mean", {{"a", {3, 4}}}, "  const %lab: i64[3] = [0, 3, 1]\n  %y = SoftmaxCrossEntropyLoss(%a, %lab)", {}},
      {"SoftmaxCrossEntropyLoss ignore_index over [N, C, d]",
       {{"a", {2, 3, 2}}},
       "  const %lab: i64[2, 2] = [2, -1, 0, 1]\n  %y = SoftmaxCrossEntropyLoss(%a, %lab) {ignore_index = -1}",
       {}},
      {"SoftmaxCrossEntropyLoss class weights, sum",
       {{"a", {3, 4}}},
       "  const %lab: i64[3] = [2, 2, 0]\n  const %w: f64[4] = [0.5, 1.0, 2.0, 1.5]\n  %y = SoftmaxCrossEntropyLoss(%a, %lab, %w) {reduction = \"sum\"}",
       {}},
      {"SoftmaxCrossEntropyLoss none", {{"a", {3, 4}}}, "  const %lab: i64[3] = [1, 0, 3]\n  %y = SoftmaxCrossEntropyLoss(%a, %lab) {reduction = \"none\"}", {3}},
      {"Conv stride 2, pads, bias", {{"a", {2, 3, 6, 5}}, {"w", {4, 3, 3, 3}}, {"b", {4}}},
       "  %y = Conv(%a, %w, %b) {strides = [2, 2], pads = [1, 1, 1, 1]}", {2, 4, 3, 3}},
      {"Conv dilation 2, asymmetric pads", {{"a", {1, 2, 7, 6}}, {"w", {3, 2, 2, 3}}},
       "  %y = Conv(%a, %w) {dilations = [2, 1], pads = [0, 1, 1, 0]}", {1, 3, 6, 5}},
      {"Conv 1-d stride 3", {{"a", {2, 2, 10}}, {"w", {3, 2, 3}}}, "  %y = Conv(%a, %w) {strides = [3]}", {2, 3, 3}},
      // Training BatchNormalization: the batch statistics depend on x, so every dx element
      // depends on every x of its channel; scale away from 0 so each gradient term matters.
      {"BatchNormalizationTraining [N, C, H, W]", {{"a", {3, 2, 2, 3}}, {"s", {2}, 0.5, 2.0}, {"b", {2}}},
       "  %y, %m, %v = BatchNormalizationTraining(%a, %s, %b) {epsilon = 0.001}", {3, 2, 2, 3}},
      {"BatchNormalizationTraining [N, C] feeding Tanh", {{"a", {5, 3}}, {"s", {3}, 0.5, 2.0}, {"b", {3}}},
       "  %n, %m, %v = BatchNormalizationTraining(%a, %s, %b)\n  %y = Tanh(%n)", {5, 3}},
      // DropoutTraining at a fixed seed and counter: a fixed mask, so the loss is linear in a.
      {"DropoutTraining", {{"a", {4, 5}}},
       "  const %seed: i64[] = [7]\n  const %ctr: i64[] = [3]\n  %y, %mask = DropoutTraining(%a, %seed, %ctr) {ratio = 0.4, stream = 1}",
       {4, 5}},
      {"MLP: Gemm, Relu, Gemm, LogSoftmax",
       {{"x", {3, 4}}, {"w1", {4, 5}}, {"b1", {5}}, {"w2", {5, 2}}},
       "  %h = Gemm(%x, %w1, %b1)\n  %hr = Tanh(%h)\n  %o = MatMul(%hr, %w2)\n  %y = LogSoftmax(%o) {axis = 1}",
       {3, 2}},
  };
}

// Pooling, grouped convolution, Gather and LayerNormalization. Window shapes are chosen so that
// pads, strides, dilations and ceil_mode tails all occur (the comments give the output sizes);
// random inputs have no ties within a window, and h = 1e-5 never moves a maximum.
std::vector<Case> WindowCases() {
  return {
      // H: ceil((7+2-3)/2)+1 = 4; W: ceil((6+1-2)/2)+1 = 4, minus the window starting in the end pad.
      {"MaxPool 2-d pads, strides, overlapping windows, ceil_mode", {{"a", {2, 2, 7, 6}}},
       "  %y = MaxPool(%a) {kernel_shape = [3, 2], strides = [2, 2], pads = [1, 0, 1, 1], ceil_mode = 1}", {2, 2, 4, 3}},
      {"MaxPool 1-d dilation 2", {{"a", {2, 3, 9}}}, "  %y = MaxPool(%a) {kernel_shape = [3], dilations = [2]}", {2, 3, 5}},
      {"MaxPool 3-d", {{"a", {1, 2, 4, 4, 3}}}, "  %y = MaxPool(%a) {kernel_shape = [2, 2, 2], strides = [2, 2, 1]}", {1, 2, 2, 2, 2}},
      {"MaxPool with its Indices output", {{"a", {1, 2, 5, 5}}},
       "  %y, %i = MaxPool(%a) {kernel_shape = [2, 2], strides = [2, 2], ceil_mode = 1}", {1, 2, 3, 3}},
      {"GlobalMaxPool", {{"a", {2, 3, 3, 4}}}, "  %y = GlobalMaxPool(%a)", {2, 3, 1, 1}},
      // H: last window (start 5) reaches 7, past the input and its end pad: a ceil_mode tail.
      {"AveragePool count_include_pad 0, pads, ceil_mode tail", {{"a", {2, 2, 7, 6}}},
       "  %y = AveragePool(%a) {kernel_shape = [3, 3], strides = [2, 2], pads = [1, 1, 0, 1], ceil_mode = 1}", {2, 2, 4, 4}},
      {"AveragePool count_include_pad 1, pads, ceil_mode tail", {{"a", {2, 2, 7, 6}}},
       "  %y = AveragePool(%a) {kernel_shape = [3, 3], strides = [2, 2], pads = [1, 1, 0, 1], ceil_mode = 1, count_include_pad = 1}",
       {2, 2, 4, 4}},
      {"AveragePool 1-d dilation 2, stride 3, count_include_pad 1", {{"a", {1, 2, 10}}},
       "  %y = AveragePool(%a) {kernel_shape = [2], dilations = [2], strides = [3], pads = [2, 1], count_include_pad = 1}", {1, 2, 4},
       {}, 19},
      {"AveragePool 3-d", {{"a", {1, 2, 4, 3, 3}}}, "  %y = AveragePool(%a) {kernel_shape = [2, 2, 2], pads = [0, 1, 0, 0, 0, 1]}",
       {1, 2, 3, 3, 3}},
      {"GlobalAveragePool", {{"a", {2, 3, 3, 4}}}, "  %y = GlobalAveragePool(%a)", {2, 3, 1, 1}},
      {"Conv groups 2, stride, asymmetric pads, bias", {{"a", {2, 4, 5, 5}}, {"w", {6, 2, 3, 3}}, {"b", {6}}},
       "  %y = Conv(%a, %w, %b) {group = 2, strides = [2, 1], pads = [1, 0, 1, 1]}", {2, 6, 3, 4}},
      {"Conv depthwise, dilation 2", {{"a", {1, 3, 6, 6}}, {"w", {3, 1, 3, 3}}},
       "  %y = Conv(%a, %w) {group = 3, dilations = [2, 2], pads = [2, 2, 2, 2]}", {1, 3, 6, 6}},
      {"Conv depthwise multiplier 2, 1-d stride 2", {{"a", {2, 2, 8}}, {"w", {4, 1, 3}}}, "  %y = Conv(%a, %w) {group = 2, strides = [2]}",
       {2, 4, 3}},
      {"Gather axis 0, repeated and negative indices", {{"a", {5, 3}}},
       "  const %i: i64[2, 3] = [0, 4, -1, 2, 0, 0]\n  %y = Gather(%a, %i)", {2, 3, 3}},
      {"Gather axis 1, repeated indices", {{"a", {2, 4, 3}}}, "  const %i: i64[3] = [3, -1, 1]\n  %y = Gather(%a, %i) {axis = 1}", {2, 3, 3}},
      {"Gather axis -1, scalar index", {{"a", {2, 3, 4}}}, "  const %i: i64[] = [2]\n  %y = Gather(%a, %i) {axis = -1}", {2, 3}},
      // The same weight read by Gather and by a MatMul through a Transpose: both gradients sum.
      {"Tied embeddings: Gather and MatMul share the weight", {{"e", {6, 4}}},
       "  const %i: i64[2, 3] = [5, 0, 5, 2, 3, 1]\n  %h = Gather(%e, %i)\n  %t = Transpose(%e)\n  %y = MatMul(%h, %t)", {2, 3, 6}},
      {"LayerNormalization last axis", {{"x", {3, 5}}, {"s", {5}}, {"b", {5}}},
       "  %y = LayerNormalization(%x, %s, %b) {epsilon = 0.001}", {3, 5}},
      {"LayerNormalization axis 1 over two axes, no bias", {{"x", {2, 3, 4}}, {"s", {3, 4}}},
       "  %y = LayerNormalization(%x, %s) {axis = 1}", {2, 3, 4}},
      {"LayerNormalization scale broadcast over the normalized axes", {{"x", {2, 3, 4}}, {"s", {1, 4}}, {"b", {4}}},
       "  %y = LayerNormalization(%x, %s, %b) {axis = -2}", {2, 3, 4}},
  };
}

// Pointwise activations and data movement. Inputs are drawn away from each kink by at least 0.05
// only where the kink is at 0 (min_abs); the other kinks (Clip bounds, HardSigmoid's and
// HardSwish's corners) are at fixed points that random doubles miss by far more than h.
std::vector<Case> PointwiseCases() {
  Input a{"a", {2, 3}};
  return {
      {"Clip opset 11, min and max inputs", {{"a", {3, 4}}},
       "  const %lo: f64[] = [-0.5]\n  const %hi: f64[] = [0.7]\n  %y = Clip(%a, %lo, %hi)", {3, 4}},
      {"Clip opset 11, min only", {{"a", {3, 4}}}, "  const %lo: f64[] = [0.2]\n  %y = Clip(%a, %lo)", {3, 4}},
      {"Clip opset 10, attributes (the Clip-6 form)", {{"a", {3, 4}}}, "  %y = Clip(%a) {min = -0.5, max = 0.7}", {3, 4}, {}, 10},
      {"LeakyRelu", {{"a", {2, 3}, -2, 2, 0.05}}, "  %y = LeakyRelu(%a) {alpha = 0.1}", {2, 3}},
      {"Gelu exact", {{"a", {3, 4}, -3, 3}}, "  %y = Gelu(%a)", {3, 4}, {}, 20},
      {"Gelu tanh", {{"a", {3, 4}, -3, 3}}, "  %y = Gelu(%a) {approximate = \"tanh\"}", {3, 4}, {}, 20},
      {"HardSigmoid", {{"a", {3, 4}, -3, 3}}, "  %y = HardSigmoid(%a) {alpha = 0.3, beta = 0.4}", {3, 4}},
      {"HardSwish", {{"a", {3, 4}, -4, 4}}, "  %y = HardSwish(%a)", {3, 4}},
      {"Reciprocal", {{"a", {2, 3}, 0.5, 2.0}}, "  %y = Reciprocal(%a)", {2, 3}},
      {"Max broadcast", {a, {"b", {3}}}, "  %y = Max(%a, %b)", {2, 3}},
      {"Min broadcast", {a, {"b", {2, 1}}}, "  %y = Min(%a, %b)", {2, 3}},
      {"Max of one input", {a}, "  %y = Max(%a)", {2, 3}},
      // axis 0: [1, 3); axis 1: 5, 3, 1 (step -2).
      // Pad: a border in front and behind, and a crop (negative pad) on the last axis.
      {"Pad constant, pad and crop", {{"a", {3, 4}}},
       "  const %p: i64[4] = [1, 2, 2, -1]\n  const %v: f64[] = [0.5]\n  %y = Pad(%a, %p, %v)", {6, 5}},
      {"Pad with axes (opset 18)", {{"a", {2, 3, 4}}},
       "  const %p: i64[2] = [1, 2]\n  const %ax: i64[1] = [-1]\n  %y = Pad(%a, %p, _, %ax)", {2, 3, 7}, {}, 18},
      {"Pad opset 10, attributes", {{"a", {3, 4}}}, "  %y = Pad(%a) {pads = [0, 1, 2, 0], value = 1.5}", {5, 5}, {}, 10},
      {"Slice negative step", {{"a", {4, 6}}},
       "  const %s: i64[2] = [1, -1]\n  const %e: i64[2] = [3, -7]\n  const %ax: i64[2] = [0, 1]\n  const %st: i64[2] = [1, -2]\n"
       "  %y = Slice(%a, %s, %e, %ax, %st)",
       {2, 3}},
      {"Slice step 3, end past the axis", {{"a", {2, 7}}},
       "  const %s: i64[1] = [1]\n  const %e: i64[1] = [100]\n  const %ax: i64[1] = [1]\n  const %st: i64[1] = [3]\n"
       "  %y = Slice(%a, %s, %e, %ax, %st)",
       {2, 2}},
      {"Slice step 1, two axes", {{"a", {3, 5, 2}}},
       "  const %s: i64[2] = [1, 0]\n  const %e: i64[2] = [-1, 1]\n  const %ax: i64[2] = [1, 2]\n  %y = Slice(%a, %s, %e, %ax)", {3, 3, 1}},
      {"Slice opset 9, attributes", {{"a", {3, 5}}}, "  %y = Slice(%a) {starts = [1, -3], ends = [3, 100], axes = [0, 1]}", {2, 3}, {}, 9},
      {"Split opset 11, split attribute", {{"a", {2, 5}}}, "  %p, %q = Split(%a) {axis = 1, split = [3, 2]}\n  %y = Mul(%p, %p)", {2, 3},
       {}, 11},
      {"Split, first output unused", {{"a", {2, 5}}}, "  const %sp: i64[2] = [2, 3]\n  %p, %q = Split(%a, %sp) {axis = 1}\n  %y = Mul(%q, %q)",
       {2, 3}},
      {"Split, middle output unused", {{"a", {5, 2}}}, "  const %sp: i64[3] = [1, 2, 2]\n  %s0, %s1, %s2 = Split(%a, %sp)\n  %y = Concat(%s2, %s0) {axis = 0}",
       {3, 2}},
      {"Expand", {{"a", {3, 1}}}, "  const %sh: i64[3] = [2, 3, 4]\n  %y = Expand(%a, %sh)", {2, 3, 4}},
      {"Trilu lower, k 1", {{"a", {4, 5}}}, "  const %k: i64[] = [1]\n  %y = Trilu(%a, %k) {upper = 0}", {4, 5}},
      {"Trilu upper", {{"a", {2, 3, 3}}}, "  %y = Trilu(%a)", {2, 3, 3}},
      {"ReduceMax", {{"a", {2, 3, 4}}}, "  %y = ReduceMax(%a) {axes = [1], keepdims = 0}", {2, 4}},
      // Older opsets: the rules' own ReduceSum (unbroadcasting) and Slice (Concat's gradient)
      // take the attribute forms of the model's version.
      {"Mul broadcast, opset 11 (ReduceSum axes attribute)", {a, {"b", {3}}}, "  %y = Mul(%a, %b)", {2, 3}, {}, 11},
      {"Add broadcast, opset 9", {{"a", {2, 3, 4}}, {"b", {3, 1}}}, "  %y = Add(%a, %b)", {2, 3, 4}, {}, 9},
      {"Concat, opset 9 (Slice attributes)", {a, {"b", {2, 2}}}, "  %c = Concat(%a, %b) {axis = 1}\n  %y = Mul(%c, %c)", {2, 5}, {}, 9},
      {"ReduceMax opset 18, axes input, keepdims", {{"a", {2, 3, 4}}}, "  const %ax: i64[2] = [0, 2]\n  %y = ReduceMax(%a, %ax)", {1, 3, 1},
       {}, 18},
  };
}

TEST(Autodiff, WindowRulesMatchFiniteDifferences) {
  for (const Case& c : WindowCases()) CheckGradients(c);
}

TEST(Autodiff, PointwiseRulesMatchFiniteDifferences) {
  for (const Case& c : PointwiseCases()) CheckGradients(c);
}

// The gradient of every input at given values (the backward plan run once).
std::vector<std::vector<double>> GradientsAt(const Case& c, const std::vector<std::vector<double>>& x) {
  std::vector<double> r(size_t(Count(c.y_dims)), 1.0);
  auto compiled = Compile(c, r);
  EXPECT_TRUE(compiled.ok()) << compiled.status().ToString();
  if (!compiled.ok()) return {};
  auto bwd = Session::FromBuffer(compiled->backward.data(), compiled->backward.size());
  EXPECT_TRUE(bwd.ok());
  if (!bwd.ok()) return {};
  RunLoss(**bwd, c, x);
  std::vector<std::vector<double>> out;
  for (size_t k = 0; k < c.inputs.size(); ++k) {
    auto grad = (*bwd)->Output((*bwd)->outputs()[k + 1].name);
    const double* g = static_cast<const double*>(grad->data);
    out.emplace_back(g, g + Count(c.inputs[k].dims));
  }
  return out;
}

// Conventions at kinks and ties, which finite differences cannot see (PyTorch's, checked against
// torch 1.13 by hand): Clip passes the gradient at its bounds; Max/Min split it evenly on ties;
// MaxPool gives it to the first maximum of a window in scan order; ReduceMax splits it among the
// elements equal to the maximum; LeakyRelu at 0 takes alpha.
TEST(Autodiff, ConventionsAtKinksAndTiesArePyTorchs) {
  using D = std::vector<double>;
  auto clip = GradientsAt({"clip", {{"a", {5}}}, "  const %lo: f64[] = [-1.0]\n  const %hi: f64[] = [1.0]\n  %y = Clip(%a, %lo, %hi)", {5}},
                          {{-1.5, -1.0, 0.0, 1.0, 1.5}});
  EXPECT_EQ(clip, (std::vector<D>{{0, 1, 1, 1, 0}}));
  auto max = GradientsAt({"max", {{"a", {3}}, {"b", {3}}}, "  %y = Max(%a, %b)", {3}}, {{1, 2, 3}, {1, 1, 4}});
  EXPECT_EQ(max, (std::vector<D>{{0.5, 1, 0}, {0.5, 0, 1}}));
  auto min = GradientsAt({"min", {{"a", {2}}, {"b", {}}}, "  %y = Min(%a, %b)", {2}}, {{2, 5}, {2}});
  EXPECT_EQ(min, (std::vector<D>{{0.5, 0}, {1.5}}));
  auto pool = GradientsAt({"pool", {{"a", {1, 1, 2, 3}}}, "  %y = MaxPool(%a) {kernel_shape = [2, 2], strides = [1, 1]}", {1, 1, 1, 2}},
                          {{3, 3, 3, 1, 3, 3}});
  EXPECT_EQ(pool, (std::vector<D>{{1, 1, 0, 0, 0, 0}}));
  auto rmax = GradientsAt({"rmax", {{"a", {2, 3}}}, "  %y = ReduceMax(%a) {axes = [1], keepdims = 0}", {2}}, {{2, 1, 2, 0, 5, 1}});
  EXPECT_EQ(rmax, (std::vector<D>{{0.5, 0, 0.5, 0, 1, 0}}));
  auto leaky = GradientsAt({"leaky", {{"a", {2}}}, "  %y = LeakyRelu(%a) {alpha = 0.25}", {2}}, {{0, 1}});
  EXPECT_EQ(leaky, (std::vector<D>{{0.25, 1}}));
}

TEST(Autodiff, EveryRuleMatchesFiniteDifferences) {
  for (const Case& c : Cases()) CheckGradients(c);
}

TEST(Autodiff, OnlyWhatTheLossNeedsIsDifferentiated) {
  Case c{"partial", {{"a", {2, 3}}, {"b", {2, 3}}}, "  %y = Mul(%a, %b)", {2, 3}, {"a"}};
  CheckGradients(c);
  // y = a*b, loss = sum(y*r), plus an unused branch: the gradient of a alone needs Mul(y*r's
  // gradient) and Mul(g, b); b's gradient and the branch are never built.
  auto count = [](std::vector<std::string> wrt) {
    auto m = ir::ParseModel(R"(
model {ir_version = 8, producer_name = "t", producer_version = "", domain = "", model_version = 0, opsets = {"" = 17}}
graph "g" {
  input %a: f64[2, 3]
  input %b: f64[2, 3]
  %y = Mul(%a, %b)
  %unused = Exp(%a)
  %loss = ReduceSum(%y) {keepdims = 0}
  output %loss
  output %unused
}
)");
    EXPECT_TRUE(m.ok());
    EXPECT_TRUE(passes::InferShapesAndFold(**m).ok());
    auto r = passes::BuildGradients(**m, "loss", wrt);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? r->backward_nodes : -1;
  };
  // ReduceSum's gradient (Reshape + Expand) and one Mul per wanted input.
  EXPECT_EQ(count({"a"}), 3);
  EXPECT_EQ(count({"a", "b"}), 4);
}

TEST(Autodiff, NodesWithoutRulesAreListedAtOnce) {
  auto m = ir::ParseModel(R"(
model {ir_version = 8, producer_name = "t", producer_version = "", domain = "", model_version = 0, opsets = {"" = 17}}
graph "g" {
  input %a: f64[2, 3]
  %s = Sin(%a) name "sine"
  %c = Cos(%s) name "cosine"
  %loss = ReduceSum(%c) {keepdims = 0}
  output %loss
}
)");
  ASSERT_TRUE(m.ok());
  ASSERT_TRUE(passes::InferShapesAndFold(**m).ok());
  auto r = passes::BuildGradients(**m, "loss", {"a"});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("'sine'"), std::string::npos) << r.status().ToString();
  EXPECT_NE(r.status().message().find("'cosine'"), std::string::npos) << r.status().ToString();
  EXPECT_NE(passes::BuildGradients(**m, "nosuch", {"a"}).status().message().find("no value named 'nosuch'"), std::string::npos);
}

// Nodes a rule does not cover are refused with the reason, naming the node.
TEST(Autodiff, RefusalsNameTheReason) {
  auto refusal = [](const std::string& inputs, const std::string& body) {
    auto m = ir::ParseModel("model {ir_version = 8, producer_name = \"t\", producer_version = \"\", domain = \"\", model_version = 0, "
                            "opsets = {\"\" = 17}}\ngraph \"g\" {\n" + inputs + body + "\n  %loss = ReduceSum(%y) {keepdims = 0}\n  output %loss\n}\n");
    EXPECT_TRUE(m.ok()) << m.status().ToString();
    if (!m.ok()) return std::string();
    EXPECT_TRUE(passes::InferShapesAndFold(**m).ok());
    auto r = passes::BuildGradients(**m, "loss", {"a"});
    EXPECT_FALSE(r.ok());
    return r.ok() ? std::string() : r.status().message();
  };
  EXPECT_NE(refusal("  input %a: f64[2, 3]\n", "  %y = Max(%a, %a, %a) name \"max3\"").find("'max3'"), std::string::npos);
  EXPECT_NE(refusal("  input %a: f64[2, 3]\n", "  %y = Max(%a, %a, %a)").find("more than two inputs"), std::string::npos);
  EXPECT_NE(refusal("  input %a: f64[1, 1, 4, 4]\n", "  %y = MaxPool(%a) {kernel_shape = [2, 2], auto_pad = \"SAME_UPPER\"}").find("auto_pad"),
            std::string::npos);
  EXPECT_NE(refusal("  input %a: f64[1, 1, 4, 4]\n", "  %y = AveragePool(%a) {kernel_shape = [2, 2], pads = [2, 0, 0, 0]}").find("padding only"),
            std::string::npos);
  EXPECT_NE(refusal("  input %a: f64[2, 3]\n  const %sc: f64[3] = [1.0, 2.0, 3.0]\n", "  %y, %mean = LayerNormalization(%a, %sc)").find("Mean and InvStdDev"),
            std::string::npos);
}

TEST(Autodiff, RuleTableIsSortedAndUnique) {
  std::vector<std::string> ops = ops::GradOps();
  EXPECT_TRUE(std::is_sorted(ops.begin(), ops.end()));
  EXPECT_EQ(std::adjacent_find(ops.begin(), ops.end()), ops.end());
}

}  // namespace
}  // namespace precis
