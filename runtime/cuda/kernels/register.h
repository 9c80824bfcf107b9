// Registration of the CUDA kernels, one function per kernel family (one .cu file or a few).
#pragma once

#include "runtime/cuda/cuda_kernel.h"

namespace precis::rt::cuda {

void RegisterElementwiseKernels(KernelRegistry& r);  // unary, binary, variadic, Where, Cast, Clip, ...
void RegisterTensorKernels(KernelRegistry& r);       // data movement, indexing, generators, Resize
void RegisterReduceKernels(KernelRegistry& r);       // reductions, Softmax, norms, losses, TopK, CumSum
void RegisterNnKernels(KernelRegistry& r);           // MatMul, Gemm, Einsum, Conv, ConvTranspose, pooling
void RegisterTrainingKernels(KernelRegistry& r);     // training-only ops: BatchNorm/Dropout training, gradients, unscaling
void RegisterFusedKernels(KernelRegistry& r);        // FusedElementwise: the plan's generated kernels
void RegisterAllCudaKernels(KernelRegistry& r);

}  // namespace precis::rt::cuda
