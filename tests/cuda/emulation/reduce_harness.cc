// Host emulation check of the CUDA reduce family (runtime/cuda/kernels/reduce*.cu) against the
// CPU reference kernels: every op over odd, empty, strided and long shapes, every axis, attribute
// and dtype the CPU takes (integers of each width, f16/bf16 through the 16-bit tolerance), NaN and
// infinities, ties, in-place runs, layouts for a large and a one-SM GPU, and error cases. The
// kernels run as written (warp shuffles, shared memory, barriers) on fiber_cuda.h's emulator.
// Tolerances (relative, floor 1 in magnitude): f32 2e-6 (1e-5 where the GPU's exp/log or summation
// order differ from the CPU's double loop: LogSumExp, products, norms, losses, CumSum), f64 1e-11,
// f16/bf16 1e-2 (one rounding of a value within ~1e-6 of the CPU's); integers and indices exact.
// Usage: reduce_harness [FILTER]   (runs the cases whose label contains FILTER)
#include <cmath>
#include <cstdio>
#include <map>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "runtime/base/half.h"
#include "runtime/cpu/kernel.h"
#include "runtime/cpu/step_adapters.h"
#include "runtime/cuda/cuda_kernel.h"
#include "runtime/cuda/kernels/reduce_common.cuh"
#include "tests/runtime/kernel_test_util.h"
#include "tests/cuda/emulation/fiber_check.h"

namespace precis::rt {
void RegisterAllCpuKernels(KernelRegistry&) {}  // kernel.cc's Cpu() registry is not used here
void RegisterReduceKernels(KernelRegistry& r);    // reduce.cc (+ softmax, scan, einsum)
void RegisterNormKernels(KernelRegistry& r);      // nn_norm.cc
void RegisterNormMoreKernels(KernelRegistry& r);  // nn_norm_more.cc
void RegisterLossKernels(KernelRegistry& r);      // loss.cc
namespace cuda {
void RegisterReduceKernels(KernelRegistry& r);
void RegisterAllCudaKernels(KernelRegistry& r) { RegisterReduceKernels(r); }
}  // namespace cuda
}  // namespace precis::rt

namespace h {
void RegisterCpuReferences(KernelRegistry& r) {
  precis::rt::RegisterReduceKernels(r);
  precis::rt::RegisterNormKernels(r);
  precis::rt::RegisterNormMoreKernels(r);
  precis::rt::RegisterLossKernels(r);
}
void RegisterCudaKernels(cuda::KernelRegistry& r) { cuda::RegisterReduceKernels(r); }
}  // namespace h

using namespace h;
using precis::DataType;
using precis::rt::testing::AttrList;
using D = std::vector<int64_t>;
const DataType F32 = DataType::kF32, F16 = DataType::kF16, BF16 = DataType::kBF16, F64 = DataType::kF64, I32 = DataType::kI32,
               I64 = DataType::kI64, I8 = DataType::kI8, U8 = DataType::kU8, BOOL = DataType::kBool, U64 = DataType::kU64;

std::string Str(const D& d) { std::string s = "["; for (auto v : d) s += std::to_string(v) + ","; return s + "]"; }
std::string N(DataType t) { return precis::DataTypeName(t); }

