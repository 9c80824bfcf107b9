// The CUDA nn family: matrix products (nn_matmul.cu, nn_einsum.cu, with cuBLASLt through
// nn_lt.cc), convolutions and the filter gradient (nn_conv.cu, with cuDNN through nn_cudnn.cc) and pooling
// (nn_pool.cu). This file registers them and holds the activation pass they share.
#include "runtime/cuda/kernels/nn_device.cuh"
#include "runtime/cuda/kernels/register.h"

namespace precis::rt::cuda {
namespace {

template <typename T> struct Activate {
  T* p;
  int activation;
  PRECIS_NN_HD void operator()(int64_t i) const { p[i] = StoreN<T>(ApplyActivation(LoadN(p[i]), activation)); }
};

}  // namespace

cudaError_t ActivateInPlace(DataType dtype, void* data, int64_t n, Activation activation, cudaStream_t stream) {
  cudaError_t e = cudaErrorInvalidValue;
  DispatchFloat(dtype, [&](auto tag) {
    using T = decltype(tag);
    e = NnLaunch(n, stream, Activate<T>{static_cast<T*>(data), int(activation)});
  });
  return e;
}

void RegisterNnKernels(KernelRegistry& r) {
  r.Register("MatMul", MakeMatMulKernel);
  r.Register("Gemm", MakeGemmKernel);
  r.Register("Einsum", MakeEinsumKernel);
  r.Register("Conv", MakeConvKernel);
  r.Register("ConvTranspose", MakeConvTransposeKernel);
  r.Register("ConvFilterGrad", MakeConvFilterGradKernel);
  r.Register("MaxPool", MakeMaxPoolKernel);
  r.Register("AveragePool", MakeAveragePoolKernel);
  r.Register("LpPool", MakeLpPoolKernel);
  r.Register("GlobalMaxPool", MakeGlobalMaxPoolKernel);
  r.Register("GlobalAveragePool", MakeGlobalAveragePoolKernel);
  r.Register("GlobalLpPool", MakeGlobalLpPoolKernel);
}

}  // namespace precis::rt::cuda
