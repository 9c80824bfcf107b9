// Row programs (runtime/kernels/fused_program.h: reductions over rows with their elementwise
// neighbours): generated x86 code against the reference interpreter bit for bit (random programs
// over every op, dtype and kind of load, row lengths around the vector widths, random data and
// special values, split row ranges, in place), softmax and layer normalization as the fusion pass
// writes them against float64 references, the vector code's shape, and decoding of malformed
// row programs.
#include <cmath>
#include <cstring>
#include <random>
#include <regex>

#include <gtest/gtest.h>

#include "compiler/codegen/cpu_codegen.h"
#include "runtime/base/cpu_features.h"
#include "runtime/base/half.h"
#include "runtime/cpu/elf_module.h"
#include "runtime/kernels/fused_program.h"
#include "tests/codegen/codegen_test_util.h"
#include "tests/codegen/random_program.h"

namespace precis {
namespace {

const int64_t kF32 = int64_t(DataType::kF32), kF16 = int64_t(DataType::kF16), kBF16 = int64_t(DataType::kBF16);

float SpecialOrRandom(std::mt19937& rng, bool special) {
  static const float kSpecial[] = {NAN, INFINITY, -INFINITY, -0.0f, 0.0f, 1e-40f, -1e-45f, 7e4f, -7e4f, 3e38f, 65504.0f, 65520.0f,
                                   1.0f + 0x1p-11f, 2.5f, -2.5f, 6.0f};
  // Special rows still hold mostly ordinary values, so that a row is not all NaN.
  if (special && rng() % 4 == 0) return kSpecial[rng() % (sizeof kSpecial / sizeof kSpecial[0])];
  return std::normal_distribution<float>(0.0f, 3.0f)(rng);
}

void Put(DataType t, std::vector<uint8_t>& bytes, int64_t k, float v) {
  if (t == DataType::kF32) std::memcpy(bytes.data() + 4 * k, &v, 4);
  uint16_t h = t == DataType::kF16 ? FloatToHalf(v) : FloatToBf16(v);
  if (t != DataType::kF32) std::memcpy(bytes.data() + 2 * k, &h, 2);
}

struct Buffers {
  std::vector<std::vector<uint8_t>> in, gen, ref;
  std::vector<int64_t> out_count;
};

Buffers MakeBuffers(const fz::Program& p, int64_t rows, std::mt19937& rng, bool special) {
  Buffers b;
  for (int i = 0; i < p.num_inputs; ++i) {
    DataType t = p.InputDtype(i);
    int64_t count = p.InputBroadcast(i) ? p.InputLoad(i)->d : rows * p.row;
    b.in.emplace_back(size_t(count) * DataTypeSize(t));
    for (int64_t k = 0; k < count; ++k) Put(t, b.in.back(), k, SpecialOrRandom(rng, special));
  }
  for (int o = 0; o < p.num_outputs; ++o) {
    int64_t count = p.OutputRowDims(o) ? rows : rows * p.row;
    b.out_count.push_back(count);
    b.gen.emplace_back(size_t(count) * DataTypeSize(p.OutputDtype(o)), 0xab);
    b.ref.emplace_back(size_t(count) * DataTypeSize(p.OutputDtype(o)), 0xcd);
  }
  return b;
}

// Runs `p` over `rows` rows through the interpreter (b.ref) and `entry` (b.gen, in two calls:
// rows [0, rows/3) and [rows/3, rows), as threads call it); returns the mismatches reported.
int CompareRows(const fz::Program& p, Entry entry, Buffers& b, int64_t rows, const std::string& what) {
  std::vector<const void*> in;
  std::vector<void*> gen, ref;
  for (auto& v : b.in) in.push_back(v.data());
  for (auto& v : b.gen) gen.push_back(v.data());
  for (auto& v : b.ref) ref.push_back(v.data());
  std::vector<float> scratch(fz::ScratchFloats(p));
  fz::Evaluate(p, in.data(), ref.data(), 0, rows, scratch.data());
  entry(in.data(), gen.data(), 0, rows / 3);
  entry(in.data(), gen.data(), rows / 3, rows);
  int bad = 0;
  for (int o = 0; o < p.num_outputs; ++o) {
    DataType t = p.OutputDtype(o);
    size_t w = DataTypeSize(t);
    for (int64_t i = 0; i < b.out_count[size_t(o)]; ++i)
      if (!SameValue(t, b.gen[size_t(o)].data() + size_t(i) * w, b.ref[size_t(o)].data() + size_t(i) * w)) {
        ADD_FAILURE() << what << ": " << p.EntryName() << " output " << o << " element " << i << " of " << b.out_count[size_t(o)]
                      << ": generated " << StoredValue(t, b.gen[size_t(o)].data() + size_t(i) * w) << ", interpreter "
                      << StoredValue(t, b.ref[size_t(o)].data() + size_t(i) * w);
        ++bad;
        break;
      }
  }
  return bad;
}

TEST(RowCodegen, RandomRowProgramsMatchTheInterpreterBitForBit) {
  std::mt19937 rng(23);
  const int64_t lengths[] = {1, 7, 15, 16, 17, 31, 32, 33, 100, 768, 4096, 4099};
  std::vector<fz::Program> programs;
  for (int64_t n : lengths)
    for (int k = 0; k < 8; ++k) programs.push_back(RandomRowProgram(rng, n));
  auto modules = codegen::GenerateCpuModules(programs);
  ASSERT_TRUE(modules.ok()) << modules.status().ToString();
  std::string why;
  auto loaded = LoadAllForHost(*modules, &why);
  if (loaded.empty()) GTEST_SKIP() << why;
  int compared = 0, in_place = 0, row_outputs = 0, max_passes = 0;
  for (const auto& [target, module] : loaded)
    for (const fz::Program& p : programs) {
      auto entry = reinterpret_cast<Entry>(const_cast<void*>(module->Find(p.EntryName())));
      ASSERT_NE(entry, nullptr) << p.EntryName();
      int64_t rows = p.row >= 1000 ? 3 : 7;
      max_passes = std::max(max_passes, p.passes);
      for (bool special : {false, true}) {
        Buffers b = MakeBuffers(p, rows, rng, special);
        std::string what = target + " row " + std::to_string(p.row) + (special ? " (special values)" : "");
        CompareRows(p, entry, b, rows, what);
        ++compared;
        row_outputs += p.num_outputs > 1;
        if (p.InPlaceOk()) {
          // Output 0 over input 0: the same bits as the interpreter's separate output.
          std::vector<uint8_t> shared = b.in[0];
          std::vector<const void*> in;
          std::vector<void*> gen;
          for (auto& v : b.in) in.push_back(v.data());
          for (auto& v : b.gen) gen.push_back(v.data());
          in[0] = shared.data();
          gen[0] = shared.data();
          entry(in.data(), gen.data(), 0, rows);
          DataType t = p.OutputDtype(0);
          size_t w = DataTypeSize(t);
          for (int64_t i = 0; i < rows * p.row; ++i)
            if (!SameValue(t, shared.data() + size_t(i) * w, b.ref[0].data() + size_t(i) * w)) {
              ADD_FAILURE() << what << ": " << p.EntryName() << " in place, element " << i;
              break;
            }
          ++in_place;
        }
      }
    }
  EXPECT_GT(in_place, 0);
  EXPECT_GT(row_outputs, 0);
  EXPECT_GE(max_passes, 3);
  std::printf("%d row programs x data compared (%d with a row output, %d in place, up to %d passes), targets:", compared, row_outputs, in_place,
              max_passes);
  for (const auto& [target, module] : loaded) std::printf(" %s", target.c_str());
  std::printf("\n");
}

// Softmax and LayerNormalization as passes/fuse_elementwise.cc writes them.
fz::Program Softmax(int64_t n, int64_t dtype) {
  fz::Program p;
  p.code = {{fz::Op::kRow, n},           {fz::Op::kLoad, 0, dtype},      {fz::Op::kReduceMax, 1}, {fz::Op::kSub, 1, 2},
            {fz::Op::kExp, 3},           {fz::Op::kReduceSum, 4},        {fz::Op::kDiv, 4, 5},    {fz::Op::kStore, 0, 6, dtype}};
  auto d = fz::Decode(p.Encode(), {});
  EXPECT_TRUE(d.ok()) << d.status().ToString();
  return *d;
}

fz::Program LayerNorm(int64_t n, int64_t dtype, float eps) {
  fz::Program p;
  p.consts = {float(n), eps};
  p.code = {{fz::Op::kRow, n},
            {fz::Op::kLoad, 0, dtype},
            {fz::Op::kLoad, 1, dtype, 1, n},  // scale
            {fz::Op::kLoad, 2, dtype, 1, n},  // bias
            {fz::Op::kReduceSum, 1},
            {fz::Op::kConst, 0},
            {fz::Op::kDiv, 4, 5},  // mean
            {fz::Op::kSub, 1, 6},  // x - mean
            {fz::Op::kMul, 7, 7},
            {fz::Op::kReduceSum, 8},
            {fz::Op::kDiv, 9, 5},  // variance
            {fz::Op::kConst, 1},
            {fz::Op::kAdd, 10, 11},
            {fz::Op::kSqrt, 12},
            {fz::Op::kReciprocal, 13},  // 1 / sqrt(var + eps)
            {fz::Op::kMul, 7, 14},
            {fz::Op::kMul, 15, 2},
            {fz::Op::kAdd, 16, 3},
            {fz::Op::kStore, 0, 17, dtype},
            {fz::Op::kStore, 1, 6, kF32, 1},
            {fz::Op::kStore, 2, 14, kF32, 1}};
  auto d = fz::Decode(p.Encode(), p.consts);
  EXPECT_TRUE(d.ok()) << d.status().ToString();
  return *d;
}

// Tolerance: within 2e-6 of the output's scale (softmax: the row's largest output; layer norm:
// max |scale| + |bias|) of float64 on the same (rounded) inputs, plus the output's own rounding
// for FP16/BF16 (half an ulp: 2^-11, 2^-8 of the value). The sums run in 16 interleaved double
// partials (rounded to FP32 once) and the exponential is the CPU kernels' approximation (about 1
// ulp), so a few FP32 roundings remain.
TEST(RowCodegen, SoftmaxAndLayerNormAgainstFloat64) {
  std::mt19937 rng(7);
  std::vector<fz::Program> programs;
  const int64_t lengths[] = {1, 31, 32, 33, 768, 4096};
  for (int64_t n : lengths)
    for (int64_t t : {kF32, kF16, kBF16}) {
      programs.push_back(Softmax(n, t));
      programs.push_back(LayerNorm(n, t, 1e-5f));
    }
  auto modules = codegen::GenerateCpuModules(programs);
  ASSERT_TRUE(modules.ok()) << modules.status().ToString();
  std::string why;
  auto loaded = LoadAllForHost(*modules, &why);
  if (loaded.empty()) std::printf("generated code not compared: %s (the interpreter still is, against float64)\n", why.c_str());
  for (const fz::Program& p : programs) {
    bool softmax = p.num_inputs == 1;
    DataType t = p.InputDtype(0);
    const int64_t rows = 4;
    Buffers b = MakeBuffers(p, rows, rng, false);
    // Row 3 of a softmax: a masked row (-inf in every other element, as attention masks give).
    if (softmax)
      for (int64_t j = 0; j < p.row; j += 2) Put(t, b.in[0], 3 * p.row + j, -INFINITY);
    std::vector<const void*> in;
    std::vector<void*> ref;
    for (auto& v : b.in) in.push_back(v.data());
    for (auto& v : b.ref) ref.push_back(v.data());
    std::vector<float> scratch(fz::ScratchFloats(p));
    fz::Evaluate(p, in.data(), ref.data(), 0, rows, scratch.data());
    const double rel_tol = 2e-6, rounding = t == DataType::kF32 ? 0 : t == DataType::kF16 ? 0x1p-11 : 0x1p-8;
    double worst = 0;
    size_t w = DataTypeSize(t);
    for (int64_t r = 0; r < rows; ++r) {
      std::vector<double> x(size_t(p.row)), y(size_t(p.row));
      for (int64_t j = 0; j < p.row; ++j) x[size_t(j)] = StoredValue(t, b.in[0].data() + size_t(r * p.row + j) * w);
      double scale = 1;
      if (softmax) {
        double m = -INFINITY, s = 0;
        for (double v : x) m = std::max(m, v);
        for (double v : x) s += std::exp(v - m);
        for (size_t j = 0; j < x.size(); ++j) y[j] = std::exp(x[j] - m) / s;
        scale = *std::max_element(y.begin(), y.end());
      } else {
        double mean = 0, var = 0;
        for (double v : x) mean += v;
        mean /= double(p.row);
        for (double v : x) var += (v - mean) * (v - mean);
        var /= double(p.row);
        double inv = 1 / std::sqrt(var + double(1e-5f));
        for (size_t j = 0; j < x.size(); ++j) {
          double s = StoredValue(t, b.in[1].data() + j * w), bias = StoredValue(t, b.in[2].data() + j * w);
          y[j] = (x[j] - mean) * inv * s + bias;
          scale = std::max(scale, std::fabs(s) + std::fabs(bias));
        }
      }
      for (int64_t j = 0; j < p.row; ++j) {
        double got = StoredValue(t, b.ref[0].data() + size_t(r * p.row + j) * w);
        double err = std::fabs(got - y[size_t(j)]);
        if (!std::isnan(err)) worst = std::max(worst, err / scale);
        if (std::isnan(got) && std::isnan(y[size_t(j)])) continue;  // a row that is all -inf (row 1): 0 / 0, as in float64
        if (!(err <= rel_tol * scale + rounding * std::fabs(y[size_t(j)]))) {
          ADD_FAILURE() << (softmax ? "softmax" : "layer norm") << " " << DataTypeName(t) << " row " << p.row << " [" << r << "][" << j
                        << "]: " << got << " against float64 " << y[size_t(j)];
          break;
        }
      }
    }
    // The generated code computes the interpreter's bits.
    for (const auto& [target, module] : loaded) {
      auto entry = reinterpret_cast<Entry>(const_cast<void*>(module->Find(p.EntryName())));
      ASSERT_NE(entry, nullptr);
      Buffers again = b;
      CompareRows(p, entry, again, rows, target);
    }
    std::printf("%-10s %-4s row %4lld: max error %.3g of the output scale\n", softmax ? "softmax" : "layer norm", DataTypeName(t),
                static_cast<long long>(p.row), worst);
  }
}

TEST(RowCodegen, RowLoopsAreVectorizedWithMaskedTails) {
  for (const char* target : {"x86-64-v3", "x86-64-v4"}) {
    auto ir = codegen::CpuModuleIr({Softmax(33, kF16)}, target);
    ASSERT_TRUE(ir.ok()) << ir.status().ToString();
    std::string lanes = std::string(target) == "x86-64-v4" ? "16" : "8";
    EXPECT_NE(ir->find("fadd <" + lanes + " x float>"), std::string::npos) << target << "\n" << *ir;
    EXPECT_NE(ir->find("@llvm.masked.load.v" + lanes + "i16"), std::string::npos) << target << "\n" << *ir;
    EXPECT_NE(ir->find("@llvm.masked.store.v" + lanes + "i16"), std::string::npos) << target << "\n" << *ir;
    // Sums in vectors of doubles; vector conversions from half only behind a fence.
    EXPECT_NE(ir->find("fadd <" + lanes + " x double>"), std::string::npos) << target;
    CheckFencedHalfWidening(*ir, target);
    std::smatch m;
    EXPECT_FALSE(std::regex_search(*ir, m, std::regex(R"((fadd|fsub|fmul|fdiv|fcmp [a-z]+) <\d+ x half>)"))) << target << ": " << m.str(0);
  }
}

TEST(RowCodegen, DecodeRefusesMalformedRowPrograms) {
  auto bad = [](std::vector<fz::Instr> code, const char* want) {
    fz::Program p;
    p.code = std::move(code);
    auto d = fz::Decode(p.Encode(), {1.0f});
    ASSERT_FALSE(d.ok()) << want;
    EXPECT_NE(d.status().message().find(want), std::string::npos) << d.status().message();
  };
  bad({{fz::Op::kLoad, 0, kF32}, {fz::Op::kRow, 4}, {fz::Op::kStore, 0, 0, kF32}}, "Row must be instruction 0");
  bad({{fz::Op::kRow, 0}, {fz::Op::kLoad, 0, kF32}, {fz::Op::kStore, 0, 1, kF32}}, "Row must be instruction 0");
  bad({{fz::Op::kLoad, 0, kF32}, {fz::Op::kReduceSum, 0}, {fz::Op::kStore, 0, 1, kF32}}, "outside a row program");
  bad({{fz::Op::kRow, 4}, {fz::Op::kLoad, 0, kF32}, {fz::Op::kLoad, 1, kF32, 4, 2}, {fz::Op::kReduceSum, 2}, {fz::Op::kStore, 0, 1, kF32}},
      "not per element");
  bad({{fz::Op::kRow, 4}, {fz::Op::kLoad, 0, kF32}, {fz::Op::kStore, 0, 1, kF32, 1}}, "row store");
  bad({{fz::Op::kLoad, 0, kF32}, {fz::Op::kStore, 0, 0, kF32, 1}}, "row store");
  bad({{fz::Op::kRow, 4}, {fz::Op::kLoad, 0, kF32}, {fz::Op::kLoad, 1, kF32, 2, 3}, {fz::Op::kAdd, 1, 2}, {fz::Op::kStore, 0, 3, kF32}},
      "must read whole, once per row, or along the row");
  bad({{fz::Op::kRow, 4}, {fz::Op::kLoad, 0, kF32, 1, 8}, {fz::Op::kStore, 0, 1, kF32}}, "reads no input whole");
  bad({{fz::Op::kRow, 4}, {fz::Op::kLoad, 0, kF32}, {fz::Op::kRow, 4}, {fz::Op::kStore, 0, 1, kF32}}, "Row must be instruction 0");
  // Ten nested reductions: eleven passes.
  std::vector<fz::Instr> deep = {{fz::Op::kRow, 4}, {fz::Op::kLoad, 0, kF32}};
  for (int k = 0; k < 10; ++k) {
    int64_t r = int64_t(deep.size());
    deep.push_back({fz::Op::kReduceMax, r - 1});
    deep.push_back({fz::Op::kSub, 1, r});
  }
  deep.push_back({fz::Op::kStore, 0, int64_t(deep.size()) - 1, kF32});
  bad(deep, "passes over a row");
  // Valid: a sum stored per row and its broadcast per element.
  fz::Program ok;
  ok.code = {{fz::Op::kRow, 4}, {fz::Op::kLoad, 0, kF32}, {fz::Op::kReduceSum, 1}, {fz::Op::kStore, 0, 2, kF32}, {fz::Op::kStore, 1, 2, kF32, -1}};
  auto d = fz::Decode(ok.Encode(), {});
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d->passes, 2);
  EXPECT_EQ(d->row, 4);
}

}  // namespace
}  // namespace precis
