// Mixed-precision training plans: dynamic loss scaling with PyTorch's GradScaler semantics, the
// skipped step, gradients that FP16 flushes to zero without scaling, and the options' errors.
//
// The model is y = x @ w (w a 4x4 weight, x a batch input) with an MSE loss; with x the identity
// and w = 0 every value is exact in FP16, so the only rounding that matters is the one under test.
// Non-finite gradients are injected by feeding an x that holds an Inf.
// Expected scales and growth trackers come from a plain re-statement of GradScaler.update
// (torch/amp/grad_scaler.py, _amp_update_scale_) in this file, not from the compiler.
#include <cfloat>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <map>
#include <vector>

#include <gtest/gtest.h>

#include "compiler/driver/train.h"
#include "compiler/ir/text.h"
#include "precis/session.h"
#include "runtime/exec/state_file.h"

namespace precis {
namespace {

constexpr const char* kModel = R"(
model {ir_version = 8, producer_name = "t", producer_version = "", domain = "", model_version = 0, opsets = {"" = 17}}
graph "g" {
  input %x: f32[4, 4]
  const %w: f32[4, 4] = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]
  %y = MatMul(%x, %w)
  output %y
}
)";

StatusOr<driver::TrainPlan> Compile(driver::TrainOptions o) {
  PRECIS_ASSIGN_OR_RETURN(auto model, ir::ParseModel(kModel));
  o.loss = "mse";
  o.label = "label";
  o.optimizer = "sgd";
  o.gradient_outputs = true;
  return driver::CompileTraining(*model, o);
}

// d times the identity, with `corner` at [0][0].
std::vector<float> Diagonal(float d, float corner) {
  std::vector<float> x(16, 0.0f);
  for (int i = 0; i < 4; ++i) x[size_t(i * 5)] = d;
  x[0] = corner;
  return x;
}
std::vector<float> Identity(float corner = 1) { return Diagonal(1, corner); }

struct Step {
  float loss = 0, loss_scale = 0;
  bool skipped = false;
  std::vector<float> grad;
};

Step TrainStep(Session& s, const std::vector<float>& x, const std::vector<float>& label) {
  Step r;
  EXPECT_TRUE(s.SetInput("x", DataType::kF32, {4, 4}, x.data(), 64).ok());
  EXPECT_TRUE(s.SetInput("label", DataType::kF32, {4, 4}, label.data(), 64).ok());
  Status st = s.Run("train_step");
  EXPECT_TRUE(st.ok()) << st.ToString();
  if (!st.ok()) return r;
  r.loss = *static_cast<const float*>(s.Output("loss")->data);
  if (auto t = s.Output("loss_scale"); t.ok()) r.loss_scale = *static_cast<const float*>(t->data);
  if (auto t = s.Output("skipped"); t.ok()) r.skipped = *static_cast<const bool*>(t->data);
  auto g = s.Output("w.grad");
  EXPECT_TRUE(g.ok());
  if (g.ok()) r.grad.assign(static_cast<const float*>(g->data), static_cast<const float*>(g->data) + 16);
  return r;
}

std::vector<uint8_t> StateBytes(const Session& s, const TensorInfo& t) {
  size_t bytes = size_t(t.NumElements()) * (t.dtype == DataType::kF32 ? 4 : t.dtype == DataType::kI64 ? 8 : 2);
  std::vector<uint8_t> v(bytes);
  EXPECT_TRUE(s.ReadState(t.name, v.data(), v.size()).ok()) << t.name;
  return v;
}

float ReadF32(const Session& s, const std::string& name) {
  float v = 0;
  EXPECT_TRUE(s.ReadState(name, &v, 4).ok()) << name;
  return v;
}

int64_t ReadI64(const Session& s, const std::string& name) {
  int64_t v = 0;
  EXPECT_TRUE(s.ReadState(name, &v, 8).ok()) << name;
  return v;
}

