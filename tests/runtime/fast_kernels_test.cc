// The fast kernels of fast_*.cc against the reference kernels of the same name (the oracle) and,
// for the approximations, against double-precision libm. Every case first checks that the fast
// kernel takes the step (its Init returns Ok: the session would not fall back), runs it with
// 1 and 2 threads on data from a fixed seed, never zeros, with scratch and output poisoned, and
// checks that it declines what it does not support (f64, a ReduceSum over two blocks of axes).
//
// Tolerances, with the reason:
// - Add/Sub/Mul/Div, Relu, Clip, Transpose, Where: bitwise equal to the reference (same float
//   operations on the same elements; only loop structure and threading differ).
// - Exp: |y - exp(x)| <= 2 ulp(exp(x)) in the normal range (Cephes-style polynomial), exact
//   specials (0 below -104, inf above 89, NaN).
// - Erf: |y - erf(x)| <= 1.5e-7 (fitted polynomials; half an ulp of 1 is 6e-8).
// - Tanh, Sigmoid: |y - f(x)| <= 4e-7 * |f(x)| + 1e-45 (exp-based forms, a few ulps).
// - Gelu: |y - gelu(x)| <= 2e-7 * (1 + |x|) (the erf/tanh error scaled by x/2, plus roundings).
// - Softmax/LogSoftmax: per element |y - ref| <= 1e-6 * |ref| + 1e-37 against a double
//   reference, rows up to 4096 long, logits spread up to +-60; rows with NaN or infinities
//   bitwise equal to the reference kernel. Over a middle axis (columns): the same against the
//   reference kernel, special columns bitwise.
// - LayerNormalization: |y - ref| <= 2 ulp(ref) + 4e-6 against the reference kernel (same float
//   formula; the double statistics differ only in summation order, which can move the float mean
//   by an ulp: ~5e-7 for the mean of 5 used here, times inv_std and |scale| <= 1).
// - ReduceSum/ReduceMean: bitwise equal over leading or middle axes (double sums in the
//   reference's order); within 1 ulp of the stored type over trailing axes (8 double lanes).
// - f16/bf16 storage: within 1 ulp of the 16-bit type of the reference kernel's result (both
//   compute in float and round once; the float results differ by the approximation above).
// The measured maxima of the approximations are printed (and recorded as test properties).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include <gtest/gtest.h>

#include "runtime/base/half.h"
#include "runtime/cpu/kernel.h"
#include "tests/runtime/kernel_test_util.h"

