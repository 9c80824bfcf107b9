// BuildPrecisionReport (see precision_report.h). A node's precision is the dtype of its first
// float input (the dtype its kernel reads), or of its first float output when it reads none.
#include "compiler/emit/precision_report.h"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <map>
#include <numeric>
#include <set>
#include <sstream>
#include <unordered_map>

#include "compiler/emit/widening.h"
#include "compiler/ir/json_writer.h"
#include "compiler/ir/text.h"
#include "compiler/ops/op_registry.h"

namespace precis::emit {
namespace {


// A dim's size for FLOP counts: a symbolic dim (a dynamic plan's) with every symbol 1, so that
// FLOPs of dynamic plans are counted per unit of each symbol; -1 when unknown.
int64_t DimSize(const ir::Dim& d) {
  if (d.is_static()) return d.value();
  auto e = ir::DimExpr::FromDim(d);
  if (!e) return -1;
  std::map<std::string, int64_t> ones;
  for (const std::string& s : e->Symbols()) ones[s] = 1;
  auto v = e->Evaluate(ones);
  return v && *v >= 0 ? *v : -1;
}

int64_t Numel(const ir::Value* v) {
  if (!v || !v->type().is_tensor() || !v->type().shape().has_rank()) return 0;
  int64_t n = 1;
  for (const ir::Dim& d : v->type().shape().dims()) n *= std::max<int64_t>(DimSize(d), 0);
  return n;
}

std::vector<int64_t> Dims(const ir::Value* v) {
  std::vector<int64_t> dims;
  if (v && v->type().is_tensor() && v->type().shape().has_rank())
    for (const ir::Dim& d : v->type().shape().dims()) dims.push_back(DimSize(d));
  return dims;
}

// The dtype a node computes in, or kUndefined for nodes without float tensors.
ir::DType RunDType(const ir::Node& n) {
  for (const ir::Value* v : n.inputs())
    if (v && v->type().is_tensor() && ir::IsFloat(v->type().dtype())) return v->type().dtype();
  for (const ir::Value* v : n.outputs())
    if (v && v->type().is_tensor() && ir::IsFloat(v->type().dtype())) return v->type().dtype();
  return ir::DType::kUndefined;
}

bool IsLow(ir::DType t) { return t == ir::DType::kF16 || t == ir::DType::kBF16; }

bool Computes(const ir::Node& n) {
  const ops::OpDef* def = ops::OpRegistry::Get().Find(n.domain(), n.op_type());
  using P = ops::PrecisionClass;
  return def && (def->precision == P::kCompute || def->precision == P::kFollow || def->precision == P::kKeepFp32);
}

std::string Num(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g", x);
  return buf;
}

std::string Mib(size_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f MiB", double(bytes) / (1024.0 * 1024.0));
  return buf;
}

void WriteValues(ir::JsonWriter& w, const std::vector<ir::Value*>& values) {
  w.BeginArray();
  for (const ir::Value* v : values) {
    if (!v) continue;
    w.BeginObject().Key("name").String(v->name());
    w.Key("dtype").String(v->type().is_tensor() ? ir::DTypeName(v->type().dtype()) : "unknown");
    w.Key("constant").Bool(v->is_constant());
    w.Key("shape").BeginArray();
    for (int64_t d : Dims(v)) w.Int(d);
    w.EndArray().EndObject();
  }
  w.EndArray();
}

struct Island {
  std::vector<const ir::Node*> nodes;
  std::map<std::string, int> reasons;
};

// Connected groups of computing nodes that run in FP32 in a plan that is otherwise low.
std::vector<Island> FindIslands(const ir::Graph& g) {
  std::unordered_map<const ir::Node*, int> parent;
  std::vector<const ir::Node*> members;
  for (const auto& n : g.nodes())
    if (Computes(*n) && RunDType(*n) == ir::DType::kF32 && n->precision().reason != "no-fp32-tensors") {
      parent[n.get()] = int(members.size());
      members.push_back(n.get());
    }
  std::vector<int> root(members.size());
  std::iota(root.begin(), root.end(), 0);
  std::function<int(int)> find = [&](int i) { return root[size_t(i)] == i ? i : root[size_t(i)] = find(root[size_t(i)]); };
  for (const ir::Node* n : members)
    for (const ir::Value* v : n->inputs())
      if (v && v->kind() == ir::Value::Kind::kNodeOutput && parent.count(v->producer()))
        root[size_t(find(parent[n]))] = find(parent[v->producer()]);
  std::map<int, Island> by_root;
  for (size_t i = 0; i < members.size(); ++i) {
    Island& is = by_root[find(int(i))];
    is.nodes.push_back(members[i]);
    ++is.reasons[members[i]->precision().reason];
  }
  std::vector<Island> out;
  for (auto& [r, is] : by_root) out.push_back(std::move(is));
  return out;
}

std::string NodeName(const ir::Node* n) { return n->name().empty() ? n->op_type() + "#" + std::to_string(n->index()) : n->name(); }

// Every node the plan runs: the graph's, then those of each If/Loop/Scan body, with the body's
// path ("loop1/body", "loop1/body/if2/then_branch"; empty for the main graph).
void CollectNodes(const ir::Graph& g, const std::string& path, std::vector<std::pair<const ir::Node*, std::string>>& out) {
  for (const auto& n : g.nodes()) out.emplace_back(n.get(), path);
  for (const auto& n : g.nodes())
    for (const auto& a : n->attributes())
      for (const auto& sub : a.graphs) CollectNodes(*sub, (path.empty() ? "" : path + "/") + NodeName(n.get()) + "/" + a.name, out);
}

}  // namespace

std::vector<LowRegion> FindLowRegions(const ir::Graph& g) {
  std::unordered_map<const ir::Node*, int> index;
  std::vector<const ir::Node*> members;
  for (const auto& n : g.nodes())
    if (Computes(*n) && IsLow(RunDType(*n))) {
      index[n.get()] = int(members.size());
      members.push_back(n.get());
    }
  // Passthrough nodes between low nodes join them (a Reshape inside an MLP block).
  auto in_region = [&](const ir::Node* n) { return index.count(n) != 0; };
  std::vector<int> root(members.size());
  std::iota(root.begin(), root.end(), 0);
  std::function<int(int)> find = [&](int i) { return root[size_t(i)] == i ? i : root[size_t(i)] = find(root[size_t(i)]); };
  // Walk producers through non-computing, non-cast nodes to the nearest low node.
  std::function<const ir::Node*(const ir::Value*, int)> low_source = [&](const ir::Value* v, int depth) -> const ir::Node* {
    if (!v || v->kind() != ir::Value::Kind::kNodeOutput || depth > 8) return nullptr;
    const ir::Node* p = v->producer();
    if (in_region(p)) return p;
    if (Computes(*p) || p->op_type() == "Cast" || p->inputs().empty()) return nullptr;
    return low_source(p->inputs()[0], depth + 1);
  };
  for (const ir::Node* n : members)
    for (const ir::Value* v : n->inputs())
      if (const ir::Node* p = low_source(v, 0)) root[size_t(find(index[n]))] = find(index[p]);
  std::map<int, std::vector<const ir::Node*>> groups;
  for (size_t i = 0; i < members.size(); ++i) groups[find(int(i))].push_back(members[i]);
  std::vector<LowRegion> out;
  for (auto& [r, nodes] : groups) {
    LowRegion region;
    std::unordered_map<const ir::Node*, bool> mine;
    for (const ir::Node* n : nodes) mine[n] = true;
    std::set<std::string> ins, outs;
    for (const ir::Node* n : nodes) {
      region.nodes.push_back(NodeName(n));
      for (const ir::Value* v : n->inputs()) {
        if (!v || v->is_constant() || (v->kind() == ir::Value::Kind::kNodeOutput && mine.count(v->producer()))) continue;
        const ir::Value* src = v;
        while (src->kind() == ir::Value::Kind::kNodeOutput && (src->producer()->op_type() == "Cast" || !Computes(*src->producer())) &&
               !src->producer()->inputs().empty() && src->producer()->inputs()[0] && !mine.count(src->producer()))
          src = src->producer()->inputs()[0];
        // A walk that ends inside the region (Relu -> Flatten -> Gemm) found no input.
        if (src->kind() == ir::Value::Kind::kNodeOutput && mine.count(src->producer())) continue;
        if (!src->is_constant()) ins.insert(src->name());
      }
      for (const ir::Value* v : n->outputs()) {
        if (!v) continue;
        bool leaves = std::find(g.outputs().begin(), g.outputs().end(), v) != g.outputs().end();
        for (const ir::Use& u : v->uses()) leaves |= !mine.count(u.node);
        if (leaves) outs.insert(v->name());
      }
    }
    region.inputs.assign(ins.begin(), ins.end());
    region.outputs.assign(outs.begin(), outs.end());
    out.push_back(std::move(region));
  }
  return out;
}

double NodeFlops(const ir::Node& n) {
  const std::string& op = n.op_type();
  const ir::Value* y = n.outputs().empty() ? nullptr : n.outputs()[0];
  auto in = [&](size_t i) { return i < n.inputs().size() ? n.inputs()[i] : nullptr; };
  if (!n.domain().empty() || !y) return 0;
  if (op == "MatMul") {
    std::vector<int64_t> a = Dims(in(0));
    return a.empty() ? 0 : 2.0 * double(Numel(y)) * double(a.back());
  }
  if (op == "Gemm") {
    std::vector<int64_t> a = Dims(in(0));
    const ir::Attribute* t = n.FindAttribute("transA");
    if (a.size() != 2) return 0;
    return 2.0 * double(Numel(y)) * double(t && t->i ? a[0] : a[1]);
  }
  if (op == "Conv") {
    std::vector<int64_t> w = Dims(in(1));
    return w.empty() || w[0] <= 0 ? 0 : 2.0 * double(Numel(y)) * double(Numel(in(1)) / w[0]);
  }
  if (op == "ConvTranspose") {
    std::vector<int64_t> w = Dims(in(1));
    return w.empty() || w[0] <= 0 ? 0 : 2.0 * double(Numel(in(0))) * double(Numel(in(1)) / w[0]);
  }
  if (op == "RNN" || op == "GRU" || op == "LSTM") {
    // Per step, direction and batch entry: W [G*H, I] . x and R [G*H, H] . h.
    std::vector<int64_t> x = Dims(in(0));
    if (x.size() != 3 || Numel(in(1)) <= 0 || Numel(in(2)) <= 0) return 0;
    return 2.0 * double(x[0]) * double(x[1]) * double(Numel(in(1)) + Numel(in(2)));
  }
  return Computes(n) && ir::IsFloat(y->type().is_tensor() ? y->type().dtype() : ir::DType::kUndefined) ? double(Numel(y)) : 0;
}

size_t ConstantBytes(const ir::Graph& g) {
  size_t total = 0;
  for (const ir::Value* c : g.constants())
    if (!c->uses().empty() || std::find(g.outputs().begin(), g.outputs().end(), c) != g.outputs().end())
      total += size_t(std::max<int64_t>(0, c->data() ? c->data()->ByteSize() : 0));
  return total;
}

Report BuildPrecisionReport(const ir::Graph& g, const ReportInputs& in) {
  Report r;
  double flops = 0, low_flops = 0;
  int low_nodes = 0, fp32_nodes = 0;
  std::vector<Widening> widening;  // per node, in order
  std::vector<std::pair<const ir::Node*, std::string>> nodes;
  CollectNodes(g, "", nodes);
  for (const auto& [n, path] : nodes) {
    double f = NodeFlops(*n);
    ir::DType d = RunDType(*n);
    flops += f;
    if (IsLow(d)) low_flops += f;
    const Widening& wd = widening.emplace_back(WideningOf(*n));
    r.widened_cpu += wd.cpu.widened;
    r.widened_cuda += wd.cuda.widened;
    if (n->op_type() == "Cast") ++r.casts;
    else if (IsLow(d)) ++low_nodes;
    else if (d == ir::DType::kF32) ++fp32_nodes;
  }
  r.low_precision_flop_share = flops > 0 ? low_flops / flops : 0;
  std::vector<Island> islands = in.precision == "fp32" ? std::vector<Island>{} : FindIslands(g);
  r.fp32_islands = int(islands.size());

  ir::JsonWriter w;
  w.BeginObject().Key("precision").String(in.precision).Key("model").String(in.model);
  w.Key("nodes").BeginArray();
  size_t node_index = 0;
  for (const auto& [n, path] : nodes) {
    const ir::PrecisionRecord& p = n->precision();
    ir::DType d = RunDType(*n);
    w.BeginObject().Key("name").String(n->name()).Key("op").String(n->op_type());
    if (!path.empty()) w.Key("body").String(path);
    w.Key("precision").String(d == ir::DType::kUndefined ? "none" : std::string(ir::DTypeName(d)));
    w.Key("inputs");
    WriteValues(w, n->inputs());
    w.Key("outputs");
    WriteValues(w, n->outputs());
    w.Key("accumulate");
    if (p.accumulate == ir::DType::kUndefined) w.Null();
    else w.String(ir::DTypeName(p.accumulate));
    w.Key("reason").String(p.reason).Key("evidence").String(p.evidence).Key("flops").Double(NodeFlops(*n));
    if (in.training.present)
      if (auto it = in.training.phases.find(n); it != in.training.phases.end()) w.Key("phase").String(it->second);
    // Where the backends run the step widened (their capability tables): one entry per backend.
    const Widening& wd = widening[node_index++];
    w.Key("widened").BeginArray();
    for (const auto& [backend, b] : {std::pair<const char*, const BackendWidening*>{"cpu", &wd.cpu}, {"cuda", &wd.cuda}})
      if (b->widened)
        w.BeginObject().Key("backend").String(backend).Key("reason").String(ir::ReasonName(b->reason)).Key("evidence").String(b->evidence).EndObject();
    w.EndArray();
    w.EndObject();
  }
  w.EndArray();
  w.Key("summary").BeginObject();
  w.Key("nodes").Int(int64_t(nodes.size())).Key("low_precision_nodes").Int(low_nodes).Key("fp32_nodes").Int(fp32_nodes);
  w.Key("flops").Double(flops).Key("low_precision_flops").Double(low_flops).Key("low_precision_flop_share").Double(r.low_precision_flop_share);
  w.Key("weight_bytes").BeginObject().Key("plan").Int(int64_t(in.weight_bytes)).Key("fp32").Int(int64_t(in.fp32_weight_bytes)).EndObject();
  w.Key("activation_bytes").BeginObject().Key("plan").Int(int64_t(in.activation_bytes)).Key("fp32").Int(int64_t(in.fp32_activation_bytes)).EndObject();
  w.Key("casts").Int(r.casts).Key("casts_inserted").Int(in.casts_inserted).Key("constants_converted").Int(in.constants_converted);
  w.Key("widened_steps").BeginObject().Key("cpu").Int(r.widened_cpu).Key("cuda").Int(r.widened_cuda).EndObject();
  w.Key("fp32_islands").BeginArray();
  for (const Island& is : islands) {
    w.BeginObject().Key("nodes").BeginArray();
    for (const ir::Node* n : is.nodes) w.String(n->name().empty() ? n->op_type() + "#" + std::to_string(n->index()) : n->name());
    w.EndArray().Key("reasons").BeginObject();
    for (const auto& [reason, count] : is.reasons) w.Key(reason).Int(count);
    w.EndObject().EndObject();
  }
  w.EndArray();
  if (in.training.present) {
    const TrainingReportInputs& tr = in.training;
    std::map<std::string, int> count;
    for (const auto& [node, phase] : tr.phases) ++count[phase];
    w.Key("training").BeginObject().Key("loss_scaling").String(tr.loss_scaling);
    w.Key("phase_nodes").BeginObject();
    for (const auto& [phase, c] : count) w.Key(phase).Int(c);
    w.EndObject();
    w.Key("master_weight_bytes").Int(int64_t(tr.master_weight_bytes)).Key("working_weight_bytes").Int(int64_t(tr.working_weight_bytes));
    w.Key("stored_working_copies").Int(tr.stored_working_copies);
    w.Key("gradient_bytes").BeginObject().Key("plan").Int(int64_t(tr.gradient_bytes)).Key("fp32").Int(int64_t(tr.fp32_gradient_bytes)).EndObject();
    w.EndObject();
  }
  w.EndObject();
  if (!in.calibration_source.empty()) {
    w.Key("calibration").BeginObject().Key("source").String(in.calibration_source).Key("samples").Int(in.calibration_samples);
    w.Key("overflow_limit").Double(in.overflow_limit).Key("ranges").BeginArray();
    for (const auto& [name, max_abs] : in.ranges) w.BeginObject().Key("name").String(name).Key("max_abs").Double(max_abs).EndObject();
    w.EndArray().EndObject();
  }
  w.EndObject();
  r.json = w.str() + "\n";

  std::ostringstream t;
  t << "precision report: " << in.model << " (" << in.precision << ")\n";
  t << "  nodes            " << nodes.size() << " (" << low_nodes << " low, " << fp32_nodes << " fp32, " << r.casts << " casts)\n";
  t << "  low-precision FLOPs " << Num(100.0 * r.low_precision_flop_share) << "% of " << Num(flops) << "\n";
  t << "  weights          " << Mib(in.weight_bytes) << " (fp32 plan " << Mib(in.fp32_weight_bytes) << ")\n";
  t << "  activations      " << Mib(in.activation_bytes) << " (fp32 plan " << Mib(in.fp32_activation_bytes) << ")\n";
  t << "  casts inserted   " << in.casts_inserted << ", constants converted " << in.constants_converted << "\n";
  if (in.training.present) {
    const TrainingReportInputs& tr = in.training;
    t << "  training         loss scaling " << tr.loss_scaling << "\n";
    t << "  master weights   " << Mib(tr.master_weight_bytes) << " FP32, working copies " << Mib(tr.working_weight_bytes);
    if (tr.stored_working_copies) t << " (" << tr.stored_working_copies << " kept as state, rewritten by the optimizer step)";
    t << "\n";
    t << "  gradients        " << Mib(tr.gradient_bytes) << " written by backward nodes (fp32 plan " << Mib(tr.fp32_gradient_bytes) << ")\n";
  }
  t << "  fp32 islands     " << islands.size() << "\n";
  t << "  widened steps    cpu " << r.widened_cpu << ", cuda " << r.widened_cuda << " (16-bit storage, FP32 kernel; report nodes' \"widened\")\n";
  for (const Island& is : islands) {
    t << "    " << is.nodes.size() << " node(s) from '" << (is.nodes.front()->name().empty() ? is.nodes.front()->op_type() : is.nodes.front()->name()) << "':";
    for (const auto& [reason, count] : is.reasons) t << " " << reason << " x" << count;
    t << "\n";
  }
  if (!in.calibration_source.empty())
    t << "  calibration      " << in.calibration_source << ", " << in.calibration_samples << " sample(s), " << in.ranges.size()
      << " ranges, overflow limit " << Num(in.overflow_limit) << "\n";
  t << "  nodes:\n";
  for (const auto& [n, path] : nodes) {
    ir::DType d = RunDType(*n);
    const ir::PrecisionRecord& p = n->precision();
    t << "    " << (path.empty() ? "" : path + ": ") << NodeName(n) << "  " << n->op_type() << "  "
      << (d == ir::DType::kUndefined ? "-" : std::string(ir::DTypeName(d))) << "  " << (p.reason.empty() ? "-" : p.reason);
    if (!p.evidence.empty()) t << "  (" << p.evidence << ")";
    if (in.training.present)
      if (auto it = in.training.phases.find(n); it != in.training.phases.end()) t << "  [" << it->second << "]";
    t << "\n";
  }
  r.text = t.str();
  return r;
}

}  // namespace precis::emit
