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

// DeformConv, 2-D: each output position's kernel taps are moved by their offsets (dy, dx) and
// read by bilinear interpolation, zero outside the image (GridSample with align_corners, as
// ONNX's reference does it), weighted by the mask (1 without one). Sums in double.
class DeformConvKernel : public Kernel {
 public:
  Status Init(const KernelArgs& args, const CpuContext&) override {
    const Tensor *x = args.in(0), *w = args.in(1), *off = args.in(2), *y = args.out(0);
    if (!x || !w || !off || !y || x->rank() != 4 || w->rank() != 4 || off->rank() != 4 || y->rank() != 4)
      return args.Error("needs 4-D X, W, offset and output");
    group_ = args.attrs.Int("group", 1), og_ = args.attrs.Int("offset_group", 1);
    pads_ = args.attrs.Ints("pads", {0, 0, 0, 0}), strides_ = args.attrs.Ints("strides", {1, 1}), dil_ = args.attrs.Ints("dilations", {1, 1});
    int64_t c = x->dims[1], oc = w->dims[0], kh = w->dims[2], kw = w->dims[3];
    if (group_ < 1 || og_ < 1 || c != w->dims[1] * group_ || oc % group_ != 0 || c % og_ != 0 || pads_.size() != 4 || strides_.size() != 2 ||
        dil_.size() != 2)
      return args.Error("bad group, offset_group, pads, strides or dilations");
    std::vector<int64_t> out{x->dims[0], oc, off->dims[2], off->dims[3]};
    if (y->dims != out || off->dims[0] != x->dims[0] || off->dims[1] != og_ * 2 * kh * kw) return args.Error("offset or output shape does not match");
    if (const Tensor* m = args.in(4))
      if (m->dims != std::vector<int64_t>{x->dims[0], og_ * kh * kw, out[2], out[3]}) return args.Error("mask shape does not match");
    if (const Tensor* b = args.in(3))
      if (b->numel != oc) return args.Error("B must have one value per output channel");
    return Status::Ok();
  }
  Status Run(const KernelArgs& args, CpuContext&) override {
    const Tensor &x = *args.in(0), &w = *args.in(1), &off = *args.in(2);
    const Tensor *b = args.in(3), *mask = args.in(4);
    Tensor& y = *args.out(0);
    int64_t n = x.dims[0], c = x.dims[1], ih = x.dims[2], iw = x.dims[3], oc = w.dims[0], cpg = w.dims[1], kh = w.dims[2], kw = w.dims[3];
    int64_t oh = y.dims[2], ow = y.dims[3], ocpg = oc / group_, cpog = c / og_, taps = kh * kw;
    // Bilinear read of channel plane `plane` at (py, px); neighbours outside the image count 0.
    auto sample = [&](int64_t plane, double py, double px) {
      double y0 = std::floor(py), x0 = std::floor(px), fy = py - y0, fx = px - x0, sum = 0;
      for (int dy = 0; dy < 2; ++dy)
        for (int dx = 0; dx < 2; ++dx) {
          int64_t yy = int64_t(y0) + dy, xx = int64_t(x0) + dx;
          if (yy < 0 || yy >= ih || xx < 0 || xx >= iw) continue;
          sum += (dy ? fy : 1 - fy) * (dx ? fx : 1 - fx) * ReadAt(x, (plane * ih + yy) * iw + xx);
        }
      return sum;
    };
    for (int64_t bi = 0; bi < n; ++bi)
      for (int64_t o = 0; o < oc; ++o)
        for (int64_t i = 0; i < oh; ++i)
          for (int64_t j = 0; j < ow; ++j) {
            double acc = b ? ReadAt(*b, o) : 0.0;
            int64_t g = o / ocpg;
            for (int64_t ci = g * cpg; ci < (g + 1) * cpg; ++ci) {
              int64_t og = ci / cpog;
              for (int64_t u = 0; u < kh; ++u)
                for (int64_t v = 0; v < kw; ++v) {
                  int64_t tap = u * kw + v;
                  double dy = ReadAt(off, ((bi * og_ + og) * taps * 2 + tap * 2) * oh * ow + i * ow + j);
                  double dx = ReadAt(off, ((bi * og_ + og) * taps * 2 + tap * 2 + 1) * oh * ow + i * ow + j);
                  double m = mask ? ReadAt(*mask, ((bi * og_ + og) * taps + tap) * oh * ow + i * ow + j) : 1.0;
                  double py = double(i * strides_[0] - pads_[0] + u * dil_[0]) + dy, px = double(j * strides_[1] - pads_[1] + v * dil_[1]) + dx;
                  acc += ReadAt(w, ((o * cpg + (ci - g * cpg)) * kh + u) * kw + v) * m * sample(bi * c + ci, py, px);
                }
            }
            WriteAt(y, ((bi * oc + o) * oh + i) * ow + j, acc);
          }
    return Status::Ok();
  }

 private:
  int64_t group_ = 1, og_ = 1;
  std::vector<int64_t> pads_, strides_, dil_;
};

void RegisterGridSampleKernels(KernelRegistry& r) {
  r.Register("GridSample", Make<GridSampleKernel>);
  r.Register("DeformConv", Make<DeformConvKernel>);
}

}  // namespace precis::rt
