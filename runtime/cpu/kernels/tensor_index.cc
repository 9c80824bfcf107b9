// CPU kernels: indexing (Gather, GatherElements, GatherND, ScatterND, ScatterElements, OneHot,
// Compress, NonZero, ReverseSequence). Index values arrive at run time: each is wrapped when
// negative and range-checked in Run, and a bad one fails the step with a message instead of
// reading or writing out of bounds.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "runtime/cpu/kernels/common.h"
#include "runtime/cpu/kernels/register.h"
#include "runtime/cpu/kernels/tensor_util.h"

namespace precis::rt {
namespace {

Status BadIndex(const KernelArgs& args, int64_t value, int64_t n) {
  return args.Error("index " + std::to_string(value) + " is out of range for a dim of size " + std::to_string(n));
}

Status CheckData(const KernelArgs& args, const Tensor* data, const Tensor* out) {
  if (!data || !out) return args.Error("missing input or output");
  if (DataTypeSize(data->dtype) == 0) return args.Error(std::string("unsupported dtype ") + DataTypeName(data->dtype));
  if (data->dtype != out->dtype) return args.Error("data and output dtypes differ");
  return Status::Ok();
}

Status CheckIndexTensor(const KernelArgs& args, const Tensor* t) {
  if (!t || !IsIndexType(t->dtype)) return args.Error("indices must be an integer tensor");
  return Status::Ok();
}

// Gather: out[outer, j, inner] = data[outer, indices[j], inner].
class GatherKernel : public Kernel {
 public:
  Status Init(const KernelArgs& args, const CpuContext&) override {
    const Tensor *data = args.in(0), *indices = args.in(1), *out = args.out(0);
    PRECIS_RETURN_IF_ERROR(CheckData(args, data, out));
    PRECIS_RETURN_IF_ERROR(CheckIndexTensor(args, indices));
    int64_t axis = args.attrs.Int("axis", 0);
    if (axis < 0) axis += data->rank();
    if (axis < 0 || axis >= data->rank()) return args.Error("axis is out of range");
    outer_ = DimProduct(data->dims, 0, size_t(axis));
    n_ = data->dims[size_t(axis)];
    inner_bytes_ = size_t(DimProduct(data->dims, size_t(axis) + 1, data->dims.size())) * DataTypeSize(data->dtype);
    if (out->bytes != size_t(outer_ * indices->numel) * inner_bytes_) return args.Error("output shape does not match");
    return Status::Ok();
  }
  Status Run(const KernelArgs& args, CpuContext&) override {
    const Tensor &data = *args.in(0), &indices = *args.in(1);
    uint8_t* dst = args.out(0)->data;
    for (int64_t j = 0; j < indices.numel; ++j) {
      int64_t v = IndexAt(indices, j);
      if (!WrapIndex(v, n_)) return BadIndex(args, IndexAt(indices, j), n_);
    }
    for (int64_t o = 0; o < outer_; ++o)
      for (int64_t j = 0; j < indices.numel; ++j) {
        int64_t v = IndexAt(indices, j);
        WrapIndex(v, n_);
        std::memcpy(dst, data.data + size_t(o * n_ + v) * inner_bytes_, inner_bytes_);
        dst += inner_bytes_;
      }
    return Status::Ok();
  }

 private:
  int64_t outer_ = 0, n_ = 0;
  size_t inner_bytes_ = 0;
};

// Walks the positions of a tensor of `dims` in row-major order, keeping the offset into
// another tensor with `strides` (the axis' stride left out: the index supplies it).
class ElementWalker {
 public:
  void Reset(const std::vector<int64_t>& dims, const std::vector<int64_t>& strides) {
    dims_ = dims;
    strides_ = strides;
    coord_.assign(dims.size(), 0);
    offset_ = 0;
  }
  void Restart() {
    std::fill(coord_.begin(), coord_.end(), 0);
    offset_ = 0;
  }
  int64_t offset() const { return offset_; }
  void Next() {
    for (size_t d = dims_.size(); d-- > 0;) {
      offset_ += strides_[d];
      if (++coord_[d] < dims_[d]) return;
      offset_ -= strides_[d] * coord_[d];
      coord_[d] = 0;
    }
  }

 private:
  std::vector<int64_t> dims_, strides_, coord_;
  int64_t offset_ = 0;
};

// GatherElements and ScatterElements: positions of `indices` map to data positions whose
// coordinate along `axis` is the index value.
struct ElementsLayout {
  int64_t axis = 0, axis_size = 0, axis_stride = 0;
  ElementWalker walker;

