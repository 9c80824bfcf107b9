// The CUDA backend: device memory, kernel set-up, and running programs with CUDA graph replay.
#include "runtime/cuda/cuda_backend.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "runtime/exec/backend.h"

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

class CudaBackendImpl final : public Backend {
 public:
  explicit CudaBackendImpl(const SessionOptions& options) : options_(options) {
    const char* sync = std::getenv("PRECIS_CUDA_SYNC");
    sync_steps_ = sync && std::string(sync) != "0" && *sync;
  }
  ~CudaBackendImpl() override {
    if (device_ >= 0) cudaSetDevice(device_);
    for (Program& p : programs_) Release(p);
    for (CachedShape& c : cached_)
      for (Program& p : c.programs) Release(p);
    tables_.clear();
    if (code_.library) cudaLibraryUnload(static_cast<cudaLibrary_t>(code_.library));
    if (dnn_) cudnnDestroy(dnn_);
    if (lt_) cublasLtDestroy(lt_);
    if (stream_) cudaStreamDestroy(stream_);
  }

  Status Prepare(LoadedPlan& plan) override;
  Status Run(size_t program, std::vector<StepProfile>* profile, const std::function<void(const TensorData&)>& observer) override;
  Status ReadState(int id, void* dst) override;
  Status WriteState(int id, const void* src) override;
  std::vector<std::string> StepLabels(size_t program) const override {
    std::vector<std::string> labels;
    for (const std::string& k : plan_->programs[program].kernels) labels.push_back(k + " (cuda)");
    return labels;
  }
  std::string device_name() const override { return prop_.name; }
  bool graph_replay() const override { return replayed_; }
  // Dynamic plans (docs/dynamic-shapes.md): the session binds the symbols on the host and calls
  // Reshape; each shape gets its kernels and, when replayed, its own CUDA graph. Data dims (sizes
  // computed on the device mid-run) are refused at Prepare.
  bool dynamic_shapes() const override { return true; }
  Status Reshape(LoadedPlan& plan, const std::vector<int64_t>& key) override;
  std::vector<std::string> Fallbacks() const override { return fallbacks_; }

 private:
  struct Staged {
    int id;
    PinnedBuffer host;
    size_t capacity = 0;
  };
  struct Program {
    std::vector<KernelArgs> args;  // over device_tensors_
    std::vector<std::unique_ptr<cuda::Kernel>> kernels;
    DeviceBuffer errors;
    PinnedBuffer host_errors;
    bool capturable = true, warmed_up = false;
    cudaGraph_t graph = nullptr;
    cudaGraphExec_t graph_exec = nullptr;
    // The device and pinned addresses the graph was captured with (arena, scratch, workspace,
    // staging): a graph replays only while they are unchanged.
    std::vector<const void*> captured_with;
  };
  // The kernels (and graphs) of a recent shape of a dynamic plan.
  struct CachedShape {
    std::vector<int64_t> key;
    std::vector<Program> programs;
    std::vector<std::string> fallbacks;  // Fallbacks() of that shape
  };
  static constexpr size_t kCachedShapes = 8;
  static void Release(Program& p) {
    if (p.graph_exec) cudaGraphExecDestroy(p.graph_exec);
    if (p.graph) cudaGraphDestroy(p.graph);
    p.graph_exec = nullptr;
    p.graph = nullptr;
    p.kernels.clear();
  }
  // The addresses a captured graph bakes in (see Program::captured_with).
  std::vector<const void*> Addresses() const;
  Status PlaceArena();
  Status GrowBuffers(size_t scratch_bytes, size_t workspace_bytes);
  Status OpenDevice();
  Status LoadGeneratedCode();
  Status PlaceTensors();
  Status PrepareProgram(const ProgramSteps& steps, Program& out, size_t& scratch_bytes, size_t& workspace_bytes);
  Status Stage();
  void* StagedHost(int id) const;
  // Enqueues one whole run of a program (error-flag reset, uploads, steps, downloads) on the stream.
  Status Enqueue(size_t program, std::vector<StepProfile>* profile, const std::function<void(const TensorData&)>& observer);
  Status CheckErrors(size_t program);
  Status Capture(size_t program);

