// Host emulation check of the CUDA elementwise family against the CPU reference kernels.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "runtime/base/half.h"
#include "runtime/cpu/kernel.h"
#include "runtime/cpu/kernels/register.h"
#include "runtime/cpu/widen_kernel.h"
#include "runtime/cuda/kernels/elementwise.cuh"
#include "tests/runtime/kernel_test_util.h"

using namespace precis;
using namespace precis::rt;
namespace cu = precis::rt::cuda;
using testing::AttrList;

namespace precis::rt {
void RegisterAllCpuKernels(KernelRegistry&) {}
namespace cuda {
void RegisterAllCudaKernels(KernelRegistry&) {}
}  // namespace cuda
}  // namespace precis::rt

static int g_cases = 0, g_fail = 0, g_unimpl = 0, g_both_err = 0;
static std::mt19937_64 rng(12345);

struct Buf {
  DataType dt = DataType::kF32;
  std::vector<int64_t> dims;
  int64_t numel = 0;
  size_t es = 4;
  std::shared_ptr<uint8_t> mem;
  uint8_t* data = nullptr;
  bool constant = false;
  Tensor T() const {
    Tensor t;
    t.name = "t";
    t.dtype = dt;
    t.dims = dims;
    t.numel = numel;
    t.bytes = size_t(numel) * es;
    t.data = data;
    t.is_constant = constant;
    return t;
  }
};

Buf Alloc(DataType dt, std::vector<int64_t> dims, bool unaligned = false) {
  Buf b;
  b.dt = dt;
  b.dims = dims;
  b.numel = 1;
  for (auto d : dims) b.numel *= d;
  b.es = DataTypeSize(dt);
  size_t bytes = size_t(b.numel) * b.es + 128;
  bytes = (bytes + 63) / 64 * 64;
  uint8_t* m = static_cast<uint8_t*>(std::aligned_alloc(64, bytes));
  std::memset(m, 0xcd, bytes);
  b.mem.reset(m, [](uint8_t* p) { std::free(p); });
  b.data = m + (unaligned ? b.es : 0);
  return b;
}

double RandFloat() {
  static const double specials[] = {0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 1.5, 2.5, -2.5, 3.0, INFINITY, -INFINITY, NAN, 1e30, -1e30, 1e-40, 65504, 70000, 1e-6, 0.99, 1.01, 6.0, -6.0, 3.0, -3.0};
  std::uniform_real_distribution<double> u(-3, 3), w(-100, 100);
  int k = int(rng() % 10);
  if (k < 6) return u(rng);
  if (k < 8) return w(rng);
  return specials[rng() % (sizeof(specials) / sizeof(double))];
}

template <typename I> I RandInt() {
  int k = int(rng() % 10);
  if (k < 5) {
    int64_t v = int64_t(rng() % 21) - (std::is_signed_v<I> ? 10 : 0);
    return I(v);
  }
  if (k < 7) return I(rng());
  const I edges[] = {I(0), I(1), I(-1), std::numeric_limits<I>::min(), std::numeric_limits<I>::max(), I(std::numeric_limits<I>::min() + 1), I(2), I(sizeof(I) * 8)};
  return edges[rng() % 8];
}

void Fill(Buf& b, bool positive_small = false) {
  for (int64_t i = 0; i < b.numel; ++i) {
    uint8_t* p = b.data + size_t(i) * b.es;
    double v = RandFloat();
    if (positive_small) v = double(rng() % 7);
    switch (b.dt) {
      case DataType::kF32: { float f = float(v); std::memcpy(p, &f, 4); break; }
      case DataType::kF64: { std::memcpy(p, &v, 8); break; }
      case DataType::kF16: { uint16_t h = FloatToHalf(float(v)); std::memcpy(p, &h, 2); break; }
      case DataType::kBF16: { uint16_t h = FloatToBf16(float(v)); std::memcpy(p, &h, 2); break; }
      case DataType::kBool: { uint8_t x = uint8_t(rng() % 7 == 0 ? 2 : rng() % 2); *p = x; break; }
#define INT_CASE(DT, I) \
  case DT: { I x = positive_small ? I(rng() % 7) : RandInt<I>(); std::memcpy(p, &x, sizeof(I)); break; }
      INT_CASE(DataType::kI8, int8_t)
      INT_CASE(DataType::kU8, uint8_t)
      INT_CASE(DataType::kI16, int16_t)
      INT_CASE(DataType::kU16, uint16_t)
      INT_CASE(DataType::kI32, int32_t)
      INT_CASE(DataType::kU32, uint32_t)
      INT_CASE(DataType::kI64, int64_t)
      INT_CASE(DataType::kU64, uint64_t)
#undef INT_CASE
      default: break;
    }
  }
}

