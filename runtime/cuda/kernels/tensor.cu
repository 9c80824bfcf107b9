// CUDA kernels: data movement and shape manipulation, mirroring runtime/cpu/kernels/tensor.cc.
// The strided views (Transpose, Slice, Expand, Tile, DepthToSpace, SpaceToDepth) are built in
// Init exactly as the CPU builds them and copied one element (or one wider unit) per thread;
// Transpose goes through 32x33 shared-memory tiles when the innermost axis moves. Concat and
// Split are one launch per 32 pieces with the piece table passed by value. Shape and Size are
// known at load: uploaded once, copied in Run. The family's other kernels live in
// tensor_index.cu, tensor_scatter.cu, tensor_fill.cu and tensor_resize.cu; all register here.
#include <algorithm>
#include <limits>

#include "runtime/base/half.h"
#include "runtime/cuda/kernels/register.h"
#include "runtime/cuda/kernels/tensor_util.cuh"

namespace precis::rt::cuda::tensor {

// ---- shared helpers (tensor_util.cuh) ---------------------------------------------------------

size_t WidestUnit(size_t esize, size_t bytes) {
  size_t unit = 16;
  while (unit > esize && bytes % unit != 0) unit /= 2;
  return unit;
}

size_t AlignUnit(size_t unit, size_t esize, const void* p) {
  while (unit > esize && reinterpret_cast<uintptr_t>(p) % unit != 0) unit /= 2;
  return unit;
}

FastDiv::FastDiv(uint32_t divisor) : d(divisor) {
  s = 0;
  while ((uint64_t(1) << s) < d) ++s;
  m = uint32_t(((uint64_t(1) << 32) * ((uint64_t(1) << s) - d)) / d + 1);
}

StridedView CoalesceSpec(const StridedView& view) {
  StridedView out;
  out.offset = view.offset;
  for (size_t d = 0; d < view.dims.size(); ++d) {
    if (view.dims[d] == 0) {
      out.dims = {0};
      out.strides = {1};
      return out;
    }
    if (view.dims[d] == 1) continue;
    if (!out.dims.empty() && out.strides.back() == view.strides[d] * view.dims[d]) {
      out.dims.back() *= view.dims[d];
      out.strides.back() = view.strides[d];
      continue;
    }
    out.dims.push_back(view.dims[d]);
    out.strides.push_back(view.strides[d]);
  }
  return out;
}

bool HasHalfTensors(const KernelArgs& args) {
  for (const auto* list : {&args.inputs, &args.outputs})
    for (const Tensor* t : *list)
      if (t && (t->dtype == DataType::kF16 || t->dtype == DataType::kBF16)) return true;
  return false;
}

Status DtypeError(const KernelArgs& args, const std::string& message) {
  if (HasHalfTensors(args)) return Unimplemented(args.node + ": " + message + " (16-bit dtypes: runs widened)");
  return args.Error(message);
}

Status RankLimit(const KernelArgs& args, const std::string& what) {
  return Unimplemented(args.node + ": " + what + " has more dims than the CUDA kernel supports (" + std::to_string(kMaxRank) + ")");
}

namespace {
template <typename T> uint64_t SaturateTo(double v) {
  T r;
  if (!(v == v)) r = T(0);
  else if (v <= double(std::numeric_limits<T>::lowest())) r = std::numeric_limits<T>::lowest();
  else if (v >= double(std::numeric_limits<T>::max())) r = std::numeric_limits<T>::max();
  else r = T(v);
  uint64_t bits = 0;
  std::memcpy(&bits, &r, sizeof r);
  return bits;
}
}  // namespace

uint64_t SaturatedBits(DataType t, double v) {
  uint64_t bits = 0;
  switch (t) {
    case DataType::kF32: {
      float f = float(v);
      std::memcpy(&bits, &f, 4);
      return bits;
    }
    case DataType::kF64: std::memcpy(&bits, &v, 8); return bits;
    case DataType::kF16: return FloatToHalf(float(v));
    case DataType::kBF16: return FloatToBf16(float(v));
    case DataType::kBool: case DataType::kU8: return SaturateTo<uint8_t>(v);
    case DataType::kI8: return SaturateTo<int8_t>(v);
    case DataType::kI16: return SaturateTo<int16_t>(v);
    case DataType::kU16: return SaturateTo<uint16_t>(v);
    case DataType::kI32: return SaturateTo<int32_t>(v);
    case DataType::kU32: return SaturateTo<uint32_t>(v);
    case DataType::kI64: return SaturateTo<int64_t>(v);
    case DataType::kU64: return SaturateTo<uint64_t>(v);
    default: return 0;
  }
}

// ---- strided copies ---------------------------------------------------------------------------

namespace {

template <typename U, typename V> struct StridedCopyOp {
  const U* src;
  U* dst;
  V view;
  __host__ __device__ void operator()(int64_t k) const { dst[k] = src[view(k)]; }
};

}  // namespace

Status StridedCopy::Plan(const KernelArgs& args, const StridedView& view, size_t esize) {
  StridedView v = CoalesceSpec(view);
  variants_.clear();
  int64_t count = DimProduct(v.dims, 0, v.dims.size());
  size_t rank = v.dims.size();
  for (size_t unit = 16; unit >= esize; unit /= 2) {
    int64_t f = int64_t(unit / esize);
    if (f > 1) {
      // A wider unit: the innermost dim runs contiguously and every step is a whole unit.
      bool ok = count > 0 && rank > 0 && v.strides.back() == 1 && v.dims.back() % f == 0 && v.offset % f == 0;
      for (size_t d = 0; ok && d + 1 < rank; ++d) ok = v.strides[d] % f == 0;
      if (!ok) continue;
    }
    Variant var;
    var.unit = unit;
    var.count = count / f;
    std::vector<int64_t> dims = v.dims, strides = v.strides;
    if (rank > 0) dims.back() /= f;
    for (size_t d = 0; d + 1 < rank; ++d) strides[d] /= f;
    int64_t base = v.offset / f;
    var.contiguous = rank == 0 || (rank == 1 && strides[0] == 1);
    var.offset = base;
    if (!var.contiguous && count > 0) {
      if (rank > size_t(kViewRank)) return Unimplemented(args.node + ": the strided view has more than " + std::to_string(kViewRank) + " dims");
      int64_t bound = base < 0 ? -base : base;
      for (size_t d = 0; d < rank; ++d) bound += (dims[d] - 1) * (strides[d] < 0 ? -strides[d] : strides[d]);
      var.narrow = rank <= size_t(kMaxRank) && var.count <= INT32_MAX && bound <= INT32_MAX;
      var.v64.rank = int(rank);
      var.v64.base = base;
      var.v32.rank = int(rank);
      var.v32.base = uint32_t(base);
      for (size_t d = 0; d < rank; ++d) {
        var.v64.dims[d] = dims[d];
        var.v64.strides[d] = strides[d];
        if (var.narrow) {
          var.v32.div[d] = FastDiv(uint32_t(dims[d]));
          var.v32.strides[d] = uint32_t(strides[d]);
        }
      }
    }
    variants_.push_back(var);
  }
  return Status::Ok();
}

Status StridedCopy::Run(const KernelArgs& args, const void* src, void* dst, cudaStream_t stream) const {
  for (const Variant& v : variants_) {
    if (v.count == 0) return Status::Ok();
    if (AlignUnit(v.unit, 1, src) != v.unit || AlignUnit(v.unit, 1, dst) != v.unit) continue;
    if (v.contiguous) {
      PRECIS_CUDA_CHECK(args, CopyAsync(dst, static_cast<const uint8_t*>(src) + v.offset * int64_t(v.unit), size_t(v.count) * v.unit, stream));
      return Status::Ok();
    }
    cudaError_t e = cudaSuccess;
    DispatchUnit(v.unit, [&](auto tag) {
      using U = decltype(tag);
      const U* s = static_cast<const U*>(src);
      U* d = static_cast<U*>(dst);
      if (v.narrow) e = Launch(v.count, stream, StridedCopyOp<U, View32>{s, d, v.v32});
      else e = Launch(v.count, stream, StridedCopyOp<U, View64>{s, d, v.v64});
    });
    PRECIS_CUDA_CHECK(args, e);
    return Status::Ok();
  }
  return Internal(args.node + ": tensor pointers are not aligned to their element size");
}

namespace {

Status CheckCopyable(const KernelArgs& args, const Tensor* in, const Tensor* out) {
  if (!in || !out) return args.Error("needs an input and an output");
  if (DataTypeSize(in->dtype) == 0) return args.Error(std::string("unsupported dtype ") + DataTypeName(in->dtype));
  if (in->dtype != out->dtype) return DtypeError(args, "input and output dtypes differ");
  return Status::Ok();
}

int64_t NormalizeAxis(int64_t axis, int64_t rank) { return axis < 0 ? axis + rank : axis; }

// Kernels whose output is the input read through a strided view built once in Init.
class StridedKernel : public Kernel {
 public:
  Status Init(const KernelArgs& args, CudaContext&) override {
    PRECIS_RETURN_IF_ERROR(CheckCopyable(args, args.in(0), args.out(0)));
    StridedView view;
    PRECIS_RETURN_IF_ERROR(BuildView(args, *args.in(0), *args.out(0), view));
    if (DimProduct(view.dims, 0, view.dims.size()) != args.out(0)->numel)
      return args.Error("output shape " + DimsToString(args.out(0)->dims) + " does not match the operator");
    return Prepare(args, view);
  }
  Status Run(const KernelArgs& args, CudaContext& ctx) override { return copy_.Run(args, args.in(0)->data, args.out(0)->data, ctx.stream); }