  SessionOptions options_;
  LoadedPlan* plan_ = nullptr;
  int device_ = -1;
  cudaDeviceProp prop_{};
  cudaStream_t stream_ = nullptr;
  cublasLtHandle_t lt_ = nullptr;
  cudnnHandle_t dnn_ = nullptr;
  DeviceBuffer arena_, state_, constants_, workspace_, scratch_;
  size_t arena_capacity_ = 0, scratch_capacity_ = 0, workspace_capacity_ = 0;
  std::vector<CachedShape> cached_;  // dynamic plans: recent shapes, most recent first
  std::vector<int64_t> key_;         // dynamic plans: the binding programs_ was built for
  std::vector<std::shared_ptr<void>> tables_;
  cuda::GeneratedCode code_;
  std::vector<Tensor> device_tensors_;
  std::vector<Program> programs_;
  std::vector<Staged> inputs_, outputs_;  // every program's, each tensor once
  cuda::CudaContext ctx_;
  bool replayed_ = false;
  bool sync_steps_ = false;       // PRECIS_CUDA_SYNC=1: synchronize and check after every step (eager)
  std::vector<std::string> fallbacks_;  // Fallbacks(): refused library plans, failed captures
  std::vector<uint8_t> observed_;  // host copy of an observed tensor
};

Status CudaBackendImpl::OpenDevice() {
  int count = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) return Unavailable(std::string("no usable CUDA device: ") + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")");
  if (options_.device_id < 0 || options_.device_id >= count)
    return InvalidArgument("CUDA device " + std::to_string(options_.device_id) + " does not exist (" + std::to_string(count) + " found)");
  device_ = options_.device_id;
  PRECIS_CUDA_OR_RETURN(cudaSetDevice(device_), "cudaSetDevice");
  PRECIS_CUDA_OR_RETURN(cudaGetDeviceProperties(&prop_, device_), "cudaGetDeviceProperties");
  PRECIS_CUDA_OR_RETURN(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate");
  cublasStatus_t be = cublasLtCreate(&lt_);
  if (be != CUBLAS_STATUS_SUCCESS) return cuda::CublasError(be, "cublasLtCreate");
  cudnnStatus_t de = cudnnCreate(&dnn_);
  if (de != CUDNN_STATUS_SUCCESS) return cuda::CudnnError(de, "cudnnCreate");
  de = cudnnSetStream(dnn_, stream_);
  if (de != CUDNN_STATUS_SUCCESS) return cuda::CudnnError(de, "cudnnSetStream");
  ctx_.stream = stream_;
  ctx_.lt = lt_;
  ctx_.dnn = dnn_;
  ctx_.prop = &prop_;
  ctx_.tables = &tables_;
  return Status::Ok();
}

// The plan's generated kernels (plan.fbs Module, kinds Cubin and Ptx, target "sm_XY"): the cubin
// built for exactly this device's SM, else the PTX of the highest SM the device runs, which the
// driver compiles now. Nothing is loaded for a plan without GPU modules; a fused step then says
// why when it is prepared. A module the driver refuses is an error.
Status CudaBackendImpl::LoadGeneratedCode() {
  ctx_.code = &code_;
  const plan::Plan* p = plan_->view->meta;
  const int device_sm = prop_.major * 10 + prop_.minor;
  const plan::Module* best = nullptr;
  int best_sm = -1;
  std::string have;
  if (p->modules()) {
    for (const plan::Module* m : *p->modules()) {
      if ((m->kind() != plan::ModuleKind_Ptx && m->kind() != plan::ModuleKind_Cubin) || !m->target() || !m->code()) continue;
      const std::string t = m->target()->str();
      int sm = t.size() > 3 && t.compare(0, 3, "sm_") == 0 ? std::atoi(t.c_str() + 3) : -1;
      have += (have.empty() ? "" : ", ") + t + (m->kind() == plan::ModuleKind_Cubin ? " cubin" : " ptx");
      if (m->kind() == plan::ModuleKind_Cubin && sm == device_sm) {
        best = m, best_sm = 1000;  // exact machine code wins
      } else if (m->kind() == plan::ModuleKind_Ptx && sm > 0 && sm <= device_sm && sm > best_sm && best_sm < 1000) {
        best = m, best_sm = sm;
      }
    }
  }
  if (!best) {
    code_.why_none = have.empty() ? "the plan has no GPU modules"
                                  : "modules " + have + "; this GPU is sm_" + std::to_string(device_sm);
    return Status::Ok();
  }
  const bool cubin = best->kind() == plan::ModuleKind_Cubin;
  cudaLibrary_t library = nullptr;
  PRECIS_CUDA_OR_RETURN(cudaLibraryLoadData(&library, best->code()->data(), nullptr, nullptr, 0, nullptr, nullptr, 0),
                        "loading the plan's generated " + best->target()->str() + (cubin ? " cubin" : " PTX"));
  code_.library = library;
  code_.loaded = best->target()->str() + (cubin ? " cubin" : " ptx");
  return Status::Ok();
}

