// CUDA kernels: Resize (nearest, linear and cubic over any dims, every coordinate
// transformation mode, nearest_mode, cubic_coeff_a, exclude_outside, extrapolation_value) and
// Upsample, mirroring runtime/cpu/kernels/tensor_resize.cc. Init computes the per-dim taps
// (input index and weight of each output coordinate, and whether it is extrapolated) with the
// CPU's code and uploads them; one thread per output element sums the tensor product of its
// taps in the CPU's order, in double, without FMA contraction, so results match the CPU's bit
// for bit. Nearest copies elements of any dtype by size.
#include <algorithm>
#include <cmath>

#include "runtime/cuda/kernels/tensor_util.cuh"

namespace precis::rt::cuda::tensor {
namespace {

enum class Mode { kNearest, kLinear, kCubic };
enum class Coord { kHalfPixel, kHalfPixelSymmetric, kPytorchHalfPixel, kAlignCorners, kAsymmetric, kTfCropAndResize, kTfHalfPixelForNn };
enum class Rounding { kRoundPreferFloor, kRoundPreferCeil, kFloor, kCeil, kSimple };

struct ResizeOptions {
  Mode mode = Mode::kNearest;
  Coord coord = Coord::kHalfPixel;
  Rounding rounding = Rounding::kRoundPreferFloor;
  double cubic_a = -0.75;
  bool exclude_outside = false;
  double extrapolation = 0;
  std::vector<double> scales;  // per dim
  std::vector<double> roi;     // per dim: starts then ends (tf_crop_and_resize)
};

// Float values of a constant tensor (float types or integers), read at load time.
Status ConstantDoubles(const KernelArgs& args, const Tensor* t, const char* what, std::vector<double>& out) {
  out.clear();
  if (!t || t->numel == 0) return Status::Ok();
  if (!t->is_constant) return args.Error(std::string(what) + " must be a constant");
  if (t->dtype == DataType::kBool || DataTypeSize(t->dtype) == 0) return args.Error(std::string(what) + " must be numeric");
  for (int64_t i = 0; i < t->numel; ++i) out.push_back(LoadDouble(t->data, t->dtype, i));
  return Status::Ok();
}

// The uploaded taps: per dim d, output coordinate y reads taps[d] entries from
// tap_begin[d] + y * taps[d], and is extrapolated when outside[outside_begin[d] + y].
struct ResizeTables {
  int rank = 0;
  int64_t out_dims[kMaxRank] = {};
  int64_t in_strides[kMaxRank] = {};
  int64_t taps[kMaxRank] = {};
  int64_t tap_begin[kMaxRank] = {};
  int64_t outside_begin[kMaxRank] = {};
  const int64_t* index = nullptr;
  const double* weight = nullptr;
  const uint8_t* outside = nullptr;

