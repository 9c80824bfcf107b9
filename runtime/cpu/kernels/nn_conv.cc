// Reference convolution kernels. Conv is im2col + a cache-blocked GEMM per (image, group), over
// chunks of output positions so the column buffer stays bounded (a 1x1, stride-1, unpadded
// convolution reads X directly). ConvTranspose is the adjoint: a GEMM W^T * X into columns, then
// a col2im scatter-add into the output. Both handle 1 to 3 spatial dims, groups (depthwise
// included), strides, dilations and padding. 16-bit floats are converted to float on the way
// into the buffers and accumulate in float; f64 accumulates in double. A faster backend (oneDNN)
// may register its own "Conv"; these stay the reference.
#include <algorithm>
#include <cstring>

#include "runtime/cpu/kernels/common.h"
#include "runtime/kernels/nn_window.h"

namespace precis::rt {
namespace {

template <typename T>
using Acc = std::conditional_t<std::is_same_v<T, double>, double, float>;

// Column buffer budget per chunk: large enough for long GEMM rows, small enough for L2/L3.
constexpr size_t kColumnBytes = size_t(2) << 20;

// GEMM blocking: a kKc x kNc block of B (128 KiB in f32) stays in L2 while 4-row strips of A
// sweep it (sized for a 512 KiB L2); a 4x8 register tile does the arithmetic.
constexpr int64_t kNc = 256, kKc = 128, kMr = 4, kNr = 8;

// Generic tile (f64; f32 uses the vector version below).
template <typename A>
void Tile4x8(int64_t kc, const A* __restrict a, int64_t lda, const A* __restrict b, int64_t ldb, A* __restrict c, int64_t ldc) {
  A acc[kMr][kNr] = {};
  for (int64_t k = 0; k < kc; ++k) {
    const A* br = b + k * ldb;
    for (int r = 0; r < kMr; ++r) {
      A av = a[r * lda + k];
      for (int j = 0; j < kNr; ++j) acc[r][j] += av * br[j];
    }
  }
  for (int r = 0; r < kMr; ++r)
    for (int j = 0; j < kNr; ++j) c[r * ldc + j] += acc[r][j];
}

#if defined(__GNUC__)
// f32 tile with GCC/Clang vector extensions: the generic tile above is not vectorized at -O2.
// 16-byte vectors map to SSE/NEON registers on any target; eight named accumulators (4 rows x
// 2 halves) stay in registers.
typedef float Vec4f __attribute__((vector_size(16)));

inline Vec4f LoadV(const float* p) {
  Vec4f v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
inline void AddTo(float* c, Vec4f v) {
  Vec4f cv = LoadV(c) + v;
  std::memcpy(c, &cv, sizeof cv);
}

inline void Tile4x8(int64_t kc, const float* __restrict a, int64_t lda, const float* __restrict b, int64_t ldb,
                    float* __restrict c, int64_t ldc) {
  Vec4f c00 = {}, c01 = {}, c10 = {}, c11 = {}, c20 = {}, c21 = {}, c30 = {}, c31 = {};
  const float *a0 = a, *a1 = a + lda, *a2 = a + 2 * lda, *a3 = a + 3 * lda;
  for (int64_t k = 0; k < kc; ++k) {
    Vec4f b0 = LoadV(b + k * ldb), b1 = LoadV(b + k * ldb + 4);
    Vec4f v0 = a0[k] - Vec4f{}, v1 = a1[k] - Vec4f{}, v2 = a2[k] - Vec4f{}, v3 = a3[k] - Vec4f{};
    c00 += v0 * b0, c01 += v0 * b1;
    c10 += v1 * b0, c11 += v1 * b1;
    c20 += v2 * b0, c21 += v2 * b1;
    c30 += v3 * b0, c31 += v3 * b1;
  }
  AddTo(c, c00), AddTo(c + 4, c01);
  AddTo(c + ldc, c10), AddTo(c + ldc + 4, c11);
  AddTo(c + 2 * ldc, c20), AddTo(c + 2 * ldc + 4, c21);
  AddTo(c + 3 * ldc, c30), AddTo(c + 3 * ldc + 4, c31);
}
#endif

// y[0..n) += a * x[0..n)
template <typename A>
void Axpy(int64_t n, A a, const A* __restrict x, A* __restrict y) {
  for (int64_t j = 0; j < n; ++j) y[j] += a * x[j];
}

#if defined(__GNUC__)
inline void Axpy(int64_t n, float a, const float* __restrict x, float* __restrict y) {
  int64_t j = 0;
  Vec4f av = a - Vec4f{};
  for (; j + 4 <= n; j += 4) AddTo(y + j, av * LoadV(x + j));
  for (; j < n; ++j) y[j] += a * x[j];
}
#endif

// Rows or columns left over by the 4x8 tiles (and whole GEMMs with fewer than 4 rows, such as
// depthwise convolutions).
template <typename A>
void TileEdge(int64_t mr, int64_t nr, int64_t kc, const A* __restrict a, int64_t lda, const A* __restrict b, int64_t ldb,
              A* __restrict c, int64_t ldc) {
  for (int64_t r = 0; r < mr; ++r)
    for (int64_t k = 0; k < kc; ++k) Axpy(nr, a[r * lda + k], b + k * ldb, c + r * ldc);
}

// C[M x N] += A[M x K] * B[K x N], all row-major with leading dimensions.
template <typename A>
void GemmAccumulate(int64_t M, int64_t N, int64_t K, const A* a, int64_t lda, const A* b, int64_t ldb, A* c, int64_t ldc) {
  for (int64_t j0 = 0; j0 < N; j0 += kNc) {
    int64_t nc = std::min(kNc, N - j0);
    for (int64_t k0 = 0; k0 < K; k0 += kKc) {
      int64_t kc = std::min(kKc, K - k0);
      const A* bp = b + k0 * ldb + j0;
      for (int64_t m = 0; m < M; m += kMr) {
        int64_t mr = std::min(kMr, M - m);
        const A* ap = a + m * lda + k0;
        A* cp = c + m * ldc + j0;
        int64_t j = 0;
        if (mr == kMr)
          for (; j + kNr <= nc; j += kNr) Tile4x8(kc, ap, lda, bp + j, ldb, cp + j, ldc);
        if (j < nc) TileEdge(mr, nc - j, kc, ap, lda, bp + j, ldb, cp + j, ldc);
      }
    }
  }
}

size_t AccBytes(DataType t) { return t == DataType::kF64 ? 8 : 4; }
bool IsHalfType(DataType t) { return t == DataType::kF16 || t == DataType::kBF16; }

int64_t ChunkColumns(int64_t rows, size_t acc_bytes, int64_t total) {
  int64_t chunk = int64_t(kColumnBytes / (size_t(std::max<int64_t>(rows, 1)) * acc_bytes));
  return std::max<int64_t>(1, std::min(total, std::max<int64_t>(chunk, 16)));
}

// Shared validation of X, W, B, Y dtypes.
Status CheckConvTypes(const KernelArgs& args) {
  Tensor *x = args.in(0), *w = args.in(1), *b = args.in(2), *y = args.out(0);
  if (!x || !w || !y) return args.Error("needs inputs X and W and output Y");
  if (!DispatchFloat(x->dtype, [](auto) {})) return args.Error(std::string("unsupported dtype ") + DataTypeName(x->dtype));
  if (w->dtype != x->dtype || y->dtype != x->dtype || (b && b->dtype != x->dtype)) return args.Error("X, W, B and Y dtypes differ");
  if (x->rank() < 3 || x->rank() > 5 || w->rank() != x->rank())
    return args.Error("X and W must both have rank 3 to 5 (N, C and 1 to 3 spatial dims)");
  return Status::Ok();
}

class ConvReferenceKernel : public Kernel {
 public:
  Status Init(const KernelArgs& args, const CpuContext&) override {
    PRECIS_RETURN_IF_ERROR(CheckConvTypes(args));
    const Tensor &x = *args.in(0), &w = *args.in(1), &y = *args.out(0);
    const Tensor* b = args.in(2);
    group_ = args.attrs.Int("group", 1);
    N_ = x.dims[0];
    C_ = x.dims[1];
    M_ = w.dims[0];
    if (group_ <= 0 || C_ % group_ != 0 || M_ % group_ != 0 || w.dims[1] * group_ != C_)
      return args.Error("channels (X " + std::to_string(C_) + ", W " + std::to_string(M_) + "x" + std::to_string(w.dims[1]) +
                        ") do not match group " + std::to_string(group_));
    if (b && (b->rank() != 1 || b->dims[0] != M_)) return args.Error("bias must have " + std::to_string(M_) + " values");
    std::vector<int64_t> in(x.dims.begin() + 2, x.dims.end()), kernel(w.dims.begin() + 2, w.dims.end());
    if (args.attrs.Ints("kernel_shape", kernel) != kernel) return args.Error("kernel_shape differs from W's spatial dims");
    PRECIS_RETURN_IF_ERROR(ReadWindow(args, in, kernel, false, &win_));
    PRECIS_RETURN_IF_ERROR(CheckWindowOutput(args, y, N_, M_, win_, "output Y"));
    Cg_ = C_ / group_;
    Mg_ = M_ / group_;
    K_ = Cg_ * win_.KernelSize();
    in_size_ = win_.InSize();
    out_size_ = win_.OutSize();
    for (size_t d = 0; d < 3; ++d) {
      // tab_[d][k * out + o]: input coordinate read by output o at kernel offset k, -1 in padding.
      tab_[d].resize(size_t(win_.kernel[d] * win_.out[d]));
      for (int64_t k = 0; k < win_.kernel[d]; ++k)
        for (int64_t o = 0; o < win_.out[d]; ++o) {
          int64_t v = o * win_.stride[d] - win_.pad_begin[d] + k * win_.dilation[d];
          tab_[d][size_t(k * win_.out[d] + o)] = v >= 0 && v < win_.in[d] ? v : -1;
        }
    }
    half_ = IsHalfType(x.dtype);
    acc_bytes_ = AccBytes(x.dtype);
    direct_ = !half_ && win_.KernelSize() == 1;
    for (size_t d = 0; d < 3; ++d)
      direct_ = direct_ && win_.stride[d] == 1 && win_.pad_begin[d] == 0 && win_.pad_end[d] == 0;
    chunk_ = direct_ ? out_size_ : ChunkColumns(K_, acc_bytes_, out_size_);
    col_bytes_ = direct_ ? 0 : size_t(K_ * chunk_) * acc_bytes_;
    if (half_) col_bytes_ += size_t(M_ * K_ + Mg_ * out_size_) * acc_bytes_;  // float W, float accumulator
    return Status::Ok();
  }

  size_t ScratchBytes() const override { return col_bytes_; }

  Status Run(const KernelArgs& args, CpuContext& ctx) override {
    DispatchFloat(args.in(0)->dtype, [&](auto tag) { RunTyped<decltype(tag)>(args, ctx); });
    return Status::Ok();
  }

 private:
  template <typename T>
  void RunTyped(const KernelArgs& args, CpuContext& ctx) {
    using A = Acc<T>;
    const T* px = args.in(0)->As<T>();
    const T* pw = args.in(1)->As<T>();
    const T* pb = args.in(2) ? args.in(2)->As<T>() : nullptr;
    T* py = args.out(0)->As<T>();
    A* col = reinterpret_cast<A*>(ctx.scratch);
    const A* wa = nullptr;
    A* acc_buf = nullptr;
    if constexpr (std::is_same_v<T, A>) {
      wa = pw;
    } else {
      A* wc = col + (direct_ ? 0 : K_ * chunk_);
      for (int64_t i = 0; i < M_ * K_; ++i) wc[i] = Load(pw[i]);
      wa = wc;
      acc_buf = wc + M_ * K_;
    }
    for (int64_t n = 0; n < N_; ++n)
      for (int64_t g = 0; g < group_; ++g) {
        const T* xg = px + (n * C_ + g * Cg_) * in_size_;
        T* yg = py + (n * M_ + g * Mg_) * out_size_;
        A* acc = acc_buf;
        if constexpr (std::is_same_v<T, A>) acc = yg;
        std::fill(acc, acc + Mg_ * out_size_, A(0));
        for (int64_t c0 = 0; c0 < out_size_; c0 += chunk_) {
          int64_t cols = std::min(chunk_, out_size_ - c0);
          const A* bm = col;
          int64_t ldb = cols;
          if constexpr (std::is_same_v<T, A>) {
            if (direct_) {
              bm = xg + c0;
              ldb = in_size_;
            }
          }
          if (!direct_) Im2Col(xg, c0, cols, col);
          GemmAccumulate<A>(Mg_, cols, K_, wa + g * Mg_ * K_, K_, bm, ldb, acc + c0, out_size_);
        }
        for (int64_t m = 0; m < Mg_; ++m) {
          A bias = pb ? A(Load(pb[g * Mg_ + m])) : A(0);
          A* am = acc + m * out_size_;
          T* ym = yg + m * out_size_;
          for (int64_t j = 0; j < out_size_; ++j) ym[j] = Store<T>(am[j] + bias);
        }
      }
  }

  // col[K_ x cols]: row (c, kd, kh, kw), column j = input value under output position c0 + j.
  template <typename T>
  void Im2Col(const T* xg, int64_t c0, int64_t cols, Acc<T>* col) const {
    using A = Acc<T>;
    const int64_t OH = win_.out[1], OW = win_.out[2], IH = win_.in[1], IW = win_.in[2];
    const int64_t od0 = c0 / (OH * OW), oh0 = c0 / OW % OH, ow0 = c0 % OW;
    A* row = col;
    for (int64_t c = 0; c < Cg_; ++c) {
      const T* xc = xg + c * in_size_;
      for (int64_t kd = 0; kd < win_.kernel[0]; ++kd)
        for (int64_t kh = 0; kh < win_.kernel[1]; ++kh)
          for (int64_t kw = 0; kw < win_.kernel[2]; ++kw, row += cols) {
            const int64_t* td = tab_[0].data() + kd * win_.out[0];
            const int64_t* th = tab_[1].data() + kh * OH;
            const int64_t* tw = tab_[2].data() + kw * OW;
            int64_t od = od0, oh = oh0, ow = ow0;
            for (int64_t j = 0; j < cols;) {
              int64_t seg = std::min(OW - ow, cols - j);
              int64_t id = td[od], ih = th[oh];
              if (id < 0 || ih < 0) {
                std::fill(row + j, row + j + seg, A(0));
              } else {
                const T* xr = xc + (id * IH + ih) * IW;
                for (int64_t t = 0; t < seg; ++t) {
                  int64_t iw = tw[ow + t];
                  row[j + t] = iw < 0 ? A(0) : A(Load(xr[iw]));
                }
              }
              j += seg;
              ow = 0;
              if (++oh == OH) {
                oh = 0;
                ++od;
              }
            }
          }
    }
  }

  int64_t group_ = 1, N_ = 0, C_ = 0, M_ = 0, Cg_ = 0, Mg_ = 0, K_ = 0, in_size_ = 0, out_size_ = 0, chunk_ = 1;
  Window win_;
  std::vector<int64_t> tab_[3];
  bool half_ = false, direct_ = false;
  size_t acc_bytes_ = 4, col_bytes_ = 0;
};

class ConvTransposeReferenceKernel : public Kernel {
 public:
  Status Init(const KernelArgs& args, const CpuContext&) override {
    PRECIS_RETURN_IF_ERROR(CheckConvTypes(args));
    const Tensor &x = *args.in(0), &w = *args.in(1), &y = *args.out(0);
    const Tensor* b = args.in(2);
    group_ = args.attrs.Int("group", 1);
    N_ = x.dims[0];
    C_ = x.dims[1];
    Mg_ = w.dims[1];
    if (group_ <= 0 || w.dims[0] != C_ || C_ % group_ != 0)
      return args.Error("channels (X " + std::to_string(C_) + ", W " + std::to_string(w.dims[0]) + ") do not match group " +
                        std::to_string(group_));
    Cg_ = C_ / group_;
    M_ = Mg_ * group_;
    if (b && (b->rank() != 1 || b->dims[0] != M_)) return args.Error("bias must have " + std::to_string(M_) + " values");
    std::vector<int64_t> in(x.dims.begin() + 2, x.dims.end()), kernel(w.dims.begin() + 2, w.dims.end());
    if (args.attrs.Ints("kernel_shape", kernel) != kernel) return args.Error("kernel_shape differs from W's spatial dims");
    PRECIS_RETURN_IF_ERROR(ReadTransposeWindow(args, in, kernel, &win_));
    PRECIS_RETURN_IF_ERROR(CheckWindowOutput(args, y, N_, M_, win_, "output Y"));
    R_ = Mg_ * win_.KernelSize();
    in_size_ = win_.InSize();
    out_size_ = win_.OutSize();
    for (size_t d = 0; d < 3; ++d) {
      // tab_[d][k * in + i]: output coordinate written by input i at kernel offset k, -1 if cropped.
      tab_[d].resize(size_t(win_.kernel[d] * win_.in[d]));
      for (int64_t k = 0; k < win_.kernel[d]; ++k)
        for (int64_t i = 0; i < win_.in[d]; ++i) {
          int64_t v = i * win_.stride[d] - win_.pad_begin[d] + k * win_.dilation[d];
          tab_[d][size_t(k * win_.in[d] + i)] = v >= 0 && v < win_.out[d] ? v : -1;
        }
    }
    half_ = IsHalfType(x.dtype);
    size_t ab = AccBytes(x.dtype);
    chunk_ = ChunkColumns(R_ + (half_ ? Cg_ : 0), ab, in_size_);
    // Scratch: transposed W (all groups), columns, and for 16-bit types converted X and an accumulator.
    scratch_ = size_t(group_ * R_ * Cg_ + R_ * chunk_) * ab;
    if (half_) scratch_ += size_t(Cg_ * chunk_ + Mg_ * out_size_) * ab;
    return Status::Ok();
  }

  size_t ScratchBytes() const override { return scratch_; }

  Status Run(const KernelArgs& args, CpuContext& ctx) override {
    DispatchFloat(args.in(0)->dtype, [&](auto tag) { RunTyped<decltype(tag)>(args, ctx); });
    return Status::Ok();
  }

 private:
  template <typename T>
  void RunTyped(const KernelArgs& args, CpuContext& ctx) {
    using A = Acc<T>;
    const T* px = args.in(0)->As<T>();
    const T* pw = args.in(1)->As<T>();
    const T* pb = args.in(2) ? args.in(2)->As<T>() : nullptr;
    T* py = args.out(0)->As<T>();
    A* wt = reinterpret_cast<A*>(ctx.scratch);  // [group][R_][Cg_]
    A* col = wt + group_ * R_ * Cg_;            // [R_][chunk_]
    A* xbuf = col + R_ * chunk_;                // [Cg_][chunk_], 16-bit types only
    A* acc_buf = xbuf + Cg_ * chunk_;           // [Mg_][out_size_], 16-bit types only
    for (int64_t g = 0; g < group_; ++g)
      for (int64_t c = 0; c < Cg_; ++c)
        for (int64_t r = 0; r < R_; ++r) wt[(g * R_ + r) * Cg_ + c] = A(Load(pw[(g * Cg_ + c) * R_ + r]));
    for (int64_t n = 0; n < N_; ++n)
      for (int64_t g = 0; g < group_; ++g) {
        const T* xg = px + (n * C_ + g * Cg_) * in_size_;
        T* yg = py + (n * M_ + g * Mg_) * out_size_;
        A* acc = acc_buf;
        if constexpr (std::is_same_v<T, A>) acc = yg;
        std::fill(acc, acc + Mg_ * out_size_, A(0));
        for (int64_t c0 = 0; c0 < in_size_; c0 += chunk_) {
          int64_t cols = std::min(chunk_, in_size_ - c0);
          const A* bm = nullptr;
          int64_t ldb = cols;
          if constexpr (std::is_same_v<T, A>) {
            bm = xg + c0;
            ldb = in_size_;
          } else {
            for (int64_t c = 0; c < Cg_; ++c)
              for (int64_t j = 0; j < cols; ++j) xbuf[c * cols + j] = Load(xg[c * in_size_ + c0 + j]);
            bm = xbuf;
          }
          std::fill(col, col + R_ * cols, A(0));
          GemmAccumulate<A>(R_, cols, Cg_, wt + g * R_ * Cg_, Cg_, bm, ldb, col, cols);
          Col2Im(col, c0, cols, acc);
        }
        for (int64_t m = 0; m < Mg_; ++m) {
          A bias = pb ? A(Load(pb[g * Mg_ + m])) : A(0);
          for (int64_t j = 0; j < out_size_; ++j) yg[m * out_size_ + j] = Store<T>(acc[m * out_size_ + j] + bias);
        }
      }
  }

  // Adds col[R_ x cols] (row (m, kd, kh, kw), column = input position c0 + j) into acc[Mg_ x out].
  template <typename A>
  void Col2Im(const A* col, int64_t c0, int64_t cols, A* acc) const {
    const int64_t IH = win_.in[1], IW = win_.in[2], OH = win_.out[1], OW = win_.out[2];
    const int64_t id0 = c0 / (IH * IW), ih0 = c0 / IW % IH, iw0 = c0 % IW;
    const A* row = col;
    for (int64_t m = 0; m < Mg_; ++m) {
      A* am = acc + m * out_size_;
      for (int64_t kd = 0; kd < win_.kernel[0]; ++kd)
        for (int64_t kh = 0; kh < win_.kernel[1]; ++kh)
          for (int64_t kw = 0; kw < win_.kernel[2]; ++kw, row += cols) {
            const int64_t* td = tab_[0].data() + kd * win_.in[0];
            const int64_t* th = tab_[1].data() + kh * IH;
            const int64_t* tw = tab_[2].data() + kw * IW;
            int64_t id = id0, ih = ih0, iw = iw0;
            for (int64_t j = 0; j < cols;) {
              int64_t seg = std::min(IW - iw, cols - j);
              int64_t od = td[id], oh = th[ih];
              if (od >= 0 && oh >= 0) {
                A* ar = am + (od * OH + oh) * OW;
                for (int64_t t = 0; t < seg; ++t) {
                  int64_t ow = tw[iw + t];
                  if (ow >= 0) ar[ow] += row[j + t];
                }
              }
              j += seg;
              iw = 0;
              if (++ih == IH) {
                ih = 0;
                ++id;
              }
            }
          }
    }
  }

  int64_t group_ = 1, N_ = 0, C_ = 0, M_ = 0, Cg_ = 0, Mg_ = 0, R_ = 0, in_size_ = 0, out_size_ = 0, chunk_ = 1;
  Window win_;
  std::vector<int64_t> tab_[3];
  bool half_ = false;
  size_t scratch_ = 0;
};

}  // namespace

void RegisterConvKernels(KernelRegistry& r) {
  r.Register("Conv", Make<ConvReferenceKernel>);
  r.Register("ConvTranspose", Make<ConvTransposeReferenceKernel>);
}

}  // namespace precis::rt