namespace precis::rt {
namespace {

using testing::AttrList;
using testing::Numel;


std::string DimsText(const std::vector<int64_t>& d) {
  std::string s = "[";
  for (size_t i = 0; i < d.size(); ++i) s += (i ? "," : "") + std::to_string(d[i]);
  return s + "]";
}

const char* TypeName(DataType t) { return DataTypeName(t); }

using Buffer = testing::TypedBuffer;

// Random values in [-scale, -scale/10] u [scale/10, scale]: random signs, never zero.
Buffer Random(DataType dtype, std::vector<int64_t> dims, uint32_t seed, float scale = 1.0f) {
  Buffer b(dtype, std::move(dims));
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> mag(0.1f * scale, scale);
  for (int64_t i = 0; i < b.t.numel; ++i) b.Set(i, (rng() & 1 ? 1.0f : -1.0f) * mag(rng));
  return b;
}

const KernelRegistry& Registry() { return KernelRegistry::Cpu(); }

using testing::RunKernel;

// Runs the fast kernel of `name`, which must take the step, with `threads`.
void RunFast(const std::string& name, const std::vector<Buffer*>& inputs, const std::vector<Buffer*>& outputs, AttrList& attrs,
             int threads) {
  KernelFactory fast = Registry().FindFast(name);
  ASSERT_NE(fast, nullptr) << name << " has no fast kernel";
  Status s = RunKernel(fast, inputs, outputs, attrs.Finish(), threads);
  ASSERT_TRUE(s.ok()) << name << ": the fast kernel did not take the step: " << s.message();
}

void RunReference(const std::string& name, const std::vector<Buffer*>& inputs, const std::vector<Buffer*>& outputs, AttrList& attrs) {
  Status s = RunKernel(Registry().Find(name), inputs, outputs, attrs.Finish(), 1);
  ASSERT_TRUE(s.ok()) << name << " reference: " << s.message();
}

void ExpectBitwise(const Buffer& got, const Buffer& want, const std::string& what) {
  ASSERT_EQ(got.t.bytes, want.t.bytes) << what;
  for (size_t i = 0; i < got.t.bytes; ++i)
    if (got.t.data[i] != want.t.data[i]) {
      int64_t e = int64_t(i / DataTypeSize(got.t.dtype));
      FAIL() << what << ": element " << e << " is " << got.Get(e) << ", reference " << want.Get(e);
    }
}

// One ulp of the 16-bit storage type at |v| (normal range), for f16/bf16 comparisons.
double StorageUlp(DataType t, double v) {
  int mant = t == DataType::kF16 ? 10 : t == DataType::kBF16 ? 7 : 23;
  double a = std::max(std::fabs(v), t == DataType::kF16 ? 6.1e-5 : 1.2e-38);
  return std::ldexp(1.0, std::ilogb(a) - mant);
}

void ExpectWithinStorageUlp(const Buffer& got, const Buffer& want, const std::string& what) {
  int bad = 0;
  for (int64_t i = 0; i < got.t.numel && bad < 5; ++i) {
    double g = got.Get(i), w = want.Get(i);
    if (std::isnan(w) ? !std::isnan(g) : !(std::fabs(g - w) <= StorageUlp(got.t.dtype, w))) {
      ADD_FAILURE() << what << ": element " << i << " is " << g << ", reference " << w;
      ++bad;
    }
  }
}

const DataType kTypes[] = {DataType::kF32, DataType::kF16, DataType::kBF16};

// ---------------------------------------------------------------- binary elementwise

struct BinaryCase {
  std::vector<int64_t> a, b, y;
};

TEST(FastKernels, BinaryBroadcastMatchesReferenceBitwise) {
  const BinaryCase cases[] = {
      {{2, 3, 4}, {2, 3, 4}, {2, 3, 4}},
      {{4, 5, 768}, {768}, {4, 5, 768}},              // bias
      {{2, 4, 9, 9}, {2, 1, 1, 9}, {2, 4, 9, 9}},     // attention mask
      {{3, 5}, {}, {3, 5}},                           // scalar
      {{}, {3, 5}, {3, 5}},                           // scalar first
      {{}, {}, {}},
      {{1}, {7, 1}, {7, 1}},
      {{2, 8, 5, 5}, {1, 8, 1, 1}, {2, 8, 5, 5}},     // per channel
      {{1, 6}, {5, 6}, {5, 6}},                       // stride-0 leading dim
      {{5, 1, 4}, {1, 3, 1}, {5, 3, 4}},              // both broadcast, alternating
      {{3, 1, 2, 1, 5}, {1, 4, 1, 3, 1}, {3, 4, 2, 3, 5}},
      {{1, 1, 7}, {7}, {1, 1, 7}},                    // size-1 dims
      {{0, 3}, {3}, {0, 3}},                          // empty
      {{6, 0}, {1, 0}, {6, 0}},
      {{64, 1024}, {1024}, {64, 1024}},               // large enough for threads
      {{8, 12, 33, 65}, {8, 1, 1, 65}, {8, 12, 33, 65}},
      {{3, 70000}, {3, 1}, {3, 70000}},               // long rows split across threads
      {{1, 100003}, {}, {1, 100003}},
  };
  const char* ops[] = {"Add", "Sub", "Mul", "Div"};
  uint32_t seed = 1;
  for (DataType dt : kTypes)
    for (const char* op : ops)
      for (const BinaryCase& c : cases)
        for (int threads : {1, 2}) {
          std::string what = std::string(op) + " " + TypeName(dt) + " " + DimsText(c.a) + " x " + DimsText(c.b) + " threads " +
                             std::to_string(threads);
          Buffer a = Random(dt, c.a, seed++), b = Random(dt, c.b, seed++);
          Buffer want(dt, c.y), got(dt, c.y);
          AttrList ra, fa;
          RunReference(op, {&a, &b}, {&want}, ra);
          RunFast(op, {&a, &b}, {&got}, fa, threads);
          ExpectBitwise(got, want, what);
        }
}

TEST(FastKernels, BinaryInPlaceAndSpecialValues) {
  // Y shares A's storage (the planner's in-place case); A holds infinities, NaN and zeros of both
  // signs so that x/0, inf-inf and NaN propagation are compared too.
  for (DataType dt : kTypes) {
    const float specials[] = {INFINITY, -INFINITY, NAN, 0.0f, -0.0f, 1e30f, -1e-30f};
    Buffer a = Random(dt, {3, 4, 200}, 7), b = Random(dt, {4, 1}, 8);
    for (int64_t i = 0; i < a.t.numel; i += 13) a.Set(i, specials[(i / 13) % 7]);
    b.Set(1, 0.0f);
    b.Set(2, -0.0f);
    Buffer want(dt, a.t.dims), in_place = a;
    AttrList ra, fa;
    RunReference("Div", {&a, &b}, {&want}, ra);
    RunFast("Div", {&in_place, &b}, {&in_place}, fa, 2);
    ExpectBitwise(in_place, want, std::string("in-place Div ") + TypeName(dt));
  }
}

TEST(FastKernels, ReluAndClipMatchReferenceBitwise) {
  for (DataType dt : kTypes) {
    Buffer x = Random(dt, {5, 70001}, 3, 8.0f);
    const float specials[] = {INFINITY, -INFINITY, NAN, 0.0f, -0.0f};
    for (int64_t i = 0; i < x.t.numel; i += 101) x.Set(i, specials[(i / 101) % 5]);
    Buffer want(dt, x.t.dims), got(dt, x.t.dims);
    AttrList ra, fa;
    RunReference("Relu", {&x}, {&want}, ra);
    RunFast("Relu", {&x}, {&got}, fa, 2);
    ExpectBitwise(got, want, std::string("Relu ") + TypeName(dt));

    Buffer lo(dt, {}), hi(dt, {});
    lo.Set(0, 0.0f);
    hi.Set(0, 6.0f);
    for (std::vector<Buffer*> bounds : {std::vector<Buffer*>{&lo, &hi}, {&lo}, {nullptr, &hi}, {}}) {
      std::vector<Buffer*> in = {&x};
      in.insert(in.end(), bounds.begin(), bounds.end());
      AttrList rc, fc;
      RunReference("Clip", in, {&want}, rc);
      RunFast("Clip", in, {&got}, fc, 2);
      ExpectBitwise(got, want, std::string("Clip ") + TypeName(dt) + " with " + std::to_string(bounds.size()) + " bounds");
    }
    AttrList rc, fc;  // opset 6: bounds as attributes
    rc.Float("min", -1.5f).Float("max", 2.5f);
    fc.Float("min", -1.5f).Float("max", 2.5f);
    RunReference("Clip", {&x}, {&want}, rc);
    RunFast("Clip", {&x}, {&got}, fc, 2);
    ExpectBitwise(got, want, std::string("Clip opset 6 ") + TypeName(dt));
  }
}

// ---------------------------------------------------------------- unary approximations

struct UnaryCase {
  const char* op;
  double (*exact)(double);
  double lo, hi;      // the dense grid
  double rel, abs_x;  // bound: rel * |exact| + abs_x * (1 + |x|) + 1e-45
};

double Sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }
double GeluErf(double x) { return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0))); }