std::string Show(DataType dt, const uint8_t* p) {
  char buf[64];
  switch (dt) {
    case DataType::kF32: { float f; std::memcpy(&f, p, 4); snprintf(buf, 64, "%.9g", f); break; }
    case DataType::kF64: { double f; std::memcpy(&f, p, 8); snprintf(buf, 64, "%.17g", f); break; }
    case DataType::kF16: { uint16_t h; std::memcpy(&h, p, 2); snprintf(buf, 64, "%.6g(0x%04x)", HalfToFloat(h), h); break; }
    case DataType::kBF16: { uint16_t h; std::memcpy(&h, p, 2); snprintf(buf, 64, "%.6g(0x%04x)", Bf16ToFloat(h), h); break; }
    default: {
      uint64_t v = 0;
      std::memcpy(&v, p, DataTypeSize(dt));
      snprintf(buf, 64, "0x%llx", (unsigned long long)v);
    }
  }
  return buf;
}

bool IsNanAt(DataType dt, const uint8_t* p) {
  switch (dt) {
    case DataType::kF32: { float f; std::memcpy(&f, p, 4); return f != f; }
    case DataType::kF64: { double f; std::memcpy(&f, p, 8); return f != f; }
    case DataType::kF16: { uint16_t h; std::memcpy(&h, p, 2); return (h & 0x7fff) > 0x7c00; }
    case DataType::kBF16: { uint16_t h; std::memcpy(&h, p, 2); return (h & 0x7fff) > 0x7f80; }
    default: return false;
  }
}

struct Runner {
  rt::KernelRegistry cpu;
  cu::KernelRegistry gpu;
  Runner() {
    rt::RegisterElementwiseKernels(cpu);
    rt::RegisterActivationKernels(cpu);
    cu::RegisterElementwiseKernels(gpu);
  }
};
static Runner* R;

std::string DimsStr(const std::vector<int64_t>& d) {
  std::string s = "[";
  for (size_t i = 0; i < d.size(); ++i) s += (i ? "," : "") + std::to_string(d[i]);
  return s + "]";
}

