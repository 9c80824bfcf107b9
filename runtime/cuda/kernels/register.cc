#include "runtime/cuda/kernels/register.h"

namespace precis::rt::cuda {

void RegisterAllCudaKernels(KernelRegistry& r) {
  RegisterElementwiseKernels(r);
  RegisterTensorKernels(r);
  RegisterReduceKernels(r);
  RegisterNnKernels(r);
  RegisterTrainingKernels(r);
  RegisterFusedKernels(r);
}

}  // namespace precis::rt::cuda