// Measures the f32 fast kernel against double libm over a dense grid and special values.
TEST(FastKernels, UnaryApproximationsWithinStatedBounds) {
  const UnaryCase cases[] = {
      {"Exp", [](double x) { return std::exp(x); }, -87.0, 88.5, 2.0 * 0x1p-24 * 2, 0},
      {"Erf", [](double x) { return std::erf(x); }, -5.0, 5.0, 0, 1.5e-7},
      {"Tanh", [](double x) { return std::tanh(x); }, -10.0, 10.0, 4e-7, 0},
      {"Sigmoid", Sigmoid, -100.0, 30.0, 4e-7, 0},
      {"Gelu", GeluErf, -10.0, 10.0, 0, 2e-7},
  };
  for (const UnaryCase& c : cases) {
    const int64_t n = 1 << 21;
    Buffer x(DataType::kF32, {n});
    for (int64_t i = 0; i < n; ++i) x.Set(i, float(c.lo + (c.hi - c.lo) * double(i) / double(n - 1)));
    Buffer y(DataType::kF32, {n});
    AttrList a;
    RunFast(c.op, {&x}, {&y}, a, 2);
    double max_rel = 0, max_abs = 0;
    int bad = 0;
    for (int64_t i = 0; i < n && bad < 5; ++i) {
      double xv = x.Get(i), want = c.exact(xv), got = y.Get(i), err = std::fabs(got - want);
      max_abs = std::max(max_abs, err);
      if (std::fabs(want) > 1e-30) max_rel = std::max(max_rel, err / std::fabs(want));
      if (!(err <= c.rel * std::fabs(want) + c.abs_x * (1 + std::fabs(xv)) + 1e-45)) {
        ADD_FAILURE() << c.op << "(" << xv << ") = " << got << ", exact " << want;
        ++bad;
      }
    }
    std::printf("  %-8s max abs error %.3g, max rel error %.3g on [%g, %g]\n", c.op, max_abs, max_rel, c.lo, c.hi);
    ::testing::Test::RecordProperty(std::string(c.op) + "_max_abs_error", std::to_string(max_abs));
    ::testing::Test::RecordProperty(std::string(c.op) + "_max_rel_error", std::to_string(max_rel));
  }
}

TEST(FastKernels, UnarySpecialValues) {
  const float in[] = {NAN, INFINITY, -INFINITY, 0.0f, -0.0f, -104.5f, -103.0f, -87.5f, 88.8f, 89.5f, 1e-30f, -1e-30f, 3.9f, 3.95f, -3.95f};
  Buffer x(DataType::kF32, {int64_t(std::size(in))});
  for (size_t i = 0; i < std::size(in); ++i) x.Set(int64_t(i), in[i]);
  for (const char* op : {"Exp", "Erf", "Tanh", "Sigmoid", "Gelu"}) {
    Buffer got(DataType::kF32, x.t.dims), want(DataType::kF32, x.t.dims);
    AttrList ra, fa;
    RunReference(op, {&x}, {&want}, ra);
    RunFast(op, {&x}, {&got}, fa, 1);
    for (int64_t i = 0; i < x.t.numel; ++i) {
      float g = got.Get(i), w = want.Get(i);
      if (std::isnan(w) || std::isinf(w) || w == 0.0f) {
        EXPECT_TRUE(std::isnan(w) ? std::isnan(g) : g == w) << op << "(" << x.Get(i) << ") = " << g << ", reference " << w;
      } else {
        EXPECT_LE(std::fabs(g - w), 4e-7 * std::fabs(w) + 1.5e-7 + 1e-44) << op << "(" << x.Get(i) << ")";
      }
    }
  }
}

TEST(FastKernels, Unary16BitWithinOneStorageUlp) {
  for (DataType dt : {DataType::kF16, DataType::kBF16})
    for (const char* op : {"Exp", "Erf", "Tanh", "Sigmoid", "Gelu"}) {
      Buffer x = Random(dt, {3, 30011}, 11, 4.0f);
      Buffer got(dt, x.t.dims), want(dt, x.t.dims);
      AttrList ra, fa;
      RunReference(op, {&x}, {&want}, ra);
      RunFast(op, {&x}, {&got}, fa, 2);
      ExpectWithinStorageUlp(got, want, std::string(op) + " " + TypeName(dt));
    }
  AttrList ra, fa;  // the tanh form of Gelu
  ra.String("approximate", "tanh");
  fa.String("approximate", "tanh");
  Buffer x = Random(DataType::kF32, {50000}, 12, 6.0f), got(DataType::kF32, {50000}), want(DataType::kF32, {50000});
  RunReference("Gelu", {&x}, {&want}, ra);
  RunFast("Gelu", {&x}, {&got}, fa, 2);
  for (int64_t i = 0; i < x.t.numel; ++i)
    ASSERT_LE(std::fabs(got.Get(i) - want.Get(i)), 4e-7 * (1 + std::fabs(x.Get(i)))) << "tanh Gelu(" << x.Get(i) << ")";
}

// ---------------------------------------------------------------- softmax

// Double reference of (Log)Softmax over the last axis.
std::vector<double> SoftmaxExact(const Buffer& x, int64_t n, bool log) {
  std::vector<double> y(size_t(x.t.numel));
  for (int64_t r = 0; r * n < x.t.numel; ++r) {
    double m = -INFINITY, sum = 0;
    for (int64_t k = 0; k < n; ++k) m = std::max(m, double(x.Get(r * n + k)));
    for (int64_t k = 0; k < n; ++k) sum += std::exp(double(x.Get(r * n + k)) - m);
    for (int64_t k = 0; k < n; ++k) {
      double v = double(x.Get(r * n + k)) - m;
      y[size_t(r * n + k)] = log ? v - std::log(sum) : std::exp(v) / sum;
    }
  }
  return y;
}

TEST(FastKernels, SoftmaxWithinOneMillionthOfDoubleReference) {
  const std::vector<int64_t> shapes[] = {{5, 1}, {4, 3}, {2, 3, 17}, {2, 12, 197}, {3, 1000}, {4, 4096}, {64, 4096}};
  double max_rel[2] = {0, 0};
  for (bool log : {false, true})
    for (const auto& dims : shapes)
      for (float scale : {1.0f, 10.0f, 60.0f}) {
        const char* op = log ? "LogSoftmax" : "Softmax";
        Buffer x = Random(DataType::kF32, dims, uint32_t(dims.back() + 7 * int(scale)), scale);
        int64_t n = dims.back();
        if (n > 8)  // a masked tail, as attention masks make
          for (int64_t i = n - 3; i < x.t.numel; i += n) x.Set(i, -1e9f);
        Buffer y(DataType::kF32, dims);
        AttrList a;
        RunFast(op, {&x}, {&y}, a, 2);
        std::vector<double> want = SoftmaxExact(x, n, log);
        int bad = 0;
        for (int64_t i = 0; i < x.t.numel && bad < 5; ++i) {
          double err = std::fabs(double(y.Get(i)) - want[size_t(i)]);
          if (std::fabs(want[size_t(i)]) > 1e-30) max_rel[log] = std::max(max_rel[log], err / std::fabs(want[size_t(i)]));
          if (!(err <= 1e-6 * std::fabs(want[size_t(i)]) + 1e-37)) {
            ADD_FAILURE() << op << " " << DimsText(dims) << " scale " << scale << ": element " << i << " is " << y.Get(i) << ", exact "
                          << want[size_t(i)];
            ++bad;
          }
        }
      }
  std::printf("  Softmax max rel error %.3g, LogSoftmax %.3g\n", max_rel[0], max_rel[1]);
  ::testing::Test::RecordProperty("Softmax_max_rel_error", std::to_string(max_rel[0]));
  ::testing::Test::RecordProperty("LogSoftmax_max_rel_error", std::to_string(max_rel[1]));
}

