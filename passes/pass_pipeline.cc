// PassPipeline (see pass_pipeline.h): run, time, verify what changed, report the pass that broke.
#include "passes/pass_pipeline.h"

#include <chrono>
#include <cstdlib>
#include <cstring>

#include "compiler/ir/verifier.h"

namespace precis::passes {

bool VerifyPassesByDefault() {
#ifndef NDEBUG
  return true;
#else
  const char* env = std::getenv("PRECIS_VERIFY_PASSES");
  return env && std::strcmp(env, "1") == 0;
#endif
}

StatusOr<bool> PassPipeline::Run(ir::Model& model) {
  bool any = false;
  for (const auto& pass : passes_) {
    std::string name(pass->name());
    auto start = std::chrono::steady_clock::now();
    StatusOr<bool> changed = pass->Run(model);
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    if (!changed.ok()) return changed.status().WithContext("pass '" + name + "'");
    records_.push_back({name, *changed, ms});
    any |= *changed;
    if (options_.verify && *changed) {
      Status verified = ir::Verify(model);
      if (!verified.ok()) return verified.WithContext("after pass '" + name + "'");
    }
    if (options_.after_pass) options_.after_pass(name, model);
  }
  return any;
}

}  // namespace precis::passes
