// The elementwise kernel family on CUDA: the host side of the shared broadcast index, Where,
// the pass-through kernels (Identity, Reshape, inference Dropout), and RegisterElementwiseKernels,
// which registers the family's kernels from every elementwise*.cu file. The CPU kernels are the
// specification (runtime/cpu/kernels/elementwise.cc, activation*.cc).
#include "runtime/cuda/kernels/elementwise.cuh"
#include "runtime/kernels/dropout_mode.h"

namespace precis::rt::cuda {
namespace ew {

FastDiv FastDiv::Make(uint32_t d) {
  FastDiv f;
  while ((uint64_t(1) << f.shift) < d) ++f.shift;
  f.magic = uint32_t(((uint64_t(1) << 32) * ((uint64_t(1) << f.shift) - d)) / d + 1);
  return f;
}

bool BroadcastPlan::Make(const std::vector<int64_t>& out, const std::vector<std::vector<int64_t>>& ins) {
  constexpr int64_t kNarrow = int64_t(1) << 31;
  numel = 1;
  for (int64_t d : out) numel *= d;
  narrow = numel < kNarrow;
  std::vector<std::vector<int64_t>> full;  // per operand, strides over the output dims
  for (const auto& in : ins) {
    if (in.size() > out.size()) return false;
    int64_t n = 1;
    for (size_t k = 0; k < in.size(); ++k) {
      int64_t o = out[out.size() - in.size() + k];
      if (in[k] != 1 && in[k] != o) return false;
      n *= in[k];
    }
    narrow = narrow && n < kNarrow;
    full.push_back(BroadcastStrides(in, out));
  }
  if (numel == 0) {  // nothing to index
    dims.clear();
    strides.assign(ins.size(), {});
    return true;
  }
  // Outermost first while merging: dim d joins the previous one when every operand's stride of
  // the previous dim is one whole run of d.
  std::vector<int64_t> d_out;
  std::vector<std::vector<int64_t>> s_out(ins.size());
  for (size_t d = 0; d < out.size(); ++d) {
    if (out[d] == 1) continue;
    bool merge = !d_out.empty();
    for (size_t k = 0; k < ins.size() && merge; ++k) merge = s_out[k].back() == full[k][d] * out[d];
    if (merge) {
      d_out.back() *= out[d];
      for (size_t k = 0; k < ins.size(); ++k) s_out[k].back() = full[k][d];
      continue;
    }
    d_out.push_back(out[d]);
    for (size_t k = 0; k < ins.size(); ++k) s_out[k].push_back(full[k][d]);
  }
#ifdef PRECIS_EW_HOST_EMULATION
  if (force_wide_index) narrow = false;
#endif
  dims.assign(d_out.rbegin(), d_out.rend());
  strides.clear();
  for (const auto& s : s_out) strides.emplace_back(s.rbegin(), s.rend());
  return true;
}

Status PlanBroadcast(const KernelArgs& args, const std::vector<int64_t>& out, const std::vector<std::vector<int64_t>>& ins,
                     BroadcastPlan* plan) {
  if (!plan->Make(out, ins)) return args.Error("operand shapes do not broadcast to the output's");
  if (plan->rank() > kMaxRank)
    return Unimplemented(args.node + ": the broadcast needs " + std::to_string(plan->rank()) + " dims after merging, more than " +
                         std::to_string(kMaxRank));
  return Status::Ok();
}

namespace {

// ---- Where --------------------------------------------------------------------------------------

// out = cond ? x : y, moving S-byte elements (x, y and out share one dtype).
template <typename S, typename I> struct WhereFn {
  const uint8_t* c;
  const S* x;
  const S* y;
  S* out;
  BcastIndex<I, 3> idx;
  PRECIS_EW_HD void operator()(int64_t i) const {
    I off[3];
    idx.Map(I(i), off);
    out[i] = c[off[0]] ? x[off[1]] : y[off[2]];
  }
};

class WhereKernel : public Kernel {
 public:
  Status Init(const KernelArgs& args, CudaContext&) override {
    const Tensor *c = args.in(0), *x = args.in(1), *y = args.in(2), *out = args.out(0);
    if (!c || !x || !y || !out) return args.Error("needs three inputs and one output");
    if (c->dtype != DataType::kBool) return args.Error("condition must be bool");
    if (x->dtype != y->dtype || x->dtype != out->dtype) {
      DataType other = x->dtype != y->dtype ? y->dtype : out->dtype;
      return DtypeMismatch(args, x->dtype, other, std::string("X, Y and the output must share a dtype, got ") + DataTypeName(x->dtype) +
                                                      ", " + DataTypeName(y->dtype) + " and " + DataTypeName(out->dtype));
    }
    if (!DispatchStorage(x->dtype, [](auto) {})) return args.Error(std::string("unsupported dtype ") + DataTypeName(x->dtype));
    return PlanBroadcast(args, out->dims, {c->dims, x->dims, y->dims}, &plan_);
  }
  Status Run(const KernelArgs& args, CudaContext& ctx) override {
    cudaError_t e = cudaSuccess;
    DispatchBySize(DataTypeSize(args.out(0)->dtype), [&](auto tag) {
      using S = decltype(tag);
      const uint8_t* c = args.in(0)->data;
      const S* x = args.in(1)->As<S>();
      const S* y = args.in(2)->As<S>();
      S* out = args.out(0)->As<S>();
      if (plan_.narrow) e = Launch(plan_.numel, ctx.stream, WhereFn<S, uint32_t>{c, x, y, out, plan_.Index<uint32_t, 3>()});
      else e = Launch(plan_.numel, ctx.stream, WhereFn<S, int64_t>{c, x, y, out, plan_.Index<int64_t, 3>()});
    });
    PRECIS_CUDA_CHECK(args, e);
    return Status::Ok();
  }

