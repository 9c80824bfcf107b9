// The comparison every fiber-emulated kernel family check uses (reduce_harness.cc,
// training_harness.cc): a step run on the CPU reference kernel and on the CUDA kernel under
// fiber_cuda.h, inputs from a seeded generator (or given values), outputs compared within a
// relative tolerance by dtype, errors accepted when both sides refuse the step. Each harness
// defines h::RegisterCpuReferences and h::RegisterCudaKernels.
#pragma once

#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "runtime/base/half.h"
#include "runtime/cpu/kernel.h"
#include "runtime/cpu/step_adapters.h"
#include "runtime/cuda/cuda_kernel.h"
#include "tests/runtime/kernel_test_util.h"

namespace h {
using namespace precis;
using namespace precis::rt;

// Defined by each harness: the CPU reference kernels and the CUDA kernels it compares.
void RegisterCpuReferences(KernelRegistry& r);
void RegisterCudaKernels(cuda::KernelRegistry& r);

inline double Get(DataType t, const uint8_t* p, int64_t i) {
  switch (t) {
    case DataType::kF32: return reinterpret_cast<const float*>(p)[i];
    case DataType::kF64: return reinterpret_cast<const double*>(p)[i];
    case DataType::kF16: return HalfToFloat(reinterpret_cast<const uint16_t*>(p)[i]);
    case DataType::kBF16: return Bf16ToFloat(reinterpret_cast<const uint16_t*>(p)[i]);
    case DataType::kI8: return reinterpret_cast<const int8_t*>(p)[i];
    case DataType::kU8: case DataType::kBool: return reinterpret_cast<const uint8_t*>(p)[i];
    case DataType::kI16: return reinterpret_cast<const int16_t*>(p)[i];
    case DataType::kU16: return reinterpret_cast<const uint16_t*>(p)[i];
    case DataType::kI32: return reinterpret_cast<const int32_t*>(p)[i];
    case DataType::kU32: return reinterpret_cast<const uint32_t*>(p)[i];
    case DataType::kI64: return double(reinterpret_cast<const int64_t*>(p)[i]);
    case DataType::kU64: return double(reinterpret_cast<const uint64_t*>(p)[i]);
    default: return 0;
  }
}
inline void Set(DataType t, uint8_t* p, int64_t i, double v) {
  switch (t) {
    case DataType::kF32: reinterpret_cast<float*>(p)[i] = float(v); break;
    case DataType::kF64: reinterpret_cast<double*>(p)[i] = v; break;
    case DataType::kF16: reinterpret_cast<uint16_t*>(p)[i] = FloatToHalf(float(v)); break;
    case DataType::kBF16: reinterpret_cast<uint16_t*>(p)[i] = FloatToBf16(float(v)); break;
    case DataType::kI8: reinterpret_cast<int8_t*>(p)[i] = int8_t(v); break;
    case DataType::kU8: case DataType::kBool: reinterpret_cast<uint8_t*>(p)[i] = uint8_t(v); break;
    case DataType::kI16: reinterpret_cast<int16_t*>(p)[i] = int16_t(v); break;
    case DataType::kU16: reinterpret_cast<uint16_t*>(p)[i] = uint16_t(v); break;
    case DataType::kI32: reinterpret_cast<int32_t*>(p)[i] = int32_t(v); break;
    case DataType::kU32: reinterpret_cast<uint32_t*>(p)[i] = uint32_t(v); break;
    case DataType::kI64: reinterpret_cast<int64_t*>(p)[i] = int64_t(v); break;
    case DataType::kU64: reinterpret_cast<uint64_t*>(p)[i] = uint64_t(v); break;
    default: break;
  }
}
inline bool IsFloat(DataType t) { return t == DataType::kF32 || t == DataType::kF64 || t == DataType::kF16 || t == DataType::kBF16; }

struct Spec {
  bool present = true;
  DataType dtype = DataType::kF32;
  std::vector<int64_t> dims;
  std::vector<double> values;  // inputs; empty: random
  bool constant = false;
};
inline Spec In(DataType t, std::vector<int64_t> d, std::vector<double> v = {}, bool constant = false) { return {true, t, d, v, constant}; }
inline Spec Out(DataType t, std::vector<int64_t> d) { return {true, t, d, {}, false}; }
inline Spec None() { Spec s; s.present = false; return s; }

struct Options {
  int sms = 132;
  bool inplace = false;     // output 0 shares input 0's buffer
  double tol = -1;          // relative tolerance; -1: by dtype
  int special = 0;          // random data: 1 ties (small ints), 2 with NaN/inf sprinkled
  bool nhwc = false;        // layout = "NHWC": the CPU reference runs through its NHWC adapter
  bool must_run = false;    // a valid step: both sides refusing it is a failure, not agreement
};

inline int g_failures = 0, g_cases = 0;
inline std::string g_filter;

struct Buf {
  Tensor t;
  std::vector<uint8_t> bytes;
};

inline Buf Make(const Spec& s, std::mt19937& rng, int special) {
  Buf b;
  b.t.dtype = s.dtype;
  b.t.dims = s.dims;
  b.t.numel = testing::Numel(s.dims);
  b.t.bytes = size_t(b.t.numel) * DataTypeSize(s.dtype);
  b.bytes.assign(b.t.bytes, 0xCD);
  b.t.is_constant = s.constant;
  for (int64_t i = 0; i < b.t.numel; ++i) {
    double v;
    if (!s.values.empty()) v = s.values[size_t(i) % s.values.size()];
    else if (s.dtype == DataType::kBool) v = rng() % 2;
    else if (!IsFloat(s.dtype)) v = s.dtype == DataType::kU8 || s.dtype == DataType::kU16 || s.dtype == DataType::kU32 || s.dtype == DataType::kU64 ? double(rng() % 100) : double(int(rng() % 200) - 100);
    else if (special == 1) v = double(int(rng() % 5) - 2);
    else {
      v = std::uniform_real_distribution<double>(-3, 3)(rng);
      if (special == 2) {
        int r = rng() % 16;
        if (r == 0) v = NAN; else if (r == 1) v = INFINITY; else if (r == 2) v = -INFINITY;
      }
    }
    Set(s.dtype, b.bytes.data(), i, v);
  }
  return b;
}

inline bool Close(DataType t, double a, double b, double tol) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  if (std::isinf(a) || std::isinf(b)) return a == b;
  if (!IsFloat(t)) return a == b;
  return std::fabs(a - b) <= tol * std::max(1.0, std::fabs(b));
}

