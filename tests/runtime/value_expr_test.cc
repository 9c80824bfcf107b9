// Value expressions (runtime/base/value_expr.h): sizes computed from run-time float values. The
// evaluator against values worked out by hand, and one session that runs a plan whose Range
// bounds are float inputs (one of them computed, limit = x * 2.5 + 1) at several values, each
// count and element checked against loops written here.
#include <climits>
#include <cmath>
#include <functional>
#include <optional>
#include <limits>
#include <vector>

#include <gtest/gtest.h>

#include "compiler/emit/plan_emitter.h"
#include "compiler/ir/text.h"
#include "passes/infer_shapes.h"
#include "precis/session.h"
#include "runtime/base/value_expr.h"

namespace precis {
namespace {

double LeafValue(const value_expr::Leaf& l) { return l.index == 0 ? 1.0 : l.index == 1 ? 3.0 : 0.1; }

// The value, or INT64_MIN for an error.
int64_t Value(const std::optional<std::string>& name, const std::function<double(const value_expr::Leaf&)>& leaf) {
  if (!name) return INT64_MIN;
  auto v = value_expr::Evaluate(*name, leaf, "n");
  return v.ok() ? *v : INT64_MIN;
}

TEST(ValueExpr, BuildsParsesAndEvaluates) {
  using namespace value_expr;
  // ceil((x1 - x0) / x2) rounded to FP32 at each step: (3 - 1) / 0.1 is 20 in FP32 (19.999999...
  // in double), so the count is 20; Range's own length in double is also 20 here.
  auto div = Apply("f32", {*Apply("div", {*Apply("f32", {*Apply("sub", {Input(1, 0), Input(0, 0)})}), Input(2, 0)})});
  ASSERT_TRUE(div);
  auto sym = Symbol("int", {*Apply("ceil", {*div})});
  ASSERT_TRUE(sym);
  EXPECT_EQ(*sym, "$x_int_ceil_f32_div_f32_sub_i1e0_i0e0_i2e0");
  EXPECT_TRUE(IsSymbol(*sym));
  auto v = Evaluate(*sym, LeafValue, "n");
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_EQ(*v, 20);
  auto leaves = Leaves(*sym);
  ASSERT_TRUE(leaves);
  ASSERT_EQ(leaves->size(), 3u);
  EXPECT_EQ((*leaves)[0].index, 1);
  auto mapped = MapLeaves(*sym, [](const Leaf& l) { return "t" + std::to_string(l.index + 10) + "e" + std::to_string(l.element); });
  ASSERT_TRUE(mapped);
  EXPECT_EQ(*mapped, "$x_int_ceil_f32_div_f32_sub_t11e0_t10e0_t12e0");
  auto shown = Display(*sym, [](const Leaf& l) { return std::string(1, char('a' + l.index)); });
  ASSERT_TRUE(shown);
  EXPECT_EQ(*shown, "int(ceil(((b-a)/c)))");
  // Range's length: max(ceil((L - S) / D), 0) in double, so (0, 0.3f, 0.1f) has 4 elements
  // (0.3f / 0.1f = 3.0000000745...), while the same division rounded to FP32 gives 3.
  auto third = [](const Leaf& l) { return l.index == 0 ? 0.0 : l.index == 1 ? double(0.3f) : double(0.1f); };
  EXPECT_EQ(Value(Symbol("rlen", {Input(0, 0), Input(1, 0), Input(2, 0)}), third), 4);
  EXPECT_EQ(Value(Symbol("int", {*Apply("ceil", {*Apply("f32", {*Apply("div", {Input(1, 0), Input(2, 0)})})})}), third), 3);
  EXPECT_EQ(Value(Symbol("rlen", {Input(1, 0), Input(0, 0), Input(2, 0)}), third), 0);  // a negative count is 0
  // Roundings: 1/3 is 0.333251953125 in FP16 and 0.333984375 in BF16.
  auto one_third = [](const Leaf& l) { return l.index == 0 ? 1.0 : 3.0; };
  auto q = *Apply("div", {Input(0, 0), Input(1, 0)});
  auto scaled = [&](const char* rounding) {
    return Value(Symbol("int", {*Apply("mul", {*Apply(rounding, {q}), Constant(1048576.0)})}), one_third);
  };
  EXPECT_EQ(scaled("f16"), int64_t(0.333251953125 * 1048576));
  EXPECT_EQ(scaled("bf16"), int64_t(0.333984375 * 1048576));
  EXPECT_EQ(Value(Symbol("bool", {Constant(-0.5)}), one_third), 1);
  EXPECT_EQ(Value(Symbol("bool", {Constant(0.0)}), one_third), 0);
  EXPECT_EQ(Value(Symbol("int", {Constant(-2.75)}), one_third), -2);  // toward zero, as Cast
  // Errors name the size: a NaN or infinite size, a delta of 0.
  auto nan = Evaluate(*Symbol("int", {Constant(std::nan(""))}), one_third, "len");
  EXPECT_FALSE(nan.ok());
  EXPECT_NE(nan.status().message().find("len"), std::string::npos);
  EXPECT_FALSE(Evaluate(*Symbol("rlen", {Constant(0), Constant(1), Constant(0)}), one_third, "n").ok());
  // Malformed text: not parsed.
  EXPECT_FALSE(Leaves("$x_int_add_i0e0"));
  EXPECT_FALSE(Leaves("$x_int_i0e0_i0e0"));
  EXPECT_FALSE(Leaves("$x_sub_i0e0_i0e0"));  // not a conversion to an integer
  EXPECT_FALSE(Evaluate("$x_int_bogus_i0e0", one_third, "n").ok());
  EXPECT_FALSE(Symbol("sub", {Input(0, 0), Input(0, 0)}));
}

constexpr const char* kModel = R"(
model {ir_version = 8, producer_name = "test", producer_version = "", domain = "", model_version = 0, opsets = {"" = 17}}
graph "value_expr" {
  input %start: f32[]
  input %x: f32[]
  input %delta: f32[]
  const %scale: f32[] = [2.5]
  const %one: f32[] = [1.0]
  %xs = Mul(%x, %scale)
  %limit = Add(%xs, %one)
  %r = Range(%start, %limit, %delta)
  %sq = Mul(%r, %r)
  output %r
  output %sq
}
)";

TEST(ValueExpr, RangeOverFloatInputsInOneSession) {
  auto model = ir::ParseModel(kModel);
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  ASSERT_TRUE(passes::InferShapesAndFold(**model).ok());
  auto emitted = emit::EmitPlan(**model, {});
  ASSERT_TRUE(emitted.ok()) << emitted.status().ToString();
  ASSERT_EQ(emitted->symbols.size(), 1u);
  EXPECT_EQ(emitted->symbols[0], "range_length(start[0],((x[0]*2.5)+1),delta[0])");
  auto session = Session::FromBuffer(emitted->bytes.data(), emitted->bytes.size());
  ASSERT_TRUE(session.ok()) << session.status().ToString();
  Session& s = **session;
  struct Case {
    float start, x, delta;
  };
  // Counts 4, 7 (negative delta), 0 (empty), 2001 (a larger arena), and 4 again (cached shape).
  std::vector<Case> cases{{0, 3.6f, 3}, {1.5f, -1.4f, -0.5f}, {5, 1, 1}, {0, 399.8f, 0.5f}, {0, 3.6f, 3}};
  for (const Case& c : cases) {
    SCOPED_TRACE("start " + std::to_string(c.start) + " x " + std::to_string(c.x) + " delta " + std::to_string(c.delta));
    ASSERT_TRUE(s.SetInput("start", DataType::kF32, {}, &c.start, 4).ok());
    ASSERT_TRUE(s.SetInput("x", DataType::kF32, {}, &c.x, 4).ok());
    ASSERT_TRUE(s.SetInput("delta", DataType::kF32, {}, &c.delta, 4).ok());
    Status run = s.Run();
    ASSERT_TRUE(run.ok()) << run.ToString();
    // The reference: elements start + i * delta while they lie before the limit (FP32 limit).
    float limit = c.x * 2.5f + 1.0f;
    std::vector<float> want;
    for (int64_t i = 0;; ++i) {
      double v = double(c.start) + double(i) * double(c.delta);
      if (c.delta > 0 ? v >= double(limit) : v <= double(limit)) break;
      want.push_back(float(v));
    }
    auto r = s.Output("r");
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    ASSERT_EQ(r->info.dims, (std::vector<int64_t>{int64_t(want.size())}));
    auto sq = s.Output("sq");
    ASSERT_TRUE(sq.ok());
    for (size_t i = 0; i < want.size(); ++i) {
      EXPECT_EQ(static_cast<const float*>(r->data)[i], want[i]);
      EXPECT_EQ(static_cast<const float*>(sq->data)[i], want[i] * want[i]);
    }
  }
  // A delta of 0 and a NaN bound are errors naming the size; the session runs again afterwards.
  float zero = 0, nan = std::numeric_limits<float>::quiet_NaN(), one = 1, x = 3.6f, start = 0;
  ASSERT_TRUE(s.SetInput("delta", DataType::kF32, {}, &zero, 4).ok());
  Status bad = s.Run();
  EXPECT_FALSE(bad.ok());
  EXPECT_NE(bad.message().find("delta of 0"), std::string::npos) << bad.ToString();
  ASSERT_TRUE(s.SetInput("delta", DataType::kF32, {}, &one, 4).ok());
  ASSERT_TRUE(s.SetInput("x", DataType::kF32, {}, &nan, 4).ok());
  bad = s.Run();
  EXPECT_FALSE(bad.ok());
  EXPECT_NE(bad.message().find("range_length("), std::string::npos) << bad.ToString();
  ASSERT_TRUE(s.SetInput("start", DataType::kF32, {}, &start, 4).ok());
  ASSERT_TRUE(s.SetInput("x", DataType::kF32, {}, &x, 4).ok());
  ASSERT_TRUE(s.SetInput("delta", DataType::kF32, {}, &one, 4).ok());
  Status again = s.Run();
  ASSERT_TRUE(again.ok()) << again.ToString();
  auto r = s.Output("r");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->info.dims, (std::vector<int64_t>{10}));
}

}  // namespace
}  // namespace precis
