// CUDA kernels that generate or mask values: ConstantOfShape, Range, EyeLike, Trilu and Pad,
// mirroring runtime/cpu/kernels/tensor_fill.cc. Fill values known at load (ConstantOfShape's
// attribute, EyeLike's one, Pad's attribute before opset 11) are kept as bit patterns and passed
// by value; values that arrive at run time (Range's start and delta, Trilu's k, Pad's
// constant_value) are read on the device. Pad's per-dim coordinate maps are built in Init as on
// the CPU and uploaded once.
#include <algorithm>

#include "runtime/cuda/kernels/tensor_util.cuh"

namespace precis::rt::cuda::tensor {
namespace {

template <typename U> U FromBits(uint64_t bits) {
  U v;
  std::memcpy(&v, &bits, sizeof v);
  return v;
}

template <typename U> struct FillOp {
  U* dst;
  U value;
  __host__ __device__ void operator()(int64_t i) const { dst[i] = value; }
};

// ConstantOfShape: the 'value' tensor attribute (default float 0) repeated.
class ConstantOfShapeKernel : public Kernel {
 public:
  Status Init(const KernelArgs& args, CudaContext&) override {
    const Tensor* out = args.out(0);
    if (!out) return args.Error("needs an output");
    esize_ = DataTypeSize(out->dtype);
    bits_ = 0;
    const plan::Attr* a = args.attrs.Find("value");
    if (!a) {
      if (out->dtype != DataType::kF32) return args.Error("without 'value' the output must be float");
      return Status::Ok();
    }
    if (a->kind() != plan::AttrKind_Tensor || DataType(a->tensor_dtype()) != out->dtype || !a->tensor_data() ||
        a->tensor_data()->size() != esize_ || esize_ == 0)
      return args.Error("'value' must be one element of the output dtype");
    std::memcpy(&bits_, a->tensor_data()->data(), esize_);
    return Status::Ok();
  }
  Status Run(const KernelArgs& args, CudaContext& ctx) override {
    Tensor& out = *args.out(0);
    if (bits_ == 0) {
      PRECIS_CUDA_CHECK(args, FillAsync(out.data, 0, out.bytes, ctx.stream));
      return Status::Ok();
    }
    cudaError_t e = cudaSuccess;
    DispatchBySize(esize_, [&](auto tag) {
      using U = decltype(tag);
      e = Launch(out.numel, ctx.stream, FillOp<U>{out.As<U>(), FromBits<U>(bits_)});
    });
    PRECIS_CUDA_CHECK(args, e);
    return Status::Ok();
  }

 private:
  size_t esize_ = 0;
  uint64_t bits_ = 0;
};

// Range: out[i] = start + i * delta (integers exactly, wrapping; floats in double).
template <typename T> struct RangeOp {
  const T* start;
  const T* delta;
  T* y;
  __host__ __device__ void operator()(int64_t i) const {
    if constexpr (std::is_integral_v<T>) {
      y[i] = T(uint64_t(int64_t(*start)) + uint64_t(i) * uint64_t(int64_t(*delta)));
    } else {
      double s = double(LoadValue(*start)), d = double(LoadValue(*delta));
      y[i] = StoreValue<T>(AddRn(s, MulRn(double(i), d)));
    }
  }
};

class RangeKernel : public Kernel {
 public:
  Status Init(const KernelArgs& args, CudaContext&) override {
    const Tensor *out = args.out(0), *start = args.in(0), *delta = args.in(2);
    if (!out || !start || !delta) return args.Error("needs start, limit, delta and an output");
    if (start->numel != 1 || delta->numel != 1) return args.Error("start and delta must be scalars of the output dtype");
    if (start->dtype != out->dtype || delta->dtype != out->dtype) return DtypeError(args, "start and delta must be scalars of the output dtype");
    if (out->dtype == DataType::kBool || DataTypeSize(out->dtype) == 0) return args.Error(std::string("unsupported dtype ") + DataTypeName(out->dtype));
    return Status::Ok();
  }
  Status Run(const KernelArgs& args, CudaContext& ctx) override {
    Tensor& out = *args.out(0);
    cudaError_t e = cudaSuccess;
    auto launch = [&](auto tag) {
      using T = decltype(tag);
      e = Launch(out.numel, ctx.stream, RangeOp<T>{args.in(0)->As<T>(), args.in(2)->As<T>(), out.As<T>()});
    };
    if (!DispatchFloat(out.dtype, launch)) DispatchInt(out.dtype, launch);
    PRECIS_CUDA_CHECK(args, e);
    return Status::Ok();
  }
};

// EyeLike: ones on diagonal k (j - i == k) of a 2-D output, zeros elsewhere.
template <typename U> struct EyeOp {
  U* y;
  U one;
  int64_t cols, k;
  __host__ __device__ void operator()(int64_t t) const {
    int64_t j = 0, i = DivMod(t, cols, j);
    y[t] = j - i == k ? one : U(0);
  }
};

class EyeLikeKernel : public Kernel {
 public:
  Status Init(const KernelArgs& args, CudaContext&) override {
    const Tensor* out = args.out(0);
    if (!out || out->rank() != 2) return args.Error("needs a 2-D output");
    if (DataTypeSize(out->dtype) == 0) return args.Error(std::string("unsupported dtype ") + DataTypeName(out->dtype));
    k_ = args.attrs.Int("k", 0);
    one_ = SaturatedBits(out->dtype, 1.0);
    return Status::Ok();
  }
  Status Run(const KernelArgs& args, CudaContext& ctx) override {
    Tensor& out = *args.out(0);
    cudaError_t e = cudaSuccess;
    DispatchBySize(DataTypeSize(out.dtype), [&](auto tag) {
      using U = decltype(tag);
      e = Launch(out.numel, ctx.stream, EyeOp<U>{out.As<U>(), FromBits<U>(one_), out.dims[1], k_});
    });
    PRECIS_CUDA_CHECK(args, e);
    return Status::Ok();
  }