  // Splits output element t into coordinates; true when any is extrapolated.
  __host__ __device__ bool Coordinates(int64_t t, int64_t* c) const {
    bool out = false;
#ifdef __CUDA_ARCH__
#pragma unroll
#endif
    for (int d = kMaxRank - 1; d >= 0; --d) {
      if (d >= rank) continue;
      t = DivMod(t, out_dims[d], c[d]);
      out = out || outside[outside_begin[d] + c[d]] != 0;
    }
    return out;
  }
};

template <typename U> struct ResizeNearestOp {
  const U* in;
  U* out;
  ResizeTables r;
  U extrapolation;
  __host__ __device__ void operator()(int64_t t) const {
    int64_t c[kMaxRank];
    if (r.Coordinates(t, c)) {
      out[t] = extrapolation;
      return;
    }
    int64_t off = 0;
#ifdef __CUDA_ARCH__
#pragma unroll
#endif
    for (int d = 0; d < kMaxRank; ++d)
      if (d < r.rank) off += r.index[r.tap_begin[d] + c[d] * r.taps[d]] * r.in_strides[d];
    out[t] = in[off];
  }
};

// The taps' combinations in the CPU's order (dim 0 slowest), weights multiplied from dim 0 on.
template <typename T> struct ResizeInterpolateOp {
  const T* in;
  T* out;
  ResizeTables r;
  T extrapolation;
  __host__ __device__ void operator()(int64_t t) const {
    int64_t c[kMaxRank], tap[kMaxRank];
    if (r.Coordinates(t, c)) {
      out[t] = extrapolation;
      return;
    }
    int64_t first[kMaxRank];
#ifdef __CUDA_ARCH__
#pragma unroll
#endif
    for (int d = 0; d < kMaxRank; ++d) {
      tap[d] = 0;
      first[d] = d < r.rank ? r.tap_begin[d] + c[d] * r.taps[d] : 0;
    }
    double acc = 0;
    for (bool more = true; more;) {
      double w = 1.0;
      int64_t off = 0;
#ifdef __CUDA_ARCH__
#pragma unroll
#endif
      for (int d = 0; d < kMaxRank; ++d) {
        if (d >= r.rank) continue;
        int64_t p = first[d] + tap[d];
        w = MulRn(w, r.weight[p]);
        off += r.index[p] * r.in_strides[d];
      }
      acc = AddRn(acc, MulRn(w, double(LoadValue(in[off]))));
      more = false;
#ifdef __CUDA_ARCH__
#pragma unroll
#endif
      for (int d = kMaxRank - 1; d >= 0; --d) {
        if (d >= r.rank || more) continue;
        if (++tap[d] < r.taps[d]) more = true;
        else tap[d] = 0;
      }
    }
    out[t] = StoreValue<T>(acc);
  }
};

class ResizeKernel : public Kernel {
 public:
  Status Init(const KernelArgs& args, CudaContext& ctx) override {
    const Tensor *in = args.in(0), *out = args.out(0);
    if (!in || !out || in->rank() != out->rank()) return args.Error("needs matching input and output");
    if (in->dtype != out->dtype) return DtypeError(args, "needs matching input and output");
    ResizeOptions opt;
    PRECIS_RETURN_IF_ERROR(ReadOptions(args, *in, opt));
    if (opt.scales.size() != in->dims.size()) return args.Error("scales do not match the input rank");
    bool is_float = in->dtype == DataType::kF32 || in->dtype == DataType::kF64 || in->dtype == DataType::kF16 || in->dtype == DataType::kBF16;
    if (opt.mode == Mode::kNearest ? DataTypeSize(in->dtype) == 0 : !is_float)
      return args.Error(std::string("unsupported dtype ") + DataTypeName(in->dtype));
    if (in->rank() > kMaxRank) return RankLimit(args, "the input");
    mode_ = opt.mode;
    extrapolation_ = SaturatedBits(in->dtype, opt.extrapolation);
    size_t rank = in->dims.size();
    tables_ = ResizeTables{};
    tables_.rank = int(rank);
    std::vector<int64_t> strides = DenseStrides(in->dims);
    taps_.clear();
    outside_.clear();
    for (size_t d = 0; d < rank; ++d) {
      tables_.out_dims[d] = out->dims[d];
      tables_.in_strides[d] = strides[d];
      PRECIS_RETURN_IF_ERROR(BuildTaps(args, opt, *in, *out, d));
    }
    std::vector<int64_t> index;
    std::vector<double> weight;
    for (const Tap& t : taps_) {
      index.push_back(t.index);
      weight.push_back(t.weight);
    }
    PRECIS_ASSIGN_OR_RETURN(tables_.index, UploadTable(ctx, index, args.node + " resize indices"));
    PRECIS_ASSIGN_OR_RETURN(tables_.weight, UploadTable(ctx, weight, args.node + " resize weights"));
    PRECIS_ASSIGN_OR_RETURN(tables_.outside, UploadTable(ctx, outside_, args.node + " resize extrapolation flags"));
    taps_.clear();
    outside_.clear();
    return Status::Ok();
  }

  Status Run(const KernelArgs& args, CudaContext& ctx) override {
    const Tensor& in = *args.in(0);
    Tensor& out = *args.out(0);
    if (out.numel == 0) return Status::Ok();
    if (out.rank() == 0) {
      PRECIS_CUDA_CHECK(args, CopyAsync(out.data, in.data, DataTypeSize(in.dtype), ctx.stream));
      return Status::Ok();
    }
    cudaError_t e = cudaSuccess;
    if (mode_ == Mode::kNearest) {
      DispatchBySize(DataTypeSize(in.dtype), [&](auto tag) {
        using U = decltype(tag);
        e = Launch(out.numel, ctx.stream, ResizeNearestOp<U>{in.As<U>(), out.As<U>(), tables_, Bits<U>()});
      });
    } else {
      DispatchFloat(in.dtype, [&](auto tag) {
        using T = decltype(tag);
        e = Launch(out.numel, ctx.stream, ResizeInterpolateOp<T>{in.As<T>(), out.As<T>(), tables_, Bits<T>()});
      });
    }
    PRECIS_CUDA_CHECK(args, e);
    return Status::Ok();
  }

