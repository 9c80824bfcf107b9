// WriteModules and PlanFileBytes (see plan_file.h).
#include "compiler/emit/plan_file.h"

#include <cstring>

#include "runtime/base/hash.h"
#include "runtime/plan/plan_format.h"

namespace precis::emit {

flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<plan::Module>>> WriteModules(flatbuffers::FlatBufferBuilder& b,
                                                                                     const std::vector<EmitOptions::Module>& modules) {
  std::vector<flatbuffers::Offset<plan::Module>> table;
  for (const EmitOptions::Module& m : modules) {
    // Code is 16-byte aligned in the file (the loader copies it anyway).
    b.ForceVectorAlignment(m.code.size(), sizeof(uint8_t), 16);
    auto code = b.CreateVector(m.code);
    const plan::ModuleKind kind = m.kind == EmitOptions::Module::Kind::kPtx     ? plan::ModuleKind_Ptx
                                  : m.kind == EmitOptions::Module::Kind::kCubin ? plan::ModuleKind_Cubin
                                                                                 : plan::ModuleKind_Elf;
    table.push_back(plan::CreateModule(b, b.CreateString(m.name), kind, b.CreateString(m.target), code, HashBytes(m.code.data(), m.code.size())));
  }
  return table.empty() ? 0 : b.CreateVector(table);
}

std::vector<uint8_t> PlanFileBytes(const flatbuffers::FlatBufferBuilder& b, size_t constants_size, const std::function<void(uint8_t* blob)>& fill) {
  plan::FileHeader h{};
  std::memcpy(h.magic, plan::kMagic, sizeof h.magic);
  h.version = plan::kFormatVersion;
  h.header_bytes = sizeof h;
  h.meta_offset = sizeof h;
  h.meta_size = b.GetSize();
  h.const_offset = (h.meta_offset + h.meta_size + plan::kConstantAlignment - 1) / plan::kConstantAlignment * plan::kConstantAlignment;
  h.const_size = constants_size;
  h.file_size = h.const_offset + h.const_size;
  std::vector<uint8_t> out(size_t(h.file_size), 0);
  std::memcpy(out.data() + h.meta_offset, b.GetBufferPointer(), b.GetSize());
  fill(out.data() + h.const_offset);
  h.checksum = HashBytes(out.data() + sizeof h, out.size() - sizeof h);
  std::memcpy(out.data(), &h, sizeof h);
  return out;
}

}  // namespace precis::emit
