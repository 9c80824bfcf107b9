// Host-side pieces shared by the CUDA nn family (nn*.cu, nn*.cc): the kernel factories that
// nn.cu registers, the fused-activation attribute, LtMatmul (one cuBLASLt matrix product:
// strided batch, any operand strides that cuBLASLt can express; nn_lt.cc) and CudnnConv (one
// cuDNN convolution; nn_cudnn.cc) and CudnnFusedConv (convolution, bias and Relu as one cuDNN
// graph; nn_cudnn_graph.cc), all planned at Init and enqueued at Run. Plain C++: no
// device code, so the library wrappers build as .cc files.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "runtime/cuda/cuda_kernel.h"

namespace precis::rt::cuda {

std::unique_ptr<Kernel> MakeMatMulKernel();
std::unique_ptr<Kernel> MakeGemmKernel();
std::unique_ptr<Kernel> MakeEinsumKernel();
std::unique_ptr<Kernel> MakeConvKernel();
std::unique_ptr<Kernel> MakeConvTransposeKernel();
std::unique_ptr<Kernel> MakeConvFilterGradKernel();
std::unique_ptr<Kernel> MakeMaxPoolKernel();
std::unique_ptr<Kernel> MakeAveragePoolKernel();
std::unique_ptr<Kernel> MakeLpPoolKernel();
std::unique_ptr<Kernel> MakeGlobalMaxPoolKernel();
std::unique_ptr<Kernel> MakeGlobalAveragePoolKernel();
std::unique_ptr<Kernel> MakeGlobalLpPoolKernel();

// Every tensor the planner places (arena and constants) starts on this boundary, and the step
// scratch starts on a cudaMalloc boundary (256 bytes).
inline constexpr int64_t kTensorAlignment = 64;

// The largest power of two (at most kTensorAlignment) that divides `bytes`: the alignment of a
// tensor's base pointer plus an offset of `bytes`.
int64_t OffsetAlignment(int64_t bytes);

bool IsHalfType(DataType t);  // FP16 or BF16

// For a dtype combination a kernel does not take: Unimplemented when the step has FP16/BF16
// tensors (the backend then runs it widened to FP32), else InvalidArgument(message), as the
// CPU kernel would refuse it.
Status DtypeRefusal(const KernelArgs& args, const std::string& message);

// The optional "activation" attribute the compiler sets when it fuses an activation into a
// MatMul, Gemm or Conv step (passes/fuse_epilogues.cc): absent or "" (none), "Relu", "Gelu" (the
// erf form) or "GeluTanh" (the tanh approximation); Conv takes Relu only.
enum class Activation : int { kNone = 0, kRelu = 1, kGelu = 2, kGeluTanh = 3 };
// allow_gelu false: only Relu is accepted. Other values are an InvalidArgument naming the step.
Status ReadActivation(const KernelArgs& args, bool allow_gelu, Activation* out);

// One (strided-batched) matrix product in row-major terms:
//   Y[b][m][n] = act(alpha * sum_k A[b][m][k] * B[b][k][n] + beta * Y[b][m][n] + bias[n])
// with element strides inside each matrix and between batches (0: the operand is shared).
struct MatmulShape {
  int64_t M = 1, N = 1, K = 1;
  int64_t a_m = 0, a_k = 0, b_k = 0, b_n = 0, y_m = 0, y_n = 0;
  int64_t batch = 1, a_batch = 0, b_batch = 0, y_batch = 0;
};

// Element offsets of A, B and Y for one cuBLASLt call of a product.
struct LtCall {
  int64_t a = 0, b = 0, y = 0;
};

// One batch axis of a product: its size and the element stride of A, B and Y along it.
struct BatchAxis {
  int64_t size = 1, a = 0, b = 0, y = 0;
};

// Maps batch axes onto cuBLASLt: adjacent axes merge where one stride covers both, the largest
// remaining axis becomes the strided batch of `shape`, and the others become `calls` (one per
// combination of their indices). False when that takes more than `max_calls` calls.
bool PlanBatch(const std::vector<BatchAxis>& axes, size_t max_calls, MatmulShape* shape, std::vector<LtCall>* calls);

struct LtProblem {
  MatmulShape shape;
  std::vector<LtCall> calls{LtCall{}};  // one cuBLASLt call per entry, the same shape each
  DataType operands = DataType::kF32;  // A and B
  DataType output = DataType::kF32;    // Y (and the bias vector)
  double alpha = 1, beta = 0;          // beta != 0 reads Y as C (the caller fills it)
  bool bias = false;                   // bias epilogue: N values of the output dtype
  Activation activation = Activation::kNone;  // kRelu and kGeluTanh only (cuBLASLt epilogues)
};

// A cuBLASLt matmul planned once: descriptors and the heuristic's algorithm are chosen at Init
// (no device data needed) and reused by every Run. FP32 operands compute in exact FP32
// (CUBLAS_COMPUTE_32F, no TF32); FP16/BF16 operands in FP32; f64 in f64.
class LtMatmul {
 public:
  LtMatmul() = default;
  LtMatmul(const LtMatmul&) = delete;
  LtMatmul& operator=(const LtMatmul&) = delete;
  ~LtMatmul();

  // Unimplemented when cuBLASLt cannot take the problem (dtype pair, strides it cannot express,
  // no algorithm): the caller then runs its own kernel. Other errors are library failures.
  Status Init(const KernelArgs& args, CudaContext& ctx, const LtProblem& p);
  size_t WorkspaceBytes() const { return workspace_; }
  // Enqueues Y = ... on ctx.stream, one cuBLASLt call per LtCall. `bias` is used when the
  // problem has the bias epilogue. Every pointer is a tensor's start (kTensorAlignment).
  Status Run(const KernelArgs& args, CudaContext& ctx, const void* a, const void* b, void* y, const void* bias) const;

