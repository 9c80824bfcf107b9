// The oneDNN fast kernels (MatMul, Gemm, Conv, ConvTranspose) against a plain double-precision
// loop written here and against the reference kernel of the same name, on odd shapes: batched and
// broadcast MatMul, 1-D operands, every Gemm transpose/alpha/beta/C shape, Conv with strides,
// asymmetric pads, auto_pad, dilation 2, groups and depthwise, 1-D/2-D/3-D, with and without bias,
// constant (reordered at load) and non-constant weights. The fast kernel must take each of these
// steps (Init OK, not Unimplemented), and must decline what it does not support (f64) so the
// session falls back. Scratch and outputs start as NaN so that reading stale memory shows.
//
// Tolerance: the kernels accumulate in f32 in an order that differs from the loop here (and
// from the reference kernel): |y - exact| <= 1e-5 * sum|terms| + 1e-6, where sum|terms| is the
// sum of the absolute values of the products (and bias, C) that make up the element. That is
// about 80 f32 ulps of the absolute sum, comfortably above the order-dependent rounding for the
// reduction lengths here (<= 600) and far below any indexing error (an O(1) relative error).
#include <array>
#include <cmath>
#include <limits>
#include <random>

#include <gtest/gtest.h>

#include "runtime/cpu/kernel.h"
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

// Runs one kernel (reference or fast) on the inputs; returns Init's status or Run's.
Status RunKernel(KernelFactory factory, const std::vector<Buffer*>& inputs, Buffer* y, Attributes attrs, int threads = 2) {
  KernelArgs args;
  for (Buffer* b : inputs) args.inputs.push_back(b ? &b->t : nullptr);
  args.outputs.push_back(&y->t);
  args.attrs = attrs;
  args.node = "test";
  CpuContext ctx;
  ctx.threads = threads;
  std::unique_ptr<Kernel> kernel = factory();
  PRECIS_RETURN_IF_ERROR(kernel->Init(args, ctx));
  std::vector<float> scratch(kernel->ScratchBytes() / sizeof(float) + 16, kNaN);
  // 64-byte aligned, as the session's scratch is.
  auto addr = reinterpret_cast<uintptr_t>(scratch.data());
  ctx.scratch = reinterpret_cast<uint8_t*>((addr + 63) / 64 * 64);
  std::fill(y->data.begin(), y->data.end(), kNaN);
  PRECIS_RETURN_IF_ERROR(kernel->Run(args, ctx));
  // Again with the scratch and output poisoned after the first run: other steps share the
  // scratch, so nothing may rely on what an earlier run (or binding) left there.
  std::fill(scratch.begin(), scratch.end(), kNaN);
  std::fill(y->data.begin(), y->data.end(), kNaN);
  return kernel->Run(args, ctx);
}

// The exact value of each output element and the sum of |terms| that made it.
struct Expected {
  std::vector<double> value, magnitude;
};

