// CUDA kernels: ScatterND and ScatterElements (the older Scatter lowers to the latter), with
// the reductions none/add/mul/max/min, mirroring runtime/cpu/kernels/tensor_index.cc. The
// output is the data (copied unless the step runs in place), then updated in index order; the
// result must not depend on thread scheduling, duplicates included:
//   reduction none: the last update in index order wins. Every update claims its destination
//     with atomicMax of its position in a scratch "owner" table, then only the owner writes.
//   reductions: the updates that can meet at one destination are applied by one thread in
//     index order (ScatterND: one thread per slice element walks the tuples; ScatterElements:
//     one thread per line along the axis walks it), so the rounding is the CPU's exactly.
// An index out of range raises kIndexOutOfRange; that update is skipped.
#include "runtime/cuda/kernels/tensor_util.cuh"

namespace precis::rt::cuda::tensor {
namespace {

enum class Reduction : int { kNone, kAdd, kMul, kMax, kMin };

bool IsNumeric(DataType t) { return t != DataType::kBool && DataTypeSize(t) != 0; }

Status ParseReduction(const KernelArgs& args, DataType dtype, Reduction& r) {
  std::string s = args.attrs.String("reduction", "none");
  if (s == "none") r = Reduction::kNone;
  else if (s == "add") r = Reduction::kAdd;
  else if (s == "mul") r = Reduction::kMul;
  else if (s == "max") r = Reduction::kMax;
  else if (s == "min") r = Reduction::kMin;
  else return args.Error("unknown reduction '" + s + "'");
  if (r != Reduction::kNone && !IsNumeric(dtype)) return args.Error("reduction '" + s + "' needs numeric data");
  return Status::Ok();
}

Status CheckScatter(const KernelArgs& args) {
  const Tensor *data = args.in(0), *indices = args.in(1), *updates = args.in(2), *out = args.out(0);
  if (!data || !out) return args.Error("missing input or output");
  if (DataTypeSize(data->dtype) == 0) return args.Error(std::string("unsupported dtype ") + DataTypeName(data->dtype));
  if (data->dtype != out->dtype) return DtypeError(args, "data and output dtypes differ");
  if (!indices || !IsIndexType(indices->dtype)) return args.Error("indices must be an integer tensor");
  if (!updates) return args.Error("updates must have the data dtype");
  if (updates->dtype != data->dtype) return DtypeError(args, "updates must have the data dtype");
  if (out->dims != data->dims) return args.Error("output shape differs from the data");
  return Status::Ok();
}

// dst = dst (reduction) update, as the CPU's Combine (std::max(a, b) keeps a unless a < b).
template <typename T> __host__ __device__ inline void Combine(T& dst, T update, Reduction r) {
  auto a = LoadValue(dst), b = LoadValue(update);
  switch (r) {
    case Reduction::kNone: dst = update; return;
    case Reduction::kAdd: dst = StoreValue<T>(a + b); return;
    case Reduction::kMul: dst = StoreValue<T>(a * b); return;
    case Reduction::kMax: dst = StoreValue<T>(a < b ? b : a); return;
    case Reduction::kMin: dst = StoreValue<T>(b < a ? b : a); return;
  }
}

__host__ __device__ inline void ClaimOwner(int* owner, int64_t slot, int64_t position) {
#ifdef __CUDA_ARCH__
  atomicMax(owner + slot, int(position));
#else
  if (owner[slot] < int(position)) owner[slot] = int(position);
#endif
}

// Positions are claimed as int: the owner scheme needs fewer than 2^31 updates, and its table
// (one int per destination, in the step's scratch) is kept below 256 MiB.
constexpr int64_t kMaxOwnerPositions = INT32_MAX;
constexpr int64_t kMaxOwnerSlots = int64_t(1) << 26;

// ---- ScatterND ----

// Destination slot (in slices) of tuple t, or -1 (raised) when an index is out of range.
struct TupleSlots {
  const void* indices;
  DataType itype;
  int k = 0;
  int64_t dims[kMaxRank] = {};
  int64_t slot_strides[kMaxRank] = {};  // data strides divided by the slice
  int* error;
  __host__ __device__ int64_t operator()(int64_t t) const {
    int64_t slot = 0;
    for (int j = 0; j < k; ++j) {
      int64_t v = LoadIndex(indices, itype, t * k + j);
      if (!Wrap(v, dims[j])) {
        Raise(error, kIndexOutOfRange);
        return -1;
      }
      slot += v * slot_strides[j];
    }
    return slot;
  }
};

struct ScatterNDClaimOp {
  TupleSlots slots;
  int* owner;
  __host__ __device__ void operator()(int64_t t) const {
    int64_t s = slots(t);
    if (s >= 0) ClaimOwner(owner, s, t);
  }
};

template <typename U> struct ScatterNDWriteOp {
  TupleSlots slots;
  const int* owner;
  const U* updates;
  U* out;
  int64_t slice;  // in units
  __host__ __device__ void operator()(int64_t i) const {
    int64_t e = 0, t = DivMod(i, slice, e), s = slots(t);
    if (s >= 0 && owner[s] == int(t)) out[s * slice + e] = updates[i];
  }
};

// One thread per slice element walks the tuples in order.
template <typename T> struct ScatterNDReduceOp {
  TupleSlots slots;
  const T* updates;
  T* out;
  int64_t tuples, slice;
  Reduction reduction;
  __host__ __device__ void operator()(int64_t e) const {
    for (int64_t t = 0; t < tuples; ++t) {
      int64_t s = slots(t);
      if (s >= 0) Combine(out[s * slice + e], updates[t * slice + e], reduction);
    }
  }
};

struct CheckTuplesOp {
  TupleSlots slots;
  __host__ __device__ void operator()(int64_t t) const { slots(t); }
};

class ScatterNDKernel : public Kernel {
 public:
  Status Init(const KernelArgs& args, CudaContext&) override {
    PRECIS_RETURN_IF_ERROR(CheckScatter(args));
    const Tensor &data = *args.in(0), &indices = *args.in(1), &updates = *args.in(2);
    PRECIS_RETURN_IF_ERROR(ParseReduction(args, data.dtype, reduction_));
    if (indices.rank() < 1) return args.Error("indices must have rank >= 1");
    int64_t k = indices.dims.back();
    if (k > data.rank()) return args.Error("index length exceeds the data rank");
    if (k > kMaxRank) return RankLimit(args, "an index tuple");
    esize_ = DataTypeSize(data.dtype);
    tuples_ = DimProduct(indices.dims, 0, indices.dims.size() - 1);
    slice_ = DimProduct(data.dims, size_t(k), data.dims.size());
    if (updates.numel != tuples_ * slice_) return args.Error("updates shape does not match");
    std::vector<int64_t> strides = DenseStrides(data.dims);
    slots_ = TupleSlots{};
    slots_.k = int(k);
    for (int64_t j = 0; j < k; ++j) {
      slots_.dims[j] = data.dims[size_t(j)];
      slots_.slot_strides[j] = slice_ ? strides[size_t(j)] / slice_ : 0;
    }
    slot_count_ = slice_ ? data.numel / slice_ : 0;
    owner_ = reduction_ == Reduction::kNone && slice_ > 0 && tuples_ <= kMaxOwnerPositions && slot_count_ <= kMaxOwnerSlots;
    return Status::Ok();
  }
  size_t ScratchBytes() const override { return owner_ ? size_t(slot_count_) * sizeof(int) : 0; }

