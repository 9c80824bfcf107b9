// Strided views of the data-movement operators (see strided_views.h).
#include "runtime/kernels/strided_views.h"

#include <algorithm>
#include <string>

#include "runtime/kernels/index_util.h"

namespace precis::rt {
namespace {

int64_t NormalizeAxis(int64_t axis, int64_t rank) { return axis < 0 ? axis + rank : axis; }

// Integer values of a constant input (read in Init), or an error.
Status ConstantIndexValues(const KernelArgs& args, size_t i, const char* what, std::vector<int64_t>& out) {
  const Tensor* t = args.in(i);
  if (!t) return Status::Ok();
  if (!t->is_constant) return args.Error(std::string(what) + " must be a constant");
  if (!IsIndexType(t->dtype)) return args.Error(std::string(what) + " must be an integer tensor");
  out.resize(size_t(t->numel));
  for (int64_t k = 0; k < t->numel; ++k) out[size_t(k)] = IndexAt(*t, k);
  return Status::Ok();
}

// Pads: the "pads" attribute (the kernel form of versions before 11) or input 1, with the axes of
// input 3 (from 18).
Status ReadPads(const KernelArgs& args, bool run_time, std::vector<int64_t>& pads, std::vector<int64_t>& axes) {
  if (!args.attrs.Has("pads")) {
    const Tensor* p = args.in(1);
    if (!p || (!p->is_constant && !run_time) || !IsIndexType(p->dtype)) return args.Error("pads must be a constant integer tensor");
    for (int64_t i = 0; i < p->numel; ++i) pads.push_back(IndexAt(*p, i));
    if (const Tensor* a = args.in(3)) {
      if ((!a->is_constant && !run_time) || !IsIndexType(a->dtype)) return args.Error("axes must be a constant integer tensor");
      for (int64_t i = 0; i < a->numel; ++i) axes.push_back(IndexAt(*a, i));
    }
  } else {
    pads = args.attrs.Ints("pads");
  }
  if (axes.empty())
    for (int64_t i = 0; i < args.in(0)->rank(); ++i) axes.push_back(i);
  if (pads.size() != 2 * axes.size()) return args.Error("pads do not match the axes");
  return Status::Ok();
}
int64_t SourceIndex(int64_t c, int64_t n, const std::string& mode) {
  if (c >= 0 && c < n) return c;
  if (mode == "constant" || n == 0) return -1;
  if (mode == "edge") return std::clamp<int64_t>(c, 0, n - 1);
  if (mode == "wrap") return ((c % n) + n) % n;
  if (n == 1) return 0;  // reflect
  int64_t period = 2 * (n - 1), m = ((c % period) + period) % period;
  return m < n ? m : period - m;
}
}  // namespace

SliceAxis SliceRange(int64_t start, int64_t end, int64_t step, int64_t dim) {
  if (dim <= 0 || step == 0) return {};
  if (start < 0) start += dim;
  if (end < 0) end += dim;
  if (step > 0) {
    start = std::clamp<int64_t>(start, 0, dim);
    end = std::clamp<int64_t>(end, 0, dim);
    return {start, end > start ? (end - start - 1) / step + 1 : 0};
  }
  start = std::clamp<int64_t>(start, 0, dim - 1);
  end = std::clamp<int64_t>(end, -1, dim - 1);
  int64_t back = step == INT64_MIN ? INT64_MAX : -step;
  return {start, start > end ? (start - end - 1) / back + 1 : 0};
}

Status TransposeView(const KernelArgs& args, const Tensor& in, const Tensor& out, StridedView& view) {
  std::vector<int64_t> perm = args.attrs.Ints("perm");
  if (perm.empty())
    for (int64_t i = in.rank(); i-- > 0;) perm.push_back(i);
  if (int64_t(perm.size()) != in.rank()) return args.Error("perm does not match the input rank");
  std::vector<int64_t> strides = DenseStrides(in.dims);
  for (int64_t p : perm) {
    if (p < 0 || p >= in.rank()) return args.Error("perm is out of range");
    view.dims.push_back(in.dims[size_t(p)]);
    view.strides.push_back(strides[size_t(p)]);
  }
  if (view.dims != out.dims) return args.Error("output shape does not match the permutation");
  return Status::Ok();
}

Status SliceView(const KernelArgs& args, const Tensor& in, const Tensor& out, StridedView& view) {
  std::vector<int64_t> starts, ends, axes, steps;
  if (!args.attrs.Has("starts")) {
    PRECIS_RETURN_IF_ERROR(ConstantIndexValues(args, 1, "starts", starts));
    PRECIS_RETURN_IF_ERROR(ConstantIndexValues(args, 2, "ends", ends));
    PRECIS_RETURN_IF_ERROR(ConstantIndexValues(args, 3, "axes", axes));
    PRECIS_RETURN_IF_ERROR(ConstantIndexValues(args, 4, "steps", steps));
  } else {
    starts = args.attrs.Ints("starts");
    ends = args.attrs.Ints("ends");
    axes = args.attrs.Ints("axes");
  }
  if (axes.empty())
    for (size_t i = 0; i < starts.size(); ++i) axes.push_back(int64_t(i));
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (axes.size() != starts.size() || steps.size() != starts.size() || ends.size() != starts.size())
    return args.Error("starts, ends, axes and steps differ in length");
  if (out.rank() != in.rank()) return args.Error("output rank differs from the input");
  std::vector<int64_t> strides = DenseStrides(in.dims);
  view.dims = out.dims;
  view.strides = strides;
  for (int64_t d = 0; d < in.rank(); ++d)
    if (out.dims[size_t(d)] > in.dims[size_t(d)]) return args.Error("output is larger than the input");
  std::vector<bool> seen(size_t(in.rank()), false);
  for (size_t i = 0; i < starts.size(); ++i) {
    int64_t axis = NormalizeAxis(axes[i], in.rank());
    if (axis < 0 || axis >= in.rank() || steps[i] == 0) return args.Error("invalid axis or step");
    size_t a = size_t(axis);
    // A repeated axis would add two starts to the offset while the dims keep one count.
    if (seen[a]) return args.Error("axis " + std::to_string(axes[i]) + " is repeated");
    seen[a] = true;
    SliceAxis range = SliceRange(starts[i], ends[i], steps[i], in.dims[a]);
    if (range.count != out.dims[a]) return args.Error("output dim " + std::to_string(a) + " does not match the slice");
    if (range.count == 0) continue;
    view.offset += range.start * strides[a];
    view.strides[a] = strides[a] * steps[i];
  }
  return Status::Ok();
}

Status ExpandView(const KernelArgs& args, const Tensor& in, const Tensor& out, StridedView& view) {
  if (in.rank() > out.rank()) return args.Error("output rank is below the input rank");
  std::vector<int64_t> strides = DenseStrides(in.dims);
  size_t pad = size_t(out.rank() - in.rank());
  view.dims = out.dims;
  view.strides.assign(out.dims.size(), 0);
  for (size_t d = 0; d < in.dims.size(); ++d) {
    if (in.dims[d] != 1 && in.dims[d] != out.dims[d + pad]) return args.Error("input does not broadcast to the output");
    if (in.dims[d] != 1) view.strides[d + pad] = strides[d];
  }
  return Status::Ok();
}

Status TileView(const KernelArgs& args, const Tensor& in, const Tensor& out, StridedView& view) {
  if (in.rank() != out.rank()) return args.Error("output rank differs from the input");
  std::vector<int64_t> strides = DenseStrides(in.dims);
  for (size_t d = 0; d < in.dims.size(); ++d) {
    int64_t reps = in.dims[d] ? out.dims[d] / in.dims[d] : 0;
    if (in.dims[d] ? reps * in.dims[d] != out.dims[d] : out.dims[d] != 0)
      return args.Error("output dims are not multiples of the input dims");
    view.dims.insert(view.dims.end(), {reps, in.dims[d]});
    view.strides.insert(view.strides.end(), {0, strides[d]});
  }
  return Status::Ok();
}

Status DepthToSpaceView(const KernelArgs& args, const Tensor& in, const Tensor& out, StridedView& view) {
  int64_t b = args.attrs.Int("blocksize", 0);
  // b <= C / b first: b * b of a corrupt plan's blocksize must not overflow.
  if (in.rank() != 4 || b <= 0 || b > in.dims[1] / b || in.dims[1] % (b * b) != 0)
    return args.Error("needs a 4-D input and a blocksize whose square divides the channels");
  int64_t n = in.dims[0], c = in.dims[1] / (b * b), h = in.dims[2], w = in.dims[3], hw = h * w;
  bool crd = args.attrs.String("mode", "DCR") == "CRD";
  if (out.dims != std::vector<int64_t>{n, c, h * b, w * b}) return args.Error("output shape does not match");
  view.dims = {n, c, h, b, w, b};
  if (crd) view.strides = {in.dims[1] * hw, b * b * hw, w, b * hw, 1, hw};
  else view.strides = {in.dims[1] * hw, hw, w, b * c * hw, 1, c * hw};
  return Status::Ok();
}

Status SpaceToDepthView(const KernelArgs& args, const Tensor& in, const Tensor& out, StridedView& view) {
  int64_t b = args.attrs.Int("blocksize", 0);
  if (in.rank() != 4 || b <= 0 || b > in.dims[2] || b > in.dims[3] || in.dims[2] % b != 0 || in.dims[3] % b != 0)
    return args.Error("needs a 4-D input and a blocksize dividing the spatial dims");
  int64_t n = in.dims[0], c = in.dims[1], h = in.dims[2], w = in.dims[3];
  if (out.dims != std::vector<int64_t>{n, c * b * b, h / b, w / b}) return args.Error("output shape does not match");
  view.dims = {n, b, b, c, h / b, w / b};
  view.strides = {c * h * w, w, 1, h * w, b * w, b};
  return Status::Ok();
}

// Pad (see strided_views.h).
Status PadIndexMaps(const KernelArgs& args, const Tensor& in, const Tensor& out, std::vector<std::vector<int64_t>>* maps, bool run_time) {
  std::vector<int64_t> pads, axes;
  PRECIS_RETURN_IF_ERROR(ReadPads(args, run_time, pads, axes));
  std::string mode = args.attrs.String("mode", "constant");
  if (mode != "constant" && mode != "reflect" && mode != "edge" && mode != "wrap") return args.Error("unknown mode '" + mode + "'");
  std::vector<int64_t> before(size_t(in.rank()), 0), after(size_t(in.rank()), 0);
  for (size_t i = 0; i < axes.size(); ++i) {
    int64_t axis = axes[i] < 0 ? axes[i] + in.rank() : axes[i];
    if (axis < 0 || axis >= in.rank()) return args.Error("axis is out of range");
    // Plans bound dims by 2^50 elements; pads beyond that would overflow the sums below.
    constexpr int64_t kLimit = int64_t(1) << 50;
    for (int64_t p : {pads[i], pads[i + axes.size()]})
      if (p < -kLimit || p > kLimit) return args.Error("pads are out of range");
    before[size_t(axis)] = pads[i];
    after[size_t(axis)] = pads[i + axes.size()];
    if (in.dims[size_t(axis)] + pads[i] + pads[i + axes.size()] != out.dims[size_t(axis)]) return args.Error("output shape does not match the pads");
  }
  // Negative pads crop first; the other modes then pad the cropped extent [lo, lo + n).
  maps->assign(size_t(in.rank()), {});
  for (size_t d = 0; d < maps->size(); ++d) {
    int64_t lo = std::max<int64_t>(-before[d], 0), n = in.dims[d] - lo - std::max<int64_t>(-after[d], 0);
    if (n < 0) return args.Error("pads crop more than the dim");
    if (n == 0 && mode != "constant" && out.dims[d] > 0) return args.Error("cannot pad an empty dim in mode '" + mode + "'");
    for (int64_t o = 0; o < out.dims[d]; ++o) {
      int64_t c = SourceIndex(o - std::max<int64_t>(before[d], 0), n, mode);
      (*maps)[d].push_back(c < 0 ? -1 : lo + c);
    }
  }
  return Status::Ok();
}

}  // namespace precis::rt
