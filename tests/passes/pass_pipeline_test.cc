// The pass registry, the pipeline driver and the compile driver's use of them: every built-in
// name is unique and listed in order; passes report "changed" truthfully (no-change cases
// included); a pass that breaks an invariant is named by the verifier's error; the per-pass
// records and the print-after callback see every pass.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <set>

#include "compiler/driver/compile.h"
#include "compiler/ir/text.h"
#include "compiler/ir/verifier.h"
#include "passes/pass_pipeline.h"
#include "passes/pass_registry.h"

namespace precis::passes {
namespace {

constexpr const char* kGraph = R"(model {ir_version = 8, producer_name = "t", producer_version = "1", domain = "", model_version = 0, opsets = {"" = 17}}
graph "g" {
  input %x: f32[2,3]
  const %w: f32[3,3] = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0]
  %h = MatMul(%x, %w) name "mm"
  %r = Relu(%h) name "relu"
  %n = Neg(%r) name "neg"
  output %n
}
)";

std::unique_ptr<ir::Model> Parse(const char* text = kGraph) {
  auto model = ir::ParseModel(text);
  EXPECT_TRUE(model.ok()) << model.status().ToString();
  return model.ok() ? std::move(*model) : nullptr;
}

// Runs one built-in pass on `model`; returns its "changed".
bool RunPass(const char* name, ir::Model& model, PassContext& context) {
  auto pass = PassRegistry::Builtin().Create(name, context);
  EXPECT_TRUE(pass.ok()) << pass.status().ToString();
  auto changed = (*pass)->Run(model);
  EXPECT_TRUE(changed.ok()) << name << ": " << changed.status().ToString();
  return changed.ok() && *changed;
}

// A deliberately broken pass: makes the Relu read the Neg's output, which is defined after it.
StatusOr<bool> ReadValueDefinedLater(ir::Model& model, PassContext&) {
  ir::Graph& g = *model.graph;
  g.SetNodeInput(g.nodes()[1].get(), 0, g.nodes()[2]->outputs()[0]);
  return true;
}

StatusOr<bool> FailWithStatus(ir::Model&, PassContext&) { return InvalidArgument("Relu 'relu' (node 1): refused"); }

PassRegistry WithTestPasses() {
  PassRegistry registry = PassRegistry::Builtin();
  registry.Register({.name = "test-break-ssa", .description = "reads a value defined later", .run = ReadValueDefinedLater});
  registry.Register({.name = "test-fail", .description = "returns an error", .run = FailWithStatus});
  return registry;
}

StatusOr<bool> RunNames(const PassRegistry& registry, const std::vector<const char*>& names, ir::Model& model, PassContext& context,
                        PipelineOptions options, std::vector<PassRecord>* records = nullptr) {
  PassPipeline pipeline(std::move(options));
  for (const char* name : names) {
    PRECIS_ASSIGN_OR_RETURN(std::unique_ptr<Pass> pass, registry.Create(name, context));
    pipeline.Add(std::move(pass));
  }
  StatusOr<bool> ran = pipeline.Run(model);
  if (records) *records = pipeline.records();
  return ran;
}

TEST(PassRegistry, BuiltinNamesAreUniqueSortedAndListed) {
  const PassRegistry& registry = PassRegistry::Builtin();
  std::vector<std::string> names;
  for (const PassInfo& p : registry.passes()) {
    names.emplace_back(p.name);
    EXPECT_FALSE(p.description.empty()) << p.name;
    EXPECT_EQ(p.description.find('\n'), std::string_view::npos) << p.name << ": one line";
  }
  EXPECT_TRUE(std::is_sorted(names.begin(), names.end()));
  EXPECT_EQ(std::set<std::string>(names.begin(), names.end()).size(), names.size());
  EXPECT_EQ(registry.Names(),
            "dce, fold-batchnorm, fold-casts, fuse-casts, fuse-elementwise, fuse-epilogues, fuse-epilogues-cpu, infer, inline-if, layout, layout-cpu, patterns, precision, "
            "specialize-inputs");
  for (const std::string& name : names) EXPECT_EQ(registry.Find(name)->name, name);
}

TEST(PassRegistry, UnknownNameListsTheKnownOnes) {
  PassContext context;
  auto pass = PassRegistry::Builtin().Create("nosuchpass", context);
  ASSERT_FALSE(pass.ok());
  EXPECT_NE(pass.status().message().find("unknown pass 'nosuchpass'"), std::string::npos) << pass.status().message();
  EXPECT_NE(pass.status().message().find("dce, fold-batchnorm"), std::string::npos) << pass.status().message();
}

TEST(PassRegistryDeathTest, RegisteringANameTwiceAborts) {
  PassRegistry registry = PassRegistry::Builtin();
  EXPECT_DEATH(registry.Register({.name = "dce", .description = "again", .run = FailWithStatus}), "pass 'dce' registered twice");
}

TEST(PassChanged, DeadCodeOnlyWhenSomethingIsDead) {
  auto model = Parse();
  PassContext context;
  EXPECT_FALSE(RunPass("dce", *model, context));  // every node feeds the output
  ir::Graph& g = *model->graph;
  g.AddNode("", "Relu", "dead", {g.nodes()[0]->outputs()[0]}, {g.NewValue("dead_out")}, {});
  EXPECT_TRUE(RunPass("dce", *model, context));
  EXPECT_FALSE(RunPass("dce", *model, context));
}

