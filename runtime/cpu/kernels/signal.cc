// CPU kernels of the signal generators: HannWindow, HammingWindow, BlackmanWindow (generalized
// cosine windows over N = size (periodic) or size - 1 (symmetric) points) and MelWeightMatrix
// (triangular filters between mel-spaced bins, as the ONNX reference computes them). Values are
// computed in double and stored in the output type; lengths come from the output dims.
#include <algorithm>
#include <cmath>

#include "runtime/cpu/kernels/common.h"
#include "runtime/cpu/kernels/register.h"

namespace precis::rt {
namespace {

double ScalarAt(const Tensor& t) {
  double v = 0;
  DispatchNumeric(t.dtype, [&](auto tag) { v = double(Load(t.As<decltype(tag)>()[0])); });
  return v;
}

template <typename T>
void StoreAll(Tensor& y, const std::vector<double>& v) {
  for (size_t i = 0; i < v.size(); ++i) y.As<T>()[i] = Store<T>(typename ComputeOf<T>::type(v[i]));
}

Status StoreOutput(const KernelArgs& args, Tensor& y, const std::vector<double>& v) {
  if (!DispatchNumeric(y.dtype, [&](auto tag) { StoreAll<decltype(tag)>(y, v); })) return args.Error("unsupported output dtype");
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
    if (int64_t(ScalarAt(*args.in(0))) != y.numel) return args.Error("size differs from the planned output length");
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
    int64_t bins = int64_t(ScalarAt(*args.in(0))), dft = int64_t(ScalarAt(*args.in(1))), rate = int64_t(ScalarAt(*args.in(2)));
    double lo = ScalarAt(*args.in(3)), hi = ScalarAt(*args.in(4));
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

}  // namespace

void RegisterSignalKernels(KernelRegistry& r) {
  r.Register("HannWindow", MakeWindow<0>);
  r.Register("HammingWindow", MakeWindow<1>);
  r.Register("BlackmanWindow", MakeWindow<2>);
  r.Register("MelWeightMatrix", Make<MelWeightMatrixKernel>);
}

}  // namespace precis::rt
