// FusedElementwise on the GPU: the step's program runs as the kernel the compiler generated for it
// (compiler/codegen/nvptx_codegen.h), looked up by the program's entry name in the plan's module
// that the backend loaded for this device (CudaContext::code). The kernel takes the input and
// output device pointers and the element count; its threads stride over the elements.
#include <algorithm>
#include <string>
#include <vector>

#include "runtime/cuda/cuda_kernel.h"
#include "runtime/cuda/kernels/register.h"
#include "runtime/kernels/fused_program.h"

namespace precis::rt::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kPerThread = 4;  // elements per thread per pass (the generated kernel's vector loop)

class FusedElementwiseKernel : public Kernel {
 public:
  Status Init(const KernelArgs& args, CudaContext& ctx) override {
    PRECIS_ASSIGN_OR_RETURN(fused::Program p, fused::DecodeStep(args));
    if (!ctx.code || !ctx.code->library)
      return args.Error("the plan has no generated kernel this GPU runs (" + (ctx.code ? ctx.code->why_none : std::string("no modules")) +
                        "); compile it again with --device cuda, or without --codegen");
    entry_ = p.EntryName();
    PRECIS_CUDA_CHECK(args, cudaLibraryGetKernel(&kernel_, static_cast<cudaLibrary_t>(ctx.code->library), entry_.c_str()));
    inputs_ = p.num_inputs;
    outputs_ = p.num_outputs;
    // Row programs: a half-warp (16 threads) per row, `count` the rows (nvptx_codegen.cc).
    count_ = fused::WorkUnits(p, args);
    const int64_t per_block = p.row ? kThreads / fused::kPartials : kThreads * kPerThread;
    int64_t blocks = (count_ + per_block - 1) / per_block;
    int64_t most = int64_t(ctx.prop ? ctx.prop->multiProcessorCount : 1) * 8;
    blocks_ = unsigned(std::clamp<int64_t>(blocks, 1, std::max<int64_t>(most, 1)));
    return Status::Ok();
  }

  Status Run(const KernelArgs& args, CudaContext& ctx) override {
    if (count_ == 0) return Status::Ok();
    void* pointers[2 * fused::kMaxOperands];
    void* params[2 * fused::kMaxOperands + 1];
    int n = 0;
    for (int i = 0; i < inputs_; ++i, ++n) pointers[n] = args.in(size_t(i))->data;
    for (int o = 0; o < outputs_; ++o, ++n) pointers[n] = args.out(size_t(o))->data;
    for (int k = 0; k < n; ++k) params[k] = &pointers[k];
    int64_t count = count_;
    params[n] = &count;
    PRECIS_CUDA_CHECK(args, cudaLaunchKernel(reinterpret_cast<const void*>(kernel_), dim3(blocks_), dim3(kThreads), params, 0, ctx.stream));
    return Status::Ok();
  }

 private:
  std::string entry_;
  cudaKernel_t kernel_ = nullptr;
  int inputs_ = 0, outputs_ = 0;
  int64_t count_ = 0;
  unsigned blocks_ = 1;
};

}  // namespace

void RegisterFusedKernels(KernelRegistry& r) { r.Register("FusedElementwise", Make<FusedElementwiseKernel>); }

}  // namespace precis::rt::cuda
