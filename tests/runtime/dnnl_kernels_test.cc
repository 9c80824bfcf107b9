// The oneDNN fast kernels (MatMul, Gemm, Conv, ConvTranspose, ConvFilterGrad) against a plain double-precision
// loop written here and against the reference kernel of the same name, on odd shapes: batched and
// broadcast MatMul, 1-D operands, every Gemm transpose/alpha/beta/C shape, Conv with strides,
// asymmetric pads, auto_pad, dilation 2, groups and depthwise, 1-D/2-D/3-D, with and without bias,
// constant (reordered at load) and non-constant weights. The fast kernel must take each of these
// steps (Init OK, not Unimplemented), and must decline what it does not support (f64) so the
// session falls back. Scratch and outputs start as NaN so that reading stale memory shows.
// BF16 steps (MatMul, Gemm, Conv; see "BF16 steps" below, with their own tolerance) run
// natively where the CPU has AVX512_BF16 or AMX-BF16, are declined elsewhere and run widened.
//
// Tolerance: the kernels accumulate in f32 in an order that differs from the loop here (and
// from the reference kernel): |y - exact| <= 1e-5 * sum|terms| + 1e-6, where sum|terms| is the
// sum of the absolute values of the products (and bias, C) that make up the element. That is
// about 80 f32 ulps of the absolute sum, comfortably above the order-dependent rounding for the
// reduction lengths here (<= 600) and far below any indexing error (an O(1) relative error).
#include <array>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <random>

#include <gtest/gtest.h>

#include "runtime/base/cpu_features.h"
#include "runtime/base/half.h"
#include "runtime/cpu/kernel.h"
#include "runtime/cpu/kernels/convert_blocks.h"
#include "runtime/cpu/widen_kernel.h"
#include "tests/runtime/kernel_test_util.h"

namespace precis::rt {
namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

using testing::AttrList;
using testing::Buffer;
using testing::Numel;
using testing::Random;

Buffer Nans(std::vector<int64_t> dims) {
  Buffer b = Random(std::move(dims), 0);
  std::fill(b.data.begin(), b.data.end(), kNaN);
  return b;
}

// Fills an output with NaNs of its type (f32 or bf16), so that elements left unwritten show.
void Poison(Tensor& y) {
  if (y.dtype == DataType::kBF16) std::fill(y.As<uint16_t>(), y.As<uint16_t>() + y.numel, uint16_t(0x7fc0));
  else if (y.dtype == DataType::kF16) std::fill(y.As<uint16_t>(), y.As<uint16_t>() + y.numel, uint16_t(0x7e00));
  else std::fill(y.As<float>(), y.As<float>() + y.numel, kNaN);
}

// Runs `kernel` on the tensors; returns Init's status or Run's.
Status RunKernelOn(std::unique_ptr<Kernel> kernel, const std::vector<Tensor*>& inputs, Tensor* y, Attributes attrs, int threads = 2) {
  KernelArgs args;
  args.inputs = inputs;
  args.outputs.push_back(y);
  args.attrs = attrs;
  args.node = "test";
  CpuContext ctx;
  ctx.threads = threads;
  PRECIS_RETURN_IF_ERROR(kernel->Init(args, ctx));
  std::vector<float> scratch(kernel->ScratchBytes() / sizeof(float) + 16, kNaN);
  // 64-byte aligned, as the session's scratch is.
  auto addr = reinterpret_cast<uintptr_t>(scratch.data());
  ctx.scratch = reinterpret_cast<uint8_t*>((addr + 63) / 64 * 64);
  Poison(*y);
  PRECIS_RETURN_IF_ERROR(kernel->Run(args, ctx));
  // Again with the scratch and output poisoned after the first run: other steps share the
  // scratch, so nothing may rely on what an earlier run (or binding) left there.
  std::fill(scratch.begin(), scratch.end(), kNaN);
  Poison(*y);
  return kernel->Run(args, ctx);
}

// Runs one kernel (reference or fast) on the inputs; returns Init's status or Run's.
Status RunKernel(KernelFactory factory, const std::vector<Buffer*>& inputs, Buffer* y, Attributes attrs, int threads = 2) {
  std::vector<Tensor*> tensors;
  for (Buffer* b : inputs) tensors.push_back(b ? &b->t : nullptr);
  return RunKernelOn(factory(), tensors, &y->t, attrs, threads);
}

// The exact value of each output element and the sum of |terms| that made it.
struct Expected {
  std::vector<double> value, magnitude;
};

// The tolerance of element i is rel * sum|terms| + abs + out_rel * |exact| (the last for the
// rounding to a 16-bit output); the defaults are the f32 tolerance above.
void ExpectClose(const std::vector<float>& y, const Expected& e, const std::string& what, double rel = 1e-5, double abs = 1e-6,
                 double out_rel = 0.0) {
  ASSERT_EQ(y.size(), e.value.size()) << what;
  int bad = 0;
  for (size_t i = 0; i < e.value.size() && bad < 5; ++i) {
    double tol = rel * e.magnitude[i] + abs + out_rel * std::fabs(e.value[i]);
    if (!(std::fabs(double(y[i]) - e.value[i]) <= tol)) {
      ADD_FAILURE() << what << ": element " << i << " is " << y[i] << ", expected " << e.value[i] << " (tol " << tol << ")";
      ++bad;
    }
  }
}

// Runs the fast kernel (which must take the step), compares it with `e`, then runs the
// reference kernel and compares it with `e` too (so both agree within the tolerance).
void CheckBoth(const std::string& name, const std::vector<Buffer*>& inputs, std::vector<int64_t> out_dims, AttrList& attrs,
               const Expected& e) {
  Attributes a = attrs.Finish();
  KernelFactory fast = KernelRegistry::Cpu().FindFast(name), ref = KernelRegistry::Cpu().Find(name);
  ASSERT_NE(fast, nullptr) << name << " has no fast kernel";
  for (int threads : {1, 2}) {
    Buffer y = Nans(out_dims);
    Status s = RunKernel(fast, inputs, &y, a, threads);
    ASSERT_TRUE(s.ok()) << name << " fast: " << s.ToString();
    ExpectClose(y.data, e, name + " fast, " + std::to_string(threads) + " threads");
  }
  if (!ref) return;  // reference not written yet: the double loop above is the check
  Buffer y = Nans(out_dims);
  Status s = RunKernel(ref, inputs, &y, a);
  ASSERT_TRUE(s.ok()) << name << " reference: " << s.ToString();
  ExpectClose(y.data, e, name + " reference");
}

// ---- MatMul and Gemm ----

// numpy matmul in double; dims already promoted to rank >= 2 and equal ranks.
Expected MatMulLoop(const Buffer& a, std::vector<int64_t> ad, const Buffer& b, std::vector<int64_t> bd) {
  size_t r = std::max(ad.size(), bd.size());
  ad.insert(ad.begin(), r - ad.size(), 1);
  bd.insert(bd.begin(), r - bd.size(), 1);
  int64_t M = ad[r - 2], K = ad[r - 1], N = bd[r - 1];
  std::vector<int64_t> batch(r - 2);
  for (size_t i = 0; i + 2 < r; ++i) batch[i] = std::max(ad[i], bd[i]);
  int64_t batches = Numel(batch);
  Expected e;
  for (int64_t bi = 0; bi < batches; ++bi) {
    int64_t ao = 0, bo = 0, rest = bi, as = M * K, bs = K * N;
    for (size_t i = r - 2; i-- > 0;) {
      int64_t c = rest % batch[i];
      rest /= batch[i];
      ao += (ad[i] == 1 ? 0 : c) * as;
      bo += (bd[i] == 1 ? 0 : c) * bs;
      as *= ad[i];
      bs *= bd[i];
    }
    for (int64_t m = 0; m < M; ++m)
      for (int64_t n = 0; n < N; ++n) {
        double v = 0, mag = 0;
        for (int64_t k = 0; k < K; ++k) {
          double t = double(a.data[size_t(ao + m * K + k)]) * b.data[size_t(bo + k * N + n)];
          v += t;
          mag += std::fabs(t);
        }
        e.value.push_back(v);
        e.magnitude.push_back(mag);
      }
  }
  return e;
}

void CheckMatMul(std::vector<int64_t> ad, std::vector<int64_t> bd, std::vector<int64_t> yd, bool b_constant) {
  Buffer a = Random(ad, 1), b = Random(bd, 2, b_constant);
  std::vector<int64_t> pa = ad, pb = bd;
  if (pa.size() == 1) pa.insert(pa.begin(), 1);
  if (pb.size() == 1) pb.push_back(1);
  AttrList attrs;
  SCOPED_TRACE("MatMul b_constant=" + std::to_string(b_constant));
  CheckBoth("MatMul", {&a, &b}, yd, attrs, MatMulLoop(a, pa, b, pb));
}

TEST(DnnlMatMul, OddShapes) {
  for (bool constant : {false, true}) {
    CheckMatMul({7, 13}, {13, 5}, {7, 5}, constant);
    CheckMatMul({33, 70}, {70, 65}, {33, 65}, constant);
    CheckMatMul({3, 7, 13}, {3, 13, 5}, {3, 7, 5}, constant);   // batched
    CheckMatMul({2, 1, 7, 13}, {3, 13, 5}, {2, 3, 7, 5}, constant);  // broadcast both ways
    CheckMatMul({2, 3, 7, 13}, {13, 5}, {2, 3, 7, 5}, constant);  // 2-D B: folded into M
    CheckMatMul({7, 13}, {2, 13, 5}, {2, 7, 5}, constant);        // 2-D A, batched B
    CheckMatMul({13}, {13, 5}, {5}, constant);                    // 1-D A
    CheckMatMul({2, 7, 13}, {13}, {2, 7}, constant);              // 1-D B
  }
}

// Constant FP32 weights of 1 MiB or more are packed once by oneDNN's sgemm for the step's row
// count (dnnl_matmul.cc PackWeights, where libdnnl has it): one row, a few, and a batch folded
// into M, against the double loop.
TEST(DnnlMatMul, PackedConstantWeights) {
  CheckMatMul({1, 512}, {512, 640}, {1, 640}, true);
  CheckMatMul({37, 512}, {512, 640}, {37, 640}, true);
  CheckMatMul({3, 50, 512}, {512, 640}, {3, 50, 640}, true);
  CheckMatMul({5, 1024}, {1024, 300}, {5, 300}, true);
}

TEST(DnnlMatMul, DeclinesOtherTypes) {
  Buffer a = Random({2, 3}, 1), b = Random({3, 2}, 2), y = Nans({2, 2});
  a.t.dtype = b.t.dtype = y.t.dtype = DataType::kF64;  // sizes are wrong for f64 but Init declines first
  AttrList attrs;
  Status s = RunKernel(KernelRegistry::Cpu().FindFast("MatMul"), {&a, &b}, &y, attrs.Finish());
  EXPECT_EQ(s.code(), StatusCode::kUnimplemented) << s.ToString();
}

struct GemmCase {
  bool trans_a, trans_b;
  float alpha, beta;
  std::vector<int64_t> c_dims;  // {-1}: no C
};

bool HasC(const GemmCase& g) { return !(g.c_dims.size() == 1 && g.c_dims[0] == -1); }

// Gemm in double: alpha * A' x B' + beta * C, with C broadcast from g.c_dims to M x N.
Expected GemmLoop(const GemmCase& g, int64_t M, int64_t K, int64_t N, const Buffer& a, const Buffer& b, const Buffer& c) {
  bool has_c = HasC(g);
  Expected e;
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n) {
      double v = 0, mag = 0;
      for (int64_t k = 0; k < K; ++k) {
        double t = double(a.data[size_t(g.trans_a ? k * M + m : m * K + k)]) * b.data[size_t(g.trans_b ? n * K + k : k * N + n)];
        v += t;
        mag += std::fabs(t);
      }
      v *= g.alpha;
      mag *= std::fabs(g.alpha);
      if (has_c) {
        int64_t cm = g.c_dims.size() == 2 ? g.c_dims[0] : 1, cn = g.c_dims.empty() ? 1 : g.c_dims.back();
        double t = double(g.beta) * c.data[size_t((cm == 1 ? 0 : m) * cn + (cn == 1 ? 0 : n))];
        v += t;
        mag += std::fabs(t);
      }
      e.value.push_back(v);
      e.magnitude.push_back(mag);
    }
  return e;
}

