// IR attributes -> plan::Attr tables, in kernel form (see step_attrs.h).
#include "compiler/ops/step_attrs.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <set>

#include "compiler/ops/shape_values.h"

namespace precis::ops {
namespace {

using K = ir::Attribute::Kind;

// The normalized attribute set of a node: its own attributes (graphs and types dropped), with the
// version differences of its operator rewritten into explicit attributes.
class KernelFormAttrs {
 public:
  KernelFormAttrs(const ir::Node& node, int64_t opset, const std::vector<std::pair<std::string, int64_t>>& extra) {
    for (const auto& a : node.attributes())
      if (a.kind != K::kGraph && a.kind != K::kGraphs && a.kind != K::kType && a.kind != K::kTypes && a.kind != K::kTensors)
        attrs_.push_back(&a);
    Normalize(node, opset);
    for (const auto& [name, value] : extra) SetInt(name, value);
    std::sort(attrs_.begin(), attrs_.end(), [](const auto* x, const auto* y) { return x->name < y->name; });
  }
  const std::vector<const ir::Attribute*>& attrs() const { return attrs_; }

 private:
  const ir::Attribute* Find(const std::string& name) const {
    for (const ir::Attribute* a : attrs_)
      if (a->name == name) return a;
    return nullptr;
  }
  void Drop(const std::string& name) {
    attrs_.erase(std::remove_if(attrs_.begin(), attrs_.end(), [&](const ir::Attribute* a) { return a->name == name; }), attrs_.end());
  }
  ir::Attribute& Set(const std::string& name, K kind) {
    Drop(name);
    ir::Attribute& a = owned_.emplace_back();
    a.name = name;
    a.kind = kind;
    attrs_.push_back(&a);
    return a;
  }
  void SetInt(const std::string& name, int64_t v) { Set(name, K::kInt).i = v; }
  void SetFloat(const std::string& name, float v) { Set(name, K::kFloat).f = v; }
  void SetString(const std::string& name, std::string v) { Set(name, K::kString).s = std::move(v); }
  int64_t IntOr(const std::string& name, int64_t fallback) const {
    const ir::Attribute* a = Find(name);
    return a && a->kind == K::kInt ? a->i : fallback;
  }
  float FloatOr(const std::string& name, float fallback) const {
    const ir::Attribute* a = Find(name);
    return a && a->kind == K::kFloat ? a->f : fallback;
  }

  // One rule per operator whose meaning changed between versions. What a kernel reads instead:
  //   Softmax/LogSoftmax/Hardmax: "axis" always present; "coerce_2d" 1 before opset 13 (the input
  //     flattened to 2-D at axis).
  //   Clip before 11: "min" and "max" always present (attribute form; from 11 they are inputs).
  //   PRelu before 7: "slope_per_channel" 1 (a 1-D slope of X's dim-1 size is per channel).
  //   GroupNormalization before 21: "per_group_params" 1 (scale and bias have one value per group).
  //   Shape before 15: no "start"/"end".
  //   Pad before 2: "paddings" renamed "pads" (before 11 the pads are an attribute; from 11 inputs).
  //   Resize 10: "coordinate_transformation_mode" "asymmetric", "nearest_mode" "simple" (plain
  //     floor-style rounding of that version), and inputs in the opset-11 order (see
  //     KernelInputOrder).
  //   RoiAlign before 16: "coordinate_transformation_mode" "output_half_pixel" (no half-pixel
  //     shift; the attribute and its "half_pixel" default came with 16).
  // Forms told apart by which attributes exist need no rule: Reduce* "axes" (attribute before
  // ReduceSum 13 / the others 18, then input 1), Slice "starts"/"ends"/"axes" (attributes before
  // 10), Upsample "scales" (attribute before 9), TopK "k" (attribute before 10).
  void Normalize(const ir::Node& n, int64_t opset) {
    const std::string& op = n.op_type();
    if (!n.domain().empty()) return;
    if (op == "NonZero" || op == "Compress" || op == "Unique" || op == "NonMaxSuppression" || op == "Loop")
      if (auto axis = DataDimAxis(n)) SetInt("data_dim_axis", int64_t(*axis));  // plan.fbs Plan.data_symbols
    if (op == "Softmax" || op == "LogSoftmax" || op == "Hardmax") {
      SetInt("axis", IntOr("axis", opset < 13 ? 1 : -1));
      if (opset < 13) SetInt("coerce_2d", 1);
    } else if (op == "Clip" && opset < 11) {
      float lo = FloatOr("min", -INFINITY), hi = FloatOr("max", INFINITY);
      SetFloat("min", lo);
      SetFloat("max", hi);
    } else if (op == "PRelu" && opset < 7) {
      SetInt("slope_per_channel", 1);
    } else if (op == "GroupNormalization" && opset < 21) {
      SetInt("per_group_params", 1);
    } else if (op == "Shape" && opset < 15) {
      Drop("start");
      Drop("end");
    } else if (op == "Pad" && opset < 2) {
      if (const ir::Attribute* p = Find("paddings")) {
        std::vector<int64_t> pads = p->ints;
        Set("pads", K::kInts).ints = std::move(pads);
        Drop("paddings");
      }
    } else if (op == "Resize" && opset < 11) {
      SetString("coordinate_transformation_mode", "asymmetric");
      SetString("nearest_mode", "simple");
    } else if (op == "RoiAlign" && opset < 16) {
      SetString("coordinate_transformation_mode", "output_half_pixel");
    }
  }

