// BatchNormalization and Dropout in training plans.
//
// BatchNorm against PyTorch: the CNN of torch_bn_reference.py (Conv -> BatchNorm -> Relu -> Conv ->
// BatchNorm -> Relu -> Flatten -> Linear) in both ONNX forms torch exports, trained for 2 steps of
// SGD with momentum on one batch: the loss of each step, every weight and momentum buffer, the
// running statistics, and eval_step's loss (running statistics) against torch in eval mode.
// Tolerance: rel L2 <= 1e-5 (losses: |d| <= 1e-5 |torch|). Both sides compute in FP32 with different
// summation orders (a few ulps, ~1e-7); a wrong statistic (biased instead of unbiased running
// variance: factors n/(n-1) = 1.005 and 1.019 here, torch's momentum instead of ONNX's, running
// statistics in train_step or batch statistics in eval_step) moves the results by 1e-3 or more.
//
// Dropout: the generator against the Philox-4x32-10 known-answer vectors; the kernel's fraction of
// zeros against the ratio (binomial bound), surviving values scaled by 1/(1-p) exactly, masks that
// repeat for one (seed, counter, stream) and change with each; in a training plan, the weight
// gradient is masked like the forward (weights move exactly where the independently computed mask
// keeps), consecutive steps draw new masks, the seed and counter are plan state, and eval_step is
// the identity.
#include <cmath>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <random>
#include <sstream>

#include <gtest/gtest.h>

#include "compiler/driver/train.h"
#include "compiler/emit/plan_emitter.h"
#include "compiler/ir/text.h"
#include "compiler/onnx/importer.h"
#include "passes/infer_shapes.h"
#include "precis/session.h"
#include "runtime/kernels/philox.h"
#include "tests/train/train_test_util.h"
#include "tools/precis/tensor_io.h"

