// Dynamic plans (symbolic dims bound at run time): one plan run at several shapes in one session,
// shape arithmetic (Shape -> Gather -> Mul -> Concat -> Reshape) turned into symbolic dims, and
// the errors a caller gets for inconsistent inputs. Expected values are computed here with plain
// double loops, never by the code under test.
#include <cmath>
#include <vector>

#include <gtest/gtest.h>

#include "compiler/driver/compile.h"
#include "compiler/emit/plan_emitter.h"
#include "compiler/ir/text.h"
#include "passes/infer_shapes.h"
#include "precis/session.h"

namespace precis {
namespace {

// y = Reshape(MatMul(x, w), [batch*seq, 3]) with the target computed from Shape(x);
// c = Concat(x, m) along axis 1 ([batch, 2*seq, 4]); s = x + m.
constexpr const char* kModel = R"(
model {ir_version = 8, producer_name = "test", producer_version = "", domain = "", model_version = 0, opsets = {"" = 17}}
graph "dyn" {
  input %x: f32[batch,seq,4]
  input %m: f32[batch,seq,4]
  const %w: f32[4,3] = [0.5, -1.0, 2.0, 1.5, 0.25, -0.5, -2.0, 1.0, 0.75, 0.125, 3.0, -1.25]
  const %i0: i64[] = [0]
  const %i1: i64[] = [1]
  const %ax: i64[1] = [0]
  const %three: i64[1] = [3]
  %mm = MatMul(%x, %w)
  %shape = Shape(%x)
  %b = Gather(%shape, %i0) {axis = 0}
  %t = Gather(%shape, %i1) {axis = 0}
  %bt = Mul(%b, %t)
  %btu = Unsqueeze(%bt, %ax)
  %target = Concat(%btu, %three) {axis = 0}
  %y = Reshape(%mm, %target)
  %c = Concat(%x, %m) {axis = 1}
  %s = Add(%x, %m)
  output %y
  output %c
  output %s
}
)";

const float kW[4][3] = {{0.5f, -1.0f, 2.0f}, {1.5f, 0.25f, -0.5f}, {-2.0f, 1.0f, 0.75f}, {0.125f, 3.0f, -1.25f}};

std::vector<uint8_t> Plan(const emit::EmitOptions& options = {}) {
  auto model = ir::ParseModel(kModel);
  EXPECT_TRUE(model.ok()) << model.status().ToString();
  auto inferred = passes::InferShapesAndFold(**model);
  EXPECT_TRUE(inferred.ok()) << inferred.status().ToString();
  auto emitted = emit::EmitPlan(**model, options);
  EXPECT_TRUE(emitted.ok()) << emitted.status().ToString();
  EXPECT_EQ(emitted->symbols, (std::vector<std::string>{"batch", "seq"}));
  return emitted->bytes;
}

std::vector<float> Values(int64_t n, float scale) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[size_t(i)] = scale * float((i * 7) % 11) - 2.0f;
  return v;
}