// Device memory: the arena as planned, the state initialized from the plan, the constants blob
// uploaded once.
Status CudaBackendImpl::PlaceTensors() {
  const plan::PlanView& view = *plan_->view;
  std::vector<Tensor>& tensors = *plan_->tensors;
  PRECIS_ASSIGN_OR_RETURN(state_, DeviceAlloc(size_t(view.meta->state_bytes()), "the state"));
  PRECIS_ASSIGN_OR_RETURN(constants_, DeviceAlloc(view.constants_size, "the constants"));
  // Uploads go on the compute stream (Prepare waits for it at the end): a pageable cudaMemcpy on
  // the legacy stream may return before its DMA lands, and the non-blocking compute stream would
  // not wait for it.
  if (view.constants_size)
    PRECIS_CUDA_OR_RETURN(cudaMemcpyAsync(constants_.get(), view.constants, view.constants_size, cudaMemcpyHostToDevice, stream_),
                          "uploading the constants");
  device_tensors_ = tensors;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const plan::TensorDesc* d = view.meta->tensors()->Get(flatbuffers::uoffset_t(i));
    if (d->placement() == plan::Placement_Constant && d->synthetic()) {
      // A stripped weight (benchmark plans): the session made it on the host; upload it alone.
      PRECIS_ASSIGN_OR_RETURN(void* p, cuda::UploadTable(ctx_, tensors[i].data, tensors[i].bytes, "synthetic weight '" + tensors[i].name + "'"));
      device_tensors_[i].data = static_cast<uint8_t*>(p);
      continue;
    }
    if (d->placement() == plan::Placement_Arena) continue;  // PlaceArena
    void* base = d->placement() == plan::Placement_Constant ? constants_.get() : state_.get();
    device_tensors_[i].data = static_cast<uint8_t*>(base) + d->offset();
    if (d->placement() == plan::Placement_State && tensors[i].bytes)
      PRECIS_CUDA_OR_RETURN(cudaMemcpyAsync(device_tensors_[i].data, view.constants + d->init_offset(), tensors[i].bytes, cudaMemcpyHostToDevice,
                                            stream_),
                            "initializing state '" + tensors[i].name + "'");
  }
  return PlaceArena();
}

// The arena as the session placed it for the current binding (LoadedPlan::arena_offsets and
// arena_bytes; a static plan's are the compiled ones), grown when a shape needs more; every
// tensor's dims and byte size from the session's table.
Status CudaBackendImpl::PlaceArena() {
  const plan::PlanView& view = *plan_->view;
  std::vector<Tensor>& tensors = *plan_->tensors;
  if (!arena_ || plan_->arena_bytes > arena_capacity_) {
    arena_.reset();  // freed before the larger one is taken
    PRECIS_ASSIGN_OR_RETURN(arena_, DeviceAlloc(size_t(plan_->arena_bytes), "the arena"));
    arena_capacity_ = size_t(plan_->arena_bytes);
  }
  for (size_t i = 0; i < tensors.size(); ++i) {
    uint8_t* data = device_tensors_[i].data;
    device_tensors_[i].dims = tensors[i].dims;
    device_tensors_[i].numel = tensors[i].numel;
    device_tensors_[i].bytes = tensors[i].bytes;
    const plan::TensorDesc* d = view.meta->tensors()->Get(flatbuffers::uoffset_t(i));
    device_tensors_[i].data = d->placement() == plan::Placement_Arena ? static_cast<uint8_t*>(arena_.get()) + plan_->arena_offsets[i] : data;
  }
  return Status::Ok();
}

