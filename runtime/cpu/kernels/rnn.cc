// Reference recurrent kernels: RNN, GRU and LSTM with every ONNX attribute (directions,
// sequence_lens, initial states, both layouts, activation lists with alpha/beta, clip,
// GRU's linear_before_reset, LSTM's peepholes and input_forget). Each (direction, batch entry)
// runs its own recurrence in the compute type (float; double for f64) with the hidden and cell
// states kept in it across steps, so 16-bit plans round only operands and outputs. Steps past a
// batch entry's sequence length leave Y at zero; Y_h and Y_c hold its last step's state (the
// initial state when its length is 0).
#include <algorithm>
#include <cmath>
#include <string>

#include "runtime/cpu/kernels/common.h"
#include "runtime/cpu/kernels/register.h"
#include "runtime/cpu/kernels/shape_checks.h"

namespace precis::rt {
namespace {

enum class Cell { kRnn, kGru, kLstm };

struct Activation {
  enum Kind { kRelu, kTanh, kSigmoid, kAffine, kLeakyRelu, kThresholdedRelu, kScaledTanh, kHardSigmoid, kElu, kSoftsign, kSoftplus };
  Kind kind = kTanh;
  double alpha = 0, beta = 0;

  template <typename C>
  C operator()(C x) const {
    C a = C(alpha), b = C(beta);
    switch (kind) {
      case kRelu: return std::max(x, C(0));
      case kTanh: return std::tanh(x);
      case kSigmoid: return C(1) / (C(1) + std::exp(-x));
      case kAffine: return a * x + b;
      case kLeakyRelu: return x >= 0 ? x : a * x;
      case kThresholdedRelu: return x > a ? x : C(0);
      case kScaledTanh: return a * std::tanh(b * x);
      case kHardSigmoid: return std::clamp(a * x + b, C(0), C(1));
      case kElu: return x >= 0 ? x : a * (std::exp(x) - C(1));
      case kSoftsign: return x / (C(1) + std::fabs(x));
      case kSoftplus: return std::log1p(std::exp(-std::fabs(x))) + std::max(x, C(0));
    }
    return x;
  }
};

// Parses one name; alpha/beta are taken from the lists in order by the functions that use them
// (defaults as the ONNX operators of the same name).
bool ParseActivation(const std::string& name, const std::vector<float>& alphas, const std::vector<float>& betas, size_t& ai, size_t& bi,
                     Activation& out) {
  struct Def { const char* name; Activation::Kind kind; bool uses_alpha, uses_beta; double alpha, beta; };
  static const Def defs[] = {
      {"Relu", Activation::kRelu, false, false, 0, 0},           {"Tanh", Activation::kTanh, false, false, 0, 0},
      {"Sigmoid", Activation::kSigmoid, false, false, 0, 0},     {"Affine", Activation::kAffine, true, true, 1.0, 0.0},
      {"LeakyRelu", Activation::kLeakyRelu, true, false, 0.01, 0}, {"ThresholdedRelu", Activation::kThresholdedRelu, true, false, 1.0, 0},
      {"ScaledTanh", Activation::kScaledTanh, true, true, 1.0, 1.0}, {"HardSigmoid", Activation::kHardSigmoid, true, true, 0.2, 0.5},
      {"Elu", Activation::kElu, true, false, 1.0, 0},             {"Softsign", Activation::kSoftsign, false, false, 0, 0},
      {"Softplus", Activation::kSoftplus, false, false, 0, 0},
  };
  for (const Def& d : defs) {
    if (name != d.name) continue;
    out.kind = d.kind;
    out.alpha = d.uses_alpha && ai < alphas.size() ? alphas[ai] : d.alpha;
    out.beta = d.uses_beta && bi < betas.size() ? betas[bi] : d.beta;
    ai += d.uses_alpha;
    bi += d.uses_beta;
    return true;
  }
  return false;
}

template <Cell kCell>
class RecurrentKernel : public Kernel {
  static constexpr int64_t kGates = kCell == Cell::kRnn ? 1 : kCell == Cell::kGru ? 3 : 4;
  static constexpr size_t kFunctions = kCell == Cell::kRnn ? 1 : kCell == Cell::kGru ? 2 : 3;

