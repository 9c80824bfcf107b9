// The pass pipeline (XLA's HloPassPipeline in small): runs passes in order, records whether each
// changed the model and its wall time, and, when verification is on, runs the IR verifier after
// every pass that changed something. A pass's own error and a broken invariant both come back
// naming the pass: "pass 'X': ..." and "after pass 'X': ..." (the verifier's message names the
// graph, node and value). An optional callback sees the model after each pass (`precis opt
// --print-after-all`). Verification is on when asked for, and by default in debug builds and when
// the environment sets PRECIS_VERIFY_PASSES=1 (VerifyPassesByDefault).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "passes/pass.h"

namespace precis::passes {

// Debug builds (no NDEBUG), or PRECIS_VERIFY_PASSES=1 in the environment.
bool VerifyPassesByDefault();

struct PipelineOptions {
  bool verify = VerifyPassesByDefault();
  // Called after every pass (changed or not) with its name and the model.
  std::function<void(std::string_view pass, const ir::Model& model)> after_pass;
};

struct PassRecord {
  std::string name;
  bool changed = false;
  double ms = 0;  // wall time of the pass (verification not included)
};

class PassPipeline {
 public:
  explicit PassPipeline(PipelineOptions options = {}) : options_(std::move(options)) {}

  void Add(std::unique_ptr<Pass> pass) { passes_.push_back(std::move(pass)); }
  // Runs every pass in order; stops at the first error. True when any pass changed the model.
  StatusOr<bool> Run(ir::Model& model);
  // One record per pass run so far, in order.
  const std::vector<PassRecord>& records() const { return records_; }

 private:
  PipelineOptions options_;
  std::vector<std::unique_ptr<Pass>> passes_;
  std::vector<PassRecord> records_;
};

}  // namespace precis::passes