  Status Init(const KernelArgs& args, const Tensor& data, const Tensor& indices) {
    axis = args.attrs.Int("axis", 0);
    if (axis < 0) axis += data.rank();
    if (axis < 0 || axis >= data.rank() || indices.rank() != data.rank()) return args.Error("axis or indices rank is invalid");
    for (size_t d = 0; d < data.dims.size(); ++d)
      if (int64_t(d) != axis && indices.dims[d] > data.dims[d]) return args.Error("indices dims exceed the data dims");
    std::vector<int64_t> strides = DenseStrides(data.dims);
    axis_size = data.dims[size_t(axis)];
    axis_stride = strides[size_t(axis)];
    strides[size_t(axis)] = 0;
    walker.Reset(indices.dims, strides);
    return Status::Ok();
  }
};

class GatherElementsKernel : public Kernel {
 public:
  Status Init(const KernelArgs& args, const CpuContext&) override {
    const Tensor *data = args.in(0), *indices = args.in(1), *out = args.out(0);
    PRECIS_RETURN_IF_ERROR(CheckData(args, data, out));
    PRECIS_RETURN_IF_ERROR(CheckIndexTensor(args, indices));
    if (out->dims != indices->dims) return args.Error("output shape differs from the indices");
    return layout_.Init(args, *data, *indices);
  }
  Status Run(const KernelArgs& args, CpuContext&) override {
    const Tensor &data = *args.in(0), &indices = *args.in(1);
    Status status;
    layout_.walker.Restart();
    DispatchBySize(DataTypeSize(data.dtype), [&](auto tag) {
      using T = decltype(tag);
      const T* src = data.As<T>();
      T* dst = args.out(0)->As<T>();
      for (int64_t i = 0; i < indices.numel; ++i, layout_.walker.Next()) {
        int64_t v = IndexAt(indices, i);
        if (!WrapIndex(v, layout_.axis_size)) {
          status = BadIndex(args, IndexAt(indices, i), layout_.axis_size);
          return;
        }
        dst[i] = src[layout_.walker.offset() + v * layout_.axis_stride];
      }
    });
    return status;
  }

 private:
  ElementsLayout layout_;
};

// GatherND: per batch, each index tuple of length k selects a slice of the data.
class GatherNDKernel : public Kernel {
 public:
  Status Init(const KernelArgs& args, const CpuContext&) override {
    const Tensor *data = args.in(0), *indices = args.in(1), *out = args.out(0);
    PRECIS_RETURN_IF_ERROR(CheckData(args, data, out));
    PRECIS_RETURN_IF_ERROR(CheckIndexTensor(args, indices));
    b_ = size_t(args.attrs.Int("batch_dims", 0));
    if (indices->rank() < 1) return args.Error("indices must have rank >= 1");
    k_ = indices->dims.back();
    size_t q = indices->dims.size();
    if (b_ >= q || b_ + size_t(k_) > data->dims.size()) return args.Error("batch_dims and index length do not fit the data");
    for (size_t d = 0; d < b_; ++d)
      if (indices->dims[d] != data->dims[d]) return args.Error("batch dims of data and indices differ");
    dims_ = data->dims;
    strides_ = DenseStrides(data->dims);
    batches_ = DimProduct(data->dims, 0, b_);
    batch_stride_ = DimProduct(data->dims, b_, data->dims.size());
    tuples_ = DimProduct(indices->dims, b_, q - 1);
    slice_bytes_ = size_t(DimProduct(data->dims, b_ + size_t(k_), data->dims.size())) * DataTypeSize(data->dtype);
    if (out->bytes != size_t(batches_ * tuples_) * slice_bytes_) return args.Error("output shape does not match");
    return Status::Ok();
  }
  Status Run(const KernelArgs& args, CpuContext&) override {
    const Tensor &data = *args.in(0), &indices = *args.in(1);
    size_t esize = DataTypeSize(data.dtype);
    uint8_t* dst = args.out(0)->data;
    for (int64_t bt = 0; bt < batches_; ++bt)
      for (int64_t t = 0; t < tuples_; ++t) {
        int64_t off = bt * batch_stride_, base = (bt * tuples_ + t) * k_;
        for (int64_t j = 0; j < k_; ++j) {
          int64_t v = IndexAt(indices, base + j), n = dims_[b_ + size_t(j)];
          if (!WrapIndex(v, n)) return BadIndex(args, IndexAt(indices, base + j), n);
          off += v * strides_[b_ + size_t(j)];
        }
        std::memcpy(dst, data.data + size_t(off) * esize, slice_bytes_);
        dst += slice_bytes_;
      }
    return Status::Ok();
  }

