// libFuzzer target for the loader of generated CPU code, runtime/cpu/elf_module.h. Any bytes must
// give an error Status or a module; nothing is executed (the code bytes are the plan's to vouch
// for, through its hash). A crash, a sanitizer report or a leak is a bug. Seeds: objects written by
// the code generator (elf_seeds/, from tests/fuzz/make_seeds.py).
#include <cstddef>
#include <cstdint>

#include "runtime/cpu/elf_module.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto m = precis::rt::ElfModule::Load(data, size);
  if (m.ok()) (void)(*m)->Find("fused_0000000000000000");
  return 0;
}