// Runs op on both; inputs may contain nullptr. outs: dtype + dims. Returns false on mismatch.
bool Check(const std::string& op, AttrList& attrs_list, std::vector<Buf*> ins, std::vector<std::pair<DataType, std::vector<int64_t>>> outs,
           const std::string& label, bool unaligned_out = false, bool inplace = false) {
  ++g_cases;
  if (getenv("VERBOSE")) printf("case %s %s\n", op.c_str(), label.c_str()), fflush(stdout);
  Attributes attrs = attrs_list.Finish();
  std::vector<Tensor> tin(ins.size());
  std::vector<Buf> cout, gout;
  for (auto& [dt, dims] : outs) {
    cout.push_back(Alloc(dt, dims, unaligned_out));
    gout.push_back(Alloc(dt, dims, unaligned_out));
  }
  Buf inplace_copy;
  if (inplace) {  // the GPU kernel's output is a copy of input 0
    inplace_copy = Alloc(ins[0]->dt, ins[0]->dims, unaligned_out);
    std::memcpy(inplace_copy.data, ins[0]->data, size_t(ins[0]->numel) * ins[0]->es);
    gout[0] = inplace_copy;
  }
  KernelArgs ca, ga;
  ca.attrs = ga.attrs = attrs;
  ca.node = ga.node = op + " 'x' " + label;
  std::vector<Tensor> tc_out(outs.size()), tg_out(outs.size()), tg_in(ins.size());
  for (size_t i = 0; i < ins.size(); ++i) {
    if (ins[i]) tin[i] = ins[i]->T(), tg_in[i] = ins[i]->T();
    ca.inputs.push_back(ins[i] ? &tin[i] : nullptr);
    ga.inputs.push_back(ins[i] ? &tg_in[i] : nullptr);
  }
  if (inplace) tg_in[0].data = inplace_copy.data;
  for (size_t i = 0; i < outs.size(); ++i) {
    tc_out[i] = cout[i].T();
    tg_out[i] = gout[i].T();
    ca.outputs.push_back(&tc_out[i]);
    ga.outputs.push_back(&tg_out[i]);
  }
  // CPU: plain, else widened (as the session chooses).
  CpuContext cctx;
  std::unique_ptr<rt::Kernel> ck = R->cpu.Find(op)();
  // Mixed float steps go widened directly (the reference Relu does not check its output dtype).
  bool mixed = op == "Relu" && WidenKernel::HasMixedFloatTensors(ca);
  Status cs = mixed ? Unimplemented("mixed") : ck->Init(ca, cctx);
  if (!cs.ok() && WidenKernel::HasHalfTensors(ca)) {
    auto w = std::make_unique<WidenKernel>(R->cpu.Find(op)());
    Status ws = w->Init(ca, cctx);
    if (ws.ok()) {
      ck = std::move(w);
      cs = ws;
    }
  }
  cu::CudaContext gctx;
  int flag = 0;
  gctx.error = &flag;
  std::unique_ptr<cu::Kernel> gk = R->gpu.Find(op)();
  Status gs = gk->Init(ga, gctx);
  if (!gs.ok() && gs.code() == StatusCode::kUnimplemented && cs.ok()) {
    ++g_unimpl;
    printf("  unimplemented (%s): %s\n", label.c_str(), gs.ToString().c_str());
    return true;
  }
  if (!cs.ok() || !gs.ok()) {
    if (cs.ok() != gs.ok()) {
      ++g_fail;
      printf("FAIL %s %s: init cpu=%s gpu=%s\n", op.c_str(), label.c_str(), cs.ToString().c_str(), gs.ToString().c_str());
      return false;
    }
    ++g_both_err;
    return true;
  }
  std::vector<uint8_t> cscratch(ck->ScratchBytes() + 64), gscratch(gk->ScratchBytes() + 64);
  cctx.scratch = cscratch.data();
  gctx.scratch = gscratch.data();
  Status cr = ck->Run(ca, cctx);
  Status gr = gk->Run(ga, gctx);
  bool cpu_err = !cr.ok(), gpu_err = !gr.ok() || flag != 0;
  if (cpu_err != gpu_err) {
    ++g_fail;
    printf("FAIL %s %s: run cpu=%s gpu=%s flag=%d\n", op.c_str(), label.c_str(), cr.ToString().c_str(), gr.ToString().c_str(), flag);
    return false;
  }
  if (cpu_err) return true;
  bool ok = true;
  for (size_t o = 0; o < outs.size(); ++o) {
    int bad = 0;
    for (int64_t i = 0; i < cout[o].numel; ++i) {
      const uint8_t* a = cout[o].data + size_t(i) * cout[o].es;
      const uint8_t* b = gout[o].data + size_t(i) * gout[o].es;
      if (std::memcmp(a, b, cout[o].es) == 0) continue;
      if (IsNanAt(cout[o].dt, a) && IsNanAt(cout[o].dt, b)) continue;
      if (bad++ < 4) {
        std::string inv;
        for (auto* in : ins)
          if (in && in->numel == cout[o].numel) inv += " in=" + Show(in->dt, in->data + size_t(i) * in->es);
        printf("FAIL %s %s out%zu[%lld]: cpu=%s gpu=%s%s\n", op.c_str(), label.c_str(), o, (long long)i, Show(cout[o].dt, a).c_str(),
               Show(cout[o].dt, b).c_str(), inv.c_str());
      }
    }
    // Bytes past the end must be untouched.
    size_t end = size_t(gout[o].numel) * gout[o].es;
    if (!inplace && gout[o].data[end] != 0xcd) {
      printf("FAIL %s %s: wrote past the end\n", op.c_str(), label.c_str());
      bad++;
    }
    if (bad) ok = false;
  }
  if (!ok) ++g_fail;
  return ok;
}

const std::vector<DataType> kFloats = {DataType::kF32, DataType::kF16, DataType::kBF16, DataType::kF64};
const std::vector<DataType> kInts = {DataType::kI8, DataType::kU8, DataType::kI16, DataType::kU16, DataType::kI32, DataType::kU32, DataType::kI64, DataType::kU64};
std::vector<DataType> Numeric() {
  auto v = kFloats;
  v.insert(v.end(), kInts.begin(), kInts.end());
  return v;
}
std::vector<DataType> AllTypes() {
  auto v = Numeric();
  v.push_back(DataType::kBool);
  return v;
}
const std::vector<std::pair<DataType, DataType>> kMixed = {{DataType::kF16, DataType::kF32}, {DataType::kF32, DataType::kF16}, {DataType::kBF16, DataType::kF32},
                                                           {DataType::kF32, DataType::kBF16}, {DataType::kF16, DataType::kBF16}, {DataType::kBF16, DataType::kF16}};

std::string L(DataType a, DataType b, const std::vector<int64_t>& d, const char* extra = "") {
  return std::string(DataTypeName(a)) + "->" + DataTypeName(b) + " " + DimsStr(d) + extra;
}

