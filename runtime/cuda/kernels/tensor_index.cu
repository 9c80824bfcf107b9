// CUDA kernels: indexing (Gather, GatherElements, GatherND, OneHot, Compress, NonZero,
// ReverseSequence), mirroring runtime/cpu/kernels/tensor_index.cc. Index values arrive at run
// time on the device: each is wrapped when negative as the CPU does, and one out of range
// raises kIndexOutOfRange and leaves its output element unwritten. NonZero and Compress check
// the selected count against the one compiled into the plan (blocks count their chunks, then
// emit them in order with warp ballots); a different count raises kCountMismatch and writes
// nothing. Scatters are in tensor_scatter.cu.
#include <algorithm>
#include <cmath>
#include <initializer_list>

#include "runtime/cuda/kernels/tensor_util.cuh"

namespace precis::rt::cuda::tensor {
namespace {

Status CheckData(const KernelArgs& args, const Tensor* data, const Tensor* out) {
  if (!data || !out) return args.Error("missing input or output");
  if (DataTypeSize(data->dtype) == 0) return args.Error(std::string("unsupported dtype ") + DataTypeName(data->dtype));
  if (data->dtype != out->dtype) return DtypeError(args, "data and output dtypes differ");
  return Status::Ok();
}

Status CheckIndexTensor(const KernelArgs& args, const Tensor* t) {
  if (!t || !IsIndexType(t->dtype)) return args.Error("indices must be an integer tensor");
  return Status::Ok();
}

// The widest unit for rows of `row_bytes` whose pointers are all aligned to it.
size_t RowUnit(size_t esize, size_t row_bytes, std::initializer_list<const void*> pointers) {
  size_t unit = WidestUnit(esize, row_bytes);
  for (const void* p : pointers) unit = AlignUnit(unit, esize, p);
  return unit;
}

// ---- Gather: out[o, j, e] = data[o, indices[j], e] ----

template <typename U> struct GatherOp {
  const U* data;
  U* out;
  const void* indices;
  DataType itype;
  int64_t nidx, n, inner;  // inner in units
  bool write;              // false: only check the indices (an empty output)
  int* error;
  __host__ __device__ void operator()(int64_t t) const {
    int64_t e = 0, q = write ? DivMod(t, inner, e) : t, j = 0, o = DivMod(q, nidx, j);
    int64_t v = LoadIndex(indices, itype, j);
    if (!Wrap(v, n)) {
      Raise(error, kIndexOutOfRange);
      return;
    }
    if (write) out[t] = data[(o * n + v) * inner + e];
  }
};

class GatherKernel : public Kernel {
 public:
  Status Init(const KernelArgs& args, CudaContext&) override {
    const Tensor *data = args.in(0), *indices = args.in(1), *out = args.out(0);
    PRECIS_RETURN_IF_ERROR(CheckData(args, data, out));
    PRECIS_RETURN_IF_ERROR(CheckIndexTensor(args, indices));
    int64_t axis = args.attrs.Int("axis", 0);
    if (axis < 0) axis += data->rank();
    if (axis < 0 || axis >= data->rank()) return args.Error("axis is out of range");
    esize_ = DataTypeSize(data->dtype);
    outer_ = DimProduct(data->dims, 0, size_t(axis));
    n_ = data->dims[size_t(axis)];
    inner_ = DimProduct(data->dims, size_t(axis) + 1, data->dims.size());
    if (out->bytes != size_t(outer_ * indices->numel * inner_) * esize_) return args.Error("output shape does not match");
    return Status::Ok();
  }
  Status Run(const KernelArgs& args, CudaContext& ctx) override {
    const Tensor &data = *args.in(0), &indices = *args.in(1);
    Tensor& out = *args.out(0);
    size_t unit = RowUnit(esize_, size_t(inner_) * esize_, {data.data, out.data});
    int64_t inner = int64_t(size_t(inner_) * esize_ / unit), count = outer_ * indices.numel * inner;
    bool write = count > 0;
    if (!write) count = indices.numel;  // the CPU checks every index even when nothing is copied
    cudaError_t e = cudaSuccess;
    DispatchUnit(unit, [&](auto tag) {
      using U = decltype(tag);
      e = Launch(count, ctx.stream, GatherOp<U>{data.As<U>(), out.As<U>(), indices.data, indices.dtype, indices.numel, n_, inner, write, ctx.error});
    });
    PRECIS_CUDA_CHECK(args, e);
    return Status::Ok();
  }

