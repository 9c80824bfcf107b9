// Helpers shared by the CPU kernel tests: step attributes built as the plan stores them, element
// counts, and random FP32 tensors that are never zero.
#pragma once

#include <algorithm>
#include <random>
#include <string>
#include <vector>

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

}  // namespace precis::rt::testing