AttrList& GemmAttrs(AttrList& attrs, const GemmCase& g) {
  return attrs.Float("alpha", g.alpha).Float("beta", g.beta).Int("transA", g.trans_a).Int("transB", g.trans_b);
}

void CheckGemm(const GemmCase& g, bool b_constant, int64_t M = 7, int64_t K = 13, int64_t N = 5) {
  Buffer a = Random(g.trans_a ? std::vector<int64_t>{K, M} : std::vector<int64_t>{M, K}, 3);
  Buffer b = Random(g.trans_b ? std::vector<int64_t>{N, K} : std::vector<int64_t>{K, N}, 4, b_constant);
  Buffer c = Random(HasC(g) ? g.c_dims : std::vector<int64_t>{}, 5);
  AttrList attrs;
  std::vector<Buffer*> inputs = {&a, &b};
  if (HasC(g)) inputs.push_back(&c);
  SCOPED_TRACE("Gemm transA=" + std::to_string(g.trans_a) + " transB=" + std::to_string(g.trans_b) + " alpha=" +
               std::to_string(g.alpha) + " beta=" + std::to_string(g.beta) + " C rank " + std::to_string(g.c_dims.size()) +
               " b_constant=" + std::to_string(b_constant));
  CheckBoth("Gemm", inputs, {M, N}, GemmAttrs(attrs, g), GemmLoop(g, M, K, N, a, b, c));
}

// Constant FP32 weights of 1 MiB or more, packed once (dnnl_matmul.cc PackWeights; transB packs
// the transposed form): C broadcast into Y first, then the product with beta; alpha != 1 or
// transA take the primitive.
TEST(DnnlGemm, PackedConstantWeights) {
  for (bool tb : {false, true})
    for (const auto& c : std::vector<std::vector<int64_t>>{{-1}, {640}, {1, 640}, {9, 640}, {9, 1}}) {
      CheckGemm({false, tb, 1.0f, 1.0f, c}, true, 9, 512, 640);
      CheckGemm({false, tb, 1.0f, -0.25f, c}, true, 9, 512, 640);
    }
  CheckGemm({false, true, 0.5f, 1.0f, {640}}, true, 9, 512, 640);
  CheckGemm({true, true, 1.0f, 1.0f, {640}}, true, 9, 512, 640);
}

TEST(DnnlGemm, TransposesScalesAndC) {
  const std::vector<std::vector<int64_t>> cs = {{-1}, {}, {1}, {5}, {1, 5}, {7, 1}, {7, 5}, {1, 1}};
  for (bool constant : {false, true})
    for (bool ta : {false, true})
      for (bool tb : {false, true})
        for (const auto& c : cs) {
          CheckGemm({ta, tb, 1.0f, 1.0f, c}, constant);
          CheckGemm({ta, tb, 0.5f, -0.25f, c}, constant);
        }
  CheckGemm({false, false, 2.0f, 0.0f, {7, 5}}, false);  // beta 0: C is ignored
}

// ---- Conv and ConvTranspose ----

struct ConvCase {
  std::vector<int64_t> x;       // N, C, spatial...
  int64_t m;                    // output channels
  std::vector<int64_t> kernel;  // spatial
  int64_t group = 1;
  std::vector<int64_t> strides, dilations, pads;  // empty: defaults
  std::string auto_pad;                           // empty: not set
  bool bias = true;
  bool w_constant = false;
};

std::vector<int64_t> Or(const std::vector<int64_t>& v, size_t n, int64_t fill) { return v.empty() ? std::vector<int64_t>(n, fill) : v; }

AttrList& ConvAttrs(AttrList& attrs, const ConvCase& c) {
  attrs.Ints("kernel_shape", c.kernel).Int("group", c.group);
  if (!c.strides.empty()) attrs.Ints("strides", c.strides);
  if (!c.dilations.empty()) attrs.Ints("dilations", c.dilations);
  if (!c.pads.empty()) attrs.Ints("pads", c.pads);
  if (!c.auto_pad.empty()) attrs.String("auto_pad", c.auto_pad);
  return attrs;
}

// Strided iteration over up to 3 spatial dims, right-aligned in {1, 1, 1}.
std::array<int64_t, 3> Pad3(const std::vector<int64_t>& v, int64_t fill) {
  std::array<int64_t, 3> r{fill, fill, fill};
  for (size_t i = 0; i < v.size(); ++i) r[3 - v.size() + i] = v[i];
  return r;
}

// W's and Y's dims for `c`, and the begin pad of each spatial dim.
struct ConvShape {
  std::vector<int64_t> w, y, pad_begin;
};

ConvShape ShapeOf(const ConvCase& c) {
  size_t n = c.kernel.size();
  int64_t N = c.x[0], M = c.m, Cg = c.x[1] / c.group;
  std::vector<int64_t> in(c.x.begin() + 2, c.x.end()), s = Or(c.strides, n, 1), d = Or(c.dilations, n, 1),
      p = Or(c.pads, 2 * n, 0), out(n), pb(n);
  for (size_t i = 0; i < n; ++i) {  // ONNX output size and begin pad, written out independently
    int64_t ext = (c.kernel[i] - 1) * d[i] + 1;
    if (c.auto_pad == "SAME_UPPER" || c.auto_pad == "SAME_LOWER") {
      out[i] = (in[i] + s[i] - 1) / s[i];
      int64_t total = std::max<int64_t>(0, (out[i] - 1) * s[i] + ext - in[i]);
      pb[i] = c.auto_pad == "SAME_UPPER" ? total / 2 : (total + 1) / 2;
    } else if (c.auto_pad == "VALID") {
      out[i] = (in[i] - ext) / s[i] + 1;
      pb[i] = 0;
    } else {
      out[i] = (in[i] + p[i] + p[i + n] - ext) / s[i] + 1;
      pb[i] = p[i];
    }
  }
  std::vector<int64_t> wd = {M, Cg}, yd = {N, M};
  wd.insert(wd.end(), c.kernel.begin(), c.kernel.end());
  yd.insert(yd.end(), out.begin(), out.end());
  return {wd, yd, pb};
}