 private:
  size_t b_ = 0;
  int64_t k_ = 0, batches_ = 0, batch_stride_ = 0, tuples_ = 0;
  size_t slice_bytes_ = 0;
  std::vector<int64_t> dims_, strides_;
};

enum class Reduction { kNone, kAdd, kMul, kMax, kMin };

Status ParseReduction(const KernelArgs& args, DataType dtype, Reduction& r) {
  std::string s = args.attrs.String("reduction", "none");
  if (s == "none") r = Reduction::kNone;
  else if (s == "add") r = Reduction::kAdd;
  else if (s == "mul") r = Reduction::kMul;
  else if (s == "max") r = Reduction::kMax;
  else if (s == "min") r = Reduction::kMin;
  else return args.Error("unknown reduction '" + s + "'");
  if (r != Reduction::kNone && !DispatchNumeric(dtype, [](auto) {})) return args.Error("reduction '" + s + "' needs numeric data");
  return Status::Ok();
}

template <typename T>
void Combine(T& dst, const T& update, Reduction r) {
  auto a = Load(dst), b = Load(update);
  switch (r) {
    case Reduction::kNone: dst = update; return;
    case Reduction::kAdd: dst = Store<T>(a + b); return;
    case Reduction::kMul: dst = Store<T>(a * b); return;
    case Reduction::kMax: dst = Store<T>(std::max(a, b)); return;
    case Reduction::kMin: dst = Store<T>(std::min(a, b)); return;
  }
}

// Applies `update` (n elements) onto `dst` with the reduction; any dtype when kNone.
void ApplyUpdate(DataType dtype, uint8_t* dst, const uint8_t* update, int64_t n, Reduction r) {
  size_t esize = DataTypeSize(dtype);
  if (r == Reduction::kNone) {
    std::memcpy(dst, update, size_t(n) * esize);
    return;
  }
  DispatchNumeric(dtype, [&](auto tag) {
    using T = decltype(tag);
    T* d = reinterpret_cast<T*>(dst);
    const T* u = reinterpret_cast<const T*>(update);
    for (int64_t i = 0; i < n; ++i) Combine(d[i], u[i], r);
  });
}

// ScatterND: output = data, then each index tuple's slice is replaced (or reduced) by updates.
// TensorScatter: out = past_cache with update written along `axis` from write_indices[batch]
// (0 without them); mode "circular" wraps the positions modulo the cache length, "linear" refuses
// a write past its end. See compiler/ops/tensor_index.cc.
class TensorScatterKernel : public Kernel {
 public:
  Status Init(const KernelArgs& args, const CpuContext&) override {
    const Tensor *past = args.in(0), *update = args.in(1), *out = args.out(0);
    PRECIS_RETURN_IF_ERROR(CheckData(args, past, out));
    if (!update || update->dtype != past->dtype || update->rank() != past->rank() || out->dims != past->dims)
      return args.Error("update must have past_cache's dtype and rank, the output its shape");
    int64_t rank = past->rank(), axis = args.attrs.Int("axis", -2);
    axis_ = axis < 0 ? axis + rank : axis;
    if (axis_ < 1 || axis_ >= rank) return args.Error("axis " + std::to_string(axis) + " is out of range");
    for (int64_t j = 0; j < rank; ++j)
      if (j != axis_ && update->dims[size_t(j)] != past->dims[size_t(j)]) return args.Error("update differs from past_cache outside the sequence axis");
    const std::string mode = args.attrs.String("mode", "linear");
    if (mode != "linear" && mode != "circular") return args.Error("mode must be 'linear' or 'circular'");
    circular_ = mode == "circular";
    if (const Tensor* w = args.in(2))
      if (w->dtype != DataType::kI64 || w->rank() != 1 || w->numel != past->dims[0]) return args.Error("write_indices must be int64 [batch]");
    return Status::Ok();
  }
  Status Run(const KernelArgs& args, CpuContext&) override {
    const Tensor &past = *args.in(0), &update = *args.in(1);
    const Tensor* w = args.in(2);
    Tensor& out = *args.out(0);
    size_t a = size_t(axis_);
    int64_t batch = past.dims[0], per_batch = DimProduct(past.dims, 1, a), max_seq = past.dims[a], seq = update.dims[a];
    int64_t inner = DimProduct(past.dims, a + 1, past.dims.size());
    size_t esize = DataTypeSize(out.dtype), row = size_t(inner) * esize;
    for (int64_t b = 0; b < batch; ++b) {
      int64_t start = w ? IndexAt(*w, b) : 0;
      if (start < 0 || (!circular_ && (seq > max_seq || start > max_seq - seq)))
        return args.Error("write index " + std::to_string(start) + " of batch entry " + std::to_string(b) + " with " + std::to_string(seq) +
                          " positions does not fit the cache of " + std::to_string(max_seq));
    }
    if (circular_ && max_seq == 0 && seq > 0) return args.Error("cannot write into an empty cache");
    CopyIfDistinct(past, out);
    for (int64_t b = 0; b < batch; ++b) {
      int64_t start = w ? IndexAt(*w, b) : 0;
      for (int64_t p = 0; p < per_batch; ++p)
        for (int64_t s = 0; s < seq; ++s) {
          int64_t at = circular_ ? (start + s) % max_seq : start + s;
          std::memcpy(out.data + size_t(((b * per_batch + p) * max_seq + at) * inner) * esize,
                      update.data + size_t(((b * per_batch + p) * seq + s) * inner) * esize, row);
        }
    }
    return Status::Ok();
  }

