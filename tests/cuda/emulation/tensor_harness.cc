// Compares the CUDA tensor kernels (run on the host through PRECIS_TENSOR_HOST_EMULATION) with
// the CPU reference kernels, bitwise.
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "runtime/base/half.h"
#include "runtime/cpu/kernel.h"
#include "runtime/cpu/kernels/register.h"
#include "runtime/cuda/cuda_kernel.h"
#include "runtime/cuda/kernels/register.h"
#include "runtime/cuda/kernels/tensor_util.cuh"

using namespace precis;
using namespace precis::rt;

namespace precis::rt {
void RegisterAllCpuKernels(KernelRegistry&) {}  // kernel.cc's Cpu() registry is not used here
}  // namespace precis::rt


static int failures = 0, cases = 0;

class Attrs {
 public:
  Attrs& Int(const char* n, int64_t v) {
    attrs_.push_back(plan::CreateAttr(fbb_, fbb_.CreateString(n), plan::AttrKind_Int, v));
    names_.push_back(n);
    return *this;
  }
  Attrs& Float(const char* n, float v) {
    attrs_.push_back(plan::CreateAttr(fbb_, fbb_.CreateString(n), plan::AttrKind_Float, 0, v));
    return *this;
  }
  Attrs& String(const char* n, const std::string& v) {
    auto a = fbb_.CreateString(n), s = fbb_.CreateString(v);
    attrs_.push_back(plan::CreateAttr(fbb_, a, plan::AttrKind_String, 0, 0, s));
    return *this;
  }
  Attrs& Ints(const char* n, const std::vector<int64_t>& v) {
    auto a = fbb_.CreateString(n);
    auto i = fbb_.CreateVector(v);
    attrs_.push_back(plan::CreateAttr(fbb_, a, plan::AttrKind_Ints, 0, 0, 0, i));
    return *this;
  }
  Attrs& Floats(const char* n, const std::vector<float>& v) {
    auto a = fbb_.CreateString(n);
    auto f = fbb_.CreateVector(v);
    attrs_.push_back(plan::CreateAttr(fbb_, a, plan::AttrKind_Floats, 0, 0, 0, 0, f));
    return *this;
  }
  Attrs& Tensor(const char* n, DataType dt, uint64_t bits) {
    auto a = fbb_.CreateString(n);
    std::vector<int64_t> dims{1};
    auto d = fbb_.CreateVector(dims);
    std::vector<uint8_t> bytes(DataTypeSize(dt));
    std::memcpy(bytes.data(), &bits, bytes.size());
    auto b = fbb_.CreateVector(bytes);
    attrs_.push_back(plan::CreateAttr(fbb_, a, plan::AttrKind_Tensor, 0, 0, 0, 0, 0, 0, uint8_t(dt), d, b));
    return *this;
  }
  Attributes Finish() {
    if (!done_) {
      auto v = fbb_.CreateVector(attrs_);
      fbb_.Finish(plan::CreateStep(fbb_, 0, 0, 0, 0, v));
      done_ = true;
    }
    return Attributes(flatbuffers::GetRoot<plan::Step>(fbb_.GetBufferPointer())->attrs());
  }

 private:
  flatbuffers::FlatBufferBuilder fbb_;
  std::vector<flatbuffers::Offset<plan::Attr>> attrs_;
  std::vector<std::string> names_;
  bool done_ = false;
};

struct T {
  DataType dtype = DataType::kF32;
  std::vector<int64_t> dims;
  std::vector<uint8_t> data;
  bool constant = false;
  bool omitted = false;
  int64_t numel() const {
    int64_t n = 1;
    for (int64_t d : dims) n *= d;
    return n;
  }
};

T Omit() {
  T t;
  t.omitted = true;
  return t;
}
T Out(DataType dt, std::vector<int64_t> dims) {
  T t;
  t.dtype = dt;
  t.dims = dims;
  t.data.assign(size_t(t.numel()) * DataTypeSize(dt), 0);
  return t;
}
T Values(DataType dt, std::vector<int64_t> dims, const std::vector<double>& v, bool constant = false) {
  T t = Out(dt, dims);
  size_t es = DataTypeSize(dt);
  for (size_t i = 0; i < v.size() && i < size_t(t.numel()); ++i) {
    uint64_t bits = cuda::tensor::SaturatedBits(dt, v[i]);
    std::memcpy(t.data.data() + i * es, &bits, es);
  }
  t.constant = constant;
  return t;
}
std::mt19937_64 rng(12345);
T Rand(DataType dt, std::vector<int64_t> dims, double lo = -3, double hi = 3) {
  T t = Out(dt, dims);
  std::vector<double> v(size_t(t.numel()));
  bool integral = !(dt == DataType::kF32 || dt == DataType::kF64 || dt == DataType::kF16 || dt == DataType::kBF16);
  std::uniform_real_distribution<double> u(lo, hi);
  for (double& x : v) {
    x = u(rng);
    if (integral) x = std::floor(x);
    if (dt == DataType::kBool) x = x > 0;
  }
  return Values(dt, dims, v);
}
T RandIdx(DataType dt, std::vector<int64_t> dims, int64_t lo, int64_t hi) {  // inclusive
  std::uniform_int_distribution<int64_t> u(lo, hi);
  T t = Out(dt, dims);
  std::vector<double> v(size_t(t.numel()));
  for (double& x : v) x = double(u(rng));
  return Values(dt, dims, v);
}

struct Outcome {
  Status init, run;
  int device_error = 0;
  std::vector<std::vector<uint8_t>> outs;
};

Tensor MakeTensor(const T& t, uint8_t* data) {
  Tensor x;
  x.name = "t";
  x.dtype = t.dtype;
  x.dims = t.dims;
  x.numel = t.numel();
  x.bytes = size_t(x.numel) * DataTypeSize(t.dtype);
  x.data = data;
  x.is_constant = t.constant;
  return x;
}