 public:
  Status Init(const KernelArgs& args, const CpuContext&) override {
    const Tensor *x = args.in(0), *w = args.in(1), *r = args.in(2);
    if (!x || !w || !r) return args.Error("needs inputs X, W and R");
    dtype_ = x->dtype;
    if (!DispatchFloat(dtype_, [](auto) {})) return args.Error("X must be a float tensor");
    for (size_t i = 0; i < args.inputs.size(); ++i)
      if (args.in(i) && i != 4 && args.in(i)->dtype != dtype_) return args.Error("input " + std::to_string(i) + " is not of X's dtype");
    for (size_t o = 0; o < args.outputs.size(); ++o)
      if (args.out(o) && args.out(o)->dtype != dtype_) return args.Error("output " + std::to_string(o) + " is not of X's dtype");
    if (x->rank() != 3 || w->rank() != 3) return args.Error("X and W must have rank 3");
    std::string direction = args.attrs.String("direction", "forward");
    if (direction != "forward" && direction != "reverse" && direction != "bidirectional") return args.Error("unknown direction '" + direction + "'");
    dirs_ = direction == "bidirectional" ? 2 : 1;
    reverse_first_ = direction == "reverse";
    layout_ = args.attrs.Int("layout", 0);
    if (layout_ != 0 && layout_ != 1) return args.Error("layout must be 0 or 1");
    seq_ = layout_ == 0 ? x->dims[0] : x->dims[1];
    batch_ = layout_ == 0 ? x->dims[1] : x->dims[0];
    input_ = x->dims[2];
    if (w->dims[1] % kGates != 0) return args.Error("W's rows are not a multiple of the gate count");
    hidden_ = w->dims[1] / kGates;
    if (hidden_ <= 0 || args.attrs.Int("hidden_size", hidden_) != hidden_) return args.Error("hidden_size does not match W");
    PRECIS_RETURN_IF_ERROR(CheckDims(args, *w, {dirs_, kGates * hidden_, input_}, "W"));
    PRECIS_RETURN_IF_ERROR(CheckDims(args, *r, {dirs_, kGates * hidden_, hidden_}, "R"));
    if (const Tensor* b = args.in(3)) PRECIS_RETURN_IF_ERROR(CheckDims(args, *b, {dirs_, 2 * kGates * hidden_}, "B"));
    if (const Tensor* s = args.in(4)) {
      if (s->dtype != DataType::kI32) return args.Error("sequence_lens must be int32");
      PRECIS_RETURN_IF_ERROR(CheckDims(args, *s, {batch_}, "sequence_lens"));
    }
    std::vector<int64_t> state = layout_ == 0 ? std::vector<int64_t>{dirs_, batch_, hidden_} : std::vector<int64_t>{batch_, dirs_, hidden_};
    if (const Tensor* h0 = args.in(5)) PRECIS_RETURN_IF_ERROR(CheckDims(args, *h0, state, "initial_h"));
    if (kCell == Cell::kLstm) {
      if (const Tensor* c0 = args.in(6)) PRECIS_RETURN_IF_ERROR(CheckDims(args, *c0, state, "initial_c"));
      if (const Tensor* p = args.in(7)) PRECIS_RETURN_IF_ERROR(CheckDims(args, *p, {dirs_, 3 * hidden_}, "P"));
    } else if (args.inputs.size() > 6 || args.outputs.size() > 2) {
      return args.Error("has LSTM's extra inputs or outputs");
    }
    if (const Tensor* y = args.out(0))
      PRECIS_RETURN_IF_ERROR(CheckDims(args, *y, layout_ == 0 ? std::vector<int64_t>{seq_, dirs_, batch_, hidden_}
                                                              : std::vector<int64_t>{batch_, seq_, dirs_, hidden_}, "Y"));
    for (size_t o = 1; o < args.outputs.size(); ++o)
      if (const Tensor* t = args.out(o)) PRECIS_RETURN_IF_ERROR(CheckDims(args, *t, state, o == 1 ? "Y_h" : "Y_c"));
    clip_ = args.attrs.Float("clip", 0.0f);
    if (args.attrs.Has("clip") && !(clip_ > 0)) return args.Error("clip must be positive");
    linear_before_reset_ = args.attrs.Int("linear_before_reset", 0) != 0;
    input_forget_ = args.attrs.Int("input_forget", 0) != 0;
    std::vector<std::string> names = args.attrs.Strings("activations");
    if (names.empty())
      for (int64_t d = 0; d < dirs_; ++d) {
        if (kCell == Cell::kRnn) names.insert(names.end(), {"Tanh"});
        if (kCell == Cell::kGru) names.insert(names.end(), {"Sigmoid", "Tanh"});
        if (kCell == Cell::kLstm) names.insert(names.end(), {"Sigmoid", "Tanh", "Tanh"});
      }
    if (names.size() != kFunctions * size_t(dirs_)) return args.Error("activations lists the wrong number of functions");
    std::vector<float> alphas = args.attrs.Floats("activation_alpha"), betas = args.attrs.Floats("activation_beta");
    size_t ai = 0, bi = 0;
    functions_.resize(names.size());
    for (size_t i = 0; i < names.size(); ++i)
      if (!ParseActivation(names[i], alphas, betas, ai, bi, functions_[i])) return args.Error("unknown activation '" + names[i] + "'");
    return Status::Ok();
  }