std::vector<float> ReadFloatState(const Session& s, const std::string& name) {
  std::vector<float> v(16);
  EXPECT_TRUE(s.ReadState(name, v.data(), 64).ok()) << name;
  return v;
}

std::vector<uint16_t> ReadHalfState(const Session& s, const std::string& name) {
  std::vector<uint16_t> v(16);
  Status st = s.ReadState(name, v.data(), 32);
  EXPECT_TRUE(st.ok()) << st.ToString();
  return v;
}

// Round to nearest even, restated here: BF16 (the top half of the float, NaN kept quiet), or
// FP16 for the normal range of the values these tests use (|x| in [2^-14, 65504], or 0).
std::vector<uint16_t> Rounded(const std::vector<float>& x, bool bf16) {
  std::vector<uint16_t> r;
  for (float f : x) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    if (bf16) {
      r.push_back((u & 0x7fffffffu) > 0x7f800000u ? uint16_t((u >> 16) | 0x40) : uint16_t((u + 0x7fffu + ((u >> 16) & 1)) >> 16));
      continue;
    }
    uint32_t sign = (u >> 16) & 0x8000u, mag = u & 0x7fffffffu;
    if (mag == 0) {
      r.push_back(uint16_t(sign));
      continue;
    }
    EXPECT_GE(std::fabs(f), 0x1p-14f) << "outside the normal FP16 range this restatement covers";
    uint32_t exp = (mag >> 23) - 127 + 15, mant = mag & 0x7fffffu;
    uint32_t h = (exp << 10) | (mant >> 13), rest = mant & 0x1fffu;
    if (rest > 0x1000u || (rest == 0x1000u && (h & 1))) ++h;
    r.push_back(uint16_t(sign | h));
  }
  return r;
}

// GradScaler.update with growth 2, backoff 0.5: returns the next (scale, tracker).
std::pair<float, int64_t> GradScalerUpdate(float scale, int64_t tracker, bool found_inf, int64_t interval) {
  if (found_inf) return {std::max(scale * 0.5f, FLT_MIN), 0};
  if (tracker + 1 == interval) {
    float grown = scale * 2.0f;
    return {std::isfinite(grown) ? grown : scale, 0};
  }
  return {scale, tracker + 1};
}

