// precis::Session: load a plan, bind inputs and outputs, run it.
//
// Contract: Open/FromBuffer validate the whole plan (format, checksum, every step's kernel,
// dtypes and shapes) and allocate everything once: one arena for all activations. Run()
// allocates nothing. SetInput copies into the session; BindInput/BindOutput make the session
// read from / write to caller memory instead (which must stay valid, with the exact byte size,
// until unbound or the session ends). Output() points into the session (or at the bound memory)
// and stays valid until the next Run.
// Threads: a Session is not thread-safe (one thread at a time may call it; its kernels may use
// several threads inside Run). Distinct sessions are independent and may run concurrently on any
// threads, also on the same plan file (each maps it read-only): nothing is shared between them but
// immutable registries (tests/runtime/concurrency_test.cc, also under ThreadSanitizer).
// On CUDA (SessionOptions::device), inputs and outputs stay host memory: SetInput fills pinned
// staging that Run uploads, Output() points at pinned staging that Run fills, and bound memory is
// copied through the staging; activations and weights live on the device for the session.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "precis/status.h"
#include "precis/types.h"

namespace precis {

enum class Device { kCpu, kCuda };

struct SessionOptions {
  int threads = 0;                 // 0: all hardware threads (CPU kernels)
  bool reference_kernels = false;  // force the plain reference kernels (the test oracle; CPU)
  bool profile = false;            // time every step of Run() (see Session::profile())
  Device device = Device::kCpu;    // kCuda: run every step on an NVIDIA GPU (an error if the
                                   // build has no CUDA backend, no device is usable, or a step
                                   // has no CUDA kernel; never a silent CPU fallback)
  int device_id = 0;               // which CUDA device
  bool cuda_graphs = true;         // capture Run() into a CUDA graph once and replay it
  bool synthetic_weights = false;  // accept plans compiled with --strip-weights (benchmarks):
                                   // their weights get deterministic pseudo-random values
  bool cpu_fp32_weights = false;   // CPU: keep FP32 copies of 16-bit MatMul/Gemm/Conv weights made at
                                   // load (faster at small batches on CPUs without FP16 arithmetic,
                                   // twice the weights' memory); by default the weights stay 16-bit
                                   // and are widened block by block at every run
  int64_t max_loop_iterations = 0;  // > 0: a Loop step that would run more iterations fails with
                                   // an error naming it (bounded work for untrusted plans; a
                                   // loop's trip count may come from the plan or from its data)
  uint64_t max_arena_bytes = 0;    // > 0: a dynamic plan whose arena for the bound shape would be
                                   // larger fails Run with an error (bounded memory for untrusted
                                   // inputs); 0: the machine's memory is the limit
};

// "cpu", "cuda" or "cuda:N" -> device and device id; an error names the accepted forms.
Status ParseDevice(const std::string& text, Device* device, int* device_id);

// Accumulated wall time of one plan step over all profiled runs.
struct StepProfile {
  std::string kernel;  // runtime kernel name, with " (fast)" when an optimized kernel runs it
  std::string node;    // the source node name
  double total_ms = 0;
  int64_t runs = 0;
};

struct TensorData {
  TensorInfo info;
  const void* data = nullptr;
};

// A model output that is a sequence, or an optional, whose length or presence is decided when
// the plan runs (docs/sequences.md). The plan outputs its parts (`parts`: the elements
// "NAME[i]" or the optional's value "NAME", and "NAME/stack", "NAME/dims", "NAME/present"),
// listed in outputs() like any output; OutputContainer assembles them after a run.
struct ContainerInfo {
  enum class Kind { kSequence, kOptionalTensor, kOptionalSequence };
  std::string name;
  Kind kind = Kind::kSequence;
  std::vector<std::string> parts;
};
struct ContainerData {
  bool present = true;               // an optional that has its value
  std::vector<TensorData> elements;  // the sequence's elements, or the optional tensor (none when absent)
};

class Session {
 public:
  static StatusOr<std::unique_ptr<Session>> Open(const std::string& plan_path, const SessionOptions& options = {});
  // Copies the plan bytes; the caller's buffer may be freed afterwards.
  static StatusOr<std::unique_ptr<Session>> FromBuffer(const void* data, size_t size, const SessionOptions& options = {});
  ~Session();

