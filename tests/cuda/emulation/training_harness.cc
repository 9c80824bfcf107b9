// Host emulation check of the CUDA kernels of the training operators (runtime/cuda/kernels/
// training.cu) against the CPU reference kernels (runtime/cpu/kernels/training.cc, MaxPoolGrad in
// nn_pool.cc), run as written (block reductions with shuffles and barriers) on fiber_cuda.h:
// BatchNormalizationTraining and its gradient over small, odd and long channels (more values
// per channel than a block has threads), every float dtype, parameters and statistics in other
// dtypes, optional outputs absent; DropoutTraining's mask bit for bit (ratios 0, 0.1, 0.5, streams,
// element counts across Philox blocks); ReluGrad for every pair of dtypes with zeros and NaN;
// UnscaleGradients over mixed dtypes, empty and large gradients, more gradients than one launch
// takes, with and without Inf/NaN (found_inf exact); MaxPoolGrad in 1-3 spatial dims with
// strides, pads, dilations, ceil_mode tails, overlapping windows, ties and NaN; and errors.
// Tolerances (relative, floor 1 in magnitude): f32 2e-6, f64 1e-11, f16/bf16 1e-2 (sums in another
// order than the CPU's double loop, then one rounding); masks, flags and MaxPoolGrad (the same
// windows summed in the same order) exact up to that rounding.
// Usage: training_harness [FILTER]   (runs the cases whose label contains FILTER)
#include "tests/cuda/emulation/fiber_check.h"

namespace precis::rt {
void RegisterAllCpuKernels(KernelRegistry&) {}  // kernel.cc's Cpu() registry is not used here
void RegisterTrainingKernels(KernelRegistry& r);  // training.cc
void RegisterPoolKernels(KernelRegistry& r);      // nn_pool.cc (MaxPoolGrad)
namespace cuda {
void RegisterTrainingKernels(KernelRegistry& r);
void RegisterAllCudaKernels(KernelRegistry& r) { RegisterTrainingKernels(r); }
}  // namespace cuda
}  // namespace precis::rt

namespace h {
void RegisterCpuReferences(KernelRegistry& r) {
  precis::rt::RegisterTrainingKernels(r);
  precis::rt::RegisterPoolKernels(r);
}
void RegisterCudaKernels(cuda::KernelRegistry& r) { cuda::RegisterTrainingKernels(r); }
}  // namespace h

using namespace h;
using precis::DataType;
using precis::rt::testing::AttrList;
using D = std::vector<int64_t>;
const DataType F32 = DataType::kF32, F16 = DataType::kF16, BF16 = DataType::kBF16, F64 = DataType::kF64, I64 = DataType::kI64,
               BOOL = DataType::kBool;

std::string Str(const D& d) { std::string s = "["; for (auto v : d) s += std::to_string(v) + ","; return s + "]"; }
std::string N(DataType t) { return precis::DataTypeName(t); }

Options Valid(int special = 0) {
  Options o;
  o.must_run = true;
  o.special = special;
  return o;
}

