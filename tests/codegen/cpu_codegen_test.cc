// Generated x86 code for fused elementwise programs (compiler/codegen/cpu_codegen.h) against the
// reference interpreter (runtime/kernels/fused_program.h), bit for bit: random programs over
// every op, dtype and kind of load (full, one element, periodic), on random data and special values (NaN, +-inf, -0, denormals, FP16
// overflow, rounding ties), for element counts around the vector widths; the object loader
// (runtime/cpu/elf_module.h) on valid and damaged objects; program decoding on malformed code.
#include <elf.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>
#include <random>
#include <regex>
#include <set>

#include <gtest/gtest.h>

#include "compiler/codegen/cpu_codegen.h"
#include "runtime/base/cpu_features.h"
#include "runtime/base/half.h"
#include "runtime/cpu/elf_module.h"
#include "runtime/cpu/kernels/fast_math.h"
#include "runtime/kernels/approx_math.h"
#include "runtime/kernels/fused_program.h"
#include "tests/codegen/codegen_test_util.h"
#include "tests/codegen/random_program.h"

namespace precis {
namespace {

namespace fz = rt::fused;

float SpecialOrRandom(std::mt19937& rng, bool special) {
  static const float kSpecial[] = {NAN, INFINITY, -INFINITY, -0.0f, 0.0f, 1e-40f, -1e-45f, 7e4f, -7e4f, 3e38f, 65504.0f, 65520.0f,
                                   1.0f + 0x1p-11f, 1.0f + 3 * 0x1p-11f, 1.0f + 0x1p-8f, 2.5f, -2.5f, 6.0f};
  if (special) return kSpecial[rng() % (sizeof kSpecial / sizeof kSpecial[0])];
  return std::normal_distribution<float>(0.0f, 3.0f)(rng);
}

struct Buffers {
  std::vector<std::vector<uint8_t>> in, out_gen, out_ref;
};

Buffers MakeBuffers(const fz::Program& p, int64_t n, std::mt19937& rng, bool special) {
  Buffers b;
  for (int i = 0; i < p.num_inputs; ++i) {
    DataType t = p.InputDtype(i);
    int64_t count = p.InputBroadcast(i) ? p.InputLoad(i)->d : n;
    std::vector<uint8_t> bytes(size_t(count) * DataTypeSize(t));
    for (int64_t k = 0; k < count; ++k) {
      float v = SpecialOrRandom(rng, special);
      if (t == DataType::kF32) std::memcpy(bytes.data() + 4 * k, &v, 4);
      uint16_t h = t == DataType::kF16 ? FloatToHalf(v) : FloatToBf16(v);
      if (t != DataType::kF32) std::memcpy(bytes.data() + 2 * k, &h, 2);
    }
    b.in.push_back(std::move(bytes));
  }
  for (int o = 0; o < p.num_outputs; ++o) {
    b.out_gen.emplace_back(size_t(n) * DataTypeSize(p.OutputDtype(o)), 0xab);
    b.out_ref.emplace_back(size_t(n) * DataTypeSize(p.OutputDtype(o)), 0xcd);
  }
  return b;
}

TEST(CpuCodegen, RandomProgramsMatchTheInterpreterBitForBit) {
  std::mt19937 rng(11);
  std::vector<fz::Program> programs;
  for (int k = 0; k < 60; ++k) programs.push_back(RandomProgram(rng));
  std::set<std::string> with_body;  // every program gets the body for outputs over other inputs
  for (const fz::Program& p : programs) with_body.insert(p.EntryName());
  auto modules = codegen::GenerateCpuModules(programs, with_body);
  ASSERT_TRUE(modules.ok()) << modules.status().ToString();
  ASSERT_EQ(modules->size(), 2u);
  std::string why;
  auto loaded = LoadAllForHost(*modules, &why);
  if (loaded.empty()) GTEST_SKIP() << why;
  int compared = 0, in_place = 0, aliased = 0;
  for (const auto& [target, module] : loaded)
  for (const fz::Program& p : programs) {
    SCOPED_TRACE(target);
    auto entry = reinterpret_cast<Entry>(const_cast<void*>(module->Find(p.EntryName())));
    ASSERT_NE(entry, nullptr) << p.EntryName();
    for (int64_t n : {1, 7, 31, 32, 33, 64, 4096, 4099}) {
      for (bool special : {false, true}) {
        Buffers b = MakeBuffers(p, n, rng, special);
        std::vector<const void*> in;
        std::vector<void*> gen, ref;
        for (auto& v : b.in) in.push_back(v.data());
        for (auto& v : b.out_gen) gen.push_back(v.data());
        for (auto& v : b.out_ref) ref.push_back(v.data());
        std::vector<float> regs(p.code.size() * size_t(fz::kBlock));
        fz::Evaluate(p, in.data(), ref.data(), 0, n, regs.data());
        // Two chunks, as threads call it: [0, n/3) and [n/3, n).
        entry(in.data(), gen.data(), 0, n / 3);
        entry(in.data(), gen.data(), n / 3, n);
        for (int o = 0; o < p.num_outputs; ++o) {
          DataType t = p.OutputDtype(o);
          size_t w = DataTypeSize(t);
          for (int64_t i = 0; i < n; ++i) {
            if (!SameValue(t, b.out_gen[size_t(o)].data() + size_t(i) * w, b.out_ref[size_t(o)].data() + size_t(i) * w)) {
              ADD_FAILURE() << p.EntryName() << " output " << o << " element " << i << " of " << n << (special ? " (special values)" : "");
              break;
            }
          }
          ++compared;
        }
        // In place (output 0 over input 0), where the program allows it: the same bits.
        if (p.InPlaceOk()) {
          std::vector<uint8_t> shared = b.in[0];
          in[0] = shared.data();
          gen[0] = shared.data();
          entry(in.data(), gen.data(), 0, n / 2);
          entry(in.data(), gen.data(), n / 2, n);
          DataType t = p.OutputDtype(0);
          size_t w = DataTypeSize(t);
          for (int64_t i = 0; i < n; ++i)
            if (!SameValue(t, shared.data() + size_t(i) * w, b.out_ref[0].data() + size_t(i) * w)) {
              ADD_FAILURE() << p.EntryName() << " in place, element " << i << " of " << n;
              break;
            }
          ++in_place;
        }
        // Any other output over an input it may take (a training plan's optimizer writing a
        // weight and its moments over their old values): every output keeps its bits.
        for (int i = 0; i < p.num_inputs; ++i)
          for (int o = 0; o < p.num_outputs; ++o) {
            if ((i == 0 && o == 0) || !p.InPlaceOk(i, o)) continue;
            for (size_t k = 0; k < b.in.size(); ++k) in[k] = b.in[k].data();
            for (size_t k = 0; k < b.out_gen.size(); ++k) gen[k] = b.out_gen[k].data();
            std::vector<uint8_t> shared = b.in[size_t(i)];
            shared.resize(std::max(shared.size(), b.out_gen[size_t(o)].size()));
            in[size_t(i)] = shared.data();
            gen[size_t(o)] = shared.data();
            entry(in.data(), gen.data(), 0, n / 2);
            entry(in.data(), gen.data(), n / 2, n);
            for (int q = 0; q < p.num_outputs; ++q) {
              DataType t = p.OutputDtype(q);
              size_t w = DataTypeSize(t);
              const uint8_t* got = static_cast<const uint8_t*>(gen[size_t(q)]);
              for (int64_t e = 0; e < n; ++e)
                if (!SameValue(t, got + size_t(e) * w, b.out_ref[size_t(q)].data() + size_t(e) * w)) {
                  ADD_FAILURE() << p.EntryName() << " output " << o << " over input " << i << ": output " << q << " element " << e << " of " << n;
                  break;
                }
            }
            ++aliased;
          }
      }
    }
  }
  EXPECT_GT(in_place, 0);
  EXPECT_GT(aliased, 0);
  std::printf("%d program outputs compared over 8 lengths x {random, special}, %d in place, %d with another output over another input, targets:",
              compared, in_place, aliased);
  for (const auto& [target, module] : loaded) std::printf(" %s", target.c_str());
  std::printf("\n");
}

// Every FP16 and every BF16 value through each transcendental: generated code, the interpreter
// (approx_math.h on floats) and the CPU fast kernels' functions (fast_math.h, which evaluate
// approx_math.h too; GELU here in the fast kernels' former formula) agree bit for bit;
// the error against double-precision libm is stated in float ulps (the results stored as FP32).
TEST(CpuCodegen, TranscendentalsAgreeOnEvery16BitValue) {
  const fz::Op ops[] = {fz::Op::kExp, fz::Op::kErf, fz::Op::kTanh, fz::Op::kSigmoid, fz::Op::kGeluErf, fz::Op::kGeluTanh};
  std::vector<fz::Program> programs;
  for (DataType t : {DataType::kF16, DataType::kBF16})
    for (fz::Op op : ops) {
      fz::Program p;
      p.code = {{fz::Op::kLoad, 0, int64_t(t), 0, 0}, {op, 0, 0, 0, 0}, {fz::Op::kStore, 0, 1, int64_t(DataType::kF32), 0}};
      auto d = fz::Decode(p.Encode(), {});
      ASSERT_TRUE(d.ok()) << d.status().ToString();
      programs.push_back(*d);
    }
  auto modules = codegen::GenerateCpuModules(programs);
  ASSERT_TRUE(modules.ok()) << modules.status().ToString();
  std::string why;
  auto loaded = LoadAllForHost(*modules, &why);
  std::vector<uint16_t> all(65536);
  for (size_t i = 0; i < all.size(); ++i) all[i] = uint16_t(i);
  auto fast = [](fz::Op op, float x) {
    switch (op) {
      case fz::Op::kExp: return rt::fast::ExpApprox(x);
      case fz::Op::kErf: return rt::fast::ErfApprox(x);
      case fz::Op::kTanh: return rt::fast::TanhApprox(x);
      case fz::Op::kSigmoid: return rt::fast::SigmoidApprox(x);
      case fz::Op::kGeluErf: return 0.5f * x * (1.0f + rt::fast::ErfApprox(x * 0.7071067811865476f));
      default: return 0.5f * x * (1.0f + rt::fast::TanhApprox(0.7978845608028654f * (x + 0.044715f * x * x * x)));
    }
  };
  auto exact = [](fz::Op op, double x) {
    switch (op) {
      case fz::Op::kExp: return std::exp(x);
      case fz::Op::kErf: return std::erf(x);
      case fz::Op::kTanh: return std::tanh(x);
      case fz::Op::kSigmoid: return 1.0 / (1.0 + std::exp(-x));
      case fz::Op::kGeluErf: return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0)));
      default: return 0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
    }
  };
  for (const fz::Program& p : programs) {
    DataType t = p.InputDtype(0);
    fz::Op op = p.code[1].op;
    std::vector<float> ref(all.size());
    std::vector<std::vector<float>> gens;
    const void* in[] = {all.data()};
    void* out_ref[] = {ref.data()};
    std::vector<float> regs(p.code.size() * size_t(fz::kBlock));
    fz::Evaluate(p, in, out_ref, 0, int64_t(all.size()), regs.data());
    for (const auto& [target, module] : loaded) {
      auto entry = reinterpret_cast<Entry>(const_cast<void*>(module->Find(p.EntryName())));
      ASSERT_NE(entry, nullptr);
      gens.emplace_back(all.size());
      void* out_gen[] = {gens.back().data()};
      entry(in, out_gen, 0, int64_t(all.size()));
    }
    double worst_ulp = 0;
    float worst_x = 0;
    int mismatches = 0;
    for (size_t i = 0; i < all.size(); ++i) {
      float x = t == DataType::kF16 ? HalfToFloat(all[i]) : Bf16ToFloat(all[i]);
      float f = fast(op, x);
      bool same_fast = std::memcmp(&f, &ref[i], 4) == 0 || (std::isnan(f) && std::isnan(ref[i]));
      bool same_gen = true;
      for (const auto& gen : gens) same_gen = same_gen && (std::memcmp(&gen[i], &ref[i], 4) == 0 || (std::isnan(gen[i]) && std::isnan(ref[i])));
      if ((!same_fast || !same_gen) && ++mismatches <= 3)
        ADD_FAILURE() << fz::OpName(op) << " " << DataTypeName(t) << " x=" << x << ": interpreter " << ref[i] << ", fast kernel " << f
                      << (same_gen ? "" : ", generated code differs");
      double e = exact(op, double(x));
      if (!std::isfinite(x) || !std::isfinite(e) || std::fabs(e) < 1e-30 || std::fabs(e) > 3e38) continue;
      // GELU's error is measured in ulps of x (its result near the zero crossing is a tiny
      // difference of large terms; erf's and tanh's absolute error times |x| / 2).
      bool gelu = op == fz::Op::kGeluErf || op == fz::Op::kGeluTanh;
      if (gelu && x == 0) continue;
      double ulp = std::ldexp(1.0, std::max(std::ilogb(gelu ? x : float(e)), -126) - 23);
      double err = std::fabs(double(ref[i]) - e) / ulp;
      if (err > worst_ulp) worst_ulp = err, worst_x = x;
    }
    std::printf("%-10s %-4s all 65536 inputs: generated == interpreter == fast kernel%s; max error %.2f float ulp%s (at x = %g)\n",
                fz::OpName(op), DataTypeName(t), loaded.size() == 2 ? " (v3 and v4)" : loaded.empty() ? " (generated code not run)" : "", worst_ulp,
                op == fz::Op::kGeluErf || op == fz::Op::kGeluTanh ? " of x" : "", double(worst_x));
    // fast_math.h states exp about 1 ulp, erf 8.2e-8 absolute, tanh 1.4e-7 and sigmoid 1.9e-7
    // relative; on the 16-bit inputs every function stays within 4 ulps (GELU: of x).
    EXPECT_LE(worst_ulp, 4.0) << fz::OpName(op) << " " << DataTypeName(t);
  }
  if (loaded.empty()) GTEST_SKIP() << why;
}

