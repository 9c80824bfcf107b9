// FusedElementwise: a chain of elementwise nodes fused by passes/fuse_elementwise.cc; its
// program (runtime/kernels/fused_program.h) is in the `code` and `consts` attributes. Output o
// has the dtype its Store declares and the dims of the inputs that are not broadcast (all equal;
// a row program's frame), or for a row output the frame with its trailing dims as 1s or dropped.
#include "compiler/ops/fused.h"

#include "compiler/ops/op_registry.h"
#include "runtime/kernels/fused_program.h"

namespace precis::ops {
namespace {

Status InferFused(InferContext& ctx) {
  const ir::Attribute* code = ctx.attr("code");
  const ir::Attribute* consts = ctx.attr("consts");
  if (!code || code->kind != ir::Attribute::Kind::kInts) return ctx.Error("needs the ints attribute 'code'");
  std::vector<float> k;
  if (consts) {
    if (consts->kind != ir::Attribute::Kind::kFloats) return ctx.Error("attribute 'consts' must be floats");
    k = consts->floats;
  }
  auto program = rt::fused::Decode(code->ints, k);
  if (!program.ok()) return ctx.Error(program.status().message());
  if (int(ctx.num_inputs()) != program->num_inputs || int(ctx.num_outputs()) != program->num_outputs)
    return ctx.Error("the program reads " + std::to_string(program->num_inputs) + " inputs and writes " + std::to_string(program->num_outputs) +
                     " outputs; the node has " + std::to_string(ctx.num_inputs()) + " and " + std::to_string(ctx.num_outputs()));
  std::optional<std::vector<ir::Dim>> dims;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    if (!ctx.has_input(i)) return ctx.Error("input " + std::to_string(i) + " is missing");
    ir::DType want = ir::DType::kUndefined;
    auto dtype = ir::DTypeFromOnnx(int32_t(program->InputDtype(int(i))));
    if (dtype.ok()) want = *dtype;
    if (ctx.input_dtype(i) != want) return ctx.Error("input " + std::to_string(i) + " has another dtype than the program loads");
    PRECIS_ASSIGN_OR_RETURN(auto d, ctx.InputDims(i));
    if (program->InputBroadcast(int(i))) continue;
    if (dims && d != *dims) return ctx.Error("inputs that are not broadcast must have one shape");
    dims = d;
  }
  if (!dims) dims = std::vector<ir::Dim>{};
  // Row programs: a row output has the frame's trailing dims as 1s, or drops them.
  int64_t trailing_product = 1;
  bool trailing_static = true;
  for (size_t o = 0; o < ctx.num_outputs(); ++o) {
    PRECIS_ASSIGN_OR_RETURN(ir::DType t, ir::DTypeFromOnnx(int32_t(program->OutputDtype(int(o)))));
    int64_t row_dims = program->OutputRowDims(int(o));
    std::vector<ir::Dim> out = *dims;
    if (row_dims != 0) {
      size_t k = size_t(row_dims < 0 ? -row_dims : row_dims);
      if (k > out.size()) return ctx.Error("output " + std::to_string(o) + " spans " + std::to_string(k) + " trailing dims of a rank-" + std::to_string(out.size()) + " frame");
      trailing_product = 1;
      trailing_static = true;
      for (size_t d = out.size() - k; d < out.size(); ++d) {
        if (out[d].is_static()) trailing_product *= out[d].value();
        else trailing_static = false;
        out[d] = ir::Dim::Static(1);
      }
      if (trailing_static && trailing_product != program->row)
        return ctx.Error("output " + std::to_string(o) + "'s trailing dims hold " + std::to_string(trailing_product) + " elements, not the row's " + std::to_string(program->row));
      if (row_dims < 0) out.resize(out.size() - k);
    }
    ctx.SetOutput(o, t, out);
  }
  return Status::Ok();
}

bool InputZeroInPlaceOk(const ir::Node& n) { return FusedInPlaceOk(n, 0, 0); }

}  // namespace

bool FusedInPlaceOk(const ir::Node& n, int input, int output) {
  if (n.op_type() != "FusedElementwise" || !n.domain().empty()) return false;
  const ir::Attribute* code = n.FindAttribute("code");
  const ir::Attribute* consts = n.FindAttribute("consts");
  if (!code) return false;
  auto program = rt::fused::Decode(code->ints, consts ? consts->floats : std::vector<float>{});
  return program.ok() && program->InPlaceOk(input, output);
}

void RegisterFusedOps(OpRegistry& r) {
  OpDef def{"", "FusedElementwise", 1, INT_MAX, InferFused, false, 0, "", PrecisionClass::kUntouched};
  def.inplace_ok = InputZeroInPlaceOk;
  r.Register(def);
}

}  // namespace precis::ops
