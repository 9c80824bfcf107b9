// The CPU kernel registry.
#include "runtime/cpu/kernel.h"

#include <algorithm>

#include "runtime/cpu/kernels/register.h"

namespace precis::rt {

KernelRegistry::Entry& KernelRegistry::Slot(const std::string& name) {
  auto it = std::lower_bound(kernels_.begin(), kernels_.end(), name, [](const Entry& e, const std::string& n) { return e.name < n; });
  if (it == kernels_.end() || it->name != name) it = kernels_.insert(it, Entry{name});
  return *it;
}

void KernelRegistry::Register(const std::string& name, KernelFactory factory) { Slot(name).reference = factory; }
void KernelRegistry::RegisterFast(const std::string& name, KernelFactory factory) { Slot(name).fast = factory; }
void KernelRegistry::RegisterNhwc(const std::string& name, KernelFactory factory) { Slot(name).nhwc = factory; }

const KernelRegistry::Entry* KernelRegistry::Lookup(const std::string& name) const {
  auto it = std::lower_bound(kernels_.begin(), kernels_.end(), name, [](const Entry& e, const std::string& n) { return e.name < n; });
  return it != kernels_.end() && it->name == name ? &*it : nullptr;
}

KernelFactory KernelRegistry::Find(const std::string& name) const {
  const Entry* e = Lookup(name);
  return e ? e->reference : nullptr;
}

KernelFactory KernelRegistry::FindFast(const std::string& name) const {
  const Entry* e = Lookup(name);
  return e ? e->fast : nullptr;
}

KernelFactory KernelRegistry::FindNhwc(const std::string& name) const {
  const Entry* e = Lookup(name);
  return e ? e->nhwc : nullptr;
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
