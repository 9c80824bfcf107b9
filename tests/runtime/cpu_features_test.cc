// CPU feature decoding (runtime/base/cpu_features.h) on the cpuid/xgetbv words of CPUs other than
// the one running the test (so the bit positions and the OS-state rule are checked everywhere),
// the PRECIS_CPU_BF16 override, and the host's answer against the kernel's /proc/cpuinfo flags.
#include <gtest/gtest.h>

#include <fstream>
#include <iostream>
#include <set>
#include <sstream>
#include <string>

#include "runtime/base/cpu_features.h"

namespace precis {
namespace {

constexpr uint32_t kOsxsave = 1u << 27, kF16c = 1u << 29;  // leaf 1 ECX
constexpr uint32_t kAvx2 = 1u << 5;                        // leaf 7 EBX
constexpr uint32_t kAmxBf16 = 1u << 22;                    // leaf 7 EDX
constexpr uint32_t kAvx512Bf16 = 1u << 5;                  // leaf 7 subleaf 1 EAX
constexpr uint64_t kXcr0Avx = 0x7, kXcr0Avx512 = 0xe7, kXcr0Amx = 0x600e7;

CpuidWords Words(uint32_t leaf7_edx, uint32_t leaf7_1_eax, uint64_t xcr0) {
  CpuidWords w;
  w.leaf1_ecx = kOsxsave | kF16c;
  w.leaf7_ebx = kAvx2;
  w.leaf7_edx = leaf7_edx;
  w.leaf7_1_eax = leaf7_1_eax;
  w.xcr0 = xcr0;
  return w;
}

TEST(CpuFeatures, DecodesBf16) {
  // Sapphire Rapids: AVX512_BF16 and AMX-BF16, tile state enabled.
  CpuFeatures spr = DecodeCpuFeatures(Words(kAmxBf16, kAvx512Bf16, kXcr0Amx));
  EXPECT_TRUE(spr.avx512_bf16 && spr.amx_bf16 && spr.avx512_state && spr.native_bf16());
  // Cooper Lake / Zen 4: AVX512_BF16 only.
  CpuFeatures cpl = DecodeCpuFeatures(Words(0, kAvx512Bf16, kXcr0Avx512));
  EXPECT_TRUE(cpl.avx512_bf16 && !cpl.amx_bf16 && cpl.native_bf16());
  // AMX-BF16 alone (with the AVX-512 state) counts.
  EXPECT_TRUE(DecodeCpuFeatures(Words(kAmxBf16, 0, kXcr0Avx512)).native_bf16());
  // AVX-512 without BF16 (Skylake-SP): oneDNN would only emulate BF16.
  CpuFeatures skx = DecodeCpuFeatures(Words(0, 0, kXcr0Avx512));
  EXPECT_TRUE(skx.avx512_state);
  EXPECT_FALSE(skx.native_bf16());
  // The instructions exist but the OS does not save the ZMM state: not usable.
  CpuFeatures no_os = DecodeCpuFeatures(Words(kAmxBf16, kAvx512Bf16, kXcr0Avx));
  EXPECT_TRUE(no_os.avx512_bf16 && no_os.amx_bf16);
  EXPECT_FALSE(no_os.avx512_state);
  EXPECT_FALSE(no_os.native_bf16());
  EXPECT_TRUE(no_os.avx2);
  // An AVX2 CPU (e.g. AMD Zen 2).
  CpuFeatures zen2 = DecodeCpuFeatures(Words(0, 0, kXcr0Avx));
  EXPECT_TRUE(zen2.avx2 && zen2.f16c);
  EXPECT_FALSE(zen2.native_bf16());
  // XSAVE not enabled by the OS: XCR0 means nothing, no AVX at all.
  CpuidWords w = Words(kAmxBf16, kAvx512Bf16, kXcr0Avx512);
  w.leaf1_ecx &= ~kOsxsave;
  CpuFeatures none = DecodeCpuFeatures(w);
  EXPECT_FALSE(none.avx2 || none.avx512_state || none.native_bf16());
}

TEST(CpuFeatures, DecodesMicroarchitectureLevels) {
  constexpr uint32_t kFma = 1u << 12, kMovbe = 1u << 22, kBmi1 = 1u << 3, kBmi2 = 1u << 8, kLzcnt = 1u << 5;
  constexpr uint32_t kAvx512 = (1u << 16) | (1u << 17) | (1u << 28) | (1u << 30) | (1u << 31);
  CpuidWords w = Words(0, 0, kXcr0Avx);
  w.leaf1_ecx |= kFma | kMovbe;
  w.leaf7_ebx |= kBmi1 | kBmi2;
  w.ext1_ecx = kLzcnt;
  CpuFeatures haswell = DecodeCpuFeatures(w);
  EXPECT_TRUE(haswell.x86_64_v3);
  EXPECT_FALSE(haswell.x86_64_v4);
  w.leaf7_ebx |= kAvx512;
  EXPECT_FALSE(DecodeCpuFeatures(w).x86_64_v4) << "AVX-512 without the OS saving the ZMM state";
  w.xcr0 = kXcr0Avx512;
  EXPECT_TRUE(DecodeCpuFeatures(w).x86_64_v4);
  CpuidWords no_fma = w, no_lzcnt = w;
  no_fma.leaf1_ecx &= ~kFma;
  no_lzcnt.ext1_ecx = 0;
  for (const CpuidWords& missing : {no_fma, no_lzcnt}) {
    EXPECT_FALSE(DecodeCpuFeatures(missing).x86_64_v3);
    EXPECT_FALSE(DecodeCpuFeatures(missing).x86_64_v4);
  }
}

TEST(CpuFeatures, EnvironmentOverride) {
  CpuFeatures native = DecodeCpuFeatures(Words(0, kAvx512Bf16, kXcr0Avx512));
  CpuFeatures avx2 = DecodeCpuFeatures(Words(0, 0, kXcr0Avx));
  EXPECT_TRUE(UseNativeBf16(native, nullptr));
  EXPECT_TRUE(UseNativeBf16(native, "1"));
  EXPECT_TRUE(UseNativeBf16(native, ""));
  EXPECT_FALSE(UseNativeBf16(native, "0"));
  EXPECT_FALSE(UseNativeBf16(avx2, nullptr));
  EXPECT_FALSE(UseNativeBf16(avx2, "1"));  // the override only turns native BF16 off
}

// Linux lists the CPU's flags as the kernel sees them (it clears AVX-512 flags when it does not
// enable their state).
TEST(CpuFeatures, HostAgreesWithProcCpuinfo) {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  std::set<std::string> flags;
  while (std::getline(in, line)) {
    if (line.rfind("flags", 0) != 0) continue;
    std::istringstream words(line.substr(line.find(':') + 1));
    for (std::string f; words >> f;) flags.insert(f);
    break;
  }
  if (flags.empty()) GTEST_SKIP() << "no flags line in /proc/cpuinfo (not Linux on x86)";
  const CpuFeatures& host = HostCpuFeatures();
  EXPECT_EQ(host.f16c, flags.count("f16c") == 1);
  EXPECT_EQ(host.avx2, flags.count("avx2") == 1);
  EXPECT_EQ(host.avx512_bf16 && host.avx512_state, flags.count("avx512_bf16") == 1);
  if (flags.count("amx_bf16")) {
    EXPECT_TRUE(host.amx_bf16);
  }
  // The microarchitecture levels of generated code (the kernel lists lzcnt as "abm").
  bool v3 = flags.count("avx2") && flags.count("fma") && flags.count("f16c") && flags.count("bmi1") && flags.count("bmi2") &&
            flags.count("abm") && flags.count("movbe");
  bool v4 = v3 && flags.count("avx512f") && flags.count("avx512bw") && flags.count("avx512cd") && flags.count("avx512dq") &&
            flags.count("avx512vl");
  EXPECT_EQ(host.x86_64_v3, v3);
  EXPECT_EQ(host.x86_64_v4, v4);
  std::cout << "host: avx2 " << host.avx2 << ", f16c " << host.f16c << ", AVX-512 state " << host.avx512_state << ", AVX512_BF16 "
            << host.avx512_bf16 << ", AMX-BF16 " << host.amx_bf16 << ", native BF16 " << host.native_bf16() << ", x86-64-v3 " << host.x86_64_v3
            << ", x86-64-v4 " << host.x86_64_v4 << "\n";
}

}  // namespace
}  // namespace precis
