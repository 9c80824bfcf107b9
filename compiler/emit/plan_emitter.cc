// EmitPlan: tensors and steps from the IR, arena offsets from the memory planner, constants
// 64-byte aligned in one blob, all wrapped in the checksummed plan container.
#include "compiler/emit/plan_emitter.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <set>
#include <unordered_map>

#include "compiler/emit/containers.h"
#include "compiler/emit/data_dims.h"
#include "compiler/emit/dim_code.h"
#include "compiler/emit/input_symbols.h"
#include "compiler/emit/memory_planner.h"
#include "compiler/emit/plan_file.h"
#include "compiler/emit/state_updates.h"
#include "compiler/emit/widening.h"
#include "compiler/ops/control_flow.h"
#include "compiler/ops/step_attrs.h"
#include "compiler/ir/text.h"
#include "compiler/ops/op_registry.h"
#include "compiler/ops/shape_values.h"
#include "runtime/cuda/kernel_list.h"
#include "runtime/plan/plan_format.h"

namespace precis::emit {
namespace {

// Where a tensor lives: the arena (a program's temporary, or an input/output shared by name and
// live across all programs), the constants blob, or the state region.
enum class Kind { kArena, kIo, kConstant, kState };

struct TensorEntry {
  const ir::Value* value;
  std::vector<int64_t> dims;  // -1 where symbolic
  std::vector<ir::DimExpr> symbolic;  // the symbolic dims' expressions, in order
  size_t bytes;
  Kind kind;
  size_t offset = 0;       // in the arena, the constants blob or the state region
  size_t init_offset = 0;  // State: its initial value in the constants blob
  bool zero_init = false;  // State: starts as zeros, init_offset is the shared zero block
  bool synthetic = false;  // a stripped weight (EmitOptions::strip_weights)
  // Dynamic plans, arena tensors: the live range and the in-place source (plan.fbs TensorDesc).
  int live_first = 0, live_last = 0, inplace_of = -1;
};

class Emitter {
 public:
  Emitter(const ir::Model& model, const std::vector<ProgramSource>& programs, const EmitOptions& options)
      : model_(model), sources_(programs), options_(options) {}

  StatusOr<EmittedPlan> Run() {
    if (sources_.empty()) return InvalidArgument("a plan needs at least one program");
    for (size_t p = 0; p < sources_.size(); ++p) PRECIS_RETURN_IF_ERROR(CollectProgram(p));
    for (const std::string& name : options_.state)
      if (!shared_.count(name)) return InvalidArgument("state '" + name + "' is not a value of any program");
    PRECIS_RETURN_IF_ERROR(CollectSymbols());
    PlanArena();
    // A model whose shapes ask for more than any machine has (a 10^12-element input, say) is
    // refused here, before a session would try to allocate it.
    if (result_.arena_bytes > kMaxArenaBytes)
      return InvalidArgument("the plan would need " + std::to_string(result_.arena_bytes) +
                             " bytes of activation memory, more than the 2^40 (1 TiB) Precis plans for: check the model's input shapes");
    PlaceConstants();
    if (options_.measure_only) {
      result_.steps = steps_.size();
      return std::move(result_);
    }
    return Write();
  }

 private:
  struct Program {
    std::string name;
    std::vector<int> inputs, outputs;
    std::vector<size_t> steps;  // indices into steps_ (a body's steps come before its control-flow step)
    bool body = false;          // the body of an If/Loop/Scan step (plan.fbs Program.body)
    bool derives_state = false; // plan.fbs Program.derives_state
  };

  Status CollectProgram(size_t p) {
    const ProgramSource& src = sources_[p];
    if (!src.graph) return InvalidArgument("program '" + src.name + "' has no graph");
    for (size_t q = 0; q < p; ++q)
      if (sources_[q].name == src.name) return InvalidArgument("two programs are named '" + src.name + "'");
    const ir::Graph& g = *src.graph;
    current_ = &src;
    ids_.clear();
    PRECIS_RETURN_IF_ERROR(SelectProgram(src));
    // The program's slot comes first: the bodies of its control-flow steps follow it.
    // (programs_ grows while bodies are collected: it is indexed, never referenced.)
    size_t slot = programs_.size();
    programs_.emplace_back().name = src.name;
    programs_[slot].derives_state = src.derives_state;
    for (const ir::Value* v : g.inputs()) {
      if (!src.outputs.empty() && !used_.count(v)) continue;
      PRECIS_ASSIGN_OR_RETURN(int id, AddTensor(*v));
      if (tensors_[size_t(id)].kind == Kind::kIo) programs_[slot].inputs.push_back(id);
    }
    // State updates written in place (state_updates.h): the source is the state tensor itself.
    std::set<std::string> in_place;
    for (const InPlaceUpdate& u : StateUpdatesInPlace(src, needed_, selected_, options_)) {
      PRECIS_ASSIGN_OR_RETURN(int id, AddTensor(*u.state));
      ids_[u.source] = id;
      in_place.insert(u.source->name());
    }
    for (const auto& n : g.nodes())
      if (needed_.count(n.get())) PRECIS_RETURN_IF_ERROR(CollectStep(*n, slot));
    for (const ir::Value* v : selected_) {
      PRECIS_ASSIGN_OR_RETURN(int id, AddTensor(*v));
      programs_[slot].outputs.push_back(id);
    }
    for (const auto& [from, state] : src.state_updates) {
      if (in_place.count(from)) continue;
      PRECIS_ASSIGN_OR_RETURN(int id, AddTensor(*g.FindLocal(from)));
      PRECIS_RETURN_IF_ERROR(AddStateUpdate(id, state, slot));
    }
    return Status::Ok();
  }

