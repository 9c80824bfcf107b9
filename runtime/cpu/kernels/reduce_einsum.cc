// Einsum: a reference kernel (equation and loop nest from runtime/kernels/einsum.h) that loops
// over every combination of label values: output labels outside, summed labels inside, each operand
// addressed through one stride per label (repeated labels in an operand add their strides, which
// reads its diagonal; broadcast ellipsis dimensions get stride 0). Floats accumulate in double,
// integers wrap in 64 bits. Plain, not fast: this kernel is the oracle.
#include <algorithm>

#include "runtime/cpu/kernels/common.h"
#include "runtime/cpu/kernels/register.h"
#include "runtime/kernels/einsum.h"

namespace precis::rt {

namespace {

class EinsumKernel : public Kernel {
 public:
  Status Init(const KernelArgs& args, const CpuContext&) override {
    Tensor* y = args.out(0);
    if (!y || args.inputs.empty()) return args.Error("needs inputs and an output");
    std::vector<int64_t> ranks;
    for (const Tensor* t : args.inputs) {
      if (!t || t->dtype != y->dtype) return args.Error("every input must be present and share the output dtype");
      ranks.push_back(t->rank());
    }
    if (!DispatchNumeric(y->dtype, [](auto) {})) return args.Error(std::string("unsupported dtype ") + DataTypeName(y->dtype));
    auto spec = ParseEinsum(args.attrs.String("equation", ""), ranks);
    if (!spec.ok()) return args.Error(spec.status().message());
    PRECIS_RETURN_IF_ERROR(PlanEinsumLoops(args, *spec, &p_));
    size_t L = p_.loop.size(), n = args.inputs.size();
    counter_.assign(L, 0);
    base_.assign(n, 0);
    cur_.assign(n, 0);
    data_.assign(n, nullptr);
    return Status::Ok();
  }

  Status Run(const KernelArgs& args, CpuContext&) override {
    Tensor& y = *args.out(0);
    for (size_t i = 0; i < data_.size(); ++i) data_[i] = args.inputs[i]->data;
    DispatchNumeric(y.dtype, [&](auto tag) { RunTyped<decltype(tag)>(y); });
    return Status::Ok();
  }

 private:
  // Advances the odometer over loop labels [first, last) and the offsets `off` with it.
  void Advance(size_t first, size_t last, std::vector<int64_t>& off) {
    size_t L = p_.loop.size(), n = off.size();
    for (size_t j = last; j-- > first;) {
      for (size_t i = 0; i < n; ++i) off[i] += p_.strides[i * L + j];
      if (++counter_[j] < p_.sizes[j]) return;
      for (size_t i = 0; i < n; ++i) off[i] -= p_.strides[i * L + j] * p_.sizes[j];
      counter_[j] = 0;
    }
  }

  template <typename T>
  void RunTyped(Tensor& y) {
    using Acc = std::conditional_t<std::is_integral_v<T>, uint64_t, double>;
    size_t L = p_.loop.size(), n = data_.size();
    int64_t sum_count = 1;
    for (size_t j = p_.n_out; j < L; ++j) sum_count *= p_.sizes[j];
    std::fill(counter_.begin(), counter_.end(), 0);
    std::fill(base_.begin(), base_.end(), 0);
    T* py = y.As<T>();
    for (int64_t o = 0; o < y.numel; ++o) {
      Acc acc = 0;
      cur_ = base_;  // same size: no allocation
      for (int64_t s = 0; s < sum_count; ++s) {
        Acc term = 1;
        for (size_t i = 0; i < n; ++i) term *= Acc(Load(reinterpret_cast<const T*>(data_[i])[cur_[i]]));
        acc += term;
        Advance(p_.n_out, L, cur_);
      }
      if constexpr (std::is_integral_v<T>) py[o] = T(acc);
      else py[o] = Store<T>(acc);
      Advance(0, p_.n_out, base_);
    }
  }

  EinsumLoops p_;
  std::vector<int64_t> counter_, base_, cur_;
  std::vector<const uint8_t*> data_;
};

}  // namespace

void AddEinsumKernels(KernelRegistry& r) { r.Register("Einsum", Make<EinsumKernel>); }

}  // namespace precis::rt
