// Fused elementwise programs to PTX (and cubin) through LLVM 16 (see nvptx_codegen.h).
#include "compiler/codegen/nvptx_codegen.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <memory>
#include <mutex>
#include <regex>
#include <set>
#include <sstream>

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/IntrinsicsNVPTX.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/Target/TargetOptions.h>

#include "compiler/codegen/llvm_program.h"

extern "C" {
void LLVMInitializeNVPTXTargetInfo();
void LLVMInitializeNVPTXTarget();
void LLVMInitializeNVPTXTargetMC();
void LLVMInitializeNVPTXAsmPrinter();
}

extern char** environ;

namespace precis::codegen {
namespace {

namespace fz = rt::fused;
constexpr const char* kTriple = "nvptx64-nvidia-cuda";
constexpr unsigned kGlobal = 1;  // NVPTX address space of global memory

StatusOr<std::unique_ptr<llvm::TargetMachine>> MakeTargetMachine(const std::string& sm) {
  static std::once_flag once;
  std::call_once(once, [] {
    LLVMInitializeNVPTXTargetInfo();
    LLVMInitializeNVPTXTarget();
    LLVMInitializeNVPTXTargetMC();
    LLVMInitializeNVPTXAsmPrinter();
  });
  std::string error;
  const llvm::Target* target = llvm::TargetRegistry::lookupTarget(kTriple, error);
  if (!target) return Internal("LLVM has no NVPTX target: " + error);
  llvm::TargetOptions options;  // no fast-math: IEEE arithmetic, no FMA contraction (add.rn/mul.rn)
  options.AllowFPOpFusion = llvm::FPOpFusion::Strict;
  // PTX ISA 7.8: the newest LLVM 16 writes, needed for sm_90.
  std::unique_ptr<llvm::TargetMachine> tm(
      target->createTargetMachine(kTriple, sm, "+ptx78", options, std::nullopt, std::nullopt, llvm::CodeGenOpt::Aggressive));
  if (!tm) return Internal("LLVM cannot make an NVPTX target machine for " + sm);
  return tm;
}

class Emitter {
 public:
  Emitter(llvm::LLVMContext& ctx, llvm::Module& mod) : ctx_(ctx), mod_(mod), b_(ctx) {}