  // An If, Loop or Scan step: each body becomes a program of its own (named after the step and
  // the attribute) whose steps come before the control-flow step on the arena's timeline. The
  // step's outputs are live from the first body step on (a Loop writes its scan outputs between
  // iterations); body inputs, body outputs and every outer value a body reads stay live up to
  // the control-flow step, so no body step reuses their bytes while the loop runs.
  Status CollectControlFlow(const ir::Node& n, const ops::OpDef& def, size_t program) {
    Step s{&n, &def, KernelName(n, def), {}, {}, -1, "", {}};
    std::vector<int> extended;  // tensors whose lifetime reaches the control-flow step
    auto operands = [&](const std::vector<ir::Value*>& values, std::vector<int>& ids, bool extend) -> Status {
      for (const ir::Value* v : values) {
        int id = -1;
        if (v) {
          PRECIS_ASSIGN_OR_RETURN(id, AddTensor(*v));
        }
        ids.push_back(id);
        if (v && extend) extended.push_back(id);
      }
      return Status::Ok();
    };
    PRECIS_RETURN_IF_ERROR(operands(n.inputs(), s.inputs, true));
    PRECIS_RETURN_IF_ERROR(operands(n.outputs(), s.outputs, false));
    if (current_->predicates.count(n.name())) return Unimplemented(n.Describe() + ": a control-flow step cannot run under a predicate");
    size_t tensors_before = tensors_.size(), region = steps_.size();
    for (auto& [attr, body] : ops::ControlFlowBodies(n)) {
      size_t slot = programs_.size();
      if (n.op_type() == "Loop") loop_bodies_.push_back({ops::IterationSymbol(n), slot, &n});
      programs_.emplace_back().name =
          programs_[program].name + "/" + (n.name().empty() ? n.op_type() + "#" + std::to_string(n.index()) : n.name()) + "/" + attr;
      programs_[slot].body = true;
      for (const ir::Value* v : body->inputs()) {
        PRECIS_ASSIGN_OR_RETURN(int id, AddTensor(*v));
        programs_[slot].inputs.push_back(id);
        extended.push_back(id);
      }
      for (const auto& inner : body->nodes()) PRECIS_RETURN_IF_ERROR(CollectStep(*inner, slot));
      for (const ir::Value* v : body->outputs()) {
        if (!v) return InvalidArgument(n.Describe() + ": its " + attr + " has an empty output");
        PRECIS_ASSIGN_OR_RETURN(int id, AddTensor(*v));
        programs_[slot].outputs.push_back(id);
        extended.push_back(id);
      }
      s.programs.emplace_back(attr == "then_branch" ? "then_program" : attr == "else_branch" ? "else_program" : "body_program", int64_t(slot));
    }
    for (size_t i = region; i < steps_.size(); ++i) {
      for (int id : steps_[i].inputs)
        if (id >= 0 && size_t(id) < tensors_before) extended.push_back(id);
      if (steps_[i].predicate >= 0) extended.push_back(steps_[i].predicate);
    }
    int at = int(steps_.size());
    for (int id : extended) last_[size_t(id)] = std::max(last_[size_t(id)], at);
    programs_[program].steps.push_back(steps_.size());
    steps_.push_back(std::move(s));
    return Status::Ok();
  }

  // The program's outputs (selected_), and the nodes (needed_) and values (used_) they, the state
  // updates and the predicates of needed steps depend on.
  Status SelectProgram(const ProgramSource& src) {
    const ir::Graph& g = *src.graph;
    selected_.clear();
    needed_.clear();
    used_.clear();
    auto lookup = [&](const std::string& name, const char* what) -> StatusOr<const ir::Value*> {
      const ir::Value* v = g.FindLocal(name);
      if (!v) return InvalidArgument("program '" + src.name + "': " + what + " '" + name + "' is not a value of its graph");
      return v;
    };
    std::vector<const ir::Value*> roots;
    if (src.outputs.empty()) {
      for (const ir::Value* v : g.outputs())
        if (!src.state_updates.count(v->name())) selected_.push_back(v);
      for (const auto& update : src.state_updates) {
        const std::string& from = update.first;  // (clang 14 lambdas cannot capture structured bindings)
        if (std::none_of(g.outputs().begin(), g.outputs().end(), [&](const ir::Value* v) { return v->name() == from; }))
          return InvalidArgument("program '" + src.name + "': state update from '" + from + "', which is not a graph output");
      }
      for (const auto& n : g.nodes()) needed_.insert(n.get());
      return Status::Ok();
    }
    for (const std::string& name : src.outputs) {
      PRECIS_ASSIGN_OR_RETURN(const ir::Value* v, lookup(name, "output"));
      selected_.push_back(v);
    }
    roots = selected_;
    for (const auto& [from, state] : src.state_updates) {
      PRECIS_ASSIGN_OR_RETURN(const ir::Value* v, lookup(from, "state update source"));
      roots.push_back(v);
    }
    for (const auto& [state, pred] : src.update_predicates) {
      PRECIS_ASSIGN_OR_RETURN(const ir::Value* v, lookup(pred, "state update predicate"));
      roots.push_back(v);
    }
    // Backwards over the node order; a needed predicated node adds its predicate.
    std::set<const ir::Value*> wanted(roots.begin(), roots.end());
    for (auto it = g.nodes().rbegin(); it != g.nodes().rend(); ++it) {
      const ir::Node* n = it->get();
      bool feeds = std::any_of(n->outputs().begin(), n->outputs().end(), [&](const ir::Value* o) { return o && wanted.count(o); });
      if (!feeds) continue;
      needed_.insert(n);
      for (const ir::Value* in : n->inputs())
        if (in) wanted.insert(in);
      // A control-flow step also needs the outer values its bodies read.
      for (const auto& a : n->attributes())
        for (const auto& sub : a.graphs)
          ir::ForEachGraph(*sub, [&](const ir::Graph& body) {
            for (const auto& inner : body.nodes())
              for (const ir::Value* in : inner->inputs())
                if (in) wanted.insert(in);
            for (const ir::Value* out : body.outputs())
              if (out) wanted.insert(out);
          });
      if (auto pred = src.predicates.find(n->name()); pred != src.predicates.end())
        if (const ir::Value* v = g.Lookup(pred->second)) wanted.insert(v);
    }
    used_ = std::move(wanted);
    return Status::Ok();
  }