 private:
  size_t esize_ = 0;
  int64_t outer_ = 0, n_ = 0, inner_ = 0;
};

// ---- GatherElements: out[pos] = data[pos with its axis coordinate replaced by indices[pos]] ----

template <typename T> struct GatherElementsOp {
  const T* data;
  T* out;
  const void* indices;
  DataType itype;
  Indexer walk;  // indices position -> data offset without the axis
  int64_t axis_size, axis_stride;
  int* error;
  __host__ __device__ void operator()(int64_t i) const {
    int64_t v = LoadIndex(indices, itype, i);
    if (!Wrap(v, axis_size)) {
      Raise(error, kIndexOutOfRange);
      return;
    }
    out[i] = data[walk(i) + v * axis_stride];
  }
};

class GatherElementsKernel : public Kernel {
 public:
  Status Init(const KernelArgs& args, CudaContext&) override {
    const Tensor *data = args.in(0), *indices = args.in(1), *out = args.out(0);
    PRECIS_RETURN_IF_ERROR(CheckData(args, data, out));
    PRECIS_RETURN_IF_ERROR(CheckIndexTensor(args, indices));
    if (out->dims != indices->dims) return args.Error("output shape differs from the indices");
    int64_t axis = args.attrs.Int("axis", 0);
    if (axis < 0) axis += data->rank();
    if (axis < 0 || axis >= data->rank() || indices->rank() != data->rank()) return args.Error("axis or indices rank is invalid");
    for (size_t d = 0; d < data->dims.size(); ++d)
      if (int64_t(d) != axis && indices->dims[d] > data->dims[d]) return args.Error("indices dims exceed the data dims");
    std::vector<int64_t> strides = DenseStrides(data->dims);
    axis_size_ = data->dims[size_t(axis)];
    axis_stride_ = strides[size_t(axis)];
    strides[size_t(axis)] = 0;
    if (!Indexer::Make(indices->dims, strides, 0, &walk_)) return RankLimit(args, "indices");
    return Status::Ok();
  }
  Status Run(const KernelArgs& args, CudaContext& ctx) override {
    const Tensor &data = *args.in(0), &indices = *args.in(1);
    cudaError_t e = cudaSuccess;
    DispatchBySize(DataTypeSize(data.dtype), [&](auto tag) {
      using T = decltype(tag);
      e = Launch(indices.numel, ctx.stream,
                 GatherElementsOp<T>{data.As<T>(), args.out(0)->As<T>(), indices.data, indices.dtype, walk_, axis_size_, axis_stride_, ctx.error});
    });
    PRECIS_CUDA_CHECK(args, e);
    return Status::Ok();
  }

