// FuseElementwise (see fuse_elementwise.h): find the fusable nodes, grow single-output groups
// along values read inside the group only, and replace each group of two or more (or one node with FP16/BF16
// tensors) by one FusedElementwise node.
#include "passes/fuse_elementwise.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <optional>
#include <tuple>
#include <set>
#include <unordered_map>

#include "runtime/base/half.h"
#include "runtime/kernels/fused_program.h"

namespace precis::passes {
namespace {

namespace fz = rt::fused;

constexpr size_t kMaxGroupInputs = 8;

bool FloatDtype(ir::DType t) { return t == ir::DType::kF32 || t == ir::DType::kF16 || t == ir::DType::kBF16; }

// A float value's dims, static or symbolic (a dynamic plan's); nullopt for other values or an
// unknown dim.
using Dims = std::vector<ir::Dim>;
std::optional<Dims> ShapeDims(const ir::Value* v) {
  if (!v || !v->type().is_tensor() || !FloatDtype(v->type().dtype())) return std::nullopt;
  const ir::Shape& s = v->type().shape();
  if (!s.has_rank()) return std::nullopt;
  for (const ir::Dim& d : s.dims())
    if (d.is_unknown()) return std::nullopt;
  return s.dims();
}

bool IsOne(const ir::Dim& d) { return d.is_static() && d.value() == 1; }
bool IsScalar(const Dims& dims) { return std::all_of(dims.begin(), dims.end(), IsOne); }
bool IsEmpty(const Dims& dims) {
  return std::any_of(dims.begin(), dims.end(), [](const ir::Dim& d) { return d.is_static() && d.value() == 0; });
}

// How a value of dims `v` broadcast to `out` is read as a fused load: element i of the output reads
// element (i / inner) % count; {1, 1} for one element. nullopt when `v` keeps more than one
// contiguous block of `out`'s dims (or does not broadcast to it), or when inner or count would
// depend on symbolic dims (the fused program holds them as numbers).
std::optional<std::pair<int64_t, int64_t>> Period(const Dims& v, const Dims& out) {
  if (v.size() > out.size()) return std::nullopt;
  Dims padded(out.size() - v.size(), ir::Dim::Static(1));
  padded.insert(padded.end(), v.begin(), v.end());
  int lo = -1, hi = -1, state = 0;  // 0: before the kept block, 1: in it, 2: after it
  for (size_t k = 0; k < out.size(); ++k) {
    if (IsOne(out[k])) continue;
    bool kept = padded[k] == out[k];
    if (!kept && !IsOne(padded[k])) return std::nullopt;
    if (kept) {
      if (state == 2) return std::nullopt;
      state = 1;
      if (lo < 0) lo = int(k);
      hi = int(k);
    } else if (state == 1) {
      state = 2;
    }
  }
  if (lo < 0) return std::make_pair(int64_t(1), int64_t(1));
  int64_t inner = 1, count = 1;
  for (size_t k = size_t(hi) + 1; k < out.size(); ++k) {
    if (!out[k].is_static()) return std::nullopt;
    inner *= out[k].value();
  }
  for (int k = lo; k <= hi; ++k) {
    if (!out[size_t(k)].is_static()) return std::nullopt;
    count *= out[size_t(k)].value();
  }
  return std::make_pair(inner, count);
}

// The float value of a one-element float constant.
std::optional<float> ScalarConstant(const ir::Value* v) {
  if (!v || !v->is_constant() || !v->data()) return std::nullopt;
  const ir::Tensor& t = *v->data();
  if (t.NumElements() != 1) return std::nullopt;
  const uint8_t* p = t.buffer().data();
  if (t.dtype() == ir::DType::kF32) {
    float f;
    std::memcpy(&f, p, 4);
    return f;
  }
  uint16_t h;
  if (t.dtype() == ir::DType::kF16 || t.dtype() == ir::DType::kBF16) std::memcpy(&h, p, 2);
  if (t.dtype() == ir::DType::kF16) return HalfToFloat(h);
  if (t.dtype() == ir::DType::kBF16) return Bf16ToFloat(h);
  return std::nullopt;
}

const std::map<std::string, fz::Op>& BinaryOps() {
  static const std::map<std::string, fz::Op> m = {{"Add", fz::Op::kAdd}, {"Sub", fz::Op::kSub}, {"Mul", fz::Op::kMul},
                                                  {"Div", fz::Op::kDiv}, {"Max", fz::Op::kMax}, {"Min", fz::Op::kMin},
                                                  {"PRelu", fz::Op::kPRelu}};
  return m;
}
const std::map<std::string, fz::Op>& UnaryOps() {
  static const std::map<std::string, fz::Op> m = {{"Neg", fz::Op::kNeg}, {"Abs", fz::Op::kAbs}, {"Sqrt", fz::Op::kSqrt},
                                                  {"Reciprocal", fz::Op::kReciprocal}, {"Relu", fz::Op::kRelu},
                                                  {"Exp", fz::Op::kExp},       {"Erf", fz::Op::kErf},
                                                  {"Tanh", fz::Op::kTanh},     {"Sigmoid", fz::Op::kSigmoid}};
  return m;
}

// The data inputs of a fusable node (Clip's bounds and the like excluded), or nullopt when the
// node is not fusable.
std::optional<std::vector<ir::Value*>> FusableInputs(const ir::Node& n) {
  if (!n.domain().empty() || n.outputs().size() != 1 || !n.outputs()[0]) return std::nullopt;
  for (const auto& a : n.attributes())
    if (!a.graphs.empty()) return std::nullopt;
  auto out = ShapeDims(n.outputs()[0]);
  if (!out || IsEmpty(*out)) return std::nullopt;
  const std::string& op = n.op_type();
  std::vector<ir::Value*> data;
  if (BinaryOps().count(op)) {
    if (n.inputs().size() != 2) return std::nullopt;
    data = n.inputs();
  } else if (op == "Gelu") {
    const ir::Attribute* a = n.FindAttribute("approximate");
    if (n.inputs().size() != 1 || (a && (a->kind != ir::Attribute::Kind::kString || (a->s != "none" && a->s != "tanh")))) return std::nullopt;
    data = n.inputs();
  } else if (UnaryOps().count(op) || op == "LeakyRelu" || op == "Cast" || op == "HardSigmoid" || op == "HardSwish") {
    if (n.inputs().size() != 1) return std::nullopt;
    data = n.inputs();
  } else if (op == "Clip") {
    if (n.inputs().empty()) return std::nullopt;
    for (size_t i = 1; i < n.inputs().size(); ++i)
      if (n.inputs()[i] && !ScalarConstant(n.inputs()[i])) return std::nullopt;
    data = {n.inputs()[0]};
  } else {
    return std::nullopt;
  }
  for (const ir::Value* v : data) {
    auto dims = ShapeDims(v);
    if (!dims || (*dims != *out && !Period(*dims, *out))) return std::nullopt;
  }
  return data;
}

// A reduction over the trailing dims of its input (rows of `row` elements): Softmax,
// LayerNormalization, InstanceNormalization (rows of one channel's spatial dims, its scale and
// bias once per row), ReduceSum/ReduceMean/ReduceMax (passes/fuse_elementwise.h).
struct RowOp {
  enum Kind { kSoftmax, kLayerNorm, kInstanceNorm, kReduceSum, kReduceMean, kReduceMax } kind;
  int64_t row = 0;
  int trailing = 0;          // the trailing dims of the frame the row spans
  Dims frame;                // the input's dims
  std::vector<ir::Value*> data;  // the inputs read (X; LayerNorm: X, Scale, B)
  bool keepdims = true;      // reductions: the output keeps the reduced dims as 1s
  float epsilon = 1e-5f;
  // Softmax and the norms read their input in each of 3 passes; a Reduce* in one.
  bool MultiPass() const { return kind == kSoftmax || kind == kLayerNorm || kind == kInstanceNorm; }
};

std::optional<std::vector<int64_t>> ConstantInts(const ir::Value* v) {
  if (!v || !v->is_constant() || !v->data() || v->data()->dtype() != ir::DType::kI64) return std::nullopt;
  std::vector<int64_t> out(size_t(v->data()->NumElements()));
  if (!out.empty()) std::memcpy(out.data(), v->data()->buffer().data(), out.size() * sizeof(int64_t));
  return out;
}

std::optional<RowOp> FindRowOp(const ir::Node& n, int64_t opset) {
  static const std::map<std::string, RowOp::Kind> kinds = {{"Softmax", RowOp::kSoftmax},     {"LayerNormalization", RowOp::kLayerNorm},
                                                           {"InstanceNormalization", RowOp::kInstanceNorm},
                                                           {"ReduceSum", RowOp::kReduceSum}, {"ReduceMean", RowOp::kReduceMean},
                                                           {"ReduceMax", RowOp::kReduceMax}};
  auto kind = kinds.find(n.op_type());
  if (kind == kinds.end() || !n.domain().empty() || n.inputs().empty() || !n.inputs()[0] || n.outputs().empty() || !n.outputs()[0]) return std::nullopt;
  auto in = ShapeDims(n.inputs()[0]);
  auto out = ShapeDims(n.outputs()[0]);
  if (!in || !out || in->empty() || IsEmpty(*in)) return std::nullopt;
  // Input and output dtypes may differ (a Softmax that writes FP16 directly): loads and stores
  // convert.
  auto attr_int = [&](const char* name, int64_t fallback) {
    const ir::Attribute* a = n.FindAttribute(name);
    return a && a->kind == ir::Attribute::Kind::kInt ? a->i : fallback;
  };
  const int64_t rank = int64_t(in->size());
  RowOp op;
  op.kind = kind->second;
  op.frame = *in;
  op.data = {n.inputs()[0]};
  int64_t first = rank - 1;  // the first dim of the row
  switch (op.kind) {
    case RowOp::kSoftmax: {
      if (n.outputs().size() != 1) return std::nullopt;
      int64_t axis = attr_int("axis", opset < 13 ? 1 : -1);
      if (axis < -rank || axis >= rank) return std::nullopt;
      if (axis < 0) axis += rank;
      if (opset >= 13 && axis != rank - 1) return std::nullopt;
      first = axis;  // before opset 13: the input flattened to 2-D at axis
      break;
    }
    case RowOp::kLayerNorm: {
      // Mean and InvStdDev outputs, when present, must be unused (and not kept: the caller).
      for (size_t k = 1; k < n.outputs().size(); ++k)
        if (n.outputs()[k] && !n.outputs()[k]->uses().empty()) return std::nullopt;
      if (n.inputs().size() < 2 || !n.inputs()[1] || attr_int("stash_type", 1) != 1) return std::nullopt;
      int64_t axis = attr_int("axis", -1);
      if (axis < -rank || axis >= rank) return std::nullopt;
      first = axis < 0 ? axis + rank : axis;
      op.data.push_back(n.inputs()[1]);
      if (n.inputs().size() > 2 && n.inputs()[2]) op.data.push_back(n.inputs()[2]);
      if (const ir::Attribute* a = n.FindAttribute("epsilon"); a && a->kind == ir::Attribute::Kind::kFloat) op.epsilon = a->f;
      break;
    }
    case RowOp::kInstanceNorm: {
      // [N, C, spatial...]: a row per (n, c); scale and bias [C] are read once per row.
      if (n.outputs().size() != 1 || rank < 3 || n.inputs().size() < 3 || !n.inputs()[1] || !n.inputs()[2]) return std::nullopt;
      first = 2;
      op.data.push_back(n.inputs()[1]);
      op.data.push_back(n.inputs()[2]);
      if (const ir::Attribute* a = n.FindAttribute("epsilon"); a && a->kind == ir::Attribute::Kind::kFloat) op.epsilon = a->f;
      break;
    }
    default: {
      if (n.outputs().size() != 1) return std::nullopt;
      std::optional<std::vector<int64_t>> axes;
      if (const ir::Attribute* a = n.FindAttribute("axes")) {
        if (a->kind != ir::Attribute::Kind::kInts) return std::nullopt;
        axes = a->ints;
      } else if (n.inputs().size() > 1 && n.inputs()[1]) {
        axes = ConstantInts(n.inputs()[1]);
        if (!axes) return std::nullopt;
      } else {
        axes = std::vector<int64_t>{};
      }
      if (axes->empty()) {
        if (attr_int("noop_with_empty_axes", 0)) return std::nullopt;
        first = 0;
      } else {
        std::set<int64_t> set;
        for (int64_t a : *axes) {
          if (a < -rank || a >= rank) return std::nullopt;
          set.insert(a < 0 ? a + rank : a);
        }
        first = *set.begin();
        if (*set.rbegin() != rank - 1 || int64_t(set.size()) != rank - first) return std::nullopt;  // trailing axes only
      }
      op.keepdims = attr_int("keepdims", 1) != 0;
      break;
    }
  }
  op.trailing = int(rank - first);
  op.row = 1;
  for (int64_t k = first; k < rank; ++k) {
    if (!(*in)[size_t(k)].is_static()) return std::nullopt;
    op.row *= (*in)[size_t(k)].value();
  }
  if (op.row < 1 || op.row > fz::kMaxPeriod) return std::nullopt;
  bool reduction = op.kind == RowOp::kReduceSum || op.kind == RowOp::kReduceMean || op.kind == RowOp::kReduceMax;
  if (!reduction && *out != *in) return std::nullopt;
  for (size_t k = 1; k < op.data.size(); ++k) {
    if (!ShapeDims(op.data[k])) return std::nullopt;
  }
  return op;
}

// The dims input `i` of a row operation is read with, against its frame: its own, but for
// InstanceNormalization's scale and bias [C], which are per channel: [C, 1, ...] (not a numpy
// broadcast of [C]).
Dims ReadDims(const RowOp& op, size_t i, const ir::Value* v) {
  Dims d = *ShapeDims(v);
  if (op.kind == RowOp::kInstanceNorm && i > 0 && d.size() == 1) d.insert(d.end(), op.frame.size() - 2, ir::Dim::Static(1));
  return d;
}

// Whether `d` is `frame` with its last `trailing` dims as 1s (a row value in keepdims form).
bool RowShaped(const Dims& d, const Dims& frame, int trailing) {
  if (d.size() != frame.size() || trailing < 1 || size_t(trailing) > frame.size()) return false;
  size_t lead = frame.size() - size_t(trailing);
  for (size_t k = 0; k < d.size(); ++k)
    if (k < lead ? d[k] != frame[k] : !IsOne(d[k])) return false;
  return true;
}

struct Group {
  std::vector<ir::Node*> nodes;  // in graph order once finished
  bool alive = true;
  // Values the plan must keep (graph outputs, program outputs, state updates) computed inside the
  // group: extra outputs of the fused node (outputs 1, 2...).
  std::vector<ir::Value*> extra_outputs;
  // A row group (one with a RowOp): the row length, the frame's dims and the trailing dims the
  // row spans. Every member writes the frame, a row value (RowShaped) or, for a reduction without
  // keepdims read by no member, the frame without its trailing dims.
  int64_t row = 0;
  int trailing = 0;
  Dims frame;
};
constexpr size_t kMaxExtraOutputs = 7;
constexpr int kMaxRowOps = 3;

bool Transcendental(const ir::Node* n) {
  static const std::set<std::string> ops = {"Exp", "Erf", "Tanh", "Sigmoid", "Gelu"};
  return ops.count(n->op_type()) > 0;
}

// Whether `nodes` can be one row program over rows of `row` (see Group).
bool ValidRowGroup(const std::vector<ir::Node*>& nodes, int64_t row, int trailing, const Dims& frame,
                   const std::unordered_map<const ir::Node*, RowOp>& row_ops,
                   std::unordered_map<const ir::Node*, std::vector<ir::Value*>>& data_inputs) {
  std::set<const ir::Node*> members(nodes.begin(), nodes.end());
  int count = 0;
  size_t weight = 0;
  for (const ir::Node* m : nodes) {
    const ir::Value* out = m->outputs()[0];
    Dims o = *ShapeDims(out);
    if (auto ro = row_ops.find(m); ro != row_ops.end()) {
      ++count;
      weight += ro->second.kind == RowOp::kSoftmax || !ro->second.MultiPass() ? 6 : 18;
      if (ro->second.row != row || ro->second.trailing != trailing || ro->second.frame != frame) return false;
      if (!ro->second.keepdims)
        for (const ir::Use& u : out->uses())
          if (members.count(u.node)) return false;
    } else {
      weight += 3;
      if (o != frame && !RowShaped(o, frame, trailing)) return false;
    }
    auto ro = row_ops.find(m);
    for (size_t i = 0; i < data_inputs[m].size(); ++i) {
      const ir::Value* v = data_inputs[m][i];
      if ((v->producer() && members.count(v->producer())) || ScalarConstant(v)) continue;
      Dims vd = ro != row_ops.end() ? ReadDims(ro->second, i, v) : *ShapeDims(v);
      if (vd == frame) continue;
      auto per = Period(vd, frame);
      if (!per) return false;
      auto [inner, n] = *per;
      if (!(n == 1 || inner % row == 0 || (inner == 1 && n % row == 0))) return false;
    }
  }
  return count <= kMaxRowOps && weight <= fz::kMaxInstructions;
}

class Builder {
 public:
  // Adds the program for `nodes` (graph order); the last node's output is stored as output 0 and
  // each of `extra` (outputs of other members) as output 1, 2... after it. Every node of the group
  // writes the last node's dims or one element (groups grow only along such values), so each load
  // broadcasts relative to the last node's output (Period).
  // A row group (`group.row` > 0) becomes a row program: loads relative to the frame, each RowOp
  // written out with reductions, outputs stored per element or per row by their dims.
  void Build(const std::vector<ir::Node*>& nodes, const std::vector<ir::Value*>& extra, const Group& group,
             const std::unordered_map<const ir::Node*, RowOp>& row_ops) {
    out_dims_ = group.row ? group.frame : *ShapeDims(nodes.back()->outputs()[0]);
    group_ = &group;
    if (group.row) Emit({fz::Op::kRow, group.row, 0, 0});
    for (ir::Node* n : nodes) {
      std::vector<int64_t> regs;
      const std::string& op = n->op_type();
      auto row_op = row_ops.find(n);
      std::vector<ir::Value*> data = row_op != row_ops.end() ? row_op->second.data
                                     : op == "Clip"          ? std::vector<ir::Value*>{n->inputs()[0]}
                                                             : n->inputs();
      for (size_t i = 0; i < data.size(); ++i)
        regs.push_back(row_op != row_ops.end() ? Operand(data[i], ReadDims(row_op->second, i, data[i])) : Operand(data[i]));
      int64_t r = -1;
      if (row_op != row_ops.end()) {
        r = EmitRowOp(row_op->second, regs);
      } else if (auto b = BinaryOps().find(op); b != BinaryOps().end()) {
        r = Emit({b->second, regs[0], regs[1], 0});
      } else if (auto u = UnaryOps().find(op); u != UnaryOps().end()) {
        r = Emit({u->second, regs[0], 0, 0});
      } else if (op == "Gelu") {
        const ir::Attribute* a = n->FindAttribute("approximate");
        r = Emit({a && a->s == "tanh" ? fz::Op::kGeluTanh : fz::Op::kGeluErf, regs[0], 0, 0});
      } else if (op == "HardSigmoid" || op == "HardSwish") {
        // The kernels' formulas (activation.cc): clamp(alpha * x + beta, 0, 1), and
        // x * clamp(x / 6 + 0.5, 0, 1).
        auto attr = [&](const char* name, float fallback) {
          const ir::Attribute* a = n->FindAttribute(name);
          return a && a->kind == ir::Attribute::Kind::kFloat ? a->f : fallback;
        };
        if (op == "HardSigmoid") r = Emit({fz::Op::kMul, Emit({fz::Op::kConst, Const(attr("alpha", 0.2f)), 0, 0}), regs[0], 0});
        else r = Emit({fz::Op::kDiv, regs[0], Emit({fz::Op::kConst, Const(6.0f), 0, 0}), 0});
        r = Emit({fz::Op::kAdd, r, Emit({fz::Op::kConst, Const(op == "HardSigmoid" ? attr("beta", 0.5f) : 0.5f), 0, 0}), 0});
        r = Emit({fz::Op::kClipHigh, Emit({fz::Op::kClipLow, r, Const(0.0f), 0}), Const(1.0f), 0});
        if (op == "HardSwish") r = Emit({fz::Op::kMul, regs[0], r, 0});
      } else if (op == "LeakyRelu") {
        const ir::Attribute* a = n->FindAttribute("alpha");
        r = Emit({fz::Op::kLeakyRelu, regs[0], Const(a && a->kind == ir::Attribute::Kind::kFloat ? a->f : 0.01f), 0});
      } else if (op == "Clip") {
        r = regs[0];
        std::optional<float> lo, hi;
        if (n->inputs().size() > 1 && n->inputs()[1]) lo = ScalarConstant(n->inputs()[1]);
        if (n->inputs().size() > 2 && n->inputs()[2]) hi = ScalarConstant(n->inputs()[2]);
        if (const ir::Attribute* a = n->FindAttribute("min"); a && a->kind == ir::Attribute::Kind::kFloat) lo = a->f;
        if (const ir::Attribute* a = n->FindAttribute("max"); a && a->kind == ir::Attribute::Kind::kFloat) hi = a->f;
        if (lo) r = Emit({fz::Op::kClipLow, r, Const(*lo), 0});
        if (hi) r = Emit({fz::Op::kClipHigh, r, Const(*hi), 0});
      } else {  // Cast: the rounding below
        r = regs[0];
      }
      ir::DType t = n->outputs()[0]->type().dtype();
      int64_t row_dims = StoreRowDims(n->outputs()[0]);
      if (n == nodes.back()) {
        stores.push_back({fz::Op::kStore, 0, r, int64_t(ir::DTypeToOnnx(t)), row_dims});
      } else {
        // Stores go last (every load precedes every store); the store rounds by itself.
        if (auto e = std::find(extra.begin(), extra.end(), n->outputs()[0]); e != extra.end())
          stores.push_back({fz::Op::kStore, 1 + (e - extra.begin()), r, int64_t(ir::DTypeToOnnx(t)), row_dims});
        if (t != ir::DType::kF32) r = Emit({fz::Op::kRound, r, int64_t(ir::DTypeToOnnx(t)), 0});
      }
      regs_[n->outputs()[0]] = r;
    }
    for (const fz::Instr& st : stores) Emit(st);
  }
  std::vector<fz::Instr> stores;

