// The CUDA backend: device memory, kernel set-up, and Run() with CUDA graph replay.
#include "runtime/cuda/cuda_backend.h"

#include <algorithm>
#include <cstring>

#include "runtime/cuda/cuda_kernel.h"
#include "runtime/cuda/widen_kernel.h"

namespace precis::rt {
namespace {

using cuda::CudaError;

// Device or pinned memory released with the backend.
struct DeviceFree {
  void operator()(void* p) const { cudaFree(p); }
};
struct HostFree {
  void operator()(void* p) const { cudaFreeHost(p); }
};
using DeviceBuffer = std::unique_ptr<void, DeviceFree>;
using PinnedBuffer = std::unique_ptr<void, HostFree>;

StatusOr<DeviceBuffer> DeviceAlloc(size_t bytes, const std::string& what) {
  void* p = nullptr;
  cudaError_t e = cudaMalloc(&p, std::max<size_t>(bytes, 256));
  if (e != cudaSuccess) return CudaError(e, "cudaMalloc " + what + " (" + std::to_string(bytes) + " bytes)");
  return DeviceBuffer(p);
}

StatusOr<PinnedBuffer> PinnedAlloc(size_t bytes, const std::string& what) {
  void* p = nullptr;
  cudaError_t e = cudaMallocHost(&p, std::max<size_t>(bytes, 64));
  if (e != cudaSuccess) return CudaError(e, "cudaMallocHost " + what + " (" + std::to_string(bytes) + " bytes)");
  return PinnedBuffer(p);
}

#define PRECIS_CUDA_OR_RETURN(call, where)                                \
  do {                                                                    \
    cudaError_t precis_e_ = (call);                                       \
    if (precis_e_ != cudaSuccess) return CudaError(precis_e_, (where));   \
  } while (0)

class CudaBackendImpl final : public CudaBackend {
 public:
  ~CudaBackendImpl() override {
    if (device_ >= 0) cudaSetDevice(device_);
    if (graph_exec_) cudaGraphExecDestroy(graph_exec_);
    if (graph_) cudaGraphDestroy(graph_);
    kernels_.clear();
    tables_.clear();
    if (dnn_) cudnnDestroy(dnn_);
    if (lt_) cublasLtDestroy(lt_);
    if (stream_) cudaStreamDestroy(stream_);
  }

  Status Init(const plan::PlanView& view, std::vector<Tensor>& tensors, const std::vector<int>& inputs, const std::vector<int>& outputs,
              const std::vector<KernelArgs>& steps, const std::vector<std::string>& names, const CudaBackendOptions& options);
  Status Run(std::vector<Tensor>& tensors, std::vector<StepProfile>* profile,
             const std::function<void(const TensorData&)>& observer) override;
  std::string device_name() const override { return prop_.name; }
  bool graph_replay() const override { return graph_exec_ != nullptr; }

 private:
  struct Staged {
    int id;
    PinnedBuffer host;
  };
  // Enqueues one whole run (error-flag reset, uploads, steps, downloads) on the stream.
  Status Enqueue(std::vector<StepProfile>* profile, const std::function<void(const TensorData&)>& observer);
  Status CheckErrors();

