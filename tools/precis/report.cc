// `precis report`: prints the precision report embedded in a plan (text, or JSON with --json).
#include <cstdio>

#include "precis/session.h"
#include "tools/precis/commands.h"
#include "tools/precis/options.h"

namespace precis::tools {
namespace {

constexpr const char* kReportUsage = "usage: precis report MODEL.plan [--json]\n";

}  // namespace

int ReportCommand(const std::vector<std::string>& args) {
  std::string plan;
  bool json = false;
  for (const std::string& a : args) {
    if (a == "--json") json = true;
    else if (a == "--help" || a == "-h") {
      std::fputs(kReportUsage, stdout);
      return 0;
    } else if (!a.empty() && a[0] == '-') return UsageError("report", "unknown option '" + a + "'", kReportUsage);
    else if (plan.empty()) plan = a;
    else return UsageError("report", "more than one plan given", kReportUsage);
  }
  if (plan.empty()) return UsageError("report", "a plan is required", kReportUsage);
  auto session = Session::Open(plan);
  if (!session.ok()) return ReportError("report", session.status());
  std::string text = (*session)->report(json);
  if (text.empty()) return ReportError("report", NotFound(plan + ": the plan holds no precision report (compiled by an older precis?)"));
  std::fputs(text.c_str(), stdout);
  return 0;
}

}  // namespace precis::tools
