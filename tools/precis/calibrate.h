// Calibration for mixed precision: compiles the FP32 plan, runs it on sample inputs and records
// each float tensor's largest magnitude, which AssignPrecision uses to keep overflowing tensors
// in FP32. Samples: "random:N" (N random inputs, as `precis run --random`), a directory (one
// sample of NAME.npy/NAME.pb files, or one such subdirectory per sample), or FILE.npz
// (np.savez, uncompressed: one sample). Progress goes to stderr.
#pragma once

#include <map>
#include <string>

#include "passes/pipeline.h"

namespace precis::tools {

struct Calibration {
  std::map<std::string, double> ranges;  // value name -> max |x| over all samples (inf if seen)
  int samples = 0;
};

StatusOr<Calibration> Calibrate(const std::string& model_path, const passes::CompileOptions& options, const std::string& source);

}  // namespace precis::tools
