// The CUDA kernel registry, library error translation and load-time table uploads.
#include "runtime/cuda/cuda_kernel.h"

#include <algorithm>

#include "runtime/cuda/kernels/register.h"

namespace precis::rt::cuda {

const char* DeviceErrorMessage(int code) {
  switch (code) {
    case kIndexOutOfRange: return "an index is out of range";
    case kCountMismatch: return "the data has a different number of selected elements than the plan was compiled for";
    case kBadValue: return "an input holds a value the operator cannot accept";
    default: return "unknown device error";
  }
}

const KernelRegistry& KernelRegistry::Get() {
  static const KernelRegistry registry = [] {
    KernelRegistry r;
    RegisterAllCudaKernels(r);
    return r;
  }();
  return registry;
}

void KernelRegistry::Register(const std::string& name, KernelFactory factory) {
  auto it = std::lower_bound(kernels_.begin(), kernels_.end(), name, [](const auto& e, const std::string& n) { return e.first < n; });
  if (it != kernels_.end() && it->first == name) it->second = factory;
  else kernels_.insert(it, {name, factory});
}

KernelFactory KernelRegistry::Find(const std::string& name) const {
  auto it = std::lower_bound(kernels_.begin(), kernels_.end(), name, [](const auto& e, const std::string& n) { return e.first < n; });
  return it != kernels_.end() && it->first == name ? it->second : nullptr;
}

std::vector<std::string> KernelRegistry::Names() const {
  std::vector<std::string> names;
  for (const auto& e : kernels_) names.push_back(e.first);
  return names;
}

StatusOr<void*> UploadTable(CudaContext& ctx, const void* data, size_t bytes, const std::string& what) {
  if (!ctx.tables) return Internal(what + ": no table storage in this context");
  void* p = nullptr;
  cudaError_t e = cudaMalloc(&p, bytes ? bytes : 1);
  if (e != cudaSuccess) return CudaError(e, what + ": cudaMalloc(" + std::to_string(bytes) + " bytes)");
  ctx.tables->emplace_back(p, [](void* q) { cudaFree(q); });
  if (bytes) {
    // On the compute stream and waited for: a pageable cudaMemcpy on the legacy stream may return
    // before its DMA lands, and the compute stream (non-blocking) would not wait for it.
    e = cudaMemcpyAsync(p, data, bytes, cudaMemcpyHostToDevice, ctx.stream);
    if (e == cudaSuccess) e = cudaStreamSynchronize(ctx.stream);
    if (e != cudaSuccess) return CudaError(e, what + ": uploading");
  }
  return p;
}

Status CudaError(cudaError_t e, const std::string& where) {
  return Internal(where + ": " + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")");
}
Status CublasError(cublasStatus_t e, const std::string& where) {
  return Internal(where + ": cuBLAS " + cublasLtGetStatusName(e) + " (" + cublasLtGetStatusString(e) + ")");
}
Status CudnnError(cudnnStatus_t e, const std::string& where) { return Internal(where + ": cuDNN " + cudnnGetErrorString(e)); }

}  // namespace precis::rt::cuda