  // Inputs and outputs of the default program.
  const std::vector<TensorInfo>& inputs() const;
  const std::vector<TensorInfo>& outputs() const;
  // The plan's programs, in plan order; and the inputs/outputs of one (an error names the known).
  const std::vector<std::string>& programs() const;
  StatusOr<std::vector<TensorInfo>> ProgramInputs(const std::string& program) const;
  StatusOr<std::vector<TensorInfo>> ProgramOutputs(const std::string& program) const;
  // The arena of the shape run last (a dynamic plan plans one per binding of its symbols).
  size_t arena_bytes() const;
  // A dynamic plan (compiled without --shape) has symbolic dims ("batch", "seq"): the shapes
  // given to SetInput bind them, and each new binding is prepared at the next Run (its kernels
  // are kept for the 8 shapes used last). Empty for a static plan. DimNames gives an input's or
  // output's dims by name ("" for a static dim, "batch", "2*seq"); empty for an unknown name.
  const std::vector<std::string>& symbols() const;
  std::vector<std::string> DimNames(const std::string& name) const;
  const std::string& precision() const;
  // "cpu", or the CUDA device's name ("cuda: NVIDIA H200"); and whether Run() replays a CUDA graph.
  std::string device_name() const;
  bool graph_replay() const;
  // Steps running a slower path than planned (CUDA: cuBLASLt or cuDNN refused the problem, a graph
  // capture failed), one line each; empty when everything runs as planned.
  std::vector<std::string> fallbacks() const;

  // Errors: unknown name, dtype or shape different from the plan's, wrong byte size.
  Status SetInput(const std::string& name, DataType dtype, const std::vector<int64_t>& dims, const void* data, size_t bytes);
  Status BindInput(const std::string& name, const void* data, size_t bytes);
  Status BindOutput(const std::string& name, void* data, size_t bytes);
  Status Run();
  Status Run(const std::string& program);
  StatusOr<TensorData> Output(const std::string& name) const;
  // The default program's container outputs, and one of them assembled from the last run (its
  // elements' data stays valid until the next Run, or the next OutputContainer of that name).
  const std::vector<ContainerInfo>& containers() const;
  StatusOr<ContainerData> OutputContainer(const std::string& name) const;
  // Calls `observer` with every output of every step right after the step runs (calibration
  // reads each tensor's range this way). An empty function removes it. Costs nothing when unset.
  void SetStepObserver(std::function<void(const TensorData&)> observer);
  // The embedded precision report, as JSON or text; empty when the plan has none.
  std::string report(bool json) const;
  // One entry per step of the program run last (the default program before any run), in plan
  // order; empty unless SessionOptions::profile was set.
  const std::vector<StepProfile>& profile() const;

  // State tensors, in plan order. Read/Write copy one tensor's bytes (errors: unknown name,
  // wrong dtype, shape or byte size). Derived state (a training plan's 16-bit working copies,
  // docs/plan-format.md) is not listed or saved, may be read, and is recomputed from the state it
  // derives from after that is written or loaded. SaveState writes every state tensor to `path` atomically
  // (a temporary file renamed over it: an interrupted save leaves the previous file intact) with
  // a checksum and the plan's state signature; LoadState validates the whole file (truncation,
  // corruption, a file of another plan's state: each a clear error) before changing anything.
  const std::vector<TensorInfo>& state() const;
  Status ReadState(const std::string& name, void* data, size_t bytes) const;
  Status WriteState(const std::string& name, DataType dtype, const std::vector<int64_t>& dims, const void* data, size_t bytes);
  Status SaveState(const std::string& path) const;
  Status LoadState(const std::string& path);

  struct Impl;

 private:
  explicit Session(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace precis
