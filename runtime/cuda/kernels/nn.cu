// Placeholder: the nn kernel family is being written.
#include "runtime/cuda/kernels/register.h"

namespace precis::rt::cuda {

void RegisterNnKernels(KernelRegistry&) {}

}  // namespace precis::rt::cuda
