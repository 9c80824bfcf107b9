// Plan file and session tests: a small model compiled from text IR runs correctly; bad plans
// (truncated, wrong magic, newer version, corrupted) and bad inputs (name, dtype, shape, size)
// are refused with clear messages; compiling twice gives identical bytes.
#include <cmath>
#include <cstring>

#include <gtest/gtest.h>

#include "compiler/ir/text.h"
#include "compiler/driver/compile.h"
#include "precis/session.h"
#include "tests/runtime/plan_test_util.h"
#include "runtime/base/hash.h"
#include "runtime/plan/plan_format.h"

namespace precis {
namespace {

using testing::Reseal;

// y = Relu(x @ W + b) with W and b constants; x: f32[2,3].
constexpr const char* kModel = R"(
model {ir_version = 8, producer_name = "test", producer_version = "", domain = "", model_version = 0, opsets = {"" = 17}}
graph "mlp" {
  input %x: f32[N,3]
  const %W: f32[3,2] = [1.0, -1.0, 0.5, 2.0, -0.25, 0.75]
  const %b: f32[2] = [0.1, -0.2]
  %h = MatMul(%x, %W)
  %a = Add(%h, %b)
  %y = Relu(%a)
  output %y
}
)";

std::vector<uint8_t> CompilePlan(int64_t batch = 2) {
  auto model = ir::ParseModel(kModel);
  EXPECT_TRUE(model.ok()) << model.status().ToString();
  driver::CompileOptions options;
  options.shapes["x"] = {batch, 3};
  auto result = driver::Compile(**model, options);
  EXPECT_TRUE(result.ok()) << result.status().ToString();
  return result->plan.bytes;
}

TEST(PlanFile, RunsAndMatchesADoubleReference) {
  auto bytes = CompilePlan();
  auto session = Session::FromBuffer(bytes.data(), bytes.size());
  ASSERT_TRUE(session.ok()) << session.status().ToString();
  std::vector<float> x = {0.5f, -1.5f, 2.0f, 3.0f, 0.25f, -0.75f};
  ASSERT_TRUE((*session)->SetInput("x", DataType::kF32, {2, 3}, x.data(), x.size() * 4).ok());
  ASSERT_TRUE((*session)->Run().ok());
  auto y = (*session)->Output("y");
  ASSERT_TRUE(y.ok());
  EXPECT_EQ(y->info.dims, (std::vector<int64_t>{2, 2}));
  const double W[3][2] = {{1.0, -1.0}, {0.5, 2.0}, {-0.25, 0.75}}, b[2] = {0.1, -0.2};
  const float* out = static_cast<const float*>(y->data);
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 2; ++j) {
      double acc = b[j];
      for (int k = 0; k < 3; ++k) acc += double(x[size_t(i * 3 + k)]) * W[k][j];
      // fp32 accumulation of three terms: a few ulps.
      EXPECT_NEAR(out[i * 2 + j], std::max(acc, 0.0), 1e-6) << i << "," << j;
    }
}

TEST(PlanFile, CompilingTwiceGivesIdenticalBytes) { EXPECT_EQ(CompilePlan(), CompilePlan()); }

TEST(PlanFile, TruncatedPlansAreRefused) {
  auto bytes = CompilePlan();
  for (size_t n : {size_t(0), size_t(10), size_t(63), size_t(64), bytes.size() / 2, bytes.size() - 1}) {
    auto s = Session::FromBuffer(bytes.data(), n);
    ASSERT_FALSE(s.ok()) << n;
    EXPECT_NE(s.status().message().find("truncated"), std::string::npos) << s.status().ToString();
  }
}

TEST(PlanFile, WrongMagicIsRefused) {
  auto bytes = CompilePlan();
  bytes[0] = 'X';
  auto s = Session::FromBuffer(bytes.data(), bytes.size());
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("magic"), std::string::npos);
}

TEST(PlanFile, NewerVersionIsRefused) {
  auto bytes = CompilePlan();
  plan::FileHeader h;
  std::memcpy(&h, bytes.data(), sizeof h);
  h.version = plan::kFormatVersion + 1;
  std::memcpy(bytes.data(), &h, sizeof h);
  Reseal(bytes);
  auto s = Session::FromBuffer(bytes.data(), bytes.size());
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), StatusCode::kUnimplemented);
  EXPECT_NE(s.status().message().find("newer"), std::string::npos);
}

TEST(PlanFile, CorruptedBytesFailTheChecksum) {
  auto bytes = CompilePlan();
  for (size_t at : {size_t(70), bytes.size() / 2, bytes.size() - 1}) {
    auto copy = bytes;
    copy[at] ^= 0x5a;
    auto s = Session::FromBuffer(copy.data(), copy.size());
    ASSERT_FALSE(s.ok()) << at;
    EXPECT_NE(s.status().message().find("checksum"), std::string::npos) << s.status().ToString();
  }
}

TEST(PlanFile, CorruptedMetadataWithValidChecksumIsRefused) {
  auto bytes = CompilePlan();
  plan::FileHeader h;
  std::memcpy(&h, bytes.data(), sizeof h);
  // Scribble over the FlatBuffers root offset, then reseal so only the verifier can notice.
  std::memset(bytes.data() + h.meta_offset, 0xff, 4);
  Reseal(bytes);
  auto s = Session::FromBuffer(bytes.data(), bytes.size());
  ASSERT_FALSE(s.ok());
}

TEST(PlanFile, BadInputsAreClearErrors) {
  auto bytes = CompilePlan();
  auto session = Session::FromBuffer(bytes.data(), bytes.size());
  ASSERT_TRUE(session.ok());
  std::vector<float> x(6, 1.0f);
  std::vector<double> xd(6, 1.0);
  auto wrong_name = (*session)->SetInput("z", DataType::kF32, {2, 3}, x.data(), 24);
  EXPECT_NE(wrong_name.message().find("no input named 'z'"), std::string::npos) << wrong_name.ToString();
  auto wrong_dtype = (*session)->SetInput("x", DataType::kF64, {2, 3}, xd.data(), 48);
  EXPECT_NE(wrong_dtype.message().find("must be f32, got f64"), std::string::npos) << wrong_dtype.ToString();
  auto wrong_shape = (*session)->SetInput("x", DataType::kF32, {3, 2}, x.data(), 24);
  EXPECT_NE(wrong_shape.message().find("must have shape 2x3, got 3x2"), std::string::npos) << wrong_shape.ToString();
  auto wrong_size = (*session)->BindInput("x", x.data(), 20);
  EXPECT_NE(wrong_size.message().find("needs 24 bytes"), std::string::npos) << wrong_size.ToString();
}

TEST(PlanFile, BoundOutputReceivesTheResult) {
  auto bytes = CompilePlan(1);
  auto session = Session::FromBuffer(bytes.data(), bytes.size());
  ASSERT_TRUE(session.ok());
  std::vector<float> x = {1.0f, 2.0f, 3.0f}, y(2, -7.0f);
  ASSERT_TRUE((*session)->BindInput("x", x.data(), 12).ok());
  ASSERT_TRUE((*session)->BindOutput("y", y.data(), 8).ok());
  ASSERT_TRUE((*session)->Run().ok());
  // x @ W + b = [1*1 + 2*0.5 + 3*-0.25 + 0.1, 1*-1 + 2*2 + 3*0.75 - 0.2] = [1.35, 5.05]
  EXPECT_NEAR(y[0], 1.35f, 1e-6);
  EXPECT_NEAR(y[1], 5.05f, 1e-6);
}

}  // namespace
}  // namespace precis
