// Fast Transpose for every dtype (elements of 1, 2, 4 or 8 bytes). Init coalesces the
// permutation into a strided view of the input (as the reference kernel does) and picks one of:
//   rows:    the output's innermost dim is contiguous in the input too: copy runs, rows in
//            parallel (e.g. [B, S, H, D] -> [B, H, S, D]);
//   blocked: the input's contiguous dim lands elsewhere: copy 16 x 16 tiles of those two dims,
//            so that both the reads and the writes stay in a few cache lines (e.g. [B, C, HW] ->
//            [B, HW, C], or K^T in attention); tile rows in parallel.
// Views without an input-contiguous dim (none arise from a permutation after coalescing) go to
// the reference kernel. Pure data movement: results are bit-identical to the reference.
#include <cstring>

#include "runtime/cpu/kernels/fast_util.h"
#include "runtime/cpu/kernels/register.h"
#include "runtime/cpu/kernels/tensor_util.h"

namespace precis::rt::fast {
namespace {

constexpr int64_t kTile = 16;
constexpr size_t kMaxRank = 16;

class FastTransposeKernel : public Kernel {
 public:
  Status Init(const KernelArgs& args, const CpuContext&) override {
    const Tensor *x = args.in(0), *y = args.out(0);
    if (!x || !y || x->dtype != y->dtype) return Unimplemented("fast Transpose: operands differ");
    esize_ = DataTypeSize(x->dtype);
    if (esize_ != 1 && esize_ != 2 && esize_ != 4 && esize_ != 8) return Unimplemented("fast Transpose: element size");
    std::vector<int64_t> perm = args.attrs.Ints("perm");
    if (perm.empty())
      for (int64_t i = x->rank(); i-- > 0;) perm.push_back(i);
    if (int64_t(perm.size()) != x->rank()) return Unimplemented("fast Transpose: perm does not match the rank");
    StridedView view;
    std::vector<int64_t> strides = DenseStrides(x->dims);
    for (int64_t p : perm) {
      if (p < 0 || p >= x->rank()) return Unimplemented("fast Transpose: perm out of range");
      view.dims.push_back(x->dims[size_t(p)]);
      view.strides.push_back(strides[size_t(p)]);
    }
    if (view.dims != y->dims) return Unimplemented("fast Transpose: output shape does not match");
    view_ = Coalesce(view);
    size_t rank = view_.dims.size();
    if (rank == 0 || rank > kMaxRank || y->numel == 0) return Unimplemented("fast Transpose: trivial or too many dims");
    out_strides_ = DenseStrides(view_.dims);
    inner_ = rank - 1;
    if (view_.strides[inner_] == 1) {
      blocked_ = false;
      return Status::Ok();
    }
    blocked_ = true;
    for (size_t d = 0; d < rank; ++d)
      if (view_.strides[d] == 1) contiguous_ = d;
    if (view_.strides[contiguous_] != 1) return Unimplemented("fast Transpose: no contiguous input dim");
    return Status::Ok();
  }

  Status Run(const KernelArgs& args, CpuContext& ctx) override {
    const uint8_t* src = args.in(0)->data;
    uint8_t* dst = args.out(0)->data;
    DispatchBySize(esize_, [&](auto tag) {
      using E = decltype(tag);
      if (blocked_) Blocked(reinterpret_cast<const E*>(src), reinterpret_cast<E*>(dst), ctx.threads);
      else Rows(reinterpret_cast<const E*>(src), reinterpret_cast<E*>(dst), ctx.threads);
    });
    return Status::Ok();
  }

 private:
  // Input offset of flat position `index` over the view's dims not flagged in `skip`
  // (row-major, innermost last).
  int64_t InputOffset(int64_t index, const bool* skip) const {
    int64_t off = 0;
    for (size_t d = view_.dims.size(); d-- > 0;) {
      if (skip[d]) continue;
      off += (index % view_.dims[d]) * view_.strides[d];
      index /= view_.dims[d];
    }
    return off;
  }

  template <typename E>
  void Rows(const E* src, E* dst, int threads) const {
    int64_t run = view_.dims[inner_], rows = 1;
    for (size_t d = 0; d < inner_; ++d) rows *= view_.dims[d];
    bool skip[kMaxRank] = {};
    skip[inner_] = true;
    ParallelFor(rows, run, threads, [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r)
        std::memcpy(dst + r * run, src + view_.offset + InputOffset(r, skip), size_t(run) * sizeof(E));
    });
  }

  // Units of work: (a position of every dim but the two tiled ones) x (a tile row of the
  // input-contiguous dim); each unit copies that tile row across the whole innermost dim.
  template <typename E>
  void Blocked(const E* src, E* dst, int threads) const {
    const int64_t p = view_.dims[contiguous_], q = view_.dims[inner_];
    const int64_t in_q = view_.strides[inner_], out_p = out_strides_[contiguous_];
    int64_t outer = 1;
    for (size_t d = 0; d < inner_; ++d)
      if (d != contiguous_) outer *= view_.dims[d];
    const int64_t tiles = (p + kTile - 1) / kTile;
    bool skip[kMaxRank] = {};
    skip[inner_] = skip[contiguous_] = true;
    ParallelFor(outer * tiles, kTile * q, threads, [&](int64_t begin, int64_t end) {
      for (int64_t u = begin; u < end; ++u) {
        int64_t o = u / tiles, i0 = (u % tiles) * kTile, i1 = std::min(p, i0 + kTile);
        // Output offset of outer position o: the dense strides of the non-tiled dims.
        int64_t out_off = 0, rest = o;
        for (size_t d = inner_; d-- > 0;) {
          if (d == contiguous_) continue;
          out_off += (rest % view_.dims[d]) * out_strides_[d];
          rest /= view_.dims[d];
        }
        const E* s = src + view_.offset + InputOffset(o, skip);
        E* t = dst + out_off;
        for (int64_t j0 = 0; j0 < q; j0 += kTile) {
          int64_t j1 = std::min(q, j0 + kTile);
          for (int64_t i = i0; i < i1; ++i)
            for (int64_t j = j0; j < j1; ++j) t[i * out_p + j] = s[i + j * in_q];
        }
      }
    });
  }

  StridedView view_;
  std::vector<int64_t> out_strides_;
  size_t esize_ = 0, inner_ = 0, contiguous_ = 0;
  bool blocked_ = false;
};

}  // namespace

void AddFastTransposeKernels(KernelRegistry& r) { r.RegisterFast("Transpose", Make<FastTransposeKernel>); }

}  // namespace precis::rt::fast
