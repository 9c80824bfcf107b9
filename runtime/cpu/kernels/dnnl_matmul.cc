// oneDNN MatMul and Gemm (f32, or BF16 operands with BF16/F32 C and output on CPUs with native
// BF16: see dnnl_kernel.h). MatMul folds the batch into M when B has no batch (the common
// activation x weight case: one large GEMM), else uses oneDNN's batched matmul with broadcast
// batch dims of 1; 1-D operands are promoted as numpy does (the output bytes are the same).
// Gemm maps transA/transB onto transposed strides, alpha onto the output scale, and C either
// onto the bias (alpha = beta = 1, C broadcastable) or, in general, onto a sum post-op with
// scale beta after broadcasting C into Y (a copy loop, no allocation). Constant B is reordered
// once into the layout oneDNN prefers.
//
// 16-bit constant weights that oneDNN cannot take as they are (FP16 always; BF16 on CPUs without
// native BF16) are not copied to FP32 at load: the step runs in column blocks of B (HalfWeights
// below), each block widened into the step's scratch and reordered into oneDNN's preferred layout
// just before its FP32 matmul, so the plan's 16-bit weights are the only copy. A 16-bit A is
// widened per run, a 16-bit Y written through an FP32 block and rounded once. With few rows of A
// (at most kHalfWeightsGemvRows: a classifier or a decoder step at batch 1) the step instead reads
// the weights once in their 16 bits (HalfWeightsGemv, fast_half_gemv.cc), bound by memory. With
// more rows on AVX2 CPUs without AVX-512 (where oneDNN would pack the widened block again inside
// every run), HalfWeightsGemm (fast_half_gemm.cc) widens slices of W inside its own product.
// Accumulation is FP32 in every form.
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <vector>

#include "runtime/base/aligned_buffer.h"
#include "runtime/base/cpu_features.h"
#include "runtime/base/half_array.h"
#include "runtime/cpu/kernels/convert_blocks.h"
#include "runtime/cpu/kernels/dnnl_kernel.h"

#if PRECIS_DNNL_PACKED_SGEMM
// oneDNN's packed sgemm (its src/cpu/gemm/gemm_pack.hpp; exported by libdnnl, not in the public
// headers; CMakeLists.txt checks that this libdnnl has them): column-major as in BLAS, "A" the
// operand packed, "P" a packed operand in sgemm_compute.
namespace dnnl::impl::cpu {
dnnl_status_t sgemm_pack_get_size(const char* identifier, const char* transa, const char* transb, const dnnl_dim_t* M, const dnnl_dim_t* N,
                                  const dnnl_dim_t* K, const dnnl_dim_t* lda, const dnnl_dim_t* ldb, size_t* size, bool* pack);
dnnl_status_t sgemm_pack(const char* identifier, const char* transa, const char* transb, const dnnl_dim_t* M, const dnnl_dim_t* N,
                         const dnnl_dim_t* K, const dnnl_dim_t* lda, const dnnl_dim_t* ldb, const float* src, float* dst);
dnnl_status_t sgemm_compute(const char* transa, const char* transb, const dnnl_dim_t* M, const dnnl_dim_t* N, const dnnl_dim_t* K,
                            const float* A, const dnnl_dim_t* lda, const float* B, const dnnl_dim_t* ldb, const float* beta, float* C,
                            const dnnl_dim_t* ldc);
}  // namespace dnnl::impl::cpu
#endif