TEST(FastKernels, SoftmaxSpecialRowsAndStorageTypes) {
  for (const char* op : {"Softmax", "LogSoftmax"}) {
    // Rows with NaN, +inf, all -inf, and -inf entries: bitwise the reference kernel.
    Buffer x = Random(DataType::kF32, {5, 33}, 21, 5.0f);
    x.Set(3, NAN);
    x.Set(33 + 5, INFINITY);
    for (int64_t k = 0; k < 33; ++k) x.Set(66 + k, -INFINITY);
    x.Set(99 + 1, -INFINITY);
    x.Set(99 + 2, -INFINITY);
    Buffer got(DataType::kF32, x.t.dims), want(DataType::kF32, x.t.dims);
    AttrList ra, fa;
    RunReference(op, {&x}, {&want}, ra);
    RunFast(op, {&x}, {&got}, fa, 1);
    for (int64_t i = 0; i < 99; ++i) {
      float g = got.Get(i), w = want.Get(i);
      EXPECT_TRUE(std::isnan(w) ? std::isnan(g) : g == w) << op << " special rows: element " << i << " is " << g << ", reference " << w;
    }
    for (int64_t i = 99; i < x.t.numel; ++i) {  // -inf entries in a finite row: 0 (Softmax) or -inf (LogSoftmax)
      float g = got.Get(i), w = want.Get(i);
      EXPECT_TRUE(g == w || std::fabs(g - w) <= 1e-6 * std::fabs(w) + 1e-37) << op << " element " << i << " is " << g << ", reference " << w;
    }
    // 16-bit storage, and in place.
    for (DataType dt : {DataType::kF16, DataType::kBF16}) {
      Buffer h = Random(dt, {40, 1000}, 23, 8.0f), ref(dt, h.t.dims), in_place = h;
      AttrList rh, fh;
      RunReference(op, {&h}, {&ref}, rh);
      RunFast(op, {&in_place}, {&in_place}, fh, 2);
      ExpectWithinStorageUlp(in_place, ref, std::string(op) + " " + TypeName(dt));
    }
    // Legacy (opset 11) coercion to 2-D at axis 1: rows of 4 * 9.
    Buffer l = Random(DataType::kF32, {3, 4, 9}, 24, 3.0f), lg(DataType::kF32, l.t.dims), lw(DataType::kF32, l.t.dims);
    AttrList rl, fl;
    rl.Int("coerce_2d", 1).Int("axis", 1);
    fl.Int("coerce_2d", 1).Int("axis", 1);
    RunReference(op, {&l}, {&lw}, rl);
    RunFast(op, {&l}, {&lg}, fl, 1);
    for (int64_t i = 0; i < l.t.numel; ++i) EXPECT_NEAR(lg.Get(i), lw.Get(i), 1e-6 * std::fabs(lw.Get(i)) + 1e-37) << op << " legacy";
    // Over a middle axis (a loss over [N, C, d] logits): columns, within 1e-6 of the reference;
    // columns with NaN, +inf or all -inf bitwise the reference; 16-bit storage in place.
    for (const std::vector<int64_t>& dims : std::vector<std::vector<int64_t>>{{2, 7, 3}, {3, 50, 130}, {1, 1000, 65}}) {
      Buffer c = Random(DataType::kF32, dims, 25, 20.0f), cg(DataType::kF32, dims), cw(DataType::kF32, dims);
      const int64_t inner = dims[2];
      c.Set(1, NAN);                                               // column 1 of batch 0
      c.Set(2 * inner + 2, INFINITY);                              // column 2
      for (int64_t k = 0; k < dims[1]; ++k) c.Set(k * inner, -INFINITY);  // column 0: all -inf
      AttrList rc, fc;
      rc.Int("axis", 1);
      fc.Int("axis", 1);
      RunReference(op, {&c}, {&cw}, rc);
      RunFast(op, {&c}, {&cg}, fc, 2);
      for (int64_t i = 0; i < c.t.numel; ++i) {
        float g = cg.Get(i), w = cw.Get(i);
        bool special = i < dims[1] * inner && i % inner < 3;
        if (special) EXPECT_TRUE(std::isnan(w) ? std::isnan(g) : g == w) << op << " column " << i % inner << ": " << g << ", reference " << w;
        else EXPECT_NEAR(g, w, 1e-6 * std::fabs(w) + 1e-37) << op << " over axis 1 of " << DimsText(dims) << ", element " << i;
      }
      for (DataType dt : {DataType::kF16, DataType::kBF16}) {
        Buffer h = Random(dt, dims, 26, 8.0f), ref(dt, dims), in_place = h;
        AttrList rh, fh;
        rh.Int("axis", 1);
        fh.Int("axis", 1);
        RunReference(op, {&h}, {&ref}, rh);
        RunFast(op, {&in_place}, {&in_place}, fh, 2);
        ExpectWithinStorageUlp(in_place, ref, std::string(op) + " over axis 1, " + TypeName(dt));
      }
    }
  }
}

// ---------------------------------------------------------------- layer normalization