TEST(CpuCodegen, ModulesAreSelfContainedAndVectorized) {
  fz::Program p;
  // Compares on a loaded value (Relu) and on a rounded one (inside Erf), arithmetic rounded
  // through FP16: each a pattern InstCombine narrows to `half` when it sees fpext.
  p.code = {{fz::Op::kLoad, 0, int64_t(DataType::kF16), 0}, {fz::Op::kLoad, 1, int64_t(DataType::kF16), 0},
            {fz::Op::kRelu, 0, 0, 0},  {fz::Op::kAdd, 2, 1, 0},
            {fz::Op::kRound, 3, int64_t(DataType::kF16), 0}, {fz::Op::kErf, 4, 0, 0},
            {fz::Op::kStore, 0, 5, int64_t(DataType::kF16)}};
  auto decoded = fz::Decode(p.Encode(), {});
  ASSERT_TRUE(decoded.ok());
  for (const char* target : {"x86-64-v3", "x86-64-v4"}) {
    auto ir = codegen::CpuModuleIr({*decoded, *decoded}, target);
    ASSERT_TRUE(ir.ok()) << ir.status().ToString();
    // The loop is vectorized (FP16 converted in vectors: the x86 intrinsics, or integer
    // operations where LLVM has none), one function per distinct program. No operation on
    // vectors of `half`: x86 without AVX512-FP16 runs those one lane at a time (seen: LLVM's loop
    // vectorizer made `fadd <16 x half>` after InstCombine narrowed fptrunc(fadd(fpext, fpext));
    // InstCombine turned a compare of fpext values into `fcmp olt <16 x half>`).
    EXPECT_NE(ir->find("vcvtps2ph"), std::string::npos) << target << "\n" << *ir;
    if (std::string(target) == "x86-64-v4") {
      EXPECT_NE(ir->find("vcvtph2ps"), std::string::npos) << target;
    }
    const size_t fpexts = CheckFencedHalfWidening(*ir, target);
    if (std::string(target) == "x86-64-v3") {
      EXPECT_GT(fpexts, 0u) << target << ": FP16 loads widened by vcvtph2ps";
    }
    std::smatch m;
    EXPECT_FALSE(std::regex_search(*ir, m, std::regex(R"((fadd|fsub|fmul|fdiv|fcmp [a-z]+|select <\d+ x i1>,) <\d+ x half>)")))
        << target << ": " << m.str(0);
    EXPECT_EQ(ir->find("call void @llvm.mem"), std::string::npos) << target;
    size_t defines = 0;
    for (size_t at = ir->find("define "); at != std::string::npos; at = ir->find("define ", at + 1)) ++defines;
    EXPECT_EQ(defines, 1u) << target;
  }
}

