// WidenKernel on CUDA (see widen_kernel.h).
#include "runtime/cuda/widen_kernel.h"

#include "runtime/base/half.h"
#include "runtime/cuda/device_util.cuh"

namespace precis::rt::cuda {
namespace {

bool IsHalfType(DataType t) { return t == DataType::kF16 || t == DataType::kBF16; }

template <typename T> cudaError_t Widen(const void* src, float* dst, int64_t n, cudaStream_t stream) {
  const T* s = static_cast<const T*>(src);
  return ForEach(n, stream, [=] __device__(int64_t i) { dst[i] = Load(s[i]); });
}
template <typename T> cudaError_t Narrow(const float* src, void* dst, int64_t n, cudaStream_t stream) {
  T* d = static_cast<T*>(dst);
  return ForEach(n, stream, [=] __device__(int64_t i) { d[i] = Store<T>(src[i]); });
}

}  // namespace

bool WidenKernel::HasHalfTensors(const KernelArgs& args) {
  for (const auto* list : {&args.inputs, &args.outputs})
    for (const Tensor* t : *list)
      if (t && IsHalfType(t->dtype)) return true;
  return false;
}

Status WidenKernel::Init(const KernelArgs& args, CudaContext& ctx) {
  inner_args_ = KernelArgs{{}, {}, args.attrs, args.node};
  size_t offset = 0;
  auto shadow = [&](Tensor* t, bool is_output, size_t index) -> Tensor* {
    if (!t || !IsHalfType(t->dtype)) return t;
    Tensor& w = wide_.emplace_back(*t);
    w.dtype = DataType::kF32;
    w.bytes = size_t(t->numel) * 4;
    if (t->is_constant && !is_output) {
      // Widened once: the host copy for the inner Init, the device copy for every Run.
      auto& buf = host_.emplace_back(size_t(t->numel));
      const uint16_t* bits = reinterpret_cast<const uint16_t*>(t->data);
      for (int64_t i = 0; i < t->numel; ++i) buf[size_t(i)] = t->dtype == DataType::kF16 ? HalfToFloat(bits[i]) : Bf16ToFloat(bits[i]);
      w.data = reinterpret_cast<uint8_t*>(buf.data());
      shadows_.push_back({false, index, &w, SIZE_MAX});
      return &w;
    }
    w.data = nullptr;  // set from the scratch at every Run
    shadows_.push_back({is_output, index, &w, offset});
    offset += (w.bytes + 255) / 256 * 256;
    return &w;
  };
  for (size_t i = 0; i < args.inputs.size(); ++i) {
    inner_args_.inputs.push_back(shadow(args.inputs[i], false, i));
    in_wide_.push_back(inner_args_.inputs[i] != args.inputs[i] ? inner_args_.inputs[i] : nullptr);
  }
  for (size_t i = 0; i < args.outputs.size(); ++i) {
    inner_args_.outputs.push_back(shadow(args.outputs[i], true, i));
    out_wide_.push_back(inner_args_.outputs[i] != args.outputs[i] ? inner_args_.outputs[i] : nullptr);
  }
  shadow_bytes_ = offset;
  PRECIS_RETURN_IF_ERROR(inner_->Init(inner_args_, ctx));
  inner_scratch_ = (inner_->ScratchBytes() + 255) / 256 * 256;
  // Constants: upload the widened copies and point the inner tensors at them for Run.
  for (Shadow& s : shadows_) {
    if (s.offset != SIZE_MAX) continue;
    PRECIS_ASSIGN_OR_RETURN(void* p, UploadTable(ctx, s.wide->data, s.wide->bytes, args.node + ": widened constant"));
    s.wide->data = static_cast<uint8_t*>(p);
  }
  host_.clear();
  return Status::Ok();
}

Status WidenKernel::Run(const KernelArgs& args, CudaContext& ctx) {
  uint8_t* inner_scratch = ctx.scratch;
  uint8_t* base = ctx.scratch + inner_scratch_;
  for (const Shadow& s : shadows_) {
    if (s.offset == SIZE_MAX) continue;
    s.wide->data = base + s.offset;
    if (s.is_output) continue;
    const Tensor& real = *args.inputs[s.index];
    cudaError_t e = real.dtype == DataType::kF16 ? Widen<half>(real.data, reinterpret_cast<float*>(s.wide->data), real.numel, ctx.stream)
                                                 : Widen<bf16>(real.data, reinterpret_cast<float*>(s.wide->data), real.numel, ctx.stream);
    PRECIS_CUDA_CHECK(args, e);
  }
  // The other tensors are the step's own, with this run's device pointers.
  for (size_t i = 0; i < in_wide_.size(); ++i) inner_args_.inputs[i] = in_wide_[i] ? in_wide_[i] : args.inputs[i];
  for (size_t i = 0; i < out_wide_.size(); ++i) inner_args_.outputs[i] = out_wide_[i] ? out_wide_[i] : args.outputs[i];
  ctx.scratch = inner_scratch;
  Status status = inner_->Run(inner_args_, ctx);
  PRECIS_RETURN_IF_ERROR(status);
  for (const Shadow& s : shadows_) {
    if (!s.is_output) continue;
    Tensor& real = *args.outputs[s.index];
    cudaError_t e = real.dtype == DataType::kF16 ? Narrow<half>(reinterpret_cast<const float*>(s.wide->data), real.data, real.numel, ctx.stream)
                                                 : Narrow<bf16>(reinterpret_cast<const float*>(s.wide->data), real.data, real.numel, ctx.stream);
    PRECIS_CUDA_CHECK(args, e);
  }
  return Status::Ok();
}

}  // namespace precis::rt::cuda