// inplace: output 0 shares input 0's storage.
Outcome Run(bool gpu, const std::string& op, std::vector<T> ins, std::vector<T> outs, Attributes attrs, bool inplace) {
  Outcome r;
  std::vector<Tensor> tin(ins.size()), tout(outs.size());
  for (auto& o : outs) std::fill(o.data.begin(), o.data.end(), uint8_t(0xcd));
  for (size_t i = 0; i < ins.size(); ++i) tin[i] = MakeTensor(ins[i], ins[i].data.data());
  for (size_t i = 0; i < outs.size(); ++i) tout[i] = MakeTensor(outs[i], outs[i].data.data());
  if (inplace) tout[0].data = tin[0].data;
  KernelArgs args;
  for (size_t i = 0; i < ins.size(); ++i) args.inputs.push_back(ins[i].omitted ? nullptr : &tin[i]);
  for (auto& t : tout) args.outputs.push_back(&t);
  args.attrs = attrs;
  args.node = op + " 'test'";
  if (!gpu) {
    static KernelRegistry cpu = [] {
      KernelRegistry g;
      RegisterTensorKernels(g);
      return g;
    }();
    auto f = cpu.Find(op);
    if (!f) {
      r.init = Internal("no cpu kernel");
      return r;
    }
    auto k = f();
    CpuContext ctx;
    r.init = k->Init(args, ctx);
    if (!r.init.ok()) return r;
    std::vector<uint8_t> scratch(k->ScratchBytes() + 64);
    ctx.scratch = scratch.data();
    r.run = k->Run(args, ctx);
  } else {
    static cuda::KernelRegistry reg = [] {
      cuda::KernelRegistry g;
      cuda::RegisterTensorKernels(g);
      return g;
    }();
    auto f = reg.Find(op);
    if (!f) {
      r.init = Internal("no cuda kernel");
      return r;
    }
    auto k = f();
    // Init sees constants only.
    std::vector<Tensor> hin = tin, hout = tout;
    for (auto& t : hin)
      if (!t.is_constant) t.data = nullptr;
    for (auto& t : hout) t.data = nullptr;
    KernelArgs h = args;
    for (size_t i = 0; i < ins.size(); ++i) h.inputs[i] = ins[i].omitted ? nullptr : &hin[i];
    for (size_t i = 0; i < outs.size(); ++i) h.outputs[i] = &hout[i];
    std::vector<std::shared_ptr<void>> tables;
    cuda::CudaContext ctx;
    ctx.tables = &tables;
    int err = 0;
    ctx.error = &err;
    r.init = k->Init(h, ctx);
    if (!r.init.ok()) return r;
    std::vector<uint8_t> scratch(k->ScratchBytes() + 64, 0xab);
    ctx.scratch = scratch.data();
    r.run = k->Run(args, ctx);
    r.device_error = err;
  }
  if (inplace) outs[0].data = ins[0].data;
  for (auto& o : outs) r.outs.push_back(o.data);
  return r;
}

// expect: "ok", "error" (CPU fails at run or init), or "" (whatever the CPU says)
void Check(const std::string& what, const std::string& op, const std::vector<T>& ins, const std::vector<T>& outs,
           const std::function<void(Attrs&)>& attrs, bool inplace = false, const char* expect = "") {
  ++cases;
  Attrs a1, a2;
  attrs(a1);
  attrs(a2);
  Outcome c = Run(false, op, ins, outs, a1.Finish(), inplace);
  Outcome g = Run(true, op, ins, outs, a2.Finish(), inplace);
  auto fail = [&](const std::string& m) {
    ++failures;
    std::printf("FAIL %s [%s]: %s\n", what.c_str(), op.c_str(), m.c_str());
  };
  bool cpu_failed = !c.init.ok() || !c.run.ok();
  if (std::string(expect) == "ok" && cpu_failed) fail("cpu failed: " + c.init.message() + c.run.message());
  if (std::string(expect) == "error" && !cpu_failed) fail("cpu did not fail");
  if (!c.init.ok()) {
    if (g.init.ok()) fail("gpu init accepted what cpu refused: " + c.init.message());
    return;
  }
  if (!g.init.ok()) {
    fail("gpu init failed: " + g.init.message());
    return;
  }
  if (!g.run.ok()) {
    fail("gpu run failed: " + g.run.message());
    return;
  }
  if (!c.run.ok()) {
    if (g.device_error == 0) fail("cpu run failed (" + c.run.message() + ") but no device error");
    return;
  }
  if (g.device_error != 0) {
    fail("device error " + std::to_string(g.device_error) + " but cpu ok");
    return;
  }
  for (size_t i = 0; i < c.outs.size(); ++i)
    if (c.outs[i] != g.outs[i]) {
      size_t first = 0;
      while (first < c.outs[i].size() && c.outs[i][first] == g.outs[i][first]) ++first;
      fail("output " + std::to_string(i) + " differs at byte " + std::to_string(first) + " of " + std::to_string(c.outs[i].size()));
      return;
    }
}

auto None = [](Attrs&) {};

const DataType kAll[] = {DataType::kF32, DataType::kF16, DataType::kBF16, DataType::kF64, DataType::kI8,  DataType::kU8,
                         DataType::kI16, DataType::kU16, DataType::kI32,  DataType::kU32, DataType::kI64, DataType::kU64, DataType::kBool};
const DataType kSizes[] = {DataType::kU8, DataType::kF16, DataType::kF32, DataType::kI64};
const DataType kIdx[] = {DataType::kI64, DataType::kI32, DataType::kI8, DataType::kU16, DataType::kU64};

std::vector<int64_t> Permuted(const std::vector<int64_t>& d, const std::vector<int64_t>& p) {
  std::vector<int64_t> r;
  for (int64_t x : p) r.push_back(d[size_t(x)]);
  return r;
}

