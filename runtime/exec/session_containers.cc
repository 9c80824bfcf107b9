// Container outputs (plan.fbs Container): model outputs that are sequences or optionals whose
// length or presence is decided when the plan runs. The plan outputs their parts as tensors; the
// session checks them at load and assembles the container after a run.
#include <algorithm>
#include <cstring>

#include "precis/session.h"
#include "runtime/exec/session_impl.h"

namespace precis {

Status Session::Impl::LoadContainers(const plan::Program& p, const rt::ProgramSteps& prog, ProgramIo& pio) {
  if (!p.containers()) return Status::Ok();
  if (prog.body) return InvalidArgument("plan program '" + prog.name + "' is a body and lists container outputs");
  for (const plan::Container* c : *p.containers()) {
    std::string name = c->name() ? c->name()->str() : "";
    auto fail = [&](const std::string& why) { return InvalidArgument("plan program '" + prog.name + "': container output '" + name + "' " + why); };
    if (name.empty() || c->kind() > 2) return fail("has no name or an unknown kind");
    ContainerInfo info;
    info.name = name;
    info.kind = ContainerInfo::Kind(c->kind());
    ProgramIo::Container ids;
    // Each part must be an output of the program, of the type its role needs.
    auto part = [&](int id, const char* role) -> Status {
      if (std::find(prog.outputs.begin(), prog.outputs.end(), id) == prog.outputs.end())
        return fail(std::string("has a ") + role + " that is not an output of the program");
      const rt::Tensor& t = tensors[size_t(id)];
      info.parts.push_back(t.name);
      if (std::string(role) == "presence" && (t.dtype != DataType::kBool || t.numel != 1)) return fail("has a presence that is not a bool scalar");
      if (std::string(role) == "stack" && t.dims.empty()) return fail("has a scalar stack");
      if (std::string(role) == "dims" && (t.dtype != DataType::kI64 || t.dims.size() != 2)) return fail("has dims that are not an int64 matrix");
      return Status::Ok();
    };
    if (c->dims() != -1 && c->stack() == -1) return fail("has dims without a stack");
    if (c->elements())
      for (int32_t id : *c->elements()) {
        PRECIS_RETURN_IF_ERROR(part(id, "element"));
        ids.elements.push_back(id);
      }
    if (c->stack() != -1) PRECIS_RETURN_IF_ERROR(part(ids.stack = c->stack(), "stack"));
    if (c->dims() != -1) PRECIS_RETURN_IF_ERROR(part(ids.dims = c->dims(), "dims"));
    if (c->present() != -1) PRECIS_RETURN_IF_ERROR(part(ids.present = c->present(), "presence"));
    bool optional = info.kind != ContainerInfo::Kind::kSequence;
    if (ids.stack != -1 && !ids.elements.empty()) return fail("has both a stack and elements");
    if (optional != (ids.present != -1)) return fail("is an optional without a presence, or a sequence with one");
    if (info.kind == ContainerInfo::Kind::kOptionalTensor && (ids.elements.size() != 1 || ids.stack != -1))
      return fail("is an optional tensor without exactly one element");
    pio.container_infos.push_back(std::move(info));
    pio.containers.push_back(std::move(ids));
  }
  return Status::Ok();
}

const std::vector<ContainerInfo>& Session::containers() const { return impl_->io[impl_->default_program].container_infos; }

StatusOr<ContainerData> Session::OutputContainer(const std::string& name) const {
  const Impl::ProgramIo* io = nullptr;
  size_t index = 0;
  for (size_t p : {impl_->last_program, impl_->default_program}) {
    const auto& infos = impl_->io[p].container_infos;
    auto it = std::find_if(infos.begin(), infos.end(), [&](const ContainerInfo& c) { return c.name == name; });
    if (it != infos.end()) {
      io = &impl_->io[p], index = size_t(it - infos.begin());
      break;
    }
  }
  if (!io) return InvalidArgument("no container output named '" + name + "'");
  const Impl::ProgramIo::Container& c = io->containers[index];
  auto read = [&](int id) { return Output(impl_->tensors[size_t(id)].name); };
  ContainerData out;
  std::vector<std::vector<uint8_t>>& cut = impl_->container_bytes[name];
  cut.clear();
  if (c.present != -1) {
    PRECIS_ASSIGN_OR_RETURN(TensorData flag, read(c.present));
    out.present = *static_cast<const uint8_t*>(flag.data) != 0;
    if (!out.present) return out;
  }
  for (int id : c.elements) {
    PRECIS_ASSIGN_OR_RETURN(TensorData t, read(id));
    out.elements.push_back(std::move(t));
  }
  if (c.stack == -1) return out;
  PRECIS_ASSIGN_OR_RETURN(TensorData stack, read(c.stack));
  std::vector<int64_t> slice(stack.info.dims.begin() + 1, stack.info.dims.end());
  int64_t count = stack.info.dims[0], slice_elements = 1;
  for (int64_t d : slice) slice_elements *= d;
  size_t item = DataTypeSize(stack.info.dtype), slice_bytes = size_t(slice_elements) * item;
  const uint8_t* base = static_cast<const uint8_t*>(stack.data);
  if (c.dims == -1) {
    for (int64_t i = 0; i < count; ++i) out.elements.push_back({{name + "[" + std::to_string(i) + "]", stack.info.dtype, slice}, base + size_t(i) * slice_bytes});
    return out;
  }
  // A padded stack: element i is the leading corner of slice i, of the dims in row i.
  PRECIS_ASSIGN_OR_RETURN(TensorData dims, read(c.dims));
  size_t rank = slice.size();
  if (dims.info.dims[0] != count || size_t(dims.info.dims[1]) != rank)
    return InvalidArgument("container output '" + name + "': its dims are " + DimsToString(dims.info.dims) + " for a stack of " + DimsToString(stack.info.dims));
  const int64_t* rows = static_cast<const int64_t*>(dims.data);
  cut.resize(size_t(count));
  for (int64_t i = 0; i < count; ++i) {
    std::vector<int64_t> shape(rows + size_t(i) * rank, rows + size_t(i + 1) * rank);
    int64_t n = 1;
    for (size_t k = 0; k < rank; ++k) {
      if (shape[k] < 0 || shape[k] > slice[k])
        return InvalidArgument("container output '" + name + "': element " + std::to_string(i) + " has dims " + DimsToString(shape) +
                               ", outside the stack's " + DimsToString(slice));
      n *= shape[k];
    }
    std::vector<uint8_t>& bytes = cut[size_t(i)];
    bytes.resize(size_t(n) * item);
    // Row by row along the last axis, walking the element's index space.
    std::vector<int64_t> at(rank, 0);
    int64_t row = rank ? shape[rank - 1] : 1;
    for (int64_t done = 0; done < n; done += row) {
      int64_t offset = 0;
      for (size_t k = 0; k < rank; ++k) offset = offset * slice[k] + at[k];
      std::memcpy(bytes.data() + size_t(done) * item, base + size_t(i) * slice_bytes + size_t(offset) * item, size_t(row) * item);
      for (size_t k = rank >= 2 ? rank - 1 : 0; k-- > 0;) {
        if (++at[k] < shape[k]) break;
        at[k] = 0;
      }
    }
    out.elements.push_back({{name + "[" + std::to_string(i) + "]", stack.info.dtype, shape}, bytes.data()});
  }
  return out;
}

}  // namespace precis