TEST(PassChanged, InferThenNothingLeftToInfer) {
  auto model = Parse();
  PassContext context;
  EXPECT_TRUE(RunPass("infer", *model, context));  // types of %h, %r, %n become known
  EXPECT_FALSE(RunPass("infer", *model, context));
  EXPECT_FALSE(RunPass("fold-casts", *model, context));  // no casts
  EXPECT_TRUE(RunPass("fuse-epilogues", *model, context));  // the Relu moves into the MatMul
  EXPECT_EQ(context.stats.epilogues.activations, 1);
  EXPECT_FALSE(RunPass("fuse-epilogues", *model, context));
}

TEST(PassChanged, PatternsAndPrecisionCompareWhatTheyRecord) {
  auto model = Parse();
  PassContext context;
  ASSERT_TRUE(RunPass("infer", *model, context));
  EXPECT_FALSE(RunPass("patterns", *model, context));  // nothing decomposed here
  EXPECT_TRUE(RunPass("precision", *model, context));
  EXPECT_GT(context.stats.precision.low_nodes, 0);
  EXPECT_FALSE(RunPass("inline-if", *model, context));
  EXPECT_FALSE(RunPass("specialize-inputs", *model, context));  // no shapes or values given
}

TEST(PassPipeline, BrokenInvariantNamesThePass) {
  auto model = Parse();
  PassContext context;
  PipelineOptions options;
  options.verify = true;
  auto ran = RunNames(WithTestPasses(), {"infer", "dce", "test-break-ssa", "dce"}, *model, context, options);
  ASSERT_FALSE(ran.ok());
  const std::string& message = ran.status().message();
  EXPECT_EQ(message.rfind("after pass 'test-break-ssa': ", 0), 0u) << message;
  EXPECT_NE(message.find("not defined before"), std::string::npos) << message;
}

TEST(PassPipeline, WithoutVerificationTheBrokenGraphGoesThrough) {
  auto model = Parse();
  PassContext context;
  PipelineOptions options;
  options.verify = false;
  EXPECT_TRUE(RunNames(WithTestPasses(), {"test-break-ssa"}, *model, context, options).ok());
  EXPECT_FALSE(ir::Verify(*model).ok());
}

TEST(PassPipeline, PassErrorNamesThePass) {
  auto model = Parse();
  PassContext context;
  auto ran = RunNames(WithTestPasses(), {"dce", "test-fail"}, *model, context, PipelineOptions());
  ASSERT_FALSE(ran.ok());
  EXPECT_EQ(ran.status().message(), "pass 'test-fail': Relu 'relu' (node 1): refused");
}

TEST(PassPipeline, RecordsAndCallbackSeeEveryPass) {
  auto model = Parse();
  PassContext context;
  PipelineOptions options;
  options.verify = true;
  std::vector<std::string> printed;
  options.after_pass = [&](std::string_view pass, const ir::Model&) { printed.emplace_back(pass); };
  std::vector<PassRecord> records;
  auto ran = RunNames(PassRegistry::Builtin(), {"infer", "dce", "infer"}, *model, context, options, &records);
  ASSERT_TRUE(ran.ok()) << ran.status().ToString();
  EXPECT_TRUE(*ran);
  EXPECT_EQ(printed, (std::vector<std::string>{"infer", "dce", "infer"}));
  ASSERT_EQ(records.size(), 3u);
  EXPECT_EQ(records[0].name, "infer");
  EXPECT_TRUE(records[0].changed);
  EXPECT_FALSE(records[1].changed);
  EXPECT_FALSE(records[2].changed);
  for (const PassRecord& r : records) EXPECT_GE(r.ms, 0) << r.name;
}

TEST(PassPipeline, VerificationByDefaultInDebugBuildsOrWhenTheEnvironmentAsks) {
#ifdef NDEBUG
  constexpr bool kDebug = false;
#else
  constexpr bool kDebug = true;
#endif
  const char* saved = std::getenv("PRECIS_VERIFY_PASSES");
  std::string restore = saved ? saved : "";
  setenv("PRECIS_VERIFY_PASSES", "1", 1);
  EXPECT_TRUE(VerifyPassesByDefault());
  setenv("PRECIS_VERIFY_PASSES", "0", 1);
  EXPECT_EQ(VerifyPassesByDefault(), kDebug);
  if (saved) setenv("PRECIS_VERIFY_PASSES", restore.c_str(), 1);
  else unsetenv("PRECIS_VERIFY_PASSES");
}

TEST(CompileDriver, VerifiesEveryPassAndTimesIt) {
  auto model = Parse();
  driver::CompileOptions options;
  options.precision = "fp16";
  options.verify_passes = true;
  auto result = driver::Compile(*model, options);
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  std::vector<std::string> phases;
  for (const auto& [name, ms] : result->phase_ms) phases.push_back(name);
  for (const char* pass : {"specialize-inputs", "inline-if", "infer", "fold-batchnorm", "dce", "patterns", "precision", "fold-casts", "fuse-casts"})
    EXPECT_NE(std::find(phases.begin(), phases.end(), pass), phases.end()) << pass;
  EXPECT_GT(result->precision.low_nodes, 0);
}

}  // namespace
}  // namespace precis::passes