  void Emit(const fz::Program& p) {
    llvm::Type* ptr = llvm::PointerType::get(ctx_, kGlobal);
    llvm::Type* i64 = b_.getInt64Ty();
    std::vector<llvm::Type*> params(size_t(p.num_inputs + p.num_outputs), ptr);
    params.push_back(i64);
    auto* f = llvm::Function::Create(llvm::FunctionType::get(b_.getVoidTy(), params, false), llvm::GlobalValue::ExternalLinkage,
                                     p.EntryName(), mod_);
    f->setCallingConv(llvm::CallingConv::PTX_Kernel);
    f->addFnAttr(llvm::Attribute::NoUnwind);
    f->addFnAttr("no-trapping-math", "true");
    // Input 0 and output 0 may be one tensor (InPlaceOk); every other pointer is its own.
    const bool shared = p.InPlaceOk();
    for (int a = 0; a < p.num_inputs + p.num_outputs; ++a) {
      bool is_input = a < p.num_inputs;
      if (shared && (a == 0 || a == p.num_inputs)) continue;
      f->addParamAttr(unsigned(a), llvm::Attribute::NoAlias);
      if (is_input) f->addParamAttr(unsigned(a), llvm::Attribute::ReadOnly);
    }
    if (p.row) return EmitRows(p, f);
    llvm::Value* count = f->getArg(unsigned(p.num_inputs + p.num_outputs));

    // Blocks: the vector loop over quads of elements (when every operand read or written element
    // for element is aligned for a 4-element access), then the scalar loop over what is left (or
    // over everything).
    auto* entry = llvm::BasicBlock::Create(ctx_, "entry", f);
    auto* vector_check = llvm::BasicBlock::Create(ctx_, "vector.check", f);
    auto* vector_loop = llvm::BasicBlock::Create(ctx_, "vector.loop", f);
    auto* vector_done = llvm::BasicBlock::Create(ctx_, "vector.done", f);
    auto* tail = llvm::BasicBlock::Create(ctx_, "tail", f);
    auto* loop = llvm::BasicBlock::Create(ctx_, "loop", f);
    auto* done = llvm::BasicBlock::Create(ctx_, "done", f);
    b_.SetInsertPoint(entry);
    auto sreg = [&](llvm::Intrinsic::ID id) { return b_.CreateZExt(b_.CreateIntrinsic(id, {}, {}), i64); };
    llvm::Value* ntid = sreg(llvm::Intrinsic::nvvm_read_ptx_sreg_ntid_x);
    llvm::Value* first = b_.CreateAdd(b_.CreateMul(sreg(llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_x), ntid),
                                      sreg(llvm::Intrinsic::nvvm_read_ptx_sreg_tid_x), "first", true, true);
    llvm::Value* stride = b_.CreateMul(sreg(llvm::Intrinsic::nvvm_read_ptx_sreg_nctaid_x), ntid, "stride", true, true);
    // Every element-for-element operand aligned for kLanes elements (16 bytes of FP32, 8 of FP16/BF16).
    llvm::Value* aligned = b_.getTrue();
    auto require = [&](llvm::Value* pointer, DataType dtype) {
      const uint64_t mask = uint64_t(kLanes * DataTypeSize(dtype)) - 1;
      llvm::Value* low = b_.CreateAnd(b_.CreatePtrToInt(pointer, i64), llvm::ConstantInt::get(i64, mask));
      aligned = b_.CreateAnd(aligned, b_.CreateICmpEQ(low, llvm::ConstantInt::get(i64, 0)));
    };
    for (const fz::Instr& in : p.code) {
      if (in.op == fz::Op::kLoad && in.c == 0) require(f->getArg(unsigned(in.a)), DataType(in.b));
      if (in.op == fz::Op::kStore) require(f->getArg(unsigned(p.num_inputs + in.a)), DataType(in.c));
    }
    b_.CreateCondBr(aligned, vector_check, tail);

    b_.SetInsertPoint(vector_check);
    llvm::Value* quads = b_.CreateLShr(count, 2, "quads");
    b_.CreateCondBr(b_.CreateICmpSLT(first, quads), vector_loop, vector_done);

    b_.SetInsertPoint(vector_loop);
    llvm::PHINode* q = b_.CreatePHI(i64, 2, "q");
    q->addIncoming(first, vector_check);
    width_ = kLanes;
    std::vector<llvm::Value*> regs;
    llvm::Value* quad_first = b_.CreateShl(q, 2, "e", true, true);
    for (const fz::Instr& in : p.code) regs.push_back(Instruction(p, in, f, quad_first, regs));
    llvm::Value* q_next = b_.CreateAdd(q, stride, "q.next", true, true);
    q->addIncoming(q_next, b_.GetInsertBlock());
    b_.CreateCondBr(b_.CreateICmpSLT(q_next, quads), vector_loop, vector_done);

    // The last count % 4 elements, one per thread.
    b_.SetInsertPoint(vector_done);
    llvm::Value* rest = b_.CreateAdd(b_.CreateShl(quads, 2), first, "rest", true, true);
    b_.CreateBr(tail);

    b_.SetInsertPoint(tail);
    llvm::PHINode* start = b_.CreatePHI(i64, 2, "start");
    start->addIncoming(first, entry);
    start->addIncoming(rest, vector_done);
    b_.CreateCondBr(b_.CreateICmpSLT(start, count), loop, done);

    b_.SetInsertPoint(loop);
    llvm::PHINode* i = b_.CreatePHI(i64, 2, "i");
    i->addIncoming(start, tail);
    width_ = 0;
    regs.clear();
    for (const fz::Instr& in : p.code) regs.push_back(Instruction(p, in, f, i, regs));
    llvm::Value* next = b_.CreateAdd(i, stride, "next", true, true);
    i->addIncoming(next, b_.GetInsertBlock());
    b_.CreateCondBr(b_.CreateICmpSLT(next, count), loop, done);
    b_.SetInsertPoint(done);
    b_.CreateRetVoid();
  }

