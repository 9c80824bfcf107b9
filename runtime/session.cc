// Session: plan loading, kernel set-up, arena allocation and execution on the CPU backend, or
// through the CUDA backend (runtime/cuda/cuda_backend.h).
#include "precis/session.h"

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <set>
#include <thread>
#include <unordered_map>

#include "runtime/base/half.h"
#include "runtime/base/mapped_file.h"
#include "runtime/cpu/kernel.h"
#include "runtime/cpu/step_adapters.h"
#include "runtime/cpu/widen_kernel.h"
#include "runtime/cuda/cuda_backend.h"
#include "runtime/plan/plan_format.h"

namespace precis {

struct AlignedFree {
  void operator()(uint8_t* p) const { std::free(p); }
};
using AlignedBuffer = std::unique_ptr<uint8_t, AlignedFree>;

static AlignedBuffer AllocateAligned(size_t bytes) {
  size_t rounded = (bytes + 63) / 64 * 64;
  return AlignedBuffer(static_cast<uint8_t*>(std::aligned_alloc(64, rounded == 0 ? 64 : rounded)));
}

struct Session::Impl {
  SessionOptions options;
  std::shared_ptr<const MappedFile> file;  // the mapped plan, or
  AlignedBuffer owned_plan;                // a copy of a plan given as a buffer
  plan::PlanView view;
  AlignedBuffer arena;
  AlignedBuffer scratch;
  std::vector<rt::Tensor> tensors;
  std::vector<uint8_t*> home;  // each tensor's own storage, restored when unbound
  std::vector<rt::KernelArgs> args;
  std::vector<std::unique_ptr<rt::Kernel>> kernels;
  std::vector<TensorInfo> inputs, outputs;
  std::unordered_map<std::string, int> input_ids, output_ids;
  rt::CpuContext ctx;
  std::string precision;
  std::vector<StepProfile> profile;
  std::function<void(const TensorData&)> observer;
  std::unique_ptr<rt::CudaBackend> cuda;  // set when the session runs on a GPU