void ReduceCases() {
  const char* ops[] = {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2", "ReduceSumSquare", "ReduceLogSum", "ReduceLogSumExp"};
  std::vector<D> shapes = {{}, {7}, {3, 4}, {2, 3, 4}, {2, 1, 3, 5}, {4, 0, 3}, {2, 3, 2, 2, 3}, {3, 300}, {300, 3}, {2, 70, 40}, {1, 5000}, {5000, 2}};
  for (const char* op : ops) {
    std::string sop = op;
    std::vector<DataType> types = {F32, F16, F64, I32, I64, U8, I8};
    if (sop == "ReduceMax" || sop == "ReduceMin") types.push_back(BOOL);
    for (DataType t : types) {
      for (const D& dims : shapes) {
        int rank = int(dims.size());
        for (int mask = 0; mask < (1 << rank); ++mask) {
          if (rank >= 4 && mask % 3 != 0 && mask != (1 << rank) - 1) continue;
          for (int keep = 0; keep < 2; ++keep) {
            std::vector<int64_t> axes;
            D out;
            for (int d = 0; d < rank; ++d) {
              if (mask >> d & 1) { axes.push_back(d - (d % 2 ? rank : 0)); if (keep) out.push_back(1); }
              else out.push_back(dims[size_t(d)]);
            }
            bool all = mask == 0;  // empty axes: reduce everything (noop=0)
            if (all) { out.clear(); if (keep) out.assign(size_t(rank), 1); }
            for (int sms : {132, 1}) {
              std::string label = sop + " " + N(t) + " " + Str(dims) + " mask " + std::to_string(mask) + " keep " + std::to_string(keep) + " sms " + std::to_string(sms);
              Options o; o.sms = sms;
              if (sop == "ReduceProd" || sop == "ReduceLogSumExp" || sop == "ReduceLogSum") o.tol = t == F16 ? 2e-2 : t == F64 ? 1e-10 : 1e-5;
              // Values near 1 for products so that they stay finite.
              std::vector<double> vals;
              if (sop == "ReduceProd" && h::IsFloat(t)) for (int i = 0; i < 97; ++i) vals.push_back(0.9 + 0.002 * i);
              if (sop == "ReduceProd" && !h::IsFloat(t)) vals = {1, 2, 3, -1, 5, 7};
              if (sop == "ReduceLogSum" && h::IsFloat(t)) for (int i = 0; i < 97; ++i) vals.push_back(0.1 + 0.05 * i);
              if (axes.empty()) {
                Check(label, op, {In(t, dims, vals)}, {Out(t, out)}, [&](AttrList& a) { a.Int("keepdims", keep); }, o);
              } else {
                std::vector<double> av(axes.begin(), axes.end());
                Check(label + " input", op, {In(t, dims, vals), In(I64, {int64_t(axes.size())}, av, true)}, {Out(t, out)},
                      [&](AttrList& a) { a.Int("keepdims", keep); }, o);
                Check(label + " attr", op, {In(t, dims, vals)}, {Out(t, out)}, [&](AttrList& a) { a.Ints("axes", axes).Int("keepdims", keep); }, o);
              }
            }
          }
        }
      }
    }
    // noop_with_empty_axes, run-time axes naming every axis, special values.
    Check(sop + " noop", op, {In(F32, {3, 4}), In(I64, {0}, {}, true)}, {Out(F32, {3, 4})}, [&](AttrList& a) { a.Int("noop_with_empty_axes", 1); });
    Check(sop + " runtime axes", op, {In(F32, {3, 4, 5}), In(I64, {3}, {2, 0, -2})}, {Out(F32, {1, 1, 1})}, [&](AttrList& a) {});
    Check(sop + " runtime axes bad", op, {In(F32, {3, 4, 5}), In(I64, {3}, {2, 0, 0})}, {Out(F32, {1, 1, 1})}, [&](AttrList& a) {});
    Check(sop + " runtime empty axes", op, {In(F32, {3, 4, 5}), In(I64, {0})}, {Out(F32, {})}, [&](AttrList& a) { a.Int("keepdims", 0); });
    for (int sms : {132, 1}) {
      Options o; o.special = 2; o.sms = sms;
      Check(sop + " specials rows sms " + std::to_string(sms), op, {In(F32, {40, 6}), In(I64, {1}, {1}, true)}, {Out(F32, {40})}, [&](AttrList& a) { a.Int("keepdims", 0); }, o);
      Check(sop + " specials cols sms " + std::to_string(sms), op, {In(F32, {6, 40}), In(I64, {1}, {0}, true)}, {Out(F32, {40})}, [&](AttrList& a) { a.Int("keepdims", 0); }, o);
      Check(sop + " specials long sms " + std::to_string(sms), op, {In(F32, {3, 700}), In(I64, {1}, {1}, true)}, {Out(F32, {3})}, [&](AttrList& a) { a.Int("keepdims", 0); }, o);
    }
    Check(sop + " all -inf", op, {In(F32, {2, 40}, {-INFINITY}), In(I64, {1}, {1}, true)}, {Out(F32, {2})}, [&](AttrList& a) { a.Int("keepdims", 0); });
    Check(sop + " bad axis", op, {In(F32, {2, 4}), In(I64, {1}, {2}, true)}, {Out(F32, {2})}, [&](AttrList& a) { a.Int("keepdims", 0); });
    Check(sop + " dup axis", op, {In(F32, {2, 4}), In(I64, {2}, {1, -1}, true)}, {Out(F32, {2})}, [&](AttrList& a) { a.Int("keepdims", 0); });
    Check(sop + " mixed dtype", op, {In(F16, {2, 4}), In(I64, {1}, {1}, true)}, {Out(F32, {2})}, [&](AttrList& a) { a.Int("keepdims", 0); });
    for (DataType it : {DataType::kI16, DataType::kU16, DataType::kU32, DataType::kU64, DataType::kI8})
      for (int ax = 0; ax < 3; ++ax) {
        Options o; o.sms = ax == 2 ? 1 : 132;
        std::vector<double> vals;
        if (sop == "ReduceProd") vals = {1, 2, 3, 5, 7, 250, 0};
        Check(sop + " w " + N(it) + " ax " + std::to_string(ax), op, {In(it, {3, 50}, vals), In(I64, {1}, {double(ax % 2)}, true)}, {Out(it, {ax % 2 ? 3 : 50})}, [&](AttrList& a) { a.Int("keepdims", 0); }, o);
        Check(sop + " w empty " + N(it) + " ax " + std::to_string(ax), op, {In(it, {3, 0}), In(I64, {1}, {1}, true)}, {Out(it, {3})}, [&](AttrList& a) { a.Int("keepdims", 0); }, o);
      }
    Check(sop + " u64", op, {In(U64, {3, 5}), In(I64, {1}, {1}, true)}, {Out(U64, {3})}, [&](AttrList& a) { a.Int("keepdims", 0); });
    Check(sop + " bf16", op, {In(BF16, {3, 50}), In(I64, {1}, {1}, true)}, {Out(BF16, {3})}, [&](AttrList& a) { a.Int("keepdims", 0); }, Options{132, false, sop == "ReduceProd" ? 1e-1 : 2e-2, 0});
  }
}

void ArgCases() {
  for (const char* op : {"ArgMax", "ArgMin"}) {
    for (DataType t : {F32, F16, F64, I32, U8, I64, DataType::kI16, DataType::kU16, DataType::kU32, U64, I8}) {
      for (const D& dims : std::vector<D>{{7}, {3, 4}, {2, 3, 4}, {3, 300}, {300, 3}, {2, 2000}, {1, 1}}) {
        int rank = int(dims.size());
        for (int axis = -rank; axis < rank; ++axis)
          for (int last = 0; last < 2; ++last)
            for (int special = 0; special < 3; ++special)
              for (int sms : {132, 1}) {
                if (special == 2 && !h::IsFloat(t)) continue;
                D out = dims;
                out[size_t(axis < 0 ? axis + rank : axis)] = 1;
                Options o; o.special = special; o.sms = sms;
                std::string label = std::string(op) + " " + N(t) + " " + Str(dims) + " axis " + std::to_string(axis) + " last " + std::to_string(last) + " sp " + std::to_string(special) + " sms " + std::to_string(sms);
                Check(label, op, {In(t, dims)}, {Out(I64, out)}, [&](AttrList& a) { a.Int("axis", axis).Int("select_last_index", last); }, o);
              }
      }
    }
    Check(std::string(op) + " bool", op, {In(BOOL, {3, 4})}, {Out(I64, {3})}, [&](AttrList& a) { a.Int("axis", 1).Int("keepdims", 0); });
    Check(std::string(op) + " zero axis", op, {In(F32, {3, 0})}, {Out(I64, {3})}, [&](AttrList& a) { a.Int("axis", 1).Int("keepdims", 0); });
    Check(std::string(op) + " nan ties", op, {In(F32, {2, 6}, {1, NAN, 3, NAN, 3, 1})}, {Out(I64, {2})}, [&](AttrList& a) { a.Int("axis", 1).Int("select_last_index", 1); });
    Check(std::string(op) + " zeros", op, {In(F32, {2, 6}, {0.0, -0.0, 0.0, -0.0, 0.0, -0.0})}, {Out(I64, {2})}, [&](AttrList& a) { a.Int("axis", 1).Int("select_last_index", 1); });
  }
}

void SoftmaxCases() {
  for (const char* op : {"Softmax", "LogSoftmax", "Hardmax"}) {
    for (DataType t : {F32, F16, F64, BF16}) {
      for (const D& dims : std::vector<D>{{7}, {3, 4}, {2, 3, 4}, {3, 300}, {300, 3}, {2, 3000}, {5, 1}, {2, 40, 33}, {0, 5}}) {
        int rank = int(dims.size());
        for (int opset : {11, 13})
          for (int axis = -rank; axis <= rank; ++axis)
            for (int special = 0; special < 3; ++special)
              for (int sms : {132, 1})
                for (int inplace = 0; inplace < 2; ++inplace) {
                  if (opset == 13 && axis == rank) continue;
                  if (inplace && (special || sms == 1)) continue;
                  Options o; o.special = special; o.sms = sms; o.inplace = inplace;
                  if (t == F32 && std::string(op) == "Softmax") o.tol = 1e-6;
                  std::string label = std::string(op) + " " + N(t) + " " + Str(dims) + " opset " + std::to_string(opset) + " axis " + std::to_string(axis) + " sp " + std::to_string(special) + " sms " + std::to_string(sms) + " inpl " + std::to_string(inplace);
                  Check(label, op, {In(t, dims)}, {Out(t, dims)}, [&](AttrList& a) {
                    a.Int("axis", axis);
                    if (opset < 13) a.Int("coerce_2d", 1);  // the kernel form of versions before 13
                  }, o);
                }
      }
    }
    Check(std::string(op) + " -inf row", op, {In(F32, {2, 40}, {-INFINITY})}, {Out(F32, {2, 40})}, [&](AttrList& a) {});
    Check(std::string(op) + " inf row", op, {In(F32, {2, 40}, {1, 2, INFINITY, 3})}, {Out(F32, {2, 40})}, [&](AttrList& a) {});
    Check(std::string(op) + " big range", op, {In(F32, {2, 64}, {-80, 10, 0, 30, 87, -103, 50})}, {Out(F32, {2, 64})}, [&](AttrList& a) {});
    Check(std::string(op) + " int", op, {In(I32, {2, 4})}, {Out(I32, {2, 4})}, [&](AttrList& a) {});
  }
}

void CumSumCases() {
  for (DataType t : {F32, F16, F64, I32, I64, U8, I8, DataType::kU16, BF16}) {
    for (const D& dims : std::vector<D>{{7}, {3, 4}, {2, 3, 4}, {3, 300}, {300, 3}, {2, 3000}, {1, 1}, {4, 0}, {1, 100}}) {
      int rank = int(dims.size());
      for (int axis = -rank; axis < rank; ++axis)
        for (int ex = 0; ex < 2; ++ex)
          for (int rev = 0; rev < 2; ++rev)
            for (int mode = 0; mode < 3; ++mode) {  // 0 constant i64 axis, 1 run-time i32 axis, 2 in place
              Options o; o.inplace = mode == 2;
              if (t == F32) o.tol = 1e-5;
              std::string label = "CumSum " + N(t) + " " + Str(dims) + " axis " + std::to_string(axis) + " ex " + std::to_string(ex) + " rev " + std::to_string(rev) + " mode " + std::to_string(mode);
              Check(label, "CumSum", {In(t, dims), In(mode == 1 ? I32 : I64, {}, {double(axis)}, mode != 1)}, {Out(t, dims)},
                    [&](AttrList& a) { a.Int("exclusive", ex).Int("reverse", rev); }, o);
            }
    }
  }
  Check("CumSum bad const axis", "CumSum", {In(F32, {3, 4}), In(I64, {}, {2}, true)}, {Out(F32, {3, 4})}, nullptr);
  Check("CumSum bad runtime axis", "CumSum", {In(F32, {3, 4}), In(I64, {}, {-3})}, {Out(F32, {3, 4})}, nullptr);
}

void TopKCases() {
  for (DataType t : {F32, F16, F64, I32, U8, I8, U64, BF16}) {
    for (const D& dims : std::vector<D>{{7}, {3, 4}, {2, 3, 4}, {3, 300}, {300, 3}, {2, 2000}, {1, 1}}) {
      int rank = int(dims.size());
      for (int axis = -rank; axis < rank; ++axis) {
        int64_t n = dims[size_t(axis < 0 ? axis + rank : axis)];
        for (int64_t k : {int64_t(0), int64_t(1), std::min<int64_t>(n, 3), n})
          for (int largest = 0; largest < 2; ++largest)
            for (int special = 0; special < 3; ++special)
              for (int outs = 0; outs < 3; ++outs) {
                if (special == 2 && !h::IsFloat(t)) continue;
                if (outs && (special != 1 || k != 3)) continue;
                if (n > 100 && k == n) continue;
                D od = dims;
                od[size_t(axis < 0 ? axis + rank : axis)] = k;
                Options o; o.special = special;
                std::string label = "TopK " + N(t) + " " + Str(dims) + " axis " + std::to_string(axis) + " k " + std::to_string(k) + " largest " + std::to_string(largest) + " sp " + std::to_string(special) + " outs " + std::to_string(outs);
                Check(label, "TopK", {In(t, dims), In(I64, {1}, {double(k)}, outs != 2)}, {outs == 1 ? None() : Out(t, od), outs == 2 ? None() : Out(I64, od)},
                      [&](AttrList& a) { a.Int("axis", axis).Int("largest", largest); }, o);
              }
      }
    }
  }
  Check("TopK wrong runtime k", "TopK", {In(F32, {3, 5}), In(I64, {1}, {2})}, {Out(F32, {3, 3}), Out(I64, {3, 3})}, [&](AttrList& a) {});
  Check("TopK wrong const k", "TopK", {In(F32, {3, 5}), In(I64, {1}, {2}, true)}, {Out(F32, {3, 3}), Out(I64, {3, 3})}, [&](AttrList& a) {});
}

void NormCases() {
  // LayerNormalization.
  for (DataType t : {F32, F16, F64, BF16})
    for (const D& dims : std::vector<D>{{7}, {3, 4}, {2, 3, 4}, {3, 300}, {300, 3}, {2, 3000}, {4, 2, 50}})
      for (int axis = -int(dims.size()); axis < int(dims.size()); ++axis)
        for (int variant = 0; variant < 5; ++variant)
          for (int sms : {132, 1}) {
            int rank = int(dims.size()), a0 = axis < 0 ? axis + rank : axis;
            D norm(dims.begin() + a0, dims.end()), sdims = norm, bdims = norm;
            int64_t rows = 1;
            for (int d = 0; d < a0; ++d) rows *= dims[size_t(d)];
            if (variant == 1 && !sdims.empty()) sdims[0] = 1;            // broadcast Scale
            if (variant == 2) { bdims = {norm.back()}; }                   // broadcast B (trailing dims)
            if (variant == 3) sdims.insert(sdims.begin(), 1);             // leading 1 is too many axes? only if rank allows
            if (variant == 3 && int(sdims.size()) > rank - a0) continue;
            bool stats = variant == 4, bias = variant != 4;
            Options o; o.sms = sms; o.inplace = variant == 0 && sms == 1;
            if (t == F32) o.tol = 1e-5;
            std::string label = "LayerNorm " + N(t) + " " + Str(dims) + " axis " + std::to_string(axis) + " v " + std::to_string(variant) + " sms " + std::to_string(sms);
            Check(label, "LayerNormalization", {In(t, dims), In(t, sdims, {}, variant == 1), bias ? In(t, bdims) : None()},
                  {Out(t, dims), stats ? Out(F32, {rows}) : None(), stats ? Out(F32, {rows}) : None()},
                  [&](AttrList& a) { a.Int("axis", axis).Float("epsilon", 1e-3f); }, o);
          }
  Check("LayerNorm stash", "LayerNormalization", {In(F32, {2, 4}), In(F32, {4})}, {Out(F32, {2, 4})}, [&](AttrList& a) { a.Int("stash_type", 0); });
  Check("LayerNorm mixed", "LayerNormalization", {In(F16, {2, 4}), In(F32, {4})}, {Out(F16, {2, 4})}, nullptr);
  // Instance / Group normalization; BatchNormalization.
  for (DataType t : {F32, F16, F64})
    for (const D& dims : std::vector<D>{{2, 6}, {2, 6, 5}, {1, 4, 40, 30}, {3, 6, 7, 1}, {2, 4, 0}})
      for (DataType pt : {F32, F16})
        for (int sms : {132, 1}) {
          int64_t c = dims[1];
          Options o; o.sms = sms; o.inplace = sms == 1;
          if (t == F32) o.tol = 1e-5;
          std::string base = N(t) + " " + Str(dims) + " p " + N(pt) + " sms " + std::to_string(sms);
          Check("InstanceNorm " + base, "InstanceNormalization", {In(t, dims), In(pt, {c}), In(pt, {c})}, {Out(t, dims)}, [&](AttrList& a) { a.Float("epsilon", 1e-4f); }, o);
          for (int64_t g : {int64_t(1), int64_t(2), c})
            for (int opset : {18, 21})
              Check("GroupNorm " + base + " g " + std::to_string(g) + " opset " + std::to_string(opset), "GroupNormalization",
                    {In(t, dims), In(pt, {opset < 21 ? g : c}), In(pt, {opset < 21 ? g : c})}, {Out(t, dims)},
                    [&](AttrList& a) {
                      a.Int("num_groups", g);
                      if (opset < 21) a.Int("per_group_params", 1);  // the kernel form of versions before 21
                    }, o);
          for (int constant = 0; constant < 2; ++constant) {
            std::vector<double> var = {0.5, 1.5, 2.0, 0.1, 3.0, 0.7};
            Check("BatchNorm " + base + " const " + std::to_string(constant), "BatchNormalization",
                  {In(t, dims), In(pt, {c}, {}, constant), In(pt, {c}, {}, constant), In(pt, {c}, {}, constant), In(pt, {c}, var, constant)}, {Out(t, dims)},
                  [&](AttrList& a) { a.Float("epsilon", 1e-3f); }, o);
          }
        }
  // BatchNormalization inside NHWC regions (layout = "NHWC"): X [N, H, W, C], channels last.
  for (DataType t : {F32, F16, BF16})
    for (const D& dims : std::vector<D>{{2, 5, 3, 6}, {1, 7, 7, 16}, {3, 1, 1, 6}, {0, 2, 2, 6}})
      for (int constant = 0; constant < 2; ++constant) {
        int64_t c = dims[3];
        std::vector<double> var = {0.5, 1.5, 2.0, 0.1, 3.0, 0.7};
        Options o;
        o.nhwc = true;
        o.inplace = constant == 1;
        if (t == F32) o.tol = 1e-5;
        Check("BatchNorm NHWC " + N(t) + " " + Str(dims) + " const " + std::to_string(constant), "BatchNormalization",
              {In(t, dims), In(F32, {c}, {}, constant), In(F32, {c}, {}, constant), In(F32, {c}, {}, constant), In(F32, {c}, var, constant)},
              {Out(t, dims)}, [&](AttrList& a) { a.Float("epsilon", 1e-3f).String("layout", "NHWC"); }, o);
      }
  Check("BatchNorm NHWC 3-D", "BatchNormalization", {In(F32, {2, 3, 4}), In(F32, {4}), In(F32, {4}), In(F32, {4}), In(F32, {4}, {1})},
        {Out(F32, {2, 3, 4})}, [&](AttrList& a) { a.String("layout", "NHWC"); });
  Check("GroupNorm bad groups", "GroupNormalization", {In(F32, {2, 6, 3}), In(F32, {6}), In(F32, {6})}, {Out(F32, {2, 6, 3})}, [&](AttrList& a) { a.Int("num_groups", 4); });
  Check("BatchNorm training", "BatchNormalization", {In(F32, {2, 3}), In(F32, {3}), In(F32, {3}), In(F32, {3}), In(F32, {3}, {1})}, {Out(F32, {2, 3}), Out(F32, {3})}, nullptr);
  // LpNormalization, MVN, LRN.
  for (DataType t : {F32, F16, F64})
    for (const D& dims : std::vector<D>{{}, {7}, {3, 4}, {2, 3, 4}, {3, 300}, {300, 3}, {2, 3, 4, 5}})
      for (int sms : {132, 1}) {
        int rank = int(dims.size());
        Options o; o.sms = sms; o.inplace = sms == 1;
        if (t == F32) o.tol = 1e-5;
        for (int axis = -rank; axis < std::max(rank, 1); ++axis)
          for (int p : {1, 2, 3})
            Check("LpNorm " + N(t) + " " + Str(dims) + " axis " + std::to_string(axis) + " p " + std::to_string(p) + " sms " + std::to_string(sms),
                  "LpNormalization", {In(t, dims)}, {Out(t, dims)}, [&](AttrList& a) { a.Int("axis", axis).Int("p", p); }, o);
        for (int mask = 0; mask < (1 << rank); ++mask) {
          std::vector<int64_t> axes;
          for (int d = 0; d < rank; ++d) if (mask >> d & 1) axes.push_back(d);
          Check("MVN " + N(t) + " " + Str(dims) + " mask " + std::to_string(mask) + " sms " + std::to_string(sms), "MeanVarianceNormalization", {In(t, dims)}, {Out(t, dims)},
                [&](AttrList& a) { if (mask) a.Ints("axes", axes); }, o);
        }
        if (rank >= 2)
          for (int size : {1, 2, 3, 5})
            Check("LRN " + N(t) + " " + Str(dims) + " size " + std::to_string(size), "LRN", {In(t, dims)}, {Out(t, dims)},
                  [&](AttrList& a) { a.Int("size", size).Float("alpha", 0.5f).Float("beta", 0.8f).Float("bias", 1.5f); });
      }
  Check("LpNorm zero", "LpNormalization", {In(F32, {2, 3}, {0, 0, 0, 1, 2, 3})}, {Out(F32, {2, 3})}, nullptr);
}

void LossCases() {
  for (const char* op : {"NegativeLogLikelihoodLoss", "SoftmaxCrossEntropyLoss"})
    for (DataType t : {F32, F16, F64})
      for (const D& dims : std::vector<D>{{4, 5}, {3, 5, 2}, {2, 4, 3, 2}, {3, 1000}, {2, 300, 7}})
        for (DataType tt : {I32, I64})
          for (const char* red : {"none", "sum", "mean"})
            for (int variant = 0; variant < 4; ++variant)  // 0 plain, 1 weights, 2 ignore_index, 3 log_prob output
              for (int sms : {132, 1}) {
                if (variant == 3 && std::string(op)[0] == 'N') continue;
                int64_t n = dims[0], c = dims[1];
                D td = dims;
                td.erase(td.begin() + 1);
                std::vector<double> targets;
                for (int i = 0; i < 97; ++i) targets.push_back(double((i * 7 + 3) % c));
                if (variant == 2) targets[1] = targets[5] = -1;
                D yd = std::string(red) == "none" ? td : D{};
                Options o; o.sms = sms;
                if (t == F32) o.tol = 1e-5;
                std::string label = std::string(op) + " " + N(t) + " " + Str(dims) + " " + N(tt) + " " + red + " v " + std::to_string(variant) + " sms " + std::to_string(sms);
                (void)n;
                Check(label, op, {In(t, dims), In(tt, td, targets), variant == 1 ? In(t, {c}) : None()}, {Out(t, yd), variant == 3 ? Out(t, dims) : None()},
                      [&](AttrList& a) { a.String("reduction", red); if (variant == 2) a.Int("ignore_index", -1); }, o);
              }
  Check("NLL bad target", "NegativeLogLikelihoodLoss", {In(F32, {2, 3}), In(I64, {2}, {0, 3})}, {Out(F32, {})}, nullptr);
  Check("SCE bad target", "SoftmaxCrossEntropyLoss", {In(F32, {2, 3}), In(I64, {2}, {-1, 1})}, {Out(F32, {})}, nullptr);
  Check("SCE all ignored", "SoftmaxCrossEntropyLoss", {In(F32, {2, 3}), In(I64, {2}, {-1, -1})}, {Out(F32, {})}, [&](AttrList& a) { a.Int("ignore_index", -1); });
}

using namespace precis::rt::cuda;
using namespace precis::rt::cuda::reduce;

namespace slices {

// All offsets sum(idx[i] * strides[i]) over the index space dims, row-major.
std::vector<int64_t> Offsets(const std::vector<int64_t>& dims, const std::vector<int64_t>& strides) {
  std::vector<int64_t> out{0};
  for (size_t i = 0; i < dims.size(); ++i) {
    std::vector<int64_t> next;
    for (int64_t b : out)
      for (int64_t k = 0; k < dims[i]; ++k) next.push_back(b + k * strides[i]);
    out.swap(next);
  }
  return out;
}

}  // namespace slices

// Every layout, not only the ones ChooseLayout picks: the threads of a slice visit each of its
// elements once, at the CPU walk's offset, with its row-major reduced index increasing per thread
// (ArgMax/TopK tie-breaking relies on that).
void SlicesCheck() {
  std::mt19937 rng(7);
  int failures = 0, checked = 0;
  for (int it = 0; it < 20000; ++it) {
    int rank = int(rng() % 6);
    std::vector<int64_t> dims(static_cast<size_t>(rank));
    for (auto& d : dims) {
      int r = int(rng() % 10);
      d = r < 2 ? 1 : r == 2 ? (it % 7 == 0 ? 0 : 2) : r;  // size-1 and size-0 axes too
    }
    std::vector<bool> reduced(static_cast<size_t>(rank));
    for (int d = 0; d < rank; ++d) reduced[size_t(d)] = rng() % 2;
    Slices s;
    if (!MakeSlices(dims, reduced, &s)) {
      std::printf("FAIL: MakeSlices refused rank %d\n", rank);
      ++failures;
      continue;
    }
    std::vector<int64_t> strides = DenseStrides(dims), kd, ks, rd, rs;
    for (int d = 0; d < rank; ++d) {
      (reduced[size_t(d)] ? rd : kd).push_back(dims[size_t(d)]);
      (reduced[size_t(d)] ? rs : ks).push_back(strides[size_t(d)]);
    }
    std::vector<int64_t> kept = slices::Offsets(kd, ks), reds = slices::Offsets(rd, rs);
    if (int64_t(kept.size()) != s.count || (s.count && s.size() != int64_t(reds.size()))) {
      std::printf("FAIL: %lld slices of %lld, expected %zu of %zu\n", (long long)s.count, (long long)s.size(), kept.size(), reds.size());
      ++failures;
      continue;
    }
    cudaDeviceProp prop{};
    prop.multiProcessorCount = 1 + int(rng() % 132);
    prop.maxThreadsPerMultiProcessor = 2048;
    std::vector<Layout> layouts{ChooseLayout(s, &prop)};
    for (int y : {1, 2, 4, 32, 64, 256, 1024})
      for (int x_fast = 0; x_fast < 2; ++x_fast)
        for (int by_runs = 0; by_runs < 2; ++by_runs) {
          Layout l;
          l.Y = y;
          l.X = x_fast ? 32 : std::max(1, 256 / y);
          l.x_fast = x_fast;
          l.by_runs = by_runs;
          layouts.push_back(l);
        }
    for (const Layout& l : layouts) {
      ++checked;
      for (int64_t o = 0; o < s.count; ++o) {
        int64_t base = s.kept(o);
        bool bad = base != kept[size_t(o)];
        std::map<int64_t, int> seen;
        for (int y = 0; y < l.Y && !bad; ++y) {
          int64_t last = -1;
          Visit(s, l, base, y, [&](int64_t off, int64_t r, int64_t k) {
            int64_t j = r * s.run + k;
            if (j <= last || j >= int64_t(reds.size()) || off != base + reds[size_t(j)]) bad = true;
            last = j;
            ++seen[j];
          });
        }
        bad = bad || seen.size() != reds.size();
        for (const auto& [j, c] : seen) bad = bad || c != 1;
        if (bad) {
          if (failures < 10) std::printf("FAIL: rank %d, layout Y %d x_fast %d by_runs %d, slice %lld\n", rank, l.Y, l.x_fast, l.by_runs, (long long)o);
          ++failures;
          break;
        }
      }
    }
  }
  std::printf("slices: %d layouts checked, %d failures\n", checked, failures);
  h::g_failures += failures;
}

int main(int argc, char** argv) {
  if (argc > 1) g_filter = argv[1];
  if (g_filter.empty()) SlicesCheck();
  ReduceCases();
  std::printf("reduce: %d cases, %d failures\n", g_cases, g_failures);
  ArgCases();
  std::printf("+arg: %d cases, %d failures\n", g_cases, g_failures);
  SoftmaxCases();
  std::printf("+softmax: %d cases, %d failures\n", g_cases, g_failures);
  CumSumCases();
  TopKCases();
  std::printf("+scan: %d cases, %d failures\n", g_cases, g_failures);
  NormCases();
  std::printf("+norm: %d cases, %d failures\n", g_cases, g_failures);
  LossCases();
  std::printf("total: %d cases, %d failures\n", g_cases, g_failures);
  return g_failures ? 1 : 0;
}