 protected:
  // Mode, coordinate mapping, rounding and per-dim scales from the attributes and the
  // constant inputs.
  virtual Status ReadOptions(const KernelArgs& args, const Tensor& in, ResizeOptions& opt) {
    int64_t opset = args.attrs.Int("opset", 13);
    PRECIS_RETURN_IF_ERROR(ParseMode(args, args.attrs.String("mode", "nearest"), opt));
    if (opset < 11) {
      opt.coord = Coord::kAsymmetric;
      opt.rounding = Rounding::kSimple;
      return ConstantDoubles(args, args.in(1), "scales", opt.scales);
    }
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
    else return args.Error("unknown nearest_mode '" + rounding + "'");
    if (args.attrs.Int("antialias", 0) != 0) return args.Error("antialias is not supported");
    opt.cubic_a = args.attrs.Float("cubic_coeff_a", -0.75f);
    opt.exclude_outside = args.attrs.Int("exclude_outside", 0) != 0;
    opt.extrapolation = args.attrs.Float("extrapolation_value", 0.f);
    return ReadScalesAndRoi(args, in, opset, opt);
  }

  static Status ParseMode(const KernelArgs& args, const std::string& mode, ResizeOptions& opt) {
    if (mode == "nearest") opt.mode = Mode::kNearest;
    else if (mode == "linear" || mode == "bilinear") opt.mode = Mode::kLinear;
    else if (mode == "cubic") opt.mode = Mode::kCubic;
    else return args.Error("unknown mode '" + mode + "'");
    return Status::Ok();
  }

 private:
  struct Tap {
    int64_t index;  // input coordinate, already clamped
    double weight;
  };

  template <typename U> U Bits() const {
    U v;
    std::memcpy(static_cast<void*>(&v), &extrapolation_, sizeof v);
    return v;
  }