void UnaryTests() {
  struct U { const char* op; bool ints; std::function<void(AttrList&)> attrs; };
  std::vector<U> ops = {
      {"Abs", true, nullptr}, {"Neg", true, nullptr}, {"Sign", true, nullptr}, {"Relu", true, nullptr},
      {"Exp", false, nullptr}, {"Log", false, nullptr}, {"Sqrt", false, nullptr}, {"Reciprocal", false, nullptr},
      {"Floor", false, nullptr}, {"Ceil", false, nullptr}, {"Round", false, nullptr}, {"Sin", false, nullptr},
      {"Cos", false, nullptr}, {"Tan", false, nullptr}, {"Asin", false, nullptr}, {"Acos", false, nullptr},
      {"Atan", false, nullptr}, {"Sinh", false, nullptr}, {"Cosh", false, nullptr}, {"Asinh", false, nullptr},
      {"Acosh", false, nullptr}, {"Atanh", false, nullptr}, {"Tanh", false, nullptr}, {"Erf", false, nullptr},
      {"Sigmoid", false, nullptr}, {"Softplus", false, nullptr}, {"Softsign", false, nullptr}, {"Mish", false, nullptr},
      {"HardSwish", false, nullptr}, {"Elu", false, nullptr}, {"Elu", false, [](AttrList& a) { a.Float("alpha", 0.37f); }},
      {"Selu", false, nullptr}, {"Selu", false, [](AttrList& a) { a.Float("alpha", 1.3f).Float("gamma", 0.7f); }},
      {"Celu", false, nullptr}, {"Celu", false, [](AttrList& a) { a.Float("alpha", 2.1f); }},
      {"Celu", false, [](AttrList& a) { a.Float("alpha", 0.0f); }},
      {"LeakyRelu", false, nullptr}, {"LeakyRelu", false, [](AttrList& a) { a.Float("alpha", 0.3f); }},
      {"ThresholdedRelu", false, nullptr}, {"ThresholdedRelu", false, [](AttrList& a) { a.Float("alpha", 0.2f); }},
      {"HardSigmoid", false, nullptr}, {"HardSigmoid", false, [](AttrList& a) { a.Float("alpha", 0.3f).Float("beta", 0.4f); }},
      {"Gelu", false, nullptr}, {"Gelu", false, [](AttrList& a) { a.String("approximate", "tanh"); }},
      {"Gelu", false, [](AttrList& a) { a.String("approximate", "bogus"); }},
  };
  std::vector<std::vector<int64_t>> shapes = {{3, 5, 7}, {17}, {1}, {0, 4}, {}};
  for (auto& u : ops) {
    std::vector<DataType> types = u.ints ? Numeric() : AllTypes();  // bool/ints for float ops: both must refuse
    for (DataType t : types) {
      for (auto& s : shapes) {
        for (int unal = 0; unal < 2; ++unal) {
          Buf x = Alloc(t, s, unal);
          Fill(x);
          AttrList a;
          if (u.attrs) u.attrs(a);
          Check(u.op, a, {&x}, {{t, s}}, L(t, t, s, unal ? " unaligned" : ""), unal);
        }
      }
    }
    for (auto [ti, to] : kMixed) {
      Buf x = Alloc(ti, {3, 5, 7});
      Fill(x);
      AttrList a;
      if (u.attrs) u.attrs(a);
      Check(u.op, a, {&x}, {{to, {3, 5, 7}}}, L(ti, to, {3, 5, 7}, " mixed"));
    }
    // In place.
    for (DataType t : {DataType::kF32, DataType::kF16}) {
      Buf x = Alloc(t, {9, 9});
      Fill(x);
      AttrList a;
      if (u.attrs) u.attrs(a);
      Check(u.op, a, {&x}, {{t, {9, 9}}}, L(t, t, {9, 9}, " inplace"), false, true);
    }
  }
  // Not / BitwiseNot / IsNaN / IsInf.
  for (DataType t : AllTypes()) {
    Buf x = Alloc(t, {5, 13});
    Fill(x);
    for (const char* op : {"Not", "BitwiseNot"}) {
      AttrList a;
      Check(op, a, {&x}, {{t, {5, 13}}}, L(t, t, {5, 13}));
    }
    for (const char* op : {"IsNaN", "IsInf"}) {
      for (int neg = 0; neg < 2; ++neg)
        for (int pos = 0; pos < 2; ++pos) {
          AttrList a;
          a.Int("detect_negative", neg).Int("detect_positive", pos);
          Check(op, a, {&x}, {{DataType::kBool, {5, 13}}}, L(t, DataType::kBool, {5, 13}));
        }
    }
  }
  // Clip.
  for (DataType t : Numeric()) {
    for (int form = 0; form < 6; ++form) {
      Buf x = Alloc(t, {4, 33}), lo = Alloc(t, {}), hi = Alloc(t, form == 5 ? std::vector<int64_t>{1} : std::vector<int64_t>{});
      Fill(x);
      Fill(lo);
      Fill(hi);
      AttrList a;
      std::vector<Buf*> ins = {&x};
      if (form == 0) a.Float("min", -0.5f).Float("max", 1.25f);  // the kernel form of Clip before 11
      if (form == 1) a.Float("min", -INFINITY).Float("max", INFINITY);  // ... with the default bounds
      if (form == 2) ins = {&x, &lo, &hi};
      if (form == 3) ins = {&x, nullptr, &hi};
      if (form == 4) ins = {&x, &lo};
      if (form == 5) ins = {&x, &lo, &hi};
      for (int unal = 0; unal < 2; ++unal)
        Check("Clip", a, ins, {{t, {4, 33}}}, L(t, t, {4, 33}, (" form" + std::to_string(form) + (unal ? " unal" : "")).c_str()), unal);
    }
  }
  for (auto [ti, to] : kMixed) {
    Buf x = Alloc(ti, {4, 33}), lo = Alloc(ti, {}), hi = Alloc(ti, {});
    Fill(x);
    Fill(lo);
    Fill(hi);
    AttrList a;
    Check("Clip", a, {&x, &lo, &hi}, {{to, {4, 33}}}, L(ti, to, {4, 33}, " clip mixed"));
  }
  {
    Buf x = Alloc(DataType::kF32, {4, 4}), lo = Alloc(DataType::kF32, {2});
    AttrList a;
    Check("Clip", a, {&x, &lo}, {{DataType::kF32, {4, 4}}}, "clip non-scalar");
  }
}

