// What the host CPU (and its OS) can run, read once through cpuid and xgetbv; used to choose
// kernels at run time (F16C conversions in half_array.cc, oneDNN's native BF16 paths).
//
// Native BF16 means AVX512_BF16 (CPUID.(EAX=7,ECX=1):EAX bit 5) or AMX-BF16
// (CPUID.(EAX=7,ECX=0):EDX bit 22), with the OS saving the AVX-512 state (XCR0 opmask, ZMM_Hi256
// and Hi16_ZMM, plus SSE and AVX). The environment variable PRECIS_CPU_BF16=0 turns it off (for
// A/B benchmarks against the widened FP32 path); it is read at every call, so a process can set
// it before loading a session. Off x86-64 every feature reads false.
#pragma once

#include <cstdint>

namespace precis {

// The raw cpuid/xgetbv words the features are decoded from (0 where a leaf does not exist).
struct CpuidWords {
  uint32_t leaf1_ecx = 0;    // CPUID.(EAX=1):ECX
  uint32_t leaf7_ebx = 0;    // CPUID.(EAX=7,ECX=0):EBX
  uint32_t leaf7_edx = 0;    // CPUID.(EAX=7,ECX=0):EDX
  uint32_t leaf7_1_eax = 0;  // CPUID.(EAX=7,ECX=1):EAX
  uint64_t xcr0 = 0;         // XGETBV(0), 0 when the OS has not enabled XSAVE
  uint32_t ext1_ecx = 0;     // CPUID.(EAX=80000001h):ECX
};

struct CpuFeatures {
  bool avx2 = false;         // AVX2, with the OS saving the YMM state
  bool f16c = false;         // F16C (cpuid bit only; use it together with avx2)
  bool avx512_state = false; // the OS saves the AVX-512 state (XCR0 bits 1, 2, 5, 6, 7)
  bool avx512_bf16 = false;  // cpuid bit
  bool amx_bf16 = false;     // cpuid bit
  // The x86-64 microarchitecture levels generated code is compiled for (compiler/codegen):
  // v3 = AVX2, FMA, F16C, BMI1/2, LZCNT, MOVBE with the YMM state saved; v4 = v3 and AVX-512
  // F/BW/CD/DQ/VL with the ZMM state saved.
  bool x86_64_v3 = false;
  bool x86_64_v4 = false;

  // BF16 dot products in hardware that the OS lets this process use.
  bool native_bf16() const { return avx512_state && (avx512_bf16 || amx_bf16); }
};

CpuFeatures DecodeCpuFeatures(const CpuidWords& words);
// The host's features, read once.
const CpuFeatures& HostCpuFeatures();
// Whether kernels should use native BF16: `features` has it and `env_value` (the value of
// PRECIS_CPU_BF16, nullptr when unset) is not "0".
bool UseNativeBf16(const CpuFeatures& features, const char* env_value);
// UseNativeBf16(HostCpuFeatures(), getenv("PRECIS_CPU_BF16")).
bool NativeBf16Enabled();

}  // namespace precis