 private:
  // A row program (fused_program.h): a half-warp (16 lanes) per row, rows strided over the grid
  // (the `count` argument is the number of rows). Lane l takes the row's elements l, l + 16,
  // l + 32... in order, so its accumulator is exactly partial l of the program's fixed order; the
  // partials combine by shfl.sync.down within the half-warp (p[l] op= p[l + w] for w = 8, 4, 2,
  // 1) and lane 0's total goes to the 16 lanes (shfl.sync.idx): the interpreter's and the x86
  // code's operations in their order. Per-row registers are computed by every lane; lane 0
  // writes the row outputs.
  void EmitRows(const fz::Program& p, llvm::Function* f) {
    llvm::Type* i64 = b_.getInt64Ty();
    llvm::Type* i32 = b_.getInt32Ty();
    auto c64 = [&](int64_t v) { return llvm::ConstantInt::get(i64, uint64_t(v)); };
    const int64_t n = p.row;
    const size_t count = p.code.size();
    auto is_reduce = [&](size_t r) { return fz::IsReduction(p.code[r].op); };
    width_ = 0;
    llvm::Value* rows = f->getArg(unsigned(p.num_inputs + p.num_outputs));
    auto* entry = llvm::BasicBlock::Create(ctx_, "entry", f);
    auto* row_block = llvm::BasicBlock::Create(ctx_, "row", f);
    auto* done = llvm::BasicBlock::Create(ctx_, "done", f);
    b_.SetInsertPoint(entry);
    auto sreg = [&](llvm::Intrinsic::ID id) { return b_.CreateZExt(b_.CreateIntrinsic(id, {}, {}), i64); };
    llvm::Value* ntid = sreg(llvm::Intrinsic::nvvm_read_ptx_sreg_ntid_x);
    llvm::Value* thread = b_.CreateAdd(b_.CreateMul(sreg(llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_x), ntid),
                                       sreg(llvm::Intrinsic::nvvm_read_ptx_sreg_tid_x), "thread", true, true);
    llvm::Value* lane = b_.CreateAnd(thread, c64(fz::kPartials - 1), "lane");
    llvm::Value* first = b_.CreateLShr(thread, 4, "first_row");
    llvm::Value* stride = b_.CreateLShr(b_.CreateMul(sreg(llvm::Intrinsic::nvvm_read_ptx_sreg_nctaid_x), ntid), 4, "row_stride");
    // The half-warp's 16 lanes of the warp (blocks are multiples of 32 threads).
    llvm::Value* members = b_.CreateShl(b_.getInt32(0xffff), b_.CreateAnd(b_.CreateTrunc(thread, i32), b_.getInt32(16)), "members");
    llvm::Value* segment = b_.getInt32(((32 - fz::kPartials) << 8) | 31);  // shfl's c: 16-lane segments
    b_.CreateCondBr(b_.CreateICmpULT(first, rows), row_block, done);

    b_.SetInsertPoint(row_block);
    llvm::PHINode* row = b_.CreatePHI(i64, 2, "row");
    row->addIncoming(first, entry);
    llvm::Value* row_base = b_.CreateMul(row, c64(n), "row.base", true, true);
    std::vector<llvm::Value*> along = AlongRowStarts(b_, p, row_base);
    std::vector<llvm::Value*> scalar(count, nullptr);  // per-row registers
    auto k = [&](int64_t index) { return F32(p.consts[size_t(index)]); };
    auto row_registers = [&](int level) {
      EmitRowRegisters(
          b_, p, level, row_base, scalar, [&](const fz::Instr& in, llvm::Value* index) { return Load(DataType(in.b), f->getArg(unsigned(in.a)), index); },
          [&](DataType dtype, llvm::Value* v) { return RoundTo(dtype, v); }, k);
    };
    auto shuffle = [&](llvm::Intrinsic::ID id, llvm::Value* v, llvm::Value* lane_arg) {
      return b_.CreateIntrinsic(id, {}, {members, v, lane_arg, segment});
    };
    for (int pass = 0; pass < p.passes; ++pass) {
      const bool last = pass == p.passes - 1;
      row_registers(pass);
      std::vector<size_t> reductions;
      for (size_t r = 0; r < count; ++r)
        if (is_reduce(r) && p.level[r] == pass + 1) reductions.push_back(r);
      auto op = [&](size_t r, llvm::Value* x, llvm::Value* y) {
        return p.code[r].op == fz::Op::kReduceSum ? b_.CreateFAdd(x, y) : EmitArithmetic(b_, {fz::Op::kMax}, x, y, k);
      };
      // The loop over the lane's elements j = lane, lane + 16, ... < n.
      llvm::BasicBlock* before = b_.GetInsertBlock();
      auto* loop = llvm::BasicBlock::Create(ctx_, "pass" + std::to_string(pass), f, done);
      auto* after = llvm::BasicBlock::Create(ctx_, "pass" + std::to_string(pass) + ".end", f, done);
      std::vector<llvm::Value*> init;
      // Sums accumulate in double (each FP32 element widened exactly), maxima in FP32.
      for (size_t r : reductions)
        init.push_back(p.code[r].op == fz::Op::kReduceSum ? llvm::ConstantFP::get(b_.getDoubleTy(), -0.0) : F32(-INFINITY));
      b_.CreateCondBr(b_.CreateICmpULT(lane, c64(n)), loop, after);
      b_.SetInsertPoint(loop);
      llvm::PHINode* j = b_.CreatePHI(i64, 2, "j");
      j->addIncoming(lane, before);
      std::vector<llvm::PHINode*> acc;
      for (llvm::Value* v : init) {
        acc.push_back(b_.CreatePHI(v->getType(), 2));
        acc.back()->addIncoming(v, before);
      }
      llvm::Value* element = b_.CreateAdd(row_base, j, "", true, true);
      std::vector<llvm::Value*> regs(count, nullptr);
      std::vector<llvm::Value*> next_acc(acc.begin(), acc.end());
      auto operand = [&](int64_t reg) { return p.per_row[size_t(reg)] ? scalar[size_t(reg)] : regs[size_t(reg)]; };
      for (size_t r = 0; r < count; ++r) {
        const fz::Instr& in = p.code[r];
        if (in.op == fz::Op::kRow) continue;
        if (in.op == fz::Op::kStore) {
          if (last && in.d == 0) Store(DataType(in.c), f->getArg(unsigned(p.num_inputs + in.a)), element, operand(in.b));
          continue;
        }
        if (is_reduce(r)) {
          if (p.level[r] != pass + 1) continue;
          size_t slot = size_t(std::find(reductions.begin(), reductions.end(), r) - reductions.begin());
          llvm::Value* v = regs[size_t(in.a)];
          next_acc[slot] = op(r, next_acc[slot], in.op == fz::Op::kReduceSum ? b_.CreateFPExt(v, b_.getDoubleTy()) : v);
          continue;
        }
        if (p.per_row[r] || p.level[r] > pass) continue;
        switch (in.op) {
          case fz::Op::kLoad:
            regs[r] = Load(DataType(in.b), f->getArg(unsigned(in.a)), in.c == 0 ? element : b_.CreateAdd(along[r], j, "", true, true));
            break;
          case fz::Op::kRound: regs[r] = RoundTo(DataType(in.b), operand(in.a)); break;
          default: regs[r] = EmitArithmetic(b_, in, operand(in.a), fz::IsBinary(in.op) ? operand(in.b) : nullptr, k); break;
        }
      }
      llvm::Value* j_next = b_.CreateAdd(j, c64(fz::kPartials), "", true, true);
      llvm::BasicBlock* latch = b_.GetInsertBlock();
      j->addIncoming(j_next, latch);
      for (size_t s = 0; s < acc.size(); ++s) acc[s]->addIncoming(next_acc[s], latch);
      b_.CreateCondBr(b_.CreateICmpULT(j_next, c64(n)), loop, after);
      b_.SetInsertPoint(after);
      std::vector<llvm::PHINode*> totals;  // PHIs first, at the top of the block
      for (size_t s = 0; s < reductions.size(); ++s) {
        totals.push_back(b_.CreatePHI(init[s]->getType(), 2));
        totals.back()->addIncoming(init[s], before);
        totals.back()->addIncoming(next_acc[s], latch);
      }
      for (size_t s = 0; s < reductions.size(); ++s) {
        llvm::Value* v = totals[s];
        const bool sum = p.code[reductions[s]].op == fz::Op::kReduceSum;
        for (int w = fz::kPartials / 2; w >= 1; w /= 2) {
          llvm::Value* delta = b_.getInt32(uint32_t(w));
          v = op(reductions[s], v, sum ? ShuffleDouble(v, delta, members, segment) : shuffle(llvm::Intrinsic::nvvm_shfl_sync_down_f32, v, delta));
        }
        if (sum) v = b_.CreateFPTrunc(v, b_.getFloatTy());
        scalar[reductions[s]] = shuffle(llvm::Intrinsic::nvvm_shfl_sync_idx_f32, v, b_.getInt32(0));
      }
    }
    row_registers(p.passes);
    bool row_outputs = false;
    for (const fz::Instr& in : p.code) row_outputs = row_outputs || (in.op == fz::Op::kStore && in.d != 0);
    if (row_outputs) {
      auto* store = llvm::BasicBlock::Create(ctx_, "row.store", f, done);
      auto* stored = llvm::BasicBlock::Create(ctx_, "row.stored", f, done);
      b_.CreateCondBr(b_.CreateICmpEQ(lane, c64(0)), store, stored);
      b_.SetInsertPoint(store);
      for (const fz::Instr& in : p.code)
        if (in.op == fz::Op::kStore && in.d != 0) Store(DataType(in.c), f->getArg(unsigned(p.num_inputs + in.a)), row, scalar[size_t(in.b)]);
      b_.CreateBr(stored);
      b_.SetInsertPoint(stored);
    }
    llvm::Value* next_row = b_.CreateAdd(row, stride, "", true, true);
    row->addIncoming(next_row, b_.GetInsertBlock());
    b_.CreateCondBr(b_.CreateICmpULT(next_row, rows), row_block, done);
    b_.SetInsertPoint(done);
    b_.CreateRetVoid();
  }