 private:
  Indexer walk_;
  int64_t axis_size_ = 0, axis_stride_ = 0;
};

// ---- GatherND: per batch, each index tuple of length k selects a slice of the data ----

struct TupleDims {
  int k = 0;
  int64_t dims[kMaxRank] = {};
  int64_t strides[kMaxRank] = {};  // in units
};

template <typename U> struct GatherNDOp {
  const U* data;
  U* out;
  const void* indices;
  DataType itype;
  TupleDims tuple;
  int64_t tuples, slice, batch_stride;  // slice and batch_stride in units
  bool write;                           // false: only check the indices (an empty output)
  int* error;
  __host__ __device__ void operator()(int64_t t) const {
    int64_t e = 0, q = write ? DivMod(t, slice, e) : t, tt = 0, bt = DivMod(q, tuples, tt);
    int64_t off = bt * batch_stride, base = q * tuple.k;
    for (int j = 0; j < tuple.k; ++j) {
      int64_t v = LoadIndex(indices, itype, base + j);
      if (!Wrap(v, tuple.dims[j])) {
        Raise(error, kIndexOutOfRange);
        return;
      }
      off += v * tuple.strides[j];
    }
    if (write) out[t] = data[off + e];
  }
};

class GatherNDKernel : public Kernel {
 public:
  Status Init(const KernelArgs& args, CudaContext&) override {
    const Tensor *data = args.in(0), *indices = args.in(1), *out = args.out(0);
    PRECIS_RETURN_IF_ERROR(CheckData(args, data, out));
    PRECIS_RETURN_IF_ERROR(CheckIndexTensor(args, indices));
    size_t b = size_t(args.attrs.Int("batch_dims", 0));
    if (indices->rank() < 1) return args.Error("indices must have rank >= 1");
    int64_t k = indices->dims.back();
    size_t q = indices->dims.size();
    if (b >= q || b + size_t(k) > data->dims.size()) return args.Error("batch_dims and index length do not fit the data");
    for (size_t d = 0; d < b; ++d)
      if (indices->dims[d] != data->dims[d]) return args.Error("batch dims of data and indices differ");
    if (k > kMaxRank) return RankLimit(args, "an index tuple");
    std::vector<int64_t> strides = DenseStrides(data->dims);
    tuple_ = TupleDims{};
    tuple_.k = int(k);
    for (int64_t j = 0; j < k; ++j) {
      tuple_.dims[j] = data->dims[b + size_t(j)];
      tuple_.strides[j] = strides[b + size_t(j)];
    }
    esize_ = DataTypeSize(data->dtype);
    batches_ = DimProduct(data->dims, 0, b);
    batch_stride_ = DimProduct(data->dims, b, data->dims.size());
    tuples_ = DimProduct(indices->dims, b, q - 1);
    slice_ = DimProduct(data->dims, b + size_t(k), data->dims.size());
    if (out->bytes != size_t(batches_ * tuples_ * slice_) * esize_) return args.Error("output shape does not match");
    return Status::Ok();
  }
  Status Run(const KernelArgs& args, CudaContext& ctx) override {
    const Tensor &data = *args.in(0), &indices = *args.in(1);
    Tensor& out = *args.out(0);
    // Tuple strides and the batch stride are multiples of the slice: every unit of it fits.
    size_t unit = RowUnit(esize_, size_t(slice_) * esize_, {data.data, out.data});
    int64_t f = int64_t(unit / esize_), slice = slice_ / f, count = batches_ * tuples_ * slice;
    TupleDims tuple = tuple_;
    for (int j = 0; j < tuple.k; ++j) tuple.strides[j] /= f;
    bool write = count > 0;
    if (!write) count = batches_ * tuples_;
    cudaError_t e = cudaSuccess;
    DispatchUnit(unit, [&](auto tag) {
      using U = decltype(tag);
      e = Launch(count, ctx.stream,
                 GatherNDOp<U>{data.As<U>(), out.As<U>(), indices.data, indices.dtype, tuple, tuples_, slice, batch_stride_ / f, write, ctx.error});
    });
    PRECIS_CUDA_CHECK(args, e);
    return Status::Ok();
  }

