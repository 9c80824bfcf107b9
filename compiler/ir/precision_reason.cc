// The one table of precision reason names (see precision_reason.h), indexed by the enum; a
// static check keeps it the enum's length, and ParseReason scans it.
#include "compiler/ir/precision_reason.h"

#include <array>
#include <utility>

namespace precis::ir {
namespace {

constexpr std::array<std::pair<Reason, std::string_view>, 28> kReasonNames = {{
    {Reason::kComputeOp, "compute-op"},
    {Reason::kKeepFp32Policy, "keep-fp32-policy"},
    {Reason::kUntouchedOp, "untouched-op"},
    {Reason::kUnsupportedLowPrecision, "unsupported-low-precision"},
    {Reason::kNoFp32Tensors, "no-fp32-tensors"},
    {Reason::kRangeOverflow, "range-overflow"},
    {Reason::kErrorBudget, "error-budget"},
    {Reason::kUserOverride, "user-override"},
    {Reason::kSoftmaxInput, "softmax-input"},
    {Reason::kKeepFp32Consumer, "keep-fp32-consumer"},
    {Reason::kFp32Consumers, "fp32-consumers"},
    {Reason::kConstantInputs, "constant-inputs"},
    {Reason::kFp32Input, "fp32-input"},
    {Reason::kFollowsInput, "follows-input"},
    {Reason::kLayerNormPattern, "layernorm-pattern"},
    {Reason::kRmsNormPattern, "rmsnorm-pattern"},
    {Reason::kGeluPattern, "gelu-pattern"},
    {Reason::kCrossEntropyPattern, "cross-entropy-pattern"},
    {Reason::kAttentionPattern, "attention-pattern"},
    {Reason::kCast, "cast"},
    {Reason::kLayout, "layout"},
    {Reason::kFusion, "fusion"},
    {Reason::kWidenedKernel, "widened-kernel"},
    {Reason::kWidenedMixedDtypes, "widened-mixed-dtypes"},
    {Reason::kOptimizerFp32, "optimizer-fp32"},
    {Reason::kRangeUnderflow, "range-underflow"},
    {Reason::kConstantRange, "constant-range"},
    {Reason::kSqueezeExcitePattern, "squeeze-excite-pattern"},
}};

constexpr bool TableInEnumOrder() {
  for (size_t i = 0; i < kReasonNames.size(); ++i)
    if (size_t(kReasonNames[i].first) != i) return false;
  return size_t(Reason::kSqueezeExcitePattern) + 1 == kReasonNames.size();
}
static_assert(TableInEnumOrder(), "kReasonNames must list every Reason once, in enum order");

}  // namespace

std::string_view ReasonName(Reason reason) { return kReasonNames[size_t(reason)].second; }

std::optional<Reason> ParseReason(std::string_view name) {
  for (const auto& [reason, n] : kReasonNames)
    if (n == name) return reason;
  return std::nullopt;
}

}  // namespace precis::ir