  // Values of one name shared by programs: inputs, program outputs and state. Values of a
  // control-flow body (its inputs included) are the body's own.
  Kind KindOf(const ir::Value& v) const {
    if (v.owner() && v.owner()->parent_node()) return v.is_constant() ? Kind::kConstant : Kind::kArena;
    if (options_.state.count(v.name()) && (v.is_constant() || (v.kind() == ir::Value::Kind::kInput && v.data()))) return Kind::kState;
    if (v.is_constant()) return Kind::kConstant;
    if (v.kind() == ir::Value::Kind::kInput) return Kind::kIo;
    if (std::find(selected_.begin(), selected_.end(), &v) != selected_.end()) return Kind::kIo;
    return Kind::kArena;
  }

  StatusOr<int> AddTensor(const ir::Value& v) {
    if (auto it = ids_.find(&v); it != ids_.end()) return it->second;
    std::vector<ir::DimExpr> symbolic;
    PRECIS_ASSIGN_OR_RETURN(auto dims, ShapeOf(v, symbolic));
    if (!symbolic.empty() && (KindOf(v) == Kind::kConstant || KindOf(v) == Kind::kState || options_.state.count(v.name())))
      return Unimplemented("value '" + v.name() + "' is a constant or state with symbolic dims (" + ir::PrintType(v.type()) +
                           "): plans with state need static shapes (--shape)");
    if (options_.state.count(v.name()) && KindOf(v) != Kind::kState)
      return InvalidArgument("state '" + v.name() + "' must be a constant or a graph input with a default value");
    Kind kind = KindOf(v);
    bool shared = kind == Kind::kIo || kind == Kind::kState;
    if (shared) {
      if (auto it = shared_.find(v.name()); it != shared_.end()) {
        const TensorEntry& e = tensors_[size_t(it->second)];
        if (e.dims != dims || e.symbolic != symbolic || e.value->type().dtype() != v.type().dtype() || e.kind != kind)
          return InvalidArgument("'" + v.name() + "' is " + ir::PrintType(e.value->type()) + " in one program and " + ir::PrintType(v.type()) +
                                 " in program '" + current_->name + "'");
        ids_[&v] = it->second;
        return it->second;
      }
    }
    // A constant that programs share (the same bytes under the same name: a training plan's frozen
    // weights in its train and eval graphs) is stored once.
    std::pair<std::string, const uint8_t*> constant_key;
    if (kind == Kind::kConstant && v.data() && v.data()->has_data()) {
      constant_key = {v.name(), v.data()->buffer().data()};
      if (auto it = constants_.find(constant_key); it != constants_.end()) {
        const TensorEntry& c = tensors_[size_t(it->second)];
        if (c.dims == dims && c.value->type().dtype() == v.type().dtype()) {
          ids_[&v] = it->second;
          return it->second;
        }
      }
    }
    TensorEntry e{&v, dims, symbolic, 0, kind};
    e.bytes = symbolic.empty() ? size_t(*ir::CheckedElements(dims)) * size_t(ir::DTypeSize(v.type().dtype())) : 0;
    int id = int(tensors_.size());
    tensors_.push_back(std::move(e));
    ids_[&v] = id;
    if (shared) shared_[v.name()] = id;
    if (constant_key.second) constants_.emplace(constant_key, id);
    first_.push_back(int(steps_.size()));
    last_.push_back(first_.back());
    inplace_of_.push_back(-1);
    return id;
  }

  Status CollectStep(const ir::Node& n, size_t program) {
    const ops::OpDef* def = ops::OpRegistry::Get().Find(n.domain(), n.op_type());
    if (!def) return Unimplemented(n.Describe() + ": no operator definition");
    if (!ops::ControlFlowBodies(n).empty()) return CollectControlFlow(n, *def, program);
    for (const auto& a : n.attributes())
      if (!a.graphs.empty()) return Unimplemented(n.Describe() + ": operators with subgraphs other than If, Loop and Scan cannot be emitted");
    Step s{&n, def, KernelName(n, *def), {}, {}, -1, "", {}};
    for (const ir::Value* v : n.inputs()) {
      if (!v) {
        s.inputs.push_back(-1);
        continue;
      }
      PRECIS_ASSIGN_OR_RETURN(int id, AddTensor(*v));
      last_[size_t(id)] = int(steps_.size());
      s.inputs.push_back(id);
    }
    for (const ir::Value* v : n.outputs()) {
      if (!v) {
        s.outputs.push_back(-1);
        continue;
      }
      PRECIS_ASSIGN_OR_RETURN(int id, AddTensor(*v));
      s.outputs.push_back(id);
    }
    if (auto pred = current_->predicates.find(n.name()); pred != current_->predicates.end() && n.owner() == current_->graph) {
      PRECIS_ASSIGN_OR_RETURN(s.predicate, Predicate(pred->second, n.Describe()));
    }
    if (def->inplace_input >= 0 && size_t(def->inplace_input) < s.inputs.size() && !s.outputs.empty() && s.outputs[0] >= 0 &&
        (!def->inplace_ok || def->inplace_ok(n))) {
      int src = s.inputs[size_t(def->inplace_input)];
      if (src >= 0 && tensors_[size_t(src)].kind == Kind::kArena) inplace_of_[size_t(s.outputs[0])] = src;
    }
    programs_[program].steps.push_back(steps_.size());
    steps_.push_back(std::move(s));
    return Status::Ok();
  }

