// The list of CPU kernel families.
#include "runtime/cpu/kernels/register.h"

namespace precis::rt {

void RegisterAllCpuKernels(KernelRegistry& r) {
  RegisterElementwiseKernels(r);
  RegisterMatMulKernels(r);
  RegisterActivationKernels(r);
  RegisterNnKernels(r);
  RegisterTensorKernels(r);
  RegisterReduceKernels(r);
  RegisterLossKernels(r);
  RegisterTrainingKernels(r);
  RegisterRecurrentKernels(r);
  RegisterControlFlowKernels(r);
  RegisterQuantizeKernels(r);
  RegisterSignalKernels(r);
  RegisterGridSampleKernels(r);
  RegisterMlKernels(r);
  RegisterImageKernels(r);
  RegisterFusedKernels(r);
  RegisterFastKernels(r);
  RegisterFastFusedKernels(r);
  RegisterDnnlKernels(r);
}

}  // namespace precis::rt