 private:
  TupleDims tuple_;
  size_t esize_ = 0;
  int64_t batches_ = 0, batch_stride_ = 0, tuples_ = 0, slice_ = 0;
};

// ---- OneHot: out[o, d, i] = values[1] where indices[o, i] (wrapped) == d, else values[0] ----

template <typename U> struct OneHotOp {
  const void* indices;
  DataType itype;
  const U* values;
  U* out;
  int64_t depth, inner;
  __host__ __device__ void operator()(int64_t t) const {
    int64_t i = 0, q = DivMod(t, inner, i), d = 0, o = DivMod(q, depth, d);
    double raw = LoadDouble(indices, itype, o * inner + i);
    bool on = false;
    if (fabs(raw) < 9e18) {  // NaN or beyond int64 matches no class
      int64_t v = int64_t(raw);
      on = Wrap(v, depth) && v == d;
    }
    out[t] = values[on ? 1 : 0];
  }
};

class OneHotKernel : public Kernel {
 public:
  Status Init(const KernelArgs& args, CudaContext&) override {
    const Tensor *indices = args.in(0), *depth = args.in(1), *values = args.in(2), *out = args.out(0);
    if (!indices || !depth || !values || !out) return args.Error("needs indices, depth, values and an output");
    if (indices->dtype == DataType::kBool || DataTypeSize(indices->dtype) == 0) return args.Error("indices must be numeric");
    if (values->numel != 2 || DataTypeSize(out->dtype) == 0) return args.Error("values must hold two elements of the output dtype");
    if (values->dtype != out->dtype) return DtypeError(args, "values must hold two elements of the output dtype");
    int64_t axis = args.attrs.Int("axis", -1);
    if (axis < 0) axis += out->rank();
    if (axis < 0 || axis >= out->rank() || out->rank() != indices->rank() + 1) return args.Error("axis is out of range");
    depth_ = out->dims[size_t(axis)];
    outer_ = DimProduct(out->dims, 0, size_t(axis));
    inner_ = DimProduct(out->dims, size_t(axis) + 1, out->dims.size());
    if (outer_ * inner_ != indices->numel) return args.Error("output shape does not match the indices");
    return Status::Ok();
  }
  Status Run(const KernelArgs& args, CudaContext& ctx) override {
    const Tensor &indices = *args.in(0), &values = *args.in(2);
    Tensor& out = *args.out(0);
    cudaError_t e = cudaSuccess;
    DispatchBySize(DataTypeSize(out.dtype), [&](auto tag) {
      using U = decltype(tag);
      e = Launch(out.numel, ctx.stream, OneHotOp<U>{indices.data, indices.dtype, values.As<U>(), out.As<U>(), depth_, inner_});
    });
    PRECIS_CUDA_CHECK(args, e);
    return Status::Ok();
  }

