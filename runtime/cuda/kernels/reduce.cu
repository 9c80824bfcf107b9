// Placeholder: the reduce kernel family is being written.
#include "runtime/cuda/kernels/register.h"

namespace precis::rt::cuda {

void RegisterReduceKernels(KernelRegistry&) {}

}  // namespace precis::rt::cuda