namespace precis {
namespace {

using train_test::Doubles;
using train_test::Floats;
using train_test::RelL2;

std::string RefDir() { return train_test::EnvDir("PRECIS_TORCH_BN_REF"); }

void TrainCnnAndCompare(const std::string& file, bool load_initial_statistics) {
  SCOPED_TRACE(file);
  const std::string dir = RefDir();
  ASSERT_FALSE(dir.empty()) << "PRECIS_TORCH_BN_REF must name the folder torch_bn_reference.py wrote";
  auto model = onnx::ImportModelFile(dir + "/" + file);
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  driver::TrainOptions o;
  o.optimizer = "sgd";
  o.lr = 0.1;
  o.momentum = 0.9;
  auto compiled = driver::CompileTraining(**model, o);
  ASSERT_TRUE(compiled.ok()) << compiled.status().ToString();
  EXPECT_EQ(compiled->weights.size(), 10u);  // conv1, bn1, conv2, bn2, fc: weight and bias each
  EXPECT_EQ(compiled->running_statistics,
            (std::vector<std::string>{"bn1.running_mean", "bn1.running_var", "bn2.running_mean", "bn2.running_var"}));
  auto session = Session::FromBuffer(compiled->plan.bytes.data(), compiled->plan.bytes.size());
  ASSERT_TRUE(session.ok()) << session.status().ToString();
  Session& s = **session;
  if (load_initial_statistics)
    for (const std::string& name : compiled->running_statistics) {
      auto t = tools::ReadNpy(dir + "/initial." + name + ".npy");
      ASSERT_TRUE(t.ok()) << t.status().ToString();
      ASSERT_TRUE(s.WriteState(name, t->dtype, t->dims, t->data.data(), t->data.size()).ok()) << name;
    }
  auto x = tools::ReadNpy(dir + "/x.npy");
  auto label = tools::ReadNpy(dir + "/label.npy");
  auto losses = tools::ReadNpy(dir + "/losses.npy");
  auto eval = tools::ReadNpy(dir + "/eval_loss.npy");
  ASSERT_TRUE(x.ok() && label.ok() && losses.ok() && eval.ok());
  ASSERT_TRUE(s.SetInput("x", x->dtype, x->dims, x->data.data(), x->data.size()).ok());
  ASSERT_TRUE(s.SetInput("label", label->dtype, label->dims, label->data.data(), label->data.size()).ok());
  std::vector<float> want_loss = Floats(*losses);
  float loss = 0;
  for (size_t step = 0; step < want_loss.size(); ++step) {
    Status st = s.Run("train_step");
    ASSERT_TRUE(st.ok()) << st.ToString();
    loss = *static_cast<const float*>(s.Output("loss")->data);
    EXPECT_NEAR(loss, want_loss[step], 1e-5 * std::fabs(want_loss[step])) << "step " << step;
  }
  int compared = 0;
  double worst = 0;
  for (const TensorInfo& t : s.state()) {
    auto want = tools::ReadNpy(dir + "/" + t.name + ".npy");
    if (!want.ok()) continue;  // optimizer.lr, optimizer.step
    std::vector<float> got(size_t(t.NumElements()));
    ASSERT_TRUE(s.ReadState(t.name, got.data(), got.size() * 4).ok());
    ++compared;
    std::vector<float> w = Floats(*want);
    if (t.name.rfind("conv", 0) == 0 && t.name.find(".bias.momentum_buffer") != std::string::npos) {
      // A bias feeding BatchNorm has a zero gradient (the batch mean removes it): both sides
      // hold rounding noise (~1e-8), so compare absolutely; a gradient that missed the mean's
      // dependence on X would be ~1e-2, as large as the other gradients here.
      for (size_t i = 0; i < w.size(); ++i) EXPECT_LE(std::fabs(got[i] - w[i]), 1e-6) << t.name << "[" << i << "]";
      continue;
    }
    double e = RelL2(got, w);
    worst = std::max(worst, e);
    EXPECT_LE(e, 1e-5) << t.name;
  }
  EXPECT_EQ(compared, 24);  // 10 weights, 10 momentum buffers, 4 running statistics
  ASSERT_TRUE(s.Run("eval_step").ok());
  float want_eval = Floats(*eval)[0];
  float got_eval = *static_cast<const float*>(s.Output("loss")->data);
  EXPECT_NEAR(got_eval, want_eval, 1e-5 * std::fabs(want_eval));
  std::printf("%s: last train loss %.8g (torch %.8g), worst state rel L2 %.3g, eval loss %.8g (torch %.8g)\n", file.c_str(), loss,
              want_loss.back(), worst, got_eval, want_eval);
}

// torch.onnx.export(..., training=TrainingMode.TRAINING): BatchNormalization with training_mode=1
// and 3 outputs. Exporting ran the model in train mode and moved the statistics in the file, so
// the test loads the ones torch trained from.
TEST(TrainBatchNorm, TrainingFormExportMatchesTorch) { TrainCnnAndCompare("cnn_train.onnx", true); }

// An eval-mode model exported with TrainingMode.PRESERVE: the inference form, statistics as saved.
TEST(TrainBatchNorm, InferenceFormExportMatchesTorch) { TrainCnnAndCompare("cnn_eval.onnx", false); }

// Random123's known-answer vectors for philox4x32-10 (kat_vectors).
TEST(Dropout, PhiloxKnownAnswers) {
  rt::Philox4x32 zero = rt::Philox4x32_10({{0, 0, 0, 0}}, 0, 0);
  EXPECT_EQ(zero.v[0], 0x6627e8d5u);
  EXPECT_EQ(zero.v[1], 0xe169c58du);
  EXPECT_EQ(zero.v[2], 0xbc57ac4cu);
  EXPECT_EQ(zero.v[3], 0x9b00dbd8u);
  rt::Philox4x32 ones = rt::Philox4x32_10({{~0u, ~0u, ~0u, ~0u}}, ~0u, ~0u);
  EXPECT_EQ(ones.v[0], 0x408f276du);
  EXPECT_EQ(ones.v[1], 0x41c83b0eu);
  EXPECT_EQ(ones.v[2], 0xa20bc7c6u);
  EXPECT_EQ(ones.v[3], 0x6d5451fdu);
}

constexpr int64_t kElements = 100000;
constexpr float kRatio = 0.3f;

// A plan running one DropoutTraining node over x [kElements] with seed and counter as inputs.
std::vector<uint8_t> DropoutPlan(int stream) {
  std::string text =
      "model {ir_version = 8, producer_name = \"t\", producer_version = \"\", domain = \"\", model_version = 0, opsets = {\"\" = 17}}\n"
      "graph \"g\" {\n  input %x: f32[" + std::to_string(kElements) + "]\n  input %seed: i64[]\n  input %counter: i64[]\n"
      "  %y, %mask = DropoutTraining(%x, %seed, %counter) {ratio = 0.3, stream = " + std::to_string(stream) + "}\n"
      "  output %y\n  output %mask\n}\n";
  auto m = ir::ParseModel(text);
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_TRUE(passes::InferShapesAndFold(**m).ok());
  auto p = emit::EmitPlan(**m, emit::EmitOptions{});
  EXPECT_TRUE(p.ok()) << p.status().ToString();
  return p.ok() ? p->bytes : std::vector<uint8_t>{};
}

struct Draw {
  std::vector<float> y;
  std::vector<uint8_t> mask;
};

Draw RunDropout(Session& s, const std::vector<float>& x, int64_t seed, int64_t counter) {
  EXPECT_TRUE(s.SetInput("x", DataType::kF32, {kElements}, x.data(), x.size() * 4).ok());
  EXPECT_TRUE(s.SetInput("seed", DataType::kI64, {}, &seed, 8).ok());
  EXPECT_TRUE(s.SetInput("counter", DataType::kI64, {}, &counter, 8).ok());
  EXPECT_TRUE(s.Run().ok());
  Draw d;
  const float* y = static_cast<const float*>(s.Output("y")->data);
  const uint8_t* m = static_cast<const uint8_t*>(s.Output("mask")->data);
  d.y.assign(y, y + kElements);
  d.mask.assign(m, m + kElements);
  return d;
}

TEST(Dropout, KernelDrawsTheRatioAndScalesSurvivors) {
  auto bytes = DropoutPlan(0), other_stream = DropoutPlan(1);
  auto s = Session::FromBuffer(bytes.data(), bytes.size());
  auto s1 = Session::FromBuffer(other_stream.data(), other_stream.size());
  ASSERT_TRUE(s.ok() && s1.ok());
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(0.1f, 2.0f);
  std::vector<float> x(kElements);
  for (float& v : x) v = u(rng);
  Draw a = RunDropout(**s, x, 42, 5);
  int64_t zeros = 0;
  const float scale = 1.0f / (1.0f - kRatio);
  for (int64_t i = 0; i < kElements; ++i) {
    bool kept = rt::DropoutWord(42, 5, 0, uint64_t(i)) >= rt::DropoutThreshold(kRatio);
    ASSERT_EQ(bool(a.mask[size_t(i)]), kept) << i;  // the mask is the generator's
    float want = kept ? x[size_t(i)] * scale : 0.0f;
    ASSERT_EQ(a.y[size_t(i)], want) << i;
    zeros += !kept;
  }
  // Binomial(n, p) zeros: standard deviation sqrt(p(1-p)/n) = 0.00145 of the fraction; 5 of them
  // (0.0072) fail a fair generator with probability < 1e-6, while a threshold off by 0.01 fails.
  double fraction = double(zeros) / double(kElements);
  EXPECT_NEAR(fraction, kRatio, 5 * std::sqrt(kRatio * (1 - kRatio) / kElements));
  std::printf("dropout ratio %.2f: zero fraction %.5f over %lld elements\n", double(kRatio), fraction, (long long)kElements);
  auto differing = [&](const Draw& b) {
    int64_t n = 0;
    for (int64_t i = 0; i < kElements; ++i) n += a.mask[size_t(i)] != b.mask[size_t(i)];
    return double(n) / double(kElements);
  };
  EXPECT_EQ(differing(RunDropout(**s, x, 42, 5)), 0.0);  // same seed and counter: same mask
  // Independent masks differ at a fraction 2p(1-p) = 0.42 of the elements.
  EXPECT_NEAR(differing(RunDropout(**s, x, 42, 6)), 0.42, 0.01);   // the next step
  EXPECT_NEAR(differing(RunDropout(**s, x, 43, 5)), 0.42, 0.01);   // another seed
  EXPECT_NEAR(differing(RunDropout(**s1, x, 42, 5)), 0.42, 0.01);  // another Dropout node
}

constexpr int kWidth = 256;

// y = Dropout(x * w) with the ratio as a constant input (opset 12+) or an attribute (before),
// trained with MSE: d loss / d w_j is (y_j - label_j) * mask_j / (1 - p) * x_j * 2 / width, zero
// exactly where the mask drops. w has x's shape: the gradient rules' Unbroadcast uses the
// opset-13 ReduceSum, so a broadcast Mul cannot be differentiated at opset 11 yet.
std::string DropoutModelText(double ratio, std::vector<float>& w, int opset = 13) {
  std::ostringstream t;
  t.precision(9);
  t << "model {ir_version = 8, producer_name = \"t\", producer_version = \"\", domain = \"\", model_version = 0, opsets = {\"\" = " << opset
    << "}}\n"
    << "graph \"g\" {\n  input %x: f32[1, " << kWidth << "]\n  const %w: f32[1, " << kWidth << "] = [";
  std::mt19937 rng(9);
  std::uniform_real_distribution<float> u(0.5f, 1.5f);
  w.resize(kWidth);
  for (int i = 0; i < kWidth; ++i) t << (i ? ", " : "") << (w[size_t(i)] = u(rng));
  t << "]\n  const %ratio: f32[] = [" << ratio << "]\n  %h = Mul(%x, %w)\n";
  if (opset >= 12) t << "  %y = Dropout(%h, %ratio) name \"drop\"\n";
  else t << "  %y = Dropout(%h) {ratio = " << ratio << "} name \"drop\"\n";
  t << "  output %y\n}\n";
  return t.str();
}

void CheckDropoutTraining(int opset) {
  SCOPED_TRACE("opset " + std::to_string(opset));
  std::vector<float> w0;
  auto m = ir::ParseModel(DropoutModelText(0.25, w0, opset));
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  driver::TrainOptions o;
  o.loss = "mse";
  o.lr = 0.5;
  auto compiled = driver::CompileTraining(**m, o);
  ASSERT_TRUE(compiled.ok()) << compiled.status().ToString();
  auto session = Session::FromBuffer(compiled->plan.bytes.data(), compiled->plan.bytes.size());
  ASSERT_TRUE(session.ok()) << session.status().ToString();
  Session& s = **session;
  std::vector<float> x(kWidth), label(kWidth);
  std::mt19937 rng(4);
  std::uniform_real_distribution<float> u(0.5f, 2.0f);
  for (int i = 0; i < kWidth; ++i) x[size_t(i)] = u(rng), label[size_t(i)] = -u(rng);  // y - label never 0
  ASSERT_TRUE(s.SetInput("x", DataType::kF32, {1, kWidth}, x.data(), x.size() * 4).ok());
  ASSERT_TRUE(s.SetInput("label", DataType::kF32, {1, kWidth}, label.data(), label.size() * 4).ok());
  const int64_t seed = 1234;
  ASSERT_TRUE(s.WriteState("dropout.seed", DataType::kI64, {}, &seed, 8).ok());
  std::vector<float> before = w0, after(kWidth);
  const uint32_t threshold = rt::DropoutThreshold(0.25f);
  std::vector<bool> first_mask;
  for (int64_t step = 0; step < 2; ++step) {
    ASSERT_TRUE(s.Run("train_step").ok());
    ASSERT_TRUE(s.ReadState("w", after.data(), after.size() * 4).ok());
    int dropped = 0, differs = 0;
    for (int j = 0; j < kWidth; ++j) {
      bool kept = rt::DropoutWord(uint64_t(seed), uint64_t(step), 0, uint64_t(j)) >= threshold;
      EXPECT_EQ(after[size_t(j)] != before[size_t(j)], kept) << "step " << step << ", w[" << j << "]";
      dropped += !kept;
      if (step == 0) first_mask.push_back(kept);
      else differs += first_mask[size_t(j)] != kept;
    }
    EXPECT_GT(dropped, kWidth / 8);  // about a quarter: the check above saw both cases
    EXPECT_LT(dropped, kWidth / 2);
    if (step == 1) {
      EXPECT_GT(differs, kWidth / 8);  // consecutive steps draw different masks
    }
    before = after;
  }
  int64_t counter = -1;
  ASSERT_TRUE(s.ReadState("dropout.counter", &counter, 8).ok());
  EXPECT_EQ(counter, 2);
  ASSERT_TRUE(s.Run("eval_step").ok());
  const float* y = static_cast<const float*>(s.Output("y")->data);
  for (int j = 0; j < kWidth; ++j) ASSERT_EQ(y[j], x[size_t(j)] * after[size_t(j)]) << j;  // the identity: exactly x * w
}

TEST(Dropout, TrainStepMasksTheGradientAndEvalStepIsTheIdentity) {
  CheckDropoutTraining(13);  // ratio input
  CheckDropoutTraining(11);  // ratio attribute
}

// The generator's position is plan state: a state file saved after one step and loaded into a
// fresh session continues with the same mask, bitwise.
TEST(Dropout, SavedStateResumesTheSameMasks) {
  std::vector<float> w0;
  auto m = ir::ParseModel(DropoutModelText(0.25, w0));
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  driver::TrainOptions o;
  o.loss = "mse";
  o.lr = 0.5;
  auto compiled = driver::CompileTraining(**m, o);
  ASSERT_TRUE(compiled.ok()) << compiled.status().ToString();
  const std::vector<uint8_t>& plan = compiled->plan.bytes;
  std::vector<float> x(kWidth, 1.25f), label(kWidth, -1.0f);
  auto run = [&](Session& s) {
    EXPECT_TRUE(s.SetInput("x", DataType::kF32, {1, kWidth}, x.data(), x.size() * 4).ok());
    EXPECT_TRUE(s.SetInput("label", DataType::kF32, {1, kWidth}, label.data(), label.size() * 4).ok());
    EXPECT_TRUE(s.Run("train_step").ok());
    std::vector<float> w(kWidth);
    EXPECT_TRUE(s.ReadState("w", w.data(), w.size() * 4).ok());
    return w;
  };
  std::string path = ::testing::TempDir() + "/dropout_state.bin";
  auto a = Session::FromBuffer(plan.data(), plan.size());
  auto b = Session::FromBuffer(plan.data(), plan.size());
  ASSERT_TRUE(a.ok() && b.ok());
  const int64_t seed = 99;
  ASSERT_TRUE((*a)->WriteState("dropout.seed", DataType::kI64, {}, &seed, 8).ok());
  run(**a);
  ASSERT_TRUE((*a)->SaveState(path).ok());
  std::vector<float> uninterrupted = run(**a);
  ASSERT_TRUE((*b)->LoadState(path).ok());
  std::vector<float> resumed = run(**b);
  EXPECT_EQ(std::memcmp(uninterrupted.data(), resumed.data(), uninterrupted.size() * 4), 0);
  std::remove(path.c_str());
}

TEST(Dropout, RatioZeroIsTheIdentity) {
  std::vector<float> w0;
  auto m = ir::ParseModel(DropoutModelText(0.0, w0));
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  driver::TrainOptions o;
  o.loss = "mse";
  auto compiled = driver::CompileTraining(**m, o);
  ASSERT_TRUE(compiled.ok()) << compiled.status().ToString();
  auto session = Session::FromBuffer(compiled->plan.bytes.data(), compiled->plan.bytes.size());
  ASSERT_TRUE(session.ok());
  for (const TensorInfo& t : (*session)->state()) EXPECT_EQ(t.name.rfind("dropout.", 0), std::string::npos) << t.name;
}

}  // namespace
}  // namespace precis

