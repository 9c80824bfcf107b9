// Fast Add, Sub, Mul, Div, Relu and Clip for f32, f16 and bf16, and RegisterFastKernels.
//
// Binary operators: Init reduces the broadcast to as few dims as possible (size-1 output dims
// dropped, adjacent dims merged where both operands broadcast the same way), so that the output
// is (outer rows) x (one contiguous inner run) and each operand steps by 0 or 1 along the run.
// A bias [N] on [B, S, N] becomes rows of N with the bias restarting each row; a [B, 1, 1, S]
// mask on [B, H, S, S] becomes B * H * S rows of S; a per-channel [1, C, 1, 1] operand becomes
// rows of H * W with a constant per row. Run splits the flat output range over the threads and
// walks rows with an odometer, so there is no per-element index arithmetic. The arithmetic is
// the reference kernel's (Load, float op, Store<T>), so results are bit-identical to it.
#include <algorithm>
#include <cmath>
#include <vector>

#include "runtime/cpu/kernels/fast_util.h"
#include "runtime/cpu/kernels/register.h"
#include "runtime/cpu/kernels/shape_checks.h"

namespace precis::rt {
namespace {

struct AddOp { float operator()(float a, float b) const { return a + b; } };
struct SubOp { float operator()(float a, float b) const { return a - b; } };
struct MulOp { float operator()(float a, float b) const { return a * b; } };
struct DivOp { float operator()(float a, float b) const { return a / b; } };

// The output as rows of one inner run; per operand the element stride of each outer dim and
// the step (0 or 1) along the run.
struct BroadcastPlan {
  std::vector<int64_t> outer;            // outer dims, outermost first
  std::vector<int64_t> stride_a, stride_b;
  int64_t run = 1, step_a = 1, step_b = 1;
};

BroadcastPlan PlanBroadcast(const std::vector<int64_t>& y, std::vector<int64_t> a, std::vector<int64_t> b) {
  a.insert(a.begin(), y.size() - a.size(), 1);
  b.insert(b.begin(), y.size() - b.size(), 1);
  // Collapsed dims: size and whether each operand broadcasts (is 1) along it.
  struct Dim {
    int64_t size;
    bool a_full, b_full;
  };
  std::vector<Dim> dims;
  for (size_t d = 0; d < y.size(); ++d) {
    if (y[d] == 1) continue;
    Dim dim{y[d], a[d] != 1, b[d] != 1};
    if (!dims.empty() && dims.back().a_full == dim.a_full && dims.back().b_full == dim.b_full) dims.back().size *= dim.size;
    else dims.push_back(dim);
  }
  BroadcastPlan p;
  if (dims.empty()) return p;  // one element
  p.run = dims.back().size;
  p.step_a = dims.back().a_full;
  p.step_b = dims.back().b_full;
  int64_t inner_a = dims.back().a_full ? p.run : 1, inner_b = dims.back().b_full ? p.run : 1;
  p.outer.resize(dims.size() - 1);
  p.stride_a.resize(p.outer.size());
  p.stride_b.resize(p.outer.size());
  for (size_t d = p.outer.size(); d-- > 0;) {
    p.outer[d] = dims[d].size;
    p.stride_a[d] = dims[d].a_full ? inner_a : 0;
    p.stride_b[d] = dims[d].b_full ? inner_b : 0;
    if (dims[d].a_full) inner_a *= dims[d].size;
    if (dims[d].b_full) inner_b *= dims[d].size;
  }
  return p;
}

// y[0, n) = op(a, b) with compile-time steps, so the loop vectorizes.
template <int kStepA, int kStepB, typename T, typename Op>
void RunRow(const T* a, const T* b, T* y, int64_t n, Op op) {
  if constexpr (kStepA == 0) {
    float va = Load(a[0]);
    for (int64_t i = 0; i < n; ++i) y[i] = Store<T>(op(va, Load(b[i * kStepB])));
  } else if constexpr (kStepB == 0) {
    float vb = Load(b[0]);
    for (int64_t i = 0; i < n; ++i) y[i] = Store<T>(op(Load(a[i]), vb));
  } else {
    for (int64_t i = 0; i < n; ++i) y[i] = Store<T>(op(Load(a[i]), Load(b[i])));
  }
}

// Outer dims a collapsed broadcast may keep (each needs an alternation of broadcast patterns).
constexpr size_t kMaxOuter = 16;

template <typename Op>
class FastBinaryKernel : public Kernel {
 public:
  Status Init(const KernelArgs& args, const CpuContext&) override {
    Tensor *a = args.in(0), *b = args.in(1), *y = args.out(0);
    if (!a || !b || !y || a->dtype != b->dtype || a->dtype != y->dtype) return Unimplemented("fast binary: operands differ");
    if (!fast::DispatchFast(y->dtype, [](auto) {})) return Unimplemented("fast binary: f32, f16 and bf16 only");
    std::vector<int64_t> broadcast;
    if (!BroadcastShapes({a->dims, b->dims}, &broadcast) || broadcast != y->dims) return Unimplemented("fast binary: Y is not the operands' broadcast");
    plan_ = PlanBroadcast(y->dims, a->dims, b->dims);
    if (plan_.outer.size() > kMaxOuter) return Unimplemented("fast binary: too many broadcast dims");
    return Status::Ok();
  }

  Status Run(const KernelArgs& args, CpuContext& ctx) override {
    const Tensor &a = *args.in(0), &b = *args.in(1);
    Tensor& y = *args.out(0);
    fast::DispatchFast(y.dtype, [&](auto tag) {
      using T = decltype(tag);
      fast::ParallelFor(y.numel, 1, ctx.threads, [&](int64_t begin, int64_t end) { Chunk(a.As<T>(), b.As<T>(), y.As<T>(), begin, end); });
    });
    return Status::Ok();
  }

