// Precision reason codes: why a node runs in the precision it does. The precision passes record
// one per node (PrecisionRecord::reason) and the report prints it, so the codes are part of the
// report's format: one table (precision_reason.cc) holds every code's name, and producers take
// names from it through ReasonName, never from string literals of their own.
// PrecisionRecord::reason stays a string because text IR may carry any reason; ParseReason maps a
// recorded string back to its code (nullopt for names not in the table).
#pragma once

#include <optional>
#include <string_view>

namespace precis::ir {

enum class Reason {
  kComputeOp,                // compute ops run low with FP32 accumulation
  kKeepFp32Policy,           // the op class keeps FP32 (softmax, reductions, normalizations)
  kUntouchedOp,              // the op does not compute on floats
  kUnsupportedLowPrecision,  // no 16-bit support for the op (or it holds subgraphs)
  kNoFp32Tensors,            // nothing to lower: no FP32 input or output
  kRangeOverflow,            // calibrated range beyond the low format's
  kErrorBudget,              // its region's measured error exceeds --error-budget
  kUserOverride,             // --keep-fp32, --keep-fp32-nodes or --force-low
  kSoftmaxInput,             // feeds a Softmax or LogSoftmax
  kKeepFp32Consumer,         // feeds a keep-fp32 op
  kFp32Consumers,            // all of its consumers need FP32
  kConstantInputs,           // reads only constants
  kFp32Input,                // a float input arrives in FP32
  kFollowsInput,             // its float inputs all arrive low
  kLayerNormPattern,         // recognized decomposed LayerNorm
  kRmsNormPattern,           // recognized decomposed RMSNorm
  kGeluPattern,              // recognized decomposed GELU (Erf or Tanh form)
  kCrossEntropyPattern,      // recognized softmax cross-entropy
  kAttentionPattern,         // recognized attention scores (evidence only)
  kCast,                     // a Cast the precision pass inserted at a precision boundary
  kLayout,                   // a layout change at the edge of an NHWC region
  kFusion,                   // a view the epilogue fusion inserted
  kWidenedKernel,            // runs widened: the backend's kernel computes from FP32 operands
  kWidenedMixedDtypes,       // runs widened: it mixes float dtypes its backend's kernel takes only alike
  kOptimizerFp32,            // training: FP32 master-weight arithmetic (optimizer, loss scaler, unscaling, clipping)
  kRangeUnderflow,           // calibrated range entirely below the low format's smallest normal
  kConstantRange,            // a constant input loses its values to the low format's range (subnormal or overflow)
  kSqueezeExcitePattern,     // recognized squeeze-excitation gate, kept FP32 as a whole
};

// The code's name as recorded and reported: "compute-op", "softmax-input", ...
std::string_view ReasonName(Reason reason);

// The code with this name, or nullopt (an empty or unknown reason).
std::optional<Reason> ParseReason(std::string_view name);

}  // namespace precis::ir