TEST(LossScale, ScriptedNonFiniteStepsFollowGradScaler) {
  driver::TrainOptions o;
  o.precision = "fp16";
  o.lr = 0.5;
  o.momentum = 0.9;
  o.init_scale = 1024;
  o.init_scale_given = true;
  o.growth_interval = 3;
  o.growth_interval_given = true;
  auto plan = Compile(o);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->loss_scaling, "dynamic");
  SessionOptions so;
  so.profile = true;
  auto session = Session::FromBuffer(plan->plan.bytes.data(), plan->plan.bytes.size(), so);
  ASSERT_TRUE(session.ok()) << session.status().ToString();
  Session& s = **session;
  std::vector<float> label(16, 0.25f);
  // Bad steps (Inf in the batch) among good ones: growth at 3 clean steps, resets, back-to-back
  // backoffs, a bad first step after a growth.
  const std::vector<bool> bad = {false, false, false, true, false, false, false, false, true, true, false, false, false, true, false};
  float scale = 1024;
  int64_t tracker = 0;
  int skipped = 0;
  for (size_t i = 0; i < bad.size(); ++i) {
    SCOPED_TRACE("step " + std::to_string(i + 1));
    std::map<std::string, std::vector<uint8_t>> before;
    for (const TensorInfo& t : s.state()) before[t.name] = StateBytes(s, t);
    Step r = TrainStep(s, Identity(bad[i] ? std::numeric_limits<float>::infinity() : 1.0f), label);
    EXPECT_EQ(r.loss_scale, scale) << "the scale the step used";
    EXPECT_EQ(r.skipped, bad[i]);
    std::tie(scale, tracker) = GradScalerUpdate(scale, tracker, bad[i], 3);
    EXPECT_EQ(ReadF32(s, "amp.loss_scale"), scale);
    EXPECT_EQ(ReadI64(s, "amp.growth_tracker"), tracker);
    // A skipped step leaves every other state value bitwise as it was; an applied one moves the
    // weight, its momentum and the step counter. (The 16-bit working copy is derived state, not
    // in the list: it is checked below.)
    for (const TensorInfo& t : s.state()) {
      if (t.name == "amp.loss_scale" || t.name == "amp.growth_tracker") continue;
      bool same = StateBytes(s, t) == before[t.name];
      if (bad[i]) {
        EXPECT_TRUE(same) << t.name << " changed on a skipped step";
      } else if (t.name == "w" || t.name == "optimizer.step" || t.name == "w.momentum_buffer") {
        EXPECT_FALSE(same) << t.name << " did not move";
      }
    }
    skipped += bad[i];
    // The working copy follows the master, also over skipped steps.
    EXPECT_EQ(ReadHalfState(s, "w.working.fp16"), Rounded(ReadFloatState(s, "w"), false));
    // The optimizer's steps run under the same predicate as the updates (CPU plans), so they
    // write the weight and its momentum in place: no copy steps at the end.
    for (const StepProfile& p : s.profile())
      EXPECT_TRUE(p.node != "update w" && p.node != "update w.momentum_buffer" && p.node != "update w.working.fp16")
          << "a copy step: " << p.node;
  }
  EXPECT_EQ(ReadF32(s, "optimizer.step"), float(bad.size() - size_t(skipped))) << "the step counter counts applied steps";
  EXPECT_EQ(scale, 1024.0f * 2 * 0.5f * 2 * 0.25f * 2 * 0.5f) << "the script's own arithmetic";
}

TEST(LossScale, ScaleNeverReachesZeroOrInfinity) {
  // 200 bad steps in a row: halving from 65536 would reach 0 after about 165; the scale stops at
  // FP32's smallest normal. Then growth every step on zero gradients (x = 0; BF16 keeps FP32's
  // range, so loss x scale stays finite): the scale stops at the largest power of two, never Inf.
  driver::TrainOptions o;
  o.precision = "bf16";
  o.loss_scale = "dynamic";
  o.growth_interval = 1;
  o.growth_interval_given = true;
  auto plan = Compile(o);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  auto session = Session::FromBuffer(plan->plan.bytes.data(), plan->plan.bytes.size());
  ASSERT_TRUE(session.ok());
  Session& s = **session;
  std::vector<float> label(16, 0.5f), inf_x = Identity(std::numeric_limits<float>::infinity()), zero_x(16, 0.0f);
  for (int i = 0; i < 200; ++i) {
    Step r = TrainStep(s, inf_x, label);
    ASSERT_TRUE(r.skipped);
    ASSERT_GT(ReadF32(s, "amp.loss_scale"), 0.0f) << "step " << i + 1;
  }
  EXPECT_EQ(ReadF32(s, "amp.loss_scale"), FLT_MIN);
  for (int i = 0; i < 300; ++i) {
    Step r = TrainStep(s, zero_x, label);
    ASSERT_FALSE(r.skipped) << "step " << i + 1;
    ASSERT_TRUE(std::isfinite(ReadF32(s, "amp.loss_scale"))) << "step " << i + 1;
  }
  EXPECT_EQ(ReadF32(s, "amp.loss_scale"), std::ldexp(1.0f, 127));
}

