// A build without the CUDA toolkit: no backend registers for Device::kCuda, so a CUDA session
// is a clear error from the session.
#include "runtime/cuda/cuda_backend.h"

namespace precis::rt {

bool CudaBackendBuilt() { return false; }

}  // namespace precis::rt
