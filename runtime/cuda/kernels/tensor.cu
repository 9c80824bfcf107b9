// Placeholder: the tensor kernel family is being written.
#include "runtime/cuda/kernels/register.h"

namespace precis::rt::cuda {

void RegisterTensorKernels(KernelRegistry&) {}

}  // namespace precis::rt::cuda
