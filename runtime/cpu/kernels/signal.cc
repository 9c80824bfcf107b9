// CPU kernels of signal processing: HannWindow, HammingWindow, BlackmanWindow (generalized cosine
// windows over N = size (periodic) or size - 1 (symmetric) points), MelWeightMatrix (triangular
// filters between mel-spaced bins, as the ONNX reference computes them), DFT and STFT (direct
// O(n^2) transforms over a table of exact twiddles, in double). Values are computed in double and
// stored in the output type; lengths given as inputs are read when the kernel runs and checked
// against the planned dims.
#include <algorithm>
#include <cmath>

#include "runtime/cpu/kernels/common.h"
#include "runtime/cpu/kernels/register.h"
#include "runtime/kernels/index_util.h"

namespace precis::rt {
namespace {

Status StoreOutput(const KernelArgs& args, Tensor& y, const std::vector<double>& v) {
  if (!DispatchNumeric(y.dtype, [](auto) {})) return args.Error("unsupported output dtype");
  for (size_t i = 0; i < v.size(); ++i) WriteAt(y, int64_t(i), v[i]);
  return Status::Ok();
}

// w[n] = a0 - a1 cos(2 pi n / N) + a2 cos(4 pi n / N).
class WindowKernel : public Kernel {
 public:
  WindowKernel(double a0, double a1, double a2) : a0_(a0), a1_(a1), a2_(a2) {}
  Status Init(const KernelArgs& args, const CpuContext&) override {
    if (!args.in(0) || !args.out(0) || args.out(0)->rank() != 1) return args.Error("needs a size and a 1-D output");
    if (!DispatchNumeric(args.out(0)->dtype, [](auto) {})) return args.Error("unsupported output dtype");
    periodic_ = args.attrs.Int("periodic", 1) != 0;
    return Status::Ok();
  }
  Status Run(const KernelArgs& args, CpuContext&) override {
    Tensor& y = *args.out(0);
    if (int64_t(ReadAt(*args.in(0), 0)) != y.numel) return args.Error("size differs from the planned output length");
    double n_total = double(periodic_ ? y.numel : y.numel - 1), pi = 3.14159265358979323846;
    std::vector<double> w(size_t(y.numel));
    for (int64_t n = 0; n < y.numel; ++n) {
      double x = n_total > 0 ? 2 * pi * double(n) / n_total : 0;
      w[size_t(n)] = a0_ - a1_ * std::cos(x) + a2_ * std::cos(2 * x);
    }
    return StoreOutput(args, y, w);
  }

