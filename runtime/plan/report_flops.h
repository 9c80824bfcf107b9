// The FLOP count of a plan, read from the summary of its embedded precision report
// (docs/precision-report.md): the "flops" key just before "low_precision_flops". 0 when the plan
// has no report. Used by the benchmarks to print achieved TFLOP/s.
#pragma once

#include <cstdlib>
#include <string>

namespace precis::plan {

inline double ReportFlops(const std::string& report_json) {
  size_t low = report_json.find("\"low_precision_flops\"");
  if (low == std::string::npos) return 0;
  size_t key = report_json.rfind("\"flops\":", low);
  return key == std::string::npos ? 0 : std::atof(report_json.c_str() + key + 8);
}

}  // namespace precis::plan
