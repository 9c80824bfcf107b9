// ElfModule (see elf_module.h).
#include "runtime/cpu/elf_module.h"

#include <elf.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <vector>

namespace precis::rt {

namespace {

Status Bad(const std::string& what) { return InvalidArgument("generated code module: " + what); }

template <typename T>
bool ReadAt(const uint8_t* data, size_t size, uint64_t offset, T* out) {
  if (offset > size || sizeof(T) > size - offset) return false;
  std::memcpy(out, data + offset, sizeof(T));
  return true;
}

bool InFile(size_t size, uint64_t offset, uint64_t bytes) { return offset <= size && bytes <= size - offset; }

}  // namespace

ElfModule::~ElfModule() {
  if (base_) munmap(base_, size_);
}

StatusOr<std::unique_ptr<ElfModule>> ElfModule::Load(const uint8_t* data, size_t size) {
  Elf64_Ehdr eh;
  if (!ReadAt(data, size, 0, &eh)) return Bad("shorter than an ELF header");
  if (std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_ident[EI_DATA] != ELFDATA2LSB)
    return Bad("not a little-endian ELF64 file");
  if (eh.e_type != ET_REL || eh.e_machine != EM_X86_64) return Bad("not an x86-64 relocatable object");
  if (eh.e_shentsize != sizeof(Elf64_Shdr) || eh.e_shnum == 0 || eh.e_shnum > 4096 || !InFile(size, eh.e_shoff, uint64_t(eh.e_shnum) * sizeof(Elf64_Shdr)))
    return Bad("section headers lie outside the file");
  std::vector<Elf64_Shdr> sh(eh.e_shnum);
  std::memcpy(sh.data(), data + eh.e_shoff, sh.size() * sizeof(Elf64_Shdr));

  // Layout of the allocated sections in one mapping.
  std::vector<uint64_t> place(sh.size(), UINT64_MAX);
  uint64_t total = 0;
  for (size_t i = 0; i < sh.size(); ++i) {
    const Elf64_Shdr& s = sh[i];
    if (s.sh_type != SHT_NOBITS && s.sh_type != SHT_NULL && !InFile(size, s.sh_offset, s.sh_size)) return Bad("section " + std::to_string(i) + " lies outside the file");
    if (!(s.sh_flags & SHF_ALLOC)) continue;
    if (s.sh_flags & (SHF_WRITE | SHF_TLS) || s.sh_type == SHT_NOBITS) return Bad("section " + std::to_string(i) + " is writable, thread-local or zero-filled");
    if (s.sh_type == SHT_NULL) return Bad("section " + std::to_string(i) + " is loaded but has no type");
    uint64_t align = s.sh_addralign ? s.sh_addralign : 1;
    if (align & (align - 1) || align > 4096) return Bad("section " + std::to_string(i) + " has alignment " + std::to_string(align));
    if (s.sh_size > (uint64_t(1) << 30) || total > (uint64_t(1) << 30)) return Bad("sections larger than 1 GiB");
    total = (total + align - 1) & ~(align - 1);
    place[i] = total;
    total += s.sh_size;
  }
  if (total == 0) return Bad("no code");
  long page = sysconf(_SC_PAGESIZE);
  size_t mapped = size_t((total + uint64_t(page) - 1) / uint64_t(page) * uint64_t(page));
  void* mem = mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED) return Internal("generated code module: cannot map " + std::to_string(mapped) + " bytes");
  std::unique_ptr<ElfModule> m(new ElfModule());
  m->base_ = static_cast<uint8_t*>(mem);
  m->size_ = mapped;
  for (size_t i = 0; i < sh.size(); ++i)
    if (place[i] != UINT64_MAX && sh[i].sh_size) std::memcpy(m->base_ + place[i], data + sh[i].sh_offset, size_t(sh[i].sh_size));