  fz::Program program;
  std::vector<ir::Value*> inputs;

 private:
  int64_t Emit(fz::Instr in) {
    program.code.push_back(in);
    return int64_t(program.code.size()) - 1;
  }
  int64_t Const(float f) {
    for (size_t i = 0; i < program.consts.size(); ++i)
      if (std::memcmp(&program.consts[i], &f, 4) == 0) return int64_t(i);
    program.consts.push_back(f);
    return int64_t(program.consts.size()) - 1;
  }
  // The register holding `v` for a node of the group writing `out`.
  // `read`: the dims `v` is read with (ReadDims), when not its own.
  int64_t Operand(ir::Value* v, std::optional<Dims> read = std::nullopt) {
    if (read && *read == *ShapeDims(v)) read.reset();
    if (auto it = regs_.find(v); it != regs_.end() && !read) return it->second;
    int64_t r;
    if (auto k = ScalarConstant(v)) {
      r = Emit({fz::Op::kConst, Const(*k), 0, 0});
    } else {
      Dims dims = read ? *read : *ShapeDims(v);
      int64_t inner = 0, count = 0;
      if (dims != out_dims_) std::tie(inner, count) = *Period(dims, out_dims_);
      r = Emit({fz::Op::kLoad, int64_t(inputs.size()), int64_t(ir::DTypeToOnnx(v->type().dtype())), inner, count});
      inputs.push_back(v);
    }
    if (!read) regs_[v] = r;
    return r;
  }