void TestStrided() {
  // Transpose
  std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>> tr = {
      {{40, 50}, {1, 0}},        {{2, 40, 50}, {0, 2, 1}},        {{3, 17, 33, 5}, {2, 0, 3, 1}}, {{3, 17, 33, 5}, {0, 2, 1, 3}},
      {{4, 5, 6}, {2, 1, 0}},    {{2, 3, 64, 16}, {0, 2, 1, 3}},  {{1, 70, 1, 20}, {3, 2, 1, 0}}, {{5}, {0}},
      {{}, {}},                  {{0, 4}, {1, 0}},                {{2, 33, 3, 40}, {0, 3, 2, 1}}, {{16, 16, 2}, {1, 0, 2}},
      {{2, 3, 4, 5, 6}, {4, 2, 0, 3, 1}}, {{2, 18, 2, 20}, {3, 1, 2, 0}}};
  for (auto& [dims, perm] : tr)
    for (DataType dt : kSizes)
      Check("transpose", "Transpose", {Rand(dt, dims)}, {Out(dt, Permuted(dims, perm))}, [&](Attrs& a) { a.Ints("perm", perm); });
  Check("transpose default perm", "Transpose", {Rand(DataType::kF32, {3, 40, 20})}, {Out(DataType::kF32, {20, 40, 3})}, None);
  Check("transpose bad", "Transpose", {Rand(DataType::kF32, {3, 4})}, {Out(DataType::kF32, {3, 4})}, [](Attrs& a) { a.Ints("perm", {1, 0}); }, false, "error");

  // Slice
  struct S {
    std::vector<int64_t> in, starts, ends, axes, steps, out;
  };
  std::vector<S> sl = {
      {{10, 20}, {1, 2}, {8, 18}, {}, {}, {7, 16}},
      {{10, 20}, {-1}, {-100}, {1}, {-2}, {10, 10}},
      {{10, 20}, {9, 19}, {0, 0}, {0, 1}, {-3, -4}, {3, 5}},
      {{4, 6, 8}, {0, 2}, {100, 6}, {0, 2}, {2, 1}, {2, 6, 4}},
      {{4, 6, 8}, {0}, {4}, {-1}, {1}, {4, 6, 4}},
      {{4, 6, 8}, {3}, {3}, {1}, {1}, {4, 0, 8}},
      {{4, 6, 32}, {1, 0}, {3, 32}, {0, 2}, {1, 1}, {2, 6, 32}},
      {{4, 6, 32}, {1, 8}, {3, 24}, {0, 2}, {1, 1}, {2, 6, 16}},
      {{5, 7}, {0}, {INT64_MAX}, {1}, {INT64_MIN}, {5, 0}}, {{5, 7}, {6}, {INT64_MIN}, {1}, {INT64_MIN}, {5, 1}},
  };
  for (auto& s : sl)
    for (DataType dt : kSizes)
      for (DataType it : {DataType::kI64, DataType::kI32}) {
        std::vector<double> st(s.starts.begin(), s.starts.end()), en(s.ends.begin(), s.ends.end()), ax(s.axes.begin(), s.axes.end()),
            sp(s.steps.begin(), s.steps.end());
        std::vector<T> ins = {Rand(dt, s.in), Values(it, {int64_t(st.size())}, st, true), Values(it, {int64_t(en.size())}, en, true)};
        if (it == DataType::kI32) {  // saturate INT64 limits exactly as the i64 case would need: skip those
          bool big = false;
          for (auto v : s.ends) big |= v > INT32_MAX || v < INT32_MIN;
          for (auto v : s.steps) big |= v > INT32_MAX || v < INT32_MIN;
          if (big) continue;
        }
        // exact int64 values
        for (size_t i = 0; i < s.starts.size(); ++i) std::memcpy(&ins[1].data[i * DataTypeSize(it)], &s.starts[i], DataTypeSize(it));
        for (size_t i = 0; i < s.ends.size(); ++i) std::memcpy(&ins[2].data[i * DataTypeSize(it)], &s.ends[i], DataTypeSize(it));
        ins.push_back(s.axes.empty() ? Omit() : Values(it, {int64_t(ax.size())}, ax, true));
        T steps = s.steps.empty() ? Omit() : Values(it, {int64_t(sp.size())}, sp, true);
        if (!s.steps.empty())
          for (size_t i = 0; i < s.steps.size(); ++i) std::memcpy(&steps.data[i * DataTypeSize(it)], &s.steps[i], DataTypeSize(it));
        ins.push_back(steps);
        Check("slice", "Slice", ins, {Out(dt, s.out)}, None, false, "ok");
      }
  Check("slice opset 9", "Slice", {Rand(DataType::kF32, {6, 8})}, {Out(DataType::kF32, {3, 8})},
        [](Attrs& a) { a.Ints("starts", {1}).Ints("ends", {-2}).Ints("axes", {0}); }, false, "ok");
  {
    // Bounds computed at run time (a dynamic plan's x[:, :seq]): the CPU kernel reads them in Run
    // (rows 1 and 2 here); CUDA runs static plans only, whose Slice bounds are constants, and
    // refuses them at Init. Checked apart from Check, which requires both to agree.
    ++cases;
    T in = Rand(DataType::kF32, {6, 8}), st = Values(DataType::kI64, {1}, {1});  // st: not constant
    std::vector<T> ins = {in, st, Values(DataType::kI64, {1}, {3}, true)}, outs = {Out(DataType::kF32, {2, 8})};
    Attrs a1, a2;
    Outcome c = Run(false, "Slice", ins, outs, a1.Finish(), false);
    Outcome g = Run(true, "Slice", ins, outs, a2.Finish(), false);
    std::vector<uint8_t> rows(in.data.begin() + 8 * 4, in.data.begin() + 3 * 8 * 4);
    if (!c.init.ok() || !c.run.ok() || c.outs[0] != rows) {
      ++failures;
      std::printf("FAIL slice runtime starts [Slice]: cpu: %s%s\n", c.init.message().c_str(), c.run.message().c_str());
    }
    if (g.init.ok() || g.init.message().find("must be a constant") == std::string::npos) {
      ++failures;
      std::printf("FAIL slice runtime starts [Slice]: gpu init: %s\n", g.init.ok() ? "accepted" : g.init.message().c_str());
    }
  }

  // Expand
  std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>> ex = {
      {{3, 1}, {2, 3, 5}}, {{1}, {4, 4}}, {{}, {3}}, {{2, 1, 8}, {2, 6, 8}}, {{5}, {3, 5}}, {{1, 4, 1}, {3, 4, 2}}, {{3}, {0, 3}}};
  for (auto& [in, out] : ex)
    for (DataType dt : kSizes) Check("expand", "Expand", {Rand(dt, in), Values(DataType::kI64, {int64_t(out.size())}, {}, true)}, {Out(dt, out)}, None, false, "ok");

  // Tile
  std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>> ti = {
      {{3, 4}, {6, 12}}, {{2, 3, 4}, {2, 6, 4}}, {{5}, {15}}, {{2, 2, 2, 2, 2}, {4, 4, 4, 4, 4}}, {{1, 8}, {3, 16}}, {{0, 3}, {0, 6}}};
  for (auto& [in, out] : ti)
    for (DataType dt : kSizes) Check("tile", "Tile", {Rand(dt, in), Values(DataType::kI64, {int64_t(in.size())}, {}, true)}, {Out(dt, out)}, None, false, "ok");

  // DepthToSpace / SpaceToDepth
  for (DataType dt : kSizes) {
    for (const char* mode : {"DCR", "CRD"})
      Check("d2s", "DepthToSpace", {Rand(dt, {2, 12, 3, 5})}, {Out(dt, {2, 3, 6, 10})}, [&](Attrs& a) { a.Int("blocksize", 2).String("mode", mode); }, false, "ok");
    Check("d2s3", "DepthToSpace", {Rand(dt, {1, 18, 2, 2})}, {Out(dt, {1, 2, 6, 6})}, [&](Attrs& a) { a.Int("blocksize", 3); }, false, "ok");
    Check("s2d", "SpaceToDepth", {Rand(dt, {2, 3, 6, 10})}, {Out(dt, {2, 12, 3, 5})}, [&](Attrs& a) { a.Int("blocksize", 2); }, false, "ok");
  }
}

