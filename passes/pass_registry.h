// The pass registry: one table of every pass by name (sorted, each name once), from which
// `precis opt --passes` and the compile driver create their passes. A registered pass is a
// function `Run(model, context) -> changed`; Create binds it to a PassContext (its options and
// stats) as a Pass. Registering a name twice is a bug (PRECIS_CHECK). Tests build registries of
// their own (the built-in passes plus passes of the test) with Register.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "passes/pass.h"

namespace precis::passes {

using PassFn = StatusOr<bool> (*)(ir::Model& model, PassContext& context);

struct PassInfo {
  std::string_view name;
  std::string_view description;  // one line
  PassFn run = nullptr;
};

class PassRegistry {
 public:
  // Every pass under passes/, from the table in pass_registry.cc.
  static const PassRegistry& Builtin();

  // Adds a pass, keeping passes() sorted by name; aborts when the name is taken.
  void Register(const PassInfo& info);
  const std::vector<PassInfo>& passes() const { return passes_; }
  const PassInfo* Find(std::string_view name) const;
  // The pass bound to `context`, which must outlive it. An unknown name is InvalidArgument
  // listing the known ones.
  StatusOr<std::unique_ptr<Pass>> Create(std::string_view name, PassContext& context) const;
  // The names in order, joined by `separator`.
  std::string Names(std::string_view separator = ", ") const;

 private:
  std::vector<PassInfo> passes_;
};

}  // namespace precis::passes
