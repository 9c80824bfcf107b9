// Attributes: read access to a kernel-form step's attributes in the plan (runtime/exec/step.h).
#include "runtime/exec/step.h"

namespace precis::rt {

const plan::Attr* Attributes::Find(const char* name) const {
  if (!attrs_) return nullptr;
  for (const plan::Attr* a : *attrs_)
    if (a->name() && a->name()->str() == name) return a;
  return nullptr;
}

// The attribute `name` when it has `kind`; nullptr when absent, and also when it has another kind,
// which is then recorded for KindError.
const plan::Attr* Attributes::FindOfKind(const char* name, plan::AttrKind kind) const {
  const plan::Attr* a = Find(name);
  if (!a || a->kind() == kind) return a;
  if (kind_error_.empty()) {
    const char* got = a->kind() <= plan::AttrKind_MAX ? plan::EnumNameAttrKind(a->kind()) : "";
    kind_error_ = std::string("attribute '") + name + "' is of kind " + (*got ? got : "unknown (" + std::to_string(int(a->kind())) + ")") +
                  ", the kernel reads " + plan::EnumNameAttrKind(kind);
  }
  return nullptr;
}

int64_t Attributes::Int(const char* name, int64_t fallback) const {
  const plan::Attr* a = FindOfKind(name, plan::AttrKind_Int);
  return a ? a->i() : fallback;
}

float Attributes::Float(const char* name, float fallback) const {
  const plan::Attr* a = FindOfKind(name, plan::AttrKind_Float);
  return a ? a->f() : fallback;
}

std::string Attributes::String(const char* name, const std::string& fallback) const {
  const plan::Attr* a = FindOfKind(name, plan::AttrKind_String);
  return a && a->s() ? a->s()->str() : fallback;
}

std::vector<int64_t> Attributes::Ints(const char* name, std::vector<int64_t> fallback) const {
  const plan::Attr* a = FindOfKind(name, plan::AttrKind_Ints);
  if (!a || !a->ints()) return fallback;
  return std::vector<int64_t>(a->ints()->begin(), a->ints()->end());
}

std::vector<float> Attributes::Floats(const char* name, std::vector<float> fallback) const {
  const plan::Attr* a = FindOfKind(name, plan::AttrKind_Floats);
  if (!a || !a->floats()) return fallback;
  return std::vector<float>(a->floats()->begin(), a->floats()->end());
}

std::vector<std::string> Attributes::Strings(const char* name) const {
  std::vector<std::string> out;
  const plan::Attr* a = FindOfKind(name, plan::AttrKind_Strings);
  if (!a || !a->strings()) return out;
  for (const auto* s : *a->strings()) out.push_back(s->str());
  return out;
}

}  // namespace precis::rt