  Status Run(const KernelArgs& args, CudaContext& ctx) override {
    const Tensor &data = *args.in(0), &indices = *args.in(1), &updates = *args.in(2);
    Tensor& out = *args.out(0);
    PRECIS_CUDA_CHECK(args, CopyAsync(out.data, data.data, out.bytes, ctx.stream));
    TupleSlots slots = slots_;
    slots.indices = indices.data;
    slots.itype = indices.dtype;
    slots.error = ctx.error;
    if (slice_ == 0) {  // nothing to write; the CPU still checks every index
      PRECIS_CUDA_CHECK(args, Launch(tuples_, ctx.stream, CheckTuplesOp{slots}));
      return Status::Ok();
    }
    cudaError_t e = cudaSuccess;
    if (owner_) {
      int* owner = reinterpret_cast<int*>(ctx.scratch);
      PRECIS_CUDA_CHECK(args, FillAsync(owner, 0xff, size_t(slot_count_) * sizeof(int), ctx.stream));  // -1: unclaimed
      PRECIS_CUDA_CHECK(args, Launch(tuples_, ctx.stream, ScatterNDClaimOp{slots, owner}));
      size_t unit = WidestUnit(esize_, size_t(slice_) * esize_);
      unit = AlignUnit(AlignUnit(unit, esize_, updates.data), esize_, out.data);
      int64_t slice = int64_t(size_t(slice_) * esize_ / unit);
      DispatchUnit(unit, [&](auto tag) {
        using U = decltype(tag);
        e = Launch(tuples_ * slice, ctx.stream, ScatterNDWriteOp<U>{slots, owner, updates.As<U>(), out.As<U>(), slice});
      });
    } else if (reduction_ == Reduction::kNone) {
      DispatchBySize(esize_, [&](auto tag) {
        using T = decltype(tag);
        e = Launch(slice_, ctx.stream, ScatterNDReduceOp<T>{slots, updates.As<T>(), out.As<T>(), tuples_, slice_, reduction_});
      });
    } else {
      auto launch = [&](auto tag) {
        using T = decltype(tag);
        e = Launch(slice_, ctx.stream, ScatterNDReduceOp<T>{slots, updates.As<T>(), out.As<T>(), tuples_, slice_, reduction_});
      };
      if (!DispatchFloat(data.dtype, launch)) DispatchInt(data.dtype, launch);
    }
    PRECIS_CUDA_CHECK(args, e);
    return Status::Ok();
  }