 private:
  int64_t axis_ = 1;
  bool circular_ = false;
};

class ScatterNDKernel : public Kernel {
 public:
  Status Init(const KernelArgs& args, const CpuContext&) override {
    const Tensor *data = args.in(0), *indices = args.in(1), *updates = args.in(2), *out = args.out(0);
    PRECIS_RETURN_IF_ERROR(CheckData(args, data, out));
    PRECIS_RETURN_IF_ERROR(CheckIndexTensor(args, indices));
    if (!updates || updates->dtype != data->dtype) return args.Error("updates must have the data dtype");
    if (out->dims != data->dims) return args.Error("output shape differs from the data");
    PRECIS_RETURN_IF_ERROR(ParseReduction(args, data->dtype, reduction_));
    if (indices->rank() < 1) return args.Error("indices must have rank >= 1");
    k_ = indices->dims.back();
    if (k_ > data->rank()) return args.Error("index length exceeds the data rank");
    dims_ = data->dims;
    strides_ = DenseStrides(data->dims);
    tuples_ = DimProduct(indices->dims, 0, indices->dims.size() - 1);
    slice_ = DimProduct(data->dims, size_t(k_), data->dims.size());
    if (updates->numel != tuples_ * slice_) return args.Error("updates shape does not match");
    return Status::Ok();
  }
  Status Run(const KernelArgs& args, CpuContext&) override {
    const Tensor &indices = *args.in(1), &updates = *args.in(2);
    Tensor& out = *args.out(0);
    size_t esize = DataTypeSize(out.dtype);
    // Check every index before writing anything.
    for (int64_t t = 0; t < tuples_; ++t)
      for (int64_t j = 0; j < k_; ++j) {
        int64_t v = IndexAt(indices, t * k_ + j);
        if (!WrapIndex(v, dims_[size_t(j)])) return BadIndex(args, IndexAt(indices, t * k_ + j), dims_[size_t(j)]);
      }
    CopyIfDistinct(*args.in(0), out);
    for (int64_t t = 0; t < tuples_; ++t) {
      int64_t off = 0;
      for (int64_t j = 0; j < k_; ++j) {
        int64_t v = IndexAt(indices, t * k_ + j);
        WrapIndex(v, dims_[size_t(j)]);
        off += v * strides_[size_t(j)];
      }
      ApplyUpdate(out.dtype, out.data + size_t(off) * esize, updates.data + size_t(t * slice_) * esize, slice_, reduction_);
    }
    return Status::Ok();
  }

