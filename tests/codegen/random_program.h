// Random valid fused elementwise programs (runtime/kernels/fused_program.h) for the code
// generator tests (cpu_codegen_test.cc, nvptx_codegen_test.cc): every op, dtype and kind of load.
#pragma once

#include <random>

#include <gtest/gtest.h>

#include "runtime/kernels/fused_program.h"

namespace precis {

namespace fz = rt::fused;

inline constexpr DataType kDtypes[] = {DataType::kF32, DataType::kF16, DataType::kBF16};

// A random valid program: loads of 1-4 inputs, 2-24 operations, 1-2 stores.
inline fz::Program RandomProgram(std::mt19937& rng) {
  auto pick = [&](int n) { return int(rng() % uint32_t(n)); };
  fz::Program p;
  static const float kConsts[] = {0.5f, -3.0f, 0.1f, 6.0f, 1e-30f, 65504.0f, -0.0f, 1.0f / 3.0f, 1e30f};
  for (int k = 0; k < 4; ++k) p.consts.push_back(kConsts[pick(9)]);
  int inputs = 1 + pick(4);
  static const int64_t kInner[] = {1, 3, 7, 64}, kCount[] = {1, 2, 5, 16};
  for (int i = 0; i < inputs; ++i) {
    int mode = pick(6);  // 0-2 full, 3 one element, 4-5 periodic
    int64_t inner = mode < 3 ? 0 : mode == 3 ? 1 : kInner[pick(4)], count = mode < 3 ? 0 : mode == 3 ? 1 : kCount[pick(4)];
    p.code.push_back({fz::Op::kLoad, i, int64_t(kDtypes[pick(3)]), inner, count});
  }
  int ops = 2 + pick(23);
  for (int k = 0; k < ops; ++k) {
    int64_t r = int64_t(p.code.size());
    int64_t a = pick(int(r)), b = pick(int(r));
    int v = 2 + pick(22);  // kAdd .. kRound, then kExp .. kPRelu (kStore skipped)
    fz::Op op = fz::Op(v >= 17 ? v + 1 : v);
    if (op == fz::Op::kRound) p.code.push_back({op, a, int64_t(pick(2) ? DataType::kF16 : DataType::kBF16), 0});
    else if (op == fz::Op::kLeakyRelu || op == fz::Op::kClipLow || op == fz::Op::kClipHigh) p.code.push_back({op, a, pick(4), 0});
    else if (pick(8) == 0) p.code.push_back({fz::Op::kConst, pick(4), 0, 0});
    else p.code.push_back({op, a, b, 0});
  }
  int outputs = 1 + pick(2);
  int64_t last = int64_t(p.code.size()) - 1;
  for (int o = 0; o < outputs; ++o) p.code.push_back({fz::Op::kStore, o, o == 0 ? last : pick(int(last + 1)), int64_t(kDtypes[pick(3)])});
  auto decoded = fz::Decode(p.Encode(), p.consts);
  EXPECT_TRUE(decoded.ok()) << decoded.status().ToString();
  return decoded.ok() ? *decoded : p;
}

}  // namespace precis
