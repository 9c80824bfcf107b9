// Host stand-ins for what the nn family's emulation build (PRECIS_NN_HOST_EMULATION) links
// instead of a GPU: cuBLASLt and cuDNN computing on host memory (FP32, FP16, BF16 and f64 data,
// double accumulation), cuDNN's backend API for the fused convolution graphs, and the few symbols
// of cuda_kernel.cc. nn_libs_refuse makes every heuristic find no algorithm, so the harness can
// run the kernels' own fallbacks too; nn_graph_refuse refuses only the graphs.
#include <cublasLt.h>
#include <cudnn.h>

#include <cstdio>
#include <cstdlib>
#include <algorithm>
#include <cstring>
#include <map>
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
  *found = 2; p[0] = {}; p[0].status = CUDNN_STATUS_SUCCESS; p[0].mathType = CUDNN_DEFAULT_MATH; p[0].algo = CUDNN_CONVOLUTION_FWD_ALGO_GEMM; p[0].determinism = CUDNN_DETERMINISTIC;
  p[1] = {}; p[1].status = CUDNN_STATUS_SUCCESS; p[1].mathType = CUDNN_FMA_MATH; p[1].algo = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM; p[1].determinism = CUDNN_DETERMINISTIC; return CUDNN_STATUS_SUCCESS; }
cudnnStatus_t cudnnGetConvolutionBackwardDataAlgorithm_v7(cudnnHandle_t, cudnnFilterDescriptor_t, cudnnTensorDescriptor_t, cudnnConvolutionDescriptor_t, cudnnTensorDescriptor_t, int, int* found, cudnnConvolutionBwdDataAlgoPerf_t* p) {
  if (nn_libs_refuse) { *found = 0; return CUDNN_STATUS_SUCCESS; }
  // First a nondeterministic algorithm (as ALGO_0 is: atomics), which the plan must pass over.
  *found = 2; p[0] = {}; p[0].status = CUDNN_STATUS_SUCCESS; p[0].mathType = CUDNN_FMA_MATH; p[0].algo = CUDNN_CONVOLUTION_BWD_DATA_ALGO_0; p[0].determinism = CUDNN_NON_DETERMINISTIC;
  p[1] = {}; p[1].status = CUDNN_STATUS_SUCCESS; p[1].mathType = CUDNN_FMA_MATH; p[1].algo = CUDNN_CONVOLUTION_BWD_DATA_ALGO_1; p[1].determinism = CUDNN_DETERMINISTIC; return CUDNN_STATUS_SUCCESS; }
cudnnStatus_t cudnnGetConvolutionBackwardFilterAlgorithmMaxCount(cudnnHandle_t, int* n) { *n = 7; return CUDNN_STATUS_SUCCESS; }
cudnnStatus_t cudnnGetConvolutionBackwardFilterAlgorithm_v7(cudnnHandle_t, cudnnTensorDescriptor_t, cudnnTensorDescriptor_t, cudnnConvolutionDescriptor_t, cudnnFilterDescriptor_t, int, int* found, cudnnConvolutionBwdFilterAlgoPerf_t* p) {
  if (nn_libs_refuse) { *found = 0; return CUDNN_STATUS_SUCCESS; }
  // First a nondeterministic algorithm (as ALGO_0 and ALGO_3 are: atomics), which the plan must pass over.
  *found = 2; p[0] = {}; p[0].status = CUDNN_STATUS_SUCCESS; p[0].mathType = CUDNN_FMA_MATH; p[0].algo = CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0; p[0].determinism = CUDNN_NON_DETERMINISTIC;
  p[1] = {}; p[1].status = CUDNN_STATUS_SUCCESS; p[1].mathType = CUDNN_FMA_MATH; p[1].algo = CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1; p[1].determinism = CUDNN_DETERMINISTIC; return CUDNN_STATUS_SUCCESS; }
