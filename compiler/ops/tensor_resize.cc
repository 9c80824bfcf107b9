// Operator semantics: Resize and Upsample (output sizes from constant scales or sizes), Pad
// (constant pads; negative pads crop), DepthToSpace and SpaceToDepth.
#include <algorithm>
#include <cmath>

#include "compiler/ops/op_registry.h"
#include "compiler/ops/shape_values.h"
#include "compiler/ops/tensor_infer.h"
#include "runtime/base/value_expr.h"

namespace precis::ops {
namespace {

using ir::Dim;

bool OneOf(const std::string& s, std::initializer_list<const char*> options) {
  for (const char* o : options)
    if (s == o) return true;
  return false;
}

// Whether input i is present and not empty (Resize's roi/scales placeholders).
bool HasNonEmptyInput(const InferContext& ctx, size_t i) {
  if (!ctx.has_input(i)) return false;
  if (const ir::Tensor* t = ctx.input_constant(i)) return t->NumElements() > 0;
  const ir::Type& type = ctx.input_type(i);
  if (type.is_tensor() && type.shape().has_rank()) {
    auto n = type.shape().NumElements();
    if (n && *n == 0) return false;
  }
  return true;
}

// floor(in * scale) per dim; `scales` covers every dim.
Status ScaleDims(InferContext& ctx, const std::vector<double>& scales, std::vector<Dim>& dims) {
  if (scales.size() != dims.size()) return ctx.Error("has " + std::to_string(scales.size()) + " scales for rank " + std::to_string(dims.size()));
  for (size_t d = 0; d < dims.size(); ++d) {
    if (!(scales[d] > 0) || !std::isfinite(scales[d])) return ctx.Error("scales must be positive");
    if (scales[d] == 1) continue;
    if (!dims[d].is_static()) return ctx.Unsupported("resizes dim " + std::to_string(d) + ", which is not static");
    double n = std::floor(double(dims[d].value()) * scales[d]);
    if (n > double(ir::kMaxDim)) return ctx.Error("output is too large");
    dims[d] = Dim::Static(int64_t(n));
  }
  return Status::Ok();
}

Status CheckResizeModes(InferContext& ctx) {
  std::string mode = ctx.String("mode", "nearest");
  if (!OneOf(mode, {"nearest", "linear", "cubic"}) || (ctx.opset() < 11 && mode == "cubic"))
    return ctx.Error("unknown mode '" + mode + "'");
  if (mode != "nearest" && !ir::IsFloat(ctx.input_dtype(0)))
    return ctx.Unsupported("mode '" + mode + "' on " + std::string(ir::DTypeName(ctx.input_dtype(0))) + " data");
  if (ctx.opset() < 11) return Status::Ok();
  std::string coord = ctx.String("coordinate_transformation_mode", "half_pixel");
  bool known = OneOf(coord, {"half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners", "asymmetric", "tf_crop_and_resize"}) ||
               (coord == "tf_half_pixel_for_nn" && ctx.opset() < 13);
  if (!known) return ctx.Error("unknown coordinate_transformation_mode '" + coord + "'");
  std::string nearest = ctx.String("nearest_mode", "round_prefer_floor");
  if (!OneOf(nearest, {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"})) return ctx.Error("unknown nearest_mode '" + nearest + "'");
  std::string policy = ctx.String("keep_aspect_ratio_policy", "stretch");
  if (!OneOf(policy, {"stretch", "not_larger", "not_smaller"})) return ctx.Error("unknown keep_aspect_ratio_policy '" + policy + "'");
  // The roi moves the sampling positions only (output dims come from scales or sizes), so it may
  // be computed at run time: the kernel then reads it when it runs.
  if (coord == "tf_crop_and_resize" && !HasNonEmptyInput(ctx, 1)) return ctx.Error("tf_crop_and_resize needs roi");
  return Status::Ok();
}

Status InferResize(InferContext& ctx) {
  PRECIS_ASSIGN_OR_RETURN(auto dims, ctx.InputDims(0));
  PRECIS_RETURN_IF_ERROR(CheckResizeModes(ctx));
  int64_t rank = int64_t(dims.size());
  if (ctx.opset() < 11) {
    PRECIS_ASSIGN_OR_RETURN(auto scales, ctx.ConstantFloats(1));
    PRECIS_RETURN_IF_ERROR(ScaleDims(ctx, scales, dims));
    ctx.SetOutput(0, ctx.input_dtype(0), dims);
    return Status::Ok();
  }
  std::vector<int64_t> axes;
  if (auto a = ctx.Ints("axes"); a && ctx.opset() >= 18) {
    std::vector<bool> seen(dims.size(), false);
    for (int64_t x : *a) {
      PRECIS_ASSIGN_OR_RETURN(int64_t axis, NormalizeAxis(x, rank, ctx));
      if (seen[size_t(axis)]) return ctx.Error("axis " + std::to_string(x) + " is repeated");
      seen[size_t(axis)] = true;
      axes.push_back(axis);
    }
  } else {
    for (int64_t i = 0; i < rank; ++i) axes.push_back(i);
  }
  bool has_scales = HasNonEmptyInput(ctx, 2), has_sizes = HasNonEmptyInput(ctx, 3);
  if (has_scales == has_sizes) return ctx.Error("needs exactly one of scales and sizes");
  if (has_scales && !ctx.input_constant(2) && ctx.String("coordinate_transformation_mode", "half_pixel") != "tf_crop_and_resize") {
    // Scales given at run time: each output dim is floor(dim * scale), a value symbol bound from
    // the scales input for a static input dim (the kernel reads the scales when it runs).
    std::vector<Dim> out = dims;
    bool all = true;
    for (size_t i = 0; i < axes.size() && all; ++i) {
      const Dim& d = dims[size_t(axes[i])];
      auto v = d.is_static() ? FloatInputValue(ctx.node(), 2, i, std::max<int64_t>(d.value(), 1)) : std::nullopt;
      if (v) out[size_t(axes[i])] = d.value() == 0 ? Dim::Static(0) : v->ToDim();
      all = v.has_value();
    }
    if (all) {
      ctx.SetOutput(0, ctx.input_dtype(0), out);
      return Status::Ok();
    }
  }
  if (has_scales) {
    PRECIS_ASSIGN_OR_RETURN(auto given, ctx.ConstantFloats(2));
    if (given.size() != axes.size()) return ctx.Error("has " + std::to_string(given.size()) + " scales for " + std::to_string(axes.size()) + " axes");
    std::vector<double> scales(dims.size(), 1.0);
    for (size_t i = 0; i < axes.size(); ++i) scales[size_t(axes[i])] = given[i];
    PRECIS_RETURN_IF_ERROR(ScaleDims(ctx, scales, dims));
  } else {
    if (!ctx.input_constant(3)) {
      // Sizes as run-time values: the output dims, with the stretch policy (the kernel takes its
      // scales from the output dims).
      auto values = ctx.ShapeValues(3);
      if (values.ok() && AnyValueSymbols(*values)) {
        if (values->size() != axes.size()) return ctx.Error("has " + std::to_string(values->size()) + " sizes for " + std::to_string(axes.size()) + " axes");
        const std::string policy = ctx.String("keep_aspect_ratio_policy", "stretch");
        if (policy != "stretch") {
          // One scale for every axis, min (not_larger) or max (not_smaller) of size / input dim;
          // each output dim floor(scale * input dim + 0.5), as value expressions the session
          // evaluates as the kernel computes them (runtime/kernels/resize_taps.cc).
          std::optional<std::string> common;
          for (size_t i = 0; i < axes.size(); ++i) {
            const Dim& d = dims[size_t(axes[i])];
            auto size = ValueExprOf((*values)[i]);
            if (!d.is_static() || d.value() == 0 || !size) return ctx.Unsupported("keep_aspect_ratio_policy needs static nonzero input dims");
            auto ratio = value_expr::Apply("div", {*size, value_expr::Constant(double(d.value()))});
            common = !common || !ratio ? ratio : value_expr::Apply(policy == "not_larger" ? "min" : "max", {*common, *ratio});
            if (!common) return ctx.Unsupported("the sizes' expression is too long");
          }
          for (size_t i = 0; i < axes.size(); ++i) {
            Dim& d = dims[size_t(axes[i])];
            auto scaled = value_expr::Apply("mul", {*common, value_expr::Constant(double(d.value()))});
            auto rounded = scaled ? value_expr::Apply("add", {*scaled, value_expr::Constant(0.5)}) : std::nullopt;
            auto sym = rounded ? value_expr::Symbol("int", {*rounded}) : std::nullopt;
            if (!sym) return ctx.Unsupported("the sizes' expression is too long");
            d = ir::DimExpr::Symbol(*sym).ToDim();
          }
          ctx.SetOutput(0, ctx.input_dtype(0), dims);
          return Status::Ok();
        }
        for (size_t i = 0; i < axes.size(); ++i) dims[size_t(axes[i])] = (*values)[i].ToDim();
        ctx.SetOutput(0, ctx.input_dtype(0), dims);
        return Status::Ok();
      }
    }
    PRECIS_ASSIGN_OR_RETURN(auto sizes, ctx.ConstantInts(3));
    if (sizes.size() != axes.size()) return ctx.Error("has " + std::to_string(sizes.size()) + " sizes for " + std::to_string(axes.size()) + " axes");
    std::string policy = ctx.String("keep_aspect_ratio_policy", "stretch");
    double scale = policy == "not_larger" ? INFINITY : 0;
    for (size_t i = 0; i < axes.size(); ++i) {
      const Dim& d = dims[size_t(axes[i])];
      if (sizes[i] < 0) return ctx.Error("sizes must not be negative");
      if (policy == "stretch") continue;
      if (!d.is_static() || d.value() == 0) return ctx.Unsupported("keep_aspect_ratio_policy needs static nonzero input dims");
      double s = double(sizes[i]) / double(d.value());
      scale = policy == "not_larger" ? std::min(scale, s) : std::max(scale, s);
    }
    for (size_t i = 0; i < axes.size(); ++i) {
      Dim& d = dims[size_t(axes[i])];
      d = policy == "stretch" ? Dim::Static(sizes[i]) : Dim::Static(int64_t(scale * double(d.value()) + 0.5));
    }
  }
  ctx.SetOutput(0, ctx.input_dtype(0), dims);
  return Status::Ok();
}

// GridSample: Y [N, C, grid's spatial dims] from X [N, C, spatial...] and grid [N, spatial..., s].
Status InferGridSample(InferContext& ctx) {
  PRECIS_ASSIGN_OR_RETURN(auto x, ctx.InputDims(0));
  PRECIS_ASSIGN_OR_RETURN(auto grid, ctx.InputDims(1));
  if (!ir::IsFloat(ctx.input_dtype(0)) || !ir::IsFloat(ctx.input_dtype(1))) return ctx.Error("X and grid must be float tensors");
  if (x.size() < 3 || x.size() > 5) return ctx.Unsupported("X of rank " + std::to_string(x.size()) + " (supported: 1 to 3 spatial dims)");
  if (grid.size() != x.size()) return ctx.Error("grid's rank differs from X's");
  if (grid.back().is_static() && grid.back().value() != int64_t(x.size()) - 2) return ctx.Error("grid's last dim must be the spatial rank");
  std::string mode = ctx.String("mode", ctx.opset() >= 20 ? "linear" : "bilinear");
  if (!OneOf(mode, {"linear", "bilinear", "nearest", "cubic", "bicubic"})) return ctx.Error("unknown mode '" + mode + "'");
  if (!OneOf(ctx.String("padding_mode", "zeros"), {"zeros", "border", "reflection"})) return ctx.Error("unknown padding_mode");
  std::vector<Dim> out{x[0], x[1]};
  out.insert(out.end(), grid.begin() + 1, grid.end() - 1);
  ctx.SetOutput(0, ctx.input_dtype(0), out);
  return Status::Ok();
}

Status InferUpsample(InferContext& ctx) {
  PRECIS_ASSIGN_OR_RETURN(auto dims, ctx.InputDims(0));
  std::string mode = ctx.String("mode", "nearest");
  if (mode != "nearest" && mode != "linear" && mode != "bilinear") return ctx.Error("unknown mode '" + mode + "'");
  if (mode != "nearest" && !ir::IsFloat(ctx.input_dtype(0))) return ctx.Unsupported("mode '" + mode + "' on non-float data");
  std::vector<double> scales;
  if (ctx.opset() >= 9 && ctx.has_input(1) && !ctx.input_constant(1)) {
    // Scales given at run time, as for Resize: floor(dim * scale) per static dim.
    std::vector<Dim> out = dims;
    bool all = true;
    for (size_t i = 0; i < dims.size() && all; ++i) {
      auto v = dims[i].is_static() ? FloatInputValue(ctx.node(), 1, i, std::max<int64_t>(dims[i].value(), 1)) : std::nullopt;
      if (v) out[i] = dims[i].value() == 0 ? Dim::Static(0) : v->ToDim();
      all = v.has_value();
    }
    if (all) {
      ctx.SetOutput(0, ctx.input_dtype(0), out);
      return Status::Ok();
    }
  }
  if (ctx.opset() >= 9) {
    PRECIS_ASSIGN_OR_RETURN(scales, ctx.ConstantFloats(1));
  } else {
    const ir::Attribute* a = ctx.attr("scales");
    if (!a || a->kind != ir::Attribute::Kind::kFloats) return ctx.Error("has no 'scales' attribute");
    scales.assign(a->floats.begin(), a->floats.end());
  }
  PRECIS_RETURN_IF_ERROR(ScaleDims(ctx, scales, dims));
  ctx.SetOutput(0, ctx.input_dtype(0), dims);
  return Status::Ok();
}

Status InferPad(InferContext& ctx) {
  PRECIS_ASSIGN_OR_RETURN(auto dims, ctx.InputDims(0));
  int64_t rank = int64_t(dims.size());
  std::string mode = ctx.String("mode", "constant");
  if (!OneOf(mode, {"constant", "reflect", "edge", "wrap"}) || (mode == "wrap" && ctx.opset() < 19))
    return ctx.Error("unknown mode '" + mode + "'");
  std::vector<int64_t> pads, axes;
  bool value_axes_given = false;
  if (ctx.opset() >= 18 && ctx.has_input(3) && !ctx.input_constant(3)) {
    auto a = ctx.ShapeValues(3);
    value_axes_given = a.ok() && AnyValueSymbols(*a);
  }
  if (ctx.opset() >= 11 && ctx.has_input(1)) {
    // Pads (or axes) as run-time values: dim + before + after (the kernel reads them at run time).
    auto values = ctx.ShapeValues(1);
    // (or symbolic dims: the padding up to whole chunks of a split over a symbolic axis)
    bool symbolic = values.ok() && std::any_of(values->begin(), values->end(), [](const ir::DimExpr& v) { return !v.is_constant(); });
    if (values.ok() && (AnyValueSymbols(*values) || value_axes_given || symbolic)) {
      // Axes: constants or run-time values too; dim j grows by the pads of the entry naming it.
      DimExprs value_axes;
      if (ctx.has_input(3) && ctx.opset() >= 18) {
        PRECIS_ASSIGN_OR_RETURN(auto a, ctx.ShapeValues(3));
        for (const ir::DimExpr& x : a) {
          auto n = AxisValue(x, rank);
          if (!n) return ctx.Unsupported("its axes are run-time values it cannot follow");
          value_axes.push_back(*n);
        }
      } else {
        for (int64_t i = 0; i < rank; ++i) value_axes.push_back(ir::DimExpr::Constant(i));
      }
      if (values->size() != 2 * value_axes.size())
        return ctx.Error("has " + std::to_string(values->size()) + " pads for " + std::to_string(value_axes.size()) + " axes");
      auto in_e = DimExprsOf(dims);
      for (int64_t j = 0; j < rank; ++j) {
        std::optional<ir::DimExpr> d = in_e ? std::optional<ir::DimExpr>((*in_e)[size_t(j)]) : std::nullopt;
        for (size_t i = 0; i < value_axes.size() && d; ++i) {
          auto here = ir::DimExpr::Eq(value_axes[i], ir::DimExpr::Constant(j));
          auto both = (*values)[i].Add((*values)[i + value_axes.size()]);
          auto grow = here && both ? here->Mul(*both) : std::nullopt;
          d = grow ? d->Add(*grow) : std::nullopt;
        }
        dims[size_t(j)] = d ? d->ToDim() : Dim();
      }
      ctx.SetOutput(0, ctx.input_dtype(0), dims);
      return Status::Ok();
    }
  }
  if (ctx.opset() >= 11) {
    PRECIS_ASSIGN_OR_RETURN(pads, ctx.ConstantInts(1));
    if (ctx.has_input(2) && ctx.input_dtype(2) != ctx.input_dtype(0)) return ctx.Error("constant_value dtype differs from the data");
    if (ctx.has_input(3) && ctx.opset() >= 18) {
      PRECIS_ASSIGN_OR_RETURN(axes, ctx.ConstantInts(3));
    }
  } else {
    auto p = ctx.Ints(ctx.opset() >= 2 ? "pads" : "paddings");
    if (!p) return ctx.Error("has no 'pads' attribute");
    pads = *p;
  }
  if (axes.empty())
    for (int64_t i = 0; i < rank; ++i) axes.push_back(i);
  if (pads.size() != 2 * axes.size()) return ctx.Error("has " + std::to_string(pads.size()) + " pads for " + std::to_string(axes.size()) + " axes");
  std::vector<bool> seen(dims.size(), false);
  for (size_t i = 0; i < axes.size(); ++i) {
    PRECIS_ASSIGN_OR_RETURN(int64_t axis, NormalizeAxis(axes[i], rank, ctx));
    if (seen[size_t(axis)]) return ctx.Error("axis " + std::to_string(axes[i]) + " is repeated");
    seen[size_t(axis)] = true;
    int64_t before = pads[i], after = pads[i + axes.size()];
    if (std::abs(before) > ir::kMaxDim || std::abs(after) > ir::kMaxDim) return ctx.Error("pads are too large");
    Dim& d = dims[size_t(axis)];
    if (before == 0 && after == 0) continue;
    if (!d.is_static()) {
      d = Dim();
      continue;
    }
    // Negative pads crop first; the other modes then pad what is left.
    int64_t kept = d.value() + std::min<int64_t>(before, 0) + std::min<int64_t>(after, 0), n = d.value() + before + after;
    if (kept < 0 || n < 0) return ctx.Error("pads crop dim " + std::to_string(axis) + " (" + std::to_string(d.value()) + ") below zero");
    if (mode != "constant" && kept == 0 && n > 0) return ctx.Error("cannot pad an empty dim in mode '" + mode + "'");
    d = Dim::Static(n);
  }
  ctx.SetOutput(0, ctx.input_dtype(0), dims);
  return Status::Ok();
}

Status InferDepthToSpace(InferContext& ctx) {
  PRECIS_ASSIGN_OR_RETURN(auto d, ctx.InputDims(0));
  int64_t b = ctx.Int("blocksize", 0);
  std::string mode = ctx.String("mode", "DCR");
  if (d.size() != 4) return ctx.Error("input must be 4-D");
  if (b <= 0) return ctx.Error("blocksize must be positive");
  if (mode != "DCR" && mode != "CRD") return ctx.Error("unknown mode '" + mode + "'");
  if (!d[1].is_static()) return ctx.Unsupported("needs a static channel dim");
  if (d[1].value() % (b * b) != 0) return ctx.Error("channels " + std::to_string(d[1].value()) + " are not a multiple of blocksize^2");
  auto times = [b](const Dim& x) { return x.is_static() ? Dim::Static(x.value() * b) : b == 1 ? x : Dim(); };
  ctx.SetOutput(0, ctx.input_dtype(0), {d[0], Dim::Static(d[1].value() / (b * b)), times(d[2]), times(d[3])});
  return Status::Ok();
}

Status InferSpaceToDepth(InferContext& ctx) {
  PRECIS_ASSIGN_OR_RETURN(auto d, ctx.InputDims(0));
  int64_t b = ctx.Int("blocksize", 0);
  if (d.size() != 4) return ctx.Error("input must be 4-D");
  if (b <= 0) return ctx.Error("blocksize must be positive");
  std::vector<Dim> out{d[0], d[1].is_static() ? Dim::Static(d[1].value() * b * b) : Dim(), Dim(), Dim()};
  for (size_t i = 2; i < 4; ++i) {
    if (!d[i].is_static()) return ctx.Unsupported("needs static spatial dims");
    if (d[i].value() % b != 0) return ctx.Error("dim " + std::to_string(i) + " (" + std::to_string(d[i].value()) + ") is not a multiple of blocksize");
    out[i] = Dim::Static(d[i].value() / b);
  }
  ctx.SetOutput(0, ctx.input_dtype(0), out);
  return Status::Ok();
}

}  // namespace

// Called by RegisterTensorOps (tensor.cc).
void AddTensorResizeOps(OpRegistry& r) {
  r.Register({"", "Resize", 10, INT_MAX, InferResize, true, -1, "", PrecisionClass::kPassthrough, 1});
  r.Register({"", "GridSample", 16, INT_MAX, InferGridSample, true, -1, "", PrecisionClass::kKeepFp32});
  r.Register({"", "Upsample", 7, INT_MAX, InferUpsample, true, -1, "", PrecisionClass::kPassthrough, 1});
  r.Register({"", "Pad", 1, INT_MAX, InferPad, true, -1, "", PrecisionClass::kPassthrough});
  r.Register({"", "DepthToSpace", 1, INT_MAX, InferDepthToSpace, true, -1, "", PrecisionClass::kPassthrough});
  r.Register({"", "SpaceToDepth", 1, INT_MAX, InferSpaceToDepth, true, -1, "", PrecisionClass::kPassthrough});
}

}  // namespace precis::ops