void TestConcatSplit() {
  for (DataType dt : kSizes) {
    Check("concat", "Concat", {Rand(dt, {2, 3, 4}), Rand(dt, {2, 5, 4}), Rand(dt, {2, 1, 4})}, {Out(dt, {2, 9, 4})}, [](Attrs& a) { a.Int("axis", 1); }, false, "ok");
    Check("concat last", "Concat", {Rand(dt, {3, 4}), Rand(dt, {3, 12}), Rand(dt, {3, 0})}, {Out(dt, {3, 16})}, [](Attrs& a) { a.Int("axis", -1); }, false, "ok");
    Check("concat first", "Concat", {Rand(dt, {3, 8}), Rand(dt, {5, 8})}, {Out(dt, {8, 8})}, [](Attrs& a) { a.Int("axis", 0); }, false, "ok");
    std::vector<T> many;
    int64_t total = 0;
    for (int i = 0; i < 70; ++i) {
      int64_t n = 1 + i % 5;
      many.push_back(Rand(dt, {2, n, 3}));
      total += n;
    }
    Check("concat many", "Concat", many, {Out(dt, {2, total, 3})}, [](Attrs& a) { a.Int("axis", 1); }, false, "ok");
    Check("split", "Split", {Rand(dt, {2, 9, 4})}, {Out(dt, {2, 3, 4}), Out(dt, {2, 5, 4}), Out(dt, {2, 1, 4})}, [](Attrs& a) { a.Int("axis", 1); }, false, "ok");
    Check("split 0", "Split", {Rand(dt, {8, 16})}, {Out(dt, {4, 16}), Out(dt, {4, 16})}, None, false, "ok");
    std::vector<T> outs;
    for (int i = 0; i < 40; ++i) outs.push_back(Out(dt, {3, 2}));
    Check("split many", "Split", {Rand(dt, {3, 80})}, outs, [](Attrs& a) { a.Int("axis", -1); }, false, "ok");
  }
  Check("concat bad", "Concat", {Rand(DataType::kF32, {2, 3}), Rand(DataType::kF32, {3, 3})}, {Out(DataType::kF32, {2, 6})}, [](Attrs& a) { a.Int("axis", 1); }, false,
        "error");
}

void TestShape() {
  for (int64_t s : {0, 1, -1, -3})
    for (int64_t e : {4, -1, 2, 10}) {
      std::vector<int64_t> dims = {2, 3, 4, 5};
      auto cl = [](int64_t v) { return std::clamp<int64_t>(v < 0 ? v + 4 : v, 0, 4); };
      int64_t n = std::max<int64_t>(cl(e), cl(s)) - cl(s);
      Check("shape", "Shape", {Rand(DataType::kF32, dims)}, {Out(DataType::kI64, {n})}, [&](Attrs& a) { a.Int("start", s).Int("end", e); }, false, "ok");
    }
  Check("size", "Size", {Rand(DataType::kF16, {2, 7})}, {Out(DataType::kI64, {})}, None, false, "ok");
}