 protected:
  // Fills the view: its dims are the output's, or a finer split of them (Tile, DepthToSpace).
  virtual Status BuildView(const KernelArgs& args, const Tensor& in, const Tensor& out, StridedView& view) = 0;
  virtual Status Prepare(const KernelArgs& args, const StridedView& view) {
    return copy_.Plan(args, view, DataTypeSize(args.in(0)->dtype));
  }
  StridedCopy copy_;
};

// ---- Transpose ----

constexpr int kTile = 32;

// The tiled transpose of a coalesced view whose innermost output dim (q) is strided in the
// input while another dim (p) is contiguous there: per outer position and 32 x 32 tile, read
// rows of p, write rows of q.
struct TileParams {
  int64_t p = 0, q = 0, in_q = 0, out_p = 0;
  int64_t tiles_p = 0, tiles_q = 0, units = 0;
  Indexer in_outer, out_outer;  // input and output offsets of an outer position
};

template <typename T>
__global__ void __launch_bounds__(kTile * 8) TransposeTilesKernel(const T* __restrict__ src, T* __restrict__ dst, TileParams t) {
  __shared__ T tile[kTile][kTile + 1];
  const int64_t per = t.tiles_p * t.tiles_q;
  for (int64_t u = blockIdx.x; u < t.units; u += gridDim.x) {
    int64_t o = u / per, r = u - o * per;
    int64_t p0 = (r / t.tiles_q) * kTile, q0 = (r % t.tiles_q) * kTile;
    int64_t in_base = t.in_outer(o), out_base = t.out_outer(o);
    int64_t p = p0 + threadIdx.x;
    for (int j = threadIdx.y; j < kTile; j += 8)
      if (p < t.p && q0 + j < t.q) tile[j][threadIdx.x] = src[in_base + p + (q0 + j) * t.in_q];
    __syncthreads();
    int64_t q = q0 + threadIdx.x;
    for (int i = threadIdx.y; i < kTile; i += 8)
      if (p0 + i < t.p && q < t.q) dst[out_base + (p0 + i) * t.out_p + q] = tile[threadIdx.x][i];
    __syncthreads();
  }
}

template <typename T> cudaError_t TransposeTiles(const T* src, T* dst, const TileParams& t, cudaStream_t stream) {
#ifdef PRECIS_TENSOR_HOST_EMULATION
  (void)stream;
  const int64_t per = t.tiles_p * t.tiles_q;
  for (int64_t u = 0; u < t.units; ++u) {
    int64_t o = u / per, r = u - o * per;
    int64_t p0 = (r / t.tiles_q) * kTile, q0 = (r % t.tiles_q) * kTile;
    for (int i = 0; i < kTile; ++i)
      for (int j = 0; j < kTile; ++j)
        if (p0 + i < t.p && q0 + j < t.q) dst[t.out_outer(o) + (p0 + i) * t.out_p + q0 + j] = src[t.in_outer(o) + p0 + i + (q0 + j) * t.in_q];
  }
  return cudaSuccess;
#else
  TransposeTilesKernel<T><<<Blocks(t.units, 1), dim3(kTile, 8), 0, stream>>>(src, dst, t);
  return cudaGetLastError();
#endif
}

class TransposeKernel : public StridedKernel {
 public:
  Status Run(const KernelArgs& args, CudaContext& ctx) override {
    if (!tiled_) return StridedKernel::Run(args, ctx);
    cudaError_t e = cudaSuccess;
    DispatchBySize(esize_, [&](auto tag) {
      using T = decltype(tag);
      e = TransposeTiles(args.in(0)->As<T>(), args.out(0)->As<T>(), tiles_, ctx.stream);
    });
    PRECIS_CUDA_CHECK(args, e);
    return Status::Ok();
  }