 private:
  double a0_, a1_, a2_;
  bool periodic_ = true;
};

template <int kKind>
std::unique_ptr<Kernel> MakeWindow() {
  if (kKind == 0) return std::make_unique<WindowKernel>(0.5, 0.5, 0.0);                      // Hann
  if (kKind == 1) return std::make_unique<WindowKernel>(25.0 / 46.0, 1.0 - 25.0 / 46.0, 0.0);  // Hamming
  return std::make_unique<WindowKernel>(0.42, 0.5, 0.08);                                     // Blackman
}

// Inputs: num_mel_bins, dft_length, sample_rate, lower_edge_hertz, upper_edge_hertz.
class MelWeightMatrixKernel : public Kernel {
 public:
  Status Init(const KernelArgs& args, const CpuContext&) override {
    for (size_t i = 0; i < 5; ++i)
      if (!args.in(i) || args.in(i)->numel != 1) return args.Error("needs five scalar inputs");
    if (!args.out(0) || args.out(0)->rank() != 2 || !DispatchNumeric(args.out(0)->dtype, [](auto) {})) return args.Error("needs a 2-D numeric output");
    return Status::Ok();
  }
  Status Run(const KernelArgs& args, CpuContext&) override {
    Tensor& y = *args.out(0);
    int64_t bins = int64_t(ReadAt(*args.in(0), 0)), dft = int64_t(ReadAt(*args.in(1), 0)), rate = int64_t(ReadAt(*args.in(2), 0));
    double lo = ReadAt(*args.in(3), 0), hi = ReadAt(*args.in(4), 0);
    int64_t rows = dft / 2 + 1;
    if (y.dims != std::vector<int64_t>{rows, bins}) return args.Error("inputs differ from the planned output shape");
    if (rate <= 0) return args.Error("sample_rate must be positive");
    if (!std::isfinite(lo) || !std::isfinite(hi) || lo <= -700 || hi <= -700) return args.Error("the edge frequencies must be finite and above -700 Hz");
    double lo_mel = 2595 * std::log10(1 + lo / 700), hi_mel = 2595 * std::log10(1 + hi / 700);
    double step = (hi_mel - lo_mel) / double(bins + 2);  // as the ONNX reference divides
    std::vector<int64_t> f(size_t(bins + 2));
    for (int64_t i = 0; i < bins + 2; ++i) {
      double hz = 700 * (std::pow(10.0, (double(i) * step + lo_mel) / 2595) - 1);
      // Bins beyond the matrix write nothing: clamped to [-1, rows] so the loops stay short.
      double bin = std::floor(double(dft + 1) * hz / double(rate));
      f[size_t(i)] = std::isfinite(bin) ? int64_t(std::clamp(bin, -1.0, double(rows))) : int64_t(rows);
    }
    std::vector<double> w(size_t(rows * bins), 0.0);
    auto at = [&](int64_t r, int64_t c) -> double* { return r >= 0 && r < rows ? &w[size_t(r * bins + c)] : nullptr; };
    for (int64_t i = 0; i < bins; ++i) {
      int64_t left = f[size_t(i)], center = f[size_t(i + 1)], right = f[size_t(i + 2)];
      if (center == left) {
        if (double* p = at(center, i)) *p = 1;
      } else {
        for (int64_t j = left; j <= center; ++j)
          if (double* p = at(j, i)) *p = double(j - left) / double(center - left);
      }
      if (right > center)
        for (int64_t j = center; j < right; ++j)
          if (double* p = at(j, i)) *p = double(right - j) / double(right - center);
    }
    return StoreOutput(args, y, w);
  }
};

// Twiddles e^{sign * 2 pi i j / n}, j < n (angles reduced exactly: j * t mod n indexes them).
void Twiddles(int64_t n, double sign, std::vector<double>& c, std::vector<double>& s) {
  c.resize(size_t(n));
  s.resize(size_t(n));
  const double pi = 3.14159265358979323846;
  for (int64_t j = 0; j < n; ++j) {
    double a = 2 * pi * double(j) / double(n);
    c[size_t(j)] = std::cos(a);
    s[size_t(j)] = sign * std::sin(a);
  }
}

// Y[k] = sum_t (re[t] + i im[t]) * twiddle[(k * t) mod n] for k < m, written as pairs at
// out(k) (the imaginary part only where the output has two values per point).
template <typename Out>
void Transform(const std::vector<double>& re, const std::vector<double>& im, const std::vector<double>& cs, const std::vector<double>& sn,
               int64_t m, double scale, Out out) {
  int64_t n = int64_t(re.size());
  for (int64_t k = 0; k < m; ++k) {
    double sr = 0, si = 0;
    for (int64_t t = 0; t < n; ++t) {
      size_t j = size_t((k * t) % n);
      sr += re[size_t(t)] * cs[j] - im[size_t(t)] * sn[j];
      si += re[size_t(t)] * sn[j] + im[size_t(t)] * cs[j];
    }
    out(k, sr * scale, si * scale);
  }
}

// DFT along one axis of x [..., len, 1 or 2]; see compiler/ops/signal.cc for the shapes.
class DftKernel : public Kernel {
 public:
  Status Init(const KernelArgs& args, const CpuContext&) override {
    const Tensor *x = args.in(0), *y = args.out(0);
    if (!x || !y || x->dtype != y->dtype || !DispatchFloat(x->dtype, [](auto) {}) || x->rank() < 2 || y->rank() != x->rank())
      return args.Error("needs a float input and output of one rank");
    int64_t rank = x->rank(), axis = args.attrs.Int("axis", 1);
    if (const Tensor* a = args.in(2)) {
      if (a->numel != 1 || !IsIndexType(a->dtype)) return args.Error("axis must be an integer scalar");
      run_time_axis_ = !a->is_constant;  // a value symbol: read when the step runs
      if (a->is_constant) axis = IndexAt(*a, 0);
    }
    if (!run_time_axis_) {
      PRECIS_ASSIGN_OR_RETURN(axis_, Axis(args, axis, rank));
    }
    inverse_ = args.attrs.Int("inverse", 0) != 0;
    onesided_ = args.attrs.Int("onesided", 0) != 0;
    return Status::Ok();
  }
  Status Run(const KernelArgs& args, CpuContext&) override {
    const Tensor& x = *args.in(0);
    Tensor& y = *args.out(0);
    int64_t axis = axis_;
    if (run_time_axis_) {
      PRECIS_ASSIGN_OR_RETURN(axis, Axis(args, IndexAt(*args.in(2), 0), x.rank()));
    }
    size_t a = size_t(axis);
    int64_t len = x.dims[a], cin = x.dims.back(), cout = y.dims.back();
    int64_t n = inverse_ && onesided_ ? 2 * (len - 1) : len;
    if (const Tensor* d = args.in(1)) {
      if (!IsIndexType(d->dtype) || d->numel != 1) return args.Error("dft_length must be one integer");
      n = IndexAt(*d, 0);
    }
    int64_t m = !inverse_ && onesided_ ? n / 2 + 1 : n;
    bool others_kept = true;
    for (size_t j = 0; j + 1 < x.dims.size(); ++j) others_kept &= j == a || x.dims[j] == y.dims[j];
    if (n <= 0 || y.dims[a] != m || cout != (inverse_ && onesided_ ? 1 : 2) || !others_kept)
      return args.Error("dft_length " + std::to_string(n) + " along axis " + std::to_string(axis) + " does not give the planned output shape " +
                        DimsToString(y.dims));
    int64_t outer = DimProduct(x.dims, 0, a), inner = DimProduct(x.dims, a + 1, x.dims.size() - 1);
    std::vector<double> cs, sn, re(static_cast<size_t>(n)), im(static_cast<size_t>(n));
    Twiddles(n, inverse_ ? 1.0 : -1.0, cs, sn);
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i) {
        // The signal (or spectrum) along the axis, zero-padded or cut to n.
        std::fill(re.begin(), re.end(), 0.0);
        std::fill(im.begin(), im.end(), 0.0);
        for (int64_t t = 0; t < std::min(len, n); ++t) {
          int64_t at = ((o * len + t) * inner + i) * cin;
          re[size_t(t)] = ReadAt(x, at);
          im[size_t(t)] = cin == 2 ? ReadAt(x, at + 1) : 0.0;
        }
        if (inverse_ && onesided_) {
          // irfft: the Hermitian spectrum from its first n / 2 + 1 values (imaginary parts of the
          // DC and Nyquist terms dropped).
          for (int64_t k = n / 2 + 1; k < n; ++k) re[size_t(k)] = re[size_t(n - k)], im[size_t(k)] = -im[size_t(n - k)];
          im[0] = 0;
          if (n % 2 == 0) im[size_t(n / 2)] = 0;
        }
        Transform(re, im, cs, sn, m, inverse_ ? 1.0 / double(n) : 1.0, [&](int64_t k, double sr, double si) {
          int64_t at = ((o * m + k) * inner + i) * cout;
          WriteAt(y, at, sr);
          if (cout == 2) WriteAt(y, at + 1, si);
        });
      }
    return Status::Ok();
  }

