// Operator semantics of the elementwise families beyond basic arithmetic: unary math and
// activations, comparisons and logic, bitwise operators, Cast/CastLike, Clip, Where, PRelu, Pow,
// Mod, the variadic Max/Min/Sum/Mean, and the pass-through Identity and (inference) Dropout.
// Each inference function checks the element type class the ONNX operator allows, so that a
// model with a wrong type is refused here and not in a kernel at load time.
#include <cstdio>

#include "compiler/ops/infer_helpers.h"
#include "compiler/ops/op_registry.h"

namespace precis::ops {
namespace {

// Element type classes of ONNX type constraints.
enum class TypeClass { kFloat, kSignedNumeric, kNumeric, kInteger, kUnsigned, kBool, kNumericOrBool };

bool InClass(ir::DType t, TypeClass c) {
  switch (c) {
    case TypeClass::kFloat: return ir::IsFloat(t);
    case TypeClass::kSignedNumeric:
      return ir::IsFloat(t) || t == ir::DType::kI8 || t == ir::DType::kI16 || t == ir::DType::kI32 || t == ir::DType::kI64;
    case TypeClass::kNumeric: return ir::IsFloat(t) || ir::IsInteger(t);
    case TypeClass::kInteger: return ir::IsInteger(t);
    case TypeClass::kUnsigned:
      return t == ir::DType::kU8 || t == ir::DType::kU16 || t == ir::DType::kU32 || t == ir::DType::kU64;
    case TypeClass::kBool: return t == ir::DType::kBool;
    case TypeClass::kNumericOrBool: return ir::IsFloat(t) || ir::IsInteger(t) || t == ir::DType::kBool;
  }
  return false;
}

const char* ClassName(TypeClass c) {
  switch (c) {
    case TypeClass::kFloat: return "a floating-point";
    case TypeClass::kSignedNumeric: return "a float or signed integer";
    case TypeClass::kNumeric: return "a numeric";
    case TypeClass::kInteger: return "an integer";
    case TypeClass::kUnsigned: return "an unsigned integer";
    case TypeClass::kBool: return "a bool";
    case TypeClass::kNumericOrBool: return "a numeric or bool";
  }
  return "?";
}

// Input i must be a tensor of class c (an unknown element type passes; strings are refused as
// unsupported since the runtime has no string tensors).
Status CheckInput(const InferContext& ctx, size_t i, TypeClass c) {
  if (!ctx.has_input(i)) return ctx.Error("input " + std::to_string(i) + " is missing");
  const ir::Type& t = ctx.input_type(i);
  if (!t.is_tensor() && !t.is_unknown()) return ctx.Unsupported("input " + std::to_string(i) + " is not a tensor");
  ir::DType d = t.dtype();
  if (d == ir::DType::kUndefined || InClass(d, c)) return Status::Ok();
  if (d == ir::DType::kString) return ctx.Unsupported("string tensors are not supported");
  return ctx.Error("input " + std::to_string(i) + " must be " + ClassName(c) + " tensor, got " + std::string(ir::DTypeName(d)));
}

template <TypeClass C>
Status InferUnary(InferContext& ctx) {
  PRECIS_RETURN_IF_ERROR(CheckInput(ctx, 0, C));
  return InferSameAsInput0(ctx);
}

// IsNaN, IsInf: float in, bool out.
Status InferFloatPredicate(InferContext& ctx) {
  PRECIS_RETURN_IF_ERROR(CheckInput(ctx, 0, TypeClass::kFloat));
  PRECIS_ASSIGN_OR_RETURN(auto dims, ctx.InputDims(0));
  ctx.SetOutput(0, ir::DType::kBool, dims);
  return Status::Ok();
}

template <TypeClass C>
Status InferBinary(InferContext& ctx) {
  PRECIS_RETURN_IF_ERROR(CheckLegacyBroadcast(ctx));
  PRECIS_RETURN_IF_ERROR(CheckInput(ctx, 0, C));
  PRECIS_RETURN_IF_ERROR(CheckInput(ctx, 1, C));
  return InferBroadcastBinary(ctx);
}

template <TypeClass C>
Status InferCompare(InferContext& ctx) {
  PRECIS_RETURN_IF_ERROR(CheckLegacyBroadcast(ctx));
  PRECIS_RETURN_IF_ERROR(CheckInput(ctx, 0, C));
  PRECIS_RETURN_IF_ERROR(CheckInput(ctx, 1, C));
  if (ctx.input_dtype(0) != ctx.input_dtype(1) && ctx.input_dtype(0) != ir::DType::kUndefined &&
      ctx.input_dtype(1) != ir::DType::kUndefined)
    return ctx.Error("input dtypes differ: " + std::string(ir::DTypeName(ctx.input_dtype(0))) + " and " +
                     std::string(ir::DTypeName(ctx.input_dtype(1))));
  return InferBroadcastCompare(ctx);
}

Status InferGelu(InferContext& ctx) {
  std::string approximate = ctx.String("approximate", "none");
  if (approximate != "none" && approximate != "tanh")
    return ctx.Error("approximate must be 'none' or 'tanh', got '" + approximate + "'");
  return InferUnary<TypeClass::kFloat>(ctx);
}

Status InferBitShift(InferContext& ctx) {
  std::string direction = ctx.String("direction", "");
  if (direction != "LEFT" && direction != "RIGHT")
    return ctx.Error("direction must be 'LEFT' or 'RIGHT', got '" + direction + "'");
  return InferBinary<TypeClass::kUnsigned>(ctx);
}

// Clip: min/max attributes before opset 11, optional scalar inputs from 11 (integers from 12).
Status InferClip(InferContext& ctx) {
  TypeClass c = ctx.opset() >= 12 ? TypeClass::kNumeric : TypeClass::kFloat;
  PRECIS_RETURN_IF_ERROR(CheckInput(ctx, 0, c));
  if (ctx.opset() >= 11) {
    for (size_t i = 1; i <= 2; ++i) {
      if (!ctx.has_input(i)) continue;
      if (ctx.input_dtype(i) != ctx.input_dtype(0) && ctx.input_dtype(i) != ir::DType::kUndefined)
        return ctx.Error(std::string(i == 1 ? "min" : "max") + " has dtype " + std::string(ir::DTypeName(ctx.input_dtype(i))) +
                         ", input has " + std::string(ir::DTypeName(ctx.input_dtype(0))));
      PRECIS_ASSIGN_OR_RETURN(auto dims, ctx.InputDims(i));
      int64_t n = 1;
      for (const auto& d : dims) n = d.is_static() && n >= 0 ? n * d.value() : -1;
      if (n > 1) return ctx.Error(std::string(i == 1 ? "min" : "max") + " must be a scalar (one element)");
    }
  }
  return InferSameAsInput0(ctx);
}

// PRelu: slope broadcasts unidirectionally to X; the output has X's type. Before opset 7 a 1-D
// slope of X's dim-1 size is per channel (dim 1), which the kernel applies the same way.
Status InferPRelu(InferContext& ctx) {
  TypeClass c = ctx.opset() >= 9 ? TypeClass::kNumeric : TypeClass::kFloat;
  PRECIS_RETURN_IF_ERROR(CheckInput(ctx, 0, c));
  PRECIS_RETURN_IF_ERROR(CheckInput(ctx, 1, c));
  if (ctx.input_dtype(0) != ctx.input_dtype(1) && ctx.input_dtype(1) != ir::DType::kUndefined)
    return ctx.Error("slope dtype differs from the input's");
  PRECIS_ASSIGN_OR_RETURN(auto x, ctx.InputDims(0));
  PRECIS_ASSIGN_OR_RETURN(auto slope, ctx.InputDims(1));
  if (ctx.opset() < 7 && slope.size() == 1 && x.size() >= 2 && slope[0] == x[1]) {
    ctx.SetOutput(0, ctx.input_type(0));
    return Status::Ok();
  }
  auto b = BroadcastDims(x, slope);
  if (!b.ok()) return ctx.Error("slope does not broadcast to the input: " + b.status().message());
  bool to_x = b->size() == x.size();
  for (size_t i = 0; to_x && i < x.size(); ++i)
    if ((*b)[i].is_static() && x[i].is_static() && (*b)[i].value() != x[i].value()) to_x = false;
  if (!to_x) return ctx.Error("slope must broadcast to the input's shape (unidirectionally)");
  ctx.SetOutput(0, ctx.input_type(0));
  return Status::Ok();
}

Status InferWhere(InferContext& ctx) {
  PRECIS_RETURN_IF_ERROR(CheckInput(ctx, 0, TypeClass::kBool));
  PRECIS_RETURN_IF_ERROR(CheckInput(ctx, 1, TypeClass::kNumericOrBool));
  PRECIS_RETURN_IF_ERROR(CheckInput(ctx, 2, TypeClass::kNumericOrBool));
  if (ctx.input_dtype(1) != ctx.input_dtype(2) && ctx.input_dtype(1) != ir::DType::kUndefined &&
      ctx.input_dtype(2) != ir::DType::kUndefined)
    return ctx.Error("X and Y dtypes differ: " + std::string(ir::DTypeName(ctx.input_dtype(1))) + " and " +
                     std::string(ir::DTypeName(ctx.input_dtype(2))));
  std::vector<ir::Dim> dims;
  for (size_t i = 0; i < 3; ++i) {
    PRECIS_ASSIGN_OR_RETURN(auto d, ctx.InputDims(i));
    if (i == 0) {
      dims = d;
      continue;
    }
    auto b = BroadcastDims(dims, d);
    if (!b.ok()) return ctx.Error(b.status().message());
    dims = *b;
  }
  ctx.SetOutput(0, ctx.input_dtype(1), dims);
  return Status::Ok();
}

Status CheckCastTarget(const InferContext& ctx, ir::DType to) {
  if (to == ir::DType::kString) return ctx.Unsupported("casts to string are not supported");
  if (to == ir::DType::kUndefined) return ctx.Error("target type is undefined");
  return Status::Ok();
}

// Cast-1 names its target type as a string ("FLOAT"); -1 when unknown.
int64_t LegacyCastCode(const std::string& name) {
  static const std::pair<const char*, int64_t> kNames[] = {
      {"FLOAT", 1}, {"UINT8", 2}, {"INT8", 3}, {"UINT16", 4}, {"INT16", 5}, {"INT32", 6}, {"INT64", 7},
      {"STRING", 8}, {"BOOL", 9}, {"FLOAT16", 10}, {"DOUBLE", 11}, {"UINT32", 12}, {"UINT64", 13}};
  for (const auto& [n, code] : kNames)
    if (name == n) return code;
  return -1;
}

// Cast and CastLike also take the storage types (float8, float4, int4, int2) on either side.
Status CheckCastSource(const InferContext& ctx, size_t i) {
  if (ctx.has_input(i) && ir::IsStorageType(ctx.input_dtype(i))) return Status::Ok();
  return CheckInput(ctx, i, TypeClass::kNumericOrBool);
}

Status InferCast(InferContext& ctx) {
  PRECIS_RETURN_IF_ERROR(CheckCastSource(ctx, 0));
  const ir::Attribute* to = ctx.attr("to");
  int64_t code = -1;
  if (to && to->kind == ir::Attribute::Kind::kInt) code = to->i;
  if (to && to->kind == ir::Attribute::Kind::kString) code = LegacyCastCode(to->s);  // Cast-1
  if (code < 0) return ctx.Error("needs an attribute 'to' naming a known type");
  auto dtype = ir::DTypeFromOnnx(int32_t(code));
  if (!dtype.ok()) return dtype.status().code() == StatusCode::kUnimplemented ? ctx.Unsupported("cast to " + dtype.status().message())
                                                                              : ctx.Error(dtype.status().message());
  PRECIS_RETURN_IF_ERROR(CheckCastTarget(ctx, *dtype));
  PRECIS_ASSIGN_OR_RETURN(auto dims, ctx.InputDims(0));
  ctx.SetOutput(0, *dtype, dims);
  return Status::Ok();
}

// BitCast (opset 26): the same bits as another type of the same width. 4- and 2-bit types are
// refused: Precis holds them one per byte, so their bits are not the ONNX bits.
Status InferBitCast(InferContext& ctx) {
  PRECIS_RETURN_IF_ERROR(CheckCastSource(ctx, 0));
  auto to = ir::DTypeFromOnnx(int32_t(ctx.Int("to", 0)));
  if (!to.ok()) return ctx.Error("needs an attribute 'to' naming a known type");
  PRECIS_RETURN_IF_ERROR(CheckCastTarget(ctx, *to));
  ir::DType from = ctx.input_dtype(0);
  auto sub_byte = [](ir::DType t) {
    return t == ir::DType::kI4 || t == ir::DType::kU4 || t == ir::DType::kF4E2M1 || t == ir::DType::kI2 || t == ir::DType::kU2;
  };
  if (sub_byte(from) || sub_byte(*to)) return ctx.Unsupported("bit casts of 4- and 2-bit types (held one per byte)");
  if (ir::DTypeSize(from) != ir::DTypeSize(*to))
    return ctx.Error(std::string("needs types of one width: ") + std::string(ir::DTypeName(from)) + " and " + std::string(ir::DTypeName(*to)));
  PRECIS_ASSIGN_OR_RETURN(auto dims, ctx.InputDims(0));
  ctx.SetOutput(0, *to, dims);
  return Status::Ok();
}

Status InferCastLike(InferContext& ctx) {
  PRECIS_RETURN_IF_ERROR(CheckCastSource(ctx, 0));
  PRECIS_RETURN_IF_ERROR(CheckCastSource(ctx, 1));
  PRECIS_RETURN_IF_ERROR(CheckCastTarget(ctx, ctx.input_dtype(1)));
  PRECIS_ASSIGN_OR_RETURN(auto dims, ctx.InputDims(0));
  ctx.SetOutput(0, ctx.input_dtype(1), dims);
  return Status::Ok();
}

// Pow: output has the base's type; the exponent may have another numeric type from opset 12.
Status InferPow(InferContext& ctx) {
  PRECIS_RETURN_IF_ERROR(CheckLegacyBroadcast(ctx));
  PRECIS_RETURN_IF_ERROR(CheckInput(ctx, 0, TypeClass::kNumeric));
  PRECIS_RETURN_IF_ERROR(CheckInput(ctx, 1, TypeClass::kNumeric));
  ir::DType base = ctx.input_dtype(0);
  if (base != ir::DType::kUndefined && !ir::IsFloat(base) && base != ir::DType::kI32 && base != ir::DType::kI64)
    return ctx.Error("base must be a float, int32 or int64 tensor, got " + std::string(ir::DTypeName(base)));
  PRECIS_ASSIGN_OR_RETURN(auto a, ctx.InputDims(0));
  PRECIS_ASSIGN_OR_RETURN(auto b, ctx.InputDims(1));
  auto out = BroadcastDims(a, b);
  if (!out.ok()) return ctx.Error(out.status().message());
  ctx.SetOutput(0, base, *out);
  return Status::Ok();
}

Status InferMod(InferContext& ctx) {
  int64_t fmod = ctx.Int("fmod", 0);
  if (fmod != 0 && fmod != 1) return ctx.Error("fmod must be 0 or 1, got " + std::to_string(fmod));
  if (fmod == 0 && ir::IsFloat(ctx.input_dtype(0)))
    return ctx.Error("fmod must be 1 for floating-point inputs (ONNX Mod)");
  return InferBinary<TypeClass::kNumeric>(ctx);
}

// Max, Min (numeric), Sum, Mean (float): 1..N inputs of one dtype, broadcast together.
template <TypeClass C>
Status InferVariadic(InferContext& ctx) {
  if (ctx.num_inputs() == 0) return ctx.Error("needs at least one input");
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    PRECIS_RETURN_IF_ERROR(CheckInput(ctx, i, C));
    if (ctx.input_dtype(i) != ctx.input_dtype(0) && ctx.input_dtype(i) != ir::DType::kUndefined)
      return ctx.Error("input " + std::to_string(i) + " has dtype " + std::string(ir::DTypeName(ctx.input_dtype(i))) +
                       ", input 0 has " + std::string(ir::DTypeName(ctx.input_dtype(0))));
  }
  return InferBroadcastVariadic(ctx);
}

Status InferIdentity(InferContext& ctx) {
  if (!ctx.has_input(0)) return ctx.Error("input 0 is missing");
  if (!ctx.input_type(0).is_tensor()) return ctx.Unsupported("only tensor inputs are supported (not sequences or optionals)");
  PRECIS_RETURN_IF_ERROR(CheckInput(ctx, 0, TypeClass::kNumericOrBool));
  return InferSameAsInput0(ctx);
}

// Dropout at inference: output = input, mask all true. Training mode (opset 12+ input 2) is
// refused when it is a constant true with a constant ratio other than 0; a training_mode or ratio
// computed at run time is checked when the step runs (a run in training mode with a ratio other
// than 0 fails: runtime/kernels/dropout_mode.h). Before opset 7 the is_test attribute must be set
// (its default, 0, meant training).
Status InferDropout(InferContext& ctx) {
  PRECIS_RETURN_IF_ERROR(CheckInput(ctx, 0, TypeClass::kNumeric));
  if (ctx.opset() < 7 && ctx.Int("is_test", 0) == 0)
    return ctx.Unsupported("is_test is 0 (training mode, opset < 7); only inference Dropout is supported");
  if (ctx.opset() >= 12 && ctx.has_input(2)) {
    bool training = false;
    if (ctx.input_constant(2)) {
      PRECIS_ASSIGN_OR_RETURN(auto v, ctx.ConstantInts(2));
      for (int64_t x : v) training |= x != 0;
    }
    // torchvision's attention blocks export Dropout with training_mode true and ratio 0: the
    // identity. With a ratio > 0 an inference plan would have to drop values.
    if (training) {
      double ratio = 0.5;  // the default when input 1 is omitted
      if (ctx.has_input(1)) {
        if (ctx.input_constant(1)) {
          PRECIS_ASSIGN_OR_RETURN(auto r, ctx.ConstantFloats(1));
          ratio = r.empty() ? 0.5 : r[0];
        } else {
          ratio = 0;  // computed at run time: checked then
        }
      }
      if (ratio != 0) {
        char text[32];
        std::snprintf(text, sizeof text, "%g", ratio);
        return ctx.Unsupported(std::string("training_mode is true with ratio ") + text +
                               ": an inference plan cannot drop values (export the model in eval mode, or compile with --train)");
      }
    }
  }
  PRECIS_ASSIGN_OR_RETURN(auto dims, ctx.InputDims(0));
  ctx.SetOutput(0, ctx.input_type(0));
  // The mask was of the input's type before opset 10, bool since.
  if (ctx.has_output(1)) ctx.SetOutput(1, ctx.opset() >= 10 ? ir::DType::kBool : ctx.input_dtype(0), dims);
  return Status::Ok();
}

void RegisterUnaryOps(OpRegistry& r) {
  constexpr auto F = InferUnary<TypeClass::kFloat>;
  struct Unary { const char* op; int64_t since; InferFn infer; PrecisionClass precision; };
  using P = PrecisionClass;
  const Unary ops[] = {
      {"Abs", 1, InferUnary<TypeClass::kNumeric>, P::kFollow},
      {"Neg", 1, InferUnary<TypeClass::kSignedNumeric>, P::kFollow},
      {"Sign", 9, InferUnary<TypeClass::kNumeric>, P::kFollow}, {"Sigmoid", 1, F, P::kFollow},
      {"Tanh", 1, F, P::kFollow}, {"Exp", 1, F, P::kKeepFp32}, {"Log", 1, F, P::kKeepFp32},
      {"Sqrt", 1, F, P::kKeepFp32}, {"Reciprocal", 1, F, P::kKeepFp32}, {"Floor", 1, F, P::kFollow},
      {"Ceil", 1, F, P::kFollow}, {"Round", 11, F, P::kFollow}, {"Sin", 7, F, P::kKeepFp32},
      {"Cos", 7, F, P::kKeepFp32}, {"Tan", 7, F, P::kKeepFp32}, {"Asin", 7, F, P::kKeepFp32},
      {"Acos", 7, F, P::kKeepFp32}, {"Atan", 7, F, P::kKeepFp32}, {"Sinh", 9, F, P::kKeepFp32},
      {"Cosh", 9, F, P::kKeepFp32}, {"Asinh", 9, F, P::kKeepFp32}, {"Acosh", 9, F, P::kKeepFp32},
      {"Atanh", 9, F, P::kKeepFp32}, {"Erf", 9, F, P::kFollow}, {"Softplus", 1, F, P::kKeepFp32},
      {"Softsign", 1, F, P::kFollow}, {"Elu", 1, F, P::kFollow}, {"Selu", 1, F, P::kFollow},
      {"Celu", 12, F, P::kFollow}, {"LeakyRelu", 1, F, P::kFollow}, {"ThresholdedRelu", 10, F, P::kFollow},
      {"HardSigmoid", 1, F, P::kFollow}, {"HardSwish", 14, F, P::kFollow}, {"Mish", 18, F, P::kFollow},
      {"Gelu", 20, InferGelu, P::kFollow}, {"Not", 1, InferUnary<TypeClass::kBool>, P::kUntouched},
      {"BitwiseNot", 18, InferUnary<TypeClass::kInteger>, P::kUntouched},
      {"Shrink", 9, InferUnary<TypeClass::kNumeric>, P::kFollow},
  };
  for (const Unary& u : ops) r.Register({"", u.op, u.since, INT_MAX, u.infer, true, 0, "", u.precision});
  r.Register({"", "IsNaN", 9, INT_MAX, InferFloatPredicate, true, -1, "", PrecisionClass::kUntouched});
  r.Register({"", "IsInf", 10, INT_MAX, InferFloatPredicate, true, -1, "", PrecisionClass::kUntouched});
}

void RegisterBinaryOps(OpRegistry& r) {
  // Before opset 7 these broadcast only on request (CheckLegacyBroadcast).
  r.Register({"", "Equal", 1, INT_MAX, InferCompare<TypeClass::kNumericOrBool>, true, -1, "", PrecisionClass::kUntouched});
  for (const char* op : {"Greater", "Less"}) r.Register({"", op, 1, INT_MAX, InferCompare<TypeClass::kNumeric>, true, -1, "", PrecisionClass::kUntouched});
  for (const char* op : {"GreaterOrEqual", "LessOrEqual"})
    r.Register({"", op, 12, INT_MAX, InferCompare<TypeClass::kNumeric>, true, -1, "", PrecisionClass::kUntouched});
  for (const char* op : {"And", "Or", "Xor"}) r.Register({"", op, 1, INT_MAX, InferBinary<TypeClass::kBool>, true, 0, "", PrecisionClass::kUntouched});
  for (const char* op : {"BitwiseAnd", "BitwiseOr", "BitwiseXor"})
    r.Register({"", op, 18, INT_MAX, InferBinary<TypeClass::kInteger>, true, 0, "", PrecisionClass::kUntouched});
  r.Register({"", "BitShift", 11, INT_MAX, InferBitShift, true, 0, "", PrecisionClass::kUntouched});
  r.Register({"", "Pow", 1, INT_MAX, InferPow, true, 0, "", PrecisionClass::kKeepFp32});
  r.Register({"", "Mod", 10, INT_MAX, InferMod, true, 0, "", PrecisionClass::kFollow});
  r.Register({"", "PRelu", 1, INT_MAX, InferPRelu, true, 0, "", PrecisionClass::kFollow});
  r.Register({"", "Where", 9, INT_MAX, InferWhere, true, -1, "", PrecisionClass::kFollow});
  for (const char* op : {"Max", "Min"}) r.Register({"", op, 1, INT_MAX, InferVariadic<TypeClass::kNumeric>, true, 0, "", PrecisionClass::kFollow});
  for (const char* op : {"Sum", "Mean"}) r.Register({"", op, 1, INT_MAX, InferVariadic<TypeClass::kFloat>, true, 0, "", PrecisionClass::kFollow});
}

}  // namespace

void RegisterActivationOps(OpRegistry& r) {
  RegisterUnaryOps(r);
  RegisterBinaryOps(r);
  r.Register({"", "Clip", 1, INT_MAX, InferClip, true, 0, "", PrecisionClass::kFollow});
  r.Register({"", "Cast", 1, INT_MAX, InferCast, true, -1, "", PrecisionClass::kUntouched});
  r.Register({"", "CastLike", 15, INT_MAX, InferCastLike, true, -1, "Cast", PrecisionClass::kUntouched});
  r.Register({"", "BitCast", 26, INT_MAX, InferBitCast, true, -1, "", PrecisionClass::kUntouched});
  r.Register({"", "Identity", 1, INT_MAX, InferIdentity, true, 0, "", PrecisionClass::kPassthrough});
  r.Register({"", "Dropout", 1, INT_MAX, InferDropout, true, 0, "", PrecisionClass::kPassthrough, 1});
}

}  // namespace precis::ops
