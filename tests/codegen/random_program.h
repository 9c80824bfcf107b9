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

// A random valid row program (fused_program.h) over rows of `n`: input 0 read whole, 0-3 more
// inputs read whole, once per row or along the row; 3-24 operations with 1-3 reductions (sums and
// maxima, some of values that follow earlier reductions: up to 4 passes); an element store of the
// last per-element register and, sometimes, a row store of a reduction's result.
inline fz::Program RandomRowProgram(std::mt19937& rng, int64_t n) {
  auto pick = [&](int k) { return int(rng() % uint32_t(k)); };
  for (int attempt = 0; attempt < 100; ++attempt) {
    fz::Program p;
    static const float kConsts[] = {0.5f, -3.0f, 0.1f, 6.0f, 1e-30f, 65504.0f, -0.0f, 1.0f / 3.0f, 1e30f};
    for (int k = 0; k < 4; ++k) p.consts.push_back(kConsts[pick(9)]);
    p.code.push_back({fz::Op::kRow, n, 0, 0, 0});
    std::vector<bool> per_row = {false};
    int inputs = 1 + pick(4);
    for (int i = 0; i < inputs; ++i) {
      int mode = i == 0 ? 0 : pick(3);  // 0 whole, 1 once per row, 2 along the row
      int64_t inner = mode == 0 ? 0 : mode == 1 ? n * (1 + pick(2)) : 1, count = mode == 0 ? 0 : mode == 1 ? 1 + 2 * pick(2) : n * (1 + pick(2));
      p.code.push_back({fz::Op::kLoad, i, int64_t(kDtypes[pick(3)]), inner, count});
      per_row.push_back(mode == 1);
    }
    int ops = 3 + pick(22), reductions = 0;
    std::vector<int64_t> reduced;
    for (int k = 0; k < ops; ++k) {
      int64_t r = int64_t(p.code.size());
      auto any = [&] { return int64_t(1 + pick(int(r - 1))); };
      int64_t a = any(), b = any();
      if (reductions < 3 && pick(5) == 0) {
        std::vector<int64_t> element;
        for (int64_t x = 1; x < r; ++x)
          if (!per_row[size_t(x)]) element.push_back(x);
        int64_t x = element[size_t(pick(int(element.size())))];
        p.code.push_back({pick(2) ? fz::Op::kReduceSum : fz::Op::kReduceMax, x, 0, 0, 0});
        per_row.push_back(true);
        reduced.push_back(r);
        ++reductions;
        continue;
      }
      int v = 2 + pick(22);
      fz::Op op = fz::Op(v >= 17 ? v + 1 : v);
      if (op == fz::Op::kRound) p.code.push_back({op, a, int64_t(pick(2) ? DataType::kF16 : DataType::kBF16), 0});
      else if (op == fz::Op::kLeakyRelu || op == fz::Op::kClipLow || op == fz::Op::kClipHigh) p.code.push_back({op, a, pick(4), 0});
      else if (pick(8) == 0) p.code.push_back({fz::Op::kConst, pick(4), 0, 0});
      else p.code.push_back({op, a, b, 0});
      const fz::Instr& in = p.code.back();
      per_row.push_back(in.op == fz::Op::kConst || (per_row[size_t(in.a)] && (!fz::IsBinary(in.op) || per_row[size_t(in.b)])));
    }
    int64_t last = -1;
    for (int64_t x = 1; x < int64_t(p.code.size()); ++x)
      if (!per_row[size_t(x)]) last = x;
    p.code.push_back({fz::Op::kStore, 0, last, int64_t(kDtypes[pick(3)]), 0});
    if (!reduced.empty() && pick(2)) p.code.push_back({fz::Op::kStore, 1, reduced[size_t(pick(int(reduced.size())))], int64_t(kDtypes[pick(3)]), 1});
    if (reductions == 0) continue;
    auto decoded = fz::Decode(p.Encode(), p.consts);
    if (decoded.ok()) return *decoded;  // more than kMaxPasses passes: draw again
  }
  ADD_FAILURE() << "no valid row program in 100 draws";
  return fz::Program{};
}

}  // namespace precis
