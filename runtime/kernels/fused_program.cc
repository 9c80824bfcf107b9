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
                                              "exp", "erf", "tanh", "sigmoid", "gelu_erf", "gelu_tanh", "prelu",
                                              "row", "reduce_sum", "reduce_max"};
  int64_t i = int64_t(op);
  return i >= 0 && i < kNumOps ? kNames[i] : "?";
}

bool IsBinary(Op op) { return (op >= Op::kAdd && op <= Op::kMin) || op == Op::kPRelu; }
bool IsReduction(Op op) { return op == Op::kReduceSum || op == Op::kReduceMax; }
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

bool Program::InPlaceOk(int input, int output) const {
  const Instr* in = InputLoad(input);
  return in && in->c == 0 && output >= 0 && output < num_outputs && OutputRowDims(output) == 0 &&
         DataTypeSize(InputDtype(input)) == DataTypeSize(OutputDtype(output));
}

int64_t Program::OutputRowDims(int o) const {
  for (const Instr& in : code)
    if (in.op == Op::kStore && in.a == o) return in.d;
  return 0;
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
  size_t count = code.size() / kFields;
  p.level.assign(count, 0);
  p.per_row.assign(count, false);
  int max_element_level = 0, max_reduce_level = 0;
  for (size_t r = 0; r < count; ++r) {
    const int64_t* f = code.data() + kFields * r;
    Instr in{Op(f[0]), f[1], f[2], f[3], f[4]};
    std::string where = "fused program: instruction " + std::to_string(r) + " (" + OpName(in.op) + ")";
    if (f[0] < 0 || f[0] >= kNumOps) return InvalidArgument("fused program: instruction " + std::to_string(r) + " has unknown op " + std::to_string(f[0]));
    auto value = [&](int64_t reg) {
      return reg >= 0 && size_t(reg) < r && p.code[size_t(reg)].op != Op::kStore && p.code[size_t(reg)].op != Op::kRow;
    };
    auto konst = [&](int64_t k) { return k >= 0 && size_t(k) < consts.size(); };
    switch (in.op) {
      case Op::kLoad:
        if (max_out >= 0) return InvalidArgument(where + ": a load after a store");
        if (in.a < 0 || in.a >= int64_t(kMaxOperands) || loaded[size_t(in.a)]) return InvalidArgument(where + ": input " + std::to_string(in.a) + " out of range or loaded twice");
        if (!FloatDtype(in.b)) return InvalidArgument(where + ": bad dtype");
        if (in.c == 0 ? in.d != 0 : in.c < 1 || in.c > kMaxPeriod || in.d < 1 || in.d > kMaxPeriod)
          return InvalidArgument(where + ": bad broadcast (inner " + std::to_string(in.c) + ", count " + std::to_string(in.d) + ")");
        if (p.row) {
          p.per_row[r] = in.c != 0 && (in.d == 1 || in.c % p.row == 0);
          if (in.c != 0 && !p.per_row[r] && !(in.c == 1 && in.d % p.row == 0))
            return InvalidArgument(where + ": a row program's load must read whole, once per row, or along the row (inner " + std::to_string(in.c) +
                                   ", count " + std::to_string(in.d) + ", row " + std::to_string(p.row) + ")");
          if (in.c == 0 && p.frame_input < 0) p.frame_input = int(in.a);
        }
        loaded[size_t(in.a)] = true;
        max_in = std::max(max_in, int(in.a));
        break;
      case Op::kConst:
        if (!konst(in.a)) return InvalidArgument(where + ": constant index out of range");
        p.per_row[r] = p.row != 0;
        break;
      case Op::kRow:
        if (r != 0 || in.a < 1 || in.a > kMaxPeriod) return InvalidArgument(where + ": Row must be instruction 0, with a length from 1 to 2^40");
        p.row = in.a;
        break;
      case Op::kReduceSum:
      case Op::kReduceMax:
        if (!p.row) return InvalidArgument(where + ": a reduction outside a row program");
        if (!value(in.a) || p.per_row[size_t(in.a)]) return InvalidArgument(where + ": reduces a register that is not per element");
        p.level[r] = p.level[size_t(in.a)] + 1;
        p.per_row[r] = true;
        max_reduce_level = std::max(max_reduce_level, p.level[r]);
        break;
      case Op::kStore:
        if (in.a < 0 || in.a >= int64_t(kMaxOperands) || stored[size_t(in.a)]) return InvalidArgument(where + ": output " + std::to_string(in.a) + " out of range or stored twice");
        if (!value(in.b) || !FloatDtype(in.c)) return InvalidArgument(where + ": bad register or dtype");
        if (in.d != 0 && (!p.row || !p.per_row[size_t(in.b)] || in.d > 8 || in.d < -8))
          return InvalidArgument(where + ": a row store (d " + std::to_string(in.d) + ") outside a row program, of a register that is not per row, or of over 8 dims");
        if (in.d == 0) max_element_level = std::max(max_element_level, p.level[size_t(in.b)]);  // stored in the last pass
        stored[size_t(in.a)] = true;
        max_out = std::max(max_out, int(in.a));
        break;
      case Op::kRound:
        if (!value(in.a) || (in.b != int64_t(DataType::kF16) && in.b != int64_t(DataType::kBF16))) return InvalidArgument(where + ": bad register or dtype");
        p.level[r] = p.level[size_t(in.a)];
        p.per_row[r] = p.per_row[size_t(in.a)];
        break;
      case Op::kLeakyRelu:
      case Op::kClipLow:
      case Op::kClipHigh:
        if (!value(in.a) || !konst(in.b)) return InvalidArgument(where + ": bad register or constant");
        p.level[r] = p.level[size_t(in.a)];
        p.per_row[r] = p.per_row[size_t(in.a)];
        break;
      default:
        if (IsBinary(in.op) ? !value(in.a) || !value(in.b) : !value(in.a)) return InvalidArgument(where + ": uses a register not defined before it");
        p.level[r] = p.level[size_t(in.a)];
        p.per_row[r] = p.per_row[size_t(in.a)];
        if (IsBinary(in.op)) {
          p.level[r] = std::max(p.level[r], p.level[size_t(in.b)]);
          p.per_row[r] = p.per_row[r] && p.per_row[size_t(in.b)];
        }
        break;
    }
    if (in.op != Op::kStore && in.op != Op::kRow && !p.per_row[r]) max_element_level = std::max(max_element_level, p.level[r]);
    p.code.push_back(in);
  }
  if (p.row) {
    if (p.frame_input < 0) return InvalidArgument("fused program: a row program reads no input whole");
    p.passes = std::max(max_element_level + 1, max_reduce_level);
    if (p.passes > kMaxPasses) return InvalidArgument("fused program: " + std::to_string(p.passes) + " passes over a row (at most " + std::to_string(kMaxPasses) + ")");
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
  // The frame: output 0's dims, or in a row program the dims of the input read whole.
  const Tensor* first = p->row ? args.in(size_t(p->frame_input)) : args.out(0);
  if (!first) return args.Error(p->row ? "input " + std::to_string(p->frame_input) + " is missing" : "output 0 is missing");
  int64_t rows = p->row ? first->numel / p->row : 0;
  if (p->row && first->numel % p->row != 0)
    return args.Error("input " + std::to_string(p->frame_input) + " has " + std::to_string(first->numel) + " elements, not rows of " + std::to_string(p->row));
  for (int o = 0; o < p->num_outputs; ++o) {
    const Tensor* t = args.out(size_t(o));
    bool row_output = p->OutputRowDims(o) != 0;
    if (!t || t->dtype != p->OutputDtype(o) || (row_output ? t->numel != rows : t->dims != first->dims))
      return args.Error("output " + std::to_string(o) + " is missing or differs from the program's dtype or " +
                        (row_output ? "its rows (" + std::to_string(rows) + ")" : "the dims " + DimsToString(first->dims)));
  }
  for (int i = 0; i < p->num_inputs; ++i) {
    const Tensor* t = args.in(size_t(i));
    if (!t || t->dtype != p->InputDtype(i)) return args.Error("input " + std::to_string(i) + " is missing or has another dtype than the program loads");
    const Instr* load = p->InputLoad(i);
    if (load->c ? t->numel != load->d : t->dims != first->dims)
      return args.Error("input " + std::to_string(i) + " has dims " + DimsToString(t->dims) + " (frame " + DimsToString(first->dims) + ")");
  }
  for (int o = 0; o < p->num_outputs; ++o)
    for (int i = 0; i < p->num_inputs; ++i)
      if (args.in(size_t(i))->data && args.in(size_t(i))->data == args.out(size_t(o))->data && !p->InPlaceOk(i, o))
        return args.Error("output " + std::to_string(o) + " shares input " + std::to_string(i) +
                          "'s bytes, which this program reads broadcast or at another element size");
  return p;
}

int64_t WorkUnits(const Program& p, const KernelArgs& args) {
  if (!p.row) return args.out(0)->numel;
  return args.in(size_t(p.frame_input))->numel / p.row;
}

// Registers (kBlock floats each), a row value per instruction, then the reductions' partials
// (kPartials doubles per instruction, 8-byte aligned).
size_t ScratchFloats(const Program& p) { return p.code.size() * size_t(kBlock + 1 + 2 * kPartials) + 2; }

namespace {

// One instruction over a block of n values: registers in `regs` (kBlock floats each).
void Step(const Program& p, const Instr& in, size_t r, float* regs, const void* const* inputs, int64_t first, int64_t n) {
  float* y = regs + r * size_t(kBlock);
  const float* x = in.a >= 0 && size_t(in.a) < p.code.size() ? regs + size_t(in.a) * size_t(kBlock) : nullptr;
  switch (in.op) {
    case Op::kLoad:
      for (int64_t i = 0; i < n; ++i) y[i] = LoadOne(DataType(in.b), inputs[in.a], in.c ? (first + i) / in.c % in.d : first + i);
      break;
    case Op::kConst:
      std::fill(y, y + n, p.consts[size_t(in.a)]);
      break;
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

// The rows [begin, end) of a row program (fused_program.h: passes, levels, reduction order).
void EvaluateRows(const Program& p, const void* const* inputs, void* const* outputs, int64_t begin, int64_t end, float* regs) {
  size_t count = p.code.size();
  float* row_value = regs + count * size_t(kBlock);  // per reduction: the row's value
  uintptr_t after = reinterpret_cast<uintptr_t>(row_value + count);
  double* partials = reinterpret_cast<double*>((after + 7) / 8 * 8);  // kPartials per instruction
  for (int64_t row = begin; row < end; ++row) {
    for (int pass = 0; pass < p.passes; ++pass) {
      bool last = pass == p.passes - 1;
      for (size_t r = 0; r < count; ++r) {
        const Instr& in = p.code[r];
        if (IsReduction(in.op) && p.level[r] == pass + 1)
          std::fill(partials + r * kPartials, partials + (r + 1) * kPartials, in.op == Op::kReduceSum ? -0.0 : -double(INFINITY));
      }
      for (int64_t j0 = 0; j0 < p.row; j0 += kBlock) {
        int64_t n = std::min(kBlock, p.row - j0), first = row * p.row + j0;
        for (size_t r = 0; r < count; ++r) {
          const Instr& in = p.code[r];
          if (in.op == Op::kRow) continue;
          if (in.op == Op::kStore) {
            if (!last || in.d != 0) continue;
            const float* v = regs + size_t(in.b) * size_t(kBlock);
            for (int64_t i = 0; i < n; ++i) StoreOne(DataType(in.c), outputs[in.a], first + i, v[i]);
            continue;
          }
          if (p.level[r] > pass + 1 || (p.level[r] == pass + 1 && !IsReduction(in.op))) continue;
          if (IsReduction(in.op)) {
            float* y = regs + r * size_t(kBlock);
            if (p.level[r] <= pass) {
              std::fill(y, y + n, row_value[r]);
              continue;
            }
            const float* x = regs + size_t(in.a) * size_t(kBlock);
            double* acc = partials + r * kPartials;
            for (int64_t i = 0; i < n; ++i) {
              double& a = acc[(j0 + i) % kPartials];
              a = in.op == Op::kReduceSum ? a + double(x[i]) : double(Apply(Op::kMax, float(a), x[i], 0));
            }
            continue;
          }
          Step(p, in, r, regs, inputs, first, n);
        }
      }
      for (size_t r = 0; r < count; ++r) {
        const Instr& in = p.code[r];
        if (!IsReduction(in.op) || p.level[r] != pass + 1) continue;
        double* acc = partials + r * kPartials;
        for (int w = kPartials / 2; w >= 1; w /= 2)
          for (int l = 0; l < w; ++l)
            acc[l] = in.op == Op::kReduceSum ? acc[l] + acc[l + w] : double(Apply(Op::kMax, float(acc[l]), float(acc[l + w]), 0));
        row_value[r] = float(acc[0]);
      }
    }
    // Row stores: per-row registers after the last pass (every level is known: evaluate the
    // per-row registers once more for one element).
    for (size_t r = 0; r < count; ++r) {
      const Instr& in = p.code[r];
      if (in.op == Op::kRow || in.op == Op::kStore || !p.per_row[r]) continue;
      if (IsReduction(in.op)) regs[r * size_t(kBlock)] = row_value[r];
      else Step(p, in, r, regs, inputs, row * p.row, 1);
    }
    for (const Instr& in : p.code)
      if (in.op == Op::kStore && in.d != 0) StoreOne(DataType(in.c), outputs[in.a], row, regs[size_t(in.b) * size_t(kBlock)]);
  }
}

}  // namespace

void Evaluate(const Program& p, const void* const* inputs, void* const* outputs, int64_t begin, int64_t end, float* regs) {
  if (p.row) return EvaluateRows(p, inputs, outputs, begin, end, regs);
  for (int64_t b0 = begin; b0 < end; b0 += kBlock) {
    int64_t n = std::min(kBlock, end - b0);
    for (size_t r = 0; r < p.code.size(); ++r) {
      const Instr& in = p.code[r];
      if (in.op == Op::kStore) {
        const float* v = regs + size_t(in.b) * size_t(kBlock);
        for (int64_t i = 0; i < n; ++i) StoreOne(DataType(in.c), outputs[in.a], b0 + i, v[i]);
        continue;
      }
      Step(p, in, r, regs, inputs, b0, n);
    }
  }
}

}  // namespace precis::rt::fused
