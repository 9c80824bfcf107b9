// Precision assignment: decides which nodes run in 16 bits (FP16 or BF16) and inserts the casts
// at the boundaries. The policy is the design's painting algorithm:
//   1. compute ops (MatMul, Gemm, Conv...) run low with FP32 accumulation;
//   2. keep-fp32 spreads backwards through follow/passthrough producers: a producer runs in FP32
//      when any consumer is a keep-fp32 op (softmax, reduction, normalization, loss) or when all
//      of its consumers need FP32;
//   3. low spreads forwards through follow/passthrough ops whose float inputs all arrive low;
//   4. a compute op whose consumer needs FP32 writes FP32 directly (no 16-bit round trip), so the
//      tensor feeding a softmax or a reduction is never stored in 16 bits;
//   5. calibrated ranges keep overflowing tensors (and the nodes reading them) in FP32;
//   6. user overrides win.
// Only FP32 tensors are lowered; integer, bool, FP64 and tensors already in 16 bits keep their
// dtype. Constants are converted at compile time (stored in their run dtype); activations get Cast
// nodes through a (value, dtype) cache. Every node gets a PrecisionRecord (reason and evidence).
// Nodes recognized by the pattern pass (reasons "*-pattern") keep that reason as evidence.
//
// Errors: an unknown operator in keep_fp32_ops, a bad regular expression, or contradictory
// overrides (one node both forced low and kept in FP32), each naming the node or option.
#pragma once

#include <map>
#include <set>
#include <string>

#include "compiler/ir/graph.h"
#include "compiler/ir/precision_reason.h"

namespace precis::passes {

struct PrecisionOptions {
  ir::DType low = ir::DType::kF16;     // kF16 or kBF16
  std::set<std::string> keep_fp32_ops;  // --keep-fp32 OP[,OP]
  std::string keep_fp32_nodes;          // --keep-fp32-nodes REGEX (node names); empty: none
  std::string force_low;                // --force-low REGEX (node names); empty: none
  bool keep_io_types = true;            // model inputs and outputs keep their ONNX dtypes
  // Calibrated max |x| per value name (from --calibrate); values above `overflow_limit` stay FP32.
  std::map<std::string, double> ranges;
  double overflow_limit = 0;  // 0: the low format's max / 2 (a margin for unseen inputs)
  // Nodes kept in FP32 because their region's measured error exceeds --error-budget: node name
  // -> evidence (the measured error).
  std::map<std::string, std::string> over_budget;
  // Nodes the caller keeps in FP32 whatever the rules and overrides say, with the reason and
  // evidence recorded for each (a training plan's optimizer, loss scaler and gradient unscaling).
  std::map<const ir::Node*, std::pair<ir::Reason, std::string>> pinned_fp32;
  // Keep-fp32 nodes that read their float inputs in whatever dtype arrives (16 bits included)
  // and accumulate in FP32: they do not force their producers to FP32 (the reductions of a
  // training plan's backward pass, which sum 16-bit gradients into FP32 weight gradients).
  std::set<const ir::Node*> read_low;
  // FP32 values a 16-bit node of the follow-input class may read cast down to 16 bits instead of
  // running in FP32 because of them: a training plan's bias-sized parameters (rank <= 1), as
  // PyTorch autocast casts a Linear's bias (the master stays FP32).
  std::set<const ir::Value*> cast_down;
};

struct PrecisionStats {
  int low_nodes = 0;
  int fp32_nodes = 0;
  int casts_inserted = 0;
  int constants_converted = 0;
};

StatusOr<PrecisionStats> AssignPrecision(ir::Graph& graph, const PrecisionOptions& options);

// Largest finite value of a float dtype (65504 for FP16).
double MaxFinite(ir::DType dtype);

}  // namespace precis::passes