 private:
  Reduction reduction_ = Reduction::kNone;
  int64_t k_ = 0, tuples_ = 0, slice_ = 0;
  std::vector<int64_t> dims_, strides_;
};

// ScatterElements (and the older Scatter): output = data, then
// out[.., indices[pos], ..] (reduced with) updates[pos].
class ScatterElementsKernel : public Kernel {
 public:
  Status Init(const KernelArgs& args, const CpuContext&) override {
    const Tensor *data = args.in(0), *indices = args.in(1), *updates = args.in(2), *out = args.out(0);
    PRECIS_RETURN_IF_ERROR(CheckData(args, data, out));
    PRECIS_RETURN_IF_ERROR(CheckIndexTensor(args, indices));
    if (!updates || updates->dtype != data->dtype || updates->dims != indices->dims) return args.Error("updates must match the indices");
    if (out->dims != data->dims) return args.Error("output shape differs from the data");
    PRECIS_RETURN_IF_ERROR(ParseReduction(args, data->dtype, reduction_));
    return layout_.Init(args, *data, *indices);
  }
  Status Run(const KernelArgs& args, CpuContext&) override {
    const Tensor &indices = *args.in(1), &updates = *args.in(2);
    Tensor& out = *args.out(0);
    for (int64_t i = 0; i < indices.numel; ++i) {
      int64_t v = IndexAt(indices, i);
      if (!WrapIndex(v, layout_.axis_size)) return BadIndex(args, IndexAt(indices, i), layout_.axis_size);
    }
    CopyIfDistinct(*args.in(0), out);
    size_t esize = DataTypeSize(out.dtype);
    layout_.walker.Restart();
    for (int64_t i = 0; i < indices.numel; ++i, layout_.walker.Next()) {
      int64_t v = IndexAt(indices, i);
      WrapIndex(v, layout_.axis_size);
      int64_t off = layout_.walker.offset() + v * layout_.axis_stride;
      ApplyUpdate(out.dtype, out.data + size_t(off) * esize, updates.data + size_t(i) * esize, 1, reduction_);
    }
    return Status::Ok();
  }

 private:
  Reduction reduction_ = Reduction::kNone;
  ElementsLayout layout_;
};

// OneHot: out[outer, d, inner] = values[1] where indices[outer, inner] (wrapped) == d, else
// values[0]; indices may be of any numeric type.
class OneHotKernel : public Kernel {
 public:
  Status Init(const KernelArgs& args, const CpuContext&) override {
    const Tensor *indices = args.in(0), *depth = args.in(1), *values = args.in(2), *out = args.out(0);
    if (!indices || !depth || !values || !out) return args.Error("needs indices, depth, values and an output");
    if (!DispatchNumeric(indices->dtype, [](auto) {})) return args.Error("indices must be numeric");
    if (values->dtype != out->dtype || values->numel != 2 || DataTypeSize(out->dtype) == 0) return args.Error("values must hold two elements of the output dtype");
    int64_t axis = args.attrs.Int("axis", -1);
    if (axis < 0) axis += out->rank();
    if (axis < 0 || axis >= out->rank() || out->rank() != indices->rank() + 1) return args.Error("axis is out of range");
    depth_ = out->dims[size_t(axis)];
    outer_ = DimProduct(out->dims, 0, size_t(axis));
    inner_ = DimProduct(out->dims, size_t(axis) + 1, out->dims.size());
    if (outer_ * inner_ != indices->numel) return args.Error("output shape does not match the indices");
    return Status::Ok();
  }
  Status Run(const KernelArgs& args, CpuContext&) override {
    const Tensor &indices = *args.in(0), &values = *args.in(2);
    Tensor& out = *args.out(0);
    DispatchBySize(DataTypeSize(out.dtype), [&](auto tag) {
      using T = decltype(tag);
      T off = values.As<T>()[0], on = values.As<T>()[1];
      T* dst = out.As<T>();
      std::fill(dst, dst + out.numel, off);
      DispatchNumeric(indices.dtype, [&](auto itag) {
        using I = decltype(itag);
        const I* idx = indices.As<I>();
        for (int64_t o = 0; o < outer_; ++o)
          for (int64_t i = 0; i < inner_; ++i) {
            double raw = double(Load(idx[o * inner_ + i]));
            if (!(std::fabs(raw) < 9e18)) continue;  // NaN or beyond int64: matches no class
            int64_t v = int64_t(raw);
            if (WrapIndex(v, depth_)) dst[(o * depth_ + v) * inner_ + i] = on;
          }
      });
    });
    return Status::Ok();
  }

