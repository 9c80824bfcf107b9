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

TEST(Autodiff, RuleTableIsSortedAndUnique) {
  std::vector<std::string> ops = ops::GradOps();
  EXPECT_TRUE(std::is_sorted(ops.begin(), ops.end()));
  EXPECT_EQ(std::adjacent_find(ops.begin(), ops.end()), ops.end());
}

}  // namespace
}  // namespace precis