// Conv in double (the bias is read only when c.bias).
Expected ConvLoop(const ConvCase& c, const Buffer& x, const Buffer& w, const Buffer& b) {
  size_t n = c.kernel.size();
  int64_t N = c.x[0], C = c.x[1], M = c.m, G = c.group, Cg = C / G, Mg = M / G;
  ConvShape shape = ShapeOf(c);
  std::vector<int64_t> in(c.x.begin() + 2, c.x.end()), out(shape.y.begin() + 2, shape.y.end());
  auto I = Pad3(in, 1), O = Pad3(out, 1), K = Pad3(c.kernel, 1), S = Pad3(Or(c.strides, n, 1), 1),
       D = Pad3(Or(c.dilations, n, 1), 1), P = Pad3(shape.pad_begin, 0);
  int64_t isz = I[0] * I[1] * I[2], ksz = K[0] * K[1] * K[2];
  Expected e;
  for (int64_t ni = 0; ni < N; ++ni)
    for (int64_t mo = 0; mo < M; ++mo)
      for (int64_t o0 = 0; o0 < O[0]; ++o0)
        for (int64_t o1 = 0; o1 < O[1]; ++o1)
          for (int64_t o2 = 0; o2 < O[2]; ++o2) {
            double v = c.bias ? b.data[size_t(mo)] : 0.0, mag = std::fabs(v);
            int64_t g = mo / Mg;
            for (int64_t ci = 0; ci < Cg; ++ci)
              for (int64_t k0 = 0; k0 < K[0]; ++k0)
                for (int64_t k1 = 0; k1 < K[1]; ++k1)
                  for (int64_t k2 = 0; k2 < K[2]; ++k2) {
                    int64_t i0 = o0 * S[0] - P[0] + k0 * D[0], i1 = o1 * S[1] - P[1] + k1 * D[1], i2 = o2 * S[2] - P[2] + k2 * D[2];
                    if (i0 < 0 || i0 >= I[0] || i1 < 0 || i1 >= I[1] || i2 < 0 || i2 >= I[2]) continue;
                    double t = double(x.data[size_t((ni * C + g * Cg + ci) * isz + (i0 * I[1] + i1) * I[2] + i2)]) *
                               w.data[size_t((mo * Cg + ci) * ksz + (k0 * K[1] + k1) * K[2] + k2)];
                    v += t;
                    mag += std::fabs(t);
                  }
            e.value.push_back(v);
            e.magnitude.push_back(mag);
          }
  return e;
}

void CheckConv(const ConvCase& c) {
  ConvShape shape = ShapeOf(c);
  Buffer x = Random(c.x, 6), w = Random(shape.w, 7, c.w_constant), b = Random({c.m}, 8);
  AttrList attrs;
  std::vector<Buffer*> inputs = {&x, &w};
  if (c.bias) inputs.push_back(&b);
  SCOPED_TRACE("Conv x rank " + std::to_string(c.x.size()) + " C " + std::to_string(c.x[1]) + " M " + std::to_string(c.m) +
               " group " + std::to_string(c.group) + " auto_pad '" + c.auto_pad + "' w_constant " + std::to_string(c.w_constant));
  CheckBoth("Conv", inputs, shape.y, ConvAttrs(attrs, c), ConvLoop(c, x, w, b));
}

TEST(DnnlConv, TwoD) {
  for (bool wc : {false, true}) {
    CheckConv({{2, 3, 11, 9}, 4, {3, 3}, 1, {2, 2}, {}, {1, 0, 2, 1}, "", true, wc});  // stride 2, asymmetric pads
    CheckConv({{1, 5, 12, 10}, 6, {3, 2}, 1, {}, {2, 2}, {2, 1, 2, 1}, "", false, wc});  // dilation 2, no bias
    CheckConv({{1, 6, 9, 8}, 4, {3, 3}, 2, {1, 2}, {}, {1, 1, 1, 1}, "", true, wc});  // 2 groups
    CheckConv({{2, 8, 10, 7}, 8, {3, 3}, 8, {2, 2}, {}, {1, 1, 1, 1}, "", true, wc});  // depthwise, stride 2
    CheckConv({{1, 4, 9, 9}, 8, {5, 5}, 4, {}, {2, 1}, {}, "SAME_UPPER", false, wc});  // depthwise x2, dilation
    CheckConv({{1, 3, 10, 9}, 5, {4, 3}, 1, {2, 3}, {}, {}, "SAME_LOWER", true, wc});
    CheckConv({{1, 3, 10, 9}, 5, {4, 3}, 1, {2, 3}, {}, {}, "SAME_UPPER", true, wc});
    CheckConv({{1, 7, 8, 11}, 3, {2, 4}, 1, {3, 1}, {}, {}, "VALID", true, wc});
    CheckConv({{1, 32, 14, 14}, 24, {1, 1}, 1, {}, {}, {}, "", true, wc});  // pointwise, blocked layouts
    CheckConv({{1, 32, 13, 13}, 48, {3, 3}, 1, {}, {}, {1, 1, 1, 1}, "", true, wc});
  }
}

TEST(DnnlConv, OneAndThreeD) {
  for (bool wc : {false, true}) {
    CheckConv({{2, 5, 17}, 4, {4}, 1, {3}, {2}, {2, 1}, "", true, wc});  // stride 3, dilation 2, pads
    CheckConv({{1, 6, 15}, 6, {3}, 6, {}, {}, {1, 1}, "", false, wc});  // depthwise 1-D
    CheckConv({{1, 3, 6, 7, 5}, 4, {3, 2, 3}, 1, {2, 1, 2}, {1, 2, 1}, {1, 0, 1, 0, 1, 1}, "", true, wc});
  }
}

// ConvFilterGrad(X, dY) -> dW of the Conv described by `c` (its bias flag unused): in double,
// dW[m, ci, k] = sum over n and o of dY[n, m, o] * X[n, g * Cg + ci, o * s - p + k * d].
Expected FilterGradLoop(const ConvCase& c, const Buffer& x, const Buffer& dy) {
  size_t n = c.kernel.size();
  ConvShape shape = ShapeOf(c);
  int64_t N = c.x[0], C = c.x[1], M = c.m, G = c.group, Cg = C / G, Mg = M / G;
  std::vector<int64_t> in(c.x.begin() + 2, c.x.end()), out(shape.y.begin() + 2, shape.y.end());
  auto I = Pad3(in, 1), O = Pad3(out, 1), K = Pad3(c.kernel, 1), S = Pad3(Or(c.strides, n, 1), 1),
       D = Pad3(Or(c.dilations, n, 1), 1), P = Pad3(shape.pad_begin, 0);
  int64_t isz = I[0] * I[1] * I[2], osz = O[0] * O[1] * O[2];
  Expected e;
  for (int64_t mo = 0; mo < M; ++mo)
    for (int64_t ci = 0; ci < Cg; ++ci)
      for (int64_t k0 = 0; k0 < K[0]; ++k0)
        for (int64_t k1 = 0; k1 < K[1]; ++k1)
          for (int64_t k2 = 0; k2 < K[2]; ++k2) {
            double v = 0, mag = 0;
            for (int64_t ni = 0; ni < N; ++ni)
              for (int64_t o0 = 0; o0 < O[0]; ++o0)
                for (int64_t o1 = 0; o1 < O[1]; ++o1)
                  for (int64_t o2 = 0; o2 < O[2]; ++o2) {
                    int64_t i0 = o0 * S[0] - P[0] + k0 * D[0], i1 = o1 * S[1] - P[1] + k1 * D[1], i2 = o2 * S[2] - P[2] + k2 * D[2];
                    if (i0 < 0 || i0 >= I[0] || i1 < 0 || i1 >= I[1] || i2 < 0 || i2 >= I[2]) continue;
                    double t = double(x.data[size_t((ni * C + mo / Mg * Cg + ci) * isz + (i0 * I[1] + i1) * I[2] + i2)]) *
                               dy.data[size_t((ni * M + mo) * osz + (o0 * O[1] + o1) * O[2] + o2)];
                    v += t;
                    mag += std::fabs(t);
                  }
            e.value.push_back(v);
            e.magnitude.push_back(mag);
          }
  return e;
}

void CheckFilterGrad(const ConvCase& c) {
  ConvShape shape = ShapeOf(c);
  int64_t C = c.x[1], M = c.m, G = c.group;
  Buffer x = Random(c.x, 12), dy = Random(shape.y, 13);
  Expected e = FilterGradLoop(c, x, dy);
  AttrList attrs;
  SCOPED_TRACE("ConvFilterGrad x rank " + std::to_string(c.x.size()) + " C " + std::to_string(C) + " M " + std::to_string(M) +
               " group " + std::to_string(G) + " auto_pad '" + c.auto_pad + "'");
  CheckBoth("ConvFilterGrad", {&x, &dy}, shape.w, ConvAttrs(attrs, c), e);
}

// The filter gradient of training plans: the reduction runs over N and the output positions
// (up to 2 * 12 * 12 = 288 terms here, within the tolerance's reach).
TEST(DnnlConvFilterGrad, StridesPadsDilationsGroups) {
  CheckFilterGrad({{2, 3, 11, 9}, 4, {3, 3}, 1, {2, 2}, {}, {1, 0, 2, 1}, ""});  // stride 2, asymmetric pads
  CheckFilterGrad({{1, 5, 12, 10}, 6, {3, 2}, 1, {}, {2, 2}, {2, 1, 2, 1}, ""});  // dilation 2
  CheckFilterGrad({{1, 6, 9, 8}, 4, {3, 3}, 2, {1, 2}, {}, {1, 1, 1, 1}, ""});  // 2 groups
  CheckFilterGrad({{2, 8, 10, 7}, 8, {3, 3}, 8, {2, 2}, {}, {1, 1, 1, 1}, ""});  // depthwise, stride 2
  CheckFilterGrad({{1, 3, 10, 9}, 5, {4, 3}, 1, {2, 3}, {}, {}, "SAME_UPPER"});
  CheckFilterGrad({{2, 32, 12, 12}, 16, {1, 1}, 1, {2, 2}, {}, {}, ""});  // 1x1 stride 2 (ResNet downsample)
  CheckFilterGrad({{2, 16, 12, 12}, 24, {3, 3}, 1, {}, {}, {1, 1, 1, 1}, ""});  // blocked layouts
  CheckFilterGrad({{2, 5, 17}, 4, {4}, 1, {3}, {2}, {2, 1}, ""});  // 1-D
  CheckFilterGrad({{1, 3, 6, 7, 5}, 4, {3, 2, 3}, 1, {2, 1, 2}, {1, 2, 1}, {1, 0, 1, 0, 1, 1}, ""});  // 3-D
}

