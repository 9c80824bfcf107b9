// The built-in pass table and the registry around it (see pass_registry.h). Each entry adapts one
// pass function to `Run -> changed`: passes that count what they rewrote report those counts;
// the others (infer, patterns, precision, specialize-inputs) compare a snapshot of what they may
// change (nodes, value kinds and types, precision records) before and after.
#include "passes/pass_registry.h"

#include <algorithm>
#include <tuple>

#include "passes/dead_code.h"
#include "passes/fold_batchnorm.h"
#include "passes/fold_casts.h"
#include "passes/fuse_casts.h"
#include "passes/fuse_elementwise.h"
#include "passes/inline_if.h"
#include "passes/recognize_patterns.h"
#include "passes/specialize_inputs.h"
#include "runtime/base/check.h"

namespace precis::passes {
namespace {

// What a pass without counts of its own may change, in every graph of a model.
struct Snapshot {
  std::vector<size_t> nodes;
  std::vector<std::tuple<std::string, ir::Value::Kind, ir::Type>> values;
  std::vector<std::tuple<ir::DType, std::string, std::string>> records;
  bool operator==(const Snapshot&) const = default;
};

Snapshot Take(const ir::Model& model) {
  Snapshot s;
  ir::ForEachGraph(*model.graph, [&](const ir::Graph& g) {
    s.nodes.push_back(g.nodes().size());
    for (const auto& v : g.values()) s.values.emplace_back(v->name(), v->kind(), v->type());
    for (const auto& n : g.nodes()) s.records.emplace_back(n->precision().accumulate, n->precision().reason, n->precision().evidence);
  });
  return s;
}

StatusOr<bool> RunDce(ir::Model& m, PassContext&) { return RemoveDeadCode(*m.graph); }
StatusOr<bool> RunFoldCasts(ir::Model& m, PassContext&) { return FoldCasts(*m.graph); }
StatusOr<bool> RunFuseCasts(ir::Model& m, PassContext&) { return FuseCasts(*m.graph); }
StatusOr<bool> RunFuseElementwise(ir::Model& m, PassContext&) {
  FuseOptions options;
  options.rows = true;
  if (auto it = m.opsets.find(""); it != m.opsets.end()) options.opset = it->second;
  return !FuseElementwise(*m.graph, {}, options).empty();
}

StatusOr<bool> RunFoldBatchNorm(ir::Model& m, PassContext& c) {
  int folded = FoldBatchNorm(*m.graph, c.options.fold_low);
  c.stats.folded_batchnorms += folded;
  return folded > 0;
}

StatusOr<bool> RunInlineIf(ir::Model& m, PassContext& c) {
  int inlined = InlineConstantIf(*m.graph);
  c.stats.inlined_ifs += inlined;
  return inlined > 0;
}

StatusOr<bool> FuseEpiloguesFor(ir::Model& m, PassContext& c, EpilogueTarget target) {
  EpilogueStats s = FuseEpilogues(*m.graph, target);
  c.stats.epilogues.bias += s.bias;
  c.stats.epilogues.activations += s.activations;
  return s.bias + s.activations > 0;
}
StatusOr<bool> RunFuseEpilogues(ir::Model& m, PassContext& c) { return FuseEpiloguesFor(m, c, EpilogueTarget::kCuda); }
StatusOr<bool> RunFuseEpiloguesCpu(ir::Model& m, PassContext& c) { return FuseEpiloguesFor(m, c, EpilogueTarget::kCpu); }

// Every counted decision rewrites something: NCHW convolutions get evidence saying why.
StatusOr<bool> LayoutFor(ir::Model& m, PassContext& c, LayoutTarget target) {
  LayoutStats s = ChooseLayout(*m.graph, target);
  LayoutStats& t = c.stats.layout;
  t.nhwc_convs += s.nhwc_convs, t.nchw_convs += s.nchw_convs, t.region_ops += s.region_ops;
  t.transposes += s.transposes, t.reshapes += s.reshapes;
  return s.nhwc_convs + s.nchw_convs + s.region_ops + s.transposes + s.reshapes > 0;
}
StatusOr<bool> RunLayout(ir::Model& m, PassContext& c) { return LayoutFor(m, c, LayoutTarget::kCuda); }
StatusOr<bool> RunLayoutCpu(ir::Model& m, PassContext& c) { return LayoutFor(m, c, LayoutTarget::kCpu); }

StatusOr<bool> RunInfer(ir::Model& m, PassContext& c) {
  Snapshot before = Take(m);
  PRECIS_ASSIGN_OR_RETURN(InferStats s, InferShapesAndFold(m, c.options.infer));
  c.stats.folded_nodes += s.folded_nodes;
  c.stats.expanded_nodes += s.expanded_nodes;
  c.stats.sequence_ops += s.sequence_ops;
  c.stats.unrolled_loops += s.unrolled_loops;
  c.stats.stacked_loops += s.stacked_loops;
  return s.folded_nodes > 0 || s.expanded_nodes > 0 || s.sequence_ops > 0 || s.unrolled_loops > 0 || s.stacked_loops > 0 || Take(m) != before;
}

StatusOr<bool> RunPatterns(ir::Model& m, PassContext& c) {
  Snapshot before = Take(m);
  c.stats.patterns += RecognizePatterns(*m.graph);
  return Take(m) != before;
}

StatusOr<bool> RunPrecision(ir::Model& m, PassContext& c) {
  Snapshot before = Take(m);
  PRECIS_ASSIGN_OR_RETURN(c.stats.precision, AssignPrecision(*m.graph, c.options.precision));
  return c.stats.precision.casts_inserted + c.stats.precision.constants_converted > 0 || Take(m) != before;
}

StatusOr<bool> RunSpecializeInputs(ir::Model& m, PassContext& c) {
  Snapshot before = Take(m);
  PRECIS_RETURN_IF_ERROR(SpecializeInputs(m, c.options.shapes, c.options.input_values, c.options.containers));
  return Take(m) != before;
}

// Sorted by name.
constexpr PassInfo kBuiltinPasses[] = {
    {.name = "dce", .description = "remove nodes nothing reads and unused constants", .run = RunDce},
    {.name = "fold-batchnorm", .description = "fold BatchNormalization and per-channel Mul/Add into the Conv before them", .run = RunFoldBatchNorm},
    {.name = "fold-casts", .description = "remove casts that change nothing, shorten exact cast chains", .run = RunFoldCasts},
    {.name = "fuse-casts", .description = "fold a float Cast into the computing node that alone feeds it", .run = RunFuseCasts},
    {.name = "fuse-elementwise", .description = "fuse elementwise chains into FusedElementwise nodes (CPU code generation)", .run = RunFuseElementwise},
    {.name = "fuse-epilogues", .description = "move bias and activations into MatMul/Gemm/Conv epilogues (GPU plans)", .run = RunFuseEpilogues},
    {.name = "fuse-epilogues-cpu", .description = "move a Conv's Relu or Clip into the convolution (CPU plans)", .run = RunFuseEpiloguesCpu},
    {.name = "infer", .description = "shape and type inference with constant folding", .run = RunInfer},
    {.name = "inline-if", .description = "replace If nodes with constant conditions by the branch taken", .run = RunInlineIf},
    {.name = "layout", .description = "run tensor-core convolutions and their neighbours NHWC (GPU plans)", .run = RunLayout},
    {.name = "layout-cpu", .description = "run convolutions and their neighbours channels-last (CPU plans)", .run = RunLayoutCpu},
    {.name = "patterns", .description = "recognize decomposed LayerNorm, RMSNorm, GELU, cross-entropy, attention", .run = RunPatterns},
    {.name = "precision", .description = "assign FP16/BF16 or FP32 to each node and insert the casts", .run = RunPrecision},
    {.name = "specialize-inputs", .description = "bind input shapes (--shape, --batch) and make given inputs constants", .run = RunSpecializeInputs},
};

class RegisteredPass : public Pass {
 public:
  RegisteredPass(const PassInfo& info, PassContext& context) : info_(info), context_(context) {}
  std::string_view name() const override { return info_.name; }
  std::string_view description() const override { return info_.description; }
  StatusOr<bool> Run(ir::Model& model) override { return info_.run(model, context_); }

