// CudnnConv (nn_common.h): cuDNN's legacy convolution API planned at load. The heuristics
// (cudnnGet*Algorithm_v7) rank the algorithms without touching device data; the first one that
// succeeds, keeps FP32 in FMA math (TF32 would break FP32 plans' 1e-5 agreement with the CPU)
// and fits the workspace limit is kept. Anything cuDNN refuses while planning is reported as
// Unimplemented so that the caller's direct kernel runs the step instead.
#include <climits>
#include <vector>

#include "runtime/cuda/kernels/nn_common.h"

namespace precis::rt::cuda {
namespace {

// The largest workspace one convolution may ask for (the backend allocates the largest once).
constexpr size_t kMaxConvWorkspace = size_t(256) << 20;

bool CudnnType(DataType t, cudnnDataType_t* data, cudnnDataType_t* compute, cudnnMathType_t* math) {
  switch (t) {
    case DataType::kF32: *data = CUDNN_DATA_FLOAT, *compute = CUDNN_DATA_FLOAT, *math = CUDNN_FMA_MATH; return true;
    case DataType::kF16: *data = CUDNN_DATA_HALF, *compute = CUDNN_DATA_FLOAT, *math = CUDNN_TENSOR_OP_MATH; return true;
    case DataType::kBF16: *data = CUDNN_DATA_BFLOAT16, *compute = CUDNN_DATA_FLOAT, *math = CUDNN_TENSOR_OP_MATH; return true;
    case DataType::kF64: *data = CUDNN_DATA_DOUBLE, *compute = CUDNN_DATA_DOUBLE, *math = CUDNN_DEFAULT_MATH; return true;
    default: return false;
  }
}

bool ToInts(const std::vector<int64_t>& v, std::vector<int>* out) {
  out->clear();
  int64_t n = 1;
  for (int64_t x : v) {
    if (x < 0 || x > INT_MAX) return false;
    n *= x;
    if (n > INT_MAX) return false;
    out->push_back(int(x));
  }
  return true;
}

// A cuDNN failure while planning: cuDNN does not take this convolution.
Status Refused(const KernelArgs& args, const char* call, cudnnStatus_t s) {
  return Unimplemented(args.node + ": cuDNN refuses the convolution (" + call + ": " + cudnnGetErrorString(s) + ")");
}

// Picks the first algorithm of the heuristic's ranking that works with an acceptable math type,
// is deterministic (backward-data ALGO_0 accumulates with atomics: results would vary from run to
// run) and fits the workspace limit; sets that math type on `conv`. FP32 takes FMA-math entries
// first, then any entry forced to FMA math (never TF32). `workspace(algo, &bytes)` asks cuDNN.
template <typename Perf, typename Algo, typename Workspace>
bool ChooseAlgorithm(const std::vector<Perf>& perf, int found, DataType dtype, cudnnConvolutionDescriptor_t conv, Workspace workspace,
                     Algo* algo, size_t* bytes) {
  bool fp32 = dtype == DataType::kF32;
  for (int pass = 0; pass < (fp32 ? 2 : 1); ++pass)
    for (int i = 0; i < found && i < int(perf.size()); ++i) {
      const Perf& p = perf[size_t(i)];
      if (p.status != CUDNN_STATUS_SUCCESS || p.determinism != CUDNN_DETERMINISTIC || (fp32 && pass == 0 && p.mathType != CUDNN_FMA_MATH))
        continue;
      cudnnMathType_t math = fp32 ? CUDNN_FMA_MATH : p.mathType;
      size_t b = 0;
      if (cudnnSetConvolutionMathType(conv, math) != CUDNN_STATUS_SUCCESS || workspace(p.algo, &b) != CUDNN_STATUS_SUCCESS ||
          b > kMaxConvWorkspace)
        continue;
      *algo = p.algo;
      *bytes = b;
      return true;
    }
  return false;
}

#define PRECIS_CUDNN_PLAN(args, call)                                   \
  do {                                                                  \
    cudnnStatus_t precis_s_ = (call);                                   \
    if (precis_s_ != CUDNN_STATUS_SUCCESS) return Refused(args, #call, precis_s_); \
  } while (0)

}  // namespace

CudnnConv::~CudnnConv() {
  if (in_) cudnnDestroyTensorDescriptor(in_);
  if (out_) cudnnDestroyTensorDescriptor(out_);
  if (filter_) cudnnDestroyFilterDescriptor(filter_);
  if (conv_) cudnnDestroyConvolutionDescriptor(conv_);
}

Status CudnnConv::Init(const KernelArgs& args, CudaContext& ctx, Direction direction, DataType dtype, const ConvShape& shape) {
  direction_ = direction;
  cudnnDataType_t data, compute;
  cudnnMathType_t math;
  if (!CudnnType(dtype, &data, &compute, &math)) return Unimplemented(args.node + ": no cuDNN convolution for this dtype");
  f64_ = dtype == DataType::kF64;
  std::vector<int> in, filter, out, pads, strides, dilations;
  if (!ToInts(shape.in, &in) || !ToInts(shape.filter, &filter) || !ToInts(shape.out, &out) || !ToInts(shape.pads, &pads) ||
      !ToInts(shape.strides, &strides) || !ToInts(shape.dilations, &dilations) || shape.group > INT_MAX)
    return Unimplemented(args.node + ": the convolution is too large for cuDNN's 32-bit sizes");
  int rank = int(in.size()), spatial = rank - 2;
  if (rank < 4 || rank > 5 || int(out.size()) != rank || int(filter.size()) != rank || int(pads.size()) != spatial)
    return Unimplemented(args.node + ": cuDNN convolutions take 2 or 3 spatial dims");
  auto dense = [](const std::vector<int>& dims) {
    std::vector<int> s(dims.size(), 1);
    for (size_t i = dims.size(); i-- > 1;) s[i - 1] = s[i] * dims[i];
    return s;
  };

  PRECIS_CUDA_CHECK(args, cudnnCreateTensorDescriptor(&in_));
  PRECIS_CUDA_CHECK(args, cudnnCreateTensorDescriptor(&out_));
  PRECIS_CUDA_CHECK(args, cudnnCreateFilterDescriptor(&filter_));
  PRECIS_CUDA_CHECK(args, cudnnCreateConvolutionDescriptor(&conv_));
  if (shape.nhwc) {
    if (rank != 4) return Unimplemented(args.node + ": NHWC convolutions are 2-D");
    PRECIS_CUDNN_PLAN(args, cudnnSetTensor4dDescriptor(in_, CUDNN_TENSOR_NHWC, data, in[0], in[1], in[2], in[3]));
    PRECIS_CUDNN_PLAN(args, cudnnSetTensor4dDescriptor(out_, CUDNN_TENSOR_NHWC, data, out[0], out[1], out[2], out[3]));
    PRECIS_CUDNN_PLAN(args, cudnnSetFilter4dDescriptor(filter_, data, CUDNN_TENSOR_NHWC, filter[0], filter[1], filter[2], filter[3]));
  } else {
    PRECIS_CUDNN_PLAN(args, cudnnSetTensorNdDescriptor(in_, data, rank, in.data(), dense(in).data()));
    PRECIS_CUDNN_PLAN(args, cudnnSetTensorNdDescriptor(out_, data, rank, out.data(), dense(out).data()));
    PRECIS_CUDNN_PLAN(args, cudnnSetFilterNdDescriptor(filter_, data, CUDNN_TENSOR_NCHW, rank, filter.data()));
  }
  PRECIS_CUDNN_PLAN(args, cudnnSetConvolutionNdDescriptor(conv_, spatial, pads.data(), strides.data(), dilations.data(),
                                                          CUDNN_CROSS_CORRELATION, compute));
  PRECIS_CUDNN_PLAN(args, cudnnSetConvolutionGroupCount(conv_, int(shape.group)));
  PRECIS_CUDNN_PLAN(args, cudnnSetConvolutionMathType(conv_, math));
  // cuDNN's output size for this geometry must be the planned one.
  std::vector<int> expect(size_t(rank), 0);
  PRECIS_CUDNN_PLAN(args, cudnnGetConvolutionNdForwardOutputDim(conv_, in_, filter_, rank, expect.data()));
  if (expect != out) return Unimplemented(args.node + ": cuDNN's output shape differs from the planned one");

  int max = 0, found = 0;
  bool chosen = false;
  if (direction == Direction::kForward) {
    PRECIS_CUDNN_PLAN(args, cudnnGetConvolutionForwardAlgorithmMaxCount(ctx.dnn, &max));
    std::vector<cudnnConvolutionFwdAlgoPerf_t> perf(size_t(max > 0 ? max : 1));
    PRECIS_CUDNN_PLAN(args, cudnnGetConvolutionForwardAlgorithm_v7(ctx.dnn, in_, filter_, conv_, out_, int(perf.size()), &found, perf.data()));
    chosen = ChooseAlgorithm(
        perf, found, dtype, conv_,
        [&](cudnnConvolutionFwdAlgo_t a, size_t* b) { return cudnnGetConvolutionForwardWorkspaceSize(ctx.dnn, in_, filter_, conv_, out_, a, b); },
        &fwd_algo_, &workspace_);
  } else if (direction == Direction::kBackwardFilter) {
    PRECIS_CUDNN_PLAN(args, cudnnGetConvolutionBackwardFilterAlgorithmMaxCount(ctx.dnn, &max));
    std::vector<cudnnConvolutionBwdFilterAlgoPerf_t> perf(size_t(max > 0 ? max : 1));
    PRECIS_CUDNN_PLAN(args,
                      cudnnGetConvolutionBackwardFilterAlgorithm_v7(ctx.dnn, in_, out_, conv_, filter_, int(perf.size()), &found, perf.data()));
    chosen = ChooseAlgorithm(
        perf, found, dtype, conv_,
        [&](cudnnConvolutionBwdFilterAlgo_t a, size_t* b) {
          return cudnnGetConvolutionBackwardFilterWorkspaceSize(ctx.dnn, in_, out_, conv_, filter_, a, b);
        },
        &bwf_algo_, &workspace_);
  } else {
    PRECIS_CUDNN_PLAN(args, cudnnGetConvolutionBackwardDataAlgorithmMaxCount(ctx.dnn, &max));
    std::vector<cudnnConvolutionBwdDataAlgoPerf_t> perf(size_t(max > 0 ? max : 1));
    PRECIS_CUDNN_PLAN(args,
                      cudnnGetConvolutionBackwardDataAlgorithm_v7(ctx.dnn, filter_, out_, conv_, in_, int(perf.size()), &found, perf.data()));
    chosen = ChooseAlgorithm(
        perf, found, dtype, conv_,
        [&](cudnnConvolutionBwdDataAlgo_t a, size_t* b) {
          return cudnnGetConvolutionBackwardDataWorkspaceSize(ctx.dnn, filter_, out_, conv_, in_, a, b);
        },
        &bwd_algo_, &workspace_);
  }
  if (chosen) return Status::Ok();
  return Unimplemented(args.node + ": cuDNN offers no usable algorithm for this convolution");
}

Status CudnnConv::Run(const KernelArgs& args, CudaContext& ctx, const void* src, const void* filter, void* dst, bool accumulate) const {
  const float one_f = 1, beta_f = accumulate ? 1 : 0;
  const double one_d = 1, beta_d = accumulate ? 1 : 0;
  const void* alpha = f64_ ? static_cast<const void*>(&one_d) : static_cast<const void*>(&one_f);
  const void* beta = f64_ ? static_cast<const void*>(&beta_d) : static_cast<const void*>(&beta_f);
  void* ws = workspace_ ? ctx.workspace : nullptr;
  if (direction_ == Direction::kForward)
    PRECIS_CUDA_CHECK(args, cudnnConvolutionForward(ctx.dnn, alpha, in_, src, filter_, filter, conv_, fwd_algo_, ws, workspace_, beta, out_, dst));
  else if (direction_ == Direction::kBackwardFilter)
    PRECIS_CUDA_CHECK(args,
                      cudnnConvolutionBackwardFilter(ctx.dnn, alpha, in_, src, out_, filter, conv_, bwf_algo_, ws, workspace_, beta, filter_, dst));
  else
    PRECIS_CUDA_CHECK(args,
                      cudnnConvolutionBackwardData(ctx.dnn, alpha, filter_, filter, out_, src, conv_, bwd_algo_, ws, workspace_, beta, in_, dst));
  return Status::Ok();
}

}  // namespace precis::rt::cuda
