// FuseCasts (see fuse_casts.h): collect the fusable casts, then retype each producer's output
// and let it take over the cast's uses.
#include "passes/fuse_casts.h"

#include <algorithm>

#include "compiler/ops/op_registry.h"

namespace precis::passes {
namespace {

bool IsFloat16or32(const ir::Value* v) {
  if (!v || !v->type().is_tensor()) return false;
  ir::DType t = v->type().dtype();
  return t == ir::DType::kF32 || t == ir::DType::kF16 || t == ir::DType::kBF16;
}

bool Computes(const ir::Node& n) {
  const ops::OpDef* def = ops::OpRegistry::Get().Find(n.domain(), n.op_type());
  if (!def) return false;
  for (const auto& a : n.attributes())
    if (!a.graphs.empty()) return false;
  using P = ops::PrecisionClass;
  return def->precision == P::kCompute || def->precision == P::kFollow || def->precision == P::kKeepFp32;
}

}  // namespace

bool FuseCasts(ir::Graph& graph) {
  auto is_output = [&](const ir::Value* v) {
    return std::find(graph.outputs().begin(), graph.outputs().end(), v) != graph.outputs().end();
  };
  std::vector<ir::Node*> casts;
  for (const auto& up : graph.nodes()) {
    ir::Node* c = up.get();
    if (!c->domain().empty() || c->op_type() != "Cast" || c->inputs().size() != 1 || c->outputs().size() != 1) continue;
    ir::Value *y = c->inputs()[0], *z = c->outputs()[0];
    if (!IsFloat16or32(y) || !IsFloat16or32(z) || is_output(y) || is_output(z)) continue;
    if (y->kind() != ir::Value::Kind::kNodeOutput || y->uses().size() != 1) continue;
    const ir::Node* p = y->producer();
    if (p->owner() != &graph || !Computes(*p)) continue;
    casts.push_back(c);
  }
  for (ir::Node* c : casts) {
    ir::Value *y = c->inputs()[0], *z = c->outputs()[0];
    ir::Node* p = y->producer();
    y->set_type(z->type());
    graph.ReplaceAllUses(z, y);
    graph.RemoveNode(c);
    auto& rec = p->mutable_precision();
    rec.evidence += std::string(rec.evidence.empty() ? "" : "; ") + "writes " + std::string(ir::DTypeName(y->type().dtype())) +
                    " directly (cast fused)";
  }
  return !casts.empty();
}

}  // namespace precis::passes
