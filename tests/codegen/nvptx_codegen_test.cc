// Generated PTX for fused elementwise programs (compiler/codegen/nvptx_codegen.h), checked without
// a GPU: every module passes LLVM's verifier (GenerateGpuModules runs it), the PTX has one
// `.entry` per distinct program for sm_80 and sm_90, keeps IEEE single precision (add/sub/mul/div
// with `.rn`, which ptxas may not contract into FMA; no `.ftz`, no `fma`), converts FP16 with
// `cvt.f32.f16`/`cvt.rn.f16.f32`, uses no local memory, reads the read-only inputs through the
// non-coherent cache, accesses four elements at a time (`ld.global.v4`), and ptxas (CUDA toolkit,
// where installed) assembles every module with zero spill bytes. Row programs (reductions over
// rows): a half-warp per row combining its 16 partials with shfl.sync over 16-lane segments, the
// same IEEE rules, no local memory, no spills. Whether the kernels compute the interpreter's bits
// on a GPU is for tests/cuda/gpu_check.sh on a lent GPU: these checks cannot run them.
#include <random>
#include <regex>
#include <set>
#include <string>

#include <gtest/gtest.h>

#include "compiler/codegen/nvptx_codegen.h"
#include "runtime/kernels/fused_program.h"
#include "tests/codegen/random_program.h"