 private:
  void Release();

  cublasLtMatmulDesc_t op_ = nullptr;
  cublasLtMatrixLayout_t first_ = nullptr, second_ = nullptr, out_ = nullptr;
  cublasLtMatmulAlgo_t algo_{};
  bool swapped_ = false;  // the first cuBLASLt operand is B (column-major view of Y^T = B^T A^T)
  bool f64_ = false, bias_ = false;
  std::vector<LtCall> calls_;
  size_t operand_size_ = 4, output_size_ = 4;
  float alpha_f_ = 1, beta_f_ = 0;
  double alpha_d_ = 1, beta_d_ = 0;
  size_t workspace_ = 0;
};

// The geometry of one cuDNN convolution, as the forward convolution sees it: `in` [N, C, s...]
// convolved with `filter` [K, C / group, k...] gives `out` [N, K, o...] (2 or 3 spatial dims;
// 1-D convolutions come as 2-D with a leading size-1 dim). Symmetric pads only.
struct ConvShape {
  std::vector<int64_t> in, filter, out;
  std::vector<int64_t> pads, strides, dilations;  // one per spatial dim
  int64_t group = 1;
  // Channels-last data (in/out NHWC, filter [K, R, S, C]); the dims above stay in NCHW order,
  // as cuDNN's descriptors take them. 2-D convolutions only.
  bool nhwc = false;
};

// A cuDNN convolution (legacy API) planned once: descriptors and the heuristic's algorithm are
// chosen at Init, no device data needed. kForward computes out = conv(in, filter) (Conv);
// kBackwardData computes in = conv^T(out, filter) (ConvTranspose, whose input is `out`);
// kBackwardFilter computes filter = the gradient of the forward convolution's filter from in and
// out (ConvFilterGrad: Run's `src` is in, its `filter` argument out, `dst` the filter). FP32
// runs with FMA math (no TF32), FP16/BF16 with tensor cores and FP32 compute, f64 in f64.
class CudnnConv {
 public:
  enum class Direction { kForward, kBackwardData, kBackwardFilter };
  CudnnConv() = default;
  CudnnConv(const CudnnConv&) = delete;
  CudnnConv& operator=(const CudnnConv&) = delete;
  ~CudnnConv();

  // Unimplemented when cuDNN cannot take the convolution (geometry, dtype, 32-bit sizes, no
  // algorithm within the workspace limit): the caller then runs its own kernel.
  Status Init(const KernelArgs& args, CudaContext& ctx, Direction direction, DataType dtype, const ConvShape& shape);
  size_t WorkspaceBytes() const { return workspace_; }
  // Enqueues the convolution; `accumulate` adds the result to what the destination holds
  // (beta = 1), in the compute type, before the one rounding to the destination's dtype.
  Status Run(const KernelArgs& args, CudaContext& ctx, const void* src, const void* filter, void* dst, bool accumulate) const;

 private:
  Direction direction_ = Direction::kForward;
  cudnnTensorDescriptor_t in_ = nullptr, out_ = nullptr;
  cudnnFilterDescriptor_t filter_ = nullptr;
  cudnnConvolutionDescriptor_t conv_ = nullptr;
  cudnnConvolutionFwdAlgo_t fwd_algo_ = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;
  cudnnConvolutionBwdDataAlgo_t bwd_algo_ = CUDNN_CONVOLUTION_BWD_DATA_ALGO_0;
  cudnnConvolutionBwdFilterAlgo_t bwf_algo_ = CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1;
  bool f64_ = false;
  size_t workspace_ = 0;
};

// Convolution, bias and Relu as one cuDNN operation graph (backend API): conv_fprop -> add(bias)
// -> relu, FP32 compute, FP32 virtual intermediates, one rounding to Y; the legacy API's
// convolution would need a bias pass before it (beta = 1) and a Relu pass after it. FP16/BF16
// only (FP32 plans keep the legacy path, whose algorithm choice excludes TF32). Planned at Init:
// Unimplemented when cuDNN has no engine for the graph (the caller keeps CudnnConv and the
// separate passes). PRECIS_CUDNN_GRAPH=0 in the environment turns it off, for A/B runs;
// PRECIS_CUDNN_GRAPH=report prints each geometry planned or refused (once) to stderr.
class CudnnFusedConv {
 public:
  CudnnFusedConv() = default;
  CudnnFusedConv(const CudnnFusedConv&) = delete;
  CudnnFusedConv& operator=(const CudnnFusedConv&) = delete;
  ~CudnnFusedConv() = default;

  // `bias`: Y gets B[k] added (B is [K]); `relu`: then max(v, 0). At least one of them.
  // Plans are shared by the steps of one cuDNN handle with the same geometry (building one
  // may compile kernels), and refusals are remembered.
  Status Init(const KernelArgs& args, CudaContext& ctx, DataType dtype, const ConvShape& shape, bool bias, bool relu);
  size_t WorkspaceBytes() const;
  // Enqueues the graph on the handle's stream; `bias` may be null when Init had bias = false.
  Status Run(const KernelArgs& args, CudaContext& ctx, const void* x, const void* filter, const void* bias, void* y) const;

  struct Graph;  // the descriptors of one planned graph (nn_cudnn_graph.cc)

 private:
  std::shared_ptr<const Graph> graph_;
  bool bias_ = false;
};

}  // namespace precis::rt::cuda