void TestGather() {
  for (DataType dt : {DataType::kF32, DataType::kF16, DataType::kU8, DataType::kF64})
    for (DataType it : kIdx)
      for (int64_t axis : {0, 1, -1}) {
        std::vector<int64_t> dims = {4, 6, 8};
        size_t a = size_t(axis < 0 ? axis + 3 : axis);
        int64_t n = dims[a];
        bool sign = it != DataType::kU16 && it != DataType::kU64;
        T idx = RandIdx(it, {2, 3}, sign ? -n : 0, n - 1);
        std::vector<int64_t> od;
        for (size_t d = 0; d < a; ++d) od.push_back(dims[d]);
        od.push_back(2);
        od.push_back(3);
        for (size_t d = a + 1; d < 3; ++d) od.push_back(dims[d]);
        Check("gather", "Gather", {Rand(dt, dims), idx}, {Out(dt, od)}, [&](Attrs& at) { at.Int("axis", axis); }, false, "ok");
        T bad = idx;
        int64_t v = sign ? -n - 1 : n;
        std::memcpy(bad.data.data() + DataTypeSize(it), &v, DataTypeSize(it));
        Check("gather bad", "Gather", {Rand(dt, dims), bad}, {Out(dt, od)}, [&](Attrs& at) { at.Int("axis", axis); }, false, "error");
      }
  Check("gather scalar idx", "Gather", {Rand(DataType::kF32, {5, 4}), Values(DataType::kI64, {}, {-2})}, {Out(DataType::kF32, {4})}, None, false, "ok");
  Check("gather empty inner bad", "Gather", {Rand(DataType::kF32, {5, 0}), Values(DataType::kI64, {2}, {1, 7})}, {Out(DataType::kF32, {2, 0})}, None, false, "error");
  Check("gather wide", "Gather", {Rand(DataType::kF32, {50, 64}), RandIdx(DataType::kI64, {7}, -50, 49)}, {Out(DataType::kF32, {7, 64})}, None, false, "ok");

  // GatherElements
  for (DataType dt : kSizes)
    for (int64_t axis : {0, 1, 2}) {
      std::vector<int64_t> dims = {4, 5, 6}, idims = {3, 4, 5};
      idims[size_t(axis)] = 7;
      int64_t n = dims[size_t(axis)];
      T idx = RandIdx(DataType::kI64, idims, -n, n - 1);
      Check("gather elements", "GatherElements", {Rand(dt, dims), idx}, {Out(dt, idims)}, [&](Attrs& a) { a.Int("axis", axis); }, false, "ok");
      int64_t v = n;
      std::memcpy(idx.data.data() + 8 * 5, &v, 8);
      Check("gather elements bad", "GatherElements", {Rand(dt, dims), idx}, {Out(dt, idims)}, [&](Attrs& a) { a.Int("axis", axis); }, false, "error");
    }

  // GatherND
  struct G {
    std::vector<int64_t> data, idx;
    int64_t b;
    std::vector<int64_t> out;
  };
  std::vector<G> gs = {{{4, 5, 6}, {3, 2}, 0, {3, 6}},        {{4, 5, 6}, {3, 3}, 0, {3}},       {{4, 5, 6}, {2, 2, 1}, 0, {2, 2, 5, 6}},
                       {{4, 5, 6}, {4, 2, 1}, 1, {4, 2, 6}}, {{4, 5, 6}, {4, 5, 1}, 2, {4, 5}}, {{3, 4, 8}, {3, 2, 2}, 1, {3, 2}},
                       {{2, 3}, {0, 1}, 0, {0, 3}}};
  for (auto& g : gs)
    for (DataType dt : kSizes) {
      int64_t k = g.idx.back();
      T idx = Out(DataType::kI64, g.idx);
      std::vector<double> vals;
      for (int64_t i = 0; i < idx.numel(); ++i) {
        int64_t n = g.data[size_t(g.b + i % k)];
        vals.push_back(double(std::uniform_int_distribution<int64_t>(-n, n - 1)(rng)));
      }
      idx = Values(DataType::kI64, g.idx, vals);
      Check("gathernd", "GatherND", {Rand(dt, g.data), idx}, {Out(dt, g.out)}, [&](Attrs& a) { a.Int("batch_dims", g.b); }, false, "ok");
      if (idx.numel() > 0) {
        int64_t v = 99;
        std::memcpy(idx.data.data(), &v, 8);
        Check("gathernd bad", "GatherND", {Rand(dt, g.data), idx}, {Out(dt, g.out)}, [&](Attrs& a) { a.Int("batch_dims", g.b); }, false, "error");
      }
    }
}

void TestOneHotEtc() {
  for (DataType it : {DataType::kI64, DataType::kF32, DataType::kF16, DataType::kI8, DataType::kU32, DataType::kF64})
    for (DataType dt : {DataType::kF32, DataType::kI64, DataType::kBool, DataType::kF16})
      for (int64_t axis : {-1, 0, 1}) {
        std::vector<int64_t> id = {3, 4};
        int64_t depth = 5;
        std::vector<int64_t> od = id;
        od.insert(od.begin() + (axis < 0 ? 2 : axis), depth);
        bool sign = it != DataType::kU32;
        T idx = Rand(it, id, sign ? -7 : 0, 7);
        if (it == DataType::kF32) {
          float nan = NAN, big = 1e19f, frac = 2.7f, neg = -1.5f;
          std::memcpy(&idx.data[0], &nan, 4);
          std::memcpy(&idx.data[4], &big, 4);
          std::memcpy(&idx.data[8], &frac, 4);
          std::memcpy(&idx.data[12], &neg, 4);
        }
        Check("onehot", "OneHot", {idx, Values(DataType::kI64, {}, {double(depth)}), Values(dt, {2}, {0, 1})}, {Out(dt, od)},
              [&](Attrs& a) { a.Int("axis", axis); }, false, "ok");
        Check("onehot vals", "OneHot", {idx, Values(DataType::kI64, {}, {double(depth)}), Values(dt, {2}, {3, -2})}, {Out(dt, od)},
              [&](Attrs& a) { a.Int("axis", axis); }, false, "ok");
      }

  // Compress
  for (DataType dt : kSizes) {
    T cond = Values(DataType::kBool, {5}, {1, 0, 1, 1, 0});
    Check("compress axis", "Compress", {Rand(dt, {3, 5, 4}), cond}, {Out(dt, {3, 3, 4})}, [](Attrs& a) { a.Int("axis", 1); }, false, "ok");
    Check("compress axis -1", "Compress", {Rand(dt, {3, 4, 5}), cond}, {Out(dt, {3, 4, 3})}, [](Attrs& a) { a.Int("axis", -1); }, false, "ok");
    Check("compress flat", "Compress", {Rand(dt, {3, 4}), cond}, {Out(dt, {3})}, None, false, "ok");
    Check("compress short", "Compress", {Rand(dt, {7, 2}), Values(DataType::kBool, {3}, {0, 1, 1})}, {Out(dt, {2, 2})}, [](Attrs& a) { a.Int("axis", 0); }, false, "ok");
    Check("compress mismatch", "Compress", {Rand(dt, {3, 5, 4}), cond}, {Out(dt, {3, 2, 4})}, [](Attrs& a) { a.Int("axis", 1); }, false, "error");
    Check("compress none", "Compress", {Rand(dt, {3, 5, 4}), Values(DataType::kBool, {5}, {0, 0, 0, 0, 0})}, {Out(dt, {3, 0, 4})}, [](Attrs& a) { a.Int("axis", 1); },
          false, "ok");
    T big = Rand(DataType::kBool, {70000});
    int64_t kept = 0;
    for (uint8_t b : big.data) kept += b != 0;
    Check("compress big", "Compress", {Rand(dt, {70000}), big}, {Out(dt, {kept})}, [](Attrs& a) { a.Int("axis", 0); }, false, "ok");
  }

  // NonZero
  for (DataType dt : kAll) {
    for (auto dims : std::vector<std::vector<int64_t>>{{3, 4, 5}, {7}, {2, 3000}, {}, {0, 3}, {7, 100, 151}}) {
      T x = Rand(dt, dims, -1.5, 1.5);
      int64_t count = 0;
      size_t es = DataTypeSize(dt);
      if (dt == DataType::kF32 && x.numel() > 3) {
        float nz = -0.0f, nan = NAN;
        std::memcpy(&x.data[0], &nz, 4);
        std::memcpy(&x.data[4], &nan, 4);
      }
      if (dt == DataType::kF16 && x.numel() > 3) {
        uint16_t nz = 0x8000;
        std::memcpy(&x.data[0], &nz, 2);
      }
      for (int64_t i = 0; i < x.numel(); ++i) {
        double v;
        bool nonzero = false;
        switch (dt) {
          case DataType::kF32: { float f; std::memcpy(&f, &x.data[size_t(i) * 4], 4); nonzero = f != 0; break; }
          case DataType::kF64: { std::memcpy(&v, &x.data[size_t(i) * 8], 8); nonzero = v != 0; break; }
          case DataType::kF16: { uint16_t h; std::memcpy(&h, &x.data[size_t(i) * 2], 2); nonzero = HalfToFloat(h) != 0; break; }
          case DataType::kBF16: { uint16_t h; std::memcpy(&h, &x.data[size_t(i) * 2], 2); nonzero = Bf16ToFloat(h) != 0; break; }
          default: {
            uint64_t b = 0;
            std::memcpy(&b, &x.data[size_t(i) * es], es);
            nonzero = b != 0;
          }
        }
        count += nonzero;
      }
      Check("nonzero", "NonZero", {x}, {Out(DataType::kI64, {int64_t(dims.size()), count})}, None, false, "ok");
      Check("nonzero mismatch", "NonZero", {x}, {Out(DataType::kI64, {int64_t(dims.size()), count + 1})}, None, false, "error");
    }
  }

  // ReverseSequence
  for (DataType dt : kSizes)
    for (int64_t ta : {0, 1}) {
      std::vector<int64_t> dims = ta == 0 ? std::vector<int64_t>{6, 4, 3} : std::vector<int64_t>{4, 6, 3};
      T lens = Values(DataType::kI64, {4}, {6, 0, 3, 1});
      Check("revseq", "ReverseSequence", {Rand(dt, dims), lens}, {Out(dt, dims)}, [&](Attrs& a) { a.Int("time_axis", ta).Int("batch_axis", 1 - ta); }, false, "ok");
      T bad = Values(DataType::kI32, {4}, {6, 7, 3, 1});
      Check("revseq bad", "ReverseSequence", {Rand(dt, dims), bad}, {Out(dt, dims)}, [&](Attrs& a) { a.Int("time_axis", ta).Int("batch_axis", 1 - ta); }, false,
            "error");
      Check("revseq 2d", "ReverseSequence", {Rand(dt, {6, 4}), lens}, {Out(dt, {6, 4})}, [&](Attrs& a) { a.Int("time_axis", 0).Int("batch_axis", 1); }, false, "ok");
    }
}