struct TransposeCase {
  std::vector<int64_t> x;  // N, C, spatial...
  int64_t mg;              // output channels per group
  std::vector<int64_t> kernel;
  int64_t group = 1;
  std::vector<int64_t> strides, dilations, pads, output_padding;
  bool bias = true;
  bool w_constant = false;
};

// Y's dims and values of the ConvTranspose `c` on X, W and B (B used when c.bias), in double.
Expected ConvTransposeLoop(const TransposeCase& c, const Buffer& x, const Buffer& w, const Buffer& b, std::vector<int64_t>* y_dims) {
  size_t n = c.kernel.size();
  int64_t N = c.x[0], C = c.x[1], G = c.group, Cg = C / G, Mg = c.mg, M = Mg * G;
  std::vector<int64_t> in(c.x.begin() + 2, c.x.end()), s = Or(c.strides, n, 1), d = Or(c.dilations, n, 1),
      p = Or(c.pads, 2 * n, 0), op = Or(c.output_padding, n, 0), out(n);
  for (size_t i = 0; i < n; ++i) out[i] = s[i] * (in[i] - 1) + op[i] + (c.kernel[i] - 1) * d[i] + 1 - p[i] - p[i + n];
  std::vector<int64_t> wd = {C, Mg}, yd = {N, M};
  wd.insert(wd.end(), c.kernel.begin(), c.kernel.end());
  yd.insert(yd.end(), out.begin(), out.end());
  *y_dims = yd;
  auto I = Pad3(in, 1), O = Pad3(out, 1), K = Pad3(c.kernel, 1), S = Pad3(s, 1), D = Pad3(d, 1), P = Pad3(std::vector<int64_t>(p.begin(), p.begin() + long(n)), 0);
  int64_t osz = O[0] * O[1] * O[2], isz = I[0] * I[1] * I[2], ksz = K[0] * K[1] * K[2];
  Expected e;
  e.value.assign(size_t(N * M * osz), 0.0);
  e.magnitude.assign(e.value.size(), 0.0);
  for (int64_t ni = 0; ni < N; ++ni)  // scatter: y[o * s - p + k * d] += x[i] * w[k]
    for (int64_t ci = 0; ci < C; ++ci)
      for (int64_t mo = 0; mo < Mg; ++mo)
        for (int64_t i0 = 0; i0 < I[0]; ++i0)
          for (int64_t i1 = 0; i1 < I[1]; ++i1)
            for (int64_t i2 = 0; i2 < I[2]; ++i2)
              for (int64_t k0 = 0; k0 < K[0]; ++k0)
                for (int64_t k1 = 0; k1 < K[1]; ++k1)
                  for (int64_t k2 = 0; k2 < K[2]; ++k2) {
                    int64_t y0 = i0 * S[0] - P[0] + k0 * D[0], y1 = i1 * S[1] - P[1] + k1 * D[1], y2 = i2 * S[2] - P[2] + k2 * D[2];
                    if (y0 < 0 || y0 >= O[0] || y1 < 0 || y1 >= O[1] || y2 < 0 || y2 >= O[2]) continue;
                    double t = double(x.data[size_t((ni * C + ci) * isz + (i0 * I[1] + i1) * I[2] + i2)]) *
                               w.data[size_t((ci * Mg + mo) * ksz + (k0 * K[1] + k1) * K[2] + k2)];
                    size_t yi = size_t((ni * M + (ci / Cg) * Mg + mo) * osz + (y0 * O[1] + y1) * O[2] + y2);
                    e.value[yi] += t;
                    e.magnitude[yi] += std::fabs(t);
                  }
  if (c.bias)
    for (size_t i = 0; i < e.value.size(); ++i) {
      double t = b.data[size_t(int64_t(i) / osz % M)];
      e.value[i] += t;
      e.magnitude[i] += std::fabs(t);
    }
  return e;
}

// W's dims [C, M/group, k...] of the ConvTranspose `c`.
std::vector<int64_t> TransposeWeightDims(const TransposeCase& c) {
  std::vector<int64_t> wd = {c.x[1], c.mg};
  wd.insert(wd.end(), c.kernel.begin(), c.kernel.end());
  return wd;
}

AttrList& TransposeAttrs(AttrList& attrs, const TransposeCase& c) {
  attrs.Ints("kernel_shape", c.kernel).Int("group", c.group);
  if (!c.strides.empty()) attrs.Ints("strides", c.strides);
  if (!c.dilations.empty()) attrs.Ints("dilations", c.dilations);
  if (!c.pads.empty()) attrs.Ints("pads", c.pads);
  if (!c.output_padding.empty()) attrs.Ints("output_padding", c.output_padding);
  return attrs;
}

void CheckConvTranspose(const TransposeCase& c) {
  int64_t G = c.group, M = c.mg * G;
  Buffer x = Random(c.x, 9), w = Random(TransposeWeightDims(c), 10, c.w_constant), b = Random({M}, 11);
  std::vector<int64_t> yd;
  Expected e = ConvTransposeLoop(c, x, w, b, &yd);
  AttrList attrs;
  TransposeAttrs(attrs, c);
  std::vector<Buffer*> inputs = {&x, &w};
  if (c.bias) inputs.push_back(&b);
  SCOPED_TRACE("ConvTranspose x rank " + std::to_string(c.x.size()) + " group " + std::to_string(G) + " w_constant " +
               std::to_string(c.w_constant));
  CheckBoth("ConvTranspose", inputs, yd, attrs, e);
}

TEST(DnnlConvTranspose, StridesPadsGroups) {
  for (bool wc : {false, true}) {
    CheckConvTranspose({{2, 3, 5, 4}, 4, {3, 3}, 1, {2, 2}, {}, {1, 0, 1, 1}, {}, true, wc});
    CheckConvTranspose({{1, 4, 5, 6}, 3, {3, 2}, 2, {2, 3}, {2, 1}, {0, 1, 1, 0}, {1, 2}, false, wc});  // output_padding
    CheckConvTranspose({{1, 6, 7, 5}, 1, {3, 3}, 6, {2, 2}, {}, {1, 1, 1, 1}, {1, 1}, true, wc});     // depthwise
    CheckConvTranspose({{2, 5, 9}, 3, {4}, 1, {3}, {2}, {2, 1}, {}, true, wc});                          // 1-D
  }
}

TEST(DnnlConv, DeclinesOtherTypes) {
  Buffer x = Random({1, 2, 5, 5}, 1), w = Random({3, 2, 3, 3}, 2), y = Nans({1, 3, 3, 3});
  x.t.dtype = w.t.dtype = y.t.dtype = DataType::kF16;
  AttrList attrs;
  attrs.Ints("kernel_shape", {3, 3});
  Status s = RunKernel(KernelRegistry::Cpu().FindFast("Conv"), {&x, &w}, &y, attrs.Finish());
  EXPECT_EQ(s.code(), StatusCode::kUnimplemented) << s.ToString();
}


// ---- BF16 steps ----
//
// The precision pass gives compute ops BF16 operands (A and B, X and W) and BF16 or F32 bias/C
// and outputs. Where the CPU has native BF16 (AVX512_BF16 or AMX-BF16, see
// runtime/base/cpu_features.h) the oneDNN kernels take such steps as they are; elsewhere, or
// with PRECIS_CPU_BF16=0, their Init declines (Unimplemented) and the session runs the f32
// kernel widened (WidenKernel), which these tests run too.
//
// The reference is the double loop above on the BF16 values themselves (random data rounded to
// BF16 first), so the rounding of the inputs is not counted as error. Tolerances:
// - native: |y - exact| <= 2^-8 * sum|terms| (+ 2^-8 * |exact| for a BF16 output). Products of
//   BF16 values are exact in f32 and oneDNN accumulates in f32, which alone stays near
//   K * 2^-24 * sum|terms|; 2^-8 * sum|terms| is one BF16 rounding of a partial result (how a
//   BF16 kernel converts the bias or keeps partial sums is oneDNN's choice) and still far below
//   an indexing or conversion error, which is O(1) relative to sum|terms|. Rounding the result
//   to a BF16 output (8 significant bits, to nearest) moves it by at most 2^-8 * |y|.
// - widened: the f32 tolerance (the f32 kernel on exact widenings), plus the same output
//   rounding 2^-8 * |exact|.

// A step tensor, f32 or BF16, of random data (never zero; outputs are poisoned before each run).
struct TypedBuffer {
  Buffer wide;                 // the values as f32, exactly (what the double loops read)
  std::vector<uint16_t> bits;  // the BF16 storage
  Tensor t;                    // the step's tensor: over wide.data (f32) or bits (BF16)
};

// Random values rounded to `dtype` (moving a TypedBuffer keeps t.data valid; copying does not).
TypedBuffer RandomTyped(DataType dtype, std::vector<int64_t> dims, uint32_t seed, bool constant = false) {
  TypedBuffer b;
  b.wide = Random(std::move(dims), seed, constant);
  b.t = b.wide.t;
  if (dtype == DataType::kBF16 || dtype == DataType::kF16) {
    b.bits.resize(b.wide.data.size());
    for (size_t i = 0; i < b.bits.size(); ++i) {
      b.bits[i] = dtype == DataType::kF16 ? FloatToHalf(b.wide.data[i]) : FloatToBf16(b.wide.data[i]);
      b.wide.data[i] = dtype == DataType::kF16 ? HalfToFloat(b.bits[i]) : Bf16ToFloat(b.bits[i]);
    }
    b.t.dtype = dtype;
    b.t.bytes = b.bits.size() * sizeof(uint16_t);
    b.t.data = reinterpret_cast<uint8_t*>(b.bits.data());
  }
  return b;
}

