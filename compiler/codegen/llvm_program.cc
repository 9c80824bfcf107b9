// Shared LLVM IR of fused-program arithmetic (see llvm_program.h).
#include "compiler/codegen/llvm_program.h"

#include <llvm/ADT/SmallVector.h>
#include <llvm/Analysis/CGSCCPassManager.h>
#include <llvm/Analysis/LoopAnalysisManager.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/PassManager.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/raw_ostream.h>

#include "runtime/kernels/approx_math.h"

namespace precis::codegen {
namespace {

// `t`'s int32 (or int32 vector) counterpart of the same lanes.
llvm::Type* Int32Like(llvm::IRBuilder<>& b, llvm::Type* t) {
  if (auto* v = llvm::dyn_cast<llvm::FixedVectorType>(t)) return llvm::FixedVectorType::get(b.getInt32Ty(), v->getNumElements());
  return b.getInt32Ty();
}
llvm::Type* Int16Like(llvm::IRBuilder<>& b, llvm::Type* t) {
  if (auto* v = llvm::dyn_cast<llvm::FixedVectorType>(t)) return llvm::FixedVectorType::get(b.getInt16Ty(), v->getNumElements());
  return b.getInt16Ty();
}
llvm::Type* FloatLike(llvm::IRBuilder<>& b, llvm::Type* t) {
  if (auto* v = llvm::dyn_cast<llvm::FixedVectorType>(t)) return llvm::FixedVectorType::get(b.getFloatTy(), v->getNumElements());
  return b.getFloatTy();
}

}  // namespace

llvm::Value* FloatToBf16Bits(llvm::IRBuilder<>& b, llvm::Value* v) {
  llvm::Type* i32 = Int32Like(b, v->getType());
  llvm::Value* u = b.CreateBitCast(v, i32);
  llvm::Value* lsb = b.CreateAnd(b.CreateLShr(u, 16), llvm::ConstantInt::get(i32, 1));
  llvm::Value* rounded = b.CreateLShr(b.CreateAdd(b.CreateAdd(u, llvm::ConstantInt::get(i32, 0x7fff)), lsb), 16);
  llvm::Value* nan = b.CreateOr(b.CreateLShr(u, 16), llvm::ConstantInt::get(i32, 0x40));
  llvm::Value* is_nan = b.CreateFCmpUNO(v, v);
  return b.CreateTrunc(b.CreateSelect(is_nan, nan, rounded), Int16Like(b, v->getType()));
}

llvm::Value* Bf16BitsToFloat(llvm::IRBuilder<>& b, llvm::Value* bits) {
  llvm::Type* t = bits->getType();
  return b.CreateBitCast(b.CreateShl(b.CreateZExt(bits, Int32Like(b, t)), 16), FloatLike(b, t));
}

llvm::Value* EmitArithmetic(llvm::IRBuilder<>& b, const rt::fused::Instr& in, llvm::Value* a, llvm::Value* bv,
                            const std::function<llvm::Value*(int64_t)>& k) {
  namespace fz = rt::fused;
  llvm::Type* f = a->getType();
  llvm::Value* zero = llvm::ConstantFP::get(f, 0.0);
  LlvmOps ops{b, f, Int32Like(b, f)};
  switch (in.op) {
    case fz::Op::kAdd: return b.CreateFAdd(a, bv);
    case fz::Op::kSub: return b.CreateFSub(a, bv);
    case fz::Op::kMul: return b.CreateFMul(a, bv);
    case fz::Op::kDiv: return b.CreateFDiv(a, bv);
    case fz::Op::kMax: return b.CreateSelect(b.CreateOr(b.CreateFCmpOGT(bv, a), b.CreateFCmpUNO(bv, bv)), bv, a);
    case fz::Op::kMin: return b.CreateSelect(b.CreateOr(b.CreateFCmpOLT(bv, a), b.CreateFCmpUNO(bv, bv)), bv, a);
    case fz::Op::kNeg: return b.CreateFNeg(a);
    case fz::Op::kAbs: return b.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, a);
    case fz::Op::kSqrt: return b.CreateUnaryIntrinsic(llvm::Intrinsic::sqrt, a);
    case fz::Op::kReciprocal: return b.CreateFDiv(llvm::ConstantFP::get(f, 1.0), a);
    case fz::Op::kRelu: return b.CreateSelect(b.CreateFCmpOGT(a, zero), a, zero);
    case fz::Op::kLeakyRelu: return b.CreateSelect(b.CreateFCmpOLT(a, zero), b.CreateFMul(k(in.b), a), a);
    case fz::Op::kClipLow: return b.CreateSelect(b.CreateFCmpOLT(a, k(in.b)), k(in.b), a);
    case fz::Op::kClipHigh: return b.CreateSelect(b.CreateFCmpOGT(a, k(in.b)), k(in.b), a);
    case fz::Op::kExp: return rt::approx::Exp(ops, a);
    case fz::Op::kErf: return rt::approx::Erf(ops, a);
    case fz::Op::kTanh: return rt::approx::Tanh(ops, a);
    case fz::Op::kSigmoid: return rt::approx::Sigmoid(ops, a);
    case fz::Op::kGeluErf: return rt::approx::GeluErf(ops, a);
    case fz::Op::kGeluTanh: return rt::approx::GeluTanh(ops, a);
    case fz::Op::kPRelu: return b.CreateSelect(b.CreateFCmpOLT(a, zero), b.CreateFMul(bv, a), a);
    case fz::Op::kLoad:
    case fz::Op::kConst:
    case fz::Op::kRound:
    case fz::Op::kStore:
    case fz::Op::kRow:
    case fz::Op::kReduceSum:
    case fz::Op::kReduceMax: break;
  }
  return a;
}