void TestScatter() {
  for (DataType dt : {DataType::kF32, DataType::kF16, DataType::kBF16, DataType::kI8, DataType::kU16, DataType::kI64, DataType::kF64, DataType::kBool})
    for (const char* red : {"none", "add", "mul", "max", "min"})
      for (bool inplace : {false, true}) {
        if (dt == DataType::kBool && std::string(red) != "none") continue;
        auto attrs = [&](Attrs& a) { a.String("reduction", red); };
        // ScatterND with duplicates, k < rank.
        std::vector<int64_t> dims = {5, 4, 3};
        T idx = Values(DataType::kI64, {6, 1}, {1, -4, 3, 1, 4, 1});
        Check("scatternd", "ScatterND", {Rand(dt, dims), idx, Rand(dt, {6, 4, 3})}, {Out(dt, dims)}, attrs, inplace, "ok");
        T idx2 = Values(DataType::kI64, {2, 3, 2}, {0, 0, 4, 3, 0, 0, 2, 1, 0, 0, -5, -4});
        Check("scatternd k2", "ScatterND", {Rand(dt, dims), idx2, Rand(dt, {2, 3, 3})}, {Out(dt, dims)}, attrs, inplace, "ok");
        T idx3 = RandIdx(DataType::kI32, {40, 3}, 0, 2);
        Check("scatternd full", "ScatterND", {Rand(dt, {3, 3, 3}), idx3, Rand(dt, {40})}, {Out(dt, {3, 3, 3})}, attrs, inplace, "ok");
        T badi = Values(DataType::kI64, {2, 1}, {1, 5});
        Check("scatternd bad", "ScatterND", {Rand(dt, dims), badi, Rand(dt, {2, 4, 3})}, {Out(dt, dims)}, attrs, inplace, "error");
        // ScatterElements
        for (int64_t axis : {0, 1, -1}) {
          std::vector<int64_t> d = {4, 5, 6}, id = {3, 4, 5};
          size_t a = size_t(axis < 0 ? axis + 3 : axis);
          id[a] = 9;
          int64_t n = d[a];
          auto at = [&](Attrs& x) { x.String("reduction", red).Int("axis", axis); };
          Check("scatterel", "ScatterElements", {Rand(dt, d), RandIdx(DataType::kI64, id, -n, n - 1), Rand(dt, id)}, {Out(dt, d)}, at, inplace, "ok");
          T bad = RandIdx(DataType::kI64, id, -n, n - 1);
          int64_t v = -n - 1;
          std::memcpy(bad.data.data() + 8 * 7, &v, 8);
          Check("scatterel bad", "ScatterElements", {Rand(dt, d), bad, Rand(dt, id)}, {Out(dt, d)}, at, inplace, "error");
        }
        // many lines (line path for none)
        Check("scatterel lines", "ScatterElements", {Rand(dt, {3, 5000}), RandIdx(DataType::kI64, {2, 5000}, 0, 2), Rand(dt, {2, 5000})}, {Out(dt, {3, 5000})},
              [&](Attrs& x) { x.String("reduction", red).Int("axis", 0); }, inplace, "ok");
        Check("scatterel 1d", "ScatterElements", {Rand(dt, {10}), RandIdx(DataType::kU8, {50}, 0, 9), Rand(dt, {50})}, {Out(dt, {10})},
              [&](Attrs& x) { x.String("reduction", red); }, inplace, "ok");
      }
}

