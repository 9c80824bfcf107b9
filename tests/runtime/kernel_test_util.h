// Helpers shared by the CPU kernel tests: step attributes built as the plan stores them, element
// counts, random FP32 tensors that are never zero, and tensors of any float storage type.
#pragma once

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "runtime/base/half.h"
#include "runtime/cpu/kernel.h"

namespace precis::rt::testing {

// Attributes in a flatbuffer, as the plan stores them (kernel form: no opset).
class AttrList {
 public:
  AttrList& Int(const char* name, int64_t v) {
    names_.push_back(name);
    attrs_.push_back(plan::CreateAttr(fbb_, fbb_.CreateString(name), plan::AttrKind_Int, v));
    return *this;
  }
  AttrList& Float(const char* name, float v) {
    attrs_.push_back(plan::CreateAttr(fbb_, fbb_.CreateString(name), plan::AttrKind_Float, 0, v));
    return *this;
  }
  AttrList& String(const char* name, const std::string& v) {
    auto n = fbb_.CreateString(name), s = fbb_.CreateString(v);
    attrs_.push_back(plan::CreateAttr(fbb_, n, plan::AttrKind_String, 0, 0, s));
    return *this;
  }
  AttrList& Ints(const char* name, const std::vector<int64_t>& v) {
    auto n = fbb_.CreateString(name);
    auto ints = fbb_.CreateVector(v);
    attrs_.push_back(plan::CreateAttr(fbb_, n, plan::AttrKind_Ints, 0, 0, 0, ints));
    return *this;
  }
  Attributes Finish() {
    if (!finished_) {
      auto attrs = fbb_.CreateVector(attrs_);
      fbb_.Finish(plan::CreateStep(fbb_, 0, 0, 0, 0, attrs));
      finished_ = true;
    }
    return Attributes(flatbuffers::GetRoot<plan::Step>(fbb_.GetBufferPointer())->attrs());
  }

 private:
  flatbuffers::FlatBufferBuilder fbb_;
  std::vector<flatbuffers::Offset<plan::Attr>> attrs_;
  std::vector<std::string> names_;
  bool finished_ = false;
};

inline int64_t Numel(const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

struct Buffer {
  Tensor t;
  std::vector<float> data;
};

// Uniform in [-1, -0.1] u [0.1, 1]: random signs, never zero.
inline Buffer Random(std::vector<int64_t> dims, uint32_t seed, bool constant = false) {
  Buffer b;
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> mag(0.1f, 1.0f);
  b.data.resize(size_t(Numel(dims)));
  for (float& v : b.data) v = (rng() & 1 ? 1.0f : -1.0f) * mag(rng);
  b.t.dims = std::move(dims);
  b.t.dtype = DataType::kF32;
  b.t.numel = Numel(b.t.dims);
  b.t.bytes = b.data.size() * sizeof(float);
  b.t.data = reinterpret_cast<uint8_t*>(b.data.data());
  b.t.is_constant = constant;
  return b;
}

// A tensor of any float storage type with its own storage (64 spare bytes); values are set and
// read as float (rounded to the dtype).
struct TypedBuffer {
  Tensor t;
  std::vector<uint8_t> bytes;

  TypedBuffer(DataType dtype, std::vector<int64_t> dims) {
    t.dtype = dtype;
    t.dims = std::move(dims);
    t.numel = Numel(t.dims);
    t.bytes = size_t(t.numel) * DataTypeSize(dtype);
    bytes.assign(t.bytes + 64, 0);
    t.data = bytes.data();
  }
  TypedBuffer(const TypedBuffer& o) : t(o.t), bytes(o.bytes) { t.data = bytes.data(); }
  TypedBuffer& operator=(const TypedBuffer&) = delete;

  void Set(int64_t i, float v) {
    switch (t.dtype) {
      case DataType::kF32: std::memcpy(t.data + 4 * i, &v, 4); break;
      case DataType::kF16: { uint16_t h = FloatToHalf(v); std::memcpy(t.data + 2 * i, &h, 2); break; }
      case DataType::kBF16: { uint16_t h = FloatToBf16(v); std::memcpy(t.data + 2 * i, &h, 2); break; }
      case DataType::kF64: { double d = v; std::memcpy(t.data + 8 * i, &d, 8); break; }
      default: Unsupported("Set");
    }
  }
  float Get(int64_t i) const {
    switch (t.dtype) {
      case DataType::kF32: { float v; std::memcpy(&v, t.data + 4 * i, 4); return v; }
      case DataType::kF16: { uint16_t h; std::memcpy(&h, t.data + 2 * i, 2); return HalfToFloat(h); }
      case DataType::kBF16: { uint16_t h; std::memcpy(&h, t.data + 2 * i, 2); return Bf16ToFloat(h); }
      case DataType::kF64: { double d; std::memcpy(&d, t.data + 8 * i, 8); return float(d); }
      default: Unsupported("Get"); return 0;
    }
  }
  // A test helper asked for a dtype it does not hold: a bug in the test, so it stops here (the
  // header serves gtest tests and the CUDA emulation harnesses, which have no gtest).
  [[noreturn]] static void Unsupported(const char* what) {
    std::fprintf(stderr, "TypedBuffer::%s: unsupported dtype\n", what);
    std::abort();
  }
  void Poison() { std::fill(bytes.begin(), bytes.end(), uint8_t(0xff)); }  // NaN in every float type
};

// Runs one kernel twice (scratch and outputs poisoned before each run); returns Init's status
// or Run's. `inputs` may contain nullptr (omitted optional input).
inline Status RunKernel(KernelFactory factory, const std::vector<TypedBuffer*>& inputs, const std::vector<TypedBuffer*>& outputs, Attributes attrs,
                 int threads) {
  KernelArgs args;
  for (TypedBuffer* b : inputs) args.inputs.push_back(b ? &b->t : nullptr);
  for (TypedBuffer* b : outputs) args.outputs.push_back(b ? &b->t : nullptr);
  args.attrs = attrs;
  args.node = "test";
  CpuContext ctx;
  ctx.threads = threads;
  std::unique_ptr<Kernel> kernel = factory();
  PRECIS_RETURN_IF_ERROR(kernel->Init(args, ctx));
  std::vector<uint8_t> scratch(kernel->ScratchBytes() + 64, 0xff);
  auto addr = reinterpret_cast<uintptr_t>(scratch.data());
  ctx.scratch = reinterpret_cast<uint8_t*>((addr + 63) / 64 * 64);  // 64-byte aligned, as the session's
  for (int run = 0; run < 2; ++run) {
    std::fill(scratch.begin(), scratch.end(), uint8_t(0xff));
    for (TypedBuffer* b : outputs)
      if (b && std::find(inputs.begin(), inputs.end(), b) == inputs.end()) b->Poison();
    PRECIS_RETURN_IF_ERROR(kernel->Run(args, ctx));
    if (run == 0 && !outputs.empty() && std::find(inputs.begin(), inputs.end(), outputs[0]) != inputs.end()) break;  // in place: once
  }
  return Status::Ok();
}

}  // namespace precis::rt::testing
