// FoldBatchNorm (see fold_batchnorm.h).
#include "passes/fold_batchnorm.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>

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
  Node* bn;
  std::vector<double> w, b;  // folded
};

std::optional<Fold> Match(const ir::Graph& g, Node* bn) {
  if (!Is(bn, "BatchNormalization") || bn->inputs().size() != 5 || bn->outputs().empty() || !bn->outputs()[0]) return std::nullopt;
  for (size_t i = 1; i < bn->outputs().size(); ++i)
    if (bn->outputs()[i]) return std::nullopt;  // training outputs
  const ir::Attribute* mode = bn->FindAttribute("training_mode");
  if (mode && mode->i != 0) return std::nullopt;
  const ir::Attribute* spatial = bn->FindAttribute("spatial");
  if (spatial && spatial->i != 1) return std::nullopt;
  const ir::Attribute* eps_attr = bn->FindAttribute("epsilon");
  double eps = eps_attr ? eps_attr->f : 1e-5;

  Value* x = bn->inputs()[0];
  Node* conv = match::Producer(x);
  if (!Is(conv, "Conv") || conv->outputs().size() != 1 || conv->inputs().size() < 2 || x->uses().size() != 1 || IsGraphOutput(g, x) ||
      conv->FindAttribute("activation"))
    return std::nullopt;
  Value* wv = conv->inputs()[1];
  Value* bv = conv->inputs().size() > 2 ? conv->inputs()[2] : nullptr;
  auto wd = StaticDims(wv);
  auto w = Floats(wv);
  if (!wd || wd->size() < 3 || !w || w->empty()) return std::nullopt;
  int64_t m = (*wd)[0];
  std::optional<std::vector<double>> b = bv ? Floats(bv) : std::vector<double>(size_t(m), 0.0);
  if (!b || int64_t(b->size()) != m || (bv && bv->data()->dtype() != wv->data()->dtype())) return std::nullopt;
  std::vector<double> stats[4];
  for (int i = 0; i < 4; ++i) {
    auto f = Floats(bn->inputs()[size_t(i + 1)]);
    if (!f || int64_t(f->size()) != m) return std::nullopt;
    stats[i] = *f;
  }
  if (!x->type().is_tensor() || x->type().dtype() != wv->data()->dtype() || bn->outputs()[0]->type().dtype() != x->type().dtype())
    return std::nullopt;

  const std::vector<double>&scale = stats[0], &bias = stats[1], &mean = stats[2], &var = stats[3];
  Fold f{conv, bn, *w, *b};
  size_t per = w->size() / size_t(m);
  for (size_t k = 0; k < size_t(m); ++k) {
    double s = scale[k] / std::sqrt(var[k] + eps);
    for (size_t i = k * per; i < (k + 1) * per; ++i) f.w[i] *= s;
    f.b[k] = (f.b[k] - mean[k]) * s + bias[k];
  }
  for (const auto* v : {&f.w, &f.b})
    for (double d : *v)
      if (!std::isfinite(d) || std::fabs(d) > kFoldLimit) return std::nullopt;
  return f;
}

}  // namespace

int FoldBatchNorm(ir::Graph& g) {
  std::vector<Fold> folds;
  for (const auto& up : g.nodes())
    if (auto f = Match(g, up.get())) folds.push_back(std::move(*f));
  for (Fold& f : folds) {
    Node *conv = f.conv, *bn = f.bn;
    Value* w = conv->inputs()[1];
    Value* y = bn->outputs()[0];
    ir::DType dtype = w->data()->dtype();
    int64_t m = w->data()->dims()[0];
    Value* w2 = g.AddConstant(FreshName(g, w->name() + ".bn"), Store(dtype, w->data()->dims(), f.w));
    Value* b2 = g.AddConstant(FreshName(g, bn->name().empty() ? y->name() + ".bias" : bn->name() + ".bias"), Store(dtype, {m}, f.b));
    // The Conv is made anew (it may gain a bias input) and writes BN's output value.
    Value* spare = g.NewValue(FreshName(g, y->name() + ".unfolded"));
    spare->set_type(y->type());
    g.SetNodeOutput(bn, 0, spare);
    std::vector<Value*> inputs = {conv->inputs()[0], w2, b2};
    Node* folded = g.AddNode(conv->domain(), "Conv", conv->name(), inputs, {y}, std::move(conv->mutable_attributes()));
    AddEvidence(folded, "BatchNormalization '" + bn->name() + "' folded into W and B");
    std::vector<Node*> order;
    for (const auto& up : g.nodes()) {
      if (up.get() == folded) continue;
      if (up.get() == bn) order.push_back(folded);
      order.push_back(up.get());
    }
    g.SetNodeOrder(order);
    g.RemoveNode(bn);
    g.RemoveNode(conv);
  }
  return int(folds.size());
}

}  // namespace precis::passes