std::vector<llvm::Value*> AlongRowStarts(llvm::IRBuilder<>& b, const rt::fused::Program& p, llvm::Value* row_base) {
  std::vector<llvm::Value*> along(p.code.size(), nullptr);
  for (size_t r = 0; r < p.code.size(); ++r) {
    const rt::fused::Instr& in = p.code[r];
    if (in.op == rt::fused::Op::kLoad && in.c != 0 && !p.per_row[r]) along[r] = b.CreateURem(row_base, b.getInt64(uint64_t(in.d)));
  }
  return along;
}

void EmitRowRegisters(llvm::IRBuilder<>& b, const rt::fused::Program& p, int level, llvm::Value* row_base, std::vector<llvm::Value*>& scalar,
                      const std::function<llvm::Value*(const rt::fused::Instr&, llvm::Value*)>& load,
                      const std::function<llvm::Value*(DataType, llvm::Value*)>& round, const std::function<llvm::Value*(int64_t)>& k) {
  namespace fz = rt::fused;
  for (size_t r = 0; r < p.code.size(); ++r) {
    const fz::Instr& in = p.code[r];
    if (!p.per_row[r] || fz::IsReduction(in.op) || p.level[r] != level || in.op == fz::Op::kStore || in.op == fz::Op::kRow) continue;
    llvm::Value* a = in.a >= 0 && size_t(in.a) < r ? scalar[size_t(in.a)] : nullptr;
    switch (in.op) {
      case fz::Op::kLoad:
        scalar[r] = load(in, in.d == 1 ? b.getInt64(0) : b.CreateURem(b.CreateUDiv(row_base, b.getInt64(uint64_t(in.c))), b.getInt64(uint64_t(in.d))));
        break;
      case fz::Op::kConst: scalar[r] = k(in.a); break;
      case fz::Op::kRound: scalar[r] = round(DataType(in.b), a); break;
      default: scalar[r] = EmitArithmetic(b, in, a, fz::IsBinary(in.op) ? scalar[size_t(in.b)] : nullptr, k); break;
    }
  }
}

Status VerifyAndOptimize(llvm::Module& mod, llvm::TargetMachine& tm, const std::string& what) {
  std::string errors;
  llvm::raw_string_ostream es(errors);
  if (llvm::verifyModule(mod, &es)) return Internal("generated " + what + " LLVM IR fails verification: " + es.str());
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PassBuilder pb(&tm);
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);
  llvm::ModulePassManager mpm = pb.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O3);
  mpm.run(mod, mam);
  if (llvm::verifyModule(mod, &es)) return Internal("optimized " + what + " LLVM IR fails verification: " + es.str());
  return Status::Ok();
}

StatusOr<std::vector<uint8_t>> EmitCode(llvm::Module& mod, llvm::TargetMachine& tm, bool assembly, const std::string& what) {
  llvm::SmallVector<char, 0> buffer;
  llvm::raw_svector_ostream os(buffer);
  llvm::legacy::PassManager pm;
  if (tm.addPassesToEmitFile(pm, os, nullptr, assembly ? llvm::CGFT_AssemblyFile : llvm::CGFT_ObjectFile))
    return Internal("LLVM cannot emit code for " + what);
  pm.run(mod);
  return std::vector<uint8_t>(buffer.begin(), buffer.end());
}

std::string ModuleText(const llvm::Module& mod) {
  std::string text;
  llvm::raw_string_ostream os(text);
  mod.print(os, nullptr);
  return os.str();
}

}  // namespace precis::codegen
