// ChooseLayout (see choose_layout.h): mark the NHWC nodes in graph order (a region grows
// forward from its convolutions), then rewrite them: transposed weights, NHWC values for their
// outputs, Transposes at the edges. Exit transposes nobody reads are removed at the end.
#include "passes/choose_layout.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <set>

#include "compiler/ir/precision_reason.h"
#include "passes/match.h"

namespace precis::passes {
namespace {

using ir::Node;
using ir::Value;
using match::AddEvidence;
using match::FreshName;
using match::IntAttr;
using match::Is;
using match::ShapeConstant;
using match::StaticDims;
using match::StringAttr;

constexpr int64_t kChannelMultiple = 8;  // 16 bytes of FP16/BF16: tensor-core operand rows

bool IsHalf(const Value* v) {
  return v && v->type().is_tensor() && ir::IsHalfFloat(v->type().dtype());
}

bool IsScalar(const Value* v) {
  auto d = StaticDims(v);
  if (!d) return false;
  int64_t n = 1;
  for (int64_t x : *d) n *= x;
  return n == 1;
}

const ir::Attribute* Attr(const Node* n, const char* name) { return n->FindAttribute(name); }

bool HasData(const Value* v) { return v->is_constant() && v->data() && v->data()->has_data(); }

// A value's dims when its rank is known and every dim is static or, where `symbolic` allows it
// (CPU plans), a named symbol; nullopt otherwise (unknown dims compare equal to each other).
std::optional<std::vector<ir::Dim>> KnownDims(const Value* v, bool symbolic) {
  if (!v || !v->type().is_tensor() || !v->type().shape().has_rank()) return std::nullopt;
  const std::vector<ir::Dim>& d = v->type().shape().dims();
  for (const ir::Dim& x : d)
    if (!x.is_static() && !(symbolic && x.is_symbolic())) return std::nullopt;
  return d;
}

bool IsOne(const ir::Dim& d) { return d.is_static() && d.value() == 1; }

// Whether dims `d` broadcast to `y` (right-aligned, numpy rules) without changing y.
bool Broadcasts(const std::vector<ir::Dim>& d, const std::vector<ir::Dim>& y) {
  if (d.size() > y.size()) return false;
  for (size_t i = 0; i < d.size(); ++i) {
    const ir::Dim &a = d[d.size() - 1 - i], &b = y[y.size() - 1 - i];
    if (!(a == b) && !IsOne(a)) return false;
  }
  return true;
}

// Why a 16-bit Conv stays NCHW; empty when it can run NHWC. A grouped convolution gains nothing
// from tensor cores, so it runs NHWC only to stay inside a region its input is already in
// (`joining`): then no transposes go around it (MobileNet's depthwise layers).
std::string GpuNchwReason(const Node* c, bool joining) {
  if (c->inputs().size() < 2 || c->outputs().size() != 1) return "unexpected operands";
  auto x = StaticDims(c->inputs()[0]), w = StaticDims(c->inputs()[1]), y = StaticDims(c->outputs()[0]);
  if (!x || !w || !y || x->size() != 4 || w->size() != 4 || y->size() != 4) return "not a 2-D convolution with static shapes";
  const ir::Attribute* group = Attr(c, "group");
  if (group && group->i != 1 && !joining) return "grouped (group " + std::to_string(group->i) + ")";
  int64_t C = (*x)[1], M = (*w)[0];
  if (C % kChannelMultiple != 0 || M % kChannelMultiple != 0)
    return "channels " + std::to_string(C) + " -> " + std::to_string(M) + " are not multiples of " + std::to_string(kChannelMultiple);
  const Value* wv = c->inputs()[1];
  if (!wv->is_constant() || !wv->data() || !wv->data()->has_data()) return "W is not a constant";
  ir::DType dt = c->inputs()[0]->type().dtype();
  if (wv->type().dtype() != dt) return "W's dtype differs from X's";
  if (c->outputs()[0]->type().dtype() != dt) return "writes " + std::string(ir::DTypeName(c->outputs()[0]->type().dtype())) + " from 16-bit operands";
  if (c->inputs().size() > 2 && c->inputs()[2] && c->inputs()[2]->type().dtype() != dt) return "B's dtype differs from X's";
  const ir::Attribute* auto_pad = Attr(c, "auto_pad");
  if (auto_pad && auto_pad->s != "NOTSET" && auto_pad->s != "VALID") return "auto_pad " + auto_pad->s;
  const ir::Attribute* pads = Attr(c, "pads");
  if (pads && (pads->ints.size() != 4 || pads->ints[0] != pads->ints[2] || pads->ints[1] != pads->ints[3])) return "asymmetric pads";
  return "";
}

// Why a CPU Conv stays NCHW; empty when it runs NHWC. oneDNN's convolutions read and write
// channels-last activations directly (any group, stride, padding or channel count), so a plain
// NCHW tensor costs a reorder into channels-last and one back around every convolution; in a
// region they are paid once. Symbolic batch and image dims are fine (the kernels are prepared per
// shape); the channels must be static.
std::string CpuNchwReason(const Node* c) {
  if (c->inputs().size() < 2 || c->outputs().size() != 1 || !c->inputs()[1]) return "unexpected operands";
  auto x = KnownDims(c->inputs()[0], true), w = KnownDims(c->inputs()[1], false), y = KnownDims(c->outputs()[0], true);
  if (!x || !w || !y || x->size() != 4 || w->size() != 4 || y->size() != 4) return "not a 2-D convolution";
  if (!(*x)[1].is_static() || !(*y)[1].is_static()) return "channels are not static";
  const Value* wv = c->inputs()[1];
  if (!HasData(wv)) return "W is not a constant";
  ir::DType dt = c->inputs()[0]->type().dtype();
  if (dt != ir::DType::kF32 && !ir::IsHalfFloat(dt)) return "X is " + std::string(ir::DTypeName(dt));
  if (wv->type().dtype() != dt) return "W's dtype differs from X's";
  if (!ir::IsFloat(c->outputs()[0]->type().dtype())) return "Y is not a float tensor";
  return "";
}

const std::set<std::string>& UnaryOps() {
  static const std::set<std::string> ops = {"Relu", "LeakyRelu", "Sigmoid", "Tanh", "Clip", "HardSigmoid", "HardSwish", "Elu",
                                            "Selu", "Softplus", "Gelu", "Mish", "Abs", "Neg"};
  return ops;
}
const std::set<std::string>& BinaryOps() {
  static const std::set<std::string> ops = {"Add", "Sub", "Mul", "Div", "Max", "Min"};
  return ops;
}

// Ops whose step carries layout = "NHWC" inside a region: they read X per channel (channels are
// X's last axis there) and write Y in the same layout; other inputs (BatchNormalization's
// per-channel vectors) are unchanged.
bool ChannelOp(const Node* n) {
  const std::vector<std::string>& ops = NhwcOps();
  return n->domain().empty() && n->op_type() != "Conv" && std::find(ops.begin(), ops.end(), n->op_type()) != ops.end();
}

// An elementwise node that can run on NHWC operands: one 4-D output, every non-scalar input of
// the output's shape, at least one of them already NHWC.
// A Concat joins (its axis renumbered for NHWC) when one of its inputs is NHWC; its NCHW inputs
// are transposed in. In the networks that concatenate (Inception, DenseNet) the readers of a
// Concat are the next block's convolutions, so keeping it NCHW would transpose its NHWC inputs
// out and the whole result back in (light DenseNet-121: 14 transposes with "every input NHWC",
// 3 with "one input NHWC").
// ChannelOp nodes of an NHWC 4-D input join as well.
bool JoinsRegion(const Node* n, const std::set<const Value*>& nhwc, bool symbolic) {
  if (!n->domain().empty() || n->outputs().empty() || !n->outputs()[0]) return false;
  if (ChannelOp(n)) {
    for (size_t i = 1; i < n->outputs().size(); ++i)
      if (n->outputs()[i]) return false;  // MaxPool's Indices, training BatchNormalization's statistics
    auto x = KnownDims(n->inputs().empty() ? nullptr : n->inputs()[0], symbolic), y = KnownDims(n->outputs()[0], symbolic);
    return x && y && x->size() == 4 && y->size() == 4 && nhwc.count(n->inputs()[0]);
  }
  if (n->outputs().size() != 1) return false;
  if (Is(n, "Concat")) {
    auto y = KnownDims(n->outputs()[0], symbolic);
    if (!y || y->size() != 4 || n->inputs().empty()) return false;
    bool any = false;
    for (const Value* v : n->inputs()) {
      if (!v || !KnownDims(v, symbolic)) return false;
      any = any || nhwc.count(v);
    }
    return any;
  }
  bool unary = UnaryOps().count(n->op_type()) > 0, binary = BinaryOps().count(n->op_type()) > 0;
  bool variadic = Is(n, "Sum") || Is(n, "Mean");  // Caffe2's residual Sum; Max and Min are in BinaryOps
  if (!unary && !binary && !variadic) return false;
  if (binary && n->inputs().size() != 2 && !Is(n, "Max") && !Is(n, "Min")) return false;
  for (const auto& a : n->attributes())
    if (!a.graphs.empty()) return false;
  auto y = KnownDims(n->outputs()[0], symbolic);
  if (!y || y->size() != 4) return false;
  bool any = false;
  for (size_t i = 0; i < n->inputs().size(); ++i) {
    const Value* v = n->inputs()[i];
    if (!v) continue;
    if (unary && i > 0) {
      if (!IsScalar(v)) return false;  // Clip's min and max
      continue;
    }
    if (IsScalar(v) && !nhwc.count(v)) continue;
    auto d = KnownDims(v, symbolic);
    if (!d) return false;
    if (*d == *y) {
      any = any || nhwc.count(v) > 0;
      continue;
    }
    // A broadcast operand (a squeeze-and-excitation scale [N, C, 1, 1], a per-channel constant
    // [C, 1, 1]): broadcasting commutes with the permutation once it has rank 4. Constants are
    // permuted at compile time; other values need rank 4 (an entry Transpose, or NHWC already).
    if (unary || !Broadcasts(*d, *y) || (d->size() != 4 && !HasData(v))) return false;
  }
  return any;
}

ir::Type Permuted(const ir::Type& t, const int (&perm)[4]) {
  const auto& d = t.shape().dims();
  return ir::Type::Tensor(t.dtype(), ir::Shape(std::vector<ir::Dim>{d[size_t(perm[0])], d[size_t(perm[1])], d[size_t(perm[2])], d[size_t(perm[3])]}));
}

constexpr int kToNhwc[4] = {0, 2, 3, 1};
constexpr int kToNchw[4] = {0, 3, 1, 2};

std::vector<ir::Attribute> Perm(const int (&perm)[4]) {
  std::vector<ir::Attribute> attrs(1);
  attrs[0].name = "perm";
  attrs[0].kind = ir::Attribute::Kind::kInts;
  attrs[0].ints.assign(perm, perm + 4);
  return attrs;
}

// Whether permuting `dims` by `perm` moves no data: its dims larger than 1 keep their order
// (an [N, C, 1, 1] squeeze-and-excitation tensor, a one-channel image).
// A symbolic dim counts as larger than 1: if the order holds then, it holds when it is 1 too.
bool MovesNoData(const std::vector<ir::Dim>& dims, const int (&perm)[4]) {
  std::vector<int> before, after;
  for (int i = 0; i < 4; ++i) {
    if (!IsOne(dims[size_t(i)])) before.push_back(i);
    if (!IsOne(dims[size_t(perm[i])])) after.push_back(perm[i]);
  }
  return before == after;
}

// The shape operand of a Reshape from `from` to `to` (rank 4, the same elements): static dims
// as they are, a symbolic dim 0 (the batch, which both permutations keep first) as 0, which
// Reshape copies from the input; nullopt when another dim is symbolic, or when a static 0 would
// be read as "copy the input's dim" and that dim is not 0.
std::optional<std::vector<int64_t>> ReshapeDims(const std::vector<ir::Dim>& from, const std::vector<ir::Dim>& to) {
  std::vector<int64_t> dims;
  for (size_t i = 0; i < to.size(); ++i) {
    if (to[i].is_static() && (to[i].value() != 0 || from[i] == to[i])) dims.push_back(to[i].value());
    else if (i == 0 && to[0].is_symbolic() && to[0] == from[0]) dims.push_back(0);
    else return std::nullopt;
  }
  return dims;
}

// [a, b, c, d] -> [a, c, d, b] (W [M, C, kH, kW] -> [M, kH, kW, C]); `dims` (rank 4, the same
// element count) reads w with leading 1s added.
ir::Tensor TransposedWeight(const ir::Tensor& w, std::vector<int64_t> dims = {}) {
  const auto& d = dims.empty() ? w.dims() : dims;
  size_t element = size_t(ir::DTypeSize(w.dtype()));
  int64_t M = d[0], C = d[1], H = d[2], W = d[3];
  std::vector<uint8_t> out(size_t(w.NumElements()) * element);
  const uint8_t* src = w.buffer().data();
  for (int64_t m = 0; m < M; ++m)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t x = 0; x < W; ++x)
          std::memcpy(&out[size_t(((m * H + h) * W + x) * C + c) * element], src + size_t(((m * C + c) * H + h) * W + x) * element, element);
  return ir::Tensor(w.dtype(), {M, H, W, C}, ir::Buffer::Own(std::move(out)));
}

}  // namespace