  // The tensor of a step's predicate, kept alive up to the step being collected.
  StatusOr<int> Predicate(const std::string& name, const std::string& step) {
    const ir::Value* v = current_->graph->Lookup(name);
    if (!v || v->type().dtype() != ir::DType::kBool || !v->type().shape().is_static() || *v->type().shape().NumElements() != 1 || v->is_constant())
      return InvalidArgument(step + ": predicate '" + name + "' is not a bool scalar computed in program '" + current_->name + "'" +
                             (v ? " (it is " + ir::PrintType(v->type()) + (v->is_constant() ? ", a constant)" : ")") : ""));
    PRECIS_ASSIGN_OR_RETURN(int id, AddTensor(*v));
    last_[size_t(id)] = int(steps_.size());
    return id;
  }

  // A program's update of a state tensor: a copy step at the end of the program.
  Status AddStateUpdate(int from, const std::string& state, size_t program) {
    auto it = shared_.find(state);
    if (it == shared_.end() || tensors_[size_t(it->second)].kind != Kind::kState)
      return InvalidArgument("program '" + current_->name + "' updates '" + state + "', which is not a state tensor of the plan");
    const TensorEntry& src = tensors_[size_t(from)];
    const TensorEntry& dst = tensors_[size_t(it->second)];
    if (src.dims != dst.dims || src.value->type().dtype() != dst.value->type().dtype())
      return InvalidArgument("program '" + current_->name + "': update of state '" + state + "' from '" + src.value->name() + "' has type " +
                             ir::PrintType(src.value->type()) + ", the state " + ir::PrintType(dst.value->type()));
    last_[size_t(from)] = int(steps_.size());
    int predicate = -1;
    if (auto pred = current_->update_predicates.find(state); pred != current_->update_predicates.end()) {
      PRECIS_ASSIGN_OR_RETURN(predicate, Predicate(pred->second, "update of state '" + state + "'"));
    }
    programs_[program].steps.push_back(steps_.size());
    steps_.push_back(Step{nullptr, nullptr, "Identity", {from}, {it->second}, predicate, "update " + state, {}});
    return Status::Ok();
  }

  static std::string KernelName(const ir::Node& n, const ops::OpDef& def) {
    if (!def.kernel.empty()) return def.kernel;
    return n.domain().empty() ? n.op_type() : n.domain() + "::" + n.op_type();
  }

