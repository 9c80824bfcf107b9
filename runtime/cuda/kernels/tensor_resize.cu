// CUDA kernels: Resize (nearest, linear and cubic over any dims, every coordinate
// transformation mode, nearest_mode, cubic_coeff_a, exclude_outside, extrapolation_value) and
// Upsample, mirroring runtime/cpu/kernels/tensor_resize.cc. Init computes the per-dim taps
// (input index and weight of each output coordinate, and whether it is extrapolated) with the
// host code shared with the CPU (runtime/kernels/resize_taps.h) and uploads them; one thread per
// output element sums the tensor product of its taps in the CPU's order, in double, without FMA contraction, so results match the CPU's bit
// for bit. Nearest copies elements of any dtype by size.
#include <algorithm>
#include <cmath>

#include "runtime/cuda/kernels/tensor_util.cuh"
#include "runtime/kernels/resize_taps.h"

namespace precis::rt::cuda::tensor {
namespace {

using resize::Mode;

// The uploaded taps: per dim d, output coordinate y reads taps[d] entries from
// tap_begin[d] + y * taps[d], and is extrapolated when outside[outside_begin[d] + y].
struct ResizeTables {
  int rank = 0;
  int64_t out_dims[kMaxRank] = {};
  int64_t in_strides[kMaxRank] = {};
  int64_t taps[kMaxRank] = {};
  int64_t tap_begin[kMaxRank] = {};
  int64_t outside_begin[kMaxRank] = {};
  const int64_t* index = nullptr;
  const double* weight = nullptr;
  const uint8_t* outside = nullptr;

  // Splits output element t into coordinates; true when any is extrapolated.
  __host__ __device__ bool Coordinates(int64_t t, int64_t* c) const {
    bool out = false;
#ifdef __CUDA_ARCH__
#pragma unroll
#endif
    for (int d = kMaxRank - 1; d >= 0; --d) {
      if (d >= rank) continue;
      t = DivMod(t, out_dims[d], c[d]);
      out = out || outside[outside_begin[d] + c[d]] != 0;
    }
    return out;
  }
};

template <typename U> struct ResizeNearestOp {
  const U* in;
  U* out;
  ResizeTables r;
  U extrapolation;
  __host__ __device__ void operator()(int64_t t) const {
    int64_t c[kMaxRank];
    if (r.Coordinates(t, c)) {
      out[t] = extrapolation;
      return;
    }
    int64_t off = 0;
#ifdef __CUDA_ARCH__
#pragma unroll
#endif
    for (int d = 0; d < kMaxRank; ++d)
      if (d < r.rank) off += r.index[r.tap_begin[d] + c[d] * r.taps[d]] * r.in_strides[d];
    out[t] = in[off];
  }
};

// The taps' combinations in the CPU's order (dim 0 slowest), weights multiplied from dim 0 on.
template <typename T> struct ResizeInterpolateOp {
  const T* in;
  T* out;
  ResizeTables r;
  T extrapolation;
  __host__ __device__ void operator()(int64_t t) const {
    int64_t c[kMaxRank], tap[kMaxRank];
    if (r.Coordinates(t, c)) {
      out[t] = extrapolation;
      return;
    }
    int64_t first[kMaxRank];
#ifdef __CUDA_ARCH__
#pragma unroll
#endif
    for (int d = 0; d < kMaxRank; ++d) {
      tap[d] = 0;
      first[d] = d < r.rank ? r.tap_begin[d] + c[d] * r.taps[d] : 0;
    }
    double acc = 0;
    for (bool more = true; more;) {
      double w = 1.0;
      int64_t off = 0;
#ifdef __CUDA_ARCH__
#pragma unroll
#endif
      for (int d = 0; d < kMaxRank; ++d) {
        if (d >= r.rank) continue;
        int64_t p = first[d] + tap[d];
        w = MulRn(w, r.weight[p]);
        off += r.index[p] * r.in_strides[d];
      }
      acc = AddRn(acc, MulRn(w, double(LoadValue(in[off]))));
      more = false;
#ifdef __CUDA_ARCH__
#pragma unroll
#endif
      for (int d = kMaxRank - 1; d >= 0; --d) {
        if (d >= r.rank || more) continue;
        if (++tap[d] < r.taps[d]) more = true;
        else tap[d] = 0;
      }
    }
    out[t] = StoreValue<T>(acc);
  }
};

class ResizeKernel : public Kernel {
 public:
  explicit ResizeKernel(bool upsample = false) : upsample_(upsample) {}

