// Code generation for NVIDIA GPUs: fused elementwise programs (runtime/kernels/fused_program.h)
// lowered through LLVM 16's NVPTX backend to PTX, one module per target (sm_80, sm_90), and
// assembled to cubin by the CUDA toolkit's ptxas where it is installed.
//
// Each program becomes a kernel `ENTRY(in_0, ..., in_{n-1}, out_0, ..., out_{m-1}, int64 count)`
// (global-memory pointers, ENTRY = Program::EntryName()) whose threads stride over the elements
// four at a time (thread t of the grid takes elements 4t..4t+3, then 4(t + threads)..): every
// operand read or written element for element as one 16- or 8-byte access (`ld.global.v4`,
// `st.global.v4`), broadcast inputs gathered per element. The last count % 4 elements, and all
// of them when some such operand is not aligned for those accesses, run one per thread. Each
// element gets the program's straight-line code, the same IEEE operations in the same order as the
// x86-64 code and the interpreter (llvm_program.h; no fast-math, no contraction into FMA: PTX
// `add.rn`/`mul.rn`, which ptxas may not fuse), so a GPU plan's fused steps give the CPU's bits.
// FP16 converts with `cvt.f32.f16` and `cvt.rn.f16.f32`; BF16 is 16-bit integers with explicit
// round-to-nearest-even (LLVM 16's NVPTX BF16 support is not relied on); no flush to zero.
// Output 0 may share input 0's bytes (each thread reads an element before writing it), so those
// two pointers are not marked noalias; the other inputs are noalias and read-only (`ld.global.nc`).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "precis/status.h"
#include "runtime/kernels/fused_program.h"

namespace precis::codegen {

struct GpuModule {
  std::string target;          // "sm_80" | "sm_90"
  std::string ptx;             // PTX text
  std::vector<uint8_t> cubin;  // ptxas's ELF for `target`; empty without ptxas
  std::string ptxas_info;      // ptxas -v output (registers, spill bytes) when assembled
  double ms = 0;               // generation time (IR, optimization, PTX)
  double ptxas_ms = 0;         // ptxas's time
};

// The GPU targets modules are generated for.
const std::vector<std::string>& GpuTargets();

// The ptxas modules are assembled with: $PRECIS_PTXAS, else /usr/local/cuda/bin/ptxas; empty when
// neither exists or PRECIS_PTXAS=none (the modules then hold PTX only, which the CUDA driver
// compiles at load).
std::string FindPtxas();

// One module per target holding every program (identical programs once). `assemble`: run ptxas
// (when FindPtxas() finds one) for each target's cubin; its failure is an error.
StatusOr<std::vector<GpuModule>> GenerateGpuModules(const std::vector<rt::fused::Program>& programs, bool assemble = true);

// The optimized LLVM IR of the programs for `target` (golden tests).
StatusOr<std::string> GpuModuleIr(const std::vector<rt::fused::Program>& programs, const std::string& target);

// Sum of the spill bytes (stores and loads) ptxas -v reports in `ptxas_info`; -1 when it reports
// none (no "spill" lines: not assembled with -v).
int64_t PtxasSpillBytes(const std::string& ptxas_info);

}  // namespace precis::codegen
