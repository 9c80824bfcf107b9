// One SGD step against PyTorch on the two models of torch_reference_layers.py, which exercise the
// gradient rules of MaxPool, AveragePool (ceil_mode, pads, count_include_pad 0), depthwise and
// grouped Conv, GlobalAveragePool, Gather (repeated indices), LayerNormalization, Erf-form GELU
// and tied embeddings (Gather and a MatMul through a Transpose read the same weight), Clip
// (ReLU6), and in a one-block decoder Slice, Split, Trilu and Where (causal mask), tanh-GELU.
//
// Compared: the loss, every updated weight, and every weight's gradient read back from the update
// as (w0 - w1) / lr. Tolerances: loss and updated weights rel L2 <= 1e-5 (FP32 on both sides with
// different summation orders: a few ulps, ~1e-7); the gradient read back through w0 - w1 loses
// the digits the subtraction cancels (|w0| / |lr * g| up to ~1e2 here, times FP32's 6e-8), so
// rel L2 <= 1e-4 for it. A wrong rule (a window sent to the wrong position, a group's filter
// gradient from another group's channels, a missing tied-weight contribution) is off by O(1).
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

constexpr double kLr = 0.1;

void StepAndCompare(const std::string& name, const std::string& input, size_t weights) {
  SCOPED_TRACE(name);
  const char* ref = std::getenv("PRECIS_TORCH_REF");
  ASSERT_TRUE(ref) << "PRECIS_TORCH_REF must name the folder torch_reference_layers.py wrote";
  std::string dir = std::string(ref) + "/" + name;
  auto model = onnx::ImportModelFile(dir + "/model.onnx");
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  driver::TrainOptions options;
  options.optimizer = "sgd";
  options.lr = kLr;
  auto compiled = driver::CompileTraining(**model, options);
  ASSERT_TRUE(compiled.ok()) << compiled.status().ToString();
  EXPECT_EQ(compiled->weights.size(), weights);
  auto session = Session::FromBuffer(compiled->plan.bytes.data(), compiled->plan.bytes.size());
  ASSERT_TRUE(session.ok()) << session.status().ToString();
  Session& s = **session;
  auto x = tools::ReadNpy(dir + "/input.npy");
  auto label = tools::ReadNpy(dir + "/label.npy");
  auto loss = tools::ReadNpy(dir + "/loss.npy");
  ASSERT_TRUE(x.ok() && label.ok() && loss.ok());
  ASSERT_TRUE(s.SetInput(input, x->dtype, x->dims, x->data.data(), x->data.size()).ok());
  ASSERT_TRUE(s.SetInput("label", label->dtype, label->dims, label->data.data(), label->data.size()).ok());
  Status st = s.Run("train_step");
  ASSERT_TRUE(st.ok()) << st.ToString();
  float want_loss = Floats(*loss)[0];
  float got_loss = *static_cast<const float*>(s.Output("loss")->data);
  EXPECT_LE(std::fabs(got_loss - want_loss), 1e-5 * std::fabs(want_loss));
  size_t compared = 0;
  for (const std::string& w : compiled->weights) {
    auto want = tools::ReadNpy(dir + "/" + w + ".npy");
    auto init = tools::ReadNpy(dir + "/" + w + ".init.npy");
    auto want_grad = tools::ReadNpy(dir + "/" + w + ".grad.npy");
    ASSERT_TRUE(want.ok() && init.ok() && want_grad.ok()) << w;
    std::vector<float> got(Floats(*want).size()), w0 = Floats(*init), grad(got.size());
    ASSERT_TRUE(s.ReadState(w, got.data(), got.size() * 4).ok()) << w;
    for (size_t i = 0; i < got.size(); ++i) grad[i] = float((double(w0[i]) - got[i]) / kLr);
    double weight_err = RelL2(got, Floats(*want)), grad_err = RelL2(grad, Floats(*want_grad));
    EXPECT_LE(weight_err, 1e-5) << w;
    EXPECT_LE(grad_err, 1e-4) << w;
    std::printf("%s %s: updated weight rel L2 %.2e, gradient rel L2 %.2e\n", name.c_str(), w.c_str(), weight_err, grad_err);
    ++compared;
  }
  EXPECT_EQ(compared, weights);
  std::printf("%s: loss %.8f vs torch %.8f\n", name.c_str(), got_loss, want_loss);
}

TEST(TrainLayersVsTorch, CnnWithPoolingAndGroupedConvolutions) { StepAndCompare("cnn", "x", 8); }

TEST(TrainLayersVsTorch, EmbeddingLayerNormGeluWithTiedEmbeddings) { StepAndCompare("embed", "ids", 6); }

TEST(TrainLayersVsTorch, DecoderWithCausalMaskAndTiedEmbeddings) { StepAndCompare("gpt", "ids", 16); }

}  // namespace
}  // namespace precis
