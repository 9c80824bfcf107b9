// Fused elementwise programs to x86-64 objects through LLVM 16 (see cpu_codegen.h).
#include "compiler/codegen/cpu_codegen.h"

#include "compiler/codegen/llvm_program.h"

#include <chrono>
#include <numeric>
#include <map>
#include <memory>
#include <mutex>
#include <set>

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/IntrinsicsX86.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Object/ELFObjectFile.h>
#include <llvm/Object/ObjectFile.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/Target/TargetOptions.h>

extern "C" {
void LLVMInitializeX86TargetInfo();
void LLVMInitializeX86Target();
void LLVMInitializeX86TargetMC();
void LLVMInitializeX86AsmPrinter();
}

namespace precis::codegen {
namespace {

namespace fz = rt::fused;
constexpr const char* kTriple = "x86_64-unknown-linux-gnu";

void InitializeLlvm() {
  static std::once_flag once;
  std::call_once(once, [] {
    LLVMInitializeX86TargetInfo();
    LLVMInitializeX86Target();
    LLVMInitializeX86TargetMC();
    LLVMInitializeX86AsmPrinter();
  });
}

StatusOr<std::unique_ptr<llvm::TargetMachine>> MakeTargetMachine(const std::string& cpu) {
  InitializeLlvm();
  std::string error;
  const llvm::Target* target = llvm::TargetRegistry::lookupTarget(kTriple, error);
  if (!target) return Internal("LLVM has no x86-64 target: " + error);
  llvm::TargetOptions options;  // no fast-math: IEEE arithmetic, no FMA contraction
  options.AllowFPOpFusion = llvm::FPOpFusion::Strict;
  std::unique_ptr<llvm::TargetMachine> tm(target->createTargetMachine(kTriple, cpu, "", options, llvm::Reloc::PIC_, llvm::CodeModel::Small,
                                                                      llvm::CodeGenOpt::Aggressive));
  if (!tm) return Internal("LLVM cannot make a target machine for " + cpu);
  return tm;
}

class Emitter {
 public:
  // `lanes`: the vector body's width (16 floats for x86-64-v4, 8 for x86-64-v3).
  Emitter(llvm::LLVMContext& ctx, llvm::Module& mod, const std::string& cpu, unsigned lanes)
      : ctx_(ctx), mod_(mod), cpu_(cpu), lanes_(lanes), b_(ctx) {}

  void Emit(const fz::Program& p, bool aliased_body) {
    llvm::Type* ptr = llvm::PointerType::get(ctx_, 0);
    llvm::Type* i64 = b_.getInt64Ty();
    llvm::Function* body = Body(p, false);
    // Output 0 may take input 0's bytes (the plan runs the step in place): a second body reads
    // input 0 through output 0's pointer, so that every pointer it has is still noalias.
    llvm::Function* in_place = p.InPlaceOk() ? Body(p, true) : nullptr;
    // Other outputs may take the bytes of inputs they read element for element (a training
    // plan's optimizer step writes a weight and its moments over their old values): where asked,
    // a third body whose pointers are not noalias serves those steps. Its vector body still loads
    // every input of an element before storing any output (programs load before they store), and
    // without noalias LLVM keeps that order.
    std::vector<std::pair<int, int>> pairs;
    for (int i = 0; i < p.num_inputs && aliased_body; ++i)
      for (int o = 0; o < p.num_outputs; ++o)
        if ((i != 0 || o != 0) && p.InPlaceOk(i, o)) pairs.emplace_back(i, o);
    llvm::Function* aliased = pairs.empty() ? nullptr : Body(p, false, false);

    auto* entry_type = llvm::FunctionType::get(b_.getVoidTy(), {ptr, ptr, i64, i64}, false);
    auto* entry = llvm::Function::Create(entry_type, llvm::GlobalValue::ExternalLinkage, p.EntryName(), mod_);
    Attributes(entry);
    b_.SetInsertPoint(llvm::BasicBlock::Create(ctx_, "entry", entry));
    std::vector<llvm::Value*> ins, outs;
    for (int i = 0; i < p.num_inputs; ++i) ins.push_back(b_.CreateLoad(ptr, b_.CreateConstGEP1_64(ptr, entry->getArg(0), uint64_t(i))));
    for (int o = 0; o < p.num_outputs; ++o) outs.push_back(b_.CreateLoad(ptr, b_.CreateConstGEP1_64(ptr, entry->getArg(1), uint64_t(o))));
    auto call = [&](llvm::Function* f, bool skip_input0) {
      std::vector<llvm::Value*> args(ins.begin() + (skip_input0 ? 1 : 0), ins.end());
      args.insert(args.end(), outs.begin(), outs.end());
      args.push_back(entry->getArg(2));
      args.push_back(entry->getArg(3));
      b_.CreateCall(f, args);
      b_.CreateRetVoid();
    };
    if (aliased) {
      llvm::Value* any = b_.getFalse();
      for (auto [i, o] : pairs) any = b_.CreateOr(any, b_.CreateICmpEQ(ins[size_t(i)], outs[size_t(o)]));
      auto* shared = llvm::BasicBlock::Create(ctx_, "aliased", entry);
      auto* rest = llvm::BasicBlock::Create(ctx_, "not_aliased", entry);
      b_.CreateCondBr(any, shared, rest);
      b_.SetInsertPoint(shared);
      call(aliased, false);
      b_.SetInsertPoint(rest);
    }
    if (in_place) {
      auto* same = llvm::BasicBlock::Create(ctx_, "in_place", entry);
      auto* apart = llvm::BasicBlock::Create(ctx_, "apart", entry);
      b_.CreateCondBr(b_.CreateICmpEQ(ins[0], outs[0]), same, apart);
      b_.SetInsertPoint(same);
      call(in_place, true);
      b_.SetInsertPoint(apart);
    }
    call(body, false);
  }