  // Per recurrence: h, c, the previous h (GRU's reset), and the gate pre-activations.
  size_t ScratchBytes() const override { return size_t(3 + kGates + 1) * size_t(hidden_) * sizeof(double); }

  Status Run(const KernelArgs& args, CpuContext& ctx) override {
    if (const Tensor* s = args.in(4))
      for (int64_t b = 0; b < batch_; ++b)
        if (s->As<int32_t>()[b] < 0 || s->As<int32_t>()[b] > seq_)
          return args.Error("sequence_lens[" + std::to_string(b) + "] = " + std::to_string(s->As<int32_t>()[b]) + " is outside [0, " +
                            std::to_string(seq_) + "]");
    DispatchFloat(dtype_, [&](auto tag) {
      using T = decltype(tag);
      using C = typename ComputeOf<T>::type;
      if (Tensor* y = args.out(0)) std::fill(y->As<T>(), y->As<T>() + y->numel, Store<T>(C(0)));
      for (int64_t d = 0; d < dirs_; ++d)
        for (int64_t b = 0; b < batch_; ++b) Recur<T, C>(args, d, b, reinterpret_cast<C*>(ctx.scratch));
    });
    return Status::Ok();
  }

 private:
  // Offset of state (direction d, batch b) in initial_h/Y_h-shaped tensors.
  int64_t StateOffset(int64_t d, int64_t b) const { return (layout_ == 0 ? d * batch_ + b : b * dirs_ + d) * hidden_; }