  // shfl.sync.down of a double: its two 32-bit halves, each shuffled.
  llvm::Value* ShuffleDouble(llvm::Value* v, llvm::Value* delta, llvm::Value* members, llvm::Value* segment) {
    llvm::Type* i32 = b_.getInt32Ty();
    llvm::Type* i64 = b_.getInt64Ty();
    llvm::Value* bits = b_.CreateBitCast(v, i64);
    auto down = [&](llvm::Value* half) { return b_.CreateIntrinsic(llvm::Intrinsic::nvvm_shfl_sync_down_i32, {}, {members, half, delta, segment}); };
    llvm::Value* lo = down(b_.CreateTrunc(bits, i32));
    llvm::Value* hi = down(b_.CreateTrunc(b_.CreateLShr(bits, 32), i32));
    llvm::Value* joined = b_.CreateOr(b_.CreateShl(b_.CreateZExt(hi, i64), 32), b_.CreateZExt(lo, i64));
    return b_.CreateBitCast(joined, b_.getDoubleTy());
  }

  // Rounds through a 16-bit dtype and back (FP32: unchanged).
  llvm::Value* RoundTo(DataType dtype, llvm::Value* a) {
    if (dtype == DataType::kBF16) return Bf16BitsToFloat(b_, FloatToBf16Bits(b_, a));
    if (dtype == DataType::kF16) return b_.CreateFPExt(b_.CreateFPTrunc(a, Lanes(b_.getHalfTy())), Lanes(b_.getFloatTy()));
    return a;
  }
  // Stores `v` at element `index` of `base`, rounded to `dtype`.
  void Store(DataType dtype, llvm::Value* base, llvm::Value* index, llvm::Value* v) {
    const uint64_t size = DataTypeSize(dtype) * (width_ ? width_ : 1);
    if (dtype == DataType::kF32) b_.CreateAlignedStore(v, b_.CreateGEP(b_.getFloatTy(), base, index), llvm::Align(size));
    else b_.CreateAlignedStore(Narrow(dtype, v), b_.CreateGEP(b_.getInt16Ty(), base, index), llvm::Align(size));
  }

