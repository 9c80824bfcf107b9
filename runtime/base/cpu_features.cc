// Host CPU features (see cpu_features.h). The bits are decoded from the raw words in one pure
// function so that tests can check the decoding on words of CPUs they do not run on; only
// ReadCpuidWords touches the hardware. xgetbv is written as inline assembly: the intrinsic needs
// the translation unit (or function) compiled for XSAVE.
#include "runtime/base/cpu_features.h"

#include <cstdlib>
#include <cstring>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
#define PRECIS_X86_CPUID 1
#endif

namespace precis {
namespace {

constexpr uint32_t kOsxsave = 1u << 27;     // leaf 1 ECX: the OS enabled XSAVE (xgetbv works)
constexpr uint32_t kF16c = 1u << 29;        // leaf 1 ECX
constexpr uint32_t kAvx2 = 1u << 5;         // leaf 7 EBX
constexpr uint32_t kAmxBf16 = 1u << 22;     // leaf 7 EDX
constexpr uint32_t kAvx512Bf16 = 1u << 5;   // leaf 7 subleaf 1 EAX
constexpr uint32_t kFma = 1u << 12;         // leaf 1 ECX
constexpr uint32_t kMovbe = 1u << 22;       // leaf 1 ECX
constexpr uint32_t kBmi1 = 1u << 3;         // leaf 7 EBX
constexpr uint32_t kBmi2 = 1u << 8;         // leaf 7 EBX
constexpr uint32_t kAvx512Set = (1u << 16) | (1u << 17) | (1u << 28) | (1u << 30) | (1u << 31);  // leaf 7 EBX: F, DQ, CD, BW, VL
constexpr uint32_t kLzcnt = 1u << 5;        // leaf 80000001h ECX (ABM)
constexpr uint64_t kYmmState = 0x6;         // XCR0: SSE, AVX
constexpr uint64_t kZmmState = 0xe6;        // XCR0: SSE, AVX, opmask, ZMM_Hi256, Hi16_ZMM

CpuidWords ReadCpuidWords() {
  CpuidWords w;
#ifdef PRECIS_X86_CPUID
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (__get_cpuid(0x80000001u, &a, &b, &c, &d)) w.ext1_ecx = c;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return w;
  w.leaf1_ecx = c;
  if (c & kOsxsave) {
    uint32_t lo = 0, hi = 0;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    w.xcr0 = (uint64_t(hi) << 32) | lo;
  }
  if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return w;
  w.leaf7_ebx = b;
  w.leaf7_edx = d;
  if (a >= 1 && __get_cpuid_count(7, 1, &a, &b, &c, &d)) w.leaf7_1_eax = a;  // a: the highest subleaf of leaf 7
#endif
  return w;
}

}  // namespace

CpuFeatures DecodeCpuFeatures(const CpuidWords& w) {
  CpuFeatures f;
  bool xsave = (w.leaf1_ecx & kOsxsave) != 0;
  bool ymm = xsave && (w.xcr0 & kYmmState) == kYmmState;
  f.avx2 = ymm && (w.leaf7_ebx & kAvx2) != 0;
  f.f16c = (w.leaf1_ecx & kF16c) != 0;
  f.avx512_state = xsave && (w.xcr0 & kZmmState) == kZmmState;
  f.avx512_bf16 = (w.leaf7_1_eax & kAvx512Bf16) != 0;
  f.amx_bf16 = (w.leaf7_edx & kAmxBf16) != 0;
  f.x86_64_v3 = f.avx2 && f.f16c && (w.leaf1_ecx & kFma) && (w.leaf1_ecx & kMovbe) && (w.leaf7_ebx & kBmi1) && (w.leaf7_ebx & kBmi2) &&
                (w.ext1_ecx & kLzcnt);
  f.x86_64_v4 = f.x86_64_v3 && f.avx512_state && (w.leaf7_ebx & kAvx512Set) == kAvx512Set;
  return f;
}

const CpuFeatures& HostCpuFeatures() {
  static const CpuFeatures features = DecodeCpuFeatures(ReadCpuidWords());
  return features;
}

bool UseNativeBf16(const CpuFeatures& features, const char* env_value) {
  return features.native_bf16() && !(env_value && std::strcmp(env_value, "0") == 0);
}

bool NativeBf16Enabled() { return UseNativeBf16(HostCpuFeatures(), std::getenv("PRECIS_CPU_BF16")); }

}  // namespace precis