namespace precis {
namespace {

std::string CompileError(const std::string& body, const std::string& inputs) {
  std::string text =
      "model {ir_version = 8, producer_name = \"t\", producer_version = \"\", domain = \"\", model_version = 0, opsets = {\"\" = 15}}\n"
      "graph \"g\" {\n" + inputs + "  const %s: f32[2] = [1.0, 1.5]\n  const %b: f32[2] = [0.1, 0.2]\n"
      "  const %m: f32[2] = [0.0, 0.5]\n  const %v: f32[2] = [1.0, 2.0]\n" + body + "  output %y\n}\n";
  auto m = ir::ParseModel(text);
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  if (!m.ok()) return "";
  driver::TrainOptions o;
  o.loss = "mse";
  auto compiled = driver::CompileTraining(**m, o);
  if (!compiled.ok()) std::printf("refused: %s\n", compiled.status().ToString().c_str());
  return compiled.ok() ? "" : compiled.status().ToString();
}

TEST(TrainingForms, BadModelsAreClearErrors) {
  // One value per channel: the unbiased variance would divide by zero (torch refuses it too).
  EXPECT_NE(CompileError("  %y = BatchNormalization(%x, %s, %b, %m, %v) name \"bn\"\n", "  input %x: f32[1, 2]\n").find("'bn'"), std::string::npos);
  EXPECT_NE(CompileError("  %y = BatchNormalization(%x, %s, %b, %m, %v) name \"bn\"\n", "  input %x: f32[1, 2]\n").find("more than one value per channel"),
            std::string::npos);
  // The running statistics outputs of the training form read by the model.
  EXPECT_NE(CompileError("  %y0, %rm, %rv = BatchNormalization(%x, %s, %b, %m, %v) {training_mode = 1} name \"bn\"\n  %y = Add(%y0, %rm)\n",
                         "  input %x: f32[4, 2]\n")
                .find("output 1 (running or saved statistics) is read by the model"),
            std::string::npos);
  // A Dropout ratio computed at run time.
  EXPECT_NE(CompileError("  %r = ReduceMean(%s) {keepdims = 0}\n  %d = Dropout(%x, %r) name \"drop\"\n  %y = Mul(%d, %s)\n", "  input %x: f32[4, 2]\n")
                .find("'drop'"),
            std::string::npos);
}

}  // namespace
}  // namespace precis

