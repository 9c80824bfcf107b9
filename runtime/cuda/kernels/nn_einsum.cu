// Einsum on CUDA. The equation is read by the shared parser (ParseEinsum of
// runtime/kernels/einsum.h, used by the CPU kernel and shape inference too) and laid out by the
// shared loop planner (PlanEinsumLoops) exactly as the CPU reference kernel does: loop labels
// (output labels, then summed ones), one stride per operand and label (repeated labels add
// strides, broadcast ellipsis dims get stride 0). The plain kernel runs one thread per output element over the
// summed labels, accumulating floats in double and integers in 64 wrapping bits, as the CPU
// does. Two-operand float equations that are (batched) matrix products — every label either
// batch, row, column or contracted, each group mergeable into one stride — go to cuBLASLt
// instead (FP32 accumulation), with a loop of calls over batch labels one stride cannot cover.
#include <algorithm>
#include <vector>

#include "runtime/cuda/kernels/nn_device.cuh"
#include "runtime/kernels/einsum.h"

namespace precis::rt::cuda {
namespace {

constexpr int kMaxEinsumInputs = 8;
constexpr int kMaxSummedLabels = 16;
constexpr size_t kMaxLtCalls = 65536;  // beyond, the plain kernel rather than a host loop of calls

struct EinsumPlan {
  int inputs = 0, n_out = 0, labels = 0;
  int64_t summed = 0;             // combinations of summed label values per output element
  const int64_t* table = nullptr; // sizes[labels], then strides[inputs][labels] (device memory)
  const void* in[kMaxEinsumInputs] = {};
};

template <typename TI, typename TO> struct PlainEinsum {
  EinsumPlan p;
  TO* y;
  PRECIS_NN_HD void operator()(int64_t o) const {
    using A = std::conditional_t<std::is_integral_v<TI>, uint64_t, double>;
    const int64_t* size = p.table;
    const int64_t* stride = p.table + p.labels;
    int64_t off[kMaxEinsumInputs];
    for (int i = 0; i < p.inputs; ++i) off[i] = 0;
    int64_t rem = o;
    for (int j = p.n_out - 1; j >= 0; --j) {
      int64_t c = rem % size[j];
      rem /= size[j];
      for (int i = 0; i < p.inputs; ++i) off[i] += c * stride[i * p.labels + j];
    }
    int64_t counter[kMaxSummedLabels];
    for (int j = p.n_out; j < p.labels; ++j) counter[j - p.n_out] = 0;
    A acc = 0;
    for (int64_t s = 0; s < p.summed; ++s) {
      A term = 1;
      for (int i = 0; i < p.inputs; ++i) term *= A(LoadN(static_cast<const TI*>(p.in[i])[off[i]]));
      acc += term;
      for (int j = p.labels - 1; j >= p.n_out; --j) {  // odometer over the summed labels
        for (int i = 0; i < p.inputs; ++i) off[i] += stride[i * p.labels + j];
        if (++counter[j - p.n_out] < size[j]) break;
        for (int i = 0; i < p.inputs; ++i) off[i] -= stride[i * p.labels + j] * size[j];
        counter[j - p.n_out] = 0;
      }
    }
    if constexpr (std::is_integral_v<TO>) y[o] = TO(acc);
    else y[o] = StoreN<TO>(acc);
  }
};

template <typename TI, typename TO> cudaError_t LaunchEinsum(const EinsumPlan& p, void* y, int64_t total, cudaStream_t stream) {
  return NnLaunch(total, stream, PlainEinsum<TI, TO>{p, static_cast<TO*>(y)});
}

cudaError_t LaunchPlainEinsum(DataType in, DataType out, const EinsumPlan& p, void* y, int64_t total, cudaStream_t stream) {
  cudaError_t e = cudaErrorInvalidValue;
  if (in == out) {
    if (!DispatchFloat(in, [&](auto tag) { e = LaunchEinsum<decltype(tag), decltype(tag)>(p, y, total, stream); }))
      DispatchInt(in, [&](auto tag) { e = LaunchEinsum<decltype(tag), decltype(tag)>(p, y, total, stream); });
  } else if (out == DataType::kF32 && in == DataType::kF16) {
    e = LaunchEinsum<half, float>(p, y, total, stream);
  } else if (out == DataType::kF32 && in == DataType::kBF16) {
    e = LaunchEinsum<bf16, float>(p, y, total, stream);
  }
  return e;
}

// One group of labels (batch, rows, columns or contracted) merged into one size and one stride
// per operand; false when the labels do not form one strided run in some operand.
struct Group {
  int64_t size = 1, a = 0, b = 0, y = 0;
  bool started = false;
  bool Add(int64_t n, int64_t sa, int64_t sb, int64_t sy) {
    if (started && (a != sa * n || b != sb * n || y != sy * n)) return false;
    size *= n;
    a = sa;
    b = sb;
    y = sy;
    started = true;
    return true;
  }
};

class EinsumKernel : public Kernel {
 public:
  Status Init(const KernelArgs& args, CudaContext& ctx) override {
    Tensor* y = args.out(0);
    if (!y || args.inputs.empty()) return args.Error("needs inputs and an output");
    std::vector<int64_t> ranks;
    for (const Tensor* t : args.inputs) {
      if (!t) return args.Error("every input must be present and share the output dtype");
      ranks.push_back(t->rank());
    }
    in_ = args.inputs[0]->dtype;
    out_ = y->dtype;
    for (const Tensor* t : args.inputs)
      if (t->dtype != in_) return DtypeRefusal(args, "every input must be present and share the output dtype");
    if (out_ != in_ && !(IsHalfType(in_) && out_ == DataType::kF32))
      return DtypeRefusal(args, "every input must be present and share the output dtype");
    if (!DispatchFloat(in_, [](auto) {}) && !DispatchInt(in_, [](auto) {}))
      return args.Error(std::string("unsupported dtype ") + DataTypeName(in_));
    auto spec = ParseEinsum(args.attrs.String("equation", ""), ranks);
    if (!spec.ok()) return args.Error(spec.status().message());
    PRECIS_RETURN_IF_ERROR(PlanEinsumLoops(args, *spec, &p_));
    total_ = y->numel;
    if (total_ == 0) return Status::Ok();
    PRECIS_RETURN_IF_ERROR(PlanMatmul(args, ctx, *spec));
    if (use_lt_) return Status::Ok();
    return PlanPlain(args, ctx);
  }

