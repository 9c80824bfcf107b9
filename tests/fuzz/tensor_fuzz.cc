// libFuzzer target for the tensor file readers of the CLI (tools/precis/tensor_io.h): the same
// bytes go to ParseNpy, ParseNpz and ParseTensorProto. Each must give an error Status or tensors
// whose data holds exactly numel * dtype-size bytes. A crash, a sanitizer report or an
// inconsistent tensor is a bug; the last aborts with the reason on stderr. An empty base folder
// keeps a fuzzed TensorProto's external data from reaching the file system.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "tools/precis/tensor_io.h"

namespace {

void Check(const precis::tools::HostTensor& t, const char* reader) {
  uint64_t n = 1;
  bool negative = false;
  for (int64_t d : t.dims) {
    negative |= d < 0;
    n *= uint64_t(d);  // no overflow unless inconsistent: the data is in memory
  }
  size_t element = precis::DataTypeSize(t.dtype);
  if (negative || element == 0 || n * element != t.data.size()) {
    std::fprintf(stderr, "tensor_fuzz: %s returned a %s tensor of %zu dims holding %zu bytes\n", reader,
                 precis::DataTypeName(t.dtype), t.dims.size(), t.data.size());
    std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string bytes(reinterpret_cast<const char*>(data), size);
  if (auto t = precis::tools::ParseNpy(bytes, "fuzz.npy"); t.ok()) Check(*t, "ParseNpy");
  if (auto s = precis::tools::ParseNpz(bytes, "fuzz.npz"); s.ok())
    for (const auto& [name, t] : *s) Check(t, "ParseNpz");
  if (auto t = precis::tools::ParseTensorProto(bytes, "fuzz.pb", ""); t.ok()) Check(t.value(), "ParseTensorProto");
  return 0;
}
