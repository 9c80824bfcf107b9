// oneDNN MatMul and Gemm (f32, or BF16 operands with BF16/F32 C and output on CPUs with native
// BF16: see dnnl_kernel.h). MatMul folds the batch into M when B has no batch (the common
// activation x weight case: one large GEMM), else uses oneDNN's batched matmul with broadcast
// batch dims of 1; 1-D operands are promoted as numpy does (the output bytes are the same).
// Gemm maps transA/transB onto transposed strides, alpha onto the output scale, and C either
// onto the bias (alpha = beta = 1, C broadcastable) or, in general, onto a sum post-op with
// scale beta after broadcasting C into Y (a copy loop, no allocation). Constant B is reordered
// once into the layout oneDNN prefers.
#include <algorithm>
#include <cstdint>

#include "runtime/base/half_array.h"
#include "runtime/cpu/kernels/dnnl_kernel.h"

namespace precis::rt {
namespace {

class DnnlMatMulKernel : public DnnlKernel {
 protected:
  Status Setup(const KernelArgs& args) override {
    const Tensor *a = args.in(0), *b = args.in(1), *y = args.out(0);
    if (!a || !b || !y) return Unimplemented("MatMul needs two inputs and one output");
    PRECIS_RETURN_IF_ERROR(CheckDnnlTypes("oneDNN MatMul", {a, b}, {y}));
    if (a->numel == 0 || b->numel == 0 || y->numel == 0 || a->rank() == 0 || b->rank() == 0)
      return Unimplemented("oneDNN MatMul: empty or scalar operand");
    dims ad = a->dims, bd = b->dims;
    if (ad.size() == 1) ad.insert(ad.begin(), 1);
    if (bd.size() == 1) bd.push_back(1);
    int64_t M = ad[ad.size() - 2], K = ad.back(), N = bd.back();
    if (bd[bd.size() - 2] != K) return Unimplemented("MatMul inner dimensions differ");
    size_t rank = std::max(ad.size(), bd.size());
    ad.insert(ad.begin(), rank - ad.size(), 1);
    bd.insert(bd.begin(), rank - bd.size(), 1);
    dims batch(rank - 2);
    int64_t batches = 1;
    bool b_batched = false;
    for (size_t i = 0; i + 2 < rank; ++i) {
      if (ad[i] != bd[i] && ad[i] != 1 && bd[i] != 1) return Unimplemented("MatMul batch dims do not broadcast");
      batch[i] = std::max(ad[i], bd[i]);
      batches *= batch[i];
      b_batched = b_batched || bd[i] != 1;
    }
    if (y->numel != batches * M * N) return Unimplemented("MatMul output size does not match");

    dims src, wei, dst;
    if (!b_batched) {
      // Y[batch.., M, N] = A[batch.., M, K] x B[K, N] is one [batches*M, K] x [K, N] product.
      src = {batches * M, K};
      wei = {K, N};
      dst = {batches * M, N};
    } else {
      src = ad;
      wei = bd;
      dst = batch;
      dst.push_back(M);
      dst.push_back(N);
    }
    dt in_type = DnnlType(*a), out_type = DnnlType(*y);
    md wei_given = Plain(wei, in_type);
    dnnl::matmul::primitive_desc pd(
        dnnl::matmul::desc(Plain(src, in_type), b->is_constant ? Any(wei, in_type) : wei_given, Plain(dst, out_type)), Attr(),
        Engine());
    if (IsReferenceImpl(pd)) return Unimplemented("oneDNN has only its reference matmul for this step");
    dnnl::memory src_m = Input(0, Plain(src, in_type));
    dnnl::memory wei_m = Arrange(args, 1, wei_given, pd.weights_desc());
    dnnl::memory dst_m = Output(0, Plain(dst, out_type));
    Append(dnnl::matmul(pd), {{DNNL_ARG_SRC, src_m}, {DNNL_ARG_WEIGHTS, wei_m}, {DNNL_ARG_DST, dst_m}}, pd.scratchpad_desc());
    return Status::Ok();
  }
};

class DnnlGemmKernel : public DnnlKernel {
 protected:
  Status Setup(const KernelArgs& args) override {
    const Tensor *a = args.in(0), *b = args.in(1), *c = args.in(2), *y = args.out(0);
    if (!a || !b || !y) return Unimplemented("Gemm needs inputs A and B and an output");
    PRECIS_RETURN_IF_ERROR(CheckDnnlTypes("oneDNN Gemm", {a, b}, {c, y}));
    if (a->rank() != 2 || b->rank() != 2 || y->rank() != 2) return Unimplemented("Gemm operands must be matrices");
    if (a->numel == 0 || b->numel == 0 || y->numel == 0) return Unimplemented("oneDNN Gemm: empty operand");
    bool trans_a = args.attrs.Int("transA", 0) != 0, trans_b = args.attrs.Int("transB", 0) != 0;
    float alpha = args.attrs.Float("alpha", 1.0f), beta = args.attrs.Float("beta", 1.0f);
    M_ = trans_a ? a->dims[1] : a->dims[0];
    int64_t K = trans_a ? a->dims[0] : a->dims[1];
    N_ = trans_b ? b->dims[0] : b->dims[1];
    if ((trans_b ? b->dims[1] : b->dims[0]) != K) return Unimplemented("Gemm inner dimensions differ");
    if (y->dims != dims{M_, N_}) return Unimplemented("Gemm output shape does not match");
    bool use_c = c && beta != 0.0f;
    if (use_c) {
      if (c->rank() > 2) return Unimplemented("Gemm C must have rank <= 2");
      cm_ = c->rank() == 2 ? c->dims[0] : 1;
      cn_ = c->rank() >= 1 ? c->dims.back() : 1;
      if ((cm_ != 1 && cm_ != M_) || (cn_ != 1 && cn_ != N_)) return Unimplemented("Gemm C does not broadcast to MxN");
    }

    dt in_type = DnnlType(*a), out_type = DnnlType(*y);
    md src = trans_a ? Strided({M_, K}, {1, M_}, in_type) : Plain({M_, K}, in_type);
    md wei_given = trans_b ? Strided({K, N_}, {1, K}, in_type) : Plain({K, N_}, in_type);
    md wei = b->is_constant ? Any({K, N_}, in_type) : wei_given;
    md dst = Plain({M_, N_}, out_type);
    md c_desc = use_c ? Plain({cm_, cn_}, DnnlType(*c)) : md();
    dnnl::matmul::primitive_desc pd;
    bool bias = use_c && alpha == 1.0f && beta == 1.0f;
    if (bias) {
      // Y = A x B + C with C broadcast from [cm, cn]: oneDNN's bias broadcasts the same way, but
      // only a per-column bias ([1, N]) has an optimized implementation (2.6, gemm:jit).
      try {
        pd = dnnl::matmul::primitive_desc(dnnl::matmul::desc(src, wei, c_desc, dst), Attr(), Engine());
        bias = !IsReferenceImpl(pd);
      } catch (const dnnl::error& e) {
        if (e.status != dnnl_unimplemented) throw;
        bias = false;
      }
    }
    if (!bias) {
      // Y = alpha * (A x B) + beta * Y, with Y holding C broadcast (BeforeExecute): the output
      // scale is applied before the sum post-op. An f32 C copied into a bf16 Y would be rounded
      // before the sum: such steps run widened (one rounding, at the end).
      if (use_c && c->dtype == DataType::kF32 && y->dtype == DataType::kBF16)
        return Unimplemented("oneDNN Gemm: f32 C with a bf16 output needs the bias form (alpha = beta = 1)");
      dnnl::primitive_attr attr = Attr();
      if (alpha != 1.0f) attr.set_output_scales(0, {alpha});
      if (use_c) {
        dnnl::post_ops ops;
        ops.append_sum(beta);
        attr.set_post_ops(ops);
      }
      pd = dnnl::matmul::primitive_desc(dnnl::matmul::desc(src, wei, dst), attr, Engine());
      if (IsReferenceImpl(pd)) return Unimplemented("oneDNN has only its reference matmul for this step");
      copy_c_ = use_c;
    }
    std::vector<std::pair<int, dnnl::memory>> margs = {{DNNL_ARG_SRC, Input(0, src)},
                                                       {DNNL_ARG_WEIGHTS, Arrange(args, 1, wei_given, pd.weights_desc())},
                                                       {DNNL_ARG_DST, Output(0, dst)}};
    if (bias) margs.push_back({DNNL_ARG_BIAS, Input(2, c_desc)});
    Append(dnnl::matmul(pd), margs, pd.scratchpad_desc());
    return Status::Ok();
  }

