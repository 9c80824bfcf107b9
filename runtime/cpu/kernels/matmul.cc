// Reference matrix products: MatMul (numpy semantics: 1-D promotion, batch broadcasting) and
// Gemm (alpha * op(A) * op(B) + beta * C, C broadcast to MxN). Accumulation is in float for
// 16/32-bit floats and double for f64; loops run i-k-j so the inner loop streams rows.
#include "runtime/cpu/kernels/common.h"
#include "runtime/cpu/kernels/register.h"
#include "runtime/cpu/kernels/shape_checks.h"

namespace precis::rt {
namespace {

template <typename T>
using Acc = std::conditional_t<std::is_same_v<T, double>, double, std::conditional_t<std::is_integral_v<T>, T, float>>;

// C[m, n] (+)= sum_k A[m, k] * B[k, n] with arbitrary element strides.
template <typename T>
void Gemm2D(int64_t M, int64_t N, int64_t K, const T* A, int64_t a_rs, int64_t a_cs, const T* B, int64_t b_rs, int64_t b_cs,
            Acc<T>* acc) {
  for (int64_t i = 0; i < M * N; ++i) acc[i] = 0;
  for (int64_t m = 0; m < M; ++m)
    for (int64_t k = 0; k < K; ++k) {
      Acc<T> a = Acc<T>(Load(A[m * a_rs + k * a_cs]));
      const T* brow = B + k * b_rs;
      Acc<T>* crow = acc + m * N;
      for (int64_t n = 0; n < N; ++n) crow[n] += a * Acc<T>(Load(brow[n * b_cs]));
    }
}

class MatMulKernel : public Kernel {
 public:
  Status Init(const KernelArgs& args, const CpuContext&) override {
    Tensor *a = args.in(0), *b = args.in(1), *y = args.out(0);
    if (!a || !b || !y) return args.Error("needs two inputs and one output");
    if (a->dtype != b->dtype || a->dtype != y->dtype) return args.Error("operand dtypes differ");
    if (!DispatchNumeric(a->dtype, [](auto) {})) return args.Error("unsupported dtype");
    std::vector<int64_t> ad = a->dims, bd = b->dims;
    if (ad.empty() || bd.empty()) return args.Error("MatMul operands must have rank >= 1");
    if (ad.size() == 1) ad.insert(ad.begin(), 1);
    if (bd.size() == 1) bd.push_back(1);
    M_ = ad[ad.size() - 2];
    K_ = ad.back();
    N_ = bd.back();
    if (bd[bd.size() - 2] != K_) return args.Error("inner dimensions differ");
    std::vector<int64_t> abatch(ad.begin(), ad.end() - 2), bbatch(bd.begin(), bd.end() - 2);
    size_t rank = std::max(abatch.size(), bbatch.size());
    abatch.insert(abatch.begin(), rank - abatch.size(), 1);
    bbatch.insert(bbatch.begin(), rank - bbatch.size(), 1);
    batch_.resize(rank);
    for (size_t i = 0; i < rank; ++i) batch_[i] = std::max(abatch[i], bbatch[i]);
    map_a_ = BroadcastMap(batch_, abatch);
    map_b_ = BroadcastMap(batch_, bbatch);
    batches_ = 1;
    for (int64_t d : batch_) batches_ *= d;
    if (y->numel != batches_ * M_ * N_) return args.Error("output size does not match");
    return Status::Ok();
  }
  size_t ScratchBytes() const override { return size_t(M_ * N_) * sizeof(double); }
  Status Run(const KernelArgs& args, CpuContext& ctx) override {
    const Tensor &a = *args.in(0), &b = *args.in(1);
    Tensor& y = *args.out(0);
    DispatchNumeric(y.dtype, [&](auto tag) {
      using T = decltype(tag);
      auto* acc = reinterpret_cast<Acc<T>*>(ctx.scratch);
      for (int64_t bi = 0; bi < batches_; ++bi) {
        const T* pa = a.As<T>() + map_a_.Map(bi) * M_ * K_;
        const T* pb = b.As<T>() + map_b_.Map(bi) * K_ * N_;
        Gemm2D<T>(M_, N_, K_, pa, K_, 1, pb, N_, 1, acc);
        T* py = y.As<T>() + bi * M_ * N_;
        for (int64_t i = 0; i < M_ * N_; ++i) py[i] = Store<T>(acc[i]);
      }
    });
    return Status::Ok();
  }