void BatchNormCases() {
  std::vector<D> shapes = {{2, 3}, {4, 5, 7}, {2, 3, 4, 5}, {1, 1, 1}, {3, 300, 2}, {8, 2, 33, 17}, {1, 4, 2, 3, 3}, {600, 2}};
  std::vector<double> var = {0.5, 1.5, 2.0, 0.1, 3.0, 0.7, 1e-3};
  for (DataType t : {F32, F16, BF16, F64})
    for (const D& dims : shapes) {
      int64_t c = dims[1];
      DataType st = t == F64 ? F64 : F32;  // statistics: f32, f64 for f64 X
      std::string base = N(t) + " " + Str(dims);
      Check("BnTraining " + base, "BatchNormalizationTraining", {In(t, dims), In(F32, {c}), In(F32, {c})},
            {Out(t, dims), Out(st, {c}), Out(st, {c})}, [](AttrList& a) { a.Float("epsilon", 1e-5f); }, Valid());
      Check("BnTrainingGrad " + base, "BatchNormalizationTrainingGrad",
            {In(t, dims), In(t, dims), In(F32, {c}), In(st, {c}), In(st, {c}, var)}, {Out(t, dims), Out(F32, {c}), Out(F32, {c})},
            [](AttrList& a) { a.Float("epsilon", 1e-5f); }, Valid());
    }
  // Parameters and statistics in other dtypes, optional outputs absent, NaN/Inf in X, in place.
  Check("BnTraining f16 params, no stats", "BatchNormalizationTraining", {In(F16, {3, 4, 5}), In(F16, {4}), In(BF16, {4})},
        {Out(F16, {3, 4, 5}), None(), None()}, nullptr, Valid());
  Check("BnTraining f64 stats of f32 X", "BatchNormalizationTraining", {In(F32, {3, 4, 5}), In(F64, {4}), In(F32, {4})},
        {Out(F32, {3, 4, 5}), Out(F64, {4}), Out(F16, {4})}, nullptr, Valid());
  Check("BnTraining NaN/Inf", "BatchNormalizationTraining", {In(F32, {6, 3, 7}), In(F32, {3}), In(F32, {3})},
        {Out(F32, {6, 3, 7}), Out(F32, {3}), Out(F32, {3})}, nullptr, Valid(2));
  Options inplace = Valid();
  inplace.inplace = true;
  Check("BnTraining in place", "BatchNormalizationTraining", {In(F32, {5, 3, 70}), In(F32, {3}), In(F32, {3})},
        {Out(F32, {5, 3, 70}), Out(F32, {3}), Out(F32, {3})}, nullptr, inplace);
  Check("BnTrainingGrad no dX", "BatchNormalizationTrainingGrad",
        {In(F16, {4, 3, 9}), In(F16, {4, 3, 9}), In(F32, {3}), In(F32, {3}), In(F32, {3}, var)}, {None(), Out(F32, {3}), Out(F32, {3})}, nullptr, Valid());
  Check("BnTrainingGrad dX only", "BatchNormalizationTrainingGrad",
        {In(BF16, {4, 3, 9}), In(BF16, {4, 3, 9}), In(F32, {3}), In(F32, {3}), In(F32, {3}, var)}, {Out(BF16, {4, 3, 9}), None(), None()}, nullptr, Valid());
  // Errors: both sides refuse.
  Check("BnTraining rank 1", "BatchNormalizationTraining", {In(F32, {5}), In(F32, {5}), In(F32, {5})}, {Out(F32, {5})}, nullptr);
  Check("BnTraining empty batch", "BatchNormalizationTraining", {In(F32, {0, 3, 2}), In(F32, {3}), In(F32, {3})}, {Out(F32, {0, 3, 2})}, nullptr);
  Check("BnTraining scale size", "BatchNormalizationTraining", {In(F32, {2, 3}), In(F32, {4}), In(F32, {3})}, {Out(F32, {2, 3})}, nullptr);
  Check("BnTrainingGrad dtypes", "BatchNormalizationTrainingGrad",
        {In(F16, {2, 3}), In(F32, {2, 3}), In(F32, {3}), In(F32, {3}), In(F32, {3}, var)}, {Out(F32, {2, 3})}, nullptr);
}

