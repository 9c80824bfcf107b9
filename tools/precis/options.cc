// CLI helpers (see options.h).
#include "tools/precis/options.h"

#include <cstdio>
#include <algorithm>
#include <cstdlib>

namespace precis::tools {

Status ParseShapeOption(const std::string& text, std::map<std::string, std::vector<int64_t>>& shapes,
                        std::map<std::string, std::pair<int64_t, int64_t>>* bounds, passes::ContainerShapes* containers) {
  auto eq = text.rfind('=');
  if (eq == std::string::npos || eq == 0) return InvalidArgument("--shape expects NAME=DIMS, e.g. input=1x3x224x224");
  std::string name = text.substr(0, eq), dims = text.substr(eq + 1);
  if (size_t dots = dims.find(".."); dots != std::string::npos) {
    if (!bounds) return InvalidArgument("--shape " + text + ": bounds of a symbolic dim apply when compiling a model");
    std::string lo = dims.substr(0, dots), hi = dims.substr(dots + 2);
    auto number = [](const std::string& s) { return !s.empty() && s.size() <= 13 && s.find_first_not_of("0123456789") == std::string::npos; };
    if (!number(lo) || !number(hi) || std::stoll(lo) > std::stoll(hi) || std::stoll(hi) > (int64_t(1) << 40))
      return InvalidArgument("--shape " + text + ": expected SYMBOL=LO..HI with 0 <= LO <= HI <= 2^40");
    if (!bounds->emplace(name, std::make_pair(std::stoll(lo), std::stoll(hi))).second) return InvalidArgument("--shape given twice for '" + name + "'");
    return Status::Ok();
  }
  auto parse = [&](const std::string& d, std::vector<int64_t>& out) -> Status {
    if (d.empty() || d == "scalar") return Status::Ok();
    size_t pos = 0;
    while (pos <= d.size()) {
      size_t x = d.find('x', pos);
      std::string item = d.substr(pos, x == std::string::npos ? std::string::npos : x - pos);
      char* end = nullptr;
      long long v = std::strtoll(item.c_str(), &end, 10);
      if (item.empty() || *end != '\0' || v < 0) return InvalidArgument("--shape " + text + ": '" + item + "' is not a dimension");
      out.push_back(v);
      if (x == std::string::npos) break;
      pos = x + 1;
    }
    return Status::Ok();
  };
  bool taken = shapes.count(name) || (containers && (containers->sequences.count(name) || containers->absent.count(name)));
  if (taken) return InvalidArgument("--shape given twice for '" + name + "'");
  if (containers && dims == "none") {
    containers->absent.insert(name);
    return Status::Ok();
  }
  if (containers && !dims.empty() && dims.front() == '[') {
    if (dims.back() != ']') return InvalidArgument("--shape " + text + ": a sequence's element shapes are written [2x3,4]");
    std::vector<std::vector<int64_t>> elements;
    std::string inner = dims.substr(1, dims.size() - 2);
    for (size_t pos = 0; !inner.empty() && pos <= inner.size();) {
      size_t comma = inner.find(',', pos);
      std::vector<int64_t> d;
      PRECIS_RETURN_IF_ERROR(parse(inner.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos), d));
      elements.push_back(std::move(d));
      if (comma == std::string::npos) break;
      pos = comma + 1;
    }
    containers->sequences[name] = std::move(elements);
    return Status::Ok();
  }
  std::vector<int64_t> out;
  PRECIS_RETURN_IF_ERROR(parse(dims, out));
  shapes.emplace(name, out);
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

StatusOr<TensorInfo> ConcreteInput(const Session& session, const TensorInfo& info, const std::map<std::string, int64_t>& values,
                                   std::set<std::string>& defaulted) {
  for (const auto& [name, v] : values)
    if (std::find(session.symbols().begin(), session.symbols().end(), name) == session.symbols().end())
      return InvalidArgument("--dim " + name + "=" + std::to_string(v) + ": the plan has no symbolic dim '" + name + "'" +
                             (session.symbols().empty() ? " (its shapes are static)" : ""));
  TensorInfo out = info;
  std::vector<std::string> names = session.DimNames(info.name);
  for (size_t k = 0; k < out.dims.size() && k < names.size(); ++k) {
    if (names[k].empty()) continue;
    auto it = values.find(names[k]);
    if (it != values.end()) {
      out.dims[k] = it->second;
    } else if (std::find(session.symbols().begin(), session.symbols().end(), names[k]) != session.symbols().end()) {
      out.dims[k] = 1;
      defaulted.insert(names[k]);
    } else {
      return InvalidArgument("input '" + info.name + "' has dim " + std::to_string(k) + " = " + names[k] + ": give the input's value with --input");
    }
  }
  return out;
}

Status ParseDimOption(const std::string& text, std::map<std::string, int64_t>& values) {
  size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 >= text.size()) return InvalidArgument("--dim expects NAME=N, got '" + text + "'");
  std::string n = text.substr(eq + 1);
  if (n.size() > 12 || n.find_first_not_of("0123456789") != std::string::npos) return InvalidArgument("--dim " + text + ": N must be a size");
  values[text.substr(0, eq)] = std::stoll(n);
  return Status::Ok();
}

}  // namespace precis::tools