void TestFill() {
  for (DataType dt : kAll) {
    Check("cos value", "ConstantOfShape", {Values(DataType::kI64, {2}, {3, 4}, true)}, {Out(dt, {3, 4})},
          [&](Attrs& a) { a.Tensor("value", dt, cuda::tensor::SaturatedBits(dt, 3)); }, false, "ok");
    Check("eyelike", "EyeLike", {Rand(dt, {4, 6})}, {Out(dt, {4, 6})}, [&](Attrs& a) { a.Int("k", 1); }, false, "ok");
    Check("eyelike neg", "EyeLike", {Rand(dt, {5, 3})}, {Out(dt, {5, 3})}, [&](Attrs& a) { a.Int("k", -2); }, false, "ok");
    Check("eyelike huge k", "EyeLike", {Rand(dt, {5, 3})}, {Out(dt, {5, 3})}, [&](Attrs& a) { a.Int("k", INT64_MAX); }, false, "ok");
    for (int64_t k : {-6, -1, 0, 2, 9})
      for (int64_t upper : {0, 1})
        for (bool inplace : {false, true}) {
          Check("trilu", "Trilu", {Rand(dt, {2, 4, 5}), Values(DataType::kI64, {}, {double(k)})}, {Out(dt, {2, 4, 5})}, [&](Attrs& a) { a.Int("upper", upper); }, inplace,
                "ok");
        }
    Check("trilu no k", "Trilu", {Rand(dt, {3, 3})}, {Out(dt, {3, 3})}, None, false, "ok");
  }
  Check("cos default", "ConstantOfShape", {Values(DataType::kI64, {2}, {3, 4}, true)}, {Out(DataType::kF32, {3, 4})}, None, false, "ok");
  Check("cos negzero", "ConstantOfShape", {Values(DataType::kI64, {1}, {5}, true)}, {Out(DataType::kF32, {5})},
        [&](Attrs& a) { a.Tensor("value", DataType::kF32, 0x80000000u); }, false, "ok");
  for (DataType dt : {DataType::kF32, DataType::kF16, DataType::kBF16, DataType::kF64, DataType::kI32, DataType::kI64, DataType::kU8, DataType::kI16})
    for (auto [s, d, n] : std::vector<std::tuple<double, double, int64_t>>{{0, 1, 10}, {5, -2, 7}, {0.1, 0.3, 9}, {-3, 0.7, 20}}) {
      // A limit that gives n elements (the CPU kernel checks the count against the output): for
      // integer types the bounds truncated, cases a type cannot hold skipped.
      bool integer = dt != DataType::kF32 && dt != DataType::kF16 && dt != DataType::kBF16 && dt != DataType::kF64;
      double si = integer ? std::trunc(s) : s, di = integer ? std::trunc(d) : d;
      if (di == 0 || (dt == DataType::kU8 && (si < 0 || di < 0))) continue;
      double limit = integer ? si + double(n) * di : s + (double(n) - 0.5) * d;
      Check("range", "Range", {Values(dt, {}, {si}), Values(dt, {}, {limit}), Values(dt, {}, {di})}, {Out(dt, {n})}, None, false, "ok");
    }
  // Pad
  for (DataType dt : kSizes)
    for (const char* mode : {"constant", "reflect", "edge", "wrap"}) {
      std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>> ps = {
          {{3, 4}, {1, 2, 2, 3}}, {{3, 5}, {0, -1, 2, 2}}, {{2, 3, 4}, {0, 1, 2, 0, 2, 5}}, {{4}, {7, 9}}, {{2, 3}, {-1, 0, 0, -2}}};
      for (auto& [in, pads] : ps) {
        std::vector<int64_t> out = in;
        for (size_t d = 0; d < in.size(); ++d) out[d] += pads[d] + pads[d + in.size()];
        std::vector<double> pv(pads.begin(), pads.end());
        Check("pad", "Pad", {Rand(dt, in), Values(DataType::kI64, {int64_t(pads.size())}, pv, true), Values(dt, {}, {2})}, {Out(dt, out)},
              [&](Attrs& a) { a.String("mode", mode); }, false, "ok");
        Check("pad no value", "Pad", {Rand(dt, in), Values(DataType::kI64, {int64_t(pads.size())}, pv, true)}, {Out(dt, out)},
              [&](Attrs& a) { a.String("mode", mode); }, false, "ok");
        Check("pad opset2", "Pad", {Rand(dt, in)}, {Out(dt, out)}, [&](Attrs& a) { a.String("mode", mode).Ints("pads", pads).Float("value", -1.5f); },
              false, "ok");
      }
      Check("pad axes", "Pad",
            {Rand(dt, {2, 3, 4}), Values(DataType::kI64, {2}, {1, 2}, true), Values(dt, {}, {7}), Values(DataType::kI64, {1}, {-1}, true)}, {Out(dt, {2, 3, 7})},
            [&](Attrs& a) { a.String("mode", mode); }, false, "ok");
      Check("pad scalar", "Pad", {Rand(dt, {}), Values(DataType::kI64, {0}, {}, true)}, {Out(dt, {})}, [&](Attrs& a) { a.String("mode", mode); }, false, "ok");
    }
  Check("pad bool opset2", "Pad", {Rand(DataType::kBool, {3})}, {Out(DataType::kBool, {5})}, [&](Attrs& a) { a.Ints("pads", {1, 1}).Float("value", 0.5f); },
        false, "ok");
}