  // The symbols of a dynamic plan, each bound by an input dim of an entry program that is exactly
  // that symbol.
  Status CollectSymbols() {
    std::set<std::string> all, bound;
    for (const TensorEntry& t : tensors_)
      for (const ir::DimExpr& e : t.symbolic)
        for (const std::string& s : e.Symbols()) all.insert(s);
    // A data dim's bound may read values that no dim holds (a Loop's trip count M): the plan
    // binds them too.
    for (const TensorEntry& t : tensors_) {
      const ir::Node* node = t.value ? t.value->producer() : nullptr;
      if (!node || t.symbolic.empty() || !ops::DataDimOutput(*node)) continue;
      if (auto b = ops::DataDimBound(*node))
        for (const std::string& s : b->Symbols()) all.insert(s);
    }
    PRECIS_ASSIGN_OR_RETURN(iteration_symbols_, FindIterationSymbols(loop_bodies_, all));
    for (const auto& [name, range] : options_.dim_bounds) {
      if (all.count(name)) continue;
      std::string known;
      for (const auto& s : all) known += (known.empty() ? "" : ", ") + s;
      return InvalidArgument("--shape " + name + "=" + std::to_string(range.first) + ".." + std::to_string(range.second) +
                             ": the model has no symbolic dim '" + name + "' (" + (known.empty() ? "its shapes are static" : "its symbolic dims: " + known) +
                             ")");
    }
    if (all.empty()) return Status::Ok();
    for (const TensorEntry& t : tensors_)
      if (t.kind == Kind::kState)
        return Unimplemented("the model has symbolic dims (" + *all.begin() + (all.size() > 1 ? ", ..." : "") + ") and the plan has state ('" +
                             t.value->name() + "'): plans with state (training) need static shapes; give them with --shape or --batch");
    // Symbols read from input values (emit/input_symbols.h).
    std::vector<EntryInput> entry_inputs;
    for (const Program& p : programs_)
      for (int id : p.inputs)
        if (!p.body && tensors_[size_t(id)].symbolic.empty()) entry_inputs.push_back({id, tensors_[size_t(id)].value});
    PRECIS_ASSIGN_OR_RETURN(InputSymbols from_values, FindInputSymbols(all, entry_inputs));
    std::map<std::string, std::string> display = std::move(from_values.display);
    value_symbols_ = std::move(from_values.values);
    expr_symbols_ = std::move(from_values.exprs);
    for (const ValueSymbolSource& v : value_symbols_) bound.insert(v.symbol);
    for (const ExprSymbolSource& e : expr_symbols_) bound.insert(e.symbol);
    for (const Program& p : programs_) {
      if (p.body) continue;
      for (int id : p.inputs)
        for (const ir::DimExpr& e : tensors_[size_t(id)].symbolic)
          if (e.terms().size() == 1 && e.terms().begin()->second == 1 && e.terms().begin()->first.size() == 1 &&
              !ir::DimExpr::ParseAtom(e.terms().begin()->first[0]))
            bound.insert(e.terms().begin()->first[0]);
    }
    for (const IterationSource& it : iteration_symbols_)
      for (const std::string& s : it.bound.Symbols())
        if (!bound.count(s))
          return Unimplemented("a Loop body's shapes follow its iteration number, and its iteration count (" + it.bound.ToString() +
                               " + 1) depends on '" + s + "', which no input binds (a size computed from data, or an outer iteration)");
    for (const IterationSource& it : iteration_symbols_) {
      bound.insert(it.symbol);
      display[it.symbol] = "iteration(" + programs_[it.program].name + ")";
    }
    // Data dims: sizes a step computes (NonZero...), planned at a bound (emit/data_dims.h).
    std::set<std::string> unbound;
    for (const std::string& s : all)
      if (!bound.count(s)) unbound.insert(s);
    std::vector<const ir::Value*> values;
    for (const TensorEntry& t : tensors_) values.push_back(t.value);
    PRECIS_ASSIGN_OR_RETURN(data_dims_, FindDataDims(unbound, bound, values));
    for (const DataDimSource& d : data_dims_) display[d.symbol] = d.display;
    for (const DataDimSource& d : data_dims_) bound.insert(d.symbol);
    // The CUDA backend binds symbols from input dims only (its kernels are prepared on the host
    // per shape, without the input values; a data dim would need the device's count mid-run).
    if (options_.target == "cuda" && !expr_symbols_.empty())
      return Unimplemented("a shape depends on input values (" + display[expr_symbols_[0].symbol] +
                           "); dynamic plans for the CUDA target take their dims from input shapes only so far: give the inputs concrete " +
                           "values/shapes for target cuda (--shape), or compile for the CPU");
    if (options_.target == "cuda" && !iteration_symbols_.empty())
      return Unimplemented("a Loop body's shapes follow its iteration number (" + display[iteration_symbols_[0].symbol] +
                           "); the CUDA target has static body shapes only so far: compile for the CPU");
    if (options_.target == "cuda" && (!value_symbols_.empty() || !data_dims_.empty())) {
      const std::string what = !value_symbols_.empty() ? "the values of input '" + tensors_[size_t(value_symbols_[0].tensor)].value->name() + "'"
                                                       : "data (" + data_dims_[0].display + ")";
      return Unimplemented("a shape depends on " + what + "; dynamic plans for the CUDA target take their dims from input shapes only so far: " +
                           "give the inputs concrete values/shapes for target cuda (--shape), or compile for the CPU");
    }
    for (const std::string& s : all) {
      if (bound.count(s)) continue;
      for (const TensorEntry& t : tensors_)
        for (const ir::DimExpr& e : t.symbolic)
          if (e.Symbols().count(s))
            return Unimplemented("value '" + t.value->name() + "' has a dim in symbol '" + s + "', which no input dim is: the runtime could not " +
                                 "bind it (give the inputs concrete shapes with --shape)");
    }
    coder_.SetSymbols(std::vector<std::string>(all.begin(), all.end()));
    for (const std::string& s : coder_.symbols()) result_.symbols.push_back(display.count(s) ? display[s] : s);
    return Status::Ok();
  }

  // One memory plan for all programs on one timeline (program after program): temporaries of
  // different programs may share bytes, inputs and program outputs live throughout. A dynamic
  // plan records the live ranges and in-place sources instead: the runtime plans its arena with
  // the same planner once the sizes are known.
  void PlanArena() {
    std::vector<PlannedTensor> planned;
    std::vector<size_t> arena_ids;
    int end = int(steps_.size());
    for (size_t i = 0; i < tensors_.size(); ++i) {
      Kind kind = tensors_[i].kind;
      if (kind == Kind::kConstant || kind == Kind::kState) continue;
      PlannedTensor p{tensors_[i].bytes, first_[i], last_[i], -1};
      if (kind == Kind::kIo) p.first = -1, p.last = end;
      arena_ids.push_back(i);
      planned.push_back(p);
    }
    std::unordered_map<size_t, int> index;
    for (size_t k = 0; k < arena_ids.size(); ++k) index[arena_ids[k]] = int(k);
    for (size_t k = 0; k < arena_ids.size(); ++k) {
      int src = inplace_of_[arena_ids[k]];
      // An output must keep its bytes to the end, so it never gives them away in place.
      if (src >= 0 && index.count(size_t(src)) && planned[size_t(index[size_t(src)])].last != end)
        planned[k].inplace_of = index[size_t(src)];
    }
    if (!coder_.symbols().empty()) {
      for (size_t k = 0; k < arena_ids.size(); ++k) {
        TensorEntry& t = tensors_[arena_ids[k]];
        t.live_first = planned[k].first;
        t.live_last = planned[k].last;
        t.inplace_of = planned[k].inplace_of >= 0 ? int(arena_ids[size_t(planned[k].inplace_of)]) : -1;
      }
      return;
    }
    MemoryPlan mp = PlanMemory(planned);
    for (size_t k = 0; k < arena_ids.size(); ++k) tensors_[arena_ids[k]].offset = mp.offsets[k];
    result_.arena_bytes = mp.arena_bytes;
    result_.arena_lower_bound = mp.lower_bound;
    result_.inplace_count = mp.inplace_count;
  }