// Sets x and m of shape [b, t, 4], runs, and checks the three outputs against double loops.
void RunAndCheck(Session& s, int64_t b, int64_t t) {
  SCOPED_TRACE("batch " + std::to_string(b) + ", seq " + std::to_string(t));
  std::vector<float> x = Values(b * t * 4, 0.5f), m = Values(b * t * 4, -0.25f);
  ASSERT_TRUE(s.SetInput("x", DataType::kF32, {b, t, 4}, x.data(), x.size() * 4).ok());
  ASSERT_TRUE(s.SetInput("m", DataType::kF32, {b, t, 4}, m.data(), m.size() * 4).ok());
  Status run = s.Run();
  ASSERT_TRUE(run.ok()) << run.ToString();
  auto y = s.Output("y");
  ASSERT_TRUE(y.ok());
  ASSERT_EQ(y->info.dims, (std::vector<int64_t>{b * t, 3}));
  const float* yv = static_cast<const float*>(y->data);
  for (int64_t r = 0; r < b * t; ++r)
    for (int k = 0; k < 3; ++k) {
      double want = 0;
      for (int j = 0; j < 4; ++j) want += double(x[size_t(r * 4 + j)]) * kW[j][k];
      // FP32 accumulation of 4 products of exactly representable values: within 1e-5 relative.
      EXPECT_NEAR(yv[r * 3 + k], want, 1e-5 * (1 + std::fabs(want))) << "y[" << r << "," << k << "]";
    }
  auto c = s.Output("c");
  ASSERT_TRUE(c.ok());
  ASSERT_EQ(c->info.dims, (std::vector<int64_t>{b, 2 * t, 4}));
  const float* cv = static_cast<const float*>(c->data);
  for (int64_t i = 0; i < b; ++i)
    for (int64_t j = 0; j < 2 * t; ++j)
      for (int k = 0; k < 4; ++k) {
        float want = j < t ? x[size_t((i * t + j) * 4 + k)] : m[size_t((i * t + j - t) * 4 + k)];
        EXPECT_EQ(cv[(i * 2 * t + j) * 4 + k], want);
      }
  auto sum = s.Output("s");
  ASSERT_TRUE(sum.ok());
  const float* sv = static_cast<const float*>(sum->data);
  for (size_t i = 0; i < x.size(); ++i) EXPECT_EQ(sv[i], x[i] + m[i]);
}

TEST(DynamicPlan, OneSessionRunsSeveralShapes) {
  std::vector<uint8_t> bytes = Plan();
  auto session = Session::FromBuffer(bytes.data(), bytes.size());
  ASSERT_TRUE(session.ok()) << session.status().ToString();
  Session& s = **session;
  EXPECT_EQ(s.symbols(), (std::vector<std::string>{"batch", "seq"}));
  EXPECT_EQ(s.DimNames("x"), (std::vector<std::string>{"batch", "seq", ""}));
  EXPECT_EQ(s.DimNames("y"), (std::vector<std::string>{"batch*seq", ""}));
  EXPECT_EQ(s.DimNames("c"), (std::vector<std::string>{"batch", "2*seq", ""}));
  EXPECT_EQ(s.inputs()[0].dims, (std::vector<int64_t>{-1, -1, 4}));
  RunAndCheck(s, 2, 3);
  size_t small = s.arena_bytes();
  RunAndCheck(s, 3, 17);
  EXPECT_GT(s.arena_bytes(), small);
  RunAndCheck(s, 2, 3);  // a shape seen before (its kernels come from the cache)
  EXPECT_EQ(s.arena_bytes(), small);
  RunAndCheck(s, 1, 1);
  RunAndCheck(s, 4, 0);  // empty tensors
}

TEST(DynamicPlan, InconsistentInputsAreRefused) {
  std::vector<uint8_t> bytes = Plan();
  auto session = Session::FromBuffer(bytes.data(), bytes.size());
  ASSERT_TRUE(session.ok()) << session.status().ToString();
  Session& s = **session;
  std::vector<float> data(2 * 5 * 4, 1.0f);
  // Nothing set yet.
  Status none = s.Run();
  EXPECT_FALSE(none.ok());
  EXPECT_NE(none.message().find("has no value yet"), std::string::npos) << none.message();
  EXPECT_FALSE(s.Output("y").ok());
  // A static dim that differs, and a byte count that does not match the shape.
  Status wrong = s.SetInput("x", DataType::kF32, {2, 5, 3}, data.data(), 2 * 5 * 3 * 4);
  EXPECT_NE(wrong.message().find("must have shape [batch, seq, 4]"), std::string::npos) << wrong.message();
  EXPECT_FALSE(s.SetInput("x", DataType::kF32, {2, 5, 4}, data.data(), 8).ok());
  // Two inputs that bind seq differently for one run.
  ASSERT_TRUE(s.SetInput("x", DataType::kF32, {2, 5, 4}, data.data(), data.size() * 4).ok());
  Status conflict = s.SetInput("m", DataType::kF32, {2, 4, 4}, data.data(), 2 * 4 * 4 * 4);
  EXPECT_NE(conflict.message().find("gives seq = 4, but input 'x' gave seq = 5"), std::string::npos) << conflict.message();
  ASSERT_TRUE(s.SetInput("m", DataType::kF32, {2, 5, 4}, data.data(), data.size() * 4).ok());
  ASSERT_TRUE(s.Run().ok());
  // x changes shape, m is not set again: its bytes are of the old shape.
  ASSERT_TRUE(s.SetInput("x", DataType::kF32, {1, 5, 4}, data.data(), 5 * 4 * 4).ok());
  Status stale = s.Run();
  EXPECT_NE(stale.message().find("input 'm' was set with shape 2x5x4"), std::string::npos) << stale.message();
  // Binding by pointer needs a shape: refused for dynamic plans.
  EXPECT_FALSE(s.BindInput("x", data.data(), data.size() * 4).ok());
  EXPECT_FALSE(s.BindOutput("s", data.data(), data.size() * 4).ok());
  // The session still runs once both inputs agree again.
  ASSERT_TRUE(s.SetInput("m", DataType::kF32, {1, 5, 4}, data.data(), 5 * 4 * 4).ok());
  EXPECT_TRUE(s.Run().ok());
}

