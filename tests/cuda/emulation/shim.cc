// Host stand-ins for cuda_kernel.cc (no GPU): tables in host memory.
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include "runtime/cuda/cuda_kernel.h"
namespace precis::rt::cuda {
const char* DeviceErrorMessage(int) { return "device error"; }
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
StatusOr<void*> UploadTable(CudaContext& ctx, const void* data, size_t bytes, const std::string&) {
  void* p = std::malloc(bytes ? bytes : 1);
  ctx.tables->emplace_back(p, [](void* q) { std::free(q); });
  if (bytes) std::memcpy(p, data, bytes);
  return p;
}
Status CudaError(cudaError_t e, const std::string& where) { return Internal(where + ": cuda error " + std::to_string(int(e))); }
}  // namespace precis::rt::cuda
