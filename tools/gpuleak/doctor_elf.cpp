// gpuleak doctor: what one ELF file says (doctor_internal.h), read with libelf from a file opened
// read-only after stat called it a regular file.
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <string.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <set>

#include "doctor_internal.h"

namespace gpuleak::cli::doctor_detail {

// The kernel reads this much of a file to find "#!" and the interpreter line (BINPRM_BUF_SIZE).
constexpr size_t kHeadBytes = 256;

const char *machine_name(unsigned machine) {
  switch (machine) {
    case EM_X86_64:
      return "x86-64";
    case EM_386:
      return "i386";
    case EM_AARCH64:
      return "aarch64";
    case EM_ARM:
      return "arm";
    case EM_PPC64:
      return "ppc64";
    default:
      return "an unknown machine";
  }
}

Fd::~Fd() {
  if (fd >= 0) close(fd);
}

// Opens a path that stat already called a regular file. O_NONBLOCK: if it was swapped for a FIFO
// since, open must not wait for a writer; the fstat below then refuses it.
bool open_regular(const std::string &path, Fd *file, std::string *error) {
  file->fd = open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  struct stat st;
  if (file->fd < 0 || fstat(file->fd, &st) != 0) {
    *error = std::strerror(errno);
    return false;
  }
  if (!S_ISREG(st.st_mode)) {
    *error = "not a regular file";
    return false;
  }
  return true;
}

std::string read_head(int fd) {
  std::string head(kHeadBytes, '\0');
  ssize_t n = pread(fd, head.data(), head.size(), 0);
  head.resize(n > 0 ? static_cast<size_t>(n) : 0);
  return head;
}

bool is_elf(const std::string &head) {
  return head.size() >= SELFMAG && std::memcmp(head.data(), ELFMAG, SELFMAG) == 0;
}

namespace {

void read_symbols(Elf *elf, Elf_Scn *scn, const GElf_Shdr &sh, ElfFacts *f) {
  Elf_Data *data = elf_getdata(scn, nullptr);
  size_t entsize = gelf_fsize(elf, ELF_T_SYM, 1, EV_CURRENT);
  if (data == nullptr || entsize == 0) return;
  for (size_t i = 1; i < data->d_size / entsize; ++i) {  // entry 0 is the null symbol
    GElf_Sym sym;
    if (gelf_getsym(data, static_cast<int>(i), &sym) == nullptr) break;
    const char *name = elf_strptr(elf, sh.sh_link, sym.st_name);
    if (name == nullptr || *name == '\0') continue;
    bool defined = sym.st_shndx != SHN_UNDEF;
    int bind = GELF_ST_BIND(sym.st_info);
    if (defined && std::strcmp(name, "cudaMalloc") == 0) f->defines_cuda_malloc = true;
    if (starts_with(name, "__cudart")) f->has_cudart_symbol = true;
    if (sh.sh_type == SHT_DYNSYM && defined && (bind == STB_GLOBAL || bind == STB_WEAK || bind == STB_GNU_UNIQUE))
      f->exports.push_back(name);
  }
}

void read_needed(Elf *elf, Elf_Scn *scn, const GElf_Shdr &sh, ElfFacts *f) {
  Elf_Data *data = elf_getdata(scn, nullptr);
  size_t entsize = gelf_fsize(elf, ELF_T_DYN, 1, EV_CURRENT);
  if (data == nullptr || entsize == 0) return;
  for (size_t i = 0; i < data->d_size / entsize; ++i) {
    GElf_Dyn dyn;
    if (gelf_getdyn(data, static_cast<int>(i), &dyn) == nullptr || dyn.d_tag == DT_NULL) break;
    if (dyn.d_tag == DT_FLAGS_1 && (dyn.d_un.d_val & DF_1_PIE) != 0) f->pie = true;
    if (dyn.d_tag != DT_NEEDED) continue;
    const char *name = elf_strptr(elf, sh.sh_link, dyn.d_un.d_val);
    if (name != nullptr) f->needed.push_back(name);
  }
}

// A library with named versions carries one absolute symbol per version ("LIBFOO_1.0"): not code.
void read_version_names(Elf *elf, Elf_Scn *scn, const GElf_Shdr &sh, std::set<std::string> *names) {
  Elf_Data *data = elf_getdata(scn, nullptr);
  if (data == nullptr) return;
  size_t offset = 0;
  for (size_t i = 0; i < sh.sh_info; ++i) {
    GElf_Verdef def;
    GElf_Verdaux aux;
    if (gelf_getverdef(data, static_cast<int>(offset), &def) == nullptr) break;
    if (gelf_getverdaux(data, static_cast<int>(offset + def.vd_aux), &aux) == nullptr) break;
    if (const char *name = elf_strptr(elf, sh.sh_link, aux.vda_name)) names->insert(name);
    if (def.vd_next == 0) break;
    offset += def.vd_next;
  }
}

// A stripped static-runtime program has no symbols left, but cudart's loader string stays.
void scan_rodata(Elf *elf, Elf_Scn *scn, const GElf_Shdr &sh, size_t shstrndx, ElfFacts *f) {
  const char *name = elf_strptr(elf, shstrndx, sh.sh_name);
  if (name == nullptr || std::strcmp(name, ".rodata") != 0 || sh.sh_type != SHT_PROGBITS) return;
  Elf_Data *data = elf_getdata(scn, nullptr);
  static const char kNeedle[] = "libcuda.so.1";
  if (data != nullptr && data->d_buf != nullptr &&
      memmem(data->d_buf, data->d_size, kNeedle, sizeof kNeedle) != nullptr)  // with its NUL
    f->mentions_libcuda = true;
}

}  // namespace

ElfFacts read_elf(int fd) {
  ElfFacts f;
  elf_version(EV_CURRENT);
  // ELF_C_READ, not a mapping: a file truncated under us must give an error, not a SIGBUS.
  Elf *elf = elf_begin(fd, ELF_C_READ, nullptr);
  GElf_Ehdr eh;
  size_t phnum = 0;
  if (elf == nullptr || elf_kind(elf) != ELF_K_ELF || gelf_getehdr(elf, &eh) == nullptr ||
      elf_getphdrnum(elf, &phnum) != 0) {
    const char *why = elf_errmsg(-1);
    f.error = why != nullptr ? why : "not an ELF object";
    if (elf != nullptr) elf_end(elf);
    return f;
  }
  f.elf_class = eh.e_ident[EI_CLASS];
  f.machine = eh.e_machine;
  f.type = eh.e_type;
  for (size_t i = 0; i < phnum; ++i) {
    GElf_Phdr ph;
    if (gelf_getphdr(elf, static_cast<int>(i), &ph) == nullptr) {
      f.error = std::string("program headers: ") + elf_errmsg(-1);
      elf_end(elf);
      return f;
    }
    if (ph.p_type == PT_INTERP) f.has_interp = true;
  }
  size_t shstrndx = 0;
  bool have_shstrndx = elf_getshdrstrndx(elf, &shstrndx) == 0;
  std::set<std::string> version_names;
  for (Elf_Scn *scn = elf_nextscn(elf, nullptr); scn != nullptr; scn = elf_nextscn(elf, scn)) {
    GElf_Shdr sh;
    if (gelf_getshdr(scn, &sh) == nullptr) continue;
    f.has_sections = true;
    if (sh.sh_type == SHT_DYNAMIC) read_needed(elf, scn, sh, &f);
    if (sh.sh_type == SHT_SYMTAB || sh.sh_type == SHT_DYNSYM) read_symbols(elf, scn, sh, &f);
    if (sh.sh_type == SHT_GNU_verdef) read_version_names(elf, scn, sh, &version_names);
    if (have_shstrndx) scan_rodata(elf, scn, sh, shstrndx, &f);
  }
  elf_end(elf);
  std::vector<std::string> exports;
  for (auto &name : f.exports)
    if (version_names.count(name) == 0) exports.push_back(std::move(name));
  f.exports = std::move(exports);
  return f;
}

}  // namespace gpuleak::cli::doctor_detail
