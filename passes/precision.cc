// AssignPrecision (see precision.h): classify, paint backwards then forwards, decide compute
// outputs, then rewrite the graph (retype outputs, convert constants, insert casts, reorder).
#include "passes/precision.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <regex>
#include <unordered_map>
#include <unordered_set>

#include "compiler/ir/precision_reason.h"
#include "compiler/ops/op_registry.h"
#include "passes/low_range.h"
#include "passes/match.h"
#include "runtime/base/half_array.h"

namespace precis::passes {
namespace {

using ops::PrecisionClass;

enum class Run { kUndecided, kLow, kF32 };

struct NodeState {
  PrecisionClass cls = PrecisionClass::kUntouched;
  int low_inputs = -1, low_outputs = -1;
  Run run = Run::kUndecided;
  bool out_f32 = false;   // a low compute node that writes FP32 directly
  bool has_fp32 = false;  // the node reads or writes an FP32 tensor
  std::optional<ir::Reason> reason;
  std::string evidence;
  std::optional<ir::Reason> pattern;    // the recognized operation this node belongs to, if any
};

bool IsFp32(const ir::Value* v) { return v && v->type().is_tensor() && v->type().dtype() == ir::DType::kF32; }

std::string Short(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g", x);
  return buf;
}

// A rule's evidence, then what earlier passes recorded on the node (a fold refused, a pattern).
std::string Joined(const std::string& evidence, const std::string& earlier) {
  return earlier.empty() || evidence == earlier ? evidence : evidence + "; " + earlier;
}

std::vector<ir::Attribute> CastTo(ir::DType dtype) {
  std::vector<ir::Attribute> attrs;
  attrs.push_back(match::IntAttr("to", ir::DTypeToOnnx(dtype)));
  return attrs;
}

// Pattern reasons set by RecognizePatterns and the class they impose on the nodes they mark.
std::optional<PrecisionClass> PatternClass(std::optional<ir::Reason> reason) {
  using ir::Reason;
  if (reason == Reason::kLayerNormPattern || reason == Reason::kRmsNormPattern || reason == Reason::kCrossEntropyPattern ||
      reason == Reason::kSqueezeExcitePattern)
    return PrecisionClass::kKeepFp32;
  if (reason == Reason::kGeluPattern) return PrecisionClass::kFollow;
  return std::nullopt;
}

class Painter {
 public:
  Painter(ir::Graph& g, const PrecisionOptions& o) : g_(g), o_(o) {}

  StatusOr<PrecisionStats> Run() {
    PRECIS_RETURN_IF_ERROR(Classify());
    PaintBackward();
    DecideComputeOutputs();
    PaintForward();
    return Rewrite();
  }

 private:
  NodeState& S(const ir::Node* n) { return state_[n]; }

  bool InputTakesLow(const NodeState& s, size_t i) const { return s.low_inputs < 0 || int(i) < s.low_inputs; }
  // Outputs past the op's low_outputs keep their FP32 type whatever the node runs in.
  bool OutputTakesLow(const NodeState& s, size_t i) const { return s.low_outputs < 0 || int(i) < s.low_outputs; }

  bool KeepOriginal(const ir::Value* v) const {
    if (o_.keep_io_types && graph_outputs_.count(v)) return true;
    for (const ir::Use& u : v->uses())
      if (u.node->owner() != &g_) return true;  // read inside a subgraph, typed FP32 there
    return false;
  }

  // Without keep_io_types, FP32 model inputs are taken in 16 bits (unless a subgraph reads them).
  bool LowInput(const ir::Value* v) const {
    if (o_.keep_io_types || !IsFp32(v) || v->kind() != ir::Value::Kind::kInput) return false;
    for (const ir::Use& u : v->uses())
      if (u.node->owner() != &g_) return false;
    return true;
  }

  // Keep-fp32 nodes that read whatever dtype arrives and accumulate in FP32: the caller's, and the
  // pool of a squeeze-excitation gate (it averages the 16-bit feature map).
  bool ReadsLow(const ir::Node* n) const { return o_.read_low.count(n) || se_pools_.count(n); }
  // An FP32 value a low node may read cast down: a squeeze-excitation gate ([N, C, 1, 1]).
  bool CastDownOk(const ir::Value* v) {
    if (o_.cast_down.count(v)) return true;
    return v->kind() == ir::Value::Kind::kNodeOutput && S(v->producer()).pattern == ir::Reason::kSqueezeExcitePattern;
  }