 private:
  Reduction reduction_ = Reduction::kNone;
  size_t esize_ = 0;
  int64_t tuples_ = 0, slice_ = 0, slot_count_ = 0;
  bool owner_ = false;
  TupleSlots slots_;
};

// ---- ScatterElements ----

// Update position i goes to data offset walk(i) + indices[i] * axis_stride.
struct ElementTarget {
  const void* indices;
  DataType itype;
  Indexer walk;  // indices position -> data offset without the axis
  int64_t axis_size = 0, axis_stride = 0;
  int* error;
  __host__ __device__ int64_t operator()(int64_t i) const {
    int64_t v = LoadIndex(indices, itype, i);
    if (!Wrap(v, axis_size)) {
      Raise(error, kIndexOutOfRange);
      return -1;
    }
    return walk(i) + v * axis_stride;
  }
};

struct ScatterElementsClaimOp {
  ElementTarget target;
  int* owner;
  __host__ __device__ void operator()(int64_t i) const {
    int64_t off = target(i);
    if (off >= 0) ClaimOwner(owner, off, i);
  }
};

template <typename T> struct ScatterElementsWriteOp {
  ElementTarget target;
  const int* owner;
  const T* updates;
  T* out;
  __host__ __device__ void operator()(int64_t i) const {
    int64_t off = target(i);
    if (off >= 0 && owner[off] == int(i)) out[off] = updates[i];
  }
};

// One thread per line of the indices along the axis (every other coordinate fixed: lines never
// meet in the output) applies the line's updates in order.
template <typename T> struct ScatterElementsLineOp {
  ElementTarget target;
  Indexer line_start;     // line -> position in the indices of its first update
  int64_t length, step;   // updates per line and their distance in the indices
  const T* updates;
  T* out;
  Reduction reduction;
  __host__ __device__ void operator()(int64_t line) const {
    int64_t i = line_start(line);
    for (int64_t a = 0; a < length; ++a, i += step) {
      int64_t off = target(i);
      if (off >= 0) Combine(out[off], updates[i], reduction);
    }
  }
};

class ScatterElementsKernel : public Kernel {
 public:
  Status Init(const KernelArgs& args, CudaContext&) override {
    PRECIS_RETURN_IF_ERROR(CheckScatter(args));
    const Tensor &data = *args.in(0), &indices = *args.in(1), &updates = *args.in(2);
    if (updates.dims != indices.dims) return args.Error("updates must match the indices");
    PRECIS_RETURN_IF_ERROR(ParseReduction(args, data.dtype, reduction_));
    int64_t axis = args.attrs.Int("axis", 0);
    if (axis < 0) axis += data.rank();
    if (axis < 0 || axis >= data.rank() || indices.rank() != data.rank()) return args.Error("axis or indices rank is invalid");
    for (size_t d = 0; d < data.dims.size(); ++d)
      if (int64_t(d) != axis && indices.dims[d] > data.dims[d]) return args.Error("indices dims exceed the data dims");
    std::vector<int64_t> strides = DenseStrides(data.dims), index_strides = DenseStrides(indices.dims);
    target_ = ElementTarget{};
    target_.axis_size = data.dims[size_t(axis)];
    target_.axis_stride = strides[size_t(axis)];
    strides[size_t(axis)] = 0;
    if (!Indexer::Make(indices.dims, strides, 0, &target_.walk)) return RankLimit(args, "indices");
    // Lines: the indices dims with the axis taken out.
    std::vector<int64_t> line_dims = indices.dims;
    length_ = line_dims[size_t(axis)];
    step_ = index_strides[size_t(axis)];
    line_dims[size_t(axis)] = 1;
    lines_ = length_ ? indices.numel / length_ : 0;
    if (!Indexer::Make(line_dims, index_strides, 0, &line_start_)) return RankLimit(args, "indices");
    // Few long lines leave the GPU idle: reduction none then claims owners (one int per output
    // element).
    owner_ = reduction_ == Reduction::kNone && lines_ < 4096 && data.numel <= kMaxOwnerSlots && indices.numel <= kMaxOwnerPositions;
    out_numel_ = data.numel;
    return Status::Ok();
  }
  size_t ScratchBytes() const override { return owner_ ? size_t(out_numel_) * sizeof(int) : 0; }