  int device_ = -1;
  cudaDeviceProp prop_{};
  cudaStream_t stream_ = nullptr;
  cublasLtHandle_t lt_ = nullptr;
  cudnnHandle_t dnn_ = nullptr;
  DeviceBuffer arena_, constants_, workspace_, scratch_, errors_;
  PinnedBuffer host_errors_;
  std::vector<std::shared_ptr<void>> tables_;
  std::vector<Tensor> device_tensors_;
  std::vector<KernelArgs> args_;
  std::vector<std::unique_ptr<cuda::Kernel>> kernels_;
  std::vector<std::string> step_names_;
  std::vector<Staged> inputs_, outputs_;
  cuda::CudaContext ctx_;
  bool capturable_ = true, graphs_ = true, warmed_up_ = false;
  cudaGraph_t graph_ = nullptr;
  cudaGraphExec_t graph_exec_ = nullptr;
  std::vector<uint8_t> observed_;  // host copy of an observed tensor
};

Status CudaBackendImpl::Init(const plan::PlanView& view, std::vector<Tensor>& tensors, const std::vector<int>& inputs,
                             const std::vector<int>& outputs, const std::vector<KernelArgs>& steps, const std::vector<std::string>& names,
                             const CudaBackendOptions& options) {
  int count = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) return Unavailable(std::string("no usable CUDA device: ") + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")");
  if (options.device_id < 0 || options.device_id >= count)
    return InvalidArgument("CUDA device " + std::to_string(options.device_id) + " does not exist (" + std::to_string(count) + " found)");
  device_ = options.device_id;
  PRECIS_CUDA_OR_RETURN(cudaSetDevice(device_), "cudaSetDevice");
  PRECIS_CUDA_OR_RETURN(cudaGetDeviceProperties(&prop_, device_), "cudaGetDeviceProperties");
  PRECIS_CUDA_OR_RETURN(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate");
  cublasStatus_t be = cublasLtCreate(&lt_);
  if (be != CUBLAS_STATUS_SUCCESS) return cuda::CublasError(be, "cublasLtCreate");
  cudnnStatus_t de = cudnnCreate(&dnn_);
  if (de != CUDNN_STATUS_SUCCESS) return cuda::CudnnError(de, "cudnnCreate");
  de = cudnnSetStream(dnn_, stream_);
  if (de != CUDNN_STATUS_SUCCESS) return cuda::CudnnError(de, "cudnnSetStream");
  graphs_ = options.graphs;

  // Every step needs a CUDA kernel; list all that lack one in one error.
  const auto& registry = cuda::KernelRegistry::Get();
  std::string missing;
  for (size_t i = 0; i < steps.size(); ++i)
    if (!registry.Find(names[i])) missing += (missing.empty() ? "" : ", ") + steps[i].node;
  if (!missing.empty()) return Unimplemented("the CUDA backend has no kernel for: " + missing);

  // Device memory: the arena as planned, the constants blob uploaded once.
  PRECIS_ASSIGN_OR_RETURN(arena_, DeviceAlloc(size_t(view.meta->arena_bytes()), "the arena"));
  PRECIS_ASSIGN_OR_RETURN(constants_, DeviceAlloc(view.constants_size, "the constants"));
  if (view.constants_size)
    PRECIS_CUDA_OR_RETURN(cudaMemcpy(constants_.get(), view.constants, view.constants_size, cudaMemcpyHostToDevice), "uploading the constants");
  ctx_.tables = &tables_;
  device_tensors_ = tensors;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const plan::TensorDesc* d = view.meta->tensors()->Get(flatbuffers::uoffset_t(i));
    if (d->placement() == plan::Placement_Constant && d->synthetic()) {
      // A stripped weight (benchmark plans): the session made it on the host; upload it alone.
      PRECIS_ASSIGN_OR_RETURN(void* p, cuda::UploadTable(ctx_, tensors[i].data, tensors[i].bytes, "synthetic weight '" + tensors[i].name + "'"));
      device_tensors_[i].data = static_cast<uint8_t*>(p);
      continue;
    }
    uint8_t* base = static_cast<uint8_t*>(d->placement() == plan::Placement_Constant ? constants_.get() : arena_.get());
    device_tensors_[i].data = base + d->offset();
  }
  // Host side for Init: constants readable, every other tensor without data.
  std::vector<Tensor> host = tensors;
  for (auto& t : host)
    if (!t.is_constant) t.data = nullptr;
  auto remap = [](const KernelArgs& a, std::vector<Tensor>& table, const std::vector<Tensor>& from) {
    KernelArgs r = a;
    for (auto* v : {&r.inputs, &r.outputs})
      for (Tensor*& t : *v)
        if (t) t = &table[size_t(t - from.data())];
    return r;
  };

  PRECIS_ASSIGN_OR_RETURN(errors_, DeviceAlloc(steps.size() * sizeof(int), "the error flags"));
  PRECIS_ASSIGN_OR_RETURN(host_errors_, PinnedAlloc(steps.size() * sizeof(int), "the error flags"));
  std::memset(host_errors_.get(), 0, steps.size() * sizeof(int));
  ctx_.stream = stream_;
  ctx_.lt = lt_;
  ctx_.dnn = dnn_;
  ctx_.prop = &prop_;
  size_t scratch_bytes = 0, workspace_bytes = 0;
  for (size_t i = 0; i < steps.size(); ++i) {
    KernelArgs h = remap(steps[i], host, tensors);
    // The kernel on the step's own dtypes, else (16-bit tensors it does not take) widened.
    cuda::KernelFactory factory = registry.Find(names[i]);
    std::unique_ptr<cuda::Kernel> k = factory();
    ctx_.error = static_cast<int*>(errors_.get()) + i;
    Status s = k->Init(h, ctx_);
    if (!s.ok() && s.code() == StatusCode::kUnimplemented && cuda::WidenKernel::HasHalfTensors(h)) {
      auto w = std::make_unique<cuda::WidenKernel>(factory());
      if (w->Init(h, ctx_).ok()) {
        k = std::move(w);
        s = Status::Ok();
      }
    }
    PRECIS_RETURN_IF_ERROR(s);
    scratch_bytes = std::max(scratch_bytes, k->ScratchBytes());
    workspace_bytes = std::max(workspace_bytes, k->WorkspaceBytes());
    capturable_ = capturable_ && k->Capturable();
    args_.push_back(remap(steps[i], device_tensors_, tensors));
    step_names_.push_back(names[i]);
    kernels_.push_back(std::move(k));
  }
  PRECIS_ASSIGN_OR_RETURN(scratch_, DeviceAlloc(scratch_bytes, "the kernel scratch"));
  PRECIS_ASSIGN_OR_RETURN(workspace_, DeviceAlloc(workspace_bytes, "the library workspace"));
  ctx_.scratch = static_cast<uint8_t*>(scratch_.get());
  ctx_.workspace = workspace_.get();
  ctx_.workspace_bytes = workspace_bytes;