// The output's values as f32 (BF16 widened exactly).
std::vector<float> Values(const TypedBuffer& y) {
  if (y.t.dtype != DataType::kBF16 && y.t.dtype != DataType::kF16) return y.wide.data;
  std::vector<float> v(y.bits.size());
  for (size_t i = 0; i < v.size(); ++i) v[i] = y.t.dtype == DataType::kF16 ? HalfToFloat(y.bits[i]) : Bf16ToFloat(y.bits[i]);
  return v;
}

// Runs the fast kernel on a BF16 step: as it is when `native` (it must take the step) or else
// expecting Unimplemented; then widened to f32 (it must take the step). Both against `e`.
// `blocked`: without native BF16 the fast kernel takes the step anyway, widening its constant
// weights block by block (see "16-bit weights in blocks" below), with the f32 tolerance.
void CheckBf16Step(const std::string& name, const std::vector<TypedBuffer*>& inputs, TypedBuffer* y, Attributes a, const Expected& e,
                   bool native, bool blocked = false) {
  KernelFactory fast = KernelRegistry::Cpu().FindFast(name);
  ASSERT_NE(fast, nullptr) << name << " has no fast kernel";
  std::vector<Tensor*> tensors;
  for (TypedBuffer* b : inputs) tensors.push_back(b ? &b->t : nullptr);
  double out_rel = y->t.dtype == DataType::kBF16 ? 0x1p-8 : 0.0;
  if (native) {
    for (int threads : {1, 2}) {
      Status s = RunKernelOn(fast(), tensors, &y->t, a, threads);
      ASSERT_TRUE(s.ok()) << name << ": the native BF16 kernel must take this step: " << s.ToString();
      ExpectClose(Values(*y), e, name + " native bf16, " + std::to_string(threads) + " threads", 0x1p-8, 0.0, out_rel);
    }
  } else if (blocked) {
    Status s = RunKernelOn(fast(), tensors, &y->t, a);
    ASSERT_TRUE(s.ok()) << name << ": constant BF16 weights must run in blocks here: " << s.ToString();
    ExpectClose(Values(*y), e, name + " bf16 weights in blocks", 1e-5, 1e-6, out_rel);
  } else {
    // Declined by the CPU check itself (its message), not only because oneDNN has no BF16
    // implementation on this CPU: on AVX-512 CPUs without BF16 oneDNN may emulate it.
    Status s = RunKernelOn(fast(), tensors, &y->t, a);
    EXPECT_EQ(s.code(), StatusCode::kUnimplemented) << name << ": BF16 must be declined here (the widened path runs): " << s.ToString();
    if (!NativeBf16Enabled()) {
      EXPECT_NE(s.message().find("AVX512_BF16"), std::string::npos) << s.ToString();
    }
  }
  Status s = RunKernelOn(std::make_unique<WidenKernel>(fast()), tensors, &y->t, a);
  ASSERT_TRUE(s.ok()) << name << " widened: " << s.ToString();
  ExpectClose(Values(*y), e, name + " widened", 1e-5, 1e-6, out_rel);
}

// Steps initialized while it lives take HalfWeightsGemm past kHalfWeightsGemvRows rows (mode 1)
// or widened blocks handed to oneDNN (mode 0), whatever the CPU's default.
struct HalfGemmMode {
  int saved;
  explicit HalfGemmMode(int mode) : saved(SetHalfWeightsGemmForTesting(mode)) {}
  ~HalfGemmMode() { SetHalfWeightsGemmForTesting(saved); }
};

std::string TypeName(DataType t) { return t == DataType::kBF16 ? "bf16" : "f32"; }

// MatMul, Gemm (with bias, and with C through alpha/beta) and Conv (with bias, strides, groups,
// depthwise, 1x1) in BF16; `native`: whether the fast kernels should take them as they are.
void CheckBf16Cases(bool native) {
  constexpr DataType kB = DataType::kBF16, kF = DataType::kF32;
  struct MatMulCase {
    std::vector<int64_t> a, b, y;
    bool b_constant;
    DataType out;
  };
  for (const MatMulCase& c : std::vector<MatMulCase>{{{33, 70}, {70, 65}, {33, 65}, false, kB},
                                                     {{33, 70}, {70, 65}, {33, 65}, true, kF},
                                                     {{3, 7, 13}, {3, 13, 5}, {3, 7, 5}, false, kB},  // batched
                                                     {{2, 3, 7, 13}, {13, 5}, {2, 3, 7, 5}, true, kB}}) {  // folded into M
    TypedBuffer a = RandomTyped(kB, c.a, 21), b = RandomTyped(kB, c.b, 22, c.b_constant), y = RandomTyped(c.out, c.y, 0);
    AttrList attrs;
    SCOPED_TRACE("BF16 MatMul, output " + TypeName(c.out) + ", b_constant " + std::to_string(c.b_constant));
    CheckBf16Step("MatMul", {&a, &b}, &y, attrs.Finish(), MatMulLoop(a.wide, c.a, b.wide, c.b), native, c.b_constant);
  }

  struct Bf16GemmCase {
    GemmCase g;
    DataType c_type, out;
    bool b_constant;
    bool takes;    // whether a native kernel takes it
    bool blocked;  // whether the 16-bit-weights form takes it without native BF16
  };
  const int64_t M = 9, K = 37, N = 21;
  for (const Bf16GemmCase& c : std::vector<Bf16GemmCase>{
           {{false, true, 1.0f, 1.0f, {N}}, kB, kB, true, true, true},         // bias (per column)
           {{false, true, 1.0f, 1.0f, {1, N}}, kF, kF, false, true, false},    // f32 bias
           {{false, true, 1.0f, 1.0f, {1, N}}, kF, kF, true, true, true},      // f32 bias, constant weights
           {{false, false, 1.0f, 1.0f, {M, 1}}, kB, kB, true, true, false},    // C per row
           {{false, false, 0.5f, -0.25f, {M, N}}, kB, kF, false, true, false},  // C widened into Y, sum post-op
           // f32 C into a BF16 Y through the sum post-op would round C first: declined everywhere.
           {{false, false, 0.5f, -0.25f, {M, N}}, kF, kB, false, false, false}}) {
    const GemmCase& g = c.g;
    TypedBuffer a = RandomTyped(kB, {M, K}, 23), b = RandomTyped(kB, g.trans_b ? std::vector<int64_t>{N, K} : std::vector<int64_t>{K, N}, 24, c.b_constant),
                cb = RandomTyped(c.c_type, g.c_dims, 25), y = RandomTyped(c.out, {M, N}, 0);
    AttrList attrs;
    SCOPED_TRACE("BF16 Gemm, C " + TypeName(c.c_type) + " rank " + std::to_string(g.c_dims.size()) + ", output " + TypeName(c.out) +
                 ", alpha " + std::to_string(g.alpha) + ", beta " + std::to_string(g.beta));
    CheckBf16Step("Gemm", {&a, &b, &cb}, &y, GemmAttrs(attrs, g).Finish(), GemmLoop(g, M, K, N, a.wide, b.wide, cb.wide),
                  native && c.takes, c.blocked);
  }

  struct Bf16ConvCase {
    ConvCase c;
    DataType bias, out;
  };
  for (const Bf16ConvCase& c : std::vector<Bf16ConvCase>{
           {{{2, 6, 11, 9}, 8, {3, 3}, 2, {2, 2}, {}, {1, 0, 2, 1}, "", true, true}, kB, kB},    // 2 groups, stride 2
           {{{1, 8, 10, 7}, 8, {3, 3}, 8, {2, 2}, {}, {1, 1, 1, 1}, "", true, false}, kF, kF},   // depthwise, stride 2
           {{{1, 32, 14, 14}, 24, {1, 1}, 1, {}, {}, {}, "", true, true}, kB, kF},               // 1x1
           {{{1, 16, 13, 13}, 32, {3, 3}, 1, {1, 2}, {}, {1, 1, 1, 1}, "", false, true}, kB, kB},  // no bias
           {{{2, 5, 17}, 4, {4}, 1, {3}, {2}, {2, 1}, "", true, false}, kF, kB},                // 1-D, dilation 2
           // Small output planes (the gradients below run these as image columns; Conv does not).
           {{{2, 16, 4, 4}, 24, {3, 3}, 1, {}, {}, {1, 1, 1, 1}, "", true, false}, kF, kB},
           {{{2, 8, 9, 9}, 12, {3, 3}, 1, {2, 2}, {2, 2}, {2, 1, 1, 2}, "", true, true}, kB, kF}}) {  // stride, dilation
    ConvShape shape = ShapeOf(c.c);
    TypedBuffer x = RandomTyped(kB, c.c.x, 26), w = RandomTyped(kB, shape.w, 27, c.c.w_constant),
                b = RandomTyped(c.bias, {c.c.m}, 28, true), y = RandomTyped(c.out, shape.y, 0);
    AttrList attrs;
    SCOPED_TRACE("BF16 Conv x rank " + std::to_string(c.c.x.size()) + " group " + std::to_string(c.c.group) + ", bias " +
                 (c.c.bias ? TypeName(c.bias) : "none") + ", output " + TypeName(c.out));
    std::vector<TypedBuffer*> inputs = {&x, &w};
    if (c.c.bias) inputs.push_back(&b);
    CheckBf16Step("Conv", inputs, &y, ConvAttrs(attrs, c.c).Finish(), ConvLoop(c.c, x.wide, w.wide, b.wide), native);
  }

  // Mixed-precision training's convolution gradients: the filter gradient from BF16 X and dY
  // into an FP32 (or BF16) dW, and the data gradient as a BF16 transposed convolution.
  for (const auto& [c, out] : std::vector<std::pair<ConvCase, DataType>>{
           {{{2, 16, 12, 12}, 24, {3, 3}, 1, {}, {}, {1, 1, 1, 1}, ""}, kF},  // blocked layouts
           {{{2, 3, 11, 9}, 4, {3, 3}, 1, {2, 2}, {}, {1, 0, 2, 1}, ""}, kF},   // stride 2, asymmetric pads
           {{{2, 8, 10, 7}, 8, {3, 3}, 8, {2, 2}, {}, {1, 1, 1, 1}, ""}, kF},   // depthwise
           {{{2, 32, 12, 12}, 16, {1, 1}, 1, {2, 2}, {}, {}, ""}, kB},          // 1x1 stride 2, BF16 dW
           // 4x4 output planes: matrix products over image columns (conv_columns.h).
           {{{2, 16, 4, 4}, 24, {3, 3}, 1, {}, {}, {1, 1, 1, 1}, ""}, kF},
           {{{2, 8, 9, 9}, 12, {3, 3}, 1, {2, 2}, {2, 2}, {2, 1, 1, 2}, ""}, kB}}) {
    ConvShape shape = ShapeOf(c);
    TypedBuffer x = RandomTyped(kB, c.x, 12), dy = RandomTyped(kB, shape.y, 13), dw = RandomTyped(out, shape.w, 0);
    AttrList attrs;
    SCOPED_TRACE("BF16 ConvFilterGrad C " + std::to_string(c.x[1]) + " M " + std::to_string(c.m) + " group " + std::to_string(c.group) +
                 ", dW " + TypeName(out));
    CheckBf16Step("ConvFilterGrad", {&x, &dy}, &dw, ConvAttrs(attrs, c).Finish(), FilterGradLoop(c, x.wide, dy.wide), native);
  }
  for (const TransposeCase& c : std::vector<TransposeCase>{{{2, 16, 6, 6}, 8, {3, 3}, 1, {2, 2}, {}, {1, 1, 1, 1}, {1, 1}, false},
                                                           {{1, 6, 7, 5}, 1, {3, 3}, 6, {2, 2}, {}, {1, 1, 1, 1}, {1, 1}, true},
                                                           // 4x4 input plane: image columns, dilation 2, f32 bias
                                                           {{2, 12, 4, 4}, 8, {3, 3}, 1, {1, 1}, {2, 2}, {1, 2, 2, 1}, {0, 0}, true},
                                                           // and stride 2 with output_padding (positions no window reaches)
                                                           {{2, 12, 4, 4}, 8, {3, 3}, 1, {2, 2}, {}, {1, 1, 1, 1}, {1, 1}, false}}) {
    TypedBuffer x = RandomTyped(kB, c.x, 9), w = RandomTyped(kB, TransposeWeightDims(c), 10), b = RandomTyped(kF, {c.mg * c.group}, 11);
    std::vector<int64_t> yd;
    Expected e = ConvTransposeLoop(c, x.wide, w.wide, b.wide, &yd);
    TypedBuffer y = RandomTyped(kB, yd, 0);
    AttrList attrs;
    SCOPED_TRACE("BF16 ConvTranspose group " + std::to_string(c.group) + ", bias " + std::to_string(c.bias));
    std::vector<TypedBuffer*> inputs = {&x, &w};
    if (c.bias) inputs.push_back(&b);
    CheckBf16Step("ConvTranspose", inputs, &y, TransposeAttrs(attrs, c).Finish(), e, native);
  }
}