  // A Store's field d for value `v` (fused_program.h): 0 for the frame's dims, else the trailing
  // dims of a row value (negative: dropped).
  int64_t StoreRowDims(const ir::Value* v) const {
    if (!group_->row) return 0;
    Dims d = *ShapeDims(v);
    if (d == group_->frame) return 0;
    if (RowShaped(d, group_->frame, group_->trailing)) return group_->trailing;
    return -group_->trailing;  // a reduction without keepdims (ValidRowGroup)
  }

  int64_t EmitRowOp(const RowOp& op, const std::vector<int64_t>& in) {
    auto k = [&](float v) { return Emit({fz::Op::kConst, Const(v), 0, 0}); };
    switch (op.kind) {
      case RowOp::kSoftmax: {
        // exp(x - max) / sum: the max's row is exactly 0 before exp, as the softmax kernels do.
        int64_t m = Emit({fz::Op::kReduceMax, in[0], 0, 0});
        int64_t e = Emit({fz::Op::kExp, Emit({fz::Op::kSub, in[0], m, 0}), 0, 0});
        return Emit({fz::Op::kDiv, e, Emit({fz::Op::kReduceSum, e, 0, 0}), 0});
      }
      case RowOp::kLayerNorm:
      case RowOp::kInstanceNorm: {
        // Two passes of statistics (mean, then mean squared deviation), then the fast kernel's
        // expression (x - mean) * inv_std * scale + bias (InstanceNormalization: scale and bias
        // of the row's channel).
        int64_t n = k(float(op.row));
        int64_t mean = Emit({fz::Op::kDiv, Emit({fz::Op::kReduceSum, in[0], 0, 0}), n, 0});
        int64_t d = Emit({fz::Op::kSub, in[0], mean, 0});
        int64_t var = Emit({fz::Op::kDiv, Emit({fz::Op::kReduceSum, Emit({fz::Op::kMul, d, d, 0}), 0, 0}), n, 0});
        int64_t inv = Emit({fz::Op::kReciprocal, Emit({fz::Op::kSqrt, Emit({fz::Op::kAdd, var, k(op.epsilon), 0}), 0, 0}), 0, 0});
        int64_t y = Emit({fz::Op::kMul, Emit({fz::Op::kMul, d, inv, 0}), in[1], 0});
        return Emit({fz::Op::kAdd, y, in.size() > 2 ? in[2] : k(0.0f), 0});
      }
      case RowOp::kReduceSum: return Emit({fz::Op::kReduceSum, in[0], 0, 0});
      case RowOp::kReduceMean: return Emit({fz::Op::kDiv, Emit({fz::Op::kReduceSum, in[0], 0, 0}), k(float(op.row)), 0});
      case RowOp::kReduceMax: return Emit({fz::Op::kReduceMax, in[0], 0, 0});
    }
    return in[0];
  }

