// LLVM IR for the arithmetic of fused elementwise programs (runtime/kernels/fused_program.h),
// shared by the x86-64 (cpu_codegen.cc) and NVPTX (nvptx_codegen.cc) emitters: the same IEEE
// operations in the same order on both targets, on scalars or on vectors of floats.
#pragma once

#include <cstdint>
#include <functional>

#include <string>
#include <vector>

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Module.h>
#include <llvm/Target/TargetMachine.h>

#include "precis/status.h"
#include "runtime/kernels/fused_program.h"

namespace precis::codegen {

// approx_math.h's operation policy emitting LLVM IR: the transcendentals become the same IEEE
// operations, in the same order, as the interpreter's float evaluation. `f` and `i` are the float
// and int32 types of the code being emitted: scalars, or vectors (constants become splats).
struct LlvmOps {
  using V = llvm::Value*;
  using B = llvm::Value*;
  using I = llvm::Value*;
  llvm::IRBuilder<>& b;
  llvm::Type* f;
  llvm::Type* i;
  V c(float v) { return llvm::ConstantFP::get(f, double(v)); }
  V add(V x, V y) { return b.CreateFAdd(x, y); }
  V sub(V x, V y) { return b.CreateFSub(x, y); }
  V mul(V x, V y) { return b.CreateFMul(x, y); }
  V div(V x, V y) { return b.CreateFDiv(x, y); }
  V neg(V x) { return b.CreateFNeg(x); }
  B lt(V x, V y) { return b.CreateFCmpOLT(x, y); }
  B gt(V x, V y) { return b.CreateFCmpOGT(x, y); }
  B isnan(V x) { return b.CreateFCmpUNO(x, x); }
  V sel(B c, V x, V y) { return b.CreateSelect(c, x, y); }
  I bits(V x) { return b.CreateBitCast(x, i); }
  V from_bits(I x) { return b.CreateBitCast(x, f); }
  I ci(int32_t v) { return llvm::ConstantInt::get(i, uint64_t(uint32_t(v))); }
  I iadd(I x, I y) { return b.CreateAdd(x, y); }
  I isub(I x, I y) { return b.CreateSub(x, y); }
  I ashr(I x, int k) { return b.CreateAShr(x, uint64_t(k)); }
  I shl(I x, int k) { return b.CreateShl(x, uint64_t(k)); }
};

// float (or float vector) -> BF16 bits (i16 of the same lanes), round to nearest even; NaN -> a
// quiet NaN keeping the sign and the top of the payload (runtime/base/half.h's FloatToBf16).
llvm::Value* FloatToBf16Bits(llvm::IRBuilder<>& b, llvm::Value* v);
// BF16 bits (i16 or i16 vector) -> float (exact).
llvm::Value* Bf16BitsToFloat(llvm::IRBuilder<>& b, llvm::Value* bits);

// The value of an arithmetic instruction (every op but Load, Const, Round, Store, Row and the
// reductions) on operands
// `a` and `b` (registers; b is null for unary ops), `k(index)` giving the program's constant
// `index` as a value of a's type.
llvm::Value* EmitArithmetic(llvm::IRBuilder<>& b, const rt::fused::Instr& in, llvm::Value* a, llvm::Value* bv,
                            const std::function<llvm::Value*(int64_t)>& k);

// Row programs (both targets). The first element along the row of each along-the-row load:
// row_base % count, row_base = row * n (null for the other instructions).
std::vector<llvm::Value*> AlongRowStarts(llvm::IRBuilder<>& b, const rt::fused::Program& p, llvm::Value* row_base);
// The per-row registers of `level` that are not reductions, as scalars into `scalar` (whose
// reductions the caller has set): a per-row load reads element ((row_base / inner) % count)
// through `load(instruction, index)`, Round goes through `round`, constants through `k`.
void EmitRowRegisters(llvm::IRBuilder<>& b, const rt::fused::Program& p, int level, llvm::Value* row_base, std::vector<llvm::Value*>& scalar,
                      const std::function<llvm::Value*(const rt::fused::Instr&, llvm::Value*)>& load,
                      const std::function<llvm::Value*(DataType, llvm::Value*)>& round, const std::function<llvm::Value*(int64_t)>& k);

// Verifies `mod`, optimizes it at O3 for `tm` and verifies the result (errors name `what`).
Status VerifyAndOptimize(llvm::Module& mod, llvm::TargetMachine& tm, const std::string& what);
// `mod`'s code for `tm`: a relocatable object, or assembly text (PTX) when `assembly`.
StatusOr<std::vector<uint8_t>> EmitCode(llvm::Module& mod, llvm::TargetMachine& tm, bool assembly, const std::string& what);
// `mod` as LLVM IR text.
std::string ModuleText(const llvm::Module& mod);

}  // namespace precis::codegen