  static constexpr unsigned kLanes = 4;  // elements per thread in the vector loop

  // `t`, or a vector of kLanes of it in the vector loop.
  llvm::Type* Lanes(llvm::Type* t) const { return width_ ? llvm::FixedVectorType::get(t, width_) : t; }
  llvm::Value* F32(float v) { return llvm::ConstantFP::get(Lanes(b_.getFloatTy()), double(v)); }

  // Elements index.. (kLanes of them in the vector loop) of a 16-bit or FP32 tensor, widened to
  // FP32: one aligned vector access (ld.global.v4) in the vector loop.
  llvm::Value* Load(DataType dtype, llvm::Value* base, llvm::Value* index) {
    llvm::Type* elem = dtype == DataType::kF32 ? b_.getFloatTy() : b_.getInt16Ty();
    const uint64_t size = DataTypeSize(dtype) * (width_ ? width_ : 1);
    llvm::Value* raw = b_.CreateAlignedLoad(Lanes(elem), b_.CreateGEP(elem, base, index), llvm::Align(size));
    return Widen(dtype, raw);
  }
  llvm::Value* Widen(DataType dtype, llvm::Value* raw) {
    if (dtype == DataType::kF32) return raw;
    if (dtype == DataType::kBF16) return Bf16BitsToFloat(b_, raw);
    return b_.CreateFPExt(b_.CreateBitCast(raw, Lanes(b_.getHalfTy())), Lanes(b_.getFloatTy()));  // cvt.f32.f16 (exact)
  }
  // FP32 -> the 16-bit bits of `dtype`, round to nearest even.
  llvm::Value* Narrow(DataType dtype, llvm::Value* v) {
    if (dtype == DataType::kBF16) return FloatToBf16Bits(b_, v);
    return b_.CreateBitCast(b_.CreateFPTrunc(v, Lanes(b_.getHalfTy())), Lanes(b_.getInt16Ty()));  // cvt.rn.f16.f32
  }
  // Element (e / inner) % count of a broadcast input, e an i64.
  llvm::Value* PeriodicIndex(const fz::Instr& in, llvm::Value* e) {
    llvm::Type* i64 = b_.getInt64Ty();
    if (in.d == 1) return llvm::ConstantInt::get(i64, 0);
    return b_.CreateURem(in.c > 1 ? b_.CreateUDiv(e, llvm::ConstantInt::get(i64, uint64_t(in.c))) : e, llvm::ConstantInt::get(i64, uint64_t(in.d)));
  }

