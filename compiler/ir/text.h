// The text form of the IR: a printer and a parser that read each other's output.
//
//   model {ir_version = 8, producer_name = "pytorch", producer_version = "1.13.1",
//          domain = "", model_version = 0, opsets = {"" = 17}}
//   graph "main_graph" {
//     input %x: f32[N,3,32,32]
//     const %w: f32[8,3,3,3] = ref 0x1f2e3d4c5b6a7988     // large: printed by content hash
//     const %b: f32[2] = [0.5, -1.25]                     // small: printed inline
//     %y: f32[N,8,32,32] = Conv(%x, %w, _) {pads = [1, 1, 1, 1]} name "conv1"
//     %z = "com.microsoft"::Gelu(%y)
//     output %z
//   }
//
// Types: f32[2,?,N] (static, unknown, symbolic dims), f32[*] (unknown rank), seq<T>, opt<T>;
// an unknown type is not printed. `_` stands for an omitted optional input or output. Floats
// always print with a '.', an exponent, inf or nan (NaN payloads as nan(0xBITS) of the storage
// type), so they are told apart from integers; empty lists carry their kind: `[] : ints`.
// Output is deterministic. Parsing resolves `ref` constants through ParseOptions::resolve; with
// no resolver they become hash-only tensors (Tensor::Reference), which compare by hash.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "compiler/ir/graph.h"

namespace precis::ir {

struct PrintOptions {
  // Tensors with more elements than this print as `ref HASH`; -1 prints everything inline.
  int64_t inline_limit = 16;
};

std::string PrintModel(const Model& model, const PrintOptions& options = {});
std::string PrintGraph(const Graph& graph, const PrintOptions& options = {});
std::string PrintType(const Type& type);

struct ParseOptions {
  // Supplies the data of a tensor printed by reference; nullopt leaves a hash-only tensor.
  std::function<std::optional<Tensor>(DType, const std::vector<int64_t>&, uint64_t hash)> resolve;
};

// Errors are InvalidArgument with "line:column: message".
StatusOr<std::unique_ptr<Model>> ParseModel(std::string_view text, const ParseOptions& options = {});

}  // namespace precis::ir