 private:
  Status BuildView(const KernelArgs& args, const Tensor& in, const Tensor& out, StridedView& view) override {
    return TransposeView(args, in, out, view);
  }

  // Tiles when the innermost output dim is strided in the input and both tiled dims are long
  // enough to fill a tile; the element-wise copy otherwise.
  Status Prepare(const KernelArgs& args, const StridedView& view) override {
    esize_ = DataTypeSize(args.in(0)->dtype);
    tiled_ = false;
    StridedView v = CoalesceSpec(view);
    size_t rank = v.dims.size(), last = rank - 1, c = rank;
    if (rank >= 2 && v.strides[last] != 1) {
      for (size_t d = 0; d < last; ++d)
        if (v.strides[d] == 1) c = d;
    }
    if (c < rank && v.dims[c] >= 16 && v.dims[last] >= 16) {
      std::vector<int64_t> out_strides = DenseStrides(v.dims), dims, in_s, out_s;
      for (size_t d = 0; d < last; ++d) {
        if (d == c) continue;
        dims.push_back(v.dims[d]);
        in_s.push_back(v.strides[d]);
        out_s.push_back(out_strides[d]);
      }
      TileParams t;
      t.p = v.dims[c];
      t.q = v.dims[last];
      t.in_q = v.strides[last];
      t.out_p = out_strides[c];
      t.tiles_p = (t.p + kTile - 1) / kTile;
      t.tiles_q = (t.q + kTile - 1) / kTile;
      t.units = DimProduct(dims, 0, dims.size()) * t.tiles_p * t.tiles_q;
      if (Indexer::Make(dims, in_s, v.offset, &t.in_outer) && Indexer::Make(dims, out_s, 0, &t.out_outer)) {
        tiles_ = t;
        tiled_ = true;
        return Status::Ok();
      }
    }
    return StridedKernel::Prepare(args, view);
  }