TEST(FastKernels, LayerNormMatchesReference) {
  struct Case {
    std::vector<int64_t> x;
    int64_t axis;
    bool bias, stats;
  };
  const Case cases[] = {{{4, 7, 768}, -1, true, false}, {{3, 5, 6}, 1, true, true}, {{2, 197, 768}, 2, false, false},
                        {{6, 1}, -1, true, true},       {{1, 3, 4, 5}, 2, true, false}};
  for (DataType dt : kTypes)
    for (const Case& c : cases) {
      std::vector<int64_t> norm(c.x.begin() + (c.axis < 0 ? int64_t(c.x.size()) + c.axis : c.axis), c.x.end());
      Buffer x = Random(dt, c.x, 31, 3.0f), scale = Random(dt, norm, 32), bias = Random(dt, norm, 33);
      for (int64_t i = 0; i < x.t.numel; ++i) x.Set(i, x.Get(i) + 5.0f);  // a mean far from 0
      int64_t rows = x.t.numel / Numel(norm);
      Buffer want(dt, c.x), got(dt, c.x), mean_w(DataType::kF32, {rows}), mean_g(DataType::kF32, {rows}),
          inv_w(DataType::kF32, {rows}), inv_g(DataType::kF32, {rows});
      std::vector<Buffer*> in = {&x, &scale};
      if (c.bias) in.push_back(&bias);
      std::vector<Buffer*> out_w = {&want}, out_g = {&got};
      if (c.stats) {
        out_w.insert(out_w.end(), {&mean_w, &inv_w});
        out_g.insert(out_g.end(), {&mean_g, &inv_g});
      }
      AttrList ra, fa;
      ra.Int("axis", c.axis).Float("epsilon", 1e-5f);
      fa.Int("axis", c.axis).Float("epsilon", 1e-5f);
      RunReference("LayerNormalization", in, out_w, ra);
      RunFast("LayerNormalization", in, out_g, fa, 2);
      std::string what = std::string("LayerNormalization ") + TypeName(dt) + " " + DimsText(c.x);
      if (dt != DataType::kF32) {
        ExpectWithinStorageUlp(got, want, what);
        continue;
      }
      for (int64_t i = 0; i < x.t.numel; ++i) {
        double w = want.Get(i);
        ASSERT_LE(std::fabs(got.Get(i) - w), 2 * StorageUlp(DataType::kF32, w) + 4e-6) << what << " element " << i;
      }
      if (c.stats)
        for (int64_t r = 0; r < rows; ++r) {
          EXPECT_LE(std::fabs(mean_g.Get(r) - mean_w.Get(r)), StorageUlp(DataType::kF32, mean_w.Get(r))) << what;
          EXPECT_LE(std::fabs(inv_g.Get(r) - inv_w.Get(r)), StorageUlp(DataType::kF32, inv_w.Get(r))) << what;
        }
    }
}

// ---------------------------------------------------------------- transpose

TEST(FastKernels, TransposeMatchesReferenceBitwise) {
  struct Case {
    std::vector<int64_t> x, perm;
  };
  const Case cases[] = {
      {{2, 197, 12, 64}, {0, 2, 1, 3}},  // heads split: rows
      {{2, 12, 197, 64}, {0, 1, 3, 2}},  // K^T: blocked
      {{2, 768, 196}, {0, 2, 1}},        // patches: blocked
      {{33, 17}, {1, 0}},
      {{3, 4, 5, 6}, {3, 1, 0, 2}},
      {{3, 4, 5, 6}, {}},                // reversed
      {{1, 5, 1, 7}, {3, 2, 1, 0}},
      {{7}, {0}},
  };
  for (DataType dt : {DataType::kF32, DataType::kF16, DataType::kI8, DataType::kI64})
    for (const Case& c : cases)
      for (int threads : {1, 2}) {
        Buffer x(dt, c.x);
        std::mt19937 rng(5);
        for (auto& byte : x.bytes) byte = uint8_t(rng());
        std::vector<int64_t> perm = c.perm;
        if (perm.empty())
          for (int64_t i = int64_t(c.x.size()); i-- > 0;) perm.push_back(i);
        std::vector<int64_t> out;
        for (int64_t p : perm) out.push_back(c.x[size_t(p)]);
        Buffer want(dt, out), got(dt, out);
        AttrList ra, fa;
        if (!c.perm.empty()) {
          ra.Ints("perm", c.perm);
          fa.Ints("perm", c.perm);
        }
        RunReference("Transpose", {&x}, {&want}, ra);
        KernelFactory fast = Registry().FindFast("Transpose");
        ASSERT_NE(fast, nullptr);
        Status s = RunKernel(fast, {&x}, {&got}, fa.Finish(), threads);
        if (Numel(c.x) == 7 && s.code() == StatusCode::kUnimplemented) continue;  // a 1-D copy may be declined
        ASSERT_TRUE(s.ok()) << s.message();
        ExpectBitwise(got, want, std::string("Transpose ") + TypeName(dt) + " " + DimsText(c.x));
      }
}

// ---------------------------------------------------------------- sums over axes

// ReduceSum/ReduceMean over one block of axes (16-bit X also into an f32 Y): columns (leading or middle axes) accumulate in
// double in the reference's order, so they are bitwise equal to it; rows (trailing axes) sum in 8
// interleaved double lanes, within one ulp of the stored type.
TEST(FastKernels, ReduceSumAndMeanMatchReference) {
  struct Case {
    std::vector<int64_t> x, axes, y;
    bool rows;
  };
  const Case cases[] = {{{16, 64, 256}, {0}, {64, 256}, false},  // a batched weight gradient
                        {{5, 1100}, {0}, {1100}, false},         // a bias gradient, two column blocks
                        {{3, 5, 6, 7}, {1, 2}, {3, 7}, false},   // a middle block
                        {{2, 1, 600}, {0, 1}, {600}, false},     // a size-1 reduced dim
                        {{4, 7, 768}, {2}, {4, 7}, true},        // rows
                        {{6, 4099}, {-1}, {6}, true}};
  for (const char* op : {"ReduceSum", "ReduceMean"})
    for (DataType dt : kTypes)
      for (const Case& c : cases) {
        Buffer x = Random(dt, c.x, 51, 3.0f), want(dt, c.y), got(dt, c.y);
        AttrList ra, fa;
        ra.Ints("axes", c.axes).Int("keepdims", 0);
        fa.Ints("axes", c.axes).Int("keepdims", 0);
        RunReference(op, {&x}, {&want}, ra);
        RunFast(op, {&x}, {&got}, fa, 2);
        std::string what = std::string(op) + " " + TypeName(dt) + " " + DimsText(c.x);
        if (!c.rows) {
          ExpectBitwise(got, want, what);
          continue;
        }
        for (int64_t i = 0; i < want.t.numel; ++i)
          ASSERT_LE(std::fabs(got.Get(i) - want.Get(i)), StorageUlp(dt, want.Get(i))) << what << " element " << i;
      }
  // 16-bit X summed into an f32 Y (training plans' bias gradients): the reference on X widened to
  // f32 (exact), with the same bounds.
  for (const char* op : {"ReduceSum", "ReduceMean"})
    for (DataType dt : {DataType::kF16, DataType::kBF16})
      for (const Case& c : cases) {
        Buffer x = Random(dt, c.x, 52, 3.0f), wide(DataType::kF32, c.x), want(DataType::kF32, c.y), got(DataType::kF32, c.y);
        for (int64_t i = 0; i < x.t.numel; ++i) wide.Set(i, x.Get(i));
        AttrList ra, fa;
        ra.Ints("axes", c.axes).Int("keepdims", 0);
        fa.Ints("axes", c.axes).Int("keepdims", 0);
        RunReference(op, {&wide}, {&want}, ra);
        RunFast(op, {&x}, {&got}, fa, 2);
        std::string what = std::string(op) + " " + TypeName(dt) + " into f32 " + DimsText(c.x);
        if (!c.rows) {
          ExpectBitwise(got, want, what);
          continue;
        }
        for (int64_t i = 0; i < want.t.numel; ++i)
          ASSERT_LE(std::fabs(got.Get(i) - want.Get(i)), StorageUlp(DataType::kF32, want.Get(i))) << what << " element " << i;
      }
}

