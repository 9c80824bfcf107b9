// MatMul and Gemm on CUDA. Float products go through cuBLASLt (LtMatmul): MatMul's broadcast
// batch dims become one strided batch (stride 0 for a shared operand; folded into M when B has
// no batch), with a loop of calls over the batch axes that one stride cannot cover; Gemm maps
// transA/transB onto operand ops and C onto the bias epilogue (C a row of N values, beta 1) or
// onto beta with C broadcast into Y first. Integer products, and anything cuBLASLt refuses, run
// a plain kernel with one thread per output element (the CPU's accumulators: integers wrap,
// floats accumulate in float, f64 in double). An optional fused "activation" attribute (Relu,
// Gelu) is applied as a cuBLASLt epilogue where one exists, else by the plain kernel or a pass.
#include <algorithm>
#include <vector>

#include "runtime/cuda/kernels/nn_device.cuh"

namespace precis::rt::cuda {
namespace {

// Y[b][m][n] = act(alpha * sum_k A[b][m][k] B[b][k][n] + beta * C[m][n]) for the plain kernel.
struct PlainProduct {
  int64_t M = 0, N = 0, K = 0, a_m = 0, a_k = 0, b_k = 0, b_n = 0;
  Indexer a_batch, b_batch;  // batch index -> element offset of the matrix
  Indexer c_map;             // index inside an M x N matrix -> element offset in C
  bool has_c = false, c_in_operand_dtype = false;
  int activation = 0;
  double alpha = 1, beta = 1;          // floats
  uint64_t alpha_u = 1, beta_u = 1;    // integers (the CPU converts alpha and beta to T)
};

template <typename TI, typename TO> struct PlainFloatProduct {
  PlainProduct p;
  const TI *a, *b;
  const void* c;
  TO* y;
  PRECIS_NN_HD void operator()(int64_t i) const {
    using C = FloatAcc<TI>;
    int64_t mn = p.M * p.N, bi = i / mn, r = i - bi * mn, m = r / p.N, n = r - m * p.N;
    const TI* ra = a + p.a_batch(bi) + m * p.a_m;
    const TI* rb = b + p.b_batch(bi) + n * p.b_n;
    C acc = 0;
    for (int64_t k = 0; k < p.K; ++k) acc += C(LoadN(ra[k * p.a_k])) * C(LoadN(rb[k * p.b_k]));
    C v = C(p.alpha) * acc;
    if (p.has_c) {
      int64_t off = p.c_map(r);
      C cv = p.c_in_operand_dtype ? C(LoadN(static_cast<const TI*>(c)[off])) : C(LoadN(static_cast<const TO*>(c)[off]));
      v += C(p.beta) * cv;
    }
    y[i] = StoreN<TO>(ApplyActivation(v, p.activation));
  }
};

template <typename T> struct PlainIntProduct {
  PlainProduct p;
  const T *a, *b, *c;
  T* y;
  PRECIS_NN_HD void operator()(int64_t i) const {
    int64_t mn = p.M * p.N, bi = i / mn, r = i - bi * mn, m = r / p.N, n = r - m * p.N;
    const T* ra = a + p.a_batch(bi) + m * p.a_m;
    const T* rb = b + p.b_batch(bi) + n * p.b_n;
    uint64_t acc = 0;  // wraps like the CPU's T accumulator, modulo the width of T
    for (int64_t k = 0; k < p.K; ++k) acc += uint64_t(ra[k * p.a_k]) * uint64_t(rb[k * p.b_k]);
    uint64_t v = p.alpha_u * acc;
    if (p.has_c) v += p.beta_u * uint64_t(c[p.c_map(r)]);
    y[i] = T(v);
  }
};

template <typename TI, typename TO>
cudaError_t PlainFloat(const PlainProduct& p, const void* a, const void* b, const void* c, void* y, int64_t total, cudaStream_t stream) {
  return NnLaunch(total, stream, PlainFloatProduct<TI, TO>{p, static_cast<const TI*>(a), static_cast<const TI*>(b), c, static_cast<TO*>(y)});
}

template <typename T>
cudaError_t PlainInt(const PlainProduct& p, const void* a, const void* b, const void* c, void* y, int64_t total, cudaStream_t stream) {
  return NnLaunch(total, stream,
                  PlainIntProduct<T>{p, static_cast<const T*>(a), static_cast<const T*>(b), static_cast<const T*>(c), static_cast<T*>(y)});
}

cudaError_t LaunchPlainProduct(DataType in, DataType out, const PlainProduct& p, const void* a, const void* b, const void* c, void* y,
                               int64_t total, cudaStream_t stream) {
  cudaError_t e = cudaErrorInvalidValue;
  if (in == out) {
    if (!DispatchFloat(in, [&](auto tag) { e = PlainFloat<decltype(tag), decltype(tag)>(p, a, b, c, y, total, stream); }))
      DispatchInt(in, [&](auto tag) { e = PlainInt<decltype(tag)>(p, a, b, c, y, total, stream); });
  } else if (out == DataType::kF32 && in == DataType::kF16) {
    e = PlainFloat<half, float>(p, a, b, c, y, total, stream);
  } else if (out == DataType::kF32 && in == DataType::kBF16) {
    e = PlainFloat<bf16, float>(p, a, b, c, y, total, stream);
  }
  return e;
}

// Y[i] = C[map(i)] converted to Y's dtype (C equal to Y's dtype, or 16-bit into f32).
template <typename TC, typename TY> struct BroadcastConvert {
  const TC* c;
  TY* y;
  Indexer map;
  PRECIS_NN_HD void operator()(int64_t i) const {
    if constexpr (std::is_same_v<TC, TY>) y[i] = c[map(i)];
    else y[i] = StoreN<TY>(LoadN(c[map(i)]));
  }
};

template <typename TC, typename TY> cudaError_t BroadcastTo(const void* c, void* y, const Indexer& map, int64_t n, cudaStream_t stream) {
  return NnLaunch(n, stream, BroadcastConvert<TC, TY>{static_cast<const TC*>(c), static_cast<TY*>(y), map});
}

cudaError_t BroadcastC(DataType c_dtype, DataType y_dtype, const void* c, void* y, const Indexer& map, int64_t n, cudaStream_t stream) {
  cudaError_t e = cudaErrorInvalidValue;
  if (c_dtype == y_dtype)
    DispatchBySize(DataTypeSize(y_dtype), [&](auto tag) { e = BroadcastTo<decltype(tag), decltype(tag)>(c, y, map, n, stream); });
  else if (y_dtype == DataType::kF32 && c_dtype == DataType::kF16)
    e = BroadcastTo<half, float>(c, y, map, n, stream);
  else if (y_dtype == DataType::kF32 && c_dtype == DataType::kBF16)
    e = BroadcastTo<bf16, float>(c, y, map, n, stream);
  return e;
}

bool IsInt(DataType t) {
  return DispatchInt(t, [](auto) {});
}

// Shared by MatMul and Gemm: the derived Init fills the plan, Run enqueues it.
class ProductKernel : public Kernel {
 public:
  Status Run(const KernelArgs& args, CudaContext& ctx) override {
    if (total_ == 0) return Status::Ok();
    const uint8_t* a = args.in(0)->data;
    const uint8_t* b = args.in(1)->data;
    const uint8_t* c = has_c_ ? args.in(2)->data : nullptr;
    uint8_t* y = args.out(0)->data;
    if (!use_lt_) {
      PRECIS_CUDA_CHECK(args, LaunchPlainProduct(in_, out_, plain_, a, b, c, y, total_, ctx.stream));
      return Status::Ok();
    }
    if (copy_c_) PRECIS_CUDA_CHECK(args, BroadcastC(c_dtype_, out_, c, y, plain_.c_map, total_, ctx.stream));
    PRECIS_RETURN_IF_ERROR(lt_.Run(args, ctx, a, b, y, bias_ ? c : nullptr));
    if (post_ != Activation::kNone) PRECIS_CUDA_CHECK(args, ActivateInPlace(out_, y, total_, post_, ctx.stream));
    return Status::Ok();
  }
  size_t WorkspaceBytes() const override { return use_lt_ ? lt_.WorkspaceBytes() : 0; }