  bool tiled_ = false;
  size_t esize_ = 0;
  TileParams tiles_;
};

// ---- Slice, Expand, Tile, DepthToSpace, SpaceToDepth ----

// The operators of strided_views.h (Transpose, which may tile, is above).
template <Status (*Build)(const KernelArgs&, const Tensor&, const Tensor&, StridedView&)>
class ViewKernel : public StridedKernel {
  Status BuildView(const KernelArgs& args, const Tensor& in, const Tensor& out, StridedView& view) override {
    return Build(args, in, out, view);
  }
};

// ---- Concat and Split ----

// Per outer index (the dims before the axis), the whole tensor's row is the pieces' chunks
// side by side. One launch moves up to kMaxPieces pieces; each block serves one piece.
constexpr int kMaxPieces = 32;

struct PieceTable {
  int count = 0;
  int64_t outer = 0, row = 0;           // row: units per outer index of the whole tensor
  int64_t start[kMaxPieces] = {};       // a piece's first unit in the row
  int64_t chunk[kMaxPieces] = {};       // a piece's units per outer index
  int64_t first_block[kMaxPieces + 1] = {};
  void* piece[kMaxPieces] = {};
};

// Element k of piece p (k < outer * chunk); split: piece <- whole, else whole <- piece.
template <typename U>
__host__ __device__ inline void PieceElement(const PieceTable& t, U* whole, bool split, int p, int64_t k) {
  int64_t chunk = t.chunk[p], o, r;
  if (k <= int64_t(UINT32_MAX) && chunk <= int64_t(UINT32_MAX)) {
    uint32_t q = uint32_t(k) / uint32_t(chunk);
    o = q;
    r = k - int64_t(q) * chunk;
  } else {
    o = k / chunk;
    r = k - o * chunk;
  }
  U* piece = static_cast<U*>(t.piece[p]);
  int64_t w = o * t.row + t.start[p] + r;
  if (split) piece[k] = whole[w];
  else whole[w] = piece[k];
}

template <typename U> __global__ void PieceCopyKernel(PieceTable t, U* whole, bool split) {
  int p = 0;
  while (p + 1 < t.count && int64_t(blockIdx.x) >= t.first_block[p + 1]) ++p;
  int64_t blocks = t.first_block[p + 1] - t.first_block[p], n = t.outer * t.chunk[p];
  for (int64_t k = (int64_t(blockIdx.x) - t.first_block[p]) * blockDim.x + threadIdx.x; k < n; k += blocks * blockDim.x)
    PieceElement(t, whole, split, p, k);
}

template <typename U> cudaError_t PieceCopy(const PieceTable& t, U* whole, bool split, cudaStream_t stream) {
#ifdef PRECIS_TENSOR_HOST_EMULATION
  (void)stream;
  for (int p = 0; p < t.count; ++p)
    for (int64_t k = 0; k < t.outer * t.chunk[p]; ++k) PieceElement(t, whole, split, p, k);
  return cudaSuccess;
#else
  int64_t blocks = t.first_block[t.count];
  if (blocks == 0) return cudaSuccess;
  PieceCopyKernel<U><<<unsigned(blocks), kThreads, 0, stream>>>(t, whole, split);
  return cudaGetLastError();
#endif
}

// Concat (split = false) and Split (true): the whole tensor and its pieces along `axis`.
class PiecesKernel : public Kernel {
 public:
  explicit PiecesKernel(bool split) : split_(split) {}