const std::vector<std::string>& NhwcOps() {
  static const std::vector<std::string> ops = {"AveragePool", "BatchNormalization", "Conv", "GlobalAveragePool", "GlobalMaxPool", "MaxPool"};
  return ops;
}

LayoutStats ChooseLayout(ir::Graph& g, LayoutTarget target) {
  const bool cpu = target == LayoutTarget::kCpu;
  LayoutStats stats;
  std::set<const Node*> region;
  std::set<const Value*> nhwc;  // outputs of region nodes (their NCHW names)
  for (const auto& up : g.nodes()) {
    Node* n = up.get();
    if (Is(n, "Conv") && !n->inputs().empty() && n->inputs()[0] && (cpu || IsHalf(n->inputs()[0]))) {
      std::string reason = cpu ? CpuNchwReason(n) : GpuNchwReason(n, false);
      bool joins = !cpu && !reason.empty() && nhwc.count(n->inputs()[0]) && GpuNchwReason(n, true).empty();
      if (!reason.empty() && !joins) {
        AddEvidence(n, "layout NCHW: " + reason);
        ++stats.nchw_convs;
        continue;
      }
      const auto& d = n->inputs()[0]->type().shape().dims();
      std::string channels = "channels " + std::to_string(d[1].value()) + " -> " + std::to_string(n->outputs()[0]->type().shape().dims()[1].value());
      if (cpu) AddEvidence(n, "layout NHWC (oneDNN convolution on channels-last activations, " + channels + ": no reorders around it)");
      else if (joins) AddEvidence(n, "layout NHWC (" + reason + ", inside its input's NHWC region: no transposes around it)");
      else AddEvidence(n, "layout NHWC (tensor cores: " + std::string(ir::DTypeName(n->inputs()[0]->type().dtype())) + ", " + channels + ")");
      region.insert(n);
      nhwc.insert(n->outputs()[0]);
      ++stats.nhwc_convs;
    } else if (!region.empty() && JoinsRegion(n, nhwc, cpu)) {
      region.insert(n);
      nhwc.insert(n->outputs()[0]);
      ++stats.region_ops;
    }
  }
  if (region.empty()) return stats;

  const char* kind = cpu ? "channels-last convolution region" : "tensor-core convolution region";
  const ir::PrecisionRecord entry_record{ir::DType::kUndefined, std::string(ir::ReasonName(ir::Reason::kLayout)), std::string("NCHW -> NHWC into a ") + kind};
  const ir::PrecisionRecord exit_record{ir::DType::kUndefined, std::string(ir::ReasonName(ir::Reason::kLayout)), std::string("NHWC -> NCHW out of a ") + kind};
  // A layout change: a Transpose, or a Reshape (which the planner runs in place) where the
  // permutation moves no data.
  auto change = [&](Value* from, Value* to, const int (&perm)[4], const std::string& name) -> Node* {
    const std::vector<ir::Dim>& dims = from->type().shape().dims();
    std::optional<std::vector<int64_t>> shape = ReshapeDims(dims, to->type().shape().dims());
    if (!shape || !MovesNoData(dims, perm)) return g.AddNode("", "Transpose", FreshName(g, name), {from}, {to}, Perm(perm));
    return g.AddNode("", "Reshape", FreshName(g, name), {from, ShapeConstant(g, name + ".shape", *shape)}, {to}, {});
  };
  std::vector<Node*> original;
  for (const auto& up : g.nodes()) original.push_back(up.get());
  std::map<const Value*, Value*> to_nhwc, weights;
  std::vector<Node*> order, exits;
  for (Node* n : original) {
    if (!region.count(n)) {
      order.push_back(n);
      continue;
    }
    bool conv = Is(n, "Conv");
    for (size_t i = 0; i < n->inputs().size(); ++i) {
      Value* in = n->inputs()[i];
      // The bias, and BatchNormalization's vectors, are per channel in both layouts.
      if (!in || (conv && i == 2) || (!conv && i > 0 && ChannelOp(n))) continue;
      if (conv && i == 1) {
        Value*& wt = weights[in];
        if (!wt) wt = g.AddConstant(FreshName(g, in->name() + ".ohwi"), TransposedWeight(*in->data()));
        g.SetNodeInput(n, int(i), wt);
        continue;
      }
      if (auto it = to_nhwc.find(in); it != to_nhwc.end()) {
        g.SetNodeInput(n, int(i), it->second);
        continue;
      }
      if (IsScalar(in)) continue;
      if (HasData(in)) {  // a constant operand (full or broadcast): permuted once, here
        std::vector<int64_t> dims = in->data()->dims();
        dims.insert(dims.begin(), 4 - dims.size(), 1);
        Value* c = g.AddConstant(FreshName(g, in->name() + ".nhwc"), TransposedWeight(*in->data(), dims));
        to_nhwc[in] = c;
        g.SetNodeInput(n, int(i), c);
        continue;
      }
      Value* t = g.NewValue(FreshName(g, in->name() + ".nhwc"));
      t->set_type(Permuted(in->type(), kToNhwc));
      Node* tr = change(in, t, kToNhwc, in->name() + ".to_nhwc");
      tr->mutable_precision() = entry_record;
      order.push_back(tr);
      ++(Is(tr, "Reshape") ? stats.reshapes : stats.transposes);
      to_nhwc[in] = t;
      g.SetNodeInput(n, int(i), t);
    }
    order.push_back(n);
    Value* out = n->outputs()[0];
    Value* vn = g.NewValue(FreshName(g, out->name() + ".nhwc"));
    vn->set_type(Permuted(out->type(), kToNhwc));
    g.SetNodeOutput(n, 0, vn);
    to_nhwc[out] = vn;
    Node* exit = change(vn, out, kToNchw, out->name() + ".to_nchw");
    exit->mutable_precision() = exit_record;
    order.push_back(exit);
    exits.push_back(exit);
    if (Is(n, "Concat")) {  // NCHW axis a is NHWC axis kToNchw[a]; opsets 1-3 default the axis to 1
      auto& attrs = n->mutable_attributes();
      auto axis = std::find_if(attrs.begin(), attrs.end(), [](const ir::Attribute& a) { return a.name == "axis"; });
      if (axis == attrs.end()) axis = attrs.insert(attrs.end(), IntAttr("axis", 1));
      axis->i = kToNchw[axis->i < 0 ? axis->i + 4 : axis->i];
    }
    if (conv || ChannelOp(n)) n->mutable_attributes().push_back(StringAttr("layout", "NHWC"));
  }
  g.SetNodeOrder(order);
  for (Node* exit : exits) {
    Value* out = exit->outputs()[0];
    bool is_output = std::find(g.outputs().begin(), g.outputs().end(), out) != g.outputs().end();
    if (out->uses().empty() && !is_output) g.RemoveNode(exit);
    else ++(Is(exit, "Reshape") ? stats.reshapes : stats.transposes);
  }
  return stats;
}

}  // namespace precis::passes