// ---------------------------------------------------------------- where

// Where(condition, X, Y) with the broadcasts attention masks make: bitwise the reference (a copy).
TEST(FastKernels, WhereMatchesReferenceBitwise) {
  struct Case {
    std::vector<int64_t> c, x, y, out;
  };
  const Case cases[] = {{{8, 8}, {2, 4, 8, 8}, {}, {2, 4, 8, 8}},                 // causal mask, scalar fill
                        {{2, 1, 1, 8}, {2, 4, 8, 8}, {2, 4, 8, 8}, {2, 4, 8, 8}},   // padding mask
                        {{3, 5}, {3, 5}, {3, 5}, {3, 5}},                         // no broadcast
                        {{1}, {4, 1, 33}, {4, 6, 33}, {4, 6, 33}},                // one condition, X broadcast
                        {{6, 1}, {1, 33}, {6, 33}, {6, 33}}};
  std::mt19937 rng(61);
  for (DataType dt : kTypes)
    for (const Case& k : cases) {
      Buffer c(DataType::kBool, k.c), x = Random(dt, k.x, 62), y = Random(dt, k.y, 63), want(dt, k.out), got(dt, k.out);
      for (int64_t i = 0; i < c.t.numel; ++i) c.t.data[i] = uint8_t(rng() & 1);
      AttrList ra, fa;
      RunReference("Where", {&c, &x, &y}, {&want}, ra);
      RunFast("Where", {&c, &x, &y}, {&got}, fa, 2);
      ExpectBitwise(got, want, std::string("Where ") + TypeName(dt) + " " + DimsText(k.out));
    }
}

// ---------------------------------------------------------------- declines

// ---------------------------------------------------------------- training kernels

// Values on a grid of 0.25 in [-2, 2] (ties within windows are common; zeros of either sign, so
// that the sign of a zero maximum shows which one was first) with NaNs sprinkled in, and for
// `all_nan_plane` >= 0 one plane of NaNs only.
Buffer PoolInput(DataType dt, std::vector<int64_t> dims, uint32_t seed, int64_t all_nan_plane) {
  Buffer x(dt, dims);
  std::mt19937 rng(seed);
  for (int64_t i = 0; i < x.t.numel; ++i) {
    float v = rng() % 53 == 0 ? NAN : float(int(rng() % 17) - 8) * 0.25f;
    x.Set(i, v == 0.0f && (rng() & 1) ? -0.0f : v);
  }
  int64_t plane = x.t.numel / (dims[0] * dims[1]);
  if (all_nan_plane >= 0)
    for (int64_t i = 0; i < plane; ++i) x.Set(all_nan_plane * plane + i, NAN);
  return x;
}

// MaxPool and MaxPoolGrad: the fast kernels choose the same maxima as the reference (first in
// scan order on ties, NaN losing to numbers, all-NaN windows keeping their first position), so
// MaxPool's output is bitwise the reference's, and so is MaxPoolGrad's wherever a position gets
// one window's gradient. Positions shared by several windows add in float here, in double in the
// reference: within 2 f32 ulps of the sum (at most 4 terms of magnitude <= 1 in these cases);
// 16-bit dX within one storage ulp.
TEST(FastKernels, MaxPoolAndGradMatchReference) {
  struct Case {
    std::vector<int64_t> x, kernel, strides, pads, dilations;
    int64_t ceil = 0;
  };
  const Case cases[] = {
      {{2, 3, 56, 56}, {3, 3}, {2, 2}, {1, 1, 1, 1}, {}},  // ResNet's stem pool: 8-wide window groups
      {{2, 3, 9, 11}, {3, 3}, {2, 2}, {1, 1, 1, 1}, {}},
      {{1, 2, 8, 40}, {2, 2}, {2, 2}, {}, {}},
      {{1, 2, 10, 37}, {3, 3}, {1, 1}, {1, 1, 1, 1}, {2, 2}},  // dilation 2, overlapping windows
      {{1, 2, 10, 10}, {3, 3}, {2, 2}, {}, {}, 1},              // ceil_mode tail
      {{1, 2, 7, 9}, {3, 2}, {2, 1}, {0, 1, 2, 0}, {}},       // asymmetric pads
      {{2, 3, 40}, {3}, {2}, {1, 1}, {}},                     // 1-D
      {{1, 2, 5, 6, 20}, {2, 2, 3}, {2, 2, 2}, {0, 0, 1, 0, 0, 1}, {}},  // 3-D
  };
  for (DataType dt : kTypes)
    for (const Case& c : cases) {
      size_t n = c.kernel.size();
      AttrList ra, fa, rg, fg;
      for (AttrList* a : {&ra, &fa, &rg, &fg}) {
        a->Ints("kernel_shape", c.kernel).Int("ceil_mode", c.ceil);
        if (!c.strides.empty()) a->Ints("strides", c.strides);
        if (!c.pads.empty()) a->Ints("pads", c.pads);
        if (!c.dilations.empty()) a->Ints("dilations", c.dilations);
      }
      std::vector<int64_t> yd = {c.x[0], c.x[1]};
      for (size_t i = 0; i < n; ++i) {
        int64_t s = c.strides.empty() ? 1 : c.strides[i], d = c.dilations.empty() ? 1 : c.dilations[i];
        int64_t span = c.x[2 + i] + (c.pads.empty() ? 0 : c.pads[i] + c.pads[i + n]) - ((c.kernel[i] - 1) * d + 1);
        yd.push_back((c.ceil ? (span + s - 1) / s : span / s) + 1);
      }
      std::string what = std::string(TypeName(dt)) + " " + DimsText(c.x) + " kernel " + DimsText(c.kernel);
      Buffer x = PoolInput(dt, c.x, 7, c.x[1] > 2 ? 4 : -1);
      Buffer want(dt, yd), got(dt, yd);
      RunReference("MaxPool", {&x}, {&want}, ra);
      RunFast("MaxPool", {&x}, {&got}, fa, 2);
      ExpectBitwise(got, want, "MaxPool " + what);

      Buffer dy = Random(dt, yd, 11);
      Buffer dx_want(dt, c.x), dx_got(dt, c.x);
      RunReference("MaxPoolGrad", {&dy, &x}, {&dx_want}, rg);
      RunFast("MaxPoolGrad", {&dy, &x}, {&dx_got}, fg, 2);
      if (dt != DataType::kF32) {
        ExpectWithinStorageUlp(dx_got, dx_want, "MaxPoolGrad " + what);
        continue;
      }
      for (int64_t i = 0; i < x.t.numel; ++i) {
        double w = dx_want.Get(i);
        ASSERT_LE(std::fabs(dx_got.Get(i) - w), 2 * StorageUlp(DataType::kF32, std::max(std::fabs(w), 1.0)))
            << "MaxPoolGrad " << what << " element " << i;
        ASSERT_EQ(dx_got.Get(i) == 0.0f, w == 0.0) << "MaxPoolGrad " << what << " element " << i << ": a different maximum";
      }
    }
}

