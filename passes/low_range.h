// What storing float values in a 16-bit format costs them: the relative L2 error of rounding to
// the format, and how many values fall below its smallest normal (subnormal or flushed to zero)
// or beyond its largest finite value. For values in the normal range the relative error of one
// rounding is at most the unit roundoff u (2^-11 for FP16, 2^-8 for BF16), so a relative L2 error
// above a few u can only come from values outside that range: `LosesRange` draws the line at 4u.
// Used by the precision pass (constants read by 16-bit nodes; calibrated activation ranges) and by
// BatchNormalization folding (weights a fold would push out of FP16's normal range).
#pragma once

#include <string>
#include <vector>

#include "compiler/ir/tensor.h"

namespace precis::passes {

struct RoundingLoss {
  double rel_l2 = 0;         // ||round(x) - x|| / ||x|| (0 for an all-zero tensor; inf on overflow)
  size_t nonzero = 0;        // values that are not 0
  size_t below_normal = 0;   // nonzero values with |x| below the format's smallest normal
  size_t beyond_finite = 0;  // values whose rounding is infinite
};

// Smallest positive normal value of FP16 (6.1e-5) or BF16 (1.2e-38; FP32's).
double SmallestNormal(ir::DType low);
// Unit roundoff of FP16 (2^-11) or BF16 (2^-8).
double UnitRoundoff(ir::DType low);

RoundingLoss MeasureRounding(const std::vector<double>& values, ir::DType low);
// A constant float tensor (f64, f32, f16 or bf16) with its data.
RoundingLoss MeasureRounding(const ir::Tensor& tensor, ir::DType low);

// True when rounding loses more than 4u: values outside the normal range carry the tensor.
bool LosesRange(const RoundingLoss& loss, ir::DType low);

// "rounding 'W' to fp16: relative L2 error 0.31, 96% of its nonzero values below 6.1e-05", for
// `what` = "'W'".
std::string DescribeLoss(const std::string& what, const RoundingLoss& loss, ir::DType low);

}  // namespace precis::passes
