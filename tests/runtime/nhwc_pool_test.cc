// The channels-last pools (fast_nhwc_pool.cc, the kernels of layout = "NHWC" pool steps) and
// BatchNormalization (nn_norm.cc) against the reference NCHW kernels on the same data permuted: MaxPool and AveragePool with
// strides, asymmetric pads, dilations, ceil_mode, count_include_pad, windows that reach only
// padding; GlobalAveragePool and GlobalMaxPool; batch 1 and 3, channels 1, 3, 17 and 300 (past
// one 256-channel block); f32, f16 and bf16; 1 and 2 threads. The kernels promise the reference's
// values bit for bit (same window ranges, scan order, float accumulation and NaN rules), so the
// comparison is exact, with NaNs and -0 among the inputs. Outputs start as NaN.
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "runtime/base/half.h"
#include "runtime/cpu/kernel.h"
#include "tests/runtime/kernel_test_util.h"

namespace precis::rt {
namespace {

using testing::AttrList;
using testing::Numel;

using Bytes = testing::TypedBuffer;

size_t Element(const Bytes& b) { return DataTypeSize(b.t.dtype); }

// dst[n, h, w, c] = src[n, c, h, w] (bytes of one element each).
void ToChannelsLast(const Bytes& src, Bytes& dst) {
  const auto& d = src.t.dims;
  size_t e = Element(src);
  for (int64_t n = 0; n < d[0]; ++n)
    for (int64_t c = 0; c < d[1]; ++c)
      for (int64_t i = 0; i < d[2] * d[3]; ++i)
        std::memcpy(&dst.bytes[size_t((n * d[2] * d[3] + i) * d[1] + c) * e], &src.bytes[size_t((n * d[1] + c) * d[2] * d[3] + i) * e], e);
}

// Outputs start as NaN (TypedBuffer::Poison), scratch as 0xff.
Status Run(KernelFactory factory, Bytes& x, Bytes& y, Attributes attrs, int threads) {
  return testing::RunKernel(factory, {&x}, {&y}, attrs, threads);
}

struct PoolCase {
  std::string op;
  std::vector<int64_t> x;  // N, C, H, W
  std::vector<int64_t> kernel = {}, strides = {}, pads = {}, dilations = {};
  int64_t ceil_mode = 0, count_include_pad = 0;
};

// Output spatial size as the reference kernel computes it (ReadWindow), for the output buffer.
int64_t OutSize(int64_t in, int64_t k, int64_t s, int64_t pb, int64_t pe, int64_t d, bool ceil) {
  int64_t span = in + pb + pe - ((k - 1) * d + 1);
  int64_t out = (ceil ? (span + s - 1) / s : span / s) + 1;
  if (ceil && (out - 1) * s >= in + pb) --out;  // the last window must start inside input or begin pads
  return out;
}

void Check(const PoolCase& c, DataType dtype) {
  std::string what = c.op + " x [" + std::to_string(c.x[0]) + "," + std::to_string(c.x[1]) + "," + std::to_string(c.x[2]) + "," +
                     std::to_string(c.x[3]) + "] " + DataTypeName(dtype);
  SCOPED_TRACE(what);
  bool global = c.op.rfind("Global", 0) == 0;
  AttrList attrs;
  int64_t oh = 1, ow = 1;
  if (!global) {
    std::vector<int64_t> s = c.strides.empty() ? std::vector<int64_t>{1, 1} : c.strides;
    std::vector<int64_t> p = c.pads.empty() ? std::vector<int64_t>{0, 0, 0, 0} : c.pads;
    std::vector<int64_t> d = c.dilations.empty() ? std::vector<int64_t>{1, 1} : c.dilations;
    oh = OutSize(c.x[2], c.kernel[0], s[0], p[0], p[2], d[0], c.ceil_mode);
    ow = OutSize(c.x[3], c.kernel[1], s[1], p[1], p[3], d[1], c.ceil_mode);
    attrs.Ints("kernel_shape", c.kernel).Ints("strides", s).Ints("pads", p).Int("ceil_mode", c.ceil_mode);
    if (c.op == "MaxPool") attrs.Ints("dilations", d);
    else attrs.Int("count_include_pad", c.count_include_pad);
  }
  attrs.String("layout", "NHWC");
  Attributes a = attrs.Finish();
  Bytes x(dtype, c.x), y(dtype, {c.x[0], c.x[1], oh, ow});
  std::mt19937 rng(uint32_t(c.x[1] * 131 + c.x[2]));
  std::uniform_real_distribution<float> u(-4.0f, 4.0f);
  for (int64_t i = 0; i < x.t.numel; ++i) {
    uint32_t r = rng() % 50;
    x.Set(i, r == 0 ? std::numeric_limits<float>::quiet_NaN() : r == 1 ? -0.0f : u(rng));
  }
  if (c.x[2] * c.x[3] >= 4)  // one all-NaN plane: NaN must win there
    for (int64_t i = 0; i < c.x[2] * c.x[3]; ++i) x.Set(i, std::numeric_limits<float>::quiet_NaN());
  const KernelRegistry& r = KernelRegistry::Cpu();
  ASSERT_TRUE(r.FindNhwc(c.op)) << "no channels-last kernel";
  Status st = Run(r.Find(c.op), x, y, a, 1);
  ASSERT_TRUE(st.ok()) << "reference: " << st.ToString();
  Bytes xl(dtype, {c.x[0], c.x[2], c.x[3], c.x[1]}), want(dtype, {c.x[0], oh, ow, c.x[1]}), got(dtype, {c.x[0], oh, ow, c.x[1]});
  ToChannelsLast(x, xl);
  ToChannelsLast(y, want);
  for (int threads : {1, 2}) {
    st = Run(r.FindNhwc(c.op), xl, got, a, threads);
    ASSERT_TRUE(st.ok()) << st.ToString();
    size_t e = Element(got);
    int bad = 0;
    for (int64_t i = 0; i < got.t.numel && bad < 5; ++i)
      if (std::memcmp(&got.bytes[size_t(i) * e], &want.bytes[size_t(i) * e], e) != 0) {
        ADD_FAILURE() << threads << " threads: element " << i << " differs from the reference kernel's";
        ++bad;
      }
  }
}

const DataType kTypes[] = {DataType::kF32, DataType::kF16, DataType::kBF16};

TEST(ChannelsLastPools, MaxPoolMatchesReference) {
  for (DataType t : kTypes)
    for (int64_t n : {1, 3})
      for (int64_t ch : {1, 3, 17, 300}) {
        Check({"MaxPool", {n, ch, 12, 12}, {3, 3}, {2, 2}, {1, 1, 1, 1}}, t);
        Check({"MaxPool", {n, ch, 7, 9}, {2, 3}, {2, 1}, {0, 1, 2, 0}, {2, 1}}, t);         // asymmetric pads, dilation
        Check({"MaxPool", {n, ch, 7, 7}, {3, 3}, {2, 2}, {0, 0, 0, 0}, {}, 1}, t);          // ceil_mode
        Check({"MaxPool", {n, ch, 2, 2}, {3, 3}, {3, 3}, {2, 2, 2, 2}}, t);                 // windows of padding only
      }
}

TEST(ChannelsLastPools, AveragePoolMatchesReference) {
  for (DataType t : kTypes)
    for (int64_t n : {1, 3})
      for (int64_t ch : {1, 17, 300})
        for (int64_t include : {0, 1}) {
          Check({"AveragePool", {n, ch, 12, 12}, {3, 3}, {2, 2}, {1, 1, 1, 1}, {}, 0, include}, t);
          Check({"AveragePool", {n, ch, 7, 9}, {2, 3}, {2, 1}, {0, 1, 2, 0}, {}, 0, include}, t);
          Check({"AveragePool", {n, ch, 7, 7}, {3, 3}, {2, 2}, {1, 1, 1, 1}, {}, 1, include}, t);  // ceil tail never counted
          Check({"AveragePool", {n, ch, 2, 2}, {3, 3}, {3, 3}, {2, 2, 2, 2}, {}, 0, include}, t);
        }
}

TEST(ChannelsLastPools, GlobalPoolsMatchReference) {
  for (DataType t : kTypes)
    for (int64_t n : {1, 3})
      for (int64_t ch : {1, 3, 17, 300, 600})
        for (const char* op : {"GlobalAveragePool", "GlobalMaxPool"}) {
          Check({op, {n, ch, 7, 7}}, t);
          Check({op, {n, ch, 1, 1}}, t);
          Check({op, {n, ch, 3, 5}}, t);
        }
}

// Inference BatchNormalization: y = x * a[c] + b[c], the same coefficients and arithmetic as the
// NCHW kernel, so the same bits; parameters constant (folded at Init) or computed (at Run).
TEST(ChannelsLastPools, BatchNormalizationMatchesReference) {
  const KernelRegistry& r = KernelRegistry::Cpu();
  ASSERT_TRUE(r.FindNhwc("BatchNormalization"));
  for (DataType t : kTypes)
    for (bool constant : {true, false})
      for (std::vector<int64_t> dims : {std::vector<int64_t>{1, 17, 5, 7}, std::vector<int64_t>{3, 300, 2, 3}, std::vector<int64_t>{2, 1, 4, 4}}) {
        SCOPED_TRACE(std::string(DataTypeName(t)) + (constant ? " constant" : " computed") + " C " + std::to_string(dims[1]));
        std::mt19937 rng(static_cast<uint32_t>(dims[1]));
        std::uniform_real_distribution<float> u(-3.0f, 3.0f), pos(0.1f, 2.0f);
        Bytes x(t, dims), y(t, dims);
        for (int64_t i = 0; i < x.t.numel; ++i) x.Set(i, i % 37 == 0 ? std::numeric_limits<float>::quiet_NaN() : u(rng));
        std::vector<Bytes> params;
        for (int k = 0; k < 4; ++k) {
          params.emplace_back(t, std::vector<int64_t>{dims[1]});
          for (int64_t c = 0; c < dims[1]; ++c) params.back().Set(c, k == 3 ? pos(rng) : u(rng));
          params.back().t.is_constant = constant;
        }
        AttrList attrs;
        attrs.Float("epsilon", 1e-3f).String("layout", "NHWC");
        Attributes a = attrs.Finish();
        ASSERT_TRUE(testing::RunKernel(r.Find("BatchNormalization"), {&x, &params[0], &params[1], &params[2], &params[3]}, {&y}, a, 1).ok());
        Bytes xl(t, {dims[0], dims[2], dims[3], dims[1]}), want(t, {dims[0], dims[2], dims[3], dims[1]}), got(t, {dims[0], dims[2], dims[3], dims[1]});
        ToChannelsLast(x, xl);
        ToChannelsLast(y, want);
        Status st = testing::RunKernel(r.FindNhwc("BatchNormalization"), {&xl, &params[0], &params[1], &params[2], &params[3]}, {&got}, a, 2);
        ASSERT_TRUE(st.ok()) << st.ToString();
        EXPECT_EQ(std::memcmp(got.bytes.data(), want.bytes.data(), got.t.bytes), 0) << "differs from the reference kernel's bits";
      }
}

TEST(ChannelsLastPools, Declines) {
  // MaxPool with Indices: the layout pass keeps such pools NCHW; the kernel refuses them.
  Bytes x(DataType::kF32, {1, 4, 4, 3}), y(DataType::kF32, {1, 2, 2, 3}), idx(DataType::kF32, {1, 2, 2, 3});
  KernelArgs args;
  args.inputs = {&x.t};
  args.outputs = {&y.t, &idx.t};
  AttrList attrs;
  attrs.Ints("kernel_shape", {2, 2}).Ints("strides", {2, 2});
  args.attrs = attrs.Finish();
  args.node = "test";
  EXPECT_EQ(KernelRegistry::Cpu().FindNhwc("MaxPool")()->Init(args, CpuContext{}).code(), StatusCode::kUnimplemented);
  Bytes d(DataType::kF64, {1, 4, 4, 3});
  args.inputs = {&d.t};
  args.outputs = {&y.t};
  EXPECT_EQ(KernelRegistry::Cpu().FindNhwc("GlobalMaxPool")()->Init(args, CpuContext{}).code(), StatusCode::kUnimplemented);
}

}  // namespace
}  // namespace precis::rt