// A shape whose arena is over SessionOptions::max_arena_bytes fails at Run; outputs are then
// refused (their dims would be the failed shape's, their bytes the old arena's) until a run at a
// shape that fits.
TEST(DynamicPlan, OutputsAfterAFailedShapeAreRefused) {
  std::vector<uint8_t> bytes = Plan();
  SessionOptions options;
  options.max_arena_bytes = 64 * 1024;
  auto session = Session::FromBuffer(bytes.data(), bytes.size(), options);
  ASSERT_TRUE(session.ok()) << session.status().ToString();
  Session& s = **session;
  RunAndCheck(s, 1, 2);
  std::vector<float> big(4 * 1000 * 4, 1.0f);
  ASSERT_TRUE(s.SetInput("x", DataType::kF32, {4, 1000, 4}, big.data(), big.size() * 4).ok());
  ASSERT_TRUE(s.SetInput("m", DataType::kF32, {4, 1000, 4}, big.data(), big.size() * 4).ok());
  Status run = s.Run();
  EXPECT_NE(run.message().find("max_arena_bytes"), std::string::npos) << run.message();
  auto y = s.Output("y");
  ASSERT_FALSE(y.ok());
  EXPECT_NE(y.status().message().find("has not run at its current shape"), std::string::npos) << y.status().message();
  RunAndCheck(s, 2, 3);
}

// Every symbol bounded: the arena is planned once at load for the largest shape and kept for
// every shape; inputs outside the bounds are refused; a bound on no symbol is a compile error.
TEST(DynamicPlan, BoundedSymbolsPlanTheArenaOnce) {
  emit::EmitOptions options;
  options.dim_bounds = {{"batch", {1, 4}}, {"seq", {1, 32}}};
  std::vector<uint8_t> bytes = Plan(options);
  auto session = Session::FromBuffer(bytes.data(), bytes.size());
  ASSERT_TRUE(session.ok()) << session.status().ToString();
  Session& s = **session;
  size_t arena = s.arena_bytes();
  // The largest shape's tensors: x and m (4*32*4 floats each), y, c and s, and the MatMul
  // output: at least 4*32*4*4 bytes each for x, m, s, twice that for c.
  EXPECT_GE(arena, size_t(4 * 32 * 4 * 4) * 5);
  RunAndCheck(s, 2, 3);
  EXPECT_EQ(s.arena_bytes(), arena);
  RunAndCheck(s, 4, 32);
  RunAndCheck(s, 1, 1);
  EXPECT_EQ(s.arena_bytes(), arena);
  std::vector<float> data(1 * 33 * 4, 0.0f);
  Status outside = s.SetInput("x", DataType::kF32, {1, 33, 4}, data.data(), data.size() * 4);
  EXPECT_NE(outside.message().find("seq = 33 is outside the plan's bounds 1..32"), std::string::npos) << outside.message();

  auto model = ir::ParseModel(kModel);
  ASSERT_TRUE(model.ok());
  ASSERT_TRUE(passes::InferShapesAndFold(**model).ok());
  emit::EmitOptions wrong;
  wrong.dim_bounds = {{"sequence", {1, 8}}};
  auto emitted = emit::EmitPlan(**model, wrong);
  ASSERT_FALSE(emitted.ok());
  EXPECT_NE(emitted.status().message().find("no symbolic dim 'sequence' (its symbolic dims: batch, seq)"), std::string::npos)
      << emitted.status().message();
}

