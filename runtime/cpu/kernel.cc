// Attributes accessors and the kernel registry.
#include "runtime/cpu/kernel.h"

#include <algorithm>

#include "runtime/cpu/kernels/register.h"

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

KernelRegistry::Entry& KernelRegistry::Slot(const std::string& name) {
  auto it = std::lower_bound(kernels_.begin(), kernels_.end(), name, [](const Entry& e, const std::string& n) { return e.name < n; });
  if (it == kernels_.end() || it->name != name) it = kernels_.insert(it, Entry{name});
  return *it;
}

void KernelRegistry::Register(const std::string& name, KernelFactory factory) { Slot(name).reference = factory; }
void KernelRegistry::RegisterFast(const std::string& name, KernelFactory factory) { Slot(name).fast = factory; }

KernelFactory KernelRegistry::Find(const std::string& name) const {
  auto it = std::lower_bound(kernels_.begin(), kernels_.end(), name, [](const Entry& e, const std::string& n) { return e.name < n; });
  return it != kernels_.end() && it->name == name ? it->reference : nullptr;
}

KernelFactory KernelRegistry::FindFast(const std::string& name) const {
  auto it = std::lower_bound(kernels_.begin(), kernels_.end(), name, [](const Entry& e, const std::string& n) { return e.name < n; });
  return it != kernels_.end() && it->name == name ? it->fast : nullptr;
}

std::vector<std::string> KernelRegistry::Names() const {
  std::vector<std::string> names;
  for (const auto& e : kernels_)
    if (e.reference) names.push_back(e.name);
  return names;
}

const KernelRegistry& KernelRegistry::Cpu() {
  static const KernelRegistry registry = [] {
    KernelRegistry r;
    RegisterAllCpuKernels(r);
    return r;
  }();
  return registry;
}

}  // namespace precis::rt
