// Session::Impl for dynamic plans (plan.fbs Plan.symbols; docs/dynamic-shapes.md): the symbols,
// each tensor's symbolic dims and floor atoms, inputs that bind the symbols, and the arena
// planned and the backend reshaped for each new binding.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "runtime/base/half.h"
#include "runtime/base/value_expr.h"
#include "runtime/exec/session_impl.h"
#include "runtime/plan/memory_plan.h"

namespace precis {
namespace {

// One element of a float, int32 or int64 input as a double (values that decide shapes).
double ElementValue(DataType dtype, const uint8_t* at) {
  switch (dtype) {
    case DataType::kF64: { double x; std::memcpy(&x, at, 8); return x; }
    case DataType::kF32: { float x; std::memcpy(&x, at, 4); return x; }
    case DataType::kF16: { uint16_t x; std::memcpy(&x, at, 2); return HalfToFloat(x); }
    case DataType::kBF16: { uint16_t x; std::memcpy(&x, at, 2); return Bf16ToFloat(x); }
    case DataType::kI32: { int32_t x; std::memcpy(&x, at, 4); return x; }
    default: { int64_t x; std::memcpy(&x, at, 8); return double(x); }
  }
}

}  // namespace

// A dynamic plan's symbols: named, distinct.
Status Session::Impl::LoadSymbols() {
  const plan::Plan* p = view.meta;
  dynamic = p->symbols() && p->symbols()->size() > 0;
  if (!dynamic) return Status::Ok();
  if (p->symbols()->size() > 64) return InvalidArgument("plan has more than 64 symbolic dims");
  for (const flatbuffers::String* name : *p->symbols()) {
    if (!name || name->size() == 0) return InvalidArgument("plan has a symbolic dim without a name");
    if (std::find(symbols.begin(), symbols.end(), name->str()) != symbols.end()) return InvalidArgument("plan names symbolic dim '" + name->str() + "' twice");
    symbols.push_back(name->str());
  }
  sym_min.assign(symbols.size(), 0);
  sym_max.assign(symbols.size(), -1);
  if (p->symbol_min() || p->symbol_max()) {
    if (!p->symbol_min() || !p->symbol_max() || p->symbol_min()->size() != symbols.size() || p->symbol_max()->size() != symbols.size())
      return InvalidArgument("plan symbol bounds do not match its symbols");
    for (size_t k = 0; k < symbols.size(); ++k) {
      sym_min[k] = p->symbol_min()->Get(flatbuffers::uoffset_t(k));
      sym_max[k] = p->symbol_max()->Get(flatbuffers::uoffset_t(k));
      if (sym_min[k] < 0 || sym_max[k] < -1 || sym_max[k] > (int64_t(1) << 40) || (sym_max[k] >= 0 && sym_min[k] > sym_max[k]))
        return InvalidArgument("plan symbol '" + symbols[k] + "' has bad bounds");
    }
  }
  if (const flatbuffers::Vector<int64_t>* code = p->dim_atoms()) {
    for (size_t pos = 0; pos < code->size();) {
      if (atoms.size() >= 1024) return InvalidArgument("plan has more than 1024 atoms in its dims");
      Atom a;
      a.k = code->Get(flatbuffers::uoffset_t(pos++));
      std::string p_text, q_text;
      if (a.k < -5 || a.k == 0 || !DecodePoly(code, pos, atoms.size(), a.terms, p_text) ||
          (a.k <= -3 && !DecodePoly(code, pos, atoms.size(), a.divisor, q_text)))
        return InvalidArgument("plan has a bad atom in its dims");
      static const char* const kNames[] = {"eq(", "neg(", "div(", "min(", "max("};
      a.text = a.k >= 1 ? "(" + p_text + ")/" + std::to_string(a.k)
                        : kNames[-1 - a.k] + p_text + (a.k <= -3 ? "," + q_text : std::string()) + ")";
      atoms.push_back(std::move(a));
    }
  }
  bound.assign(symbols.size(), kUnbound);
  pending.assign(symbols.size(), kUnbound);
  pending_from.assign(symbols.size(), "");
  return Status::Ok();
}

// Symbols bound by input values (Plan.value_symbols): each an element of an int64, int32 or bool
// input (or floor(M * element) of a float input) of an entry program with static dims; named
// "input[element]" in messages.
Status Session::Impl::LoadValueSymbols() {
  const flatbuffers::Vector<int64_t>* code = view.meta->value_symbols();
  if (!code || code->size() == 0) return Status::Ok();
  if (!dynamic || code->size() % 3 != 0) return InvalidArgument("plan has bad value symbols");
  const flatbuffers::Vector<int64_t>* scales = view.meta->value_symbol_scale();
  if (scales && scales->size() != code->size() / 3) return InvalidArgument("plan has bad value symbol scales");
  std::vector<bool> seen(symbols.size(), false);
  for (size_t k = 0; k < code->size(); k += 3) {
    ValueSymbol v;
    int64_t sym = code->Get(flatbuffers::uoffset_t(k)), tensor = code->Get(flatbuffers::uoffset_t(k + 1));
    v.element = code->Get(flatbuffers::uoffset_t(k + 2));
    if (sym < 0 || sym >= int64_t(symbols.size()) || seen[size_t(sym)] || tensor < 0 || tensor >= int64_t(tensors.size()))
      return InvalidArgument("plan has a bad value symbol");
    const rt::Tensor& t = tensors[size_t(tensor)];
    v.scale = scales ? scales->Get(flatbuffers::uoffset_t(k / 3)) : 0;
    bool is_float = t.dtype == DataType::kF32 || t.dtype == DataType::kF64 || t.dtype == DataType::kF16 || t.dtype == DataType::kBF16;
    if (v.scale < 0 || v.scale > (int64_t(1) << 40) || (v.scale > 0) != is_float)
      return InvalidArgument("plan symbol '" + symbols[size_t(sym)] + "' has a bad value scale");
    bool entry_input = false;
    for (size_t p = 0; p < loaded.programs.size() && !entry_input; ++p)
      if (std::find(entry_names.begin(), entry_names.end(), program_names[p]) != entry_names.end())
        entry_input = std::find(loaded.programs[p].inputs.begin(), loaded.programs[p].inputs.end(), int(tensor)) != loaded.programs[p].inputs.end();
    if (!entry_input || (t.dtype != DataType::kI64 && t.dtype != DataType::kI32 && t.dtype != DataType::kBool && !is_float) || !sym_dims[size_t(tensor)].empty() || v.element < 0 ||
        v.element >= t.numel)
      return InvalidArgument("plan symbol '" + symbols[size_t(sym)] + "' reads a value no input of static shape holds");
    seen[size_t(sym)] = true;
    v.symbol = size_t(sym);
    v.tensor = int(tensor);
    value_symbols.push_back(v);
  }
  return Status::Ok();
}

// Symbols computed from input values by float arithmetic (Plan.expr_symbols: a Range over float
// bounds, the trip count of Range's expanded form): each reads elements of entry-program inputs
// with static dims and is evaluated before each run (EvaluateExprSymbols).
Status Session::Impl::LoadExprSymbols() {
  const flatbuffers::Vector<int64_t>* index = view.meta->expr_symbols();
  const auto* code = view.meta->expr_symbol_code();
  if (!index && !code) return Status::Ok();
  if (!dynamic || !index || !code || index->size() != code->size()) return InvalidArgument("plan has bad value expression symbols");
  for (flatbuffers::uoffset_t k = 0; k < index->size(); ++k) {
    ExprSymbol e;
    int64_t sym = index->Get(k);
    const flatbuffers::String* text = code->Get(k);
    if (sym < 0 || sym >= int64_t(symbols.size()) || !text) return InvalidArgument("plan has a bad value expression symbol");
    for (const ValueSymbol& v : value_symbols)
      if (v.symbol == size_t(sym)) return InvalidArgument("plan symbol '" + symbols[size_t(sym)] + "' is both a value and a value expression");
    for (const ExprSymbol& other : expr_symbols)
      if (other.symbol == size_t(sym)) return InvalidArgument("plan symbol '" + symbols[size_t(sym)] + "' has two value expressions");
    for (const rt::ProgramSteps& p : loaded.programs)
      for (int id : p.body ? std::vector<int>{} : p.inputs)
        for (const SymDim& sd : sym_dims[size_t(id)])
          for (const Term& t : sd.terms)
            if (std::find(t.factors.begin(), t.factors.end(), int(sym)) != t.factors.end())
              return InvalidArgument("plan symbol '" + symbols[size_t(sym)] + "' is both an input dim and a value expression");
    e.symbol = size_t(sym);
    e.expr = value_expr::Expression::Parse(text->str());
    if (!e.expr) return InvalidArgument("plan symbol '" + symbols[size_t(sym)] + "' has a bad value expression");
    for (const value_expr::Leaf& leaf : e.expr->leaves()) {
      bool entry_input = false;
      if (leaf.kind == 't' && leaf.index >= 0 && leaf.index < int64_t(tensors.size()))
        for (size_t p = 0; p < loaded.programs.size() && !entry_input; ++p)
          if (std::find(entry_names.begin(), entry_names.end(), program_names[p]) != entry_names.end())
            entry_input = std::find(loaded.programs[p].inputs.begin(), loaded.programs[p].inputs.end(), int(leaf.index)) != loaded.programs[p].inputs.end();
      const rt::Tensor* t = entry_input ? &tensors[size_t(leaf.index)] : nullptr;
      bool numeric = t && (t->dtype == DataType::kF32 || t->dtype == DataType::kF64 || t->dtype == DataType::kF16 || t->dtype == DataType::kBF16 ||
                           t->dtype == DataType::kI64 || t->dtype == DataType::kI32);
      if (!numeric || !sym_dims[size_t(leaf.index)].empty() || leaf.element < 0 || leaf.element >= t->numel)
        return InvalidArgument("plan symbol '" + symbols[size_t(sym)] + "' reads a value no input of static shape holds");
      if (std::find(e.tensors.begin(), e.tensors.end(), int(leaf.index)) == e.tensors.end()) e.tensors.push_back(int(leaf.index));
    }
    expr_symbols.push_back(std::move(e));
  }
  return Status::Ok();
}

Status Session::Impl::EvaluateExprSymbols(std::vector<int64_t>& b) const {
  for (const ExprSymbol& e : expr_symbols) {
    bool ready = true;
    for (int id : e.tensors) {
      auto it = staged.find(id);
      ready &= it != staged.end() && it->second.set;
    }
    if (!ready) continue;  // PrepareDynamicRun names the input that is not set
    auto value = [&](const value_expr::Leaf& leaf) -> double {
      const rt::Tensor& t = tensors[size_t(leaf.index)];
      return ElementValue(t.dtype, staged.at(int(leaf.index)).bytes.get() + leaf.element * int64_t(DataTypeSize(t.dtype)));
    };
    PRECIS_ASSIGN_OR_RETURN(int64_t v, e.expr->Evaluate(value, symbols[e.symbol]));
    b[e.symbol] = v;
  }
  return Status::Ok();
}

// One polynomial of a dim code (plan.fbs TensorDesc.dim_code) from `code` at `pos`: its terms
// and its text. Factors are symbols (f >= 0) or the first `atoms` floor atoms (f < 0).
bool Session::Impl::DecodePoly(const flatbuffers::Vector<int64_t>* code, size_t& pos, size_t atoms_known, std::vector<Term>& out,
                               std::string& text) const {
  size_t size = code ? code->size() : 0;
  auto next = [&](int64_t& v) {
    if (pos >= size) return false;
    v = code->Get(flatbuffers::uoffset_t(pos++));
    return true;
  };
  int64_t terms = 0;
  if (!next(terms) || terms < 0 || terms > 4096) return false;
  if (terms == 0) text = "0";  // an operand of an atom (max(P,0)); dims are never 0 terms
  for (int64_t n = 0; n < terms; ++n) {
    Term term;
    int64_t factors = 0;
    if (!next(term.coeff) || !next(factors) || factors < 0 || factors > 64) return false;
    std::string product;
    for (int64_t f = 0; f < factors; ++f) {
      int64_t sym = 0;
      if (!next(sym) || sym >= int64_t(symbols.size()) || sym < -int64_t(atoms_known)) return false;
      term.factors.push_back(int(sym));
      product += (f ? "*" : "") + (sym >= 0 ? symbols[size_t(sym)] : atoms[size_t(-1 - sym)].text);
    }
    std::string c = std::to_string(term.coeff);
    // Texts are for messages: long ones are cut (atoms nest, a hostile plan could double them).
    out.push_back(std::move(term));
    if (text.size() > kMaxDimText) continue;
    text += (n && c[0] != '-' ? "+" : "") + (factors == 0 ? c : c == "1" ? product : c == "-1" ? "-" + product : c + "*" + product);
    if (text.size() > kMaxDimText) text = text.substr(0, kMaxDimText) + "...";
  }
  return true;
}

// A polynomial's value for binding `b` (atom values in `atom_values`); false on overflow.
bool Session::Impl::EvaluatePoly(const std::vector<Term>& terms, const std::vector<int64_t>& b, const std::vector<int64_t>& atom_values,
                                 int64_t& v) const {
  v = 0;
  bool overflow = false;
  for (const Term& term : terms) {
    int64_t x = term.coeff;
    for (int f : term.factors) overflow |= __builtin_mul_overflow(x, f >= 0 ? b[size_t(f)] : atom_values[size_t(-1 - f)], &x);
    overflow |= __builtin_add_overflow(v, x, &v);
  }
  return !overflow;
}

// Tensor i of a dynamic plan: its symbolic dims (the -1 entries of its dims, decoded from
// dim_code) and, for arena tensors, the live range the runtime plans its arena from.
Status Session::Impl::LoadSymbolicDims(size_t i, const plan::TensorDesc* d) {
  const rt::Tensor& t = tensors[i];
  std::vector<SymDim>& out = sym_dims[i];
  const flatbuffers::Vector<int64_t>* code = d->dim_code();
  size_t pos = 0, size = code ? code->size() : 0;
  for (size_t k = 0; k < t.dims.size(); ++k) {
    if (t.dims[k] < -1 || t.dims[k] > (int64_t(1) << 40)) return InvalidArgument("plan tensor '" + t.name + "' has bad dims");
    if (t.dims[k] != -1) continue;
    SymDim sd;
    sd.index = k;
    if (!DecodePoly(code, pos, atoms.size(), sd.terms, sd.text)) return InvalidArgument("plan tensor '" + t.name + "' has a bad symbolic dim");
    out.push_back(std::move(sd));
  }
  if (pos != size) return InvalidArgument("plan tensor '" + t.name + "' has a bad symbolic dim");
  if (!out.empty() && (d->placement() != plan::Placement_Arena || d->bytes() != 0))
    return InvalidArgument("plan tensor '" + t.name + "' has symbolic dims but is not an arena tensor");
  live_first[i] = d->live_first();
  live_last[i] = d->live_last();
  inplace_of[i] = d->inplace_of();
  if (inplace_of[i] < -1 || inplace_of[i] >= int(tensors.size())) return InvalidArgument("plan tensor '" + t.name + "' has a bad in-place source");
  return Status::Ok();
}


std::string Session::Impl::Binding(const std::vector<int64_t>& values) const {
  std::string s;
  for (size_t k = 0; k < symbols.size(); ++k) s += (k ? ", " : "") + symbols[k] + "=" + (values[k] == kUnbound ? "?" : std::to_string(values[k]));
  return s;
}

// A new binding of a dynamic plan's symbols: every tensor's dims and byte size, the arena planned
// for them (the compiler's planner, over the live ranges the plan records), the operand overlap
// check, and the backend's kernels for the new shapes.
StatusOr<std::vector<int64_t>> Session::Impl::AtomValues(const std::vector<int64_t>& b) const {
  std::vector<int64_t> atom_values;
  for (const Atom& a : atoms) {
    int64_t v = 0, q = a.k;
    if (!EvaluatePoly(a.terms, b, atom_values, v) || (a.k <= -3 && !EvaluatePoly(a.divisor, b, atom_values, q)) || (a.k == -3 && q == -1 && v == INT64_MIN))
      return InvalidArgument("the dim " + a.text + " is out of range for " + Binding(b));
    if (a.k == -1) atom_values.push_back(v == 0);
    else if (a.k == -2) atom_values.push_back(v < 0);
    else if (a.k == -4) atom_values.push_back(std::min(v, q));
    else if (a.k == -5) atom_values.push_back(std::max(v, q));
    else atom_values.push_back(q == 0 ? 0 : v / q - (v % q != 0 && (v < 0) != (q < 0) ? 1 : 0));  // floor, also below 0
  }
  return atom_values;
}

// Every tensor's dims and byte size for binding `b`.
Status Session::Impl::SetDims(const std::vector<int64_t>& b, const std::vector<int64_t>& atom_values) {
  for (size_t i = 0; i < tensors.size(); ++i) {
    if (sym_dims[i].empty()) continue;
    rt::Tensor& t = tensors[i];
    for (const SymDim& d : sym_dims[i]) {
      int64_t v = 0;
      bool overflow = !EvaluatePoly(d.terms, b, atom_values, v);
      if (overflow || v < 0 || v > (int64_t(1) << 40))
        return InvalidArgument("tensor '" + t.name + "': dim " + std::to_string(d.index) + " (" + d.text + ") is " +
                               (overflow ? std::string("out of range") : std::to_string(v)) + " for " + Binding(b) +
                               ": the input shapes do not fit the model");
      t.dims[d.index] = v;
    }
    std::optional<int64_t> n = BoundedElements(t.dims);
    if (!n) return InvalidArgument("tensor '" + t.name + "' would hold more than 2^50 elements for " + Binding(b));
    t.numel = *n;
    t.bytes = size_t(*n) * DataTypeSize(t.dtype);
  }
  return Status::Ok();
}

Status Session::Impl::Rebind(const std::vector<int64_t>& b) {
  PRECIS_ASSIGN_OR_RETURN(std::vector<int64_t> atom_values, AtomValues(b));
  PRECIS_RETURN_IF_ERROR(SetDims(b, atom_values));
  // A bounded plan keeps the arena of its largest shape while every tensor fits its bytes there.
  bool fits = fixed_arena;
  for (size_t i = 0; fits && i < tensors.size(); ++i)
    fits = storage[i].placement != plan::Placement_Arena || tensors[i].bytes <= fixed_bytes[i];
  // (Tensors planned in place of each other at the maximum may differ in size at this binding:
  // the overlap check refuses the shared bytes, and the arena is planned for this binding.)
  if (fits && Place(fixed_offsets, fixed_arena_bytes).ok()) return PrepareBackend(b);
  std::vector<plan::PlannedTensor> planned;
  std::vector<size_t> ids;
  std::unordered_map<size_t, int> index;
  for (size_t i = 0; i < tensors.size(); ++i) {
    if (storage[i].placement != plan::Placement_Arena) continue;
    index[i] = int(planned.size());
    ids.push_back(i);
    planned.push_back({tensors[i].bytes, live_first[i], live_last[i], -1});
  }
  for (size_t k = 0; k < ids.size(); ++k)
    if (int src = inplace_of[ids[k]]; src >= 0 && index.count(size_t(src))) planned[k].inplace_of = index[size_t(src)];
  plan::MemoryPlan mp = plan::PlanMemory(planned);
  if (mp.arena_bytes > (size_t(1) << 40) || (options.max_arena_bytes && mp.arena_bytes > options.max_arena_bytes))
    return InvalidArgument("the plan would need " + std::to_string(mp.arena_bytes) + " bytes of arena for " + Binding(b) +
                           (options.max_arena_bytes ? ", more than SessionOptions::max_arena_bytes (" + std::to_string(options.max_arena_bytes) + ")"
                                                    : std::string(", more than 2^40")));
  std::vector<uint64_t> offsets(tensors.size(), 0);
  for (size_t k = 0; k < ids.size(); ++k) offsets[ids[k]] = mp.offsets[k];
  PRECIS_RETURN_IF_ERROR(Place(offsets, mp.arena_bytes));
  return PrepareBackend(b);
}

// Arena tensors at `offsets` (their dims already set for the new binding), operand overlaps
// checked.
Status Session::Impl::Place(const std::vector<uint64_t>& offsets, uint64_t arena_bytes) {
  for (size_t i = 0; i < tensors.size(); ++i)
    if (storage[i].placement == plan::Placement_Arena) {
      storage[i].offset = offsets[i];
      loaded.arena_offsets[i] = offsets[i];
    }
  loaded.arena_bytes = arena_bytes;
  for (const rt::ProgramSteps& prog : loaded.programs)
    for (size_t i = 0; i < prog.steps.size(); ++i) PRECIS_RETURN_IF_ERROR(CheckOverlaps(prog.kernels[i], prog.steps[i]));
  return Status::Ok();
}

// The backend prepared (the first time) or reshaped for binding `b`.
Status Session::Impl::PrepareBackend(const std::vector<int64_t>& b) {
  loaded.binding = b;
  if (!prepared) {
    PRECIS_RETURN_IF_ERROR(backend->Prepare(loaded));
    prepared = true;
    SetUpProfiles();
  } else {
    PRECIS_RETURN_IF_ERROR(backend->Reshape(loaded, b));
  }
  bound = b;
  return Status::Ok();
}

// An input of a dynamic plan: static dims as planned; a dim that is a symbol binds it (inputs
// set since the last Run must agree); the bytes wait in the session until Run.
Status Session::Impl::SetDynamicInput(int id, DataType dtype, const std::vector<int64_t>& dims, const void* data, size_t bytes) {
  const rt::Tensor& t = tensors[size_t(id)];
  const plan::TensorDesc* d = view.meta->tensors()->Get(flatbuffers::uoffset_t(id));
  std::vector<int64_t> pattern;
  if (d->dims()) pattern.assign(d->dims()->begin(), d->dims()->end());
  // The plan's shape as text ("[batch, seq, 16]"), built only for an error (SetInput runs per run).
  auto bad = [&](const std::string& why) {
    std::string expected = "[";
    for (size_t k = 0; k < pattern.size(); ++k) {
      std::string dim = std::to_string(pattern[k]);
      for (const SymDim& sd : sym_dims[size_t(id)])
        if (sd.index == k) dim = sd.text;
      expected += (k ? ", " : "") + dim;
    }
    expected += "]";
    return InvalidArgument("input '" + t.name + "' must have shape " + expected + ", got " + DimsToString(dims) + " (" + why + ")");
  };
  (void)dtype;
  if (dims.size() != pattern.size()) return bad("rank " + std::to_string(dims.size()));
  for (size_t k = 0; k < dims.size(); ++k) {
    if (dims[k] < 0 || dims[k] > (int64_t(1) << 40)) return bad("dim " + std::to_string(k) + " is out of range");
    if (pattern[k] != -1 && dims[k] != pattern[k]) return bad("dim " + std::to_string(k) + " is " + std::to_string(pattern[k]));
  }
  std::optional<int64_t> n = BoundedElements(dims);
  if (!n) return bad("too many elements");
  if (bytes != size_t(*n) * DataTypeSize(t.dtype))
    return InvalidArgument("input '" + t.name + "' of shape " + DimsToString(dims) + " needs " + std::to_string(size_t(*n) * DataTypeSize(t.dtype)) +
                           " bytes, got " + std::to_string(bytes));
  std::vector<std::pair<size_t, int64_t>> binds;
  for (const SymDim& sd : sym_dims[size_t(id)]) {
    if (sd.terms.size() != 1 || sd.terms[0].coeff != 1 || sd.terms[0].factors.size() != 1 || sd.terms[0].factors[0] < 0) continue;  // checked at Run
    size_t sym = size_t(sd.terms[0].factors[0]);
    int64_t v = dims[sd.index];
    if (v < sym_min[sym] || (sym_max[sym] >= 0 && v > sym_max[sym]))
      return bad(symbols[sym] + " = " + std::to_string(v) + " is outside the plan's bounds " + std::to_string(sym_min[sym]) + ".." +
                 (sym_max[sym] >= 0 ? std::to_string(sym_max[sym]) : std::string("")));
    for (const auto& [other, value] : binds)
      if (other == sym && value != v) return bad(symbols[sym] + " is both " + std::to_string(value) + " and " + std::to_string(v));
    if (pending[sym] != kUnbound && pending[sym] != v && pending_from[sym] != t.name)
      return InvalidArgument("input '" + t.name + "' gives " + symbols[sym] + " = " + std::to_string(v) + ", but input '" + pending_from[sym] +
                             "' gave " + symbols[sym] + " = " + std::to_string(pending[sym]) + " for the same run");
    binds.push_back({sym, v});
  }
  // Values that decide shapes: the elements this input gives its value symbols.
  for (const ValueSymbol& vs : value_symbols) {
    if (vs.tensor != id) continue;
    int64_t v = 0;
    const uint8_t* at = static_cast<const uint8_t*>(data) + vs.element * int64_t(DataTypeSize(t.dtype));
    if (t.dtype == DataType::kI64) {
      std::memcpy(&v, at, 8);
    } else if (t.dtype == DataType::kI32) {
      int32_t w = 0;
      std::memcpy(&w, at, 4);
      v = w;
    } else if (t.dtype == DataType::kBool) {
      v = *at != 0;  // a Loop's initial condition
    } else {
      // floor(M * value) of a float element, in double (a Resize scale times the input dim).
      double m = std::floor(double(vs.scale) * ElementValue(t.dtype, at));
      if (std::isnan(m))
        return InvalidArgument("input '" + t.name + "': element " + std::to_string(vs.element) + " is NaN and decides a shape");
      v = int64_t(std::clamp(m, -double(int64_t(1) << 50), double(int64_t(1) << 50)));
    }
    // Values decide dims: beyond 2^50 no dim fits, so larger values bind as +-2^50 (Slice's
    // INT64_MAX "to the end" clamps to any dim alike; the kernels read the values themselves).
    v = std::clamp(v, -(int64_t(1) << 50), int64_t(1) << 50);
    binds.push_back({vs.symbol, v});
  }
  for (const auto& [sym, v] : binds) {
    pending[sym] = v;
    pending_from[sym] = t.name;
  }
  StagedInput& st = staged[id];
  if (bytes > st.capacity) {
    st.bytes = AllocateAligned(bytes);
    if (!st.bytes) return Internal("cannot allocate " + std::to_string(bytes) + " bytes for input '" + t.name + "'");
    st.capacity = bytes;
  }
  if (bytes) std::memcpy(st.bytes.get(), data, bytes);
  st.dims = dims;
  st.set = true;
  return Status::Ok();
}

// Before a run of a dynamic plan: the binding the inputs give (symbols they did not set keep
// their values), prepared anew when it changed, and every input of the program set for it.
Status Session::Impl::PrepareDynamicRun(size_t program) {
  std::vector<int64_t> b = bound;
  for (size_t k = 0; k < symbols.size(); ++k)
    if (pending[k] != kUnbound) b[k] = pending[k];
  PRECIS_RETURN_IF_ERROR(EvaluateExprSymbols(b));
  // Data dims and iteration numbers start each run at their bounds (the arena is planned for
  // them); the steps that compute them bind the actual sizes (BindDataDims), the Loops their
  // iterations (BindIteration).
  if (!data_symbols.empty() || !iteration_symbols.empty()) {
    std::vector<int64_t> start = b;
    for (const DataSymbol& d : data_symbols) start[d.symbol] = 0;  // bounds never read them (LoadDataSymbols)
    for (const IterationSymbol& it : iteration_symbols) start[it.symbol] = 0;
    bool inputs_bound = true;
    for (size_t k = 0; k < symbols.size(); ++k) inputs_bound &= start[k] != kUnbound;
    if (inputs_bound) {
      PRECIS_ASSIGN_OR_RETURN(std::vector<int64_t> atom_values, AtomValues(start));
      auto at_bound = [&](const std::vector<Term>& poly, const std::string& text, size_t symbol) -> Status {
        int64_t v = 0;
        if (!EvaluatePoly(poly, start, atom_values, v) || v < 0 || v > (int64_t(1) << 40))
          return InvalidArgument("the bound of " + text + " is out of range for " + Binding(start));
        b[symbol] = v;
        return Status::Ok();
      };
      for (const DataSymbol& d : data_symbols) PRECIS_RETURN_IF_ERROR(at_bound(d.bound, d.text, d.symbol));
      for (const IterationSymbol& it : iteration_symbols) PRECIS_RETURN_IF_ERROR(at_bound(it.bound, it.text, it.symbol));
    }
  }
  for (size_t k = 0; k < symbols.size(); ++k)
    if (b[k] == kUnbound) return InvalidArgument("symbolic dim '" + symbols[k] + "' has no value yet: set the inputs (their shapes bind " + Binding(b) + ")");
  if (b != bound) {
    shape_ok = false;  // until the new shape is in place: tensors hold a part of it
    Status s = Rebind(b);
    if (!s.ok()) {
      bound.assign(symbols.size(), kUnbound);
      std::fill(pending.begin(), pending.end(), kUnbound);  // the failed shape binds nothing: inputs start afresh
      return s;
    }
    shape_ok = true;
  }
  // The bytes each tensor has at the bounds: the data dims' steps and the Loops' iterations must
  // keep every tensor within.
  if (!data_symbols.empty() || !iteration_symbols.empty()) {
    run_bound = bound;
    run_bytes.resize(tensors.size());
    for (size_t i = 0; i < tensors.size(); ++i) run_bytes[i] = tensors[i].bytes;
  }
  std::fill(pending.begin(), pending.end(), kUnbound);
  for (int id : loaded.programs[program].inputs) {
    rt::Tensor& t = tensors[size_t(id)];
    auto it = staged.find(id);
    if (it == staged.end() || !it->second.set) return InvalidArgument("input '" + t.name + "' has not been set");
    if (it->second.dims != t.dims)
      return InvalidArgument("input '" + t.name + "' was set with shape " + DimsToString(it->second.dims) + ", but this run has " + Binding(bound) +
                             ", which gives it " + DimsToString(t.dims) + ": set it again");
    t.data = it->second.bytes.get();
  }
  return Status::Ok();
}

// Whether a polynomial reads one of the symbols marked in `marked`, directly or through an atom
// (atoms only read earlier atoms).
std::function<bool(const std::vector<Session::Impl::Term>&)> Session::Impl::PolyReads(const std::vector<bool>& marked) const {
  auto atom_reads = std::make_shared<std::vector<bool>>();
  auto reads = [marked, atom_reads](const std::vector<Term>& terms) {
    for (const Term& t : terms)
      for (int f : t.factors)
        if (f >= 0 ? bool(marked[size_t(f)]) : bool((*atom_reads)[size_t(-1 - f)])) return true;
    return false;
  };
  for (const Atom& a : atoms) atom_reads->push_back(reads(a.terms) || reads(a.divisor));
  return reads;
}

// Data dims (plan.fbs Plan.data_symbols): symbol, the tensor and axis that hold the size once
// its step ran, and an upper bound over symbols the inputs bind. The step must be an entry
// program's; the bound may not read another data dim, directly or through an atom.
Status Session::Impl::LoadDataSymbols() {
  const flatbuffers::Vector<int64_t>* code = view.meta->data_symbols();
  const flatbuffers::Vector<int64_t>* bounds = view.meta->data_symbol_bounds();
  if (!code || code->size() == 0) {
    // A step that would shrink its output without a data symbol to rebind the rest: refused.
    for (const rt::ProgramSteps& p : loaded.programs)
      for (const rt::KernelArgs& a : p.steps)
        if (a.attrs.Has("data_dim_axis")) return InvalidArgument(a.node + ": has data_dim_axis, but the plan lists no data symbol it binds");
    return Status::Ok();
  }
  if (!dynamic || code->size() % 3 != 0 || !bounds) return InvalidArgument("plan has bad data symbols");
  std::vector<bool> is_data(symbols.size(), false);
  size_t pos = 0;
  for (size_t k = 0; k < code->size(); k += 3) {
    DataSymbol d;
    int64_t sym = code->Get(flatbuffers::uoffset_t(k)), tensor = code->Get(flatbuffers::uoffset_t(k + 1)), axis = code->Get(flatbuffers::uoffset_t(k + 2));
    if (sym < 0 || sym >= int64_t(symbols.size()) || is_data[size_t(sym)] || tensor < 0 || tensor >= int64_t(tensors.size()) || axis < 0 ||
        axis >= int64_t(tensors[size_t(tensor)].dims.size()))
      return InvalidArgument("plan has a bad data symbol");
    for (const ValueSymbol& v : value_symbols)
      if (v.symbol == size_t(sym)) return InvalidArgument("plan symbol '" + symbols[size_t(sym)] + "' is both a value and a data dim");
    bool exact = false;
    for (const SymDim& sd : sym_dims[size_t(tensor)])
      exact |= sd.index == size_t(axis) && sd.terms.size() == 1 && sd.terms[0].coeff == 1 && sd.terms[0].factors == std::vector<int>{int(sym)};
    if (!exact) return InvalidArgument("plan data symbol '" + symbols[size_t(sym)] + "' is not the dim its tensor holds");
    for (const rt::ProgramSteps& p : loaded.programs)
      for (int id : p.body ? std::vector<int>{} : p.inputs)
        for (const SymDim& sd : sym_dims[size_t(id)])
          for (const Term& t : sd.terms)
            if (std::find(t.factors.begin(), t.factors.end(), int(sym)) != t.factors.end())
              return InvalidArgument("plan symbol '" + symbols[size_t(sym)] + "' is both an input dim and a data dim");
    std::string text;
    if (!DecodePoly(bounds, pos, atoms.size(), d.bound, text)) return InvalidArgument("plan has a bad data symbol bound");
    d.symbol = size_t(sym);
    d.tensor = int(tensor);
    d.axis = size_t(axis);
    d.text = symbols[size_t(sym)];
    if (sym_min[size_t(sym)] > 0 || sym_max[size_t(sym)] >= 0) return InvalidArgument("plan data symbol '" + symbols[size_t(sym)] + "' has bounds");
    // Exactly one step writes the tensor: an entry program's, run by the CPU kernel itself (no
    // widening or layout wrapper, whose copy of the output would take the size), with its
    // data_dim_axis attribute saying this axis.
    int writers = 0;
    for (size_t p = 0; p < loaded.programs.size(); ++p)
      for (size_t s = 0; s < loaded.programs[p].steps.size(); ++s)
        for (const rt::Tensor* out : loaded.programs[p].steps[s].outputs)
          if (out == &tensors[size_t(tensor)]) {
            ++writers;
            d.program = p, d.step = s;
          }
    const rt::ProgramSteps& prog = loaded.programs[d.program];
    if (writers != 1 || prog.body || prog.widen[d.step] != 0 || !prog.layouts[d.step].empty() ||
        prog.steps[d.step].attrs.Int("data_dim_axis", -1) != int64_t(d.axis))
      return InvalidArgument("plan data symbol '" + symbols[size_t(sym)] + "' is not bound by exactly one entry-program step with data_dim_axis " +
                             std::to_string(d.axis));
    loaded.programs[d.program].binds_dims[d.step] = 1;
    is_data[size_t(sym)] = true;
    data_symbols.push_back(std::move(d));
  }
  if (pos != bounds->size()) return InvalidArgument("plan has a bad data symbol bound");
  // Bounds read no data dim, directly or through an atom.
  auto reads_data = PolyReads(is_data);
  for (const DataSymbol& d : data_symbols)
    if (reads_data(d.bound)) return InvalidArgument("plan data symbol '" + d.text + "' has a bound that reads a data dim");
  loaded.bind_data_dims = [this](size_t program, size_t step) { return BindDataDims(program, step); };
  return Status::Ok();
}

// After a step that computes data dims: their sizes (the step wrote them into its output's dims),
// every tensor's dims for them, the arena as planned for the bounds (each tensor must fit the
// bytes it had there), and the backend's kernels for the new binding.
Status Session::Impl::BindDataDims(size_t program, size_t step) {
  std::vector<int64_t> b = bound;
  bool changed = false;
  for (const DataSymbol& d : data_symbols) {
    if (d.program != program || d.step != step) continue;
    int64_t v = tensors[size_t(d.tensor)].dims[d.axis];
    if (v < 0 || v > b[d.symbol])
      return Internal(loaded.programs[program].steps[step].node + " gives " + d.text + " = " + std::to_string(v) + ", beyond its bound " +
                      std::to_string(b[d.symbol]));
    changed |= v != b[d.symbol];
    b[d.symbol] = v;
  }
  if (!changed) return Status::Ok();
  shape_ok = false;
  Status s = [&]() -> Status {
    PRECIS_RETURN_IF_ERROR(SetDimsWithinRun(b));
    PRECIS_RETURN_IF_ERROR(backend->Reshape(loaded, b));
    // Reshape placed every arena tensor again: the inputs read the session's bytes, as at the start.
    for (int id : loaded.programs[program].inputs)
      if (auto it = staged.find(id); it != staged.end()) tensors[size_t(id)].data = it->second.bytes.get();
    return Status::Ok();
  }();
  if (!s.ok()) {
    // The tensors hold a part of the new sizes: the next run binds everything anew (inputs too).
    bound.assign(symbols.size(), kUnbound);
    std::fill(pending.begin(), pending.end(), kUnbound);
    return s;
  }
  bound = b;
  shape_ok = true;
  return Status::Ok();
}

Status Session::Impl::SetDimsWithinRun(const std::vector<int64_t>& b) {
  PRECIS_ASSIGN_OR_RETURN(std::vector<int64_t> atom_values, AtomValues(b));
  PRECIS_RETURN_IF_ERROR(SetDims(b, atom_values));
  for (size_t i = 0; i < tensors.size(); ++i)
    if (storage[i].placement == plan::Placement_Arena && (i >= run_bytes.size() || tensors[i].bytes > run_bytes[i]))
      return InvalidArgument("tensor '" + tensors[i].name + "' needs " + std::to_string(tensors[i].bytes) + " bytes for " + Binding(b) +
                             ", more than the " + std::to_string(i < run_bytes.size() ? run_bytes[i] : 0) +
                             " planned for the bounds of its data-dependent sizes and iteration numbers");
  for (const rt::ProgramSteps& prog : loaded.programs)  // tensors planned in place of each other may now differ in size
    for (size_t k = 0; k < prog.steps.size(); ++k) PRECIS_RETURN_IF_ERROR(CheckOverlaps(prog.kernels[k], prog.steps[k]));
  loaded.binding = b;
  return Status::Ok();
}

// Iteration numbers that decide shapes (plan.fbs Plan.iteration_symbols): symbol, the Loop body
// program, and the largest number over symbols the inputs bind. The symbol is no other kind.
Status Session::Impl::LoadIterationSymbols() {
  const flatbuffers::Vector<int64_t>* code = view.meta->iteration_symbols();
  const flatbuffers::Vector<int64_t>* bounds = view.meta->iteration_symbol_bounds();
  if (!code || code->size() == 0) {
    if (bounds && bounds->size()) return InvalidArgument("plan has iteration symbol bounds without iteration symbols");
    return Status::Ok();
  }
  if (!dynamic || code->size() % 2 != 0 || !bounds) return InvalidArgument("plan has bad iteration symbols");
  std::vector<bool> taken(symbols.size(), false);
  for (const ValueSymbol& v : value_symbols) taken[v.symbol] = true;
  for (const ExprSymbol& e : expr_symbols) taken[e.symbol] = true;
  for (const DataSymbol& d : data_symbols) taken[d.symbol] = true;
  for (const rt::ProgramSteps& p : loaded.programs)
    for (int id : p.body ? std::vector<int>{} : p.inputs)
      for (const SymDim& sd : sym_dims[size_t(id)])
        for (const Term& t : sd.terms)
          for (int f : t.factors)
            if (f >= 0) taken[size_t(f)] = true;
  std::vector<bool> is_iteration(symbols.size(), false);
  size_t pos = 0;
  for (size_t k = 0; k < code->size(); k += 2) {
    IterationSymbol it;
    int64_t sym = code->Get(flatbuffers::uoffset_t(k)), program = code->Get(flatbuffers::uoffset_t(k + 1));
    if (sym < 0 || sym >= int64_t(symbols.size()) || program < 0 || program >= int64_t(loaded.programs.size()) || !loaded.programs[size_t(program)].body)
      return InvalidArgument("plan has a bad iteration symbol");
    if (taken[size_t(sym)] || is_iteration[size_t(sym)] || sym_min[size_t(sym)] > 0 || sym_max[size_t(sym)] >= 0)
      return InvalidArgument("plan iteration symbol '" + symbols[size_t(sym)] + "' is also bound otherwise");
    for (const IterationSymbol& other : iteration_symbols)
      if (other.program == size_t(program)) return InvalidArgument("plan gives program " + std::to_string(program) + " two iteration symbols");
    std::string text;
    if (!DecodePoly(bounds, pos, atoms.size(), it.bound, text)) return InvalidArgument("plan has a bad iteration symbol bound");
    it.symbol = size_t(sym);
    it.program = size_t(program);
    it.text = symbols[size_t(sym)];
    is_iteration[size_t(sym)] = true;
    iteration_symbols.push_back(std::move(it));
  }
  if (pos != bounds->size()) return InvalidArgument("plan has a bad iteration symbol bound");
  // Bounds read only symbols the inputs bind: no data dim, no iteration number (directly or
  // through an atom).
  std::vector<bool> later(symbols.size(), false);
  for (const DataSymbol& d : data_symbols) later[d.symbol] = true;
  for (const IterationSymbol& it : iteration_symbols) later[it.symbol] = true;
  auto reads = PolyReads(later);
  for (const IterationSymbol& it : iteration_symbols)
    if (reads(it.bound)) return InvalidArgument("plan iteration symbol '" + it.text + "' has a bound that reads a size known only while the plan runs");
  loaded.bind_iteration = [this](size_t program, int64_t iteration) { return BindIteration(program, iteration); };
  return Status::Ok();
}

// Before an iteration of the Loop whose body is `program`: every tensor's dims for it, within
// the bytes planned for the largest iteration number. Returns whether the dims changed.
StatusOr<bool> Session::Impl::BindIteration(size_t program, int64_t iteration) {
  const IterationSymbol* it = nullptr;
  for (const IterationSymbol& candidate : iteration_symbols)
    if (candidate.program == program) it = &candidate;
  if (!it) return false;
  if (bound[it->symbol] == iteration) return false;
  if (iteration < 0 || it->symbol >= run_bound.size() || iteration > run_bound[it->symbol])
    return InvalidArgument(loaded.programs[program].name + ": iteration " + std::to_string(iteration) + " is past the last iteration (" +
                           (it->symbol < run_bound.size() ? std::to_string(run_bound[it->symbol]) : std::string("?")) +
                           ") the plan's memory was planned for");
  std::vector<int64_t> b = bound;
  b[it->symbol] = iteration;
  shape_ok = false;
  Status s = SetDimsWithinRun(b);
  if (!s.ok()) {
    bound.assign(symbols.size(), kUnbound);  // the next run binds everything anew
    std::fill(pending.begin(), pending.end(), kUnbound);
    return s;
  }
  bound = b;
  shape_ok = true;
  return true;
}

}  // namespace precis