// Kernel scratch and the library workspace, grown when a shape needs more.
Status CudaBackendImpl::GrowBuffers(size_t scratch_bytes, size_t workspace_bytes) {
  if (!scratch_ || scratch_bytes > scratch_capacity_) {
    scratch_.reset();
    PRECIS_ASSIGN_OR_RETURN(scratch_, DeviceAlloc(scratch_bytes, "the kernel scratch"));
    scratch_capacity_ = scratch_bytes;
  }
  if (!workspace_ || workspace_bytes > workspace_capacity_) {
    workspace_.reset();
    PRECIS_ASSIGN_OR_RETURN(workspace_, DeviceAlloc(workspace_bytes, "the library workspace"));
    workspace_capacity_ = workspace_bytes;
  }
  ctx_.scratch = static_cast<uint8_t*>(scratch_.get());
  ctx_.workspace = workspace_.get();
  ctx_.workspace_bytes = workspace_capacity_;
  return Status::Ok();
}

std::vector<const void*> CudaBackendImpl::Addresses() const {
  std::vector<const void*> a = {arena_.get(), scratch_.get(), workspace_.get()};
  for (const auto* list : {&inputs_, &outputs_})
    for (const Staged& s : *list) a.push_back(s.host.get());
  for (const Tensor& t : device_tensors_) a.push_back(t.data);
  return a;
}

// Each step's kernel: the one for the step's own dtypes, else (16-bit tensors it does not take)
// widened. Init sees the constants on the host and every other tensor without data.
Status CudaBackendImpl::PrepareProgram(const ProgramSteps& steps, Program& out, size_t& scratch_bytes, size_t& workspace_bytes) {
  const auto& registry = cuda::KernelRegistry::Get();
  std::vector<Tensor>& tensors = *plan_->tensors;
  std::vector<Tensor> host = tensors;
  for (auto& t : host)
    if (!t.is_constant) t.data = nullptr;
  auto remap = [&](const KernelArgs& a, std::vector<Tensor>& table) {
    KernelArgs r = a;
    for (auto* v : {&r.inputs, &r.outputs})
      for (Tensor*& t : *v)
        if (t) t = &table[size_t(t - tensors.data())];
    return r;
  };
  size_t n = steps.steps.size();
  PRECIS_ASSIGN_OR_RETURN(out.errors, DeviceAlloc(n * sizeof(int), "the error flags"));
  PRECIS_ASSIGN_OR_RETURN(out.host_errors, PinnedAlloc(n * sizeof(int), "the error flags"));
  std::memset(out.host_errors.get(), 0, n * sizeof(int));
  for (size_t i = 0; i < n; ++i) {
    // A predicated copy (a state update skipped on overflow) reads its predicate on the device;
    // other predicated steps would need the host to read it and are refused.
    KernelArgs step = steps.steps[i];
    std::string kernel_name = steps.kernels[i];
    if (steps.predicates[i]) {
      if (kernel_name != "Identity")
        return Unimplemented(step.node + ": the CUDA backend runs only predicated copies (state updates); this step is a predicated " + kernel_name);
      kernel_name = "PredicatedCopy";
      step.inputs.push_back(const_cast<Tensor*>(steps.predicates[i]));
    }
    KernelArgs h = remap(step, host);
    cuda::KernelFactory factory = registry.Find(kernel_name);
    std::unique_ptr<cuda::Kernel> k = factory();
    ctx_.error = static_cast<int*>(out.errors.get()) + i;
    Status s = k->Init(h, ctx_);
    // The widened form only for steps the plan marks widened on CUDA (Step.widen bit 1, decided
    // by the compiler from runtime/cuda/capabilities.h).
    bool widen = (steps.widen[i] & 2) != 0;
    if (!s.ok() && s.code() == StatusCode::kUnimplemented && widen && cuda::WidenKernel::HasHalfTensors(h)) {
      auto w = std::make_unique<cuda::WidenKernel>(factory());
      if (w->Init(h, ctx_).ok()) {
        k = std::move(w);
        s = Status::Ok();
      }
    }
    if (!s.ok() && !widen && cuda::WidenKernel::HasHalfTensors(h))
      s = s.WithContext("the CUDA kernel does not take this step's 16-bit dtypes as they are, and the plan does not mark it widened");
    PRECIS_RETURN_IF_ERROR(s);
    if (!h.attrs.KindError().empty()) return h.Error(h.attrs.KindError());
    if (std::string why = k->Fallback(); !why.empty()) fallbacks_.push_back(step.node + ": " + why);
    scratch_bytes = std::max(scratch_bytes, k->ScratchBytes());
    workspace_bytes = std::max(workspace_bytes, k->WorkspaceBytes());
    out.capturable = out.capturable && k->Capturable();
    out.args.push_back(remap(step, device_tensors_));
    out.kernels.push_back(std::move(k));
  }
  return Status::Ok();
}