  Status Load(const uint8_t* data, size_t size);
  Status LoadTensors();
  Status LoadSteps();
  Status LoadCuda();
  std::vector<AlignedBuffer> synthetic;  // weights of a --strip-weights plan
  StatusOr<uint8_t*> SyntheticWeight(const rt::Tensor& t);
  StatusOr<rt::KernelArgs> StepArgs(const plan::Step* s);
  // The kernel for one step and its variant label ("", " (fast)", " (widened)", " (fast, widened)").
  StatusOr<std::pair<std::unique_ptr<rt::Kernel>, const char*>> ChooseKernel(rt::KernelFactory reference, rt::KernelFactory fast,
                                                                             const rt::KernelArgs& a);
};

// Order of preference: the fast kernel on the step's own dtypes, the fast kernel widened to FP32
// (steps with FP16/BF16 tensors), the reference kernel, the reference widened. A fast kernel
// that returns Unimplemented from Init does not apply (nor does one that rejects a step with
// 16-bit tensors: the widened form is tried next); the reference kernel's error is the one
// reported when nothing applies. Steps whose float tensors mix FP16/BF16 with FP32 (a compute
// op writing FP32 from FP16 operands) run widened unless a kernel accepts them as they are.
StatusOr<std::pair<std::unique_ptr<rt::Kernel>, const char*>> Session::Impl::ChooseKernel(rt::KernelFactory reference,
                                                                                          rt::KernelFactory fast,
                                                                                          const rt::KernelArgs& a) {
  bool half = rt::WidenKernel::HasHalfTensors(a);
  if (ctx.reference_only) fast = nullptr;
  auto attempt = [&](rt::KernelFactory f, bool widen) -> StatusOr<std::unique_ptr<rt::Kernel>> {
    std::unique_ptr<rt::Kernel> k = widen ? std::make_unique<rt::WidenKernel>(f()) : f();
    PRECIS_RETURN_IF_ERROR(k->Init(a, ctx));
    return k;
  };
  if (fast) {
    auto k = attempt(fast, false);
    if (k.ok()) return std::make_pair(std::move(*k), " (fast)");
    if (!half && k.status().code() != StatusCode::kUnimplemented) return k.status();
    if (half) {
      auto w = attempt(fast, true);
      if (w.ok()) return std::make_pair(std::move(*w), " (fast, widened)");
    }
  }
  auto k = attempt(reference, false);
  if (k.ok()) return std::make_pair(std::move(*k), "");
  if (half) {
    auto w = attempt(reference, true);
    if (w.ok()) return std::make_pair(std::move(*w), " (widened)");
  }
  return k.status();
}

Status Session::Impl::LoadTensors() {
  const plan::Plan* p = view.meta;
  if (!p->tensors() || !p->steps() || !p->inputs() || !p->outputs()) return InvalidArgument("plan lacks tensors, steps, inputs or outputs");
  bool on_cpu = options.device == Device::kCpu;  // on CUDA the arena is on the device
  arena = AllocateAligned(on_cpu ? size_t(p->arena_bytes()) : 0);
  if (!arena) return Internal("cannot allocate the arena (" + std::to_string(p->arena_bytes()) + " bytes)");
  tensors.resize(p->tensors()->size());
  for (size_t i = 0; i < tensors.size(); ++i) {
    const plan::TensorDesc* d = p->tensors()->Get(flatbuffers::uoffset_t(i));
    rt::Tensor& t = tensors[i];
    t.name = d->name() ? d->name()->str() : "#" + std::to_string(i);
    if (!IsValidDataType(d->dtype())) return InvalidArgument("plan tensor '" + t.name + "' has an invalid dtype");
    t.dtype = DataType(d->dtype());
    if (d->dims()) t.dims.assign(d->dims()->begin(), d->dims()->end());
    int64_t n = 1;
    for (int64_t dim : t.dims) {
      if (dim < 0 || (dim > 0 && n > (int64_t(1) << 50) / dim)) return InvalidArgument("plan tensor '" + t.name + "' has bad dims");
      n *= dim;
    }
    t.numel = n;
    t.bytes = size_t(n) * DataTypeSize(t.dtype);
    if (d->bytes() != t.bytes) return InvalidArgument("plan tensor '" + t.name + "' byte size does not match its shape");
    bool constant = d->placement() == plan::Placement_Constant;
    if (constant && d->synthetic()) {
      if (!options.synthetic_weights)
        return InvalidArgument("plan tensor '" + t.name + "' was left out (the plan was compiled with --strip-weights, for " +
                               "benchmarks): open it with synthetic weights (precis bench/precis_plan_bench)");
      PRECIS_ASSIGN_OR_RETURN(t.data, SyntheticWeight(t));
      t.is_constant = true;
      continue;
    }
    uint64_t limit = constant ? view.constants_size : p->arena_bytes();
    if (d->offset() > limit || t.bytes > limit - d->offset()) return InvalidArgument("plan tensor '" + t.name + "' lies outside its section");
    t.is_constant = constant;
    t.data = constant ? const_cast<uint8_t*>(view.constants) + d->offset() : on_cpu ? arena.get() + d->offset() : nullptr;
  }
  auto io = [&](const flatbuffers::Vector<int32_t>* ids, std::vector<TensorInfo>& infos, std::unordered_map<std::string, int>& by_name) -> Status {
    for (int32_t id : *ids) {
      if (id < 0 || size_t(id) >= tensors.size()) return InvalidArgument("plan input/output id out of range");
      const rt::Tensor& t = tensors[size_t(id)];
      infos.push_back({t.name, t.dtype, t.dims});
      by_name[t.name] = id;
    }
    return Status::Ok();
  };
  PRECIS_RETURN_IF_ERROR(io(p->inputs(), inputs, input_ids));
  return io(p->outputs(), outputs, output_ids);
}

// Deterministic pseudo-random values for a stripped weight: uniform in [-1/16, 1/16] (small enough
// that deep nets stay finite in FP16), the same for every session.
StatusOr<uint8_t*> Session::Impl::SyntheticWeight(const rt::Tensor& t) {
  AlignedBuffer buf = AllocateAligned(t.bytes);
  if (!buf) return Internal("cannot allocate synthetic weight '" + t.name + "'");
  uint64_t state = 0x9E3779B97F4A7C15ull ^ t.bytes;
  for (char c : t.name) state = (state ^ uint8_t(c)) * 0x100000001B3ull;
  for (int64_t i = 0; i < t.numel; ++i) {
    state ^= state << 13, state ^= state >> 7, state ^= state << 17;
    float v = (float((state >> 40) & 0xFFFFFF) / float(1 << 24) - 0.5f) * 0.125f;
    uint8_t* p = buf.get() + size_t(i) * DataTypeSize(t.dtype);
    if (t.dtype == DataType::kF32) std::memcpy(p, &v, 4);
    else if (t.dtype == DataType::kF64) { double d = v; std::memcpy(p, &d, 8); }
    else { uint16_t h = t.dtype == DataType::kF16 ? FloatToHalf(v) : FloatToBf16(v); std::memcpy(p, &h, 2); }
  }
  synthetic.push_back(std::move(buf));
  return synthetic.back().get();
}

// The steps' arguments and kernel names, then the CUDA backend, which places every tensor on the
// device and points the model inputs and outputs at pinned staging.
Status Session::Impl::LoadCuda() {
  std::vector<std::string> names;
  for (const plan::Step* s : *view.meta->steps()) {
    PRECIS_ASSIGN_OR_RETURN(rt::KernelArgs a, StepArgs(s));
    names.push_back(s->kernel() ? s->kernel()->str() : "");
    args.push_back(std::move(a));
  }
  std::vector<int> in_ids, out_ids;
  for (int32_t id : *view.meta->inputs()) in_ids.push_back(id);
  for (int32_t id : *view.meta->outputs()) out_ids.push_back(id);
  rt::CudaBackendOptions o;
  o.device_id = options.device_id;
  o.graphs = options.cuda_graphs;
  PRECIS_ASSIGN_OR_RETURN(cuda, rt::CudaBackend::Create(view, tensors, in_ids, out_ids, args, names, o));
  if (options.profile)
    for (size_t i = 0; i < names.size(); ++i) {
      const plan::Step* s = view.meta->steps()->Get(flatbuffers::uoffset_t(i));
      profile.push_back({names[i] + " (cuda)", s->node() ? s->node()->str() : "", 0.0, 0});
    }
  return Status::Ok();
}

StatusOr<rt::KernelArgs> Session::Impl::StepArgs(const plan::Step* s) {
  std::string kernel_name = s->kernel() ? s->kernel()->str() : "";
  rt::KernelArgs a;
  a.node = kernel_name + " '" + (s->node() ? s->node()->str() : "") + "'";
  auto ids = [&](const flatbuffers::Vector<int32_t>* v, std::vector<rt::Tensor*>& out) -> Status {
    if (!v) return Status::Ok();
    for (int32_t id : *v) {
      if (id == -1) out.push_back(nullptr);
      else if (id < 0 || size_t(id) >= tensors.size()) return InvalidArgument(a.node + ": tensor id out of range");
      else out.push_back(&tensors[size_t(id)]);
    }
    return Status::Ok();
  };
  PRECIS_RETURN_IF_ERROR(ids(s->inputs(), a.inputs));
  PRECIS_RETURN_IF_ERROR(ids(s->outputs(), a.outputs));
  a.attrs = rt::Attributes(s->attrs());
  return a;
}

Status Session::Impl::LoadSteps() {
  const auto& registry = rt::KernelRegistry::Cpu();
  size_t scratch_bytes = 0;
  for (const plan::Step* s : *view.meta->steps()) {
    std::string kernel_name = s->kernel() ? s->kernel()->str() : "";
    PRECIS_ASSIGN_OR_RETURN(rt::KernelArgs a, StepArgs(s));
    rt::KernelFactory factory = registry.Find(kernel_name);
    if (!factory) return Unimplemented(a.node + ": the CPU backend has no kernel '" + kernel_name + "'");
    rt::KernelFactory fast = registry.FindFast(kernel_name);
    std::unique_ptr<rt::Kernel> kernel;
    std::string variant;
    // Steps of GPU plans: NHWC convolutions, pools and BatchNormalization, and fused
    // activations, run through adapters around the ordinary kernels (step_adapters.h).
    static const std::set<std::string> nhwc_kernels = {"Conv", "MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool",
                                                       "BatchNormalization"};
    std::string layout = a.attrs.String("layout", "NCHW");
    if (layout == "NHWC" && nhwc_kernels.count(kernel_name)) {
      auto choose = [&](const rt::KernelArgs& inner) -> StatusOr<std::unique_ptr<rt::Kernel>> {
        PRECIS_ASSIGN_OR_RETURN(auto chosen, ChooseKernel(factory, fast, inner));
        variant = std::string(" (NHWC)") + chosen.second;
        return std::move(chosen.first);
      };
      kernel = std::make_unique<rt::NhwcStep>(choose, kernel_name == "Conv");
      PRECIS_RETURN_IF_ERROR(kernel->Init(a, ctx));
    } else if (layout != "NCHW") {
      return Unimplemented(a.node + ": layout '" + layout + "' (the CPU backend runs NCHW, and NHWC for Conv, pools and BatchNormalization)");
    } else {
      PRECIS_ASSIGN_OR_RETURN(auto chosen, ChooseKernel(factory, fast, a));
      kernel = std::move(chosen.first);
      variant = chosen.second;
    }
    if (a.attrs.Has("activation")) {
      kernel = std::make_unique<rt::ActivationEpilogue>(std::move(kernel));
      PRECIS_RETURN_IF_ERROR(kernel->Init(a, ctx));
      variant += " (+" + a.attrs.String("activation", "") + ")";
    }
    if (options.profile)
      profile.push_back({kernel_name + variant, s->node() ? s->node()->str() : "", 0.0, 0});
    scratch_bytes = std::max(scratch_bytes, kernel->ScratchBytes());
    kernels.push_back(std::move(kernel));
    args.push_back(std::move(a));
  }
  if (scratch_bytes) {
    scratch = AllocateAligned(scratch_bytes);
    if (!scratch) return Internal("cannot allocate kernel scratch");
  }
  ctx.scratch = scratch.get();
  return Status::Ok();
}

Status Session::Impl::Load(const uint8_t* data, size_t size) {
  PRECIS_ASSIGN_OR_RETURN(view, plan::ValidatePlan(data, size));
  // Plans for "cuda" hold only steps with CUDA kernels; they run on the CPU too (the reference).
  std::string target = view.meta->target() ? view.meta->target()->str() : "cpu";
  if (target != "cpu" && target != "cuda") return Unimplemented("plan targets '" + target + "', which this runtime does not know");
  precision = view.meta->precision() ? view.meta->precision()->str() : "fp32";
  ctx.threads = options.threads > 0 ? options.threads : int(std::max(1u, std::thread::hardware_concurrency()));
  ctx.reference_only = options.reference_kernels;
  PRECIS_RETURN_IF_ERROR(LoadTensors());
  Status s = options.device == Device::kCuda ? LoadCuda() : LoadSteps();
  home.reserve(tensors.size());
  for (const auto& t : tensors) home.push_back(t.data);
  return s;
}

Session::Session(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Session::~Session() = default;

StatusOr<std::unique_ptr<Session>> Session::Open(const std::string& path, const SessionOptions& options) {
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  PRECIS_ASSIGN_OR_RETURN(impl->file, MappedFile::Open(path));
  Status s = impl->Load(impl->file->data(), impl->file->size());
  if (!s.ok()) return s.WithContext(path);
  return std::unique_ptr<Session>(new Session(std::move(impl)));
}

StatusOr<std::unique_ptr<Session>> Session::FromBuffer(const void* data, size_t size, const SessionOptions& options) {
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  impl->owned_plan = AllocateAligned(size);
  if (!impl->owned_plan) return Internal("cannot allocate the plan copy");
  if (size) std::memcpy(impl->owned_plan.get(), data, size);
  PRECIS_RETURN_IF_ERROR(impl->Load(impl->owned_plan.get(), size));
  return std::unique_ptr<Session>(new Session(std::move(impl)));
}

const std::vector<TensorInfo>& Session::inputs() const { return impl_->inputs; }
const std::vector<TensorInfo>& Session::outputs() const { return impl_->outputs; }
size_t Session::arena_bytes() const { return size_t(impl_->view.meta->arena_bytes()); }
const std::string& Session::precision() const { return impl_->precision; }
std::string Session::device_name() const { return impl_->cuda ? "cuda: " + impl_->cuda->device_name() : "cpu"; }
bool Session::graph_replay() const { return impl_->cuda && impl_->cuda->graph_replay(); }

Status ParseDevice(const std::string& text, Device* device, int* device_id) {
  *device_id = 0;
  if (text == "cpu") {
    *device = Device::kCpu;
    return Status::Ok();
  }
  if (text == "cuda" || text.rfind("cuda:", 0) == 0) {
    *device = Device::kCuda;
    if (text != "cuda") {
      std::string n = text.substr(5);
      if (n.empty() || n.size() > 4 || n.find_first_not_of("0123456789") != std::string::npos)
        return InvalidArgument("bad device '" + text + "' (expected cpu, cuda or cuda:N)");
      *device_id = std::stoi(n);
    }
    return Status::Ok();
  }
  return InvalidArgument("unknown device '" + text + "' (expected cpu, cuda or cuda:N)");
}

static std::string Names(const std::vector<TensorInfo>& infos) {
  std::string s;
  for (const auto& i : infos) s += (s.empty() ? "" : ", ") + i.name;
  return s;
}

Status Session::SetInput(const std::string& name, DataType dtype, const std::vector<int64_t>& dims, const void* data, size_t bytes) {
  auto it = impl_->input_ids.find(name);
  if (it == impl_->input_ids.end()) return InvalidArgument("no input named '" + name + "' (inputs: " + Names(impl_->inputs) + ")");
  rt::Tensor& t = impl_->tensors[size_t(it->second)];
  if (dtype != t.dtype)
    return InvalidArgument("input '" + name + "' must be " + DataTypeName(t.dtype) + ", got " + DataTypeName(dtype));
  if (dims != t.dims)
    return InvalidArgument("input '" + name + "' must have shape " + DimsToString(t.dims) + ", got " + DimsToString(dims));
  if (bytes != t.bytes) return InvalidArgument("input '" + name + "' needs " + std::to_string(t.bytes) + " bytes, got " + std::to_string(bytes));
  t.data = impl_->home[size_t(it->second)];
  if (bytes) std::memcpy(t.data, data, bytes);
  return Status::Ok();
}

Status Session::BindInput(const std::string& name, const void* data, size_t bytes) {
  auto it = impl_->input_ids.find(name);
  if (it == impl_->input_ids.end()) return InvalidArgument("no input named '" + name + "'");
  rt::Tensor& t = impl_->tensors[size_t(it->second)];
  if (bytes != t.bytes) return InvalidArgument("input '" + name + "' needs " + std::to_string(t.bytes) + " bytes, got " + std::to_string(bytes));
  t.data = static_cast<uint8_t*>(const_cast<void*>(data));
  return Status::Ok();
}

Status Session::BindOutput(const std::string& name, void* data, size_t bytes) {
  auto it = impl_->output_ids.find(name);
  if (it == impl_->output_ids.end()) return InvalidArgument("no output named '" + name + "'");
  rt::Tensor& t = impl_->tensors[size_t(it->second)];
  if (t.is_constant) return InvalidArgument("output '" + name + "' is a constant and cannot be bound");
  if (bytes != t.bytes) return InvalidArgument("output '" + name + "' needs " + std::to_string(t.bytes) + " bytes, got " + std::to_string(bytes));
  t.data = static_cast<uint8_t*>(data);
  return Status::Ok();
}

Status Session::Run() {
  Impl& m = *impl_;
  if (m.cuda) return m.cuda->Run(m.tensors, m.profile.empty() ? nullptr : &m.profile, m.observer);
  bool timed = !m.profile.empty();
  for (size_t i = 0; i < m.kernels.size(); ++i) {
    auto start = timed ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point();
    PRECIS_RETURN_IF_ERROR(m.kernels[i]->Run(m.args[i], m.ctx));
    if (timed) {
      m.profile[i].total_ms += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
      ++m.profile[i].runs;
    }
    if (m.observer)
      for (const rt::Tensor* out : m.args[i].outputs)
        if (out) m.observer(TensorData{{out->name, out->dtype, out->dims}, out->data});
  }
  return Status::Ok();
}

void Session::SetStepObserver(std::function<void(const TensorData&)> observer) { impl_->observer = std::move(observer); }

std::string Session::report(bool json) const {
  const auto* s = json ? impl_->view.meta->report_json() : impl_->view.meta->report_text();
  return s ? s->str() : std::string();
}

const std::vector<StepProfile>& Session::profile() const { return impl_->profile; }

StatusOr<TensorData> Session::Output(const std::string& name) const {
  auto it = impl_->output_ids.find(name);
  if (it == impl_->output_ids.end()) return InvalidArgument("no output named '" + name + "' (outputs: " + Names(impl_->outputs) + ")");
  const rt::Tensor& t = impl_->tensors[size_t(it->second)];
  return TensorData{{t.name, t.dtype, t.dims}, t.data};
}

}  // namespace precis
