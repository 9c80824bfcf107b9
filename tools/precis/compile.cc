// `precis compile`: ONNX model -> plan file, with a short summary of what was built.
#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "compiler/onnx/importer.h"
#include "compiler/driver/compile.h"
#include "runtime/base/hash.h"
#include "runtime/base/mapped_file.h"
#include "tools/precis/calibrate.h"
#include "tools/precis/commands.h"
#include "tools/precis/options.h"

namespace precis::tools {
namespace {

constexpr const char* kCompileUsage =
    "usage: precis compile MODEL.onnx -o MODEL.plan [--shape NAME=1x3x224x224 ...] [--shape SYMBOL=LO..HI ...]\n"
    "                      [--precision fp32|fp16|bf16] [--device cpu|cuda] [--batch N] [--strip-weights]\n"
    "                      [--layout auto|nchw] [--no-epilogue-fusion] (convolutions channels-last; activations in their epilogues)\n"
    "                      [--report FILE.json] [--report-text]\n"
    "                      [--calibrate random:N|DIR|FILE.npz] [--overflow-limit X] [--error-budget X]\n"
    "                      [--keep-fp32 OP[,OP]] [--keep-fp32-nodes REGEX] [--force-low REGEX]\n"
    "                      [--keep-io-types|--no-keep-io-types] [--no-fold] [--no-fold-batchnorm] [--no-codegen] [--codegen] [--no-row-fusion] [--quiet]\n"
    "                      [--verify-passes] (verify the IR after every pass; also PRECIS_VERIFY_PASSES=1)\n"
    "       precis compile MODEL.onnx --train ... (a training plan: precis compile --train --help)\n"
    "Without --shape, symbolic input dims (batch, seq) stay symbolic: a dynamic plan that runs at any input shape\n"
    "(docs/dynamic-shapes.md); --shape SYMBOL=LO..HI bounds one (the arena is planned once when all are bounded).\n"
    "A sequence input takes its element shapes, --shape NAME=[2x3,2x3] (plan inputs NAME[0], NAME[1]); an optional\n"
    "input is present unless --shape NAME=none (docs/sequences.md).\n"
    "--codegen: with --device cuda, fuse elementwise chains into generated GPU kernels (PTX for sm_80/sm_90, cubin\n"
    "where ptxas is installed; docs/codegen.md); not yet run on a GPU, so off by default. CPU plans always have them\n"
    "unless --no-codegen. Generated kernels fuse softmax, layer norms and trailing reductions with their elementwise\n"
    "neighbours too; --no-row-fusion keeps those as library kernels (their sums accumulate in double).\n";

}  // namespace

StatusOr<driver::CompileResult> CompileModelFile(const std::string& path, const driver::CompileOptions& base) {
  driver::CompileOptions options = base;
  auto start = std::chrono::steady_clock::now();
  PRECIS_ASSIGN_OR_RETURN(auto file, MappedFile::Open(path));
  options.source_hash = HashBytes(file->data(), file->size());
  PRECIS_ASSIGN_OR_RETURN(auto model, onnx::ImportModelFile(path));
  if (options.model_name.empty()) options.model_name = path;
  auto import_done = std::chrono::steady_clock::now();
  auto result = driver::Compile(*model, options);
  if (!result.ok()) return result.status().WithContext(path);
  result->phase_ms.insert(result->phase_ms.begin(), {"import", std::chrono::duration<double, std::milli>(import_done - start).count()});
  return result;
}

int CompileCommand(const std::vector<std::string>& args) {
  for (const std::string& a : args)
    if (a == "--train") return CompileTrainCommand(args);
  std::string model, out, report_file, calibrate;
  bool quiet = false, report_text = false;
  double error_budget = 0;
  driver::CompileOptions options;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&]() -> const std::string* { return i + 1 < args.size() ? &args[++i] : nullptr; };
    if (a == "-o" || a == "--output") {
      const std::string* v = value();
      if (!v) return UsageError("compile", "-o needs a file", kCompileUsage);
      out = *v;
    } else if (a == "--shape") {
      const std::string* v = value();
      if (!v) return UsageError("compile", "--shape needs NAME=DIMS", kCompileUsage);
      Status s = ParseShapeOption(*v, options.shapes, &options.dim_bounds, &options.containers);
      if (!s.ok()) return UsageError("compile", s.message(), kCompileUsage);
    } else if (a == "--precision") {
      const std::string* v = value();
      if (!v) return UsageError("compile", "--precision needs fp32, fp16 or bf16", kCompileUsage);
      options.precision = *v;
    } else if (a == "--strip-weights") {
      options.strip_weights = true;
    } else if (a == "--no-fold-batchnorm") {
      options.fold_batchnorm = false;
    } else if (a == "--no-codegen") {
      options.codegen = false;
    } else if (a == "--no-row-fusion") {
      options.fuse_rows = false;
    } else if (a == "--codegen") {
      options.gpu_codegen = true;  // CUDA plans: generated kernels (CPU plans have them by default)
    } else if (a == "--no-epilogue-fusion") {
      options.fuse_epilogues = false;
    } else if (a == "--layout") {
      const std::string* v = value();
      if (!v || (*v != "auto" && *v != "nchw")) return UsageError("compile", "--layout needs auto or nchw", kCompileUsage);
      options.layout = *v;
    } else if (a == "--batch") {
      const std::string* v = value();
      options.batch = v ? std::atoll(v->c_str()) : 0;
      if (options.batch <= 0) return UsageError("compile", "--batch needs a positive number", kCompileUsage);
    } else if (a == "--device") {
      const std::string* v = value();
      if (!v || (*v != "cpu" && *v != "cuda")) return UsageError("compile", "--device needs cpu or cuda", kCompileUsage);
      options.target = *v;
    } else if (a == "--report" || a == "--calibrate" || a == "--keep-fp32" || a == "--keep-fp32-nodes" || a == "--force-low" ||
               a == "--overflow-limit" || a == "--error-budget") {
      const std::string* v = value();
      if (!v) return UsageError("compile", a + " needs a value", kCompileUsage);
      auto& p = options.precision_options;
      if (a == "--report") report_file = *v;
      else if (a == "--calibrate") calibrate = *v;
      else if (a == "--keep-fp32-nodes") p.keep_fp32_nodes = *v;
      else if (a == "--force-low") p.force_low = *v;
      else if (a == "--overflow-limit") p.overflow_limit = std::atof(v->c_str());
      else if (a == "--error-budget") {
        error_budget = std::atof(v->c_str());
        if (!(error_budget > 0)) return UsageError("compile", "--error-budget needs a positive number", kCompileUsage);
      }
      else {
        std::stringstream list(*v);
        for (std::string op; std::getline(list, op, ',');)
          if (!op.empty()) p.keep_fp32_ops.insert(op);
      }
    } else if (a == "--report-text") {
      report_text = true;
    } else if (a == "--keep-io-types" || a == "--no-keep-io-types") {
      options.precision_options.keep_io_types = a == "--keep-io-types";
    } else if (a == "--no-fold") {
      options.fold_constants = false;
    } else if (a == "--verify-passes") {
      options.verify_passes = true;
    } else if (a == "--quiet") {
      quiet = true;
    } else if (a == "--help" || a == "-h") {
      std::fputs(kCompileUsage, stdout);
      return 0;
    } else if (!a.empty() && a[0] == '-') {
      return UsageError("compile", "unknown option '" + a + "'", kCompileUsage);
    } else if (model.empty()) {
      model = a;
    } else {
      return UsageError("compile", "more than one model given", kCompileUsage);
    }
  }
  if (model.empty() || out.empty()) return UsageError("compile", "a model and -o PLAN are required", kCompileUsage);
  if (options.precision == "fp32" && (!calibrate.empty() || !options.precision_options.keep_fp32_ops.empty() ||
                                      !options.precision_options.keep_fp32_nodes.empty() || !options.precision_options.force_low.empty()))
    return UsageError("compile", "--calibrate and the precision overrides need --precision fp16 or bf16", kCompileUsage);
  auto start = std::chrono::steady_clock::now();
  if (!calibrate.empty()) {
    auto cal = Calibrate(model, options, calibrate);
    if (!cal.ok()) return ReportError("compile", cal.status());
    options.precision_options.ranges = std::move(cal->ranges);
    options.calibration_source = calibrate;
    options.calibration_samples = cal->samples;
  }
  if (error_budget > 0) {
    if (options.precision == "fp32") return UsageError("compile", "--error-budget needs --precision fp16 or bf16", kCompileUsage);
    auto over = MeasureErrorBudget(model, options, calibrate.empty() ? "random:2" : calibrate, error_budget);
    if (!over.ok()) return ReportError("compile", over.status());
    options.precision_options.over_budget = std::move(*over);
  }
  auto result = CompileModelFile(model, options);
  if (!result.ok()) return ReportError("compile", result.status());
  {
    std::ofstream f(out, std::ios::binary | std::ios::trunc);
    f.write(reinterpret_cast<const char*>(result->plan.bytes.data()), long(result->plan.bytes.size()));
    if (!f) return ReportError("compile", Internal("cannot write '" + out + "'"));
  }
  double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  if (!report_file.empty()) {
    std::ofstream f(report_file, std::ios::trunc);
    f << result->report.json;
    if (!f) return ReportError("compile", Internal("cannot write '" + report_file + "'"));
  }
  if (report_text) std::fputs(result->report.text.c_str(), stdout);
  if (!quiet) {
    const auto& p = result->plan;
    std::printf("compiled %s -> %s (%s)\n", model.c_str(), out.c_str(), options.precision.c_str());
    std::string expanded = result->expanded_nodes ? ", " + std::to_string(result->expanded_nodes) + " expanded into their parts (Attention, RMSNormalization...)" : "";
    std::printf("  nodes      %zu imported%s, %d folded into constants, %d folded into Conv or BatchNormalization (BatchNormalization, per-channel Mul/Add), %zu remain\n",
                result->nodes_before, expanded.c_str(), result->folded_nodes, result->folded_batchnorms, result->nodes_after);
    std::printf("  steps      %zu\n", p.steps);
    if (result->sequence_ops || result->unrolled_loops || result->stacked_loops)
      std::printf("  sequences  %d sequence and optional operators resolved when compiling, %d loop%s unrolled, %d loop%s kept with %s appends as scan outputs\n",
                  result->sequence_ops, result->unrolled_loops, result->unrolled_loops == 1 ? "" : "s", result->stacked_loops,
                  result->stacked_loops == 1 ? "" : "s", result->stacked_loops == 1 ? "its sequence" : "their sequence");
    if (!p.symbols.empty()) {
      std::string names;
      for (const auto& n : p.symbols) names += (names.empty() ? "" : ", ") + n;
      std::string bounds;
      for (const auto& [name, range] : options.dim_bounds)
        bounds += (bounds.empty() ? "" : ", ") + name + " " + std::to_string(range.first) + ".." + std::to_string(range.second);
      std::printf("  shapes     dynamic in %s: the runtime binds them from the inputs and plans the arena per shape%s\n", names.c_str(),
                  bounds.empty() ? "" : (" (bounds: " + bounds + (options.dim_bounds.size() == p.symbols.size() ? "; arena planned once, for the maximum)" : ")")).c_str());
    } else {
      std::printf("  arena      %s (lower bound %s, %d in place)\n", FormatBytes(p.arena_bytes).c_str(),
                  FormatBytes(p.arena_lower_bound).c_str(), p.inplace_count);
    }
    std::printf("  constants  %s\n", FormatBytes(p.constant_bytes).c_str());
    std::printf("  plan file  %s\n", FormatBytes(p.bytes.size()).c_str());
    if (options.precision != "fp32") {
      const auto& st = result->precision;
      std::printf("  precision  %d nodes low, %d fp32; %.1f%% of FLOPs low; %d casts (%d inserted), %d constants converted; %d fp32 islands\n",
                  st.low_nodes, st.fp32_nodes, 100.0 * result->report.low_precision_flop_share, result->report.casts,
                  st.casts_inserted, st.constants_converted, result->report.fp32_islands);
    }
    if (options.target == "cpu" && (result->epilogues.activations > 0 || result->layout.nhwc_convs + result->layout.nchw_convs > 0)) {
      const auto& l = result->layout;
      std::printf("  layout     %d convolutions NHWC, %d NCHW; %d ops in NHWC regions, %d transposes, %d in-place reshapes; %d activations fused into convolutions\n",
                  l.nhwc_convs, l.nchw_convs, l.region_ops, l.transposes, l.reshapes, result->epilogues.activations);
    }
    if (options.target == "cuda") {
      const auto& e = result->epilogues;
      const auto& l = result->layout;
      std::printf("  gpu        %d bias + %d activation epilogues fused; %d convolutions NHWC, %d NCHW (16-bit); %d ops in NHWC regions, %d transposes, %d in-place reshapes\n",
                  e.bias, e.activations, l.nhwc_convs, l.nchw_convs, l.region_ops, l.transposes, l.reshapes);
    }
    if (options.codegen && (options.target == "cpu" || options.gpu_codegen)) {
      size_t replaced = 0, rows = 0;
      for (const auto& g : result->fused) replaced += g.replaced.size(), rows += g.row > 0;
      std::printf("  codegen    %zu fused elementwise kernels (%zu nodes", result->fused.size(), replaced);
      if (rows) std::printf("; %zu over rows: softmax, normalizations, reductions", rows);
      std::printf(")");
      for (const auto& m : result->modules) std::printf("%s %s %s in %s ms", &m == &result->modules[0] ? ":" : ",", m.target.c_str(), FormatBytes(m.bytes).c_str(), FormatMs(m.ms).c_str());
      std::printf("\n");
    }
    std::printf("  time       %s ms (", FormatMs(ms).c_str());
    for (size_t i = 0; i < result->phase_ms.size(); ++i)
      std::printf("%s%s %s", i ? ", " : "", result->phase_ms[i].first.c_str(), FormatMs(result->phase_ms[i].second).c_str());
    std::printf(")\n");
  }
  return 0;
}

}  // namespace precis::tools