  std::unordered_map<const ir::Value*, int64_t> regs_;
  Dims out_dims_;
  const Group* group_ = nullptr;
};

}  // namespace

std::vector<FusedGroup> FuseElementwise(ir::Graph& graph, const std::set<std::string>& keep, const FuseOptions& options) {
  std::set<const ir::Value*> outputs(graph.outputs().begin(), graph.outputs().end());
  for (const auto& v : graph.values())
    if (keep.count(v->name())) outputs.insert(v.get());
  std::vector<Group> groups;
  std::unordered_map<const ir::Node*, size_t> group_of;
  std::unordered_map<const ir::Node*, std::vector<ir::Value*>> data_inputs;
  std::unordered_map<const ir::Node*, RowOp> row_ops;
  // External inputs of a group (non-scalar-constant values read from outside it).
  auto external_inputs = [&](const Group& g) {
    std::set<const ir::Node*> members(g.nodes.begin(), g.nodes.end());
    std::set<const ir::Value*> ext;
    for (const ir::Node* n : g.nodes)
      for (const ir::Value* v : data_inputs[n])
        if (!(v->producer() && members.count(v->producer())) && !ScalarConstant(v)) ext.insert(v);
    return ext.size();
  };
  for (const auto& up : graph.nodes()) {
    ir::Node* n = up.get();
    std::optional<std::vector<ir::Value*>> data;
    std::optional<RowOp> row_op;
    if (options.rows) row_op = FindRowOp(*n, options.opset);
    // LayerNormalization's Mean and InvStdDev: fused only when absent or unused (FindRowOp) and
    // not kept.
    if (row_op)
      for (size_t k = 1; k < n->outputs().size(); ++k)
        if (n->outputs()[k] && outputs.count(n->outputs()[k])) row_op.reset();
    if (row_op) data = row_op->data;
    else data = FusableInputs(*n);
    if (!data) continue;
    data_inputs[n] = *data;
    size_t g = groups.size();
    groups.emplace_back();
    groups.back().nodes = {n};
    group_of[n] = g;
    if (row_op) {
      groups[g].row = row_op->row;
      groups[g].trailing = row_op->trailing;
      groups[g].frame = row_op->frame;
      row_ops[n] = *row_op;
      if (!ValidRowGroup(groups[g].nodes, groups[g].row, groups[g].trailing, groups[g].frame, row_ops, data_inputs)) {
        groups.pop_back();
        group_of.erase(n);
        row_ops.erase(n);
        continue;
      }
    }
    // Merges the group of v's producer into group g (n's), when every reader of v is in g and the
    // rules below allow it. Merging along values read only inside the group keeps the groups
    // free of cycles: every value of the producer's group is then read inside the two groups only.
    auto try_merge = [&](ir::Value* v) -> bool {
      if (v->kind() != ir::Value::Kind::kNodeOutput) return false;
      auto it = group_of.find(v->producer());
      if (it == group_of.end() || it->second == g) return false;
      bool only_here = std::all_of(v->uses().begin(), v->uses().end(), [&](const ir::Use& u) { return u.node == n; });
      // Elementwise groups also take a value read by several of their members (x in GELU's
      // x * (1 + erf(x / sqrt 2)) / 2): a group is then a DAG with one sink.
      bool inside = std::all_of(v->uses().begin(), v->uses().end(), [&](const ir::Use& u) {
        auto m = group_of.find(u.node);
        return m != group_of.end() && m->second == g;
      });
      if (!inside) return false;
      // A value the plan keeps joins only as an extra output of the group.
      bool kept = outputs.count(v) > 0;
      if (kept && groups[g].extra_outputs.size() >= kMaxExtraOutputs) return false;
      const Group& from_group = groups[it->second];
      Group merged;
      merged.nodes = from_group.nodes;
      merged.extra_outputs = from_group.extra_outputs;
      merged.nodes.insert(merged.nodes.end(), groups[g].nodes.begin(), groups[g].nodes.end());
      merged.extra_outputs.insert(merged.extra_outputs.end(), groups[g].extra_outputs.begin(), groups[g].extra_outputs.end());
      if (kept) merged.extra_outputs.push_back(v);
      if (from_group.row || groups[g].row) {
        if (!only_here) return false;
        // Row groups: one row and frame; every member fits it (ValidRowGroup). A row value
        // computed once per row may feed members that write the frame.
        const Group& r = from_group.row ? from_group : groups[g];
        if (from_group.row && groups[g].row && (from_group.row != groups[g].row || from_group.trailing != groups[g].trailing || from_group.frame != groups[g].frame))
          return false;
        merged.row = r.row;
        merged.trailing = r.trailing;
        merged.frame = r.frame;
        if (!ValidRowGroup(merged.nodes, merged.row, merged.trailing, merged.frame, row_ops, data_inputs)) return false;
        // An elementwise producer of a softmax or a layer norm is evaluated again in each of
        // their 3 passes over the row (a Reduce* has one): a cheap one (a residual Add, a scale, a mask) costs less than writing and
        // reading its result, an expensive one (exp, erf, tanh, sigmoid, GELU) does not. Such
        // producers stay a kernel of their own, as XLA keeps expensive producers out of reductions.
        if (!from_group.row && row_ops.count(n) && row_ops.at(n).MultiPass() &&
            std::any_of(from_group.nodes.begin(), from_group.nodes.end(), Transcendental))
          return false;
      } else {
        // A producer writing a broadcast operand (fewer elements than `n` writes) stays outside:
        // its values would be computed once per output element. A kept value needs the group's dims.
        auto vd = ShapeDims(v);
        if (kept && *vd != *ShapeDims(n->outputs()[0])) return false;
        if (*vd != *ShapeDims(n->outputs()[0]) && !IsScalar(*vd)) return false;
        if (merged.nodes.size() * 3 > fz::kMaxInstructions) return false;
      }
      if (external_inputs(merged) > kMaxGroupInputs || merged.extra_outputs.size() > kMaxExtraOutputs) return false;
      size_t from = it->second;
      for (ir::Node* m : groups[from].nodes) group_of[m] = g;
      groups[g] = std::move(merged);
      groups[from].alive = false;
      groups[from].nodes.clear();
      groups[from].extra_outputs.clear();
      return true;
    };
    // n's inputs first (the group is n alone); then, for elementwise groups, every member's
    // inputs again while the group grows (a value read by several members joins once all of
    // them are in). Row groups grow along n's own inputs only.
    for (bool grew = true; grew;) {
      grew = false;
      const std::vector<ir::Node*> members = groups[g].nodes;
      for (ir::Node* m : members)
        for (ir::Value* v : data_inputs[m])
          if (try_merge(v)) grew = true;
      if (groups[g].row) break;
    }
  }

  std::vector<ir::Node*> order;
  for (const auto& up : graph.nodes()) order.push_back(up.get());
  std::unordered_map<const ir::Node*, ir::Node*> root_to_fused;
  std::vector<ir::Node*> removal;
  std::vector<FusedGroup> fused;
  std::set<std::string> names;
  for (const auto& up : graph.nodes()) names.insert(up->name());
  // A lone node is fused only where it reads or writes FP16/BF16: the fast kernels convert 16-bit
  // data with scalar loads, generated code converts in vectors; lone FP32 nodes gain nothing.
  auto sixteen_bit = [](const ir::Node* n) {
    auto half = [](const ir::Value* v) { return v && v->type().is_tensor() && ir::IsHalfFloat(v->type().dtype()); };
    return std::any_of(n->inputs().begin(), n->inputs().end(), half) || std::any_of(n->outputs().begin(), n->outputs().end(), half);
  };
  for (Group& g : groups) {
    if (!g.alive || g.nodes.empty() || (g.nodes.size() < 2 && !sixteen_bit(g.nodes[0]) && !g.row)) continue;
    // One-element results (scalar arithmetic, mostly folded already) stay unfused: the fused
    // step's dims come from its full-size inputs.
    const ir::Node* last = *std::max_element(g.nodes.begin(), g.nodes.end(), [](const ir::Node* a, const ir::Node* b) { return a->index() < b->index(); });
    if (!g.row && IsScalar(*ShapeDims(last->outputs()[0]))) continue;
    std::sort(g.nodes.begin(), g.nodes.end(), [](const ir::Node* a, const ir::Node* b) { return a->index() < b->index(); });
    Builder b;
    b.Build(g.nodes, g.extra_outputs, g, row_ops);
    size_t reductions = 0;
    for (const ir::Node* n : g.nodes) reductions += row_ops.count(n);
    ir::Node* root = g.nodes.back();
    ir::Value* out = root->outputs()[0];
    FusedGroup info;
    for (const ir::Node* n : g.nodes) info.replaced.push_back(n->name());
    info.entry = b.program.EntryName();
    std::string name = "fused:" + root->name();
    for (int k = 2; names.count(name); ++k) name = "fused:" + root->name() + "." + std::to_string(k);
    names.insert(name);
    info.node = name;
    std::vector<ir::Attribute> attrs(4);
    attrs[0].name = "code";
    attrs[0].kind = ir::Attribute::Kind::kInts;
    attrs[0].ints = b.program.Encode();
    attrs[1].name = "consts";
    attrs[1].kind = ir::Attribute::Kind::kFloats;
    attrs[1].floats = b.program.consts;
    attrs[2].name = "entry";
    attrs[2].kind = ir::Attribute::Kind::kString;
    attrs[2].s = info.entry;
    attrs[3].name = "nodes";
    attrs[3].kind = ir::Attribute::Kind::kStrings;
    attrs[3].strings = info.replaced;
    graph.SetNodeOutput(root, 0, graph.NewValue(name + ":replaced"));
    std::vector<ir::Value*> fused_outputs = {out};
    for (ir::Value* e : g.extra_outputs) {
      graph.SetNodeOutput(e->producer(), e->output_index(), graph.NewValue(e->name() + ":replaced"));
      fused_outputs.push_back(e);
    }
    ir::Node* f = graph.AddNode("", "FusedElementwise", name, b.inputs, fused_outputs, std::move(attrs));
    f->mutable_precision().accumulate = ir::DType::kF32;
    f->mutable_precision().reason = "fused";
    f->mutable_precision().evidence = "fuses " + std::to_string(g.nodes.size()) +
                                      (reductions ? std::string(g.nodes.size() == 1 ? " node" : " nodes") + " (" + std::to_string(reductions) + " over rows of " +
                                                        std::to_string(g.row) + ")"
                                                  : g.nodes.size() == 1 ? " elementwise node" : " elementwise nodes");
    info.row = g.row;
    root_to_fused[root] = f;
    for (auto it = g.nodes.rbegin(); it != g.nodes.rend(); ++it) removal.push_back(*it);
    fused.push_back(std::move(info));
  }
  if (fused.empty()) return fused;
  std::set<const ir::Node*> removed(removal.begin(), removal.end());
  std::vector<ir::Node*> new_order;
  for (ir::Node* n : order) {
    if (auto it = root_to_fused.find(n); it != root_to_fused.end()) new_order.push_back(it->second);
    else if (!removed.count(n)) new_order.push_back(n);
  }
  // Each group's nodes go last to first: every value they read from each other loses its use
  // before its producer goes.
  for (ir::Node* n : removal) graph.RemoveNode(n);
  graph.SetNodeOrder(new_order);
  return fused;
}

}  // namespace precis::passes