 private:
  // The loop over elements, its tensor pointers noalias unless `noalias` is false (the runtime
  // gives a fused step no overlapping operands but an output over an input it may take, which
  // the in-place and aliased bodies serve).
  llvm::Function* Body(const fz::Program& p, bool in_place, bool noalias = true) {
    llvm::Type* ptr = llvm::PointerType::get(ctx_, 0);
    llvm::Type* i64 = b_.getInt64Ty();
    in_place_ = in_place;
    num_inputs_ = p.num_inputs;
    int pointers = p.num_inputs + p.num_outputs - (in_place ? 1 : 0);
    std::vector<llvm::Type*> params(size_t(pointers), ptr);
    params.push_back(i64);
    params.push_back(i64);
    auto* type = llvm::FunctionType::get(b_.getVoidTy(), params, false);
    auto* body = llvm::Function::Create(type, llvm::GlobalValue::InternalLinkage,
                                        p.EntryName() + (in_place ? ".in_place" : noalias ? ".body" : ".aliased"), mod_);
    Attributes(body);
    body->addFnAttr(llvm::Attribute::AlwaysInline);
    if (noalias)
      for (int i = 0; i < pointers; ++i) body->addParamAttr(unsigned(i), llvm::Attribute::NoAlias);
    if (p.row) EmitRowBody(p, body);
    else EmitBody(p, body);
    return body;
  }
  llvm::Value* InputArg(llvm::Function* f, int64_t i) {
    if (in_place_ && i == 0) return OutputArg(f, 0);
    return f->getArg(unsigned(in_place_ ? i - 1 : i));
  }
  llvm::Value* OutputArg(llvm::Function* f, int64_t o) { return f->getArg(unsigned(num_inputs_ - (in_place_ ? 1 : 0) + o)); }

  void Attributes(llvm::Function* f) {
    f->addFnAttr(llvm::Attribute::NoUnwind);
    f->addFnAttr("target-cpu", cpu_);
    f->addFnAttr("no-builtins");  // no memcpy/memset calls: the object imports nothing
    f->addFnAttr("no-trapping-math", "true");
  }

  // The element loop runs in segments of S elements (aligned to multiples of S) within which
  // every periodic load reads either one element (inner > 1: S divides inner) or consecutive
  // elements (inner == 1: S divides count), so the inner loops have only contiguous and invariant
  // loads; the divisions happen once per segment. S is the gcd of those lengths; without periodic
  // loads there is one segment.
  //
  // Within a segment a vector body computes `lanes_` elements per iteration and a scalar loop the
  // rest. The vector body is emitted here rather than left to LLVM's loop vectorizer: before
  // vectorizing, InstCombine turns fptrunc(op(fpext a, fpext b)) into the op on `half` (exact,
  // so legal), and x86 without AVX512-FP16 has no vector half arithmetic, so such loops became
  // one scalar conversion per element. Here FP16 rounding in vectors is the x86 conversion
  // intrinsic (vcvtps2ph), which InstCombine leaves alone.
  static int64_t SegmentLength(const fz::Program& p) {
    int64_t s = 0;
    for (const fz::Instr& in : p.code) {
      if (in.op != fz::Op::kLoad || in.c == 0 || in.d == 1) continue;
      s = std::gcd(s, in.c > 1 ? in.c : in.d);
    }
    return s;
  }

