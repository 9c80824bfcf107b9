// CPU kernels: data movement and shape manipulation. This file holds the copies (Reshape and
// its kin, which run in place when the planner allows), the strided views (Transpose, Slice,
// Expand, Tile, DepthToSpace, SpaceToDepth: one StridedCopy each, the view built in Init),
// Concat, Split, Shape and Size. tensor_index.cc, tensor_fill.cc and tensor_resize.cc hold the
// rest of the family. Every kernel moves bytes by element size, so every dtype works.
#include <algorithm>

#include "runtime/cpu/kernels/common.h"
#include "runtime/cpu/kernels/register.h"
#include "runtime/cpu/kernels/tensor_util.h"
#include "runtime/kernels/strided_views.h"

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
    if (args.in(0)->bytes != args.out(0)->bytes)
      return args.Error("cannot reshape " + DimsToString(args.in(0)->dims) + " into " + DimsToString(args.out(0)->dims) + ": the element counts differ");
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

// The operators of strided_views.h.
template <Status (*Build)(const KernelArgs&, const Tensor&, const Tensor&, StridedView&)>
class ViewKernel : public StridedKernel {
  Status BuildView(const KernelArgs& args, const Tensor& in, const Tensor& out, StridedView& view) override {
    return Build(args, in, out, view);
  }
};

// Expand whose shape is a run-time value (a dynamic plan): the output dims came from the values,
// and each run checks that the values broadcast as ONNX requires (1, or the output dim).
class ExpandKernel : public ViewKernel<ExpandView> {
 public:
  Status Run(const KernelArgs& args, CpuContext& ctx) override {
    if (const Tensor* shape = args.in(1); shape && !shape->is_constant) {
      const Tensor& out = *args.out(0);
      if (shape->numel > out.rank()) return args.Error("shape has more entries than the output's rank");
      for (int64_t k = 0; k < shape->numel; ++k) {
        int64_t v = IndexAt(*shape, k), d = out.dims[size_t(out.rank() - shape->numel + k)];
        if (v != 1 && v != d)
          return args.Error("cannot expand to shape entry " + std::to_string(k) + " = " + std::to_string(v) + ": the input has " + std::to_string(d) +
                            " there");
      }
    }
    return ViewKernel<ExpandView>::Run(args, ctx);
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
    start = args.attrs.Int("start", 0);
    end = args.attrs.Int("end", rank);
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

// Slice whose starts/ends/axes/steps are computed at run time (a dynamic plan's shape arithmetic:
// x[:, :seq] of a longer buffer): the view is built in Run from their values, in vectors sized
// in Init (no allocation); the output's dims, from the plan's shape expressions, must be what the
// values give. Constant bounds take the view built once in Init.
class SliceKernel : public Kernel {
 public:
  Status Init(const KernelArgs& args, const CpuContext&) override {
    PRECIS_RETURN_IF_ERROR(CheckCopyable(args, args.in(0), args.out(0)));
    esize_ = DataTypeSize(args.in(0)->dtype);
    runtime_ = false;
    for (size_t i = 1; i < 5 && i < args.inputs.size(); ++i)
      if (const Tensor* t = args.in(i); t && !t->is_constant) {
        if (!IsIndexType(t->dtype) || t->rank() > 1) return args.Error("starts, ends, axes and steps must be 1-D integer tensors");
        runtime_ = true;
      }
    if (!runtime_) {
      StridedView view;
      PRECIS_RETURN_IF_ERROR(SliceView(args, *args.in(0), *args.out(0), view));
      if (DimProduct(view.dims, 0, view.dims.size()) != args.out(0)->numel)
        return args.Error("output shape " + DimsToString(args.out(0)->dims) + " does not match the operator");
      view_ = Coalesce(view);
      return Status::Ok();
    }
    if (args.attrs.Has("starts")) return args.Error("run-time bounds need the input form of Slice (opset 10 on)");
    if (args.out(0)->rank() != args.in(0)->rank()) return args.Error("output rank differs from the input");
    size_t rank = size_t(args.in(0)->rank());
    view_.dims.assign(rank, 0);
    view_.strides.assign(rank, 0);
    dense_ = DenseStrides(args.in(0)->dims);
    seen_.assign(rank, 0);
    return Status::Ok();
  }
  Status Run(const KernelArgs& args, CpuContext&) override {
    if (runtime_) PRECIS_RETURN_IF_ERROR(RuntimeView(args));
    StridedCopy(args.in(0)->data, args.out(0)->data, view_, esize_);
    return Status::Ok();
  }

 private:
  Status RuntimeView(const KernelArgs& args) {
    const Tensor& in = *args.in(0);
    const Tensor& out = *args.out(0);
    const Tensor* starts = args.in(1);
    const Tensor* ends = args.in(2);
    const Tensor* axes = args.in(3);
    const Tensor* steps = args.in(4);
    if (!starts || !ends || starts->numel != ends->numel || (axes && axes->numel != starts->numel) || (steps && steps->numel != starts->numel))
      return args.Error("starts, ends, axes and steps differ in length");
    int64_t rank = in.rank();
    for (int64_t d = 0; d < rank; ++d) {
      view_.dims[size_t(d)] = in.dims[size_t(d)];
      view_.strides[size_t(d)] = dense_[size_t(d)];
    }
    view_.offset = 0;
    std::fill(seen_.begin(), seen_.end(), 0);
    for (int64_t i = 0; i < starts->numel; ++i) {
      int64_t axis = axes ? IndexAt(*axes, i) : i;
      if (axis < 0) axis += rank;
      int64_t step = steps ? IndexAt(*steps, i) : 1;
      if (axis < 0 || axis >= rank || step == 0) return args.Error("invalid axis or step");
      size_t a = size_t(axis);
      if (seen_[a]) return args.Error("an axis is repeated");  // two starts would add to the offset
      seen_[a] = 1;
      SliceAxis range = SliceRange(IndexAt(*starts, i), IndexAt(*ends, i), step, in.dims[a]);
      view_.dims[a] = range.count;
      if (range.count == 0) continue;
      view_.offset += range.start * dense_[a];
      view_.strides[a] = dense_[a] * step;
    }
    for (int64_t d = 0; d < rank; ++d)
      if (view_.dims[size_t(d)] != out.dims[size_t(d)])
        return args.Error("the run-time bounds give dim " + std::to_string(d) + " = " + std::to_string(view_.dims[size_t(d)]) + ", the plan's shape " +
                          DimsToString(out.dims) + " (the input shapes do not fit the model)");
    return Status::Ok();
  }

  StridedView view_;
  std::vector<int64_t> dense_;
  std::vector<char> seen_;  // per axis, during RuntimeView
  size_t esize_ = 0;
  bool runtime_ = false;
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
  r.Register("Transpose", Make<ViewKernel<TransposeView>>);
  r.Register("Slice", Make<SliceKernel>);
  r.Register("Expand", Make<ExpandKernel>);
  r.Register("Tile", Make<ViewKernel<TileView>>);
  r.Register("DepthToSpace", Make<ViewKernel<DepthToSpaceView>>);
  r.Register("SpaceToDepth", Make<ViewKernel<SpaceToDepthView>>);
  r.Register("Concat", Make<ConcatKernel>);
  r.Register("Split", Make<SplitKernel>);
  r.Register("Shape", Make<ShapeKernel>);
  r.Register("Size", Make<SizeKernel>);
  AddTensorIndexKernels(r);
  AddTensorFillKernels(r);
  AddTensorResizeKernels(r);
}

}  // namespace precis::rt