// ---- 16-bit weights in blocks ----
//
// FP16 constant weights (and BF16 ones without native BF16) are never copied to FP32 at load:
// MatMul and Gemm (Y = A x B + per-column C) widen one block of columns of B at a time into the
// step's scratch and run the FP32 matmul on it. Shapes give several blocks and a narrower last
// one (K = 2100: blocks of 64 columns). Tolerance: the f32 one (exact widening, f32
// accumulation; reductions of 2100 terms stay far below 1e-5 * sum|terms|), plus the rounding of
// a 16-bit output, 2^-11 * |exact| for FP16. B [K, N] is widened straight into oneDNN's packed
// layout (K = 2100 and the last block's 22 columns are padded there); B [N, K] plain, then
// reordered.
void HalfWeightsStepCases() {
  // 512 KiB blocks (the default is 4 MiB), so that K = 2100 gives 64-column blocks.
  struct BlockBytes {
    int64_t saved = SetWeightBlockBytesForTesting(512 * 1024);
    ~BlockBytes() { SetWeightBlockBytesForTesting(saved); }
  } block_bytes;
  constexpr DataType kH = DataType::kF16, kF = DataType::kF32;
  const int64_t K = 2100, N = 150;
  struct Case {
    std::vector<int64_t> a;
    DataType a_type, out;
  };
  // Up to kHalfWeightsGemvRows (8) rows of A the weights are read in their 16 bits
  // (HalfWeightsGemv); more rows run in widened blocks.
  for (const Case& c : std::vector<Case>{{{5, K}, kH, kH}, {{2, 3, K}, kF, kF}, {{K}, kH, kF}, {{1, 4, K}, kF, kH},
                                         {{12, K}, kH, kH}, {{3, 4, K}, kF, kF}, {{3, 3, K}, kF, kH}}) {
    std::vector<int64_t> yd(c.a.begin(), c.a.end() - 1);
    yd.push_back(N);
    TypedBuffer a = RandomTyped(c.a_type, c.a, 31), b = RandomTyped(kH, {K, N}, 32, true), y = RandomTyped(c.out, yd, 0);
    AttrList attrs;
    Attributes at = attrs.Finish();
    SCOPED_TRACE("FP16 weights MatMul, A " + std::string(DataTypeName(c.a_type)) + " rank " + std::to_string(c.a.size()) + ", output " +
                 DataTypeName(c.out));
    KernelFactory fast = KernelRegistry::Cpu().FindFast("MatMul");
    for (int threads : {1, 2}) {
      Status s = RunKernelOn(fast(), {&a.t, &b.t}, &y.t, at, threads);
      ASSERT_TRUE(s.ok()) << s.ToString();
      std::vector<int64_t> pa = c.a;
      if (pa.size() == 1) pa.insert(pa.begin(), 1);
      ExpectClose(Values(y), MatMulLoop(a.wide, pa, b.wide, {K, N}), "MatMul fp16 weights", 1e-5, 1e-6, c.out == kH ? 0x1p-11 : 0.0);
    }
  }
  // One block without padding (K a multiple of 16, N of 64: brgemm's packed layout is filled
  // exactly by widening B's rows into it).
  for (DataType out : {kF, kH}) {
    const int64_t k = 64, n = 192;
    TypedBuffer a = RandomTyped(kF, {20, k}, 36), b = RandomTyped(kH, {k, n}, 37, true), y = RandomTyped(out, {20, n}, 0);
    AttrList attrs;
    SCOPED_TRACE("FP16 weights MatMul, one block, output " + std::string(DataTypeName(out)));
    for (int threads : {1, 2}) {
      Status s = RunKernelOn(KernelRegistry::Cpu().FindFast("MatMul")(), {&a.t, &b.t}, &y.t, attrs.Finish(), threads);
      ASSERT_TRUE(s.ok()) << s.ToString();
      ExpectClose(Values(y), MatMulLoop(a.wide, {20, k}, b.wide, {k, n}), "MatMul fp16 weights, one block", 1e-5, 1e-6,
                  out == kH ? 0x1p-11 : 0.0);
    }
  }
  // The scratch holds a block of weights (64 columns here), not all of them.
  {
    const int64_t wide = 640;
    TypedBuffer a = RandomTyped(kF, {5, K}, 31), b = RandomTyped(kH, {K, wide}, 32, true), y = RandomTyped(kF, {5, wide}, 0);
    KernelArgs args;
    args.inputs = {&a.t, &b.t};
    args.outputs = {&y.t};
    args.node = "test";
    CpuContext ctx;
    ctx.threads = 2;
    std::unique_ptr<Kernel> k = KernelRegistry::Cpu().FindFast("MatMul")();
    ASSERT_TRUE(k->Init(args, ctx).ok());
    EXPECT_LT(k->ScratchBytes(), size_t(K * wide * 4) / 4) << "a full FP32 copy of the weights in the scratch";
    // SessionOptions::cpu_fp32_weights: the step is declined, so the session widens it (an FP32
    // copy of the weights made at load, as asked).
    ctx.fp32_weights = true;
    std::unique_ptr<Kernel> asked = KernelRegistry::Cpu().FindFast("MatMul")();
    EXPECT_EQ(asked->Init(args, ctx).code(), StatusCode::kUnimplemented);
  }
  // Rows of A past HalfWeightsGemv's (in blocks) and within them.
  for (const int64_t M : {9, 3}) {
  struct GemmHalfCase {
    GemmCase g;
    DataType c_type, out;
    bool blocked;  // else declined (the session widens the step)
  };
  for (const GemmHalfCase& c : std::vector<GemmHalfCase>{
           {{false, true, 1.0f, 1.0f, {N}}, kH, kH, true},       // Linear: B [N, K], FP16 bias
           {{false, false, 1.0f, 1.0f, {1, N}}, kF, kF, true},   // f32 bias, B [K, N]
           {{false, true, 1.0f, 0.0f, {N}}, kH, kH, true},       // beta 0: no C
           {{false, true, 1.0f, 1.0f, {1, N}}, kH, kF, true},    // C [1, N] (not constant below)
           {{false, true, 1.0f, 1.0f, {-1}}, kH, kF, true},      // no C
           {{false, true, 0.5f, 1.0f, {N}}, kH, kH, false},      // alpha: declined
           {{true, true, 1.0f, 1.0f, {N}}, kH, kH, false},       // transA: declined
           {{false, true, 1.0f, 1.0f, {M, N}}, kH, kH, false}}) {  // full C: declined
    const GemmCase& g = c.g;
    TypedBuffer a = RandomTyped(kH, g.trans_a ? std::vector<int64_t>{K, M} : std::vector<int64_t>{M, K}, 33),
                b = RandomTyped(kH, g.trans_b ? std::vector<int64_t>{N, K} : std::vector<int64_t>{K, N}, 34, true),
                cb = RandomTyped(c.c_type, HasC(g) ? g.c_dims : std::vector<int64_t>{}, 35, g.c_dims.size() != 2), y = RandomTyped(c.out, {M, N}, 0);
    AttrList attrs;
    Attributes at = GemmAttrs(attrs, g).Finish();
    SCOPED_TRACE("FP16 weights Gemm transA=" + std::to_string(g.trans_a) + " transB=" + std::to_string(g.trans_b) + " alpha " +
                 std::to_string(g.alpha) + " beta " + std::to_string(g.beta) + " C rank " + std::to_string(g.c_dims.size()));
    std::vector<Tensor*> inputs = {&a.t, &b.t};
    if (HasC(g)) inputs.push_back(&cb.t);
    KernelFactory fast = KernelRegistry::Cpu().FindFast("Gemm");
    Expected e = GemmLoop(g, M, K, N, a.wide, b.wide, cb.wide);
    double out_rel = c.out == kH ? 0x1p-11 : 0.0;
    Status s = RunKernelOn(fast(), inputs, &y.t, at);
    if (!c.blocked) {
      EXPECT_EQ(s.code(), StatusCode::kUnimplemented) << s.ToString();
    } else {
      ASSERT_TRUE(s.ok()) << s.ToString();
      ExpectClose(Values(y), e, "Gemm fp16 weights", 1e-5, 1e-6, out_rel);
    }
    s = RunKernelOn(std::make_unique<WidenKernel>(fast()), inputs, &y.t, at);
    ASSERT_TRUE(s.ok()) << "widened: " << s.ToString();
    ExpectClose(Values(y), e, "Gemm fp16 widened", 1e-5, 1e-6, out_rel);
  }
  }
}