// MSE against a label 1.6e-7 below y = x @ w = 0: dL/dy = 2 * 1.6e-7 / 16 = 2e-8, under half of
// FP16's smallest subnormal (5.96e-8), so the 16-bit gradient is 0 without scaling. With dynamic
// scaling (65536) it is 1.3e-3 while stored in FP16 and the weight gradient comes out right.
// x = 2^-9 I keeps the weights the label asks for (-8.2e-5) in FP16's normal range.
TEST(LossScale, SmallGradientsFlushWithoutScalingAndTrainWithIt) {
  const float c = 1.0f / 512;
  std::vector<float> label(16, -1.6e-7f), x = Diagonal(c, c);
  double want = double(c) * 2.0 * (0.0 - double(-1.6e-7f)) / 16.0;  // dL/dw[i][j] for x = cI, w = 0
  std::vector<float> losses[2];
  for (int scaled = 0; scaled < 2; ++scaled) {
    SCOPED_TRACE(scaled ? "dynamic loss scaling" : "no loss scaling");
    driver::TrainOptions o;
    o.precision = "fp16";
    o.loss_scale = scaled ? "dynamic" : "none";
    o.lr = 1 << 20;  // the MSE's curvature is 2c^2/16 = 2^-21: each step halves the error
    auto plan = Compile(o);
    ASSERT_TRUE(plan.ok()) << plan.status().ToString();
    auto session = Session::FromBuffer(plan->plan.bytes.data(), plan->plan.bytes.size());
    ASSERT_TRUE(session.ok());
    for (int i = 0; i < 10; ++i) {
      Step r = TrainStep(**session, x, label);
      losses[scaled].push_back(r.loss);
      if (i == 0) {
        double max_err = 0, max_abs = 0;
        for (float g : r.grad) max_err = std::max(max_err, std::fabs(double(g) - want)), max_abs = std::max(max_abs, std::fabs(double(g)));
        std::printf("%s: first gradient max |g| %.3g (float64 %.3g)\n", scaled ? "dynamic scaling" : "no scaling", max_abs, want);
        if (scaled) EXPECT_LE(max_err, 1e-3 * want) << "FP16 with scaling: within FP16's relative precision";
        else EXPECT_EQ(max_abs, 0.0) << "FP16 without scaling flushes these gradients to zero";
      }
    }
  }
  std::printf("losses with scaling:");
  for (float l : losses[1]) std::printf(" %.3g", l);
  std::printf("\nloss after 10 steps: %.3g without scaling, %.3g with (start %.3g)\n", losses[0].back(), losses[1].back(), losses[1].front());
  EXPECT_EQ(losses[0].back(), losses[0].front()) << "nothing trains without scaling";
  EXPECT_LT(losses[1].back(), 1e-4f * losses[1].front()) << "the error halves each step with scaling";
}

