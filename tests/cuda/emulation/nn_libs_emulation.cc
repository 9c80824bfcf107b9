// Host stand-ins for what the nn family's emulation build (PRECIS_NN_HOST_EMULATION) links
// instead of a GPU: cuBLASLt and cuDNN computing on host memory (FP32, FP16, BF16 and f64 data,
// double accumulation), and the few symbols of cuda_kernel.cc. nn_libs_refuse makes every
// heuristic find no algorithm, so the harness can run the kernels' own fallbacks too.
#include <cublasLt.h>
#include <cudnn.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "runtime/base/half.h"
#include "runtime/cuda/cuda_kernel.h"

bool nn_libs_refuse = false;

namespace {

float Get(cudaDataType t, const void* p, int64_t i) {
  switch (t) {
    case CUDA_R_16F: return precis::HalfToFloat(static_cast<const uint16_t*>(p)[i]);
    case CUDA_R_16BF: return precis::Bf16ToFloat(static_cast<const uint16_t*>(p)[i]);
    case CUDA_R_64F: return float(static_cast<const double*>(p)[i]);
    default: return static_cast<const float*>(p)[i];
  }
}
double GetD(cudaDataType t, const void* p, int64_t i) {
  return t == CUDA_R_64F ? static_cast<const double*>(p)[i] : double(Get(t, p, i));
}
void Put(cudaDataType t, void* p, int64_t i, double v) {
  switch (t) {
    case CUDA_R_16F: static_cast<uint16_t*>(p)[i] = precis::FloatToHalf(float(v)); break;
    case CUDA_R_16BF: static_cast<uint16_t*>(p)[i] = precis::FloatToBf16(float(v)); break;
    case CUDA_R_64F: static_cast<double*>(p)[i] = v; break;
    default: static_cast<float*>(p)[i] = float(v);
  }
}

struct Layout {
  cudaDataType t;
  uint64_t rows, cols;
  int64_t ld;
  int32_t batch = 1;
  int64_t stride = 0;
};
struct Desc {
  cublasOperation_t ta = CUBLAS_OP_N, tb = CUBLAS_OP_N;
  cublasLtEpilogue_t epi = CUBLASLT_EPILOGUE_DEFAULT;
  const void* bias = nullptr;
  bool f64 = false;
};

}  // namespace