 private:
  int64_t depth_ = 0, outer_ = 0, inner_ = 0;
};

// ---- selection: NonZero and Compress ----

// Selection in two launches over `blocks` chunks of [0, n): each block counts pred over its
// chunk; then each block sums the counts before its own (its first output position) and all of
// them (a total other than `expected` raises kCountMismatch and nothing is written), and calls
// emit(j, i) for the j-th selected i of its chunk, a tile of 512 at a time with warp ballots.
constexpr int kSelectThreads = 512;
constexpr int64_t kSelectMaxBlocks = 256;

struct SelectPlan {
  int64_t n = 0, chunk = kSelectThreads;
  int blocks = 1;
};

SelectPlan PlanSelect(int64_t n) {
  SelectPlan p;
  p.n = n;
  int64_t blocks = std::clamp<int64_t>((n + 8 * kSelectThreads - 1) / (8 * kSelectThreads), 1, kSelectMaxBlocks);
  p.chunk = std::max<int64_t>((n + blocks - 1) / blocks, 1);
  p.chunk = (p.chunk + kSelectThreads - 1) / kSelectThreads * kSelectThreads;
  p.blocks = int(std::max<int64_t>((n + p.chunk - 1) / p.chunk, 1));
  return p;
}

template <typename Pred>
__global__ void __launch_bounds__(kSelectThreads) SelectCountKernel(int64_t n, int64_t chunk, Pred pred, long long* counts) {
  __shared__ long long partial[32];
  int64_t begin = int64_t(blockIdx.x) * chunk, end = begin + chunk < n ? begin + chunk : n;
  long long c = 0;
  for (int64_t i = begin + threadIdx.x; i < end; i += blockDim.x) c += pred(i) ? 1 : 0;
  c = BlockSum(c, partial);
  if (threadIdx.x == 0) counts[blockIdx.x] = c;
}

template <typename Pred, typename Emit>
__global__ void __launch_bounds__(kSelectThreads)
    SelectEmitKernel(int64_t n, int64_t chunk, int64_t expected, Pred pred, Emit emit, const long long* counts, int* error) {
  __shared__ long long partial[32];
  __shared__ int warp_counts[32];
  long long mine = threadIdx.x < gridDim.x ? counts[threadIdx.x] : 0;
  long long total = BlockSum(mine, partial);
  long long base = BlockSum(threadIdx.x < blockIdx.x ? mine : 0LL, partial);
  if (total != expected) {
    if (blockIdx.x == 0 && threadIdx.x == 0) RaiseError(error, kCountMismatch);
    return;
  }
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  int64_t begin = int64_t(blockIdx.x) * chunk, end = begin + chunk < n ? begin + chunk : n;
  for (int64_t t0 = begin; t0 < end; t0 += blockDim.x) {
    int64_t i = t0 + threadIdx.x;
    bool keep = i < end && pred(i);
    unsigned mask = __ballot_sync(0xffffffffu, keep);
    if (lane == 0) warp_counts[warp] = __popc(mask);
    __syncthreads();
    int before = 0, tile = 0;
    for (int w = 0; w < warps; ++w) {
      before += w < warp ? warp_counts[w] : 0;
      tile += warp_counts[w];
    }
    if (keep) emit(base + before + __popc(mask & ((1u << lane) - 1u)), i);
    base += tile;
    __syncthreads();
  }
}

// `counts`: plan.blocks values of scratch.
template <typename Pred, typename Emit>
cudaError_t Select(const SelectPlan& plan, int64_t expected, const Pred& pred, const Emit& emit, long long* counts, int* error,
                   cudaStream_t stream) {
#ifdef PRECIS_TENSOR_HOST_EMULATION
  (void)stream;
  for (int b = 0; b < plan.blocks; ++b) {
    counts[b] = 0;
    for (int64_t i = b * plan.chunk; i < std::min(plan.n, (b + 1) * plan.chunk); ++i) counts[b] += pred(i) ? 1 : 0;
  }
  long long total = 0;
  for (int b = 0; b < plan.blocks; ++b) total += counts[b];
  if (total != expected) {
    Raise(error, kCountMismatch);
    return cudaSuccess;
  }
  for (int b = 0; b < plan.blocks; ++b) {
    long long j = 0;
    for (int c = 0; c < b; ++c) j += counts[c];
    for (int64_t i = b * plan.chunk; i < std::min(plan.n, (b + 1) * plan.chunk); ++i)
      if (pred(i)) emit(j++, i);
  }
  return cudaSuccess;
#else
  SelectCountKernel<<<plan.blocks, kSelectThreads, 0, stream>>>(plan.n, plan.chunk, pred, counts);
  cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) return e;
  SelectEmitKernel<<<plan.blocks, kSelectThreads, 0, stream>>>(plan.n, plan.chunk, expected, pred, emit, counts, error);
  return cudaGetLastError();
#endif
}

struct NonZeroPred {
  const void* x;
  DataType dtype;
  __host__ __device__ bool operator()(int64_t i) const { return NonZeroAt(x, dtype, i); }
};

// y[d, j] = coordinate d of the j-th nonzero element.
struct NonZeroEmit {
  int64_t* y;
  int64_t count;
  int rank;
  int64_t strides[kMaxRank];
  __host__ __device__ void operator()(int64_t j, int64_t i) const {
    int64_t rest = i;
#ifdef __CUDA_ARCH__
#pragma unroll
#endif
    for (int d = 0; d < kMaxRank; ++d) {
      if (d >= rank) break;
      int64_t c = rest / strides[d];
      y[d * count + j] = c;
      rest -= c * strides[d];
    }
  }
};

// NonZero: the coordinates of nonzero elements, [rank, count] in row-major order.
class NonZeroKernel : public Kernel {
 public:
  Status Init(const KernelArgs& args, CudaContext&) override {
    const Tensor *in = args.in(0), *out = args.out(0);
    if (!in || !out || out->dtype != DataType::kI64 || out->rank() != 2 || out->dims[0] != in->rank())
      return args.Error("needs an input and an int64 [rank, count] output");
    if (DataTypeSize(in->dtype) == 0) return args.Error(std::string("unsupported dtype ") + DataTypeName(in->dtype));
    if (in->rank() > kMaxRank) return RankLimit(args, "the input");
    emit_ = NonZeroEmit{};
    emit_.rank = int(in->rank());
    std::vector<int64_t> strides = DenseStrides(in->dims);
    for (size_t d = 0; d < strides.size(); ++d) emit_.strides[d] = strides[d];
    plan_ = PlanSelect(in->numel);
    return Status::Ok();
  }
  size_t ScratchBytes() const override { return size_t(plan_.blocks) * sizeof(long long); }
  Status Run(const KernelArgs& args, CudaContext& ctx) override {
    const Tensor& in = *args.in(0);
    Tensor& out = *args.out(0);
    NonZeroEmit emit = emit_;
    emit.y = out.As<int64_t>();
    emit.count = out.dims[1];
    long long* counts = reinterpret_cast<long long*>(ctx.scratch);
    PRECIS_CUDA_CHECK(args, Select(plan_, emit.count, NonZeroPred{in.data, in.dtype}, emit, counts, ctx.error, ctx.stream));
    return Status::Ok();
  }