// Pinned staging for each distinct input and output of every program; the session's tensors
// point at it. An input that is also an output shares one staging buffer: the output's. Called
// again for each new shape of a dynamic plan: a buffer is replaced only when it is too small.
Status CudaBackendImpl::Stage() {
  std::vector<Tensor>& tensors = *plan_->tensors;
  auto is_output = [&](int id) {
    for (const ProgramSteps& p : plan_->programs)
      if (std::find(p.outputs.begin(), p.outputs.end(), id) != p.outputs.end()) return true;
    return false;
  };
  auto stage = [&](const std::vector<int>& ids, std::vector<Staged>& list, const char* what, bool skip_outputs) -> Status {
    for (int id : ids) {
      if (skip_outputs && is_output(id)) continue;
      auto it = std::find_if(list.begin(), list.end(), [&](const Staged& s) { return s.id == id; });
      if (it == list.end()) it = list.insert(list.end(), Staged{id, nullptr, 0});
      const size_t bytes = tensors[size_t(id)].bytes;
      if (!it->host || bytes > it->capacity) {
        it->host.reset();
        PRECIS_ASSIGN_OR_RETURN(it->host, PinnedAlloc(bytes, std::string(what) + " '" + tensors[size_t(id)].name + "'"));
        it->capacity = std::max<size_t>(bytes, 64);
      }
      tensors[size_t(id)].data = static_cast<uint8_t*>(it->host.get());
    }
    return Status::Ok();
  };
  for (const ProgramSteps& p : plan_->programs) PRECIS_RETURN_IF_ERROR(stage(p.outputs, outputs_, "output", false));
  for (const ProgramSteps& p : plan_->programs) PRECIS_RETURN_IF_ERROR(stage(p.inputs, inputs_, "input", true));
  return Status::Ok();
}

Status CudaBackendImpl::Prepare(LoadedPlan& plan) {
  plan_ = &plan;
  // Every step needs a CUDA kernel; list all that lack one in one error.
  std::string missing;
  for (const ProgramSteps& p : plan.programs)
    for (size_t i = 0; i < p.steps.size(); ++i)
      if (!cuda::KernelRegistry::Get().Find(p.kernels[i])) missing += (missing.empty() ? "" : ", ") + p.steps[i].node;
  if (!missing.empty()) return Unimplemented("the CUDA backend has no kernel for: " + missing);
  if ((plan.view->meta->value_symbols() && plan.view->meta->value_symbols()->size() > 0) ||
      (plan.view->meta->expr_symbols() && plan.view->meta->expr_symbols()->size() > 0))
    return Unimplemented("the plan's shapes depend on input values (value symbols); the CUDA backend runs dynamic plans whose dims come "
                         "from input shapes only: compile with --shape, or run on the CPU");
  if (plan.bind_iteration)
    return Unimplemented("the plan has a Loop body whose shapes follow the iteration number; the CUDA backend runs bodies of static "
                         "shapes only: run it on the CPU");
  for (const ProgramSteps& p : plan.programs)
    for (size_t i = 0; i < p.binds_dims.size(); ++i)
      if (p.binds_dims[i])
        return Unimplemented(p.steps[i].node + " computes a size from data (a data dim); the CUDA backend runs dynamic plans whose dims come "
                                               "from input shapes and values only: compile with --shape, or run on the CPU");
  PRECIS_RETURN_IF_ERROR(OpenDevice());
  PRECIS_RETURN_IF_ERROR(LoadGeneratedCode());
  PRECIS_RETURN_IF_ERROR(PlaceTensors());
  size_t scratch_bytes = 0, workspace_bytes = 0;
  programs_.resize(plan.programs.size());
  for (size_t p = 0; p < plan.programs.size(); ++p)
    PRECIS_RETURN_IF_ERROR(PrepareProgram(plan.programs[p], programs_[p], scratch_bytes, workspace_bytes));
  PRECIS_RETURN_IF_ERROR(GrowBuffers(scratch_bytes, workspace_bytes));
  PRECIS_RETURN_IF_ERROR(Stage());
  PRECIS_CUDA_OR_RETURN(cudaStreamSynchronize(stream_), "loading the plan");
  key_ = plan.binding;
  return Status::Ok();
}