// Runs a step on the CPU reference kernel and on the emulated CUDA kernel; true when they agree
// (outputs within the tolerance, or both refusing the step: Init errors, or a CPU Run error that
// the GPU reports as a device error; Unimplemented from the GPU where the CPU fails is accepted,
// the backend then widens the step).

inline bool Check(const std::string& label, const std::string& op, const std::vector<Spec>& ins, const std::vector<Spec>& outs,
           const std::function<void(testing::AttrList&)>& attrs, Options o = {}) {
  if (!g_filter.empty() && label.find(g_filter) == std::string::npos) return true;
  ++g_cases;
  std::mt19937 rng(uint32_t(std::hash<std::string>()(label)));
  std::vector<Buf> cin, gin, cout, gout;
  for (const Spec& s : ins) {
    Buf b = s.present ? Make(s, rng, o.special) : Buf{};
    cin.push_back(b);
    gin.push_back(b);
  }
  for (const Spec& s : outs) {
    Buf b = s.present ? Make(Spec{true, s.dtype, s.dims, {0}, false}, rng, 0) : Buf{};
    std::fill(b.bytes.begin(), b.bytes.end(), 0xCD);
    cout.push_back(b);
    gout.push_back(b);
  }
  testing::AttrList al;
  if (attrs) attrs(al);
  KernelArgs ca, ga;
  ca.attrs = ga.attrs = al.Finish();
  ca.node = ga.node = op + " '" + label + "'";
  auto wire = [](std::vector<Buf>& bufs, const std::vector<Spec>& specs, std::vector<Tensor*>& list) {
    for (size_t i = 0; i < bufs.size(); ++i) {
      if (!specs[i].present) { list.push_back(nullptr); continue; }
      bufs[i].t.data = bufs[i].bytes.data();
      list.push_back(&bufs[i].t);
    }
  };
  wire(cin, ins, ca.inputs); wire(gin, ins, ga.inputs); wire(cout, outs, ca.outputs); wire(gout, outs, ga.outputs);
  if (o.inplace) {
    cout[0].t.data = cin[0].t.data;
    gout[0].t.data = gin[0].t.data;
  }
  // CPU reference.
  static KernelRegistry cpu = [] {
    KernelRegistry r;
    RegisterCpuReferences(r);
    return r;
  }();
  KernelFactory cf = cpu.Find(op);
  if (!cf) { std::printf("FAIL %s: no CPU kernel %s\n", label.c_str(), op.c_str()); ++g_failures; return false; }
  std::unique_ptr<Kernel> ck = cf();
  CpuContext cctx;
  if (o.nhwc) {
    Kernel* inner = ck.release();
    ck = std::make_unique<NhwcStep>([&cctx, inner](const KernelArgs& a) -> StatusOr<std::unique_ptr<Kernel>> {
      std::unique_ptr<Kernel> k(inner);
      PRECIS_RETURN_IF_ERROR(k->Init(a, cctx));
      return k;
    }, false);
  }
  Status cs = ck->Init(ca, cctx);
  std::vector<uint8_t> cscratch;
  if (cs.ok()) {
    cscratch.resize(ck->ScratchBytes() + 64);
    cctx.scratch = cscratch.data();
    cs = ck->Run(ca, cctx);
  }
  // Emulated CUDA.
  static cuda::KernelRegistry reg = [] { cuda::KernelRegistry r; RegisterCudaKernels(r); return r; }();
  auto gf = reg.Find(op);
  if (!gf) { std::printf("FAIL %s: no CUDA kernel %s\n", label.c_str(), op.c_str()); ++g_failures; return false; }
  auto gk = gf();
  cudaDeviceProp prop;
  prop.multiProcessorCount = o.sms;
  std::vector<std::shared_ptr<void>> tables;
  int err = 0;
  cuda::CudaContext gctx;
  gctx.prop = &prop;
  gctx.tables = &tables;
  gctx.error = &err;
  // Init sees non-constant data as nullptr.
  std::vector<uint8_t*> saved;
  for (Tensor* t : ga.inputs) if (t) { saved.push_back(t->data); if (!t->is_constant) t->data = nullptr; }
  for (Tensor* t : ga.outputs) if (t) { saved.push_back(t->data); t->data = nullptr; }
  Status gs = gk->Init(ga, gctx);
  size_t si = 0;
  for (Tensor* t : ga.inputs) if (t) t->data = saved[si++];
  for (Tensor* t : ga.outputs) if (t) t->data = saved[si++];
  if (!cs.ok() || !gs.ok()) {
    if (o.must_run) {
      std::printf("FAIL %s: a valid step was refused: cpu %s | gpu %s\n", label.c_str(), cs.ToString().c_str(), gs.ToString().c_str());
      ++g_failures;
      return false;
    }
    bool cpu_init_fail = !cs.ok();
    // CPU failed at Init or Run; the GPU must fail at Init, or flag a device error.
    if (gs.ok()) {
      std::vector<uint8_t> gscratch(gk->ScratchBytes() + 64);
      gctx.scratch = gscratch.data();
      Status rs = gk->Run(ga, gctx);
      if (!rs.ok() || err) return true;
    }
    if (cpu_init_fail && !gs.ok()) return true;
    if (!cs.ok() && gs.code() == StatusCode::kUnimplemented) { return true; }
    std::printf("FAIL %s: cpu %s | gpu %s (device error %d)\n", label.c_str(), cs.ToString().c_str(), gs.ToString().c_str(), err);
    ++g_failures;
    return false;
  }
  std::vector<uint8_t> gscratch(gk->ScratchBytes(), 0xEE);
  gctx.scratch = gscratch.data();
  Status rs = gk->Run(ga, gctx);
  if (!rs.ok() || err) {
    std::printf("FAIL %s: gpu run %s, device error %d\n", label.c_str(), rs.ToString().c_str(), err);
    ++g_failures;
    return false;
  }
  bool ok = true;
  for (size_t i = 0; i < outs.size(); ++i) {
    if (!outs[i].present) continue;
    const Tensor& c = *ca.outputs[i];
    const Tensor& g = *ga.outputs[i];
    double tol = o.tol >= 0 ? o.tol : (c.dtype == DataType::kF16 || c.dtype == DataType::kBF16) ? 1e-2 : c.dtype == DataType::kF64 ? 1e-11 : 2e-6;
    int bad = 0;
    for (int64_t j = 0; j < c.numel; ++j) {
      double a = Get(c.dtype, g.data, j), b = Get(c.dtype, c.data, j);
      if (!Close(c.dtype, a, b, tol)) {
        if (bad < 4) std::printf("FAIL %s: output %zu [%lld]: gpu %.9g cpu %.9g\n", label.c_str(), i, (long long)j, a, b);
        ++bad;
      }
    }
    if (bad) {
      std::printf("FAIL %s: output %zu: %d of %lld differ\n", label.c_str(), i, bad, (long long)c.numel);
      ok = false;
    }
  }
  if (!ok) ++g_failures;
  return ok;
}
}  // namespace h
