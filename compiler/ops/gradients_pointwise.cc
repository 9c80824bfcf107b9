// Gradient rules of pointwise activations (Clip, LeakyRelu, Gelu, HardSigmoid, HardSwish,
// Reciprocal, Max, Min) and data-movement operators (Slice, Split, Expand, Trilu). Conventions
// at kinks and ties are PyTorch's, named in each rule. g: the output's gradient, y: the output.
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "compiler/ir/dtype.h"
#include "compiler/ops/gradient_rules.h"
#include "runtime/kernels/strided_views.h"

namespace precis::ops::grad {
namespace {

using G = GradContext;

ir::Value* AsFloat(G& c, ir::Value* mask, ir::DType t) { return c.Op("Cast", {mask}, {GradAttr::Int("to", int64_t(ir::DTypeToOnnx(t)))}); }

// Integer values of a constant input (false when the input is absent; shape inference has
// already required Slice's starts, ends, axes and steps to be constants).
bool ConstInts(const ir::Value* v, std::vector<int64_t>* out) {
  if (!v || !v->is_constant() || !v->data()->has_data()) return false;
  const ir::Tensor& t = *v->data();
  out->assign(size_t(t.NumElements()), 0);
  for (size_t k = 0; k < out->size(); ++k) {
    if (t.dtype() == ir::DType::kI64) std::memcpy(&(*out)[k], t.buffer().data() + 8 * k, 8);
    else if (t.dtype() == ir::DType::kI32) {
      int32_t i;
      std::memcpy(&i, t.buffer().data() + 4 * k, 4);
      (*out)[k] = i;
    } else {
      return false;
    }
  }
  return true;
}

// Pad (pads as an input from opset 11, an attribute before); negative pads crop.
ir::Value* PadBy(G& c, ir::Value* v, const std::vector<int64_t>& pads) {
  if (c.opset() >= 11) return c.Op("Pad", {v, c.Int64s(pads)});
  return c.Op("Pad", {v}, {GradAttr::Ints("pads", pads)});
}

// Max/Min of two inputs: the gradient goes to the larger (smaller) one and is split evenly on
// ties (torch.maximum / torch.minimum): da = g * (win + eq/2), db = g - da.
V ExtremumGrad(G& c, const char* wins) {
  if (c.node().inputs().size() == 1) return {c.grad(0)};
  ir::Value *a = c.in(0), *b = c.in(1), *g = c.grad(0);
  ir::DType t = c.Dtype(g);
  ir::Value* half_tie = c.Op("Mul", {AsFloat(c, c.Op("Equal", {a, b}), t), c.Scalar(0.5, t)});
  ir::Value* share = c.Op("Add", {AsFloat(c, c.Op(wins, {a, b}), t), half_tie});
  ir::Value* da = c.Op("Mul", {g, share});
  return {c.wants(0) ? c.Unbroadcast(da, a) : nullptr, c.wants(1) ? c.Unbroadcast(c.Op("Sub", {g, da}), b) : nullptr};
}

}  // namespace

// Clip: dx = g where min <= x <= max (PyTorch's clamp: the bounds themselves pass the gradient).
// Opsets 6-10 take min and max as attributes, 11+ as optional scalar inputs (not differentiated).
V ClipGrad(G& c) {
  ir::Value *x = c.in(0), *lo = nullptr, *hi = nullptr;
  ir::DType t = c.Dtype(x);
  if (c.opset() >= 11) {
    lo = c.in(1);
    hi = c.in(2);
  } else {
    lo = c.Scalar(c.Float("min", -FLT_MAX), t);
    hi = c.Scalar(c.Float("max", FLT_MAX), t);
  }
  ir::Value* keep = nullptr;
  if (lo) keep = c.Op("Not", {c.Op("Less", {x, lo})});
  if (hi) {
    ir::Value* below = c.Op("Not", {c.Op("Greater", {x, hi})});
    keep = keep ? c.Op("And", {keep, below}) : below;
  }
  V out(c.node().inputs().size(), nullptr);
  out[0] = keep ? c.Op("Mul", {c.grad(0), AsFloat(c, keep, c.Dtype(c.grad(0)))}) : c.grad(0);
  return out;
}

// LeakyRelu: dx = g where x > 0, alpha * g elsewhere (x = 0 takes alpha, as PyTorch).
V LeakyReluGrad(G& c) {
  ir::Value* g = c.grad(0);
  ir::DType t = c.Dtype(g);
  ir::Value* pos = c.Op("Greater", {c.in(0), c.Scalar(0.0, t)});
  return {c.Op("Where", {pos, g, c.Op("Mul", {g, c.Scalar(c.Float("alpha", 0.01f), t)})})};
}

// Gelu (opset 20). approximate none: y = x * Phi(x), dx = g * (Phi(x) + x * phi(x)) with
// Phi(x) = (1 + erf(x / sqrt 2)) / 2, phi(x) = exp(-x^2 / 2) / sqrt(2 pi).
// approximate tanh: y = x/2 * (1 + tanh(u)), u = k (x + 0.044715 x^3), k = sqrt(2/pi):
// dx = g * ((1 + t)/2 + x/2 * (1 - t^2) * k * (1 + 3 * 0.044715 x^2)), t = tanh(u).
V GeluGrad(G& c) {
  ir::Value *x = c.in(0), *g = c.grad(0);
  ir::DType t = c.Dtype(x);
  auto k = [&](double v) { return c.Scalar(v, t); };
  auto mul = [&](ir::Value* a, ir::Value* b) { return c.Op("Mul", {a, b}); };
  auto add = [&](ir::Value* a, ir::Value* b) { return c.Op("Add", {a, b}); };
  ir::Value* x2 = mul(x, x);
  std::string approximate;
  if (const ir::Attribute* a = c.node().FindAttribute("approximate")) approximate = a->s;
  if (approximate == "tanh") {
    const double kk = std::sqrt(2.0 / M_PI), kc = 0.044715;
    ir::Value* th = c.Op("Tanh", {mul(k(kk), add(x, mul(k(kc), mul(x2, x))))});
    ir::Value* outer = mul(k(0.5), add(k(1.0), th));
    ir::Value* sech2 = c.Op("Sub", {k(1.0), mul(th, th)});
    ir::Value* inner = mul(mul(mul(k(0.5), x), sech2), mul(k(kk), add(k(1.0), mul(k(3 * kc), x2))));
    return {mul(g, add(outer, inner))};
  }
  ir::Value* cdf = mul(k(0.5), add(k(1.0), c.Op("Erf", {mul(x, k(M_SQRT1_2))})));
  ir::Value* pdf = mul(k(1.0 / std::sqrt(2 * M_PI)), c.Op("Exp", {mul(x2, k(-0.5))}));
  return {mul(g, add(cdf, mul(x, pdf)))};
}

// HardSigmoid: y = max(0, min(1, alpha x + beta)); dx = alpha * g where 0 < y < 1 (strictly, as
// PyTorch's hardsigmoid_backward).
V HardSigmoidGrad(G& c) {
  ir::Value *y = c.out(0), *g = c.grad(0);
  ir::DType t = c.Dtype(g);
  ir::Value* inside = c.Op("And", {c.Op("Greater", {y, c.Scalar(0.0, t)}), c.Op("Less", {y, c.Scalar(1.0, t)})});
  return {c.Op("Mul", {c.Op("Mul", {g, AsFloat(c, inside, t)}), c.Scalar(c.Float("alpha", 0.2f), t)})};
}

// HardSwish: y = x * max(0, min(1, x/6 + 1/2)); dx = 0 for x < -3, g * (x/3 + 1/2) for
// -3 <= x <= 3, g for x > 3 (PyTorch's hardswish_backward).
V HardSwishGrad(G& c) {
  ir::Value *x = c.in(0), *g = c.grad(0);
  ir::DType t = c.Dtype(g);
  ir::Value* slope = c.Op("Add", {c.Op("Div", {x, c.Scalar(3.0, t)}), c.Scalar(0.5, t)});
  ir::Value* mid = c.Op("Where", {c.Op("Greater", {x, c.Scalar(3.0, t)}), g, c.Op("Mul", {g, slope})});
  return {c.Op("Where", {c.Op("Less", {x, c.Scalar(-3.0, t)}), c.Scalar(0.0, t), mid})};
}

// Reciprocal: dx = -g * y^2
V ReciprocalGrad(G& c) { return {c.Op("Neg", {c.Op("Mul", {c.grad(0), c.Op("Mul", {c.out(0), c.out(0)})})})}; }

V MaxGrad(G& c) { return ExtremumGrad(c, "Greater"); }
V MinGrad(G& c) { return ExtremumGrad(c, "Less"); }

const char* RefuseMaxMin(const ir::Node& n) {
  return n.inputs().size() > 2 ? "more than two inputs have no gradient rule yet (nest binary Max/Min)" : nullptr;
}

// Pad in constant mode: dx = Pad(g, -pads) (constant 0): a padded border drops out of the
// gradient, and where the pads cropped x (negative pads) its gradient is zero. Pads are an
// attribute before opset 11, then the constant input 1 (with axes in input 3 from 18).
V PadGrad(G& c) {
  V out(c.node().inputs().size(), nullptr);
  std::vector<int64_t> pads;
  if (c.opset() < 11) pads = c.Ints(c.opset() < 2 ? "paddings" : "pads");
  else ConstInts(c.in(1), &pads);
  for (int64_t& p : pads) p = -p;
  ir::Value* g = c.grad(0);
  if (c.opset() < 11) {
    out[0] = c.Op("Pad", {g}, {GradAttr::Ints("pads", pads)});
  } else {
    std::vector<ir::Value*> ins = {g, c.Int64s(pads)};
    if (c.in(3)) ins.insert(ins.end(), {nullptr, c.in(3)});
    out[0] = c.Op("Pad", ins);
  }
  return out;
}

const char* RefusePad(const ir::Node& n) {
  const ir::Attribute* mode = n.FindAttribute("mode");
  if (mode && mode->s != "constant") return "only constant-mode Pad has a gradient rule (reflect, edge and wrap would scatter-add)";
  std::vector<int64_t> pads;
  if (n.inputs().size() > 1 && n.inputs()[1] && !ConstInts(n.inputs()[1], &pads)) return "its pads are computed at run time";
  if (n.inputs().size() > 3 && n.inputs()[3] && !ConstInts(n.inputs()[3], &pads)) return "its axes are computed at run time";
  return nullptr;
}

// Slice: dx is g put back at the sliced positions, zeros elsewhere. Per sliced axis (count c of
// `step` apart from `start`): a negative step is walked from its last element with g reversed;
// a step s > 1 interleaves s - 1 zeros after each element (reshape to [.., c, 1, ..], pad to
// [.., c, s, ..], reshape to c * s); then a Pad puts the start zeros before and crops or fills
// the end to the axis length.
V SliceGrad(G& c) {
  std::vector<int64_t> xd = c.Dims(c.in(0)), starts, ends, axes, steps;
  if (c.opset() >= 10) {
    ConstInts(c.in(1), &starts);
    ConstInts(c.in(2), &ends);
    ConstInts(c.in(3), &axes);
    ConstInts(c.in(4), &steps);
  } else {
    starts = c.Ints("starts");
    ends = c.Ints("ends");
    axes = c.Ints("axes");
  }
  if (axes.empty())
    for (size_t i = 0; i < starts.size(); ++i) axes.push_back(int64_t(i));
  if (steps.empty()) steps.assign(starts.size(), 1);
  ir::Value* g = c.grad(0);
  int64_t r = int64_t(xd.size());
  V out(c.node().inputs().size(), nullptr);
  for (size_t i = 0; i < starts.size(); ++i) {
    size_t a = size_t(axes[i] < 0 ? axes[i] + r : axes[i]);
    rt::SliceAxis range = rt::SliceRange(starts[i], ends[i], steps[i], xd[a]);
    if (range.count == 0) {
      out[0] = c.Zeros(xd, c.Dtype(g));
      return out;
    }
    int64_t start = range.start, step = steps[i];
    if (step < 0) {
      g = c.Op("Slice", {g, c.Int64s({-1}), c.Int64s({INT64_MIN}), c.Int64s({int64_t(a)}), c.Int64s({-1})});
      start += (range.count - 1) * step;
      step = -step;
    }
    int64_t len = range.count;
    if (step > 1) {
      std::vector<int64_t> gd = c.Dims(g), split = gd;
      split.insert(split.begin() + int64_t(a) + 1, 1);
      std::vector<int64_t> pads(2 * split.size(), 0);
      pads[split.size() + a + 1] = step - 1;
      ir::Value* spread = PadBy(c, c.Op("Reshape", {g, c.Int64s(split)}), pads);
      len = range.count * step;
      gd[a] = len;
      g = c.Op("Reshape", {spread, c.Int64s(gd)});
    }
    std::vector<int64_t> pads(2 * size_t(r), 0);
    pads[a] = start;
    pads[size_t(r) + a] = xd[a] - start - len;
    g = PadBy(c, g, pads);
  }
  out[0] = g;
  return out;
}

// Split: dx = Concat of the outputs' gradients along the axis (zeros for an output without one).
V SplitGrad(G& c) {
  std::vector<int64_t> xd = c.Dims(c.in(0));
  int64_t axis = c.Int("axis", 0);
  V parts;
  for (size_t i = 0; i < c.node().outputs().size(); ++i)
    parts.push_back(c.grad(i) ? c.grad(i) : c.Zeros(c.Dims(c.out(i)), c.Dtype(c.in(0))));
  V out(c.node().inputs().size(), nullptr);
  out[0] = parts.size() == 1 ? parts[0] : c.Op("Concat", parts, {GradAttr::Int("axis", axis)});
  return out;
}

// Expand: dx = g summed over the broadcast axes.
V ExpandGrad(G& c) { return {c.Unbroadcast(c.grad(0), c.in(0)), nullptr}; }

// Trilu: dx = the same triangle of g (k and upper as the forward node).
V TriluGrad(G& c) {
  V in = {c.grad(0)};
  if (c.in(1)) in.push_back(c.in(1));
  return {c.Op("Trilu", in, c.CopyAttrs({"upper"})), nullptr};
}

}  // namespace precis::ops::grad