  std::vector<const ir::Attribute*> attrs_;
  std::deque<ir::Attribute> owned_;
};

}  // namespace

std::vector<int> KernelInputOrder(const ir::Node& node, int64_t opset) {
  std::vector<int> order;
  for (size_t i = 0; i < node.inputs().size(); ++i) order.push_back(int(i));
  // Resize 10 has (X, scales); the kernel form is the later (X, roi, scales, sizes).
  if (node.domain().empty() && node.op_type() == "Resize" && opset < 11 && order.size() == 2) order = {0, -1, 1};
  return order;
}

flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<plan::Attr>>> BuildStepAttrs(
    flatbuffers::FlatBufferBuilder& b, const ir::Node& node, int64_t opset, const std::vector<std::pair<std::string, int64_t>>& extra) {
  KernelFormAttrs form(node, opset, extra);
  std::vector<flatbuffers::Offset<plan::Attr>> out;
  for (const ir::Attribute* a : form.attrs()) {
    auto name = b.CreateString(a->name);
    flatbuffers::Offset<flatbuffers::String> s;
    flatbuffers::Offset<flatbuffers::Vector<int64_t>> ints, tdims;
    flatbuffers::Offset<flatbuffers::Vector<float>> floats;
    flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<flatbuffers::String>>> strings;
    flatbuffers::Offset<flatbuffers::Vector<uint8_t>> tdata;
    plan::AttrKind kind = plan::AttrKind_Int;
    switch (a->kind) {
      case K::kInt: kind = plan::AttrKind_Int; break;
      case K::kFloat: kind = plan::AttrKind_Float; break;
      case K::kString: kind = plan::AttrKind_String; s = b.CreateString(a->s); break;
      case K::kInts: kind = plan::AttrKind_Ints; ints = b.CreateVector(a->ints); break;
      case K::kFloats: kind = plan::AttrKind_Floats; floats = b.CreateVector(a->floats); break;
      case K::kStrings: kind = plan::AttrKind_Strings; strings = b.CreateVectorOfStrings(a->strings); break;
      case K::kTensor:
        kind = plan::AttrKind_Tensor;
        tdims = b.CreateVector(a->t.dims());
        if (a->t.has_data() && a->t.dtype() != ir::DType::kString)
          tdata = b.CreateVector(a->t.buffer().data(), a->t.buffer().size());
        break;
      default: break;
    }
    plan::AttrBuilder ab(b);
    ab.add_name(name);
    ab.add_kind(kind);
    if (a->kind == K::kInt) ab.add_i(a->i);
    if (a->kind == K::kFloat) ab.add_f(a->f);
    if (!s.IsNull()) ab.add_s(s);
    if (!ints.IsNull()) ab.add_ints(ints);
    if (!floats.IsNull()) ab.add_floats(floats);
    if (!strings.IsNull()) ab.add_strings(strings);
    if (a->kind == K::kTensor) {
      ab.add_tensor_dtype(uint8_t(ir::DTypeToOnnx(a->t.dtype())));
      ab.add_tensor_dims(tdims);
      if (!tdata.IsNull()) ab.add_tensor_data(tdata);
    }
    out.push_back(ab.Finish());
  }
  return b.CreateVector(out);
}

}  // namespace precis::ops
