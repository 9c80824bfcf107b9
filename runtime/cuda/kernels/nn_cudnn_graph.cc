// CudnnFusedConv (nn_common.h): Y = relu(conv(X, W) + B) as one cuDNN backend-API graph.
// Tensors (unique ids): X 1, W 2, B 3, Y 4, and the FP32 virtual intermediates conv 5, add 6.
// Dims are given in NCHW order, as the backend API takes them; the layout is in the strides
// (NHWC: X/Y strides [HWC, 1, WC, C], W [RSC, 1, SC, C]). Every call made while planning that
// cuDNN refuses means "no fused graph here" (Unimplemented): the caller keeps the legacy path.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>

#include "runtime/cuda/kernels/nn_common.h"

namespace precis::rt::cuda {
namespace {

constexpr int64_t kX = 1, kW = 2, kB = 3, kY = 4, kConv = 5, kAdd = 6;
// Same limit as the legacy path's algorithms (nn_cudnn.cc).
constexpr int64_t kMaxGraphWorkspace = int64_t(256) << 20;

Status Refused(const KernelArgs& args, const char* call, cudnnStatus_t s) {
  return Unimplemented(args.node + ": cuDNN has no fused convolution graph (" + call + ": " + cudnnGetErrorString(s) + ")");
}

#define PRECIS_GRAPH_PLAN(args, call)                                                \
  do {                                                                               \
    cudnnStatus_t precis_s_ = (call);                                                \
    if (precis_s_ != CUDNN_STATUS_SUCCESS) return Refused(args, #call, precis_s_);   \
  } while (0)

std::vector<int64_t> Dense(const std::vector<int64_t>& dims) {
  std::vector<int64_t> s(dims.size(), 1);
  for (size_t i = dims.size(); i-- > 1;) s[i - 1] = s[i] * dims[i];
  return s;
}

// Channels-last strides of an NCHW-ordered 4-D shape.
std::vector<int64_t> ChannelsLast(const std::vector<int64_t>& d) { return {d[1] * d[2] * d[3], 1, d[3] * d[1], d[1]}; }

}  // namespace

struct CudnnFusedConv::Graph {
  Graph() = default;
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;
  ~Graph() {
    for (size_t i = owned.size(); i-- > 0;) cudnnBackendDestroyDescriptor(owned[i]);
  }
  std::vector<cudnnBackendDescriptor_t> owned;  // every descriptor made while planning, destroyed in reverse
  cudnnBackendDescriptor_t plan = nullptr;
  size_t workspace = 0;
};

namespace {

Status Build(const KernelArgs& args, CudaContext& ctx, DataType dtype, const ConvShape& shape, bool bias, bool relu,
             CudnnFusedConv::Graph* g);

// Whether an engine configuration's numerics fit the plan: FP32 accumulation, as the compute
// type asks and the precision policy promises (no reduced-precision reduction, no down-converted
// inputs), and run-to-run identical results (no nondeterministic engines: cuda_plan_check compares
// with the deterministic CPU reference). An engine whose notes cannot be read is taken.
bool AcceptableNumerics(cudnnBackendDescriptor_t config) {
  cudnnBackendDescriptor_t engine = nullptr;
  if (cudnnBackendCreateDescriptor(CUDNN_BACKEND_ENGINE_DESCRIPTOR, &engine) != CUDNN_STATUS_SUCCESS) return true;
  cudnnBackendNumericalNote_t notes[CUDNN_NUMERICAL_NOTE_TYPE_COUNT];
  int64_t n = 0;
  bool ok = true;
  if (cudnnBackendGetAttribute(config, CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &n, &engine) == CUDNN_STATUS_SUCCESS &&
      cudnnBackendGetAttribute(engine, CUDNN_ATTR_ENGINE_NUMERICAL_NOTE, CUDNN_TYPE_NUMERICAL_NOTE, CUDNN_NUMERICAL_NOTE_TYPE_COUNT, &n,
                               notes) == CUDNN_STATUS_SUCCESS)
    for (int64_t i = 0; i < n && i < int64_t(CUDNN_NUMERICAL_NOTE_TYPE_COUNT); ++i)
      if (notes[i] == CUDNN_NUMERICAL_NOTE_REDUCED_PRECISION_REDUCTION || notes[i] == CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS ||
          notes[i] == CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC)
        ok = false;
  cudnnBackendDestroyDescriptor(engine);
  return ok;
}

std::string Key(const CudaContext& ctx, DataType dtype, const ConvShape& s, bool bias, bool relu) {
  std::string k = std::to_string(reinterpret_cast<uintptr_t>(ctx.dnn)) + "/" + DataTypeName(dtype) + (s.nhwc ? "/nhwc" : "/nchw") +
                  (bias ? "/bias" : "") + (relu ? "/relu" : "") + "/g" + std::to_string(s.group);
  for (const auto* v : {&s.in, &s.filter, &s.out, &s.pads, &s.strides, &s.dilations}) {
    k += "/";
    for (int64_t x : *v) k += std::to_string(x) + ",";
  }
  return k;
}

}  // namespace

size_t CudnnFusedConv::WorkspaceBytes() const { return graph_ ? graph_->workspace : 0; }

Status CudnnFusedConv::Init(const KernelArgs& args, CudaContext& ctx, DataType dtype, const ConvShape& shape, bool bias, bool relu) {
  graph_.reset();
  bias_ = bias;
  const char* env = std::getenv("PRECIS_CUDNN_GRAPH");
  if (env && std::strcmp(env, "0") == 0) return Unimplemented(args.node + ": PRECIS_CUDNN_GRAPH=0");
  if (!IsHalfType(dtype)) return Unimplemented(args.node + ": fused convolution graphs are for FP16/BF16 steps");
  if (!bias && !relu) return Unimplemented(args.node + ": nothing to fuse");
  size_t rank = shape.in.size();
  if (rank < 4 || rank > 5 || (shape.nhwc && rank != 4)) return Unimplemented(args.node + ": unsupported geometry");

  static std::mutex mutex;
  static std::map<std::string, std::weak_ptr<const Graph>> planned;
  static std::map<std::string, std::string> refused;  // key -> why
  std::lock_guard<std::mutex> lock(mutex);
  std::string key = Key(ctx, dtype, shape, bias, relu);
  if (auto r = refused.find(key); r != refused.end()) return Unimplemented(args.node + ": " + r->second);
  if (auto p = planned.find(key); p != planned.end())
    if ((graph_ = p->second.lock())) return Status::Ok();
  auto g = std::make_shared<Graph>();
  Status s = Build(args, ctx, dtype, shape, bias, relu, g.get());
  // PRECIS_CUDNN_GRAPH=report: one line per geometry planned or refused (gpu_check.sh counts
  // them, so that a graph cuDNN never accepts shows up rather than running the legacy path).
  if (env && std::strcmp(env, "report") == 0)
    std::fprintf(stderr, "precis: cuDNN fused convolution graph %s: %s%s\n", s.ok() ? "planned" : "refused", key.c_str(),
                 s.ok() ? "" : (" (" + s.message() + ")").c_str());
  if (!s.ok()) {
    if (s.code() == StatusCode::kUnimplemented) refused[key] = s.message();
    return s;
  }
  planned[key] = g;
  graph_ = g;
  return Status::Ok();
}

namespace {

Status Build(const KernelArgs& args, CudaContext& ctx, DataType dtype, const ConvShape& shape, bool bias, bool relu,
             CudnnFusedConv::Graph* g) {
  size_t rank = shape.in.size(), spatial = rank - 2;

  cudnnDataType_t data = dtype == DataType::kF16 ? CUDNN_DATA_HALF : CUDNN_DATA_BFLOAT16, fp32 = CUDNN_DATA_FLOAT;
  auto make = [&](cudnnBackendDescriptorType_t type, cudnnBackendDescriptor_t* d) {
    cudnnStatus_t s = cudnnBackendCreateDescriptor(type, d);
    if (s == CUDNN_STATUS_SUCCESS) g->owned.push_back(*d);
    return s;
  };
  auto tensor = [&](int64_t uid, cudnnDataType_t t, const std::vector<int64_t>& dims, const std::vector<int64_t>& strides, bool virt,
                    cudnnBackendDescriptor_t* d) {
    int64_t alignment = kTensorAlignment;
    bool is_virtual = virt;
    cudnnStatus_t s;
    if ((s = make(CUDNN_BACKEND_TENSOR_DESCRIPTOR, d)) != CUDNN_STATUS_SUCCESS ||
        (s = cudnnBackendSetAttribute(*d, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &t)) != CUDNN_STATUS_SUCCESS ||
        (s = cudnnBackendSetAttribute(*d, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, int64_t(dims.size()), dims.data())) != CUDNN_STATUS_SUCCESS ||
        (s = cudnnBackendSetAttribute(*d, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, int64_t(strides.size()), strides.data())) != CUDNN_STATUS_SUCCESS ||
        (s = cudnnBackendSetAttribute(*d, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid)) != CUDNN_STATUS_SUCCESS ||
        (s = cudnnBackendSetAttribute(*d, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &alignment)) != CUDNN_STATUS_SUCCESS ||
        (s = cudnnBackendSetAttribute(*d, CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, 1, &is_virtual)) != CUDNN_STATUS_SUCCESS)
      return s;
    return cudnnBackendFinalize(*d);
  };

  // Tensors.
  std::vector<int64_t> bias_dims(rank, 1);
  bias_dims[1] = shape.out[1];
  const std::vector<int64_t> x_strides = shape.nhwc ? ChannelsLast(shape.in) : Dense(shape.in);
  const std::vector<int64_t> w_strides = shape.nhwc ? ChannelsLast(shape.filter) : Dense(shape.filter);
  const std::vector<int64_t> y_strides = shape.nhwc ? ChannelsLast(shape.out) : Dense(shape.out);
  cudnnBackendDescriptor_t x, w, b = nullptr, y, conv_out, add_out = nullptr;
  bool last_is_add = !relu;
  PRECIS_GRAPH_PLAN(args, tensor(kX, data, shape.in, x_strides, false, &x));
  PRECIS_GRAPH_PLAN(args, tensor(kW, data, shape.filter, w_strides, false, &w));
  PRECIS_GRAPH_PLAN(args, tensor(kY, data, shape.out, y_strides, false, &y));
  PRECIS_GRAPH_PLAN(args, tensor(kConv, fp32, shape.out, y_strides, true, &conv_out));
  if (bias) {
    // Channels-last strides for NHWC graphs, size-1 dims included ([C, 1, C, C], as
    // cudnn-frontend's conv-bias samples): cuDNN reads a tensor's layout from all its strides.
    PRECIS_GRAPH_PLAN(args, tensor(kB, data, bias_dims, shape.nhwc ? ChannelsLast(bias_dims) : Dense(bias_dims), false, &b));
    if (!last_is_add) PRECIS_GRAPH_PLAN(args, tensor(kAdd, fp32, shape.out, y_strides, true, &add_out));
  }

  // The convolution: cross-correlation, FP32 compute, symmetric pads (the caller pads the rest).
  cudnnBackendDescriptor_t conv;
  {
    int64_t dims = int64_t(spatial);
    cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
    PRECIS_GRAPH_PLAN(args, make(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR, &conv));
    PRECIS_GRAPH_PLAN(args, cudnnBackendSetAttribute(conv, CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &fp32));
    PRECIS_GRAPH_PLAN(args, cudnnBackendSetAttribute(conv, CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, 1, &mode));
    PRECIS_GRAPH_PLAN(args, cudnnBackendSetAttribute(conv, CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_TYPE_INT64, 1, &dims));
    PRECIS_GRAPH_PLAN(args, cudnnBackendSetAttribute(conv, CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_TYPE_INT64, dims, shape.dilations.data()));
    PRECIS_GRAPH_PLAN(args, cudnnBackendSetAttribute(conv, CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, CUDNN_TYPE_INT64, dims, shape.strides.data()));
    PRECIS_GRAPH_PLAN(args, cudnnBackendSetAttribute(conv, CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_TYPE_INT64, dims, shape.pads.data()));
    PRECIS_GRAPH_PLAN(args, cudnnBackendSetAttribute(conv, CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, CUDNN_TYPE_INT64, dims, shape.pads.data()));
    PRECIS_GRAPH_PLAN(args, cudnnBackendFinalize(conv));
  }
  std::vector<cudnnBackendDescriptor_t> ops;
  {
    cudnnBackendDescriptor_t op;
    float alpha = 1, beta = 0;
    cudnnBackendDescriptor_t out = bias || relu ? conv_out : y;
    PRECIS_GRAPH_PLAN(args, make(CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR, &op));
    PRECIS_GRAPH_PLAN(args, cudnnBackendSetAttribute(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &x));
    PRECIS_GRAPH_PLAN(args, cudnnBackendSetAttribute(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &w));
    PRECIS_GRAPH_PLAN(args, cudnnBackendSetAttribute(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &out));
    PRECIS_GRAPH_PLAN(args, cudnnBackendSetAttribute(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &conv));
    PRECIS_GRAPH_PLAN(args, cudnnBackendSetAttribute(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA, CUDNN_TYPE_FLOAT, 1, &alpha));
    PRECIS_GRAPH_PLAN(args, cudnnBackendSetAttribute(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA, CUDNN_TYPE_FLOAT, 1, &beta));
    PRECIS_GRAPH_PLAN(args, cudnnBackendFinalize(op));
    ops.push_back(op);
  }
  // Pointwise steps: in -> out (with `second` as the binary operand when given).
  auto pointwise = [&](cudnnPointwiseMode_t mode, cudnnBackendDescriptor_t in, cudnnBackendDescriptor_t second,
                       cudnnBackendDescriptor_t out) -> Status {
    cudnnBackendDescriptor_t pw, op;
    PRECIS_GRAPH_PLAN(args, make(CUDNN_BACKEND_POINTWISE_DESCRIPTOR, &pw));
    PRECIS_GRAPH_PLAN(args, cudnnBackendSetAttribute(pw, CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, 1, &mode));
    PRECIS_GRAPH_PLAN(args, cudnnBackendSetAttribute(pw, CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE, 1, &fp32));
    PRECIS_GRAPH_PLAN(args, cudnnBackendFinalize(pw));
    PRECIS_GRAPH_PLAN(args, make(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR, &op));
    PRECIS_GRAPH_PLAN(args, cudnnBackendSetAttribute(op, CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &pw));
    PRECIS_GRAPH_PLAN(args, cudnnBackendSetAttribute(op, CUDNN_ATTR_OPERATION_POINTWISE_XDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &in));
    if (second)
      PRECIS_GRAPH_PLAN(args, cudnnBackendSetAttribute(op, CUDNN_ATTR_OPERATION_POINTWISE_BDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &second));
    PRECIS_GRAPH_PLAN(args, cudnnBackendSetAttribute(op, CUDNN_ATTR_OPERATION_POINTWISE_YDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &out));
    PRECIS_GRAPH_PLAN(args, cudnnBackendFinalize(op));
    ops.push_back(op);
    return Status::Ok();
  };
  if (bias) PRECIS_RETURN_IF_ERROR(pointwise(CUDNN_POINTWISE_ADD, conv_out, b, relu ? add_out : y));
  if (relu) PRECIS_RETURN_IF_ERROR(pointwise(CUDNN_POINTWISE_RELU_FWD, bias ? add_out : conv_out, nullptr, y));

  // The operation graph, the heuristic's engine configurations, and the first one with acceptable
  // numerics that cuDNN builds an execution plan for within the workspace limit.
  cudnnBackendDescriptor_t graph, heur;
  PRECIS_GRAPH_PLAN(args, make(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, &graph));
  PRECIS_GRAPH_PLAN(args, cudnnBackendSetAttribute(graph, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, int64_t(ops.size()), ops.data()));
  PRECIS_GRAPH_PLAN(args, cudnnBackendSetAttribute(graph, CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &ctx.dnn));
  PRECIS_GRAPH_PLAN(args, cudnnBackendFinalize(graph));
  PRECIS_GRAPH_PLAN(args, make(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR, &heur));
  cudnnBackendHeurMode_t heur_mode = CUDNN_HEUR_MODE_A;
  PRECIS_GRAPH_PLAN(args, cudnnBackendSetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &graph));
  PRECIS_GRAPH_PLAN(args, cudnnBackendSetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &heur_mode));
  PRECIS_GRAPH_PLAN(args, cudnnBackendFinalize(heur));
  int64_t count = 0;
  PRECIS_GRAPH_PLAN(args, cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &count, nullptr));
  if (count <= 0) return Unimplemented(args.node + ": cuDNN's heuristic offers no engine for the fused convolution graph");
  std::vector<cudnnBackendDescriptor_t> configs(size_t(count), nullptr);
  for (auto& c : configs) PRECIS_GRAPH_PLAN(args, make(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, &c));
  int64_t got = 0;
  PRECIS_GRAPH_PLAN(args, cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, count, &got, configs.data()));
  for (int64_t i = 0; i < got && i < count; ++i) {
    if (!AcceptableNumerics(configs[size_t(i)])) continue;
    cudnnBackendDescriptor_t plan = nullptr;
    if (cudnnBackendCreateDescriptor(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, &plan) != CUDNN_STATUS_SUCCESS) continue;
    int64_t bytes = -1, elements = 0;
    bool ok = cudnnBackendSetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &ctx.dnn) == CUDNN_STATUS_SUCCESS &&
              cudnnBackendSetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
                                       &configs[size_t(i)]) == CUDNN_STATUS_SUCCESS &&
              cudnnBackendFinalize(plan) == CUDNN_STATUS_SUCCESS &&
              cudnnBackendGetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64, 1, &elements, &bytes) == CUDNN_STATUS_SUCCESS &&
              bytes >= 0 && bytes <= kMaxGraphWorkspace;
    if (!ok) {
      cudnnBackendDestroyDescriptor(plan);
      continue;
    }
    g->owned.push_back(plan);
    g->plan = plan;
    g->workspace = size_t(bytes);
    return Status::Ok();
  }
  return Unimplemented(args.node + ": cuDNN builds no execution plan for the fused convolution graph");
}

}  // namespace