 protected:
  // Plans cuBLASLt for `p`, with the activation as an epilogue or else as a pass after it (the
  // erf GELU always; Relu and tanh GELU when no algorithm has the epilogue). Leaves use_lt_
  // false when cuBLASLt does not take the problem: the plain kernel runs it.
  Status PlanLt(const KernelArgs& args, CudaContext& ctx, LtProblem p, Activation activation) {
    if (IsInt(in_) || p.shape.K == 0 || total_ == 0) return Status::Ok();
    p.operands = in_;
    p.output = out_;
    for (bool epilogue : {true, false}) {
      if (!epilogue && (activation == Activation::kNone || activation == Activation::kGelu)) break;
      p.activation = epilogue && activation != Activation::kGelu ? activation : Activation::kNone;
      Status s = lt_.Init(args, ctx, p);
      if (!s.ok() && s.code() == StatusCode::kUnimplemented) {
        fallback_ = "cuBLASLt refused it (" + s.message() + "): the plain product kernel runs it";
        continue;
      }
      PRECIS_RETURN_IF_ERROR(s);
      use_lt_ = true;
      fallback_.clear();
      post_ = p.activation == activation ? Activation::kNone : activation;
      return Status::Ok();
    }
    return Status::Ok();
  }

 public:
  std::string Fallback() const override { return fallback_; }

