// FusedElementwise, the fast kernel: the plan's generated code (compiler/codegen/cpu_codegen.h,
// loaded by the backend through elf_module.h) over contiguous chunks of the output (of rows, for
// a row program), one per thread. It applies when the session loaded a module for this CPU and the module holds the
// function the step's description names (the description's hash: a step whose attributes were
// changed finds no function and runs the reference kernel).
#include "runtime/cpu/elf_module.h"
#include "runtime/cpu/kernels/fast_util.h"
#include "runtime/cpu/kernel.h"
#include "runtime/cpu/kernels/register.h"
#include "runtime/kernels/fused_program.h"

namespace precis::rt {
namespace {

using Entry = void (*)(const void* const* inputs, void* const* outputs, int64_t begin, int64_t end);

class FusedGeneratedKernel : public Kernel {
 public:
  Status Init(const KernelArgs& args, const CpuContext& ctx) override {
    if (!ctx.code) return Unimplemented(args.node + ": no generated code loaded");
    PRECIS_ASSIGN_OR_RETURN(fused::Program p, fused::DecodeStep(args));
    const void* f = ctx.code->Find(p.EntryName());
    if (!f) return Unimplemented(args.node + ": the generated code has no function " + p.EntryName());
    entry_ = reinterpret_cast<Entry>(const_cast<void*>(f));
    cost_ = int64_t(p.code.size()) * (p.row ? p.row * p.passes : 1);
    program_ = std::move(p);
    return Status::Ok();
  }
  Status Run(const KernelArgs& args, CpuContext& ctx) override {
    const void* ins[fused::kMaxOperands];
    void* outs[fused::kMaxOperands];
    for (size_t i = 0; i < args.inputs.size(); ++i) ins[i] = args.inputs[i]->data;
    for (size_t o = 0; o < args.outputs.size(); ++o) outs[o] = args.outputs[o]->data;
    Entry entry = entry_;
    fast::ParallelFor(fused::WorkUnits(program_, args), cost_, ctx.threads, [&](int64_t begin, int64_t end) { entry(ins, outs, begin, end); });
    return Status::Ok();
  }

 private:
  Entry entry_ = nullptr;
  int64_t cost_ = 1;  // per unit (element, or row of a row program)
  fused::Program program_;
};

}  // namespace

void RegisterFastFusedKernels(KernelRegistry& r) { r.RegisterFast("FusedElementwise", Make<FusedGeneratedKernel>); }

}  // namespace precis::rt
