// GridSample (opsets 16 and 20): samples X [N, C, spatial...] (1 to 3 spatial dims) at the
// normalized coordinates of grid [N, out spatial..., s] (the last axis in reverse dim order: x, y,
// z). Modes nearest, (bi)linear and (bi)cubic (Keys, a = -0.75); padding zeros, border and
// reflection; align_corners. Follows the ONNX reference implementation step for step, computing in
// double.
#include <cmath>
#include <cstring>

#include "runtime/cpu/kernels/common.h"
#include "runtime/cpu/kernels/register.h"

namespace precis::rt {
namespace {

class GridSampleKernel : public Kernel {
 public:
  Status Init(const KernelArgs& args, const CpuContext&) override {
    const Tensor *x = args.in(0), *grid = args.in(1), *y = args.out(0);
    if (!x || !grid || !y) return args.Error("needs X, grid and an output");
    if (x->dtype != y->dtype || !DispatchFloat(x->dtype, [](auto) {}) || !DispatchFloat(grid->dtype, [](auto) {}))
      return args.Error("needs float X, grid and output");
    spatial_ = int(x->rank()) - 2;
    if (spatial_ < 1 || spatial_ > 3 || grid->rank() != x->rank() || grid->dims.back() != spatial_ || grid->dims[0] != x->dims[0])
      return args.Error("grid must be [N, out spatial..., " + std::to_string(spatial_) + "] for X's " + std::to_string(spatial_) + " spatial dims");
    std::vector<int64_t> want{x->dims[0], x->dims[1]};
    want.insert(want.end(), grid->dims.begin() + 1, grid->dims.end() - 1);
    if (y->dims != want) return args.Error("output shape does not match");
    std::string mode = args.attrs.String("mode", "linear");
    if (mode == "bilinear" || mode == "linear") mode_ = kLinear;
    else if (mode == "bicubic" || mode == "cubic") mode_ = kCubic;
    else if (mode == "nearest") mode_ = kNearest;
    else return args.Error("unknown mode '" + mode + "'");
    std::string pad = args.attrs.String("padding_mode", "zeros");
    if (pad == "zeros") pad_ = kZeros;
    else if (pad == "border") pad_ = kBorder;
    else if (pad == "reflection") pad_ = kReflection;
    else return args.Error("unknown padding_mode '" + pad + "'");
    align_ = args.attrs.Int("align_corners", 0) != 0;
    for (int64_t d = 2; d < x->rank(); ++d)
      if (x->dims[size_t(d)] == 0 && y->numel > 0 && pad_ != kZeros)
        return args.Error("X has an empty spatial dim: only padding_mode 'zeros' samples it (as 0)");
    return Status::Ok();
  }

  Status Run(const KernelArgs& args, CpuContext&) override {
    const Tensor &x = *args.in(0), &grid = *args.in(1);
    Tensor& y = *args.out(0);
    int64_t N = x.dims[0], C = x.dims[1], in_size = 1, out_size = 1;
    std::vector<int64_t> dims(x.dims.begin() + 2, x.dims.end());
    for (int64_t d : dims) in_size *= d;
    for (size_t i = 1; i + 1 < grid.dims.size(); ++i) out_size *= grid.dims[i];
    std::vector<double> lo(static_cast<size_t>(spatial_)), hi(static_cast<size_t>(spatial_));
    for (int d = 0; d < spatial_; ++d) {
      lo[size_t(d)] = align_ ? 0.0 : -0.5;
      hi[size_t(d)] = align_ ? double(dims[size_t(d)] - 1) : double(dims[size_t(d)]) - 0.5;
    }
    if (in_size == 0) {  // an empty spatial dim: every sample is padding (zeros)
      if (y.bytes) std::memset(y.data, 0, y.bytes);
      return Status::Ok();
    }
    std::vector<double> plane(static_cast<size_t>(in_size));
    DispatchFloat(x.dtype, [&](auto tag) {
      using T = decltype(tag);
      for (int64_t n = 0; n < N; ++n)
        for (int64_t c = 0; c < C; ++c) {
          const T* src = x.As<T>() + (n * C + c) * in_size;
          for (int64_t i = 0; i < in_size; ++i) plane[size_t(i)] = double(Load(src[i]));
          for (int64_t o = 0; o < out_size; ++o) {
            double coord[3];
            for (int d = 0; d < spatial_; ++d) {
              // Grid values are (x, y, z): the last spatial dim first.
              double g = ReadAt(grid, (n * out_size + o) * spatial_ + (spatial_ - 1 - d));
              double len = double(dims[size_t(d)]);
              double v = align_ ? (g + 1) / 2.0 * (len - 1) : ((g + 1) * len - 1) / 2.0;
              if (mode_ == kNearest) v = std::nearbyint(v);
              if (v < lo[size_t(d)] || v > hi[size_t(d)]) {
                if (pad_ == kBorder) v = std::clamp(v, 0.0, len - 1);
                else if (pad_ == kReflection) v = Reflect(v, lo[size_t(d)], hi[size_t(d)]);
              }
              coord[d] = v;
            }
            double value = Sample(plane, dims, coord, lo, hi);
            y.As<T>()[(n * C + c) * out_size + o] = Store<T>(typename ComputeOf<T>::type(value));
          }
        }
    });
    return Status::Ok();
  }