namespace precis::rt {
namespace {

#if PRECIS_DNNL_PACKED_SGEMM
// Constant FP32 weights B [K, N] of a MatMul with `rows` rows of A, packed once by oneDNN's sgemm
// for that row count (the packed layout depends on it) into a copy the step's kernel keeps. The
// matmul primitive (gemm:jit on AVX2) packs plain weights inside every run instead, and how fast
// it reads them depends on where they lie: on a 2-core AMD EPYC (AVX2, oneDNN 2.6), 768 x 3072 at
// 197 rows takes 12-14 ms with the weights 64-byte aligned (a plan's mapped constants) and 8 ms
// at other offsets; packed, 7.3 ms. Packs are not shared between kernels: a constant input may be
// a widened copy that its step frees after Init, so an address does not identify weights. A
// dynamic plan prepares kernels per shape: at most kPacksPerWeight packs of the weights at one
// address live at a time, and kernels beyond use the matmul primitive (nullptr).
constexpr int64_t kPackedWeightElements = 256 * 1024;  // FP32 weights of at least 1 MiB are packed
constexpr int kPacksPerWeight = 2;

struct PackedWeights {  // a live pack, counted per weight address
  const void* data = nullptr;
  int64_t K = 0, N = 0;
  bool trans = false;
  std::weak_ptr<const float> packed;
};

// B [K, N], or [N, K] when `trans` (Gemm's transB).
std::shared_ptr<const float> PackWeights(const float* b, int64_t K, int64_t N, int64_t rows, bool trans) {
  static std::mutex mutex;
  static std::vector<PackedWeights> all;
  std::lock_guard<std::mutex> lock(mutex);
  all.erase(std::remove_if(all.begin(), all.end(), [](const PackedWeights& p) { return p.packed.expired(); }), all.end());
  int packs = 0;
  for (const PackedWeights& p : all) packs += p.data == b && p.K == K && p.N == N && p.trans == trans;
  if (packs >= kPacksPerWeight) return nullptr;
  // Y^T [N, rows] = B^T [N, K] x A^T [K, rows], column-major: B [K, N] as it lies is B^T with
  // lda N; B [N, K] is (B^T)^T with lda K.
  dnnl_dim_t m = N, n = rows, k = K, lda = trans ? K : N, ldb = K;
  const char* transa = trans ? "T" : "N";
  size_t size = 0;
  bool pack = false;
  if (dnnl::impl::cpu::sgemm_pack_get_size("A", transa, "N", &m, &n, &k, &lda, &ldb, &size, &pack) != dnnl_success || size == 0) return nullptr;
  AlignedBuffer buffer = AllocateAligned(size);
  if (!buffer) return nullptr;
  if (dnnl::impl::cpu::sgemm_pack("A", transa, "N", &m, &n, &k, &lda, &ldb, b, reinterpret_cast<float*>(buffer.get())) != dnnl_success) return nullptr;
  std::shared_ptr<const float> kept(reinterpret_cast<const float*>(buffer.release()), [](const float* p) { std::free(const_cast<float*>(p)); });
  all.push_back({b, K, N, trans, kept});
  return kept;
}

// PRECIS_CPU_PACKED_GEMM=0 in the environment turns packing off (A/B benchmarks, memory).
bool PackingOn() {
  static const bool on = [] {
    const char* env = std::getenv("PRECIS_CPU_PACKED_GEMM");
    return !env || std::strcmp(env, "0") != 0;
  }();
  return on;
}
#endif

// Whether steps with more rows than HalfWeightsGemv's take HalfWeightsGemm (fast_half_gemm.cc)
// rather than widened blocks handed to oneDNN. By default on CPUs with AVX2/FMA/F16C and without
// AVX-512: there oneDNN (gemm:jit) takes the widened block as plain weights and packs it again
// inside every run (ViT-B/16 FP16 plan, 2-core AMD EPYC: 1.7x the FP32 plan's time); with AVX-512
// it takes them widened straight into its blocked layout. PRECIS_CPU_HALF_GEMM=0 or 1 decides
// instead (1 only where the CPU has the instructions).
std::atomic<int> half_gemm_mode{-1};  // -1: by the CPU (and the environment); 0 off; 1 on

// 1 or 0 where SetHalfWeightsGemmForTesting or PRECIS_CPU_HALF_GEMM decides, else -1.
int HalfGemmChoice() {
  const int forced = half_gemm_mode.load();
  if (forced >= 0) return forced;
  static const int env = [] {
    const char* value = std::getenv("PRECIS_CPU_HALF_GEMM");
    return value && *value ? int(std::strcmp(value, "0") != 0) : -1;
  }();
  return env;
}

bool UseHalfWeightsGemm() {
  if (!HalfWeightsGemmAvailable()) return false;
  const int choice = HalfGemmChoice();
  return choice >= 0 ? choice == 1 : !HostCpuFeatures().x86_64_v4;
}

// Bytes of FP32 weights per block: the whole of a BERT-base/ViT-B layer (768 x 3072) in one block;
// the step's scratch holds a block twice (widened, reordered). The price of 16-bit weights is the
// conversion and the reorder at every run (see Width below); at larger M it matters less, and
// SessionOptions::cpu_fp32_weights (--fp32-weights) keeps the FP32 copy instead.
constexpr int64_t kBlockBytes = 12 * 1024 * 1024;
std::atomic<int64_t> block_bytes{kBlockBytes};

// Where a 2-D oneDNN layout puts element (k, n) of a [K, N] matrix: row_off[k] + the offset of
// column n, which the runs give (columns n0 .. n0 + len at consecutive offsets). Blocked layouts
// add up per dimension (oneDNN's memory_desc_wrapper::off_v): the inner blocks from the last,
// each taking its index modulo the block, then the outer strides.
struct PackedLayout {
  std::vector<int64_t> row_off;
  std::vector<LayoutRun> runs;
  size_t size = 0;      // floats in the layout, padding included
  bool padded = false;  // whether some of them hold no element (zero for oneDNN)