 private:
  NonZeroEmit emit_;
  SelectPlan plan_;
};

struct CompressPred {
  const uint8_t* cond;
  __host__ __device__ bool operator()(int64_t i) const { return cond[i] != 0; }
};
struct CompressEmit {
  int64_t* selected;
  __host__ __device__ void operator()(int64_t j, int64_t i) const { selected[j] = i; }
};

// out[o, j, e] = in[o, selected[j], e]; nothing when the selection failed.
template <typename U> struct CompressCopyOp {
  const U* in;
  U* out;
  const int64_t* selected;
  int64_t kept, n, inner;  // inner in units
  const int* error;
  __host__ __device__ void operator()(int64_t t) const {
    if (*error != 0) return;
    int64_t e = 0, q = DivMod(t, inner, e), j = 0, o = DivMod(q, kept, j);
    out[t] = in[(o * n + selected[j]) * inner + e];
  }
};

// Compress: keeps the slices along `axis` (or the elements of the flattened input) whose
// condition entry is true; the kept count is compiled into the output shape.
class CompressKernel : public Kernel {
 public:
  Status Init(const KernelArgs& args, CudaContext&) override {
    const Tensor *in = args.in(0), *cond = args.in(1), *out = args.out(0);
    PRECIS_RETURN_IF_ERROR(CheckData(args, in, out));
    if (!cond || DataTypeSize(cond->dtype) != 1) return args.Error("condition must be bool");
    if (args.attrs.Has("axis")) {
      int64_t axis = args.attrs.Int("axis", 0);
      if (axis < 0) axis += in->rank();
      if (axis < 0 || axis >= in->rank()) return args.Error("axis is out of range");
      outer_ = DimProduct(in->dims, 0, size_t(axis));
      n_ = in->dims[size_t(axis)];
      inner_ = DimProduct(in->dims, size_t(axis) + 1, in->dims.size());
    } else {
      outer_ = 1;
      n_ = in->numel;
      inner_ = 1;
    }
    if (cond->numel > n_) return args.Error("condition is longer than the compressed axis");
    esize_ = DataTypeSize(in->dtype);
    cond_numel_ = cond->numel;
    plan_ = PlanSelect(cond->numel);
    // The CPU compares outer * kept * inner bytes with the output's bytes on every run.
    int64_t per_kept = outer_ * inner_;
    if (per_kept == 0) {
      if (out->numel != 0) return args.Error("output shape does not match the compressed input");
      kept_ = -1;  // nothing to copy, any condition agrees
    } else {
      if (out->numel % per_kept != 0) return args.Error("output shape does not match the compressed input");
      kept_ = out->numel / per_kept;
    }
    return Status::Ok();
  }
  // The selected indices, then the selection's block counts.
  size_t ScratchBytes() const override { return size_t(cond_numel_) * sizeof(int64_t) + size_t(plan_.blocks) * sizeof(long long); }
  Status Run(const KernelArgs& args, CudaContext& ctx) override {
    if (kept_ < 0) return Status::Ok();
    const Tensor &in = *args.in(0), &cond = *args.in(1);
    Tensor& out = *args.out(0);
    int64_t* selected = reinterpret_cast<int64_t*>(ctx.scratch);
    long long* counts = reinterpret_cast<long long*>(selected + cond_numel_);
    PRECIS_CUDA_CHECK(args, Select(plan_, kept_, CompressPred{cond.data}, CompressEmit{selected}, counts, ctx.error, ctx.stream));
    if (out.numel == 0) return Status::Ok();
    size_t unit = RowUnit(esize_, size_t(inner_) * esize_, {in.data, out.data});
    int64_t inner = int64_t(size_t(inner_) * esize_ / unit);
    cudaError_t e = cudaSuccess;
    DispatchUnit(unit, [&](auto tag) {
      using U = decltype(tag);
      e = Launch(outer_ * kept_ * inner, ctx.stream, CompressCopyOp<U>{in.As<U>(), out.As<U>(), selected, kept_, n_, inner, ctx.error});
    });
    PRECIS_CUDA_CHECK(args, e);
    return Status::Ok();
  }

