// Recurrent operators: RNN, GRU and LSTM (ONNX opsets 7, 14 (layout) and 22). Shape inference
// checks every operand against hidden_size, the direction count and the layout; the kernels
// (runtime/cpu/kernels/rnn.cc) compute in FP32 (FP64 for f64) whatever the storage dtype, with
// the hidden and cell states kept wide across time steps: 16-bit plans round only the operands
// and the outputs, never the recurrence.
#include <climits>
#include <set>
#include <string>

#include "compiler/ops/infer_helpers.h"
#include "compiler/ops/op_registry.h"

namespace precis::ops {
namespace {

struct RecurrentSpec {
  const char* op;
  int64_t gates;        // rows of W and R per direction, in units of hidden_size
  size_t activations;   // activation functions per direction
  size_t max_inputs;    // X, W, R, B, sequence_lens, initial_h [, initial_c, P]
  size_t max_outputs;   // Y, Y_h [, Y_c]
};

Status RequireFloatInput(const InferContext& ctx, size_t i) {
  ir::DType t = ctx.input_dtype(i);
  if (t != ir::DType::kUndefined && !ir::IsFloat(t))
    return ctx.Error("input " + std::to_string(i) + " has dtype " + std::string(ir::DTypeName(t)) + ", expected a float type");
  return Status::Ok();
}

std::string DimsText(const std::vector<ir::Dim>& dims) {
  std::string s = "[";
  for (size_t k = 0; k < dims.size(); ++k) s += (k ? "," : "") + (dims[k].is_static() ? std::to_string(dims[k].value()) : std::string("?"));
  return s + "]";
}

// The activation names ONNX allows in `activations` (case as the spec writes them).
const std::set<std::string>& ActivationNames() {
  static const std::set<std::string> names = {"Relu", "Tanh", "Sigmoid", "Affine", "LeakyRelu", "ThresholdedRelu",
                                              "ScaledTanh", "HardSigmoid", "Elu", "Softsign", "Softplus"};
  return names;
}

// dims must equal want (a static dim of want that is known in dims must match); `what` names it.
Status ExpectDims(const InferContext& ctx, size_t i, const std::vector<ir::Dim>& want, const char* what) {
  PRECIS_ASSIGN_OR_RETURN(auto d, ctx.InputDims(i));
  bool bad = d.size() != want.size();
  for (size_t k = 0; !bad && k < d.size(); ++k)
    bad = d[k].is_static() && want[k].is_static() && d[k].value() != want[k].value();
  if (!bad) return Status::Ok();
  return ctx.Error(std::string(what) + " has shape " + DimsText(d) + ", expected " + DimsText(want));
}

Status InferRecurrent(InferContext& ctx, const RecurrentSpec& spec) {
  if (ctx.num_inputs() > spec.max_inputs) return ctx.Error("has more inputs than " + std::string(spec.op) + " takes");
  if (ctx.num_outputs() > spec.max_outputs) return ctx.Error("has more outputs than " + std::string(spec.op) + " has");
  for (size_t i : {size_t(0), size_t(1), size_t(2)})
    if (!ctx.has_input(i)) return ctx.Error("input " + std::to_string(i) + " (X, W, R) is missing");
  PRECIS_RETURN_IF_ERROR(RequireFloatInput(ctx, 0));
  ir::DType dtype = ctx.input_dtype(0);
  for (size_t i = 1; i < ctx.num_inputs(); ++i)
    if (ctx.has_input(i) && i != 4 && ctx.input_dtype(i) != dtype) return ctx.Error("input " + std::to_string(i) + " is not of X's dtype");
  PRECIS_ASSIGN_OR_RETURN(auto x, ctx.InputDims(0));
  PRECIS_ASSIGN_OR_RETURN(auto w, ctx.InputDims(1));
  if (x.size() != 3) return ctx.Error("X must have rank 3");
  if (w.size() != 3) return ctx.Error("W must have rank 3");
  std::string direction = ctx.String("direction", "forward");
  if (direction != "forward" && direction != "reverse" && direction != "bidirectional")
    return ctx.Error("unknown direction '" + direction + "'");
  int64_t dirs = direction == "bidirectional" ? 2 : 1;
  int64_t layout = ctx.opset() >= 14 ? ctx.Int("layout", 0) : 0;
  if (layout != 0 && layout != 1) return ctx.Error("layout must be 0 or 1");
  const ir::Attribute* hs = ctx.attr("hidden_size");
  int64_t hidden = hs ? hs->i : (w[1].is_static() ? w[1].value() / spec.gates : 0);
  if (hidden <= 0 || hidden > (int64_t(1) << 24)) return ctx.Error("hidden_size must be given and positive");
  if (ctx.Int("input_forget", 0) != 0 && std::string(spec.op) != "LSTM") return ctx.Error("input_forget is an LSTM attribute");
  if (const ir::Attribute* a = ctx.attr("activations")) {
    if (a->strings.size() != spec.activations * size_t(dirs))
      return ctx.Error("activations lists " + std::to_string(a->strings.size()) + " functions, expected " +
                       std::to_string(spec.activations * size_t(dirs)));
    for (const std::string& f : a->strings)
      if (!ActivationNames().count(f)) return ctx.Unsupported("activation '" + f + "'");
  }
  if (const ir::Attribute* c = ctx.attr("clip"); c && !(c->f > 0)) return ctx.Error("clip must be positive");
  ir::Dim seq = layout == 0 ? x[0] : x[1], batch = layout == 0 ? x[1] : x[0], input = x[2];
  auto S = [](int64_t v) { return ir::Dim::Static(v); };
  PRECIS_RETURN_IF_ERROR(ExpectDims(ctx, 1, {S(dirs), S(spec.gates * hidden), input}, "W"));
  PRECIS_RETURN_IF_ERROR(ExpectDims(ctx, 2, {S(dirs), S(spec.gates * hidden), S(hidden)}, "R"));
  if (ctx.has_input(3)) PRECIS_RETURN_IF_ERROR(ExpectDims(ctx, 3, {S(dirs), S(2 * spec.gates * hidden)}, "B"));
  if (ctx.has_input(4)) {
    if (ctx.input_dtype(4) != ir::DType::kI32) return ctx.Error("sequence_lens must be int32");
    PRECIS_RETURN_IF_ERROR(ExpectDims(ctx, 4, {batch}, "sequence_lens"));
  }
  std::vector<ir::Dim> state = layout == 0 ? std::vector<ir::Dim>{S(dirs), batch, S(hidden)} : std::vector<ir::Dim>{batch, S(dirs), S(hidden)};
  if (ctx.has_input(5)) PRECIS_RETURN_IF_ERROR(ExpectDims(ctx, 5, state, "initial_h"));
  if (ctx.has_input(6)) PRECIS_RETURN_IF_ERROR(ExpectDims(ctx, 6, state, "initial_c"));
  if (ctx.has_input(7)) PRECIS_RETURN_IF_ERROR(ExpectDims(ctx, 7, {S(dirs), S(3 * hidden)}, "P"));
  if (ctx.has_output(0))
    ctx.SetOutput(0, dtype, layout == 0 ? std::vector<ir::Dim>{seq, S(dirs), batch, S(hidden)} : std::vector<ir::Dim>{batch, seq, S(dirs), S(hidden)});
  for (size_t o = 1; o < ctx.num_outputs(); ++o)
    if (ctx.has_output(o)) ctx.SetOutput(o, dtype, state);
  return Status::Ok();
}

Status InferRnn(InferContext& ctx) { return InferRecurrent(ctx, {"RNN", 1, 1, 6, 2}); }
Status InferGru(InferContext& ctx) { return InferRecurrent(ctx, {"GRU", 3, 2, 6, 2}); }
Status InferLstm(InferContext& ctx) { return InferRecurrent(ctx, {"LSTM", 4, 3, 8, 3}); }

// LinearAttention (opset 27): query [B, T, Hq*dk], key [B, T, Hkv*dk], value [B, T, Hkv*dv],
// past_state [B, Hkv, dk, dv], decay [B, T, Hkv or Hkv*dk] (gated rules), beta [B, T, Hkv or 1]
// (delta rules). Output [B, T, Hq*dv] in the query's dtype; present_state [B, Hkv, dk, dv] in
// past_state's (else the query's).
Status InferLinearAttention(InferContext& ctx) {
  PRECIS_ASSIGN_OR_RETURN(auto q, ctx.InputDims(0));
  PRECIS_ASSIGN_OR_RETURN(auto k, ctx.InputDims(1));
  PRECIS_ASSIGN_OR_RETURN(auto v, ctx.InputDims(2));
  ir::DType dt = ctx.input_dtype(0);
  if (!ir::IsFloat(dt) || ctx.input_dtype(1) != dt || ctx.input_dtype(2) != dt) return ctx.Error("query, key and value must be float tensors of one dtype");
  if (q.size() != 3 || k.size() != 3 || v.size() != 3) return ctx.Error("query, key and value must be [batch, time, heads * head size]");
  int64_t hq = ctx.Int("q_num_heads", 0), hkv = ctx.Int("kv_num_heads", 0);
  if (hq <= 0 || hkv <= 0 || hq % hkv != 0) return ctx.Error("q_num_heads must be a positive multiple of kv_num_heads");
  const std::string rule = ctx.String("update_rule", "gated_delta");
  if (rule != "linear" && rule != "gated" && rule != "delta" && rule != "gated_delta")
    return ctx.Error("update_rule must be linear, gated, delta or gated_delta, not '" + rule + "'");
  bool gated = rule == "gated" || rule == "gated_delta", delta = rule == "delta" || rule == "gated_delta";
  if (gated != ctx.has_input(4)) return ctx.Error("update_rule '" + rule + (gated ? "' needs" : "' takes no") + " decay input");
  if (delta != ctx.has_input(5)) return ctx.Error("update_rule '" + rule + (delta ? "' needs" : "' takes no") + " beta input");
  if (!q[2].is_static() || !k[2].is_static() || !v[2].is_static()) return ctx.Unsupported("the head sizes must be static");
  if (q[2].value() % hq != 0 || k[2].value() % hkv != 0 || v[2].value() % hkv != 0)
    return ctx.Error("the last dims must be multiples of their head counts");
  int64_t dk = q[2].value() / hq, dv = v[2].value() / hkv;
  if (k[2].value() != hkv * dk) return ctx.Error("key's last dim must be kv_num_heads * " + std::to_string(dk));
  ir::DType state_dt = dt;
  if (ctx.has_input(3)) {
    PRECIS_ASSIGN_OR_RETURN(auto ps, ctx.InputDims(3));
    state_dt = ctx.input_dtype(3);
    if (!ir::IsFloat(state_dt) || ps.size() != 4 || (ps[1].is_static() && ps[1].value() != hkv) || (ps[2].is_static() && ps[2].value() != dk) ||
        (ps[3].is_static() && ps[3].value() != dv))
      return ctx.Error("past_state must be a float [batch, " + std::to_string(hkv) + ", " + std::to_string(dk) + ", " + std::to_string(dv) + "]");
  }
  for (size_t i : {size_t(4), size_t(5)}) {
    if (!ctx.has_input(i)) continue;
    PRECIS_ASSIGN_OR_RETURN(auto g, ctx.InputDims(i));
    int64_t last = g.size() == 3 && g[2].is_static() ? g[2].value() : -1;
    bool ok = i == 4 ? (last == hkv || last == hkv * dk) : (last == hkv || last == 1);
    if (ctx.input_dtype(i) != dt || !ok)
      return ctx.Error(std::string(i == 4 ? "decay" : "beta") + " must be [batch, time, " + (i == 4 ? "kv_num_heads or kv_num_heads * head size" : "kv_num_heads or 1") +
                       "] of the query's dtype");
  }
  ctx.SetOutput(0, dt, {q[0], q[1], ir::Dim::Static(hq * dv)});
  if (ctx.has_output(1)) ctx.SetOutput(1, state_dt, {q[0], ir::Dim::Static(hkv), ir::Dim::Static(dk), ir::Dim::Static(dv)});
  return Status::Ok();
}

}  // namespace

// Compute class: the products with W and R run on 16-bit operands with FP32 accumulation, the
// recurrent state stays FP32 inside the kernel. Not foldable (no reason to fold a recurrence).
// sequence_lens (input 4) is an integer input and keeps its dtype.
void RegisterRecurrentOps(OpRegistry& r) {
  r.Register({"", "RNN", 7, INT_MAX, InferRnn, false, -1, "", PrecisionClass::kCompute});
  r.Register({"", "GRU", 7, INT_MAX, InferGru, false, -1, "", PrecisionClass::kCompute});
  r.Register({"", "LSTM", 7, INT_MAX, InferLstm, false, -1, "", PrecisionClass::kCompute});
  // LinearAttention's state recurrence (decay, delta correction) runs in FP32, as the reference.
  r.Register({"", "LinearAttention", 27, INT_MAX, InferLinearAttention, false, -1, "", PrecisionClass::kKeepFp32});
}

}  // namespace precis::ops