  static constexpr size_t kMaxArenaBytes = size_t(1) << 40;

  static size_t Align(size_t n) { return (n + plan::kConstantAlignment - 1) / plan::kConstantAlignment * plan::kConstantAlignment; }

  static bool AllZero(const ir::Value* v, size_t bytes) {
    const uint8_t* p = v->data()->buffer().data();
    return std::all_of(p, p + bytes, [](uint8_t b) { return b == 0; });
  }

  // Constants, then the initial values of state tensors, in the blob; state in its own region.
  // State that starts as zeros (optimizer moments, counters) shares one block of zeros as large
  // as the largest of them, so a training plan does not store its moments' zeros again.
  void PlaceConstants() {
    size_t offset = 0, state = 0, zeros = 0;
    for (auto& t : tensors_)
      if (t.kind == Kind::kState && t.bytes && AllZero(t.value, t.bytes)) zeros = std::max(zeros, t.bytes);
    if (zeros) offset = Align(zeros);  // the zero block opens the blob (the file is zero-filled)
    for (auto& t : tensors_) {
      if (t.kind == Kind::kState) {
        t.offset = state;
        state = Align(state + t.bytes);
        if (zeros && t.bytes && AllZero(t.value, t.bytes)) {
          t.init_offset = 0;
          t.zero_init = true;
          continue;
        }
        t.init_offset = offset;
        offset = Align(offset + t.bytes);
        continue;
      }
      if (t.kind != Kind::kConstant) continue;
      // Stripped weights: float constants of 1 KiB and more (shape and index constants stay).
      ir::DType d = t.value->type().dtype();
      t.synthetic = options_.strip_weights && t.bytes >= 1024 &&
                    (d == ir::DType::kF32 || d == ir::DType::kF16 || d == ir::DType::kBF16 || d == ir::DType::kF64);
      if (t.synthetic) {
        t.offset = 0;
        continue;
      }
      t.offset = offset;
      offset = Align(offset + t.bytes);
    }
    constants_size_ = offset;
    state_size_ = state;
    result_.constant_bytes = offset;
  }

  struct Step {
    const ir::Node* node;  // nullptr for a state update
    const ops::OpDef* def;
    std::string kernel;
    std::vector<int> inputs, outputs;
    int predicate = -1;
    std::string label;  // the step's name when it has no node
    std::vector<std::pair<std::string, int64_t>> programs;  // control flow: "body_program" -> program index
  };
  StatusOr<EmittedPlan> Write();
  flatbuffers::Offset<plan::Step> WriteStep(flatbuffers::FlatBufferBuilder& b, const Step& s);