  // Null when the layout is not blocked or its runs are too short to widen into fast.
  static std::shared_ptr<const PackedLayout> Of(const dnnl::memory::desc& desc, int64_t K, int64_t N) {
    const dnnl_memory_desc_t& d = desc.data;
    if (d.format_kind != dnnl_blocked || d.ndims != 2 || d.dims[0] != K || d.dims[1] != N) return nullptr;
    const dnnl_blocking_desc_t& b = d.format_desc.blocking;
    auto offset = [&](int dim, int64_t i) {
      int64_t off = 0, stride = 1;
      for (int j = b.inner_nblks - 1; j >= 0; --j) {
        if (b.inner_idxs[j] == dim) {
          off += i % b.inner_blks[j] * stride;
          i /= b.inner_blks[j];
        }
        stride *= b.inner_blks[j];
      }
      return off + i * b.strides[dim];
    };
    auto layout = std::make_shared<PackedLayout>();
    layout->size = desc.get_size() / 4;
    layout->padded = layout->size != size_t(K * N);
    layout->row_off.resize(size_t(K));
    for (int64_t k = 0; k < K; ++k) layout->row_off[size_t(k)] = d.offset0 + offset(0, k);
    for (int64_t n = 0; n < N; ++n) {
      const int64_t off = offset(1, n);
      LayoutRun* last = layout->runs.empty() ? nullptr : &layout->runs.back();
      if (last && last->off + last->len == off) ++last->len;
      else layout->runs.push_back({n, 1, off});
    }
    for (const LayoutRun& run : layout->runs)
      if (run.len < 16 && run.n0 + run.len < N) return nullptr;  // only the last run may be short
    return layout;
  }
};

class DnnlGemmLikeKernel : public DnnlKernel {
 protected:
#if PRECIS_DNNL_PACKED_SGEMM
  // Y [rows, N] = A [rows, K] x B + beta * Y (A input 0, Y output 0, all FP32) with B, the
  // constant input 1 ([K, N], or [N, K] when trans_b), packed once (PackWeights). False where
  // packing is off, B is not such weights of 1 MiB or more, or other row counts hold its packs.
  bool AppendPacked(const Tensor& b, int64_t rows, int64_t K, int64_t N, bool trans_b, float beta) {
    if (!PackingOn() || !b.is_constant || b.dtype != DataType::kF32 || K * N < kPackedWeightElements || rows <= 0) return false;
    std::shared_ptr<const float> packed = PackWeights(b.As<float>(), K, N, rows, trans_b);
    if (!packed) return false;
    AppendHost([packed, rows, K, N, trans_b, beta](const KernelArgs& args, uint8_t*, int) {
      dnnl_dim_t m = N, n = rows, k = K, lda = trans_b ? K : N, ldb = K, ldc = N;
      dnnl::impl::cpu::sgemm_compute("P", "N", &m, &n, &k, packed.get(), &lda, args.in(0)->As<float>(), &ldb, &beta, args.out(0)->As<float>(), &ldc);
    });
    return true;
  }
#endif

