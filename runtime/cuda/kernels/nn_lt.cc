// LtMatmul (nn_common.h): a row-major matrix product described by strides, mapped onto
// cuBLASLt's column-major operands. Y is written as a column-major matrix D whose rows have unit
// stride: either D = Y^T (n rows, m columns) = B^T A^T, the usual trick for row-major data, or
// D = Y = A B when Y's m axis is the unit one. Each operand is then either column-major as
// stored (op N) or row-major as stored (op T); anything else (no unit stride) is left to the
// caller's own kernel. Also the small shared helpers of the family.
#include <algorithm>
#include <cstring>

#include "runtime/cuda/kernels/nn_common.h"

namespace precis::rt::cuda {
namespace {

// cuBLASLt may use this much of the shared workspace for one product.
constexpr uint64_t kMaxLtWorkspace = uint64_t(32) << 20;

// A logical rows x cols matrix X(r, c) = p[r * rs + c * cs] in cuBLASLt terms: a stored
// column-major matrix (stored_rows x stored_cols, leading dimension ld) and the op that turns it
// into X.
struct LtOperand {
  uint64_t stored_rows = 0, stored_cols = 0;
  int64_t ld = 0;
  cublasOperation_t op = CUBLAS_OP_N;
};

bool DescribeAsStored(int64_t rows, int64_t cols, int64_t rs, int64_t cs, LtOperand* out) {
  int64_t r1 = std::max<int64_t>(rows, 1), c1 = std::max<int64_t>(cols, 1);
  if (rows == 1 || rs == 1) {  // column-major as stored: X(r, c) at r + c * ld
    int64_t ld = cols == 1 ? r1 : cs;
    if (ld >= r1) {
      *out = {uint64_t(r1), uint64_t(c1), ld, CUBLAS_OP_N};
      return true;
    }
  }
  return false;
}

bool Describe(int64_t rows, int64_t cols, int64_t rs, int64_t cs, LtOperand* out) {
  if (DescribeAsStored(rows, cols, rs, cs, out)) return true;
  LtOperand t;  // row-major as stored: X^T is column-major
  if (DescribeAsStored(cols, rows, cs, rs, &t)) {
    *out = {t.stored_rows, t.stored_cols, t.ld, CUBLAS_OP_T};
    return true;
  }
  return false;
}

bool LtType(DataType t, cudaDataType_t* out) {
  switch (t) {
    case DataType::kF32: *out = CUDA_R_32F; return true;
    case DataType::kF16: *out = CUDA_R_16F; return true;
    case DataType::kBF16: *out = CUDA_R_16BF; return true;
    case DataType::kF64: *out = CUDA_R_64F; return true;
    default: return false;
  }
}

// The operand/output pairs of cublasLtMatmul used here (cuBLASLt's "regular" type table).
bool SupportedPair(DataType operands, DataType output) {
  switch (operands) {
    case DataType::kF32: return output == DataType::kF32;
    case DataType::kF64: return output == DataType::kF64;
    case DataType::kF16:
    case DataType::kBF16: return output == operands || output == DataType::kF32;
    default: return false;
  }
}

struct PreferenceGuard {
  cublasLtMatmulPreference_t p = nullptr;
  ~PreferenceGuard() {
    if (p) cublasLtMatmulPreferenceDestroy(p);
  }
};

}  // namespace

int64_t OffsetAlignment(int64_t bytes) {
  if (bytes == 0) return kTensorAlignment;
  int64_t low = bytes & -bytes;
  return std::min<int64_t>(low, kTensorAlignment);
}

bool IsHalfType(DataType t) { return t == DataType::kF16 || t == DataType::kBF16; }

Status DtypeRefusal(const KernelArgs& args, const std::string& message) {
  for (const auto* list : {&args.inputs, &args.outputs})
    for (const Tensor* t : *list)
      if (t && IsHalfType(t->dtype)) return Unimplemented(args.node + ": " + message);
  return args.Error(message);
}

Status ReadActivation(const KernelArgs& args, bool allow_gelu, Activation* out) {
  std::string a = args.attrs.String("activation", "");
  *out = Activation::kNone;
  if (a.empty()) return Status::Ok();
  if (a == "Relu") {
    *out = Activation::kRelu;
    return Status::Ok();
  }
  if ((a == "Gelu" || a == "GeluTanh") && allow_gelu) {
    *out = a == "GeluTanh" ? Activation::kGeluTanh : Activation::kGelu;
    return Status::Ok();
  }
  return args.Error("unsupported fused activation '" + a + "' (expected " + (allow_gelu ? "Relu, Gelu or GeluTanh)" : "Relu)"));
}

bool PlanBatch(const std::vector<BatchAxis>& axes, size_t max_calls, MatmulShape* shape, std::vector<LtCall>* calls) {
  std::vector<BatchAxis> merged;
  for (const BatchAxis& x : axes) {
    if (x.size == 1) continue;
    if (!merged.empty()) {
      BatchAxis& p = merged.back();
      if (p.a == x.a * x.size && p.b == x.b * x.size && p.y == x.y * x.size) {
        p = {p.size * x.size, x.a, x.b, x.y};
        continue;
      }
    }
    merged.push_back(x);
  }
  *calls = {LtCall{}};
  shape->batch = 1;
  shape->a_batch = shape->b_batch = shape->y_batch = 0;
  if (merged.empty()) return true;
  size_t inner = 0;
  int64_t count = 1;
  for (size_t i = 0; i < merged.size(); ++i) {
    if (merged[i].size > merged[inner].size) inner = i;
    count *= merged[i].size;
  }
  if (merged[inner].size == 0 || count / merged[inner].size > int64_t(max_calls)) return false;
  shape->batch = merged[inner].size;
  shape->a_batch = merged[inner].a;
  shape->b_batch = merged[inner].b;
  shape->y_batch = merged[inner].y;
  for (size_t i = 0; i < merged.size(); ++i) {
    if (i == inner) continue;
    std::vector<LtCall> next;
    for (const LtCall& c : *calls)
      for (int64_t j = 0; j < merged[i].size; ++j) next.push_back({c.a + j * merged[i].a, c.b + j * merged[i].b, c.y + j * merged[i].y});
    *calls = std::move(next);
  }
  return true;
}

LtMatmul::~LtMatmul() { Release(); }

void LtMatmul::Release() {
  if (first_) cublasLtMatrixLayoutDestroy(first_);
  if (second_) cublasLtMatrixLayoutDestroy(second_);
  if (out_) cublasLtMatrixLayoutDestroy(out_);
  if (op_) cublasLtMatmulDescDestroy(op_);
  first_ = second_ = out_ = nullptr;
  op_ = nullptr;
}

Status LtMatmul::Init(const KernelArgs& args, CudaContext& ctx, const LtProblem& p) {
  Release();
  const MatmulShape& s = p.shape;
  cudaDataType_t ab_type, y_type;
  if (!SupportedPair(p.operands, p.output) || !LtType(p.operands, &ab_type) || !LtType(p.output, &y_type))
    return Unimplemented(args.node + ": cuBLASLt has no " + DataTypeName(p.operands) + " -> " + DataTypeName(p.output) + " product");
  if (s.M <= 0 || s.N <= 0 || s.K <= 0 || s.batch <= 0 || s.batch > INT32_MAX)
    return Unimplemented(args.node + ": empty or oversized product for cuBLASLt");
  if (p.activation == Activation::kGelu) return Unimplemented(args.node + ": cuBLASLt's GELU is the tanh form");

  // D = Y^T (rows n) when Y's n axis has unit stride, else D = Y (rows m).
  // The bias vector runs along D's rows: n, so only D = Y^T takes it.
  LtOperand d, first, second;
  swapped_ = DescribeAsStored(s.N, s.M, s.y_n, s.y_m, &d) && Describe(s.N, s.K, s.b_n, s.b_k, &first) &&
             Describe(s.K, s.M, s.a_k, s.a_m, &second);
  if (!swapped_ && (p.bias || !DescribeAsStored(s.M, s.N, s.y_m, s.y_n, &d) || !Describe(s.M, s.K, s.a_m, s.a_k, &first) ||
                    !Describe(s.K, s.N, s.b_k, s.b_n, &second)))
    return Unimplemented(args.node + ": operand strides cuBLASLt cannot express");
  int64_t first_batch = swapped_ ? s.b_batch : s.a_batch, second_batch = swapped_ ? s.a_batch : s.b_batch;
  if (p.calls.empty()) return Unimplemented(args.node + ": no cuBLASLt calls");
  calls_ = p.calls;
  operand_size_ = DataTypeSize(p.operands);
  output_size_ = DataTypeSize(p.output);
  // Every pointer of a call is a tensor start plus the call's offset; batch strides move the
  // pointers of later matrices too.
  int64_t align_a = kTensorAlignment, align_b = kTensorAlignment, align_y = kTensorAlignment;
  for (const LtCall& c : calls_) {
    align_a = std::min(align_a, OffsetAlignment(c.a * int64_t(operand_size_)));
    align_b = std::min(align_b, OffsetAlignment(c.b * int64_t(operand_size_)));
    align_y = std::min(align_y, OffsetAlignment(c.y * int64_t(output_size_)));
  }
  int64_t first_align = swapped_ ? align_b : align_a, second_align = swapped_ ? align_a : align_b;

  f64_ = p.operands == DataType::kF64;
  bias_ = p.bias;
  alpha_f_ = float(p.alpha);
  beta_f_ = float(p.beta);
  alpha_d_ = p.alpha;
  beta_d_ = p.beta;
  PRECIS_CUDA_CHECK(args, cublasLtMatmulDescCreate(&op_, f64_ ? CUBLAS_COMPUTE_64F : CUBLAS_COMPUTE_32F, f64_ ? CUDA_R_64F : CUDA_R_32F));
  PRECIS_CUDA_CHECK(args, cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_TRANSA, &first.op, sizeof(first.op)));
  PRECIS_CUDA_CHECK(args, cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_TRANSB, &second.op, sizeof(second.op)));
  cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_DEFAULT;
  if (p.activation == Activation::kRelu) epilogue = p.bias ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_RELU;
  else if (p.activation == Activation::kGeluTanh) epilogue = p.bias ? CUBLASLT_EPILOGUE_GELU_BIAS : CUBLASLT_EPILOGUE_GELU;
  else if (p.bias) epilogue = CUBLASLT_EPILOGUE_BIAS;
  PRECIS_CUDA_CHECK(args, cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof(epilogue)));
  if (p.bias) {
    // The heuristic reads only the pointer's alignment: stand in an address with the alignment
    // that every tensor has; Run sets the real one.
    const void* stand_in = reinterpret_cast<const void*>(uintptr_t(kTensorAlignment));
    PRECIS_CUDA_CHECK(args, cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &stand_in, sizeof(stand_in)));
  }

  auto layout = [&](cublasLtMatrixLayout_t* l, cudaDataType_t type, const LtOperand& o, int64_t batch_stride) -> Status {
    PRECIS_CUDA_CHECK(args, cublasLtMatrixLayoutCreate(l, type, o.stored_rows, o.stored_cols, o.ld));
    if (s.batch > 1) {
      int32_t count = int32_t(s.batch);
      PRECIS_CUDA_CHECK(args, cublasLtMatrixLayoutSetAttribute(*l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof(count)));
      PRECIS_CUDA_CHECK(args, cublasLtMatrixLayoutSetAttribute(*l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &batch_stride,
                                                               sizeof(batch_stride)));
    }
    return Status::Ok();
  };
  PRECIS_RETURN_IF_ERROR(layout(&first_, ab_type, first, first_batch));
  PRECIS_RETURN_IF_ERROR(layout(&second_, ab_type, second, second_batch));
  PRECIS_RETURN_IF_ERROR(layout(&out_, y_type, d, s.y_batch));

  PreferenceGuard pref;
  PRECIS_CUDA_CHECK(args, cublasLtMatmulPreferenceCreate(&pref.p));
  uint64_t max_ws = kMaxLtWorkspace;
  PRECIS_CUDA_CHECK(args, cublasLtMatmulPreferenceSetAttribute(pref.p, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &max_ws, sizeof(max_ws)));
  uint32_t align[4] = {uint32_t(std::min(first_align, OffsetAlignment(first_batch * int64_t(operand_size_)))),
                       uint32_t(std::min(second_align, OffsetAlignment(second_batch * int64_t(operand_size_)))),
                       uint32_t(std::min(align_y, OffsetAlignment(s.y_batch * int64_t(output_size_)))), 0};
  align[3] = align[2];
  const cublasLtMatmulPreferenceAttributes_t which[4] = {
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES,
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES};
  for (int i = 0; i < 4; ++i) PRECIS_CUDA_CHECK(args, cublasLtMatmulPreferenceSetAttribute(pref.p, which[i], &align[i], sizeof(align[i])));

  cublasLtMatmulHeuristicResult_t result;
  std::memset(&result, 0, sizeof(result));
  int found = 0;
  cublasStatus_t st = cublasLtMatmulAlgoGetHeuristic(ctx.lt, op_, first_, second_, out_, out_, pref.p, 1, &result, &found);
  if (st != CUBLAS_STATUS_SUCCESS || found < 1 || result.state != CUBLAS_STATUS_SUCCESS)
    return Unimplemented(args.node + ": cuBLASLt has no algorithm for this product (" + cublasLtGetStatusName(st != CUBLAS_STATUS_SUCCESS ? st : result.state) + ")");
  algo_ = result.algo;
  workspace_ = result.workspaceSize;
  return Status::Ok();
}

