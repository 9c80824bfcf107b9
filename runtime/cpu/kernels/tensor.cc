// CPU kernels: data movement and shape manipulation. This file holds the copies (Reshape and
// its kin, which run in place when the planner allows), the strided views (Transpose, Slice,
// Expand, Tile, DepthToSpace, SpaceToDepth: one StridedCopy each, the view built in Init),
// Concat, Split, Shape and Size. tensor_index.cc, tensor_fill.cc and tensor_resize.cc hold the
// rest of the family. Every kernel moves bytes by element size, so every dtype works.
#include <algorithm>

#include "runtime/cpu/kernels/common.h"
#include "runtime/cpu/kernels/register.h"
#include "runtime/cpu/kernels/tensor_util.h"

namespace precis::rt {
namespace {

Status CheckCopyable(const KernelArgs& args, const Tensor* in, const Tensor* out) {
  if (!in || !out) return args.Error("needs an input and an output");
  if (DataTypeSize(in->dtype) == 0) return args.Error(std::string("unsupported dtype ") + DataTypeName(in->dtype));
  if (in->dtype != out->dtype) return args.Error("input and output dtypes differ");
  return Status::Ok();
}

int64_t NormalizeAxis(int64_t axis, int64_t rank) { return axis < 0 ? axis + rank : axis; }

// Reshape, Flatten, Squeeze, Unsqueeze: the bytes stay, only the dims change.
class ReshapeKernel : public Kernel {
 public:
  Status Init(const KernelArgs& args, const CpuContext&) override {
    PRECIS_RETURN_IF_ERROR(CheckCopyable(args, args.in(0), args.out(0)));
    if (args.in(0)->bytes != args.out(0)->bytes) return args.Error("input and output sizes differ");
    return Status::Ok();
  }
  Status Run(const KernelArgs& args, CpuContext&) override {
    CopyIfDistinct(*args.in(0), *args.out(0));
    return Status::Ok();
  }
};

// Kernels whose output is the input read through a strided view built once in Init.
class StridedKernel : public Kernel {
 public:
  Status Init(const KernelArgs& args, const CpuContext&) override {
    PRECIS_RETURN_IF_ERROR(CheckCopyable(args, args.in(0), args.out(0)));
    StridedView view;
    PRECIS_RETURN_IF_ERROR(BuildView(args, *args.in(0), *args.out(0), view));
    if (DimProduct(view.dims, 0, view.dims.size()) != args.out(0)->numel)
      return args.Error("output shape " + DimsToString(args.out(0)->dims) + " does not match the operator");
    view_ = Coalesce(view);
    esize_ = DataTypeSize(args.in(0)->dtype);
    return Status::Ok();
  }
  Status Run(const KernelArgs& args, CpuContext&) override {
    StridedCopy(args.in(0)->data, args.out(0)->data, view_, esize_);
    return Status::Ok();
  }

 protected:
  // Fills the view: its dims are the output's, or a finer split of them (Tile, DepthToSpace).
  virtual Status BuildView(const KernelArgs& args, const Tensor& in, const Tensor& out, StridedView& view) = 0;