struct Shapes {
  std::vector<int64_t> a, b, y;
};
const std::vector<Shapes> kBinaryShapes = {
    {{3, 5, 7}, {3, 5, 7}, {3, 5, 7}},
    {{2, 3, 5, 7}, {7}, {2, 3, 5, 7}},
    {{2, 3, 5, 7}, {3, 1, 1}, {2, 3, 5, 7}},
    {{2, 1, 5, 1}, {3, 1, 7}, {2, 3, 5, 7}},
    {{4, 9}, {}, {4, 9}},
    {{1}, {4, 9}, {4, 9}},
    {{}, {}, {}},
    {{0, 3}, {3}, {0, 3}},
    {{2, 1, 3, 1, 2, 1, 3, 1, 2}, {1, 2, 1, 3, 1, 2, 1, 3, 1}, {2, 2, 3, 3, 2, 2, 3, 3, 2}},
    {{2, 1, 2, 1, 2, 1, 2, 1, 2, 1}, {1, 2, 1, 2, 1, 2, 1, 2, 1, 2}, {2, 2, 2, 2, 2, 2, 2, 2, 2, 2}},
    {{6, 1}, {1, 6}, {6, 6}},
    {{33}, {33}, {33}},
};

void BinaryTests() {
  struct B { const char* op; std::vector<DataType> types; std::function<void(AttrList&)> attrs; bool mixed; };
  std::vector<B> ops = {
      {"Add", Numeric(), nullptr, true}, {"Sub", Numeric(), nullptr, true}, {"Mul", Numeric(), nullptr, true},
      {"Div", Numeric(), nullptr, true}, {"Mod", Numeric(), nullptr, true},
      {"Mod", Numeric(), [](AttrList& a) { a.Int("fmod", 1); }, true}, {"PRelu", Numeric(), nullptr, true},
      {"And", AllTypes(), nullptr, false}, {"Or", {DataType::kBool, DataType::kU8}, nullptr, false},
      {"Xor", {DataType::kBool}, nullptr, false},
      {"BitwiseAnd", AllTypes(), nullptr, false}, {"BitwiseOr", kInts, nullptr, false}, {"BitwiseXor", kInts, nullptr, false},
      {"BitShift", AllTypes(), [](AttrList& a) { a.String("direction", "LEFT"); }, false},
      {"BitShift", kInts, [](AttrList& a) { a.String("direction", "RIGHT"); }, false},
      {"BitShift", {DataType::kU8}, [](AttrList& a) { a.String("direction", "UP"); }, false},
      {"Equal", AllTypes(), nullptr, false}, {"Greater", AllTypes(), nullptr, false}, {"GreaterOrEqual", AllTypes(), nullptr, false},
      {"Less", AllTypes(), nullptr, false}, {"LessOrEqual", AllTypes(), nullptr, false},
  };
  for (auto& bo : ops) {
    bool cmp = std::string(bo.op).find("Equal") != std::string::npos || std::string(bo.op).find("Greater") != std::string::npos ||
               std::string(bo.op).find("Less") != std::string::npos;
    for (DataType t : bo.types) {
      for (auto& sh : kBinaryShapes) {
        for (int unal = 0; unal < 2; ++unal) {
          Buf a = Alloc(t, sh.a, unal), b = Alloc(t, sh.b, unal);
          Fill(a);
          Fill(b);
          AttrList at;
          if (bo.attrs) bo.attrs(at);
          Check(bo.op, at, {&a, &b}, {{cmp ? DataType::kBool : t, sh.y}}, L(t, t, sh.y, unal ? " unal" : ""), unal);
        }
      }
      // In place on input 0.
      Buf a = Alloc(t, {7, 9}), b = Alloc(t, {9});
      Fill(a);
      Fill(b);
      AttrList at;
      if (bo.attrs) bo.attrs(at);
      if (!cmp) Check(bo.op, at, {&a, &b}, {{t, {7, 9}}}, L(t, t, {7, 9}, " inplace"), false, true);
    }
    if (bo.mixed)
      for (auto [ti, to] : kMixed) {
        Buf a = Alloc(ti, {3, 5, 7}), b = Alloc(ti, {5, 1});
        Fill(a);
        Fill(b);
        AttrList at;
        if (bo.attrs) bo.attrs(at);
        Check(bo.op, at, {&a, &b}, {{to, {3, 5, 7}}}, L(ti, to, {3, 5, 7}, " mixed"));
        Buf c = Alloc(ti, {16});
        Fill(c);
        AttrList at2;
        if (bo.attrs) bo.attrs(at2);
        Check(bo.op, at2, {&c, &c}, {{to, {16}}}, L(ti, to, {16}, " mixed flat"));
      }
    // Operand dtypes differ.
    Buf a = Alloc(DataType::kF16, {4}), b = Alloc(DataType::kF32, {4});
    Fill(a);
    Fill(b);
    AttrList at;
    if (bo.attrs) bo.attrs(at);
    Check(bo.op, at, {&a, &b}, {{cmp ? DataType::kBool : DataType::kF32, {4}}}, "f16+f32");
  }
  // PRelu before opset 7 (kernel form "slope_per_channel"): per-channel 1-D slope.
  for (DataType t : {DataType::kF32, DataType::kI32}) {
    Buf x = Alloc(t, {2, 3, 4, 5}), s = Alloc(t, {3});
    Fill(x);
    Fill(s);
    AttrList at;
    at.Int("slope_per_channel", 1);
    Check("PRelu", at, {&x, &s}, {{t, {2, 3, 4, 5}}}, "prelu opset6");
  }
  // Pow.
  for (DataType tb : AllTypes()) {
    for (DataType te : AllTypes()) {
      for (auto& sh : {kBinaryShapes[0], kBinaryShapes[2], kBinaryShapes[4]}) {
        Buf a = Alloc(tb, sh.a), b = Alloc(te, sh.b);
        Fill(a);
        Fill(b, rng() % 2 == 0);
        AttrList at;
        Check("Pow", at, {&a, &b}, {{tb, sh.y}}, L(tb, te, sh.y, " pow"));
      }
    }
  }
  for (auto [ti, to] : kMixed) {
    Buf a = Alloc(ti, {3, 5, 7}), b = Alloc(DataType::kI32, {7});
    Fill(a);
    Fill(b, true);
    AttrList at;
    Check("Pow", at, {&a, &b}, {{to, {3, 5, 7}}}, L(ti, to, {3, 5, 7}, " pow mixed"));
  }
}