// A periodic load (a last-axis vector: element i % 768) is contiguous within each segment, so
// the element loop still vectorizes: no division in the vector body.
TEST(CpuCodegen, PeriodicLoadsVectorize) {
  fz::Program p;
  p.code = {{fz::Op::kLoad, 0, int64_t(DataType::kF32), 0, 0}, {fz::Op::kLoad, 1, int64_t(DataType::kF32), 1, 768},
            {fz::Op::kLoad, 2, int64_t(DataType::kF32), 3136, 64}, {fz::Op::kAdd, 0, 1, 0, 0}, {fz::Op::kMul, 3, 2, 0, 0},
            {fz::Op::kStore, 0, 4, int64_t(DataType::kF32), 0}};
  auto decoded = fz::Decode(p.Encode(), {});
  ASSERT_TRUE(decoded.ok());
  for (const char* target : {"x86-64-v3", "x86-64-v4"}) {
    auto ir = codegen::CpuModuleIr({*decoded}, target);
    ASSERT_TRUE(ir.ok()) << ir.status().ToString();
    // The emitter's vector body (its label once inlined: vector.body.i).
    std::smatch label;
    ASSERT_TRUE(std::regex_search(*ir, label, std::regex(R"(\nvector\.body(\.i[0-9]*)?:)"))) << target << ": not vectorized\n" << *ir;
    size_t body = size_t(label.position(0)) + 1;
    std::string block = ir->substr(body, ir->find("\n\n", body) - body);
    EXPECT_EQ(block.find("urem"), std::string::npos) << target << "\n" << block;
    EXPECT_EQ(block.find("udiv"), std::string::npos) << target << "\n" << block;
    EXPECT_NE(block.find("load <"), std::string::npos) << target << "\n" << block;
  }
}

