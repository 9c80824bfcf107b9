// Data dims (plan.fbs Plan.data_symbols): sizes a step computes. One session runs a plan whose
// NonZero count and Compress count change from run to run, and the steps after them (Transpose,
// GatherND, a MatMul whose inner dim is the Compress count, ReduceSum) are checked against loops
// written here. Also: the arena is planned for the bounds, a count of 0 and a count at the
// bound, and a symbolic batch under the data dims.
#include <cmath>
#include <vector>

#include <gtest/gtest.h>

#include "compiler/emit/plan_emitter.h"
#include "compiler/ir/text.h"
#include "passes/infer_shapes.h"
#include "precis/session.h"

namespace precis {
namespace {

constexpr const char* kModel = R"(
model {ir_version = 8, producer_name = "test", producer_version = "", domain = "", model_version = 0, opsets = {"" = 17}}
graph "data_dims" {
  input %x: f32[N,6]
  input %cond: bool[6]
  input %w: f32[6,3]
  input %threshold: f32[]
  %mask = Greater(%x, %threshold)
  %idx = NonZero(%mask)
  %pairs = Transpose(%idx) {perm = [1, 0]}
  %picked = GatherND(%x, %pairs)
  %total = ReduceSum(%picked) {keepdims = 0}
  %xc = Compress(%x, %cond) {axis = 1}
  %wc = Compress(%w, %cond) {axis = 0}
  %y = MatMul(%xc, %wc)
  output %idx
  output %picked
  output %total
  output %y
}
)";

TEST(DataDims, NonZeroAndCompressCountsChangeBetweenRuns) {
  auto model = ir::ParseModel(kModel);
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  ASSERT_TRUE(passes::InferShapesAndFold(**model).ok());
  auto emitted = emit::EmitPlan(**model, {});
  ASSERT_TRUE(emitted.ok()) << emitted.status().ToString();
  // N from the input, one count per data-dependent node (Compress of x and of w are two).
  ASSERT_EQ(emitted->symbols.size(), 4u);
  EXPECT_EQ(emitted->symbols[0], "N");
  auto session = Session::FromBuffer(emitted->bytes.data(), emitted->bytes.size());
  ASSERT_TRUE(session.ok()) << session.status().ToString();
  Session& s = **session;
  std::vector<float> w(18);
  for (int i = 0; i < 18; ++i) w[size_t(i)] = float(i % 5) - 1.5f;
  struct Case {
    int64_t n;
    float threshold;
    std::vector<uint8_t> cond;
  };
  // Counts: some, none (threshold above every value, no condition), all (at the bounds), and a
  // repeated first case (its kernels come from the backend's cache).
  std::vector<Case> cases{{2, 0.25f, {1, 0, 1, 1, 0, 0}}, {3, 100.0f, {0, 0, 0, 0, 0, 0}}, {1, -100.0f, {1, 1, 1, 1, 1, 1}},
                          {4, 0.0f, {0, 1, 0, 0, 0, 1}}, {2, 0.25f, {1, 0, 1, 1, 0, 0}}};
  for (const Case& c : cases) {
    SCOPED_TRACE("N " + std::to_string(c.n) + " threshold " + std::to_string(c.threshold));
    std::vector<float> x(size_t(c.n * 6));
    for (size_t i = 0; i < x.size(); ++i) x[i] = std::sin(float(i) * 1.7f + float(c.n));
    ASSERT_TRUE(s.SetInput("x", DataType::kF32, {c.n, 6}, x.data(), x.size() * 4).ok());
    ASSERT_TRUE(s.SetInput("cond", DataType::kBool, {6}, c.cond.data(), 6).ok());
    ASSERT_TRUE(s.SetInput("w", DataType::kF32, {6, 3}, w.data(), w.size() * 4).ok());
    ASSERT_TRUE(s.SetInput("threshold", DataType::kF32, {}, &c.threshold, 4).ok());
    Status run = s.Run();
    ASSERT_TRUE(run.ok()) << run.ToString();
    // NonZero: row-major coordinates of x > threshold; GatherND picks those values.
    std::vector<int64_t> rows, cols;
    std::vector<float> values;
    double sum = 0;
    for (int64_t i = 0; i < c.n; ++i)
      for (int64_t j = 0; j < 6; ++j)
        if (x[size_t(i * 6 + j)] > c.threshold) {
          rows.push_back(i), cols.push_back(j), values.push_back(x[size_t(i * 6 + j)]);
          sum += x[size_t(i * 6 + j)];
        }
    int64_t count = int64_t(rows.size());
    auto idx = s.Output("idx");
    ASSERT_TRUE(idx.ok()) << idx.status().ToString();
    ASSERT_EQ(idx->info.dims, (std::vector<int64_t>{2, count}));
    for (int64_t k = 0; k < count; ++k) {
      EXPECT_EQ(static_cast<const int64_t*>(idx->data)[k], rows[size_t(k)]);
      EXPECT_EQ(static_cast<const int64_t*>(idx->data)[count + k], cols[size_t(k)]);
    }
    auto picked = s.Output("picked");
    ASSERT_TRUE(picked.ok());
    ASSERT_EQ(picked->info.dims, (std::vector<int64_t>{count}));
    for (int64_t k = 0; k < count; ++k) EXPECT_EQ(static_cast<const float*>(picked->data)[k], values[size_t(k)]);
    auto total = s.Output("total");
    ASSERT_TRUE(total.ok());
    EXPECT_NEAR(*static_cast<const float*>(total->data), sum, 1e-5 * (1 + std::fabs(sum)));
    // Compress both sides of the product: y = x[:, cond] @ w[cond, :], [N, 3] whatever the count.
    auto y = s.Output("y");
    ASSERT_TRUE(y.ok());
    ASSERT_EQ(y->info.dims, (std::vector<int64_t>{c.n, 3}));
    for (int64_t i = 0; i < c.n; ++i)
      for (int64_t j = 0; j < 3; ++j) {
        double want = 0;
        for (int64_t k = 0; k < 6; ++k)
          if (c.cond[size_t(k)]) want += double(x[size_t(i * 6 + k)]) * w[size_t(k * 3 + j)];
        EXPECT_NEAR(static_cast<const float*>(y->data)[i * 3 + j], want, 1e-5) << i << "," << j;
      }
  }
}

TEST(DataDims, ChainsOfDataDimsAreRefusedAtCompileTime) {
  // NonZero of NonZero's output: the second bound would read the first count.
  auto model = ir::ParseModel(R"(
model {ir_version = 8, producer_name = "test", producer_version = "", domain = "", model_version = 0, opsets = {"" = 17}}
graph "chain" {
  input %x: f32[4,5]
  %i = NonZero(%x)
  %j = NonZero(%i)
  output %j
}
)");
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  ASSERT_TRUE(passes::InferShapesAndFold(**model).ok());
  auto emitted = emit::EmitPlan(**model, {});
  ASSERT_FALSE(emitted.ok());
  EXPECT_NE(emitted.status().ToString().find("depends on another data-dependent size"), std::string::npos) << emitted.status().ToString();
}

}  // namespace
}  // namespace precis