Status CudnnFusedConv::Run(const KernelArgs& args, CudaContext& ctx, const void* x, const void* filter, const void* bias, void* y) const {
  if (!graph_) return args.Error("the fused cuDNN convolution was not planned");
  int64_t uids[4] = {kX, kW, kY, kB};
  void* pointers[4] = {const_cast<void*>(x), const_cast<void*>(filter), y, const_cast<void*>(bias)};
  int64_t n = bias_ ? 4 : 3;
  void* ws = graph_->workspace ? ctx.workspace : nullptr;
  cudnnBackendDescriptor_t pack = nullptr;
  PRECIS_CUDA_CHECK(args, cudnnBackendCreateDescriptor(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, &pack));
  auto run = [&]() -> Status {
    PRECIS_CUDA_CHECK(args, cudnnBackendSetAttribute(pack, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, n, uids));
    PRECIS_CUDA_CHECK(args, cudnnBackendSetAttribute(pack, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, n, pointers));
    PRECIS_CUDA_CHECK(args, cudnnBackendSetAttribute(pack, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &ws));
    PRECIS_CUDA_CHECK(args, cudnnBackendFinalize(pack));
    PRECIS_CUDA_CHECK(args, cudnnBackendExecute(ctx.dnn, graph_->plan, pack));
    return Status::Ok();
  };
  Status s = run();
  cudnnBackendDestroyDescriptor(pack);
  return s;
}

}  // namespace precis::rt::cuda