void TestResize() {
  const char* coords[] = {"half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners", "asymmetric", "tf_half_pixel_for_nn", "tf_crop_and_resize"};
  const char* nearest[] = {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"};
  for (DataType dt : {DataType::kF32, DataType::kF16, DataType::kBF16, DataType::kF64, DataType::kU8, DataType::kI32})
    for (const char* mode : {"nearest", "linear", "cubic"})
      for (const char* coord : coords)
        for (int variant = 0; variant < 4; ++variant) {
          bool is_float = dt == DataType::kF32 || dt == DataType::kF16 || dt == DataType::kBF16 || dt == DataType::kF64;
          std::vector<int64_t> in = {1, 2, 5, 7}, out;
          std::vector<double> scales;
          if (variant == 0) scales = {1, 1, 2, 1.5};
          if (variant == 1) scales = {1, 1, 0.6, 0.5};
          if (variant == 2) scales = {1, 1, 1.7, 3};
          if (variant == 3) scales = {1, 2, 1, 0.3};
          for (size_t d = 0; d < 4; ++d) out.push_back(int64_t(std::floor(double(in[d]) * scales[d])));
          T roi = Values(DataType::kF32, {8}, {0, 0, 0.1, 0.2, 1, 1, 0.9, 1.3}, true);
          auto attrs = [&](Attrs& a) {
            a.String("mode", mode).String("coordinate_transformation_mode", coord);
            a.String("nearest_mode", nearest[variant]);
            if (variant == 2) a.Int("exclude_outside", 1).Float("cubic_coeff_a", -0.5f);
            a.Float("extrapolation_value", variant == 3 ? -7.5f : 0.25f);
          };
          Check("resize scales", "Resize", {Rand(dt, in), roi, Values(DataType::kF32, {4}, scales, true)}, {Out(dt, out)}, attrs, false, is_float || std::string(mode) == "nearest" ? "ok" : "error");
          std::vector<double> sizes(out.begin(), out.end());
          Check("resize sizes", "Resize", {Rand(dt, in), roi, Omit(), Values(DataType::kI64, {4}, sizes, true)}, {Out(dt, out)}, attrs, false, "");
        }
  // opset 18 axes and aspect ratio
  for (const char* policy : {"stretch", "not_larger", "not_smaller"})
    for (const char* mode : {"nearest", "linear", "cubic"}) {
      std::vector<int64_t> in = {2, 3, 6, 8};
      std::vector<double> sizes = {9, 10};
      double sh = 9.0 / 6, sw = 10.0 / 8, s = std::string(policy) == "not_larger" ? std::min(sh, sw) : std::string(policy) == "not_smaller" ? std::max(sh, sw) : 0;
      std::vector<int64_t> out = {2, 3, std::string(policy) == "stretch" ? 9 : int64_t(std::round(6 * s)), std::string(policy) == "stretch" ? 10 : int64_t(std::round(8 * s))};
      Check("resize axes", "Resize", {Rand(DataType::kF32, in), Omit(), Omit(), Values(DataType::kI64, {2}, sizes, true)}, {Out(DataType::kF32, out)},
            [&](Attrs& a) { a.String("mode", mode).Ints("axes", {2, 3}).String("keep_aspect_ratio_policy", policy); }, false, "ok");
    }
  // Resize 10 in kernel form: the opset-11 input order, asymmetric coordinates, "simple" rounding.
  auto resize10 = [](const char* mode) {
    return [mode](Attrs& a) { a.String("mode", mode).String("coordinate_transformation_mode", "asymmetric").String("nearest_mode", "simple"); };
  };
  Check("resize opset10", "Resize", {Rand(DataType::kF32, {1, 1, 3, 3}), Omit(), Values(DataType::kF32, {4}, {1, 1, 2, 2.5}, true)}, {Out(DataType::kF32, {1, 1, 6, 7})},
        resize10("linear"), false, "ok");
  Check("resize opset10 down", "Resize", {Rand(DataType::kF32, {1, 1, 5, 5}), Omit(), Values(DataType::kF32, {4}, {1, 1, 0.5, 0.7}, true)}, {Out(DataType::kF32, {1, 1, 2, 3})},
        resize10("nearest"), false, "ok");
  Check("resize 1d", "Resize", {Rand(DataType::kF32, {7}), Omit(), Values(DataType::kF32, {1}, {2.3}, true)}, {Out(DataType::kF32, {16})},
        [&](Attrs& a) { a.String("mode", "cubic"); }, false, "ok");
  Check("resize 5d", "Resize", {Rand(DataType::kF32, {1, 2, 3, 4, 5}), Omit(), Values(DataType::kF32, {5}, {1, 1, 2, 2, 2}, true)}, {Out(DataType::kF32, {1, 2, 6, 8, 10})},
        [&](Attrs& a) { a.String("mode", "linear"); }, false, "ok");
  Check("upsample", "Upsample", {Rand(DataType::kF16, {1, 2, 3, 4}), Values(DataType::kF32, {4}, {1, 1, 2, 3}, true)}, {Out(DataType::kF16, {1, 2, 6, 12})},
        [&](Attrs& a) { a.String("mode", "linear"); }, false, "ok");
  Check("upsample nearest", "Upsample", {Rand(DataType::kI64, {1, 2, 3, 4})}, {Out(DataType::kI64, {1, 2, 6, 8})},
        [&](Attrs& a) { a.String("mode", "nearest").Floats("scales", {1, 1, 2, 2}); }, false, "ok");
  // Antialias: the taps (shared with the CPU) stretch the filter by 1 / scale, 4 to 14 per dim.
  Check("resize antialias", "Resize", {Rand(DataType::kF32, {1, 1, 4, 4}), Omit(), Values(DataType::kF32, {4}, {1, 1, 0.5, 0.5}, true)}, {Out(DataType::kF32, {1, 1, 2, 2})},
        [&](Attrs& a) { a.String("mode", "linear").Int("antialias", 1); }, false, "ok");
  Check("resize antialias cubic", "Resize", {Rand(DataType::kF16, {1, 2, 9, 10}), Omit(), Values(DataType::kF32, {4}, {1, 1, 0.4, 0.3}, true)},
        {Out(DataType::kF16, {1, 2, 3, 3})}, [&](Attrs& a) { a.String("mode", "cubic").Int("antialias", 1); }, false, "ok");
}

int main() {
  TestStrided();
  TestConcatSplit();
  TestShape();
  TestGather();
  TestOneHotEtc();
  TestScatter();
  TestFill();
  TestResize();
  std::printf("%d cases, %d failures\n", cases, failures);
  return failures ? 1 : 0;
}
// FastDiv against plain division.
namespace precis::rt::cuda::tensor {
struct FastDivCheck {
  FastDivCheck() {
    std::mt19937_64 r(7);
    for (int t = 0; t < 200000; ++t) {
      uint32_t d = t < 1000 ? uint32_t(t + 1) : uint32_t(r() % (t % 2 ? 100000u : 0x80000000u)) + 1;
      FastDiv f(d);
      for (uint32_t n : {0u, 1u, d - 1, d, d + 1, 2 * d - 1, 0x7fffffffu, uint32_t(r() % 0x80000000u), uint32_t(r() % 0x80000000u)}) {
        if (n > 0x7fffffffu) continue;
        if (f.Div(n) != n / d) {
          std::printf("FAIL FastDiv %u / %u = %u\n", n, d, f.Div(n));
          ++failures;
          return;
        }
      }
    }
  }
} fast_div_check;
}  // namespace precis::rt::cuda::tensor
