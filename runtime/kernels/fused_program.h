// A fused elementwise kernel's description (the `FusedElementwise` step; compiler pass
// passes/fuse_elementwise.cc, reference kernel runtime/cpu/kernels/fused.cc, generated code
// compiler/codegen/). One straight-line program runs per element of the output: every value is an
// FP32 register; loads widen FP32/FP16/BF16 inputs (each the output's shape, or broadcast to it
// periodically: element i of the output reads input element (i / inner) % count, which covers one
// element, a per-channel vector and any one contiguous block of the output's dims); arithmetic is IEEE single precision in program order (no contraction, no
// reassociation); Round stores a value through FP16 or BF16 and reads it back, so that a fused
// chain rounds wherever the unfused steps stored 16 bits; Store rounds to the output's dtype
// (round to nearest even). Register r is the value of instruction r.
//
// Row programs (instruction 0 is Row n): the elements form rows of n consecutive elements, and
// ReduceSum/ReduceMax give a register the value of a whole row (softmax, normalizations, trailing
// reductions with their elementwise neighbours). Every register is then either per element or
// per row (constants, loads that read one element per row, reductions, and arithmetic on such
// registers only), and has a level: 0 for loads and constants, one more than its operand for a
// reduction, the highest of its operands otherwise. A row runs in passes 0..P-1 over its
// elements: pass k evaluates the per-element registers of level <= k (recomputed in every pass:
// the same operations give the same bits) and accumulates the reductions of level k + 1; element
// stores happen in the last pass, row stores (one value per row) after it. A reduction's order is
// fixed, so that the interpreter and every target compute the same bits: element j goes into
// partial j % 16 in increasing j, starting from -0 (sum) or -inf (max), and the 16 partials
// combine as p[l] = op(p[l], p[l + w]) for w = 8, 4, 2, 1. Sums run in double (each element
// widened exactly, the total rounded to FP32 once), so their error does not grow with the row;
// maxima in FP32. Loads in a row program read element
// e = row * n + j whole (inner = count = 0), once per row (count 1, or inner a multiple of n), or
// along the row (inner 1, count a multiple of n).
//
// Encoding in the step: attribute `code` (ints, five per instruction: op, a, b, c, d), `consts`
// (floats), `entry` (string: the generated function, "fused_" + 16 hex digits of Hash()).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "precis/status.h"
#include "precis/types.h"
#include "runtime/exec/step.h"

namespace precis::rt::fused {

enum class Op : int64_t {
  kLoad = 0,        // a: input index, b: input dtype (ONNX code); c = d = 0: element i; else
                    // c = inner >= 1, d = count >= 1: element (i / inner) % count
  kConst = 1,       // a: index into consts
  kAdd = 2,         // a, b: registers
  kSub = 3,
  kMul = 4,
  kDiv = 5,
  kMax = 6,         // b > a || b != b ? b : a (the Max kernel: a NaN in b wins)
  kMin = 7,         // b < a || b != b ? b : a
  kNeg = 8,         // a: register
  kAbs = 9,
  kSqrt = 10,
  kReciprocal = 11, // 1 / a
  kRelu = 12,       // a > 0 ? a : 0 (NaN gives 0, as the Relu kernel)
  kLeakyRelu = 13,  // a: register, b: const index of alpha; a < 0 ? alpha * a : a
  kClipLow = 14,    // a: register, b: const index; a < lo ? lo : a
  kClipHigh = 15,   // a > hi ? hi : a
  kRound = 16,      // a: register, b: dtype (FLOAT16 or BFLOAT16)
  kStore = 17,      // a: output index, b: register, c: output dtype; d: 0 stores every element,
                    // else (row programs) one value per row, the output having the trailing
                    // d > 0 dims of the frame as 1s or, for d < 0, the frame without its -d last dims
  // Transcendentals (a: register): the approximations of runtime/kernels/approx_math.h, the CPU
  // fast kernels' functions operation for operation.
  kExp = 18,
  kErf = 19,
  kTanh = 20,
  kSigmoid = 21,
  kGeluErf = 22,    // 0.5 a (1 + erf(a / sqrt 2))
  kGeluTanh = 23,   // 0.5 a (1 + tanh(sqrt(2 / pi) (a + 0.044715 a^3)))
  kPRelu = 24,      // a, b: registers; a < 0 ? b * a : a (the PRelu kernel, b the slope)
  kRow = 25,        // instruction 0 only: a = the row length n >= 1 (a row program); no value
  kReduceSum = 26,  // a: a per-element register; the row's sum (fixed order, above)
  kReduceMax = 27,  // the row's max, by kMax's rule (a NaN wins and stays)
};
constexpr int64_t kNumOps = 28;
constexpr int kPartials = 16;  // partial accumulators of a reduction
constexpr int kMaxPasses = 8;   // passes over a row
constexpr size_t kMaxInstructions = 256;
constexpr size_t kMaxOperands = 16;  // inputs and outputs each

struct Instr {
  Op op = Op::kLoad;
  int64_t a = 0, b = 0, c = 0, d = 0;
};
constexpr size_t kFields = 5;          // ints per encoded instruction
constexpr int64_t kMaxPeriod = int64_t(1) << 40;  // bound on a load's inner and count

struct Program {
  std::vector<Instr> code;
  std::vector<float> consts;
  int num_inputs = 0, num_outputs = 0;  // every input is loaded and every output stored once
  // Row programs (set by Decode): the row length (0: an elementwise program), per register its
  // level and whether it is per row, the number of passes, and an input read whole (its element
  // count is the frame's: rows = its count / row).
  int64_t row = 0;
  std::vector<int> level;
  std::vector<bool> per_row;
  int passes = 1;
  int frame_input = -1;