  // The symbol table and its strings.
  size_t symtab = 0;
  for (size_t i = 0; i < sh.size(); ++i)
    if (sh[i].sh_type == SHT_SYMTAB) {
      if (symtab) return Bad("two symbol tables");
      symtab = i;
    }
  if (!symtab) return Bad("no symbol table");
  const Elf64_Shdr& st = sh[symtab];
  if (st.sh_entsize != sizeof(Elf64_Sym) || st.sh_link >= sh.size() || sh[st.sh_link].sh_type != SHT_STRTAB) return Bad("malformed symbol table");
  const Elf64_Shdr& strs = sh[st.sh_link];
  size_t nsyms = size_t(st.sh_size / sizeof(Elf64_Sym));
  std::vector<uint64_t> address(nsyms, 0);
  auto name_of = [&](uint32_t off, std::string* out) {
    if (off >= strs.sh_size) return false;
    const char* p = reinterpret_cast<const char*>(data + strs.sh_offset + off);
    size_t n = strnlen(p, size_t(strs.sh_size - off));
    if (n == strs.sh_size - off) return false;  // not terminated inside the table
    *out = std::string(p, n);
    return true;
  };
  for (size_t k = 1; k < nsyms; ++k) {
    Elf64_Sym sym;
    std::memcpy(&sym, data + st.sh_offset + k * sizeof(Elf64_Sym), sizeof sym);
    std::string name;
    if (!name_of(sym.st_name, &name)) return Bad("symbol " + std::to_string(k) + " has a bad name");
    int type = ELF64_ST_TYPE(sym.st_info);
    if (sym.st_shndx == SHN_UNDEF) {
      if (!name.empty()) return Bad("imports '" + name + "'");
      continue;
    }
    if (sym.st_shndx == SHN_ABS) {
      address[k] = sym.st_value;
      continue;
    }
    if (sym.st_shndx >= sh.size()) return Bad("symbol '" + name + "' in a reserved or unknown section");
    if (place[sym.st_shndx] == UINT64_MAX) continue;  // debug or other unloaded sections
    if (sym.st_value > sh[sym.st_shndx].sh_size) return Bad("symbol '" + name + "' lies outside its section");
    address[k] = reinterpret_cast<uint64_t>(m->base_) + place[sym.st_shndx] + sym.st_value;
    if (type == STT_FUNC && ELF64_ST_BIND(sym.st_info) == STB_GLOBAL) {
      if (sym.st_size > sh[sym.st_shndx].sh_size - sym.st_value) return Bad("function '" + name + "' runs past its section");
      m->functions_[name] = reinterpret_cast<const void*>(address[k]);
    }
  }

  // Relocations of the loaded sections.
  for (size_t i = 0; i < sh.size(); ++i) {
    const Elf64_Shdr& r = sh[i];
    if (r.sh_type == SHT_REL) return Bad("REL relocations (x86-64 objects use RELA)");
    if (r.sh_type != SHT_RELA) continue;
    if (r.sh_info >= sh.size() || r.sh_link != symtab || r.sh_entsize != sizeof(Elf64_Rela)) return Bad("malformed relocation section " + std::to_string(i));
    if (place[r.sh_info] == UINT64_MAX) continue;
    const Elf64_Shdr& target = sh[r.sh_info];
    for (uint64_t off = 0; off + sizeof(Elf64_Rela) <= r.sh_size; off += sizeof(Elf64_Rela)) {
      Elf64_Rela rel;
      std::memcpy(&rel, data + r.sh_offset + off, sizeof rel);
      uint64_t sym = ELF64_R_SYM(rel.r_info);
      uint32_t type = ELF64_R_TYPE(rel.r_info);
      if (sym == 0 || sym >= nsyms) return Bad("relocation against symbol " + std::to_string(sym));
      Elf64_Sym s;
      std::memcpy(&s, data + st.sh_offset + sym * sizeof(Elf64_Sym), sizeof s);
      if (s.st_shndx != SHN_ABS && (s.st_shndx >= sh.size() || place[s.st_shndx] == UINT64_MAX)) return Bad("relocation against a symbol outside the loaded sections");
      size_t width = type == R_X86_64_64 || type == R_X86_64_PC64 ? 8 : 4;
      if (rel.r_offset > target.sh_size || width > target.sh_size - rel.r_offset) return Bad("relocation outside its section");
      uint8_t* where = m->base_ + place[r.sh_info] + rel.r_offset;
      uint64_t S = address[sym], P = reinterpret_cast<uint64_t>(where);
      int64_t A = rel.r_addend;
      switch (type) {
        case R_X86_64_64: {
          uint64_t v = S + uint64_t(A);
          std::memcpy(where, &v, 8);
          break;
        }
        case R_X86_64_PC64: {
          uint64_t v = S + uint64_t(A) - P;
          std::memcpy(where, &v, 8);
          break;
        }
        case R_X86_64_PC32:
        case R_X86_64_PLT32: {
          int64_t v = int64_t(S + uint64_t(A) - P);
          if (v != int64_t(int32_t(v))) return Bad("PC-relative relocation out of range");
          int32_t w = int32_t(v);
          std::memcpy(where, &w, 4);
          break;
        }
        default:
          return Bad("relocation type " + std::to_string(type));
      }
    }
  }
  if (m->functions_.empty()) return Bad("no global functions");
  if (mprotect(m->base_, m->size_, PROT_READ | PROT_EXEC) != 0) return Internal("generated code module: cannot make the code executable");
  return m;
}

const void* ElfModule::Find(const std::string& name) const {
  auto it = functions_.find(name);
  return it == functions_.end() ? nullptr : it->second;
}

}  // namespace precis::rt