TEST(CpuCodegen, DecodeRefusesMalformedPrograms) {
  auto bad = [](std::vector<int64_t> code, std::vector<float> consts, const char* what) {
    auto p = fz::Decode(code, consts);
    EXPECT_FALSE(p.ok()) << what;
    if (!p.ok()) {
      EXPECT_NE(p.status().message().find("fused program"), std::string::npos) << p.status().message();
    }
  };
  const int64_t f32 = int64_t(DataType::kF32);
  // Five ints per instruction: op, a, b, c, d.
  bad({}, {}, "empty");
  bad({0, 0, f32, 0}, {}, "not a multiple of 5");
  bad({0, 0, f32, 0, 0, 99, 0, 0, 0, 0}, {}, "unknown op");
  bad({0, 0, f32, 0, 0, 2, 0, 5, 0, 0, 17, 0, 2, f32, 0}, {}, "register used before definition");
  bad({0, 0, f32, 0, 0, 17, 0, 1, f32, 0}, {}, "store of itself");
  bad({0, 0, f32, 0, 0, 1, 3, 0, 0, 0, 17, 0, 1, f32, 0}, {1.0f}, "constant out of range");
  bad({0, 1, f32, 0, 0, 17, 0, 0, f32, 0}, {}, "input 0 never loaded");
  bad({0, 0, f32, 0, 0, 0, 0, f32, 0, 0, 17, 0, 0, f32, 0}, {}, "input loaded twice");
  bad({0, 0, 7, 0, 0, 17, 0, 0, f32, 0}, {}, "integer dtype");
  bad({0, 0, f32, 0, 0, 17, 0, 0, f32, 0, 17, 0, 0, f32, 0}, {}, "output stored twice");
  bad({0, 0, f32, 0, 0, 16, 0, f32, 0, 0, 17, 0, 1, f32, 0}, {}, "round to f32");
  bad({0, 0, f32, 0, 2, 17, 0, 0, f32, 0}, {}, "count without inner");
  bad({0, 0, f32, 2, 0, 17, 0, 0, f32, 0}, {}, "inner without count");
  bad({0, 0, f32, -1, 4, 17, 0, 0, f32, 0}, {}, "negative inner");
  bad({0, 0, f32, 1, int64_t(1) << 41, 17, 0, 0, f32, 0}, {}, "count too large");
  bad({0, 0, f32, 0, 0}, {}, "no store");
  EXPECT_TRUE(fz::Decode({0, 0, f32, 0, 0, 17, 0, 0, f32, 0}, {}).ok());
  EXPECT_TRUE(fz::Decode({0, 0, f32, 4, 3, 17, 0, 0, f32, 0}, {}).ok());
}

