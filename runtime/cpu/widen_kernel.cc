// WidenKernel (see widen_kernel.h).
#include "runtime/cpu/widen_kernel.h"

#include "runtime/cpu/kernels/convert_blocks.h"

namespace precis::rt {
namespace {

bool IsFloat(DataType t) { return IsHalf(t) || t == DataType::kF32 || t == DataType::kF64; }

template <typename Fn>
void ForEachTensor(const KernelArgs& args, Fn&& fn) {
  for (const Tensor* t : args.inputs) if (t) fn(*t);
  for (const Tensor* t : args.outputs) if (t) fn(*t);
}

}  // namespace

bool WidenKernel::HasHalfTensors(const KernelArgs& args) {
  bool any = false;
  ForEachTensor(args, [&](const Tensor& t) { any |= IsHalf(t.dtype); });
  return any;
}

bool WidenKernel::HasMixedFloatTensors(const KernelArgs& args) {
  DataType seen = DataType::kUndefined;
  bool mixed = false;
  ForEachTensor(args, [&](const Tensor& t) {
    if (!IsFloat(t.dtype)) return;
    if (seen == DataType::kUndefined) seen = t.dtype;
    else mixed |= t.dtype != seen;
  });
  return mixed;
}

Status WidenKernel::Init(const KernelArgs& args, const CpuContext& ctx) {
  inner_args_ = KernelArgs{{}, {}, args.attrs, args.node};
  size_t offset = 0;
  auto shadow = [&](Tensor* t, bool is_output) -> Tensor* {
    if (!t || !IsHalf(t->dtype)) return t;
    Tensor& w = wide_.emplace_back(*t);
    w.dtype = DataType::kF32;
    w.bytes = size_t(t->numel) * 4;
    if (t->is_constant && !is_output) {
      auto& buf = owned_.emplace_back(size_t(t->numel));
      WidenArrayParallel(t->dtype, t->data, buf.data(), t->numel, ctx.threads);
      w.data = reinterpret_cast<uint8_t*>(buf.data());
      return &w;
    }
    w.data = nullptr;  // set from the scratch at every Run
    shadows_.push_back({t, &w, offset, is_output});
    offset += (w.bytes + 63) / 64 * 64;
    return &w;
  };
  for (Tensor* t : args.inputs) inner_args_.inputs.push_back(shadow(t, false));
  for (Tensor* t : args.outputs) inner_args_.outputs.push_back(shadow(t, true));
  shadow_bytes_ = offset;
  PRECIS_RETURN_IF_ERROR(inner_->Init(inner_args_, ctx));
  inner_scratch_ = (inner_->ScratchBytes() + 63) / 64 * 64;
  // A widened constant the inner kernel copied at Init (oneDNN's reordered weights) is not kept:
  // the FP32 copy would double the weights' memory for nothing.
  for (size_t i = 0; i < inner_args_.inputs.size(); ++i) {
    Tensor* w = inner_args_.inputs[i];
    if (!w || !args.inputs[i] || w == args.inputs[i] || !w->is_constant || inner_->ReadsConstantInput(i)) continue;
    for (auto& buf : owned_)
      if (reinterpret_cast<uint8_t*>(buf.data()) == w->data) std::vector<float>().swap(buf);
    w->data = nullptr;
  }
  return Status::Ok();
}

Status WidenKernel::Run(const KernelArgs& args, CpuContext& ctx) {
  (void)args;
  uint8_t* base = ctx.scratch + inner_scratch_;
  // Conversions over the step's threads (a convolution's activations are millions of elements).
  for (const Shadow& s : shadows_) {
    s.wide->data = base + s.offset;
    if (!s.is_output) WidenArrayParallel(s.real->dtype, s.real->data, reinterpret_cast<float*>(s.wide->data), s.real->numel, ctx.threads);
  }
  PRECIS_RETURN_IF_ERROR(inner_->Run(inner_args_, ctx));
  for (const Shadow& s : shadows_)
    if (s.is_output) NarrowArrayParallel(s.real->dtype, reinterpret_cast<const float*>(s.wide->data), s.real->data, s.real->numel, ctx.threads);
  return Status::Ok();
}

}  // namespace precis::rt
