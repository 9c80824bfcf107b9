// Fast Where(condition, X, Y) for f32, f16 and bf16 values with broadcasting (attention masks:
// a [S, S] or [B, 1, 1, S] condition over [B, H, S, S] scores, and their gradients in training
// plans). As the binary kernels (fast_elementwise.cc), Init collapses the broadcast to rows of one
// contiguous run in which each operand steps by 0 or 1, and Run walks whole rows on the threads.
// The values are copied as bits, so results are the reference kernel's.
#include <algorithm>
#include <cstring>
#include <vector>

#include "runtime/cpu/kernels/fast_util.h"
#include "runtime/cpu/kernels/register.h"
#include "runtime/cpu/kernels/shape_checks.h"

namespace precis::rt::fast {
namespace {

constexpr int kOperands = 3;    // condition, X, Y
constexpr size_t kMaxOuter = 16;

class FastWhereKernel : public Kernel {
 public:
  Status Init(const KernelArgs& args, const CpuContext&) override {
    const Tensor *c = args.in(0), *x = args.in(1), *y = args.in(2), *out = args.out(0);
    if (!c || !x || !y || !out || c->dtype != DataType::kBool || x->dtype != out->dtype || y->dtype != out->dtype ||
        !DispatchFast(out->dtype, [](auto) {}))
      return Unimplemented("fast Where: a bool condition and f32, f16 or bf16 values");
    std::vector<int64_t> broadcast;
    if (!BroadcastShapes({c->dims, x->dims, y->dims}, &broadcast) || broadcast != out->dims) return Unimplemented("fast Where: the output is not the operands' broadcast");
    // Collapsed dims: size, and whether each operand has it (is not 1 there).
    std::vector<std::vector<int64_t>> padded;
    for (const Tensor* t : {c, x, y}) {
      std::vector<int64_t> d(out->dims.size() - t->dims.size(), 1);
      d.insert(d.end(), t->dims.begin(), t->dims.end());
      padded.push_back(std::move(d));
    }
    struct Dim {
      int64_t size;
      bool full[kOperands];
    };
    std::vector<Dim> dims;
    for (size_t d = 0; d < out->dims.size(); ++d) {
      if (out->dims[d] == 1) continue;
      Dim dim{out->dims[d], {padded[0][d] != 1, padded[1][d] != 1, padded[2][d] != 1}};
      if (!dims.empty() && std::equal(dim.full, dim.full + kOperands, dims.back().full)) dims.back().size *= dim.size;
      else dims.push_back(dim);
    }
    outer_.clear();
    run_ = 1;
    std::fill(step_, step_ + kOperands, 1);
    if (dims.empty()) return Status::Ok();  // one element
    if (dims.size() - 1 > kMaxOuter) return Unimplemented("fast Where: too many broadcast dims");
    run_ = dims.back().size;
    int64_t inner[kOperands];
    for (int k = 0; k < kOperands; ++k) {
      step_[k] = dims.back().full[k] ? 1 : 0;
      inner[k] = dims.back().full[k] ? run_ : 1;
      strides_[k].assign(dims.size() - 1, 0);
    }
    outer_.resize(dims.size() - 1);
    for (size_t d = outer_.size(); d-- > 0;) {
      outer_[d] = dims[d].size;
      for (int k = 0; k < kOperands; ++k) {
        strides_[k][d] = dims[d].full[k] ? inner[k] : 0;
        if (dims[d].full[k]) inner[k] *= dims[d].size;
      }
    }
    return Status::Ok();
  }

  Status Run(const KernelArgs& args, CpuContext& ctx) override {
    const uint8_t* c = args.in(0)->As<uint8_t>();
    Tensor& out = *args.out(0);
    if (DataTypeSize(out.dtype) == 4) Rows<uint32_t>(c, args.in(1)->As<uint32_t>(), args.in(2)->As<uint32_t>(), out.As<uint32_t>(), out.numel, ctx);
    else Rows<uint16_t>(c, args.in(1)->As<uint16_t>(), args.in(2)->As<uint16_t>(), out.As<uint16_t>(), out.numel, ctx);
    return Status::Ok();
  }

 private:
  template <typename U>
  void Rows(const uint8_t* c, const U* x, const U* y, U* out, int64_t numel, CpuContext& ctx) const {
    if (numel == 0) return;
    const int64_t rows = numel / run_;
    ParallelFor(rows, run_, ctx.threads, [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        int64_t off[kOperands] = {0, 0, 0}, rest = r;
        for (size_t d = outer_.size(); d-- > 0;) {
          int64_t i = rest % outer_[d];
          rest /= outer_[d];
          for (int k = 0; k < kOperands; ++k) off[k] += i * strides_[k][d];
        }
        const uint8_t* cr = c + off[0];
        const U *xr = x + off[1], *yr = y + off[2];
        U* o = out + r * run_;
        if (step_[0] == 0) {
          const U* src = *cr ? xr : yr;
          int64_t s = *cr ? step_[1] : step_[2];
          if (s) std::memcpy(o, src, size_t(run_) * sizeof(U));
          else std::fill(o, o + run_, src[0]);
        } else if (step_[1] && step_[2]) {
          for (int64_t i = 0; i < run_; ++i) o[i] = cr[i] ? xr[i] : yr[i];
        } else {
          for (int64_t i = 0; i < run_; ++i) o[i] = cr[i] ? xr[i * step_[1]] : yr[i * step_[2]];
        }
      }
    });
  }

  std::vector<int64_t> outer_;
  std::vector<int64_t> strides_[kOperands];
  int64_t run_ = 1, step_[kOperands] = {1, 1, 1};
};

}  // namespace

void AddFastWhereKernel(KernelRegistry& r) { r.RegisterFast("Where", Make<FastWhereKernel>); }

}  // namespace precis::rt::fast