std::vector<uint8_t> SmallObject() {
  fz::Program p;
  p.code = {{fz::Op::kLoad, 0, int64_t(DataType::kF32), 0}, {fz::Op::kConst, 0, 0, 0}, {fz::Op::kMul, 0, 1, 0},
            {fz::Op::kStore, 0, 2, int64_t(DataType::kF32)}};
  p.consts = {3.0f};
  auto decoded = fz::Decode(p.Encode(), p.consts);
  EXPECT_TRUE(decoded.ok());
  auto modules = codegen::GenerateCpuModules({*decoded});
  EXPECT_TRUE(modules.ok());
  return modules.ok() ? (*modules)[1].object : std::vector<uint8_t>{};  // x86-64-v3
}

TEST(ElfModule, LoadsGeneratedCodeAndRefusesDamagedObjects) {
  std::vector<uint8_t> obj = SmallObject();
  ASSERT_FALSE(obj.empty());
  auto ok = rt::ElfModule::Load(obj.data(), obj.size());
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ((*ok)->Find("no_such_function"), nullptr);
  // Every truncation is refused, never a crash.
  for (size_t n = 0; n < obj.size(); ++n) {
    auto m = rt::ElfModule::Load(obj.data(), n);
    if (m.ok()) ADD_FAILURE() << "a truncation to " << n << " bytes loaded";
  }
  // Random damage to the headers and tables (the code bytes themselves are not checked: the
  // plan's hash covers them) is refused or loads, never crashes.
  std::mt19937 rng(5);
  const auto* eh = reinterpret_cast<const Elf64_Ehdr*>(obj.data());
  size_t tables = size_t(eh->e_shoff);
  int refused = 0;
  for (int k = 0; k < 3000; ++k) {
    std::vector<uint8_t> bad = obj;
    for (int j = 0; j < 1 + int(rng() % 4); ++j) {
      size_t at = rng() % 2 ? rng() % 64 : tables + rng() % (bad.size() - tables);
      bad[at] = uint8_t(rng());
    }
    auto m = rt::ElfModule::Load(bad.data(), bad.size());
    refused += !m.ok();
  }
  EXPECT_GT(refused, 0);
  std::printf("3000 damaged objects: %d refused, the rest loaded without a crash\n", refused);

  auto refuse = [&](std::vector<uint8_t> bad, const char* want) {
    auto m = rt::ElfModule::Load(bad.data(), bad.size());
    ASSERT_FALSE(m.ok()) << want;
    EXPECT_NE(m.status().message().find(want), std::string::npos) << m.status().message();
  };
  std::vector<uint8_t> other = obj;
  reinterpret_cast<Elf64_Ehdr*>(other.data())->e_machine = EM_AARCH64;
  refuse(other, "not an x86-64 relocatable object");
  // A defined function turned into an import.
  std::vector<uint8_t> imports = obj;
  auto* h = reinterpret_cast<Elf64_Ehdr*>(imports.data());
  auto* sh = reinterpret_cast<Elf64_Shdr*>(imports.data() + h->e_shoff);
  for (int i = 0; i < h->e_shnum; ++i) {
    if (sh[i].sh_type != SHT_SYMTAB) continue;
    auto* syms = reinterpret_cast<Elf64_Sym*>(imports.data() + sh[i].sh_offset);
    for (size_t k = 1; k < sh[i].sh_size / sizeof(Elf64_Sym); ++k)
      if (ELF64_ST_TYPE(syms[k].st_info) == STT_FUNC) syms[k].st_shndx = SHN_UNDEF;
  }
  refuse(imports, "imports");
  // A writable allocated section.
  std::vector<uint8_t> writable = obj;
  h = reinterpret_cast<Elf64_Ehdr*>(writable.data());
  sh = reinterpret_cast<Elf64_Shdr*>(writable.data() + h->e_shoff);
  for (int i = 0; i < h->e_shnum; ++i)
    if (sh[i].sh_flags & SHF_EXECINSTR) sh[i].sh_flags |= SHF_WRITE;
  refuse(writable, "writable");
  // elf_fuzz's first find: a loaded section of type SHT_NULL claiming 1 GiB beyond the file.
  std::ifstream crash(std::string(PRECIS_SOURCE_DIR) + "/tests/fuzz/elf_seeds/crash-ce2f739369d5fc0389c9748510bce5e2f496d54d", std::ios::binary);
  ASSERT_TRUE(crash.good());
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(crash)), std::istreambuf_iterator<char>());
  refuse(bytes, "no type");
}

}  // namespace
}  // namespace precis
