// libFuzzer target for the IR text parser. Any text must give either an error Status or a model
// that prints to text which parses back to an equal model and prints to the same text again.
// The verifier runs on every parsed model (it may reject it: parsed text is not verified); it
// must only not crash. A failed round trip is a bug and aborts with the reason on stderr.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "compiler/ir/compare.h"
#include "compiler/ir/text.h"
#include "compiler/ir/verifier.h"

namespace {

[[noreturn]] void Die(const std::string& what, const std::string& detail, const std::string& text) {
  std::fprintf(stderr, "text_parser_fuzz: %s: %s\n--- printed model ---\n%s\n", what.c_str(),
               detail.c_str(), text.c_str());
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  auto model = precis::ir::ParseModel(input);
  if (!model.ok()) return 0;
  (void)precis::ir::Verify(**model);
  std::string text = precis::ir::PrintModel(**model);
  auto reparsed = precis::ir::ParseModel(text);
  if (!reparsed.ok()) Die("printed model does not parse", reparsed.status().ToString(), text);
  std::string why;
  if (!precis::ir::ModelsEqual(**model, **reparsed, &why)) Die("round trip changed the model", why, text);
  std::string again = precis::ir::PrintModel(**reparsed);
  if (again != text) Die("printing is not stable", "second print differs:\n" + again, text);
  return 0;
}