 private:
  enum Mode { kNearest, kLinear, kCubic };
  enum Pad { kZeros, kBorder, kReflection };

  static double Reflect(double v, double lo, double hi) {
    double range = hi - lo;
    if (range <= 0) return lo;
    if (v < lo) {
      double dx = lo - v;
      int64_t k = int64_t(dx / range);
      double r = dx - double(k) * range;
      return k % 2 == 0 ? lo + r : hi - r;
    }
    if (v > hi) {
      double dx = v - hi;
      int64_t k = int64_t(dx / range);
      double r = dx - double(k) * range;
      return k % 2 == 0 ? hi - r : lo + r;
    }
    return v;
  }

  // The input index read for integer coordinate i along dim d, or -1 for a zero (padding zeros).
  int64_t Index(int64_t i, int64_t len, double lo, double hi) const {
    if (pad_ == kZeros) return i >= 0 && i < len ? i : -1;
    if (pad_ == kBorder) return std::clamp<int64_t>(i, 0, len - 1);
    return std::clamp<int64_t>(int64_t(Reflect(double(i), lo, hi)), 0, len - 1);
  }

  static void Cubic(double t, double* w) {
    const double a = -0.75;
    t = std::fabs(t);
    w[0] = ((a * (t + 1) - 5 * a) * (t + 1) + 8 * a) * (t + 1) - 4 * a;
    w[1] = ((a + 2) * t - (a + 3)) * t * t + 1;
    w[2] = ((a + 2) * (1 - t) - (a + 3)) * (1 - t) * (1 - t) + 1;
    w[3] = ((a * (2 - t) - 5 * a) * (2 - t) + 8 * a) * (2 - t) - 4 * a;
  }

  // A separable sum over taps per dim (1 for nearest, 2 linear, 4 cubic).
  double Sample(const std::vector<double>& plane, const std::vector<int64_t>& dims, const double* coord, const std::vector<double>& lo,
                const std::vector<double>& hi) const {
    int taps = mode_ == kNearest ? 1 : mode_ == kLinear ? 2 : 4;
    int64_t index[3][4];
    double weight[3][4];
    for (int d = 0; d < spatial_; ++d) {
      double v = coord[d];
      int64_t base = mode_ == kNearest ? int64_t(v) : int64_t(std::floor(v));
      if (mode_ == kCubic) base -= 1;
      double t = v - std::floor(v);
      if (mode_ == kNearest) weight[d][0] = 1;
      else if (mode_ == kLinear) weight[d][0] = 1 - t, weight[d][1] = t;
      else Cubic(t, weight[d]);
      for (int k = 0; k < taps; ++k) index[d][k] = Index(base + k, dims[size_t(d)], lo[size_t(d)], hi[size_t(d)]);
    }
    double sum = 0;
    int total = 1;
    for (int d = 0; d < spatial_; ++d) total *= taps;
    for (int combo = 0; combo < total; ++combo) {
      double w = 1;
      int64_t at = 0;
      bool zero = false;
      for (int d = 0, rest = combo; d < spatial_; ++d, rest /= taps) {
        int k = rest % taps;
        w *= weight[d][k];
        if (index[d][k] < 0) zero = true;
        at = at * dims[size_t(d)] + index[d][k];
      }
      if (!zero) sum += w * plane[size_t(at)];
    }
    return sum;
  }

  int spatial_ = 2;
  Mode mode_ = kLinear;
  Pad pad_ = kZeros;
  bool align_ = false;
};

}  // namespace

void RegisterGridSampleKernels(KernelRegistry& r) { r.Register("GridSample", Make<GridSampleKernel>); }

}  // namespace precis::rt