cudnnStatus_t cudnnGetConvolutionBackwardFilterWorkspaceSize(cudnnHandle_t, cudnnTensorDescriptor_t, cudnnTensorDescriptor_t, cudnnConvolutionDescriptor_t, cudnnFilterDescriptor_t, cudnnConvolutionBwdFilterAlgo_t, size_t* s) { *s = 0; return CUDNN_STATUS_SUCCESS; }
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
    cudnnConvolutionBwdDataAlgo_t algo, void*, size_t, const void* beta, cudnnTensorDescriptor_t dxd, void* dx) {
  if (algo == CUDNN_CONVOLUTION_BWD_DATA_ALGO_0) return CUDNN_STATUS_EXECUTION_FAILED;  // the nondeterministic one was chosen
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

extern "C" {
cudnnStatus_t cudnnConvolutionBackwardFilter(cudnnHandle_t, const void* alpha, cudnnTensorDescriptor_t xd, const void* x, cudnnTensorDescriptor_t dyd, const void* dy,
    cudnnConvolutionDescriptor_t cd, cudnnConvolutionBwdFilterAlgo_t algo, void*, size_t, const void* beta, cudnnFilterDescriptor_t dwd, void* dw) {
  if (algo == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0) return CUDNN_STATUS_EXECUTION_FAILED;  // the nondeterministic one was chosen
  TD* X = (TD*)xd; FD* W = (FD*)dwd; long n = 1; for (int d : W->dims) n *= d; cudaDataType t = Cuda(X->t);
  double al = t == CUDA_R_64F ? *(const double*)alpha : *(const float*)alpha, be = t == CUDA_R_64F ? *(const double*)beta : *(const float*)beta;
  std::vector<int> fwd(X->dims.size()); cudnnGetConvolutionNdForwardOutputDim(cd, xd, dwd, (int)X->dims.size(), fwd.data());
  if (fwd != ((TD*)dyd)->dims) { printf("mock: backward filter dims mismatch\n"); return CUDNN_STATUS_BAD_PARAM; }
  std::vector<double> acc(n, 0.0);
  Visit(X, W, (CD*)cd, (TD*)dyd, [&](long xi, long wi, long yi) { acc[wi] += GetD(t, x, xi) * GetD(t, dy, yi); });
  for (long i = 0; i < n; ++i) Put(t, dw, i, al * acc[i] + (be != 0 ? be * GetD(t, dw, i) : 0.0));
  return CUDNN_STATUS_SUCCESS; }
}

// ---- cuDNN backend API (CudnnFusedConv's graphs) ---------------------------------------------
// Descriptors keep their attributes; Finalize checks that the attributes the cuDNN documentation
// lists as required are there with the documented types and counts; the heuristic offers one
// engine (none under nn_libs_refuse or nn_graph_refuse); Execute interprets the graph: tensors
// read and written through their dims and strides, the convolution in double, the pointwise
// steps, virtual tensors rounded to their dtype. nn_graph_runs counts executions.

bool nn_graph_refuse = false;
int nn_graph_runs = 0, nn_graph_plans = 0;  // executions; execution plans finalized

namespace {
struct BD {
  cudnnBackendDescriptorType_t type;
  struct Attr { cudnnBackendAttributeType_t type; int64_t count; std::vector<uint8_t> bytes; };
  std::map<int, Attr> attrs;
  bool final = false;
  BD* graph = nullptr;  // an engine configuration's operation graph
  int engine = 0;       // an engine configuration's, engine's or plan's engine (0 reduces in FP16)
  const Attr* Find(int name, cudnnBackendAttributeType_t t) const {
    auto it = attrs.find(name);
    return it != attrs.end() && it->second.type == t ? &it->second : nullptr;
  }
  template <typename T> std::vector<T> Get(int name, cudnnBackendAttributeType_t t) const {
    const Attr* a = Find(name, t);
    std::vector<T> v;
    if (a) v.assign(reinterpret_cast<const T*>(a->bytes.data()), reinterpret_cast<const T*>(a->bytes.data()) + a->count);
    return v;
  }
  BD* Desc(int name) const {
    auto v = Get<BD*>(name, CUDNN_TYPE_BACKEND_DESCRIPTOR);
    return v.size() == 1 ? v[0] : nullptr;
  }
};
size_t ElementSize(cudnnBackendAttributeType_t t) {
  switch (t) {
    case CUDNN_TYPE_HANDLE: return sizeof(cudnnHandle_t);
    case CUDNN_TYPE_DATA_TYPE: return sizeof(cudnnDataType_t);
    case CUDNN_TYPE_BOOLEAN: return sizeof(bool);
    case CUDNN_TYPE_INT64: return sizeof(int64_t);
    case CUDNN_TYPE_FLOAT: return sizeof(float);
    case CUDNN_TYPE_DOUBLE: return sizeof(double);
    case CUDNN_TYPE_VOID_PTR: return sizeof(void*);
    case CUDNN_TYPE_CONVOLUTION_MODE: return sizeof(cudnnConvolutionMode_t);
    case CUDNN_TYPE_HEUR_MODE: return sizeof(cudnnBackendHeurMode_t);
    case CUDNN_TYPE_POINTWISE_MODE: return sizeof(cudnnPointwiseMode_t);
    case CUDNN_TYPE_BACKEND_DESCRIPTOR: return sizeof(cudnnBackendDescriptor_t);
    default: return 0;
  }
}
cudnnStatus_t Bad(const char* why) {
  std::printf("emulated cuDNN graph: %s\n", why);
  return CUDNN_STATUS_BAD_PARAM;
}
bool Has(const BD* d, int name, cudnnBackendAttributeType_t t, int64_t count = 1) {
  const BD::Attr* a = d->Find(name, t);
  return a && (count < 0 ? a->count > 0 : a->count == count);
}
bool IsFinal(const BD* d, cudnnBackendDescriptorType_t type) { return d && d->type == type && d->final; }

// Tensor view: dims (NCHW order), strides, dtype, uid, virtual.
struct TV {
  std::vector<int64_t> dims, strides;
  cudnnDataType_t t = CUDNN_DATA_FLOAT;
  int64_t uid = 0;
  bool is_virtual = false;
  int64_t Numel() const { int64_t n = 1; for (int64_t d : dims) n *= d; return n; }
  // Offset of logical element i (row-major over dims) through the strides.
  int64_t Offset(int64_t i) const {
    int64_t off = 0;
    for (size_t k = dims.size(); k-- > 0;) { off += (i % dims[k]) * strides[k]; i /= dims[k]; }
    return off;
  }
};
TV View(const BD* d) {
  TV v;
  v.dims = d->Get<int64_t>(CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64);
  v.strides = d->Get<int64_t>(CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64);
  v.t = d->Get<cudnnDataType_t>(CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE)[0];
  v.uid = d->Get<int64_t>(CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64)[0];
  auto virt = d->Get<bool>(CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN);
  v.is_virtual = !virt.empty() && virt[0];
  return v;
}
std::vector<int64_t> ConvOutDims(const TV& x, const TV& w, const BD* conv) {
  auto dil = conv->Get<int64_t>(CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_TYPE_INT64);
  auto str = conv->Get<int64_t>(CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, CUDNN_TYPE_INT64);
  auto pre = conv->Get<int64_t>(CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_TYPE_INT64);
  auto post = conv->Get<int64_t>(CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, CUDNN_TYPE_INT64);
  std::vector<int64_t> out = {x.dims[0], w.dims[0]};
  for (size_t i = 2; i < x.dims.size(); ++i) {
    int64_t eff = (w.dims[i] - 1) * dil[i - 2] + 1;
    out.push_back((x.dims[i] + pre[i - 2] + post[i - 2] - eff) / str[i - 2] + 1);
  }
  return out;
}
cudnnStatus_t CheckFinal(BD* d) {
  switch (d->type) {
    case CUDNN_BACKEND_TENSOR_DESCRIPTOR: {
      const BD::Attr* dims = d->Find(CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64);
      if (!Has(d, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE) || !dims || dims->count < 3 || dims->count > 8 ||
          !Has(d, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, dims->count) || !Has(d, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64) ||
          !Has(d, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64))
        return Bad("tensor: data type, dims (3 to 8), strides, unique id and byte alignment are required");
      for (int64_t v : View(d).dims) if (v <= 0) return Bad("tensor: dims must be positive");
      return CUDNN_STATUS_SUCCESS;
    }
    case CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR: {
      auto n = d->Get<int64_t>(CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_TYPE_INT64);
      if (n.size() != 1 || !Has(d, CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE) ||
          !Has(d, CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE))
        return Bad("convolution: spatial dims, compute type and mode are required");
      for (int a : {CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS,
                    CUDNN_ATTR_CONVOLUTION_POST_PADDINGS})
        if (!Has(d, a, CUDNN_TYPE_INT64, n[0])) return Bad("convolution: dilations, strides and paddings need one value per spatial dim");
      if (d->Get<cudnnConvolutionMode_t>(CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE)[0] != CUDNN_CROSS_CORRELATION)
        return Bad("convolution: only cross-correlation is emulated");
      return CUDNN_STATUS_SUCCESS;
    }
    case CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR: {
      BD *x = d->Desc(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X), *w = d->Desc(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W),
         *y = d->Desc(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y), *c = d->Desc(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC);
      if (!IsFinal(x, CUDNN_BACKEND_TENSOR_DESCRIPTOR) || !IsFinal(w, CUDNN_BACKEND_TENSOR_DESCRIPTOR) ||
          !IsFinal(y, CUDNN_BACKEND_TENSOR_DESCRIPTOR) || !IsFinal(c, CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR))
        return Bad("conv_fprop: finalized X, W, Y and convolution descriptors are required");
      if (!Has(d, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA, CUDNN_TYPE_FLOAT) ||
          !Has(d, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA, CUDNN_TYPE_FLOAT))
        return Bad("conv_fprop: float alpha and beta are required (FP32 compute)");
      TV xv = View(x), wv = View(w), yv = View(y);
      size_t spatial = size_t(c->Get<int64_t>(CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_TYPE_INT64)[0]);
      if (xv.dims.size() != spatial + 2 || wv.dims.size() != xv.dims.size() || yv.dims.size() != xv.dims.size())
        return Bad("conv_fprop: X, W and Y ranks must be spatial dims + 2");
      if (wv.dims[1] == 0 || xv.dims[1] % wv.dims[1] || wv.dims[0] % (xv.dims[1] / wv.dims[1]))
        return Bad("conv_fprop: X channels must be a multiple of W's, K of the groups");
      if (ConvOutDims(xv, wv, c) != yv.dims) return Bad("conv_fprop: Y dims differ from the convolution's output");
      return CUDNN_STATUS_SUCCESS;
    }
    case CUDNN_BACKEND_POINTWISE_DESCRIPTOR:
      if (!Has(d, CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE) || !Has(d, CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE))
        return Bad("pointwise: mode and math precision are required");
      return CUDNN_STATUS_SUCCESS;
    case CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR: {
      BD *pw = d->Desc(CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR), *x = d->Desc(CUDNN_ATTR_OPERATION_POINTWISE_XDESC),
         *b = d->Desc(CUDNN_ATTR_OPERATION_POINTWISE_BDESC), *y = d->Desc(CUDNN_ATTR_OPERATION_POINTWISE_YDESC);
      if (!IsFinal(pw, CUDNN_BACKEND_POINTWISE_DESCRIPTOR) || !IsFinal(x, CUDNN_BACKEND_TENSOR_DESCRIPTOR) ||
          !IsFinal(y, CUDNN_BACKEND_TENSOR_DESCRIPTOR))
        return Bad("pointwise op: finalized pointwise, X and Y descriptors are required");
      auto mode = pw->Get<cudnnPointwiseMode_t>(CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE)[0];
      if (mode != CUDNN_POINTWISE_ADD && mode != CUDNN_POINTWISE_RELU_FWD) return Bad("pointwise op: only ADD and RELU_FWD are emulated");
      if ((mode == CUDNN_POINTWISE_ADD) != (b != nullptr)) return Bad("pointwise op: ADD takes B, RELU_FWD does not");
      TV xv = View(x), yv = View(y);
      if (xv.dims != yv.dims) return Bad("pointwise op: X and Y dims differ");
      if (b) {
        if (!IsFinal(b, CUDNN_BACKEND_TENSOR_DESCRIPTOR)) return Bad("pointwise op: B is not finalized");
        TV bv = View(b);
        if (bv.dims.size() != xv.dims.size()) return Bad("pointwise op: B's rank differs from X's");
        for (size_t i = 0; i < bv.dims.size(); ++i)
          if (bv.dims[i] != 1 && bv.dims[i] != xv.dims[i]) return Bad("pointwise op: B does not broadcast to X");
      }
      return CUDNN_STATUS_SUCCESS;
    }
    case CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR:
      if (!Has(d, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, -1) ||
          !Has(d, CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE))
        return Bad("operation graph: ops and handle are required");
      for (BD* op : d->Get<BD*>(CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR))
        if (!op->final) return Bad("operation graph: an op is not finalized");
      return CUDNN_STATUS_SUCCESS;
    case CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR:
      if (!IsFinal(d->Desc(CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH), CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR) ||
          !Has(d, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE))
        return Bad("heuristic: a finalized operation graph and a mode are required");
      return CUDNN_STATUS_SUCCESS;
    case CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR: {
      BD* cfg = d->Desc(CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG);
      if (!cfg || cfg->type != CUDNN_BACKEND_ENGINECFG_DESCRIPTOR || !cfg->graph || !Has(d, CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE))
        return Bad("execution plan: a heuristic's engine configuration and a handle are required");
      return CUDNN_STATUS_SUCCESS;
    }
    case CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR: {
      const BD::Attr* ids = d->Find(CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64);
      if (!ids || !Has(d, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, ids->count) ||
          !Has(d, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR))
        return Bad("variant pack: unique ids, as many data pointers, and a workspace are required");
      return CUDNN_STATUS_SUCCESS;
    }
    default:
      return CUDNN_STATUS_SUCCESS;
  }
}
constexpr int64_t kGraphWorkspace = 256;  // the emulated plan asks for a workspace, to check it is passed
}  // namespace

extern "C" {
cudnnStatus_t cudnnBackendCreateDescriptor(cudnnBackendDescriptorType_t type, cudnnBackendDescriptor_t* d) {
  *d = new BD{type, {}, false, nullptr};
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnBackendDestroyDescriptor(cudnnBackendDescriptor_t d) { delete static_cast<BD*>(d); return CUDNN_STATUS_SUCCESS; }
cudnnStatus_t cudnnBackendSetAttribute(cudnnBackendDescriptor_t d, cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type,
                                       int64_t count, const void* elements) {
  BD* b = static_cast<BD*>(d);
  size_t size = ElementSize(type);
  if (b->final) return Bad("attribute set on a finalized descriptor");
  if (size == 0 || count < 0 || (count > 0 && !elements)) return Bad("attribute type, count or elements not valid");
  const uint8_t* p = static_cast<const uint8_t*>(elements);
  b->attrs[int(name)] = {type, count, std::vector<uint8_t>(p, p + size * size_t(count))};
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnBackendFinalize(cudnnBackendDescriptor_t d) {
  BD* b = static_cast<BD*>(d);
  if (b->final) return Bad("finalized twice");
  cudnnStatus_t s = CheckFinal(b);
  b->final = s == CUDNN_STATUS_SUCCESS;
  if (b->final && b->type == CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR) b->engine = b->Desc(CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG)->engine;
  if (b->final && b->type == CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR) ++nn_graph_plans;
  return s;
}
cudnnStatus_t cudnnBackendGetAttribute(cudnnBackendDescriptor_t const d, cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type,
                                       int64_t requested, int64_t* count, void* elements) {
  BD* b = static_cast<BD*>(d);
  if (!b->final) return Bad("attribute read from a descriptor not finalized");
  if (b->type == CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR && name == CUDNN_ATTR_ENGINEHEUR_RESULTS && type == CUDNN_TYPE_BACKEND_DESCRIPTOR) {
    // Two engines: the heuristic's first choice notes a reduced-precision (FP16) reduction and
    // nondeterminism, and executing it fails; the second is the one to take.
    int64_t n = nn_libs_refuse || nn_graph_refuse ? 0 : 2;
    int64_t filled = std::min(n, requested > 0 ? requested : n);
    if (count) *count = filled;
    for (int64_t i = 0; requested > 0 && i < filled; ++i) {
      BD* cfg = static_cast<BD**>(elements)[i];
      if (!cfg || cfg->type != CUDNN_BACKEND_ENGINECFG_DESCRIPTOR) return Bad("heuristic results go into engine configuration descriptors");
      cfg->graph = b->Desc(CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH);
      cfg->engine = int(i);
      cfg->final = true;
    }
    return CUDNN_STATUS_SUCCESS;
  }
  if (b->type == CUDNN_BACKEND_ENGINECFG_DESCRIPTOR && name == CUDNN_ATTR_ENGINECFG_ENGINE && type == CUDNN_TYPE_BACKEND_DESCRIPTOR &&
      requested >= 1 && elements) {
    BD* engine = static_cast<BD**>(elements)[0];
    if (!engine || engine->type != CUDNN_BACKEND_ENGINE_DESCRIPTOR || engine->final) return Bad("an engine configuration's engine goes into a new engine descriptor");
    engine->engine = b->engine;
    engine->final = true;
    if (count) *count = 1;
    return CUDNN_STATUS_SUCCESS;
  }
  if (b->type == CUDNN_BACKEND_ENGINE_DESCRIPTOR && name == CUDNN_ATTR_ENGINE_NUMERICAL_NOTE && type == CUDNN_TYPE_NUMERICAL_NOTE) {
    std::vector<cudnnBackendNumericalNote_t> notes = {CUDNN_NUMERICAL_NOTE_TENSOR_CORE};
    if (b->engine == 0) notes = {CUDNN_NUMERICAL_NOTE_TENSOR_CORE, CUDNN_NUMERICAL_NOTE_REDUCED_PRECISION_REDUCTION, CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC};
    int64_t m = std::min<int64_t>(requested, int64_t(notes.size()));
    if (count) *count = elements ? m : int64_t(notes.size());
    if (elements)
      for (int64_t i = 0; i < m; ++i) static_cast<cudnnBackendNumericalNote_t*>(elements)[i] = notes[size_t(i)];
    return CUDNN_STATUS_SUCCESS;
  }
  if (b->type == CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR && name == CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE && type == CUDNN_TYPE_INT64 &&
      requested >= 1 && elements) {
    if (count) *count = 1;
    *static_cast<int64_t*>(elements) = kGraphWorkspace;
    return CUDNN_STATUS_SUCCESS;
  }
  return Bad("attribute read not emulated");
}
cudnnStatus_t cudnnBackendExecute(cudnnHandle_t, cudnnBackendDescriptor_t plan_d, cudnnBackendDescriptor_t pack_d) {
  BD *plan = static_cast<BD*>(plan_d), *pack = static_cast<BD*>(pack_d);
  if (!IsFinal(plan, CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR) || !IsFinal(pack, CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR))
    return Bad("execute: a finalized plan and variant pack are required");
  if (pack->Get<void*>(CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR)[0] == nullptr) return Bad("execute: the plan's workspace is missing");
  if (plan->engine == 0) return Bad("execute: the plan's engine reduces in FP16 and is nondeterministic (its numerical notes say so)");
  std::map<int64_t, void*> data;
  auto ids = pack->Get<int64_t>(CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64);
  auto ptrs = pack->Get<void*>(CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR);
  for (size_t i = 0; i < ids.size(); ++i) data[ids[i]] = ptrs[i];
  std::map<int64_t, std::vector<double>> values;  // logical (dense, row-major) values by uid
  auto read = [&](BD* d, std::vector<double>* out) -> cudnnStatus_t {
    TV v = View(d);
    if (v.is_virtual) {
      if (!values.count(v.uid)) return Bad("execute: a virtual tensor is read before it is written");
      *out = values[v.uid];
      return CUDNN_STATUS_SUCCESS;
    }
    if (!data.count(v.uid) || !data[v.uid]) return Bad("execute: no data pointer for a tensor");
    out->resize(size_t(v.Numel()));
    for (int64_t i = 0; i < v.Numel(); ++i) (*out)[size_t(i)] = GetD(Cuda(v.t), data[v.uid], v.Offset(i));
    return CUDNN_STATUS_SUCCESS;
  };
  auto write = [&](BD* d, const std::vector<double>& vals) -> cudnnStatus_t {
    TV v = View(d);
    if (v.is_virtual) {
      std::vector<double>& dst = values[v.uid];
      dst.resize(vals.size());
      for (size_t i = 0; i < vals.size(); ++i) dst[i] = v.t == CUDNN_DATA_FLOAT ? double(float(vals[i])) : vals[i];
      return CUDNN_STATUS_SUCCESS;
    }
    if (!data.count(v.uid) || !data[v.uid]) return Bad("execute: no data pointer for an output");
    for (int64_t i = 0; i < v.Numel(); ++i) Put(Cuda(v.t), data[v.uid], v.Offset(i), vals[size_t(i)]);
    return CUDNN_STATUS_SUCCESS;
  };
  BD* graph = plan->Desc(CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG)->graph;
  for (BD* op : graph->Get<BD*>(CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR)) {
    cudnnStatus_t s;
    if (op->type == CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR) {
      BD *xd = op->Desc(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X), *wd = op->Desc(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W),
         *yd = op->Desc(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y), *cd = op->Desc(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC);
      float alpha = op->Get<float>(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA, CUDNN_TYPE_FLOAT)[0];
      float beta = op->Get<float>(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA, CUDNN_TYPE_FLOAT)[0];
      if (beta != 0) return Bad("execute: conv_fprop beta != 0 is not emulated");
      std::vector<double> x, w;
      if ((s = read(xd, &x)) != CUDNN_STATUS_SUCCESS || (s = read(wd, &w)) != CUDNN_STATUS_SUCCESS) return s;
      TV xv = View(xd), wv = View(wd), yv = View(yd);
      auto dil = cd->Get<int64_t>(CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_TYPE_INT64);
      auto str = cd->Get<int64_t>(CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, CUDNN_TYPE_INT64);
      auto pre = cd->Get<int64_t>(CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_TYPE_INT64);
      size_t nd = xv.dims.size() - 2;
      int64_t C = xv.dims[1], K = wv.dims[0], Cg = wv.dims[1], Kg = K / (C / Cg), kin = 1, xin = 1;
      for (size_t i = 0; i < nd; ++i) kin *= wv.dims[2 + i], xin *= xv.dims[2 + i];
      std::vector<double> y(size_t(yv.Numel()), 0.0);
      std::vector<int64_t> yc(nd), kc(nd);
      for (int64_t o = 0; o < yv.Numel(); ++o) {
        int64_t r = o;
        for (size_t i = nd; i-- > 0;) { yc[i] = r % yv.dims[2 + i]; r /= yv.dims[2 + i]; }
        int64_t k = r % K, n = r / K;
        double acc = 0;
        for (int64_t cg = 0; cg < Cg; ++cg)
          for (int64_t f = 0; f < kin; ++f) {
            int64_t fr = f, xoff = 0;
            bool inside = true;
            for (size_t i = nd; i-- > 0;) { kc[i] = fr % wv.dims[2 + i]; fr /= wv.dims[2 + i]; }
            for (size_t i = 0; i < nd; ++i) {
              int64_t xi = yc[i] * str[i] - pre[i] + kc[i] * dil[i];
              if (xi < 0 || xi >= xv.dims[2 + i]) inside = false;
              xoff = xoff * xv.dims[2 + i] + xi;
            }
            if (!inside) continue;
            int64_t ci = k / Kg * Cg + cg;
            acc += x[size_t((n * C + ci) * xin + xoff)] * w[size_t((k * Cg + cg) * kin + f)];
          }
        y[size_t(o)] = alpha * acc;
      }
      if ((s = write(yd, y)) != CUDNN_STATUS_SUCCESS) return s;
    } else if (op->type == CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR) {
      BD *pw = op->Desc(CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR), *xd = op->Desc(CUDNN_ATTR_OPERATION_POINTWISE_XDESC),
         *bd = op->Desc(CUDNN_ATTR_OPERATION_POINTWISE_BDESC), *yd = op->Desc(CUDNN_ATTR_OPERATION_POINTWISE_YDESC);
      auto mode = pw->Get<cudnnPointwiseMode_t>(CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE)[0];
      std::vector<double> x, b;
      if ((s = read(xd, &x)) != CUDNN_STATUS_SUCCESS) return s;
      if (bd && (s = read(bd, &b)) != CUDNN_STATUS_SUCCESS) return s;
      TV xv = View(xd);
      std::vector<double> y(x.size());
      for (int64_t i = 0; i < int64_t(x.size()); ++i) {
        if (mode == CUDNN_POINTWISE_RELU_FWD) { y[size_t(i)] = x[size_t(i)] > 0 ? x[size_t(i)] : 0; continue; }
        TV bv = View(bd);
        int64_t r = i, bi = 0, mul = 1;
        for (size_t k = xv.dims.size(); k-- > 0;) {
          int64_t c = r % xv.dims[k];
          r /= xv.dims[k];
          if (bv.dims[k] != 1) bi += c * mul;
          mul *= bv.dims[k];
        }
        y[size_t(i)] = x[size_t(i)] + b[size_t(bi)];
      }
      if ((s = write(yd, y)) != CUDNN_STATUS_SUCCESS) return s;
    } else {
      return Bad("execute: op not emulated");
    }
  }
  ++nn_graph_runs;
  return CUDNN_STATUS_SUCCESS;
}
}  // extern "C"

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