// Values that decide shapes (docs/dynamic-shapes.md): a Reshape target, Pad's pads and
// ReduceSum's axes given as inputs. One session runs several values; expected values come from
// plain loops.
constexpr const char* kValueModel = R"(
model {ir_version = 8, producer_name = "test", producer_version = "", domain = "", model_version = 0, opsets = {"" = 18}}
graph "values" {
  input %x: f32[2,3,4]
  input %target: i64[3]
  input %p: f32[3,4]
  input %pads: i64[4]
  input %axes: i64[1]
  %r = Reshape(%x, %target)
  %q = Pad(%p, %pads) {mode = "reflect"}
  %s = ReduceSum(%x, %axes) {keepdims = 0}
  output %r
  output %q
  output %s
}
)";

TEST(DynamicPlan, ValuesDecideShapes) {
  auto model = ir::ParseModel(kValueModel);
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  ASSERT_TRUE(passes::InferShapesAndFold(**model).ok());
  auto emitted = emit::EmitPlan(**model, {});
  ASSERT_TRUE(emitted.ok()) << emitted.status().ToString();
  EXPECT_EQ(emitted->symbols, (std::vector<std::string>{"target[0]", "target[1]", "target[2]", "pads[0]", "pads[1]", "pads[2]", "pads[3]", "axes[0]"}));
  auto session = Session::FromBuffer(emitted->bytes.data(), emitted->bytes.size());
  ASSERT_TRUE(session.ok()) << session.status().ToString();
  Session& s = **session;
  std::vector<float> x(24), p(12);
  for (int i = 0; i < 24; ++i) x[size_t(i)] = float(i) * 0.5f - 3.0f;
  for (int i = 0; i < 12; ++i) p[size_t(i)] = float(i * i % 7);
  struct Case {
    std::vector<int64_t> target, want_r, pads;
    int64_t axis;
  };
  // 0 copies the input dim, -1 takes the rest; reflect pads; a repeated case reuses its shape.
  std::vector<Case> cases{{{4, 3, 2}, {4, 3, 2}, {1, 0, 0, 2}, 0},
                          {{0, -1, 2}, {2, 6, 2}, {0, 2, 1, 0}, 2},
                          {{6, -1, 1}, {6, 4, 1}, {-1, 1, 1, 0}, -2},
                          {{4, 3, 2}, {4, 3, 2}, {1, 0, 0, 2}, 0}};
  for (const Case& c : cases) {
    SCOPED_TRACE("target " + std::to_string(c.target[0]) + "," + std::to_string(c.target[1]) + "," + std::to_string(c.target[2]));
    int64_t axis = c.axis;
    ASSERT_TRUE(s.SetInput("x", DataType::kF32, {2, 3, 4}, x.data(), 96).ok());
    ASSERT_TRUE(s.SetInput("target", DataType::kI64, {3}, c.target.data(), 24).ok());
    ASSERT_TRUE(s.SetInput("p", DataType::kF32, {3, 4}, p.data(), 48).ok());
    ASSERT_TRUE(s.SetInput("pads", DataType::kI64, {4}, c.pads.data(), 32).ok());
    ASSERT_TRUE(s.SetInput("axes", DataType::kI64, {1}, &axis, 8).ok());
    Status run = s.Run();
    ASSERT_TRUE(run.ok()) << run.ToString();
    auto r = s.Output("r");
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->info.dims, c.want_r);
    for (int i = 0; i < 24; ++i) EXPECT_EQ(static_cast<const float*>(r->data)[i], x[size_t(i)]);
    // Reflect padding: rows [3] padded by pads[0] before / pads[2] after, columns [4] by pads[1] / pads[3].
    auto q = s.Output("q");
    ASSERT_TRUE(q.ok());
    int64_t rows = 3 + c.pads[0] + c.pads[2], cols = 4 + c.pads[1] + c.pads[3];
    ASSERT_EQ(q->info.dims, (std::vector<int64_t>{rows, cols}));
    auto reflect = [](int64_t i, int64_t n) { return i < 0 ? -i : i >= n ? 2 * (n - 1) - i : i; };
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < cols; ++j) {
        // Negative pads crop first: rows start at max(-pads[0], 0) of the input.
        int64_t lo_r = std::max<int64_t>(-c.pads[0], 0), n_r = 3 - lo_r - std::max<int64_t>(-c.pads[2], 0);
        int64_t lo_c = std::max<int64_t>(-c.pads[1], 0), n_c = 4 - lo_c - std::max<int64_t>(-c.pads[3], 0);
        int64_t si = lo_r + reflect(i - std::max<int64_t>(c.pads[0], 0), n_r), sj = lo_c + reflect(j - std::max<int64_t>(c.pads[1], 0), n_c);
        EXPECT_EQ(static_cast<const float*>(q->data)[i * cols + j], p[size_t(si * 4 + sj)]) << i << "," << j;
      }
    // ReduceSum over one axis of [2, 3, 4], the axis dropped.
    auto sum = s.Output("s");
    ASSERT_TRUE(sum.ok());
    int64_t a = axis < 0 ? axis + 3 : axis;
    std::vector<int64_t> dims{2, 3, 4}, kept;
    for (int64_t d = 0; d < 3; ++d)
      if (d != a) kept.push_back(dims[size_t(d)]);
    ASSERT_EQ(sum->info.dims, kept);
    for (int64_t u = 0; u < kept[0]; ++u)
      for (int64_t v = 0; v < kept[1]; ++v) {
        double want = 0;
        for (int64_t k = 0; k < dims[size_t(a)]; ++k) {
          int64_t idx[3];
          int64_t free_[2] = {u, v};
          for (int64_t d = 0, f = 0; d < 3; ++d) idx[d] = d == a ? k : free_[f++];
          want += x[size_t(idx[0] * 12 + idx[1] * 4 + idx[2])];
        }
        EXPECT_NEAR(static_cast<const float*>(sum->data)[u * kept[1] + v], want, 1e-5);
      }
  }
  // A target that does not fit the input is an error naming it; the session goes on afterwards.
  std::vector<int64_t> bad{5, -1, 1};
  ASSERT_TRUE(s.SetInput("target", DataType::kI64, {3}, bad.data(), 24).ok());
  Status run = s.Run();
  EXPECT_FALSE(run.ok());
  EXPECT_NE(run.message().find("Reshape"), std::string::npos) << run.message();
  const Case& c = cases[0];
  int64_t axis = c.axis;
  ASSERT_TRUE(s.SetInput("x", DataType::kF32, {2, 3, 4}, x.data(), 96).ok());
  ASSERT_TRUE(s.SetInput("target", DataType::kI64, {3}, c.target.data(), 24).ok());
  ASSERT_TRUE(s.SetInput("p", DataType::kF32, {3, 4}, p.data(), 48).ok());
  ASSERT_TRUE(s.SetInput("pads", DataType::kI64, {4}, c.pads.data(), 32).ok());
  ASSERT_TRUE(s.SetInput("axes", DataType::kI64, {1}, &axis, 8).ok());
  run = s.Run();
  EXPECT_TRUE(run.ok()) << run.ToString();
}