extern "C" {
cublasStatus_t cublasLtMatmulDescCreate(cublasLtMatmulDesc_t* d, cublasComputeType_t c, cudaDataType_t) {
  Desc* x = new Desc;
  x->f64 = c == CUBLAS_COMPUTE_64F;
  *d = reinterpret_cast<cublasLtMatmulDesc_t>(x);
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t d) {
  delete reinterpret_cast<Desc*>(d);
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t d, cublasLtMatmulDescAttributes_t a, const void* buf, size_t) {
  Desc* x = reinterpret_cast<Desc*>(d);
  if (a == CUBLASLT_MATMUL_DESC_TRANSA) std::memcpy(&x->ta, buf, 4);
  if (a == CUBLASLT_MATMUL_DESC_TRANSB) std::memcpy(&x->tb, buf, 4);
  if (a == CUBLASLT_MATMUL_DESC_EPILOGUE) std::memcpy(&x->epi, buf, 4);
  if (a == CUBLASLT_MATMUL_DESC_BIAS_POINTER) std::memcpy(&x->bias, buf, sizeof(void*));
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t* l, cudaDataType t, uint64_t r, uint64_t c, int64_t ld) {
  if (ld < int64_t(r)) return CUBLAS_STATUS_INVALID_VALUE;
  *l = reinterpret_cast<cublasLtMatrixLayout_t>(new Layout{t, r, c, ld});
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t l) {
  delete reinterpret_cast<Layout*>(l);
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatrixLayoutSetAttribute(cublasLtMatrixLayout_t l, cublasLtMatrixLayoutAttribute_t a, const void* buf, size_t) {
  Layout* x = reinterpret_cast<Layout*>(l);
  if (a == CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT) std::memcpy(&x->batch, buf, 4);
  if (a == CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET) std::memcpy(&x->stride, buf, 8);
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t* p) {
  *p = reinterpret_cast<cublasLtMatmulPreference_t>(new int);
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t p) {
  delete reinterpret_cast<int*>(p);
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatmulPreferenceSetAttribute(cublasLtMatmulPreference_t, cublasLtMatmulPreferenceAttributes_t, const void*, size_t) {
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatmulAlgoGetHeuristic(cublasLtHandle_t, cublasLtMatmulDesc_t d, cublasLtMatrixLayout_t A, cublasLtMatrixLayout_t B,
                                              cublasLtMatrixLayout_t C, cublasLtMatrixLayout_t D, cublasLtMatmulPreference_t, int,
                                              cublasLtMatmulHeuristicResult_t* r, int* found) {
  Desc* x = reinterpret_cast<Desc*>(d);
  Layout *a = reinterpret_cast<Layout*>(A), *b = reinterpret_cast<Layout*>(B), *dd = reinterpret_cast<Layout*>(D);
  uint64_t m = x->ta == CUBLAS_OP_N ? a->rows : a->cols, k = x->ta == CUBLAS_OP_N ? a->cols : a->rows;
  uint64_t k2 = x->tb == CUBLAS_OP_N ? b->rows : b->cols, n = x->tb == CUBLAS_OP_N ? b->cols : b->rows;
  *found = 0;
  if (k != k2 || dd->rows != m || dd->cols != n || C != D || a->batch != dd->batch || b->batch != dd->batch) {
    std::fprintf(stderr, "cuBLASLt emulation: inconsistent layouts\n");
    return CUBLAS_STATUS_INVALID_VALUE;
  }
  if (nn_libs_refuse) return CUBLAS_STATUS_NOT_SUPPORTED;
  std::memset(r, 0, sizeof(*r));
  r->workspaceSize = 1024;
  *found = 1;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatmul(cublasLtHandle_t, cublasLtMatmulDesc_t d, const void* alpha, const void* A, cublasLtMatrixLayout_t Al, const void* B,
                              cublasLtMatrixLayout_t Bl, const void* beta, const void* C, cublasLtMatrixLayout_t, void* D,
                              cublasLtMatrixLayout_t Dl, const cublasLtMatmulAlgo_t*, void* ws, size_t ws_bytes, cudaStream_t) {
  Desc* x = reinterpret_cast<Desc*>(d);
  Layout *a = reinterpret_cast<Layout*>(Al), *b = reinterpret_cast<Layout*>(Bl), *dl = reinterpret_cast<Layout*>(Dl);
  if (ws_bytes < 1024 || !ws) return CUBLAS_STATUS_INVALID_VALUE;
  double al = x->f64 ? *static_cast<const double*>(alpha) : *static_cast<const float*>(alpha);
  double be = x->f64 ? *static_cast<const double*>(beta) : *static_cast<const float*>(beta);
  uint64_t m = dl->rows, n = dl->cols, k = x->ta == CUBLAS_OP_N ? a->cols : a->rows;
  for (int bt = 0; bt < dl->batch; ++bt)
    for (uint64_t r = 0; r < m; ++r)
      for (uint64_t c = 0; c < n; ++c) {
        double s = 0;
        for (uint64_t q = 0; q < k; ++q) {
          int64_t ai = bt * a->stride + (x->ta == CUBLAS_OP_N ? r + q * a->ld : q + r * a->ld);
          int64_t bi = bt * b->stride + (x->tb == CUBLAS_OP_N ? q + c * b->ld : c + q * b->ld);
          s += GetD(a->t, A, ai) * GetD(b->t, B, bi);
        }
        int64_t off = bt * dl->stride + r + c * dl->ld;
        double v = al * s + (be != 0 ? be * GetD(dl->t, C, off) : 0.0);
        if (x->epi & CUBLASLT_EPILOGUE_BIAS) v += GetD(dl->t, x->bias, int64_t(r));
        if (x->epi == CUBLASLT_EPILOGUE_RELU || x->epi == CUBLASLT_EPILOGUE_RELU_BIAS) v = v < 0 ? 0 : v;
        Put(dl->t, D, off, v);
      }
  return CUBLAS_STATUS_SUCCESS;
}
const char* cublasLtGetStatusName(cublasStatus_t) { return "CUBLAS_STATUS (emulated)"; }
const char* cublasLtGetStatusString(cublasStatus_t) { return "emulated"; }
}  // extern "C"

// ---- cuDNN --------------------------------------------------------------------------------------

namespace {
struct TD { std::vector<int> dims; cudnnDataType_t t = CUDNN_DATA_FLOAT; bool nhwc = false; };  // dims in NCHW order
struct FD { std::vector<int> dims; bool nhwc = false; };
struct CD { std::vector<int> pad, stride, dil; int group = 1; };
cudaDataType Cuda(cudnnDataType_t t) { return t == CUDNN_DATA_HALF ? CUDA_R_16F : t == CUDNN_DATA_BFLOAT16 ? CUDA_R_16BF : t == CUDNN_DATA_DOUBLE ? CUDA_R_64F : CUDA_R_32F; }
}  // namespace
extern "C" {
const char* cudnnGetErrorString(cudnnStatus_t) { return "mock error"; }
cudnnStatus_t cudnnCreateTensorDescriptor(cudnnTensorDescriptor_t* d) { *d = (cudnnTensorDescriptor_t) new TD; return CUDNN_STATUS_SUCCESS; }
cudnnStatus_t cudnnDestroyTensorDescriptor(cudnnTensorDescriptor_t d) { delete (TD*)d; return CUDNN_STATUS_SUCCESS; }
cudnnStatus_t cudnnCreateFilterDescriptor(cudnnFilterDescriptor_t* d) { *d = (cudnnFilterDescriptor_t) new FD; return CUDNN_STATUS_SUCCESS; }
cudnnStatus_t cudnnDestroyFilterDescriptor(cudnnFilterDescriptor_t d) { delete (FD*)d; return CUDNN_STATUS_SUCCESS; }
cudnnStatus_t cudnnCreateConvolutionDescriptor(cudnnConvolutionDescriptor_t* d) { *d = (cudnnConvolutionDescriptor_t) new CD; return CUDNN_STATUS_SUCCESS; }
cudnnStatus_t cudnnDestroyConvolutionDescriptor(cudnnConvolutionDescriptor_t d) { delete (CD*)d; return CUDNN_STATUS_SUCCESS; }
cudnnStatus_t cudnnSetTensorNdDescriptor(cudnnTensorDescriptor_t d, cudnnDataType_t t, int n, const int* dims, const int* strides) {
  ((TD*)d)->dims.assign(dims, dims + n);
  ((TD*)d)->t = t;
  ((TD*)d)->nhwc = false;
  int s = 1; for (int i = n - 1; i >= 0; --i) { if (strides[i] != s) return CUDNN_STATUS_BAD_PARAM; s *= dims[i]; }
  return CUDNN_STATUS_SUCCESS; }
cudnnStatus_t cudnnSetFilterNdDescriptor(cudnnFilterDescriptor_t d, cudnnDataType_t, cudnnTensorFormat_t f, int n, const int* dims) {
  if (f != CUDNN_TENSOR_NCHW) return CUDNN_STATUS_NOT_SUPPORTED;
  ((FD*)d)->dims.assign(dims, dims + n); ((FD*)d)->nhwc = false; return CUDNN_STATUS_SUCCESS; }
cudnnStatus_t cudnnSetTensor4dDescriptor(cudnnTensorDescriptor_t d, cudnnTensorFormat_t f, cudnnDataType_t t, int n, int c, int h, int w) {
  if (f != CUDNN_TENSOR_NCHW && f != CUDNN_TENSOR_NHWC) return CUDNN_STATUS_NOT_SUPPORTED;
  TD* x = (TD*)d; x->dims = {n, c, h, w}; x->t = t; x->nhwc = f == CUDNN_TENSOR_NHWC; return CUDNN_STATUS_SUCCESS; }
cudnnStatus_t cudnnSetFilter4dDescriptor(cudnnFilterDescriptor_t d, cudnnDataType_t, cudnnTensorFormat_t f, int k, int c, int h, int w) {
  if (f != CUDNN_TENSOR_NCHW && f != CUDNN_TENSOR_NHWC) return CUDNN_STATUS_NOT_SUPPORTED;
  FD* x = (FD*)d; x->dims = {k, c, h, w}; x->nhwc = f == CUDNN_TENSOR_NHWC; return CUDNN_STATUS_SUCCESS; }
cudnnStatus_t cudnnSetConvolutionNdDescriptor(cudnnConvolutionDescriptor_t d, int n, const int* p, const int* s, const int* di, cudnnConvolutionMode_t m, cudnnDataType_t) {
  if (m != CUDNN_CROSS_CORRELATION) return CUDNN_STATUS_BAD_PARAM;
  CD* c = (CD*)d; c->pad.assign(p, p + n); c->stride.assign(s, s + n); c->dil.assign(di, di + n); return CUDNN_STATUS_SUCCESS; }
cudnnStatus_t cudnnSetConvolutionGroupCount(cudnnConvolutionDescriptor_t d, int g) { ((CD*)d)->group = g; return CUDNN_STATUS_SUCCESS; }
cudnnStatus_t cudnnSetConvolutionMathType(cudnnConvolutionDescriptor_t, cudnnMathType_t) { return CUDNN_STATUS_SUCCESS; }
cudnnStatus_t cudnnGetConvolutionNdForwardOutputDim(cudnnConvolutionDescriptor_t cd, cudnnTensorDescriptor_t td, cudnnFilterDescriptor_t fd, int n, int* out) {
  CD* c = (CD*)cd; TD* t = (TD*)td; FD* f = (FD*)fd;
  if (t->dims[1] != f->dims[1] * c->group || f->dims[0] % c->group) return CUDNN_STATUS_BAD_PARAM;
  out[0] = t->dims[0]; out[1] = f->dims[0];
  for (int i = 2; i < n; ++i) { int eff = (f->dims[i] - 1) * c->dil[i - 2] + 1; out[i] = (t->dims[i] + 2 * c->pad[i - 2] - eff) / c->stride[i - 2] + 1; }
  return CUDNN_STATUS_SUCCESS; }
cudnnStatus_t cudnnGetConvolutionForwardAlgorithmMaxCount(cudnnHandle_t, int* n) { *n = 8; return CUDNN_STATUS_SUCCESS; }
cudnnStatus_t cudnnGetConvolutionBackwardDataAlgorithmMaxCount(cudnnHandle_t, int* n) { *n = 6; return CUDNN_STATUS_SUCCESS; }
cudnnStatus_t cudnnGetConvolutionForwardAlgorithm_v7(cudnnHandle_t, cudnnTensorDescriptor_t, cudnnFilterDescriptor_t, cudnnConvolutionDescriptor_t, cudnnTensorDescriptor_t, int, int* found, cudnnConvolutionFwdAlgoPerf_t* p) {
  if (nn_libs_refuse) { *found = 0; return CUDNN_STATUS_SUCCESS; }
  *found = 2; p[0] = {}; p[0].status = CUDNN_STATUS_SUCCESS; p[0].mathType = CUDNN_DEFAULT_MATH; p[0].algo = CUDNN_CONVOLUTION_FWD_ALGO_GEMM;
  p[1] = {}; p[1].status = CUDNN_STATUS_SUCCESS; p[1].mathType = CUDNN_FMA_MATH; p[1].algo = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM; return CUDNN_STATUS_SUCCESS; }
cudnnStatus_t cudnnGetConvolutionBackwardDataAlgorithm_v7(cudnnHandle_t, cudnnFilterDescriptor_t, cudnnTensorDescriptor_t, cudnnConvolutionDescriptor_t, cudnnTensorDescriptor_t, int, int* found, cudnnConvolutionBwdDataAlgoPerf_t* p) {
  if (nn_libs_refuse) { *found = 0; return CUDNN_STATUS_SUCCESS; }
  *found = 1; p[0] = {}; p[0].status = CUDNN_STATUS_SUCCESS; p[0].mathType = CUDNN_FMA_MATH; p[0].algo = CUDNN_CONVOLUTION_BWD_DATA_ALGO_1; return CUDNN_STATUS_SUCCESS; }
cudnnStatus_t cudnnGetConvolutionForwardWorkspaceSize(cudnnHandle_t, cudnnTensorDescriptor_t, cudnnFilterDescriptor_t, cudnnConvolutionDescriptor_t, cudnnTensorDescriptor_t, cudnnConvolutionFwdAlgo_t, size_t* s) { *s = 0; return CUDNN_STATUS_SUCCESS; }
cudnnStatus_t cudnnGetConvolutionBackwardDataWorkspaceSize(cudnnHandle_t, cudnnFilterDescriptor_t, cudnnTensorDescriptor_t, cudnnConvolutionDescriptor_t, cudnnTensorDescriptor_t, cudnnConvolutionBwdDataAlgo_t, size_t* s) { *s = 0; return CUDNN_STATUS_SUCCESS; }

// Visits every (input position, filter position, output position) triple of the forward conv.
}  // extern "C"

template <typename F> static void Visit(TD* x, FD* f, CD* c, TD* y, F fn) {
  int nd = (int)x->dims.size() - 2; int N = x->dims[0], C = x->dims[1], K = f->dims[0], Cg = f->dims[1], Kg = K / c->group;
  std::vector<int> xs(nd), ks(nd), ys(nd); long xin = 1, kin = 1, yin = 1;
  for (int i = 0; i < nd; ++i) { xs[i] = x->dims[2 + i]; ks[i] = f->dims[2 + i]; ys[i] = y->dims[2 + i]; xin *= xs[i]; kin *= ks[i]; yin *= ys[i]; }
  for (int n = 0; n < N; ++n) for (int k = 0; k < K; ++k) for (long yo = 0; yo < yin; ++yo) for (int cg = 0; cg < Cg; ++cg) for (long ko = 0; ko < kin; ++ko) {
    long yr = yo, kr = ko, xoff = 0; bool inside = true; std::vector<int> yc(nd), kc(nd);
    for (int i = nd - 1; i >= 0; --i) { yc[i] = yr % ys[i]; yr /= ys[i]; kc[i] = kr % ks[i]; kr /= ks[i]; }
    long mul = 1; for (int i = nd - 1; i >= 0; --i) { int xi = yc[i] * c->stride[i] - c->pad[i] + kc[i] * c->dil[i]; if (xi < 0 || xi >= xs[i]) inside = false; xoff += xi * mul; mul *= xs[i]; }
    if (!inside) continue;
    int ci = k / Kg * Cg + cg;
    long xi = x->nhwc ? ((long)n * xin + xoff) * C + ci : ((long)n * C + ci) * xin + xoff;
    long wi = f->nhwc ? ((long)k * kin + ko) * Cg + cg : ((long)k * Cg + cg) * kin + ko;
    long yi = y->nhwc ? ((long)n * yin + yo) * K + k : ((long)n * K + k) * yin + yo;
    fn(xi, wi, yi);
  }
  (void)C;
}
extern "C" {
cudnnStatus_t cudnnConvolutionForward(cudnnHandle_t, const void* alpha, cudnnTensorDescriptor_t xd, const void* x, cudnnFilterDescriptor_t wd, const void* w, cudnnConvolutionDescriptor_t cd,
    cudnnConvolutionFwdAlgo_t, void*, size_t, const void* beta, cudnnTensorDescriptor_t yd, void* y) {
  TD* Y = (TD*)yd; long n = 1; for (int d : Y->dims) n *= d; cudaDataType t = Cuda(Y->t);
  double al = t == CUDA_R_64F ? *(const double*)alpha : *(const float*)alpha, be = t == CUDA_R_64F ? *(const double*)beta : *(const float*)beta;
  std::vector<double> acc(n, 0.0);
  Visit((TD*)xd, (FD*)wd, (CD*)cd, Y, [&](long xi, long wi, long yi) { acc[yi] += GetD(t, x, xi) * GetD(t, w, wi); });
  for (long i = 0; i < n; ++i) Put(t, y, i, al * acc[i] + (be != 0 ? be * GetD(t, y, i) : 0.0));
  return CUDNN_STATUS_SUCCESS; }
cudnnStatus_t cudnnConvolutionBackwardData(cudnnHandle_t, const void* alpha, cudnnFilterDescriptor_t wd, const void* w, cudnnTensorDescriptor_t dyd, const void* dy, cudnnConvolutionDescriptor_t cd,
    cudnnConvolutionBwdDataAlgo_t, void*, size_t, const void* beta, cudnnTensorDescriptor_t dxd, void* dx) {
  TD* X = (TD*)dxd; long n = 1; for (int d : X->dims) n *= d; cudaDataType t = Cuda(X->t);
  double al = t == CUDA_R_64F ? *(const double*)alpha : *(const float*)alpha, be = t == CUDA_R_64F ? *(const double*)beta : *(const float*)beta;
  // the forward geometry must reproduce dy's dims
  std::vector<int> fwd(X->dims.size()); cudnnGetConvolutionNdForwardOutputDim(cd, dxd, wd, (int)X->dims.size(), fwd.data());
  if (fwd != ((TD*)dyd)->dims) { printf("mock: backward data dims mismatch\n"); return CUDNN_STATUS_BAD_PARAM; }
  std::vector<double> acc(n, 0.0);
  Visit(X, (FD*)wd, (CD*)cd, (TD*)dyd, [&](long xi, long wi, long yi) { acc[xi] += GetD(t, dy, yi) * GetD(t, w, wi); });
  for (long i = 0; i < n; ++i) Put(t, dx, i, al * acc[i] + (be != 0 ? be * GetD(t, dx, i) : 0.0));
  return CUDNN_STATUS_SUCCESS; }
}

// ---- cuda_kernel.cc ---------------------------------------------------------------------------

namespace precis::rt::cuda {
void KernelRegistry::Register(const std::string&, KernelFactory) {}
Status CublasError(cublasStatus_t, const std::string& w) { return Internal(w + ": cuBLAS error (emulated)"); }
Status CudaError(cudaError_t e, const std::string& w) { return Internal(w + ": CUDA error " + std::to_string(int(e))); }
Status CudnnError(cudnnStatus_t, const std::string& w) { return Internal(w + ": cuDNN error (emulated)"); }
StatusOr<void*> UploadTable(CudaContext& ctx, const void* data, size_t bytes, const std::string&) {
  void* p = std::malloc(bytes ? bytes : 1);
  ctx.tables->emplace_back(p, [](void* q) { std::free(q); });
  if (bytes) std::memcpy(p, data, bytes);
  return p;
}
}  // namespace precis::rt::cuda