  // Whether B is a 16-bit matrix that oneDNN would otherwise need an FP32 copy of (and the session
  // did not ask for that copy of constant weights: SessionOptions::cpu_fp32_weights), for a
  // product of M rows. Constant weights, or any 16-bit B (a training plan's working copies, an
  // activation) where M rows take HalfWeightsGemv or HalfWeightsGemm, which read B at every run
  // in its 16 bits; such a B that is not constant otherwise runs widened (the session's copy).
  bool HalfWeights(const Tensor* b, int64_t M) const {
    if (fp32_weights_ || !b || b->rank() != 2 || b->numel == 0) return false;
    if (!b->is_constant && M > kHalfWeightsGemvRows && !UseHalfWeightsGemm()) return false;
    return b->dtype == DataType::kF16 || (b->dtype == DataType::kBF16 && !NativeBf16Enabled());
  }

  // Y[M, N] = A[M, K] x B (+ bias[N]) with B the 16-bit input 1 ([K, N], or [N, K] when
  // trans_b), A input 0 and Y output 0 (FP32 or 16-bit, row-major), `bias` input 2 (N elements,
  // FP32 or 16-bit) or null.
  Status SetupHalfWeights(const KernelArgs& args, int64_t M, int64_t K, int64_t N, bool trans_b, const Tensor* bias) {
    const Tensor &a = *args.in(0), &b = *args.in(1), &y = *args.out(0);
    auto float_or_half = [](DataType t) { return t == DataType::kF32 || IsHalf(t); };
    if (!float_or_half(a.dtype) || !float_or_half(y.dtype)) return Unimplemented("oneDNN MatMul with 16-bit weights: A and Y FP32, FP16 or BF16");
    if (bias && !float_or_half(bias->dtype)) return Unimplemented("oneDNN Gemm with 16-bit weights: C FP32, FP16 or BF16");
    const DataType wt = b.dtype, at = a.dtype, yt = y.dtype;
    const int64_t nb = std::min(N, std::max<int64_t>(64, block_bytes.load() / (4 * K) / 64 * 64));

    const bool gemv = M <= kHalfWeightsGemvRows, gemm = !gemv && UseHalfWeightsGemm();
    dnnl::memory src;
    if (at == DataType::kF32) {
      src = Input(0, Plain({M, K}));
    } else if (!gemm) {  // HalfWeightsGemm widens a 16-bit A itself as it packs its rows
      src = Temporary(Plain({M, K}));
      size_t at_src = TemporaryOffset(src);
      AppendHost([=](const KernelArgs& r, uint8_t* scratch, int threads) {
        WidenBlock(at, r.in(0)->data, K, reinterpret_cast<float*>(scratch + at_src), M, K, threads);
      });
    }
    // A 16-bit C (N values): widened once when constant, else at every run into a temporary.
    dnnl::memory bias_wide;
    if (bias && IsHalf(bias->dtype) && bias->is_constant) {
      bias_.resize(size_t(N));
      WidenArrayParallel(bias->dtype, bias->data, bias_.data(), N, 1);
    } else if (bias && IsHalf(bias->dtype)) {
      bias_wide = Temporary(Plain({1, N}));
      const size_t at_c = TemporaryOffset(bias_wide);
      const DataType ct = bias->dtype;
      AppendHost([=](const KernelArgs& r, uint8_t* scratch, int threads) {
        WidenBlock(ct, r.in(2)->data, N, reinterpret_cast<float*>(scratch + at_c), 1, N, threads);
      });
    }
    if (gemv || gemm) {
      // Few rows: W read once in its 16 bits (HalfWeightsGemv) instead of widened and reordered.
      // More rows on AVX2 CPUs: W widened inside the product, slice by slice (HalfWeightsGemm).
      const int64_t work_bytes = gemv ? HalfWeightsGemvScratchBytes(M, threads_) : HalfWeightsGemmScratchBytes(M, K, threads_);
      // A 16-bit Y: HalfWeightsGemv's FP32 output rounded afterwards; HalfWeightsGemm rounds it
      // itself, block by block.
      dnnl::memory work = Temporary(Plain({(work_bytes + 3) / 4}));
      const bool narrow_after = gemv && yt != DataType::kF32;
      dnnl::memory out = narrow_after ? Temporary(Plain({M, N})) : dnnl::memory();
      const size_t at_work = TemporaryOffset(work), at_out = narrow_after ? TemporaryOffset(out) : 0;
      const size_t at_a = at == DataType::kF32 || gemm ? 0 : TemporaryOffset(src);
      const size_t at_bias = bias_wide ? TemporaryOffset(bias_wide) : 0;
      const bool has_bias = bias != nullptr, f32_bias = bias && bias->dtype == DataType::kF32;
      const float* const_bias = bias_.empty() ? nullptr : bias_.data();
      const int max_threads = threads_;  // the scratch holds this many threads' pieces
      AppendHost([=](const KernelArgs& r, uint8_t* scratch, int threads) {
        const float* pc = !has_bias ? nullptr
                          : const_bias ? const_bias
                          : f32_bias  ? r.in(2)->As<float>()
                                      : reinterpret_cast<const float*>(scratch + at_bias);
        const int t = std::min(threads, max_threads);
        if (gemm) {
          HalfWeightsGemm(wt, at, r.in(0)->data, M, K, r.in(1)->data, N, trans_b, pc, yt, r.out(0)->data, N, scratch + at_work, t);
          return;
        }
        const float* pa = at == DataType::kF32 ? r.in(0)->As<float>() : reinterpret_cast<const float*>(scratch + at_a);
        float* py = yt == DataType::kF32 ? r.out(0)->As<float>() : reinterpret_cast<float*>(scratch + at_out);
        HalfWeightsGemv(wt, pa, M, K, r.in(1)->data, N, trans_b, pc, py, N, scratch + at_work, t);
        if (yt != DataType::kF32) NarrowBlock(yt, py, r.out(0)->data, N, M, N, threads);
      });
      return Status::Ok();
    }
    // For a 16-bit Y, the output of one block (the widest; a narrower last block uses the same bytes).
    dnnl::memory out_block = yt == DataType::kF32 ? dnnl::memory() : Temporary(Plain({M, nb}));

    // One primitive per block width (all blocks but perhaps the last share one). Its weights are
    // in the layout oneDNN prefers (blocks of 16 rows x 64 columns for brgemm on AVX-512). Weights
    // [K, N] are widened straight into that layout: rows of B split into runs of consecutive
    // offsets, one pass (768 x 3072, 2 cores: 0.5 ms, against 0.5 ms widening plus 0.7 ms
    // reordering). Transposed weights ([N, K]) are widened plain and then reordered by oneDNN (a
    // jit reorder, much cheaper than oneDNN packing plain weights inside every matmul: 768 x 3072,
    // M = 197, 2 cores, 3.7 ms reorder and matmul against 8.5 ms on plain weights and 3.0 ms on
    // prepacked ones).
    struct Width {
      dnnl::matmul primitive;
      dnnl::matmul::primitive_desc pd;
      dnnl::memory plain, weights, out;  // the block temporaries: widened (when reordered), packed, output
      std::shared_ptr<const PackedLayout> layout;  // when widened straight into `weights`
    };
    dnnl::memory wei_block;  // the widest block's plain FP32 weights, for the reordered form
    std::vector<std::pair<int64_t, Width>> widths;
    auto width = [&](int64_t w) -> Width& {
      for (auto& [have, wd] : widths)
        if (have == w) return wd;
      md wei = trans_b ? Strided({K, w}, {1, K}) : Plain({K, w});
      md dst = yt == DataType::kF32 ? Strided({M, w}, {N, 1}) : Plain({M, w});
      dnnl::matmul::primitive_desc pd =
          bias ? dnnl::matmul::primitive_desc(dnnl::matmul::desc(Plain({M, K}), Any({K, w}), Plain({1, w}), dst), Attr(), Engine())
               : dnnl::matmul::primitive_desc(dnnl::matmul::desc(Plain({M, K}), Any({K, w}), dst), Attr(), Engine());
      std::shared_ptr<const PackedLayout> layout = trans_b ? nullptr : PackedLayout::Of(pd.weights_desc(), K, w);
      dnnl::memory plain, packed;
      if (layout) {
        packed = Temporary(pd.weights_desc());
      } else {
        if (!wei_block) wei_block = Temporary(trans_b ? Strided({K, nb}, {1, K}) : Plain({K, nb}));
        plain = TemporaryView(wei, wei_block, 0);
        packed = pd.weights_desc() == wei ? plain : Temporary(pd.weights_desc());
      }
      Width wd{dnnl::matmul(pd), pd, plain, packed, yt == DataType::kF32 ? dnnl::memory() : TemporaryView(dst, out_block, 0), layout};
      widths.emplace_back(w, std::move(wd));
      return widths.back().second;
    };
    for (int64_t n0 = 0; n0 < N; n0 += nb) {
      const int64_t w = std::min(nb, N - n0);
      Width& wd = width(w);
      if (IsReferenceImpl(wd.pd)) return Unimplemented("oneDNN has only its reference matmul for this step");
      if (wd.layout) {
        // Columns n0.. of B[K, N], widened into the packed layout (its padding zeroed first).
        const size_t at_w = TemporaryOffset(wd.weights);
        std::shared_ptr<const PackedLayout> layout = wd.layout;
        AppendHost([=](const KernelArgs& r, uint8_t* scratch, int threads) {
          float* to = reinterpret_cast<float*>(scratch + at_w);
          if (layout->padded) std::fill(to, to + layout->size, 0.0f);
          WidenIntoLayout(wt, r.in(1)->data + size_t(n0) * 2, N, K, layout->row_off.data(), layout->runs.data(),
                          int64_t(layout->runs.size()), to, threads);
        });
      } else {
        // The block's weights: rows n0.. of B[N, K], or columns n0.. of B[K, N].
        const size_t at_w = TemporaryOffset(wd.plain);
        AppendHost([=](const KernelArgs& r, uint8_t* scratch, int threads) {
          const uint8_t* from = r.in(1)->data + size_t(trans_b ? n0 * K : n0) * 2;
          float* to = reinterpret_cast<float*>(scratch + at_w);
          if (trans_b) WidenBlock(wt, from, K, to, w, K, threads);
          else WidenBlock(wt, from, N, to, K, w, threads);
        });
        if (wd.weights.get() != wd.plain.get()) AppendReorder(wd.plain, wd.weights);
      }
      std::vector<std::pair<int, dnnl::memory>> margs = {{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, wd.weights}};
      // FP32 Y: the block is Y's columns n0.., row stride N (the output bound at n0).
      margs.push_back({DNNL_ARG_DST, yt == DataType::kF32 ? Output(0, Strided({M, w}, {N, 1}), size_t(n0) * 4) : wd.out});
      if (bias) {
        md bias_md = Plain({1, w});
        if (!bias_.empty()) bias_blocks_.emplace_back(bias_md, Engine(), bias_.data() + n0);  // kept: Append stores the handle
        margs.push_back({DNNL_ARG_BIAS, !bias_.empty()          ? bias_blocks_.back()
                                        : IsHalf(bias->dtype) ? TemporaryView(bias_md, bias_wide, size_t(n0) * 4)
                                                              : Input(2, bias_md, size_t(n0) * 4)});
      }
      Append(wd.primitive, margs, wd.pd.scratchpad_desc());
      if (yt != DataType::kF32) {
        const size_t at_y = TemporaryOffset(wd.out);
        AppendHost([=](const KernelArgs& r, uint8_t* scratch, int threads) {
          NarrowBlock(yt, reinterpret_cast<const float*>(scratch + at_y), r.out(0)->data + size_t(n0) * 2, N, M, w, threads);
        });
      }
    }
    return Status::Ok();
  }

