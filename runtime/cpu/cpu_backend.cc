// The CPU backend: one host arena and one host state region as planned, a kernel object per step
// of every program (fast kernel where one applies, else the reference kernel; 16-bit steps a
// kernel does not take natively run widened to FP32), and a loop that runs a program's steps.
#include <algorithm>
#include <chrono>
#include <cstring>
#include <thread>

#include <unistd.h>

#include "runtime/base/aligned_buffer.h"
#include "runtime/base/cpu_features.h"
#include "runtime/cpu/elf_module.h"
#include "runtime/cpu/capabilities.h"
#include "runtime/cpu/kernel.h"
#include "runtime/cpu/step_adapters.h"
#include "runtime/cpu/widen_kernel.h"
#include "runtime/exec/backend.h"
#include "runtime/exec/evaluator.h"

namespace precis::rt {
namespace {

using Chosen = std::pair<std::unique_ptr<Kernel>, const char*>;

class CpuBackend final : public Backend, public ProgramRunner {
 public:
  explicit CpuBackend(const SessionOptions& options) : options_(options) {
    ctx_.programs = this;
    ctx_.threads = options.threads > 0 ? options.threads : int(std::max(1u, std::thread::hardware_concurrency()));
    ctx_.reference_only = options.reference_kernels;
    ctx_.fp32_weights = options.cpu_fp32_weights;
    ctx_.max_loop_iterations = options.max_loop_iterations;
  }

  Status Prepare(LoadedPlan& plan) override;
  Status Run(size_t program, std::vector<StepProfile>* profile, const std::function<void(const TensorData&)>& observer) override;
  Status ReadState(int id, void* dst) override {
    const Tensor& t = (*plan_->tensors)[size_t(id)];
    if (t.bytes) std::memcpy(dst, t.data, t.bytes);
    return Status::Ok();
  }
  Status WriteState(int id, const void* src) override {
    const Tensor& t = (*plan_->tensors)[size_t(id)];
    if (t.bytes) std::memcpy(t.data, src, t.bytes);
    return Status::Ok();
  }
  std::vector<std::string> StepLabels(size_t program) const override { return programs_[program].labels; }
  std::string device_name() const override { return "cpu"; }
  bool dynamic_shapes() const override { return true; }
  Status Reshape(LoadedPlan& plan, const std::vector<int64_t>& key) override;
  std::vector<std::string> Fallbacks() const override { return fallbacks_; }

  // ProgramRunner: the bodies of control-flow steps.
  const Io* Body(int64_t p, int caller) const override {
    if (p <= caller || p < 0 || size_t(p) >= bodies_.size() || !plan_->programs[size_t(p)].body) return nullptr;
    return &bodies_[size_t(p)];
  }
  // A body's steps are observed like the program's (calibration sees the tensors of every
  // iteration); they are not profiled on their own (their step's time includes them).
  Status RunBody(int64_t p) override {
    static const std::function<void(const TensorData&)> kNone;
    return Run(size_t(p), nullptr, observer_ ? *observer_ : kNone);
  }
  // A Loop body whose dims follow the iteration number: its kernels, and those of the bodies of
  // its control-flow steps, prepared anew for each iteration's dims.
  Status BindIteration(int64_t p, int64_t iteration) override {
    if (!plan_->bind_iteration) return Status::Ok();
    PRECIS_ASSIGN_OR_RETURN(bool changed, plan_->bind_iteration(size_t(p), iteration));
    if (!changed) return Status::Ok();
    std::vector<size_t> todo{size_t(p)};
    for (size_t k = 0; k < todo.size(); ++k) {
      const ProgramSteps& prog = plan_->programs[todo[k]];
      for (size_t i = 0; i < prog.steps.size(); ++i) {
        PRECIS_RETURN_IF_ERROR(BuildLateStep(todo[k], i));
        for (const char* attr : {"then_program", "else_program", "body_program"}) {
          int64_t body = prog.steps[i].attrs.Int(attr, -1);
          if (body > int64_t(todo[k]) && size_t(body) < plan_->programs.size() && plan_->programs[size_t(body)].body &&
              std::find(todo.begin(), todo.end(), size_t(body)) == todo.end())
            todo.push_back(size_t(body));
        }
      }
    }
    return Status::Ok();
  }

