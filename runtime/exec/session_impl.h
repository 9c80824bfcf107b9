// Session::Impl, shared by session.cc (plan loading, the tensor table, dispatch) and
// session_dynamic.cc (dynamic plans: symbolic dims bound from the inputs, the arena planned per
// shape). Private to runtime/exec.
#pragma once

#include <algorithm>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "precis/session.h"
#include "runtime/base/aligned_buffer.h"
#include "runtime/base/value_expr.h"
#include "runtime/base/mapped_file.h"
#include "runtime/exec/backend.h"
#include "runtime/plan/plan_format.h"

namespace precis {

// The element count of `dims`, or nullopt when a dim is negative or the product of the nonzero
// dims passes 2^50 ([0, 2^62, 2^62] holds no element, but index arithmetic over it overflows).
std::optional<int64_t> BoundedElements(const std::vector<int64_t>& dims);

struct Session::Impl {
  SessionOptions options;
  std::shared_ptr<const MappedFile> file;  // the mapped plan, or
  AlignedBuffer owned_plan;                // a copy of a plan given as a buffer
  plan::PlanView view;
  std::vector<rt::Tensor> tensors;
  std::vector<uint8_t*> home;  // each tensor's own storage, restored when unbound
  rt::LoadedPlan loaded;
  std::unique_ptr<rt::Backend> backend;
  std::vector<std::string> program_names;  // every program, bodies of control-flow steps included
  std::vector<std::string> entry_names;    // the programs a caller may run (not bodies)
  struct ProgramIo {
    std::vector<TensorInfo> inputs, outputs;
    // plan.fbs Program.containers: each with its parts' tensor ids (-1: none).
    struct Container {
      std::vector<int> elements;
      int stack = -1, dims = -1, present = -1;
    };
    std::vector<ContainerInfo> container_infos;
    std::vector<Container> containers;
  };
  Status LoadContainers(const plan::Program& p, const rt::ProgramSteps& prog, ProgramIo& pio);
  // Elements OutputContainer cut from a padded stack, per container output.
  mutable std::unordered_map<std::string, std::vector<std::vector<uint8_t>>> container_bytes;

  std::vector<ProgramIo> io;
  size_t default_program = 0, last_program = 0;
  std::unordered_map<std::string, int> input_ids, output_ids, state_ids;
  std::vector<TensorInfo> state;  // the state a caller reads, writes and saves (derived state excluded)
  std::vector<int> saved_state;   // their ids, in plan order
  // Derived state (plan.fbs Program.derives_state): the program that recomputes it, the ids it
  // writes, and whether it must run before the next program or read of derived state.
  int derive_program = -1;
  std::vector<int> derived_state;
  mutable bool derive_pending = false;
  Status Derive() const;
  bool IsDerived(int id) const { return std::find(derived_state.begin(), derived_state.end(), id) != derived_state.end(); }
  std::string precision;
  std::vector<std::vector<StepProfile>> profiles;  // per program, when profiling
  std::function<void(const TensorData&)> observer;
  std::vector<AlignedBuffer> synthetic;  // weights of a --strip-weights plan
  // Where each tensor lies: its placement (plan::Placement) and byte offset in that section.
  struct Storage {
    int placement = -1;
    uint64_t offset = 0;
  };
  std::vector<Storage> storage;