// A dynamic plan's new shape (the session has set every tensor's dims and placed the arena): the
// arena, scratch, workspace and staging grown where needed, and the shape's kernels from the cache
// of recent shapes or prepared now. A cached program keeps its CUDA graph while the addresses it
// was captured with are unchanged; otherwise it is captured again at its next replayed run.
Status CudaBackendImpl::Reshape(LoadedPlan& plan, const std::vector<int64_t>& key) {
  plan_ = &plan;
  PRECIS_CUDA_OR_RETURN(cudaSetDevice(device_), "cudaSetDevice");
  PRECIS_CUDA_OR_RETURN(cudaStreamSynchronize(stream_), "finishing the previous shape's work");
  if (!programs_.empty() && !key_.empty()) cached_.insert(cached_.begin(), CachedShape{key_, std::move(programs_), std::move(fallbacks_)});
  fallbacks_.clear();
  programs_.clear();
  key_.clear();
  PRECIS_RETURN_IF_ERROR(PlaceArena());
  auto hit = std::find_if(cached_.begin(), cached_.end(), [&](const CachedShape& c) { return c.key == key; });
  size_t scratch_bytes = 0, workspace_bytes = 0;
  if (hit != cached_.end()) {
    programs_ = std::move(hit->programs);
    fallbacks_ = std::move(hit->fallbacks);
    cached_.erase(hit);
    for (const Program& p : programs_)
      for (const auto& k : p.kernels) {
        scratch_bytes = std::max(scratch_bytes, k->ScratchBytes());
        workspace_bytes = std::max(workspace_bytes, k->WorkspaceBytes());
      }
  } else {
    std::vector<Program> built(plan.programs.size());
    for (size_t p = 0; p < plan.programs.size(); ++p)
      PRECIS_RETURN_IF_ERROR(PrepareProgram(plan.programs[p], built[p], scratch_bytes, workspace_bytes));
    programs_ = std::move(built);
  }
  while (cached_.size() > kCachedShapes) {
    for (Program& p : cached_.back().programs) Release(p);
    cached_.pop_back();
  }
  PRECIS_RETURN_IF_ERROR(GrowBuffers(scratch_bytes, workspace_bytes));
  PRECIS_RETURN_IF_ERROR(Stage());
  // Graphs captured with other addresses replay no more: captured again at the next replay.
  const std::vector<const void*> now = Addresses();
  for (Program& p : programs_)
    if (p.graph_exec && p.captured_with != now) {
      cudaGraphExecDestroy(p.graph_exec);
      cudaGraphDestroy(p.graph);
      p.graph_exec = nullptr;
      p.graph = nullptr;
    }
  PRECIS_CUDA_OR_RETURN(cudaStreamSynchronize(stream_), "preparing the shape");
  key_ = key;
  return Status::Ok();
}

void* CudaBackendImpl::StagedHost(int id) const {
  for (const Staged& s : outputs_)
    if (s.id == id) return s.host.get();
  for (const Staged& s : inputs_)
    if (s.id == id) return s.host.get();
  return nullptr;
}