 private:
  std::vector<float> bias_;                // a constant 16-bit C, widened (N values)
  std::vector<dnnl::memory> bias_blocks_;  // oneDNN memories over bias_, one per block
};

class DnnlMatMulKernel : public DnnlGemmLikeKernel {
 private:
  // Whether Y[batch.., M, N] = A[batch.., M, K] x B[batch.., K, N] has a 16-bit B of its own per
  // batch (attention's products of an FP16 plan: both operands activations) that oneDNN would
  // take only widened, on a CPU where HalfWeightsGemm runs: A and Y FP32 or 16-bit, the same
  // batch dims on both sides, nothing empty, and at least kBatchedHalfColumns columns. Each batch
  // packs its rows of A once for N / 16 panels, so narrow products pay that packing for little:
  // ViT-B/16's attention, 2 threads, interleaved, medians of 12 layers x 3 runs: Q x K^T (197 x
  // 64 x 197) 0.66 ms against 0.73 widened, but scores x V (197 x 197 x 64) 0.68 against 0.62.
  static constexpr int64_t kBatchedHalfColumns = 128;
  static bool BatchedHalf(const Tensor& a, const Tensor& b, const Tensor& y) {
    if (b.rank() < 3 || a.rank() != b.rank() || a.numel == 0 || b.numel == 0 || !UseHalfWeightsGemm()) return false;
    if (b.dims.back() < kBatchedHalfColumns) return false;
    if (!(b.dtype == DataType::kF16 || (b.dtype == DataType::kBF16 && !NativeBf16Enabled()))) return false;
    auto float_or_half = [](DataType t) { return t == DataType::kF32 || IsHalf(t); };
    if (!float_or_half(a.dtype) || !float_or_half(y.dtype)) return false;
    const size_t r = a.dims.size();
    for (size_t i = 0; i + 2 < r; ++i)
      if (a.dims[i] != b.dims[i]) return false;
    return a.dims[r - 1] == b.dims[r - 2] && y.numel == a.numel / a.dims[r - 1] * b.dims[r - 1];
  }

