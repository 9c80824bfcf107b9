// A loader for the plan's generated CPU code (compiler/codegen/cpu_codegen.h): an x86-64 ELF64
// relocatable object is checked, its allocated sections laid out in one private mapping, its
// relocations applied, and the mapping made read-only and executable. No dlopen, no linker, no
// imports: an object with an undefined symbol, a writable, thread-local or zero-filled section, a
// relocation type other than the PC-relative and absolute 32/64-bit forms, or anything pointing
// outside the file or its sections is refused with a message saying what.
//
// The code itself is trusted as far as the plan is: a plan holding modules is a program, and a
// session runs its code only for the FusedElementwise steps whose description it checked
// (fused_program.h: the entry name is the description's hash). Sessions with reference kernels
// only never load modules.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "precis/status.h"

namespace precis::rt {

class ElfModule {
 public:
  ElfModule(const ElfModule&) = delete;
  ElfModule& operator=(const ElfModule&) = delete;
  ~ElfModule();

  static StatusOr<std::unique_ptr<ElfModule>> Load(const uint8_t* data, size_t size);
  // The address of the global function `name`, or nullptr.
  const void* Find(const std::string& name) const;
  size_t mapped_bytes() const { return size_; }

 private:
  ElfModule() = default;
  uint8_t* base_ = nullptr;
  size_t size_ = 0;
  std::map<std::string, const void*> functions_;
};

}  // namespace precis::rt
