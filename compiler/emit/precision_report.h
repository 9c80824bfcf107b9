// The precision report: every node's run precision, accumulation dtype, reason and evidence,
// plus totals (share of FLOPs in 16 bits, weight and activation bytes against the FP32 plan,
// casts, FP32 islands and why, calibrated ranges). Built from the final IR after the precision
// passes; written as JSON (`--report FILE.json`, schema in docs/precision-report.md) and as text,
// and embedded in the plan so that `precis report MODEL.plan` needs nothing else.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "compiler/ir/graph.h"

namespace precis::emit {

// Training plans: which part of the training graph each node belongs to and what the plan keeps
// in memory against the FP32 training plan.
struct TrainingReportInputs {
  bool present = false;
  std::map<const ir::Node*, std::string> phases;  // "forward" | "backward" | "optimizer"
  std::string loss_scaling;                       // "none", "dynamic (init ...)", "static 1024"
  size_t master_weight_bytes = 0;                 // FP32 masters (state)
  size_t working_weight_bytes = 0;                // 16-bit working copies of them
  int64_t stored_working_copies = 0;              // of which kept as state (the optimizer step rewrites them)
  size_t gradient_bytes = 0, fp32_gradient_bytes = 0;  // tensors the backward nodes write
};

struct ReportInputs {
  std::string precision;  // "fp32" | "fp16" | "bf16"
  std::string model;      // source model path, as given
  size_t weight_bytes = 0, fp32_weight_bytes = 0;
  size_t activation_bytes = 0, fp32_activation_bytes = 0;  // planned arena bytes
  int casts_inserted = 0, constants_converted = 0;
  // Calibration (empty source: not used).
  std::string calibration_source;
  int calibration_samples = 0;
  double overflow_limit = 0;
  std::map<std::string, double> ranges;  // value name -> max |x|
  TrainingReportInputs training;
};

struct Report {
  std::string json;
  std::string text;
  double low_precision_flop_share = 0;
  int casts = 0;  // Cast nodes in the final graph
  int fp32_islands = 0;
  int widened_cpu = 0, widened_cuda = 0;  // steps the plan marks widened per backend (widening.h)
};

Report BuildPrecisionReport(const ir::Graph& graph, const ReportInputs& inputs);

// A connected group of nodes that compute in 16 bits, with the FP32-model values at its
// boundary: `inputs` are the values it reads from outside (a Cast's source stands for the Cast),
// `outputs` the values it gives to the rest of the graph. Used by --error-budget.
struct LowRegion {
  std::vector<std::string> nodes, inputs, outputs;
};
std::vector<LowRegion> FindLowRegions(const ir::Graph& graph);

// Multiply-add FLOPs of a node (2 per multiply-add for MatMul/Gemm/Conv/ConvTranspose and the W
// and R products of RNN/GRU/LSTM, one per output element for other computing ops, 0 for data
// movement).
double NodeFlops(const ir::Node& node);

// Sum of the bytes of the constants the graph uses.
size_t ConstantBytes(const ir::Graph& graph);

}  // namespace precis::emit
