// libFuzzer target for the ONNX importer. Any bytes must give either an error Status or a model
// that passes the verifier (the importer verifies before returning), prints to text, parses
// back to an equal model and verifies again. A crash, a sanitizer report or a failed round trip
// is a bug; the last two abort with the reason and the printed model on stderr.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "compiler/ir/compare.h"
#include "compiler/ir/text.h"
#include "compiler/ir/verifier.h"
#include "compiler/onnx/importer.h"

namespace {

[[noreturn]] void Die(const std::string& what, const std::string& detail, const std::string& text) {
  std::fprintf(stderr, "importer_fuzz: %s: %s\n--- printed model ---\n%s\n", what.c_str(),
               detail.c_str(), text.c_str());
  std::abort();
}

void ImportAndRoundTrip(const uint8_t* data, size_t size, const precis::onnx::ImportOptions& options) {
  // An empty base_dir refuses external data: a fuzzed path must never reach the file system.
  auto model = precis::onnx::ImportModelFromBuffer(data, size, "", options);
  if (!model.ok()) return;
  std::string text = precis::ir::PrintModel(**model);
  auto reparsed = precis::ir::ParseModel(text);
  if (!reparsed.ok()) Die("printed model does not parse", reparsed.status().ToString(), text);
  std::string why;
  if (!precis::ir::ModelsEqual(**model, **reparsed, &why)) Die("round trip changed the model", why, text);
  precis::Status verified = precis::ir::Verify(**reparsed);
  if (!verified.ok()) Die("reparsed model fails verification", verified.ToString(), text);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  precis::onnx::ImportOptions options;
  // Odd-sized inputs also take the keep_initializer_inputs path (inputs with default values);
  // tying it to the size rather than a header byte keeps real .onnx files valid seeds.
  options.keep_initializer_inputs = (size & 1) != 0;
  ImportAndRoundTrip(data, size, options);
  return 0;
}
