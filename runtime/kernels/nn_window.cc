// Sliding-window geometry of the convolution and pooling kernels of every backend (see
// nn_window.h): one reading of kernel, strides, dilations, pads, auto_pad and ceil_mode, so the
// CPU and CUDA kernels accept the same steps and compute the same output sizes.
#include "runtime/kernels/nn_window.h"

#include <algorithm>

namespace precis::rt {

namespace {

std::string Join(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
  return s + "]";
}

// Larger kernels, strides, dilations, pads and output paddings are refused: no real model comes
// near, and below them the size arithmetic cannot overflow int64 for dims of up to 2^50 (the
// session's bound on a tensor's element count), whatever a corrupt plan says.
constexpr int64_t kMaxWindowValue = int64_t(1) << 31;
constexpr int64_t kMaxDim = int64_t(1) << 50;

bool TooLarge(int64_t v) { return v > kMaxWindowValue || v < -kMaxWindowValue; }

}  // namespace

Status ReadWindow(const KernelArgs& args, const std::vector<int64_t>& in, const std::vector<int64_t>& kernel, bool allow_ceil,
                  Window* w) {
  size_t n = in.size();
  if (n < 1 || n > size_t(Window::kMaxSpatial)) return args.Error("expects 1 to 3 spatial dims, got " + std::to_string(n));
  if (kernel.size() != n) return args.Error("kernel_shape " + Join(kernel) + " does not have " + std::to_string(n) + " values");
  auto strides = args.attrs.Ints("strides", std::vector<int64_t>(n, 1));
  auto dilations = args.attrs.Ints("dilations", std::vector<int64_t>(n, 1));
  auto pads = args.attrs.Ints("pads", std::vector<int64_t>(2 * n, 0));
  std::string auto_pad = args.attrs.String("auto_pad", "NOTSET");
  bool ceil_mode = allow_ceil && args.attrs.Int("ceil_mode", 0) != 0;
  if (strides.size() != n || dilations.size() != n || pads.size() != 2 * n)
    return args.Error("strides, dilations or pads do not match " + std::to_string(n) + " spatial dims");
  bool same = auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER";
  if (!same && auto_pad != "VALID" && auto_pad != "NOTSET" && !auto_pad.empty()) return args.Error("bad auto_pad '" + auto_pad + "'");
  if (auto_pad == "VALID" || same) pads.assign(2 * n, 0);
  *w = Window();
  w->spatial = int(n);
  size_t off = Window::kMaxSpatial - n;
  for (size_t i = 0; i < n; ++i) {
    int64_t s = strides[i], d = dilations[i], k = kernel[i], x = in[i];
    if (s <= 0 || d <= 0 || k <= 0 || pads[i] < 0 || pads[i + n] < 0)
      return args.Error("kernel, strides and dilations must be positive and pads non-negative");
    if (TooLarge(s) || TooLarge(d) || TooLarge(k) || TooLarge(pads[i]) || TooLarge(pads[i + n]) || x > kMaxDim)
      return args.Error("kernel, strides, dilations and pads must be at most 2^31");
    int64_t eff_k = (k - 1) * d + 1, pb = pads[i], pe = pads[i + n];
    if (same) {
      int64_t total = std::max<int64_t>(0, ((x + s - 1) / s - 1) * s + eff_k - x);
      pb = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
      pe = total - pb;
    }
    int64_t span = x + pb + pe - eff_k;
    if (span < 0) return args.Error("window of " + std::to_string(eff_k) + " does not fit spatial dim " + std::to_string(i));
    int64_t o = ceil_mode ? (span + s - 1) / s + 1 : span / s + 1;
    if (ceil_mode && (o - 1) * s >= x + pb) --o;
    w->in[off + i] = x;
    w->out[off + i] = o;
    w->kernel[off + i] = k;
    w->stride[off + i] = s;
    w->dilation[off + i] = d;
    w->pad_begin[off + i] = pb;
    w->pad_end[off + i] = pe;
  }
  return Status::Ok();
}

Status CheckWindowOutput(const KernelArgs& args, const Tensor& t, int64_t n, int64_t c, const Window& w, const char* what) {
  std::vector<int64_t> want = {n, c};
  for (int i = Window::kMaxSpatial - w.spatial; i < Window::kMaxSpatial; ++i) want.push_back(w.out[size_t(i)]);
  if (t.dims != want) return args.Error(std::string(what) + " has shape " + Join(t.dims) + ", expected " + Join(want));
  return Status::Ok();
}

Status ReadTransposeWindow(const KernelArgs& args, const std::vector<int64_t>& in, const std::vector<int64_t>& kernel, Window* w) {
  size_t n = in.size();
  auto strides = args.attrs.Ints("strides", std::vector<int64_t>(n, 1));
  auto dilations = args.attrs.Ints("dilations", std::vector<int64_t>(n, 1));
  auto pads = args.attrs.Ints("pads", std::vector<int64_t>(2 * n, 0));
  auto output_padding = args.attrs.Ints("output_padding", std::vector<int64_t>(n, 0));
  auto output_shape = args.attrs.Ints("output_shape");
  std::string auto_pad = args.attrs.String("auto_pad", "NOTSET");
  bool same = auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER";
  if (auto_pad == "VALID") pads.assign(2 * n, 0);
  if (strides.size() != n || dilations.size() != n || pads.size() != 2 * n || output_padding.size() != n ||
      (!output_shape.empty() && output_shape.size() != n && output_shape.size() != n + 2))
    return args.Error("strides, dilations, pads, output_padding or output_shape do not match " + std::to_string(n) + " spatial dims");
  *w = Window();
  w->spatial = int(n);
  size_t off = Window::kMaxSpatial - n;
  for (size_t i = 0; i < n; ++i) {
    int64_t s = strides[i], d = dilations[i], k = kernel[i];
    if (s <= 0 || d <= 0 || k <= 0) return args.Error("kernel, strides and dilations must be positive");
    if (TooLarge(s) || TooLarge(d) || TooLarge(k) || TooLarge(pads[i]) || TooLarge(pads[i + n]) || TooLarge(output_padding[i]) ||
        in[i] > kMaxDim || (in[i] > 1 && s > kMaxDim / (in[i] - 1)))
      return args.Error("kernel, strides, dilations, pads and output_padding must be at most 2^31, the output at most 2^50");
    int64_t full = s * (in[i] - 1) + output_padding[i] + (k - 1) * d + 1;
    int64_t out, pb = pads[i];
    if (!output_shape.empty()) out = output_shape[output_shape.size() - n + i];
    else if (same) out = in[i] * s;
    else out = full - pads[i] - pads[i + n];
    if (out <= 0 || out > kMaxDim) return args.Error("output spatial dim " + std::to_string(i) + " would be " + std::to_string(out));
    if (same) {
      int64_t total = full - out;
      int64_t half = total >= 0 ? total / 2 : -((-total + 1) / 2);  // floor division
      pb = auto_pad == "SAME_UPPER" ? half : total - half;
    }
    if (out <= 0) return args.Error("output spatial dim " + std::to_string(i) + " would be " + std::to_string(out));
    w->in[off + i] = in[i];
    w->out[off + i] = out;
    w->kernel[off + i] = k;
    w->stride[off + i] = s;
    w->dilation[off + i] = d;
    w->pad_begin[off + i] = pb;
  }
  return Status::Ok();
}

std::vector<WindowRange> WindowRanges(const Window& w, int d) {
  std::vector<WindowRange> ranges(size_t(w.out[d]));
  int64_t in_d = w.in[d], k = w.kernel[d], dil = w.dilation[d];
  for (int64_t o = 0; o < w.out[d]; ++o) {
    WindowRange& r = ranges[size_t(o)];
    r.start = o * w.stride[d] - w.pad_begin[d];
    r.lo = r.start >= 0 ? 0 : (-r.start + dil - 1) / dil;
    r.hi = r.start < in_d ? std::min(k, (in_d - r.start + dil - 1) / dil) : 0;
    int64_t limit = in_d + w.pad_end[d];
    r.padded = r.start < limit ? std::min(k, (limit - r.start + dil - 1) / dil) : 0;
    r.lo = std::min(r.lo, std::max<int64_t>(r.hi, 0));
  }
  return ranges;
}

}  // namespace precis::rt
