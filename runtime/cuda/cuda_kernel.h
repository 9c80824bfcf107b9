// The CUDA kernel interface. Like the CPU one (runtime/cpu/kernel.h): one Kernel object per plan
// step, created at load; KernelArgs and Tensor are shared with the CPU backend.
//
// Contract:
// - Init runs once at load. Its args hold every tensor's dtype and dims; constant inputs point at
//   their host bytes (the mapped plan), every other tensor's data is nullptr. It validates (errors
//   name the node), precomputes (descriptors, cuBLASLt algorithm choice, index tables uploaded
//   with UploadTable), and declares its device scratch and its share of the shared workspace.
// - Run enqueues the step on ctx.stream with device pointers in args (constants included). It
//   must not allocate, synchronize or copy to the host, so that a run can be captured into a CUDA
//   graph; a kernel that cannot obey returns false from Capturable().
// - Data errors found on the device (an index out of range, a count that differs from the
//   compiled one) are reported by storing a DeviceError code in *ctx.error; the session reads the
//   flags after the run and names the step.
#pragma once

#include <cublasLt.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include <memory>
#include <string>
#include <vector>

#include "runtime/exec/step.h"

namespace precis::rt::cuda {

enum DeviceError : int {
  kNoDeviceError = 0,
  kIndexOutOfRange = 1,   // a gather/scatter/one-hot index outside its axis
  kCountMismatch = 2,     // NonZero/Compress found a different count than the plan was compiled for
  kBadValue = 3,          // any other value a kernel cannot accept (say, a zero integer divisor)
};
const char* DeviceErrorMessage(int code);

// The plan's generated kernels (fused elementwise steps, compiler/codegen/nvptx_codegen.h) as
// loaded for this device by the backend: the cubin of the device's SM, else PTX the driver
// compiles. `library` is null when the plan has none for this device (`why_none` says why).
struct GeneratedCode {
  void* library = nullptr;  // a cudaLibrary_t (kept opaque: the host emulation's CUDA headers lack it)
  std::string loaded;    // "sm_90 cubin", "sm_80 ptx"
  std::string why_none;  // when library is null
};

struct CudaContext {
  cudaStream_t stream = nullptr;
  cublasLtHandle_t lt = nullptr;
  cudnnHandle_t dnn = nullptr;
  const cudaDeviceProp* prop = nullptr;
  void* workspace = nullptr;   // shared by cuBLASLt and cuDNN: max WorkspaceBytes(); valid during Run
  size_t workspace_bytes = 0;
  uint8_t* scratch = nullptr;  // this step's ScratchBytes() of device memory, valid during Run
  int* error = nullptr;        // this step's device error flag (see DeviceError)
  // Device memory that lives as long as the session (index tables, packed weights). Init may
  // call it; the bytes are copied to the device synchronously at load.
  std::vector<std::shared_ptr<void>>* tables = nullptr;
  const GeneratedCode* code = nullptr;  // the plan's generated kernels (Init only)
};

class Kernel {
 public:
  virtual ~Kernel() = default;
  virtual Status Init(const KernelArgs& args, CudaContext& ctx) {
    (void)args;
    (void)ctx;
    return Status::Ok();
  }
  virtual Status Run(const KernelArgs& args, CudaContext& ctx) = 0;
  virtual size_t ScratchBytes() const { return 0; }     // private to the step
  virtual size_t WorkspaceBytes() const { return 0; }   // the shared library workspace it needs
  virtual bool Capturable() const { return true; }
  // Why this step runs a slower path than planned (cuBLASLt or cuDNN refused the problem and a
  // plain kernel runs it), after Init; empty when it does not. `precis bench` counts and prints
  // these (Session::fallbacks()).
  virtual std::string Fallback() const { return ""; }
};

using KernelFactory = std::unique_ptr<Kernel> (*)();

class KernelRegistry {
 public:
  static const KernelRegistry& Get();  // every CUDA kernel registered
  void Register(const std::string& name, KernelFactory factory);
  KernelFactory Find(const std::string& name) const;
  std::vector<std::string> Names() const;

 private:
  std::vector<std::pair<std::string, KernelFactory>> kernels_;  // sorted by name
};

template <typename K>
std::unique_ptr<Kernel> Make() {
  return std::make_unique<K>();
}

// Copies `bytes` of host data into device memory owned by ctx.tables (freed with the session)
// and returns the device pointer. For Init only.
StatusOr<void*> UploadTable(CudaContext& ctx, const void* data, size_t bytes, const std::string& what);
template <typename T>
StatusOr<const T*> UploadTable(CudaContext& ctx, const std::vector<T>& v, const std::string& what) {
  PRECIS_ASSIGN_OR_RETURN(void* p, UploadTable(ctx, v.data(), v.size() * sizeof(T), what));
  return static_cast<const T*>(p);
}

// Errors of the CUDA libraries as Status, prefixed by `where` (the step, or the session call).
Status CudaError(cudaError_t e, const std::string& where);
Status CublasError(cublasStatus_t e, const std::string& where);
Status CudnnError(cudnnStatus_t e, const std::string& where);

}  // namespace precis::rt::cuda

// Checks a CUDA runtime, cuBLAS(Lt) or cuDNN call inside a kernel: on failure returns an error
// naming the step (args.node) and the call.
#define PRECIS_CUDA_CHECK(args, call)                                                     \
  do {                                                                                    \
    auto precis_cuda_rc_ = (call);                                                        \
    if (!::precis::rt::cuda::Succeeded(precis_cuda_rc_))                                  \
      return ::precis::rt::cuda::LibraryError(precis_cuda_rc_, (args).node + ": " #call); \
  } while (0)

namespace precis::rt::cuda {
inline bool Succeeded(cudaError_t e) { return e == cudaSuccess; }
inline bool Succeeded(cublasStatus_t e) { return e == CUBLAS_STATUS_SUCCESS; }
inline bool Succeeded(cudnnStatus_t e) { return e == CUDNN_STATUS_SUCCESS; }
inline Status LibraryError(cudaError_t e, const std::string& where) { return CudaError(e, where); }
inline Status LibraryError(cublasStatus_t e, const std::string& where) { return CublasError(e, where); }
inline Status LibraryError(cudnnStatus_t e, const std::string& where) { return CudnnError(e, where); }
}  // namespace precis::rt::cuda