 private:
  static StatusOr<int64_t> Axis(const KernelArgs& args, int64_t axis, int64_t rank) {
    int64_t a = axis < 0 ? axis + rank : axis;
    if (a < 0 || a >= rank - 1)
      return args.Error("axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank) + " (the last dim holds real and imaginary parts)");
    return a;
  }
  int64_t axis_ = 1;
  bool run_time_axis_ = false, inverse_ = false, onesided_ = false;
};

// STFT: frames of the signal times the window, each transformed over frame_length points.
class StftKernel : public Kernel {
 public:
  Status Init(const KernelArgs& args, const CpuContext&) override {
    const Tensor *x = args.in(0), *y = args.out(0);
    if (!x || !y || x->dtype != y->dtype || !DispatchFloat(x->dtype, [](auto) {}) || x->rank() != 3 || y->rank() != 4 || !args.in(1))
      return args.Error("needs a float signal [batch, length, 1 or 2], frame_step and a [batch, frames, bins, 2] output");
    onesided_ = args.attrs.Int("onesided", 1) != 0;
    return Status::Ok();
  }
  Status Run(const KernelArgs& args, CpuContext&) override {
    const Tensor& x = *args.in(0);
    Tensor& y = *args.out(0);
    const Tensor* window = args.in(2);
    int64_t batch = x.dims[0], len = x.dims[1], cin = x.dims[2];
    if (!IsIndexType(args.in(1)->dtype) || args.in(1)->numel != 1 || (args.in(3) && (!IsIndexType(args.in(3)->dtype) || args.in(3)->numel != 1)))
      return args.Error("frame_step and frame_length must be integer scalars");
    int64_t step = IndexAt(*args.in(1), 0);
    int64_t frame = window ? window->numel : args.in(3) ? IndexAt(*args.in(3), 0) : len;
    int64_t frames = step > 0 && frame > 0 && frame <= len ? (len - frame) / step + 1 : -1;
    int64_t bins = onesided_ ? frame / 2 + 1 : frame;
    if (frames < 0 || y.dims != std::vector<int64_t>{batch, frames, bins, 2})
      return args.Error("frame_step " + std::to_string(step) + " and frame length " + std::to_string(frame) + " do not give the planned output shape " +
                        DimsToString(y.dims));
    std::vector<double> cs, sn, re(static_cast<size_t>(frame)), im(static_cast<size_t>(frame));
    Twiddles(frame, -1.0, cs, sn);
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t f = 0; f < frames; ++f) {
        for (int64_t t = 0; t < frame; ++t) {
          double w = window ? ReadAt(*window, t) : 1.0;
          int64_t at = (b * len + f * step + t) * cin;
          re[size_t(t)] = ReadAt(x, at) * w;
          im[size_t(t)] = cin == 2 ? ReadAt(x, at + 1) * w : 0.0;
        }
        Transform(re, im, cs, sn, bins, 1.0, [&](int64_t k, double sr, double si) {
          int64_t at = ((b * frames + f) * bins + k) * 2;
          WriteAt(y, at, sr);
          WriteAt(y, at + 1, si);
        });
      }
    return Status::Ok();
  }

 private:
  bool onesided_ = true;
};

}  // namespace

void RegisterSignalKernels(KernelRegistry& r) {
  r.Register("DFT", Make<DftKernel>);
  r.Register("STFT", Make<StftKernel>);
  r.Register("HannWindow", MakeWindow<0>);
  r.Register("HammingWindow", MakeWindow<1>);
  r.Register("BlackmanWindow", MakeWindow<2>);
  r.Register("MelWeightMatrix", Make<MelWeightMatrixKernel>);
}

}  // namespace precis::rt
