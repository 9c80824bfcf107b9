// Host emulation check of the CUDA nn family (MatMul, Gemm, Einsum, Conv, ConvTranspose and the
// pools) against the CPU reference kernels, on a machine without a GPU: the CUDA kernels are
// built with PRECIS_NN_HOST_EMULATION (their per-element functors run in host loops) and linked
// with nn_libs_emulation.cc (cuBLASLt and cuDNN computing on the host). Every float case runs
// twice: with the libraries, and with the libraries refusing every problem, so that the
// kernels' own fallbacks (plain products, direct convolutions) are checked too.
//
// Error measure: max |cuda - cpu| / max(max |cpu|, 1e-30). Tolerances: f64 1e-12; f32 1e-5 (sums
// in another order, and double accumulation in the emulated libraries); f16 4e-3 and bf16
// 3.2e-2 (a different rounding of a stored 16-bit value: 2^-11 and 2^-8 relative, a few ulp);
// integers and Indices exactly. Build and run: tests/cuda/emulation/nn_build.sh.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "runtime/base/half.h"
#include "runtime/cpu/kernel.h"
#include "runtime/cpu/kernels/register.h"
#include "runtime/cpu/step_adapters.h"
#include "runtime/cpu/widen_kernel.h"
#include "runtime/cuda/kernels/nn_common.h"
#include "tests/runtime/kernel_test_util.h"

using namespace precis;
using namespace precis::rt;
namespace cu = precis::rt::cuda;
using testing::AttrList;

extern bool nn_libs_refuse, nn_graph_refuse;
extern int nn_graph_runs, nn_graph_plans;

namespace precis::rt {
void AddEinsumKernels(KernelRegistry& r);
// Families this harness does not link.
void RegisterAllCpuKernels(KernelRegistry&) {}
void RegisterNormKernels(KernelRegistry&) {}
void RegisterNormMoreKernels(KernelRegistry&) {}
}  // namespace precis::rt