  // Opset 11+: per-dim scales from the scales or sizes input (with axes and
  // keep_aspect_ratio_policy from 18), and the roi of tf_crop_and_resize.
  static Status ReadScalesAndRoi(const KernelArgs& args, const Tensor& in, int64_t opset, ResizeOptions& opt) {
    size_t rank = in.dims.size();
    std::vector<int64_t> axes = opset >= 18 ? args.attrs.Ints("axes") : std::vector<int64_t>();
    if (axes.empty())
      for (size_t d = 0; d < rank; ++d) axes.push_back(int64_t(d));
    for (int64_t& a : axes) {
      if (a < 0) a += int64_t(rank);
      if (a < 0 || a >= int64_t(rank)) return args.Error("axis is out of range");
    }
    std::vector<double> roi, scales, sizes;
    if (opt.coord == Coord::kTfCropAndResize) PRECIS_RETURN_IF_ERROR(ConstantDoubles(args, args.in(1), "roi", roi));
    PRECIS_RETURN_IF_ERROR(ConstantDoubles(args, args.in(2), "scales", scales));
    PRECIS_RETURN_IF_ERROR(ConstantDoubles(args, args.in(3), "sizes", sizes));
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

  // Input coordinate of output coordinate y along a dim (ONNX coordinate_transformation_mode),
  // and whether it lies outside the input (tf_crop_and_resize only).
  static double Original(const ResizeOptions& opt, size_t d, size_t rank, int64_t y, int64_t in_n, int64_t out_n, bool& outside) {
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

  Status BuildTaps(const KernelArgs& args, const ResizeOptions& opt, const Tensor& in, const Tensor& out, size_t d) {
    int64_t in_n = in.dims[d], out_n = out.dims[d];
    size_t rank = in.dims.size();
    if (in_n == 0 && out_n > 0) return args.Error("cannot resize an empty dim to a nonempty one");
    bool trivial_roi = opt.roi.empty() || (std::fabs(opt.roi[d]) < 1e-9 && std::fabs(opt.roi[rank + d] - 1) < 1e-9);
    bool identity = std::fabs(opt.scales[d] - 1) < 1e-9 && out_n == in_n && trivial_roi;
    int64_t k = identity || opt.mode == Mode::kNearest ? 1 : opt.mode == Mode::kLinear ? 2 : 4;
    if (!(opt.scales[d] > 0) && !identity) return args.Error("scales must be positive");
    tables_.taps[d] = k;
    tables_.tap_begin[d] = int64_t(taps_.size());
    tables_.outside_begin[d] = int64_t(outside_.size());
    for (int64_t y = 0; y < out_n; ++y) {
      bool outside = false;
      if (identity) {
        taps_.push_back({y, 1.0});
        outside_.push_back(0);
        continue;
      }
      double x = Original(opt, d, rank, y, in_n, out_n, outside);
      outside_.push_back(outside ? 1 : 0);
      double up = std::ceil(x), ratio = x - (up - 1);  // in (0, 1]: prefer the left neighbour
      auto clamp = [in_n](int64_t i) { return std::clamp<int64_t>(i, 0, in_n - 1); };
      if (opt.mode == Mode::kNearest) {
        taps_.push_back({clamp(NearestIndex(opt.rounding, x, opt.scales[d] < 1)), 1.0});
        continue;
      }
      int64_t first = int64_t(up) - (k == 2 ? 1 : 2);
      double w[4];
      if (k == 2) {
        w[0] = 1 - ratio;
        w[1] = ratio;
      } else {
        CubicWeights(ratio, opt.cubic_a, w);
      }
      if (opt.exclude_outside) {
        double sum = 0;
        for (int64_t t = 0; t < k; ++t) {
          if (first + t < 0 || first + t >= in_n) w[t] = 0;
          sum += w[t];
        }
        if (sum != 0)
          for (int64_t t = 0; t < k; ++t) w[t] /= sum;
      }
      for (int64_t t = 0; t < k; ++t) taps_.push_back({clamp(first + t), w[t]});
    }
    return Status::Ok();
  }

  static int64_t NearestIndex(Rounding r, double x, bool downsampling) {
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
  static void CubicWeights(double r, double a, double w[4]) {
    w[0] = ((a * (r + 1) - 5 * a) * (r + 1) + 8 * a) * (r + 1) - 4 * a;
    w[1] = ((a + 2) * r - (a + 3)) * r * r + 1;
    w[2] = ((a + 2) * (1 - r) - (a + 3)) * (1 - r) * (1 - r) + 1;
    w[3] = ((a * (2 - r) - 5 * a) * (2 - r) + 8 * a) * (2 - r) - 4 * a;
  }

  Mode mode_ = Mode::kNearest;
  uint64_t extrapolation_ = 0;
  ResizeTables tables_;
  std::vector<Tap> taps_;         // Init only
  std::vector<uint8_t> outside_;  // Init only
};

// Upsample (opsets 7-9): nearest (floor) or linear with asymmetric coordinates; scales are an
// attribute before opset 9, an input from 9.
class UpsampleKernel : public ResizeKernel {
 protected:
  Status ReadOptions(const KernelArgs& args, const Tensor&, ResizeOptions& opt) override {
    PRECIS_RETURN_IF_ERROR(ParseMode(args, args.attrs.String("mode", "nearest"), opt));
    if (opt.mode == Mode::kCubic) return args.Error("unknown mode 'cubic'");
    opt.coord = Coord::kAsymmetric;
    opt.rounding = Rounding::kFloor;
    if (args.attrs.Int("opset", 9) >= 9) return ConstantDoubles(args, args.in(1), "scales", opt.scales);
    for (float s : args.attrs.Floats("scales")) opt.scales.push_back(s);
    return Status::Ok();
  }
};

}  // namespace

// Called by RegisterTensorKernels (tensor.cu).
void AddTensorResizeKernels(KernelRegistry& r) {
  r.Register("Resize", Make<ResizeKernel>);
  r.Register("Upsample", Make<UpsampleKernel>);
}

}  // namespace precis::rt::cuda::tensor