// Windows whose maximum is a zero of either sign: the reference keeps the first zero in scan
// order, so the output's sign shows whether the fast kernel found the same one (its separable
// maxima are order-free except for this; planes holding a -0 take the scan).
TEST(FastKernels, MaxPoolSignedZeroTiesMatchReference) {
  for (DataType dt : kTypes) {
    Buffer x(dt, {2, 3, 20, 21});
    std::mt19937 rng(17);
    const float values[] = {-0.5f, -0.0f, 0.0f};
    for (int64_t i = 0; i < x.t.numel; ++i) x.Set(i, values[rng() % 3]);
    AttrList ra, fa;
    for (AttrList* a : {&ra, &fa}) a->Ints("kernel_shape", {3, 3}).Ints("strides", {2, 2}).Ints("pads", {1, 1, 1, 1});
    Buffer want(dt, {2, 3, 10, 11}), got(dt, {2, 3, 10, 11});
    RunReference("MaxPool", {&x}, {&want}, ra);
    RunFast("MaxPool", {&x}, {&got}, fa, 2);
    ExpectBitwise(got, want, std::string("MaxPool signed zeros ") + TypeName(dt));
  }
}

TEST(FastKernels, ReluGradMatchesReferenceBitwise) {
  for (DataType dt : kTypes) {
    Buffer dy = Random(dt, {3, 50001}, 5), x = Random(dt, {3, 50001}, 6);
    const float specials[] = {INFINITY, -INFINITY, NAN, 0.0f, -0.0f};
    for (int64_t i = 0; i < x.t.numel; i += 97) x.Set(i, specials[(i / 97) % 5]);
    // dY's specials where X > 0 (passed through), and 16-bit NaNs with the quiet bit clear, which
    // the reference's round trip through float quiets.
    for (int64_t i = 0; i < x.t.numel; i += 89) {
      x.Set(i, 1.0f);
      dy.Set(i, specials[(i / 89) % 5]);
      if (dt != DataType::kF32 && (i / 89) % 7 == 0)
        reinterpret_cast<uint16_t*>(dy.t.data)[i] = dt == DataType::kF16 ? uint16_t(0xfc01) : uint16_t(0x7f81);
    }
    Buffer want(dt, x.t.dims), got(dt, x.t.dims);
    AttrList ra, fa;
    RunReference("ReluGrad", {&dy, &x}, {&want}, ra);
    RunFast("ReluGrad", {&dy, &x}, {&got}, fa, 2);
    ExpectBitwise(got, want, std::string("ReluGrad ") + TypeName(dt));
  }
}

// UnscaleGradients: the gradients (f32, f16, bf16 in one step, and sizes either side of the
// parallel threshold) multiplied by 0.5, 1/3 (rounded) and 1 (copied as they are), bitwise as the
// reference, separately and in place; found_inf from one Inf or NaN anywhere, and not otherwise.
TEST(FastKernels, UnscaleGradientsMatchesReferenceBitwise) {
  for (float inv : {0.5f, 1.0f / 3.0f, 1.0f})
    for (int bad = 0; bad < 3; ++bad)
      for (bool in_place : {false, true}) {
        std::string what = "inv " + std::to_string(inv) + " non-finite " + std::to_string(bad) + (in_place ? " in place" : "");
        Buffer scale(DataType::kF32, {});
        scale.Set(0, inv);
        std::vector<Buffer> grads = {Random(DataType::kF32, {3, 50001}, 21), Random(DataType::kF16, {7, 1001}, 22),
                                     Random(DataType::kBF16, {40001}, 23), Random(DataType::kF32, {5}, 24)};
        if (bad == 1) grads[1].Set(5000, INFINITY);
        if (bad == 2) grads[0].Set(149999, NAN);
        std::vector<Buffer> want_out, got_out;
        for (const Buffer& g : grads) want_out.emplace_back(g), got_out.emplace_back(g);
        Buffer want_found(DataType::kBool, {}), got_found(DataType::kBool, {});
        std::vector<Buffer*> ins = {&scale}, want_outs, got_outs;
        std::vector<Buffer> fast_grads = grads;  // the in-place run overwrites its inputs
        for (size_t i = 0; i < grads.size(); ++i) {
          ins.push_back(&grads[i]);
          want_outs.push_back(&want_out[i]);
        }
        want_outs.push_back(&want_found);
        std::vector<Buffer*> fast_ins = {&scale};
        for (size_t i = 0; i < grads.size(); ++i) {
          fast_ins.push_back(&fast_grads[i]);
          got_outs.push_back(in_place ? &fast_grads[i] : &got_out[i]);
        }
        got_outs.push_back(&got_found);
        AttrList ra, fa;
        RunReference("UnscaleGradients", ins, want_outs, ra);
        RunFast("UnscaleGradients", fast_ins, got_outs, fa, 2);
        for (size_t i = 0; i < grads.size(); ++i) ExpectBitwise(*got_outs[i], want_out[i], what + " gradient " + std::to_string(i));
        EXPECT_EQ(got_found.t.data[0], uint8_t(bad != 0)) << what;
        EXPECT_EQ(want_found.t.data[0], uint8_t(bad != 0)) << what;
      }
}