void DropoutCases() {
  for (DataType t : {F32, F16, BF16, F64})
    for (const D& dims : std::vector<D>{{7}, {3, 5}, {4099}, {2, 3, 64}, {0, 4}})
      for (float ratio : {0.0f, 0.1f, 0.5f})
        for (int64_t stream : {0, 3}) {
          std::string label = "Dropout " + N(t) + " " + Str(dims) + " ratio " + std::to_string(ratio) + " stream " + std::to_string(stream);
          Check(label, "DropoutTraining", {In(t, dims), In(I64, {}, {12345}), In(I64, {}, {7})}, {Out(t, dims), Out(BOOL, dims)},
                [&](AttrList& a) { a.Float("ratio", ratio).Int("stream", stream); }, Valid());
        }
  Check("Dropout no mask", "DropoutTraining", {In(F32, {9, 9}), In(I64, {}, {-1}), In(I64, {}, {1LL << 40})}, {Out(F32, {9, 9}), None()},
        [](AttrList& a) { a.Float("ratio", 0.3f); }, Valid());
  Check("Dropout ratio 1", "DropoutTraining", {In(F32, {4}), In(I64, {}, {1}), In(I64, {}, {1})}, {Out(F32, {4})}, [](AttrList& a) { a.Float("ratio", 1.0f); });
  Check("Dropout seed dtype", "DropoutTraining", {In(F32, {4}), In(F32, {}, {1}), In(I64, {}, {1})}, {Out(F32, {4})}, [](AttrList& a) { a.Float("ratio", 0.5f); });
}

void ReluGradCases() {
  for (DataType g : {F32, F16, BF16, F64})
    for (DataType x : {F32, F16, BF16, F64})
      for (int special : {1, 2}) {
        D dims = {3, 7, 11};
        Check("ReluGrad dY " + N(g) + " X " + N(x) + " special " + std::to_string(special), "ReluGrad", {In(g, dims), In(x, dims)}, {Out(g, dims)}, nullptr,
              Valid(special));
      }
  Check("ReluGrad empty", "ReluGrad", {In(F32, {0, 3}), In(F32, {0, 3})}, {Out(F32, {0, 3})}, nullptr, Valid());
  Check("ReluGrad shapes", "ReluGrad", {In(F32, {2, 3}), In(F32, {3, 2})}, {Out(F32, {2, 3})}, nullptr);
}

void UnscaleCases() {
  for (double inv : {0.25, 1.0, 1.0 / 65536})
    for (int special : {0, 2}) {
      std::vector<D> shapes = {{3, 4}, {1}, {0, 5}, {70001}, {17}};
      std::vector<DataType> types = {F32, F16, BF16, F64, F32};
      std::vector<Spec> ins = {In(F32, {}, {inv})}, outs;
      for (size_t i = 0; i < shapes.size(); ++i) {
        ins.push_back(In(types[i], shapes[i]));
        outs.push_back(Out(types[i], shapes[i]));
      }
      outs.push_back(Out(BOOL, {}));
      Check("Unscale inv " + std::to_string(inv) + " special " + std::to_string(special), "UnscaleGradients", ins, outs, nullptr, Valid(special));
    }
  // More gradients than one launch takes (24), a non-finite value only in the last one.
  for (int where : {-1, 0, 29}) {
    std::vector<Spec> ins = {In(F32, {}, {0.5})}, outs;
    for (int i = 0; i < 30; ++i) {
      D dims = {int64_t(1 + i * 37 % 101)};
      std::vector<double> values;
      if (i == where) values = {1.0, 2.0, INFINITY, 3.0};
      ins.push_back(In(i % 3 == 0 ? F16 : F32, dims, values));
      outs.push_back(Out(i % 3 == 0 ? F16 : F32, dims));
    }
    outs.push_back(Out(BOOL, {}));
    Check("Unscale 30 gradients, Inf in " + std::to_string(where), "UnscaleGradients", ins, outs, nullptr, Valid());
  }
  Check("Unscale NaN only", "UnscaleGradients", {In(F32, {}, {0.5}), In(F32, {5}, {1, 2, NAN, 4, 5})}, {Out(F32, {5}), Out(BOOL, {})}, nullptr, Valid());
  Check("Unscale bad scale", "UnscaleGradients", {In(F16, {}, {0.5}), In(F32, {5})}, {Out(F32, {5}), Out(BOOL, {})}, nullptr);
  Check("Unscale no flag", "UnscaleGradients", {In(F32, {}, {0.5}), In(F32, {5})}, {Out(F32, {5}), Out(F32, {})}, nullptr);
}