 private:
  int64_t outer_ = 0, n_ = 0, inner_ = 0, kept_ = 0, cond_numel_ = 0;
  size_t esize_ = 0;
  SelectPlan plan_;
};

// ---- ReverseSequence ----

// For batch entry b, the first lens[b] steps along the time axis are reversed, the rest copied.
template <typename U> struct ReverseSequenceOp {
  const U* in;
  U* out;
  const void* lens;
  DataType ltype;
  bool time_first, write;  // write false: only check the lengths (an empty output)
  int64_t steps, batch, inner;  // inner in units
  int* error;
  __host__ __device__ int64_t Offset(int64_t t, int64_t b) const { return (time_first ? t * batch + b : b * steps + t) * inner; }
  __host__ __device__ void operator()(int64_t k) const {
    int64_t e = 0, q = write ? DivMod(k, inner, e) : k, t = 0, b = 0;
    if (!write) b = q;
    else if (time_first) t = DivMod(q, batch, b);
    else b = DivMod(q, steps, t);
    int64_t len = LoadIndex(lens, ltype, b);
    if (len < 0 || len > steps) {
      Raise(error, kBadValue);
      return;
    }
    if (write) out[k] = in[Offset(t < len ? len - 1 - t : t, b) + e];
  }
};

class ReverseSequenceKernel : public Kernel {
 public:
  Status Init(const KernelArgs& args, CudaContext&) override {
    const Tensor *in = args.in(0), *lens = args.in(1), *out = args.out(0);
    PRECIS_RETURN_IF_ERROR(CheckData(args, in, out));
    PRECIS_RETURN_IF_ERROR(CheckIndexTensor(args, lens));
    time_first_ = args.attrs.Int("time_axis", 0) == 0;
    if (in->rank() < 2 || out->dims != in->dims) return args.Error("input must have rank >= 2 and match the output");
    steps_ = in->dims[time_first_ ? 0 : 1];
    batch_ = in->dims[time_first_ ? 1 : 0];
    if (lens->numel != batch_) return args.Error("sequence_lens must have one entry per batch");
    esize_ = DataTypeSize(in->dtype);
    inner_ = DimProduct(in->dims, 2, in->dims.size());
    return Status::Ok();
  }
  Status Run(const KernelArgs& args, CudaContext& ctx) override {
    const Tensor &in = *args.in(0), &lens = *args.in(1);
    Tensor& out = *args.out(0);
    size_t unit = RowUnit(esize_, size_t(inner_) * esize_, {in.data, out.data});
    int64_t inner = int64_t(size_t(inner_) * esize_ / unit), count = steps_ * batch_ * inner;
    bool write = count > 0;
    if (!write) count = batch_;
    cudaError_t e = cudaSuccess;
    DispatchUnit(unit, [&](auto tag) {
      using U = decltype(tag);
      e = Launch(count, ctx.stream,
                 ReverseSequenceOp<U>{in.As<U>(), out.As<U>(), lens.data, lens.dtype, time_first_, write, steps_, batch_, inner, ctx.error});
    });
    PRECIS_CUDA_CHECK(args, e);
    return Status::Ok();
  }

 private:
  bool time_first_ = true;
  int64_t steps_ = 0, batch_ = 0, inner_ = 0;
  size_t esize_ = 0;
};

}  // namespace

// Called by RegisterTensorKernels (tensor.cu).
void AddTensorIndexKernels(KernelRegistry& r) {
  r.Register("Gather", Make<GatherKernel>);
  r.Register("GatherElements", Make<GatherElementsKernel>);
  r.Register("GatherND", Make<GatherNDKernel>);
  r.Register("OneHot", Make<OneHotKernel>);
  r.Register("Compress", Make<CompressKernel>);
  r.Register("NonZero", Make<NonZeroKernel>);
  r.Register("ReverseSequence", Make<ReverseSequenceKernel>);
}

}  // namespace precis::rt::cuda::tensor
