// The CPU kernel interface. The runtime knows kernels, not ONNX: each plan step names a kernel
// (by default the operator it came from) with normalized attributes, and the session creates one
// Kernel object per step at load time.
//
// Contract: Init runs once at load with every tensor's dtype and static dims known and constant
// inputs readable; it validates (errors name the node), precomputes, and declares scratch. Run
// executes with the data pointers of that run (bound inputs may move between runs); it must not
// allocate. An output may share storage with input 0 when the compiler planned it in place
// (only for kernels whose OpDef allows it); such kernels must read each element before writing
// the same position.
#pragma once

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "precis/status.h"
#include "precis/types.h"
#include "runtime/exec/step.h"

namespace precis::rt {

class ElfModule;

// The bodies of control-flow steps (If, Loop, Scan) are programs of the plan; the backend runs
// them for the step's kernel (runtime/cpu/kernels/control_flow.cc).
class ProgramRunner {
 public:
  struct Io {
    std::vector<Tensor*> inputs, outputs;
  };
  virtual ~ProgramRunner() = default;
  // Program `p`'s inputs and outputs when p is a body program that comes after program `caller`
  // (so that bodies cannot recurse); nullptr otherwise.
  virtual const Io* Body(int64_t p, int caller) const = 0;
  virtual Status RunBody(int64_t p) = 0;
  // Before iteration `iteration` of a Loop whose body is program `p`: the body's tensors and
  // kernels for that iteration's dims, where they follow it (plan.fbs Plan.iteration_symbols).
  virtual Status BindIteration(int64_t p, int64_t iteration) {
    (void)p, (void)iteration;
    return Status::Ok();
  }
};

struct CpuContext {
  int threads = 1;
  bool reference_only = false;  // force the plain reference kernels
  bool fp32_weights = false;    // SessionOptions::cpu_fp32_weights
  uint8_t* scratch = nullptr;   // ScratchBytes() of this step, valid during Run
  const ElfModule* code = nullptr;  // the plan's generated code for this CPU, when loaded
  ProgramRunner* programs = nullptr;  // set by the backend; nullptr where steps run alone
  int64_t max_loop_iterations = 0;    // SessionOptions::max_loop_iterations
  int program = -1;                   // during Init: the program whose step is being prepared
};

class Kernel {
 public:
  virtual ~Kernel() = default;
  virtual Status Init(const KernelArgs& args, const CpuContext& ctx) {
    (void)args;
    (void)ctx;
    return Status::Ok();
  }
  virtual Status Run(const KernelArgs& args, CpuContext& ctx) = 0;
  virtual size_t ScratchBytes() const { return 0; }
  // Whether Run reads constant input `i` (false: Init copied what it needs, e.g. weights
  // reordered into the kernel's own layout; a wrapper may then free a copy it made for Init).
  virtual bool ReadsConstantInput(size_t i) const { (void)i; return true; }
  // Whether Run applies the step's fused `activation` attribute itself (a oneDNN post-op); the
  // backend otherwise runs the step through ActivationEpilogue (step_adapters.h).
  virtual bool AppliesActivation() const { return false; }
  // A word for the step's label in profiles (`precis bench --profile`) when the kernel chose one
  // of several ways to run it at Init (e.g. "16-bit in bands"); nullptr otherwise.
  virtual const char* Variant() const { return nullptr; }
};

using KernelFactory = std::unique_ptr<Kernel> (*)();

// Kernels by name. Each name has one reference kernel (the oracle: plain, always applicable)
// and optionally fast kernels. A fast kernel's Init returns Unimplemented when it does not apply
// to a step (dtype, attributes, CPU features); the session then falls back to the reference.
class KernelRegistry {
 public:
  // The registry with every CPU kernel registered.
  static const KernelRegistry& Cpu();
  void Register(const std::string& name, KernelFactory factory);      // the reference kernel
  void RegisterFast(const std::string& name, KernelFactory factory);  // tried first
  // A kernel that reads and writes the channels-last form of a step with layout = "NHWC"
  // (passes/choose_layout.h) directly; without one, or when it declines, the backend runs the
  // NCHW kernels between transposes (NhwcStep, step_adapters.h).
  void RegisterNhwc(const std::string& name, KernelFactory factory);
  KernelFactory Find(const std::string& name) const;                  // the reference kernel
  KernelFactory FindFast(const std::string& name) const;              // nullptr when none
  KernelFactory FindNhwc(const std::string& name) const;              // nullptr when none
  std::vector<std::string> Names() const;

 private:
  struct Entry {
    std::string name;
    KernelFactory reference = nullptr;
    KernelFactory fast = nullptr;
    KernelFactory nhwc = nullptr;
  };
  Entry& Slot(const std::string& name);
  const Entry* Lookup(const std::string& name) const;
  std::vector<Entry> kernels_;  // sorted by name
};

template <typename K>
std::unique_ptr<Kernel> Make() {
  return std::make_unique<K>();
}

}  // namespace precis::rt