  template <typename T, typename C>
  void Recur(const KernelArgs& args, int64_t d, int64_t b, C* scratch) const {
    const T* X = args.in(0)->template As<T>();
    const T* W = args.in(1)->template As<T>() + d * kGates * hidden_ * input_;
    const T* R = args.in(2)->template As<T>() + d * kGates * hidden_ * hidden_;
    const T* B = args.in(3) ? args.in(3)->template As<T>() + d * 2 * kGates * hidden_ : nullptr;
    const T* P = kCell == Cell::kLstm && args.in(7) ? args.in(7)->template As<T>() + d * 3 * hidden_ : nullptr;
    const Activation* fn = functions_.data() + size_t(d) * kFunctions;
    int64_t H = hidden_, len = args.in(4) ? args.in(4)->template As<int32_t>()[b] : seq_;
    C *h = scratch, *c = h + H, *prev = c + H, *gates = prev + H;
    for (int64_t j = 0; j < H; ++j) {
      h[j] = args.in(5) ? C(Load(args.in(5)->template As<T>()[StateOffset(d, b) + j])) : C(0);
      c[j] = kCell == Cell::kLstm && args.in(6) ? C(Load(args.in(6)->template As<T>()[StateOffset(d, b) + j])) : C(0);
    }
    bool reverse = reverse_first_ || d == 1;
    auto clip = [&](C v) { return clip_ > 0 ? std::clamp(v, C(-clip_), C(clip_)) : v; };
    auto bias = [&](int64_t row, bool recurrent) { return B ? C(Load(B[(recurrent ? kGates * H : 0) + row])) : C(0); };
    for (int64_t k = 0; k < len; ++k) {
      int64_t t = reverse ? len - 1 - k : k;
      const T* xt = X + (layout_ == 0 ? t * batch_ + b : b * seq_ + t) * input_;
      std::copy(h, h + H, prev);
      // gates[row] = W[row] . x_t + Wb[row] (+ R[row] . h + Rb[row] except GRU's candidate)
      for (int64_t row = 0; row < kGates * H; ++row) {
        C s = bias(row, false);
        for (int64_t i = 0; i < input_; ++i) s += C(Load(W[row * input_ + i])) * C(Load(xt[i]));
        bool candidate = kCell == Cell::kGru && row >= 2 * H;
        if (!candidate) {
          s += bias(row, true);
          for (int64_t j = 0; j < H; ++j) s += C(Load(R[row * H + j])) * prev[j];
        }
        gates[row] = s;
      }
      if constexpr (kCell == Cell::kRnn) {
        for (int64_t j = 0; j < H; ++j) h[j] = fn[0](clip(gates[j]));
      } else if constexpr (kCell == Cell::kGru) {
        C* z = gates;
        C* r = gates + H;
        C* cand = gates + 2 * H;
        for (int64_t j = 0; j < H; ++j) z[j] = fn[0](clip(z[j])), r[j] = fn[0](clip(r[j]));
        for (int64_t j = 0; j < H; ++j) {
          int64_t row = 2 * H + j;
          C rec = 0;
          if (linear_before_reset_) {
            for (int64_t m = 0; m < H; ++m) rec += C(Load(R[row * H + m])) * prev[m];
            rec = r[j] * (rec + bias(row, true));
          } else {
            for (int64_t m = 0; m < H; ++m) rec += C(Load(R[row * H + m])) * (r[m] * prev[m]);
            rec += bias(row, true);
          }
          C hh = fn[1](clip(cand[j] + rec));
          h[j] = (C(1) - z[j]) * hh + z[j] * prev[j];
        }
      } else {
        C *gi = gates, *go = gates + H, *gf = gates + 2 * H, *gc = gates + 3 * H;
        for (int64_t j = 0; j < H; ++j) {
          C cp = c[j];
          C i = fn[0](clip(gi[j] + (P ? C(Load(P[j])) * cp : C(0))));
          C f = input_forget_ ? C(1) - i : fn[0](clip(gf[j] + (P ? C(Load(P[2 * H + j])) * cp : C(0))));
          C g = fn[1](clip(gc[j]));
          c[j] = f * cp + i * g;
          C o = fn[0](clip(go[j] + (P ? C(Load(P[H + j])) * c[j] : C(0))));
          h[j] = o * fn[2](c[j]);
        }
      }
      if (Tensor* y = args.out(0)) {
        T* yt = y->template As<T>() + (layout_ == 0 ? (t * dirs_ + d) * batch_ + b : (b * seq_ + t) * dirs_ + d) * H;
        for (int64_t j = 0; j < H; ++j) yt[j] = Store<T>(h[j]);
      }
    }
    for (size_t o = 1; o < args.outputs.size(); ++o)
      if (Tensor* s = args.out(o)) {
        const C* v = o == 1 ? h : c;
        for (int64_t j = 0; j < H; ++j) s->template As<T>()[StateOffset(d, b) + j] = Store<T>(v[j]);
      }
  }

