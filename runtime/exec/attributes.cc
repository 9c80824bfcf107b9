// Attributes: read access to a kernel-form step's attributes in the plan (runtime/exec/step.h).
#include "runtime/exec/step.h"

namespace precis::rt {

const plan::Attr* Attributes::Find(const char* name) const {
  if (!attrs_) return nullptr;
  for (const plan::Attr* a : *attrs_)
    if (a->name() && a->name()->str() == name) return a;
  return nullptr;
}

int64_t Attributes::Int(const char* name, int64_t fallback) const {
  const plan::Attr* a = Find(name);
  return a && a->kind() == plan::AttrKind_Int ? a->i() : fallback;
}

float Attributes::Float(const char* name, float fallback) const {
  const plan::Attr* a = Find(name);
  return a && a->kind() == plan::AttrKind_Float ? a->f() : fallback;
}

std::string Attributes::String(const char* name, const std::string& fallback) const {
  const plan::Attr* a = Find(name);
  return a && a->kind() == plan::AttrKind_String && a->s() ? a->s()->str() : fallback;
}

std::vector<int64_t> Attributes::Ints(const char* name, std::vector<int64_t> fallback) const {
  const plan::Attr* a = Find(name);
  if (!a || a->kind() != plan::AttrKind_Ints || !a->ints()) return fallback;
  return std::vector<int64_t>(a->ints()->begin(), a->ints()->end());
}

std::vector<float> Attributes::Floats(const char* name, std::vector<float> fallback) const {
  const plan::Attr* a = Find(name);
  if (!a || a->kind() != plan::AttrKind_Floats || !a->floats()) return fallback;
  return std::vector<float>(a->floats()->begin(), a->floats()->end());
}

std::vector<std::string> Attributes::Strings(const char* name) const {
  std::vector<std::string> out;
  const plan::Attr* a = Find(name);
  if (!a || a->kind() != plan::AttrKind_Strings || !a->strings()) return out;
  for (const auto* s : *a->strings()) out.push_back(s->str());
  return out;
}

}  // namespace precis::rt