  llvm::Value* Instruction(const fz::Program& p, const fz::Instr& in, llvm::Function* f, llvm::Value* i,
                           const std::vector<llvm::Value*>& regs) {
    llvm::Value* a = in.a >= 0 && size_t(in.a) < regs.size() ? regs[size_t(in.a)] : nullptr;
    llvm::Value* bv = in.b >= 0 && size_t(in.b) < regs.size() ? regs[size_t(in.b)] : nullptr;
    auto k = [&](int64_t index) { return F32(p.consts[size_t(index)]); };
    switch (in.op) {
      case fz::Op::kLoad: {
        DataType dtype = DataType(in.b);
        llvm::Value* base = f->getArg(unsigned(in.a));
        if (in.c == 0) return Load(dtype, base, i);  // element for element
        if (!width_) return Load(dtype, base, PeriodicIndex(in, i));
        // A broadcast input in the vector loop: each lane's element, gathered.
        const unsigned lanes = width_;
        width_ = 0;
        llvm::Value* v = llvm::PoisonValue::get(llvm::FixedVectorType::get(b_.getFloatTy(), lanes));
        for (unsigned l = 0; l < lanes; ++l) {
          llvm::Value* e = b_.CreateAdd(i, b_.getInt64(l), "", true, true);
          v = b_.CreateInsertElement(v, Load(dtype, base, PeriodicIndex(in, e)), uint64_t(l));
        }
        width_ = lanes;
        return v;
      }
      case fz::Op::kConst: return k(in.a);
      case fz::Op::kRound: return RoundTo(DataType(in.b), a);
      case fz::Op::kStore:
        Store(DataType(in.c), f->getArg(unsigned(p.num_inputs + in.a)), i, bv);
        return bv;
      default: return EmitArithmetic(b_, in, a, bv, k);
    }
  }