namespace precis {
namespace {

// eval_step runs its own graph; a frozen weight, a constant of both graphs, is stored once.
TEST(TrainingForms, FrozenWeightsAreStoredOnce) {
  std::ostringstream t;
  t << "model {ir_version = 8, producer_name = \"t\", producer_version = \"\", domain = \"\", model_version = 0, opsets = {\"\" = 13}}\n"
    << "graph \"g\" {\n  input %x: f32[64, 64]\n  const %w: f32[64] = [";
  for (int i = 0; i < 64; ++i) t << (i ? ", " : "") << 0.5 + i * 0.01;
  t << "]\n  const %frozen: f32[64, 64] = [";
  for (int i = 0; i < 64 * 64; ++i) t << (i ? ", " : "") << 1.5 - (i % 97) * 0.01;
  t << "]\n  %h = Mul(%x, %w)\n  %y = Mul(%h, %frozen)\n  output %y\n}\n";
  auto m = ir::ParseModel(t.str());
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  driver::TrainOptions o;
  o.loss = "mse";
  o.freeze = "^frozen$";
  auto compiled = driver::CompileTraining(**m, o);
  ASSERT_TRUE(compiled.ok()) << compiled.status().ToString();
  EXPECT_EQ(compiled->frozen, std::vector<std::string>{"frozen"});
  // The frozen weight (16 KiB), the gradient of the mean loss (constant folding turns the
  // expanded 1/n of the loss seed into a 16 KiB constant), the trained weight's initial value
  // (256 B) and a few scalars: 33,344 bytes measured; a second copy of the frozen weight makes
  // 49,728.
  std::printf("constants: %zu bytes\n", compiled->plan.constant_bytes);
  EXPECT_GE(compiled->plan.constant_bytes, 2 * 16384u);
  EXPECT_LT(compiled->plan.constant_bytes, 2 * 16384u + 4096u);
}

}  // namespace
}  // namespace precis