 private:
  int64_t depth_ = 0, outer_ = 0, inner_ = 0;
};

// Compress: keeps the slices along `axis` (or the elements of the flattened input) whose
// condition entry is true. With a constant condition the output shape was fixed at compile time
// and Run checks that the condition still agrees; otherwise the count is a data dim (common.h).
class CompressKernel : public Kernel {
 public:
  Status Init(const KernelArgs& args, const CpuContext&) override {
    const Tensor *in = args.in(0), *cond = args.in(1), *out = args.out(0);
    PRECIS_RETURN_IF_ERROR(CheckData(args, in, out));
    if (!cond || DataTypeSize(cond->dtype) != 1) return args.Error("condition must be bool");
    int64_t axis = 0;
    std::vector<int64_t> expected;
    if (args.attrs.Has("axis")) {
      axis = args.attrs.Int("axis", 0);
      if (axis < 0) axis += in->rank();
      if (axis < 0 || axis >= in->rank()) return args.Error("axis is out of range");
      outer_ = DimProduct(in->dims, 0, size_t(axis));
      n_ = in->dims[size_t(axis)];
      inner_bytes_ = size_t(DimProduct(in->dims, size_t(axis) + 1, in->dims.size())) * DataTypeSize(in->dtype);
      expected = in->dims;
    } else {
      outer_ = 1;
      n_ = in->numel;
      inner_bytes_ = DataTypeSize(in->dtype);
      expected = {n_};
    }
    if (DataDimAxis(args) >= 0) PRECIS_RETURN_IF_ERROR(CheckDataDimOutput(args, *out, axis, expected));
    if (cond->numel > n_) return args.Error("condition is longer than the compressed axis");
    return Status::Ok();
  }
  Status Run(const KernelArgs& args, CpuContext&) override {
    const Tensor &in = *args.in(0), &cond = *args.in(1);
    Tensor& out = *args.out(0);
    int64_t kept = 0, limit = std::min(cond.numel, n_);
    for (int64_t i = 0; i < limit; ++i) kept += cond.data[i] != 0;
    if (int64_t axis = DataDimAxis(args); axis >= 0) {
      PRECIS_RETURN_IF_ERROR(SetDataDim(args, out, axis, kept));
    } else if (size_t(outer_ * kept) * inner_bytes_ != out.bytes) {
      return args.Error("condition selects a different count than the compiled output shape");
    }
    uint8_t* dst = out.data;
    for (int64_t o = 0; o < outer_; ++o)
      for (int64_t i = 0; i < limit; ++i)
        if (cond.data[i]) {
          std::memcpy(dst, in.data + size_t(o * n_ + i) * inner_bytes_, inner_bytes_);
          dst += inner_bytes_;
        }
    return Status::Ok();
  }

 private:
  int64_t outer_ = 0, n_ = 0;
  size_t inner_bytes_ = 0;
};

// NonZero: the coordinates of nonzero elements, [rank, count] in row-major order; count is fixed
// at compile time (a constant input) or a data dim (common.h).
class NonZeroKernel : public Kernel {
 public:
  Status Init(const KernelArgs& args, const CpuContext&) override {
    const Tensor *in = args.in(0), *out = args.out(0);
    if (!in || !out || out->dtype != DataType::kI64 || out->rank() != 2 || out->dims[0] != in->rank())
      return args.Error("needs an input and an int64 [rank, count] output");
    // Static counts are checked when the step runs (the count found must be the planned one).
    if (DataDimAxis(args) >= 0) PRECIS_RETURN_IF_ERROR(CheckDataDimOutput(args, *out, 1, {in->rank(), 0}));
    if (!DispatchAny(in->dtype, [](auto) {})) return args.Error(std::string("unsupported dtype ") + DataTypeName(in->dtype));
    strides_ = DenseStrides(in->dims);
    return Status::Ok();
  }
  Status Run(const KernelArgs& args, CpuContext&) override {
    const Tensor& in = *args.in(0);
    Tensor& out = *args.out(0);
    int64_t count = out.dims[1];
    Status status;
    DispatchAny(in.dtype, [&](auto tag) {
      using T = decltype(tag);
      const T* x = in.As<T>();
      int64_t found = 0;
      for (int64_t i = 0; i < in.numel; ++i) found += Load(x[i]) != 0;
      if (int64_t axis = DataDimAxis(args); axis >= 0) {
        status = SetDataDim(args, out, axis, found);
        if (!status.ok()) return;
        count = found;
      }
      if (found != count) {
        status = args.Error("input has " + std::to_string(found) + " nonzero elements, the compiled output " + std::to_string(count));
        return;
      }
      int64_t* y = out.As<int64_t>();
      int64_t j = 0;
      for (int64_t i = 0; i < in.numel; ++i) {
        if (Load(x[i]) == 0) continue;
        int64_t rest = i;
        for (size_t d = 0; d < strides_.size(); ++d) {
          y[int64_t(d) * count + j] = rest / strides_[d];
          rest %= strides_[d];
        }
        ++j;
      }
    });
    return status;
  }

