// Step descriptions shared by every backend: a tensor of the plan's table, a step's attributes
// (kernel form, read from the plan) and a step's arguments. Backend-neutral: the CPU and CUDA
// kernels, the session and the compiler's constant evaluator all see steps through these types.
//
// Contract: a Tensor's data points at the backend's storage for it (host memory on the CPU, device
// memory on CUDA) or at a constant's bytes; dims are static. Attributes read the plan's sorted
// attribute list without copying it; the plan must outlive them.
#pragma once

#include <cstring>
#include <string>
#include <vector>

#include "precis/status.h"
#include "precis/types.h"
#include "runtime/plan/plan_schema.h"

namespace precis::rt {

struct Tensor {
  std::string name;
  DataType dtype = DataType::kUndefined;
  std::vector<int64_t> dims;
  int64_t numel = 0;
  size_t bytes = 0;
  uint8_t* data = nullptr;
  bool is_constant = false;

  int64_t rank() const { return int64_t(dims.size()); }
  template <typename T> T* As() { return reinterpret_cast<T*>(data); }
  template <typename T> const T* As() const { return reinterpret_cast<const T*>(data); }
};

// Read access to a step's attributes (sorted by name in the plan).
class Attributes {
 public:
  explicit Attributes(const flatbuffers::Vector<flatbuffers::Offset<plan::Attr>>* attrs = nullptr) : attrs_(attrs) {}
  const plan::Attr* Find(const char* name) const;
  bool Has(const char* name) const { return Find(name) != nullptr; }
  int64_t Int(const char* name, int64_t fallback) const;
  float Float(const char* name, float fallback) const;
  std::string String(const char* name, const std::string& fallback) const;
  std::vector<int64_t> Ints(const char* name, std::vector<int64_t> fallback = {}) const;
  std::vector<float> Floats(const char* name, std::vector<float> fallback = {}) const;
  std::vector<std::string> Strings(const char* name) const;
  // The first attribute read with the wrong kind (a float where the kernel reads an int, say),
  // described; empty when none. The getters return the fallback for such an attribute, so
  // backends check this after a kernel's Init and refuse the step: a plan that says one thing
  // and gets another run is a corrupt plan, not a default.
  const std::string& KindError() const { return kind_error_; }

 private:
  const plan::Attr* FindOfKind(const char* name, plan::AttrKind kind) const;
  const flatbuffers::Vector<flatbuffers::Offset<plan::Attr>>* attrs_;
  mutable std::string kind_error_;
};

struct KernelArgs {
  std::vector<Tensor*> inputs;   // nullptr: omitted optional input
  std::vector<Tensor*> outputs;  // nullptr: omitted optional output
  Attributes attrs;
  std::string node;              // "Conv 'conv1'": names the step in messages

  Tensor* in(size_t i) const { return i < inputs.size() ? inputs[i] : nullptr; }
  Tensor* out(size_t i) const { return i < outputs.size() ? outputs[i] : nullptr; }
  Status Error(const std::string& message) const { return InvalidArgument(node + ": " + message); }
  // A run that asks for something the plan's kernels do not do (Unimplemented).
  Status Unsupported(const std::string& message) const { return Unimplemented(node + ": " + message); }
};

}  // namespace precis::rt
