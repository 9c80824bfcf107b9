// Elementwise fusion (CPU plans with code generation): chains of float elementwise operators
// become one `FusedElementwise` node whose program (runtime/kernels/fused_program.h) computes
// the chain per element in FP32 registers, so that the intermediate tensors are never written.
//
// Fusable: Add, Sub, Mul, Div, two-input Max/Min, Neg, Abs, Sqrt, Reciprocal, Relu, LeakyRelu,
// PRelu, HardSigmoid, HardSwish, Exp, Erf, Tanh, Sigmoid, Gelu,
// Clip (constant scalar bounds) and Cast between FP32, FP16 and BF16, on FP32/FP16/BF16 tensors of
// static shape where every input has the output's dims or broadcasts to them keeping one contiguous
// block of dims (read periodically: scalars, per-channel and last-axis vectors). A node joins
// the group of a fusable producer when the group's members (the node among them) are the only
// readers of that producer's output and that output has the node's dims (or one element): a group
// is a chain or a DAG with one sink (GELU's x * (1 + erf(x / sqrt 2)) / 2 reads x twice). No value
// computed inside a group is read by a node outside it, so fusing cannot make a cycle. A value the plan must keep (a graph output, or a value named
// in `keep`: training plans' program outputs and state updates) joins the same way and becomes an
// extra output of the fused node (at most 7), so an optimizer's update of a weight and its
// moments is one step. Groups of two or more nodes are fused, up to 8 distinct inputs. Scalar
// float constants become program constants. Numerics are the unfused plan's: each fused node's result is rounded
// to its own 16-bit dtype where the unfused step would have stored 16 bits (Round), so a fused
// plan gives the same bits as the unfused one.
//
// With `rows`, reductions over the trailing dims join too, as row programs
// (fused_program.h): Softmax over its last axis (before opset 13: the dims from its axis on),
// LayerNormalization (unused Mean/InvStdDev), InstanceNormalization (a row per channel and
// batch), and ReduceSum/ReduceMean/ReduceMax over trailing
// axes, each with its elementwise producers (a residual Add, a scale, a mask over the row) and
// consumers (Casts, a scale and bias). A row group has one row length and frame (its reductions'
// input dims); every member writes the frame or a row value (the frame with its trailing dims
// as 1s), which is computed once per row and may feed members that write the frame (a
// decomposed RMSNorm's x * 1/rms). At most 3 reductions over rows per group. Numerics: the
// reductions' order is the program's (16 interleaved double partials), not the unfused
// kernels', so a fused row differs from the unfused plan by a few FP32 ulps.
//
// Runs after the precision report is built (the report describes the nodes; the fused node lists
// the nodes it replaced in its `nodes` attribute). Returns the fused groups.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "compiler/ir/graph.h"

namespace precis::passes {

struct FusedGroup {
  std::string node;                 // the FusedElementwise node's name
  std::string entry;                // its program's function name (fused_program.h)
  std::vector<std::string> replaced;  // the names of the nodes it replaced, in order
  int64_t row = 0;                  // a row program's row length (0: elementwise)
};

struct FuseOptions {
  bool rows = false;   // fuse reductions over rows too (row programs)
  int64_t opset = 13;  // the ai.onnx opset (Softmax's axis before 13)
};

// Values named in `keep` stay tensors (program outputs and state updates of training plans), as
// graph outputs do: extra outputs of the fused node that computes them.
std::vector<FusedGroup> FuseElementwise(ir::Graph& graph, const std::set<std::string>& keep = {}, const FuseOptions& options = {});

}  // namespace precis::passes
