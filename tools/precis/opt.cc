// `precis opt`: reads text IR, runs the named passes in order and prints the resulting IR. The
// golden tests (tests/ir/*.pir, FileCheck) drive passes through it.
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>

#include "compiler/ir/text.h"
#include "passes/pass_pipeline.h"
#include "passes/pass_registry.h"
#include "tools/precis/commands.h"
#include "tools/precis/options.h"

namespace precis::tools {
namespace {

// The usage text; the pass list comes from the registry.
std::string OptUsage() {
  std::string usage =
      "usage: precis opt FILE.pir|- --passes P[,P...] [--precision fp16|bf16] [--keep-fp32 OP[,OP]]\n"
      "                  [--keep-fp32-nodes REGEX] [--force-low REGEX] [--no-keep-io-types] [--print-after-all]\n"
      "passes:\n";
  for (const passes::PassInfo& p : passes::PassRegistry::Builtin().passes()) {
    std::string name(p.name);
    usage += "  " + name + std::string(name.size() < 20 ? 20 - name.size() : 1, ' ') + std::string(p.description) + "\n";
  }
  return usage;
}

std::vector<std::string> Split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  for (std::string item; std::getline(in, item, ',');)
    if (!item.empty()) out.push_back(item);
  return out;
}

}  // namespace

int OptCommand(const std::vector<std::string>& args) {
  const std::string usage_text = OptUsage();
  const char* usage = usage_text.c_str();
  std::string file, precision = "fp16";
  std::vector<std::string> pass_names;
  passes::PassContext context;
  passes::PrecisionOptions& options = context.options.precision;
  bool print_all = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&]() -> const std::string* { return i + 1 < args.size() ? &args[++i] : nullptr; };
    const std::string* v = nullptr;
    if (a == "--passes" && (v = value())) pass_names = Split(*v);
    else if (a == "--precision" && (v = value())) precision = *v;
    else if (a == "--keep-fp32" && (v = value())) for (auto& op : Split(*v)) options.keep_fp32_ops.insert(op);
    else if (a == "--keep-fp32-nodes" && (v = value())) options.keep_fp32_nodes = *v;
    else if (a == "--force-low" && (v = value())) options.force_low = *v;
    else if (a == "--no-keep-io-types") options.keep_io_types = false;
    else if (a == "--print-after-all") print_all = true;
    else if (a == "--help" || a == "-h") {
      std::fputs(usage, stdout);
      return 0;
    } else if (a != "-" && !a.empty() && a[0] == '-') return UsageError("opt", "unknown option or missing value '" + a + "'", usage);
    else if (file.empty()) file = a;
    else return UsageError("opt", "more than one input given", usage);
  }
  if (file.empty()) return UsageError("opt", "an input file (or - for stdin) is required", usage);
  if (precision != "fp16" && precision != "bf16") return UsageError("opt", "--precision must be fp16 or bf16", usage);
  options.low = precision == "fp16" ? ir::DType::kF16 : ir::DType::kBF16;
  context.options.fold_low = options.low;
  passes::PipelineOptions pipeline_options;
  pipeline_options.verify = true;
  if (print_all)
    pipeline_options.after_pass = [](std::string_view pass, const ir::Model& m) {
      std::printf("// after %.*s\n%s", int(pass.size()), pass.data(), ir::PrintModel(m).c_str());
    };
  passes::PassPipeline pipeline(std::move(pipeline_options));
  for (const std::string& p : pass_names) {
    auto pass = passes::PassRegistry::Builtin().Create(p, context);
    if (!pass.ok()) return UsageError("opt", pass.status().message(), usage);
    pipeline.Add(std::move(*pass));
  }
  std::stringstream text;
  if (file == "-") text << std::cin.rdbuf();
  else {
    std::ifstream f(file);
    if (!f) return ReportError("opt", NotFound("cannot open '" + file + "'"));
    text << f.rdbuf();
  }
  auto model = ir::ParseModel(text.str());
  if (!model.ok()) return ReportError("opt", model.status().WithContext(file));
  if (auto ran = pipeline.Run(**model); !ran.ok()) return ReportError("opt", ran.status());
  if (!print_all) std::fputs(ir::PrintModel(**model).c_str(), stdout);
  return 0;
}

}  // namespace precis::tools
