// One training step of real architectures against PyTorch (torch_models.py defines, exports and
// trains them): a CNN with BatchNorm and MaxPool, ResNet-18 on 32x32 images, a BERT-style encoder
// and a GPT-style decoder with tied embeddings. Same initial weights and batch, SGD with momentum
// and weight decay; compared: the loss, the gradient of every weight (train_step exposes them
// with TrainOptions::gradient_outputs), every state value after the step (weights, momentum
// buffers, BatchNorm running statistics) and eval_step's loss after the step.
//
// References: the same step run by PyTorch in float64. Tolerance per tensor (and for the losses):
// rel L2 <= max(1e-5, 2 x the worst error of PyTorch's own FP32 step against float64). FP32 with
// any summation order is a few ulps per operation, but BatchNorm over few values per channel
// amplifies that (ResNet-18: PyTorch FP32 is ~8e-6 off float64 on this batch, up to 3e-4 on
// others); the bound says precis is at least as accurate as PyTorch's FP32 within a factor 2.
// A wrong rule (a missing term, a transposed filter gradient, biased instead of unbiased running
// variance) moves results by 1e-3 or more.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>
#include <cstdlib>
#include <cstring>
#include <fstream>

#include <gtest/gtest.h>

#include "compiler/driver/train.h"
#include "compiler/onnx/importer.h"
#include "precis/session.h"
#include "tests/train/train_test_util.h"
#include "tools/precis/tensor_io.h"