// Float values that decide shapes: Resize scales (each output dim floor(dim * scale)) and a OneHot
// depth given as float inputs. Expected values from plain loops: nearest, asymmetric, floor maps
// output coordinate o to input floor(o / scale).
constexpr const char* kFloatValueModel = R"(
model {ir_version = 8, producer_name = "test", producer_version = "", domain = "", model_version = 0, opsets = {"" = 13}}
graph "float_values" {
  input %x: f32[1,1,2,3]
  input %scales: f32[4]
  input %idx: i64[3]
  input %depth: f32[]
  input %onoff: f32[2]
  %r = Resize(%x, _, %scales) {mode = "nearest", coordinate_transformation_mode = "asymmetric", nearest_mode = "floor"}
  %h = OneHot(%idx, %depth, %onoff) {axis = -1}
  output %r
  output %h
}
)";

TEST(DynamicPlan, FloatValuesDecideShapes) {
  auto model = ir::ParseModel(kFloatValueModel);
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  ASSERT_TRUE(passes::InferShapesAndFold(**model).ok());
  auto emitted = emit::EmitPlan(**model, {});
  ASSERT_TRUE(emitted.ok()) << emitted.status().ToString();
  auto session = Session::FromBuffer(emitted->bytes.data(), emitted->bytes.size());
  ASSERT_TRUE(session.ok()) << session.status().ToString();
  Session& s = **session;
  std::vector<float> x{1, 2, 3, 4, 5, 6}, onoff{-1, 7};
  std::vector<int64_t> idx{0, 2, 4};
  struct Case {
    std::vector<float> scales;
    float depth;
  };
  for (const Case& c : std::vector<Case>{{{1, 1, 2, 2}, 5.f}, {{1, 1, 1.5f, 0.5f}, 3.f}, {{1, 1, 3, 1.4f}, 4.9f}}) {
    SCOPED_TRACE("scales " + std::to_string(c.scales[2]) + "x" + std::to_string(c.scales[3]) + ", depth " + std::to_string(c.depth));
    ASSERT_TRUE(s.SetInput("x", DataType::kF32, {1, 1, 2, 3}, x.data(), 24).ok());
    ASSERT_TRUE(s.SetInput("scales", DataType::kF32, {4}, c.scales.data(), 16).ok());
    ASSERT_TRUE(s.SetInput("idx", DataType::kI64, {3}, idx.data(), 24).ok());
    ASSERT_TRUE(s.SetInput("depth", DataType::kF32, {}, &c.depth, 4).ok());
    ASSERT_TRUE(s.SetInput("onoff", DataType::kF32, {2}, onoff.data(), 8).ok());
    Status run = s.Run();
    ASSERT_TRUE(run.ok()) << run.ToString();
    auto r = s.Output("r");
    ASSERT_TRUE(r.ok());
    int64_t h = int64_t(std::floor(2.0 * double(c.scales[2]))), w = int64_t(std::floor(3.0 * double(c.scales[3])));
    ASSERT_EQ(r->info.dims, (std::vector<int64_t>{1, 1, h, w}));
    for (int64_t i = 0; i < h; ++i)
      for (int64_t j = 0; j < w; ++j) {
        int64_t si = std::min<int64_t>(int64_t(std::floor(double(i) / double(c.scales[2]))), 1);
        int64_t sj = std::min<int64_t>(int64_t(std::floor(double(j) / double(c.scales[3]))), 2);
        EXPECT_EQ(static_cast<const float*>(r->data)[i * w + j], x[size_t(si * 3 + sj)]) << i << "," << j;
      }
    auto oh = s.Output("h");
    ASSERT_TRUE(oh.ok());
    int64_t depth = int64_t(c.depth);  // ONNX: depth cast to an integer
    ASSERT_EQ(oh->info.dims, (std::vector<int64_t>{3, depth}));
    for (int64_t k = 0; k < 3; ++k)
      for (int64_t d = 0; d < depth; ++d) EXPECT_EQ(static_cast<const float*>(oh->data)[k * depth + d], idx[size_t(k)] == d ? 7.f : -1.f);
  }
}