  std::vector<int64_t> Encode() const;
  // Content hash of the encoded program and its constants (names its generated function).
  uint64_t Hash() const;
  std::string EntryName() const;
  // The dtype of input i (from its Load), whether it is broadcast, its load (Load instruction),
  // and output o's dtype.
  DataType InputDtype(int i) const;
  bool InputBroadcast(int i) const;
  const Instr* InputLoad(int i) const;
  DataType OutputDtype(int o) const;
  // Output o's Store field d: 0 for an element output, else its trailing row dims (kStore).
  int64_t OutputRowDims(int o) const;
  // Whether output `output` may take input `input`'s bytes: the input is read element for element
  // (not broadcast), the output is written element for element, and both have one element size.
  // (Every load precedes every store, Decode; a row program stores only in its last pass, after
  // which nothing reads the row again.) The memory planner uses (0, 0); a training plan's
  // optimizer step also writes its state in place over the inputs it read (plan_emitter.cc).
  bool InPlaceOk(int input = 0, int output = 0) const;
};

// Checks and decodes `code`/`consts`: known ops, registers defined before use and not a Store,
// loads, consts and stores in range, dtypes FP32/FP16/BF16, inputs 0..n-1 each loaded exactly once
// and outputs 0..m-1 each stored exactly once (n, m <= kMaxOperands), no load after a store; row
// programs: Row first and only there, loads of the three kinds, an input read whole, reductions
// of per-element registers, row stores of per-row registers (elementwise programs store every
// element). Errors say what is wrong.
StatusOr<Program> Decode(const std::vector<int64_t>& code, const std::vector<float>& consts);

// The operation of one arithmetic instruction on FP32 values (also the definition the code
// generator follows); `k` is the instruction's constant for LeakyRelu and the clips.
float Apply(Op op, float a, float b, float k);
// Rounds through a 16-bit dtype (FP32: unchanged).
float RoundTo(DataType dtype, float v);
const char* OpName(Op op);
bool IsUnary(Op op);
bool IsBinary(Op op);
bool IsReduction(Op op);  // ReduceSum, ReduceMax

// Decodes a FusedElementwise step's program and checks its tensors against it: one tensor per
// program input and output, the declared dtypes, every output of one element count N, every input
// of N elements with the outputs' dims or, where broadcast, of `count` elements (row programs:
// inputs read whole and element outputs have one frame's dims, of N elements, N a multiple of the
// row; row outputs N / row elements); the `entry` attribute,
// when present, must name the program (a plan whose attributes were changed is refused); output 0
// may share input 0's bytes only where InPlaceOk().
StatusOr<Program> DecodeStep(const KernelArgs& args);

// The units a step's work divides into: elements of output 0, or rows for row programs.
int64_t WorkUnits(const Program& p, const KernelArgs& args);

// The reference evaluation of units [begin, end) (elements; rows of a row program): inputs[i]
// and outputs[o] point at the tensors' data (dtypes as the program declares). Runs in blocks
// through `regs` (at least ScratchFloats(p) floats).
constexpr int64_t kBlock = 256;
size_t ScratchFloats(const Program& p);
void Evaluate(const Program& p, const void* const* inputs, void* const* outputs, int64_t begin, int64_t end, float* regs);

}  // namespace precis::rt::fused
