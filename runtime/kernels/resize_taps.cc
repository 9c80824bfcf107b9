// Resize and Upsample taps (see resize_taps.h).
#include "runtime/kernels/resize_taps.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "runtime/kernels/scalar_types.h"

namespace precis::rt::resize {
namespace {

enum class Coord { kHalfPixel, kHalfPixelSymmetric, kPytorchHalfPixel, kAlignCorners, kAsymmetric, kTfCropAndResize, kTfHalfPixelForNn };
enum class Rounding { kRoundPreferFloor, kRoundPreferCeil, kFloor, kCeil, kSimple };

struct ResizeOptions {
  Mode mode = Mode::kNearest;
  Coord coord = Coord::kHalfPixel;
  Rounding rounding = Rounding::kRoundPreferFloor;
  double cubic_a = -0.75;
  bool exclude_outside = false;
  bool antialias = false;  // linear and cubic: the filter stretched by 1 / scale when downsampling
  double extrapolation = 0;
  std::vector<double> scales;  // per dim
  std::vector<double> roi;     // per dim: starts then ends (tf_crop_and_resize)
};

// Float values of a constant tensor (float types or integers), read at load time.
// With `run_time` (the kernel builds its taps when it runs) a computed tensor is read too.
Status ConstantDoubles(const KernelArgs& args, const Tensor* t, const char* what, std::vector<double>& out, bool run_time = false) {
  out.clear();
  if (!t || t->numel == 0) return Status::Ok();
  if (!t->is_constant && !run_time) return args.Error(std::string(what) + " must be a constant");
  bool ok = DispatchNumeric(t->dtype, [&](auto tag) {
    using T = decltype(tag);
    for (int64_t i = 0; i < t->numel; ++i) out.push_back(double(Load(t->As<T>()[i])));
  });
  if (!ok) return args.Error(std::string(what) + " must be numeric");
  return Status::Ok();
}

Status ParseMode(const KernelArgs& args, const std::string& mode, ResizeOptions& opt) {
  if (mode == "nearest") opt.mode = Mode::kNearest;
  else if (mode == "linear" || mode == "bilinear") opt.mode = Mode::kLinear;
  else if (mode == "cubic") opt.mode = Mode::kCubic;
  else return args.Error("unknown mode '" + mode + "'");
  return Status::Ok();
}

// Per-dim scales from the scales or sizes input (with the axes and keep_aspect_ratio_policy of
// version 18), and the roi of tf_crop_and_resize.
Status ReadScalesAndRoi(const KernelArgs& args, const Tensor& in, ResizeOptions& opt, bool run_time) {
  size_t rank = in.dims.size();
  std::vector<int64_t> axes = args.attrs.Ints("axes");
  if (axes.empty())
    for (size_t d = 0; d < rank; ++d) axes.push_back(int64_t(d));
  for (int64_t& a : axes) {
    if (a < 0) a += int64_t(rank);
    if (a < 0 || a >= int64_t(rank)) return args.Error("axis is out of range");
  }
  std::vector<double> roi, scales, sizes;
  if (opt.coord == Coord::kTfCropAndResize) PRECIS_RETURN_IF_ERROR(ConstantDoubles(args, args.in(1), "roi", roi, run_time));
  PRECIS_RETURN_IF_ERROR(ConstantDoubles(args, args.in(2), "scales", scales, run_time));
  if (const Tensor* t = args.in(3); t && t->numel > 0 && !t->is_constant && args.out(0) && args.out(0)->rank() == int64_t(rank) &&
                                     args.attrs.String("keep_aspect_ratio_policy", "stretch") == "stretch") {
    // Sizes computed at run time (a dynamic plan's value input): they are the output dims.
    for (int64_t a : axes) sizes.push_back(double(args.out(0)->dims[size_t(a)]));
  } else {
    // Constant sizes, or run-time sizes with keep_aspect_ratio_policy not_larger/not_smaller
    // (read when the kernel runs; the output dims came from the same arithmetic).
    PRECIS_RETURN_IF_ERROR(ConstantDoubles(args, args.in(3), "sizes", sizes, run_time));
  }
  opt.scales.assign(rank, 1.0);
  if (!scales.empty()) {
    if (scales.size() != axes.size()) return args.Error("scales do not match the axes");
    for (size_t i = 0; i < axes.size(); ++i) opt.scales[size_t(axes[i])] = scales[i];
  } else {
    if (sizes.size() != axes.size()) return args.Error("needs scales or sizes for every axis");
    std::string policy = args.attrs.String("keep_aspect_ratio_policy", "stretch");
    double common = policy == "not_larger" ? INFINITY : 0;
    for (size_t i = 0; i < axes.size(); ++i) {
      size_t a = size_t(axes[i]);
      double s = in.dims[a] ? sizes[i] / double(in.dims[a]) : 1.0;
      opt.scales[a] = s;
      common = policy == "not_larger" ? std::min(common, s) : std::max(common, s);
    }
    if (policy != "stretch")
      for (int64_t a : axes) opt.scales[size_t(a)] = common;
  }
  opt.roi.clear();
  if (!roi.empty()) {
    if (roi.size() != 2 * axes.size()) return args.Error("roi does not match the axes");
    opt.roi.assign(2 * rank, 0.0);
    std::fill(opt.roi.begin() + int64_t(rank), opt.roi.end(), 1.0);
    for (size_t i = 0; i < axes.size(); ++i) {
      opt.roi[size_t(axes[i])] = roi[i];
      opt.roi[rank + size_t(axes[i])] = roi[axes.size() + i];
    }
  }
  if (opt.coord == Coord::kTfCropAndResize && opt.roi.empty()) return args.Error("tf_crop_and_resize needs roi");
  return Status::Ok();
}

// Mode, coordinate mapping, rounding and per-dim scales from the attributes and the
// constant inputs.
Status ReadResizeOptions(const KernelArgs& args, const Tensor& in, ResizeOptions& opt, bool run_time) {
  PRECIS_RETURN_IF_ERROR(ParseMode(args, args.attrs.String("mode", "nearest"), opt));
  std::string coord = args.attrs.String("coordinate_transformation_mode", "half_pixel");
  if (coord == "half_pixel") opt.coord = Coord::kHalfPixel;
  else if (coord == "half_pixel_symmetric") opt.coord = Coord::kHalfPixelSymmetric;
  else if (coord == "pytorch_half_pixel") opt.coord = Coord::kPytorchHalfPixel;
  else if (coord == "align_corners") opt.coord = Coord::kAlignCorners;
  else if (coord == "asymmetric") opt.coord = Coord::kAsymmetric;
  else if (coord == "tf_crop_and_resize") opt.coord = Coord::kTfCropAndResize;
  else if (coord == "tf_half_pixel_for_nn") opt.coord = Coord::kTfHalfPixelForNn;
  else return args.Error("unknown coordinate_transformation_mode '" + coord + "'");
  std::string rounding = args.attrs.String("nearest_mode", "round_prefer_floor");
  if (rounding == "round_prefer_floor") opt.rounding = Rounding::kRoundPreferFloor;
  else if (rounding == "round_prefer_ceil") opt.rounding = Rounding::kRoundPreferCeil;
  else if (rounding == "floor") opt.rounding = Rounding::kFloor;
  else if (rounding == "ceil") opt.rounding = Rounding::kCeil;
  else if (rounding == "simple") opt.rounding = Rounding::kSimple;  // kernel form of Resize 10
  else return args.Error("unknown nearest_mode '" + rounding + "'");
  opt.antialias = args.attrs.Int("antialias", 0) != 0 && opt.mode != Mode::kNearest;  // nearest has no filter to stretch
  opt.cubic_a = args.attrs.Float("cubic_coeff_a", -0.75f);
  opt.exclude_outside = args.attrs.Int("exclude_outside", 0) != 0;
  opt.extrapolation = args.attrs.Float("extrapolation_value", 0.f);
  return ReadScalesAndRoi(args, in, opt, run_time);
}

Status ReadUpsampleOptions(const KernelArgs& args, ResizeOptions& opt, bool run_time) {
  PRECIS_RETURN_IF_ERROR(ParseMode(args, args.attrs.String("mode", "nearest"), opt));
  if (opt.mode == Mode::kCubic) return args.Error("unknown mode 'cubic'");
  opt.coord = Coord::kAsymmetric;
  opt.rounding = Rounding::kFloor;
  if (!args.attrs.Has("scales")) return ConstantDoubles(args, args.in(1), "scales", opt.scales, run_time);  // input from version 9
  for (float s : args.attrs.Floats("scales")) opt.scales.push_back(s);
  return Status::Ok();
}

// Input coordinate of output coordinate y along a dim (ONNX coordinate_transformation_mode),
// and whether it lies outside the input (tf_crop_and_resize only).
double Original(const ResizeOptions& opt, size_t d, size_t rank, int64_t y, int64_t in_n, int64_t out_n, bool& outside) {
  double s = opt.scales[d], out_w = s * double(in_n), x = double(y);
  outside = false;
  switch (opt.coord) {
    case Coord::kHalfPixel: return (x + 0.5) / s - 0.5;
    case Coord::kHalfPixelSymmetric: {
      double adjustment = double(out_n) / out_w, center = double(in_n) / 2;
      return center * (1 - adjustment) + (x + 0.5) / s - 0.5;
    }
    case Coord::kPytorchHalfPixel: return out_n > 1 ? (x + 0.5) / s - 0.5 : 0.0;
    case Coord::kAlignCorners: return out_w == 1 ? 0.0 : x * double(in_n - 1) / (out_w - 1);
    case Coord::kAsymmetric: return x / s;
    case Coord::kTfHalfPixelForNn: return (x + 0.5) / s;
    case Coord::kTfCropAndResize: {
      double start = opt.roi[d], end = opt.roi[rank + d], span = double(in_n - 1);
      double xo = out_w == 1 ? (end - start) * span / 2 : x * (end - start) * span / (out_w - 1);
      xo += start * span;
      outside = xo < 0 || xo > span;
      return xo;
    }
  }
  return x;
}

int64_t NearestIndex(Rounding r, double x, bool downsampling) {
  double lo = std::floor(x);
  if (x == lo) return int64_t(x);
  double frac = x - lo;
  switch (r) {
    case Rounding::kRoundPreferFloor: return int64_t(frac <= 0.5 ? lo : lo + 1);
    case Rounding::kRoundPreferCeil: return int64_t(frac < 0.5 ? lo : lo + 1);
    case Rounding::kFloor: return int64_t(lo);
    case Rounding::kCeil: return int64_t(lo + 1);
    case Rounding::kSimple: return int64_t(downsampling ? lo + 1 : lo);
  }
  return int64_t(lo);
}

// Keys cubic convolution weights of the 4 neighbours at distances 1 + r, r, 1 - r, 2 - r.
void CubicWeights(double r, double a, double w[4]) {
  w[0] = ((a * (r + 1) - 5 * a) * (r + 1) + 8 * a) * (r + 1) - 4 * a;
  w[1] = ((a + 2) * r - (a + 3)) * r * r + 1;
  w[2] = ((a + 2) * (1 - r) - (a + 3)) * (1 - r) * (1 - r) + 1;
  w[3] = ((a * (2 - r) - 5 * a) * (2 - r) + 8 * a) * (2 - r) - 4 * a;
}

// The antialiasing filter of the ONNX reference (linear: a triangle, cubic: Keys' kernel, both
// stretched by 1 / scale when scale < 1), normalized to sum 1: n (even) weights for the inputs
// up - n/2 ... up + n/2 - 1, where up - 1 < x <= up and ratio = x - (up - 1).
int64_t AntialiasTaps(Mode mode, double scale) {
  double s = std::min(scale, 1.0);
  int64_t start = int64_t(std::floor((mode == Mode::kLinear ? -1.0 : -2.0) / s)) + 1;
  return 2 - 2 * start;
}

void AntialiasWeights(Mode mode, double ratio, double scale, double a, std::vector<double>& w) {
  double s = std::min(scale, 1.0), sum = 0;
  int64_t n = int64_t(w.size()), start = 1 - n / 2;
  for (int64_t t = 0; t < n; ++t) {
    double x = std::fabs(s * (double(start + t) - ratio));
    double v = 0;
    if (mode == Mode::kLinear) {
      v = std::clamp(1 - x, 0.0, 1.0);
    } else if (x <= 1) {
      v = ((a + 2) * x - (a + 3)) * x * x + 1;
    } else if (x < 2) {
      v = ((a * x - 5 * a) * x + 8 * a) * x - 4 * a;
    }
    w[size_t(t)] = v;
    sum += v;
  }
  for (double& v : w) v /= sum;
}

Status DimTaps(const KernelArgs& args, const ResizeOptions& opt, const Tensor& in, const Tensor& out, size_t d, Taps* r) {
  int64_t in_n = in.dims[d], out_n = out.dims[d];
  size_t rank = in.dims.size();
  if (in_n == 0 && out_n > 0) return args.Error("cannot resize an empty dim to a nonempty one");
  bool trivial_roi = opt.roi.empty() || (std::fabs(opt.roi[d]) < 1e-9 && std::fabs(opt.roi[rank + d] - 1) < 1e-9);
  bool identity = std::fabs(opt.scales[d] - 1) < 1e-9 && out_n == in_n && trivial_roi;
  if (!(opt.scales[d] > 0) && !identity) return args.Error("scales must be positive");
  int64_t k = identity || opt.mode == Mode::kNearest ? 1 : opt.mode == Mode::kLinear ? 2 : 4;
  bool antialias = opt.antialias && !identity && opt.scales[d] < 1;
  if (antialias) {
    // A filter wider than the input, plus the 4 taps clamping would give anyway, cannot add
    // anything: refusing it bounds the taps a corrupt plan's tiny scale could ask for.
    double width = double(AntialiasTaps(opt.mode, opt.scales[d]));
    if (!(width <= 2 * double(in_n) + 8)) return args.Error("antialias filter of " + std::to_string(width) + " taps for a dim of " + std::to_string(in_n));
    k = int64_t(width);
  }
  r->per_dim[d] = k;
  r->tap_begin[d] = int64_t(r->taps.size());
  r->outside_begin[d] = int64_t(r->outside.size());
  std::vector<double> w(static_cast<size_t>(k));  // this output's weights (4 for cubic, as CubicWeights writes)
  for (int64_t y = 0; y < out_n; ++y) {
    bool outside = false;
    if (identity) {
      r->taps.push_back({y, 1.0});
      r->outside.push_back(0);
      continue;
    }
    double x = Original(opt, d, rank, y, in_n, out_n, outside);
    // More than the widest tap's reach beyond the input, every tap clamps to an edge (or weighs
    // nothing, with exclude_outside) either way: clamping keeps the index arithmetic below in
    // range for the absurd scales or roi of a corrupt plan. NaN has no index at all.
    if (std::isnan(x)) return args.Error("scales and roi map output index " + std::to_string(y) + " of dim " + std::to_string(d) + " to NaN");
    double reach = double(std::max<int64_t>(k, 4));
    x = std::clamp(x, -reach, double(in_n) + reach);
    r->outside.push_back(outside ? 1 : 0);
    double up = std::ceil(x), ratio = x - (up - 1);  // in (0, 1]: prefer the left neighbour
    auto clamp = [in_n](int64_t i) { return std::clamp<int64_t>(i, 0, in_n - 1); };
    if (opt.mode == Mode::kNearest) {
      r->taps.push_back({clamp(NearestIndex(opt.rounding, x, opt.scales[d] < 1)), 1.0});
      continue;
    }
    int64_t first = int64_t(up) - k / 2;
    if (antialias) {
      AntialiasWeights(opt.mode, ratio, opt.scales[d], opt.cubic_a, w);
    } else if (k == 2) {
      w[0] = 1 - ratio;
      w[1] = ratio;
    } else {
      CubicWeights(ratio, opt.cubic_a, w.data());
    }
    if (opt.exclude_outside) {
      double sum = 0;
      for (int64_t t = 0; t < k; ++t) {
        if (first + t < 0 || first + t >= in_n) w[size_t(t)] = 0;
        sum += w[size_t(t)];
      }
      if (sum != 0)
        for (int64_t t = 0; t < k; ++t) w[size_t(t)] /= sum;
    }
    for (int64_t t = 0; t < k; ++t) r->taps.push_back({clamp(first + t), w[size_t(t)]});
  }
  return Status::Ok();
}

}  // namespace

Status BuildTaps(const KernelArgs& args, const Tensor& in, const Tensor& out, bool upsample, Taps* taps, bool run_time) {
  if (in.rank() != out.rank()) return args.Error("needs matching input and output");
  ResizeOptions opt;
  PRECIS_RETURN_IF_ERROR(upsample ? ReadUpsampleOptions(args, opt, run_time) : ReadResizeOptions(args, in, opt, run_time));
  if (opt.scales.size() != in.dims.size()) return args.Error("scales do not match the input rank");
  size_t rank = in.dims.size();
  *taps = Taps{};
  taps->mode = opt.mode;
  taps->extrapolation = opt.extrapolation;
  taps->per_dim.assign(rank, 1);
  taps->tap_begin.assign(rank, 0);
  taps->outside_begin.assign(rank, 0);
  for (size_t d = 0; d < rank; ++d) PRECIS_RETURN_IF_ERROR(DimTaps(args, opt, in, out, d, taps));
  return Status::Ok();
}

}  // namespace precis::rt::resize
