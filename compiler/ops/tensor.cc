// Operator semantics: data movement and shape manipulation. This file holds the reshaping and
// reordering operators (Reshape, Flatten, Squeeze, Unsqueeze, Transpose, Concat, Split, Slice,
// Expand, Tile, Shape, Size); tensor_index.cc the indexing and generating ones, tensor_resize.cc
// Resize, Upsample, Pad and the depth/space rearrangements. Values that decide an output shape
// (Reshape's shape, Slice's starts, ...) must be compile-time constants: shapes are static when
// the plan runs. Symbolic dims pass through where the operator keeps a dim as it is.
#include <algorithm>

#include "compiler/ir/text.h"
#include "compiler/ops/op_registry.h"
#include "compiler/ops/shape_values.h"
#include "compiler/ops/tensor_infer.h"

namespace precis::ops {
namespace {

using ir::Dim;

// Reshape to a shape given as run-time values (value symbols): each entry e is, at run time, the
// input dim where e = 0 (unless allowzero), what the others leave where e = -1, else e. The
// kernel checks that the element counts agree.
Status InferReshapeFromValues(InferContext& ctx, const std::vector<Dim>& in, const std::vector<ir::DimExpr>& shape) {
  using E = ir::DimExpr;
  bool allowzero = ctx.opset() >= 14 && ctx.Int("allowzero", 0) != 0;
  auto in_e = DimExprsOf(in);
  auto total = ir::DimProduct(in);
  std::vector<Dim> out(shape.size());
  if (!in_e || !total) {
    ctx.SetOutput(0, ctx.input_dtype(0), out);  // unknown dims
    return Status::Ok();
  }
  // Each entry with 0 resolved (-1 is kept: at most one entry is -1 at run time).
  std::vector<std::optional<E>> resolved;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (allowzero || i >= in.size()) {
      resolved.push_back(shape[i]);
      continue;
    }
    auto zero = E::Eq(shape[i], E());
    resolved.push_back(zero ? E::Select(*zero, (*in_e)[i], shape[i]) : std::nullopt);
  }
  for (size_t i = 0; i < shape.size(); ++i) {
    std::optional<E> others = E::Constant(1);
    for (size_t j = 0; j < shape.size() && others; ++j)
      if (j != i) others = resolved[j] ? others->Mul(*resolved[j]) : std::nullopt;
    auto left = others ? total->FloorDivBy(*others) : std::nullopt;
    auto minus_one = E::Eq(shape[i], E::Constant(-1));
    auto dim = minus_one && left && resolved[i] ? E::Select(*minus_one, *left, *resolved[i]) : std::nullopt;
    out[i] = dim ? dim->ToDim() : Dim();
  }
  ctx.SetOutput(0, ctx.input_dtype(0), out);
  return Status::Ok();
}

// Reshape: 0 copies the input dim (unless allowzero), -1 takes what is left.
Status InferReshape(InferContext& ctx) {
  PRECIS_ASSIGN_OR_RETURN(auto in, ctx.InputDims(0));
  std::vector<ir::DimExpr> shape;
  if (ctx.opset() >= 5) {
    PRECIS_ASSIGN_OR_RETURN(shape, ctx.ShapeValues(1));
  } else {
    auto attr = ctx.Ints("shape");
    if (!attr) return ctx.Error("has no 'shape' attribute");
    for (int64_t v : *attr) shape.push_back(ir::DimExpr::Constant(v));
  }
  if (AnyValueSymbols(shape)) return InferReshapeFromValues(ctx, in, shape);
  std::vector<int64_t> shown;  // the constant entries, for messages (-2: symbolic)
  for (const auto& e : shape) shown.push_back(e.is_constant() ? e.constant() : -2);
  bool allowzero = ctx.opset() >= 14 && ctx.Int("allowzero", 0) != 0;
  std::vector<Dim> out(shape.size());
  int infer_at = -1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (!shape[i].is_constant()) {
      // A value computed from symbolic dims (Shape -> Gather -> Concat): taken as that dim.
      out[i] = shape[i].ToDim();
      continue;
    }
    int64_t s = shape[i].constant();
    if (s == -1) {
      if (infer_at >= 0) return ctx.Error("shape has more than one -1");
      infer_at = int(i);
    } else if (s == 0 && !allowzero) {
      if (i >= in.size()) return ctx.Error("shape copies dim " + std::to_string(i) + " (0) but the input has rank " + std::to_string(in.size()));
      out[i] = in[i];
    } else if (s < 0) {
      return ctx.Error("shape has invalid value " + std::to_string(s));
    } else {
      out[i] = Dim::Static(s);
    }
  }
  if (allowzero && infer_at >= 0 && std::count(shown.begin(), shown.end(), 0) > 0)
    return ctx.Error("shape has both 0 and -1 with allowzero=1");
  DimFactors total = Factor(in), known = Factor(out, infer_at);
  if (infer_at >= 0) {
    if (total.is_static() && known.is_static()) {
      if (known.product == 0 || total.product % known.product != 0)
        return ctx.Error("cannot reshape " + std::to_string(total.product) + " elements into " + ShapeText(shown));
      out[size_t(infer_at)] = Dim::Static(total.product / known.product);
    } else {
      out[size_t(infer_at)] = total.Divide(known);
    }
  } else if (total.is_static() && known.is_static() && total.product != known.product) {
    return ctx.Error("cannot reshape " + std::to_string(total.product) + " elements into " + ShapeText(shown));
  }
  ctx.SetOutput(0, ctx.input_dtype(0), out);
  return Status::Ok();
}