  const ir::Model& model_;
  const std::vector<ProgramSource>& sources_;
  const EmitOptions& options_;
  const ProgramSource* current_ = nullptr;
  std::vector<const ir::Value*> selected_;  // the current program's outputs
  std::set<const ir::Node*> needed_;
  std::set<const ir::Value*> used_;
  std::vector<TensorEntry> tensors_;
  std::unordered_map<const ir::Value*, int> ids_;  // the current program's values
  std::map<std::string, int> shared_;              // inputs, program outputs and state, by name
  std::map<std::pair<std::string, const uint8_t*>, int> constants_;  // constants by name and bytes
  std::vector<int> first_, last_, inplace_of_;
  std::vector<Step> steps_;
  std::vector<Program> programs_;
  DimCoder coder_;  // the plan's symbols (sorted; none for a static plan) and atoms
  std::vector<ValueSymbolSource> value_symbols_;
  std::vector<ExprSymbolSource> expr_symbols_;
  std::vector<DataDimSource> data_dims_;
  std::vector<LoopBody> loop_bodies_;
  std::vector<IterationSource> iteration_symbols_;
  size_t constants_size_ = 0, state_size_ = 0;
  EmittedPlan result_;
};

// The step's compute dtype (what its float inputs hold), accumulation dtype (the precision
// record) and layout, next to its kernel-form attributes.
flatbuffers::Offset<plan::Step> Emitter::WriteStep(flatbuffers::FlatBufferBuilder& b, const Step& s) {
  auto kname = b.CreateString(s.kernel);
  auto outs = b.CreateVector(s.outputs);
  if (!s.node) return plan::CreateStep(b, kname, b.CreateString(s.label), b.CreateVector(s.inputs), outs, 0, 0, 0, 0, s.predicate);
  const ir::Node& n = *s.node;
  auto opset_it = model_.opsets.find(n.domain());
  int64_t opset = opset_it == model_.opsets.end() ? 0 : opset_it->second;
  std::vector<int> inputs;
  for (int slot : ops::KernelInputOrder(n, opset)) inputs.push_back(slot < 0 ? -1 : s.inputs[size_t(slot)]);
  auto ins = b.CreateVector(inputs);
  auto node_name = b.CreateString(n.name().empty() ? n.op_type() + "#" + std::to_string(n.index()) : n.name());
  auto attrs = ops::BuildStepAttrs(b, n, opset, s.programs);
  uint8_t compute = 0;
  for (const ir::Value* v : n.inputs())
    if (v && ir::IsFloat(v->type().dtype())) {
      compute = uint8_t(ir::DTypeToOnnx(v->type().dtype()));
      break;
    }
  uint8_t accumulate = n.precision().accumulate == ir::DType::kUndefined ? 0 : uint8_t(ir::DTypeToOnnx(n.precision().accumulate));
  const ir::Attribute* layout = n.FindAttribute("layout");
  auto layout_name = layout && layout->kind == ir::Attribute::Kind::kString ? b.CreateString(layout->s) : 0;
  return plan::CreateStep(b, kname, node_name, ins, outs, attrs, compute, accumulate, layout_name, s.predicate, WideningOf(n).mask());
}

StatusOr<EmittedPlan> Emitter::Write() {
  flatbuffers::FlatBufferBuilder b(1 << 16);
  b.ForceDefaults(false);
  std::vector<flatbuffers::Offset<plan::TensorDesc>> tensors;
  for (const auto& t : tensors_) {
    auto name = b.CreateString(t.value->name());
    auto dims = b.CreateVector(t.dims);
    plan::Placement placement = t.kind == Kind::kConstant ? plan::Placement_Constant
                                : t.kind == Kind::kState  ? plan::Placement_State
                                                          : plan::Placement_Arena;
    flatbuffers::Offset<flatbuffers::Vector<int64_t>> code;
    if (!t.symbolic.empty()) {
      std::vector<int64_t> c;
      for (const ir::DimExpr& e : t.symbolic) coder_.Encode(e, c);
      code = b.CreateVector(c);
    }
    bool live = !coder_.symbols().empty() && placement == plan::Placement_Arena;
    tensors.push_back(plan::CreateTensorDesc(b, name, uint8_t(ir::DTypeToOnnx(t.value->type().dtype())), dims, placement, t.offset, t.bytes,
                                             t.synthetic, t.init_offset, code, live ? t.live_first : 0, live ? t.live_last : 0,
                                             live ? t.inplace_of : -1));
  }
  // A plan for the GPU holds only steps with CUDA kernels: list every one without, at once.
  if (options_.target == "cuda") {
    std::string missing;
    for (const Step& s : steps_)
      if (s.node && !rt::HasCudaKernel(s.kernel)) missing += (missing.empty() ? "" : ", ") + s.kernel + " '" + s.node->name() + "'";
    if (!missing.empty()) return Unimplemented("the CUDA backend has no kernel for: " + missing);
  } else if (options_.target != "cpu") {
    return InvalidArgument("unknown target '" + options_.target + "' (cpu or cuda)");
  }
  std::vector<flatbuffers::Offset<plan::Program>> programs;
  for (size_t p = 0; p < programs_.size(); ++p) {
    std::vector<flatbuffers::Offset<plan::Step>> steps;
    for (size_t i : programs_[p].steps) steps.push_back(WriteStep(b, steps_[i]));
    // Model outputs that are sequences or optionals decided at run time (entry programs only).
    flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<plan::Container>>> containers;
    if (!programs_[p].body && !programs_[p].derives_state) {
      std::vector<std::string> names;
      for (int id : programs_[p].outputs) names.push_back(tensors_[size_t(id)].value->name());
      PRECIS_ASSIGN_OR_RETURN(containers, WriteContainers(b, model_.output_containers, programs_[p].name, programs_[p].outputs, names));
    }
    programs.push_back(plan::CreateProgram(b, b.CreateString(programs_[p].name), b.CreateVector(steps), b.CreateVector(programs_[p].inputs),
                                           b.CreateVector(programs_[p].outputs), programs_[p].body, programs_[p].derives_state, containers));
  }
  flatbuffers::Offset<flatbuffers::String> report_json, report_text;
  if (!options_.report_json.empty()) report_json = b.CreateString(options_.report_json);
  if (!options_.report_text.empty()) report_text = b.CreateString(options_.report_text);
  flatbuffers::Offset<flatbuffers::Vector<uint8_t>> source_model;
  flatbuffers::Offset<flatbuffers::String> training_config;
  if (!options_.source_model.empty()) source_model = b.CreateVector(options_.source_model);
  if (!options_.training_config.empty()) training_config = b.CreateString(options_.training_config);
  auto module_table = WriteModules(b, options_.modules);
  flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<flatbuffers::String>>> symbol_table;
  flatbuffers::Offset<flatbuffers::Vector<int64_t>> symbol_min, symbol_max, dim_atoms;
  flatbuffers::Offset<flatbuffers::Vector<int64_t>> data_symbol_table, data_symbol_bounds;
  if (!data_dims_.empty()) {
    std::vector<int64_t> triples, bounds;
    for (const DataDimSource& d : data_dims_) {
      triples.insert(triples.end(), {coder_.SymbolIndex(d.symbol), int64_t(d.value), int64_t(d.axis)});
      coder_.Encode(d.bound, bounds);  // before dim_atoms is written: it may add atoms
    }
    data_symbol_table = b.CreateVector(triples);
    data_symbol_bounds = b.CreateVector(bounds);
  }
  flatbuffers::Offset<flatbuffers::Vector<int64_t>> iteration_symbol_table, iteration_symbol_bounds;
  if (!iteration_symbols_.empty()) {
    std::vector<int64_t> pairs, bounds;
    for (const IterationSource& it : iteration_symbols_) {
      pairs.insert(pairs.end(), {coder_.SymbolIndex(it.symbol), int64_t(it.program)});
      coder_.Encode(it.bound, bounds);  // before dim_atoms is written: it may add atoms
    }
    iteration_symbol_table = b.CreateVector(pairs);
    iteration_symbol_bounds = b.CreateVector(bounds);
  }
  if (!coder_.atom_code().empty()) dim_atoms = b.CreateVector(coder_.atom_code());
  if (!coder_.symbols().empty()) symbol_table = b.CreateVectorOfStrings(result_.symbols);
  flatbuffers::Offset<flatbuffers::Vector<int64_t>> value_symbol_table, value_symbol_scales;
  if (!value_symbols_.empty()) {
    std::vector<int64_t> triples;
    for (const ValueSymbolSource& v : value_symbols_)
      triples.insert(triples.end(), {coder_.SymbolIndex(v.symbol), int64_t(v.tensor), v.element});
    value_symbol_table = b.CreateVector(triples);
    std::vector<int64_t> scales;
    for (const ValueSymbolSource& v : value_symbols_) scales.push_back(v.scale);
    if (std::any_of(scales.begin(), scales.end(), [](int64_t m) { return m != 0; })) value_symbol_scales = b.CreateVector(scales);
  }
  flatbuffers::Offset<flatbuffers::Vector<int64_t>> expr_symbol_table;
  flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<flatbuffers::String>>> expr_symbol_code;
  if (!expr_symbols_.empty()) {
    std::vector<int64_t> index;
    std::vector<std::string> code;
    for (const ExprSymbolSource& e : expr_symbols_) {
      index.push_back(coder_.SymbolIndex(e.symbol));
      code.push_back(e.code);
    }
    expr_symbol_table = b.CreateVector(index);
    expr_symbol_code = b.CreateVectorOfStrings(code);
  }
  if (!options_.dim_bounds.empty()) {
    std::vector<int64_t> lo, hi;
    for (const std::string& s : coder_.symbols()) {
      auto it = options_.dim_bounds.find(s);
      lo.push_back(it == options_.dim_bounds.end() ? 0 : it->second.first);
      hi.push_back(it == options_.dim_bounds.end() ? -1 : it->second.second);  // -1: no upper bound
    }
    symbol_min = b.CreateVector(lo);
    symbol_max = b.CreateVector(hi);
  }
  plan::PlanBuilder root(b);
  auto target = b.CreateString(options_.target);
  auto precision = b.CreateString(options_.precision);
  auto producer = b.CreateString("precis 0.1");
  auto tensor_table = b.CreateVector(tensors);
  auto program_table = b.CreateVector(programs);
  root.add_target(target);
  root.add_precision(precision);
  root.add_source_hash(options_.source_hash);
  root.add_producer(producer);
  root.add_tensors(tensor_table);
  root.add_arena_bytes(result_.arena_bytes);
  root.add_arena_lower_bound(result_.arena_lower_bound);
  if (!options_.report_json.empty()) root.add_report_json(report_json);
  if (!options_.report_text.empty()) root.add_report_text(report_text);
  root.add_programs(program_table);
  root.add_state_bytes(state_size_);
  if (!options_.source_model.empty()) root.add_source_model(source_model);
  if (!options_.training_config.empty()) root.add_training_config(training_config);
  if (!options_.modules.empty()) root.add_modules(module_table);
  if (!coder_.symbols().empty()) root.add_symbols(symbol_table);
  if (!coder_.atom_code().empty()) root.add_dim_atoms(dim_atoms);
  if (!value_symbols_.empty()) root.add_value_symbols(value_symbol_table);
  if (!value_symbol_scales.IsNull()) root.add_value_symbol_scale(value_symbol_scales);
  if (!expr_symbols_.empty()) {
    root.add_expr_symbols(expr_symbol_table);
    root.add_expr_symbol_code(expr_symbol_code);
  }
  if (!data_dims_.empty()) {
    root.add_data_symbols(data_symbol_table);
    root.add_data_symbol_bounds(data_symbol_bounds);
  }
  if (!iteration_symbols_.empty()) {
    root.add_iteration_symbols(iteration_symbol_table);
    root.add_iteration_symbol_bounds(iteration_symbol_bounds);
  }
  if (!options_.dim_bounds.empty()) {
    root.add_symbol_min(symbol_min);
    root.add_symbol_max(symbol_max);
  }
  plan::FinishPlanBuffer(b, root.Finish());

  result_.bytes = PlanFileBytes(b, constants_size_, [&](uint8_t* blob) {
    for (const auto& t : tensors_) {
      if (!t.bytes || t.synthetic) continue;
      if (t.kind == Kind::kConstant) std::memcpy(blob + t.offset, t.value->data()->buffer().data(), t.bytes);
      if (t.kind == Kind::kState && !t.zero_init) std::memcpy(blob + t.init_offset, t.value->data()->buffer().data(), t.bytes);
    }
  });
  result_.steps = steps_.size();
  return std::move(result_);
}

}  // namespace

StatusOr<EmittedPlan> EmitPrograms(const ir::Model& model, const std::vector<ProgramSource>& programs, const EmitOptions& options) {
  return Emitter(model, programs, options).Run();
}

StatusOr<EmittedPlan> EmitPlan(const ir::Model& model, const EmitOptions& options) {
  std::vector<ProgramSource> programs(1);
  programs[0].graph = model.graph.get();
  return EmitPrograms(model, programs, options);
}

}  // namespace precis::emit
