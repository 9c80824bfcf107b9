// oneDNN MatMul and Gemm (f32). MatMul folds the batch into M when B has no batch (the common
// activation x weight case: one large GEMM), else uses oneDNN's batched matmul with broadcast
// batch dims of 1; 1-D operands are promoted as numpy does (the output bytes are the same).
// Gemm maps transA/transB onto transposed strides, alpha onto the output scale, and C either
// onto the bias (alpha = beta = 1, C broadcastable) or, in general, onto a sum post-op with
// scale beta after broadcasting C into Y (a copy loop, no allocation). Constant B is reordered
// once into the layout oneDNN prefers.
#include <algorithm>
#include <cstring>

#include "runtime/cpu/kernels/dnnl_kernel.h"

namespace precis::rt {
namespace {

class DnnlMatMulKernel : public DnnlKernel {
 protected:
  Status Setup(const KernelArgs& args) override {
    const Tensor *a = args.in(0), *b = args.in(1), *y = args.out(0);
    if (!a || !b || !y) return Unimplemented("MatMul needs two inputs and one output");
    if (!AllF32({a, b, y})) return Unimplemented("oneDNN MatMul: f32 only");
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
    md wei_given = Plain(wei);
    dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(Plain(src), b->is_constant ? Any(wei) : wei_given, Plain(dst)), Attr(),
                                    Engine());
    if (IsReferenceImpl(pd)) return Unimplemented("oneDNN has only its reference matmul for this step");
    dnnl::memory src_m = Input(0, Plain(src));
    dnnl::memory wei_m = Arrange(args, 1, wei_given, pd.weights_desc());
    dnnl::memory dst_m = Output(0, Plain(dst));
    Append(dnnl::matmul(pd), {{DNNL_ARG_SRC, src_m}, {DNNL_ARG_WEIGHTS, wei_m}, {DNNL_ARG_DST, dst_m}}, pd.scratchpad_desc());
    return Status::Ok();
  }
};

class DnnlGemmKernel : public DnnlKernel {
 protected:
  Status Setup(const KernelArgs& args) override {
    const Tensor *a = args.in(0), *b = args.in(1), *c = args.in(2), *y = args.out(0);
    if (!a || !b || !y) return Unimplemented("Gemm needs inputs A and B and an output");
    if (!AllF32({a, b, c, y})) return Unimplemented("oneDNN Gemm: f32 only");
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

    md src = trans_a ? Strided({M_, K}, {1, M_}) : Plain({M_, K});
    md wei_given = trans_b ? Strided({K, N_}, {1, K}) : Plain({K, N_});
    md wei = b->is_constant ? Any({K, N_}) : wei_given;
    md dst = Plain({M_, N_});
    dnnl::matmul::primitive_desc pd;
    bool bias = use_c && alpha == 1.0f && beta == 1.0f;
    if (bias) {
      // Y = A x B + C with C broadcast from [cm, cn]: oneDNN's bias broadcasts the same way, but
      // only a per-column bias ([1, N]) has an optimized implementation (2.6, gemm:jit).
      try {
        pd = dnnl::matmul::primitive_desc(dnnl::matmul::desc(src, wei, Plain({cm_, cn_}), dst), Attr(), Engine());
        bias = !IsReferenceImpl(pd);
      } catch (const dnnl::error& e) {
        if (e.status != dnnl_unimplemented) throw;
        bias = false;
      }
    }
    if (!bias) {
      // Y = alpha * (A x B) + beta * Y, with Y holding C broadcast (BeforeExecute): the output
      // scale is applied before the sum post-op.
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
    if (bias) margs.push_back({DNNL_ARG_BIAS, Input(2, Plain({cm_, cn_}))});
    Append(dnnl::matmul(pd), margs, pd.scratchpad_desc());
    return Status::Ok();
  }

  void BeforeExecute(const KernelArgs& args) override {
    if (!copy_c_) return;
    const float* c = args.in(2)->As<float>();
    float* y = args.out(0)->As<float>();
    for (int64_t m = 0; m < M_; ++m) {
      const float* row = c + (cm_ == 1 ? 0 : m * cn_);
      float* out = y + m * N_;
      if (cn_ == N_) std::memcpy(out, row, size_t(N_) * sizeof(float));
      else std::fill(out, out + N_, row[0]);
    }
  }

 private:
  int64_t M_ = 0, N_ = 0, cm_ = 1, cn_ = 1;
  bool copy_c_ = false;
};

}  // namespace

void AddDnnlMatMulKernels(KernelRegistry& r) {
  r.RegisterFast("MatMul", Make<DnnlMatMulKernel>);
  r.RegisterFast("Gemm", Make<DnnlGemmKernel>);
}

}  // namespace precis::rt