// 16-bit working copies are state the optimizer step rewrites with the masters: derived state,
// recomputed from the masters when state is written or loaded, never saved or written itself.
TEST(WorkingCopies, FollowTheMastersThroughWritesAndCheckpoints) {
  driver::TrainOptions o;
  o.precision = "bf16";
  o.lr = 0.375;
  o.momentum = 0.9;
  auto plan = Compile(o);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  auto opened = Session::FromBuffer(plan->plan.bytes.data(), plan->plan.bytes.size());
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  Session& s = **opened;
  for (const TensorInfo& t : s.state()) EXPECT_NE(t.name, "w.working.bf16") << "derived state is not the caller's state";
  EXPECT_EQ(s.programs(), (std::vector<std::string>{"train_step", "eval_step"}));
  std::vector<float> label(16, 0.25f);
  for (int i = 0; i < 3; ++i) {
    TrainStep(s, Identity(), label);
    EXPECT_EQ(ReadHalfState(s, "w.working.bf16"), Rounded(ReadFloatState(s, "w"), true)) << "after step " << i + 1;
  }
  // Written masters: the copy follows before it is read, and the next step computes with it
  // (x = I: y = w, and the MSE against 0 of w = 0.5 everywhere is 0.25, exactly).
  std::vector<float> half(16, 0.5f), zero(16, 0.0f);
  ASSERT_TRUE(s.WriteState("w", DataType::kF32, {4, 4}, half.data(), 64).ok());
  EXPECT_EQ(ReadHalfState(s, "w.working.bf16"), Rounded(half, true));
  ASSERT_TRUE(s.WriteState("w", DataType::kF32, {4, 4}, zero.data(), 64).ok());
  ASSERT_TRUE(s.WriteState("w", DataType::kF32, {4, 4}, half.data(), 64).ok());
  EXPECT_EQ(TrainStep(s, Identity(), std::vector<float>(16, 0.0f)).loss, 0.25f);
  std::vector<uint16_t> copy(16);
  Status refused = s.WriteState("w.working.bf16", DataType::kBF16, {4, 4}, copy.data(), 32);
  EXPECT_NE(refused.message().find("derived"), std::string::npos) << refused.ToString();
  // A checkpoint holds the masters only; a session that loads it continues exactly as the one
  // that saved it.
  std::string path = ::testing::TempDir() + "/working_copies.state";
  ASSERT_TRUE(s.SaveState(path).ok());
  auto records = rt::ReadStateFile(path, rt::StateSignature(s.state()));
  ASSERT_TRUE(records.ok()) << records.status().ToString();
  for (const rt::StateRecord& r : *records) EXPECT_NE(r.info.name, "w.working.bf16");
  auto other = Session::FromBuffer(plan->plan.bytes.data(), plan->plan.bytes.size());
  ASSERT_TRUE(other.ok());
  TrainStep(**other, Identity(), std::vector<float>(16, -1.0f));  // its own weights first
  ASSERT_TRUE((*other)->LoadState(path).ok());
  for (int i = 0; i < 2; ++i) {
    Step a = TrainStep(s, Identity(), label), b = TrainStep(**other, Identity(), label);
    EXPECT_EQ(a.loss, b.loss);
    EXPECT_EQ(ReadFloatState(s, "w"), ReadFloatState(**other, "w"));
    EXPECT_EQ(ReadFloatState(s, "w.momentum_buffer"), ReadFloatState(**other, "w.momentum_buffer"));
    EXPECT_EQ(ReadHalfState(s, "w.working.bf16"), ReadHalfState(**other, "w.working.bf16"));
  }
  std::remove(path.c_str());
}

TEST(LossScale, BadOptionsAreClearErrors) {
  auto error = [](driver::TrainOptions o) {
    auto plan = Compile(o);
    EXPECT_FALSE(plan.ok());
    return plan.ok() ? std::string() : plan.status().message();
  };
  driver::TrainOptions o;
  o.loss_scale = "dynamic";
  EXPECT_NE(error(o).find("an FP32 plan"), std::string::npos) << error(o);
  o.precision = "fp16";
  for (const char* bad : {"0", "-4", "inf", "nan", "1e39", "lots"}) {
    o.loss_scale = bad;
    std::string e = error(o);
    EXPECT_NE(e.find("--loss-scale"), std::string::npos) << bad << ": " << e;
  }
  o.loss_scale = "dynamic";
  o.init_scale = 0;
  EXPECT_NE(error(o).find("--init-scale"), std::string::npos) << error(o);
  o.init_scale = -1;
  EXPECT_NE(error(o).find("--init-scale"), std::string::npos) << error(o);
  o.init_scale = 65536;
  o.growth_interval = 0;
  EXPECT_NE(error(o).find("--growth-interval"), std::string::npos) << error(o);
  o.growth_interval = 2000;
  o.loss_scale = "none";
  o.init_scale_given = true;
  EXPECT_NE(error(o).find("applies to --loss-scale dynamic"), std::string::npos) << error(o);
  o.init_scale_given = false;
  o.precision = "fp8";
  EXPECT_NE(error(o).find("unknown precision"), std::string::npos) << error(o);
  o.precision = "fp16";
  o.clip_grad_norm = -1;
  EXPECT_NE(error(o).find("--clip-grad-norm"), std::string::npos) << error(o);
}

}  // namespace
}  // namespace precis
