// Fused elementwise programs (fused_program.h): decoding with validation, hashing and the
// reference evaluation.
#include "runtime/kernels/fused_program.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "runtime/base/half.h"
#include "runtime/kernels/approx_math.h"
#include "runtime/base/hash.h"

namespace precis::rt::fused {

namespace {

bool FloatDtype(int64_t d) { return d == int64_t(DataType::kF32) || d == int64_t(DataType::kF16) || d == int64_t(DataType::kBF16); }

float LoadOne(DataType dtype, const void* base, int64_t i) {
  switch (dtype) {
    case DataType::kF16: return HalfToFloat(static_cast<const uint16_t*>(base)[i]);
    case DataType::kBF16: return Bf16ToFloat(static_cast<const uint16_t*>(base)[i]);
    default: return static_cast<const float*>(base)[i];
  }
}

void StoreOne(DataType dtype, void* base, int64_t i, float v) {
  switch (dtype) {
    case DataType::kF16: static_cast<uint16_t*>(base)[i] = FloatToHalf(v); break;
    case DataType::kBF16: static_cast<uint16_t*>(base)[i] = FloatToBf16(v); break;
    default: static_cast<float*>(base)[i] = v; break;
  }
}

}  // namespace

const char* OpName(Op op) {
  static const char* const kNames[kNumOps] = {"load", "const", "add", "sub", "mul", "div", "max", "min", "neg", "abs",
                                              "sqrt", "reciprocal", "relu", "leaky_relu", "clip_low", "clip_high", "round", "store",
                                              "exp", "erf", "tanh", "sigmoid", "gelu_erf", "gelu_tanh", "prelu"};
  int64_t i = int64_t(op);
  return i >= 0 && i < kNumOps ? kNames[i] : "?";
}

bool IsBinary(Op op) { return (op >= Op::kAdd && op <= Op::kMin) || op == Op::kPRelu; }
bool IsUnary(Op op) { return (op >= Op::kNeg && op <= Op::kClipHigh) || op == Op::kRound || (op >= Op::kExp && op <= Op::kGeluTanh); }

float Apply(Op op, float a, float b, float k) {
  approx::FloatOps o;
  switch (op) {
    case Op::kAdd: return a + b;
    case Op::kSub: return a - b;
    case Op::kMul: return a * b;
    case Op::kDiv: return a / b;
    case Op::kMax: return b > a || b != b ? b : a;
    case Op::kMin: return b < a || b != b ? b : a;
    case Op::kNeg: return -a;
    case Op::kAbs: return std::fabs(a);
    case Op::kSqrt: return std::sqrt(a);
    case Op::kReciprocal: return 1.0f / a;
    case Op::kRelu: return a > 0 ? a : 0.0f;
    case Op::kLeakyRelu: return a < 0 ? k * a : a;
    case Op::kClipLow: return a < k ? k : a;
    case Op::kClipHigh: return a > k ? k : a;
    case Op::kExp: return approx::Exp(o, a);
    case Op::kErf: return approx::Erf(o, a);
    case Op::kTanh: return approx::Tanh(o, a);
    case Op::kSigmoid: return approx::Sigmoid(o, a);
    case Op::kGeluErf: return approx::GeluErf(o, a);
    case Op::kGeluTanh: return approx::GeluTanh(o, a);
    case Op::kPRelu: return a < 0 ? b * a : a;
    default: return a;
  }
}

float RoundTo(DataType dtype, float v) {
  if (dtype == DataType::kF16) return HalfToFloat(FloatToHalf(v));
  if (dtype == DataType::kBF16) return Bf16ToFloat(FloatToBf16(v));
  return v;
}

std::vector<int64_t> Program::Encode() const {
  std::vector<int64_t> out;
  out.reserve(code.size() * kFields);
  for (const Instr& in : code) out.insert(out.end(), {int64_t(in.op), in.a, in.b, in.c, in.d});
  return out;
}

uint64_t Program::Hash() const {
  std::vector<int64_t> ints = Encode();
  uint64_t h = HashBytes(reinterpret_cast<const uint8_t*>(ints.data()), ints.size() * sizeof(int64_t));
  return HashBytes(reinterpret_cast<const uint8_t*>(consts.data()), consts.size() * sizeof(float), h);
}

std::string Program::EntryName() const {
  char buf[40];
  std::snprintf(buf, sizeof buf, "fused_%016llx", static_cast<unsigned long long>(Hash()));
  return buf;
}

DataType Program::InputDtype(int i) const {
  for (const Instr& in : code)
    if (in.op == Op::kLoad && in.a == i) return DataType(in.b);
  return DataType::kUndefined;
}

const Instr* Program::InputLoad(int i) const {
  for (const Instr& in : code)
    if (in.op == Op::kLoad && in.a == i) return &in;
  return nullptr;
}

bool Program::InputBroadcast(int i) const {
  const Instr* in = InputLoad(i);
  return in && in->c != 0;
}

bool Program::InPlaceOk() const {
  const Instr* in = InputLoad(0);
  return in && in->c == 0 && num_outputs >= 1 && DataTypeSize(InputDtype(0)) == DataTypeSize(OutputDtype(0));
}

DataType Program::OutputDtype(int o) const {
  for (const Instr& in : code)
    if (in.op == Op::kStore && in.a == o) return DataType(in.c);
  return DataType::kUndefined;
}

StatusOr<Program> Decode(const std::vector<int64_t>& code, const std::vector<float>& consts) {
  if (code.empty() || code.size() % kFields)
    return InvalidArgument("fused program: code has " + std::to_string(code.size()) + " ints, not a multiple of " + std::to_string(kFields));
  if (code.size() / kFields > kMaxInstructions)
    return InvalidArgument("fused program: " + std::to_string(code.size() / kFields) + " instructions (at most " + std::to_string(kMaxInstructions) + ")");
  Program p;
  p.consts = consts;
  std::vector<bool> loaded(kMaxOperands, false), stored(kMaxOperands, false);
  int max_in = -1, max_out = -1;
  for (size_t r = 0; r < code.size() / kFields; ++r) {
    const int64_t* f = code.data() + kFields * r;
    Instr in{Op(f[0]), f[1], f[2], f[3], f[4]};
    std::string where = "fused program: instruction " + std::to_string(r) + " (" + OpName(in.op) + ")";
    if (f[0] < 0 || f[0] >= kNumOps) return InvalidArgument("fused program: instruction " + std::to_string(r) + " has unknown op " + std::to_string(f[0]));
    auto value = [&](int64_t reg) { return reg >= 0 && size_t(reg) < r && p.code[size_t(reg)].op != Op::kStore; };
    auto konst = [&](int64_t k) { return k >= 0 && size_t(k) < consts.size(); };
    switch (in.op) {
      case Op::kLoad:
        if (max_out >= 0) return InvalidArgument(where + ": a load after a store");
        if (in.a < 0 || in.a >= int64_t(kMaxOperands) || loaded[size_t(in.a)]) return InvalidArgument(where + ": input " + std::to_string(in.a) + " out of range or loaded twice");
        if (!FloatDtype(in.b)) return InvalidArgument(where + ": bad dtype");
        if (in.c == 0 ? in.d != 0 : in.c < 1 || in.c > kMaxPeriod || in.d < 1 || in.d > kMaxPeriod)
          return InvalidArgument(where + ": bad broadcast (inner " + std::to_string(in.c) + ", count " + std::to_string(in.d) + ")");
        loaded[size_t(in.a)] = true;
        max_in = std::max(max_in, int(in.a));
        break;
      case Op::kConst:
        if (!konst(in.a)) return InvalidArgument(where + ": constant index out of range");
        break;
      case Op::kStore:
        if (in.a < 0 || in.a >= int64_t(kMaxOperands) || stored[size_t(in.a)]) return InvalidArgument(where + ": output " + std::to_string(in.a) + " out of range or stored twice");
        if (!value(in.b) || !FloatDtype(in.c)) return InvalidArgument(where + ": bad register or dtype");
        stored[size_t(in.a)] = true;
        max_out = std::max(max_out, int(in.a));
        break;
      case Op::kRound:
        if (!value(in.a) || (in.b != int64_t(DataType::kF16) && in.b != int64_t(DataType::kBF16))) return InvalidArgument(where + ": bad register or dtype");
        break;
      case Op::kLeakyRelu:
      case Op::kClipLow:
      case Op::kClipHigh:
        if (!value(in.a) || !konst(in.b)) return InvalidArgument(where + ": bad register or constant");
        break;
      default:
        if (IsBinary(in.op) ? !value(in.a) || !value(in.b) : !value(in.a)) return InvalidArgument(where + ": uses a register not defined before it");
        break;
    }
    p.code.push_back(in);
  }
  for (int i = 0; i <= max_in; ++i)
    if (!loaded[size_t(i)]) return InvalidArgument("fused program: input " + std::to_string(i) + " is never loaded");
  for (int o = 0; o <= max_out; ++o)
    if (!stored[size_t(o)]) return InvalidArgument("fused program: output " + std::to_string(o) + " is never stored");
  if (max_out < 0) return InvalidArgument("fused program: stores nothing");
  p.num_inputs = max_in + 1;
  p.num_outputs = max_out + 1;
  return p;
}

StatusOr<Program> DecodeStep(const KernelArgs& args) {
  std::vector<int64_t> code = args.attrs.Ints("code");
  std::vector<float> consts = args.attrs.Floats("consts");
  auto p = Decode(code, consts);
  if (!p.ok()) return args.Error(p.status().message());
  std::string entry = args.attrs.String("entry", "");
  if (!entry.empty() && entry != p->EntryName()) return args.Error("entry '" + entry + "' does not name this program (" + p->EntryName() + ")");
  if (args.inputs.size() != size_t(p->num_inputs) || args.outputs.size() != size_t(p->num_outputs))
    return args.Error("the program reads " + std::to_string(p->num_inputs) + " inputs and writes " + std::to_string(p->num_outputs) + " outputs; the step has " +
                      std::to_string(args.inputs.size()) + " and " + std::to_string(args.outputs.size()));
  const Tensor* first = args.out(0);
  if (!first) return args.Error("output 0 is missing");
  for (int o = 0; o < p->num_outputs; ++o) {
    const Tensor* t = args.out(size_t(o));
    if (!t || t->dtype != p->OutputDtype(o) || t->dims != first->dims)
      return args.Error("output " + std::to_string(o) + " is missing or differs from the program's dtype or output 0's dims");
  }
  for (int i = 0; i < p->num_inputs; ++i) {
    const Tensor* t = args.in(size_t(i));
    if (!t || t->dtype != p->InputDtype(i)) return args.Error("input " + std::to_string(i) + " is missing or has another dtype than the program loads");
    const Instr* load = p->InputLoad(i);
    if (load->c ? t->numel != load->d : t->dims != first->dims)
      return args.Error("input " + std::to_string(i) + " has dims " + DimsToString(t->dims) + " (output " + DimsToString(first->dims) + ")");
  }
  if (args.in(0) && args.in(0)->data && args.in(0)->data == first->data && !p->InPlaceOk())
    return args.Error("output 0 shares input 0's bytes, which this program reads broadcast or at another element size");
  return p;
}

void Evaluate(const Program& p, const void* const* inputs, void* const* outputs, int64_t begin, int64_t end, float* regs) {
  for (int64_t b0 = begin; b0 < end; b0 += kBlock) {
    int64_t n = std::min(kBlock, end - b0);
    for (size_t r = 0; r < p.code.size(); ++r) {
      const Instr& in = p.code[r];
      float* y = regs + r * size_t(kBlock);
      const float* x = in.a >= 0 && size_t(in.a) < p.code.size() ? regs + size_t(in.a) * size_t(kBlock) : nullptr;
      switch (in.op) {
        case Op::kLoad:
          for (int64_t i = 0; i < n; ++i) y[i] = LoadOne(DataType(in.b), inputs[in.a], in.c ? (b0 + i) / in.c % in.d : b0 + i);
          break;
        case Op::kConst:
          std::fill(y, y + n, p.consts[size_t(in.a)]);
          break;
        case Op::kStore: {
          const float* v = regs + size_t(in.b) * size_t(kBlock);
          for (int64_t i = 0; i < n; ++i) StoreOne(DataType(in.c), outputs[in.a], b0 + i, v[i]);
          break;
        }
        case Op::kRound:
          for (int64_t i = 0; i < n; ++i) y[i] = RoundTo(DataType(in.b), x[i]);
          break;
        case Op::kLeakyRelu:
        case Op::kClipLow:
        case Op::kClipHigh: {
          float k = p.consts[size_t(in.b)];
          for (int64_t i = 0; i < n; ++i) y[i] = Apply(in.op, x[i], 0, k);
          break;
        }
        default:
          if (IsBinary(in.op)) {
            const float* z = regs + size_t(in.b) * size_t(kBlock);
            for (int64_t i = 0; i < n; ++i) y[i] = Apply(in.op, x[i], z[i], 0);
          } else {
            for (int64_t i = 0; i < n; ++i) y[i] = Apply(in.op, x[i], 0, 0);
          }
          break;
      }
    }
  }
}

}  // namespace precis::rt::fused
