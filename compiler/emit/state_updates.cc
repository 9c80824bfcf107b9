// StateUpdatesInPlace (see state_updates.h).
#include "compiler/emit/state_updates.h"

#include <algorithm>

#include "compiler/emit/data_dims.h"
#include "compiler/ops/control_flow.h"
#include "compiler/ops/fused.h"

namespace precis::emit {
namespace {

std::string Find(const std::map<std::string, std::string>& m, const std::string& key) {
  auto it = m.find(key);
  return it == m.end() ? std::string() : it->second;
}

bool SameStaticType(const ir::Value& a, const ir::Value& b) {
  std::vector<ir::DimExpr> sa, sb;
  auto da = ShapeOf(a, sa), db = ShapeOf(b, sb);
  return da.ok() && db.ok() && sa.empty() && sb.empty() && *da == *db && a.type().dtype() == b.type().dtype();
}

// A fused step whose generated CPU code has a body for outputs written over other inputs.
bool AliasedBody(const ir::Node& n, const EmitOptions& options) {
  const ir::Attribute* entry = n.FindAttribute("entry");
  return options.target == "cpu" && entry && entry->kind == ir::Attribute::Kind::kString && options.aliased_entries.count(entry->s);
}

}  // namespace

std::vector<InPlaceUpdate> StateUpdatesInPlace(const ProgramSource& src, const std::set<const ir::Node*>& needed,
                                               const std::vector<const ir::Value*>& outputs, const EmitOptions& options) {
  const ir::Graph& g = *src.graph;
  auto listed = [&](const ir::Value* v) { return std::find(outputs.begin(), outputs.end(), v) != outputs.end(); };
  std::vector<InPlaceUpdate> result;
  for (const auto& [from, state] : src.state_updates) {
    const ir::Value* v = g.FindLocal(from);
    const ir::Value* old = g.FindLocal(state);
    if (!v || !old || v == old || src.state_updates.count(state) || v->kind() != ir::Value::Kind::kNodeOutput) continue;
    const ir::Node* n = v->producer();
    if (!n || n->owner() != &g || !needed.count(n) || !ops::ControlFlowBodies(*n).empty() || listed(v) || listed(old)) continue;
    bool is_state = options.state.count(state) && (old->is_constant() || (old->kind() == ir::Value::Kind::kInput && old->data()));
    if (!is_state || Find(src.predicates, n->name()) != Find(src.update_predicates, state) || !SameStaticType(*v, *old)) continue;
    bool ok = true;
    for (const ir::Use& u : old->uses()) {
      const ir::Node* r = u.node;
      if (r->owner() != &g) ok = false;  // read in a body
      else if (!needed.count(r) || r->index() < n->index()) continue;
      else if (r != n || !AliasedBody(*n, options) || !ops::FusedInPlaceOk(*n, u.input_index, v->output_index())) ok = false;
      if (!ok) break;
    }
    if (ok) result.push_back({v, old});
  }
  return result;
}

void PredicateUpdateSources(ProgramSource& src, const std::string& predicate) {
  std::set<std::string> kept(src.outputs.begin(), src.outputs.end());
  kept.insert(predicate);
  for (const ir::Value* v : src.graph->outputs()) kept.insert(v->name());
  std::set<const ir::Node*> chosen;
  const auto& nodes = src.graph->nodes();
  for (size_t i = nodes.size(); i-- > 0;) {  // consumers before producers
    const ir::Node* n = nodes[i].get();
    bool ok = !n->outputs().empty() && !n->name().empty(), feeds = false;
    for (const ir::Attribute& a : n->attributes()) ok = ok && a.graphs.empty();
    for (const ir::Value* o : n->outputs()) {
      if (!ok || !o) continue;
      if (kept.count(o->name())) ok = false;
      if (auto u = src.state_updates.find(o->name()); u != src.state_updates.end()) {
        ok = ok && Find(src.update_predicates, u->second) == predicate;
        feeds = true;
      }
      for (const ir::Use& use : o->uses()) {
        ok = ok && chosen.count(use.node) > 0;
        feeds = true;
      }
    }
    if (ok && feeds) chosen.insert(n);
  }
  for (const ir::Node* n : chosen) src.predicates[n->name()] = predicate;
}

}  // namespace precis::emit