// A 16-bit B that is not constant (a training plan's working copy of weights, an activation):
// read in its 16 bits by HalfWeightsGemv (few rows) and HalfWeightsGemm, else declined (the
// session widens the step). `gemm`: whether the MatMul kernel takes more rows.
void NonConstantHalfB(bool gemm) {
  const int64_t K = 300, N = 70;
  for (DataType bt : {DataType::kF16, DataType::kBF16}) {
    if (bt == DataType::kBF16 && NativeBf16Enabled()) continue;  // native BF16 takes B as it is
    for (int64_t M : {3, 20}) {
      TypedBuffer a = RandomTyped(DataType::kF16, {M, K}, 61), b = RandomTyped(bt, {K, N}, 62, false),
                  y = RandomTyped(DataType::kF32, {M, N}, 0);
      SCOPED_TRACE(std::string(DataTypeName(bt)) + " B not constant, " + std::to_string(M) + " rows");
      Status s = RunKernelOn(KernelRegistry::Cpu().FindFast("MatMul")(), {&a.t, &b.t}, &y.t, Attributes{}, 2);
      if (M > kHalfWeightsGemvRows && !gemm) {
        EXPECT_EQ(s.code(), StatusCode::kUnimplemented) << s.ToString();
        continue;
      }
      ASSERT_TRUE(s.ok()) << s.ToString();
      ExpectClose(Values(y), MatMulLoop(a.wide, {M, K}, b.wide, {K, N}), "MatMul, 16-bit B not constant");
    }
  }
}

TEST(DnnlHalfWeights, MatMulAndGemmRunInBlocks) {
  HalfGemmMode blocks(0);
  HalfWeightsStepCases();
  NonConstantHalfB(false);
}

// The same steps with more rows than HalfWeightsGemv's through HalfWeightsGemm (the default on
// CPUs with AVX2 and without AVX-512).
TEST(DnnlHalfWeights, MatMulAndGemmWidenInsideTheProduct) {
  if (!HalfWeightsGemmAvailable()) GTEST_SKIP() << "HalfWeightsGemm needs AVX2, FMA and F16C, which this CPU lacks";
  HalfGemmMode gemm(1);
  HalfWeightsStepCases();
  NonConstantHalfB(true);
}

// HalfWeightsGemm itself against a double loop: FP16 and BF16 weights, both layouts, row counts
// around its 6-row tiles and its 240-row blocks, K around its 256-deep slices, N around its
// 16-column panels, with and without bias, 1 and 2 threads, Y with a row stride past N. FP32
// accumulation in order (bias first), so the f32 tolerance: 1e-5 of sum|terms|.
TEST(DnnlHalfWeights, GemmAgainstDoubleLoop) {
  if (!HalfWeightsGemmAvailable()) GTEST_SKIP() << "HalfWeightsGemm needs AVX2, FMA and F16C, which this CPU lacks";
  struct Shape {
    int64_t M, K, N;
  };
  const std::vector<Shape> shapes = {{1, 1, 1}, {9, 31, 17}, {6, 256, 16}, {13, 257, 33}, {241, 300, 40}, {20, 700, 150}, {7, 513, 5}};
  uint32_t seed = 50;
  for (DataType wt : {DataType::kF16, DataType::kBF16})
    for (bool trans_b : {false, true})
      for (const Shape& sh : shapes)
        for (bool with_bias : {false, true}) {
          const int64_t M = sh.M, K = sh.K, N = sh.N, ldy = N + 3;
          TypedBuffer a = RandomTyped(DataType::kF32, {M, K}, ++seed),
                      b = RandomTyped(wt, trans_b ? std::vector<int64_t>{N, K} : std::vector<int64_t>{K, N}, ++seed, true),
                      c = RandomTyped(DataType::kF32, {N}, ++seed, true);
          GemmCase g{false, trans_b, 1.0f, 1.0f, with_bias ? std::vector<int64_t>{N} : std::vector<int64_t>{-1}};
          Expected e = GemmLoop(g, M, K, N, a.wide, b.wide, c.wide);
          SCOPED_TRACE(std::string(DataTypeName(wt)) + " weights, transB=" + std::to_string(trans_b) + ", M " + std::to_string(M) + " K " +
                       std::to_string(K) + " N " + std::to_string(N) + (with_bias ? ", bias" : ""));
          for (int threads : {1, 2}) {
            std::vector<uint8_t> scratch(size_t(HalfWeightsGemmScratchBytes(M, K, threads)) + 64);
            uint8_t* aligned = scratch.data() + (64 - reinterpret_cast<uintptr_t>(scratch.data()) % 64) % 64;
            std::vector<float> y(size_t(M * ldy), std::nanf(""));
            HalfWeightsGemm(wt, DataType::kF32, a.wide.data.data(), M, K, b.t.data, N, trans_b, with_bias ? c.wide.data.data() : nullptr,
                            DataType::kF32, y.data(), ldy, aligned, threads);
            std::vector<float> got;
            for (int64_t m = 0; m < M; ++m) got.insert(got.end(), y.begin() + m * ldy, y.begin() + m * ldy + N);
            ExpectClose(got, e, "HalfWeightsGemm, " + std::to_string(threads) + " thread(s)");
            for (int64_t m = 0; m < M; ++m)  // the stride's gap is not written
              for (int64_t n = N; n < ldy; ++n) EXPECT_TRUE(std::isnan(y[size_t(m * ldy + n)])) << "wrote past N at row " << m;
          }
        }
}