 private:
  int64_t M_ = 0, N_ = 0, K_ = 0, batches_ = 0;
  std::vector<int64_t> batch_;
  BroadcastMap map_a_, map_b_;
};

class GemmKernel : public Kernel {
 public:
  Status Init(const KernelArgs& args, const CpuContext&) override {
    Tensor *a = args.in(0), *b = args.in(1), *c = args.in(2), *y = args.out(0);
    if (!a || !b || !y) return args.Error("needs inputs A and B and an output");
    if (a->rank() != 2 || b->rank() != 2) return args.Error("A and B must be matrices");
    // One dtype for every operand (steps that mix 16-bit and FP32 tensors run widened).
    if (a->dtype != b->dtype || a->dtype != y->dtype || (c && c->dtype != y->dtype)) return args.Error("operand dtypes differ");
    if (!DispatchNumeric(a->dtype, [](auto) {})) return args.Error("unsupported dtype");
    trans_a_ = args.attrs.Int("transA", 0) != 0;
    trans_b_ = args.attrs.Int("transB", 0) != 0;
    alpha_ = args.attrs.Float("alpha", 1.0f);
    beta_ = args.attrs.Float("beta", 1.0f);
    M_ = trans_a_ ? a->dims[1] : a->dims[0];
    K_ = trans_a_ ? a->dims[0] : a->dims[1];
    N_ = trans_b_ ? b->dims[0] : b->dims[1];
    if ((trans_b_ ? b->dims[1] : b->dims[0]) != K_) return args.Error("inner dimensions differ");
    PRECIS_RETURN_IF_ERROR(CheckDims(args, *y, {M_, N_}));
    if (c) {
      if (c->rank() > 2) return args.Error("C must have rank <= 2");
      PRECIS_RETURN_IF_ERROR(CheckBroadcast(args, {M_, N_}, {c->dims}));
      map_c_ = BroadcastMap({M_, N_}, c->dims);
    }
    return Status::Ok();
  }
  size_t ScratchBytes() const override { return size_t(M_ * N_) * sizeof(double); }
  Status Run(const KernelArgs& args, CpuContext& ctx) override {
    const Tensor &a = *args.in(0), &b = *args.in(1);
    const Tensor* c = args.in(2);
    Tensor& y = *args.out(0);
    DispatchNumeric(y.dtype, [&](auto tag) {
      using T = decltype(tag);
      auto* acc = reinterpret_cast<Acc<T>*>(ctx.scratch);
      int64_t a_rs = trans_a_ ? 1 : K_, a_cs = trans_a_ ? M_ : 1;
      int64_t b_rs = trans_b_ ? 1 : N_, b_cs = trans_b_ ? K_ : 1;
      Gemm2D<T>(M_, N_, K_, a.As<T>(), a_rs, a_cs, b.As<T>(), b_rs, b_cs, acc);
      T* py = y.As<T>();
      for (int64_t i = 0; i < M_ * N_; ++i) {
        Acc<T> v = Acc<T>(alpha_) * acc[i];
        if (c) v += Acc<T>(beta_) * Acc<T>(Load(c->As<T>()[map_c_.Map(i)]));
        py[i] = Store<T>(v);
      }
    });
    return Status::Ok();
  }

 private:
  bool trans_a_ = false, trans_b_ = false;
  float alpha_ = 1, beta_ = 1;
  int64_t M_ = 0, N_ = 0, K_ = 0;
  BroadcastMap map_c_;
};

// Det: LU with partial pivoting per matrix, in double.
class DetKernel : public Kernel {
 public:
  Status Init(const KernelArgs& args, const CpuContext&) override {
    const Tensor *x = args.in(0), *y = args.out(0);
    if (!x || !y || x->rank() < 2 || x->dims.back() != x->dims[x->dims.size() - 2]) return args.Error("needs [..., M, M] matrices");
    if (x->dtype != y->dtype || !DispatchFloat(x->dtype, [](auto) {})) return args.Error("needs one float dtype in and out");
    n_ = x->dims.back();
    if (y->numel * n_ * n_ != x->numel) return args.Error("output shape does not match");
    return Status::Ok();
  }
  size_t ScratchBytes() const override { return size_t(n_ * n_) * sizeof(double); }
  Status Run(const KernelArgs& args, CpuContext& ctx) override {
    const Tensor& x = *args.in(0);
    Tensor& y = *args.out(0);
    auto* a = reinterpret_cast<double*>(ctx.scratch);
    DispatchFloat(x.dtype, [&](auto tag) {
      using T = decltype(tag);
      for (int64_t b = 0; b < y.numel; ++b) {
        for (int64_t i = 0; i < n_ * n_; ++i) a[i] = double(Load(x.As<T>()[b * n_ * n_ + i]));
        double det = 1;
        for (int64_t c = 0; c < n_ && det != 0; ++c) {
          int64_t p = c;
          for (int64_t r = c + 1; r < n_; ++r)
            if (std::fabs(a[r * n_ + c]) > std::fabs(a[p * n_ + c])) p = r;
          if (a[p * n_ + c] == 0) {
            det = 0;
            break;
          }
          if (p != c) {
            for (int64_t k = 0; k < n_; ++k) std::swap(a[p * n_ + k], a[c * n_ + k]);
            det = -det;
          }
          det *= a[c * n_ + c];
          for (int64_t r = c + 1; r < n_; ++r) {
            double f = a[r * n_ + c] / a[c * n_ + c];
            for (int64_t k = c; k < n_; ++k) a[r * n_ + k] -= f * a[c * n_ + k];
          }
        }
        y.As<T>()[b] = Store<T>(typename ComputeOf<T>::type(det));
      }
    });
    return Status::Ok();
  }

 private:
  int64_t n_ = 0;
};

}  // namespace

void RegisterMatMulKernels(KernelRegistry& r) {
  r.Register("MatMul", Make<MatMulKernel>);
  r.Register("Det", Make<DetKernel>);
  r.Register("Gemm", Make<GemmKernel>);
}

}  // namespace precis::rt
