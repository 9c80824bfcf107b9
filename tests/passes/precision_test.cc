// Precision assignment: every operator declares its class; the pass's statistics and invariants
// on a small graph parsed from text (the golden .pir tests cover the printed results).
#include <gtest/gtest.h>

#include "compiler/ir/text.h"
#include "compiler/ir/verifier.h"
#include "compiler/ops/op_registry.h"
#include "passes/fold_casts.h"
#include "passes/infer_shapes.h"
#include "passes/precision.h"

namespace precis::passes {
namespace {

TEST(PrecisionClasses, EveryOperatorDeclaresOne) {
  for (const ops::OpDef* def : ops::OpRegistry::Get().All())
    EXPECT_NE(def->precision, ops::PrecisionClass::kUnclassified) << def->op_type << " declares no precision class";
}

TEST(PrecisionClasses, PolicyOfKeyOperators) {
  auto cls = [](const char* op) { return ops::OpRegistry::Get().Find("", op)->precision; };
  using P = ops::PrecisionClass;
  for (const char* op : {"MatMul", "Gemm", "Conv", "ConvTranspose", "Einsum"}) EXPECT_EQ(cls(op), P::kCompute) << op;
  for (const char* op : {"Softmax", "LogSoftmax", "ReduceMean", "ReduceSum", "LayerNormalization", "Exp", "Log", "Pow", "CumSum",
                         "SoftmaxCrossEntropyLoss"})
    EXPECT_EQ(cls(op), P::kKeepFp32) << op;
  for (const char* op : {"Reshape", "Transpose", "Concat", "Slice", "Gather", "Identity"}) EXPECT_EQ(cls(op), P::kPassthrough) << op;
  for (const char* op : {"Cast", "Shape", "Range", "Equal"}) EXPECT_EQ(cls(op), P::kUntouched) << op;
  EXPECT_EQ(ops::OpRegistry::Get().Find("", "Resize")->low_inputs, 1);  // scales and roi keep FP32
}

constexpr const char* kGraph = R"(model {ir_version = 8, producer_name = "t", producer_version = "1", domain = "", model_version = 0, opsets = {"" = 17}}
graph "g" {
  input %x: f32[2,3]
  const %w: f32[3,3] = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0]
  %h = MatMul(%x, %w)
  %r = Relu(%h)
  %m = MatMul(%r, %w)
  %s = Softmax(%m)
  %n = Neg(%r)
  output %s
  output %n
}
)";

TEST(AssignPrecision, StatisticsCastsAndVerification) {
  auto model = ir::ParseModel(kGraph);
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  ASSERT_TRUE(InferShapesAndFold(**model).ok());
  PrecisionOptions options;
  auto stats = AssignPrecision(*(*model)->graph, options);
  ASSERT_TRUE(stats.ok()) << stats.status().ToString();
  // MatMul, Relu and MatMul run low; Softmax stays FP32 and so does Neg, whose only consumer is
  // the FP32 model output (keep-io-types).
  EXPECT_EQ(stats->low_nodes, 3);
  EXPECT_EQ(stats->fp32_nodes, 2);
  // One constant converted once although two MatMuls read it; casts: x down, Relu's output up
  // for Neg. The second MatMul writes FP32 for the Softmax itself (no cast).
  EXPECT_EQ(stats->constants_converted, 1);
  EXPECT_EQ(stats->casts_inserted, 2);
  EXPECT_TRUE(ir::Verify(**model).ok());
  for (const auto& n : (*model)->graph->nodes()) {
    EXPECT_FALSE(n->precision().reason.empty()) << n->Describe();
    if (n->op_type() == "Softmax") {
      EXPECT_EQ(n->inputs()[0]->type().dtype(), ir::DType::kF32);
    }
  }
  for (const ir::Value* v : (*model)->graph->outputs()) EXPECT_EQ(v->type().dtype(), ir::DType::kF32) << v->name();
  EXPECT_FALSE(FoldCasts(*(*model)->graph));  // nothing left to fold
}

// A Linear's bias as a training plan has it: a parameter (an FP32 input, not a constant). By
// default the bias Add runs in FP32 because of it, and the Transpose after it too; with the bias
// in `cast_down` (PyTorch autocast's rule for a Linear's bias) both run in 16 bits and the bias is
// read through a Cast.
TEST(AssignPrecision, CastDownParametersKeepTheActivationsLow) {
  constexpr const char* kLinear = R"(model {ir_version = 8, producer_name = "t", producer_version = "1", domain = "", model_version = 0, opsets = {"" = 17}}
graph "g" {
  input %x: f32[3,3]
  input %b: f32[3]
  const %w: f32[3,3] = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0]
  %h = MatMul(%x, %w)
  %y = Add(%h, %b)
  %t = Transpose(%y)
  %m = MatMul(%t, %w)
  output %m
}
)";
  for (bool cast_down : {false, true}) {
    SCOPED_TRACE(cast_down ? "bias cast down" : "default");
    auto model = ir::ParseModel(kLinear);
    ASSERT_TRUE(model.ok()) << model.status().ToString();
    ASSERT_TRUE(InferShapesAndFold(**model).ok());
    ir::Graph& g = *(*model)->graph;
    PrecisionOptions options;
    options.low = ir::DType::kBF16;
    if (cast_down) options.cast_down.insert(g.FindLocal("b"));
    auto stats = AssignPrecision(g, options);
    ASSERT_TRUE(stats.ok()) << stats.status().ToString();
    EXPECT_TRUE(ir::Verify(**model).ok());
    const ir::DType want = cast_down ? ir::DType::kBF16 : ir::DType::kF32;
    for (const auto& n : g.nodes()) {
      if (n->op_type() == "Add" || n->op_type() == "Transpose") {
        EXPECT_EQ(n->outputs()[0]->type().dtype(), want) << n->Describe();
      }
      if (n->op_type() == "Add") {
        EXPECT_EQ(n->precision().reason, cast_down ? "follows-input" : "fp32-input") << n->Describe();
      }
    }
    EXPECT_EQ(g.FindLocal("b")->type().dtype(), ir::DType::kF32) << "the parameter itself stays FP32";
  }
}

TEST(AssignPrecision, RejectsUnknownOperatorAndBadRegex) {
  auto model = ir::ParseModel(kGraph);
  ASSERT_TRUE(model.ok());
  PrecisionOptions unknown;
  unknown.keep_fp32_ops = {"NotAnOp"};
  EXPECT_EQ(AssignPrecision(*(*model)->graph, unknown).status().code(), StatusCode::kInvalidArgument);
  PrecisionOptions regex;
  regex.force_low = "([";
  EXPECT_EQ(AssignPrecision(*(*model)->graph, regex).status().code(), StatusCode::kInvalidArgument);
}

TEST(IsExactConversion, Table) {
  using D = ir::DType;
  EXPECT_TRUE(IsExactConversion(D::kF16, D::kF32));
  EXPECT_TRUE(IsExactConversion(D::kBF16, D::kF64));
  EXPECT_FALSE(IsExactConversion(D::kF32, D::kF16));
  EXPECT_FALSE(IsExactConversion(D::kF16, D::kBF16));  // neither holds the other
  EXPECT_TRUE(IsExactConversion(D::kU8, D::kI16));
  EXPECT_FALSE(IsExactConversion(D::kI8, D::kU64));
  EXPECT_FALSE(IsExactConversion(D::kI32, D::kF32));
}

}  // namespace
}  // namespace precis::passes