 protected:
  std::string fallback_;

  DataType in_ = DataType::kUndefined, out_ = DataType::kUndefined, c_dtype_ = DataType::kUndefined;
  int64_t total_ = 0;  // output elements
  PlainProduct plain_;
  bool has_c_ = false, copy_c_ = false, bias_ = false, use_lt_ = false;
  LtMatmul lt_;
  Activation post_ = Activation::kNone;
};

// Operand dtypes of a product: A and B equal; Y equal to them, or FP32 from FP16/BF16 operands.
Status CheckProductDtypes(const KernelArgs& args, const Tensor& a, const Tensor& b, const Tensor& y) {
  if (a.dtype != b.dtype) return DtypeRefusal(args, "operand dtypes differ");
  if (!DispatchFloat(a.dtype, [](auto) {}) && !IsInt(a.dtype)) return args.Error(std::string("unsupported dtype ") + DataTypeName(a.dtype));
  if (y.dtype != a.dtype && !(IsHalfType(a.dtype) && y.dtype == DataType::kF32)) return DtypeRefusal(args, "operand dtypes differ");
  return Status::Ok();
}

// Calls above this many fall back to the plain kernel rather than loop on the host.
constexpr size_t kMaxLtCalls = 65536;

class MatMulKernel : public ProductKernel {
 public:
  Status Init(const KernelArgs& args, CudaContext& ctx) override {
    Tensor *a = args.in(0), *b = args.in(1), *y = args.out(0);
    if (!a || !b || !y) return args.Error("needs two inputs and one output");
    PRECIS_RETURN_IF_ERROR(CheckProductDtypes(args, *a, *b, *y));
    in_ = a->dtype;
    out_ = y->dtype;
    Activation activation;
    PRECIS_RETURN_IF_ERROR(ReadActivation(args, true, &activation));
    if (activation != Activation::kNone && IsInt(out_)) return args.Error("a fused activation needs a float output");
    std::vector<int64_t> ad = a->dims, bd = b->dims;
    if (ad.empty() || bd.empty()) return args.Error("MatMul operands must have rank >= 1");
    if (ad.size() == 1) ad.insert(ad.begin(), 1);
    if (bd.size() == 1) bd.push_back(1);
    int64_t M = ad[ad.size() - 2], K = ad.back(), N = bd.back();
    if (bd[bd.size() - 2] != K) return args.Error("inner dimensions differ");
    std::vector<int64_t> abatch(ad.begin(), ad.end() - 2), bbatch(bd.begin(), bd.end() - 2);
    size_t rank = std::max(abatch.size(), bbatch.size());
    abatch.insert(abatch.begin(), rank - abatch.size(), 1);
    bbatch.insert(bbatch.begin(), rank - bbatch.size(), 1);
    std::vector<int64_t> batch(rank);
    int64_t batches = 1;
    for (size_t i = 0; i < rank; ++i) {
      if (abatch[i] != bbatch[i] && abatch[i] != 1 && bbatch[i] != 1) return args.Error("batch dimensions do not broadcast");
      batch[i] = std::max(abatch[i], bbatch[i]);
      batches *= batch[i];
    }
    if (y->numel != batches * M * N) return args.Error("output size does not match");
    total_ = y->numel;
    if (total_ == 0) return Status::Ok();

    // Element strides of each batch axis (0 where an operand is broadcast).
    std::vector<int64_t> sa = BroadcastStrides(abatch, batch), sb = BroadcastStrides(bbatch, batch), sy = DenseStrides(batch);
    std::vector<BatchAxis> axes;
    for (size_t i = 0; i < rank; ++i) {
      sa[i] *= M * K;
      sb[i] *= K * N;
      sy[i] *= M * N;
      axes.push_back({batch[i], sa[i], sb[i], sy[i]});
    }
    plain_.M = M;
    plain_.N = N;
    plain_.K = K;
    plain_.a_m = K;
    plain_.a_k = 1;
    plain_.b_k = N;
    plain_.b_n = 1;
    plain_.activation = int(activation);
    if (!Indexer::Make(batch, sa, 0, &plain_.a_batch) || !Indexer::Make(batch, sb, 0, &plain_.b_batch))
      return args.Error("too many batch dimensions that do not merge");

    LtProblem p;
    p.shape = {M, N, K, K, 1, N, 1, N, 1};
    if (!PlanBatch(axes, kMaxLtCalls, &p.shape, &p.calls)) return Status::Ok();
    if (p.calls.size() == 1 && p.shape.batch > 1 && p.shape.b_batch == 0 && p.shape.a_batch == M * K && p.shape.y_batch == M * N) {
      // B shared by every batch: one [batches * M, K] x [K, N] product.
      p.shape.M *= p.shape.batch;
      p.shape.batch = 1;
      p.shape.a_batch = p.shape.y_batch = 0;
    }
    return PlanLt(args, ctx, p, activation);
  }
};

class GemmKernel : public ProductKernel {
 public:
  Status Init(const KernelArgs& args, CudaContext& ctx) override {
    Tensor *a = args.in(0), *b = args.in(1), *c = args.in(2), *y = args.out(0);
    if (!a || !b || !y) return args.Error("needs inputs A and B and an output");
    if (a->rank() != 2 || b->rank() != 2) return args.Error("A and B must be matrices");
    PRECIS_RETURN_IF_ERROR(CheckProductDtypes(args, *a, *b, *y));
    in_ = a->dtype;
    out_ = y->dtype;
    bool integer = IsInt(in_);
    if (c && c->dtype != out_ && c->dtype != in_) return DtypeRefusal(args, "C's dtype differs from the output's");
    Activation activation;
    PRECIS_RETURN_IF_ERROR(ReadActivation(args, true, &activation));
    if (activation != Activation::kNone && integer) return args.Error("a fused activation needs a float output");
    bool trans_a = args.attrs.Int("transA", 0) != 0, trans_b = args.attrs.Int("transB", 0) != 0;
    float alpha = args.attrs.Float("alpha", 1.0f), beta = args.attrs.Float("beta", 1.0f);
    int64_t M = trans_a ? a->dims[1] : a->dims[0], K = trans_a ? a->dims[0] : a->dims[1], N = trans_b ? b->dims[0] : b->dims[1];
    if ((trans_b ? b->dims[1] : b->dims[0]) != K) return args.Error("inner dimensions differ");
    if (y->numel != M * N) return args.Error("output size does not match");
    total_ = y->numel;

    plain_.M = M;
    plain_.N = N;
    plain_.K = K;
    plain_.a_m = trans_a ? 1 : K;
    plain_.a_k = trans_a ? M : 1;
    plain_.b_k = trans_b ? 1 : N;
    plain_.b_n = trans_b ? K : 1;
    plain_.activation = int(activation);
    plain_.alpha = alpha;
    plain_.beta = beta;
    if (integer)
      DispatchInt(out_, [&](auto tag) {
        using T = decltype(tag);
        plain_.alpha_u = uint64_t(T(alpha));
        plain_.beta_u = uint64_t(T(beta));
      });
    // A float C with beta 0 adds nothing (the CPU's oneDNN kernel skips it too).
    has_c_ = c && (integer || beta != 0.0f);
    if (c) {
      if (c->rank() > 2) return args.Error("C must have rank <= 2");
      std::vector<int64_t> mn = {M, N};
      for (size_t i = 0; i < c->dims.size(); ++i) {
        int64_t want = mn[mn.size() - c->dims.size() + i];
        if (c->dims[i] != 1 && c->dims[i] != want) return args.Error("C " + DimsToString(c->dims) + " does not broadcast to MxN");
      }
      if (!Indexer::Make(mn, BroadcastStrides(c->dims, mn), 0, &plain_.c_map)) return args.Error("C broadcast too complex");
      c_dtype_ = c->dtype;
      plain_.has_c = has_c_;
      plain_.c_in_operand_dtype = c->dtype != out_;
    }

    LtProblem p;
    p.shape = {M, N, K, plain_.a_m, plain_.a_k, plain_.b_k, plain_.b_n, N, 1};
    p.alpha = alpha;
    if (has_c_) {
      bool row = c->numel == N && !c->dims.empty() && c->dims.back() == N;
      if (beta == 1.0f && row && c->dtype == out_) {
        bias_ = p.bias = true;
      } else if (c->dtype == out_ || (out_ == DataType::kF32 && IsHalfType(c->dtype))) {
        copy_c_ = true;
        p.beta = beta;
      } else {
        return Status::Ok();  // no other pair passes the checks above; the plain kernel would take it
      }
    }
    PRECIS_RETURN_IF_ERROR(PlanLt(args, ctx, p, activation));
    if (!use_lt_ && bias_) {
      // No algorithm with the bias epilogue (f64, say): C broadcast into Y and beta instead.
      bias_ = p.bias = false;
      copy_c_ = true;
      p.beta = beta;
      PRECIS_RETURN_IF_ERROR(PlanLt(args, ctx, p, activation));
    }
    if (!use_lt_) bias_ = copy_c_ = false;
    return Status::Ok();
  }
};

}  // namespace

std::unique_ptr<Kernel> MakeMatMulKernel() { return std::make_unique<MatMulKernel>(); }
std::unique_ptr<Kernel> MakeGemmKernel() { return std::make_unique<GemmKernel>(); }

}  // namespace precis::rt::cuda
