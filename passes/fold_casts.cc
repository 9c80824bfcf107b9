// FoldCasts (see fold_casts.h). Collect the rewrites first, then apply them, then drop dead casts.
#include "passes/fold_casts.h"

#include <algorithm>

#include "passes/dead_code.h"

namespace precis::passes {
namespace {

using ir::DType;

bool IsCast(const ir::Node* n) { return n && n->domain().empty() && n->op_type() == "Cast" && n->inputs().size() == 1 && n->inputs()[0]; }

int IntBits(DType t) {
  switch (t) {
    case DType::kI8: case DType::kU8: return 8;
    case DType::kI16: case DType::kU16: return 16;
    case DType::kI32: case DType::kU32: return 32;
    case DType::kI64: case DType::kU64: return 64;
    default: return 0;
  }
}
bool IsSigned(DType t) { return t == DType::kI8 || t == DType::kI16 || t == DType::kI32 || t == DType::kI64; }

DType DTypeOf(const ir::Value* v) { return v->type().is_tensor() ? v->type().dtype() : DType::kUndefined; }

}  // namespace

bool IsExactConversion(DType from, DType to) {
  if (from == to) return true;
  if (from == DType::kUndefined || to == DType::kUndefined || from == DType::kString || to == DType::kString) return false;
  if (from == DType::kBool) return true;
  if (from == DType::kF16 || from == DType::kBF16) return to == DType::kF32 || to == DType::kF64;
  if (from == DType::kF32) return to == DType::kF64;
  int fb = IntBits(from), tb = IntBits(to);
  if (!fb || !tb) return false;  // integer -> float is not always exact; float -> integer never
  if (IsSigned(from) == IsSigned(to)) return tb >= fb;
  return !IsSigned(from) && tb > fb;  // unsigned -> wider signed
}

bool FoldCasts(ir::Graph& graph) {
  auto is_output = [&](const ir::Value* v) {
    return std::find(graph.outputs().begin(), graph.outputs().end(), v) != graph.outputs().end();
  };
  struct Rewrite { ir::Node* cast; ir::Value* source; bool identity; };
  std::vector<Rewrite> rewrites;
  for (const auto& up : graph.nodes()) {
    ir::Node* n = up.get();
    if (!IsCast(n) || !n->outputs()[0]) continue;
    ir::Value* x = n->inputs()[0];
    DType to = DTypeOf(n->outputs()[0]);
    if (DTypeOf(x) == to) {
      rewrites.push_back({n, x, true});  // Cast(x: T -> T) -> x
      continue;
    }
    ir::Node* inner = x->kind() == ir::Value::Kind::kNodeOutput ? x->producer() : nullptr;
    if (!IsCast(inner) || inner->owner() != &graph) continue;
    ir::Value* src = inner->inputs()[0];
    if (!IsExactConversion(DTypeOf(src), DTypeOf(x))) continue;  // the first step rounds: keep it
    rewrites.push_back({n, src, DTypeOf(src) == to});  // round trip -> x; chain -> one cast
  }
  for (const Rewrite& r : rewrites) {
    ir::Value* out = r.cast->outputs()[0];
    if (r.identity && !is_output(out)) graph.ReplaceAllUses(out, r.source);
    else graph.SetNodeInput(r.cast, 0, r.source);
  }
  bool changed = !rewrites.empty();
  changed |= RemoveDeadCode(graph);
  return changed;
}

}  // namespace precis::passes