  // Pinned staging for each distinct model input and output.
  auto stage = [&](const std::vector<int>& ids, std::vector<Staged>& out, const char* what) -> Status {
    for (int id : ids) {
      if (std::any_of(out.begin(), out.end(), [&](const Staged& s) { return s.id == id; })) continue;
      PRECIS_ASSIGN_OR_RETURN(PinnedBuffer p, PinnedAlloc(tensors[size_t(id)].bytes, std::string(what) + " '" + tensors[size_t(id)].name + "'"));
      out.push_back({id, std::move(p)});
    }
    return Status::Ok();
  };
  PRECIS_RETURN_IF_ERROR(stage(inputs, inputs_, "input"));
  PRECIS_RETURN_IF_ERROR(stage(outputs, outputs_, "output"));
  for (auto* list : {&inputs_, &outputs_})
    for (const Staged& s : *list) tensors[size_t(s.id)].data = static_cast<uint8_t*>(s.host.get());
  // An input that is also an output shares one staging buffer: the output's.
  for (Staged& in : inputs_)
    for (const Staged& out : outputs_)
      if (in.id == out.id) in.host.reset();
  PRECIS_CUDA_OR_RETURN(cudaStreamSynchronize(stream_), "loading the plan");
  return Status::Ok();
}

Status CudaBackendImpl::Enqueue(std::vector<StepProfile>* profile, const std::function<void(const TensorData&)>& observer) {
  PRECIS_CUDA_OR_RETURN(cudaMemsetAsync(errors_.get(), 0, kernels_.size() * sizeof(int), stream_), "resetting the error flags");
  auto staged = [&](int id) -> void* {
    for (auto* list : {&inputs_, &outputs_})
      for (const Staged& s : *list)
        if (s.id == id && s.host) return s.host.get();
    return nullptr;
  };
  for (const Staged& in : inputs_) {
    const Tensor& d = device_tensors_[size_t(in.id)];
    if (d.bytes && !d.is_constant)
      PRECIS_CUDA_OR_RETURN(cudaMemcpyAsync(d.data, staged(in.id), d.bytes, cudaMemcpyHostToDevice, stream_), "uploading input '" + d.name + "'");
  }
  cudaEvent_t start = nullptr, stop = nullptr;
  if (profile) {
    PRECIS_CUDA_OR_RETURN(cudaEventCreate(&start), "cudaEventCreate");
    PRECIS_CUDA_OR_RETURN(cudaEventCreate(&stop), "cudaEventCreate");
  }
  Status status;
  for (size_t i = 0; i < kernels_.size() && status.ok(); ++i) {
    ctx_.error = static_cast<int*>(errors_.get()) + i;
    if (profile) cudaEventRecord(start, stream_);
    status = kernels_[i]->Run(args_[i], ctx_);
    if (!status.ok()) break;
    if (profile) {
      cudaEventRecord(stop, stream_);
      cudaError_t e = cudaEventSynchronize(stop);
      if (e != cudaSuccess) {
        status = CudaError(e, args_[i].node);
        break;
      }
      float ms = 0;
      cudaEventElapsedTime(&ms, start, stop);
      (*profile)[i].total_ms += ms;
      ++(*profile)[i].runs;
    }
    if (observer) {
      for (const Tensor* out : args_[i].outputs) {
        if (!out) continue;
        observed_.resize(out->bytes);
        cudaError_t e = cudaMemcpyAsync(observed_.data(), out->data, out->bytes, cudaMemcpyDeviceToHost, stream_);
        if (e == cudaSuccess) e = cudaStreamSynchronize(stream_);
        if (e != cudaSuccess) {
          status = CudaError(e, args_[i].node + ": reading its output");
          break;
        }
        observer(TensorData{{out->name, out->dtype, out->dims}, observed_.data()});
      }
    }
  }
  if (start) cudaEventDestroy(start);
  if (stop) cudaEventDestroy(stop);
  PRECIS_RETURN_IF_ERROR(status);
  for (const Staged& out : outputs_) {
    const Tensor& d = device_tensors_[size_t(out.id)];
    if (d.bytes)
      PRECIS_CUDA_OR_RETURN(cudaMemcpyAsync(out.host.get(), d.data, d.bytes, cudaMemcpyDeviceToHost, stream_), "downloading output '" + d.name + "'");
  }
  PRECIS_CUDA_OR_RETURN(cudaMemcpyAsync(host_errors_.get(), errors_.get(), kernels_.size() * sizeof(int), cudaMemcpyDeviceToHost, stream_),
                        "reading the error flags");
  return Status::Ok();
}

Status CudaBackendImpl::CheckErrors() {
  const int* flags = static_cast<const int*>(host_errors_.get());
  for (size_t i = 0; i < kernels_.size(); ++i)
    if (flags[i]) return InvalidArgument(args_[i].node + ": " + cuda::DeviceErrorMessage(flags[i]));
  return Status::Ok();
}

Status CudaBackendImpl::Run(std::vector<Tensor>& tensors, std::vector<StepProfile>* profile,
                            const std::function<void(const TensorData&)>& observer) {
  PRECIS_CUDA_OR_RETURN(cudaSetDevice(device_), "cudaSetDevice");
  // Bound inputs: copy caller memory into the pinned staging first.
  for (const Staged& in : inputs_) {
    const Tensor& t = tensors[size_t(in.id)];
    void* host = in.host ? in.host.get() : nullptr;
    for (const Staged& out : outputs_)
      if (out.id == in.id) host = out.host.get();
    if (t.data != host && t.bytes) std::memcpy(host, t.data, t.bytes);
  }
  // The first run is eager even when runs are replayed from a CUDA graph: library calls (cuDNN,
  // cuBLASLt) do their one-time setup outside a capture, and the capture starts at the second
  // run (cudnn-frontend warms its graphs up the same way).
  bool eager = profile || observer || !graphs_ || !capturable_ || !warmed_up_;
  if (eager) {
    PRECIS_RETURN_IF_ERROR(Enqueue(profile, observer));
    warmed_up_ = true;
  } else {
    if (!graph_exec_) {
      PRECIS_CUDA_OR_RETURN(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal), "cudaStreamBeginCapture");
      Status s = Enqueue(nullptr, nullptr);
      cudaGraph_t g = nullptr;
      cudaError_t e = cudaStreamEndCapture(stream_, &g);
      PRECIS_RETURN_IF_ERROR(s);
      if (e != cudaSuccess) return CudaError(e, "capturing the run into a CUDA graph");
      graph_ = g;
      PRECIS_CUDA_OR_RETURN(cudaGraphInstantiate(&graph_exec_, graph_, 0), "cudaGraphInstantiate");
    }
    PRECIS_CUDA_OR_RETURN(cudaGraphLaunch(graph_exec_, stream_), "cudaGraphLaunch");
  }
  PRECIS_CUDA_OR_RETURN(cudaStreamSynchronize(stream_), "running the plan");
  PRECIS_RETURN_IF_ERROR(CheckErrors());
  // Bound outputs: copy the staged result out.
  for (const Staged& out : outputs_) {
    Tensor& t = tensors[size_t(out.id)];
    if (t.data != out.host.get() && t.bytes) std::memcpy(t.data, out.host.get(), t.bytes);
  }
  return Status::Ok();
}

}  // namespace

StatusOr<std::unique_ptr<CudaBackend>> CudaBackend::Create(const plan::PlanView& view, std::vector<Tensor>& tensors,
                                                           const std::vector<int>& inputs, const std::vector<int>& outputs,
                                                           const std::vector<KernelArgs>& steps, const std::vector<std::string>& kernels,
                                                           const CudaBackendOptions& options) {
  auto backend = std::make_unique<CudaBackendImpl>();
  PRECIS_RETURN_IF_ERROR(backend->Init(view, tensors, inputs, outputs, steps, kernels, options));
  return std::unique_ptr<CudaBackend>(std::move(backend));
}

bool CudaBackendBuilt() { return true; }

}  // namespace precis::rt
