// Training plans against PyTorch: the MLP of torch_reference.py (exported to ONNX with its
// initial weights) trained for 3 steps on one batch with each optimizer setting, compared with
// torch.optim on the same weights and batch: the loss of every step, every weight, every
// optimizer moment and the evaluation loss after the last step.
//
// Tolerance: rel L2 <= 1e-5 for weights and moments, |loss - torch| <= 1e-5 * |torch|. Both sides
// compute in FP32 with different summation orders (GEMM blocking, reductions), which moves results
// by a few ulps per step (~1e-7 relative); a wrong formula (a missing bias correction, decay
// applied twice, nesterov ignored) changes them by 1e-3 or more.
#include <cmath>
#include <cstdlib>
#include <cstring>

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

std::string RefDir() { return train_test::EnvDir("PRECIS_TORCH_REF"); }

void TrainAndCompare(const std::string& config, driver::TrainOptions options) {
  SCOPED_TRACE(config);
  std::string dir = RefDir();
  auto model = onnx::ImportModelFile(dir + "/mlp.onnx");
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  options.loss = "cross-entropy";
  options.label = "label";
  auto compiled = driver::CompileTraining(**model, options);
  ASSERT_TRUE(compiled.ok()) << compiled.status().ToString();
  EXPECT_EQ(compiled->weights.size(), 6u);  // fc1..fc3 weight and bias
  auto session = Session::FromBuffer(compiled->plan.bytes.data(), compiled->plan.bytes.size());
  ASSERT_TRUE(session.ok()) << session.status().ToString();
  Session& s = **session;
  EXPECT_EQ(s.programs(), (std::vector<std::string>{"train_step", "eval_step"}));
  auto x = tools::ReadNpy(dir + "/x.npy");
  auto label = tools::ReadNpy(dir + "/label.npy");
  ASSERT_TRUE(x.ok() && label.ok());
  ASSERT_TRUE(s.SetInput("x", x->dtype, x->dims, x->data.data(), x->data.size()).ok());
  ASSERT_TRUE(s.SetInput("label", label->dtype, label->dims, label->data.data(), label->data.size()).ok());
  auto losses = tools::ReadNpy(dir + "/" + config + "/losses.npy");
  ASSERT_TRUE(losses.ok());
  std::vector<float> want_loss = Floats(*losses);
  for (size_t step = 0; step < want_loss.size(); ++step) {
    Status st = s.Run("train_step");
    ASSERT_TRUE(st.ok()) << st.ToString();
    float loss = *static_cast<const float*>(s.Output("loss")->data);
    EXPECT_NEAR(loss, want_loss[step], 1e-5 * std::fabs(want_loss[step])) << "step " << step;
  }
  int compared = 0;
  for (const TensorInfo& t : s.state()) {
    auto want = tools::ReadNpy(dir + "/" + config + "/" + t.name + ".npy");
    if (!want.ok()) continue;  // optimizer.lr, optimizer.step: no torch counterpart file
    std::vector<float> got(size_t(t.NumElements()));
    ASSERT_TRUE(s.ReadState(t.name, got.data(), got.size() * 4).ok());
    EXPECT_LE(RelL2(got, Floats(*want)), 1e-5) << t.name;
    ++compared;
  }
  EXPECT_GE(compared, 6);
  ASSERT_TRUE(s.Run("eval_step").ok());
  auto eval = tools::ReadNpy(dir + "/" + config + "/eval_loss.npy");
  ASSERT_TRUE(eval.ok());
  float want_eval = Floats(*eval)[0];
  EXPECT_NEAR(*static_cast<const float*>(s.Output("loss")->data), want_eval, 1e-5 * std::fabs(want_eval));
}

class TrainVsTorch : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_FALSE(RefDir().empty()) << "PRECIS_TORCH_REF must name the folder torch_reference.py wrote"; }
};

TEST_F(TrainVsTorch, Sgd) {
  driver::TrainOptions o;
  o.optimizer = "sgd";
  o.lr = 0.1;
  TrainAndCompare("sgd", o);
}

TEST_F(TrainVsTorch, SgdMomentumWeightDecay) {
  driver::TrainOptions o;
  o.optimizer = "sgd";
  o.lr = 0.05;
  o.momentum = 0.9;
  o.weight_decay = 0.01;
  TrainAndCompare("sgd_momentum", o);
}

TEST_F(TrainVsTorch, SgdNesterov) {
  driver::TrainOptions o;
  o.optimizer = "sgd";
  o.lr = 0.05;
  o.momentum = 0.9;
  o.nesterov = true;
  TrainAndCompare("sgd_nesterov", o);
}

TEST_F(TrainVsTorch, AdamW) {
  driver::TrainOptions o;
  o.optimizer = "adamw";
  o.lr = 0.01;
  o.weight_decay = 0.05;
  TrainAndCompare("adamw", o);
}

TEST_F(TrainVsTorch, BadOptionsAreClearErrors) {
  auto model = onnx::ImportModelFile(RefDir() + "/mlp.onnx");
  ASSERT_TRUE(model.ok());
  driver::TrainOptions o;
  o.loss = "hinge";
  EXPECT_NE(driver::CompileTraining(**model, o).status().message().find("unknown loss 'hinge'"), std::string::npos);
  o.loss = "cross-entropy";
  o.optimizer = "lbfgs";
  EXPECT_NE(driver::CompileTraining(**model, o).status().message().find("unknown optimizer 'lbfgs'"), std::string::npos);
  o.optimizer = "sgd";
  o.label = "x";
  EXPECT_NE(driver::CompileTraining(**model, o).status().message().find("label name 'x'"), std::string::npos);
  o.label = "label";
  o.freeze = ".*";
  EXPECT_NE(driver::CompileTraining(**model, o).status().message().find("nothing to train"), std::string::npos);
  o.freeze = "";
  o.loss = "output";
  EXPECT_NE(driver::CompileTraining(**model, o).status().message().find("not a scalar"), std::string::npos);
}

TEST_F(TrainVsTorch, FrozenWeightsStayPut) {
  auto model = onnx::ImportModelFile(RefDir() + "/mlp.onnx");
  ASSERT_TRUE(model.ok());
  driver::TrainOptions o;
  o.freeze = "^fc1\\.";
  auto compiled = driver::CompileTraining(**model, o);
  ASSERT_TRUE(compiled.ok()) << compiled.status().ToString();
  EXPECT_EQ(compiled->weights, (std::vector<std::string>{"fc2.weight", "fc2.bias", "fc3.weight", "fc3.bias"}));
  EXPECT_EQ(compiled->frozen, (std::vector<std::string>{"fc1.weight", "fc1.bias"}));
}

}  // namespace
}  // namespace precis