Status CudaBackendImpl::Enqueue(size_t program, std::vector<StepProfile>* profile, const std::function<void(const TensorData&)>& observer) {
  Program& prog = programs_[program];
  const ProgramSteps& steps = plan_->programs[program];
  PRECIS_CUDA_OR_RETURN(cudaMemsetAsync(prog.errors.get(), 0, prog.kernels.size() * sizeof(int), stream_), "resetting the error flags");
  for (int id : steps.inputs) {
    const Tensor& d = device_tensors_[size_t(id)];
    if (d.bytes && !d.is_constant)
      PRECIS_CUDA_OR_RETURN(cudaMemcpyAsync(d.data, StagedHost(id), d.bytes, cudaMemcpyHostToDevice, stream_), "uploading input '" + d.name + "'");
  }
  cudaEvent_t start = nullptr, stop = nullptr;
  if (profile) {
    PRECIS_CUDA_OR_RETURN(cudaEventCreate(&start), "cudaEventCreate");
    PRECIS_CUDA_OR_RETURN(cudaEventCreate(&stop), "cudaEventCreate");
  }
  Status status;
  for (size_t i = 0; i < prog.kernels.size() && status.ok(); ++i) {
    ctx_.error = static_cast<int*>(prog.errors.get()) + i;
    if (profile) cudaEventRecord(start, stream_);
    status = prog.kernels[i]->Run(prog.args[i], ctx_);
    if (!status.ok()) break;
    if (sync_steps_) {
      // PRECIS_CUDA_SYNC=1: an asynchronous fault is reported by the step that caused it.
      cudaError_t e = cudaStreamSynchronize(stream_);
      if (e == cudaSuccess) e = cudaGetLastError();
      if (e != cudaSuccess) {
        status = CudaError(e, prog.args[i].node + " (step " + std::to_string(i) + " of program '" + steps.name + "', PRECIS_CUDA_SYNC=1)");
        break;
      }
    }
    if (profile) {
      cudaEventRecord(stop, stream_);
      cudaError_t e = cudaEventSynchronize(stop);
      if (e != cudaSuccess) {
        status = CudaError(e, prog.args[i].node);
        break;
      }
      float ms = 0;
      cudaEventElapsedTime(&ms, start, stop);
      (*profile)[i].total_ms += ms;
      ++(*profile)[i].runs;
    }
    if (observer) {
      for (const Tensor* out : prog.args[i].outputs) {
        if (!out) continue;
        observed_.resize(out->bytes);
        cudaError_t e = cudaMemcpyAsync(observed_.data(), out->data, out->bytes, cudaMemcpyDeviceToHost, stream_);
        if (e == cudaSuccess) e = cudaStreamSynchronize(stream_);
        if (e != cudaSuccess) {
          status = CudaError(e, prog.args[i].node + ": reading its output");
          break;
        }
        observer(TensorData{{out->name, out->dtype, out->dims}, observed_.data()});
      }
    }
  }
  if (start) cudaEventDestroy(start);
  if (stop) cudaEventDestroy(stop);
  PRECIS_RETURN_IF_ERROR(status);
  for (int id : steps.outputs) {
    const Tensor& d = device_tensors_[size_t(id)];
    if (d.bytes)
      PRECIS_CUDA_OR_RETURN(cudaMemcpyAsync(StagedHost(id), d.data, d.bytes, cudaMemcpyDeviceToHost, stream_), "downloading output '" + d.name + "'");
  }
  PRECIS_CUDA_OR_RETURN(cudaMemcpyAsync(prog.host_errors.get(), prog.errors.get(), prog.kernels.size() * sizeof(int), cudaMemcpyDeviceToHost, stream_),
                        "reading the error flags");
  return Status::Ok();
}

Status CudaBackendImpl::CheckErrors(size_t program) {
  const Program& prog = programs_[program];
  const int* flags = static_cast<const int*>(prog.host_errors.get());
  for (size_t i = 0; i < prog.kernels.size(); ++i)
    if (flags[i]) return InvalidArgument(prog.args[i].node + ": " + cuda::DeviceErrorMessage(flags[i]));
  return Status::Ok();
}

// Records the program into a CUDA graph and instantiates it; on failure everything made is
// released and the stream is back out of capture mode, so the caller can run the program eagerly.
Status CudaBackendImpl::Capture(size_t program) {
  Program& prog = programs_[program];
  const std::string& name = plan_->programs[program].name;
  PRECIS_CUDA_OR_RETURN(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal), "cudaStreamBeginCapture");
  Status s = Enqueue(program, nullptr, nullptr);
  cudaGraph_t g = nullptr;
  cudaError_t e = cudaStreamEndCapture(stream_, &g);
  if (s.ok() && e != cudaSuccess) s = CudaError(e, "capturing program '" + name + "' into a CUDA graph");
  if (s.ok()) {
    e = cudaGraphInstantiate(&prog.graph_exec, g, 0);
    if (e != cudaSuccess) s = CudaError(e, "instantiating the CUDA graph of program '" + name + "'");
  }
  if (!s.ok()) {
    if (prog.graph_exec) cudaGraphExecDestroy(prog.graph_exec);
    if (g) cudaGraphDestroy(g);
    prog.graph_exec = nullptr;
    (void)cudaGetLastError();  // a capture error is not sticky; clear it so the eager run starts clean
    return s;
  }
  prog.graph = g;
  prog.captured_with = Addresses();
  return Status::Ok();
}