// Output size of a pooling window along one dim (ONNX's formula; ceil_mode drops a window that
// would start past the input and its begin padding).
int64_t PoolOut(int64_t in, int64_t k, int64_t s, int64_t pb, int64_t pe, int64_t d, bool ceil_mode) {
  int64_t span = in + pb + pe - d * (k - 1) - 1;
  int64_t o = (ceil_mode ? (span + s - 1) / s : span / s) + 1;
  if (ceil_mode && (o - 1) * s >= in + pb) --o;
  return o;
}

void MaxPoolGradCases() {
  struct Geo {
    D in, k, s, pads, dil;
    bool ceil;
  };
  std::vector<Geo> geos = {
      {{8, 8}, {3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}, false},     // ResNet's stem pool
      {{9, 7}, {2, 2}, {2, 2}, {0, 0, 0, 0}, {1, 1}, false},
      {{9, 7}, {3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}, false},     // overlapping windows
      {{10, 9}, {3, 2}, {2, 3}, {0, 1, 2, 0}, {2, 1}, false},    // dilations, asymmetric pads
      {{9, 8}, {3, 3}, {2, 2}, {0, 0, 0, 0}, {1, 1}, true},      // ceil_mode tail windows
      {{11}, {4}, {3}, {2, 1}, {1}, true},                       // 1-D
      {{5, 6, 4}, {2, 3, 2}, {2, 1, 2}, {0, 1, 0, 1, 1, 1}, {1, 1, 1}, false},  // 3-D
      {{4, 4}, {5, 5}, {1, 1}, {2, 2, 2, 2}, {1, 1}, false},     // windows larger than the input
  };
  for (DataType t : {F32, F16, BF16, F64})
    for (size_t gi = 0; gi < geos.size(); ++gi)
      for (int special : {0, 1, 2}) {
        const Geo& g = geos[gi];
        size_t r = g.in.size();
        D x = {2, 3}, y = {2, 3};
        for (size_t d = 0; d < r; ++d) {
          x.push_back(g.in[d]);
          y.push_back(PoolOut(g.in[d], g.k[d], g.s[d], g.pads[d], g.pads[d + r], g.dil[d], g.ceil));
        }
        Check("MaxPoolGrad " + N(t) + " geometry " + std::to_string(gi) + " special " + std::to_string(special), "MaxPoolGrad",
              {In(t, y), In(t, x)}, {Out(t, x)},
              [&](AttrList& a) { a.Ints("kernel_shape", g.k).Ints("strides", g.s).Ints("pads", g.pads).Ints("dilations", g.dil).Int("ceil_mode", g.ceil); },
              Valid(special));
      }
  Check("MaxPoolGrad dY shape", "MaxPoolGrad", {In(F32, {1, 1, 3, 3}), In(F32, {1, 1, 4, 4})}, {Out(F32, {1, 1, 4, 4})},
        [](AttrList& a) { a.Ints("kernel_shape", {2, 2}).Ints("strides", {2, 2}); });
  Check("MaxPoolGrad no kernel", "MaxPoolGrad", {In(F32, {1, 1, 2, 2}), In(F32, {1, 1, 4, 4})}, {Out(F32, {1, 1, 4, 4})}, nullptr);
}

int main(int argc, char** argv) {
  if (argc > 1) g_filter = argv[1];
  BatchNormCases();
  std::printf("batchnorm: %d cases, %d failures\n", g_cases, g_failures);
  DropoutCases();
  ReluGradCases();
  std::printf("+dropout, relu: %d cases, %d failures\n", g_cases, g_failures);
  UnscaleCases();
  std::printf("+unscale: %d cases, %d failures\n", g_cases, g_failures);
  MaxPoolGradCases();
  std::printf("total: %d cases, %d failures\n", g_cases, g_failures);
  return g_failures || g_cases == 0 ? 1 : 0;
}