  void EmitBody(const fz::Program& p, llvm::Function* f) {
    llvm::Type* i64 = b_.getInt64Ty();
    auto c64 = [&](int64_t v) { return llvm::ConstantInt::get(i64, uint64_t(v)); };
    auto* entry = llvm::BasicBlock::Create(ctx_, "entry", f);
    auto* outer = llvm::BasicBlock::Create(ctx_, "segment", f);
    auto* loop = llvm::BasicBlock::Create(ctx_, "loop", f);
    auto* next_segment = llvm::BasicBlock::Create(ctx_, "next_segment", f);
    auto* done = llvm::BasicBlock::Create(ctx_, "done", f);
    llvm::Value* begin = f->getArg(unsigned(f->arg_size() - 2));
    llvm::Value* end = f->getArg(unsigned(f->arg_size() - 1));
    int64_t seg = SegmentLength(p);
    b_.SetInsertPoint(entry);
    b_.CreateCondBr(b_.CreateICmpSLT(begin, end), outer, done);

    auto* vector_loop = llvm::BasicBlock::Create(ctx_, "vector.body", f, loop);
    auto* tail = llvm::BasicBlock::Create(ctx_, "tail", f, loop);
    b_.SetInsertPoint(outer);
    llvm::PHINode* s0 = b_.CreatePHI(i64, 2, "s0");
    s0->addIncoming(begin, entry);
    llvm::Value* s_end = end;
    if (seg > 0) {
      llvm::Value* boundary = b_.CreateMul(b_.CreateAdd(b_.CreateUDiv(s0, c64(seg)), c64(1)), c64(seg));
      s_end = b_.CreateSelect(b_.CreateICmpSLT(boundary, end), boundary, end);
    }
    // Each periodic load's index at the segment's first element.
    bases_.assign(p.code.size(), nullptr);
    for (size_t r = 0; r < p.code.size(); ++r) {
      const fz::Instr& in = p.code[r];
      if (in.op != fz::Op::kLoad || in.c == 0) continue;
      if (in.d == 1) bases_[r] = c64(0);
      else bases_[r] = b_.CreateURem(in.c > 1 ? b_.CreateUDiv(s0, c64(in.c)) : s0, c64(in.d));
    }
    llvm::Value* lanes = c64(int64_t(lanes_));
    llvm::BasicBlock* segment_end = b_.GetInsertBlock();
    b_.CreateCondBr(b_.CreateICmpSLE(b_.CreateAdd(s0, lanes, "", true, true), s_end), vector_loop, tail);

    // Vector body: elements [v, v + lanes) while they lie in the segment.
    b_.SetInsertPoint(vector_loop);
    llvm::PHINode* v = b_.CreatePHI(i64, 2, "v");
    v->addIncoming(s0, segment_end);
    width_ = lanes_;
    offset_ = b_.CreateSub(v, s0, "offset", true, true);
    std::vector<llvm::Value*> regs;
    for (size_t r = 0; r < p.code.size(); ++r) regs.push_back(Instruction(p, p.code[r], r, f, v, regs));
    llvm::Value* v_next = b_.CreateAdd(v, lanes, "v.next", true, true);
    v->addIncoming(v_next, b_.GetInsertBlock());
    llvm::BasicBlock* vector_end = b_.GetInsertBlock();
    NotVectorized(b_.CreateCondBr(b_.CreateICmpSLE(b_.CreateAdd(v_next, lanes, "", true, true), s_end), vector_loop, tail));

    // The rest of the segment, one element at a time.
    b_.SetInsertPoint(tail);
    llvm::PHINode* start = b_.CreatePHI(i64, 2, "start");
    start->addIncoming(s0, segment_end);
    start->addIncoming(v_next, vector_end);
    b_.CreateCondBr(b_.CreateICmpSLT(start, s_end), loop, next_segment);

    b_.SetInsertPoint(loop);
    llvm::PHINode* i = b_.CreatePHI(i64, 2, "i");
    i->addIncoming(start, tail);
    width_ = 0;
    offset_ = b_.CreateSub(i, s0, "offset", true, true);
    regs.clear();
    for (size_t r = 0; r < p.code.size(); ++r) regs.push_back(Instruction(p, p.code[r], r, f, i, regs));
    llvm::Value* next = b_.CreateAdd(i, c64(1), "next", true, true);
    i->addIncoming(next, b_.GetInsertBlock());
    NotVectorized(b_.CreateCondBr(b_.CreateICmpSLT(next, s_end), loop, next_segment));

    b_.SetInsertPoint(next_segment);
    s0->addIncoming(s_end, next_segment);
    b_.CreateCondBr(b_.CreateICmpSLT(s_end, end), outer, done);
    b_.SetInsertPoint(done);
    b_.CreateRetVoid();
  }