Status CudaBackendImpl::Run(size_t program, std::vector<StepProfile>* profile, const std::function<void(const TensorData&)>& observer) {
  PRECIS_CUDA_OR_RETURN(cudaSetDevice(device_), "cudaSetDevice");
  Program& prog = programs_[program];
  const ProgramSteps& steps = plan_->programs[program];
  std::vector<Tensor>& tensors = *plan_->tensors;
  // Bound inputs: copy caller memory into the pinned staging first.
  for (int id : steps.inputs) {
    const Tensor& t = tensors[size_t(id)];
    void* host = StagedHost(id);
    if (t.data != host && t.bytes) std::memcpy(host, t.data, t.bytes);
  }
  // The first run is eager even when runs are replayed from a CUDA graph: library calls (cuDNN,
  // cuBLASLt) do their one-time setup outside a capture, and the capture starts at the second
  // run (cudnn-frontend warms its graphs up the same way).
  bool eager = profile || observer || !options_.cuda_graphs || sync_steps_ || !prog.capturable || !prog.warmed_up;
  if (!eager && !prog.graph_exec) {
    Status captured = Capture(program);
    if (!captured.ok()) {
      // A capture that fails (a library call that cannot be captured, say) leaves the program
      // eager for the session instead of failing this and every later run.
      prog.capturable = false;
      fallbacks_.push_back("program '" + steps.name + "' runs without a CUDA graph: " + captured.message());
      std::fprintf(stderr, "precis: %s\n", fallbacks_.back().c_str());
      eager = true;
    }
  }
  if (eager) {
    PRECIS_RETURN_IF_ERROR(Enqueue(program, profile, observer));
    prog.warmed_up = true;
  } else {
    PRECIS_CUDA_OR_RETURN(cudaGraphLaunch(prog.graph_exec, stream_), "cudaGraphLaunch");
    replayed_ = true;
  }
  PRECIS_CUDA_OR_RETURN(cudaStreamSynchronize(stream_), "running program '" + steps.name + "'");
  PRECIS_RETURN_IF_ERROR(CheckErrors(program));
  // Bound outputs: copy the staged result out.
  for (int id : steps.outputs) {
    Tensor& t = tensors[size_t(id)];
    void* host = StagedHost(id);
    if (t.data != host && t.bytes) std::memcpy(t.data, host, t.bytes);
  }
  return Status::Ok();
}

Status CudaBackendImpl::ReadState(int id, void* dst) {
  const Tensor& d = device_tensors_[size_t(id)];
  PRECIS_CUDA_OR_RETURN(cudaSetDevice(device_), "cudaSetDevice");
  if (d.bytes) {
    PRECIS_CUDA_OR_RETURN(cudaMemcpyAsync(dst, d.data, d.bytes, cudaMemcpyDeviceToHost, stream_), "reading state '" + d.name + "'");
    PRECIS_CUDA_OR_RETURN(cudaStreamSynchronize(stream_), "reading state '" + d.name + "'");
  }
  return Status::Ok();
}

Status CudaBackendImpl::WriteState(int id, const void* src) {
  const Tensor& d = device_tensors_[size_t(id)];
  PRECIS_CUDA_OR_RETURN(cudaSetDevice(device_), "cudaSetDevice");
  if (d.bytes) {
    PRECIS_CUDA_OR_RETURN(cudaMemcpyAsync(d.data, src, d.bytes, cudaMemcpyHostToDevice, stream_), "writing state '" + d.name + "'");
    PRECIS_CUDA_OR_RETURN(cudaStreamSynchronize(stream_), "writing state '" + d.name + "'");
  }
  return Status::Ok();
}

StatusOr<std::unique_ptr<Backend>> CreateCudaBackend(const SessionOptions& options) {
  return std::unique_ptr<Backend>(new CudaBackendImpl(options));
}

[[maybe_unused]] const bool kRegistered = RegisterBackend(Device::kCuda, &CreateCudaBackend);

}  // namespace

bool CudaBackendBuilt() { return true; }

}  // namespace precis::rt
