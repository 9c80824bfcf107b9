// Session: plan validation, the tensor table and each program's step arguments, then dispatch to
// the backend registered for the session's device (runtime/exec/backend.h). The session never
// names a backend and runs no kernel itself.
#include "precis/session.h"

#include <algorithm>
#include <cstring>
#include <unordered_map>

#include "runtime/base/half.h"
#include "runtime/exec/in_place.h"
#include "runtime/exec/session_impl.h"
#include "runtime/exec/state_file.h"

namespace precis {

std::optional<int64_t> BoundedElements(const std::vector<int64_t>& dims) {
  int64_t n = 1, nonzero = 1;
  for (int64_t dim : dims) {
    if (dim < 0 || (dim > 0 && nonzero > (int64_t(1) << 50) / dim)) return std::nullopt;
    if (dim > 0) nonzero *= dim;
    n *= dim;
  }
  return n;
}

// The tensor table: dtypes, dims and byte sizes checked against each other and against the
// section each tensor lies in. Constants point at the plan's bytes; the backend places the rest.
Status Session::Impl::LoadTensors() {
  const plan::Plan* p = view.meta;
  if (!p->tensors()) return InvalidArgument("plan lacks its tensor table");
  tensors.resize(p->tensors()->size());
  storage.resize(tensors.size());
  PRECIS_RETURN_IF_ERROR(LoadSymbols());
  if (dynamic) {
    sym_dims.resize(tensors.size());
    live_first.assign(tensors.size(), 0);
    live_last.assign(tensors.size(), 0);
    inplace_of.assign(tensors.size(), -1);
  }
  for (size_t i = 0; i < tensors.size(); ++i) {
    const plan::TensorDesc* d = p->tensors()->Get(flatbuffers::uoffset_t(i));
    rt::Tensor& t = tensors[i];
    t.name = d->name() ? d->name()->str() : "#" + std::to_string(i);
    if (!IsValidDataType(d->dtype())) return InvalidArgument("plan tensor '" + t.name + "' has an invalid dtype");
    t.dtype = DataType(d->dtype());
    if (d->dims()) t.dims.assign(d->dims()->begin(), d->dims()->end());
    storage[i] = {int(d->placement()), d->offset()};
    if (dynamic) {
      PRECIS_RETURN_IF_ERROR(LoadSymbolicDims(i, d));
      if (!sym_dims[i].empty()) continue;  // sized when the symbols are bound
    }
    std::optional<int64_t> n = BoundedElements(t.dims);
    if (!n) return InvalidArgument("plan tensor '" + t.name + "' has bad dims");
    t.numel = *n;
    t.bytes = size_t(*n) * DataTypeSize(t.dtype);
    if (d->bytes() != t.bytes) return InvalidArgument("plan tensor '" + t.name + "' byte size does not match its shape");
    auto outside = [&](uint64_t offset, uint64_t limit) { return offset > limit || t.bytes > limit - offset; };
    // Kernels access elements as their type: every offset must be a multiple of the element size
    // (the planner aligns them to 64 bytes).
    size_t align = DataTypeSize(t.dtype) ? DataTypeSize(t.dtype) : 1;
    if (d->offset() % align || (d->placement() == plan::Placement_State && d->init_offset() % align))
      return InvalidArgument("plan tensor '" + t.name + "' is misaligned for its element type");
    switch (d->placement()) {
      case plan::Placement_Constant:
        t.is_constant = true;
        if (d->synthetic()) {
          if (!options.synthetic_weights)
            return InvalidArgument("plan tensor '" + t.name + "' was left out (the plan was compiled with --strip-weights, for " +
                                   "benchmarks): open it with synthetic weights (precis bench/precis_plan_bench)");
          PRECIS_ASSIGN_OR_RETURN(t.data, SyntheticWeight(t));
          break;
        }
        if (outside(d->offset(), view.constants_size)) return InvalidArgument("plan tensor '" + t.name + "' lies outside its section");
        t.data = const_cast<uint8_t*>(view.constants) + d->offset();
        break;
      case plan::Placement_Arena:
        if (!dynamic && outside(d->offset(), p->arena_bytes())) return InvalidArgument("plan tensor '" + t.name + "' lies outside its section");
        break;
      case plan::Placement_State:
        if (outside(d->offset(), p->state_bytes()) || outside(d->init_offset(), view.constants_size))
          return InvalidArgument("plan state tensor '" + t.name + "' lies outside its section");
        loaded.state.push_back(int(i));
        state_ids[t.name] = int(i);
        break;
      default:
        return InvalidArgument("plan tensor '" + t.name + "' has an unknown placement");
    }
  }
  return Status::Ok();
}

// Deterministic pseudo-random values for a stripped weight: uniform in [-1/16, 1/16] (small enough
// that deep nets stay finite in FP16), the same for every session.
StatusOr<uint8_t*> Session::Impl::SyntheticWeight(const rt::Tensor& t) {
  AlignedBuffer buf = AllocateAligned(t.bytes);
  if (!buf) return Internal("cannot allocate synthetic weight '" + t.name + "'");
  uint64_t state = 0x9E3779B97F4A7C15ull ^ t.bytes;
  for (char c : t.name) state = (state ^ uint8_t(c)) * 0x100000001B3ull;
  for (int64_t i = 0; i < t.numel; ++i) {
    state ^= state << 13, state ^= state >> 7, state ^= state << 17;
    float v = (float((state >> 40) & 0xFFFFFF) / float(1 << 24) - 0.5f) * 0.125f;
    uint8_t* p = buf.get() + size_t(i) * DataTypeSize(t.dtype);
    if (t.dtype == DataType::kF32) std::memcpy(p, &v, 4);
    else if (t.dtype == DataType::kF64) { double d = v; std::memcpy(p, &d, 8); }
    else { uint16_t h = t.dtype == DataType::kF16 ? FloatToHalf(v) : FloatToBf16(v); std::memcpy(p, &h, 2); }
  }
  synthetic.push_back(std::move(buf));
  return synthetic.back().get();
}

// Output 0 may share the bytes of one input where the kernel runs in place (in_place.h); any
// other overlap between a step's operands is refused. (Dynamic plans: checked for each arena
// plan the session makes.)
Status Session::Impl::CheckOverlaps(const std::string& kernel_name, const rt::KernelArgs& a) const {
  auto region = [&](const rt::Tensor* t) { return storage[size_t(t - tensors.data())]; };
  int in_place = rt::InPlaceInput(kernel_name);
  const rt::Tensor* in_place_source = in_place >= 0 && size_t(in_place) < a.inputs.size() ? a.inputs[size_t(in_place)] : nullptr;
  for (size_t o = 0; o < a.outputs.size(); ++o) {
    const rt::Tensor* out = a.outputs[o];
    if (!out || out->bytes == 0) continue;
    Storage so = region(out);
    auto overlaps = [&](const rt::Tensor* t) {
      if (!t || t->bytes == 0 || t->is_constant) return false;
      Storage st = region(t);
      return st.placement == so.placement && st.offset < so.offset + out->bytes && so.offset < st.offset + t->bytes;
    };
    auto same_bytes = [&](const rt::Tensor* t) {
      return t && region(t).placement == so.placement && region(t).offset == so.offset && t->bytes == out->bytes;
    };
    bool may_alias = (o == 0 && same_bytes(in_place_source)) || rt::SharesAnyInput(kernel_name);
    for (const rt::Tensor* in : a.inputs)
      if (overlaps(in) && !(may_alias && same_bytes(in)))
        return InvalidArgument(a.node + ": output '" + out->name + "' overlaps its input '" + in->name + "'" +
                               (in_place < 0 ? " (" + kernel_name + " does not run in place)"
                                             : " (only output 0 may take exactly the bytes of input " + std::to_string(in_place) + ")"));
    for (size_t k = o + 1; k < a.outputs.size(); ++k)
      if (overlaps(a.outputs[k])) return InvalidArgument(a.node + ": outputs '" + out->name + "' and '" + a.outputs[k]->name + "' overlap");
  }
  return Status::Ok();
}

StatusOr<rt::KernelArgs> Session::Impl::StepArgs(const plan::Step* s) {
  std::string kernel_name = s->kernel() ? s->kernel()->str() : "";
  rt::KernelArgs a;
  a.node = kernel_name + " '" + (s->node() ? s->node()->str() : "") + "'";
  auto ids = [&](const flatbuffers::Vector<int32_t>* v, std::vector<rt::Tensor*>& out) -> Status {
    if (!v) return Status::Ok();
    for (int32_t id : *v) {
      if (id == -1) out.push_back(nullptr);
      else if (id < 0 || size_t(id) >= tensors.size()) return InvalidArgument(a.node + ": tensor id out of range");
      else out.push_back(&tensors[size_t(id)]);
    }
    return Status::Ok();
  };
  PRECIS_RETURN_IF_ERROR(ids(s->inputs(), a.inputs));
  PRECIS_RETURN_IF_ERROR(ids(s->outputs(), a.outputs));
  // Constants are read-only (a mapped plan file): no step may write one.
  for (const rt::Tensor* t : a.outputs)
    if (t && t->is_constant) return InvalidArgument(a.node + ": writes the constant '" + t->name + "'");
  if (!dynamic) PRECIS_RETURN_IF_ERROR(CheckOverlaps(kernel_name, a));
  if (s->attrs())
    for (const plan::Attr* attr : *s->attrs()) {
      if (!attr->name()) return InvalidArgument(a.node + ": an attribute has no name");
      if (attr->kind() > plan::AttrKind_MAX)
        return InvalidArgument(a.node + ": attribute '" + attr->name()->str() + "' has an unknown kind " + std::to_string(int(attr->kind())));
    }
  a.attrs = rt::Attributes(s->attrs());
  return a;
}

// Each program's steps (arguments, kernel names, layouts, predicates) and inputs/outputs. Input
// and output names are shared by all programs (the same tensor).
Status Session::Impl::LoadPrograms() {
  for (const plan::Program* p : *view.meta->programs()) {
    rt::ProgramSteps& prog = loaded.programs.emplace_back();
    prog.name = p->name() ? p->name()->str() : "";
    if (prog.name.empty() || std::find(program_names.begin(), program_names.end(), prog.name) != program_names.end())
      return InvalidArgument("plan has a program without a name or two programs named '" + prog.name + "'");
    program_names.push_back(prog.name);
    prog.body = p->body();
    if (p->derives_state()) {
      if (prog.body || derive_program >= 0) return InvalidArgument("plan program '" + prog.name + "' derives state, and is a body or not the only such program");
      derive_program = int(loaded.programs.size()) - 1;
    }
    if (!prog.body && !p->derives_state()) entry_names.push_back(prog.name);
    // A body may have none of them (a branch that passes an outer value through has no steps and
    // no inputs); an entry program lists all three, empty or not.
    if (!prog.body && (!p->steps() || !p->inputs() || !p->outputs()))
      return InvalidArgument("plan program '" + prog.name + "' lacks steps, inputs or outputs");
    for (flatbuffers::uoffset_t k = 0; p->steps() && k < p->steps()->size(); ++k) {
      const plan::Step* s = p->steps()->Get(k);
      PRECIS_ASSIGN_OR_RETURN(rt::KernelArgs a, StepArgs(s));
      const rt::Tensor* predicate = nullptr;
      if (s->predicate() != -1) {
        if (s->predicate() < 0 || size_t(s->predicate()) >= tensors.size()) return InvalidArgument(a.node + ": predicate id out of range");
        predicate = &tensors[size_t(s->predicate())];
        if (predicate->dtype != DataType::kBool || predicate->numel != 1 || predicate->is_constant)
          return InvalidArgument(a.node + ": predicate '" + predicate->name + "' is not a bool scalar computed at run time");
      }
      prog.kernels.push_back(s->kernel() ? s->kernel()->str() : "");
      prog.layouts.push_back(s->layout() ? s->layout()->str() : "");
      prog.predicates.push_back(predicate);
      prog.widen.push_back(s->widen());
      prog.binds_dims.push_back(0);
      prog.steps.push_back(std::move(a));
    }
    ProgramIo& pio = io.emplace_back();
    auto list = [&](const flatbuffers::Vector<int32_t>* ids, std::vector<int>& out_ids, std::vector<TensorInfo>& infos,
                    std::unordered_map<std::string, int>& by_name) -> Status {
      if (!ids) return Status::Ok();
      for (int32_t id : *ids) {
        if (id < 0 || size_t(id) >= tensors.size()) return InvalidArgument("plan program '" + prog.name + "': input/output id out of range");
        const rt::Tensor& t = tensors[size_t(id)];
        out_ids.push_back(id);
        infos.push_back({t.name, t.dtype, t.dims});
        by_name[t.name] = id;
      }
      return Status::Ok();
    };
    // A body's inputs and outputs are its control-flow step's business, not the caller's.
    std::unordered_map<std::string, int> unnamed;
    PRECIS_RETURN_IF_ERROR(list(p->inputs(), prog.inputs, pio.inputs, prog.body ? unnamed : input_ids));
    PRECIS_RETURN_IF_ERROR(list(p->outputs(), prog.outputs, pio.outputs, prog.body ? unnamed : output_ids));
    PRECIS_RETURN_IF_ERROR(LoadContainers(*p, prog, pio));
    // The control-flow step writes its body's inputs: arena tensors only (never a constant of
    // the mapped plan file).
    for (int id : prog.body ? prog.inputs : std::vector<int>{})
      if (tensors[size_t(id)].is_constant || storage[size_t(id)].placement != plan::Placement_Arena)
        return InvalidArgument("plan program '" + prog.name + "': body input '" + tensors[size_t(id)].name +
                               "' is not an arena tensor (its control-flow step writes it)");
  }
  if (entry_names.empty()) return InvalidArgument("plan has no program to run (only bodies of control-flow steps)");
  // The state the derive program writes; the rest is the caller's state.
  if (derive_program >= 0) {
    const rt::ProgramSteps& d = loaded.programs[size_t(derive_program)];
    for (const rt::KernelArgs& a : d.steps)
      for (const rt::Tensor* t : a.outputs) {
        int id = t ? int(t - tensors.data()) : -1;
        if (id >= 0 && storage[size_t(id)].placement == plan::Placement_State &&
            std::find(derived_state.begin(), derived_state.end(), id) == derived_state.end())
          derived_state.push_back(id);
      }
    derive_pending = true;
  }
  state.clear();
  for (int id : loaded.state)
    if (std::find(derived_state.begin(), derived_state.end(), id) == derived_state.end()) {
      saved_state.push_back(id);
      state.push_back({tensors[size_t(id)].name, tensors[size_t(id)].dtype, tensors[size_t(id)].dims});
    }
  auto infer = std::find(program_names.begin(), program_names.end(), "infer");
  if (infer != program_names.end() && loaded.programs[size_t(infer - program_names.begin())].body) infer = program_names.end();
  default_program = infer != program_names.end() ? size_t(infer - program_names.begin())
                                                  : size_t(std::find(program_names.begin(), program_names.end(), entry_names[0]) - program_names.begin());
  last_program = default_program;
  return Status::Ok();
}

Status Session::Impl::Load(const uint8_t* data, size_t size) {
  PRECIS_ASSIGN_OR_RETURN(view, plan::ValidatePlan(data, size));
  // Plans for "cuda" hold only steps with CUDA kernels; they run on the CPU too (the reference).
  std::string target = view.meta->target() ? view.meta->target()->str() : "cpu";
  if (target != "cpu" && target != "cuda") return Unimplemented("plan targets '" + target + "', which this runtime does not know");
  precision = view.meta->precision() ? view.meta->precision()->str() : "fp32";
  PRECIS_RETURN_IF_ERROR(LoadTensors());
  PRECIS_RETURN_IF_ERROR(LoadPrograms());
  PRECIS_RETURN_IF_ERROR(LoadValueSymbols());
  PRECIS_RETURN_IF_ERROR(LoadExprSymbols());
  PRECIS_RETURN_IF_ERROR(LoadDataSymbols());
  PRECIS_RETURN_IF_ERROR(LoadIterationSymbols());
  rt::BackendFactory factory = rt::FindBackend(options.device);
  if (!factory)
    return Unimplemented(options.device == Device::kCuda
                             ? "this build of the Precis runtime has no CUDA backend (configure with the CUDA toolkit and -DPRECIS_CUDA=ON)"
                             : "this build of the Precis runtime has no CPU backend");
  PRECIS_ASSIGN_OR_RETURN(backend, factory(options));
  loaded.view = &view;
  loaded.tensors = &tensors;
  loaded.arena_offsets.assign(tensors.size(), 0);
  if (dynamic) {
    std::string names;
    for (const auto& n : symbols) names += (names.empty() ? "" : ", ") + n;
    if (!backend->dynamic_shapes())
      return Unimplemented("the plan has symbolic dims (" + names + "); the " + (options.device == Device::kCuda ? "CUDA" : "") +
                           " backend runs plans with static shapes only so far: compile with --shape");
    if (!loaded.state.empty()) return InvalidArgument("the plan has symbolic dims (" + names + ") and state; plans with state have static shapes");
    // Every symbol bounded: prepared now for the maximum, whose arena every binding reuses.
    if (std::all_of(sym_max.begin(), sym_max.end(), [](int64_t m) { return m >= 0; })) {
      PRECIS_RETURN_IF_ERROR(Rebind(sym_max).WithContext("preparing the plan for its largest shape (" + Binding(sym_max) + ")"));
      shape_ok = true;
      fixed_arena = true;
      fixed_arena_bytes = loaded.arena_bytes;
      fixed_offsets = loaded.arena_offsets;
      fixed_bytes.assign(tensors.size(), 0);
      for (size_t i = 0; i < tensors.size(); ++i) fixed_bytes[i] = tensors[i].bytes;
    }
    return Status::Ok();  // otherwise prepared at the first Run, once the inputs have bound the symbols
  }
  for (size_t i = 0; i < tensors.size(); ++i)
    if (storage[i].placement == plan::Placement_Arena) loaded.arena_offsets[i] = storage[i].offset;
  loaded.arena_bytes = view.meta->arena_bytes();
  PRECIS_RETURN_IF_ERROR(backend->Prepare(loaded));
  prepared = true;
  SetUpProfiles();
  home.reserve(tensors.size());
  for (const auto& t : tensors) home.push_back(t.data);
  return Status::Ok();
}

void Session::Impl::SetUpProfiles() {
  if (options.profile && profiles.empty())
    for (size_t p = 0; p < loaded.programs.size(); ++p) {
      std::vector<StepProfile>& entries = profiles.emplace_back();
      std::vector<std::string> labels = backend->StepLabels(p);
      for (size_t i = 0; i < labels.size(); ++i) {
        const plan::Step* s = view.meta->programs()->Get(flatbuffers::uoffset_t(p))->steps()->Get(flatbuffers::uoffset_t(i));
        entries.push_back({labels[i], s->node() ? s->node()->str() : "", 0.0, 0});
      }
    }
}


StatusOr<size_t> Session::Impl::FindProgram(const std::string& name) const {
  for (size_t i = 0; i < program_names.size(); ++i) {
    if (program_names[i] != name) continue;
    if (loaded.programs[i].body) return InvalidArgument("program '" + name + "' is the body of a control-flow step; it runs only from that step");
    if (int(i) == derive_program)
      return InvalidArgument("program '" + name + "' derives state; the session runs it after state is written or loaded");
    return i;
  }
  std::string known;
  for (const auto& n : entry_names) known += (known.empty() ? "" : ", ") + n;
  return InvalidArgument("the plan has no program '" + name + "' (programs: " + known + ")");
}

StatusOr<int> Session::Impl::FindState(const std::string& name) const {
  auto it = state_ids.find(name);
  if (it != state_ids.end()) return it->second;
  std::string known;
  for (const auto& t : state) known += (known.empty() ? "" : ", ") + t.name;
  return InvalidArgument("the plan has no state tensor '" + name + "' (state: " + (known.empty() ? "none" : known) + ")");
}

Session::Session(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Session::~Session() = default;

StatusOr<std::unique_ptr<Session>> Session::Open(const std::string& path, const SessionOptions& options) {
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  PRECIS_ASSIGN_OR_RETURN(impl->file, MappedFile::Open(path));
  Status s = impl->Load(impl->file->data(), impl->file->size());
  if (!s.ok()) return s.WithContext(path);
  return std::unique_ptr<Session>(new Session(std::move(impl)));
}

StatusOr<std::unique_ptr<Session>> Session::FromBuffer(const void* data, size_t size, const SessionOptions& options) {
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  impl->owned_plan = AllocateAligned(size);
  if (!impl->owned_plan) return Internal("cannot allocate the plan copy");
  if (size) std::memcpy(impl->owned_plan.get(), data, size);
  PRECIS_RETURN_IF_ERROR(impl->Load(impl->owned_plan.get(), size));
  return std::unique_ptr<Session>(new Session(std::move(impl)));
}

const std::vector<TensorInfo>& Session::inputs() const { return impl_->io[impl_->default_program].inputs; }
const std::vector<TensorInfo>& Session::outputs() const { return impl_->io[impl_->default_program].outputs; }
const std::vector<std::string>& Session::programs() const { return impl_->entry_names; }

StatusOr<std::vector<TensorInfo>> Session::ProgramInputs(const std::string& program) const {
  PRECIS_ASSIGN_OR_RETURN(size_t p, impl_->FindProgram(program));
  return impl_->io[p].inputs;
}

StatusOr<std::vector<TensorInfo>> Session::ProgramOutputs(const std::string& program) const {
  PRECIS_ASSIGN_OR_RETURN(size_t p, impl_->FindProgram(program));
  return impl_->io[p].outputs;
}

const std::vector<std::string>& Session::symbols() const { return impl_->symbols; }

std::vector<std::string> Session::DimNames(const std::string& name) const {
  int id = -1;
  if (auto in = impl_->input_ids.find(name); in != impl_->input_ids.end()) id = in->second;
  else if (auto out = impl_->output_ids.find(name); out != impl_->output_ids.end()) id = out->second;
  if (id < 0) return {};
  const plan::TensorDesc* d = impl_->view.meta->tensors()->Get(flatbuffers::uoffset_t(id));
  std::vector<std::string> names(d->dims() ? d->dims()->size() : 0);
  if (impl_->dynamic)
    for (const Impl::SymDim& sd : impl_->sym_dims[size_t(id)]) names[sd.index] = sd.text;
  return names;
}

size_t Session::arena_bytes() const { return impl_->dynamic ? size_t(impl_->loaded.arena_bytes) : size_t(impl_->view.meta->arena_bytes()); }
const std::string& Session::precision() const { return impl_->precision; }
std::string Session::device_name() const {
  std::string name = impl_->backend->device_name();
  return name == "cpu" ? name : "cuda: " + name;
}
bool Session::graph_replay() const { return impl_->backend->graph_replay(); }
std::vector<std::string> Session::fallbacks() const { return impl_->backend->Fallbacks(); }

Status ParseDevice(const std::string& text, Device* device, int* device_id) {
  *device_id = 0;
  if (text == "cpu") {
    *device = Device::kCpu;
    return Status::Ok();
  }
  if (text == "cuda" || text.rfind("cuda:", 0) == 0) {
    *device = Device::kCuda;
    if (text != "cuda") {
      std::string n = text.substr(5);
      if (n.empty() || n.size() > 4 || n.find_first_not_of("0123456789") != std::string::npos)
        return InvalidArgument("bad device '" + text + "' (expected cpu, cuda or cuda:N)");
      *device_id = std::stoi(n);
    }
    return Status::Ok();
  }
  return InvalidArgument("unknown device '" + text + "' (expected cpu, cuda or cuda:N)");
}

static std::string Names(const std::unordered_map<std::string, int>& ids) {
  std::vector<std::string> names;
  for (const auto& [name, id] : ids) names.push_back(name);
  std::sort(names.begin(), names.end());
  std::string s;
  for (const auto& n : names) s += (s.empty() ? "" : ", ") + n;
  return s;
}

Status Session::SetInput(const std::string& name, DataType dtype, const std::vector<int64_t>& dims, const void* data, size_t bytes) {
  auto it = impl_->input_ids.find(name);
  if (it == impl_->input_ids.end()) return InvalidArgument("no input named '" + name + "' (inputs: " + Names(impl_->input_ids) + ")");
  rt::Tensor& t = impl_->tensors[size_t(it->second)];
  if (dtype != t.dtype)
    return InvalidArgument("input '" + name + "' must be " + DataTypeName(t.dtype) + ", got " + DataTypeName(dtype));
  if (impl_->dynamic) return impl_->SetDynamicInput(it->second, dtype, dims, data, bytes);
  if (dims != t.dims)
    return InvalidArgument("input '" + name + "' must have shape " + DimsToString(t.dims) + ", got " + DimsToString(dims));
  if (bytes != t.bytes) return InvalidArgument("input '" + name + "' needs " + std::to_string(t.bytes) + " bytes, got " + std::to_string(bytes));
  t.data = impl_->home[size_t(it->second)];
  if (bytes) std::memcpy(t.data, data, bytes);
  return Status::Ok();
}

Status Session::BindInput(const std::string& name, const void* data, size_t bytes) {
  auto it = impl_->input_ids.find(name);
  if (it == impl_->input_ids.end()) return InvalidArgument("no input named '" + name + "'");
  if (impl_->dynamic) return InvalidArgument("input '" + name + "': the plan has symbolic dims; give its value with SetInput (its shape binds them)");
  rt::Tensor& t = impl_->tensors[size_t(it->second)];
  if (bytes != t.bytes) return InvalidArgument("input '" + name + "' needs " + std::to_string(t.bytes) + " bytes, got " + std::to_string(bytes));
  t.data = static_cast<uint8_t*>(const_cast<void*>(data));
  return Status::Ok();
}

Status Session::BindOutput(const std::string& name, void* data, size_t bytes) {
  auto it = impl_->output_ids.find(name);
  if (it == impl_->output_ids.end()) return InvalidArgument("no output named '" + name + "'");
  if (impl_->dynamic) return InvalidArgument("output '" + name + "': the plan has symbolic dims; read outputs with Output() after Run");
  rt::Tensor& t = impl_->tensors[size_t(it->second)];
  if (t.is_constant) return InvalidArgument("output '" + name + "' is a constant and cannot be bound");
  if (bytes != t.bytes) return InvalidArgument("output '" + name + "' needs " + std::to_string(t.bytes) + " bytes, got " + std::to_string(bytes));
  t.data = static_cast<uint8_t*>(data);
  return Status::Ok();
}


Status Session::Run() { return Run(impl_->program_names[impl_->default_program]); }

Status Session::Run(const std::string& program) {
  Impl& m = *impl_;
  PRECIS_ASSIGN_OR_RETURN(size_t p, m.FindProgram(program));
  PRECIS_RETURN_IF_ERROR(m.Derive());
  m.last_program = p;
  if (m.dynamic) PRECIS_RETURN_IF_ERROR(m.PrepareDynamicRun(p));
  return m.backend->Run(p, m.profiles.empty() ? nullptr : &m.profiles[p], m.observer);
}

// Runs the derive program when state changed since it last ran (or never ran).
Status Session::Impl::Derive() const {
  if (!derive_pending) return Status::Ok();
  PRECIS_RETURN_IF_ERROR(backend->Run(size_t(derive_program), nullptr, nullptr).WithContext("recomputing derived state"));
  derive_pending = false;
  return Status::Ok();
}

void Session::SetStepObserver(std::function<void(const TensorData&)> observer) { impl_->observer = std::move(observer); }

std::string Session::report(bool json) const {
  const auto* s = json ? impl_->view.meta->report_json() : impl_->view.meta->report_text();
  return s ? s->str() : std::string();
}

const std::vector<StepProfile>& Session::profile() const {
  static const std::vector<StepProfile> kNone;
  return impl_->profiles.empty() ? kNone : impl_->profiles[impl_->last_program];
}

const std::vector<TensorInfo>& Session::state() const { return impl_->state; }

// Derived state (a working copy) may be read, never written: it follows the state it is derived from.
Status Session::ReadState(const std::string& name, void* data, size_t bytes) const {
  PRECIS_ASSIGN_OR_RETURN(int id, impl_->FindState(name));
  const rt::Tensor& t = impl_->tensors[size_t(id)];
  if (bytes != t.bytes) return InvalidArgument("state '" + name + "' has " + std::to_string(t.bytes) + " bytes, got a buffer of " + std::to_string(bytes));
  if (impl_->IsDerived(id)) PRECIS_RETURN_IF_ERROR(impl_->Derive());
  return impl_->backend->ReadState(id, data);
}

Status Session::WriteState(const std::string& name, DataType dtype, const std::vector<int64_t>& dims, const void* data, size_t bytes) {
  PRECIS_ASSIGN_OR_RETURN(int id, impl_->FindState(name));
  if (impl_->IsDerived(id))
    return InvalidArgument("state '" + name + "' is derived from other state (a 16-bit working copy of a master weight): write that instead");
  const rt::Tensor& t = impl_->tensors[size_t(id)];
  if (dtype != t.dtype) return InvalidArgument("state '" + name + "' is " + DataTypeName(t.dtype) + ", got " + DataTypeName(dtype));
  if (dims != t.dims) return InvalidArgument("state '" + name + "' has shape " + DimsToString(t.dims) + ", got " + DimsToString(dims));
  if (bytes != t.bytes) return InvalidArgument("state '" + name + "' needs " + std::to_string(t.bytes) + " bytes, got " + std::to_string(bytes));
  if (impl_->derive_program >= 0) impl_->derive_pending = true;
  return impl_->backend->WriteState(id, data);
}

Status Session::SaveState(const std::string& path) const {
  std::vector<rt::StateRecord> records;
  for (int id : impl_->saved_state) {
    const rt::Tensor& t = impl_->tensors[size_t(id)];
    rt::StateRecord& r = records.emplace_back();
    r.info = {t.name, t.dtype, t.dims};
    r.bytes.resize(t.bytes);
    PRECIS_RETURN_IF_ERROR(impl_->backend->ReadState(id, r.bytes.data()));
  }
  return rt::WriteStateFile(path, rt::StateSignature(impl_->state), records);
}

// The whole file is read and checked against the plan before any state tensor changes.
Status Session::LoadState(const std::string& path) {
  PRECIS_ASSIGN_OR_RETURN(std::vector<rt::StateRecord> records, rt::ReadStateFile(path, rt::StateSignature(impl_->state)));
  const std::vector<int>& ids = impl_->saved_state;
  if (records.size() != ids.size()) return InvalidArgument("state file '" + path + "' holds " + std::to_string(records.size()) + " tensors, the plan " + std::to_string(ids.size()));
  for (size_t i = 0; i < ids.size(); ++i) {
    const rt::Tensor& t = impl_->tensors[size_t(ids[i])];
    const rt::StateRecord& r = records[i];
    if (r.info.name != t.name || r.info.dtype != t.dtype || r.info.dims != t.dims || r.bytes.size() != t.bytes)
      return InvalidArgument("state file '" + path + "': tensor " + std::to_string(i) + " ('" + r.info.name + "') does not match the plan's '" + t.name + "'");
  }
  if (impl_->derive_program >= 0) impl_->derive_pending = true;
  for (size_t i = 0; i < ids.size(); ++i) PRECIS_RETURN_IF_ERROR(impl_->backend->WriteState(ids[i], records[i].bytes.data()));
  return Status::Ok();
}

StatusOr<TensorData> Session::Output(const std::string& name) const {
  auto it = impl_->output_ids.find(name);
  if (it == impl_->output_ids.end()) return InvalidArgument("no output named '" + name + "' (outputs: " + Names(impl_->output_ids) + ")");
  const rt::Tensor& t = impl_->tensors[size_t(it->second)];
  if (impl_->dynamic && (!impl_->prepared || !impl_->shape_ok))
    return InvalidArgument("output '" + name + "': the plan has symbolic dims and has not run at its current shape (none yet, or binding it failed)");
  return TensorData{{t.name, t.dtype, t.dims}, t.data};
}

}  // namespace precis
