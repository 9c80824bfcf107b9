// ONNX TypeProto -> IR Type: tensors (element type + shape with static, symbolic and unknown
// dims), sequences and optionals. Maps and sparse tensor types are refused as unsupported.
#include "compiler/ir/dim_expr.h"
#include "compiler/onnx/import_internal.h"

namespace precis::onnx {

StatusOr<ir::Type> ImportType(const ::onnx::TypeProto& proto, const std::string& what) {
  using ::onnx::TypeProto;
  switch (proto.value_case()) {
    case TypeProto::kTensorType: {
      const auto& tt = proto.tensor_type();
      ir::DType dtype = ir::DType::kUndefined;
      if (tt.elem_type() != 0) {
        auto d = ir::DTypeFromOnnx(tt.elem_type());
        if (!d.ok()) return d.status().WithContext(what);
        dtype = *d;
      }
      if (!tt.has_shape()) return ir::Type::Tensor(dtype, ir::Shape());
      std::vector<ir::Dim> dims;
      for (int i = 0; i < tt.shape().dim_size(); ++i) {
        const auto& d = tt.shape().dim(i);
        if (d.has_dim_value()) {
          if (d.dim_value() < 0 || d.dim_value() > ir::kMaxDim)
            return InvalidArgument(what + ": dimension " + std::to_string(i) + " is " +
                                   std::to_string(d.dim_value()) + ", outside [0, 2^40]");
          dims.push_back(ir::Dim::Static(d.dim_value()));
        } else if (d.has_dim_param() && !d.dim_param().empty()) {
          // A dim_param that reads as an expression ("batch", "2*seq") keeps it in canonical
          // form; any other text becomes a plain symbol name ("batch size" -> "batch_size").
          // Value symbols ("$0_1") and the atoms of run-time values (eq, neg, div, min, max) are
          // the compiler's own: such a text is a plain name too.
          auto e = ir::DimExpr::Parse(d.dim_param());
          if (e && e->HasValueSymbols()) e.reset();
          if (e)
            for (const std::string& a : e->Atoms())
              if (!ir::DimExpr::ParseAtom(a)) e.reset();
          dims.push_back(e ? e->ToDim() : ir::Dim::Symbolic(ir::SymbolName(d.dim_param())));
        } else {
          dims.push_back(ir::Dim());
        }
      }
      // Each dim may be in range while their product is not (it may even overflow int64).
      std::vector<int64_t> static_dims;
      for (const ir::Dim& d : dims)
        if (d.is_static()) static_dims.push_back(d.value());
      if (!ir::CheckedElements(static_dims))
        return InvalidArgument(what + ": shape holds more than 2^50 elements");
      return ir::Type::Tensor(dtype, ir::Shape(std::move(dims)));
    }
    case TypeProto::kSequenceType: {
      ir::Type elem;
      if (proto.sequence_type().has_elem_type()) {
        PRECIS_ASSIGN_OR_RETURN(elem, ImportType(proto.sequence_type().elem_type(), what));
      }
      return ir::Type::Sequence(std::move(elem));
    }
    case TypeProto::kOptionalType: {
      ir::Type elem;
      if (proto.optional_type().has_elem_type()) {
        PRECIS_ASSIGN_OR_RETURN(elem, ImportType(proto.optional_type().elem_type(), what));
      }
      return ir::Type::Optional(std::move(elem));
    }
    case TypeProto::kMapType:
      return Unimplemented(what + ": map types are not supported");
    case TypeProto::kSparseTensorType:
      return Unimplemented(what + ": sparse tensor types are not supported");
    case TypeProto::kOpaqueType:
      return Unimplemented(what + ": opaque types are not supported");
    case TypeProto::VALUE_NOT_SET:
      break;
  }
  return ir::Type();
}

}  // namespace precis::onnx