  // A row program (fused_program.h): a loop over rows [begin, end); per row the passes, each a
  // loop over chunks of kPartials elements (lanes_-wide sub-vectors u, so that element j of the
  // row is in lane j % kPartials of the accumulators, as the interpreter's partials) and, for
  // the last n % kPartials elements, one chunk with constant lane masks (masked loads and stores;
  // masked-off lanes keep their accumulators). Per-row registers are scalars, computed once per
  // row at the start of their level's pass (after the reductions they follow are combined).
  // Sums accumulate in vectors of doubles, rounded to FP32 once the partials are combined.
  void EmitRowBody(const fz::Program& p, llvm::Function* f) {
    llvm::Type* i64 = b_.getInt64Ty();
    auto c64 = [&](int64_t v) { return llvm::ConstantInt::get(i64, uint64_t(v)); };
    const int64_t n = p.row;
    const unsigned sub = unsigned(fz::kPartials) / lanes_;  // sub-vectors per chunk
    const size_t count = p.code.size();
    auto is_reduce = [&](size_t r) { return fz::IsReduction(p.code[r].op); };
    auto* entry = llvm::BasicBlock::Create(ctx_, "entry", f);
    auto* row_block = llvm::BasicBlock::Create(ctx_, "row", f);
    auto* done = llvm::BasicBlock::Create(ctx_, "done", f);
    llvm::Value* begin = f->getArg(unsigned(f->arg_size() - 2));
    llvm::Value* end = f->getArg(unsigned(f->arg_size() - 1));
    b_.SetInsertPoint(entry);
    b_.CreateCondBr(b_.CreateICmpSLT(begin, end), row_block, done);
    b_.SetInsertPoint(row_block);
    llvm::PHINode* row = b_.CreatePHI(i64, 2, "row");
    row->addIncoming(begin, entry);
    llvm::Value* row_base = b_.CreateMul(row, c64(n), "row.base", true, true);
    std::vector<llvm::Value*> along = AlongRowStarts(b_, p, row_base);
    std::vector<llvm::Value*> scalar(count, nullptr);  // per-row registers
    auto k = [&](int64_t index) { return F32(p.consts[size_t(index)]); };
    auto row_registers = [&](int level) {
      width_ = 0;
      EmitRowRegisters(
          b_, p, level, row_base, scalar, [&](const fz::Instr& in, llvm::Value* index) { return Load(DataType(in.b), InputArg(f, in.a), index, false); },
          [&](DataType dtype, llvm::Value* v) { return Round(dtype, v); }, k);
    };
    for (int pass = 0; pass < p.passes; ++pass) {
      const bool last = pass == p.passes - 1;
      row_registers(pass);
      std::vector<size_t> reductions;  // accumulated in this pass
      for (size_t r = 0; r < count; ++r)
        if (is_reduce(r) && p.level[r] == pass + 1) reductions.push_back(r);
      width_ = lanes_;
      // Sums accumulate in double (each FP32 element widened exactly), maxima in FP32.
      auto init = [&](size_t r) -> llvm::Value* {
        if (p.code[r].op == fz::Op::kReduceSum) return llvm::ConstantFP::get(llvm::FixedVectorType::get(b_.getDoubleTy(), lanes_), -0.0);
        return F32(-INFINITY);
      };
      // acc[i * sub + u]: reduction reductions[i], sub-vector u.
      std::vector<llvm::Value*> acc;
      for (size_t r : reductions)
        for (unsigned u = 0; u < sub; ++u) acc.push_back(init(r));
      // One chunk at element `j0` of the row; `valid` elements of it (kPartials: all).
      auto chunk = [&](llvm::Value* j0, int64_t valid) {
        for (unsigned u = 0; u < sub; ++u) {
          int64_t lane0 = int64_t(u * lanes_);
          if (lane0 >= valid) break;
          llvm::Value* mask = nullptr;
          if (valid < lane0 + int64_t(lanes_)) {
            std::vector<llvm::Constant*> bits;
            for (unsigned l = 0; l < lanes_; ++l) bits.push_back(b_.getInt1(lane0 + int64_t(l) < valid));
            mask = llvm::ConstantVector::get(bits);
          }
          llvm::Value* jj = b_.CreateAdd(j0, c64(lane0), "", true, true);
          llvm::Value* element = b_.CreateAdd(row_base, jj, "", true, true);
          std::vector<llvm::Value*> regs(count, nullptr);
          auto operand = [&](int64_t reg) {
            return p.per_row[size_t(reg)] ? b_.CreateVectorSplat(lanes_, scalar[size_t(reg)]) : regs[size_t(reg)];
          };
          for (size_t r = 0; r < count; ++r) {
            const fz::Instr& in = p.code[r];
            if (in.op == fz::Op::kRow) continue;
            if (in.op == fz::Op::kStore) {
              if (!last || in.d != 0) continue;
              StoreElements(DataType(in.c), OutputArg(f, in.a), element, operand(in.b), mask);
              continue;
            }
            if (is_reduce(r)) {
              if (p.level[r] != pass + 1) continue;
              size_t slot = size_t(std::find(reductions.begin(), reductions.end(), r) - reductions.begin()) * sub + u;
              llvm::Value* v = regs[size_t(in.a)];
              llvm::Value* next = in.op == fz::Op::kReduceSum ? b_.CreateFAdd(acc[slot], b_.CreateFPExt(v, acc[slot]->getType()))
                                                              : EmitArithmetic(b_, {fz::Op::kMax}, acc[slot], v, k);
              acc[slot] = mask ? b_.CreateSelect(mask, next, acc[slot]) : next;
              continue;
            }
            if (p.per_row[r] || p.level[r] > pass) continue;
            switch (in.op) {
              case fz::Op::kLoad: {
                llvm::Value* index = in.c == 0 ? element : b_.CreateAdd(along[r], jj, "", true, true);
                regs[r] = Load(DataType(in.b), InputArg(f, in.a), index, false, mask);
                break;
              }
              case fz::Op::kRound: regs[r] = Round(DataType(in.b), operand(in.a)); break;
              default:
                regs[r] = EmitArithmetic(b_, in, operand(in.a), fz::IsBinary(in.op) ? operand(in.b) : nullptr, k);
                break;
            }
          }
        }
      };
      const int64_t full = n / fz::kPartials, rest = n % fz::kPartials;
      if (full > 0) {
        llvm::BasicBlock* before = b_.GetInsertBlock();
        auto* loop = llvm::BasicBlock::Create(ctx_, "pass" + std::to_string(pass), f, done);
        b_.CreateBr(loop);
        b_.SetInsertPoint(loop);
        llvm::PHINode* j0 = b_.CreatePHI(i64, 2, "j0");
        j0->addIncoming(c64(0), before);
        std::vector<llvm::PHINode*> phis;
        for (llvm::Value*& a : acc) {
          llvm::PHINode* phi = b_.CreatePHI(a->getType(), 2);
          phi->addIncoming(a, before);
          phis.push_back(phi);
          a = phi;
        }
        chunk(j0, fz::kPartials);
        llvm::Value* next = b_.CreateAdd(j0, c64(fz::kPartials), "", true, true);
        llvm::BasicBlock* latch = b_.GetInsertBlock();
        j0->addIncoming(next, latch);
        for (size_t s = 0; s < phis.size(); ++s) phis[s]->addIncoming(acc[s], latch);
        auto* after = llvm::BasicBlock::Create(ctx_, "pass" + std::to_string(pass) + ".end", f, done);
        NotVectorized(b_.CreateCondBr(b_.CreateICmpSLT(next, c64(full * fz::kPartials)), loop, after));
        b_.SetInsertPoint(after);
        for (size_t s = 0; s < phis.size(); ++s) {
          llvm::PHINode* out = b_.CreatePHI(acc[s]->getType(), 1);
          out->addIncoming(acc[s], latch);
          acc[s] = out;
        }
      }
      if (rest > 0) chunk(c64(full * fz::kPartials), rest);
      // Combine the partials: p[l] = op(p[l], p[l + w]) for w = 8, 4, 2, 1.
      for (size_t i = 0; i < reductions.size(); ++i) {
        const fz::Instr& in = p.code[reductions[i]];
        auto op = [&](llvm::Value* x, llvm::Value* y) { return in.op == fz::Op::kReduceSum ? b_.CreateFAdd(x, y) : EmitArithmetic(b_, {fz::Op::kMax}, x, y, k); };
        llvm::Value* v = acc[i * sub];
        for (unsigned u = 1; u < sub; ++u) v = op(v, acc[i * sub + u]);  // lanes_ 8: the w = 8 step
        for (unsigned w = lanes_ / 2; w >= 1; w /= 2) {
          std::vector<int> lo, hi;
          for (unsigned l = 0; l < w; ++l) {
            lo.push_back(int(l));
            hi.push_back(int(l + w));
          }
          llvm::Value* x = w == 1 ? b_.CreateExtractElement(v, uint64_t(0)) : b_.CreateShuffleVector(v, lo);
          llvm::Value* y = w == 1 ? b_.CreateExtractElement(v, uint64_t(1)) : b_.CreateShuffleVector(v, hi);
          v = op(x, y);
        }
        scalar[reductions[i]] = in.op == fz::Op::kReduceSum ? b_.CreateFPTrunc(v, b_.getFloatTy()) : v;
      }
    }
    row_registers(p.passes);
    for (const fz::Instr& in : p.code)
      if (in.op == fz::Op::kStore && in.d != 0) {
        width_ = 0;
        StoreElements(DataType(in.c), OutputArg(f, in.a), row, scalar[size_t(in.b)], nullptr);
      }
    llvm::Value* next_row = b_.CreateAdd(row, c64(1), "", true, true);
    row->addIncoming(next_row, b_.GetInsertBlock());
    NotVectorized(b_.CreateCondBr(b_.CreateICmpSLT(next_row, end), row_block, done));
    b_.SetInsertPoint(done);
    b_.CreateRetVoid();
  }