namespace precis {
namespace {

using train_test::Doubles;
using train_test::Floats;
using train_test::RelL2;

std::string RefDir() { return train_test::EnvDir("PRECIS_TORCH_MODELS"); }

void TrainOneStep(const std::string& name) {
  SCOPED_TRACE(name);
  std::string dir = RefDir() + "/" + name;
  auto model = onnx::ImportModelFile(dir + "/model.onnx");
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  driver::TrainOptions o;
  o.loss = "cross-entropy";
  o.label = "label";
  o.optimizer = "sgd";
  o.lr = 0.05;
  o.momentum = 0.9;
  o.weight_decay = 1e-4;
  o.gradient_outputs = true;
  auto compiled = driver::CompileTraining(**model, o);
  ASSERT_TRUE(compiled.ok()) << compiled.status().ToString();
  auto session = Session::FromBuffer(compiled->plan.bytes.data(), compiled->plan.bytes.size());
  ASSERT_TRUE(session.ok()) << session.status().ToString();
  Session& s = **session;
  auto batch = tools::ReadNpz(dir + "/inputs.npz");
  ASSERT_TRUE(batch.ok()) << batch.status().ToString();
  for (const auto& [input, t] : *batch) ASSERT_TRUE(s.SetInput(input, t.dtype, t.dims, t.data.data(), t.data.size()).ok()) << input;

  for (const TensorInfo& t : s.state()) {
    auto init = tools::ReadNpy(dir + "/init_state/" + t.name + ".npy");
    if (init.ok()) {
      ASSERT_TRUE(s.WriteState(t.name, init->dtype, init->dims, init->data.data(), init->data.size()).ok()) << t.name;
    }
  }
  Status st = s.Run("train_step");
  ASSERT_TRUE(st.ok()) << st.ToString();
  auto want_loss = tools::ReadNpy(dir + "/loss.npy");
  ASSERT_TRUE(want_loss.ok());
  auto torch_error = tools::ReadNpy(dir + "/torch_fp32_error.npy");
  ASSERT_TRUE(torch_error.ok());
  const double tol = std::max(1e-5, 2 * Doubles(*torch_error)[0]);
  std::printf("%s: tolerance rel L2 %.2g (torch's own FP32 step: %.2g)\n", name.c_str(), tol, Doubles(*torch_error)[0]);
  float loss = *static_cast<const float*>(s.Output("loss")->data);
  EXPECT_NEAR(loss, Doubles(*want_loss)[0], tol * std::fabs(Doubles(*want_loss)[0]));

  // A weight whose exact gradient is zero (a convolution bias before BatchNorm, which removes the
  // mean) gets FP32 rounding noise (~1e-8) on both sides: its gradient and momentum buffer are
  // compared absolutely (max |diff| <= 1e-6) instead of relatively.
  std::vector<std::pair<double, std::string>> errors;
  std::set<std::string> zero_gradient;
  for (const std::string& w : compiled->weights) {
    auto want = tools::ReadNpy(dir + "/grad/" + w + ".npy");
    ASSERT_TRUE(want.ok()) << "torch has no gradient for weight " << w;
    auto got = s.Output(w + ".grad");
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    std::vector<double> v = Doubles(*want);
    const float* g = static_cast<const float*>(got->data);
    double rms = 0, max_diff = 0;
    for (size_t i = 0; i < v.size(); ++i) rms += double(v[i]) * v[i], max_diff = std::max(max_diff, std::fabs(double(g[i]) - v[i]));
    if (std::sqrt(rms / double(std::max<size_t>(v.size(), 1))) < 1e-6) {
      zero_gradient.insert(w);
      EXPECT_LE(max_diff, 1e-6) << "gradient of " << w << " (exactly zero in exact arithmetic)";
      continue;
    }
    double e = RelL2(g, v);
    errors.push_back({e, "gradient " + w});
    EXPECT_LE(e, tol) << "gradient of " << w;
  }
  int compared = 0;
  for (const TensorInfo& t : s.state()) {
    auto want = tools::ReadNpy(dir + "/state/" + t.name + ".npy");
    if (!want.ok()) continue;  // optimizer.lr, optimizer.step, RNG state: no torch counterpart file
    std::vector<float> got(size_t(t.NumElements()));
    ASSERT_TRUE(s.ReadState(t.name, got.data(), got.size() * 4).ok());
    std::vector<double> v = Doubles(*want);
    ++compared;
    std::string weight = t.name.substr(0, t.name.rfind(".momentum_buffer"));
    if (t.name.size() > weight.size() && zero_gradient.count(weight)) {
      double max_diff = 0;
      for (size_t i = 0; i < v.size(); ++i) max_diff = std::max(max_diff, std::fabs(double(got[i]) - v[i]));
      EXPECT_LE(max_diff, 1e-6) << "state " << t.name << " (its gradient is exactly zero in exact arithmetic)";
      continue;
    }
    double e = RelL2(got.data(), v);
    errors.push_back({e, "state " + t.name});
    EXPECT_LE(e, tol) << "state " << t.name;
  }
  std::sort(errors.rbegin(), errors.rend());
  std::printf("%s: %zu tensors compared (rel L2), worst:", name.c_str(), errors.size());
  for (size_t i = 0; i < std::min<size_t>(4, errors.size()); ++i) std::printf(" %s %.2g;", errors[i].second.c_str(), errors[i].first);
  std::printf(" %zu zero-gradient weights compared absolutely\n", zero_gradient.size());
  EXPECT_GE(compared, int(2 * compiled->weights.size())) << "weights and momentum buffers";

  ASSERT_TRUE(s.Run("eval_step").ok());
  auto eval = tools::ReadNpy(dir + "/eval_loss.npy");
  ASSERT_TRUE(eval.ok());
  double want_eval = Doubles(*eval)[0];
  EXPECT_NEAR(*static_cast<const float*>(s.Output("loss")->data), want_eval, tol * std::fabs(want_eval));
}

class TrainModelsVsTorch : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_FALSE(RefDir().empty()) << "PRECIS_TORCH_MODELS must name the folder torch_models.py wrote"; }
};

TEST_F(TrainModelsVsTorch, CnnWithBatchNormAndMaxPool) { TrainOneStep("cnn_bn"); }
TEST_F(TrainModelsVsTorch, ResNet18) { TrainOneStep("resnet18"); }
TEST_F(TrainModelsVsTorch, BertStyleEncoder) { TrainOneStep("encoder"); }
TEST_F(TrainModelsVsTorch, GptStyleDecoderWithTiedEmbeddings) { TrainOneStep("gpt"); }

}  // namespace
}  // namespace precis