Status InferFlatten(InferContext& ctx) {
  PRECIS_ASSIGN_OR_RETURN(auto in, ctx.InputDims(0));
  int64_t rank = int64_t(in.size()), axis = ctx.Int("axis", 1);
  if (axis < -rank || axis > rank) return ctx.Error("axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
  if (axis < 0) axis += rank;
  std::vector<Dim> head(in.begin(), in.begin() + axis), tail(in.begin() + axis, in.end());
  ctx.SetOutput(0, ctx.input_dtype(0), {Factor(head).AsDim(), Factor(tail).AsDim()});
  return Status::Ok();
}

// Squeeze/Unsqueeze axes: an attribute before opset 13, an input from 13.
StatusOr<std::optional<std::vector<int64_t>>> AxesOf(InferContext& ctx, int64_t input_from_opset) {
  if (ctx.opset() >= input_from_opset) {
    if (!ctx.has_input(1)) return std::optional<std::vector<int64_t>>();
    PRECIS_ASSIGN_OR_RETURN(auto axes, ctx.ConstantInts(1));
    return std::optional<std::vector<int64_t>>(axes);
  }
  return ctx.Ints("axes");
}

// Squeeze and Unsqueeze with axes given as run-time values: the rank is known (from the count
// of axes), each dim is a select over where the axes fall. The kernel (a copy) checks the sizes.
std::optional<std::vector<ir::DimExpr>> ValueAxes(InferContext& ctx, size_t input, int64_t rank) {
  if (ctx.opset() < 13 || !ctx.has_input(input) || ctx.input_constant(input)) return std::nullopt;
  auto values = ctx.ShapeValues(input);
  if (!values.ok() || !AnyValueSymbols(*values)) return std::nullopt;
  std::vector<ir::DimExpr> axes;
  for (const ir::DimExpr& a : *values) {
    auto n = AxisValue(a, rank);
    if (!n) return std::nullopt;
    axes.push_back(*n);
  }
  return axes;
}

Status InferSqueeze(InferContext& ctx) {
  PRECIS_ASSIGN_OR_RETURN(auto in, ctx.InputDims(0));
  if (auto axes = ValueAxes(ctx, 1, int64_t(in.size()))) {
    auto in_e = DimExprsOf(in);
    auto out = in_e ? DropAxes(*in_e, *axes) : std::nullopt;
    if (!out) return ctx.Unsupported("its axes are run-time values over dims it cannot follow");
    ctx.SetOutput(0, ctx.input_dtype(0), ToDims(*out));
    return Status::Ok();
  }
  PRECIS_ASSIGN_OR_RETURN(auto axes, AxesOf(ctx, 13));
  int64_t rank = int64_t(in.size());
  std::vector<bool> drop(in.size(), false);
  if (!axes) {
    for (size_t i = 0; i < in.size(); ++i) {
      if (!in[i].is_static()) return ctx.Unsupported("without axes, needs static dims to find those of size 1");
      drop[i] = in[i].value() == 1;
    }
  } else {
    for (int64_t a : *axes) {
      PRECIS_ASSIGN_OR_RETURN(int64_t axis, NormalizeAxis(a, rank, ctx));
      if (drop[size_t(axis)]) return ctx.Error("axis " + std::to_string(a) + " is repeated");
      if (in[size_t(axis)].is_static() && in[size_t(axis)].value() != 1)
        return ctx.Error("cannot squeeze dim " + std::to_string(axis) + " of size " + std::to_string(in[size_t(axis)].value()));
      drop[size_t(axis)] = true;
    }
  }
  std::vector<Dim> out;
  for (size_t i = 0; i < in.size(); ++i)
    if (!drop[i]) out.push_back(in[i]);
  ctx.SetOutput(0, ctx.input_dtype(0), out);
  return Status::Ok();
}

Status InferUnsqueeze(InferContext& ctx) {
  PRECIS_ASSIGN_OR_RETURN(auto in, ctx.InputDims(0));
  size_t added_count = ctx.has_input(1) && ctx.input_type(1).is_tensor() && ctx.input_type(1).shape().is_static()
                           ? size_t(ctx.input_type(1).shape().NumElements().value_or(0))
                           : 0;
  if (auto axes = ValueAxes(ctx, 1, int64_t(in.size() + added_count))) {
    // Output dim j is 1 where j is an axis, else input dim j - (axes below j).
    auto in_e = DimExprsOf(in);
    std::vector<Dim> out;
    for (size_t j = 0; j < in.size() + axes->size(); ++j) {
      auto among = IsAmong(*axes, int64_t(j));
      auto below = CountBelow(*axes, int64_t(j));
      auto index = below ? ir::DimExpr::Constant(int64_t(j)).Sub(*below) : std::nullopt;
      auto kept = in_e && index ? DimAt(*in_e, *index) : std::nullopt;
      auto dim = among && kept ? ir::DimExpr::Select(*among, ir::DimExpr::Constant(1), *kept) : std::nullopt;
      out.push_back(dim ? dim->ToDim() : Dim());
    }
    ctx.SetOutput(0, ctx.input_dtype(0), out);
    return Status::Ok();
  }
  PRECIS_ASSIGN_OR_RETURN(auto axes, AxesOf(ctx, 13));
  if (!axes) return ctx.Error("has no axes");
  int64_t rank = int64_t(in.size() + axes->size());
  std::vector<bool> added(size_t(rank), false);
  for (int64_t a : *axes) {
    PRECIS_ASSIGN_OR_RETURN(int64_t axis, NormalizeAxis(a, rank, ctx));
    if (added[size_t(axis)]) return ctx.Error("axis " + std::to_string(a) + " is repeated");
    added[size_t(axis)] = true;
  }
  std::vector<Dim> out;
  size_t next = 0;
  for (int64_t i = 0; i < rank; ++i) out.push_back(added[size_t(i)] ? Dim::Static(1) : in[next++]);
  ctx.SetOutput(0, ctx.input_dtype(0), out);
  return Status::Ok();
}

Status InferTranspose(InferContext& ctx) {
  PRECIS_ASSIGN_OR_RETURN(auto in, ctx.InputDims(0));
  std::vector<int64_t> perm;
  if (auto p = ctx.Ints("perm")) perm = *p;
  else
    for (size_t i = in.size(); i-- > 0;) perm.push_back(int64_t(i));
  if (perm.size() != in.size()) return ctx.Error("perm has " + std::to_string(perm.size()) + " entries for rank " + std::to_string(in.size()));
  std::vector<bool> seen(in.size(), false);
  std::vector<Dim> out;
  for (int64_t p : perm) {
    if (p < 0 || p >= int64_t(in.size()) || seen[size_t(p)]) return ctx.Error("perm " + ShapeText(perm) + " is not a permutation");
    seen[size_t(p)] = true;
    out.push_back(in[size_t(p)]);
  }
  ctx.SetOutput(0, ctx.input_dtype(0), out);
  return Status::Ok();
}

Status InferConcat(InferContext& ctx) {
  if (ctx.num_inputs() == 0) return ctx.Error("has no inputs");
  PRECIS_ASSIGN_OR_RETURN(auto out, ctx.InputDims(0));
  int64_t rank = int64_t(out.size());
  const ir::Attribute* axis_attr = ctx.attr("axis");
  if (!axis_attr && ctx.opset() >= 4) return ctx.Error("has no 'axis' attribute");
  int64_t a = ctx.Int("axis", 1);
  if (a < -rank || a >= rank) return ctx.Error("axis " + std::to_string(a) + " is out of range for rank " + std::to_string(rank));
  size_t axis = size_t(a < 0 ? a + rank : a);
  std::vector<Dim> along{out[axis]};
  for (size_t i = 1; i < ctx.num_inputs(); ++i) {
    PRECIS_ASSIGN_OR_RETURN(auto dims, ctx.InputDims(i));
    if (dims.size() != out.size()) return ctx.Error("input " + std::to_string(i) + " has rank " + std::to_string(dims.size()) + ", expected " + std::to_string(rank));
    if (ctx.input_dtype(i) != ctx.input_dtype(0)) return ctx.Error("input dtypes differ");
    for (size_t d = 0; d < dims.size(); ++d) {
      if (d == axis) continue;
      auto merged = MergeDims(out[d], dims[d]);
      if (!merged) return ctx.Error("input " + std::to_string(i) + " dim " + std::to_string(d) + " is " + std::to_string(dims[d].value()) + ", expected " + std::to_string(out[d].value()));
      out[d] = *merged;
    }
    along.push_back(dims[axis]);
  }
  out[axis] = SumDims(along);
  ctx.SetOutput(0, ctx.input_dtype(0), out);
  return Status::Ok();
}

// Split sizes: an attribute before opset 13, input 1 from 13; without them equal parts
// (opset 18 num_outputs: ceil-sized parts, the last one smaller).
Status InferSplit(InferContext& ctx) {
  PRECIS_ASSIGN_OR_RETURN(auto in, ctx.InputDims(0));
  PRECIS_ASSIGN_OR_RETURN(int64_t axis, NormalizeAxis(ctx.Int("axis", 0), int64_t(in.size()), ctx));
  size_t n = ctx.num_outputs();
  std::optional<std::vector<int64_t>> split;
  if (ctx.opset() >= 13 || (ctx.opset() < 2 && ctx.has_input(1))) {
    if (ctx.has_input(1) && !ctx.input_constant(1)) {
      // Sizes as run-time values: each output's dim along the axis (the kernel checks the sum).
      auto values = ctx.ShapeValues(1);
      if (values.ok() && AnyValueSymbols(*values)) {
        if (values->size() != n) return ctx.Error("split has " + std::to_string(values->size()) + " sizes for " + std::to_string(n) + " outputs");
        for (size_t i = 0; i < n; ++i) {
          std::vector<Dim> out = in;
          out[size_t(axis)] = (*values)[i].ToDim();
          ctx.SetOutput(i, ctx.input_dtype(0), out);
        }
        return Status::Ok();
      }
    }
    if (ctx.has_input(1)) {
      PRECIS_ASSIGN_OR_RETURN(auto s, ctx.ConstantInts(1));
      split = s;
    }
  } else {
    split = ctx.Ints("split");
  }
  const Dim& dim = in[size_t(axis)];
  std::vector<Dim> sizes;
  if (split) {
    if (split->size() != n) return ctx.Error("split has " + std::to_string(split->size()) + " sizes for " + std::to_string(n) + " outputs");
    int64_t sum = 0;
    for (int64_t s : *split) {
      if (s < 0) return ctx.Error("split has a negative size");
      sum += s;
      sizes.push_back(Dim::Static(s));
    }
    if (dim.is_static() && sum != dim.value())
      return ctx.Error("split sizes sum to " + std::to_string(sum) + " but the dim is " + std::to_string(dim.value()));
  } else {
    int64_t parts = ctx.opset() >= 18 ? ctx.Int("num_outputs", int64_t(n)) : int64_t(n);
    if (parts != int64_t(n) || parts <= 0) return ctx.Error("num_outputs " + std::to_string(parts) + " differs from the " + std::to_string(n) + " outputs");
    if (!dim.is_static()) {
      sizes.assign(n, n == 1 ? dim : Dim());
    } else if (ctx.opset() >= 18) {
      int64_t chunk = (dim.value() + parts - 1) / parts;
      for (int64_t i = 0; i < parts; ++i) sizes.push_back(Dim::Static(std::clamp<int64_t>(dim.value() - i * chunk, 0, chunk)));
    } else {
      if (dim.value() % parts != 0) return ctx.Error("dim " + std::to_string(dim.value()) + " does not split into " + std::to_string(parts) + " equal parts");
      sizes.assign(n, Dim::Static(dim.value() / parts));
    }
  }
  for (size_t i = 0; i < n; ++i) {
    std::vector<Dim> out = in;
    out[size_t(axis)] = sizes[i];
    ctx.SetOutput(i, ctx.input_dtype(0), out);
  }
  return Status::Ok();
}

// Slice whose bounds, axes or steps are run-time values: each output dim is the slice length of
// the entry whose axis it is (a select over the axes), else the input dim. The kernel reads the
// values at run time and checks them against these dims.
Status InferSliceFromValues(InferContext& ctx, const std::vector<Dim>& in, const std::vector<ir::DimExpr>& starts,
                            const std::vector<ir::DimExpr>& ends, std::vector<ir::DimExpr> axes, std::vector<ir::DimExpr> steps) {
  using E = ir::DimExpr;
  int64_t rank = int64_t(in.size());
  if (axes.empty())
    for (size_t i = 0; i < starts.size(); ++i) axes.push_back(E::Constant(int64_t(i)));
  if (steps.empty()) steps.assign(starts.size(), E::Constant(1));
  if (axes.size() != starts.size() || steps.size() != starts.size()) return ctx.Error("starts, ends, axes and steps differ in length");
  std::vector<Dim> out(in.size());
  auto in_e = DimExprsOf(in);
  for (int64_t j = 0; j < rank; ++j) {
    std::optional<E> dim = in_e ? std::optional<E>((*in_e)[size_t(j)]) : std::nullopt;
    for (size_t i = 0; i < starts.size() && dim; ++i) {
      auto axis = AxisValue(axes[i], rank);
      auto here = axis ? E::Eq(*axis, E::Constant(j)) : std::nullopt;
      auto len = SliceLength(starts[i], ends[i], steps[i], (*in_e)[size_t(j)]);
      dim = here && len ? E::Select(*here, *len, *dim) : std::nullopt;
    }
    out[size_t(j)] = dim ? dim->ToDim() : Dim();
  }
  ctx.SetOutput(0, ctx.input_dtype(0), out);
  return Status::Ok();
}

// Slice bounds are constants, or (opset 10 on) values computed from symbolic dims (x[:, :seq] of
// a longer buffer): such an axis with step 1 gets end - start, assuming the bounds lie within
// the dim (the run-time kernel checks what the values give against it).
Status InferSlice(InferContext& ctx) {
  PRECIS_ASSIGN_OR_RETURN(auto in, ctx.InputDims(0));
  std::vector<ir::DimExpr> starts, ends, axes_values, steps_values;
  std::vector<int64_t> axes, steps;
  bool value_axes = false, value_steps = false;
  if (ctx.opset() >= 10) {
    PRECIS_ASSIGN_OR_RETURN(starts, ctx.ShapeValues(1));
    PRECIS_ASSIGN_OR_RETURN(ends, ctx.ShapeValues(2));
    // Axes and steps as run-time values take the general path below.
    if (ctx.has_input(3)) {
      auto v = ctx.ShapeValues(3);
      value_axes = !ctx.input_constant(3) && v.ok() && AnyValueSymbols(*v);
      if (value_axes) axes_values = *v;
      else {
        PRECIS_ASSIGN_OR_RETURN(axes, ctx.ConstantInts(3));
      }
    }
    if (ctx.has_input(4)) {
      auto v = ctx.ShapeValues(4);
      value_steps = !ctx.input_constant(4) && v.ok() && AnyValueSymbols(*v);
      if (value_steps) steps_values = *v;
      else {
        PRECIS_ASSIGN_OR_RETURN(steps, ctx.ConstantInts(4));
      }
    }
    if (!value_axes)
      for (int64_t a : axes) axes_values.push_back(ir::DimExpr::Constant(a));
    if (!value_steps)
      for (int64_t t : steps) steps_values.push_back(ir::DimExpr::Constant(t));
  } else {
    for (int64_t v : ctx.Ints("starts").value_or(std::vector<int64_t>())) starts.push_back(ir::DimExpr::Constant(v));
    for (int64_t v : ctx.Ints("ends").value_or(std::vector<int64_t>())) ends.push_back(ir::DimExpr::Constant(v));
    axes = ctx.Ints("axes").value_or(std::vector<int64_t>());
  }
  if (starts.size() != ends.size()) return ctx.Error("starts and ends differ in length");
  if (AnyValueSymbols(starts) || AnyValueSymbols(ends) || value_axes || value_steps)
    return InferSliceFromValues(ctx, in, starts, ends, axes_values, steps_values);
  if (axes.empty())
    for (size_t i = 0; i < starts.size(); ++i) axes.push_back(int64_t(i));
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (axes.size() != starts.size() || steps.size() != starts.size()) return ctx.Error("starts, ends, axes and steps differ in length");
  std::vector<Dim> out = in;
  std::vector<bool> seen(in.size(), false);
  for (size_t i = 0; i < starts.size(); ++i) {
    PRECIS_ASSIGN_OR_RETURN(int64_t axis, NormalizeAxis(axes[i], int64_t(in.size()), ctx));
    if (seen[size_t(axis)]) return ctx.Error("axis " + std::to_string(axes[i]) + " is repeated");
    seen[size_t(axis)] = true;
    if (steps[i] == 0) return ctx.Error("step is 0");
    const Dim& d = in[size_t(axis)];
    const ir::DimExpr &start = starts[i], &end = ends[i];
    if (start.is_constant() && end.is_constant()) {
      int64_t s0 = start.constant(), e0 = end.constant();
      if (d.is_static()) {
        out[size_t(axis)] = Dim::Static(SliceRange(s0, e0, steps[i], d.value()).count);
      } else {
        // A full slice keeps a symbolic dim; anything else depends on its size.
        bool full = steps[i] == 1 && (s0 == 0 || s0 <= -kMaxSliceDim) && e0 >= kMaxSliceDim;
        out[size_t(axis)] = full ? d : Dim();
      }
      continue;
    }
    // Symbolic bounds, step 1: [start, end) with 0 <= start, end to the dim's end when it is a
    // huge constant.
    std::optional<ir::DimExpr> to = end, count;
    if (end.is_constant() && end.constant() >= kMaxSliceDim) to = ir::DimExpr::FromDim(d);
    bool start_ok = !start.is_constant() || start.constant() >= 0;
    bool end_ok = to && (!to->is_constant() || to->constant() >= 0);
    if (steps[i] == 1 && start_ok && end_ok) count = to->Sub(start);
    out[size_t(axis)] = count ? count->ToDim() : Dim();
  }
  ctx.SetOutput(0, ctx.input_dtype(0), out);
  return Status::Ok();
}

Status InferExpand(InferContext& ctx) {
  PRECIS_ASSIGN_OR_RETURN(auto in, ctx.InputDims(0));
  PRECIS_ASSIGN_OR_RETURN(auto values, ctx.ShapeValues(1));
  if (AnyValueSymbols(values)) {
    // A shape of run-time values: each dim broadcasts, dim 1 takes the value (the kernel checks
    // that the input broadcasts to what the values give).
    size_t rank = std::max(in.size(), values.size());
    std::vector<Dim> out(rank);
    for (size_t j = 0; j < rank; ++j) {
      bool has_in = j + in.size() >= rank, has_value = j + values.size() >= rank;
      const ir::DimExpr* v = has_value ? &values[j + values.size() - rank] : nullptr;
      if (!has_in) {
        out[j] = v->ToDim();
        continue;
      }
      const Dim& d = in[j + in.size() - rank];
      auto e = ir::DimExpr::FromDim(d);
      if (!v || !e) {
        out[j] = v ? Dim() : d;
        continue;
      }
      auto one = ir::DimExpr::Eq(*e, ir::DimExpr::Constant(1));
      auto dim = one ? ir::DimExpr::Select(*one, *v, *e) : std::nullopt;
      out[j] = dim ? dim->ToDim() : Dim();
    }
    ctx.SetOutput(0, ctx.input_dtype(0), out);
    return Status::Ok();
  }
  std::vector<Dim> shape;
  for (const auto& e : values) {
    if (e.is_constant() && e.constant() < 0) return ctx.Error("shape has a negative dim (" + std::to_string(e.constant()) + ")");
    shape.push_back(e.ToDim());
  }
  auto out = BroadcastDims(in, shape);
  if (!out.ok()) return ctx.Error("cannot expand to " + ir::PrintType(ir::Type::Tensor(ctx.input_dtype(0), ir::Shape(shape))) + ": " + out.status().message());
  ctx.SetOutput(0, ctx.input_dtype(0), *out);
  return Status::Ok();
}

Status InferTile(InferContext& ctx) {
  PRECIS_ASSIGN_OR_RETURN(auto in, ctx.InputDims(0));
  if (ctx.has_input(1) && !ctx.input_constant(1)) {
    // Repeats as run-time values: dim * repeats.
    auto values = ctx.ShapeValues(1);
    if (values.ok() && AnyValueSymbols(*values)) {
      if (values->size() != in.size()) return ctx.Error("repeats has " + std::to_string(values->size()) + " entries for rank " + std::to_string(in.size()));
      std::vector<Dim> out;
      for (size_t i = 0; i < in.size(); ++i) {
        auto e = ir::DimExpr::FromDim(in[i]);
        auto dim = e ? e->Mul((*values)[i]) : std::nullopt;
        out.push_back(dim ? dim->ToDim() : Dim());
      }
      ctx.SetOutput(0, ctx.input_dtype(0), out);
      return Status::Ok();
    }
  }
  PRECIS_ASSIGN_OR_RETURN(auto repeats, ctx.ConstantInts(1));
  if (repeats.size() != in.size()) return ctx.Error("repeats has " + std::to_string(repeats.size()) + " entries for rank " + std::to_string(in.size()));
  std::vector<Dim> out;
  for (size_t i = 0; i < in.size(); ++i) {
    if (repeats[i] < 0) return ctx.Error("repeats has a negative value");
    if (repeats[i] == 1) out.push_back(in[i]);
    else if (in[i].is_static()) out.push_back(Dim::Static(in[i].value() * repeats[i]));
    else out.push_back(repeats[i] == 0 ? Dim::Static(0) : Dim());
  }
  ctx.SetOutput(0, ctx.input_dtype(0), out);
  return Status::Ok();
}

Status InferShape(InferContext& ctx) {
  PRECIS_ASSIGN_OR_RETURN(auto in, ctx.InputDims(0));
  int64_t rank = int64_t(in.size());
  int64_t start = ctx.opset() >= 15 ? ctx.Int("start", 0) : 0, end = ctx.opset() >= 15 ? ctx.Int("end", rank) : rank;
  auto clamp = [rank](int64_t v) { return std::clamp<int64_t>(v < 0 ? v + rank : v, 0, rank); };
  ctx.SetOutput(0, ir::DType::kI64, {Dim::Static(std::max<int64_t>(clamp(end) - clamp(start), 0))});
  return Status::Ok();
}

Status InferSize(InferContext& ctx) {
  PRECIS_ASSIGN_OR_RETURN(auto in, ctx.InputDims(0));
  (void)in;
  ctx.SetOutput(0, ir::DType::kI64, {});
  return Status::Ok();
}

}  // namespace