void WhereTests() {
  const std::vector<std::vector<std::vector<int64_t>>> shapes = {
      {{3, 5, 7}, {3, 5, 7}, {3, 5, 7}, {3, 5, 7}}, {{5, 1}, {1, 7}, {}, {5, 7}}, {{2, 1, 4}, {3, 1}, {2, 3, 4}, {2, 3, 4}}, {{}, {6}, {1}, {6}}};
  for (DataType t : AllTypes()) {
    for (auto& s : shapes) {
      Buf c = Alloc(DataType::kBool, s[0]), x = Alloc(t, s[1]), y = Alloc(t, s[2]);
      Fill(c);
      Fill(x);
      Fill(y);
      AttrList at;
      Check("Where", at, {&c, &x, &y}, {{t, s[3]}}, L(t, t, s[3], " where"));
    }
  }
  Buf c = Alloc(DataType::kBool, {4}), x = Alloc(DataType::kF16, {4}), y = Alloc(DataType::kF16, {4});
  Fill(c);
  Fill(x);
  Fill(y);
  AttrList at;
  Check("Where", at, {&c, &x, &y}, {{DataType::kF32, {4}}}, "where mixed");
}

void VariadicTests() {
  for (const char* op : {"Max", "Min", "Sum", "Mean"}) {
    for (DataType t : AllTypes()) {
      for (int n : {1, 2, 3, 8, 9, 17}) {
        std::vector<Buf> bufs;
        std::vector<std::vector<int64_t>> dims;
        for (int k = 0; k < n; ++k) {
          int pick = int(rng() % 4);
          dims.push_back(pick == 0 ? std::vector<int64_t>{3, 1, 7} : pick == 1 ? std::vector<int64_t>{7} : pick == 2 ? std::vector<int64_t>{2, 3, 5, 7} : std::vector<int64_t>{5, 1});
        }
        for (int k = 0; k < n; ++k) {
          bufs.push_back(Alloc(t, dims[size_t(k)]));
          Fill(bufs.back());
        }
        std::vector<Buf*> ins;
        for (auto& b : bufs) ins.push_back(&b);
        AttrList at;
        Check(op, at, ins, {{t, {2, 3, 5, 7}}}, L(t, t, {2, 3, 5, 7}, (" n=" + std::to_string(n)).c_str()));
      }
    }
    for (auto [ti, to] : kMixed) {
      std::vector<Buf> bufs;
      for (int k = 0; k < 10; ++k) {
        bufs.push_back(Alloc(ti, k % 2 ? std::vector<int64_t>{6, 5} : std::vector<int64_t>{5}));
        Fill(bufs.back());
      }
      std::vector<Buf*> ins;
      for (auto& b : bufs) ins.push_back(&b);
      AttrList at;
      Check(op, at, ins, {{to, {6, 5}}}, L(ti, to, {6, 5}, " mixed"));
    }
  }
}

