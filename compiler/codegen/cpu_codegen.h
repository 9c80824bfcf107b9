// Code generation for the CPU: fused elementwise programs (runtime/kernels/fused_program.h)
// lowered through LLVM 16 to x86-64 machine code, one relocatable ELF object per target
// (x86-64-v3: AVX2/FMA/F16C; x86-64-v4: AVX-512), never "host". The runtime loads the object
// itself (runtime/cpu/elf_module.h): it must be self-contained (no undefined symbols, no
// writable or thread-local data), which GenerateCpuModules checks.
//
// Each program becomes `void ENTRY(const void* const* inputs, void* const* outputs,
// int64_t begin, int64_t end)` computing elements [begin, end), ENTRY = Program::EntryName().
// The arithmetic is the program's definition exactly (IEEE single precision, no fast-math: no
// contraction into FMA, no reassociation), so generated code gives the reference interpreter's
// bits; FP16 conversions are fptrunc/fpext (round to nearest even), BF16 is 16-bit integers with
// explicit round-to-nearest-even and quiet NaNs as runtime/base/half.h.
#pragma once

#include <set>

#include <cstdint>
#include <string>
#include <vector>

#include "precis/status.h"
#include "runtime/kernels/fused_program.h"

namespace precis::codegen {

struct CpuModule {
  std::string target;  // "x86-64-v3" | "x86-64-v4"
  std::vector<uint8_t> object;  // ELF64 relocatable object
  double ms = 0;       // generation time (IR, optimization, machine code)
};

// The CPU targets modules are generated for, best first.
const std::vector<std::string>& CpuTargets();

// One module per target holding every program (identical programs once, by entry name). Programs
// whose entry is in `aliased` also get a body for steps that write an output over another input
// (a training plan's optimizer step updating its state in place; fused_program.h InPlaceOk).
StatusOr<std::vector<CpuModule>> GenerateCpuModules(const std::vector<rt::fused::Program>& programs,
                                                    const std::set<std::string>& aliased = {});

// The optimized LLVM IR of the programs for `target` (golden tests, `precis opt --emit-llvm`).
StatusOr<std::string> CpuModuleIr(const std::vector<rt::fused::Program>& programs, const std::string& target);

}  // namespace precis::codegen