  Status Run(const KernelArgs& args, CudaContext& ctx) override {
    if (total_ == 0) return Status::Ok();
    if (use_lt_) return lt_.Run(args, ctx, args.in(0)->data, args.in(1)->data, args.out(0)->data, nullptr);
    EinsumPlan p = plan_;
    for (int i = 0; i < p.inputs; ++i) p.in[i] = args.inputs[size_t(i)]->data;
    PRECIS_CUDA_CHECK(args, LaunchPlainEinsum(in_, out_, p, args.out(0)->data, total_, ctx.stream));
    return Status::Ok();
  }

  size_t WorkspaceBytes() const override { return use_lt_ ? lt_.WorkspaceBytes() : 0; }

 private:
  // The cuBLASLt path for two float operands whose labels are batch (both operands and the
  // output), rows (A and output), columns (B and output) or contracted (A and B only).
  Status PlanMatmul(const KernelArgs& args, CudaContext& ctx, const EinsumSpec& spec) {
    if (args.inputs.size() != 2 || !DispatchFloat(in_, [](auto) {})) return Status::Ok();
    size_t L = p_.loop.size();
    std::vector<int64_t> ys = DenseStrides(std::vector<int64_t>(p_.sizes.begin(), p_.sizes.begin() + int64_t(p_.n_out)));
    // Contracted labels in A's stride order (outermost first), so that "ilk,lkj->ij" merges.
    std::vector<size_t> order;
    for (size_t j = 0; j < p_.n_out; ++j) order.push_back(j);
    std::vector<size_t> summed;
    for (size_t j = p_.n_out; j < L; ++j) summed.push_back(j);
    std::stable_sort(summed.begin(), summed.end(), [&](size_t x, size_t z) { return p_.strides[x] > p_.strides[z]; });
    order.insert(order.end(), summed.begin(), summed.end());
    std::vector<BatchAxis> batch;  // in output order: PlanBatch merges what it can, loops over the rest
    Group rows, cols, inner;
    for (size_t j : order) {
      int l = p_.loop[j];
      int64_t in_a = std::count(spec.inputs[0].begin(), spec.inputs[0].end(), l);
      int64_t in_b = std::count(spec.inputs[1].begin(), spec.inputs[1].end(), l);
      bool in_y = j < p_.n_out;
      if (in_a > 1 || in_b > 1) return Status::Ok();  // a diagonal
      if (p_.sizes[j] == 1) continue;
      int64_t sa = p_.strides[j], sb = p_.strides[L + j], sy = in_y ? ys[j] : 0;
      bool ok = false;
      if (in_y && in_a && in_b) batch.push_back({p_.sizes[j], sa, sb, sy}), ok = true;
      else if (in_y && in_a) ok = rows.Add(p_.sizes[j], sa, sb, sy);
      else if (in_y && in_b) ok = cols.Add(p_.sizes[j], sa, sb, sy);
      else if (!in_y && in_a && in_b) ok = inner.Add(p_.sizes[j], sa, sb, sy);
      if (!ok) return Status::Ok();
    }
    LtProblem p;
    p.shape = {rows.size, cols.size, inner.size, rows.a, inner.a, inner.b, cols.b, rows.y, cols.y};
    if (!PlanBatch(batch, kMaxLtCalls, &p.shape, &p.calls)) return Status::Ok();
    p.operands = in_;
    p.output = out_;
    Status s = lt_.Init(args, ctx, p);
    if (!s.ok() && s.code() == StatusCode::kUnimplemented) return Status::Ok();
    PRECIS_RETURN_IF_ERROR(s);
    use_lt_ = true;
    return Status::Ok();
  }

  Status PlanPlain(const KernelArgs& args, CudaContext& ctx) {
    size_t L = p_.loop.size(), n = args.inputs.size();
    if (n > size_t(kMaxEinsumInputs)) return Unimplemented(args.node + ": more than 8 Einsum operands");
    if (L - p_.n_out > size_t(kMaxSummedLabels)) return Unimplemented(args.node + ": more than 16 summed Einsum labels");
    std::vector<int64_t> table = p_.sizes;
    table.insert(table.end(), p_.strides.begin(), p_.strides.end());
    PRECIS_ASSIGN_OR_RETURN(plan_.table, UploadTable(ctx, table, args.node + ": Einsum strides"));
    plan_.inputs = int(n);
    plan_.n_out = int(p_.n_out);
    plan_.labels = int(L);
    plan_.summed = 1;
    for (size_t j = p_.n_out; j < L; ++j) plan_.summed *= p_.sizes[j];
    return Status::Ok();
  }

  DataType in_ = DataType::kUndefined, out_ = DataType::kUndefined;
  EinsumLoops p_;
  int64_t total_ = 0;
  bool use_lt_ = false;
  LtMatmul lt_;
  EinsumPlan plan_;
};

}  // namespace

std::unique_ptr<Kernel> MakeEinsumKernel() { return std::make_unique<EinsumKernel>(); }

}  // namespace precis::rt::cuda