  // One batch of SetupBatchedHalf's product.
  struct BatchJob {
    const KernelArgs* r;
    uint8_t* work;  // the scratch of HalfWeightsGemm, `per` bytes per thread when batches run side by side
    int64_t per, M, K, N;
    DataType at, wt, yt;
    void Run(int64_t bi, uint8_t* scratch, int threads) const {
      const size_t as = DataTypeSize(at), ys = DataTypeSize(yt);
      HalfWeightsGemm(wt, at, r->in(0)->data + size_t(bi * M * K) * as, M, K, r->in(1)->data + size_t(bi * K * N) * 2, N, false, nullptr, yt,
                      r->out(0)->data + size_t(bi * M * N) * ys, N, scratch, threads);
    }
  };

  // Each batch through HalfWeightsGemm: B read in its 16 bits, A widened as it is packed, Y
  // rounded once (no widened copies). Threads take whole batches (one thread each) when there
  // are at least as many batches; otherwise the batches go one by one, each on all threads.
  Status SetupBatchedHalf(const KernelArgs& args) {
    const Tensor &a = *args.in(0), &b = *args.in(1);
    const size_t r = a.dims.size();
    const int64_t M = a.dims[r - 2], K = a.dims[r - 1], N = b.dims[r - 1], batches = a.numel / (M * K);
    const DataType at = a.dtype, wt = b.dtype, yt = args.out(0)->dtype;
    const int max_threads = threads_;
    const bool by_batch = batches >= max_threads;
    const int64_t each = HalfWeightsGemmScratchBytes(M, K, by_batch ? 1 : max_threads);
    const int64_t per = (each + 63) / 64 * 64;
    dnnl::memory work = Temporary(Plain({(per * (by_batch ? max_threads : 1) + 3) / 4}));
    const size_t at_work = TemporaryOffset(work);
    AppendHost([=](const KernelArgs& r, uint8_t* scratch, int threads) {
      BatchJob job{&r, scratch + at_work, per, M, K, N, at, wt, yt};
      const int t = std::min(threads, max_threads);
      if (!by_batch) {
        for (int64_t bi = 0; bi < batches; ++bi) job.Run(bi, job.work, t);
        return;
      }
      ParallelJobs(batches, t, [](void* c, int64_t bi, int thread) {
        const BatchJob& j = *static_cast<const BatchJob*>(c);
        j.Run(bi, j.work + size_t(thread) * size_t(j.per), 1);
      }, &job);
    });
    return Status::Ok();
  }