// BatchNormalizationTraining and its gradient: both sum in double, in different orders, and
// compute Y with the same float formula, so Y, the mean and the variance are within 2 f32 ulps
// of the reference; dX (the reference's algebra rearranged, in double) and dscale, dB within 2
// ulps of the result plus 1e-6 of the largest term's ulp scale (|dY| <= 1, so 1e-9 absolute).
// 16-bit X, dY, Y and dX (mixed-precision training; scale, B and the statistics FP32): the
// statistics as in f32 (16-bit values widen exactly), Y and dX within one storage ulp (both round
// once; the fast kernel computes 16-bit dX in float with X centered, a few float ulps from the
// double form, far below a 16-bit ulp). Inner sizes below, at and past the fast kernel's
// 256-element blocks.
TEST(FastKernels, BatchNormTrainingAndGradMatchReference) {
  const std::vector<int64_t> shapes[] = {{8, 5, 7, 9}, {4, 3, 1001}, {16, 6}, {2, 64, 28, 28}, {2, 3, 256}};
  for (DataType dt : kTypes)
    for (const auto& xd : shapes) {
      int64_t C = xd[1];
      Buffer x = Random(dt, xd, 21, 3.0f), scale = Random(DataType::kF32, {C}, 22), bias = Random(DataType::kF32, {C}, 23);
      for (int64_t i = 0; i < x.t.numel; ++i) x.Set(i, x.Get(i) + 1.5f);  // a mean away from 0
      Buffer y_w(dt, xd), y_g(dt, xd), m_w(DataType::kF32, {C}), m_g(DataType::kF32, {C}), v_w(DataType::kF32, {C}), v_g(DataType::kF32, {C});
      AttrList ra, fa;
      ra.Float("epsilon", 1e-5f);
      fa.Float("epsilon", 1e-5f);
      RunReference("BatchNormalizationTraining", {&x, &scale, &bias}, {&y_w, &m_w, &v_w}, ra);
      RunFast("BatchNormalizationTraining", {&x, &scale, &bias}, {&y_g, &m_g, &v_g}, fa, 2);
      std::string what = std::string("BatchNormalizationTraining ") + TypeName(dt) + " " + DimsText(xd);
      auto close = [&](const Buffer& got, const Buffer& want, const std::string& name, double abs) {
        if (got.t.dtype != DataType::kF32) {
          ExpectWithinStorageUlp(got, want, what + " " + name);
          return;
        }
        for (int64_t i = 0; i < want.t.numel; ++i) {
          double w = want.Get(i);
          ASSERT_LE(std::fabs(got.Get(i) - w), 2 * StorageUlp(DataType::kF32, w) + abs) << what << " " << name << " element " << i;
        }
      };
      close(y_g, y_w, "Y", 0);
      close(m_g, m_w, "mean", 0);
      close(v_g, v_w, "var", 0);

      Buffer dy = Random(dt, xd, 24);
      Buffer dx_w(dt, xd), dx_g(dt, xd), ds_w(DataType::kF32, {C}), ds_g(DataType::kF32, {C}), db_w(DataType::kF32, {C}),
          db_g(DataType::kF32, {C});
      AttrList rg, fg;
      rg.Float("epsilon", 1e-5f);
      fg.Float("epsilon", 1e-5f);
      RunReference("BatchNormalizationTrainingGrad", {&dy, &x, &scale, &m_w, &v_w}, {&dx_w, &ds_w, &db_w}, rg);
      RunFast("BatchNormalizationTrainingGrad", {&dy, &x, &scale, &m_w, &v_w}, {&dx_g, &ds_g, &db_g}, fg, 2);
      close(dx_g, dx_w, "dX", 1e-9);
      close(ds_g, ds_w, "dscale", 1e-9);
      close(db_g, db_w, "dB", 1e-9);
    }
}

TEST(FastKernels, DeclineWhatTheyDoNotSupport) {
  auto expect_declined = [](const std::string& name, const std::vector<Buffer*>& in, Buffer* out, AttrList& attrs) {
    Status s = RunKernel(Registry().FindFast(name), in, {out}, attrs.Finish(), 1);
    EXPECT_EQ(s.code(), StatusCode::kUnimplemented) << name << ": " << s.message();
  };
  Buffer d = Random(DataType::kF64, {4, 5}, 41), dy(DataType::kF64, {4, 5});
  for (const char* op : {"Add", "Mul"}) {
    AttrList a;
    expect_declined(op, {&d, &d}, &dy, a);
  }
  for (const char* op : {"Erf", "Exp", "Softmax", "Relu"}) {
    AttrList a;
    expect_declined(op, {&d}, &dy, a);
  }
  Buffer x = Random(DataType::kF32, {4, 5}, 42), y(DataType::kF32, {4, 5});
  Buffer s = Random(DataType::kF32, {1}, 43);  // Scale broadcast inside the normalized dims
  AttrList ln;
  expect_declined("LayerNormalization", {&x, &s}, &y, ln);
  Buffer x3 = Random(DataType::kF32, {3, 4, 5}, 44), y3(DataType::kF32, {4});  // axes 0 and 2: two blocks
  AttrList two_blocks;
  two_blocks.Ints("axes", {0, 2});
  expect_declined("ReduceSum", {&x3}, &y3, two_blocks);
}

}  // namespace
}  // namespace precis::rt
