// Expansions of ONNX's function operators for transformers: Attention, FlexAttention, RMSNormalization,
// RotaryEmbedding and Swish, following the ONNX reference implementations
// (onnx/reference/ops/op_attention.py and its siblings) step for step, so that FP32 plans round
// where the reference does. Sizes that may be symbolic are computed with Shape (constants once
// the shapes are static); what decides the structure (ranks, head counts) must be static.
#include <cmath>
#include <limits>

#include "compiler/ops/expand.h"

namespace precis::ops {

namespace {

using A = GradAttr;

std::optional<int64_t> StaticDim(const std::vector<ir::Dim>& dims, size_t i) {
  if (i >= dims.size() || !dims[i].is_static()) return std::nullopt;
  return dims[i].value();
}

// [B, S, heads*D] -> [B, heads, S, D]
ir::Value* SplitHeads(Expander& e, ir::Value* x, int64_t heads) {
  ir::Value* r = e.Op("Reshape", {x, e.Int64s({0, 0, heads, -1})});
  return e.Op("Transpose", {r}, {A::Ints("perm", {0, 2, 1, 3})});
}

// Each of the kv heads repeated `reps` times in place ([h0, h0, h1, h1...]), as grouped-query
// attention pairs query heads with key/value heads.
ir::Value* RepeatHeads(Expander& e, ir::Value* x, int64_t heads, int64_t reps) {
  if (reps == 1) return x;
  ir::Value* u = e.Op("Unsqueeze", {x, e.Int64s({2})});
  ir::Value* x5 = e.Op("Expand", {u, e.Int64s({1, 1, reps, 1, 1})});
  ir::Value* shape = e.Op("Concat", {e.ShapeOf(x, 0, 1), e.Int64s({heads * reps}), e.ShapeOf(x, 2, 4)}, {A::Int("axis", 0)});
  return e.Op("Reshape", {x5, shape});
}

// 0 where keep is true, -inf elsewhere, in dtype dt.
ir::Value* MaskBias(Expander& e, ir::Value* keep, ir::DType dt) {
  return e.Op("Where", {keep, e.FloatScalar(0.0, dt), e.FloatScalar(-std::numeric_limits<double>::infinity(), dt)});
}

ir::Value* Sum(Expander& e, ir::Value* a, ir::Value* b) { return a ? (b ? e.Op("Add", {a, b}) : a) : b; }

}  // namespace

// Attention (opset 23; opset 24 adds nonpad_kv_seqlen): inputs Q, K, V, attn_mask, past_key,
// past_value, nonpad_kv_seqlen; outputs Y, present_key, present_value, qk_matmul_output.
StatusOr<bool> ExpandAttention(Expander& e) {
  PRECIS_ASSIGN_OR_RETURN(auto qd, e.InputDims(0));
  PRECIS_ASSIGN_OR_RETURN(auto kd, e.InputDims(1));
  PRECIS_ASSIGN_OR_RETURN(auto vd, e.InputDims(2));
  size_t rank = qd.size();
  if ((rank != 3 && rank != 4) || kd.size() != rank || vd.size() != rank)
    return e.Error("Q, K and V must all be 3-D or all 4-D (ranks " + std::to_string(qd.size()) + ", " + std::to_string(kd.size()) + ", " +
                   std::to_string(vd.size()) + ")");
  ir::DType dt = e.in(0)->type().dtype();
  if (!ir::IsFloat(dt)) return e.Error("Q must be a float tensor");
  if ((e.in(4) != nullptr) != (e.in(5) != nullptr)) return e.Error("past_key and past_value must be given together");
  int64_t q_heads = 0, kv_heads = 0, head_size = 0;
  ir::Value *q = e.in(0), *k = e.in(1), *v = e.in(2);
  if (rank == 3) {
    q_heads = e.Int("q_num_heads", 0);
    kv_heads = e.Int("kv_num_heads", 0);
    if (q_heads <= 0 || kv_heads <= 0) return e.Error("3-D inputs need q_num_heads and kv_num_heads attributes greater than 0");
    auto hidden = StaticDim(qd, 2);
    if (!hidden) return e.Unsupported("the hidden size of Q (dim 2) must be static");
    if (*hidden % q_heads) return e.Error("Q's hidden size " + std::to_string(*hidden) + " is not a multiple of q_num_heads " + std::to_string(q_heads));
    head_size = *hidden / q_heads;
    q = SplitHeads(e, q, q_heads);
    k = SplitHeads(e, k, kv_heads);
    v = SplitHeads(e, v, kv_heads);
  } else {
    auto qh = StaticDim(qd, 1), kh = StaticDim(kd, 1), vh = StaticDim(vd, 1), d = StaticDim(qd, 3);
    if (!qh || !kh || !vh || !d) return e.Unsupported("4-D inputs need static head counts (dim 1) and head size (dim 3 of Q)");
    if (*kh != *vh) return e.Error("K has " + std::to_string(*kh) + " heads and V " + std::to_string(*vh));
    q_heads = *qh;
    kv_heads = *kh;
    head_size = *d;
  }
  if (q_heads % kv_heads) return e.Error(std::to_string(q_heads) + " query heads are not a multiple of " + std::to_string(kv_heads) + " key/value heads");
  if (head_size <= 0) return e.Error("head size must be positive");

  // Scale: q and k each by sqrt(scale), scale = 1/sqrt(head size) unless given.
  double scale = e.Has("scale") ? double(e.Float("scale", 1.0f)) : 1.0 / std::sqrt(double(head_size));
  ir::Value* root = e.FloatScalar(double(float(std::sqrt(scale))), dt);

  ir::Value* present_k = k;
  ir::Value* present_v = v;
  if (e.in(4)) {
    present_k = e.Op("Concat", {e.in(4), k}, {A::Int("axis", 2)});
    present_v = e.Op("Concat", {e.in(5), v}, {A::Int("axis", 2)});
  }

  // Additive bias: the mask (padded with "masked" up to the total kv length), the causal mask,
  // the padding mask of nonpad_kv_seqlen.
  ir::Value* total = e.ShapeOf(present_k, 2, 3);
  ir::Value* bias = nullptr;
  if (ir::Value* mask = e.in(3)) {
    PRECIS_ASSIGN_OR_RETURN(auto md, e.InputDims(3));
    if (md.empty()) return e.Error("attn_mask must have rank 2 or more");
    ir::DType mt = mask->type().dtype();
    if (mt != ir::DType::kBool && !ir::IsFloat(mt)) return e.Error("attn_mask must be bool or float");
    int64_t mrank = int64_t(md.size());
    // Statically longer than the keys (past + new): the reference refuses it; Pad would crop.
    auto kv = StaticDim(kd, rank == 3 ? 1 : 2);
    std::optional<int64_t> past = int64_t(0);
    if (e.in(4)) {
      PRECIS_ASSIGN_OR_RETURN(auto pd, e.InputDims(4));
      past = StaticDim(pd, 2);
    }
    if (auto last = StaticDim(md, md.size() - 1); last && kv && past && *last > *kv + *past)
      return e.Error("attn_mask has " + std::to_string(*last) + " key positions, more than the " + std::to_string(*kv + *past) + " keys");
    // Shorter than the total kv length: padded with "masked" (false, -inf) at the end.
    ir::Value* width = e.Op("Sub", {total, e.ShapeOf(mask, mrank - 1, mrank)});
    std::vector<int64_t> zeros(size_t(2 * mrank - 1), 0);
    ir::Value* pads = e.Op("Concat", {e.Int64s(zeros), width}, {A::Int("axis", 0)});
    ir::Value* fill = mt == ir::DType::kBool ? e.Op("Cast", {e.Scalar(0.0, ir::DType::kF32)}, {A::Int("to", int64_t(ir::DTypeToOnnx(ir::DType::kBool)))})
                                             : e.FloatScalar(-std::numeric_limits<double>::infinity(), mt);
    mask = e.Op("Pad", {mask, pads, fill});
    bias = mt == ir::DType::kBool ? MaskBias(e, mask, dt) : e.CastTo(mask, dt);
  }
  if (e.Int("is_causal", 0)) {
    ir::Value* qlen = e.ShapeOf(q, 2, 3);
    ir::Value* past = e.in(4) ? e.ShapeOf(e.in(4), 2, 3) : e.Int64s({0});
    ir::Value* zero = e.Int64s({0});
    ir::Value* one = e.Int64s({1});
    auto scalar = [&](ir::Value* x) { return e.Op("Squeeze", {x, zero}); };
    // Query i sits at position past + i: it sees keys 0..past+i.
    ir::Value* rows = e.Op("Add", {e.Op("Range", {scalar(zero), scalar(qlen), scalar(one)}), past});
    ir::Value* cols = e.Op("Range", {scalar(zero), scalar(total), scalar(one)});
    ir::Value* keep = e.Op("LessOrEqual", {cols, e.Op("Unsqueeze", {rows, one})});
    bias = Sum(e, bias, MaskBias(e, keep, dt));
  }
  if (ir::Value* nonpad = e.in(6)) {
    ir::Value* zero = e.Int64s({0});
    ir::Value* one = e.Int64s({1});
    ir::Value* cols = e.Op("Range", {e.Op("Squeeze", {zero, zero}), e.Op("Squeeze", {total, zero}), e.Op("Squeeze", {one, zero})});
    ir::Value* keep = e.Op("Less", {cols, e.Op("Unsqueeze", {e.CastTo(nonpad, ir::DType::kI64), one})});
    ir::Value* keep4 = e.Op("Unsqueeze", {keep, e.Int64s({1, 2})});
    bias = Sum(e, bias, MaskBias(e, keep4, dt));
  }

  int64_t reps = q_heads / kv_heads;
  ir::Value* keys = RepeatHeads(e, present_k, kv_heads, reps);
  ir::Value* values = RepeatHeads(e, present_v, kv_heads, reps);
  ir::Value* qs = e.Op("Mul", {q, root});
  ir::Value* kt = e.Op("Transpose", {e.Op("Mul", {keys, root})}, {A::Ints("perm", {0, 1, 3, 2})});
  ir::Value* scores = e.Op("MatMul", {qs, kt});
  float softcap = e.Float("softcap", 0.0f);
  if (softcap > 0) {
    ir::Value* c = e.FloatScalar(softcap, dt);
    scores = e.Op("Mul", {e.Op("Tanh", {e.Op("Div", {scores, c})}), c});
  }
  ir::Value* biased = bias ? e.Op("Add", {scores, bias}) : scores;
  ir::Value* logits = biased;
  bool cast_softmax = false;
  if (e.Has("softmax_precision")) {
    auto sp = ir::DTypeFromOnnx(int(e.Int("softmax_precision", 1)));
    if (!sp.ok() || !ir::IsFloat(*sp)) return e.Error("softmax_precision must name a float type");
    if (*sp != dt) {
      logits = e.CastTo(logits, *sp);
      cast_softmax = true;
    }
  }
  ir::Value* probs = e.Op("Softmax", {logits}, {A::Int("axis", -1)});
  if (cast_softmax) probs = e.CastTo(probs, dt);
  ir::Value* y = e.Op("MatMul", {probs, values});
  if (rank == 3) y = e.Op("Reshape", {e.Op("Transpose", {y}, {A::Ints("perm", {0, 2, 1, 3})}), e.Int64s({0, 0, -1})});

  std::vector<ir::Value*> outs{y, present_k, present_v, nullptr};
  if (e.wants(3)) {
    int64_t mode = e.Int("qk_matmul_output_mode", 0);
    if (mode < 0 || mode > 3) return e.Error("qk_matmul_output_mode must be 0 to 3");
    outs[3] = mode == 2 ? biased : mode == 3 ? probs : scores;
  }
  e.Replace(outs);
  return true;
}

// FlexAttention (ai.onnx.preview, version 1): attention over 4-D Q, K, V with optional modifier
// subgraphs, as its ONNX function body computes it: Q and K each scaled by sqrt(scale) (computed
// in FP32), scores cast to softmax_precision (FP32, or FP64 for double inputs), score_mod inlined,
// Softmax, prob_mod inlined, then the product with V in softmax_precision, cast back to Q's type.
StatusOr<bool> ExpandFlexAttention(Expander& e) {
  PRECIS_ASSIGN_OR_RETURN(auto qd, e.InputDims(0));
  PRECIS_ASSIGN_OR_RETURN(auto kd, e.InputDims(1));
  PRECIS_ASSIGN_OR_RETURN(auto vd, e.InputDims(2));
  if (qd.size() != 4 || kd.size() != 4 || vd.size() != 4)
    return e.Error("Q, K and V must be 4-D (ranks " + std::to_string(qd.size()) + ", " + std::to_string(kd.size()) + ", " +
                   std::to_string(vd.size()) + ")");
  ir::DType dt = e.in(0)->type().dtype();
  if (!ir::IsFloat(dt)) return e.Error("Q must be a float tensor");
  auto qh = StaticDim(qd, 1), kh = StaticDim(kd, 1), vh = StaticDim(vd, 1);
  if (!qh || !kh || !vh) return e.Unsupported("the head counts (dim 1 of Q, K and V) must be static");
  if (*kh != *vh) return e.Error("K has " + std::to_string(*kh) + " heads and V " + std::to_string(*vh));
  if (*kh <= 0 || *qh % *kh) return e.Error(std::to_string(*qh) + " query heads are not a multiple of " + std::to_string(*kh) + " key/value heads");
  float scale = e.Float("scale", 0.0f);
  if (!e.Has("scale")) {
    auto d = StaticDim(qd, 3);
    if (!d || *d <= 0) return e.Unsupported("without a scale attribute, the head size (dim 3 of Q) must be static and positive");
    scale = 1.0f / std::sqrt(float(*d));
  }
  ir::DType sp = dt == ir::DType::kF64 ? ir::DType::kF64 : ir::DType::kF32;
  if (e.Has("softmax_precision")) {
    auto p = ir::DTypeFromOnnx(int(e.Int("softmax_precision", 1)));
    if (!p.ok() || !ir::IsFloat(*p)) return e.Error("softmax_precision must name a float type");
    sp = *p;
  }
  auto modifier = [&](const char* name) -> StatusOr<const ir::Graph*> {
    const ir::Attribute* a = e.node().FindAttribute(name);
    if (!a) return static_cast<const ir::Graph*>(nullptr);
    if (a->kind != ir::Attribute::Kind::kGraph || a->graphs.size() != 1) return e.Error(std::string(name) + " must be a graph");
    const ir::Graph* g = a->graphs[0].get();
    if (g->inputs().size() != 1 || g->outputs().size() != 1)
      return e.Error(std::string(name) + " must take one input and give one output (it has " + std::to_string(g->inputs().size()) + " and " +
                     std::to_string(g->outputs().size()) + ")");
    return g;
  };
  PRECIS_ASSIGN_OR_RETURN(const ir::Graph* score_mod, modifier("score_mod"));
  PRECIS_ASSIGN_OR_RETURN(const ir::Graph* prob_mod, modifier("prob_mod"));

  int64_t reps = *qh / *kh;
  ir::Value* keys = RepeatHeads(e, e.in(1), *kh, reps);
  ir::Value* values = RepeatHeads(e, e.in(2), *kh, reps);
  ir::Value* root = e.FloatScalar(double(std::sqrt(scale)), dt);  // sqrt in FP32, as the function body
  ir::Value* kt = e.Op("Transpose", {e.Op("Mul", {keys, root})}, {A::Ints("perm", {0, 1, 3, 2})});
  ir::Value* scores = e.CastTo(e.Op("MatMul", {e.Op("Mul", {e.in(0), root}), kt}), sp);
  if (score_mod) scores = e.Inline(*score_mod, {scores})[0];
  ir::Value* probs = e.Op("Softmax", {scores}, {A::Int("axis", -1)});
  if (prob_mod) probs = e.Inline(*prob_mod, {probs})[0];
  ir::Value* y = e.CastTo(e.Op("MatMul", {probs, e.CastTo(values, sp)}), dt);
  e.Replace({y});
  return true;
}

// RMSNormalization (opset 23): X / sqrt(mean(X^2 over axes [axis, rank)) + epsilon) * scale, the
// statistics in stash_type (FP32).
StatusOr<bool> ExpandRmsNormalization(Expander& e) {
  PRECIS_ASSIGN_OR_RETURN(auto xd, e.InputDims(0));
  if (!e.in(1)) return e.Error("scale is missing");
  int64_t rank = int64_t(xd.size());
  int64_t axis = e.Int("axis", -1);
  if (axis < -rank || axis >= rank) return e.Error("axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
  if (axis < 0) axis += rank;
  if (e.Int("stash_type", 1) != 1) return e.Unsupported("stash_type other than 1 (float)");
  ir::DType dt = e.in(0)->type().dtype();
  if (!ir::IsFloat(dt)) return e.Error("X must be a float tensor");
  std::vector<int64_t> axes;
  for (int64_t a = axis; a < rank; ++a) axes.push_back(a);
  ir::Value* x = e.CastTo(e.in(0), ir::DType::kF32);
  ir::Value* mean = e.Op("ReduceMean", {e.Op("Mul", {x, x}), e.Int64s(axes)}, {A::Int("keepdims", 1)});
  ir::Value* rms = e.Op("Sqrt", {e.Op("Add", {mean, e.Scalar(e.Float("epsilon", 1e-5f), ir::DType::kF32)})});
  ir::Value* normalized = e.CastTo(e.Op("Mul", {x, e.Op("Reciprocal", {rms})}), dt);
  e.Replace({e.Op("Mul", {normalized, e.CastTo(e.in(1), dt)})});
  return true;
}

// RotaryEmbedding (opset 23): input [B, H, S, D] or [B, S, H*D] (num_heads), caches
// [max_pos, rd/2] with position_ids [B, S], or [B, S, rd/2] without.
StatusOr<bool> ExpandRotaryEmbedding(Expander& e) {
  PRECIS_ASSIGN_OR_RETURN(auto xd, e.InputDims(0));
  if (!e.in(1) || !e.in(2)) return e.Error("cos_cache and sin_cache are required");
  size_t rank = xd.size();
  ir::Value* x = e.in(0);
  int64_t head = 0;
  if (rank == 4) {
    x = e.Op("Transpose", {x}, {A::Ints("perm", {0, 2, 1, 3})});
    auto d = StaticDim(xd, 3);
    if (!d) return e.Unsupported("the head size (dim 3) must be static");
    head = *d;
  } else if (rank == 3) {
    int64_t heads = e.Int("num_heads", 0);
    if (heads <= 0) return e.Error("3-D input needs a num_heads attribute greater than 0");
    auto hidden = StaticDim(xd, 2);
    if (!hidden) return e.Unsupported("the hidden size (dim 2) must be static");
    if (*hidden % heads) return e.Error("hidden size " + std::to_string(*hidden) + " is not a multiple of num_heads " + std::to_string(heads));
    head = *hidden / heads;
    x = e.Op("Reshape", {x, e.Int64s({0, 0, heads, -1})});
  } else {
    return e.Error("input must be 3-D or 4-D");
  }
  int64_t rd = e.Int("rotary_embedding_dim", 0);
  if (rd == 0) rd = head;
  if (rd < 0 || rd > head || rd % 2) return e.Error("rotary_embedding_dim " + std::to_string(rd) + " must be even and at most the head size " + std::to_string(head));
  int64_t half = rd / 2;
  for (size_t i : {size_t(1), size_t(2)}) {
    PRECIS_ASSIGN_OR_RETURN(auto cd, e.InputDims(i));
    if (cd.empty() || (cd.back().is_static() && cd.back().value() != half))
      return e.Error(std::string(i == 1 ? "cos_cache" : "sin_cache") + "'s last dim must be rotary_embedding_dim / 2 = " + std::to_string(half));
  }
  ir::Value *cos = e.in(1), *sin = e.in(2);
  if (ir::Value* pos = e.in(3)) {
    cos = e.Op("Gather", {cos, pos}, {A::Int("axis", 0)});
    sin = e.Op("Gather", {sin, pos}, {A::Int("axis", 0)});
  }
  ir::Value* two = e.Int64s({2});
  cos = e.Op("Unsqueeze", {cos, two});
  sin = e.Op("Unsqueeze", {sin, two});
  auto slice = [&](ir::Value* v, int64_t start, int64_t end, int64_t step) {
    return e.Op("Slice", {v, e.Int64s({start}), e.Int64s({end}), e.Int64s({3}), e.Int64s({step})});
  };
  ir::Value* rotate = rd == head ? x : slice(x, 0, rd, 1);
  bool interleaved = e.Int("interleaved", 0) != 0;
  ir::Value* x1 = interleaved ? slice(rotate, 0, rd, 2) : slice(rotate, 0, half, 1);
  ir::Value* x2 = interleaved ? slice(rotate, 1, rd, 2) : slice(rotate, half, rd, 1);
  ir::Value* real = e.Op("Sub", {e.Op("Mul", {cos, x1}), e.Op("Mul", {sin, x2})});
  ir::Value* imag = e.Op("Add", {e.Op("Mul", {sin, x1}), e.Op("Mul", {cos, x2})});
  ir::Value* rotated;
  if (interleaved) {
    ir::Value* last = e.Int64s({-1});
    ir::Value* pairs = e.Op("Concat", {e.Op("Unsqueeze", {real, last}), e.Op("Unsqueeze", {imag, last})}, {A::Int("axis", -1)});
    rotated = e.Op("Reshape", {pairs, e.Int64s({0, 0, 0, rd})});
  } else {
    rotated = e.Op("Concat", {real, imag}, {A::Int("axis", 3)});
  }
  ir::Value* out = rd == head ? rotated : e.Op("Concat", {rotated, slice(x, rd, head, 1)}, {A::Int("axis", 3)});
  if (rank == 4) out = e.Op("Transpose", {out}, {A::Ints("perm", {0, 2, 1, 3})});
  else out = e.Op("Reshape", {out, e.Op("Shape", {e.in(0)})});
  e.Replace({out});
  return true;
}

// Swish (opset 24): x * sigmoid(alpha * x).
StatusOr<bool> ExpandSwish(Expander& e) {
  if (!e.in(0)) return e.Error("X is missing");
  ir::DType dt = e.in(0)->type().dtype();
  if (!ir::IsFloat(dt)) return e.Error("X must be a float tensor");
  float alpha = e.Float("alpha", 1.0f);
  ir::Value* x = e.in(0);
  ir::Value* arg = alpha == 1.0f ? x : e.Op("Mul", {x, e.FloatScalar(alpha, dt)});
  e.Replace({e.Op("Mul", {x, e.Op("Sigmoid", {arg})})});
  return true;
}

// CausalConvWithState (opset 27): a causal depthwise 1-D convolution that carries its last k - 1
// input positions as state, as ONNX's reference computes it. input [B, C, L], weight [C, 1, k],
// bias [C] and past_state [B, C, k - 1] (zeros when absent): padded = past ++ input along the
// length, output = Conv(padded, weight, bias, group C) (times its sigmoid with activation silu or
// swish, in FP32), present_state = padded[:, :, L : L + k - 1].
StatusOr<bool> ExpandCausalConvWithState(Expander& e) {
  PRECIS_ASSIGN_OR_RETURN(auto xd, e.InputDims(0));
  if (!e.in(1)) return e.Error("weight is missing");
  PRECIS_ASSIGN_OR_RETURN(auto wd, e.InputDims(1));
  ir::DType dt = e.in(0)->type().dtype();
  if (!ir::IsFloat(dt)) return e.Error("input must be a float tensor");
  if (xd.size() != 3 || wd.size() != 3) return e.Error("input must be [batch, channels, length] and weight [channels, 1, k]");
  if (!xd[1].is_static() || !wd[2].is_static()) return e.Unsupported("the channel count and the kernel size must be static");
  int64_t channels = xd[1].value(), k = wd[2].value();
  if (k < 1) return e.Error("the kernel size is " + std::to_string(k));
  if ((wd[0].is_static() && wd[0].value() != channels) || (wd[1].is_static() && wd[1].value() != 1))
    return e.Error("weight must be [channels, 1, k] for " + std::to_string(channels) + " channels");
  std::string activation;
  if (const ir::Attribute* a = e.node().FindAttribute("activation")) activation = a->s;
  if (!activation.empty() && activation != "none" && activation != "silu" && activation != "swish")
    return e.Error("activation must be 'none', 'silu' or 'swish', not '" + activation + "'");
  ir::Value* x = e.in(0);
  ir::Value* padded = x;
  if (e.in(3)) padded = e.Op("Concat", {e.in(3), x}, {A::Int("axis", 2)});
  else if (k > 1) padded = e.Op("Pad", {x, e.Int64s({0, 0, k - 1, 0, 0, 0})});
  std::vector<ir::Value*> conv_in{padded, e.in(1)};
  if (e.in(2)) conv_in.push_back(e.in(2));
  ir::Value* y = e.Op("Conv", conv_in, {A::Int("group", channels), A::Ints("kernel_shape", {k}), A::Ints("pads", {0, 0}), A::Ints("strides", {1})});
  if (activation == "silu" || activation == "swish") {
    ir::Value* y32 = e.CastTo(y, ir::DType::kF32);
    y = e.CastTo(e.Op("Mul", {y32, e.Op("Sigmoid", {y32})}), dt);
  }
  ir::Value* length = e.ShapeOf(x, 2, 3);
  ir::Value* present = e.Op("Slice", {padded, length, e.Op("Add", {length, e.Int64s({k - 1})}), e.Int64s({2})});
  e.Replace({y, e.wants(1) ? present : nullptr});
  return true;
}

// BatchNormalization with training_mode = 1 (opset 14+) in an inference plan: normalized with the
// batch's statistics (BatchNormalizationTraining), and the running statistics of outputs 1 and
// 2 updated as the reference does: running * momentum + batch * (1 - momentum).
StatusOr<bool> ExpandBatchNormTraining(Expander& e) {
  if (e.Int("training_mode", 0) == 0) return false;
  for (size_t i = 0; i < 5; ++i)
    if (!e.in(i)) return e.Error("needs inputs X, scale, B, input_mean and input_var");
  std::vector<ir::Value*> stats = e.OpN("BatchNormalizationTraining", {e.in(0), e.in(1), e.in(2)},
                                        {A::Float("epsilon", e.Float("epsilon", 1e-5f))}, 3);
  double momentum = e.Float("momentum", 0.9f);
  std::vector<ir::Value*> outs{stats[0], nullptr, nullptr};
  for (size_t i : {size_t(1), size_t(2)}) {
    if (!e.wants(i)) continue;
    ir::Value* running = e.in(i + 2);
    ir::DType dt = running->type().dtype();
    if (!ir::IsFloat(dt)) return e.Error("input_mean and input_var must be floats");
    outs[i] = e.Op("Add", {e.Op("Mul", {running, e.FloatScalar(momentum, dt)}),
                           e.Op("Mul", {e.CastTo(stats[i], dt), e.FloatScalar(1.0 - momentum, dt)})});
  }
  e.Replace(outs);
  return true;
}

}  // namespace precis::ops