  // Broadcasts C into Y: a copy when their types are equal, else (bf16 C, f32 Y) an exact widening.
  void BeforeExecute(const KernelArgs& args) override {
    if (!copy_c_) return;
    const Tensor& c = *args.in(2);
    Tensor& y = *args.out(0);
    auto copy = [](const auto* from, auto* to, int64_t n) { std::copy(from, from + n, to); };
    auto widen = [](const uint16_t* from, float* to, int64_t n) { Bf16ToFloatArray(from, to, size_t(n)); };
    if (c.dtype == DataType::kBF16 && y.dtype == DataType::kF32) BroadcastC(c.As<uint16_t>(), y.As<float>(), widen);
    else if (c.dtype == DataType::kBF16) BroadcastC(c.As<uint16_t>(), y.As<uint16_t>(), copy);
    else BroadcastC(c.As<float>(), y.As<float>(), copy);
  }

 private:
  // Writes row m of C (or its only row) into row m of Y through `convert`, or its only column
  // repeated.
  template <typename From, typename To, typename Convert>
  void BroadcastC(const From* c, To* y, Convert convert) const {
    for (int64_t m = 0; m < M_; ++m) {
      const From* row = c + (cm_ == 1 ? 0 : m * cn_);
      To* out = y + m * N_;
      if (cn_ == N_) {
        convert(row, out, N_);
      } else {
        convert(row, out, 1);
        std::fill(out + 1, out + N_, out[0]);
      }
    }
  }

  int64_t M_ = 0, N_ = 0, cm_ = 1, cn_ = 1;
  bool copy_c_ = false;
};

}  // namespace

void AddDnnlMatMulKernels(KernelRegistry& r) {
  r.RegisterFast("MatMul", Make<DnnlMatMulKernel>);
  r.RegisterFast("Gemm", Make<DnnlGemmKernel>);
}

}  // namespace precis::rt