  Status Init(const KernelArgs& args, CudaContext&) override {
    const Tensor* whole = split_ ? args.in(0) : args.out(0);
    const std::vector<Tensor*>& pieces = split_ ? args.outputs : args.inputs;
    const char* kind = split_ ? "output " : "input ";
    if (!whole || pieces.empty()) return args.Error(split_ ? "needs an input and outputs" : "needs inputs and an output");
    int64_t axis = NormalizeAxis(args.attrs.Int("axis", split_ ? 0 : 1), whole->rank());
    if (axis < 0 || axis >= whole->rank()) return args.Error("axis is out of range");
    esize_ = DataTypeSize(whole->dtype);
    if (esize_ == 0) return args.Error(std::string("unsupported dtype ") + DataTypeName(whole->dtype));
    outer_ = DimProduct(whole->dims, 0, size_t(axis));
    int64_t inner = DimProduct(whole->dims, size_t(axis) + 1, whole->dims.size()), along = 0;
    chunks_.clear();
    unit_ = 16;
    for (size_t i = 0; i < pieces.size(); ++i) {
      const Tensor* t = pieces[i];
      std::string name = kind + std::to_string(i);
      if (!t) return args.Error(name + " is missing");
      if (t->dtype != whole->dtype) return DtypeError(args, name + " does not match the " + (split_ ? "input" : "output"));
      if (t->rank() != whole->rank()) return args.Error(name + " does not match the " + (split_ ? "input" : "output"));
      for (int64_t d = 0; d < whole->rank(); ++d)
        if (d != axis && t->dims[size_t(d)] != whole->dims[size_t(d)]) return args.Error(name + " has the wrong shape");
      along += t->dims[size_t(axis)];
      chunks_.push_back(t->dims[size_t(axis)] * inner);
      unit_ = std::min(unit_, WidestUnit(esize_, size_t(chunks_.back()) * esize_));
    }
    if (along != whole->dims[size_t(axis)]) return args.Error(split_ ? "outputs do not add up to the input" : "inputs do not add up to the output");
    row_ = along * inner;
    return Status::Ok();
  }

  Status Run(const KernelArgs& args, CudaContext& ctx) override {
    Tensor* whole = split_ ? args.in(0) : args.out(0);
    const std::vector<Tensor*>& pieces = split_ ? args.outputs : args.inputs;
    size_t unit = AlignUnit(unit_, esize_, whole->data);
    for (const Tensor* t : pieces) unit = AlignUnit(unit, esize_, t->data);
    int64_t f = int64_t(unit / esize_), start = 0;
    for (size_t first = 0; first < pieces.size(); first += kMaxPieces) {
      PieceTable& t = table_;
      t.count = int(std::min<size_t>(kMaxPieces, pieces.size() - first));
      t.outer = outer_;
      t.row = row_ / f;
      t.first_block[0] = 0;
      for (int p = 0; p < t.count; ++p) {
        t.start[p] = start / f;
        t.chunk[p] = chunks_[first + size_t(p)] / f;
        t.piece[p] = pieces[first + size_t(p)]->data;
        start += chunks_[first + size_t(p)];
        int64_t blocks = std::min<int64_t>((outer_ * t.chunk[p] + kThreads - 1) / kThreads, 4096);
        t.first_block[p + 1] = t.first_block[p] + blocks;
      }
      cudaError_t e = cudaSuccess;
      DispatchUnit(unit, [&](auto tag) {
        using U = decltype(tag);
        e = PieceCopy(t, reinterpret_cast<U*>(whole->data), split_, ctx.stream);
      });
      PRECIS_CUDA_CHECK(args, e);
    }
    return Status::Ok();
  }

