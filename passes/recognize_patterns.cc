// RecognizePatterns (see recognize_patterns.h). Each matcher starts from the node that ends or
// anchors its pattern, walks producers through single-use values, and returns the nodes it covers;
// marks are applied after all matching (collect, then mutate).
#include "passes/recognize_patterns.h"

#include <cmath>
#include <cstring>
#include <optional>

#include "compiler/ir/precision_reason.h"
#include "passes/match.h"

namespace precis::passes {
namespace {

using ir::Node;
using ir::Value;
using match::In;
using match::InV;
using match::Is;
using match::Near;
using match::OnlyUser;
using match::Other;
using match::Producer;
using match::Scalar;

// Pow(d, 2) or Mul(d, d): the square of which value?
Value* SquareOf(const Node* n) {
  if (Is(n, "Pow") && Near(Scalar(InV(n, 1)), 2.0)) return InV(n, 0);
  if (Is(n, "Mul") && InV(n, 0) == InV(n, 1)) return InV(n, 0);
  return nullptr;
}

// Sqrt(ReduceMean(square) [+ eps]): nodes covered and the squared value.
struct RootMeanSquare {
  std::vector<Node*> nodes;
  Value* squared = nullptr;
};
std::optional<RootMeanSquare> MatchRootMeanSquare(Node* sqrt) {
  if (!Is(sqrt, "Sqrt")) return std::nullopt;
  RootMeanSquare r;
  r.nodes.push_back(sqrt);
  Node* mean = In(sqrt, 0);
  if (Is(mean, "Add") && (Scalar(InV(mean, 1)) || Scalar(InV(mean, 0)))) {
    r.nodes.push_back(mean);
    mean = Scalar(InV(mean, 1)) ? In(mean, 0) : In(mean, 1);
  }
  if (!Is(mean, "ReduceMean")) return std::nullopt;
  r.nodes.push_back(mean);
  Node* sq = In(mean, 0);
  r.squared = SquareOf(sq);
  if (!r.squared) return std::nullopt;
  r.nodes.push_back(sq);
  return r;
}

struct Match {
  std::vector<Node*> nodes;
  ir::Reason reason;
  std::string evidence;
};

// Div(d, Sqrt(ReduceMean((x - ReduceMean(x))^2) + eps)) with d = x - ReduceMean(x).
std::optional<Match> MatchLayerNorm(Node* div) {
  if (!Is(div, "Div")) return std::nullopt;
  auto rms = MatchRootMeanSquare(In(div, 1));
  if (!rms) return std::nullopt;
  Node* sub = In(div, 0);
  if (!Is(sub, "Sub") || InV(div, 0) != rms->squared) return std::nullopt;
  Node* mean = In(sub, 1);
  if (!Is(mean, "ReduceMean") || InV(mean, 0) != InV(sub, 0)) return std::nullopt;
  Match m{rms->nodes, ir::Reason::kLayerNormPattern, "decomposed LayerNorm of '" + InV(sub, 0)->name() + "'"};
  m.nodes.insert(m.nodes.end(), {div, sub, mean});
  return m;
}

// x / Sqrt(mean(x^2) + eps), or x * Reciprocal(...), or x * (1 / ...).
std::optional<Match> MatchRmsNorm(Node* sqrt) {
  auto rms = MatchRootMeanSquare(sqrt);
  if (!rms || sqrt->outputs().size() != 1 || sqrt->outputs()[0]->uses().size() != 1) return std::nullopt;
  Node* user = sqrt->outputs()[0]->uses()[0].node;
  Match m{rms->nodes, ir::Reason::kRmsNormPattern, "decomposed RMSNorm of '" + rms->squared->name() + "'"};
  if (Is(In(rms->nodes.back(), 0), "Sub")) return std::nullopt;  // centered: a LayerNorm
  if (Is(user, "Div") && InV(user, 0) == rms->squared) {
    m.nodes.push_back(user);
    return m;
  }
  if ((Is(user, "Reciprocal") || (Is(user, "Div") && Near(Scalar(InV(user, 0)), 1.0))) && user->outputs()[0]->uses().size() == 1) {
    Node* mul = user->outputs()[0]->uses()[0].node;
    if (Is(mul, "Mul") && Other(mul, user->outputs()[0]) == rms->squared) {
      m.nodes.insert(m.nodes.end(), {user, mul});
      return m;
    }
  }
  return std::nullopt;
}


// x * 0.5 * (1 + Erf(x / sqrt2)) in either multiplication order, anchored at Erf.
std::optional<Match> MatchErfGelu(Node* erf) {
  if (!Is(erf, "Erf")) return std::nullopt;
  Node* scale = In(erf, 0);
  Value* x = nullptr;
  if (Is(scale, "Div") && Near(Scalar(InV(scale, 1)), std::sqrt(2.0))) x = InV(scale, 0);
  if (Is(scale, "Mul") && Near(Scalar(InV(scale, 1)), 1 / std::sqrt(2.0))) x = InV(scale, 0);
  if (!x) return std::nullopt;
  Node* add = OnlyUser(erf);
  if (!Is(add, "Add") || !Near(Scalar(Other(add, erf->outputs()[0])), 1.0)) return std::nullopt;
  Node* m1 = OnlyUser(add);
  if (!Is(m1, "Mul")) return std::nullopt;
  Match m{{scale, erf, add, m1}, ir::Reason::kGeluPattern, "Erf-based GELU of '" + x->name() + "'"};
  Value* other = Other(m1, add->outputs()[0]);
  if (other == x) {  // (x * (1 + erf)) * 0.5
    Node* half = OnlyUser(m1);
    if (Is(half, "Mul") && Near(Scalar(Other(half, m1->outputs()[0])), 0.5)) m.nodes.push_back(half);
    return m;
  }
  Node* xhalf = Producer(other);  // (x * 0.5) * (1 + erf)
  if (Is(xhalf, "Mul") && Other(xhalf, x) && Near(Scalar(Other(xhalf, x)), 0.5)) {
    m.nodes.push_back(xhalf);
    return m;
  }
  return std::nullopt;
}

// Tanh(c * (x + 0.044715 * x^3)) form, anchored at Tanh; covers the cube so it runs with the rest.
std::optional<Match> MatchTanhGelu(Node* tanh) {
  if (!Is(tanh, "Tanh")) return std::nullopt;
  Node* scale = In(tanh, 0);
  if (!Is(scale, "Mul")) return std::nullopt;
  Node* add = In(scale, 0);
  if (!Is(add, "Add")) add = In(scale, 1);
  if (!Is(add, "Add")) return std::nullopt;
  for (int side = 0; side < 2; ++side) {
    Node* mul = In(add, size_t(side));
    Value* x = InV(add, size_t(1 - side));
    if (!Is(mul, "Mul")) continue;
    Node* cube = In(mul, 0);
    if (!Is(cube, "Pow")) cube = In(mul, 1);
    if (!Is(cube, "Pow") || InV(cube, 0) != x || !Near(Scalar(InV(cube, 1)), 3.0)) continue;
    return Match{{cube, mul, add, scale, tanh}, ir::Reason::kGeluPattern, "Tanh-based GELU of '" + x->name() + "'"};
  }
  return std::nullopt;
}

// Softmax -> Log or LogSoftmax, then the picking of the target: Gather*, Mul (one-hot), Neg, NLL.
std::optional<Match> MatchCrossEntropy(Node* n) {
  std::vector<Node*> nodes;
  if (Is(n, "LogSoftmax")) nodes.push_back(n);
  else if (Is(n, "Log") && Is(In(n, 0), "Softmax")) nodes = {In(n, 0), n};
  else return std::nullopt;
  Node* user = OnlyUser(n);
  bool picked = false;
  while (user && (Is(user, "Gather") || Is(user, "GatherElements") || Is(user, "Mul") || Is(user, "Neg") ||
                  Is(user, "NegativeLogLikelihoodLoss"))) {
    nodes.push_back(user);
    picked = true;
    user = OnlyUser(user);
  }
  if (!picked) return std::nullopt;
  return Match{nodes, ir::Reason::kCrossEntropyPattern, "softmax cross-entropy"};
}

// MatMul -> [Div|Mul by a scalar] -> [Add mask] -> Softmax -> MatMul, anchored at Softmax.
std::optional<Match> MatchAttention(Node* softmax) {
  if (!Is(softmax, "Softmax")) return std::nullopt;
  Node* user = OnlyUser(softmax);
  if (!Is(user, "MatMul")) return std::nullopt;
  std::vector<Node*> nodes{softmax, user};
  Node* p = In(softmax, 0);
  if (Is(p, "Add")) nodes.push_back(p), p = Is(In(p, 0), "Add") ? nullptr : (In(p, 0) ? In(p, 0) : In(p, 1));
  if (Is(p, "Div") || Is(p, "Mul")) nodes.push_back(p), p = In(p, 0);
  if (!Is(p, "MatMul")) return std::nullopt;
  nodes.push_back(p);
  return Match{nodes, ir::Reason::kAttentionPattern, "attention (scores of " + softmax->Describe() + ")"};
}

// A 1x1 Conv (weights [M, C, 1, 1]) producing the value, or nullptr.
Node* PointwiseConv(Node* n) {
  if (!Is(n, "Conv")) return nullptr;
  auto wd = match::StaticDims(InV(n, 1));
  return wd && wd->size() == 4 && (*wd)[2] == 1 && (*wd)[3] == 1 ? n : nullptr;
}

// Squeeze-excitation gate, anchored at the gate (Sigmoid or HardSigmoid):
//   s = pool(x); g = gate(Conv1x1(act(Conv1x1(s)))); y = Mul(x, g)
// with pool a GlobalAveragePool or a ReduceMean keeping dims, act a Relu, Clip, HardSwish,
// LeakyRelu or SiLU (Mul(a, Sigmoid(a))). Covers pool to gate; the Mul over the feature map is not
// part of it (it runs with the feature map, reading the gate cast down). Each gate scales a whole
// channel, so rounding its weights moves the network's output far more than the gate's cost.
std::optional<Match> MatchSqueezeExcite(Node* gate) {
  if (!Is(gate, "Sigmoid") && !Is(gate, "HardSigmoid")) return std::nullopt;
  Node* conv2 = PointwiseConv(In(gate, 0));
  if (!conv2) return std::nullopt;
  std::vector<Node*> nodes{gate, conv2};
  Node* act = In(conv2, 0);
  Node* conv1 = nullptr;
  if (Is(act, "Relu") || Is(act, "Clip") || Is(act, "HardSwish") || Is(act, "LeakyRelu")) {
    nodes.push_back(act);
    conv1 = PointwiseConv(In(act, 0));
  } else if (Is(act, "Mul")) {  // SiLU
    for (size_t side = 0; side < 2 && !conv1; ++side) {
      Node* sig = In(act, side);
      if (Is(sig, "Sigmoid") && InV(sig, 0) == InV(act, 1 - side)) {
        nodes.insert(nodes.end(), {act, sig});
        conv1 = PointwiseConv(In(sig, 0));
      }
    }
  }
  if (!conv1) return std::nullopt;
  nodes.push_back(conv1);
  Node* pool = In(conv1, 0);
  const ir::Attribute* keep = pool ? pool->FindAttribute("keepdims") : nullptr;
  if (!Is(pool, "GlobalAveragePool") && !(Is(pool, "ReduceMean") && (!keep || keep->i != 0))) return std::nullopt;
  Value* x = InV(pool, 0);
  bool scales_x = false;
  for (const ir::Use& u : gate->outputs()[0]->uses()) scales_x |= Is(u.node, "Mul") && Other(u.node, gate->outputs()[0]) == x;
  if (!scales_x) return std::nullopt;
  nodes.push_back(pool);
  return Match{nodes, ir::Reason::kSqueezeExcitePattern, "squeeze-excitation gate over '" + x->name() + "'"};
}

}  // namespace

int RecognizePatterns(ir::Graph& graph) {
  std::vector<Match> found;
  for (const auto& up : graph.nodes()) {
    Node* n = up.get();
    for (auto matcher : {MatchLayerNorm, MatchRmsNorm, MatchErfGelu, MatchTanhGelu, MatchCrossEntropy, MatchAttention, MatchSqueezeExcite})
      if (auto m = matcher(n)) found.push_back(std::move(*m));
  }
  for (const Match& m : found)
    for (Node* n : m.nodes) {
      ir::PrecisionRecord& r = n->mutable_precision();
      if (!r.reason.empty() && ir::ParseReason(r.reason) != ir::Reason::kAttentionPattern) continue;  // a stronger pattern already holds it
      r.reason = ir::ReasonName(m.reason);
      r.evidence = m.evidence;
    }
  return int(found.size());
}

}  // namespace precis::passes
