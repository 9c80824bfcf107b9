// The CUDA backend behind precis::Session (SessionOptions::device = Device::kCuda). Plain C++
// header: the session includes it in every build; without the CUDA toolkit, Create() returns a
// clear Unimplemented error (no_cuda.cc).
//
// One device arena laid out exactly as the plan's memory plan, the constants uploaded once at
// load, pinned host staging for every model input and output, one stream, and CUDA graph capture
// and replay of Run() when every step can be captured (steps run eagerly while profiling or
// observing).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "precis/session.h"
#include "runtime/cpu/kernel.h"
#include "runtime/plan/plan_format.h"

namespace precis::rt {

struct CudaBackendOptions {
  int device_id = 0;
  bool graphs = true;
};

class CudaBackend {
 public:
  // tensors: the session's tensor table, constants pointing at their host bytes in the plan. steps:
  // each plan step's arguments over that table; kernels: each step's kernel name. On success the
  // data of every model input and output tensor points at its pinned host staging buffer.
  static StatusOr<std::unique_ptr<CudaBackend>> Create(const plan::PlanView& view, std::vector<Tensor>& tensors,
                                                       const std::vector<int>& inputs, const std::vector<int>& outputs,
                                                       const std::vector<KernelArgs>& steps, const std::vector<std::string>& kernels,
                                                       const CudaBackendOptions& options);
  virtual ~CudaBackend() = default;
  // Uploads the inputs from tensors[id].data (staging or caller memory), runs every step and
  // downloads the outputs to tensors[id].data. profile (one entry per step) gets device time
  // when non-null; observer sees every step's outputs (copied to the host) when set.
  virtual Status Run(std::vector<Tensor>& tensors, std::vector<StepProfile>* profile,
                     const std::function<void(const TensorData&)>& observer) = 0;
  virtual std::string device_name() const = 0;
  virtual bool graph_replay() const = 0;  // whether Run() replays a captured CUDA graph
};

// Whether this build includes the CUDA backend.
bool CudaBackendBuilt();

}  // namespace precis::rt
