// The seam between the session and a backend. The session validates the plan, builds the tensor
// table and each program's step arguments, and then only dispatches: a Backend creates the
// kernels, owns the memory (arena, state, device copies) and runs programs. Backends register
// themselves by device (RegisterBackend, from a static initializer in the backend's library);
// the session never names a backend.
//
// Contract of Prepare: every step of every program gets a kernel, or the error names the step
// (all steps without a kernel in one message); the arena and the state are allocated once, the
// state initialized from the plan; afterwards every non-constant tensor's data points at host
// memory the session reads and writes (the arena on the CPU; pinned staging for inputs, outputs
// on a device backend; state tensors may have no host data: use ReadState/WriteState). Run
// allocates nothing on the CPU (a step that binds a data dim excepted: the later steps are then
// prepared for the size it found). Steps with a predicate run only when its bool value is true.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "precis/session.h"
#include "runtime/exec/step.h"
#include "runtime/plan/plan_format.h"

namespace precis::rt {

// One program of a loaded plan, over the session's tensor table.
struct ProgramSteps {
  std::string name;
  std::vector<KernelArgs> steps;
  std::vector<std::string> kernels;        // each step's kernel name
  std::vector<std::string> layouts;        // each step's layout ("" or "NCHW": the default)
  std::vector<const Tensor*> predicates;   // each step's predicate (a bool scalar) or nullptr
  std::vector<uint8_t> widen;              // each step's Step.widen bits (bit 0 CPU, bit 1 CUDA)
  std::vector<int> inputs, outputs;        // tensor ids
  bool body = false;                       // the body of a control-flow step (plan.fbs Program.body)
  // Per step: 1 where the step binds a data dim (plan.fbs Plan.data_symbols): after it runs the
  // backend calls LoadedPlan::bind_data_dims before the next step.
  std::vector<uint8_t> binds_dims;
};

struct LoadedPlan {
  const plan::PlanView* view = nullptr;
  std::vector<Tensor>* tensors = nullptr;  // constants readable on the host; the rest without data
  std::vector<ProgramSteps> programs;
  std::vector<int> state;                  // ids of State tensors
  // Where arena tensors lie: the plan's offsets, or for a dynamic plan those the session planned
  // for the current binding of its symbols (then tensors' dims and byte sizes are that binding's).
  std::vector<uint64_t> arena_offsets;     // per tensor (0 for non-arena tensors)
  uint64_t arena_bytes = 0;
  std::vector<int64_t> binding;            // a dynamic plan's symbol values (Prepare and Reshape)
  // Set by the session for plans with data dims: after a step with binds_dims has run, it reads
  // the sizes the step wrote into its output dims, sets every tensor's dims for them (the arena
  // stays as planned for the bounds) and calls Reshape for the new binding; the backend then
  // runs the rest of the program with the new kernels.
  std::function<Status(size_t program, size_t step)> bind_data_dims;
  // Set by the session for plans whose Loop bodies' dims follow the iteration number
  // (plan.fbs Plan.iteration_symbols): before each iteration of the Loop whose body is `program`
  // the backend calls it; it sets every tensor's dims for that iteration (the arena stays as
  // planned for the last) and returns whether they changed, and the backend then prepares the
  // body's steps (and those of bodies inside it) for them.
  std::function<StatusOr<bool>(size_t program, int64_t iteration)> bind_iteration;
};

class Backend {
 public:
  virtual ~Backend() = default;
  // The plan and its tensor table must outlive the backend.
  virtual Status Prepare(LoadedPlan& plan) = 0;
  // Runs program `program`; `profile` (one entry per step) gets each step's time when non-null;
  // `observer` sees every step's outputs (host copies) when set.
  virtual Status Run(size_t program, std::vector<StepProfile>* profile, const std::function<void(const TensorData&)>& observer) = 0;
  // State tensor `id`: its bytes to/from host memory of its byte size.
  virtual Status ReadState(int id, void* dst) = 0;
  virtual Status WriteState(int id, const void* src) = 0;
  // "Conv (fast)", "MatMul (cuda)": each step's kernel and variant, for profiles.
  virtual std::vector<std::string> StepLabels(size_t program) const = 0;
  virtual std::string device_name() const = 0;
  virtual bool graph_replay() const { return false; }
  // Dynamic plans: whether the backend runs them, and Reshape, called after Prepare whenever the
  // session has bound the symbols anew (tensor dims, byte sizes and arena offsets changed): the
  // arena is placed again and every step gets a kernel for the new dims. `key` (the binding)
  // names the shape, so a backend may keep the kernels of recent shapes and reuse them.
  virtual bool dynamic_shapes() const { return false; }
  virtual Status Reshape(LoadedPlan& plan, const std::vector<int64_t>& key) {
    (void)plan;
    (void)key;
    return Unimplemented("this backend runs plans with static shapes only");
  }
  // Steps (and programs) running a slower path than planned: a library refused the problem and a
  // plain kernel runs it, a CUDA graph capture failed. One line each, naming the step.
  virtual std::vector<std::string> Fallbacks() const { return {}; }
};

using BackendFactory = StatusOr<std::unique_ptr<Backend>> (*)(const SessionOptions& options);

// Registers the backend of `device` (once per device; a second registration is a bug). Returns
// true so that a backend can register from a namespace-scope initializer.
bool RegisterBackend(Device device, BackendFactory factory);
// nullptr when this build has no backend for `device`.
BackendFactory FindBackend(Device device);

}  // namespace precis::rt