 private:
  std::vector<int64_t> strides_;
};

// Unique: the distinct values of X (flattened), or its distinct slices along `axis` compared
// element by element in row-major order, as numpy's unique (NaN equal to NaN, after every number).
// sorted = 1: ascending; 0: in order of first occurrence. Outputs Y, the first occurrence of each
// [count], each element's (slice's) index into Y, and the counts; count is a data dim.
class UniqueKernel : public Kernel {
 public:
  Status Init(const KernelArgs& args, const CpuContext&) override {
    const Tensor *x = args.in(0), *y = args.out(0);
    if (!x || !y || y->dtype != x->dtype || !DispatchNumeric(x->dtype, [](auto) {})) return args.Error("needs a numeric input and output of its dtype");
    for (size_t i = 1; i < 4; ++i)
      if (const Tensor* o = args.out(i); o && (o->dtype != DataType::kI64 || o->rank() != 1)) return args.Error("indices, inverse_indices and counts must be 1-D int64");
    has_axis_ = args.attrs.Has("axis");
    axis_ = has_axis_ ? args.attrs.Int("axis", 0) : 0;
    if (axis_ < 0) axis_ += x->rank();
    if (has_axis_ && (axis_ < 0 || axis_ >= x->rank())) return args.Error("axis is out of range");
    sorted_ = args.attrs.Int("sorted", 1) != 0;
    std::vector<int64_t> expected = has_axis_ ? x->dims : std::vector<int64_t>{x->numel};
    PRECIS_RETURN_IF_ERROR(CheckDataDimOutput(args, *y, has_axis_ ? axis_ : 0, expected));
    for (size_t i : {size_t(1), size_t(3)})
      if (const Tensor* o = args.out(i); o && o->dims[0] != y->dims[size_t(has_axis_ ? axis_ : 0)]) return args.Error("indices and counts must have Y's count");
    return Status::Ok();
  }

  Status Run(const KernelArgs& args, CpuContext&) override {
    const Tensor& x = *args.in(0);
    Tensor& y = *args.out(0);
    int64_t n = has_axis_ ? x.dims[size_t(axis_)] : x.numel;
    int64_t outer = has_axis_ ? DimProduct(x.dims, 0, size_t(axis_)) : 1;
    int64_t inner = has_axis_ ? DimProduct(x.dims, size_t(axis_) + 1, x.dims.size()) : 1;
    std::vector<int64_t> order(static_cast<size_t>(n)), group(static_cast<size_t>(n));
    std::vector<int64_t> first, counts;
    DispatchNumeric(x.dtype, [&](auto tag) {
      using T = decltype(tag);
      const T* px = x.As<T>();
      // -1, 0, 1 comparing items a and b element by element (NaN equal to NaN, above numbers).
      auto cmp = [&](int64_t a, int64_t b) {
        for (int64_t o = 0; o < outer; ++o)
          for (int64_t j = 0; j < inner; ++j) {
            double va = double(Load(px[(o * n + a) * inner + j])), vb = double(Load(px[(o * n + b) * inner + j]));
            bool na = std::isnan(va), nb = std::isnan(vb);
            if (na || nb) {
              if (na != nb) return na ? 1 : -1;
              continue;
            }
            if constexpr (std::is_integral_v<T>) {
              T ia = px[(o * n + a) * inner + j], ib = px[(o * n + b) * inner + j];
              if (ia != ib) return ia < ib ? -1 : 1;
            } else if (va != vb) {
              return va < vb ? -1 : 1;
            }
          }
        return 0;
      };
      std::iota(order.begin(), order.end(), 0);
      std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return cmp(a, b) < 0; });
      for (size_t k = 0; k < order.size(); ++k) {
        if (k == 0 || cmp(order[k - 1], order[k]) != 0) {
          first.push_back(order[k]);  // the stable sort keeps the first occurrence first
          counts.push_back(0);
        }
        group[size_t(order[k])] = int64_t(first.size()) - 1;
        ++counts.back();
      }
    });
    int64_t u = int64_t(first.size());
    std::vector<int64_t> rank(static_cast<size_t>(u));  // output position of each sorted group
    std::iota(rank.begin(), rank.end(), 0);
    if (!sorted_) {
      std::vector<int64_t> by_first(rank);
      std::sort(by_first.begin(), by_first.end(), [&](int64_t a, int64_t b) { return first[size_t(a)] < first[size_t(b)]; });
      for (int64_t k = 0; k < u; ++k) rank[size_t(by_first[size_t(k)])] = k;
    }
    PRECIS_RETURN_IF_ERROR(SetDataDim(args, y, has_axis_ ? axis_ : 0, u));
    size_t esize = DataTypeSize(x.dtype);
    for (int64_t g = 0; g < u; ++g)
      for (int64_t o = 0; o < outer; ++o)
        std::memcpy(y.data + size_t((o * u + rank[size_t(g)]) * inner) * esize, x.data + size_t((o * n + first[size_t(g)]) * inner) * esize,
                    size_t(inner) * esize);
    if (Tensor* t = args.out(1)) {
      PRECIS_RETURN_IF_ERROR(SetDataDim(args, *t, 0, u));
      for (int64_t g = 0; g < u; ++g) t->As<int64_t>()[rank[size_t(g)]] = first[size_t(g)];
    }
    if (Tensor* t = args.out(2)) {
      if (t->numel != n) return args.Error("inverse_indices must have one entry per element (slice)");
      for (int64_t i = 0; i < n; ++i) t->As<int64_t>()[i] = rank[size_t(group[size_t(i)])];
    }
    if (Tensor* t = args.out(3)) {
      PRECIS_RETURN_IF_ERROR(SetDataDim(args, *t, 0, u));
      for (int64_t g = 0; g < u; ++g) t->As<int64_t>()[rank[size_t(g)]] = counts[size_t(g)];
    }
    return Status::Ok();
  }

