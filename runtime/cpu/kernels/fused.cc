// FusedElementwise, the reference kernel: the program (runtime/kernels/fused_program.h)
// interpreted block by block on one thread. The fast kernel (fast_fused.cc) calls the plan's
// generated code.
#include "runtime/cpu/kernel.h"
#include "runtime/cpu/kernels/register.h"
#include "runtime/kernels/fused_program.h"

namespace precis::rt {
namespace {

class FusedReferenceKernel : public Kernel {
 public:
  Status Init(const KernelArgs& args, const CpuContext&) override {
    PRECIS_ASSIGN_OR_RETURN(program_, fused::DecodeStep(args));
    return Status::Ok();
  }
  size_t ScratchBytes() const override { return fused::ScratchFloats(program_) * sizeof(float); }
  Status Run(const KernelArgs& args, CpuContext& ctx) override {
    void* ins[fused::kMaxOperands];
    void* outs[fused::kMaxOperands];
    for (size_t i = 0; i < args.inputs.size(); ++i) ins[i] = args.inputs[i]->data;
    for (size_t o = 0; o < args.outputs.size(); ++o) outs[o] = args.outputs[o]->data;
    fused::Evaluate(program_, ins, outs, 0, fused::WorkUnits(program_, args), reinterpret_cast<float*>(ctx.scratch));
    return Status::Ok();
  }

 private:
  fused::Program program_;
};

}  // namespace

void RegisterFusedKernels(KernelRegistry& r) { r.Register("FusedElementwise", Make<FusedReferenceKernel>); }

}  // namespace precis::rt