  // Stores `v` (width_ lanes, or a scalar) at element `index` of `base`, rounded to `dtype`;
  // `mask`: only those lanes.
  void StoreElements(DataType dtype, llvm::Value* base, llvm::Value* index, llvm::Value* v, llvm::Value* mask) {
    llvm::Value* bits = v;
    llvm::Type* elem = b_.getFloatTy();
    if (dtype == DataType::kF16) bits = ToF16(v), elem = b_.getInt16Ty();
    else if (dtype == DataType::kBF16) bits = ToBf16(v), elem = b_.getInt16Ty();
    llvm::Value* address = b_.CreateGEP(elem, base, index);
    llvm::Align align(dtype == DataType::kF32 ? 4 : 2);
    if (mask && width_) b_.CreateMaskedStore(bits, address, align, mask);
    else b_.CreateAlignedStore(bits, address, align);
  }

  // Marks a loop's back edge: LLVM's loop vectorizer leaves it alone (the vector body is ours).
  void NotVectorized(llvm::BranchInst* back_edge) {
    llvm::Metadata* off[] = {llvm::MDString::get(ctx_, "llvm.loop.vectorize.enable"), llvm::ConstantAsMetadata::get(b_.getFalse())};
    llvm::Metadata* ops[] = {nullptr, llvm::MDNode::get(ctx_, off)};
    llvm::MDNode* loop = llvm::MDNode::getDistinct(ctx_, ops);
    loop->replaceOperandWith(0, loop);
    back_edge->setMetadata(llvm::LLVMContext::MD_loop, loop);
  }

