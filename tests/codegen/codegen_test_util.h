// Shared pieces of the x86 code generator tests (cpu_codegen_test.cc, row_codegen_test.cc): the
// generated functions' type, comparing stored values, and loading the modules this CPU runs.
#pragma once

#include <cmath>
#include <cstring>
#include <memory>
#include <regex>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "compiler/codegen/cpu_codegen.h"
#include "runtime/base/cpu_features.h"
#include "runtime/base/half.h"
#include "runtime/cpu/elf_module.h"

namespace precis {

// Vector widening from FP16 in generated IR: the AVX-512 intrinsic on x86-64-v4; on x86-64-v3
// (where LLVM 16 has no intrinsic left) fpext of `half` lanes (vcvtph2ps with F16C) whose result
// goes straight into an arithmetic fence, which InstCombine does not look through (unfenced, it
// narrows compares and arithmetic of fpext values to `half` vectors, which x86 runs lane by lane).
// Returns how many such fpext there are, failing the test for each one not fenced.
inline size_t CheckFencedHalfWidening(const std::string& ir, const std::string& target) {
  size_t fpexts = 0;
  const std::regex fpext(R"((%[\w.]+) = fpext <(\d+) x half> [^\n]*\n([^\n]*))");
  for (auto it = std::sregex_iterator(ir.begin(), ir.end(), fpext); it != std::sregex_iterator(); ++it) {
    ++fpexts;
    const std::string lanes = (*it)[2].str();
    EXPECT_NE((*it)[3].str().find("@llvm.arithmetic.fence.v" + lanes + "f32(<" + lanes + " x float> " + (*it)[1].str() + ")"), std::string::npos)
        << target << ": an fpext of half lanes not fenced: " << (*it)[0].str();
  }
  if (target == "x86-64-v4") {
    EXPECT_EQ(fpexts, 0u) << target << ": vector widening from FP16 is the AVX-512 intrinsic there";
  }
  return fpexts;
}

using Entry = void (*)(const void* const*, void* const*, int64_t, int64_t);

// The value stored at `p` as a float (FP32, FP16 or BF16).
inline float StoredValue(DataType t, const uint8_t* p) {
  if (t == DataType::kF32) {
    float f;
    std::memcpy(&f, p, 4);
    return f;
  }
  uint16_t h;
  std::memcpy(&h, p, 2);
  return t == DataType::kF16 ? HalfToFloat(h) : Bf16ToFloat(h);
}

// Equal bits, or both NaN (NaN payloads may differ between conversions).
inline bool SameValue(DataType t, const uint8_t* a, const uint8_t* b) {
  return std::memcmp(a, b, DataTypeSize(t)) == 0 || (std::isnan(StoredValue(t, a)) && std::isnan(StoredValue(t, b)));
}

// Every module this CPU runs (an AVX-512 machine runs both), loaded, with its target; empty (the
// reason in `why`) when it runs neither.
inline std::vector<std::pair<std::string, std::unique_ptr<rt::ElfModule>>> LoadAllForHost(const std::vector<codegen::CpuModule>& modules,
                                                                                          std::string* why) {
  const CpuFeatures& f = HostCpuFeatures();
  std::vector<std::pair<std::string, std::unique_ptr<rt::ElfModule>>> out;
  for (const auto& m : modules) {
    if ((m.target == "x86-64-v4" && !f.x86_64_v4) || (m.target == "x86-64-v3" && !f.x86_64_v3)) continue;
    auto loaded = rt::ElfModule::Load(m.object.data(), m.object.size());
    EXPECT_TRUE(loaded.ok()) << m.target << ": " << loaded.status().ToString();
    if (loaded.ok()) out.emplace_back(m.target, std::move(*loaded));
  }
  if (out.empty()) *why = "this CPU runs neither x86-64-v4 nor x86-64-v3 code";
  return out;
}

}  // namespace precis