namespace {

int g_cases = 0, g_fail = 0;

struct Spec {
  DataType dt;
  std::vector<int64_t> dims;
};

struct Buf {
  Tensor t;
  std::vector<uint8_t> mem;
};

Buf Alloc(const Spec& s) {
  Buf b;
  b.t.dtype = s.dt;
  b.t.dims = s.dims;
  b.t.numel = testing::Numel(s.dims);
  b.t.bytes = size_t(b.t.numel) * DataTypeSize(s.dt);
  b.mem.assign(b.t.bytes + 64, 0);
  b.t.data = b.mem.data();
  return b;
}

double Get(const Tensor& t, int64_t i) {
  switch (t.dtype) {
    case DataType::kF32: return t.As<float>()[i];
    case DataType::kF64: return t.As<double>()[i];
    case DataType::kF16: return HalfToFloat(t.As<uint16_t>()[i]);
    case DataType::kBF16: return Bf16ToFloat(t.As<uint16_t>()[i]);
    case DataType::kI8: return t.As<int8_t>()[i];
    case DataType::kU8: return t.As<uint8_t>()[i];
    case DataType::kI32: return t.As<int32_t>()[i];
    case DataType::kI64: return double(t.As<int64_t>()[i]);
    default: return NAN;
  }
}

void Set(Tensor& t, int64_t i, double v) {
  switch (t.dtype) {
    case DataType::kF32: t.As<float>()[i] = float(v); break;
    case DataType::kF64: t.As<double>()[i] = v; break;
    case DataType::kF16: t.As<uint16_t>()[i] = FloatToHalf(float(v)); break;
    case DataType::kBF16: t.As<uint16_t>()[i] = FloatToBf16(float(v)); break;
    case DataType::kI8: t.As<int8_t>()[i] = int8_t(v); break;
    case DataType::kU8: t.As<uint8_t>()[i] = uint8_t(v); break;
    case DataType::kI32: t.As<int32_t>()[i] = int32_t(v); break;
    case DataType::kI64: t.As<int64_t>()[i] = int64_t(v); break;
    default: break;
  }
}

bool IsFloat(DataType t) { return t == DataType::kF32 || t == DataType::kF64 || t == DataType::kF16 || t == DataType::kBF16; }

// Random values, never zero: floats in [-1, -0.1] u [0.1, 1], integers in [-5, 5] (unsigned [1, 9]).
void Fill(Tensor& t, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> mag(0.1, 1.0);
  for (int64_t i = 0; i < t.numel; ++i) {
    if (IsFloat(t.dtype)) Set(t, i, (rng() & 1 ? 1 : -1) * mag(rng));
    else if (t.dtype == DataType::kU8) Set(t, i, double(1 + rng() % 9));
    else Set(t, i, double(int(rng() % 11) - 5));
  }
}

double Tolerance(DataType t) {
  switch (t) {
    case DataType::kF64: return 1e-12;
    case DataType::kF32: return 1e-5;
    case DataType::kF16: return 4e-3;
    case DataType::kBF16: return 3.2e-2;
    default: return 0;
  }
}

double Activate(double v, const std::string& a) {
  if (a == "Relu") return v < 0 ? 0 : v;
  if (a == "Gelu") return 0.5 * v * (1 + std::erf(v / std::sqrt(2.0)));
  return v;
}

// Runs `kernel` through the CPU reference and the CUDA kernel (emulated) on the same inputs.
void Check(const std::string& name, const std::string& kernel, const std::vector<Spec>& ins, const std::vector<Spec>& outs, AttrList& attrs,
           cu::KernelFactory make, const std::string& activation = "", bool nhwc = false) {
  std::vector<Buf> in;
  for (size_t i = 0; i < ins.size(); ++i) {
    in.push_back(Alloc(ins[i]));
    Fill(in.back().t, uint32_t(17 + 31 * i));
  }
  std::vector<Buf> expect, got;
  for (const Spec& s : outs) {
    expect.push_back(Alloc(s));
    got.push_back(Alloc(s));
  }
  KernelArgs args;
  args.node = kernel + " '" + name + "'";
  args.attrs = attrs.Finish();
  for (Buf& b : in) args.inputs.push_back(&b.t);
  for (Buf& b : expect) args.outputs.push_back(&b.t);

  KernelRegistry cpu;
  RegisterMatMulKernels(cpu);
  RegisterNnKernels(cpu);
  RegisterTrainingKernels(cpu);  // ConvFilterGrad
  AddEinsumKernels(cpu);
  std::unique_ptr<Kernel> ref = cpu.Find(kernel)();
  if (WidenKernel::HasMixedFloatTensors(args)) ref = std::make_unique<WidenKernel>(std::move(ref));
  CpuContext cctx;
  if (nhwc) {  // the CPU runs NHWC steps through its adapter around the NCHW reference kernel
    Kernel* inner = ref.release();
    ref = std::make_unique<NhwcStep>([&cctx, inner](const KernelArgs& a) -> StatusOr<std::unique_ptr<Kernel>> {
      std::unique_ptr<Kernel> k(inner);
      PRECIS_RETURN_IF_ERROR(k->Init(a, cctx));
      return k;
    }, kernel == "Conv");
  }
  Status s = ref->Init(args, cctx);
  if (!s.ok()) {
    std::printf("SKIP %-44s the CPU refuses: %s\n", name.c_str(), s.message().c_str());
    return;
  }
  std::vector<uint8_t> cscratch(ref->ScratchBytes() + 64);
  cctx.scratch = cscratch.data();
  (void)ref->Run(args, cctx);
  for (Buf& b : expect)
    if (IsFloat(b.t.dtype) && !activation.empty())
      for (int64_t i = 0; i < b.t.numel; ++i) Set(b.t, i, Activate(Get(b.t, i), activation));

  bool any_float = IsFloat(outs[0].dt);
  // FP16/BF16 Conv with a bias or Relu runs as one cuDNN graph where cuDNN offers it; mode 1
  // refuses the graph (the legacy call and the separate passes), mode 2 all libraries.
  // (Not NHWC steps with asymmetric pads: the channels-last direct kernel runs those.)
  bool asymmetric_nhwc = nhwc && name.find("asymmetric") != std::string::npos;
  bool fusable = kernel == "Conv" && (outs[0].dt == DataType::kF16 || outs[0].dt == DataType::kBF16) &&
                 (ins.size() == 3 || activation == "Relu") && !asymmetric_nhwc;
  for (int mode : {0, 1, 2}) {
    if (mode == 1 && !fusable) continue;
    if (mode == 2 && !any_float) break;  // NHWC too: the channels-last direct kernel
    nn_libs_refuse = mode == 2;
    nn_graph_refuse = mode == 1;
    int graph_runs = nn_graph_runs;
    ++g_cases;
    std::string label = name + (mode == 2 ? " [own kernels]" : mode == 1 ? " [no graph]" : fusable ? " [graph]" : "");
    for (size_t i = 0; i < got.size(); ++i) {
      std::memset(got[i].t.data, 0xAB, got[i].t.bytes);
      args.outputs[i] = &got[i].t;
    }
    std::vector<std::shared_ptr<void>> tables;
    int error = 0;
    cu::CudaContext ctx;
    ctx.tables = &tables;
    ctx.error = &error;
    // One stand-in handle per mode: fused-graph plans and refusals are remembered per handle.
    ctx.dnn = reinterpret_cast<cudnnHandle_t>(uintptr_t(0x100 + 0x10 * mode));
    std::unique_ptr<cu::Kernel> k = make();
    s = k->Init(args, ctx);
    if (!s.ok()) {
      ++g_fail;
      std::printf("FAIL %-44s Init: %s\n", label.c_str(), s.message().c_str());
      continue;
    }
    // Where the libraries refuse a float step, the kernel must say that a plain kernel runs it
    // (precis bench counts these).
    bool library_step = kernel == "Conv" || kernel == "ConvTranspose" || kernel == "ConvFilterGrad" || kernel == "MatMul" || kernel == "Gemm";
    bool empty = std::any_of(in.begin(), in.end(), [](const Buf& b) { return b.t.numel == 0; });  // nothing to compute
    if (library_step && mode == 2 && !empty && k->Fallback().empty()) {
      ++g_fail;
      std::printf("FAIL %-44s Fallback() is '%s' in mode %d\n", label.c_str(), k->Fallback().c_str(), mode);
      continue;
    }
    std::vector<uint8_t> scratch(k->ScratchBytes() + 64), workspace(k->WorkspaceBytes() + 64);
    ctx.scratch = scratch.data();
    ctx.workspace = workspace.data();
    ctx.workspace_bytes = k->WorkspaceBytes();
    s = k->Run(args, ctx);
    if (!s.ok() || error) {
      ++g_fail;
      std::printf("FAIL %-44s Run: %s (error flag %d)\n", label.c_str(), s.message().c_str(), error);
      continue;
    }
    double worst = 0;
    for (size_t o = 0; o < got.size(); ++o) {
      const Tensor &e = expect[o].t, &g = got[o].t;
      double max_ref = 1e-30, max_diff = 0;
      for (int64_t i = 0; i < e.numel; ++i) {
        double a = Get(e, i), b = Get(g, i);
        max_ref = std::max(max_ref, std::fabs(a));
        if (std::isnan(a) != std::isnan(b)) max_diff = INFINITY;
        else if (!std::isnan(a)) max_diff = std::max(max_diff, std::fabs(a - b));
      }
      double err = max_diff / (IsFloat(e.dtype) ? max_ref : 1.0);
      if (err > Tolerance(e.dtype)) worst = std::max(worst, err > 0 ? err : 1.0);
      else if (worst == 0) worst = -err;
    }
    bool graph_used = nn_graph_runs != graph_runs;
    if (graph_used != (fusable && mode == 0)) {
      ++g_fail;
      std::printf("FAIL %-44s the fused cuDNN graph %s\n", label.c_str(), graph_used ? "ran where it should not" : "did not run");
    } else if (worst > 0) {
      ++g_fail;
      std::printf("FAIL %-44s error %.3g\n", label.c_str(), worst);
    } else {
      std::printf("ok   %-44s error %.3g\n", label.c_str(), -worst);
    }
  }
  nn_libs_refuse = false;
  nn_graph_refuse = false;
}

constexpr DataType F32 = DataType::kF32, F16 = DataType::kF16, BF16 = DataType::kBF16, F64 = DataType::kF64, I32 = DataType::kI32,
                   I8 = DataType::kI8, U8 = DataType::kU8, I64 = DataType::kI64;

std::string Name(const char* what, DataType t) { return std::string(what) + " " + DataTypeName(t); }

void MatMulCases() {
  struct Shape {
    const char* name;
    std::vector<int64_t> a, b, y;
  };
  std::vector<Shape> shapes = {
      {"2d", {5, 3}, {3, 7}, {5, 7}},
      {"batch folded into M", {2, 5, 3}, {3, 7}, {2, 5, 7}},
      {"batched", {2, 5, 3}, {2, 3, 7}, {2, 5, 7}},
      {"A shared", {5, 3}, {4, 3, 7}, {4, 5, 7}},
      {"broadcast both (calls)", {2, 1, 5, 3}, {1, 4, 3, 7}, {2, 4, 5, 7}},
      {"many axes", {2, 1, 3, 1, 5, 3}, {1, 4, 1, 2, 3, 7}, {2, 4, 3, 2, 5, 7}},
      {"1-D A", {3}, {4, 3, 7}, {4, 7}},
      {"1-D B", {2, 5, 3}, {3}, {2, 5}},
      {"dot", {6}, {6}, {}},
      {"K = 0", {2, 5, 0}, {0, 7}, {2, 5, 7}},
  };
  for (DataType t : {F32, F16, BF16, F64, I32, I8, U8})
    for (const Shape& s : shapes) {
      AttrList a;
      Check(Name("MatMul", t) + " " + s.name, "MatMul", {{t, s.a}, {t, s.b}}, {{t, s.y}}, a, cu::MakeMatMulKernel);
    }
  for (DataType t : {F16, BF16}) {
    AttrList a;
    Check(Name("MatMul", t) + " -> f32", "MatMul", {{t, {2, 5, 3}}, {t, {2, 3, 7}}}, {{F32, {2, 5, 7}}}, a, cu::MakeMatMulKernel);
  }
  for (const char* act : {"Relu", "Gelu"}) {
    AttrList a;
    a.String("activation", act);
    Check(std::string("MatMul f32 + ") + act, "MatMul", {{F32, {2, 5, 3}}, {F32, {3, 7}}}, {{F32, {2, 5, 7}}}, a, cu::MakeMatMulKernel, act);
  }
}

void GemmCases() {
  struct G {
    const char* name;
    std::vector<int64_t> a, b, c;
    int ta, tb;
    float alpha, beta;
  };
  std::vector<G> cases = {
      {"plain", {5, 3}, {3, 7}, {}, 0, 0, 1, 1},
      {"transA", {3, 5}, {3, 7}, {}, 1, 0, 1, 1},
      {"transB alpha", {5, 3}, {7, 3}, {}, 0, 1, 2.5f, 1},
      {"transA transB", {3, 5}, {7, 3}, {}, 1, 1, 1, 1},
      {"bias [N]", {5, 3}, {3, 7}, {7}, 0, 0, 0.5f, 1},
      {"bias [1, N]", {5, 3}, {7, 3}, {1, 7}, 0, 1, 1, 1},
      {"C [M, 1] beta", {5, 3}, {3, 7}, {5, 1}, 0, 0, 1, 0.5f},
      {"C [M, N] beta", {3, 5}, {3, 7}, {5, 7}, 1, 0, 1, -2},
      {"C scalar", {5, 3}, {3, 7}, {1}, 0, 0, 1, 1},
      {"C beta 0", {5, 3}, {3, 7}, {5, 7}, 0, 0, 1, 0},
  };
  for (DataType t : {F32, F16, BF16, F64, I32})
    for (const G& g : cases) {
      if (t == I32 && (g.alpha != 1 || g.beta != 1)) continue;  // the CPU truncates alpha and beta to T
      AttrList a;
      a.Int("transA", g.ta).Int("transB", g.tb).Float("alpha", g.alpha).Float("beta", g.beta);
      std::vector<Spec> ins = {{t, g.a}, {t, g.b}};
      if (!g.c.empty()) ins.push_back({t, g.c});
      Check(Name("Gemm", t) + " " + g.name, "Gemm", ins, {{t, {5, 7}}}, a, cu::MakeGemmKernel);
    }
  for (DataType c : {F16, F32}) {
    AttrList a;
    Check(std::string("Gemm f16 -> f32, C ") + DataTypeName(c), "Gemm", {{F16, {5, 3}}, {F16, {3, 7}}, {c, {7}}}, {{F32, {5, 7}}}, a,
          cu::MakeGemmKernel);
  }
  for (const char* act : {"Relu", "Gelu"}) {
    AttrList a;
    a.String("activation", act);
    Check(std::string("Gemm f32 bias + ") + act, "Gemm", {{F32, {5, 3}}, {F32, {3, 7}}, {F32, {7}}}, {{F32, {5, 7}}}, a, cu::MakeGemmKernel,
          act);
  }
}

void EinsumCases() {
  struct E {
    const char* eq;
    std::vector<std::vector<int64_t>> ins;
    std::vector<int64_t> y;
  };
  std::vector<E> cases = {
      {"ij,jk->ik", {{5, 3}, {3, 7}}, {5, 7}},
      {"bij,bjk->bik", {{2, 5, 3}, {2, 3, 7}}, {2, 5, 7}},
      {"bhqd,bhkd->bhqk", {{2, 3, 5, 4}, {2, 3, 6, 4}}, {2, 3, 5, 6}},
      {"bhqk,bhkd->bqhd", {{2, 3, 5, 6}, {2, 3, 6, 4}}, {2, 5, 3, 4}},
      {"ilk,lkj->ij", {{5, 2, 3}, {2, 3, 7}}, {5, 7}},
      {"ij,j->i", {{5, 3}, {3}}, {5}},
      {"i,i->", {{5}, {5}}, {}},
      {"i,j->ij", {{5}, {7}}, {5, 7}},
      {"ij,jk", {{5, 3}, {3, 7}}, {5, 7}},
      {"...ij,...jk->...ik", {{1, 5, 3}, {4, 3, 7}}, {4, 5, 7}},
      {"...ij,...jk->...ik", {{2, 1, 5, 3}, {3, 3, 7}}, {2, 3, 5, 7}},
      {"ii->i", {{4, 4}}, {4}},
      {"ii", {{4, 4}}, {}},
      {"ij->ji", {{3, 5}}, {5, 3}},
      {"ij->", {{3, 5}}, {}},
      {"ij,jk,kl->il", {{2, 3}, {3, 4}, {4, 5}}, {2, 5}},
      {"bij,bij->bi", {{2, 3, 4}, {2, 3, 4}}, {2, 3}},
      {"ik,k", {{3, 0}, {0}}, {3}},
  };
  for (DataType t : {F32, F16, F64, I32, I64})
    for (const E& e : cases) {
      AttrList a;
      a.String("equation", e.eq);
      std::vector<Spec> ins;
      for (const auto& d : e.ins) ins.push_back({t, d});
      Check(Name("Einsum", t) + " " + e.eq, "Einsum", ins, {{t, e.y}}, a, cu::MakeEinsumKernel);
    }
  AttrList a;
  a.String("equation", "bij,bjk->bik");
  Check("Einsum f16 -> f32", "Einsum", {{F16, {2, 5, 3}}, {F16, {2, 3, 7}}}, {{F32, {2, 5, 7}}}, a, cu::MakeEinsumKernel);
}

void ConvCases() {
  struct C {
    const char* name;
    std::vector<int64_t> x, w, y;
    bool bias;
    std::vector<int64_t> pads, strides, dilations;
    int64_t group;
    const char* auto_pad;
  };
  std::vector<C> cases = {
      {"2d", {2, 3, 7, 6}, {4, 3, 3, 3}, {2, 4, 5, 4}, false, {}, {}, {}, 1, ""},
      {"2d bias pads strides", {2, 3, 7, 6}, {4, 3, 3, 3}, {2, 4, 4, 3}, true, {1, 1, 1, 1}, {2, 2}, {}, 1, ""},
      {"asymmetric pads", {1, 3, 6, 6}, {4, 3, 3, 3}, {1, 4, 7, 5}, true, {2, 0, 1, 1}, {}, {}, 1, ""},
      {"group dilation", {1, 6, 9, 6}, {6, 2, 3, 2}, {1, 6, 5, 5}, true, {}, {}, {2, 1}, 3, ""},
      {"depthwise", {1, 4, 6, 6}, {4, 1, 3, 3}, {1, 4, 4, 4}, false, {}, {}, {}, 4, ""},
      {"1-D", {2, 3, 11}, {5, 3, 4}, {2, 5, 4}, true, {2, 2}, {3}, {}, 1, ""},
      {"3-D", {1, 2, 4, 5, 6}, {3, 2, 3, 2, 3}, {1, 3, 4, 4, 6}, true, {1, 0, 1, 1, 0, 1}, {}, {}, 1, ""},
      {"SAME_UPPER stride 2", {1, 2, 6, 5}, {3, 2, 3, 2}, {1, 3, 3, 3}, true, {}, {2, 2}, {}, 1, "SAME_UPPER"},
      {"SAME_LOWER", {1, 2, 5, 5}, {3, 2, 2, 2}, {1, 3, 5, 5}, false, {}, {}, {}, 1, "SAME_LOWER"},
  };
  for (DataType t : {F32, F16, BF16, F64})
    for (const C& c : cases) {
      AttrList a;
      if (!c.pads.empty()) a.Ints("pads", c.pads);
      if (!c.strides.empty()) a.Ints("strides", c.strides);
      if (!c.dilations.empty()) a.Ints("dilations", c.dilations);
      if (*c.auto_pad) a.String("auto_pad", c.auto_pad);
      a.Int("group", c.group);
      std::vector<Spec> ins = {{t, c.x}, {t, c.w}};
      if (c.bias) ins.push_back({t, {c.w[0]}});
      Check(Name("Conv", t) + " " + c.name, "Conv", ins, {{t, c.y}}, a, cu::MakeConvKernel);
    }
  // layout = "NHWC": X [N, H, W, C], W [M, kH, kW, C], Y [N, H', W', M] (tensor-core layout).
  struct Nhwc {
    const char* name;
    std::vector<int64_t> x, w, y, pads, strides;
    bool bias;
    const char* activation;
  };
  std::vector<Nhwc> nhwc = {
      {"NHWC 3x3 bias", {2, 5, 6, 8}, {16, 3, 3, 8}, {2, 5, 6, 16}, {1, 1, 1, 1}, {}, true, ""},
      {"NHWC 1x1 stride 2 + Relu", {1, 7, 5, 16}, {8, 1, 1, 16}, {1, 4, 3, 8}, {}, {2, 2}, true, "Relu"},
      {"NHWC 3x3 no bias", {1, 4, 4, 8}, {8, 3, 3, 8}, {1, 2, 2, 8}, {}, {}, false, ""},
      {"NHWC 3x3 Relu no bias", {2, 6, 5, 8}, {16, 3, 3, 8}, {2, 6, 5, 16}, {1, 1, 1, 1}, {}, false, "Relu"},
      {"NHWC depthwise + Relu", {2, 5, 5, 16}, {16, 3, 3, 1}, {2, 5, 5, 16}, {1, 1, 1, 1}, {}, true, "Relu"},
      // Asymmetric pads: cuDNN cannot take them in NHWC; the channels-last direct kernel does.
      {"NHWC 3x3 asymmetric pads + Relu", {1, 5, 5, 8}, {8, 3, 3, 8}, {1, 4, 4, 8}, {0, 1, 1, 0}, {}, true, "Relu"},
  };
  for (DataType t : {F32, F16, BF16})
    for (const Nhwc& c : nhwc) {
      AttrList a;
      a.String("layout", "NHWC");
      if (c.w[3] != c.x[3]) a.Int("group", c.x[3] / c.w[3]);
      if (!c.pads.empty()) a.Ints("pads", c.pads);
      if (!c.strides.empty()) a.Ints("strides", c.strides);
      if (*c.activation) a.String("activation", c.activation);
      std::vector<Spec> ins = {{t, c.x}, {t, c.w}};
      if (c.bias) ins.push_back({t, {c.w[0]}});
      Check(Name("Conv", t) + " " + c.name, "Conv", ins, {{t, c.y}}, a, cu::MakeConvKernel, c.activation, true);
    }
  for (DataType t : {F32, F16, BF16}) {
    AttrList a;
    a.String("activation", "Relu").Ints("pads", {1, 1, 1, 1});
    Check(Name("Conv", t) + " bias + Relu", "Conv", {{t, {1, 3, 5, 5}}, {t, {4, 3, 3, 3}}, {t, {4}}}, {{t, {1, 4, 5, 5}}}, a,
          cu::MakeConvKernel, "Relu");
    AttrList r;
    r.String("activation", "Relu").Ints("pads", {0, 1, 1, 0}).Ints("strides", {2, 1});
    Check(Name("Conv", t) + " Relu asymmetric pads", "Conv", {{t, {2, 4, 6, 5}}, {t, {8, 4, 3, 2}}}, {{t, {2, 8, 3, 5}}}, r,
          cu::MakeConvKernel, "Relu");
    AttrList d;
    d.String("activation", "Relu").Ints("pads", {1, 0, 1, 1, 0, 1});
    Check(Name("Conv", t) + " 3-D bias + Relu", "Conv", {{t, {1, 2, 4, 5, 6}}, {t, {3, 2, 3, 2, 3}}, {t, {3}}}, {{t, {1, 3, 4, 4, 6}}}, d,
          cu::MakeConvKernel, "Relu");
  }
}

// ConvFilterGrad (training plans' filter gradient): X [N, C, in...], dY [N, M, out...] -> dW
// [M, C/group, k...] with the forward convolution's geometry (explicit pads, as the compiler
// writes them): cuDNN's backward-filter convolution (X padded first when the pads are
// asymmetric) and the direct kernel.
void ConvFilterGradCases() {
  struct C {
    const char* name;
    std::vector<int64_t> x, w, y;
    std::vector<int64_t> pads, strides, dilations;
    int64_t group;
  };
  std::vector<C> cases = {
      {"2d", {2, 3, 7, 6}, {4, 3, 3, 3}, {2, 4, 5, 4}, {}, {}, {}, 1},
      {"pads strides", {2, 3, 7, 6}, {4, 3, 3, 3}, {2, 4, 4, 3}, {1, 1, 1, 1}, {2, 2}, {}, 1},
      {"asymmetric pads", {1, 3, 6, 6}, {4, 3, 3, 3}, {1, 4, 7, 5}, {2, 0, 1, 1}, {}, {}, 1},
      {"group dilation", {1, 6, 9, 6}, {6, 2, 3, 2}, {1, 6, 5, 5}, {}, {}, {2, 1}, 3},
      {"depthwise", {3, 4, 6, 6}, {4, 1, 3, 3}, {3, 4, 4, 4}, {}, {}, {}, 4},
      {"1x1 stride 2", {2, 8, 7, 7}, {5, 8, 1, 1}, {2, 5, 4, 4}, {}, {2, 2}, {}, 1},
      {"1-D", {2, 3, 11}, {5, 3, 4}, {2, 5, 4}, {2, 2}, {3}, {}, 1},
      {"3-D", {1, 2, 4, 5, 6}, {3, 2, 3, 2, 3}, {1, 3, 4, 4, 6}, {1, 0, 1, 1, 0, 1}, {}, {}, 1},
      {"empty batch", {0, 3, 5, 5}, {2, 3, 3, 3}, {0, 2, 3, 3}, {}, {}, {}, 1},
  };
  for (DataType t : {F32, F16, BF16, F64})
    for (const C& c : cases) {
      AttrList a;
      a.Ints("kernel_shape", std::vector<int64_t>(c.w.begin() + 2, c.w.end()));
      if (!c.pads.empty()) a.Ints("pads", c.pads);
      if (!c.strides.empty()) a.Ints("strides", c.strides);
      if (!c.dilations.empty()) a.Ints("dilations", c.dilations);
      a.Int("group", c.group);
      Check(Name("ConvFilterGrad", t) + " " + c.name, "ConvFilterGrad", {{t, c.x}, {t, c.y}}, {{t, c.w}}, a, cu::MakeConvFilterGradKernel);
    }
}

void ConvTransposeCases() {
  struct C {
    const char* name;
    std::vector<int64_t> x, w, y;
    bool bias;
    std::vector<int64_t> pads, strides, output_padding, output_shape;
    int64_t group;
    const char* auto_pad;
  };
  std::vector<C> cases = {
      {"2d", {2, 4, 3, 4}, {4, 3, 3, 3}, {2, 3, 5, 6}, false, {}, {}, {}, {}, 1, ""},
      {"stride pads bias", {1, 4, 3, 4}, {4, 3, 3, 3}, {1, 3, 5, 7}, true, {1, 1, 1, 1}, {2, 2}, {}, {}, 1, ""},
      {"output_padding", {1, 4, 3, 4}, {4, 3, 3, 3}, {1, 3, 6, 8}, true, {1, 1, 1, 1}, {2, 2}, {1, 1}, {}, 1, ""},
      {"asymmetric pads (cropped)", {1, 2, 3, 3}, {2, 2, 3, 3}, {1, 2, 4, 3}, true, {0, 1, 1, 1}, {1, 1}, {}, {}, 1, ""},
      {"1-D group", {2, 4, 5}, {4, 3, 3}, {2, 6, 15}, true, {}, {3}, {}, {}, 2, ""},
      {"3-D", {1, 2, 3, 3, 2}, {2, 2, 2, 2, 2}, {1, 2, 6, 4, 4}, false, {}, {2, 1, 2}, {}, {}, 1, ""},
      {"output_shape (cropped)", {1, 4, 3, 4}, {4, 3, 3, 3}, {1, 3, 6, 8}, true, {}, {2, 2}, {}, {6, 8}, 1, ""},
      {"SAME_UPPER", {1, 2, 3, 3}, {2, 3, 3, 3}, {1, 3, 6, 6}, true, {}, {2, 2}, {}, {}, 1, "SAME_UPPER"},
      {"SAME_LOWER", {1, 2, 3, 3}, {2, 3, 4, 4}, {1, 3, 6, 6}, false, {}, {2, 2}, {}, {}, 1, "SAME_LOWER"},
      {"SAME_UPPER beyond the full size", {1, 2, 3, 3}, {2, 3, 3, 3}, {1, 3, 9, 8}, true, {}, {2, 2}, {}, {9, 8}, 1, "SAME_UPPER"},
      {"pads beyond stride (cropped)", {1, 2, 4, 3}, {2, 2, 3, 3}, {1, 2, 4, 5}, false, {4, 0, 1, 0}, {2, 1}, {}, {}, 1, ""},
  };
  for (DataType t : {F32, F16, F64})
    for (const C& c : cases) {
      AttrList a;
      if (!c.pads.empty()) a.Ints("pads", c.pads);
      if (!c.strides.empty()) a.Ints("strides", c.strides);
      if (!c.output_padding.empty()) a.Ints("output_padding", c.output_padding);
      if (!c.output_shape.empty()) a.Ints("output_shape", c.output_shape);
      if (*c.auto_pad) a.String("auto_pad", c.auto_pad);
      a.Int("group", c.group);
      std::vector<Spec> ins = {{t, c.x}, {t, c.w}};
      if (c.bias) ins.push_back({t, {c.w[1] * c.group}});
      Check(Name("ConvTranspose", t) + " " + c.name, "ConvTranspose", ins, {{t, c.y}}, a, cu::MakeConvTransposeKernel);
    }
}

void PoolCases() {
  struct P {
    const char* name;
    std::vector<int64_t> x, y, kernel, pads, strides, dilations;
    int ceil, count_include_pad;
  };
  std::vector<P> cases = {
      {"2d", {2, 3, 6, 6}, {2, 3, 5, 5}, {2, 2}, {}, {}, {}, 0, 0},
      {"pads strides", {1, 2, 7, 6}, {1, 2, 4, 3}, {3, 3}, {1, 1, 1, 1}, {2, 2}, {}, 0, 0},
      {"pads count_include_pad", {1, 2, 7, 6}, {1, 2, 4, 3}, {3, 3}, {1, 1, 1, 1}, {2, 2}, {}, 0, 1},
      {"ceil_mode", {1, 2, 6, 6}, {1, 2, 3, 3}, {3, 3}, {}, {2, 2}, {}, 1, 0},
      {"ceil_mode asymmetric pads cip", {1, 2, 7, 7}, {1, 2, 4, 4}, {3, 2}, {1, 0, 0, 1}, {2, 2}, {}, 1, 1},
      {"dilations", {1, 2, 8, 8}, {1, 2, 4, 6}, {3, 2}, {}, {}, {2, 2}, 0, 0},
      {"1-D", {2, 3, 9}, {2, 3, 4}, {3}, {1, 0}, {2}, {}, 0, 0},
      {"3-D", {1, 2, 4, 5, 4}, {1, 2, 3, 4, 3}, {2, 2, 2}, {}, {}, {}, 0, 0},
  };
  auto attrs = [](AttrList& a, const P& p) {
    a.Ints("kernel_shape", p.kernel).Int("ceil_mode", p.ceil).Int("count_include_pad", p.count_include_pad);
    if (!p.pads.empty()) a.Ints("pads", p.pads);
    if (!p.strides.empty()) a.Ints("strides", p.strides);
    if (!p.dilations.empty()) a.Ints("dilations", p.dilations);
  };
  for (const P& p : cases) {
    for (DataType t : {F32, F16, F64, I32, U8}) {
      AttrList a;
      attrs(a, p);
      Check(Name("MaxPool", t) + " " + p.name, "MaxPool", {{t, p.x}}, {{t, p.y}}, a, cu::MakeMaxPoolKernel);
    }
    AttrList ai;
    attrs(ai, p);
    Check(std::string("MaxPool f32 Indices ") + p.name, "MaxPool", {{F32, p.x}}, {{F32, p.y}, {I64, p.y}}, ai, cu::MakeMaxPoolKernel);
    if (p.x.size() == 4) {
      AttrList ac;
      attrs(ac, p);
      ac.Int("storage_order", 1);
      Check(std::string("MaxPool f32 Indices column-major ") + p.name, "MaxPool", {{F32, p.x}}, {{F32, p.y}, {I64, p.y}}, ac,
            cu::MakeMaxPoolKernel);
    }
    for (DataType t : {F32, F16, BF16, F64}) {
      AttrList a;
      attrs(a, p);
      Check(Name("AveragePool", t) + " " + p.name, "AveragePool", {{t, p.x}}, {{t, p.y}}, a, cu::MakeAveragePoolKernel);
    }
    for (int64_t pw : {1, 2, 3}) {
      AttrList a;
      attrs(a, p);
      a.Int("p", pw);
      Check("LpPool f32 p=" + std::to_string(pw) + " " + p.name, "LpPool", {{F32, p.x}}, {{F32, p.y}}, a, cu::MakeLpPoolKernel);
    }
    // layout = "NHWC" (pools inside the compiler's NHWC regions): X [N, H, W, C], Y [N, H', W', C];
    // the CPU reference runs through its NHWC adapter around the NCHW kernel.
    if (p.x.size() == 4) {
      std::vector<int64_t> xn = {p.x[0], p.x[2], p.x[3], p.x[1]}, yn = {p.y[0], p.y[2], p.y[3], p.y[1]};
      for (DataType t : {F32, F16, BF16}) {
        AttrList m, a;
        attrs(m, p);
        m.String("layout", "NHWC");
        Check(Name("MaxPool", t) + " NHWC " + p.name, "MaxPool", {{t, xn}}, {{t, yn}}, m, cu::MakeMaxPoolKernel, "", true);
        attrs(a, p);
        a.String("layout", "NHWC");
        Check(Name("AveragePool", t) + " NHWC " + p.name, "AveragePool", {{t, xn}}, {{t, yn}}, a, cu::MakeAveragePoolKernel, "", true);
      }
    }
  }
  struct G {
    const char* kernel;
    cu::KernelFactory make;
  };
  for (G g : {G{"GlobalMaxPool", cu::MakeGlobalMaxPoolKernel}, G{"GlobalAveragePool", cu::MakeGlobalAveragePoolKernel},
              G{"GlobalLpPool", cu::MakeGlobalLpPoolKernel}})
    for (DataType t : {F32, F16, BF16, F64})
      for (const std::vector<int64_t>& x : std::vector<std::vector<int64_t>>{{2, 3, 7, 5}, {2, 3, 100}, {1, 2, 3, 4, 5}}) {
        AttrList a;
        std::vector<int64_t> y(x.size(), 1);
        y[0] = x[0];
        y[1] = x[1];
        Check(Name(g.kernel, t) + " " + DimsToString(x), g.kernel, {{t, x}}, {{t, y}}, a, g.make);
      }
  // layout = "NHWC" (inside NHWC regions): X [N, H, W, C], Y [N, 1, 1, C].
  for (G g : {G{"GlobalMaxPool", cu::MakeGlobalMaxPoolKernel}, G{"GlobalAveragePool", cu::MakeGlobalAveragePoolKernel}})
    for (DataType t : {F32, F16, BF16})
      for (const std::vector<int64_t>& x : std::vector<std::vector<int64_t>>{{2, 7, 5, 3}, {1, 7, 7, 40}, {3, 1, 1, 8}, {2, 3, 2, 300}}) {
        AttrList a;
        a.String("layout", "NHWC");
        Check(Name(g.kernel, t) + " NHWC " + DimsToString(x), g.kernel, {{t, x}}, {{t, {x[0], 1, 1, x[3]}}}, a, g.make, "", true);
      }
}

}  // namespace