  llvm::LLVMContext& ctx_;
  llvm::Module& mod_;
  llvm::IRBuilder<> b_;
  unsigned width_ = 0;  // lanes of the code being emitted (0: scalar)
};

StatusOr<std::unique_ptr<llvm::Module>> BuildModule(llvm::LLVMContext& ctx, llvm::TargetMachine& tm, const std::vector<fz::Program>& programs) {
  auto mod = std::make_unique<llvm::Module>("precis_fused_gpu", ctx);
  mod->setTargetTriple(kTriple);
  mod->setDataLayout(tm.createDataLayout());
  Emitter emitter(ctx, *mod);
  std::set<std::string> done;
  for (const fz::Program& p : programs)
    if (done.insert(p.EntryName()).second) emitter.Emit(p);
  PRECIS_RETURN_IF_ERROR(VerifyAndOptimize(*mod, tm, "NVPTX"));
  return mod;
}

// Runs `argv` with stdout and stderr into `output`; returns its exit status (-1: not started).
int RunTool(const std::vector<std::string>& argv, std::string* output, const std::string& log_path) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  int rc = posix_spawn(&pid, argv[0].c_str(), &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) return -1;
  int status = 0;
  if (waitpid(pid, &status, 0) != pid) return -1;
  std::ifstream log(log_path);
  output->assign(std::istreambuf_iterator<char>(log), std::istreambuf_iterator<char>());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// ptxas -arch=TARGET -O3 -v over the PTX, in a private temporary folder.
Status Assemble(const std::string& ptxas, GpuModule& m) {
  char dir_template[] = "/tmp/precis-ptxas-XXXXXX";
  char* dir = mkdtemp(dir_template);
  if (!dir) return Internal("cannot make a temporary folder for ptxas");
  const std::string base(dir), ptx = base + "/fused.ptx", cubin = base + "/fused.cubin", log = base + "/ptxas.log";
  {
    std::ofstream out(ptx, std::ios::binary);
    out << m.ptx;
  }
  std::string output;
  int rc = RunTool({ptxas, "-arch=" + m.target, "-O3", "-v", "-o", cubin, ptx}, &output, log);
  Status status = Status::Ok();
  if (rc != 0) {
    status = Internal("ptxas (" + ptxas + ") failed for " + m.target + " with status " + std::to_string(rc) + ": " + output.substr(0, 2000));
  } else {
    std::ifstream in(cubin, std::ios::binary);
    m.cubin.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    m.ptxas_info = output;
    if (m.cubin.empty()) status = Internal("ptxas wrote no cubin for " + m.target);
  }
  std::remove(ptx.c_str());
  std::remove(cubin.c_str());
  std::remove(log.c_str());
  rmdir(dir);
  return status;
}

}  // namespace

const std::vector<std::string>& GpuTargets() {
  static const std::vector<std::string> targets = {"sm_80", "sm_90"};
  return targets;
}

std::string FindPtxas() {
  const char* env = std::getenv("PRECIS_PTXAS");
  if (env && std::string(env) == "none") return "";
  std::string path = env && *env ? env : "/usr/local/cuda/bin/ptxas";
  return access(path.c_str(), X_OK) == 0 ? path : "";
}

StatusOr<std::vector<GpuModule>> GenerateGpuModules(const std::vector<fz::Program>& programs, bool assemble) {
  std::vector<GpuModule> out;
  const std::string ptxas = assemble ? FindPtxas() : "";
  for (const std::string& sm : GpuTargets()) {
    auto start = std::chrono::steady_clock::now();
    PRECIS_ASSIGN_OR_RETURN(std::unique_ptr<llvm::TargetMachine> tm, MakeTargetMachine(sm));
    llvm::LLVMContext ctx;
    PRECIS_ASSIGN_OR_RETURN(std::unique_ptr<llvm::Module> mod, BuildModule(ctx, *tm, programs));
    GpuModule m;
    m.target = sm;
    PRECIS_ASSIGN_OR_RETURN(std::vector<uint8_t> ptx, EmitCode(*mod, *tm, true, "PTX " + sm));
    m.ptx.assign(ptx.begin(), ptx.end());
    auto generated = std::chrono::steady_clock::now();
    m.ms = std::chrono::duration<double, std::milli>(generated - start).count();
    if (!ptxas.empty()) PRECIS_RETURN_IF_ERROR(Assemble(ptxas, m));
    m.ptxas_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - generated).count();
    out.push_back(std::move(m));
  }
  return out;
}

StatusOr<std::string> GpuModuleIr(const std::vector<fz::Program>& programs, const std::string& target) {
  PRECIS_ASSIGN_OR_RETURN(std::unique_ptr<llvm::TargetMachine> tm, MakeTargetMachine(target));
  llvm::LLVMContext ctx;
  PRECIS_ASSIGN_OR_RETURN(std::unique_ptr<llvm::Module> mod, BuildModule(ctx, *tm, programs));
  return ModuleText(*mod);
}

int64_t PtxasSpillBytes(const std::string& ptxas_info) {
  static const std::regex spill(R"((\d+) bytes spill stores, (\d+) bytes spill loads)");
  int64_t total = -1;
  for (auto it = std::sregex_iterator(ptxas_info.begin(), ptxas_info.end(), spill); it != std::sregex_iterator(); ++it)
    total = std::max<int64_t>(total, 0) + std::stoll((*it)[1]) + std::stoll((*it)[2]);
  return total;
}

}  // namespace precis::codegen