  Status Init(const KernelArgs& args, CudaContext& ctx) override {
    const Tensor *in = args.in(0), *out = args.out(0);
    if (!in || !out || in->rank() != out->rank()) return args.Error("needs matching input and output");
    if (in->dtype != out->dtype) return DtypeError(args, "needs matching input and output");
    resize::Taps taps;
    PRECIS_RETURN_IF_ERROR(resize::BuildTaps(args, *in, *out, upsample_, &taps));
    bool is_float = in->dtype == DataType::kF32 || in->dtype == DataType::kF64 || in->dtype == DataType::kF16 || in->dtype == DataType::kBF16;
    if (taps.mode == Mode::kNearest ? DataTypeSize(in->dtype) == 0 : !is_float)
      return args.Error(std::string("unsupported dtype ") + DataTypeName(in->dtype));
    if (in->rank() > kMaxRank) return RankLimit(args, "the input");
    mode_ = taps.mode;
    extrapolation_ = SaturatedBits(in->dtype, taps.extrapolation);
    size_t rank = in->dims.size();
    tables_ = ResizeTables{};
    tables_.rank = int(rank);
    std::vector<int64_t> strides = DenseStrides(in->dims);
    for (size_t d = 0; d < rank; ++d) {
      tables_.out_dims[d] = out->dims[d];
      tables_.in_strides[d] = strides[d];
      tables_.taps[d] = taps.per_dim[d];
      tables_.tap_begin[d] = taps.tap_begin[d];
      tables_.outside_begin[d] = taps.outside_begin[d];
    }
    std::vector<int64_t> index;
    std::vector<double> weight;
    for (const resize::Tap& t : taps.taps) {
      index.push_back(t.index);
      weight.push_back(t.weight);
    }
    PRECIS_ASSIGN_OR_RETURN(tables_.index, UploadTable(ctx, index, args.node + " resize indices"));
    PRECIS_ASSIGN_OR_RETURN(tables_.weight, UploadTable(ctx, weight, args.node + " resize weights"));
    PRECIS_ASSIGN_OR_RETURN(tables_.outside, UploadTable(ctx, taps.outside, args.node + " resize extrapolation flags"));
    return Status::Ok();
  }

  Status Run(const KernelArgs& args, CudaContext& ctx) override {
    const Tensor& in = *args.in(0);
    Tensor& out = *args.out(0);
    if (out.numel == 0) return Status::Ok();
    if (out.rank() == 0) {
      PRECIS_CUDA_CHECK(args, CopyAsync(out.data, in.data, DataTypeSize(in.dtype), ctx.stream));
      return Status::Ok();
    }
    cudaError_t e = cudaSuccess;
    if (mode_ == Mode::kNearest) {
      DispatchBySize(DataTypeSize(in.dtype), [&](auto tag) {
        using U = decltype(tag);
        e = Launch(out.numel, ctx.stream, ResizeNearestOp<U>{in.As<U>(), out.As<U>(), tables_, Bits<U>()});
      });
    } else {
      DispatchFloat(in.dtype, [&](auto tag) {
        using T = decltype(tag);
        e = Launch(out.numel, ctx.stream, ResizeInterpolateOp<T>{in.As<T>(), out.As<T>(), tables_, Bits<T>()});
      });
    }
    PRECIS_CUDA_CHECK(args, e);
    return Status::Ok();
  }

 private:
  template <typename U> U Bits() const {
    U v;
    std::memcpy(static_cast<void*>(&v), &extrapolation_, sizeof v);
    return v;
  }

  bool upsample_;
  Mode mode_ = Mode::kNearest;
  uint64_t extrapolation_ = 0;
  ResizeTables tables_;
};

// Upsample (opsets 7-9): nearest (floor) or linear with asymmetric coordinates.
class UpsampleKernel : public ResizeKernel {
 public:
  UpsampleKernel() : ResizeKernel(true) {}
};

}  // namespace

// Called by RegisterTensorKernels (tensor.cu).
void AddTensorResizeKernels(KernelRegistry& r) {
  r.Register("Resize", Make<ResizeKernel>);
  r.Register("Upsample", Make<UpsampleKernel>);
}

}  // namespace precis::rt::cuda::tensor