 private:
  int64_t k_ = 0;
  uint64_t one_ = 0;
};

// Trilu: keeps the upper (j >= i + k) or lower (j <= i + k) triangle of each matrix, zeroing
// the rest; in place when the planner allows (each thread reads its element, then writes it).
template <typename U> struct TriluOp {
  const U* in;
  U* out;
  const void* k;  // nullptr: 0
  DataType ktype;
  int64_t rows, cols;
  bool upper;
  __host__ __device__ void operator()(int64_t t) const {
    int64_t kk = k ? LoadIndex(k, ktype, 0) : 0;
    kk = kk < -rows - 1 ? -rows - 1 : kk > cols + 1 ? cols + 1 : kk;  // beyond the matrix all k act alike
    int64_t j = 0, q = DivMod(t, cols, j), i = 0;
    DivMod(q, rows, i);
    bool zero = upper ? j < i + kk : j > i + kk;
    out[t] = zero ? U(0) : in[t];
  }
};

class TriluKernel : public Kernel {
 public:
  Status Init(const KernelArgs& args, CudaContext&) override {
    const Tensor *in = args.in(0), *out = args.out(0);
    if (!in || !out || in->dims != out->dims || in->rank() < 2) return args.Error("needs matching input and output of rank >= 2");
    if (in->dtype != out->dtype) return DtypeError(args, "needs matching input and output of rank >= 2");
    if (DataTypeSize(in->dtype) == 0) return args.Error(std::string("unsupported dtype ") + DataTypeName(in->dtype));
    if (args.in(1) && (!IsIndexType(args.in(1)->dtype) || args.in(1)->numel != 1)) return args.Error("k must be an integer scalar");
    upper_ = args.attrs.Int("upper", 1) != 0;
    rows_ = in->dims[in->dims.size() - 2];
    cols_ = in->dims.back();
    return Status::Ok();
  }
  Status Run(const KernelArgs& args, CudaContext& ctx) override {
    const Tensor& in = *args.in(0);
    Tensor& out = *args.out(0);
    const Tensor* k = args.in(1);
    cudaError_t e = cudaSuccess;
    DispatchBySize(DataTypeSize(out.dtype), [&](auto tag) {
      using U = decltype(tag);
      e = Launch(out.numel, ctx.stream,
                 TriluOp<U>{in.As<U>(), out.As<U>(), k ? k->data : nullptr, k ? k->dtype : DataType::kI64, rows_, cols_, upper_});
    });
    PRECIS_CUDA_CHECK(args, e);
    return Status::Ok();
  }

