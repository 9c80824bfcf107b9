// Calibration for mixed precision: compiles the FP32 plan, runs it on sample inputs and records
// each float tensor's largest magnitude, which AssignPrecision uses to keep overflowing tensors
// in FP32. Samples: "random:N" (N random inputs, as `precis run --random`), a directory (one
// sample of NAME.npy/NAME.pb files, or one such subdirectory per sample), or FILE.npz
// (np.savez, uncompressed: one sample). Progress goes to stderr. The plans these measurements run
// are compiled without generated kernels, fused activations or channels-last regions, so that
// every value of the graph is observed under its own name.
#pragma once

#include <map>
#include <string>

#include "compiler/driver/compile.h"

namespace precis::tools {

struct Calibration {
  std::map<std::string, double> ranges;  // value name -> max |x| over all samples (inf if seen)
  int samples = 0;
};

// Error budget: runs the FP32 plan and the mixed plan on the samples, and for each 16-bit region
// measures the error it adds: the relative L2 error (mixed vs FP32, over all samples) of its
// outputs minus the largest of its inputs'. Regions adding more than `budget` are returned as
// node name -> evidence, to be kept in FP32 (PrecisionOptions::over_budget). One FP32 run and
// one mixed run per sample; no per-region recompilation.
StatusOr<std::map<std::string, std::string>> MeasureErrorBudget(const std::string& model_path, const driver::CompileOptions& options,
                                                                 const std::string& source, double budget);

StatusOr<Calibration> Calibrate(const std::string& model_path, const driver::CompileOptions& options, const std::string& source);

}  // namespace precis::tools