void CastTests() {
  for (DataType s : AllTypes()) {
    for (DataType d : AllTypes()) {
      for (int unal = 0; unal < 2; ++unal) {
        Buf x = Alloc(s, {11, 13}, unal);
        Fill(x);
        AttrList at;
        Check("Cast", at, {&x}, {{d, {11, 13}}}, L(s, d, {11, 13}, unal ? " unal" : ""), unal);
      }
    }
  }
  // Exhaustive-ish: every f16 bit pattern and big ints to f16/bf16.
  {
    Buf x = Alloc(DataType::kU16, {65536});
    for (int i = 0; i < 65536; ++i) reinterpret_cast<uint16_t*>(x.data)[i] = uint16_t(i);
    x.dt = DataType::kF16;
    for (DataType d : AllTypes()) {
      AttrList at;
      Check("Cast", at, {&x}, {{d, {65536}}}, std::string("all f16 -> ") + DataTypeName(d));
    }
    x.dt = DataType::kBF16;
    for (DataType d : AllTypes()) {
      AttrList at;
      Check("Cast", at, {&x}, {{d, {65536}}}, std::string("all bf16 -> ") + DataTypeName(d));
    }
  }
  for (DataType s : {DataType::kI64, DataType::kU64, DataType::kI32, DataType::kF64, DataType::kF32}) {
    Buf x = Alloc(s, {100000});
    for (int64_t i = 0; i < x.numel; ++i) {
      uint64_t r = rng();
      int sh = int(rng() % 64);
      uint64_t v = r >> sh;
      if (s == DataType::kF64) {
        double d = std::ldexp(double(r % (1ull << 53)) * (rng() % 2 ? 1 : -1), int(rng() % 300) - 200);
        std::memcpy(x.data + i * 8, &d, 8);
      } else if (s == DataType::kF32) {
        float f = float(std::ldexp(double(r % (1ull << 24)) * (rng() % 2 ? 1 : -1), int(rng() % 120) - 60));
        std::memcpy(x.data + i * 4, &f, 4);
      } else {
        std::memcpy(x.data + i * x.es, &v, x.es);
      }
    }
    for (DataType d : AllTypes()) {
      AttrList at;
      Check("Cast", at, {&x}, {{d, {100000}}}, std::string("wide ") + DataTypeName(s) + " -> " + DataTypeName(d));
    }
  }
}