  DataType dtype_ = DataType::kF32;
  int64_t dirs_ = 1, layout_ = 0, seq_ = 0, batch_ = 0, input_ = 0, hidden_ = 0;
  bool reverse_first_ = false, linear_before_reset_ = false, input_forget_ = false;
  float clip_ = 0;
  std::vector<Activation> functions_;
};

// LinearAttention: per batch entry and key/value head, a state S [dk, dv] (past_state, else 0)
// updated at each time step t: S *= exp(decay_t) (gated rules; per head or per key dim), then
// with the delta rules v_t = beta_t * (v_t - S^T k_t), then S += k_t v_t^T; each query head
// reading kv head h / (Hq / Hkv) outputs scale * S^T q_t. The state is kept in float (as ONNX's
// reference), the dot products summed in double. See compiler/ops/rnn.cc for the shapes.
class LinearAttentionKernel : public Kernel {
 public:
  Status Init(const KernelArgs& args, const CpuContext&) override {
    const Tensor *q = args.in(0), *k = args.in(1), *v = args.in(2), *y = args.out(0);
    if (!q || !k || !v || !y || q->rank() != 3 || k->rank() != 3 || v->rank() != 3) return args.Error("needs 3-D query, key and value");
    hq_ = args.attrs.Int("q_num_heads", 0), hkv_ = args.attrs.Int("kv_num_heads", 0);
    if (hq_ <= 0 || hkv_ <= 0 || hq_ % hkv_ != 0 || q->dims[2] % hq_ != 0 || v->dims[2] % hkv_ != 0) return args.Error("bad head counts");
    dk_ = q->dims[2] / hq_, dv_ = v->dims[2] / hkv_;
    const std::string rule = args.attrs.String("update_rule", "gated_delta");
    gated_ = rule == "gated" || rule == "gated_delta", delta_ = rule == "delta" || rule == "gated_delta";
    if (k->dims != std::vector<int64_t>{q->dims[0], q->dims[1], hkv_ * dk_} || v->dims[0] != q->dims[0] || v->dims[1] != q->dims[1] ||
        y->dims != std::vector<int64_t>{q->dims[0], q->dims[1], hq_ * dv_} || gated_ != (args.in(4) != nullptr) || delta_ != (args.in(5) != nullptr))
      return args.Error("operand shapes do not match the head counts or the update rule");
    std::vector<int64_t> state{q->dims[0], hkv_, dk_, dv_};
    if ((args.in(3) && args.in(3)->dims != state) || (args.out(1) && args.out(1)->dims != state)) return args.Error("state must be " + DimsToString(state));
    if (const Tensor* g = args.in(4)) {
      if (g->rank() != 3 || g->dims[0] != q->dims[0] || g->dims[1] != q->dims[1] || (g->dims[2] != hkv_ && g->dims[2] != hkv_ * dk_))
        return args.Error("decay must be [batch, time, kv_num_heads or kv_num_heads * head size]");
    }
    if (const Tensor* b = args.in(5)) {
      if (b->rank() != 3 || b->dims[0] != q->dims[0] || b->dims[1] != q->dims[1] || (b->dims[2] != hkv_ && b->dims[2] != 1))
        return args.Error("beta must be [batch, time, kv_num_heads or 1]");
    }
    double scale = args.attrs.Float("scale", 0.0f);
    scale_ = scale == 0 ? 1.0 / std::sqrt(double(dk_)) : scale;
    return Status::Ok();
  }
  Status Run(const KernelArgs& args, CpuContext&) override {
    const Tensor &q = *args.in(0), &k = *args.in(1), &v = *args.in(2);
    const Tensor *past = args.in(3), *decay = args.in(4), *beta = args.in(5);
    Tensor& y = *args.out(0);
    int64_t batch = q.dims[0], time = q.dims[1], group = hq_ / hkv_;
    std::vector<float> s(static_cast<size_t>(dk_ * dv_));
    std::vector<double> kt(static_cast<size_t>(dk_)), vt(static_cast<size_t>(dv_)), acc(static_cast<size_t>(dv_));
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t h = 0; h < hkv_; ++h) {
        int64_t state_at = (b * hkv_ + h) * dk_ * dv_;
        for (int64_t i = 0; i < dk_ * dv_; ++i) s[size_t(i)] = past ? float(ReadAt(*past, state_at + i)) : 0.0f;
        for (int64_t t = 0; t < time; ++t) {
          int64_t row = b * time + t;
          for (int64_t d = 0; d < dk_; ++d) kt[size_t(d)] = ReadAt(k, (row * hkv_ + h) * dk_ + d);
          for (int64_t m = 0; m < dv_; ++m) vt[size_t(m)] = ReadAt(v, (row * hkv_ + h) * dv_ + m);
          if (gated_) {
            int64_t per = decay->dims[2] == hkv_ ? 1 : dk_;
            for (int64_t d = 0; d < dk_; ++d) {
              float g = float(std::exp(float(ReadAt(*decay, (row * hkv_ + h) * per + (per == 1 ? 0 : d)))));
              for (int64_t m = 0; m < dv_; ++m) s[size_t(d * dv_ + m)] *= g;
            }
          }
          if (delta_) {
            double bt = ReadAt(*beta, row * beta->dims[2] + (beta->dims[2] == 1 ? 0 : h));
            for (int64_t m = 0; m < dv_; ++m) {
              double retrieved = 0;
              for (int64_t d = 0; d < dk_; ++d) retrieved += double(s[size_t(d * dv_ + m)]) * kt[size_t(d)];
              vt[size_t(m)] = double(float(bt * double(float(vt[size_t(m)] - float(retrieved)))));
            }
          }
          for (int64_t d = 0; d < dk_; ++d)
            for (int64_t m = 0; m < dv_; ++m) s[size_t(d * dv_ + m)] += float(kt[size_t(d)] * vt[size_t(m)]);
          for (int64_t r = 0; r < group; ++r) {
            int64_t head = h * group + r;
            std::fill(acc.begin(), acc.end(), 0.0);
            for (int64_t d = 0; d < dk_; ++d) {
              double qd = ReadAt(q, (row * hq_ + head) * dk_ + d);
              for (int64_t m = 0; m < dv_; ++m) acc[size_t(m)] += qd * double(s[size_t(d * dv_ + m)]);
            }
            for (int64_t m = 0; m < dv_; ++m) WriteAt(y, (row * hq_ + head) * dv_ + m, scale_ * acc[size_t(m)]);
          }
        }
        if (Tensor* present = args.out(1))
          for (int64_t i = 0; i < dk_ * dv_; ++i) WriteAt(*present, state_at + i, double(s[size_t(i)]));
      }
    return Status::Ok();
  }

 private:
  int64_t hq_ = 1, hkv_ = 1, dk_ = 1, dv_ = 1;
  bool gated_ = false, delta_ = false;
  double scale_ = 1;
};

}  // namespace

void RegisterRecurrentKernels(KernelRegistry& r) {
  r.Register("LinearAttention", Make<LinearAttentionKernel>);
  r.Register("RNN", Make<RecurrentKernel<Cell::kRnn>>);
  r.Register("GRU", Make<RecurrentKernel<Cell::kGru>>);
  r.Register("LSTM", Make<RecurrentKernel<Cell::kLstm>>);
}

}  // namespace precis::rt
