// Rounding cost of a tensor in a 16-bit format (see low_range.h), computed with the runtime's own
// conversions so that the measure is of the values the plan will hold.
#include "passes/low_range.h"

#include <cmath>
#include <cstdio>

#include "passes/match.h"
#include "runtime/base/half.h"

namespace precis::passes {

double SmallestNormal(ir::DType low) { return low == ir::DType::kF16 ? 6.103515625e-05 : 1.1754943508222875e-38; }

double UnitRoundoff(ir::DType low) { return low == ir::DType::kF16 ? std::ldexp(1.0, -11) : std::ldexp(1.0, -8); }

namespace {

template <typename At>
RoundingLoss Measure(size_t n, At at, ir::DType low) {
  RoundingLoss loss;
  double d2 = 0, x2 = 0, tiny = SmallestNormal(low);
  for (size_t i = 0; i < n; ++i) {
    double x = at(i);
    float f = float(x);
    double r = low == ir::DType::kF16 ? HalfToFloat(FloatToHalf(f)) : Bf16ToFloat(FloatToBf16(f));
    if (x != 0) ++loss.nonzero;
    if (x != 0 && std::fabs(x) < tiny) ++loss.below_normal;
    if (std::isinf(r) && !std::isinf(x)) ++loss.beyond_finite;
    if (std::isfinite(x)) {
      d2 += std::isfinite(r) ? (r - x) * (r - x) : INFINITY;
      x2 += x * x;
    }
  }
  loss.rel_l2 = x2 > 0 ? std::sqrt(d2 / x2) : (d2 > 0 ? INFINITY : 0);
  return loss;
}

}  // namespace

RoundingLoss MeasureRounding(const std::vector<double>& values, ir::DType low) {
  return Measure(values.size(), [&](size_t i) { return values[i]; }, low);
}

RoundingLoss MeasureRounding(const ir::Tensor& tensor, ir::DType low) {
  return Measure(size_t(tensor.NumElements()), [&](size_t i) { return match::FloatAt(tensor, int64_t(i)); }, low);
}

bool LosesRange(const RoundingLoss& loss, ir::DType low) { return loss.rel_l2 > 4 * UnitRoundoff(low); }

std::string DescribeLoss(const std::string& what, const RoundingLoss& loss, ir::DType low) {
  char buf[256];
  const char* format = low == ir::DType::kF16 ? "fp16" : "bf16";
  double nz = loss.nonzero ? double(loss.nonzero) : 1;
  if (loss.beyond_finite)
    std::snprintf(buf, sizeof buf, "rounding %s to %s: %zu values overflow", what.c_str(), format, loss.beyond_finite);
  else
    std::snprintf(buf, sizeof buf, "rounding %s to %s: relative L2 error %.3g, %.0f%% of its nonzero values below %.2g", what.c_str(), format,
                  loss.rel_l2, 100.0 * double(loss.below_normal) / nz, SmallestNormal(low));
  return buf;
}

}  // namespace precis::passes