Status LtMatmul::Run(const KernelArgs& args, CudaContext& ctx, const void* a, const void* b, void* y, const void* bias) const {
  if (bias_) PRECIS_CUDA_CHECK(args, cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof(bias)));
  const void* alpha = f64_ ? static_cast<const void*>(&alpha_d_) : static_cast<const void*>(&alpha_f_);
  const void* beta = f64_ ? static_cast<const void*>(&beta_d_) : static_cast<const void*>(&beta_f_);
  void* ws = workspace_ ? ctx.workspace : nullptr;
  for (const LtCall& c : calls_) {
    const uint8_t* pa = static_cast<const uint8_t*>(a) + c.a * int64_t(operand_size_);
    const uint8_t* pb = static_cast<const uint8_t*>(b) + c.b * int64_t(operand_size_);
    uint8_t* py = static_cast<uint8_t*>(y) + c.y * int64_t(output_size_);
    const void* first = swapped_ ? pb : pa;
    const void* second = swapped_ ? pa : pb;
    PRECIS_CUDA_CHECK(args, cublasLtMatmul(ctx.lt, op_, alpha, first, first_, second, second_, beta, py, out_, py, out_, &algo_, ws,
                                           workspace_, ctx.stream));
  }
  return Status::Ok();
}

}  // namespace precis::rt::cuda