// A Loop whose body's shapes follow the iteration number (plan.fbs Plan.iteration_symbols):
// head = x[0:i+1] is summed into a carried total and appended to a list that is the model's
// output (a stack padded to the last element, and each element's dims). One session runs several
// trip counts, each checked against sums in double and the elements against x itself.
TEST(DynamicPlan, LoopBodyShapesFollowTheIteration) {
  auto model = ir::ParseModel(R"(
model {ir_version = 8, producer_name = "test", producer_version = "", domain = "", model_version = 0, opsets = {"" = 17}}
graph "grow" {
  input %x: f32[6,2]
  input %trip: i64[]
  const %start: i64[1] = [0]
  const %one: i64[] = [1]
  const %ax: i64[1] = [0]
  const %acc0: f32[1,2] = [0.0, 0.0]
  %empty = SequenceEmpty() {dtype = 1}
  %total, %list = Loop(%trip, _, %acc0, %empty) {body = graph "body" {
      input %i: i64[]
      input %c: bool[]
      input %acc: f32[1,2]
      input %s: seq<f32[?,2]>
      %end = Add(%i, %one)
      %endu = Unsqueeze(%end, %ax)
      %head = Slice(%x, %start, %endu)
      %part = ReduceSum(%head, %ax) {keepdims = 1}
      %next = Add(%acc, %part)
      %grown = SequenceInsert(%s, %head)
      %c2 = Identity(%c)
      output %c2
      output %next
      output %grown
    }}
  output %total
  output %list
}
)");
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  auto compiled = driver::Compile(**model, driver::CompileOptions{});
  ASSERT_TRUE(compiled.ok()) << compiled.status().ToString();
  const std::vector<uint8_t>& bytes = compiled->plan.bytes;
  auto session = Session::FromBuffer(bytes.data(), bytes.size());
  ASSERT_TRUE(session.ok()) << session.status().ToString();
  Session& s = **session;
  std::vector<float> x(12);
  for (size_t k = 0; k < x.size(); ++k) x[k] = 0.25f * float(k) - 1.0f;  // sums of these are exact in FP32
  for (int64_t trip : {4, 1, 6, 0, 4}) {
    SCOPED_TRACE("trip count " + std::to_string(trip));
    ASSERT_TRUE(s.SetInput("x", DataType::kF32, {6, 2}, x.data(), 48).ok());
    ASSERT_TRUE(s.SetInput("trip", DataType::kI64, {}, &trip, 8).ok());
    Status run = s.Run();
    ASSERT_TRUE(run.ok()) << run.ToString();
    auto total = s.Output("total");
    ASSERT_TRUE(total.ok()) << total.status().ToString();
    for (int col = 0; col < 2; ++col) {
      double want = 0;
      for (int64_t i = 0; i < trip; ++i)
        for (int64_t r = 0; r <= i; ++r) want += x[size_t(r * 2 + col)];
      EXPECT_EQ(double(static_cast<const float*>(total->data)[col]), want) << "column " << col;
    }
    auto list = s.OutputContainer("list");
    ASSERT_TRUE(list.ok()) << list.status().ToString();
    ASSERT_EQ(list->elements.size(), size_t(trip));
    for (int64_t i = 0; i < trip; ++i) {
      const TensorData& e = list->elements[size_t(i)];
      ASSERT_EQ(e.info.dims, (std::vector<int64_t>{i + 1, 2})) << "element " << i;
      for (int64_t k = 0; k < (i + 1) * 2; ++k) EXPECT_EQ(static_cast<const float*>(e.data)[k], x[size_t(k)]) << "element " << i << " at " << k;
    }
  }
  // A trip count past x's rows: x[0:7] has 6 rows, not the 7 the plan computes for it.
  int64_t seven = 7;
  ASSERT_TRUE(s.SetInput("x", DataType::kF32, {6, 2}, x.data(), 48).ok());
  ASSERT_TRUE(s.SetInput("trip", DataType::kI64, {}, &seven, 8).ok());
  EXPECT_FALSE(s.Run().ok());
}

}  // namespace
}  // namespace precis