 private:
  bool split_;
  size_t esize_ = 0, unit_ = 0;
  int64_t outer_ = 0, row_ = 0;
  std::vector<int64_t> chunks_;  // elements per outer index, per piece
  PieceTable table_;
};

class ConcatKernel : public PiecesKernel {
 public:
  ConcatKernel() : PiecesKernel(false) {}
};
class SplitKernel : public PiecesKernel {
 public:
  SplitKernel() : PiecesKernel(true) {}
};

// ---- Shape and Size: known at load ----

class UploadedValuesKernel : public Kernel {
 public:
  Status Run(const KernelArgs& args, CudaContext& ctx) override {
    PRECIS_CUDA_CHECK(args, CopyAsync(args.out(0)->data, values_, bytes_, ctx.stream));
    return Status::Ok();
  }

 protected:
  Status Upload(const KernelArgs& args, CudaContext& ctx, const std::vector<int64_t>& values) {
    bytes_ = values.size() * sizeof(int64_t);
    PRECIS_ASSIGN_OR_RETURN(values_, UploadTable(ctx, values, args.node + " values"));
    return Status::Ok();
  }

 private:
  const int64_t* values_ = nullptr;
  size_t bytes_ = 0;
};

// Shape: the input dims [start, end) as int64.
class ShapeKernel : public UploadedValuesKernel {
 public:
  Status Init(const KernelArgs& args, CudaContext& ctx) override {
    const Tensor *in = args.in(0), *out = args.out(0);
    if (!in || !out || out->dtype != DataType::kI64) return args.Error("needs an input and an int64 output");
    int64_t rank = in->rank(), start = 0, end = rank;
    start = args.attrs.Int("start", 0);
    end = args.attrs.Int("end", rank);
    auto clamp = [rank](int64_t v) { return std::clamp<int64_t>(v < 0 ? v + rank : v, 0, rank); };
    start = clamp(start);
    end = std::max(clamp(end), start);
    std::vector<int64_t> dims(in->dims.begin() + start, in->dims.begin() + end);
    if (int64_t(dims.size()) != out->numel) return args.Error("output has the wrong length");
    return Upload(args, ctx, dims);
  }
};

class SizeKernel : public UploadedValuesKernel {
 public:
  Status Init(const KernelArgs& args, CudaContext& ctx) override {
    if (!args.in(0) || !args.out(0) || args.out(0)->dtype != DataType::kI64 || args.out(0)->numel != 1)
      return args.Error("needs an input and an int64 scalar output");
    return Upload(args, ctx, {args.in(0)->numel});
  }
};

}  // namespace

// The kernels of this file.
void AddTensorMoveKernels(KernelRegistry& r) {
  r.Register("Transpose", Make<TransposeKernel>);
  r.Register("Slice", Make<ViewKernel<SliceView>>);
  r.Register("Expand", Make<ViewKernel<ExpandView>>);
  r.Register("Tile", Make<ViewKernel<TileView>>);
  r.Register("DepthToSpace", Make<ViewKernel<DepthToSpaceView>>);
  r.Register("SpaceToDepth", Make<ViewKernel<SpaceToDepthView>>);
  r.Register("Concat", Make<ConcatKernel>);
  r.Register("Split", Make<SplitKernel>);
  r.Register("Shape", Make<ShapeKernel>);
  r.Register("Size", Make<SizeKernel>);
}

void AddTensorIndexKernels(KernelRegistry& r);    // tensor_index.cu
void AddTensorScatterKernels(KernelRegistry& r);  // tensor_scatter.cu
void AddTensorFillKernels(KernelRegistry& r);     // tensor_fill.cu
void AddTensorResizeKernels(KernelRegistry& r);   // tensor_resize.cu

}  // namespace precis::rt::cuda::tensor

namespace precis::rt::cuda {

void RegisterTensorKernels(KernelRegistry& r) {
  tensor::AddTensorMoveKernels(r);
  tensor::AddTensorIndexKernels(r);
  tensor::AddTensorScatterKernels(r);
  tensor::AddTensorFillKernels(r);
  tensor::AddTensorResizeKernels(r);
}

}  // namespace precis::rt::cuda
