// The plan emitter: lowers fully inferred IR graphs (every value a tensor of known rank whose dims
// are static or symbolic expressions) to programs of runtime steps, plans the arena, and writes
// the plan file bytes (runtime/plan/plan_format.h). Deterministic: the same graphs and options
// give identical bytes.
//
// Symbolic dims make a dynamic plan (plan.fbs Plan.symbols): tensors carry their dims as
// polynomials over the symbols, and arena tensors their live ranges instead of offsets; the
// runtime binds the symbols from the input shapes and plans the arena per binding. Every symbol
// must be an input dim of an entry program (what binds it); state and constants are static.
//
// Several programs (each one IR graph) share one tensor table: graph inputs and program outputs
// of one name are one tensor (same dtype and shape required); values named in EmitOptions::state
// (graph inputs with a default value, or constants) become State tensors that persist across
// runs, initialized from that value. A program updates a state tensor by naming a graph output
// that overwrites it at the end of the program; a step may run under a bool scalar predicate.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "compiler/ir/graph.h"

namespace precis::emit {

struct EmitOptions {
  std::string target = "cpu";
  bool strip_weights = false;  // leave large float constants out (benchmark plans; see plan.fbs)
  std::string precision = "fp32";
  uint64_t source_hash = 0;
  std::string report_json, report_text;  // embedded precision report (may be empty)
  bool measure_only = false;             // plan the arena and stop: no bytes are written
  std::set<std::string> state;           // names of the values that become State tensors
  std::vector<uint8_t> source_model;     // training plans: the ONNX model file (plan.fbs)
  std::string training_config;           // training plans: options as JSON (plan.fbs)
  // Generated code images (plan.fbs Module): ELF objects for the CPU, PTX text (NUL-terminated)
  // and cubins for the GPU (compiler/codegen).
  struct Module {
    enum class Kind { kElf, kPtx, kCubin };
    std::string name, target;
    std::vector<uint8_t> code;
    Kind kind = Kind::kElf;
  };
  std::vector<Module> modules;
  // Entries of the generated CPU kernels that may write an output over another input (their code
  // has a body for it; driver/compile.h FuseAndGenerate's in_place_outputs): only their steps
  // update state in place over an input they read (state_updates.h).
  std::set<std::string> aliased_entries;
  // Bounds of symbolic dims (plan.fbs Plan.symbol_min/max); each must name a symbol of the plan.
  std::map<std::string, std::pair<int64_t, int64_t>> dim_bounds;
};

// One program: a name ("infer", "train_step", ...) and the graph it runs.
struct ProgramSource {
  std::string name = "infer";
  const ir::Graph* graph = nullptr;
  // The program's outputs (graph values, by name); empty: the graph's outputs. With a selection,
  // the program holds only the nodes its outputs, state updates and predicates need (an
  // evaluation program over a training graph).
  std::vector<std::string> outputs;
  // Graph outputs that overwrite a state tensor when the program ends: output name -> state name.
  // They are not outputs of the program; with an output selection they may be any graph value.
  std::map<std::string, std::string> state_updates;
  // Steps that run only when a bool scalar value of the graph is true: node name -> value name;
  // and state updates that do: state name -> value name (an optimizer step skipped on overflow).
  std::map<std::string, std::string> predicates;
  std::map<std::string, std::string> update_predicates;
  // The program recomputes derived state (plan.fbs Program.derives_state): its state updates are
  // the derived tensors.
  bool derives_state = false;
};

struct EmittedPlan {
  std::vector<uint8_t> bytes;
  size_t steps = 0;
  size_t arena_bytes = 0;
  size_t arena_lower_bound = 0;
  size_t constant_bytes = 0;
  int inplace_count = 0;
  std::vector<std::string> symbols;  // a dynamic plan's symbolic dims (empty: static)
};

// Errors: a value without a static tensor type (naming it and the symbolic dim), an operator
// without an OpDef, a subgraph operator; for programs also: a shared name with two types, a state
// name without an initial value, an update of a state that does not exist or does not match, a
// predicate that is not a bool scalar of the program's graph.
StatusOr<EmittedPlan> EmitPrograms(const ir::Model& model, const std::vector<ProgramSource>& programs, const EmitOptions& options);
// One program, "infer", over the model's graph.
StatusOr<EmittedPlan> EmitPlan(const ir::Model& model, const EmitOptions& options);

}  // namespace precis::emit
