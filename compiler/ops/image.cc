// Operator semantics: image and feature operators. RoiAlign (pooled regions of a feature map),
// AffineGrid (sampling grids for GridSample), Col2Im (the inverse of im2col, summing overlapping
// blocks), CenterCropPad (crop or zero-pad each named axis around its centre) and TfIdfVectorizer
// (n-gram counts of integer tokens), NonMaxSuppression (selected boxes: a data-dependent count). Shapes given as inputs (AffineGrid's size, Col2Im's image and
// block shapes, CenterCropPad's shape) are constants or value symbols bound at run time
// (docs/dynamic-shapes.md).
#include "compiler/ops/op_registry.h"
#include "compiler/ops/shape_values.h"

namespace precis::ops {
namespace {

// RoiAlign: X [N, C, H, W], rois [R, 4], batch_indices [R] -> [R, C, output_height, output_width].
Status InferRoiAlign(InferContext& ctx) {
  PRECIS_ASSIGN_OR_RETURN(auto x, ctx.InputDims(0));
  PRECIS_ASSIGN_OR_RETURN(auto rois, ctx.InputDims(1));
  PRECIS_ASSIGN_OR_RETURN(auto idx, ctx.InputDims(2));
  if (!ir::IsFloat(ctx.input_dtype(0)) || ctx.input_dtype(1) != ctx.input_dtype(0)) return ctx.Error("X and rois must be floats of one dtype");
  if (!ir::IsInteger(ctx.input_dtype(2))) return ctx.Error("batch_indices must be integers");
  if (x.size() != 4 || rois.size() != 2 || idx.size() != 1) return ctx.Error("X must be 4-D, rois 2-D and batch_indices 1-D");
  if (rois[1].is_static() && rois[1].value() != 4) return ctx.Error("rois must be [num_rois, 4]");
  std::string mode = ctx.String("mode", "avg");
  if (mode != "avg" && mode != "max") return ctx.Error("mode must be 'avg' or 'max'");
  std::string ct = ctx.String("coordinate_transformation_mode", ctx.opset() < 16 ? "output_half_pixel" : "half_pixel");
  if (ct != "half_pixel" && ct != "output_half_pixel") return ctx.Error("unknown coordinate_transformation_mode '" + ct + "'");
  int64_t oh = ctx.Int("output_height", 1), ow = ctx.Int("output_width", 1);
  if (oh < 1 || ow < 1 || ctx.Int("sampling_ratio", 0) < 0) return ctx.Error("output sizes must be positive and sampling_ratio >= 0");
  ctx.SetOutput(0, ctx.input_dtype(0), {rois[0], x[1], ir::Dim::Static(oh), ir::Dim::Static(ow)});
  return Status::Ok();
}

// AffineGrid: theta [N, 2, 3] (2-D) or [N, 3, 4] (3-D), size [N, C, H, W] or [N, C, D, H, W] ->
// grid [N, H, W, 2] or [N, D, H, W, 3].
Status InferAffineGrid(InferContext& ctx) {
  PRECIS_ASSIGN_OR_RETURN(auto theta, ctx.InputDims(0));
  if (!ir::IsFloat(ctx.input_dtype(0))) return ctx.Error("theta must be a float tensor");
  if (!ir::IsInteger(ctx.input_dtype(1))) return ctx.Error("size must be integers");
  PRECIS_ASSIGN_OR_RETURN(auto size, ctx.ShapeValues(1));
  if (size.size() != 4 && size.size() != 5) return ctx.Error("size must hold 4 (2-D) or 5 (3-D) values");
  int64_t spatial = int64_t(size.size()) - 2;
  if (theta.size() != 3 || (theta[1].is_static() && theta[1].value() != spatial) || (theta[2].is_static() && theta[2].value() != spatial + 1))
    return ctx.Error("theta must be [N, " + std::to_string(spatial) + ", " + std::to_string(spatial + 1) + "] for a " + std::to_string(spatial) + "-D size");
  std::vector<ir::Dim> out{theta[0]};
  for (size_t i = 2; i < size.size(); ++i) out.push_back(size[i].ToDim());
  out.push_back(ir::Dim::Static(spatial));
  ctx.SetOutput(0, ctx.input_dtype(0), out);
  return Status::Ok();
}

// Col2Im: input [N, C * prod(block), L], image_shape [S], block_shape [S] -> [N, C, image...].
Status InferCol2Im(InferContext& ctx) {
  PRECIS_ASSIGN_OR_RETURN(auto x, ctx.InputDims(0));
  if (x.size() != 3) return ctx.Error("input must be 3-D [N, C * prod(block_shape), L]");
  if (!ir::IsInteger(ctx.input_dtype(1)) || !ir::IsInteger(ctx.input_dtype(2))) return ctx.Error("image_shape and block_shape must be integers");
  PRECIS_ASSIGN_OR_RETURN(auto image, ctx.ShapeValues(1));
  PRECIS_ASSIGN_OR_RETURN(auto block, ctx.ShapeValues(2));
  if (image.empty() || image.size() != block.size()) return ctx.Error("image_shape and block_shape must hold one value per spatial dim");
  size_t s = image.size();
  for (const char* attr : {"dilations", "strides"})
    if (auto v = ctx.Ints(attr); v && v->size() != s) return ctx.Error(std::string(attr) + " must hold " + std::to_string(s) + " values");
  if (auto p = ctx.Ints("pads"); p && p->size() != 2 * s) return ctx.Error("pads must hold " + std::to_string(2 * s) + " values");
  std::optional<ir::DimExpr> prod = ir::DimExpr::Constant(1);
  for (const ir::DimExpr& b : block) prod = prod ? prod->Mul(b) : std::nullopt;
  auto c_in = DimExprsOf({x[1]});
  std::optional<ir::DimExpr> c = prod && c_in ? (*c_in)[0].FloorDivBy(*prod) : std::nullopt;
  std::vector<ir::Dim> out{x[0], c ? c->ToDim() : ir::Dim()};
  for (const ir::DimExpr& v : image) out.push_back(v.ToDim());
  ctx.SetOutput(0, ctx.input_dtype(0), out);
  return Status::Ok();
}

// CenterCropPad: input, shape (one value per axis of `axes`, default every axis).
Status InferCenterCropPad(InferContext& ctx) {
  PRECIS_ASSIGN_OR_RETURN(auto x, ctx.InputDims(0));
  if (!ir::IsInteger(ctx.input_dtype(1))) return ctx.Error("shape must be integers");
  PRECIS_ASSIGN_OR_RETURN(auto shape, ctx.ShapeValues(1));
  int64_t rank = int64_t(x.size());
  std::vector<int64_t> axes;
  if (auto a = ctx.Ints("axes")) {
    for (int64_t axis : *a) {
      PRECIS_ASSIGN_OR_RETURN(int64_t n, NormalizeAxis(axis, rank, ctx));
      axes.push_back(n);
    }
  } else {
    for (int64_t i = 0; i < rank; ++i) axes.push_back(i);
  }
  if (shape.size() != axes.size()) return ctx.Error("shape holds " + std::to_string(shape.size()) + " values for " + std::to_string(axes.size()) + " axes");
  for (size_t i = 0; i < axes.size(); ++i) {
    if (shape[i].is_constant() && shape[i].constant() < 0) return ctx.Error("shape values must be >= 0");
    x[size_t(axes[i])] = shape[i].ToDim();
  }
  ctx.SetOutput(0, ctx.input_dtype(0), x);
  return Status::Ok();
}

// TfIdfVectorizer: integer tokens [C] or [B, C] -> float counts [O] or [B, O], O = max index + 1.
Status InferTfIdfVectorizer(InferContext& ctx) {
  PRECIS_ASSIGN_OR_RETURN(auto x, ctx.InputDims(0));
  if (ctx.input_dtype(0) == ir::DType::kString) return ctx.Unsupported("string tokens (pool_strings) are not supported");
  if (ctx.input_dtype(0) != ir::DType::kI64 && ctx.input_dtype(0) != ir::DType::kI32) return ctx.Error("tokens must be int32 or int64");
  if (x.size() != 1 && x.size() != 2) return ctx.Error("tokens must be [C] or [B, C]");
  auto indexes = ctx.Ints("ngram_indexes");
  auto counts = ctx.Ints("ngram_counts");
  auto pool = ctx.Ints("pool_int64s");
  if (!pool) return ctx.Unsupported("pool_strings: only integer pools (pool_int64s) are supported");
  if (!indexes || indexes->empty() || !counts) return ctx.Error("ngram_indexes and ngram_counts are required");
  int64_t out = 0;
  for (int64_t v : *indexes) {
    if (v < 0 || v >= (int64_t(1) << 30)) return ctx.Error("ngram_indexes must be in [0, 2^30)");
    out = std::max(out, v + 1);
  }
  int64_t lo = ctx.Int("min_gram_length", 0), hi = ctx.Int("max_gram_length", 0);
  if (lo < 1 || hi < lo || ctx.Int("max_skip_count", 0) < 0) return ctx.Error("needs 1 <= min_gram_length <= max_gram_length and max_skip_count >= 0");
  std::string mode = ctx.String("mode", "");
  if (mode != "TF" && mode != "IDF" && mode != "TFIDF") return ctx.Error("mode must be TF, IDF or TFIDF");
  for (size_t i = 0; i < counts->size(); ++i)
    if ((*counts)[i] < 0 || (*counts)[i] > int64_t(pool->size()) || (i && (*counts)[i] < (*counts)[i - 1]))
      return ctx.Error("ngram_counts must be ascending offsets into the pool");
  if (x.size() == 1) ctx.SetOutput(0, ir::DType::kF32, {ir::Dim::Static(out)});
  else ctx.SetOutput(0, ir::DType::kF32, {x[0], ir::Dim::Static(out)});
  return Status::Ok();
}

// NonMaxSuppression: boxes [B, N, 4], scores [B, C, N], optional max_output_boxes_per_class,
// iou_threshold, score_threshold -> selected_indices [count, 3] (batch, class, box); count is a
// data dim.
Status InferNonMaxSuppression(InferContext& ctx) {
  PRECIS_ASSIGN_OR_RETURN(auto boxes, ctx.InputDims(0));
  PRECIS_ASSIGN_OR_RETURN(auto scores, ctx.InputDims(1));
  if (!ir::IsFloat(ctx.input_dtype(0)) || !ir::IsFloat(ctx.input_dtype(1))) return ctx.Error("boxes and scores must be floats");
  if (boxes.size() != 3 || scores.size() != 3 || (boxes[2].is_static() && boxes[2].value() != 4))
    return ctx.Error("boxes must be [batches, boxes, 4] and scores [batches, classes, boxes]");
  if (ctx.has_input(2) && !ir::IsInteger(ctx.input_dtype(2))) return ctx.Error("max_output_boxes_per_class must be an integer");
  for (size_t i : {size_t(3), size_t(4)})
    if (ctx.has_input(i) && !ir::IsFloat(ctx.input_dtype(i))) return ctx.Error("the thresholds must be floats");
  int64_t center = ctx.Int("center_point_box", 0);
  if (center != 0 && center != 1) return ctx.Error("center_point_box must be 0 or 1");
  ctx.SetOutput(0, ir::DType::kI64, {DataDim(ctx.node()), ir::Dim::Static(3)});
  return Status::Ok();
}

// DeformConv (opset 19), 2-D: X [N, C, H, W], W [oC, C / group, kH, kW], offset [N,
// offset_group * 2 * kH * kW, oH, oW], B [oC], mask [N, offset_group * kH * kW, oH, oW] ->
// [N, oC, oH, oW], oH and oW as a convolution's (pads, strides, dilations).
Status InferDeformConv(InferContext& ctx) {
  PRECIS_ASSIGN_OR_RETURN(auto x, ctx.InputDims(0));
  PRECIS_ASSIGN_OR_RETURN(auto w, ctx.InputDims(1));
  PRECIS_ASSIGN_OR_RETURN(auto offset, ctx.InputDims(2));
  ir::DType dt = ctx.input_dtype(0);
  if (!ir::IsFloat(dt) || ctx.input_dtype(1) != dt || ctx.input_dtype(2) != dt) return ctx.Error("X, W and offset must be float tensors of one dtype");
  if (x.size() != 4 || w.size() != 4 || offset.size() != 4) return ctx.Unsupported("only 2-D deformable convolution (X [N, C, H, W]) is supported");
  for (const auto* dims : {&x, &w})
    for (size_t j = 1; j < 4; ++j)
      if (!(*dims)[j].is_static()) return ctx.Unsupported("channels, kernel and image sizes must be static");
  int64_t group = ctx.Int("group", 1), og = ctx.Int("offset_group", 1);
  int64_t c = x[1].value(), oc = w[0].value(), kh = w[2].value(), kw = w[3].value();
  if (group < 1 || og < 1 || c != w[1].value() * group || oc % group != 0 || c % og != 0)
    return ctx.Error("channels do not fit group " + std::to_string(group) + " and offset_group " + std::to_string(og));
  if (auto ks = ctx.Ints("kernel_shape"); ks && (ks->size() != 2 || (*ks)[0] != kh || (*ks)[1] != kw)) return ctx.Error("kernel_shape differs from W's");
  auto pads = ctx.Ints("pads").value_or(std::vector<int64_t>{0, 0, 0, 0});
  auto strides = ctx.Ints("strides").value_or(std::vector<int64_t>{1, 1});
  auto dil = ctx.Ints("dilations").value_or(std::vector<int64_t>{1, 1});
  if (pads.size() != 4 || strides.size() != 2 || dil.size() != 2 || strides[0] < 1 || strides[1] < 1 || dil[0] < 1 || dil[1] < 1)
    return ctx.Error("pads, strides and dilations must be 2-D and positive");
  int64_t oh = (x[2].value() + pads[0] + pads[2] - ((kh - 1) * dil[0] + 1)) / strides[0] + 1;
  int64_t ow = (x[3].value() + pads[1] + pads[3] - ((kw - 1) * dil[1] + 1)) / strides[1] + 1;
  if (oh < 1 || ow < 1) return ctx.Error("the kernel does not fit the padded image");
  auto fits = [&](const std::vector<ir::Dim>& d, int64_t channels) {
    return d[1].is_static() && d[1].value() == channels && d[2].is_static() && d[2].value() == oh && d[3].is_static() && d[3].value() == ow;
  };
  if (!fits(offset, og * 2 * kh * kw))
    return ctx.Error("offset must be [N, " + std::to_string(og * 2 * kh * kw) + ", " + std::to_string(oh) + ", " + std::to_string(ow) + "]");
  if (ctx.has_input(3)) {
    PRECIS_ASSIGN_OR_RETURN(auto b, ctx.InputDims(3));
    if (b.size() != 1 || !b[0].is_static() || b[0].value() != oc || ctx.input_dtype(3) != dt) return ctx.Error("B must be [" + std::to_string(oc) + "]");
  }
  if (ctx.has_input(4)) {
    PRECIS_ASSIGN_OR_RETURN(auto m, ctx.InputDims(4));
    if (m.size() != 4 || !fits(m, og * kh * kw) || ctx.input_dtype(4) != dt)
      return ctx.Error("mask must be [N, " + std::to_string(og * kh * kw) + ", " + std::to_string(oh) + ", " + std::to_string(ow) + "]");
  }
  ctx.SetOutput(0, dt, {x[0], ir::Dim::Static(oc), ir::Dim::Static(oh), ir::Dim::Static(ow)});
  return Status::Ok();
}

}  // namespace

void RegisterImageOps(OpRegistry& r) {
  r.Register({.domain = "", .op_type = "DeformConv", .min_opset = 19, .infer = InferDeformConv, .kernel = "", .precision = PrecisionClass::kKeepFp32});
  r.Register({.domain = "", .op_type = "RoiAlign", .min_opset = 10, .infer = InferRoiAlign, .kernel = "", .precision = PrecisionClass::kFollow, .low_inputs = 1});
  r.Register({.domain = "", .op_type = "AffineGrid", .min_opset = 20, .infer = InferAffineGrid, .kernel = "", .precision = PrecisionClass::kKeepFp32});
  r.Register({.domain = "", .op_type = "Col2Im", .min_opset = 18, .infer = InferCol2Im, .kernel = "", .precision = PrecisionClass::kFollow, .low_inputs = 1});
  r.Register({.domain = "", .op_type = "CenterCropPad", .min_opset = 18, .infer = InferCenterCropPad, .kernel = "", .precision = PrecisionClass::kPassthrough, .low_inputs = 1});
  r.Register({.domain = "", .op_type = "NonMaxSuppression", .min_opset = 10, .infer = InferNonMaxSuppression, .foldable = false, .kernel = "",
              .precision = PrecisionClass::kKeepFp32});
  r.Register({.domain = "", .op_type = "TfIdfVectorizer", .min_opset = 9, .infer = InferTfIdfVectorizer, .kernel = "", .precision = PrecisionClass::kUntouched});
}

}  // namespace precis::ops