  // Dynamic plans (plan.fbs Plan.symbols): each tensor's symbolic dims as polynomials over the
  // symbols; the binding the backend is prepared for; what the inputs set since the last Run
  // bind; and the inputs' bytes, kept by the session (the arena moves when the shape changes).
  struct Term {
    int64_t coeff = 0;
    std::vector<int> factors;  // symbol indices
  };
  struct SymDim {
    size_t index = 0;  // which dim of the tensor
    std::vector<Term> terms;
    std::string text;  // "2*batch*seq"
  };
  struct Atom {  // plan.fbs Plan.dim_atoms: floor(P / k) for k >= 1; kind -1: P = 0, -2: P < 0, -3: floor(P / Q), -4/-5: min/max(P, Q)
    int64_t k = 1;
    std::vector<Term> terms, divisor;  // P, and Q of the two-operand kinds
    std::string text;  // "(H+1)/2", "eq(shape[0]+1)"
  };
  struct ValueSymbol {  // plan.fbs Plan.value_symbols (and value_symbol_scale)
    size_t symbol = 0;
    int tensor = -1;
    int64_t element = 0;
    int64_t scale = 0;  // 0: an integer element; M >= 1: floor(M * float element)
  };
  struct ExprSymbol {  // plan.fbs Plan.expr_symbols and expr_symbol_code
    size_t symbol = 0;
    std::optional<value_expr::Expression> expr;  // plan.fbs expr_symbol_code, parsed at load
    std::vector<int> tensors;  // the inputs it reads
  };
  struct DataSymbol {  // plan.fbs Plan.data_symbols and data_symbol_bounds
    size_t symbol = 0;
    int tensor = -1;  // an entry-program step's output: its dim `axis` is the size once the step ran
    size_t axis = 0;
    std::vector<Term> bound;  // over symbols the inputs bind: each run starts at this value
    std::string text;
    size_t program = 0, step = 0;  // the step that writes `tensor`
  };
  struct IterationSymbol {  // plan.fbs Plan.iteration_symbols and iteration_symbol_bounds
    size_t symbol = 0;
    size_t program = 0;        // the Loop's body program
    std::vector<Term> bound;   // the largest iteration number, over symbols the inputs bind
    std::string text;
  };
  static constexpr int64_t kUnbound = INT64_MIN;  // a symbol without a value
  static constexpr size_t kMaxDimText = 240;       // longer texts of dims are cut
  struct StagedInput {
    AlignedBuffer bytes;
    size_t capacity = 0;
    std::vector<int64_t> dims;
    bool set = false;
  };
  bool dynamic = false;
  bool prepared = false;
  bool shape_ok = false;  // a dynamic plan's tensors match its bound shape (false after a failed rebind)
  std::vector<std::string> symbols;
  std::vector<std::vector<SymDim>> sym_dims;   // per tensor
  std::vector<Atom> atoms;
  std::vector<ValueSymbol> value_symbols;
  std::vector<ExprSymbol> expr_symbols;
  std::vector<DataSymbol> data_symbols;
  std::vector<IterationSymbol> iteration_symbols;
  std::vector<uint64_t> run_bytes;             // per tensor: its bytes at the run's start (data dims, iteration numbers at their bounds)
  std::vector<int64_t> bound, pending;         // per symbol; kUnbound: none
  std::vector<int64_t> run_bound;              // per symbol: its value at the run's start (data dims, iteration numbers at their bounds)
  std::vector<std::string> pending_from;       // the input that gave each pending value
  std::unordered_map<int, StagedInput> staged; // by tensor id
  std::vector<int> live_first, live_last, inplace_of;  // per tensor (arena tensors of dynamic plans)
  // Bounds of the symbols (Plan.symbol_min/max; max -1: none). With every symbol bounded the arena
  // is planned once at load, for the maximum, and kept for every binding that fits it.
  std::vector<int64_t> sym_min, sym_max;
  bool fixed_arena = false;
  std::vector<uint64_t> fixed_offsets, fixed_bytes;
  uint64_t fixed_arena_bytes = 0;

  Status Load(const uint8_t* data, size_t size);
  Status LoadSymbols();
  Status LoadSymbolicDims(size_t i, const plan::TensorDesc* d);
  Status LoadValueSymbols();
  Status LoadExprSymbols();
  // The value expression symbols from the staged inputs' values, into `b` (those whose inputs
  // are not all set stay as they are).
  Status EvaluateExprSymbols(std::vector<int64_t>& b) const;
  Status LoadDataSymbols();
  Status BindDataDims(size_t program, size_t step);
  Status LoadIterationSymbols();
  std::function<bool(const std::vector<Term>&)> PolyReads(const std::vector<bool>& marked) const;
  StatusOr<bool> BindIteration(size_t program, int64_t iteration);
  // Every tensor's dims for `b` within the bytes the run started with (data dims and iteration
  // numbers below their bounds), operand overlaps checked; the backend is not told.
  Status SetDimsWithinRun(const std::vector<int64_t>& b);
  StatusOr<std::vector<int64_t>> AtomValues(const std::vector<int64_t>& binding) const;
  Status SetDims(const std::vector<int64_t>& binding, const std::vector<int64_t>& atom_values);
  bool DecodePoly(const flatbuffers::Vector<int64_t>* code, size_t& pos, size_t atoms_known, std::vector<Term>& out, std::string& text) const;
  bool EvaluatePoly(const std::vector<Term>& terms, const std::vector<int64_t>& b, const std::vector<int64_t>& atom_values, int64_t& v) const;
  Status Rebind(const std::vector<int64_t>& binding);
  Status Place(const std::vector<uint64_t>& offsets, uint64_t arena_bytes);
  Status PrepareBackend(const std::vector<int64_t>& binding);
  Status CheckOverlaps(const std::string& kernel_name, const rt::KernelArgs& a) const;
  void SetUpProfiles();
  Status SetDynamicInput(int id, DataType dtype, const std::vector<int64_t>& dims, const void* data, size_t bytes);
  Status PrepareDynamicRun(size_t program);
  std::string Binding(const std::vector<int64_t>& values) const;
  Status LoadTensors();
  Status LoadPrograms();
  StatusOr<uint8_t*> SyntheticWeight(const rt::Tensor& t);
  StatusOr<rt::KernelArgs> StepArgs(const plan::Step* s);
  StatusOr<size_t> FindProgram(const std::string& name) const;
  StatusOr<int> FindState(const std::string& name) const;
};

}  // namespace precis
