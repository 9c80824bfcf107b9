// The CUDA backend (runtime/exec/backend.h), registered for Device::kCuda when the build has the
// CUDA toolkit. The session reaches it only through the backend registry.
//
// One device arena laid out exactly as the plan's memory plan, the state region on the device
// (initialized from the plan, read and written through ReadState/WriteState), the constants
// uploaded once at load, pinned host staging for every program input and output, one stream, and
// CUDA graph capture and replay of each program when every step can be captured (steps run
// eagerly while profiling or observing).
#pragma once

namespace precis::rt {

// Whether this build includes the CUDA backend.
bool CudaBackendBuilt();

}  // namespace precis::rt