 private:
  BroadcastPlan plan_;
};

// ---- pass-through -------------------------------------------------------------------------------

// Fills n elements of S with one bit pattern.
template <typename S> struct FillFn {
  S* p;
  S value;
  PRECIS_EW_HD void operator()(int64_t i) const { p[i] = value; }
};

// Raises kBadValue when Dropout's training_mode tensor (on the device) is true.
struct TrainingModeCheckFn {
  const uint8_t* flag;
  int* error;
  PRECIS_EW_HD void operator()(int64_t) const {
    if (flag[0] != 0) RaiseErrorHD(error, kBadValue);
  }
};

// Raises kBadValue when Dropout's training_mode is true and its ratio (both on the device, the
// ratio of `ratio_bytes` bytes: FP16/BF16, FP32 or FP64) is not 0: zero is every bit but the sign clear.
struct TrainingRatioCheckFn {
  const uint8_t* flag;
  const uint8_t* ratio;
  int ratio_bytes;
  int* error;
  PRECIS_EW_HD void operator()(int64_t) const {
    if (flag[0] == 0) return;
    bool zero = true;
    for (int b = 0; b < ratio_bytes; ++b) zero &= (b == ratio_bytes - 1 ? (ratio[b] & 0x7f) : ratio[b]) == 0;
    if (!zero) RaiseErrorHD(error, kBadValue);
  }
};

// The bytes of the value 1 in dtype t (Dropout's mask: true, or 1 of its type before opset 10).
uint64_t OnePattern(DataType t) {
  uint64_t bits = 0;
  auto put = [&](auto v) { std::memcpy(&bits, &v, sizeof(v)); };
  switch (t) {
    case DataType::kF32: put(1.0f); break;
    case DataType::kF64: put(1.0); break;
    case DataType::kF16: put(uint16_t(0x3c00)); break;
    case DataType::kBF16: put(uint16_t(0x3f80)); break;
    default: bits = 1; break;  // bool and integers, little-endian
  }
  return bits;
}

// Reshape (also Flatten, Squeeze, Unsqueeze), Identity and inference Dropout: the output is the
// input's bytes, copied unless both share storage (checked at every Run).
enum class PassKind { kReshape, kIdentity, kDropout };

template <PassKind kKind>
class PassThroughKernel : public Kernel {
 public:
  Status Init(const KernelArgs& args, CudaContext&) override {
    const Tensor *x = args.in(0), *y = args.out(0);
    if (!x || !y) return args.Error("needs an input and an output");
    if constexpr (kKind == PassKind::kReshape) {
      if (DataTypeSize(x->dtype) == 0) return args.Error(std::string("unsupported dtype ") + DataTypeName(x->dtype));
      if (x->dtype != y->dtype) return args.Error("input and output dtypes differ");
      if (x->bytes != y->bytes) return args.Error("input and output sizes differ");
    } else {
      if (x->dtype != y->dtype || x->bytes != y->bytes) return args.Error("output type differs from the input's");
    }
    if constexpr (kKind == PassKind::kDropout) {
      std::string why;
      DropoutPlan plan = PlanDropout(args, &why);
      if (plan == DropoutPlan::kRefused) return args.Error(why);
      if (plan == DropoutPlan::kCheckValues) {
        DataType r = args.in(1)->dtype;
        if (args.in(1)->numel != 1 || (r != DataType::kF32 && r != DataType::kF64 && r != DataType::kF16 && r != DataType::kBF16))
          return args.Error("the ratio must be one float value");
      }
      if (const Tensor* m = args.out(1)) {
        if (!DispatchStorage(m->dtype, [](auto) {})) return args.Error(std::string("unsupported mask dtype ") + DataTypeName(m->dtype));
        one_ = OnePattern(m->dtype);
      }
      check_training_ = plan == DropoutPlan::kCheckMode;
      check_ratio_ = plan == DropoutPlan::kCheckValues;
    }
    return Status::Ok();
  }
  Status Run(const KernelArgs& args, CudaContext& ctx) override {
    const Tensor& x = *args.in(0);
    Tensor& y = *args.out(0);
    PRECIS_CUDA_CHECK(args, CopyBytes(y.data, x.data, y.bytes, ctx.stream));
    if constexpr (kKind == PassKind::kDropout) {
      if (check_training_) PRECIS_CUDA_CHECK(args, Launch(1, ctx.stream, TrainingModeCheckFn{args.in(2)->data, ctx.error}));
      if (check_ratio_)
        PRECIS_CUDA_CHECK(args, Launch(1, ctx.stream, TrainingRatioCheckFn{args.in(2)->data, args.in(1)->data, int(DataTypeSize(args.in(1)->dtype)), ctx.error}));
      if (Tensor* m = args.out(1)) {
        cudaError_t e = cudaSuccess;
        DispatchBySize(DataTypeSize(m->dtype), [&](auto tag) {
          using S = decltype(tag);
          S v;
          std::memcpy(&v, &one_, sizeof(S));
          e = Launch(m->numel, ctx.stream, FillFn<S>{m->As<S>(), v});
        });
        PRECIS_CUDA_CHECK(args, e);
      }
    }
    return Status::Ok();
  }