 private:
  bool upper_ = true;
  int64_t rows_ = 0, cols_ = 0;
};

// ---- Pad ----

// Per dim, map[begin[d] + o] is the input coordinate read at output coordinate o, or -1 for
// the constant.
struct PadMaps {
  int rank = 0;
  int64_t out_dims[kMaxRank] = {};
  int64_t in_strides[kMaxRank] = {};
  int64_t begin[kMaxRank] = {};
  const int64_t* map = nullptr;
};

template <typename U> struct PadOp {
  const U* in;
  U* out;
  PadMaps m;
  const U* constant;  // the constant_value input, or nullptr: `fallback`
  U fallback;
  __host__ __device__ void operator()(int64_t t) const {
    int64_t rest = t, off = 0;
    bool inside = true;
    for (int d = m.rank - 1; d >= 0; --d) {
      int64_t c = 0;
      rest = DivMod(rest, m.out_dims[d], c);
      int64_t s = m.map[m.begin[d] + c];
      if (s < 0) inside = false;
      else off += s * m.in_strides[d];
    }
    out[t] = inside ? in[off] : constant ? *constant : fallback;
  }
};

// As onnxruntime does, negative pads crop before the other side pads, so that reflect, edge
// and wrap read only the kept part.
class PadKernel : public Kernel {
 public:
  Status Init(const KernelArgs& args, CudaContext& ctx) override {
    const Tensor *in = args.in(0), *out = args.out(0);
    if (!in || !out || in->rank() != out->rank()) return args.Error("needs matching input and output");
    if (in->dtype != out->dtype) return DtypeError(args, "needs matching input and output");
    esize_ = DataTypeSize(in->dtype);
    if (esize_ == 0) return args.Error(std::string("unsupported dtype ") + DataTypeName(in->dtype));
    attr_form_ = args.attrs.Has("pads");
    std::vector<std::vector<int64_t>> maps;
    PRECIS_RETURN_IF_ERROR(PadIndexMaps(args, *in, *out, &maps));
    if (in->rank() > kMaxRank) return RankLimit(args, "the input");
    maps_ = PadMaps{};
    maps_.rank = int(in->rank());
    std::vector<int64_t> strides = DenseStrides(in->dims), map;
    for (size_t d = 0; d < size_t(in->rank()); ++d) {
      maps_.out_dims[d] = out->dims[d];
      maps_.in_strides[d] = strides[d];
      maps_.begin[d] = int64_t(map.size());
      map.insert(map.end(), maps[d].begin(), maps[d].end());
    }
    constant_ = 0;
    if (attr_form_) {
      float value = args.attrs.Float("value", 0.f);
      constant_ = in->dtype == DataType::kBool ? uint64_t(value != 0) : SaturatedBits(in->dtype, value);
    } else if (const Tensor* c = args.in(2); c && c->numel > 0 && (c->dtype != in->dtype || c->numel != 1)) {
      if (c->numel == 1) return DtypeError(args, "constant_value must be a scalar of the data dtype");
      return args.Error("constant_value must be a scalar of the data dtype");
    }
    PRECIS_ASSIGN_OR_RETURN(maps_.map, UploadTable(ctx, map, args.node + " pad maps"));
    return Status::Ok();
  }

  Status Run(const KernelArgs& args, CudaContext& ctx) override {
    const Tensor* c = attr_form_ ? nullptr : args.in(2);
    const uint8_t* constant = c && c->numel == 1 ? c->data : nullptr;
    Tensor& out = *args.out(0);
    cudaError_t e = cudaSuccess;
    DispatchBySize(esize_, [&](auto tag) {
      using U = decltype(tag);
      e = Launch(out.numel, ctx.stream,
                 PadOp<U>{args.in(0)->As<U>(), out.As<U>(), maps_, reinterpret_cast<const U*>(constant), FromBits<U>(constant_)});
    });
    PRECIS_CUDA_CHECK(args, e);
    return Status::Ok();
  }

 private:
  size_t esize_ = 0;
  bool attr_form_ = false;  // pads and value as attributes (versions before 11)
  PadMaps maps_;
  uint64_t constant_ = 0;
};

}  // namespace

// Called by RegisterTensorKernels (tensor.cu).
void AddTensorFillKernels(KernelRegistry& r) {
  r.Register("ConstantOfShape", Make<ConstantOfShapeKernel>);
  r.Register("Range", Make<RangeKernel>);
  r.Register("EyeLike", Make<EyeLikeKernel>);
  r.Register("Trilu", Make<TriluKernel>);
  r.Register("Pad", Make<PadKernel>);
}

}  // namespace precis::rt::cuda::tensor
