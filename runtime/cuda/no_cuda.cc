// The CUDA backend's entry points in a build without the CUDA toolkit.
#include "runtime/cuda/cuda_backend.h"

namespace precis::rt {

StatusOr<std::unique_ptr<CudaBackend>> CudaBackend::Create(const plan::PlanView&, std::vector<Tensor>&, const std::vector<int>&,
                                                           const std::vector<int>&, const std::vector<KernelArgs>&,
                                                           const std::vector<std::string>&, const CudaBackendOptions&) {
  return Unimplemented("this build of the Precis runtime has no CUDA backend (configure with the CUDA toolkit and -DPRECIS_CUDA=ON)");
}

bool CudaBackendBuilt() { return false; }

}  // namespace precis::rt
