// `precis`: the command-line entry point. Dispatches to one subcommand per verb.
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "tools/precis/commands.h"

namespace {

constexpr const char* kUsage =
    "usage: precis <command> [options]\n"
    "\n"
    "commands:\n"
    "  inspect MODEL.onnx [--ir] [--json] [--full] [--keep-initializer-inputs]\n"
    "      summarize an ONNX model: IR version, producer, opsets, inputs and outputs,\n"
    "      operator histogram, parameters per dtype, subgraphs; --ir prints the text IR\n"
    "      (--full: every constant inline), --json a machine-readable summary\n"
    "\n"
    "  compile MODEL.onnx -o MODEL.plan [--shape NAME=1x3x224x224 | SYMBOL=LO..HI ...] [--precision fp32|fp16|bf16]\n"
    "          [--report FILE.json] [--report-text] [--calibrate random:N|DIR|FILE.npz] [overrides]\n"
    "      compile a model to a plan file and print a summary (steps, arena, constants, precision)\n"
    "\n"
    "  compile MODEL.onnx --train --loss cross-entropy|mse|output --label NAME [--optimizer sgd|adamw] [--lr X] ...\n"
    "      a training plan (programs train_step and eval_step, FP32): precis compile --train --help\n"
    "\n"
    "  train TRAIN.plan --data TRAIN.npz [--eval EVAL.npz] [--epochs N | --steps N] [--log METRICS.jsonl] [--checkpoint DIR]\n"
    "        [--checkpoint-every N] [--resume DIR]\n"
    "      train: run train_step over the data, with progress, evaluation per epoch, a metrics log and checkpoints\n"
    "\n"
    "  export TRAIN.plan [--checkpoint DIR] -o TRAINED.onnx\n"
    "      write the source ONNX model of a training plan with its trained weights\n"
    "\n"
    "  report MODEL.plan [--json]\n"
    "      print the precision report stored in a plan\n"
    "\n"
    "  opt FILE.pir [--passes infer,fold-batchnorm,patterns,precision,fold-casts,fuse-casts,fuse-epilogues,layout,dce] [--precision fp16|bf16]\n"
    "      run passes on text IR and print the result (golden tests)\n"
    "\n"
    "  run MODEL.plan|MODEL.onnx [--input NAME=FILE.npy|FILE.pb ...] [--random] [--output-dir DIR]\n"
    "      run a plan on the CPU; writes OUTPUT.npy per output with --output-dir\n"
    "\n"
    "  bench MODEL.plan|MODEL.onnx [--iterations N] [--threads N] [--shape NAME=DIMS ...]\n"
    "      median latency and throughput on random inputs\n"
    "\n"
    "  precis <command> --help shows a command's options.\n";

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h") ||
      !std::strcmp(argv[1], "help")) {
    std::fputs(kUsage, argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  std::string command = argv[1];
  std::vector<std::string> args(argv + 2, argv + argc);
  if (command == "inspect") return precis::tools::InspectCommand(args);
  if (command == "compile") return precis::tools::CompileCommand(args);
  if (command == "run") return precis::tools::RunCommand(args);
  if (command == "train") return precis::tools::TrainCommand(args);
  if (command == "export") return precis::tools::ExportCommand(args);
  if (command == "bench") return precis::tools::BenchCommand(args);
  if (command == "report") return precis::tools::ReportCommand(args);
  if (command == "opt") return precis::tools::OptCommand(args);
  std::fprintf(stderr, "precis: unknown command '%s'\n\n%s", command.c_str(), kUsage);
  return 2;
}