 private:
  StridedView view_;
  size_t esize_ = 0;
};

class TransposeKernel : public StridedKernel {
  Status BuildView(const KernelArgs& args, const Tensor& in, const Tensor& out, StridedView& view) override {
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
};

// ONNX Slice clamping for one axis of size `dim`: the first index read and the element count
// (the same rules as SliceRange in compiler/ops/tensor_infer.h).
struct SliceAxis {
  int64_t start = 0, count = 0;
};
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

class SliceKernel : public StridedKernel {
  Status BuildView(const KernelArgs& args, const Tensor& in, const Tensor& out, StridedView& view) override {
    std::vector<int64_t> starts, ends, axes, steps;
    if (args.attrs.Int("opset", 13) >= 10) {
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
    for (size_t i = 0; i < starts.size(); ++i) {
      int64_t axis = NormalizeAxis(axes[i], in.rank());
      if (axis < 0 || axis >= in.rank() || steps[i] == 0) return args.Error("invalid axis or step");
      size_t a = size_t(axis);
      SliceAxis range = SliceRange(starts[i], ends[i], steps[i], in.dims[a]);
      if (range.count != out.dims[a]) return args.Error("output dim " + std::to_string(a) + " does not match the slice");
      if (range.count == 0) continue;
      view.offset += range.start * strides[a];
      view.strides[a] = strides[a] * steps[i];
    }
    return Status::Ok();
  }
};

class ExpandKernel : public StridedKernel {
  Status BuildView(const KernelArgs& args, const Tensor& in, const Tensor& out, StridedView& view) override {
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
};

// Tile as a view of rank 2r: output dim d is [repeats[d], in.dims[d]] with the repeat stride 0.
class TileKernel : public StridedKernel {
  Status BuildView(const KernelArgs& args, const Tensor& in, const Tensor& out, StridedView& view) override {
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
};

// DepthToSpace: output [N, C', H*b, W*b] read as [N, C', H, b, W, b] from input channels
// (DCR: c = (b1*b + b2)*C' + c'; CRD: c = c'*b*b + b1*b + b2).
class DepthToSpaceKernel : public StridedKernel {
  Status BuildView(const KernelArgs& args, const Tensor& in, const Tensor& out, StridedView& view) override {
    int64_t b = args.attrs.Int("blocksize", 0);
    if (in.rank() != 4 || b <= 0 || in.dims[1] % (b * b) != 0) return args.Error("needs a 4-D input and a blocksize dividing the channels");
    int64_t n = in.dims[0], c = in.dims[1] / (b * b), h = in.dims[2], w = in.dims[3], hw = h * w;
    bool crd = args.attrs.String("mode", "DCR") == "CRD";
    if (out.dims != std::vector<int64_t>{n, c, h * b, w * b}) return args.Error("output shape does not match");
    view.dims = {n, c, h, b, w, b};
    if (crd) view.strides = {in.dims[1] * hw, b * b * hw, w, b * hw, 1, hw};
    else view.strides = {in.dims[1] * hw, hw, w, b * c * hw, 1, c * hw};
    return Status::Ok();
  }
};

// SpaceToDepth: output [N, C*b*b, H/b, W/b] read as [N, b, b, C, H/b, W/b]
// (output channel (b1*b + b2)*C + c).
class SpaceToDepthKernel : public StridedKernel {
  Status BuildView(const KernelArgs& args, const Tensor& in, const Tensor& out, StridedView& view) override {
    int64_t b = args.attrs.Int("blocksize", 0);
    if (in.rank() != 4 || b <= 0 || in.dims[2] % b != 0 || in.dims[3] % b != 0)
      return args.Error("needs a 4-D input and a blocksize dividing the spatial dims");
    int64_t n = in.dims[0], c = in.dims[1], h = in.dims[2], w = in.dims[3];
    if (out.dims != std::vector<int64_t>{n, c * b * b, h / b, w / b}) return args.Error("output shape does not match");
    view.dims = {n, b, b, c, h / b, w / b};
    view.strides = {c * h * w, w, 1, h * w, b * w, b};
    return Status::Ok();
  }
};

// Concat: per outer index (the dims before the axis), one contiguous chunk per input.
class ConcatKernel : public Kernel {
 public:
  Status Init(const KernelArgs& args, const CpuContext&) override {
    Tensor* out = args.out(0);
    if (!out || args.inputs.empty()) return args.Error("needs inputs and an output");
    int64_t axis = NormalizeAxis(args.attrs.Int("axis", 1), out->rank());
    if (axis < 0 || axis >= out->rank()) return args.Error("axis is out of range");
    esize_ = DataTypeSize(out->dtype);
    if (esize_ == 0) return args.Error(std::string("unsupported dtype ") + DataTypeName(out->dtype));
    outer_ = DimProduct(out->dims, 0, size_t(axis));
    int64_t inner = DimProduct(out->dims, size_t(axis) + 1, out->dims.size()), along = 0;
    chunk_bytes_.clear();
    for (size_t i = 0; i < args.inputs.size(); ++i) {
      const Tensor* in = args.in(i);
      if (!in || in->dtype != out->dtype || in->rank() != out->rank()) return args.Error("input " + std::to_string(i) + " does not match the output");
      for (int64_t d = 0; d < out->rank(); ++d)
        if (d != axis && in->dims[size_t(d)] != out->dims[size_t(d)]) return args.Error("input " + std::to_string(i) + " has the wrong shape");
      along += in->dims[size_t(axis)];
      chunk_bytes_.push_back(size_t(in->dims[size_t(axis)] * inner) * esize_);
    }
    if (along != out->dims[size_t(axis)]) return args.Error("inputs do not add up to the output");
    return Status::Ok();
  }
  Status Run(const KernelArgs& args, CpuContext&) override {
    uint8_t* dst = args.out(0)->data;
    for (int64_t o = 0; o < outer_; ++o)
      for (size_t i = 0; i < chunk_bytes_.size(); ++i) {
        size_t n = chunk_bytes_[i];
        if (n) std::memcpy(dst, args.in(i)->data + size_t(o) * n, n);
        dst += n;
      }
    return Status::Ok();
  }