void PassTests() {
  for (DataType t : AllTypes()) {
    Buf x = Alloc(t, {3, 7});
    Fill(x);
    AttrList at;
    Check("Identity", at, {&x}, {{t, {3, 7}}}, L(t, t, {3, 7}, " identity"));
    for (DataType m : AllTypes()) {
      AttrList at2;
      Check("Dropout", at2, {&x}, {{t, {3, 7}}, {m, {3, 7}}}, L(t, m, {3, 7}, " dropout"));
    }
    Buf ratio = Alloc(DataType::kF32, {}), train = Alloc(DataType::kBool, {});
    // A ratio given at run time: training mode fails the run unless the ratio is 0 (-0 too).
    for (float r : {0.3f, 0.0f, -0.0f})
      for (int tm = 0; tm < 2; ++tm)
        for (int constant = 0; constant < 2; ++constant) {
          std::memcpy(ratio.data, &r, 4);
          train.data[0] = uint8_t(tm);
          train.constant = constant;
          AttrList at3;
          Check("Dropout", at3, {&x, &ratio, &train}, {{t, {3, 7}}, {DataType::kBool, {3, 7}}},
                L(t, t, {3, 7}, (" dropout ratio=" + std::to_string(r) + " train=" + std::to_string(tm) + " const=" + std::to_string(constant)).c_str()));
        }
    AttrList at4;
    Check("Identity", at4, {&x}, {{t, {3, 7}}}, L(t, t, {3, 7}, " identity inplace"), false, true);
  }
}

// PredicatedCopy (a state update under a predicate, read on the device): with the flag set the
// destination becomes the source bitwise; with it clear the destination keeps every byte. No CPU
// kernel of that name exists (the CPU backend skips predicated steps on the host), so the expected
// bytes are the source's or the destination's own.
void PredicatedCopyTests() {
  for (DataType t : AllTypes())
    for (int go = 0; go < 2; ++go) {
      ++g_cases;
      Buf x = Alloc(t, {5, 3}), y = Alloc(t, {5, 3}), flag = Alloc(DataType::kBool, {});
      Fill(x);
      Fill(y);
      flag.data[0] = uint8_t(go);
      std::vector<uint8_t> before(y.data, y.data + size_t(y.numel) * y.es);
      Tensor tx = x.T(), ty = y.T(), tf = flag.T();
      KernelArgs a;
      a.node = "PredicatedCopy 'update' " + L(t, t, {5, 3}, go ? " go" : " skip");
      a.inputs = {&tx, &tf};
      a.outputs = {&ty};
      cu::CudaContext ctx;
      int err = 0;
      ctx.error = &err;
      std::unique_ptr<cu::Kernel> k = R->gpu.Find("PredicatedCopy")();
      Status s = k->Init(a, ctx);
      if (s.ok()) s = k->Run(a, ctx);
      const uint8_t* want = go ? x.data : before.data();
      if (!s.ok() || err || std::memcmp(y.data, want, before.size()) != 0) {
        ++g_fail;
        printf("FAIL %s: %s\n", a.node.c_str(), s.ok() ? "wrong bytes" : s.ToString().c_str());
      }
    }
  ++g_cases;  // a predicate that is not a bool scalar is refused
  Buf x = Alloc(DataType::kF32, {4}), y = Alloc(DataType::kF32, {4}), bad = Alloc(DataType::kF32, {});
  Tensor tx = x.T(), ty = y.T(), tb = bad.T();
  KernelArgs a;
  a.node = "PredicatedCopy 'bad'";
  a.inputs = {&tx, &tb};
  a.outputs = {&ty};
  cu::CudaContext ctx;
  if (R->gpu.Find("PredicatedCopy")()->Init(a, ctx).ok()) {
    ++g_fail;
    printf("FAIL PredicatedCopy: an f32 predicate was accepted\n");
  }
}

int main(int argc, char** argv) {
  Runner runner;
  R = &runner;
  for (int wide = 0; wide < 2; ++wide) {
    cu::ew::force_wide_index = wide;
    printf("== %s index\n", wide ? "64-bit" : "32-bit");
    std::string only = argc > 1 ? argv[1] : "";
    if (only.empty() || only == "unary") UnaryTests();
    if (only.empty() || only == "binary") BinaryTests();
    if (only.empty() || only == "where") WhereTests();
    if (only.empty() || only == "variadic") VariadicTests();
    if (only.empty() || only == "cast") CastTests();
    if (only.empty() || only == "pass") PassTests();
    if (only.empty() || only == "predicated") PredicatedCopyTests();
  }
  printf("cases %d, failures %d, unimplemented (widened on the GPU) %d, both refused %d\n", g_cases, g_fail, g_unimpl, g_both_err);
  return g_fail ? 1 : 0;
}