  Status Run(const KernelArgs& args, CudaContext& ctx) override {
    const Tensor &data = *args.in(0), &indices = *args.in(1), &updates = *args.in(2);
    Tensor& out = *args.out(0);
    PRECIS_CUDA_CHECK(args, CopyAsync(out.data, data.data, out.bytes, ctx.stream));
    ElementTarget target = target_;
    target.indices = indices.data;
    target.itype = indices.dtype;
    target.error = ctx.error;
    cudaError_t e = cudaSuccess;
    if (owner_) {
      int* owner = reinterpret_cast<int*>(ctx.scratch);
      PRECIS_CUDA_CHECK(args, FillAsync(owner, 0xff, size_t(out_numel_) * sizeof(int), ctx.stream));  // -1: unclaimed
      PRECIS_CUDA_CHECK(args, Launch(indices.numel, ctx.stream, ScatterElementsClaimOp{target, owner}));
      DispatchBySize(DataTypeSize(data.dtype), [&](auto tag) {
        using T = decltype(tag);
        e = Launch(indices.numel, ctx.stream, ScatterElementsWriteOp<T>{target, owner, updates.As<T>(), out.As<T>()});
      });
    } else if (reduction_ == Reduction::kNone) {
      DispatchBySize(DataTypeSize(data.dtype), [&](auto tag) {
        using T = decltype(tag);
        e = Launch(lines_, ctx.stream, ScatterElementsLineOp<T>{target, line_start_, length_, step_, updates.As<T>(), out.As<T>(), reduction_});
      });
    } else {
      auto launch = [&](auto tag) {
        using T = decltype(tag);
        e = Launch(lines_, ctx.stream, ScatterElementsLineOp<T>{target, line_start_, length_, step_, updates.As<T>(), out.As<T>(), reduction_});
      };
      if (!DispatchFloat(data.dtype, launch)) DispatchInt(data.dtype, launch);
    }
    PRECIS_CUDA_CHECK(args, e);
    return Status::Ok();
  }

 private:
  Reduction reduction_ = Reduction::kNone;
  ElementTarget target_;
  Indexer line_start_;
  int64_t length_ = 0, step_ = 0, lines_ = 0, out_numel_ = 0;
  bool owner_ = false;
};

}  // namespace

// Called by RegisterTensorKernels (tensor.cu).
void AddTensorScatterKernels(KernelRegistry& r) {
  r.Register("ScatterND", Make<ScatterNDKernel>);
  r.Register("ScatterElements", Make<ScatterElementsKernel>);
}

}  // namespace precis::rt::cuda::tensor