namespace precis {
namespace {

size_t Count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

fz::Program Fp16Gelu() {
  fz::Program p;
  // y = gelu(x + bias[c]) in FP16, bias per channel (inner 1, count 48): a transformer MLP's
  // epilogue (48 channels: not a power of two, so a real remainder); plus an FP32 output of the sum.
  p.code = {{fz::Op::kLoad, 0, int64_t(DataType::kF16), 0, 0},  {fz::Op::kLoad, 1, int64_t(DataType::kF16), 1, 48},
            {fz::Op::kAdd, 0, 1, 0, 0},                          {fz::Op::kGeluErf, 2, 0, 0, 0},
            {fz::Op::kStore, 0, 3, int64_t(DataType::kF16), 0}, {fz::Op::kStore, 1, 2, int64_t(DataType::kF32), 0}};
  auto decoded = fz::Decode(p.Encode(), {});
  EXPECT_TRUE(decoded.ok()) << decoded.status().ToString();
  return *decoded;
}

TEST(NvptxCodegen, RandomProgramsGiveIeeePtxForBothTargets) {
  std::mt19937 rng(7);
  std::vector<fz::Program> programs;
  std::set<std::string> entries;
  for (int k = 0; k < 60; ++k) {
    programs.push_back(RandomProgram(rng));
    entries.insert(programs.back().EntryName());
  }
  programs.push_back(programs[0]);  // a duplicate: one kernel
  auto modules = codegen::GenerateGpuModules(programs, /*assemble=*/false);
  ASSERT_TRUE(modules.ok()) << modules.status().ToString();
  ASSERT_EQ(modules->size(), 2u);
  for (const codegen::GpuModule& m : *modules) {
    SCOPED_TRACE(m.target);
    const std::string& ptx = m.ptx;
    EXPECT_NE(ptx.find(".target " + m.target), std::string::npos);
    EXPECT_EQ(Count(ptx, ".entry "), entries.size());
    for (const std::string& e : entries) EXPECT_NE(ptx.find(".entry " + e + "("), std::string::npos) << e;
    // IEEE: rounding modifiers on every add/sub/mul/div, never FMA or flush-to-zero.
    std::smatch bad;
    EXPECT_FALSE(std::regex_search(ptx, bad, std::regex(R"(\b(add|sub|mul|div)\.f32\b)"))) << bad.str(0);
    EXPECT_EQ(ptx.find("fma."), std::string::npos);
    EXPECT_EQ(ptx.find(".ftz"), std::string::npos);
    EXPECT_EQ(ptx.find("div.approx"), std::string::npos);
    EXPECT_EQ(ptx.find("sqrt.approx"), std::string::npos);
    EXPECT_EQ(ptx.find(".local"), std::string::npos) << "local memory";
  }
}

TEST(NvptxCodegen, Fp16EpilogueConvertsWithRoundToNearest) {
  auto modules = codegen::GenerateGpuModules({Fp16Gelu()}, false);
  ASSERT_TRUE(modules.ok()) << modules.status().ToString();
  for (const codegen::GpuModule& m : *modules) {
    SCOPED_TRACE(m.target);
    EXPECT_NE(m.ptx.find("cvt.f32.f16"), std::string::npos) << m.ptx;
    EXPECT_NE(m.ptx.find("cvt.rn.f16.f32"), std::string::npos);
    // The activation x is read-only and has no alias: the non-coherent cache. Input 0 may share
    // output 0's bytes (in place), so it is read with a plain global load.
    EXPECT_TRUE(std::regex_search(m.ptx, std::regex(R"(ld\.global\.nc\.[bu]16)"))) << m.ptx;
    EXPECT_TRUE(std::regex_search(m.ptx, std::regex(R"(st\.global\.[bu]16)")));
    EXPECT_NE(m.ptx.find("st.global.f32"), std::string::npos);
    // Four elements per thread where the operands are aligned: one 8-byte access of x and of the
    // FP16 output, one 16-byte store of the FP32 output.
    EXPECT_TRUE(std::regex_search(m.ptx, std::regex(R"(ld\.global\.v4\.[bu]16)"))) << m.ptx;
    EXPECT_TRUE(std::regex_search(m.ptx, std::regex(R"(st\.global\.v4\.[bu]16)")));
    EXPECT_NE(m.ptx.find("st.global.v4.f32"), std::string::npos);
    // The per-channel bias: element i % 48 (a remainder by a constant: multiply-high or rem).
    EXPECT_TRUE(std::regex_search(m.ptx, std::regex(R"((rem|mul\.hi)\.u64)")));
  }
  auto ir = codegen::GpuModuleIr({Fp16Gelu()}, "sm_90");
  ASSERT_TRUE(ir.ok()) << ir.status().ToString();
  EXPECT_NE(ir->find("ptx_kernel"), std::string::npos) << *ir;
  EXPECT_NE(ir->find("llvm.nvvm.read.ptx.sreg.tid.x"), std::string::npos);
}

// Row programs: 36 random ones (row lengths 1 to 4099) and an FP16 softmax.
std::vector<fz::Program> RowPrograms() {
  std::mt19937 rng(5);
  std::vector<fz::Program> programs;
  for (int64_t n : {1, 15, 16, 17, 33, 768, 4099})
    for (int k = 0; k < 5; ++k) programs.push_back(RandomRowProgram(rng, n));
  fz::Program softmax;
  const int64_t f16 = int64_t(DataType::kF16);
  softmax.code = {{fz::Op::kRow, 768}, {fz::Op::kLoad, 0, f16}, {fz::Op::kReduceMax, 1}, {fz::Op::kSub, 1, 2},
                  {fz::Op::kExp, 3},   {fz::Op::kReduceSum, 4}, {fz::Op::kDiv, 4, 5},   {fz::Op::kStore, 0, 6, f16}};
  auto decoded = fz::Decode(softmax.Encode(), {});
  EXPECT_TRUE(decoded.ok()) << decoded.status().ToString();
  programs.push_back(*decoded);
  return programs;
}

TEST(NvptxCodegen, RowProgramsReduceOverHalfWarps) {
  std::vector<fz::Program> programs = RowPrograms();
  auto modules = codegen::GenerateGpuModules(programs, false);
  ASSERT_TRUE(modules.ok()) << modules.status().ToString();
  for (const codegen::GpuModule& m : *modules) {
    SCOPED_TRACE(m.target);
    const std::string& ptx = m.ptx;
    // Each reduction: 4 shfl.down steps (w = 8, 4, 2, 1) over 16-lane segments (c = 0x101f = 4127):
    // one per step for a max (FP32), two for a sum (a double, as two 32-bit halves); then one
    // broadcast of the FP32 total from the segment's lane 0.
    EXPECT_TRUE(std::regex_search(ptx, std::regex(R"(shfl\.sync\.down\.b32\s+%f\d+, %f\d+, 8, 4127, %r\d+;)"))) << ptx.substr(0, 4000);
    EXPECT_TRUE(std::regex_search(ptx, std::regex(R"(shfl\.sync\.down\.b32\s+%r\d+, %r\d+, 8, 4127, %r\d+;)")));
    EXPECT_TRUE(std::regex_search(ptx, std::regex(R"(add\.rn\.f64)")));
    EXPECT_TRUE(std::regex_search(ptx, std::regex(R"(shfl\.sync\.idx\.b32\s+%f\d+, %f\d+, 0, 4127, %r\d+;)")));
    EXPECT_GT(Count(ptx, "shfl.sync.down"), 4 * Count(ptx, "shfl.sync.idx"));
    EXPECT_LT(Count(ptx, "shfl.sync.down"), 8 * Count(ptx, "shfl.sync.idx"));
    std::smatch bad;
    EXPECT_FALSE(std::regex_search(ptx, bad, std::regex(R"(\b(add|sub|mul|div)\.f32\b)"))) << bad.str(0);
    EXPECT_EQ(ptx.find("fma."), std::string::npos);
    EXPECT_EQ(ptx.find(".ftz"), std::string::npos);
    EXPECT_EQ(ptx.find(".local"), std::string::npos) << "local memory";
  }
}

TEST(NvptxCodegen, PtxasAssemblesEveryModuleWithoutSpills) {
  const std::string ptxas = codegen::FindPtxas();
  if (ptxas.empty()) GTEST_SKIP() << "no ptxas (CUDA toolkit) at /usr/local/cuda/bin/ptxas or $PRECIS_PTXAS: PTX not assembled";
  std::mt19937 rng(11);
  std::vector<fz::Program> programs = RowPrograms();
  programs.push_back(Fp16Gelu());
  for (int k = 0; k < 40; ++k) programs.push_back(RandomProgram(rng));
  auto modules = codegen::GenerateGpuModules(programs, true);
  ASSERT_TRUE(modules.ok()) << modules.status().ToString();
  for (const codegen::GpuModule& m : *modules) {
    SCOPED_TRACE(m.target);
    ASSERT_GE(m.cubin.size(), 4u);
    EXPECT_EQ(m.cubin[0], 0x7f);  // ELF
    EXPECT_EQ(m.cubin[1], 'E');
    EXPECT_EQ(codegen::PtxasSpillBytes(m.ptxas_info), 0) << m.ptxas_info;
    EXPECT_NE(m.ptxas_info.find(m.target), std::string::npos) << m.ptxas_info;
  }
  EXPECT_EQ(codegen::PtxasSpillBytes("ptxas info    : Used 30 registers\n"), -1);
  EXPECT_EQ(codegen::PtxasSpillBytes("    8 bytes stack frame, 4 bytes spill stores, 4 bytes spill loads\n"), 8);
}

}  // namespace
}  // namespace precis
