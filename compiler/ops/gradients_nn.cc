// Gradient rules of the window and normalization operators (pooling, Gather, LayerNormalization),
// written as existing IR ops where that costs little, so that every backend that runs the forward
// operators runs them: AveragePool's gradient is a transposed convolution, Gather's a ScatterND
// with reduction add (sequential, so deterministic on the CPU), LayerNormalization's its
// decomposition. MaxPool's is the MaxPoolGrad kernel (compiler/ops/training.cc). The algebra is
// in the comment above each rule.
#include <algorithm>
#include <numeric>

#include "compiler/ops/gradient_rules.h"

namespace precis::ops::grad {
namespace {

using G = GradContext;

int64_t Product(const std::vector<int64_t>& d) { return std::accumulate(d.begin(), d.end(), int64_t(1), std::multiplies<int64_t>()); }

// Window attributes of a pooling node, defaults filled in, for n spatial dims.
struct PoolWindow {
  std::vector<int64_t> kernel, strides, dilations, pads;
};

PoolWindow ReadPool(const G& c, size_t n) {
  return {c.Ints("kernel_shape"), c.Ints("strides", std::vector<int64_t>(n, 1)), c.Ints("dilations", std::vector<int64_t>(n, 1)),
          c.Ints("pads", std::vector<int64_t>(2 * n, 0))};
}

}  // namespace

// MaxPool: each window's gradient goes to the position of its maximum, the first in scan order on
// ties (the MaxPool kernels keep the first maximum, as PyTorch does); windows sharing a maximum
// add up there. One gradient kernel, MaxPoolGrad(g, X), finds the maxima again from X (no
// Indices tensor is kept alive between the passes).
V MaxPoolGrad(G& c) {
  return {c.Op("MaxPoolGrad", {c.grad(0), c.in(0)}, c.CopyAttrs({"kernel_shape", "strides", "pads", "dilations", "ceil_mode"}))};
}

// GlobalMaxPool: a MaxPool whose window is the whole plane.
V GlobalMaxPoolGrad(G& c) {
  std::vector<int64_t> xd = c.Dims(c.in(0));
  std::vector<int64_t> kernel(xd.begin() + 2, xd.end());
  return {c.Op("MaxPoolGrad", {c.grad(0), c.in(0)}, {GradAttr::Ints("kernel_shape", kernel)})};
}

// AveragePool: y[o] = sum(x over window o) / count[o], so dx = sum over the windows holding x of
// g[o] / count[o]: g divided by the (compile-time) count of each window, then a transposed
// convolution of every (n, c) plane with a kernel of ones and the pool's strides, dilations and
// pads. count is the window's positions inside X (count_include_pad 0) or inside X and its
// explicit pads (1; positions in the ceil_mode tail never count), as the forward kernel divides.
// The transposed convolution's end padding is chosen to give X's size back (output_padding
// where a ceil_mode tail makes the windows reach past the padded input).
V AveragePoolGrad(G& c) {
  std::vector<int64_t> xd = c.Dims(c.in(0)), yd = c.Dims(c.out(0));
  size_t n = xd.size() - 2;
  PoolWindow w = ReadPool(c, n);
  bool include_pad = c.Int("count_include_pad", 0) != 0;
  std::vector<std::vector<double>> counts(n);  // per dim and output index
  std::vector<int64_t> end_pads(n), output_padding(n, 0);
  for (size_t i = 0; i < n; ++i) {
    int64_t in = xd[2 + i], s = w.strides[i], d = w.dilations[i], k = w.kernel[i], pb = w.pads[i], pe = w.pads[n + i];
    for (int64_t o = 0; o < yd[2 + i]; ++o) {
      int64_t start = o * s - pb, count = 0;
      for (int64_t j = 0; j < k; ++j) {
        int64_t at = start + j * d;
        count += include_pad ? at < in + pe : at >= 0 && at < in;
      }
      counts[i].push_back(double(count));
    }
    int64_t extra = (yd[2 + i] - 1) * s + (k - 1) * d + 1 - pb - in;  // transposed output past X
    end_pads[i] = std::max<int64_t>(extra, 0);
    output_padding[i] = std::max<int64_t>(-extra, 0);
  }
  std::vector<double> inverse(1, 1.0);
  for (size_t i = 0; i < n; ++i) {
    std::vector<double> next;
    for (double a : inverse)
      for (double b : counts[i]) next.push_back(b > 0 ? a / b : 0.0);
    inverse = std::move(next);
  }
  ir::DType t = c.Dtype(c.grad(0));
  std::vector<int64_t> inv_dims = {1, 1}, plane_dims = {xd[0] * xd[1], 1}, ones_dims = {1, 1};
  for (size_t i = 0; i < n; ++i) inv_dims.push_back(yd[2 + i]), plane_dims.push_back(yd[2 + i]), ones_dims.push_back(w.kernel[i]);
  ir::Value* scaled = c.Op("Mul", {c.grad(0), c.Op("Reshape", {c.Floats(inverse, t), c.Int64s(inv_dims)})});
  ir::Value* planes = c.Op("Reshape", {scaled, c.Int64s(plane_dims)});
  ir::Value* ones = c.Op("Reshape", {c.Floats(std::vector<double>(size_t(Product(w.kernel)), 1.0), t), c.Int64s(ones_dims)});
  std::vector<int64_t> pads(w.pads.begin(), w.pads.begin() + int64_t(n));
  pads.insert(pads.end(), end_pads.begin(), end_pads.end());
  ir::Value* dx = c.Op("ConvTranspose", {planes, ones},
                       {GradAttr::Ints("strides", w.strides), GradAttr::Ints("dilations", w.dilations), GradAttr::Ints("pads", pads),
                        GradAttr::Ints("output_padding", output_padding)});
  return {c.Op("Reshape", {dx, c.Int64s(xd)})};
}

// GlobalAveragePool: dx = g / (spatial size), expanded over the plane.
V GlobalAveragePoolGrad(G& c) {
  std::vector<int64_t> xd = c.Dims(c.in(0));
  double size = double(Product(std::vector<int64_t>(xd.begin() + 2, xd.end())));
  return {c.Op("Expand", {c.Op("Div", {c.grad(0), c.Scalar(size, c.Dtype(c.grad(0)))}), c.Int64s(xd)})};
}

// An auto_pad window, or pads that make a window of padding alone (no input position to send its
// gradient to), is refused.
const char* RefusePool(const ir::Node& n) {
  const ir::Attribute* pad = n.FindAttribute("auto_pad");
  if (pad && pad->s != "NOTSET" && !pad->s.empty()) return "auto_pad has no gradient rule yet (give explicit pads)";
  const ir::Attribute* kernel = n.FindAttribute("kernel_shape");
  const ir::Attribute* pads = n.FindAttribute("pads");
  const ir::Attribute* dil = n.FindAttribute("dilations");
  if (kernel && pads && pads->ints.size() == 2 * kernel->ints.size())
    for (size_t i = 0; i < pads->ints.size(); ++i) {
      size_t k = i % kernel->ints.size();
      int64_t eff = (kernel->ints[k] - 1) * (dil && k < dil->ints.size() ? dil->ints[k] : 1) + 1;
      if (pads->ints[i] >= eff) return "pads as large as the window (a window of padding only) have no gradient rule";
    }
  return nullptr;
}

// Gather(data, indices, axis): y[pre, i..., post] = data[pre, indices[i...], post], so
// d data[pre, j, post] = sum of g[pre, i..., post] over the i... with indices[i...] == j: g with
// the index dims moved first, scatter-added by ScatterND (reduction add, applied in index order,
// so repeated indices sum deterministically; negative indices wrap as in Gather) into zeros of
// data's shape with the gathered axis first, then moved back.
V GatherGrad(G& c) {
  if (!c.wants(0)) return {nullptr, nullptr};
  std::vector<int64_t> xd = c.Dims(c.in(0));
  int64_t r = int64_t(xd.size());
  int64_t a = c.Int("axis", 0);
  if (a < 0) a += r;
  ir::Value* idx = c.CastTo(c.in(1), ir::DType::kI64);
  std::vector<int64_t> id = c.Dims(idx);
  int64_t q = int64_t(id.size());
  std::vector<int64_t> perm, zero_dims = {xd[size_t(a)]}, back;
  for (int64_t j = 0; j < q; ++j) perm.push_back(a + j);
  for (int64_t j = 0; j < a; ++j) perm.push_back(j);
  for (int64_t j = a + q; j < r + q - 1; ++j) perm.push_back(j);
  for (int64_t j = 0; j < r; ++j)
    if (j != a) zero_dims.push_back(xd[size_t(j)]);
  for (int64_t j = 0; j < r; ++j) back.push_back(j < a ? j + 1 : j == a ? 0 : j);
  ir::Value* g = c.grad(0);
  if (a > 0 && q > 0) g = c.Op("Transpose", {g}, {GradAttr::Ints("perm", perm)});
  id.push_back(1);
  ir::Value* tuples = c.Op("Reshape", {idx, c.Int64s(id)});
  ir::Value* sum = c.Op("ScatterND", {c.Zeros(zero_dims, c.Dtype(g)), tuples, g}, {GradAttr::String("reduction", "add")});
  if (a > 0) sum = c.Op("Transpose", {sum}, {GradAttr::Ints("perm", back)});
  return {sum, nullptr};
}

// LayerNormalization(X, Scale, B; axis, epsilon) over the axes from `axis` on (n elements): with
// mean, rstd = 1/sqrt(var + eps) and xhat = (x - mean) * rstd recomputed from X,
//   dB = sum(g), dScale = sum(g * xhat) over the leading (broadcast) axes;
//   dX = rstd * (gs - mean(gs) - xhat * mean(gs * xhat)) with gs = g * Scale.
// Numerics: the statistics are recomputed with a two-pass variance (mean first, then the mean of
// squared deviations), in FP32 for 16-bit inputs (cast in, results cast back) and in the input's
// dtype otherwise; the reductions are ReduceSum steps (FP32 accumulation).
V LayerNormGrad(G& c) {
  std::vector<int64_t> xd = c.Dims(c.in(0));
  int64_t r = int64_t(xd.size()), axis = c.Int("axis", -1);
  if (axis < 0) axis += r;
  std::vector<int64_t> axes;
  double n = 1;
  for (int64_t j = axis; j < r; ++j) axes.push_back(j), n *= double(xd[size_t(j)]);
  ir::DType t = c.Dtype(c.in(0)), ct = t == ir::DType::kF64 ? t : ir::DType::kF32;
  ir::Value* x = c.CastTo(c.in(0), ct);
  ir::Value* g = c.CastTo(c.grad(0), ct);
  auto mean = [&](ir::Value* v) { return c.Op("Div", {c.SumAxes(v, axes, true), c.Scalar(n, ct)}); };
  ir::Value* xc = c.Op("Sub", {x, mean(x)});
  ir::Value* var = mean(c.Op("Mul", {xc, xc}));
  ir::Value* rstd = c.Op("Div", {c.Scalar(1.0, ct), c.Op("Sqrt", {c.Op("Add", {var, c.Scalar(c.Float("epsilon", 1e-5f), ct)})})});
  ir::Value* xhat = c.Op("Mul", {xc, rstd});
  V out(c.node().inputs().size(), nullptr);
  if (c.wants(0)) {
    ir::Value* gs = c.Op("Mul", {g, c.CastTo(c.in(1), ct)});
    ir::Value* centered = c.Op("Sub", {gs, mean(gs)});
    ir::Value* projected = c.Op("Sub", {centered, c.Op("Mul", {xhat, mean(c.Op("Mul", {gs, xhat}))})});
    out[0] = c.CastTo(c.Op("Mul", {rstd, projected}), t);
  }
  if (c.wants(1)) out[1] = c.CastTo(c.Unbroadcast(c.Op("Mul", {g, xhat}), c.in(1)), c.Dtype(c.in(1)));
  if (c.wants(2) && c.in(2)) out[2] = c.CastTo(c.Unbroadcast(g, c.in(2)), c.Dtype(c.in(2)));
  return out;
}

const char* RefuseLayerNorm(const ir::Node& n) {
  for (size_t i = 1; i < n.outputs().size(); ++i)
    if (n.outputs()[i]) return "the Mean and InvStdDev outputs have no gradient rule (export LayerNormalization without them)";
  return nullptr;
}

}  // namespace precis::ops::grad