void AddTensorIndexOps(OpRegistry& r);
void AddTensorResizeOps(OpRegistry& r);

void RegisterTensorOps(OpRegistry& r) {
  // {domain, op, min opset, max opset, infer, foldable, in-place input, kernel}
  r.Register({"", "Reshape", 1, INT_MAX, InferReshape, true, 0, "Reshape", PrecisionClass::kPassthrough});
  r.Register({"", "Flatten", 1, INT_MAX, InferFlatten, true, 0, "Reshape", PrecisionClass::kPassthrough});
  r.Register({"", "Squeeze", 1, INT_MAX, InferSqueeze, true, 0, "Reshape", PrecisionClass::kPassthrough});
  r.Register({"", "Unsqueeze", 1, INT_MAX, InferUnsqueeze, true, 0, "Reshape", PrecisionClass::kPassthrough});
  r.Register({"", "Transpose", 1, INT_MAX, InferTranspose, true, -1, "", PrecisionClass::kPassthrough});
  r.Register({"", "Concat", 1, INT_MAX, InferConcat, true, -1, "", PrecisionClass::kPassthrough});
  r.Register({"", "Split", 1, INT_MAX, InferSplit, true, -1, "", PrecisionClass::kPassthrough});
  r.Register({"", "Slice", 1, INT_MAX, InferSlice, true, -1, "", PrecisionClass::kPassthrough});
  r.Register({"", "Expand", 8, INT_MAX, InferExpand, true, -1, "", PrecisionClass::kPassthrough});
  r.Register({"", "Tile", 6, INT_MAX, InferTile, true, -1, "", PrecisionClass::kPassthrough});
  r.Register({"", "Shape", 1, INT_MAX, InferShape, true, -1, "", PrecisionClass::kUntouched});
  r.Register({"", "Size", 1, INT_MAX, InferSize, true, -1, "", PrecisionClass::kUntouched});
  AddTensorIndexOps(r);
  AddTensorResizeOps(r);
}

}  // namespace precis::ops