 private:
  PassInfo info_;
  PassContext& context_;
};

}  // namespace

const PassRegistry& PassRegistry::Builtin() {
  static const PassRegistry* registry = [] {
    auto* r = new PassRegistry;
    for (const PassInfo& info : kBuiltinPasses) r->Register(info);
    return r;
  }();
  return *registry;
}

void PassRegistry::Register(const PassInfo& info) {
  PRECIS_CHECK(!info.name.empty() && info.run) << "pass '" << info.name << "' needs a name and a function";
  auto at = std::lower_bound(passes_.begin(), passes_.end(), info.name, [](const PassInfo& p, std::string_view n) { return p.name < n; });
  PRECIS_CHECK(at == passes_.end() || at->name != info.name) << "pass '" << info.name << "' registered twice";
  passes_.insert(at, info);
}

const PassInfo* PassRegistry::Find(std::string_view name) const {
  for (const PassInfo& p : passes_)
    if (p.name == name) return &p;
  return nullptr;
}

StatusOr<std::unique_ptr<Pass>> PassRegistry::Create(std::string_view name, PassContext& context) const {
  const PassInfo* info = Find(name);
  if (!info) return InvalidArgument("unknown pass '" + std::string(name) + "' (known passes: " + Names() + ")");
  return std::unique_ptr<Pass>(std::make_unique<RegisteredPass>(*info, context));
}

std::string PassRegistry::Names(std::string_view separator) const {
  std::string out;
  for (const PassInfo& p : passes_) out += (out.empty() ? "" : std::string(separator)) + std::string(p.name);
  return out;
}

}  // namespace precis::passes