  // `t`, or a vector of it in the vector body.
  llvm::Type* Lanes(llvm::Type* t) const { return width_ ? llvm::FixedVectorType::get(t, width_) : t; }
  llvm::Value* F32(float v) { return llvm::ConstantFP::get(Lanes(b_.getFloatTy()), double(v)); }

  // Element `index` (the vector body: elements index.. of the lanes; `splat`: one element for
  // every lane) widened to FP32. Vector accesses keep the element's alignment.
  // `mask` (vector body only): the lanes to read; the others read as 0 (row programs' last chunk).
  llvm::Value* Load(DataType dtype, llvm::Value* base, llvm::Value* index, bool splat, llvm::Value* mask = nullptr) {
    unsigned lanes = width_;
    if (splat) width_ = 0;
    llvm::Type* elem = dtype == DataType::kF16 ? (width_ ? b_.getInt16Ty() : b_.getHalfTy()) : dtype == DataType::kBF16 ? b_.getInt16Ty() : b_.getFloatTy();
    llvm::Align align(dtype == DataType::kF32 ? 4 : 2);
    llvm::Value* address = b_.CreateGEP(elem, base, index);
    llvm::Value* raw = nullptr;
    if (mask && width_) raw = b_.CreateMaskedLoad(Lanes(elem), address, align, mask, llvm::Constant::getNullValue(Lanes(elem)));
    else raw = b_.CreateAlignedLoad(Lanes(elem), address, align);
    llvm::Value* v = raw;
    if (dtype == DataType::kF16) v = width_ ? FromF16(raw) : b_.CreateFPExt(raw, b_.getFloatTy());
    else if (dtype == DataType::kBF16) v = Bf16BitsToFloat(b_, raw);
    width_ = lanes;
    return splat && width_ ? b_.CreateVectorSplat(width_, v) : v;
  }

  llvm::Value* ToBf16(llvm::Value* v) { return FloatToBf16Bits(b_, v); }

  // float -> fp16 bits, round to nearest even (the F16C conversion, as fptrunc): in the vector
  // body the x86 intrinsic, so that no arithmetic is narrowed to vector `half` (EmitBody).
  llvm::Value* ToF16(llvm::Value* v) {
    if (!width_) return b_.CreateBitCast(b_.CreateFPTrunc(v, b_.getHalfTy()), b_.getInt16Ty());
    llvm::Value* rne = b_.getInt32(0);  // imm8 = 0: round to nearest even, not MXCSR's mode
    if (width_ == 16) {
      llvm::Function* cvt = llvm::Intrinsic::getDeclaration(&mod_, llvm::Intrinsic::x86_avx512_mask_vcvtps2ph_512);
      return b_.CreateCall(cvt, {v, rne, llvm::Constant::getNullValue(Lanes(b_.getInt16Ty())), b_.getInt16(0xffff)});
    }
    llvm::Function* cvt = llvm::Intrinsic::getDeclaration(&mod_, llvm::Intrinsic::x86_vcvtps2ph_256);
    return b_.CreateCall(cvt, {v, rne});
  }

