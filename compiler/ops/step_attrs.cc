// IR attributes -> plan::Attr tables.
#include "compiler/ops/step_attrs.h"

#include <algorithm>

namespace precis::ops {

flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<plan::Attr>>> BuildStepAttrs(
    flatbuffers::FlatBufferBuilder& b, const ir::Node& node, int64_t opset) {
  using K = ir::Attribute::Kind;
  std::vector<const ir::Attribute*> attrs;
  for (const auto& a : node.attributes())
    if (a.kind != K::kGraph && a.kind != K::kGraphs && a.kind != K::kType && a.kind != K::kTypes && a.kind != K::kTensors)
      attrs.push_back(&a);
  std::sort(attrs.begin(), attrs.end(), [](const auto* x, const auto* y) { return x->name < y->name; });
  std::vector<flatbuffers::Offset<plan::Attr>> out;
  bool opset_added = false;
  auto add_opset = [&] {
    auto name = b.CreateString("opset");
    plan::AttrBuilder ab(b);
    ab.add_name(name);
    ab.add_kind(plan::AttrKind_Int);
    ab.add_i(opset);
    out.push_back(ab.Finish());
    opset_added = true;
  };
  for (const ir::Attribute* a : attrs) {
    if (!opset_added && a->name > "opset") add_opset();
    if (a->name == "opset") continue;  // ours wins; no ONNX operator has such an attribute
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
  if (!opset_added) add_opset();
  return b.CreateVector(out);
}

}  // namespace precis::ops
