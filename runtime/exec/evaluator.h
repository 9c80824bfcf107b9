// The step evaluator: runs one kernel-form step on host tensors with a backend's reference
// kernel. The compiler's constant folding reaches the reference kernels only through it, so the
// compiler links no backend; the CPU backend registers its reference kernels from a static
// initializer (linked whole through precis_runtime).
//
// Contract: args' tensors are host memory, inputs constant; the evaluator returns Unimplemented
// when it has no kernel of that name, and the kernel's error otherwise.
#pragma once

#include <string>

#include "runtime/exec/step.h"

namespace precis::rt {

using StepEvaluator = Status (*)(const std::string& kernel, const KernelArgs& args);

// Registers the evaluator (once; a second registration is a bug). Returns true for static use.
bool RegisterStepEvaluator(StepEvaluator evaluator);
// nullptr when no backend with reference kernels is linked.
StepEvaluator FindStepEvaluator();

}  // namespace precis::rt