 private:
  std::vector<size_t> chunk_bytes_;
  int64_t outer_ = 0;
  size_t esize_ = 0;
};

// Split: Concat backwards; the part sizes are the outputs' dims along the axis.
class SplitKernel : public Kernel {
 public:
  Status Init(const KernelArgs& args, const CpuContext&) override {
    Tensor* in = args.in(0);
    if (!in || args.outputs.empty()) return args.Error("needs an input and outputs");
    int64_t axis = NormalizeAxis(args.attrs.Int("axis", 0), in->rank());
    if (axis < 0 || axis >= in->rank()) return args.Error("axis is out of range");
    size_t esize = DataTypeSize(in->dtype);
    if (esize == 0) return args.Error(std::string("unsupported dtype ") + DataTypeName(in->dtype));
    outer_ = DimProduct(in->dims, 0, size_t(axis));
    int64_t inner = DimProduct(in->dims, size_t(axis) + 1, in->dims.size()), along = 0;
    chunk_bytes_.clear();
    for (size_t i = 0; i < args.outputs.size(); ++i) {
      const Tensor* out = args.out(i);
      if (!out) return args.Error("output " + std::to_string(i) + " is missing");
      if (out->dtype != in->dtype || out->rank() != in->rank()) return args.Error("output " + std::to_string(i) + " does not match the input");
      for (int64_t d = 0; d < in->rank(); ++d)
        if (d != axis && in->dims[size_t(d)] != out->dims[size_t(d)]) return args.Error("output " + std::to_string(i) + " has the wrong shape");
      along += out->dims[size_t(axis)];
      chunk_bytes_.push_back(size_t(out->dims[size_t(axis)] * inner) * esize);
    }
    if (along != in->dims[size_t(axis)]) return args.Error("outputs do not add up to the input");
    return Status::Ok();
  }
  Status Run(const KernelArgs& args, CpuContext&) override {
    const uint8_t* src = args.in(0)->data;
    for (int64_t o = 0; o < outer_; ++o)
      for (size_t i = 0; i < chunk_bytes_.size(); ++i) {
        size_t n = chunk_bytes_[i];
        if (n) std::memcpy(args.out(i)->data + size_t(o) * n, src, n);
        src += n;
      }
    return Status::Ok();
  }

 private:
  std::vector<size_t> chunk_bytes_;
  int64_t outer_ = 0;
};

// Shape: the input dims [start, end) as int64 (values known at load: the input's dims).
class ShapeKernel : public Kernel {
 public:
  Status Init(const KernelArgs& args, const CpuContext&) override {
    const Tensor *in = args.in(0), *out = args.out(0);
    if (!in || !out || out->dtype != DataType::kI64) return args.Error("needs an input and an int64 output");
    int64_t rank = in->rank(), start = 0, end = rank;
    if (args.attrs.Int("opset", 15) >= 15) {
      start = args.attrs.Int("start", 0);
      end = args.attrs.Int("end", rank);
    }
    auto clamp = [rank](int64_t v) { return std::clamp<int64_t>(v < 0 ? v + rank : v, 0, rank); };
    start = clamp(start);
    end = std::max(clamp(end), start);
    dims_.assign(in->dims.begin() + start, in->dims.begin() + end);
    if (int64_t(dims_.size()) != out->numel) return args.Error("output has the wrong length");
    return Status::Ok();
  }
  Status Run(const KernelArgs& args, CpuContext&) override {
    if (!dims_.empty()) std::memcpy(args.out(0)->data, dims_.data(), dims_.size() * sizeof(int64_t));
    return Status::Ok();
  }

 private:
  std::vector<int64_t> dims_;
};

class SizeKernel : public Kernel {
 public:
  Status Init(const KernelArgs& args, const CpuContext&) override {
    if (!args.in(0) || !args.out(0) || args.out(0)->dtype != DataType::kI64 || args.out(0)->numel != 1)
      return args.Error("needs an input and an int64 scalar output");
    return Status::Ok();
  }
  Status Run(const KernelArgs& args, CpuContext&) override {
    *args.out(0)->As<int64_t>() = args.in(0)->numel;
    return Status::Ok();
  }
};

}  // namespace

void AddTensorIndexKernels(KernelRegistry& r);
void AddTensorFillKernels(KernelRegistry& r);
void AddTensorResizeKernels(KernelRegistry& r);

void RegisterTensorKernels(KernelRegistry& r) {
  r.Register("Reshape", Make<ReshapeKernel>);
  r.Register("Transpose", Make<TransposeKernel>);
  r.Register("Slice", Make<SliceKernel>);
  r.Register("Expand", Make<ExpandKernel>);
  r.Register("Tile", Make<TileKernel>);
  r.Register("DepthToSpace", Make<DepthToSpaceKernel>);
  r.Register("SpaceToDepth", Make<SpaceToDepthKernel>);
  r.Register("Concat", Make<ConcatKernel>);
  r.Register("Split", Make<SplitKernel>);
  r.Register("Shape", Make<ShapeKernel>);
  r.Register("Size", Make<SizeKernel>);
  AddTensorIndexKernels(r);
  AddTensorFillKernels(r);
  AddTensorResizeKernels(r);
}

}  // namespace precis::rt