  // A consumer that must read FP32: a keep-fp32 op by policy, or a subgraph.
  bool StrictUse(const ir::Use& u) {
    if (u.node->owner() != &g_) return true;
    if (ReadsLow(u.node)) return false;
    const NodeState& c = S(u.node);
    return c.cls == PrecisionClass::kKeepFp32 && c.run == Run::kF32 && InputTakesLow(c, size_t(u.input_index));
  }
  bool NeedsF32(const ir::Use& u) {
    if (u.node->owner() != &g_) return true;
    if (ReadsLow(u.node)) return false;
    return S(u.node).run == Run::kF32;
  }

  Status Classify();
  void ConstantRange(const ir::Node* n, NodeState& s);
  void PaintBackward();
  void DecideComputeOutputs();
  void PaintForward();
  StatusOr<PrecisionStats> Rewrite();
  ir::Value* Converted(ir::Value* v, ir::DType dtype);
  std::string FreshName(const std::string& base);
  void AddCast(ir::Value* from, ir::Value* to, const char* evidence);
  void Reorder(const std::vector<ir::Node*>& original);

  ir::Graph& g_;
  const PrecisionOptions& o_;
  std::unordered_map<const ir::Node*, NodeState> state_;
  std::unordered_set<const ir::Value*> graph_outputs_;
  std::unordered_set<const ir::Node*> se_pools_;
  std::map<std::pair<const ir::Value*, ir::DType>, ir::Value*> cache_;
  std::unordered_map<const ir::Value*, ir::DType> original_dtype_;  // node outputs retyped so far
  PrecisionStats stats_;
};

Status Painter::Classify() {
  for (const ir::Value* v : g_.outputs()) graph_outputs_.insert(v);
  for (const std::string& op : o_.keep_fp32_ops)
    if (!ops::OpRegistry::Get().Find("", op)) return InvalidArgument("--keep-fp32: '" + op + "' is not an operator Precis knows");
  std::optional<std::regex> keep, force;
  try {
    if (!o_.keep_fp32_nodes.empty()) keep.emplace(o_.keep_fp32_nodes);
    if (!o_.force_low.empty()) force.emplace(o_.force_low);
  } catch (const std::regex_error& e) {
    return InvalidArgument(std::string("bad regular expression in --keep-fp32-nodes or --force-low: ") + e.what());
  }
  double limit = o_.overflow_limit > 0 ? o_.overflow_limit : MaxFinite(o_.low) / 2;
  for (const auto& up : g_.nodes()) {
    ir::Node* n = up.get();
    NodeState& s = S(n);
    for (const ir::Value* v : n->inputs()) s.has_fp32 |= IsFp32(v);
    for (const ir::Value* v : n->outputs()) s.has_fp32 |= IsFp32(v);
    const ops::OpDef* def = ops::OpRegistry::Get().Find(n->domain(), n->op_type());
    bool subgraph = false;
    for (const auto& a : n->attributes()) subgraph |= !a.graphs.empty();
    s.cls = def && !subgraph ? def->precision : PrecisionClass::kUnclassified;
    s.low_inputs = def ? def->low_inputs : -1;
    s.low_outputs = def ? def->low_outputs : -1;
    std::optional<ir::Reason> pattern = ir::ParseReason(n->precision().reason);
    if (auto c = PatternClass(pattern)) s.cls = *c;
    if (!s.has_fp32) {
      s.run = Run::kF32;
      s.reason = ir::Reason::kNoFp32Tensors;
      continue;
    }
    switch (s.cls) {
      case PrecisionClass::kCompute: s.run = Run::kLow, s.reason = ir::Reason::kComputeOp; break;
      case PrecisionClass::kKeepFp32: s.run = Run::kF32, s.reason = ir::Reason::kKeepFp32Policy; break;
      case PrecisionClass::kUntouched: s.run = Run::kF32, s.reason = ir::Reason::kUntouchedOp; break;
      case PrecisionClass::kUnclassified: s.run = Run::kF32, s.reason = ir::Reason::kUnsupportedLowPrecision; break;
      default: break;
    }
    if (PatternClass(pattern)) s.reason = pattern;
    s.pattern = PatternClass(pattern) ? pattern : std::nullopt;
    // Small float arithmetic over input values that shape inference follows (a Range's bounds,
    // a Loop's trip count): the session computes the sizes from it with FP32 rounding
    // (runtime/base/value_expr.h), so the steps must round the same way.
    for (const ir::Value* v : n->outputs())
      if (v && v->known_exprs() && IsFp32(v) && s.run != Run::kF32) {
        s.run = Run::kF32, s.reason = ir::Reason::kKeepFp32Policy;
        s.evidence = "'" + v->name() + "' is arithmetic on input values that may decide a size; sizes are computed from it in FP32";
      }
    if (pattern == ir::Reason::kSqueezeExcitePattern && (n->op_type() == "GlobalAveragePool" || n->op_type() == "ReduceMean"))
      se_pools_.insert(n);
    if (!n->precision().evidence.empty()) s.evidence = n->precision().evidence;
    // Calibration: a node reading or writing a tensor beyond the low format's range stays FP32,
    // and so does one whose tensor lies wholly below its smallest normal (a 16-bit copy would be
    // subnormal or zero: an FP16 network whose activations shrink to 1e-14 outputs zeros).
    double tiny = SmallestNormal(o_.low);
    for (const auto* list : {&n->inputs(), &n->outputs()})
      for (const ir::Value* v : *list) {
        if (!IsFp32(v) || s.cls == PrecisionClass::kUntouched) continue;
        auto it = o_.ranges.find(v->name());
        if (it == o_.ranges.end()) continue;
        if (it->second > limit) {
          s.run = Run::kF32;
          s.reason = ir::Reason::kRangeOverflow;
          s.evidence = Joined("max |" + v->name() + "| = " + Short(it->second) + " > " + Short(limit), n->precision().evidence);
        } else if (it->second > 0 && it->second < tiny && s.reason != ir::Reason::kRangeOverflow) {
          s.run = Run::kF32;
          s.reason = ir::Reason::kRangeUnderflow;
          s.evidence = Joined("max |" + v->name() + "| = " + Short(it->second) + " < " + Short(tiny) + ", " +
                                  std::string(ir::DTypeName(o_.low)) + "'s smallest normal",
                              n->precision().evidence);
        }
      }
    if (s.run != Run::kF32) ConstantRange(n, s);
    if (auto it = o_.over_budget.find(n->name()); it != o_.over_budget.end() && !n->name().empty())
      s.run = Run::kF32, s.reason = ir::Reason::kErrorBudget, s.evidence = it->second;
    bool kept = o_.keep_fp32_ops.count(n->op_type()) || (keep && std::regex_search(n->name(), *keep));
    bool forced = force && std::regex_search(n->name(), *force);
    if (kept && forced) return InvalidArgument(n->Describe() + ": both kept in FP32 and forced low by the overrides");
    if (kept) s.run = Run::kF32, s.reason = ir::Reason::kUserOverride, s.evidence = "kept in FP32 by --keep-fp32/--keep-fp32-nodes";
    if (forced) {
      if (s.cls == PrecisionClass::kUntouched || s.cls == PrecisionClass::kUnclassified)
        return InvalidArgument(n->Describe() + ": --force-low matches it, but a " + ops::PrecisionClassName(s.cls) +
                               " operator cannot run in 16 bits");
      s.run = Run::kLow, s.reason = ir::Reason::kUserOverride, s.evidence = "forced low by --force-low";
    }
    if (auto it = o_.pinned_fp32.find(n); it != o_.pinned_fp32.end()) s.run = Run::kF32, s.reason = it->second.first, s.evidence = it->second.second;
  }
  return Status::Ok();
}

// A constant that the node would read in 16 bits but whose values lie outside the format's
// normal range (weights ~1e-7 become subnormal in FP16; a value > 65504 becomes Inf) keeps the
// node in FP32, measured at compile time (low_range.h). Additive operands are exempt: a term
// below the smallest normal shifts a normal-range sum by less than its rounding.
void Painter::ConstantRange(const ir::Node* n, NodeState& s) {
  if (s.cls != PrecisionClass::kCompute && s.cls != PrecisionClass::kFollow && s.cls != PrecisionClass::kPassthrough) return;
  static const std::unordered_set<std::string> kAdditive = {"Add", "Sub", "Sum", "Max", "Min", "Clip"};
  if (n->domain().empty() && kAdditive.count(n->op_type())) return;
  for (size_t i = 0; i < n->inputs().size(); ++i) {
    const ir::Value* v = n->inputs()[i];
    if (!IsFp32(v) || !v->is_constant() || !v->data() || !v->data()->has_data() || !InputTakesLow(s, i)) continue;
    RoundingLoss loss = MeasureRounding(*v->data(), o_.low);
    if (!LosesRange(loss, o_.low)) continue;
    s.run = Run::kF32;
    s.reason = ir::Reason::kConstantRange;
    s.evidence = Joined(DescribeLoss("'" + v->name() + "'", loss, o_.low), n->precision().evidence);
    return;
  }
}

void Painter::PaintBackward() {
  for (size_t i = g_.nodes().size(); i-- > 0;) {
    const ir::Node* n = g_.nodes()[i].get();
    NodeState& s = S(n);
    if (s.run != Run::kUndecided) continue;
    bool any_use = false, all_need = true;
    const ir::Node* strict = nullptr;
    for (size_t o = 0; o < n->outputs().size(); ++o) {
      const ir::Value* v = n->outputs()[o];
      if (!IsFp32(v) || !OutputTakesLow(s, o)) continue;
      if (graph_outputs_.count(v)) {
        any_use = true;
        all_need &= o_.keep_io_types;
      }
      for (const ir::Use& u : v->uses()) {
        any_use = true;
        all_need &= NeedsF32(u);
        if (!strict && StrictUse(u)) strict = u.node;
      }
    }
    if (strict) {
      bool softmax = strict->op_type() == "Softmax" || strict->op_type() == "LogSoftmax";
      s.run = Run::kF32;
      s.reason = softmax ? ir::Reason::kSoftmaxInput : ir::Reason::kKeepFp32Consumer;
      s.evidence = "feeds " + strict->Describe();
    } else if (any_use && all_need) {
      s.run = Run::kF32;
      s.reason = ir::Reason::kFp32Consumers;
      s.evidence = "every consumer needs FP32";
    }
  }
}

// A low compute node writes FP32 when a consumer must read FP32 or when every consumer needs it.
void Painter::DecideComputeOutputs() {
  for (const auto& up : g_.nodes()) {
    const ir::Node* n = up.get();
    NodeState& s = S(n);
    if (s.cls != PrecisionClass::kCompute || s.run != Run::kLow) continue;
    bool any_use = false, all_need = true;
    const ir::Node* strict = nullptr;
    for (size_t o = 0; o < n->outputs().size(); ++o) {
      const ir::Value* v = n->outputs()[o];
      if (!IsFp32(v) || !OutputTakesLow(s, o)) continue;
      if (graph_outputs_.count(v)) any_use = true, all_need &= o_.keep_io_types;
      for (const ir::Use& u : v->uses()) {
        any_use = true;
        all_need &= NeedsF32(u);
        if (!strict && StrictUse(u)) strict = u.node;
      }
    }
    if (strict || (any_use && all_need)) {
      s.out_f32 = true;
      std::string why = strict ? "feeds " + strict->Describe() : "every consumer needs FP32";
      s.evidence = (s.evidence.empty() ? "" : s.evidence + "; ") + "writes FP32 directly: " + why;
      if (strict && (strict->op_type() == "Softmax" || strict->op_type() == "LogSoftmax")) s.reason = ir::Reason::kSoftmaxInput;
    }
  }
}

void Painter::PaintForward() {
  // Run dtype of each FP32 value's producer after painting: true when it is stored low.
  auto stored_low = [&](const ir::Value* v) {
    if (v->kind() == ir::Value::Kind::kInput) return LowInput(v);
    if (v->kind() != ir::Value::Kind::kNodeOutput) return false;
    const NodeState& p = S(v->producer());
    return p.run == Run::kLow && !p.out_f32;
  };
  for (const auto& up : g_.nodes()) {
    const ir::Node* n = up.get();
    NodeState& s = S(n);
    if (s.run != Run::kUndecided) continue;
    const ir::Value* fp32_input = nullptr;
    bool any = false;
    for (size_t i = 0; i < n->inputs().size(); ++i) {
      const ir::Value* v = n->inputs()[i];
      if (!IsFp32(v) || v->is_constant() || !InputTakesLow(s, i)) continue;
      any = true;
      if (!stored_low(v) && !fp32_input && !CastDownOk(v)) fp32_input = v;
    }
    if (!any) {
      s.run = Run::kF32, s.reason = ir::Reason::kConstantInputs;
    } else if (fp32_input) {
      s.run = Run::kF32, s.reason = ir::Reason::kFp32Input, s.evidence = "input '" + fp32_input->name() + "' is FP32";
    } else {
      s.run = Run::kLow, s.reason = s.pattern ? *s.pattern : ir::Reason::kFollowsInput;
    }
  }
}

std::string Painter::FreshName(const std::string& base) { return match::FreshName(g_, base); }

// A Cast node from -> to (to's type says the target dtype), recorded as an inserted cast.
void Painter::AddCast(ir::Value* from, ir::Value* to, const char* evidence) {
  ir::Node* cast = g_.AddNode("", "Cast", FreshName(to->name() + ".cast"), {from}, {to}, CastTo(to->type().dtype()));
  cast->mutable_precision() = {ir::DType::kUndefined, std::string(ir::ReasonName(ir::Reason::kCast)), evidence};
  ++stats_.casts_inserted;
}

// `v` in `dtype`: a converted constant or the output of a Cast, made once per (value, dtype).
ir::Value* Painter::Converted(ir::Value* v, ir::DType dtype) {
  auto key = std::make_pair(static_cast<const ir::Value*>(v), dtype);
  if (auto it = cache_.find(key); it != cache_.end()) return it->second;
  std::string name = FreshName(v->name() + "." + std::string(ir::DTypeName(dtype)));
  ir::Value* out;
  if (v->is_constant() && v->data() && v->data()->has_data()) {
    const ir::Tensor& t = *v->data();
    int64_t n = t.NumElements();
    std::vector<uint8_t> bytes(size_t(n) * ir::DTypeSize(dtype));
    const uint8_t* src = t.buffer().data();
    std::vector<float> wide;
    const float* f32 = reinterpret_cast<const float*>(src);
    if (t.dtype() != ir::DType::kF32) {
      wide.resize(size_t(n));
      if (t.dtype() == ir::DType::kF16) HalfToFloatArray(reinterpret_cast<const uint16_t*>(src), wide.data(), size_t(n));
      else Bf16ToFloatArray(reinterpret_cast<const uint16_t*>(src), wide.data(), size_t(n));
      f32 = wide.data();
    } else if (reinterpret_cast<uintptr_t>(src) % alignof(float) != 0) {
      wide.assign(size_t(n), 0.0f);
      std::memcpy(wide.data(), src, size_t(n) * 4);
      f32 = wide.data();
    }
    if (dtype == ir::DType::kF32) std::memcpy(bytes.data(), f32, size_t(n) * 4);
    else if (dtype == ir::DType::kF16) FloatToHalfArray(f32, reinterpret_cast<uint16_t*>(bytes.data()), size_t(n));
    else FloatToBf16Array(f32, reinterpret_cast<uint16_t*>(bytes.data()), size_t(n));
    out = g_.AddConstant(name, ir::Tensor(dtype, t.dims(), ir::Buffer::Own(std::move(bytes))));
    ++stats_.constants_converted;
  } else {
    out = g_.NewValue(name);
    out->set_type(ir::Type::Tensor(dtype, v->type().shape()));
    AddCast(v, out, "precision boundary");
    cache_[{out, v->type().dtype()}] = v;  // the reverse cast is the source itself
  }
  cache_[key] = out;
  return out;
}

StatusOr<PrecisionStats> Painter::Rewrite() {
  std::vector<ir::Node*> original;
  for (const auto& up : g_.nodes()) original.push_back(up.get());
  for (ir::Value* v : g_.inputs())
    if (LowInput(v)) {
      original_dtype_[v] = ir::DType::kF32;
      v->set_type(ir::Type::Tensor(o_.low, v->type().shape()));
    }
  for (ir::Node* n : original) {
    NodeState& s = S(n);
    bool computes = s.cls == PrecisionClass::kCompute || s.cls == PrecisionClass::kFollow || s.cls == PrecisionClass::kKeepFp32;
    n->mutable_precision() = {computes && s.has_fp32 ? ir::DType::kF32 : ir::DType::kUndefined, s.reason ? std::string(ir::ReasonName(*s.reason)) : "", s.evidence};
    if (!s.has_fp32) continue;
    if (s.run == Run::kLow) ++stats_.low_nodes;
    else ++stats_.fp32_nodes;
    for (size_t i = 0; i < n->inputs().size(); ++i) {
      ir::Value* v = n->inputs()[i];
      if (!v || !v->type().is_tensor()) continue;
      ir::DType want = v->type().dtype();
      auto it = original_dtype_.find(v);
      ir::DType orig = it == original_dtype_.end() ? want : it->second;
      if (orig != ir::DType::kF32) continue;
      if (ReadsLow(n) && InputTakesLow(s, i)) continue;  // reads what arrives, accumulates in FP32
      want = s.run == Run::kLow && InputTakesLow(s, i) ? o_.low : ir::DType::kF32;
      if (v->type().dtype() != want) g_.SetNodeInput(n, int(i), Converted(v, want));
    }
    for (size_t i = 0; i < n->outputs().size(); ++i) {
      ir::Value* v = n->outputs()[i];
      if (!IsFp32(v)) continue;
      original_dtype_[v] = ir::DType::kF32;
      if (s.run != Run::kLow || s.out_f32 || !OutputTakesLow(s, i)) continue;
      ir::Type low = ir::Type::Tensor(o_.low, v->type().shape());
      if (!KeepOriginal(v)) {
        v->set_type(low);
        continue;
      }
      // The value keeps FP32 for the graph output or a subgraph: the node writes a low twin
      // and a Cast restores FP32; low consumers read the twin through the reverse cache.
      ir::Value* twin = g_.NewValue(FreshName(v->name() + "." + std::string(ir::DTypeName(o_.low))));
      twin->set_type(low);
      g_.SetNodeOutput(n, int(i), twin);
      AddCast(twin, v, "keeps the model's FP32 type");
      cache_[{v, o_.low}] = twin;
      cache_[{twin, ir::DType::kF32}] = v;
    }
  }
  Reorder(original);
  return stats_;
}

// Topological order: the original order, each inserted Cast just before its first consumer.
void Painter::Reorder(const std::vector<ir::Node*>& original) {
  std::vector<ir::Node*> order;
  std::unordered_set<const ir::Node*> placed;
  std::function<void(ir::Node*)> place = [&](ir::Node* n) {
    if (!placed.insert(n).second) return;
    for (ir::Value* v : n->inputs())
      if (v && v->kind() == ir::Value::Kind::kNodeOutput && v->owner() == &g_) place(v->producer());
    order.push_back(n);
  };
  for (ir::Node* n : original) place(n);
  for (const auto& up : g_.nodes()) place(up.get());
  g_.SetNodeOrder(order);
}

}  // namespace

double MaxFinite(ir::DType dtype) {
  switch (dtype) {
    case ir::DType::kF16: return 65504.0;
    case ir::DType::kBF16: return 3.3895313892515355e38;
    case ir::DType::kF32: return 3.4028234663852886e38;
    default: return INFINITY;
  }
}

StatusOr<PrecisionStats> AssignPrecision(ir::Graph& graph, const PrecisionOptions& options) {
  if (options.low != ir::DType::kF16 && options.low != ir::DType::kBF16)
    return InvalidArgument("the low precision must be f16 or bf16");
  std::vector<ir::Graph*> bodies;  // collected first: painting adds nodes
  for (const auto& n : graph.nodes())
    for (const auto& a : n->attributes())
      for (const auto& sub : a.graphs) bodies.push_back(sub.get());
  PRECIS_ASSIGN_OR_RETURN(PrecisionStats stats, Painter(graph, options).Run());
  // Bodies of If/Loop/Scan get the same rules. Their inputs and outputs keep their dtypes (the
  // control-flow step copies them as they are), and the outer values they read stay FP32 (the
  // painter keeps a value read inside a subgraph FP32), cast down inside the body where a low
  // node reads them.
  PrecisionOptions inner = options;
  inner.keep_io_types = true;
  for (ir::Graph* body : bodies) {
    PRECIS_ASSIGN_OR_RETURN(PrecisionStats b, AssignPrecision(*body, inner));
    stats.low_nodes += b.low_nodes, stats.fp32_nodes += b.fp32_nodes;
    stats.casts_inserted += b.casts_inserted, stats.constants_converted += b.constants_converted;
  }
  return stats;
}

}  // namespace precis::passes