void ExpectClose(const Buffer& y, const Expected& e, const std::string& what) {
  ASSERT_EQ(y.data.size(), e.value.size()) << what;
  int bad = 0;
  for (size_t i = 0; i < e.value.size() && bad < 5; ++i) {
    double tol = 1e-5 * e.magnitude[i] + 1e-6;
    if (!(std::fabs(double(y.data[i]) - e.value[i]) <= tol)) {
      ADD_FAILURE() << what << ": element " << i << " is " << y.data[i] << ", expected " << e.value[i] << " (tol " << tol << ")";
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
    ExpectClose(y, e, name + " fast, " + std::to_string(threads) + " threads");
  }
  if (!ref) return;  // reference not written yet: the double loop above is the check
  Buffer y = Nans(out_dims);
  Status s = RunKernel(ref, inputs, &y, a);
  ASSERT_TRUE(s.ok()) << name << " reference: " << s.ToString();
  ExpectClose(y, e, name + " reference");
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

void CheckGemm(const GemmCase& g, bool b_constant) {
  const int64_t M = 7, K = 13, N = 5;
  Buffer a = Random(g.trans_a ? std::vector<int64_t>{K, M} : std::vector<int64_t>{M, K}, 3);
  Buffer b = Random(g.trans_b ? std::vector<int64_t>{N, K} : std::vector<int64_t>{K, N}, 4, b_constant);
  bool has_c = !(g.c_dims.size() == 1 && g.c_dims[0] == -1);
  Buffer c = Random(has_c ? g.c_dims : std::vector<int64_t>{}, 5);
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
  AttrList attrs;
  attrs.Float("alpha", g.alpha).Float("beta", g.beta).Int("transA", g.trans_a).Int("transB", g.trans_b);
  std::vector<Buffer*> inputs = {&a, &b};
  if (has_c) inputs.push_back(&c);
  SCOPED_TRACE("Gemm transA=" + std::to_string(g.trans_a) + " transB=" + std::to_string(g.trans_b) + " alpha=" +
               std::to_string(g.alpha) + " beta=" + std::to_string(g.beta) + " C rank " + std::to_string(g.c_dims.size()) +
               " b_constant=" + std::to_string(b_constant));
  CheckBoth("Gemm", inputs, {M, N}, attrs, e);
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

void CheckConv(const ConvCase& c) {
  size_t n = c.kernel.size();
  int64_t N = c.x[0], C = c.x[1], M = c.m, G = c.group, Cg = C / G, Mg = M / G;
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
  Buffer x = Random(c.x, 6), w = Random(wd, 7, c.w_constant), b = Random({M}, 8);
  auto I = Pad3(in, 1), O = Pad3(out, 1), K = Pad3(c.kernel, 1), S = Pad3(s, 1), D = Pad3(d, 1), P = Pad3(pb, 0);
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
  AttrList attrs;
  std::vector<Buffer*> inputs = {&x, &w};
  if (c.bias) inputs.push_back(&b);
  SCOPED_TRACE("Conv x rank " + std::to_string(c.x.size()) + " C " + std::to_string(C) + " M " + std::to_string(M) + " group " +
               std::to_string(G) + " auto_pad '" + c.auto_pad + "' w_constant " + std::to_string(c.w_constant));
  CheckBoth("Conv", inputs, yd, ConvAttrs(attrs, c), e);
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

struct TransposeCase {
  std::vector<int64_t> x;  // N, C, spatial...
  int64_t mg;              // output channels per group
  std::vector<int64_t> kernel;
  int64_t group = 1;
  std::vector<int64_t> strides, dilations, pads, output_padding;
  bool bias = true;
  bool w_constant = false;
};

void CheckConvTranspose(const TransposeCase& c) {
  size_t n = c.kernel.size();
  int64_t N = c.x[0], C = c.x[1], G = c.group, Cg = C / G, Mg = c.mg, M = Mg * G;
  std::vector<int64_t> in(c.x.begin() + 2, c.x.end()), s = Or(c.strides, n, 1), d = Or(c.dilations, n, 1),
      p = Or(c.pads, 2 * n, 0), op = Or(c.output_padding, n, 0), out(n);
  for (size_t i = 0; i < n; ++i) out[i] = s[i] * (in[i] - 1) + op[i] + (c.kernel[i] - 1) * d[i] + 1 - p[i] - p[i + n];
  std::vector<int64_t> wd = {C, Mg}, yd = {N, M};
  wd.insert(wd.end(), c.kernel.begin(), c.kernel.end());
  yd.insert(yd.end(), out.begin(), out.end());
  Buffer x = Random(c.x, 9), w = Random(wd, 10, c.w_constant), b = Random({M}, 11);
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
  AttrList attrs;
  attrs.Ints("kernel_shape", c.kernel).Int("group", G);
  if (!c.strides.empty()) attrs.Ints("strides", c.strides);
  if (!c.dilations.empty()) attrs.Ints("dilations", c.dilations);
  if (!c.pads.empty()) attrs.Ints("pads", c.pads);
  if (!c.output_padding.empty()) attrs.Ints("output_padding", c.output_padding);
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

}  // namespace
}  // namespace precis::rt
