// ONNX AttributeProto -> IR Attribute (subgraphs are imported by the caller's callback so that
// they see the enclosing scope). Old models that leave `type` unset get it from the field set.
#include "compiler/onnx/attribute_import.h"

namespace precis::onnx {
namespace {

using ::onnx::AttributeProto;
using K = ir::Attribute::Kind;

AttributeProto::AttributeType InferType(const AttributeProto& a) {
  if (a.has_f()) return AttributeProto::FLOAT;
  if (a.has_i()) return AttributeProto::INT;
  if (a.has_s()) return AttributeProto::STRING;
  if (a.has_t()) return AttributeProto::TENSOR;
  if (a.has_g()) return AttributeProto::GRAPH;
  if (a.has_sparse_tensor()) return AttributeProto::SPARSE_TENSOR;
  if (a.has_tp()) return AttributeProto::TYPE_PROTO;
  if (a.floats_size()) return AttributeProto::FLOATS;
  if (a.ints_size()) return AttributeProto::INTS;
  if (a.strings_size()) return AttributeProto::STRINGS;
  if (a.tensors_size()) return AttributeProto::TENSORS;
  if (a.graphs_size()) return AttributeProto::GRAPHS;
  if (a.type_protos_size()) return AttributeProto::TYPE_PROTOS;
  return AttributeProto::UNDEFINED;
}

}  // namespace

StatusOr<ir::Attribute> ImportAttribute(AttributeProto& a, ImportContext& ctx, const std::string& node,
                                        const SubgraphImporter& import_graph) {
  std::string what = node + " attribute '" + a.name() + "'";
  if (a.name().empty()) return InvalidArgument(node + ": an attribute has no name");
  if (!a.ref_attr_name().empty())
    return Unimplemented(what + ": attribute references (ref_attr_name) are only valid inside functions");
  ir::Attribute out;
  out.name = a.name();
  auto type = a.type() != AttributeProto::UNDEFINED ? a.type() : InferType(a);
  switch (type) {
    case AttributeProto::FLOAT: out.kind = K::kFloat; out.f = a.f(); break;
    case AttributeProto::INT: out.kind = K::kInt; out.i = a.i(); break;
    case AttributeProto::STRING: out.kind = K::kString; out.s = a.s(); break;
    case AttributeProto::TENSOR: {
      out.kind = K::kTensor;
      PRECIS_ASSIGN_OR_RETURN(out.t, ImportTensor(*a.mutable_t(), ctx, what));
      break;
    }
    case AttributeProto::GRAPH: {
      out.kind = K::kGraph;
      PRECIS_ASSIGN_OR_RETURN(auto g, import_graph(*a.mutable_g(), what));
      out.graphs.push_back(std::move(g));
      break;
    }
    case AttributeProto::TYPE_PROTO: {
      out.kind = K::kType;
      PRECIS_ASSIGN_OR_RETURN(out.type, ImportType(a.tp(), what));
      break;
    }
    case AttributeProto::FLOATS: out.kind = K::kFloats; out.floats.assign(a.floats().begin(), a.floats().end()); break;
    case AttributeProto::INTS: out.kind = K::kInts; out.ints.assign(a.ints().begin(), a.ints().end()); break;
    case AttributeProto::STRINGS: out.kind = K::kStrings; out.strings.assign(a.strings().begin(), a.strings().end()); break;
    case AttributeProto::TENSORS:
      out.kind = K::kTensors;
      for (int i = 0; i < a.tensors_size(); ++i) {
        PRECIS_ASSIGN_OR_RETURN(ir::Tensor t, ImportTensor(*a.mutable_tensors(i), ctx, what));
        out.tensors.push_back(std::move(t));
      }
      break;
    case AttributeProto::GRAPHS:
      out.kind = K::kGraphs;
      for (int i = 0; i < a.graphs_size(); ++i) {
        PRECIS_ASSIGN_OR_RETURN(auto g, import_graph(*a.mutable_graphs(i), what));
        out.graphs.push_back(std::move(g));
      }
      break;
    case AttributeProto::TYPE_PROTOS:
      out.kind = K::kTypes;
      for (const auto& tp : a.type_protos()) {
        PRECIS_ASSIGN_OR_RETURN(ir::Type t, ImportType(tp, what));
        out.types.push_back(std::move(t));
      }
      break;
    case AttributeProto::SPARSE_TENSOR:
    case AttributeProto::SPARSE_TENSORS:
      return Unimplemented(what + ": sparse tensor attributes are only supported on Constant");
    case AttributeProto::UNDEFINED:
      return InvalidArgument(what + ": attribute has no type and no value");
  }
  return out;
}

}  // namespace precis::onnx
