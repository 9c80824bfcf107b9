// OpRegistry and InferContext: lookup of operator semantics and the accessors shape inference
// functions use. Shared shape helpers (broadcasting, axes) live here too.
#include "compiler/ops/op_registry.h"

#include <algorithm>
#include <cstring>

#include "runtime/base/half.h"

namespace precis::ops {

const char* PrecisionClassName(PrecisionClass c) {
  switch (c) {
    case PrecisionClass::kCompute: return "compute";
    case PrecisionClass::kFollow: return "follow";
    case PrecisionClass::kPassthrough: return "passthrough";
    case PrecisionClass::kKeepFp32: return "keep-fp32";
    case PrecisionClass::kUntouched: return "untouched";
    case PrecisionClass::kUnclassified: break;
  }
  return "unclassified";
}

const ir::Type& InferContext::input_type(size_t i) const {
  static const ir::Type kUnknown;
  return has_input(i) ? node_.inputs()[i]->type() : kUnknown;
}

StatusOr<std::vector<ir::Dim>> InferContext::InputDims(size_t i) const {
  if (!has_input(i)) return Error("input " + std::to_string(i) + " is missing");
  const ir::Type& t = input_type(i);
  if (!t.is_tensor() || !t.shape().has_rank())
    return Unsupported("input " + std::to_string(i) + " ('" + node_.inputs()[i]->name() + "') has no known shape");
  return t.shape().dims();
}

const ir::Tensor* InferContext::input_constant(size_t i) const {
  if (!has_input(i)) return nullptr;
  const ir::Value* v = node_.inputs()[i];
  return v->is_constant() && v->data()->has_data() ? v->data() : nullptr;
}

StatusOr<std::vector<int64_t>> InferContext::ConstantInts(size_t i) const {
  const ir::Tensor* t = input_constant(i);
  if (!t) {
    std::string name = has_input(i) ? node_.inputs()[i]->name() : "?";
    return Unsupported("needs the value of input " + std::to_string(i) + " ('" + name +
                       "') at compile time, but it is computed at run time");
  }
  std::vector<int64_t> out(size_t(t->NumElements()));
  const uint8_t* p = t->buffer().data();
  for (size_t k = 0; k < out.size(); ++k) {
    switch (t->dtype()) {
      case ir::DType::kI64: { int64_t v; std::memcpy(&v, p + k * 8, 8); out[k] = v; break; }
      case ir::DType::kI32: { int32_t v; std::memcpy(&v, p + k * 4, 4); out[k] = v; break; }
      case ir::DType::kI16: { int16_t v; std::memcpy(&v, p + k * 2, 2); out[k] = v; break; }
      case ir::DType::kI8: out[k] = int8_t(p[k]); break;
      case ir::DType::kU8: case ir::DType::kBool: out[k] = p[k]; break;
      case ir::DType::kU16: { uint16_t v; std::memcpy(&v, p + k * 2, 2); out[k] = v; break; }
      case ir::DType::kU32: { uint32_t v; std::memcpy(&v, p + k * 4, 4); out[k] = v; break; }
      case ir::DType::kU64: { uint64_t v; std::memcpy(&v, p + k * 8, 8); out[k] = int64_t(v); break; }
      default: return Error("input " + std::to_string(i) + " must be an integer tensor");
    }
  }
  return out;
}

StatusOr<std::vector<double>> InferContext::ConstantFloats(size_t i) const {
  const ir::Tensor* t = input_constant(i);
  if (!t) return Unsupported("needs the value of input " + std::to_string(i) + " at compile time");
  std::vector<double> out(size_t(t->NumElements()));
  const uint8_t* p = t->buffer().data();
  for (size_t k = 0; k < out.size(); ++k) {
    switch (t->dtype()) {
      case ir::DType::kF32: { float v; std::memcpy(&v, p + k * 4, 4); out[k] = v; break; }
      case ir::DType::kF64: { double v; std::memcpy(&v, p + k * 8, 8); out[k] = v; break; }
      case ir::DType::kF16: { uint16_t v; std::memcpy(&v, p + k * 2, 2); out[k] = HalfToFloat(v); break; }
      case ir::DType::kBF16: { uint16_t v; std::memcpy(&v, p + k * 2, 2); out[k] = Bf16ToFloat(v); break; }
      default: {
        PRECIS_ASSIGN_OR_RETURN(auto ints, ConstantInts(i));
        return std::vector<double>(ints.begin(), ints.end());
      }
    }
  }
  return out;
}

StatusOr<std::vector<ir::DimExpr>> InferContext::ShapeValues(size_t i) const {
  if (has_input(i) && !input_constant(i))
    if (const std::vector<ir::DimExpr>* known = node_.inputs()[i]->known_values()) return *known;
  PRECIS_ASSIGN_OR_RETURN(auto ints, ConstantInts(i));
  std::vector<ir::DimExpr> out;
  for (int64_t v : ints) out.push_back(ir::DimExpr::Constant(v));
  return out;
}

int64_t InferContext::Int(const char* name, int64_t fallback) const {
  const ir::Attribute* a = attr(name);
  return a && a->kind == ir::Attribute::Kind::kInt ? a->i : fallback;
}
float InferContext::Float(const char* name, float fallback) const {
  const ir::Attribute* a = attr(name);
  return a && a->kind == ir::Attribute::Kind::kFloat ? a->f : fallback;
}
std::string InferContext::String(const char* name, const std::string& fallback) const {
  const ir::Attribute* a = attr(name);
  return a && a->kind == ir::Attribute::Kind::kString ? a->s : fallback;
}
std::optional<std::vector<int64_t>> InferContext::Ints(const char* name) const {
  const ir::Attribute* a = attr(name);
  if (!a || a->kind != ir::Attribute::Kind::kInts) return std::nullopt;
  return a->ints;
}

void InferContext::SetOutput(size_t i, ir::Type type) {
  if (outputs_.size() <= i) outputs_.resize(i + 1);
  outputs_[i] = std::move(type);
}

Status InferContext::Error(const std::string& message) const { return InvalidArgument(node_.Describe() + ": " + message); }
Status InferContext::Unsupported(const std::string& message) const { return Unimplemented(node_.Describe() + ": " + message); }

void OpRegistry::Register(OpDef def) {
  auto key = [](const OpDef& d) { return std::make_pair(d.domain, d.op_type); };
  auto it = std::lower_bound(defs_.begin(), defs_.end(), def, [&](const OpDef& a, const OpDef& b) { return key(a) < key(b); });
  if (it != defs_.end() && key(*it) == key(def)) *it = std::move(def);
  else defs_.insert(it, std::move(def));
}

const OpDef* OpRegistry::Find(const std::string& domain, const std::string& op_type) const {
  auto k = std::make_pair(domain, op_type);
  auto it = std::lower_bound(defs_.begin(), defs_.end(), k,
                             [](const OpDef& a, const std::pair<std::string, std::string>& b) { return std::make_pair(a.domain, a.op_type) < b; });
  return it != defs_.end() && it->domain == domain && it->op_type == op_type ? &*it : nullptr;
}

std::vector<const OpDef*> OpRegistry::All() const {
  std::vector<const OpDef*> out;
  for (const auto& d : defs_) out.push_back(&d);
  return out;
}

const OpRegistry& OpRegistry::Get() {
  static const OpRegistry registry = [] {
    OpRegistry r;
    RegisterElementwiseOps(r);
    RegisterMatMulOps(r);
    RegisterQuantizeOps(r);
    RegisterSignalOps(r);
    RegisterImageOps(r);
    RegisterMlOps(r);
    RegisterActivationOps(r);
    RegisterNnOps(r);
    RegisterTensorOps(r);
    RegisterReduceOps(r);
    RegisterLossOps(r);
    RegisterTrainingOps(r);
    RegisterRecurrentOps(r);
    RegisterControlFlowOps(r);
    RegisterFusedOps(r);
    return r;
  }();
  return registry;
}

StatusOr<std::vector<ir::Dim>> BroadcastDims(const std::vector<ir::Dim>& a, const std::vector<ir::Dim>& b) {
  size_t rank = std::max(a.size(), b.size());
  std::vector<ir::Dim> out(rank);
  for (size_t i = 0; i < rank; ++i) {
    const ir::Dim* x = i < rank - a.size() ? nullptr : &a[i - (rank - a.size())];
    const ir::Dim* y = i < rank - b.size() ? nullptr : &b[i - (rank - b.size())];
    if (!x) { out[i] = *y; continue; }
    if (!y) { out[i] = *x; continue; }
    if (x->is_static() && x->value() == 1) out[i] = *y;
    else if (y->is_static() && y->value() == 1) out[i] = *x;
    else if (*x == *y) out[i] = *x;
    else if (x->is_static() && y->is_static())
      return InvalidArgument("shapes cannot broadcast: dimension " + std::to_string(i) + " is " +
                             std::to_string(x->value()) + " vs " + std::to_string(y->value()));
    else out[i] = x->is_static() ? *x : y->is_static() ? *y : ir::Dim();
  }
  return out;
}

StatusOr<int64_t> NormalizeAxis(int64_t axis, int64_t rank, const InferContext& ctx) {
  if (axis < -rank || axis >= std::max<int64_t>(rank, 1))
    return ctx.Error("axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
  return axis < 0 ? axis + rank : axis;
}

std::vector<ir::Dim> StaticDims(const std::vector<int64_t>& dims) {
  std::vector<ir::Dim> out;
  for (int64_t d : dims) out.push_back(ir::Dim::Static(d));
  return out;
}

}  // namespace precis::ops
