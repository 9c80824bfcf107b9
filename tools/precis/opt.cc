// `precis opt`: reads text IR, runs the named passes in order and prints the resulting IR. The
// golden tests (tests/ir/*.pir, FileCheck) drive passes through it.
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>

#include "compiler/ir/text.h"
#include "compiler/ir/verifier.h"
#include "passes/choose_layout.h"
#include "passes/dead_code.h"
#include "passes/fold_casts.h"
#include "passes/fuse_casts.h"
#include "passes/fold_batchnorm.h"
#include "passes/fuse_epilogues.h"
#include "passes/infer_shapes.h"
#include "passes/inline_if.h"
#include "passes/precision.h"
#include "passes/recognize_patterns.h"
#include "tools/precis/commands.h"
#include "tools/precis/options.h"

namespace precis::tools {
namespace {

constexpr const char* kOptUsage =
    "usage: precis opt FILE.pir|- --passes P[,P...] [--precision fp16|bf16] [--keep-fp32 OP[,OP]]\n"
    "                  [--keep-fp32-nodes REGEX] [--force-low REGEX] [--no-keep-io-types] [--print-after-all]\n"
    "passes: infer (shape inference and folding), inline-if, fold-batchnorm, patterns, precision, fold-casts,\n"
    "        fuse-casts, fuse-epilogues, layout (GPU plans), dce\n";

std::vector<std::string> Split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  for (std::string item; std::getline(in, item, ',');)
    if (!item.empty()) out.push_back(item);
  return out;
}

}  // namespace

int OptCommand(const std::vector<std::string>& args) {
  std::string file, precision = "fp16";
  std::vector<std::string> pass_names;
  passes::PrecisionOptions options;
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
      std::fputs(kOptUsage, stdout);
      return 0;
    } else if (a != "-" && !a.empty() && a[0] == '-') return UsageError("opt", "unknown option or missing value '" + a + "'", kOptUsage);
    else if (file.empty()) file = a;
    else return UsageError("opt", "more than one input given", kOptUsage);
  }
  if (file.empty()) return UsageError("opt", "an input file (or - for stdin) is required", kOptUsage);
  if (precision != "fp16" && precision != "bf16") return UsageError("opt", "--precision must be fp16 or bf16", kOptUsage);
  options.low = precision == "fp16" ? ir::DType::kF16 : ir::DType::kBF16;
  for (const std::string& p : pass_names)
    if (p != "infer" && p != "inline-if" && p != "fold-batchnorm" && p != "patterns" && p != "precision" && p != "fold-casts" && p != "fuse-casts" && p != "fuse-epilogues" &&
        p != "layout" && p != "dce")
      return UsageError("opt", "unknown pass '" + p + "'", kOptUsage);
  std::stringstream text;
  if (file == "-") text << std::cin.rdbuf();
  else {
    std::ifstream f(file);
    if (!f) return ReportError("opt", NotFound("cannot open '" + file + "'"));
    text << f.rdbuf();
  }
  auto model = ir::ParseModel(text.str());
  if (!model.ok()) return ReportError("opt", model.status().WithContext(file));
  ir::Graph& g = *(*model)->graph;
  for (const std::string& p : pass_names) {
    Status s = Status::Ok();
    if (p == "infer") s = passes::InferShapesAndFold(**model).status();
    else if (p == "inline-if") passes::InlineConstantIf(g);
    else if (p == "fold-batchnorm") passes::FoldBatchNorm(g);
    else if (p == "patterns") passes::RecognizePatterns(g);
    else if (p == "precision") s = passes::AssignPrecision(g, options).status();
    else if (p == "fold-casts") passes::FoldCasts(g);
    else if (p == "fuse-casts") passes::FuseCasts(g);
    else if (p == "fuse-epilogues") passes::FuseEpilogues(g);
    else if (p == "layout") passes::ChooseLayout(g);
    else passes::RemoveDeadCode(g);
    if (!s.ok()) return ReportError("opt", s.WithContext("pass " + p));
    Status verified = ir::Verify(**model);
    if (!verified.ok()) return ReportError("opt", verified.WithContext("the graph fails verification after pass " + p));
    if (print_all) std::printf("// after %s\n%s", p.c_str(), ir::PrintModel(**model).c_str());
  }
  if (!print_all) std::fputs(ir::PrintModel(**model).c_str(), stdout);
  return 0;
}

}  // namespace precis::tools