 private:
  bool has_axis_ = false, sorted_ = true;
  int64_t axis_ = 0;
};

// ReverseSequence: for each batch entry b, the first sequence_lens[b] steps along the time
// axis are reversed; the rest are copied.
class ReverseSequenceKernel : public Kernel {
 public:
  Status Init(const KernelArgs& args, const CpuContext&) override {
    const Tensor *in = args.in(0), *lens = args.in(1), *out = args.out(0);
    PRECIS_RETURN_IF_ERROR(CheckData(args, in, out));
    PRECIS_RETURN_IF_ERROR(CheckIndexTensor(args, lens));
    time_first_ = args.attrs.Int("time_axis", 0) == 0;
    if (in->rank() < 2 || out->dims != in->dims) return args.Error("input must have rank >= 2 and match the output");
    steps_ = in->dims[time_first_ ? 0 : 1];
    batch_ = in->dims[time_first_ ? 1 : 0];
    if (lens->numel != batch_) return args.Error("sequence_lens must have one entry per batch");
    inner_bytes_ = size_t(DimProduct(in->dims, 2, in->dims.size())) * DataTypeSize(in->dtype);
    return Status::Ok();
  }
  Status Run(const KernelArgs& args, CpuContext&) override {
    const Tensor &in = *args.in(0), &lens = *args.in(1);
    Tensor& out = *args.out(0);
    for (int64_t b = 0; b < batch_; ++b) {
      int64_t len = IndexAt(lens, b);
      if (len < 0 || len > steps_) return args.Error("sequence length " + std::to_string(len) + " is out of range [0, " + std::to_string(steps_) + "]");
    }
    for (int64_t b = 0; b < batch_; ++b) {
      int64_t len = IndexAt(lens, b);
      for (int64_t t = 0; t < steps_; ++t) {
        int64_t src_t = t < len ? len - 1 - t : t;
        std::memcpy(out.data + Offset(t, b), in.data + Offset(src_t, b), inner_bytes_);
      }
    }
    return Status::Ok();
  }

 private:
  size_t Offset(int64_t t, int64_t b) const {
    return size_t(time_first_ ? t * batch_ + b : b * steps_ + t) * inner_bytes_;
  }
  bool time_first_ = true;
  int64_t steps_ = 0, batch_ = 0;
  size_t inner_bytes_ = 0;
};

}  // namespace

// Called by RegisterTensorKernels (tensor.cc).
void AddTensorIndexKernels(KernelRegistry& r) {
  r.Register("Gather", Make<GatherKernel>);
  r.Register("GatherElements", Make<GatherElementsKernel>);
  r.Register("GatherND", Make<GatherNDKernel>);
  r.Register("ScatterND", Make<ScatterNDKernel>);
  r.Register("TensorScatter", Make<TensorScatterKernel>);
  r.Register("ScatterElements", Make<ScatterElementsKernel>);
  r.Register("OneHot", Make<OneHotKernel>);
  r.Register("Compress", Make<CompressKernel>);
  r.Register("NonZero", Make<NonZeroKernel>);
  r.Register("Unique", Make<UniqueKernel>);
  r.Register("ReverseSequence", Make<ReverseSequenceKernel>);
}

}  // namespace precis::rt
