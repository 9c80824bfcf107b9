// FoldBatchNorm (see fold_batchnorm.h).
#include "passes/fold_batchnorm.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <optional>
#include <set>

#include "passes/low_range.h"
#include "passes/match.h"

namespace precis::passes {
namespace {

using ir::Node;
using ir::Value;
using match::AddEvidence;
using match::Floats;
using match::FreshName;
using match::Is;
using match::StaticDims;

// Half of FP16's largest finite value: folded weights beyond it stay unfolded.
constexpr double kFoldLimit = 65504.0 / 2;

bool IsGraphOutput(const ir::Graph& g, const Value* v) {
  return std::find(g.outputs().begin(), g.outputs().end(), v) != g.outputs().end();
}

// `values` stored as a tensor of `dtype` (a float type) with `dims`.
ir::Tensor Store(ir::DType dtype, const std::vector<int64_t>& dims, const std::vector<double>& values) {
  size_t size = size_t(ir::DTypeSize(dtype));
  std::vector<uint8_t> bytes(values.size() * size);
  for (size_t i = 0; i < values.size(); ++i) {
    uint8_t* p = bytes.data() + i * size;
    switch (dtype) {
      case ir::DType::kF64: std::memcpy(p, &values[i], 8); break;
      case ir::DType::kF32: {
        float f = float(values[i]);
        std::memcpy(p, &f, 4);
        break;
      }
      default: {
        uint16_t h = dtype == ir::DType::kF16 ? FloatToHalf(float(values[i])) : FloatToBf16(float(values[i]));
        std::memcpy(p, &h, 2);
      }
    }
  }
  return ir::Tensor(dtype, dims, ir::Buffer::Own(std::move(bytes)));
}

struct Fold {
  Node* conv;
  Node* node;                // the BatchNormalization, Mul or Add folded into the Conv
  std::vector<double> w, b;  // folded
  std::string what;          // for the evidence
};

// y = x * s[m] + t[m] per output channel m, for the node that alone reads the Conv's output.
struct Affine {
  std::vector<double> s, t;
  std::string what;
};

// Inference-form BatchNormalization: s = scale / sqrt(var + epsilon), t = bias - mean * s.
std::optional<Affine> BatchNormAffine(const Node* bn, int64_t m) {
  if (bn->inputs().size() != 5 || bn->outputs().empty()) return std::nullopt;
  for (size_t i = 1; i < bn->outputs().size(); ++i)
    if (bn->outputs()[i]) return std::nullopt;  // training outputs
  const ir::Attribute* mode = bn->FindAttribute("training_mode");
  if (mode && mode->i != 0) return std::nullopt;
  const ir::Attribute* spatial = bn->FindAttribute("spatial");
  if (spatial && spatial->i != 1) return std::nullopt;
  const ir::Attribute* eps_attr = bn->FindAttribute("epsilon");
  double eps = eps_attr ? eps_attr->f : 1e-5;
  std::vector<double> stats[4];
  for (int i = 0; i < 4; ++i) {
    auto f = Floats(bn->inputs()[size_t(i + 1)]);
    if (!f || int64_t(f->size()) != m) return std::nullopt;
    stats[i] = *f;
  }
  Affine a{std::vector<double>(size_t(m)), std::vector<double>(size_t(m)), "BatchNormalization '" + bn->name() + "'"};
  for (size_t k = 0; k < size_t(m); ++k) {
    a.s[k] = stats[0][k] / std::sqrt(stats[3][k] + eps);
    a.t[k] = stats[1][k] - stats[2][k] * a.s[k];
  }
  return a;
}

// Mul or Add of x (of rank `rank`, channels on axis 1) by a constant that broadcasts per
// channel: one value, or dims that are 1 everywhere but on the channel axis (right-aligned).
std::optional<Affine> ChannelAffine(const Node* n, const Value* x, int64_t m, size_t rank) {
  bool mul = Is(n, "Mul");
  if ((!mul && !Is(n, "Add")) || n->inputs().size() != 2 || n->outputs().size() != 1) return std::nullopt;
  const Value* k = n->inputs()[0] == x ? n->inputs()[1] : n->inputs()[0];
  if (k == x) return std::nullopt;
  auto kd = StaticDims(k);
  auto kv = Floats(k);
  if (!kd || !kv || kd->size() > rank || k->type().dtype() != x->type().dtype()) return std::nullopt;
  bool per_channel = false;
  for (size_t i = 0; i < kd->size(); ++i) {
    size_t axis = rank - kd->size() + i;  // right-aligned
    int64_t d = (*kd)[i];
    if (d == 1) continue;
    if (axis != 1 || d != m) return std::nullopt;
    per_channel = true;
  }
  std::vector<double> v(size_t(m), (*kv)[0]);
  if (per_channel) v = *kv;
  Affine a{std::vector<double>(size_t(m), 1.0), std::vector<double>(size_t(m), 0.0),
           std::string(mul ? "Mul '" : "Add '") + n->name() + (mul ? "' (per-channel scale)" : "' (per-channel shift)")};
  (mul ? a.s : a.t) = v;
  return a;
}

// Folding multiplies W by s per channel: with 1/sigma ~ 1e4 or a Mul by 1e-4, FP16 weights that
// were normal can come out subnormal (or Inf). In a 16-bit plan the fold is refused when the
// folded W would lose its values to the format's range and W itself would not; `refusal` says why.
bool FoldKeepsRange(const Value* wv, const std::vector<double>& w, const std::vector<double>& folded, ir::DType low, std::string* refusal) {
  if (low != ir::DType::kF16 && low != ir::DType::kBF16) return true;
  RoundingLoss after = MeasureRounding(folded, low);
  if (!LosesRange(after, low) || LosesRange(MeasureRounding(w, low), low)) return true;
  *refusal = DescribeLoss("the folded '" + wv->name() + "'", after, low);
  return false;
}

std::optional<Fold> Match(const ir::Graph& g, Node* conv, ir::DType low, std::string* refusal) {
  if (!Is(conv, "Conv") || conv->outputs().size() != 1 || conv->inputs().size() < 2 || conv->FindAttribute("activation")) return std::nullopt;
  Value* x = conv->outputs()[0];
  if (!x || x->uses().size() != 1 || IsGraphOutput(g, x) || !x->type().is_tensor()) return std::nullopt;
  Node* next = x->uses()[0].node;
  if (next->outputs().empty() || !next->outputs()[0] || next->outputs()[0]->type() != x->type()) return std::nullopt;
  Value* wv = conv->inputs()[1];
  Value* bv = conv->inputs().size() > 2 ? conv->inputs()[2] : nullptr;
  auto wd = StaticDims(wv);
  auto w = Floats(wv);
  auto xd = StaticDims(x);
  if (!wd || wd->size() < 3 || !w || w->empty() || !xd || xd->size() != wd->size() || x->type().dtype() != wv->data()->dtype())
    return std::nullopt;
  int64_t m = (*wd)[0];
  std::optional<std::vector<double>> b = bv ? Floats(bv) : std::vector<double>(size_t(m), 0.0);
  if (!b || int64_t(b->size()) != m || (bv && bv->data()->dtype() != wv->data()->dtype())) return std::nullopt;
  std::optional<Affine> a;
  if (Is(next, "BatchNormalization") && next->inputs()[0] == x) a = BatchNormAffine(next, m);
  else a = ChannelAffine(next, x, m, xd->size());
  if (!a) return std::nullopt;

  Fold f{conv, next, *w, *b, a->what};
  size_t per = w->size() / size_t(m);
  for (size_t k = 0; k < size_t(m); ++k) {
    for (size_t i = k * per; i < (k + 1) * per; ++i) f.w[i] *= a->s[k];
    f.b[k] = f.b[k] * a->s[k] + a->t[k];
  }
  for (const auto* v : {&f.w, &f.b})
    for (double d : *v)
      if (!std::isfinite(d) || std::fabs(d) > kFoldLimit) return std::nullopt;
  std::string why;
  if (!FoldKeepsRange(wv, *w, f.w, low, &why)) {
    *refusal = "not folded into Conv '" + conv->name() + "': " + why + " (unfolded, it keeps its range)";
    return std::nullopt;
  }
  return f;
}

// A per-channel Mul or Add that alone reads an inference-form BatchNormalization's output
// (Caffe2's BN, then the scale layer's Mul and Add): BN's y = x * s + t, so Mul by k gives
// scale' = scale * k, bias' = bias * k and Add of k gives bias' = bias + k.
struct BnFold {
  Node* bn;
  Node* node;                    // the Mul or Add
  std::vector<double> scale, bias;  // folded
  std::string what;
};

std::optional<BnFold> MatchBn(const ir::Graph& g, Node* bn) {
  if (!Is(bn, "BatchNormalization") || bn->inputs().size() != 5 || bn->outputs().empty()) return std::nullopt;
  Value* x = bn->outputs()[0];
  if (!x || x->uses().size() != 1 || IsGraphOutput(g, x) || !x->type().is_tensor()) return std::nullopt;
  auto xd = StaticDims(x);
  if (!xd || xd->size() < 2) return std::nullopt;
  int64_t m = (*xd)[1];
  if (!BatchNormAffine(bn, m)) return std::nullopt;  // inference form, constant statistics
  // The folded scale and B are stored in the parameters' dtype: it must be X's (ONNX lets them
  // be narrower), or the multiplier would be rounded to less than the Mul computed in.
  ir::DType xt = x->type().dtype();
  if (bn->inputs()[1]->type().dtype() != xt || bn->inputs()[2]->type().dtype() != xt) return std::nullopt;
  Node* next = x->uses()[0].node;
  if (next->outputs().empty() || !next->outputs()[0] || next->outputs()[0]->type() != x->type()) return std::nullopt;
  std::optional<Affine> a = ChannelAffine(next, x, m, xd->size());
  if (!a) return std::nullopt;
  BnFold f{bn, next, *Floats(bn->inputs()[1]), *Floats(bn->inputs()[2]), a->what};
  for (size_t k = 0; k < size_t(m); ++k) {
    f.scale[k] *= a->s[k];
    f.bias[k] = f.bias[k] * a->s[k] + a->t[k];
    if (!std::isfinite(f.scale[k]) || !std::isfinite(f.bias[k]) || std::fabs(f.scale[k]) > kFoldLimit || std::fabs(f.bias[k]) > kFoldLimit)
      return std::nullopt;
  }
  return f;
}

// Moves `next`'s output value to `replacement` (made with `inputs` and `from`'s attributes) and
// removes `from` and `next`; `replacement` takes `next`'s place in the order.
void Replace(ir::Graph& g, Node* from, Node* next, const std::vector<Value*>& inputs, const std::string& evidence) {
  Value* y = next->outputs()[0];
  Value* spare = g.NewValue(FreshName(g, y->name() + ".unfolded"));
  spare->set_type(y->type());
  g.SetNodeOutput(next, 0, spare);
  Node* folded = g.AddNode(from->domain(), from->op_type(), from->name(), inputs, {y}, std::move(from->mutable_attributes()));
  folded->mutable_precision() = from->precision();
  AddEvidence(folded, evidence);
  std::vector<Node*> order;
  for (const auto& up : g.nodes()) {
    if (up.get() == folded) continue;
    if (up.get() == next) order.push_back(folded);
    order.push_back(up.get());
  }
  g.SetNodeOrder(order);
  g.RemoveNode(next);
  g.RemoveNode(from);
}

void RewriteBn(ir::Graph& g, BnFold& f) {
  const auto& in = f.bn->inputs();
  std::string base = f.node->name().empty() ? f.node->outputs()[0]->name() : f.node->name();
  auto updated = [&](Value* v, const std::vector<double>& values, const char* suffix) {
    if (*Floats(v) == values) return v;  // an Add leaves the scale as it is
    return g.AddConstant(FreshName(g, base + suffix), Store(v->data()->dtype(), v->data()->dims(), values));
  };
  Value* scale = updated(in[1], f.scale, ".scale");
  Value* bias = updated(in[2], f.bias, ".bias");
  Replace(g, f.bn, f.node, {in[0], scale, bias, in[3], in[4]}, f.what + " folded into scale and B");
}

void Rewrite(ir::Graph& g, Fold& f) {
  Node *conv = f.conv, *next = f.node;
  Value* w = conv->inputs()[1];
  Value* y = next->outputs()[0];
  ir::DType dtype = w->data()->dtype();
  int64_t m = w->data()->dims()[0];
  std::string base = (next->name().empty() ? y->name() : next->name());
  Value* w2 = g.AddConstant(FreshName(g, w->name() + ".folded"), Store(dtype, w->data()->dims(), f.w));
  Value* b2 = g.AddConstant(FreshName(g, base + ".bias"), Store(dtype, {m}, f.b));
  // The Conv is made anew (it may gain a bias input) and writes the folded node's output value.
  Replace(g, conv, next, {conv->inputs()[0], w2, b2}, f.what + " folded into W and B");
}

}  // namespace

int FoldBatchNorm(ir::Graph& g, ir::DType low) {
  int total = 0;
  std::map<Node*, std::string> refused;  // node not folded into its Conv -> why
  for (;;) {  // a Mul folded, the Add after it becomes foldable
    std::vector<Fold> folds;
    std::vector<BnFold> bn_folds;
    std::set<const Node*> taken;  // a BatchNormalization folding into its Conv this round
    for (const auto& up : g.nodes()) {
      std::string refusal;
      auto f = Match(g, up.get(), low, &refusal);
      if (!refusal.empty()) refused[up.get()->outputs()[0]->uses()[0].node] = refusal;
      if (f) {
        taken.insert(f->node);
        folds.push_back(std::move(*f));
      } else if (taken.count(up.get())) {
        continue;
      } else if (auto b = MatchBn(g, up.get())) {
        bn_folds.push_back(std::move(*b));
      }
    }
    if (folds.empty() && bn_folds.empty()) break;
    for (Fold& f : folds) Rewrite(g, f);
    for (BnFold& f : bn_folds) RewriteBn(g, f);
    total += int(folds.size() + bn_folds.size());
  }
  for (auto& [node, why] : refused) AddEvidence(node, why);
  return total;
}

}  // namespace precis::passes