 private:
  struct Program {
    std::vector<std::unique_ptr<Kernel>> kernels;
    std::vector<std::string> labels;
  };
  StatusOr<Chosen> ChooseKernel(KernelFactory reference, KernelFactory fast, const KernelArgs& a, bool widen);
  StatusOr<std::unique_ptr<Kernel>> MakeStepKernel(const std::string& kernel_name, const std::string& layout, bool widen,
                                                   const KernelArgs& a, std::string& label);
  Status PlaceTensors();
  Status PlaceArena();
  Status BuildKernels(std::vector<Program>& out, size_t& scratch_bytes);
  Status BuildStep(size_t prog, size_t i, Program& out, size_t& scratch_bytes);
  Status BuildLateStep(size_t prog, size_t i);
  Status LoadGeneratedCode();

  SessionOptions options_;
  CpuContext ctx_;
  LoadedPlan* plan_ = nullptr;
  AlignedBuffer arena_, state_, scratch_;
  size_t arena_capacity_ = 0, scratch_capacity_ = 0;
  std::vector<Program> programs_;
  // Dynamic plans: the kernels of the shapes used last (most recent first), programs_ the
  // current shape's; a shape seen again reuses its kernels instead of preparing them anew.
  static constexpr size_t kCachedShapes = 8;
  std::vector<int64_t> key_;
  struct CachedShape {
    std::vector<int64_t> key;
    std::vector<Program> programs;
    std::vector<std::string> fallbacks;
  };
  std::vector<CachedShape> cached_;
  std::vector<Io> bodies_;  // per program: its input and output tensors
  const std::function<void(const TensorData&)>* observer_ = nullptr;  // of the Run in progress
  std::unique_ptr<ElfModule> code_;
  std::string code_target_, no_code_;  // the module loaded; why none was, when the plan has some
  std::vector<std::string> fallbacks_;
};

// The plan's generated code for the best x86-64 level this CPU runs (plan.fbs Module, kind Elf).
// A module that fails to load is a corrupt plan. None is loaded for reference-kernel sessions,
// or with PRECIS_CPU_CODEGEN=0 in the environment (A/B benchmarks): fused steps then run the
// reference kernel, and Fallbacks() says so. PRECIS_CPU_CODEGEN=x86-64-v3 (or -v4) restricts the
// choice to that target (tests run the AVX2 code on AVX-512 machines).
Status CpuBackend::LoadGeneratedCode() {
  const plan::Plan* p = plan_->view->meta;
  if (!p->modules() || p->modules()->size() == 0) return Status::Ok();
  if (ctx_.reference_only) return Status::Ok();
  if (const char* env = std::getenv("PRECIS_CPU_CODEGEN"); env && std::strcmp(env, "0") == 0) {
    no_code_ = "PRECIS_CPU_CODEGEN=0";
    return Status::Ok();
  }
  const CpuFeatures& f = HostCpuFeatures();
  const char* only = std::getenv("PRECIS_CPU_CODEGEN");
  for (const char* target : {"x86-64-v4", "x86-64-v3"}) {
    if (std::strcmp(target, "x86-64-v4") == 0 ? !f.x86_64_v4 : !f.x86_64_v3) continue;
    if (only && *only && std::strcmp(only, target) != 0) continue;
    for (const plan::Module* m : *p->modules()) {
      if (m->kind() != plan::ModuleKind_Elf || !m->target() || m->target()->str() != target || !m->code()) continue;
      auto loaded = ElfModule::Load(m->code()->data(), m->code()->size());
      if (!loaded.ok()) return loaded.status().WithContext("plan module '" + (m->name() ? m->name()->str() : std::string("?")) + "'");
      code_ = std::move(*loaded);
      code_target_ = target;
      ctx_.code = code_.get();
      return Status::Ok();
    }
  }
  no_code_ = only && *only ? std::string("PRECIS_CPU_CODEGEN=") + only + " names no target of the plan that this CPU runs"
                           : "this CPU runs none of the plan's generated code targets";
  return Status::Ok();
}

// Order of preference: the fast kernel on the step's own dtypes, the fast kernel widened to FP32,
// the reference kernel, the reference widened; the widened forms only for steps the plan marks
// widened on the CPU (Step.widen, decided by the compiler from runtime/cpu/capabilities.h). A
// fast kernel that returns Unimplemented from Init does not apply (nor does one that rejects a
// marked step's 16-bit tensors: the widened form is tried next); the reference kernel's error is
// the one reported when nothing applies, naming the missing mark for an unmarked 16-bit step.
StatusOr<Chosen> CpuBackend::ChooseKernel(KernelFactory reference, KernelFactory fast, const KernelArgs& a, bool widen) {
  bool has_half = WidenKernel::HasHalfTensors(a), half = widen && has_half;
  if (ctx_.reference_only) fast = nullptr;
  auto attempt = [&](KernelFactory f, bool widen) -> StatusOr<std::unique_ptr<Kernel>> {
    std::unique_ptr<Kernel> k = widen ? std::make_unique<WidenKernel>(f()) : f();
    PRECIS_RETURN_IF_ERROR(k->Init(a, ctx_));
    return k;
  };
  if (fast) {
    auto k = attempt(fast, false);
    if (k.ok()) return std::make_pair(std::move(*k), " (fast)");
    if (!has_half && k.status().code() != StatusCode::kUnimplemented) return k.status();
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
  if (!widen && has_half)
    return k.status().WithContext("the CPU kernels do not take this step's 16-bit dtypes as they are, and the plan does not mark it widened "
                                  "(compiled with another capability table: recompile the model)");
  return k.status();
}

// Steps with layout = "NHWC" (CPU plans' channels-last regions, GPU plans' tensor-core regions)
// run on a channels-last kernel where one is registered and takes the step, else through the
// NhwcStep adapter around the ordinary kernels; a fused activation runs in the kernel (a oneDNN
// post-op) or through ActivationEpilogue (step_adapters.h).
StatusOr<std::unique_ptr<Kernel>> CpuBackend::MakeStepKernel(const std::string& kernel_name, const std::string& layout, bool widen,
                                                              const KernelArgs& a, std::string& label) {
  const auto& registry = KernelRegistry::Cpu();
  KernelFactory factory = registry.Find(kernel_name);
  if (!factory) return Unimplemented(a.node + ": the CPU backend has no kernel '" + kernel_name + "'");
  KernelFactory fast = registry.FindFast(kernel_name);
  const auto& nhwc = cpu_capabilities::kNhwcKernels;
  bool nhwc_kernel = std::find(nhwc.begin(), nhwc.end(), kernel_name) != nhwc.end();
  std::unique_ptr<Kernel> kernel;
  std::string variant;
  if (layout == "NHWC" && nhwc_kernel) {
    // A kernel of its own for the channels-last step first (oneDNN's convolution); else the NCHW
    // kernels between transposes.
    if (KernelFactory native = ctx_.reference_only ? nullptr : registry.FindNhwc(kernel_name)) {
      StatusOr<Chosen> chosen = ChooseKernel(native, nullptr, a, widen);
      if (chosen.ok()) {
        kernel = std::move(chosen->first);
        variant = std::string(" (NHWC)") + chosen->second;
      } else if (chosen.status().code() != StatusCode::kUnimplemented) {
        return chosen.status();
      }
    }
    if (!kernel) {
      auto choose = [&, factory, fast, widen](const KernelArgs& inner) -> StatusOr<std::unique_ptr<Kernel>> {
        PRECIS_ASSIGN_OR_RETURN(Chosen chosen, ChooseKernel(factory, fast, inner, widen));
        variant = std::string(" (NHWC by transposes)") + chosen.second;
        return std::move(chosen.first);
      };
      kernel = std::make_unique<NhwcStep>(choose, kernel_name == "Conv");
      PRECIS_RETURN_IF_ERROR(kernel->Init(a, ctx_));
    }
  } else if (!layout.empty() && layout != "NCHW") {
    return Unimplemented(a.node + ": layout '" + layout + "' (the CPU backend runs NCHW, and NHWC for Conv, pools and BatchNormalization)");
  } else {
    PRECIS_ASSIGN_OR_RETURN(Chosen chosen, ChooseKernel(factory, fast, a, widen));
    kernel = std::move(chosen.first);
    variant = chosen.second;
  }
  if (const char* v = kernel->Variant()) variant += std::string(" (") + v + ")";
  if (a.attrs.Has("activation") && kernel->AppliesActivation()) {
    variant += " (+" + a.attrs.String("activation", "") + " post-op)";
  } else if (a.attrs.Has("activation")) {
    kernel = std::make_unique<ActivationEpilogue>(std::move(kernel));
    PRECIS_RETURN_IF_ERROR(kernel->Init(a, ctx_));
    variant += " (+" + a.attrs.String("activation", "") + ")";
  }
  label = kernel_name + variant;
  return kernel;
}

// The arena as the session placed it (the plan's offsets, or a dynamic plan's for the current
// shape), grown when a shape needs more. Refused before allocating: a plan (or a corrupt one)
// asking for more than this machine's memory would otherwise fail later, or be killed, deep
// inside a run.
Status CpuBackend::PlaceArena() {
  uint64_t memory = uint64_t(sysconf(_SC_PHYS_PAGES)) * uint64_t(sysconf(_SC_PAGESIZE));
  uint64_t state_bytes = plan_->view->meta->state_bytes();
  if (plan_->arena_bytes > memory || state_bytes > memory - std::min(memory, plan_->arena_bytes))
    return OutOfRange("the plan needs " + std::to_string(plan_->arena_bytes) + " bytes of arena and " + std::to_string(state_bytes) +
                      " bytes of state, more than this machine's " + std::to_string(memory) + " bytes of memory");
  if (!arena_ || plan_->arena_bytes > arena_capacity_) {
    arena_ = AllocateAligned(size_t(plan_->arena_bytes));
    if (!arena_) return Internal("cannot allocate the arena (" + std::to_string(plan_->arena_bytes) + " bytes)");
    arena_capacity_ = size_t(plan_->arena_bytes);
  }
  std::vector<Tensor>& tensors = *plan_->tensors;
  const plan::Plan* p = plan_->view->meta;
  for (size_t i = 0; i < tensors.size(); ++i)
    if (p->tensors()->Get(flatbuffers::uoffset_t(i))->placement() == plan::Placement_Arena) tensors[i].data = arena_.get() + plan_->arena_offsets[i];
  return Status::Ok();
}

// Arena and state tensors get their host storage; state starts from its initial value.
Status CpuBackend::PlaceTensors() {
  PRECIS_RETURN_IF_ERROR(PlaceArena());
  const plan::Plan* p = plan_->view->meta;
  state_ = AllocateAligned(size_t(p->state_bytes()));
  if (!state_) return Internal("cannot allocate the state (" + std::to_string(p->state_bytes()) + " bytes)");
  std::vector<Tensor>& tensors = *plan_->tensors;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const plan::TensorDesc* d = p->tensors()->Get(flatbuffers::uoffset_t(i));
    if (d->placement() != plan::Placement_State) continue;
    tensors[i].data = state_.get() + d->offset();
    if (tensors[i].bytes) std::memcpy(tensors[i].data, plan_->view->constants + d->init_offset(), tensors[i].bytes);
  }
  return Status::Ok();
}

// The kernel of step i of program `prog`, for the tensors' current dims.
Status CpuBackend::BuildStep(size_t prog, size_t i, Program& out, size_t& scratch_bytes) {
  const ProgramSteps& p = plan_->programs[prog];
  ctx_.program = int(prog);
  std::string label;
  auto k = MakeStepKernel(p.kernels[i], p.layouts[i], (p.widen[i] & 1) != 0, p.steps[i], label);
  ctx_.program = -1;
  PRECIS_RETURN_IF_ERROR(k.status());
  if (!p.steps[i].attrs.KindError().empty()) return p.steps[i].Error(p.steps[i].attrs.KindError());
  scratch_bytes = std::max(scratch_bytes, (*k)->ScratchBytes());
  if (p.kernels[i] == "FusedElementwise" && !ctx_.reference_only) {
    if (label.find("(fast)") != std::string::npos) label += " [" + code_target_ + "]";
    else if (std::string why = p.steps[i].node + ": reference interpreter, not generated code (" + (no_code_.empty() ? "no function for it" : no_code_) + ")";
             std::find(fallbacks_.begin(), fallbacks_.end(), why) == fallbacks_.end())
      fallbacks_.push_back(why);  // (a Loop body's steps are prepared again per iteration)
  }
  out.kernels[i] = std::move(*k);
  out.labels[i] = std::move(label);
  return Status::Ok();
}

// A kernel for every step of every program, for the tensors' current dims. Plans with data dims
// (LoadedPlan::bind_data_dims) build the kernels of entry programs when a step first runs: the
// dims of a step after a data-dependent one are known only then.
Status CpuBackend::BuildKernels(std::vector<Program>& programs, size_t& scratch_bytes) {
  fallbacks_.clear();
  for (size_t prog = 0; prog < plan_->programs.size(); ++prog) {
    const ProgramSteps& p = plan_->programs[prog];
    Program& out = programs.emplace_back();
    out.kernels.resize(p.steps.size());
    out.labels = p.kernels;
    if (plan_->bind_data_dims && !p.body) continue;
    for (size_t i = 0; i < p.steps.size(); ++i) PRECIS_RETURN_IF_ERROR(BuildStep(prog, i, out, scratch_bytes));
  }
  return Status::Ok();
}

// A step's kernel built when it first runs (BuildKernels), with scratch grown for it.
Status CpuBackend::BuildLateStep(size_t prog, size_t i) {
  size_t scratch_bytes = 0;
  PRECIS_RETURN_IF_ERROR(BuildStep(prog, i, programs_[prog], scratch_bytes));
  if (scratch_bytes > scratch_capacity_) {
    scratch_ = AllocateAligned(scratch_bytes);
    if (!scratch_) return Internal("cannot allocate kernel scratch (" + std::to_string(scratch_bytes) + " bytes)");
    scratch_capacity_ = scratch_bytes;
    ctx_.scratch = scratch_.get();
  }
  return Status::Ok();
}

Status CpuBackend::Prepare(LoadedPlan& plan) {
  plan_ = &plan;
  bodies_.clear();  // a dynamic plan's first shape may be prepared again after a failed try
  programs_.clear();
  PRECIS_RETURN_IF_ERROR(PlaceTensors());
  PRECIS_RETURN_IF_ERROR(LoadGeneratedCode());
  for (const ProgramSteps& p : plan.programs) {
    Io& io = bodies_.emplace_back();
    for (int id : p.inputs) io.inputs.push_back(&(*plan.tensors)[size_t(id)]);
    for (int id : p.outputs) io.outputs.push_back(&(*plan.tensors)[size_t(id)]);
  }
  size_t scratch_bytes = 0;
  PRECIS_RETURN_IF_ERROR(BuildKernels(programs_, scratch_bytes));
  if (scratch_bytes) {
    scratch_ = AllocateAligned(scratch_bytes);
    if (!scratch_) return Internal("cannot allocate kernel scratch (" + std::to_string(scratch_bytes) + " bytes)");
    scratch_capacity_ = scratch_bytes;
  }
  ctx_.scratch = scratch_.get();
  key_ = plan.binding;
  return Status::Ok();
}

// A dynamic plan's new shape: the arena placed again (grown when needed) and the shape's kernels,
// from the cache or built. The current kernels are cached under their shape first; a shape whose
// kernels fail to build leaves no kernels current (the session binds anew before the next run).
Status CpuBackend::Reshape(LoadedPlan& plan, const std::vector<int64_t>& key) {
  plan_ = &plan;
  PRECIS_RETURN_IF_ERROR(PlaceArena());
  if (!programs_.empty() && !key_.empty()) cached_.insert(cached_.begin(), CachedShape{key_, std::move(programs_), fallbacks_});
  programs_.clear();
  key_.clear();
  auto hit = std::find_if(cached_.begin(), cached_.end(), [&](const CachedShape& c) { return c.key == key; });
  size_t scratch_bytes = 0;
  if (hit != cached_.end()) {
    programs_ = std::move(hit->programs);
    fallbacks_ = std::move(hit->fallbacks);
    cached_.erase(hit);
    for (const Program& p : programs_)
      for (const auto& k : p.kernels)
        if (k) scratch_bytes = std::max(scratch_bytes, k->ScratchBytes());
  } else {
    std::vector<Program> built;
    PRECIS_RETURN_IF_ERROR(BuildKernels(built, scratch_bytes));
    programs_ = std::move(built);
  }
  if (cached_.size() > kCachedShapes) cached_.resize(kCachedShapes);
  if (scratch_bytes > scratch_capacity_) {
    scratch_ = AllocateAligned(scratch_bytes);
    if (!scratch_) return Internal("cannot allocate kernel scratch (" + std::to_string(scratch_bytes) + " bytes)");
    scratch_capacity_ = scratch_bytes;
  }
  ctx_.scratch = scratch_.get();
  key_ = key;
  return Status::Ok();
}

Status CpuBackend::Run(size_t program, std::vector<StepProfile>* profile, const std::function<void(const TensorData&)>& observer) {
  const ProgramSteps& p = plan_->programs[program];
  struct Restore {
    const std::function<void(const TensorData&)>*& slot;
    const std::function<void(const TensorData&)>* saved;
    ~Restore() { slot = saved; }
  } restore{observer_, observer_};
  observer_ = observer ? &observer : nullptr;
  // programs_ is indexed afresh for every step: a step that binds a data dim has the session
  // reshape the backend, which swaps in the kernels of the new binding.
  for (size_t i = 0; i < programs_[program].kernels.size(); ++i) {
    if (p.predicates[i] && p.predicates[i]->data[0] == 0) continue;
    if (!programs_[program].kernels[i]) PRECIS_RETURN_IF_ERROR(BuildLateStep(program, i));
    auto start = profile ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point();
    PRECIS_RETURN_IF_ERROR(programs_[program].kernels[i]->Run(p.steps[i], ctx_));
    if (i < p.binds_dims.size() && p.binds_dims[i] && plan_->bind_data_dims) PRECIS_RETURN_IF_ERROR(plan_->bind_data_dims(program, i));
    if (profile) {
      (*profile)[i].total_ms += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
      ++(*profile)[i].runs;
    }
    if (observer)
      for (const Tensor* out : p.steps[i].outputs)
        if (out) observer(TensorData{{out->name, out->dtype, out->dims}, out->data});
  }
  return Status::Ok();
}

StatusOr<std::unique_ptr<Backend>> CreateCpuBackend(const SessionOptions& options) { return std::unique_ptr<Backend>(new CpuBackend(options)); }

[[maybe_unused]] const bool kRegistered = RegisterBackend(Device::kCpu, &CreateCpuBackend);

// Compile-time evaluation (constant folding): the reference kernel, single-threaded, with its
// own scratch.
Status EvaluateWithReferenceKernel(const std::string& kernel_name, const KernelArgs& args) {
  KernelFactory factory = KernelRegistry::Cpu().Find(kernel_name);
  if (!factory) return Unimplemented(args.node + ": no CPU kernel '" + kernel_name + "' to evaluate it");
  std::unique_ptr<Kernel> kernel = factory();
  CpuContext ctx;
  ctx.reference_only = true;
  PRECIS_RETURN_IF_ERROR(kernel->Init(args, ctx));
  std::vector<uint8_t> scratch(kernel->ScratchBytes());
  ctx.scratch = scratch.data();
  return kernel->Run(args, ctx);
}

[[maybe_unused]] const bool kEvaluatorRegistered = RegisterStepEvaluator(&EvaluateWithReferenceKernel);

}  // namespace
}  // namespace precis::rt
