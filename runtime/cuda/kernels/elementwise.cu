// Placeholder: the elementwise kernel family is being written.
#include "runtime/cuda/kernels/register.h"

namespace precis::rt::cuda {

void RegisterElementwiseKernels(KernelRegistry&) {}

}  // namespace precis::rt::cuda