 protected:
  Status Setup(const KernelArgs& args) override {
    const Tensor *a = args.in(0), *b = args.in(1), *y = args.out(0);
    if (!a || !b || !y) return Unimplemented("MatMul needs two inputs and one output");
    if (a->rank() >= 1 && b->rank() == 2 && a->dims.back() == b->dims[0] && a->numel > 0 && HalfWeights(b, a->numel / b->dims[0])) {
      // Y[batch.., M, N] = A[batch.., M, K] x B[K, N], the batch folded into M.
      int64_t K = b->dims[0], N = b->dims[1];
      if (y->numel != a->numel / K * N) return Unimplemented("MatMul output size does not match");
      return SetupHalfWeights(args, a->numel / K, K, N, false, nullptr);
    }
    if (BatchedHalf(*a, *b, *y)) return SetupBatchedHalf(args);
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
#if PRECIS_DNNL_PACKED_SGEMM
    if (!b_batched && in_type == dt::f32 && out_type == dt::f32 && AppendPacked(*b, batches * M, K, N, false, 0.0f)) return Status::Ok();
#endif
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

class DnnlGemmKernel : public DnnlGemmLikeKernel {
 protected:
  Status Setup(const KernelArgs& args) override {
    const Tensor *a = args.in(0), *b = args.in(1), *c = args.in(2), *y = args.out(0);
    if (!a || !b || !y) return Unimplemented("Gemm needs inputs A and B and an output");
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
    // 16-bit weights in blocks: the common Y = A x B (+ per-column C) form (a Linear layer).
    bool column_c = use_c && beta == 1.0f && c->numel == N_ && (c->rank() == 1 || (c->rank() == 2 && c->dims[0] == 1));
    if (HalfWeights(b, M_) && !trans_a && alpha == 1.0f && (!use_c || column_c)) return SetupHalfWeights(args, M_, K, N_, trans_b, use_c ? c : nullptr);
    PRECIS_RETURN_IF_ERROR(CheckDnnlTypes("oneDNN Gemm", {a, b}, {c, y}));
    if (use_c) {
      if (c->rank() > 2) return Unimplemented("Gemm C must have rank <= 2");
      cm_ = c->rank() == 2 ? c->dims[0] : 1;
      cn_ = c->rank() >= 1 ? c->dims.back() : 1;
      if ((cm_ != 1 && cm_ != M_) || (cn_ != 1 && cn_ != N_)) return Unimplemented("Gemm C does not broadcast to MxN");
    }

    dt in_type = DnnlType(*a), out_type = DnnlType(*y);
#if PRECIS_DNNL_PACKED_SGEMM
    // Y = A x B + beta * C: C broadcast into Y first (BeforeExecute), then the packed product.
    if (!trans_a && alpha == 1.0f && in_type == dt::f32 && out_type == dt::f32 && (!use_c || c->dtype == DataType::kF32) &&
        AppendPacked(*b, M_, K, N_, trans_b, use_c ? beta : 0.0f)) {
      copy_c_ = use_c;
      if (copy_c_) ReadAtRun(2);
      return Status::Ok();
    }
#endif
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
      if (copy_c_) ReadAtRun(2);
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

int SetHalfWeightsGemmForTesting(int mode) { return half_gemm_mode.exchange(mode); }

// Unlike the products, on every CPU with the instructions by default: a convolution's
// alternative is an FP32 copy of its weights made at load (--fp32-weights asks for that).
bool UseHalfWeightsConv() { return HalfWeightsGemmAvailable() && HalfGemmChoice() != 0; }

int64_t SetWeightBlockBytesForTesting(int64_t bytes) { return block_bytes.exchange(bytes > 0 ? bytes : kBlockBytes); }

void AddDnnlMatMulKernels(KernelRegistry& r) {
  r.RegisterFast("MatMul", Make<DnnlMatMulKernel>);
  r.RegisterFast("Gemm", Make<DnnlGemmKernel>);
}

}  // namespace precis::rt
