// RegisterDnnlKernels in runtime-only builds without oneDNN (a GPU machine's): no oneDNN kernels,
// so the reference Conv, MatMul and Gemm kernels run on the CPU.
#include "runtime/cpu/kernels/register.h"

namespace precis::rt {

void RegisterDnnlKernels(KernelRegistry&) {}

}  // namespace precis::rt
