// CLI helpers (see options.h).
#include "tools/precis/options.h"

#include <cstdio>
#include <cstdlib>

namespace precis::tools {

Status ParseShapeOption(const std::string& text, std::map<std::string, std::vector<int64_t>>& shapes) {
  auto eq = text.rfind('=');
  if (eq == std::string::npos || eq == 0) return InvalidArgument("--shape expects NAME=DIMS, e.g. input=1x3x224x224");
  std::string name = text.substr(0, eq), dims = text.substr(eq + 1);
  std::vector<int64_t> out;
  if (!dims.empty() && dims != "scalar") {
    size_t pos = 0;
    while (pos <= dims.size()) {
      size_t x = dims.find('x', pos);
      std::string item = dims.substr(pos, x == std::string::npos ? std::string::npos : x - pos);
      char* end = nullptr;
      long long v = std::strtoll(item.c_str(), &end, 10);
      if (item.empty() || *end != '\0' || v < 0) return InvalidArgument("--shape " + text + ": '" + item + "' is not a dimension");
      out.push_back(v);
      if (x == std::string::npos) break;
      pos = x + 1;
    }
  }
  if (!shapes.emplace(name, out).second) return InvalidArgument("--shape given twice for '" + name + "'");
  return Status::Ok();
}

int UsageError(const char* command, const std::string& message, const char* usage) {
  std::fprintf(stderr, "precis %s: %s\n%s", command, message.c_str(), usage);
  return 2;
}

int ReportError(const char* command, const Status& status) {
  std::fprintf(stderr, "precis %s: %s\n", command, status.ToString().c_str());
  return 1;
}

std::string FormatBytes(size_t b) {
  char buf[48];
  if (b >= (size_t(1) << 20)) std::snprintf(buf, sizeof buf, "%.2f MiB", double(b) / (1 << 20));
  else if (b >= 1024) std::snprintf(buf, sizeof buf, "%.1f KiB", double(b) / 1024);
  else std::snprintf(buf, sizeof buf, "%zu B", b);
  return buf;
}

std::string FormatMs(double ms) {
  char buf[48];
  if (ms >= 10) std::snprintf(buf, sizeof buf, "%.0f", ms);
  else if (ms >= 1) std::snprintf(buf, sizeof buf, "%.1f", ms);
  else if (ms >= 0.01) std::snprintf(buf, sizeof buf, "%.2f", ms);
  else if (ms >= 0.001) std::snprintf(buf, sizeof buf, "%.3f", ms);
  else std::snprintf(buf, sizeof buf, "<0.001");
  return buf;
}

}  // namespace precis::tools