 private:
  uint64_t one_ = 1;
  bool check_training_ = false, check_ratio_ = false;
};

// The copy of a predicated Identity step (a state update skipped on a non-finite gradient): every
// element reads the bool predicate on the device, so the step needs no host synchronization and
// captures into a CUDA graph. Inputs: the source and the predicate (bool scalar); output: the
// destination, left untouched when the predicate is false.
struct PredicatedCopyFn {
  const uint8_t* flag;
  const uint8_t* src;
  uint8_t* dst;
  PRECIS_EW_HD void operator()(int64_t i) const {
    if (*flag) dst[i] = src[i];
  }
};

class PredicatedCopyKernel : public Kernel {
 public:
  Status Init(const KernelArgs& args, CudaContext&) override {
    const Tensor *x = args.in(0), *flag = args.in(1), *y = args.out(0);
    if (!x || !flag || !y) return args.Error("needs a source, a predicate and a destination");
    if (x->dtype != y->dtype || x->bytes != y->bytes) return args.Error("destination type differs from the source's");
    if (flag->dtype != DataType::kBool || flag->numel != 1) return args.Error("the predicate must be a bool scalar");
    return Status::Ok();
  }
  Status Run(const KernelArgs& args, CudaContext& ctx) override {
    const Tensor& x = *args.in(0);
    Tensor& y = *args.out(0);
    if (y.data == x.data) return Status::Ok();
    PRECIS_CUDA_CHECK(args, Launch(int64_t(y.bytes), ctx.stream, PredicatedCopyFn{args.in(1)->data, x.data, y.data}));
    return Status::Ok();
  }
};

}  // namespace
}  // namespace ew

void RegisterElementwiseKernels(KernelRegistry& r) {
  r.Register("PredicatedCopy", Make<ew::PredicatedCopyKernel>);
  r.Register("Where", Make<ew::WhereKernel>);
  r.Register("Reshape", Make<ew::PassThroughKernel<ew::PassKind::kReshape>>);
  r.Register("Identity", Make<ew::PassThroughKernel<ew::PassKind::kIdentity>>);
  r.Register("Dropout", Make<ew::PassThroughKernel<ew::PassKind::kDropout>>);
  ew::AddUnaryKernels(r);
  ew::AddBinaryKernels(r);
  ew::AddCompareKernels(r);
  ew::AddVariadicKernels(r);
  ew::AddCastKernels(r);
}

}  // namespace precis::rt::cuda
