// Operator semantics: indexing (Gather, GatherElements, GatherND, ScatterND, ScatterElements,
// OneHot, Compress, NonZero, ReverseSequence) and generators (ConstantOfShape, Range, EyeLike,
// Trilu). Compress and NonZero have output shapes that depend on data values: they compile
// only when those values are constants (the whole node then usually folds away).
#include <cmath>
#include <cstring>

#include "compiler/ops/op_registry.h"
#include "compiler/ops/shape_values.h"
#include "compiler/ops/tensor_infer.h"
#include "runtime/base/value_expr.h"

namespace precis::ops {
namespace {

using ir::Dim;

bool IsIndexDType(ir::DType t) { return t == ir::DType::kI32 || t == ir::DType::kI64; }

Status CheckIndices(InferContext& ctx, size_t i) {
  if (!IsIndexDType(ctx.input_dtype(i)))
    return ctx.Error("indices must be int32 or int64, not " + std::string(ir::DTypeName(ctx.input_dtype(i))));
  return Status::Ok();
}

Status InferGather(InferContext& ctx) {
  PRECIS_ASSIGN_OR_RETURN(auto data, ctx.InputDims(0));
  PRECIS_ASSIGN_OR_RETURN(auto indices, ctx.InputDims(1));
  PRECIS_RETURN_IF_ERROR(CheckIndices(ctx, 1));
  if (data.empty()) return ctx.Error("data must have rank >= 1");
  PRECIS_ASSIGN_OR_RETURN(int64_t axis, NormalizeAxis(ctx.Int("axis", 0), int64_t(data.size()), ctx));
  std::vector<Dim> out(data.begin(), data.begin() + axis);
  out.insert(out.end(), indices.begin(), indices.end());
  out.insert(out.end(), data.begin() + axis + 1, data.end());
  ctx.SetOutput(0, ctx.input_dtype(0), out);
  return Status::Ok();
}

Status InferGatherElements(InferContext& ctx) {
  PRECIS_ASSIGN_OR_RETURN(auto data, ctx.InputDims(0));
  PRECIS_ASSIGN_OR_RETURN(auto indices, ctx.InputDims(1));
  PRECIS_RETURN_IF_ERROR(CheckIndices(ctx, 1));
  if (data.empty() || indices.size() != data.size()) return ctx.Error("data and indices must have the same rank >= 1");
  PRECIS_ASSIGN_OR_RETURN(int64_t axis, NormalizeAxis(ctx.Int("axis", 0), int64_t(data.size()), ctx));
  (void)axis;
  ctx.SetOutput(0, ctx.input_dtype(0), indices);
  return Status::Ok();
}

Status InferGatherND(InferContext& ctx) {
  PRECIS_ASSIGN_OR_RETURN(auto data, ctx.InputDims(0));
  PRECIS_ASSIGN_OR_RETURN(auto indices, ctx.InputDims(1));
  if (ctx.input_dtype(1) != ir::DType::kI64) return ctx.Error("indices must be int64");
  int64_t b = ctx.opset() >= 12 ? ctx.Int("batch_dims", 0) : 0;
  if (indices.empty() || data.empty()) return ctx.Error("data and indices must have rank >= 1");
  if (!indices.back().is_static()) return ctx.Unsupported("the last dim of indices must be static");
  int64_t k = indices.back().value(), r = int64_t(data.size()), q = int64_t(indices.size());
  if (b < 0 || b >= std::min(r, q) || b + k > r)
    return ctx.Error("batch_dims " + std::to_string(b) + " and index length " + std::to_string(k) + " do not fit data rank " + std::to_string(r));
  std::vector<Dim> out(indices.begin(), indices.end() - 1);
  out.insert(out.end(), data.begin() + b + k, data.end());
  ctx.SetOutput(0, ctx.input_dtype(0), out);
  return Status::Ok();
}

Status CheckReduction(InferContext& ctx) {
  std::string reduction = ctx.String("reduction", "none");
  if (reduction != "none" && reduction != "add" && reduction != "mul" && reduction != "max" && reduction != "min")
    return ctx.Error("unknown reduction '" + reduction + "'");
  if (reduction != "none" && ctx.input_dtype(0) == ir::DType::kBool) return ctx.Unsupported("reduction '" + reduction + "' on bool data");
  return Status::Ok();
}

Status InferScatterND(InferContext& ctx) {
  PRECIS_ASSIGN_OR_RETURN(auto data, ctx.InputDims(0));
  PRECIS_ASSIGN_OR_RETURN(auto indices, ctx.InputDims(1));
  PRECIS_ASSIGN_OR_RETURN(auto updates, ctx.InputDims(2));
  if (ctx.input_dtype(1) != ir::DType::kI64) return ctx.Error("indices must be int64");
  if (ctx.input_dtype(2) != ctx.input_dtype(0)) return ctx.Error("updates and data dtypes differ");
  if (indices.empty() || !indices.back().is_static()) return ctx.Unsupported("indices need a static last dim");
  int64_t k = indices.back().value();
  if (k > int64_t(data.size())) return ctx.Error("index length " + std::to_string(k) + " exceeds the data rank");
  if (updates.size() != indices.size() - 1 + data.size() - size_t(k)) return ctx.Error("updates has the wrong rank");
  PRECIS_RETURN_IF_ERROR(CheckReduction(ctx));
  ctx.SetOutput(0, ctx.input_type(0));
  return Status::Ok();
}

// TensorScatter (opset 24): a KV-cache update. past_cache [batch, ..., max_seq, ...] with update
// [batch, ..., seq, ...] written at write_indices[batch] (default 0) along `axis` (default -2),
// modulo max_seq in mode "circular". The output has the cache's type.
Status InferTensorScatter(InferContext& ctx) {
  PRECIS_ASSIGN_OR_RETURN(auto past, ctx.InputDims(0));
  PRECIS_ASSIGN_OR_RETURN(auto update, ctx.InputDims(1));
  if (ctx.input_dtype(1) != ctx.input_dtype(0)) return ctx.Error("update and past_cache dtypes differ");
  if (past.size() < 2 || update.size() != past.size()) return ctx.Error("past_cache and update must have one rank >= 2");
  PRECIS_ASSIGN_OR_RETURN(int64_t axis, NormalizeAxis(ctx.Int("axis", -2), int64_t(past.size()), ctx));
  if (axis == 0) return ctx.Error("axis must not be the batch axis 0");
  for (size_t j = 0; j < past.size(); ++j)
    if (int64_t(j) != axis && past[j].is_static() && update[j].is_static() && past[j].value() != update[j].value())
      return ctx.Error("update differs from past_cache in dim " + std::to_string(j) + " (only the sequence axis " + std::to_string(axis) + " may)");
  const std::string mode = ctx.String("mode", "linear");
  if (mode != "linear" && mode != "circular") return ctx.Error("mode must be 'linear' or 'circular', not '" + mode + "'");
  if (ctx.has_input(2)) {
    PRECIS_ASSIGN_OR_RETURN(auto w, ctx.InputDims(2));
    if (ctx.input_dtype(2) != ir::DType::kI64 || w.size() != 1) return ctx.Error("write_indices must be a 1-D int64 tensor (one index per batch entry)");
  }
  ctx.SetOutput(0, ctx.input_type(0));
  return Status::Ok();
}

Status InferScatterElements(InferContext& ctx) {
  PRECIS_ASSIGN_OR_RETURN(auto data, ctx.InputDims(0));
  PRECIS_ASSIGN_OR_RETURN(auto indices, ctx.InputDims(1));
  PRECIS_ASSIGN_OR_RETURN(auto updates, ctx.InputDims(2));
  PRECIS_RETURN_IF_ERROR(CheckIndices(ctx, 1));
  if (ctx.input_dtype(2) != ctx.input_dtype(0)) return ctx.Error("updates and data dtypes differ");
  if (data.empty() || indices.size() != data.size() || updates.size() != data.size())
    return ctx.Error("data, indices and updates must have the same rank >= 1");
  PRECIS_ASSIGN_OR_RETURN(int64_t axis, NormalizeAxis(ctx.Int("axis", 0), int64_t(data.size()), ctx));
  (void)axis;
  PRECIS_RETURN_IF_ERROR(CheckReduction(ctx));
  ctx.SetOutput(0, ctx.input_type(0));
  return Status::Ok();
}

Status InferOneHot(InferContext& ctx) {
  PRECIS_ASSIGN_OR_RETURN(auto indices, ctx.InputDims(0));
  if (ctx.has_input(1) && !ctx.input_constant(1)) {
    // A depth given at run time (an integer or float input): the output dim is its value (as an
    // integer), bound when the plan runs; the kernel takes the depth from that dim.
    std::optional<ir::DimExpr> depth;
    if (ir::IsInteger(ctx.input_dtype(1))) {
      auto v = ctx.ShapeValues(1);
      if (v.ok() && v->size() == 1 && (*v)[0].HasValueSymbols()) depth = (*v)[0];
    } else {
      depth = FloatInputValue(ctx.node(), 1, 0, 1);
    }
    if (depth) {
      PRECIS_ASSIGN_OR_RETURN(auto values, ctx.InputDims(2));
      if (Factor(values).AsDim() != Dim::Static(2)) return ctx.Error("values must have two elements");
      int64_t rank = int64_t(indices.size()) + 1, axis = ctx.Int("axis", -1);
      if (axis < -rank || axis >= rank) return ctx.Error("axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
      if (axis < 0) axis += rank;
      std::vector<Dim> out = indices;
      out.insert(out.begin() + axis, depth->ToDim());
      ctx.SetOutput(0, ctx.input_dtype(2), out);
      return Status::Ok();
    }
  }
  PRECIS_ASSIGN_OR_RETURN(auto depth_values, ctx.ConstantFloats(1));
  PRECIS_ASSIGN_OR_RETURN(auto values, ctx.InputDims(2));
  if (depth_values.size() != 1) return ctx.Error("depth must have one element");
  if (Factor(values).AsDim() != Dim::Static(2)) return ctx.Error("values must have two elements");
  int64_t depth = int64_t(depth_values[0]);
  if (depth <= 0) return ctx.Error("depth " + std::to_string(depth) + " must be positive");
  int64_t rank = int64_t(indices.size()) + 1, axis = ctx.Int("axis", -1);
  if (axis < -rank || axis >= rank) return ctx.Error("axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
  if (axis < 0) axis += rank;
  std::vector<Dim> out = indices;
  out.insert(out.begin() + axis, Dim::Static(depth));
  ctx.SetOutput(0, ctx.input_dtype(2), out);
  return Status::Ok();
}

Status InferCompress(InferContext& ctx) {
  PRECIS_ASSIGN_OR_RETURN(auto in, ctx.InputDims(0));
  const ir::Attribute* axis_attr = ctx.attr("axis");
  int64_t axis = 0;
  if (axis_attr) {
    PRECIS_ASSIGN_OR_RETURN(axis, NormalizeAxis(axis_attr->i, int64_t(in.size()), ctx));
  }
  if (!ctx.input_constant(1)) {
    // The kept count is a data dim (ops/shape_values.h), bound when the step runs.
    PRECIS_ASSIGN_OR_RETURN(auto cond, ctx.InputDims(1));
    if (cond.size() != 1) return ctx.Error("condition must be 1-D");
    if (!axis_attr) {
      ctx.SetOutput(0, ctx.input_dtype(0), {DataDim(ctx.node())});
    } else {
      in[size_t(axis)] = DataDim(ctx.node());
      ctx.SetOutput(0, ctx.input_dtype(0), in);
    }
    return Status::Ok();
  }
  PRECIS_ASSIGN_OR_RETURN(auto cond, ctx.ConstantInts(1));
  Dim len = axis_attr ? in[size_t(axis)] : Factor(in).AsDim();
  if (!len.is_static()) return ctx.Unsupported("needs a static length along the compressed axis");
  if (int64_t(cond.size()) > len.value()) return ctx.Error("condition is longer than the compressed axis");
  int64_t kept = 0;
  for (int64_t c : cond) kept += c != 0;
  if (!axis_attr) {
    ctx.SetOutput(0, ctx.input_dtype(0), {Dim::Static(kept)});
  } else {
    in[size_t(axis)] = Dim::Static(kept);
    ctx.SetOutput(0, ctx.input_dtype(0), in);
  }
  return Status::Ok();
}

// Whether element i of a constant is nonzero (floats by value: -0.0 is zero).
bool NonZeroAt(const ir::Tensor& t, int64_t i) {
  const uint8_t* p = t.buffer().data();
  switch (t.dtype()) {
    case ir::DType::kF32: { float v; std::memcpy(&v, p + i * 4, 4); return v != 0; }
    case ir::DType::kF64: { double v; std::memcpy(&v, p + i * 8, 8); return v != 0; }
    case ir::DType::kF16: case ir::DType::kBF16: { uint16_t v; std::memcpy(&v, p + i * 2, 2); return (v & 0x7fff) != 0; }
    default: {
      int64_t size = ir::DTypeSize(t.dtype());
      for (int64_t b = 0; b < size; ++b)
        if (p[i * size + b]) return true;
      return false;
    }
  }
}

Status InferNonZero(InferContext& ctx) {
  PRECIS_ASSIGN_OR_RETURN(auto in, ctx.InputDims(0));
  const ir::Tensor* t = ctx.input_constant(0);
  if (!t) {  // the count is a data dim (ops/shape_values.h), bound when the step runs
    ctx.SetOutput(0, ir::DType::kI64, {Dim::Static(int64_t(in.size())), DataDim(ctx.node())});
    return Status::Ok();
  }
  if (ir::DTypeSize(t->dtype()) == 0) return ctx.Error("input must be numeric");
  int64_t count = 0;
  for (int64_t i = 0; i < t->NumElements(); ++i) count += NonZeroAt(*t, i);
  ctx.SetOutput(0, ir::DType::kI64, {Dim::Static(int64_t(in.size())), Dim::Static(count)});
  return Status::Ok();
}

// Unique: distinct values (or slices along `axis`) Y [count] / X's dims with count at axis, the
// index of each one's first occurrence [count], each element's (slice's) index into Y
// [X's elements or X's dim at axis], and the counts [count]. count is a data dim.
Status InferUnique(InferContext& ctx) {
  PRECIS_ASSIGN_OR_RETURN(auto in, ctx.InputDims(0));
  if (ir::DTypeSize(ctx.input_dtype(0)) == 0 || ctx.input_dtype(0) == ir::DType::kString) return ctx.Error("input must be numeric");
  Dim count = DataDim(ctx.node());
  Dim along = Factor(in).AsDim();
  std::vector<Dim> y{count};
  if (const ir::Attribute* a = ctx.attr("axis")) {
    PRECIS_ASSIGN_OR_RETURN(int64_t axis, NormalizeAxis(a->i, int64_t(in.size()), ctx));
    along = in[size_t(axis)];
    y = in;
    y[size_t(axis)] = count;
  }
  ctx.SetOutput(0, ctx.input_dtype(0), y);
  for (size_t i : {size_t(1), size_t(3)})
    if (ctx.has_output(i)) ctx.SetOutput(i, ir::DType::kI64, {count});
  if (ctx.has_output(2)) ctx.SetOutput(2, ir::DType::kI64, {along});
  return Status::Ok();
}

Status InferReverseSequence(InferContext& ctx) {
  PRECIS_ASSIGN_OR_RETURN(auto in, ctx.InputDims(0));
  PRECIS_ASSIGN_OR_RETURN(auto lens, ctx.InputDims(1));
  if (in.size() < 2) return ctx.Error("input must have rank >= 2");
  if (lens.size() != 1) return ctx.Error("sequence_lens must be 1-D");
  if (!IsIndexDType(ctx.input_dtype(1))) return ctx.Error("sequence_lens must be int32 or int64");
  int64_t batch = ctx.Int("batch_axis", 1), time = ctx.Int("time_axis", 0);
  if ((batch != 0 && batch != 1) || (time != 0 && time != 1) || batch == time)
    return ctx.Error("batch_axis and time_axis must be 0 and 1 in some order");
  ctx.SetOutput(0, ctx.input_type(0));
  return Status::Ok();
}

Status InferConstantOfShape(InferContext& ctx) {
  PRECIS_ASSIGN_OR_RETURN(auto values, ctx.ShapeValues(0));
  std::vector<Dim> shape;
  for (const auto& e : values) {
    if (e.is_constant() && e.constant() < 0) return ctx.Error("shape has a negative dim (" + std::to_string(e.constant()) + ")");
    shape.push_back(e.ToDim());
  }
  ir::DType dtype = ir::DType::kF32;
  if (const ir::Attribute* value = ctx.attr("value")) {
    if (value->kind != ir::Attribute::Kind::kTensor || value->t.NumElements() != 1 || !value->t.has_data() ||
        ir::DTypeSize(value->t.dtype()) == 0)
      return ctx.Error("'value' must be a numeric tensor of one element");
    dtype = value->t.dtype();
  }
  ctx.SetOutput(0, dtype, shape);
  return Status::Ok();
}

Status InferRange(InferContext& ctx) {
  ir::DType dtype = ctx.input_dtype(0);
  if (ctx.input_dtype(1) != dtype || ctx.input_dtype(2) != dtype) return ctx.Error("start, limit and delta dtypes differ");
  int64_t count = 0;
  if (ir::IsFloat(dtype)) {
    // A limit cast from run-time integers (window functions: Range(0, Cast(size), 1)) with whole
    // constant start and delta: the count is max(0, ceil((limit - start) / delta)).
    if (ctx.has_input(1) && !ctx.input_constant(1)) {
      auto start = ctx.ConstantFloats(0), delta = ctx.ConstantFloats(2);
      auto limit = ctx.ShapeValues(1);
      if (start.ok() && delta.ok() && limit.ok() && start->size() == 1 && delta->size() == 1 && limit->size() == 1 &&
          (*start)[0] == std::round((*start)[0]) && (*delta)[0] == std::round((*delta)[0]) && (*delta)[0] != 0 &&
          std::fabs((*start)[0]) < 1e9 && std::fabs((*delta)[0]) < 1e9) {
        auto back = ir::DimExpr::Constant(int64_t((*start)[0])).Sub((*limit)[0]);
        auto q = back ? back->FloorDivBy(ir::DimExpr::Constant(int64_t((*delta)[0]))) : std::nullopt;
        auto up = q ? ir::DimExpr().Sub(*q) : std::nullopt;
        auto n = up ? ir::DimExpr::Max(*up, ir::DimExpr()) : std::nullopt;
        if (n && !n->is_constant()) {
          ctx.SetOutput(0, dtype, {n->ToDim()});
          return Status::Ok();
        }
      }
    }
    // Bounds computed from float inputs: the length is a value expression the session evaluates
    // from the input values (runtime/base/value_expr.h).
    if (!ctx.input_constant(0) || !ctx.input_constant(1) || !ctx.input_constant(2)) {
      auto s = InputExprs(ctx.node(), 0, ctx.opset()), l = InputExprs(ctx.node(), 1, ctx.opset()), d = InputExprs(ctx.node(), 2, ctx.opset());
      if (s && l && d && s->size() == 1 && l->size() == 1 && d->size() == 1)
        if (auto sym = value_expr::Symbol("rlen", {(*s)[0], (*l)[0], (*d)[0]})) {
          ctx.SetOutput(0, dtype, {ir::DimExpr::Symbol(*sym).ToDim()});
          return Status::Ok();
        }
    }
    PRECIS_ASSIGN_OR_RETURN(auto start, ctx.ConstantFloats(0));
    PRECIS_ASSIGN_OR_RETURN(auto limit, ctx.ConstantFloats(1));
    PRECIS_ASSIGN_OR_RETURN(auto delta, ctx.ConstantFloats(2));
    if (start.size() != 1 || limit.size() != 1 || delta.size() != 1) return ctx.Error("start, limit and delta must be scalars");
    if (delta[0] == 0 || !std::isfinite(delta[0]) || !std::isfinite(start[0]) || !std::isfinite(limit[0]))
      return ctx.Error("needs finite start and limit and a nonzero finite delta");
    double n = std::ceil((limit[0] - start[0]) / delta[0]);
    if (n > double(ir::kMaxElements)) return ctx.Error("output is too large");
    count = n > 0 ? int64_t(n) : 0;
  } else if (ir::IsInteger(dtype)) {
    // An integer limit known as a symbolic dim (Range(0, seq, 1) for position ids): the length
    // is limit - start for delta 1.
    auto s_values = ctx.ShapeValues(0), l_values = ctx.ShapeValues(1), d_values = ctx.ShapeValues(2);
    bool known = s_values.ok() && l_values.ok() && d_values.ok() && s_values->size() == 1 && l_values->size() == 1 && d_values->size() == 1;
    if (known && ((*s_values)[0].HasValueSymbols() || (*l_values)[0].HasValueSymbols() || (*d_values)[0].HasValueSymbols())) {
      // Run-time values: max(0, ceil((limit - start) / delta)) = max(0, -floor((start - limit) / delta)).
      auto back = (*s_values)[0].Sub((*l_values)[0]);
      auto q = back ? back->FloorDivBy((*d_values)[0]) : std::nullopt;
      auto up = q ? ir::DimExpr().Sub(*q) : std::nullopt;
      auto n = up ? ir::DimExpr::Max(*up, ir::DimExpr()) : std::nullopt;
      ctx.SetOutput(0, dtype, {n ? n->ToDim() : Dim()});
      return Status::Ok();
    }
    if (ctx.has_input(1) && !ctx.input_constant(1)) {
      auto start = ctx.ConstantInts(0), delta = ctx.ConstantInts(2);
      auto limit = ctx.ShapeValues(1);
      if (start.ok() && delta.ok() && limit.ok() && start->size() == 1 && delta->size() == 1 && limit->size() == 1 && (*delta)[0] == 1) {
        auto n = (*limit)[0].Sub(ir::DimExpr::Constant((*start)[0]));
        if (n && !n->is_constant()) {
          ctx.SetOutput(0, dtype, {n->ToDim()});
          return Status::Ok();
        }
      }
    }
    if (known && (!(*s_values)[0].is_constant() || !(*l_values)[0].is_constant()) && (*d_values)[0].is_constant() && (*d_values)[0].constant() > 0) {
      // Symbolic bounds and a positive constant delta (chunk starts over a symbolic dim):
      // max(0, ceil((limit - start) / delta)).
      auto back = (*s_values)[0].Sub((*l_values)[0]);
      auto q = back ? back->FloorDivBy((*d_values)[0]) : std::nullopt;
      auto up = q ? ir::DimExpr().Sub(*q) : std::nullopt;
      auto n = up ? ir::DimExpr::Max(*up, ir::DimExpr()) : std::nullopt;
      if (n) {
        ctx.SetOutput(0, dtype, {n->ToDim()});
        return Status::Ok();
      }
    }
    PRECIS_ASSIGN_OR_RETURN(auto start, ctx.ConstantInts(0));
    PRECIS_ASSIGN_OR_RETURN(auto limit, ctx.ConstantInts(1));
    PRECIS_ASSIGN_OR_RETURN(auto delta, ctx.ConstantInts(2));
    if (start.size() != 1 || limit.size() != 1 || delta.size() != 1) return ctx.Error("start, limit and delta must be scalars");
    if (delta[0] == 0) return ctx.Error("delta is 0");
    // 128-bit: limit - start may overflow int64.
    __int128 span = __int128(limit[0]) - start[0], step = delta[0];
    __int128 n = (step > 0 ? span > 0 : span < 0) ? (span - (step > 0 ? 1 : -1)) / step + 1 : 0;
    if (n > ir::kMaxElements) return ctx.Error("output is too large");
    count = int64_t(n);
  } else {
    return ctx.Error("unsupported dtype " + std::string(ir::DTypeName(dtype)));
  }
  ctx.SetOutput(0, dtype, {Dim::Static(count)});
  return Status::Ok();
}

Status InferEyeLike(InferContext& ctx) {
  PRECIS_ASSIGN_OR_RETURN(auto in, ctx.InputDims(0));
  if (in.size() != 2) return ctx.Error("input must be 2-D");
  ir::DType dtype = ctx.input_dtype(0);
  if (const ir::Attribute* a = ctx.attr("dtype")) {
    auto t = ir::DTypeFromOnnx(int32_t(a->i));
    if (!t.ok()) return ctx.Unsupported("dtype: " + t.status().message());
    dtype = *t;
  }
  if (ir::DTypeSize(dtype) == 0) return ctx.Error("unsupported dtype " + std::string(ir::DTypeName(dtype)));
  ctx.SetOutput(0, dtype, in);
  return Status::Ok();
}

Status InferTrilu(InferContext& ctx) {
  PRECIS_ASSIGN_OR_RETURN(auto in, ctx.InputDims(0));
  if (in.size() < 2) return ctx.Error("input must have rank >= 2");
  if (ctx.has_input(1) && !IsIndexDType(ctx.input_dtype(1))) return ctx.Error("k must be int64");
  ctx.SetOutput(0, ctx.input_type(0));
  return Status::Ok();
}

}  // namespace

// Called by RegisterTensorOps (tensor.cc).
void AddTensorIndexOps(OpRegistry& r) {
  r.Register({"", "Gather", 1, INT_MAX, InferGather, true, -1, "", PrecisionClass::kPassthrough});
  r.Register({"", "GatherElements", 11, INT_MAX, InferGatherElements, true, -1, "", PrecisionClass::kPassthrough});
  r.Register({"", "GatherND", 11, INT_MAX, InferGatherND, true, -1, "", PrecisionClass::kPassthrough});
  r.Register({"", "ScatterND", 11, INT_MAX, InferScatterND, true, 0, "", PrecisionClass::kPassthrough});
  r.Register({"", "TensorScatter", 24, INT_MAX, InferTensorScatter, true, 0, "", PrecisionClass::kPassthrough});
  r.Register({"", "ScatterElements", 11, INT_MAX, InferScatterElements, true, 0, "", PrecisionClass::kPassthrough});
  r.Register({"", "Scatter", 9, 10, InferScatterElements, true, 0, "ScatterElements", PrecisionClass::kPassthrough});
  r.Register({"", "OneHot", 9, INT_MAX, InferOneHot, true, -1, "", PrecisionClass::kUntouched});
  r.Register({"", "Compress", 9, INT_MAX, InferCompress, true, -1, "", PrecisionClass::kPassthrough});
  r.Register({"", "NonZero", 9, INT_MAX, InferNonZero, true, -1, "", PrecisionClass::kUntouched});
  r.Register({"", "Unique", 11, INT_MAX, InferUnique, false, -1, "", PrecisionClass::kUntouched});
  r.Register({"", "ReverseSequence", 10, INT_MAX, InferReverseSequence, true, -1, "", PrecisionClass::kPassthrough});
  r.Register({"", "ConstantOfShape", 9, INT_MAX, InferConstantOfShape, true, -1, "", PrecisionClass::kUntouched});
  r.Register({"", "Range", 11, INT_MAX, InferRange, true, -1, "", PrecisionClass::kUntouched});
  r.Register({"", "EyeLike", 9, INT_MAX, InferEyeLike, true, -1, "", PrecisionClass::kUntouched});
  r.Register({"", "Trilu", 14, INT_MAX, InferTrilu, true, 0, "", PrecisionClass::kPassthrough});
}

}  // namespace precis::ops