  // fp16 bits -> float in the vector body (exact), never an fpext of `half`: InstCombine would
  // turn a compare of fpext values into a compare of `half` vectors, which x86 runs lane by lane.
  // x86-64-v4: the AVX-512 conversion intrinsic (vcvtph2ps); x86-64-v3 has no such intrinsic left
  // in LLVM 16 (it is fpext there): fpext of 8 `half` lanes (vcvtph2ps with F16C) behind an
  // arithmetic fence, which InstCombine does not look through. Other widths: integer operations
  // (normal numbers rebias the exponent, subnormals are em * 2^-24 exact, infinities and NaNs keep
  // their payload, as HalfToFloat). The integer form cost ~12 instructions per conversion: ViT-B/16's
  // fused GELU (FP16 in, FP16 out, rounded after every op) took 2.6x its FP32 time.
  llvm::Value* FromF16(llvm::Value* bits) {
    if (width_ == 16) {
      llvm::Function* cvt = llvm::Intrinsic::getDeclaration(&mod_, llvm::Intrinsic::x86_avx512_mask_vcvtph2ps_512);
      return b_.CreateCall(cvt, {bits, llvm::Constant::getNullValue(Lanes(b_.getFloatTy())), b_.getInt16(0xffff), b_.getInt32(4)});
    }
    if (width_ == 8) {
      llvm::Value* wide = b_.CreateFPExt(b_.CreateBitCast(bits, Lanes(b_.getHalfTy())), Lanes(b_.getFloatTy()));
      return b_.CreateArithmeticFence(wide, wide->getType());
    }
    llvm::Type* i32 = Lanes(b_.getInt32Ty());
    auto k = [&](uint32_t v) { return llvm::ConstantInt::get(i32, v); };
    llvm::Value* u = b_.CreateZExt(bits, i32);
    llvm::Value* sign = b_.CreateShl(b_.CreateAnd(u, k(0x8000)), 16);
    llvm::Value* em = b_.CreateAnd(u, k(0x7fff));
    llvm::Value* shifted = b_.CreateShl(em, 13);
    llvm::Value* normal = b_.CreateAdd(shifted, k(112u << 23));
    llvm::Value* special = b_.CreateOr(shifted, k(0x7f800000));
    llvm::Value* tiny = b_.CreateBitCast(b_.CreateFMul(b_.CreateUIToFP(em, Lanes(b_.getFloatTy())), F32(0x1p-24f)), i32);
    llvm::Value* mag = b_.CreateSelect(b_.CreateICmpUGE(em, k(0x7c00)), special, b_.CreateSelect(b_.CreateICmpULT(em, k(0x400)), tiny, normal));
    return b_.CreateBitCast(b_.CreateOr(mag, sign), Lanes(b_.getFloatTy()));
  }

  llvm::Value* Round(DataType dtype, llvm::Value* v) {
    if (dtype == DataType::kF16) {
      if (!width_) return b_.CreateFPExt(b_.CreateFPTrunc(v, b_.getHalfTy()), b_.getFloatTy());
      return FromF16(ToF16(v));
    }
    if (dtype == DataType::kBF16) return Bf16BitsToFloat(b_, ToBf16(v));
    return v;
  }

  llvm::Value* Instruction(const fz::Program& p, const fz::Instr& in, size_t r, llvm::Function* f, llvm::Value* i,
                           const std::vector<llvm::Value*>& regs) {
    llvm::Value* a = in.a >= 0 && size_t(in.a) < regs.size() ? regs[size_t(in.a)] : nullptr;
    llvm::Value* b = in.b >= 0 && size_t(in.b) < regs.size() ? regs[size_t(in.b)] : nullptr;
    auto k = [&](int64_t index) { return F32(p.consts[size_t(index)]); };
    switch (in.op) {
      case fz::Op::kLoad: {
        // Full: element i; periodic: the segment's base, plus the offset in the segment when
        // consecutive (inner 1), else the same element for the whole segment.
        llvm::Value* index = i;
        bool consecutive = in.c == 0 || (in.c == 1 && in.d > 1);
        if (in.c) index = consecutive ? b_.CreateAdd(bases_[r], offset_) : bases_[r];
        return Load(DataType(in.b), InputArg(f, in.a), index, !consecutive);
      }
      case fz::Op::kConst: return k(in.a);
      case fz::Op::kRound: return Round(DataType(in.b), a);
      case fz::Op::kStore: {
        llvm::Value* base = OutputArg(f, in.a);
        DataType dtype = DataType(in.c);
        if (dtype == DataType::kF16) b_.CreateAlignedStore(ToF16(b), b_.CreateGEP(b_.getInt16Ty(), base, i), llvm::Align(2));
        else if (dtype == DataType::kBF16) b_.CreateAlignedStore(ToBf16(b), b_.CreateGEP(b_.getInt16Ty(), base, i), llvm::Align(2));
        else b_.CreateAlignedStore(b, b_.CreateGEP(b_.getFloatTy(), base, i), llvm::Align(4));
        return b;
      }
      default: return EmitArithmetic(b_, in, a, b, k);
    }
  }

