// Where a step runs widened, decided at compile time from the backends' capability tables
// (runtime/cpu/capabilities.h, runtime/cuda/capabilities.h): the plan records it per step
// (Step.widen, one bit per backend) and the precision report shows it with its reason code. A
// widened step's 16-bit inputs are copied to FP32, its FP32 kernel runs, and its 16-bit outputs
// are rounded once: the same FP32 arithmetic on 16-bit storage as a kernel that reads 16 bits. A
// backend widens only the steps marked for it (it may still run a marked step on a kernel that
// takes its dtypes as they are, e.g. oneDNN's native BF16); an unmarked step its kernels refuse
// is an error at load, never a silent conversion.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "compiler/ir/graph.h"
#include "compiler/ir/precision_reason.h"

namespace precis::emit {

inline constexpr uint8_t kWidenCpu = 1, kWidenCuda = 2;

struct BackendWidening {
  bool widened = false;
  ir::Reason reason = ir::Reason::kWidenedKernel;
  std::string evidence;
};

struct Widening {
  BackendWidening cpu, cuda;
  uint8_t mask() const { return uint8_t((cpu.widened ? kWidenCpu : 0) | (cuda.widened ? kWidenCuda : 0)); }
};

// The decision for a step running `kernel` on these tensor dtypes (kUndefined: an omitted
// optional tensor); `low_inputs` and `low_outputs` are the op's counts of leading inputs and
// outputs that share its run dtype (-1: all; the later float tensors, such as Resize's scales or a
// training BatchNorm's FP32 statistics, keep theirs and do not count as mixing).
Widening WideningOf(const std::string& kernel, int low_inputs, const std::vector<ir::DType>& inputs, const std::vector<ir::DType>& outputs,
                    int low_outputs = -1);
// The decision for a node (its kernel name and low_inputs from the operator registry).
Widening WideningOf(const ir::Node& node);

}  // namespace precis::emit
