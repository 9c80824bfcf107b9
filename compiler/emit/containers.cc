// Container outputs of an entry program (see containers.h).
#include "compiler/emit/containers.h"

namespace precis::emit {

StatusOr<flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<plan::Container>>>> WriteContainers(
    flatbuffers::FlatBufferBuilder& b, const std::vector<ir::OutputContainer>& containers, const std::string& program,
    const std::vector<int>& output_ids, const std::vector<std::string>& output_names) {
  flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<plan::Container>>> none;
  auto find = [&](const std::string& name) {
    for (size_t i = 0; i < output_names.size(); ++i)
      if (output_names[i] == name) return output_ids[i];
    return -1;
  };
  std::vector<flatbuffers::Offset<plan::Container>> list;
  for (const ir::OutputContainer& c : containers) {
    std::vector<std::string> parts = c.elements;
    for (const std::string* part : {&c.stack, &c.dims, &c.present})
      if (!part->empty()) parts.push_back(*part);
    size_t found = 0;
    for (const std::string& part : parts) found += find(part) >= 0;
    if (found == 0) continue;
    if (found != parts.size()) return InvalidArgument("program '" + program + "' outputs only some parts of the output '" + c.name + "'");
    std::vector<int> elements;
    for (const std::string& e : c.elements) elements.push_back(find(e));
    auto id = [&](const std::string& part) { return part.empty() ? -1 : find(part); };
    list.push_back(plan::CreateContainer(b, b.CreateString(c.name), uint8_t(c.kind), b.CreateVector(elements), id(c.stack), id(c.dims), id(c.present)));
  }
  if (list.empty()) return none;
  return b.CreateVector(list);
}

}  // namespace precis::emit