  llvm::LLVMContext& ctx_;
  llvm::Module& mod_;
  std::string cpu_;
  unsigned lanes_;
  llvm::IRBuilder<> b_;
  unsigned width_ = 0;                // lanes of the code being emitted (0: scalar)
  std::vector<llvm::Value*> bases_;  // per instruction: a periodic load's index at the segment start
  bool in_place_ = false;             // the body being emitted reads input 0 through output 0
  int num_inputs_ = 0;
  llvm::Value* offset_ = nullptr;     // i - segment start
};

// The programs (each entry once) as an optimized module for `tm`.
StatusOr<std::unique_ptr<llvm::Module>> BuildModule(llvm::LLVMContext& ctx, llvm::TargetMachine& tm, const std::vector<fz::Program>& programs,
                                                    const std::string& cpu, const std::set<std::string>& aliased = {}) {
  auto mod = std::make_unique<llvm::Module>("precis_fused", ctx);
  mod->setTargetTriple(kTriple);
  mod->setDataLayout(tm.createDataLayout());
  Emitter emitter(ctx, *mod, cpu, cpu == "x86-64-v4" ? 16 : 8);
  std::set<std::string> done;
  for (const fz::Program& p : programs)
    if (done.insert(p.EntryName()).second) emitter.Emit(p, aliased.count(p.EntryName()) > 0);
  PRECIS_RETURN_IF_ERROR(VerifyAndOptimize(*mod, tm, cpu));
  return mod;
}

// The object must be loadable by runtime/cpu/elf_module.cc: nothing imported, nothing writable
// or thread-local.
Status CheckSelfContained(const std::vector<uint8_t>& object, const std::string& target) {
  llvm::StringRef bytes(reinterpret_cast<const char*>(object.data()), object.size());
  auto obj = llvm::object::ObjectFile::createObjectFile(llvm::MemoryBufferRef(bytes, "fused"));
  if (!obj) {
    llvm::consumeError(obj.takeError());
    return Internal("the generated " + target + " object does not parse");
  }
  for (const llvm::object::SymbolRef& sym : (*obj)->symbols()) {
    auto flags = sym.getFlags();
    if (flags && (*flags & llvm::object::SymbolRef::SF_Undefined)) {
      auto name = sym.getName();
      std::string n = name ? name->str() : "?";
      if (!name) llvm::consumeError(name.takeError());
      if (!n.empty()) return Internal("the generated " + target + " object imports '" + n + "'");
    } else if (!flags) {
      llvm::consumeError(flags.takeError());
    }
  }
  for (const llvm::object::SectionRef& s : (*obj)->sections()) {
    auto* elf = llvm::dyn_cast<llvm::object::ELFObjectFileBase>(obj->get());
    uint64_t f = elf ? llvm::object::ELFSectionRef(s).getFlags() : 0;
    if ((f & llvm::ELF::SHF_ALLOC) && (f & (llvm::ELF::SHF_WRITE | llvm::ELF::SHF_TLS))) {
      auto name = s.getName();
      std::string n = name ? name->str() : "?";
      if (!name) llvm::consumeError(name.takeError());
      return Internal("the generated " + target + " object has writable section '" + n + "'");
    }
  }
  return Status::Ok();
}

}  // namespace

const std::vector<std::string>& CpuTargets() {
  static const std::vector<std::string> targets = {"x86-64-v4", "x86-64-v3"};
  return targets;
}

StatusOr<std::vector<CpuModule>> GenerateCpuModules(const std::vector<fz::Program>& programs, const std::set<std::string>& aliased) {
  std::vector<CpuModule> out;
  for (const std::string& cpu : CpuTargets()) {
    auto start = std::chrono::steady_clock::now();
    PRECIS_ASSIGN_OR_RETURN(std::unique_ptr<llvm::TargetMachine> tm, MakeTargetMachine(cpu));
    llvm::LLVMContext ctx;
    PRECIS_ASSIGN_OR_RETURN(std::unique_ptr<llvm::Module> mod, BuildModule(ctx, *tm, programs, cpu, aliased));
    CpuModule m;
    m.target = cpu;
    PRECIS_ASSIGN_OR_RETURN(m.object, EmitCode(*mod, *tm, false, cpu));
    PRECIS_RETURN_IF_ERROR(CheckSelfContained(m.object, cpu));
    m.ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    out.push_back(std::move(m));
  }
  return out;
}

StatusOr<std::string> CpuModuleIr(const std::vector<fz::Program>& programs, const std::string& target) {
  PRECIS_ASSIGN_OR_RETURN(std::unique_ptr<llvm::TargetMachine> tm, MakeTargetMachine(target));
  llvm::LLVMContext ctx;
  PRECIS_ASSIGN_OR_RETURN(std::unique_ptr<llvm::Module> mod, BuildModule(ctx, *tm, programs, target));
  return ModuleText(*mod);
}

}  // namespace precis::codegen