 private:
  // Output elements [begin, end): partial rows at the ends, whole rows between.
  template <typename T>
  void Chunk(const T* a, const T* b, T* y, int64_t begin, int64_t end) const {
    const BroadcastPlan& p = plan_;
    size_t rank = p.outer.size();
    int64_t c[kMaxOuter] = {};  // odometer over the outer dims
    int64_t row = begin / p.run, j = begin % p.run, off_a = 0, off_b = 0;
    for (size_t d = rank; d-- > 0;) {
      c[d] = row % p.outer[d];
      row /= p.outer[d];
      off_a += c[d] * p.stride_a[d];
      off_b += c[d] * p.stride_b[d];
    }
    for (int64_t pos = begin; pos < end;) {
      int64_t n = std::min(p.run - j, end - pos);
      const T* ra = a + off_a + j * p.step_a;
      const T* rb = b + off_b + j * p.step_b;
      if (p.step_a && p.step_b) RunRow<1, 1>(ra, rb, y + pos, n, Op());
      else if (p.step_a) RunRow<1, 0>(ra, rb, y + pos, n, Op());
      else if (p.step_b) RunRow<0, 1>(ra, rb, y + pos, n, Op());
      else RunRow<0, 0>(ra, rb, y + pos, n, Op());
      pos += n;
      j = 0;
      for (size_t d = rank; d-- > 0;) {  // next row
        off_a += p.stride_a[d];
        off_b += p.stride_b[d];
        if (++c[d] < p.outer[d]) break;
        off_a -= c[d] * p.stride_a[d];
        off_b -= c[d] * p.stride_b[d];
        c[d] = 0;
      }
    }
  }

  BroadcastPlan plan_;
};

// y = f(x) elementwise over the whole tensor, split over the threads.
template <typename F>
void MapParallel(const Tensor& x, Tensor& y, int threads, F f) {
  fast::DispatchFast(x.dtype, [&](auto tag) {
    using T = decltype(tag);
    const T* px = x.As<T>();
    T* py = y.As<T>();
    fast::ParallelFor(x.numel, 1, threads, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) py[i] = Store<T>(f(Load(px[i])));
    });
  });
}

class FastReluKernel : public Kernel {
 public:
  Status Init(const KernelArgs& args, const CpuContext&) override {
    const Tensor *x = args.in(0), *y = args.out(0);
    if (!x || !y || x->dtype != y->dtype || x->dims != y->dims || !fast::DispatchFast(x->dtype, [](auto) {}))
      return Unimplemented("fast Relu: f32, f16 and bf16 of one shape only");
    return Status::Ok();
  }
  Status Run(const KernelArgs& args, CpuContext& ctx) override {
    MapParallel(*args.in(0), *args.out(0), ctx.threads, [](float v) { return v > 0.0f ? v : 0.0f; });
    return Status::Ok();
  }
};

// Clip with scalar bounds from attributes (the kernel form of versions before 11) or optional
// inputs; NaN stays NaN.
class FastClipKernel : public Kernel {
 public:
  Status Init(const KernelArgs& args, const CpuContext&) override {
    const Tensor *x = args.in(0), *y = args.out(0);
    if (!x || !y || x->dtype != y->dtype || x->dims != y->dims || !fast::DispatchFast(x->dtype, [](auto) {}))
      return Unimplemented("fast Clip: f32, f16 and bf16 of one shape only");
    attr_form_ = args.attrs.Has("min") || args.attrs.Has("max");
    lo_ = attr_form_ ? args.attrs.Float("min", -INFINITY) : -INFINITY;
    hi_ = attr_form_ ? args.attrs.Float("max", INFINITY) : INFINITY;
    for (size_t i = 1; i <= 2 && !attr_form_; ++i)
      if (const Tensor* b = args.in(i); b && (b->dtype != x->dtype || b->numel > 1)) return Unimplemented("fast Clip: bounds must be scalars of X's dtype");
    return Status::Ok();
  }
  Status Run(const KernelArgs& args, CpuContext& ctx) override {
    float lo = lo_, hi = hi_;
    if (!attr_form_) {
      fast::DispatchFast(args.in(0)->dtype, [&](auto tag) {
        using T = decltype(tag);
        if (const Tensor* b = args.in(1); b && b->numel == 1) lo = Load(b->As<T>()[0]);
        if (const Tensor* b = args.in(2); b && b->numel == 1) hi = Load(b->As<T>()[0]);
      });
    }
    MapParallel(*args.in(0), *args.out(0), ctx.threads, [lo, hi](float v) {
      v = v < lo ? lo : v;
      return v > hi ? hi : v;
    });
    return Status::Ok();
  }

 private:
  bool attr_form_ = false;
  float lo_ = -INFINITY, hi_ = INFINITY;
};

}  // namespace

void RegisterFastKernels(KernelRegistry& r) {
  r.RegisterFast("Add", Make<FastBinaryKernel<AddOp>>);
  r.RegisterFast("Sub", Make<FastBinaryKernel<SubOp>>);
  r.RegisterFast("Mul", Make<FastBinaryKernel<MulOp>>);
  r.RegisterFast("Div", Make<FastBinaryKernel<DivOp>>);
  r.RegisterFast("Relu", Make<FastReluKernel>);
  r.RegisterFast("Clip", Make<FastClipKernel>);
  fast::AddFastUnaryKernels(r);
  fast::AddFastSoftmaxKernels(r);
  fast::AddFastNormKernels(r);
  fast::AddFastReduceKernels(r);
  fast::AddFastWhereKernel(r);
  fast::AddFastTrainingKernels(r);
  fast::AddFastTransposeKernels(r);
  fast::AddFastNhwcPoolKernels(r);
}

}  // namespace precis::rt