// HalfWeightsGemm with a 16-bit A (widened as its rows are packed) and a 16-bit Y (accumulated in
// FP32, rounded once): A FP32/FP16/BF16 against the double loop over A's exact values (the f32
// tolerance above), and a 16-bit Y equal, bit for bit, to the FP32 Y of the same call rounded to
// nearest even (checked against the double loop just before), so it is rounded once and only
// once. Shapes around the 6-row tiles, the 256-deep slices, the 16-column panels, and rows past
// one 240-row block and past one group of panels (the FP32 block of Y a thread keeps).
TEST(DnnlHalfWeights, GemmWithHalfActivations) {
  if (!HalfWeightsGemmAvailable()) GTEST_SKIP() << "HalfWeightsGemm needs AVX2, FMA and F16C, which this CPU lacks";
  struct Shape {
    int64_t M, K, N;
  };
  const std::vector<Shape> shapes = {{1, 1, 1}, {13, 257, 33}, {241, 300, 40}, {250, 40, 1100}, {7, 513, 5}};
  uint32_t seed = 150;
  for (DataType at : {DataType::kF32, DataType::kF16, DataType::kBF16})
    for (bool trans_b : {false, true})
      for (const Shape& sh : shapes) {
        const int64_t M = sh.M, K = sh.K, N = sh.N, ldy = N + 3;
        const DataType wt = at == DataType::kBF16 ? DataType::kBF16 : DataType::kF16;
        TypedBuffer a = RandomTyped(at, {M, K}, ++seed),
                    b = RandomTyped(wt, trans_b ? std::vector<int64_t>{N, K} : std::vector<int64_t>{K, N}, ++seed, true),
                    c = RandomTyped(DataType::kF32, {N}, ++seed, true);
        GemmCase g{false, trans_b, 1.0f, 1.0f, std::vector<int64_t>{N}};
        Expected e = GemmLoop(g, M, K, N, a.wide, b.wide, c.wide);
        SCOPED_TRACE(std::string("A ") + DataTypeName(at) + ", W " + DataTypeName(wt) + ", transB=" + std::to_string(trans_b) + ", M " +
                     std::to_string(M) + " K " + std::to_string(K) + " N " + std::to_string(N));
        for (int threads : {1, 2}) {
          std::vector<uint8_t> scratch(size_t(HalfWeightsGemmScratchBytes(M, K, threads)) + 64);
          uint8_t* aligned = scratch.data() + (64 - reinterpret_cast<uintptr_t>(scratch.data()) % 64) % 64;
          std::vector<float> y(size_t(M * ldy), std::nanf(""));
          HalfWeightsGemm(wt, at, a.t.data, M, K, b.t.data, N, trans_b, c.wide.data.data(), DataType::kF32, y.data(), ldy, aligned, threads);
          std::vector<float> got;
          for (int64_t m = 0; m < M; ++m) got.insert(got.end(), y.begin() + m * ldy, y.begin() + m * ldy + N);
          ExpectClose(got, e, "HalfWeightsGemm, FP32 Y, " + std::to_string(threads) + " thread(s)");
          for (DataType yt : {DataType::kF16, DataType::kBF16}) {
            std::vector<uint16_t> y16(size_t(M * ldy), 0xabcd);
            HalfWeightsGemm(wt, at, a.t.data, M, K, b.t.data, N, trans_b, c.wide.data.data(), yt, y16.data(), ldy, aligned, threads);
            int bad = 0;
            for (int64_t m = 0; m < M && bad < 5; ++m) {
              for (int64_t n = 0; n < ldy && bad < 5; ++n) {
                const uint16_t want = n >= N ? 0xabcd : yt == DataType::kF16 ? FloatToHalf(got[size_t(m * N + n)]) : FloatToBf16(got[size_t(m * N + n)]);
                if (y16[size_t(m * ldy + n)] != want) {
                  ADD_FAILURE() << DataTypeName(yt) << " Y, " << threads << " thread(s): row " << m << " column " << n << " is 0x" << std::hex
                                << y16[size_t(m * ldy + n)] << ", expected 0x" << want << std::dec << (n >= N ? " (past N: not written)" : "");
                  ++bad;
                }
              }
            }
          }
        }
      }
}

// MatMul of two batched operands with a 16-bit B of at least 128 columns (attention's Q x K^T in
// an FP16 plan) on CPUs where HalfWeightsGemm runs: each batch through it, A FP16 or FP32, Y FP16 or FP32, with more
// batches than threads (threads take whole batches) and with one batch (all threads on it).
// Against a double loop per batch: the f32 tolerance, plus half an FP16 ulp for an FP16 Y.
TEST(DnnlHalfWeights, BatchedMatMulOfActivations) {
  if (!HalfWeightsGemmAvailable()) GTEST_SKIP() << "HalfWeightsGemm needs AVX2, FMA and F16C, which this CPU lacks";
  HalfGemmMode gemm(1);
  struct Shape {
    std::vector<int64_t> batch;
    int64_t M, K, N;
  };
  uint32_t seed = 300;
  for (const Shape& sh : {Shape{{2, 3}, 13, 40, 130}, Shape{{1}, 20, 300, 150}})
    for (DataType at : {DataType::kF16, DataType::kF32})
      for (DataType yt : {DataType::kF16, DataType::kF32}) {
        auto with = [&](int64_t r, int64_t c) {
          std::vector<int64_t> d = sh.batch;
          d.push_back(r);
          d.push_back(c);
          return d;
        };
        int64_t batches = 1;
        for (int64_t d : sh.batch) batches *= d;
        const int64_t M = sh.M, K = sh.K, N = sh.N;
        TypedBuffer a = RandomTyped(at, with(M, K), ++seed), b = RandomTyped(DataType::kF16, with(K, N), ++seed),
                    y = RandomTyped(yt, with(M, N), 0);
        Expected e;
        for (int64_t bi = 0; bi < batches; ++bi)
          for (int64_t m = 0; m < M; ++m)
            for (int64_t n = 0; n < N; ++n) {
              double v = 0, mag = 0;
              for (int64_t k = 0; k < K; ++k) {
                const double t = double(a.wide.data[size_t((bi * M + m) * K + k)]) * double(b.wide.data[size_t((bi * K + k) * N + n)]);
                v += t;
                mag += std::fabs(t);
              }
              e.value.push_back(v);
              e.magnitude.push_back(mag);
            }
        SCOPED_TRACE(std::to_string(batches) + " batch(es), A " + DataTypeName(at) + ", Y " + DataTypeName(yt));
        for (int threads : {1, 2}) {
          Status s = RunKernelOn(KernelRegistry::Cpu().FindFast("MatMul")(), {&a.t, &b.t}, &y.t, Attributes{}, threads);
          ASSERT_TRUE(s.ok()) << s.ToString();
          ExpectClose(Values(y), e, "batched MatMul, " + std::to_string(threads) + " thread(s)", 1e-5, 1e-6,
                      yt == DataType::kF16 ? 0x1p-11 : 0.0);
        }
      }
}

// HalfWeightsGemv over several pieces of K (4096 at a time) and of N (columns split among the
// threads), BF16 and FP16 weights, both layouts of B, 1 and 2 threads, with and without bias.
TEST(DnnlHalfWeights, FewRowsReadWeightsOnce) {
  const int64_t M = 3, K = 9000, N = 70;
  for (DataType wt : {DataType::kF16, DataType::kBF16}) {
    if (wt == DataType::kBF16 && NativeBf16Enabled()) continue;  // native BF16 takes the weights as they are
    for (bool trans_b : {false, true}) {
      GemmCase g{false, trans_b, 1.0f, 1.0f, {N}};
      TypedBuffer a = RandomTyped(DataType::kF32, {M, K}, 41),
                  b = RandomTyped(wt, trans_b ? std::vector<int64_t>{N, K} : std::vector<int64_t>{K, N}, 42, true),
                  cb = RandomTyped(DataType::kF32, {N}, 43, true), y = RandomTyped(DataType::kF32, {M, N}, 0);
      AttrList attrs;
      Attributes at = GemmAttrs(attrs, g).Finish();
      SCOPED_TRACE(std::string(DataTypeName(wt)) + " weights, transB=" + std::to_string(trans_b));
      for (int threads : {1, 2}) {
        Status s = RunKernelOn(KernelRegistry::Cpu().FindFast("Gemm")(), {&a.t, &b.t, &cb.t}, &y.t, at, threads);
        ASSERT_TRUE(s.ok()) << s.ToString();
        ExpectClose(Values(y), GemmLoop(g, M, K, N, a.wide, b.wide, cb.wide), "Gemm 16-bit weights, few rows", 1e-5, 1e-6, 0.0);
      }
      // MatMul (no bias) over the same weights when B is [K, N].
      if (!trans_b) {
        Status s = RunKernelOn(KernelRegistry::Cpu().FindFast("MatMul")(), {&a.t, &b.t}, &y.t, Attributes{}, 2);
        ASSERT_TRUE(s.ok()) << s.ToString();
        ExpectClose(Values(y), MatMulLoop(a.wide, {M, K}, b.wide, {K, N}), "MatMul 16-bit weights, few rows", 1e-5, 1e-6, 0.0);
      }
    }
  }
}

// Sets an environment variable for the scope, then restores it.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    const char* old = std::getenv(name);
    had_ = old != nullptr;
    if (had_) old_ = old;
    setenv(name, value, 1);
  }
  ~ScopedEnv() {
    if (had_) setenv(name_, old_.c_str(), 1);
    else unsetenv(name_);
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  bool had_ = false;
  std::string old_;
};

std::string Bf16Support() {
  const CpuFeatures& f = HostCpuFeatures();
  auto yes = [](bool b) { return b ? "yes" : "no"; };
  return std::string("AVX512_BF16 ") + yes(f.avx512_bf16) + ", AMX-BF16 " + yes(f.amx_bf16) + ", OS AVX-512 state " +
         yes(f.avx512_state) + ", PRECIS_CPU_BF16=" + (std::getenv("PRECIS_CPU_BF16") ? std::getenv("PRECIS_CPU_BF16") : "(unset)");
}

TEST(DnnlBf16, NativeKernelsMatchReference) {
  if (!NativeBf16Enabled())
    GTEST_SKIP() << "no native BF16 on this CPU or it is turned off (" << Bf16Support()
                 << "): the oneDNN BF16 path cannot be checked here; DnnlBf16.DeclinedWithoutNativeBf16 checks the widened path";
  CheckBf16Cases(true);
}

TEST(DnnlBf16, DeclinedWithoutNativeBf16) {
  if (NativeBf16Enabled())
    GTEST_SKIP() << "this CPU has native BF16 (" << Bf16Support() << "): declining is checked by DnnlBf16.OverrideTurnsNativeOff";
  // Past 8 rows through widened blocks, which decline a B that is not constant (HalfWeightsGemm
  // takes it: DnnlHalfWeights.MatMulAndGemmWidenInsideTheProduct).
  HalfGemmMode blocks(0);
  CheckBf16Cases(false);
}

TEST(DnnlBf16, OverrideTurnsNativeOff) {
  {
    ScopedEnv off("PRECIS_CPU_BF16", "0");
    EXPECT_FALSE(NativeBf16Enabled());
    HalfGemmMode blocks(0);  // as in DeclinedWithoutNativeBf16
    CheckBf16Cases(false);
  }
  ScopedEnv on("PRECIS_CPU_BF16", "1");  // any value but 0 leaves the hardware's answer
  EXPECT_EQ(NativeBf16Enabled(), HostCpuFeatures().native_bf16()) << Bf16Support();
}

}  // namespace
}  // namespace precis::rt