// Steps of one handle with the same geometry share one fused-graph plan while one of them lives;
// a refusal is remembered; PRECIS_CUDNN_GRAPH=0 turns the graphs off.
void FusedPlanSharing() {
  Buf x = Alloc({F16, {1, 8, 6, 6}}), w = Alloc({F16, {8, 8, 3, 3}}), b = Alloc({F16, {8}}), y = Alloc({F16, {1, 8, 6, 6}});
  AttrList a;
  a.String("activation", "Relu").Ints("pads", {1, 1, 1, 1});
  KernelArgs args;
  args.node = "Conv 'sharing'";
  args.attrs = a.Finish();
  args.inputs = {&x.t, &w.t, &b.t};
  args.outputs = {&y.t};
  std::vector<std::shared_ptr<void>> tables;
  cu::CudaContext ctx;
  ctx.tables = &tables;
  ctx.dnn = reinterpret_cast<cudnnHandle_t>(uintptr_t(0x900));
  auto init = [&](std::unique_ptr<cu::Kernel>* k) {
    *k = cu::MakeConvKernel();
    Status s = (*k)->Init(args, ctx);
    if (!s.ok()) std::printf("FAIL %-44s Init: %s\n", "fused plan sharing", s.message().c_str()), ++g_fail;
  };
  auto expect = [&](const char* what, int got, int want) {
    ++g_cases;
    if (got != want) ++g_fail;
    std::printf("%s %-44s %d plans (expected %d)\n", got == want ? "ok  " : "FAIL", what, got, want);
  };
  int before = nn_graph_plans;
  std::unique_ptr<cu::Kernel> k1, k2, k3;
  init(&k1);
  init(&k2);
  expect("fused plan shared by two live steps", nn_graph_plans - before, 1);
  k1.reset();
  k2.reset();
  init(&k3);
  expect("fused plan rebuilt after its steps are gone", nn_graph_plans - before, 2);
  k3.reset();
  nn_graph_refuse = true;
  ctx.dnn = reinterpret_cast<cudnnHandle_t>(uintptr_t(0x910));
  init(&k1);
  nn_graph_refuse = false;
  init(&k2);
  expect("fused graph refusal remembered per handle", nn_graph_plans - before, 2);
  k1.reset();
  k2.reset();
  setenv("PRECIS_CUDNN_GRAPH", "0", 1);
  ctx.dnn = reinterpret_cast<cudnnHandle_t>(uintptr_t(0x920));
  init(&k1);
  unsetenv("PRECIS_CUDNN_GRAPH");
  expect("PRECIS_CUDNN_GRAPH=0 plans no fused graph", nn_graph_plans - before, 2);
}

int main() {
  MatMulCases();
  GemmCases();
  EinsumCases();
  ConvCases();
  FusedPlanSharing();
  ConvTransposeCases();
  ConvFilterGradCases();
  PoolCases();
  std::printf("%d cases, %d failed\n", g_cases, g_fail);
  return g_fail ? 1 : 0;
}
