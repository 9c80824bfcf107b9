// CPU kernels: convolution, pooling and normalization. This file registers the family (kernels
// live in nn_conv.cc, nn_pool.cc, nn_norm.cc, nn_norm_more.cc; their sliding-window geometry in
// runtime/kernels/nn_window.cc).
#include "runtime/cpu/kernels/register.h"

namespace precis::rt {

void RegisterConvKernels(KernelRegistry& r);      // nn_conv.cc
void RegisterPoolKernels(KernelRegistry& r);      // nn_pool.cc
void RegisterNormKernels(KernelRegistry& r);      // nn_norm.cc
void RegisterNormMoreKernels(KernelRegistry& r);  // nn_norm_more.cc

void RegisterNnKernels(KernelRegistry& r) {
  RegisterConvKernels(r);
  RegisterPoolKernels(r);
  RegisterNormKernels(r);
  RegisterNormMoreKernels(r);
}

}  // namespace precis::rt
