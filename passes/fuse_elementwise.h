// Elementwise fusion (CPU plans with code generation): chains of float elementwise operators
// become one `FusedElementwise` node whose program (runtime/kernels/fused_program.h) computes
// the chain per element in FP32 registers, so that the intermediate tensors are never written.
//
// Fusable: Add, Sub, Mul, Div, two-input Max/Min, Neg, Abs, Sqrt, Reciprocal, Relu, LeakyRelu,
// PRelu, HardSigmoid, HardSwish, Exp, Erf, Tanh, Sigmoid, Gelu,
// Clip (constant scalar bounds) and Cast between FP32, FP16 and BF16, on FP32/FP16/BF16 tensors of
// static shape where every input has the output's dims or broadcasts to them keeping one contiguous
// block of dims (read periodically: scalars, per-channel and last-axis vectors). A node joins
// the group of a fusable producer when it alone reads that producer's output and that output has
// the node's dims (or one element), so no value computed inside a group is read by a node outside
// it and fusing cannot make a cycle. A value the plan must keep (a graph output, or a value named
// in `keep`: training plans' program outputs and state updates) joins the same way and becomes an
// extra output of the fused node (at most 7), so an optimizer's update of a weight and its
// moments is one step. Groups of two or more nodes are fused, up to 8 distinct inputs. Scalar
// float constants become program constants. Numerics are the unfused plan's: each fused node's result is rounded
// to its own 16-bit dtype where the unfused step would have stored 16 bits (Round), so a fused
// plan gives the same bits as the unfused one.
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
};

// Values named in `keep` stay tensors (program outputs and state updates of training plans), as
// graph outputs do: extra outputs of the fused node that computes them.
std::vector<FusedGroup> FuseElementwise(ir::Graph& graph, const std::set<std::string>& keep = {});

}  // namespace precis::passes
