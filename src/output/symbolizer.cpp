#include "output/symbolizer.h"

#include <cxxabi.h>
#include <elfutils/libdwfl.h>
#include <gelf.h>
#include <sys/stat.h>
#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <map>
#include <unordered_map>
#include <utility>

#include "text/code_owner.h"
#include "text/paths.h"

namespace gpuleak::output {
namespace {

char *g_debuginfo_path = nullptr;  // libdwfl's default search path (.debug, /usr/lib/debug)

const Dwfl_Callbacks kCallbacks = {
    dwfl_build_id_find_elf,
    dwfl_standard_find_debuginfo,
    dwfl_offline_section_address,
    &g_debuginfo_path,
};

std::string demangle(const char *name) {
  // Only mangled names go to the demangler: plain C names come back as they are, and it never
  // sees arbitrary bytes that merely happen to be in a string table.
  if (name[0] != '_' || name[1] != 'Z') return name;
  int status = 0;
  char *out = abi::__cxa_demangle(name, nullptr, nullptr, &status);
  if (status != 0 || out == nullptr) return name;
  std::string s(out);
  std::free(out);
  return s;
}

struct Symbol {
  uint64_t start;  // module-relative (the Dwfl is reported at base 0)
  uint64_t size;
  const char *name;  // owned by libdw, valid while the Dwfl lives
  int rank;          // lower is preferred among symbols at one address
};

// One ELF file read with libdw, shared by every module record with the same path and build id.
// Each file gets its own Dwfl reported at base 0, so a library that was loaded at several
// addresses (or two libraries loaded at one address, one after the other) never collide: callers
// pass module-relative addresses.
class ElfObject {
 public:
  ElfObject(const std::string &path, const std::string &build_id) {
    struct stat st;
    // A FIFO or a device would block or read forever; only plain files are opened.
    if (path.empty() || stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) {
      problem_ = "file not found";
      return;
    }
    dwfl_ = dwfl_begin(&kCallbacks);
    if (dwfl_ == nullptr) {
      problem_ = dwfl_errmsg(-1);
      return;
    }
    dwfl_report_begin(dwfl_);
    module_ = dwfl_report_elf(dwfl_, path.c_str(), path.c_str(), -1, 0, true);
    dwfl_report_end(dwfl_, nullptr, nullptr);
    GElf_Addr bias = 0;
    if (module_ == nullptr || dwfl_module_getelf(module_, &bias) == nullptr) {
      problem_ = std::string("not a usable ELF file: ") + dwfl_errmsg(-1);
      module_ = nullptr;
      return;
    }
    const unsigned char *bits = nullptr;
    GElf_Addr id_vaddr = 0;
    int length = dwfl_module_build_id(module_, &bits, &id_vaddr);
    std::string found =
        length > 0 ? text::hex_bytes({reinterpret_cast<const char *>(bits), static_cast<size_t>(length)}) : "";
    if (found != build_id) {
      problem_ = "build id " + (found.empty() ? std::string("(none)") : found) + " differs from the recorded " +
                 (build_id.empty() ? "(none)" : build_id);
      module_ = nullptr;
      return;
    }
    dwfl_module_info(module_, nullptr, &low_, &high_, nullptr, nullptr, nullptr, nullptr);
    load_symbols();
  }
  ~ElfObject() {
    if (dwfl_ != nullptr) dwfl_end(dwfl_);
  }
  ElfObject(const ElfObject &) = delete;
  ElfObject &operator=(const ElfObject &) = delete;

  bool usable() const { return module_ != nullptr; }
  const std::string &problem() const { return problem_; }

  // Fills function, file and line for the instruction at module-relative address `pc`; *start is
  // the function symbol's module-relative start when one holds it (else left as it is).
  void lookup(uint64_t pc, Frame *frame, uint64_t *start) {
    if (!usable() || pc < low_ || pc >= high_) return;
    if (const Symbol *sym = symbol_at(pc)) {
      frame->function = name_of(sym);
      *start = sym->start;
    }
    if (Dwfl_Line *line = dwfl_module_getsrc(module_, pc)) {
      int lineno = 0;
      const char *file = dwfl_lineinfo(line, nullptr, &lineno, nullptr, nullptr, nullptr);
      if (file != nullptr) {
        frame->file = file;
        frame->line = lineno;
      }
    }
  }

 private:
  // dwfl_module_addrinfo scans the whole symbol table on every call (too slow for libraries with
  // a million symbols), so the function symbols are sorted once and binary-searched.
  void load_symbols() {
    int count = dwfl_module_getsymtab(module_);
    for (int i = 1; i < count; ++i) {
      GElf_Sym sym;
      GElf_Addr addr = 0;
      GElf_Word shndx = 0;
      const char *name = dwfl_module_getsym_info(module_, i, &sym, &addr, &shndx, nullptr, nullptr);
      int type = GELF_ST_TYPE(sym.st_info);
      if (name == nullptr || name[0] == '\0' || shndx == SHN_UNDEF || (type != STT_FUNC && type != STT_GNU_IFUNC))
        continue;
      int bind = GELF_ST_BIND(sym.st_info);
      int rank = (sym.st_size == 0 ? 4 : 0) + (bind == STB_GLOBAL ? 0 : bind == STB_WEAK ? 1 : 2);
      symbols_.push_back({addr, sym.st_size, name, rank});
    }
    std::sort(symbols_.begin(), symbols_.end(), [](const Symbol &a, const Symbol &b) {
      if (a.start != b.start) return a.start < b.start;
      if (a.rank != b.rank) return a.rank < b.rank;
      return std::strcmp(a.name, b.name) < 0;
    });
    symbols_.erase(std::unique(symbols_.begin(), symbols_.end(),
                               [](const Symbol &a, const Symbol &b) { return a.start == b.start; }),
                   symbols_.end());
  }

  const Symbol *symbol_at(uint64_t pc) const {
    auto it =
        std::upper_bound(symbols_.begin(), symbols_.end(), pc, [](uint64_t v, const Symbol &s) { return v < s.start; });
    if (it == symbols_.begin()) return nullptr;
    --it;
    const Symbol *nearest = &*it;
    // Symbols can nest (a local alias inside a larger function): look back a little.
    for (int i = 0; i < 16; ++i, --it) {
      if (pc - it->start < it->size) return &*it;
      if (it == symbols_.begin()) break;
    }
    // A zero-size symbol (hand-written assembly) is taken to cover up to the next symbol.
    return nearest->size == 0 ? nearest : nullptr;
  }

  const std::string &name_of(const Symbol *sym) {
    auto [it, inserted] = names_.try_emplace(sym);
    if (inserted) it->second = demangle(sym->name);
    return it->second;
  }

  Dwfl *dwfl_ = nullptr;
  Dwfl_Module *module_ = nullptr;  // null when the file's symbols are not to be used
  Dwarf_Addr low_ = 0, high_ = 0;
  std::string problem_;
  std::vector<Symbol> symbols_;
  std::unordered_map<const Symbol *, std::string> names_;  // demangled once per symbol
};

}  // namespace

struct Symbolizer::Impl {
  struct Piece {
    uint64_t end;
    size_t module;  // index into capture.modules
  };

  explicit Impl(const format::Capture &c) : capture(c), objects_of(c.modules.size(), nullptr) {
    for (size_t i = 0; i < c.modules.size(); ++i)
      for (const auto &[start, end] : c.modules[i].segments)
        if (start < end) paint(start, end, i);
  }

  // Lays [start, end) over whatever earlier modules covered there: capture order is load order,
  // so the last record to cover an address describes what was mapped there last.
  void paint(uint64_t start, uint64_t end, size_t module) {
    auto it = pieces.lower_bound(start);
    if (it != pieces.begin()) {
      auto prev = std::prev(it);
      if (prev->second.end > start) {
        Piece old = prev->second;
        prev->second.end = start;
        if (old.end > end) pieces.emplace(end, old);
      }
    }
    it = pieces.lower_bound(start);
    while (it != pieces.end() && it->first < end) {
      if (it->second.end > end) {
        Piece rest = it->second;
        pieces.erase(it);
        pieces.emplace(end, rest);
        break;
      }
      it = pieces.erase(it);
    }
    pieces.emplace(start, Piece{end, module});
  }

  const Piece *piece_at(uint64_t pc, uint64_t *start) const {
    auto it = pieces.upper_bound(pc);
    if (it == pieces.begin()) return nullptr;
    --it;
    if (pc >= it->second.end) return nullptr;
    *start = it->first;
    return &it->second;
  }

  ElfObject *object(size_t module) {
    if (objects_of[module] != nullptr) return objects_of[module];
    const format::Module &m = capture.modules[module];
    std::string key = m.path + '\0' + m.build_id;
    auto &slot = objects[key];
    if (slot == nullptr) {
      slot = std::make_unique<ElfObject>(m.path, m.build_id);
      if (!slot->usable()) problems.push_back("symbols of " + m.path + " not used: " + slot->problem());
    }
    return objects_of[module] = slot.get();
  }

  Frame resolve(uint64_t address) {
    Frame f;
    f.address = address;
    if (address == 0) return f;
    // The call instruction ends just before the return address, and may be the last one of a
    // segment: both the module and the symbols are looked up at address - 1.
    uint64_t pc = address - 1;
    uint64_t start = 0;
    const Piece *piece = piece_at(pc, &start);
    if (piece == nullptr) return f;
    const format::Module &m = capture.modules[piece->module];
    f.module = m.path;
    f.build_id = m.build_id;
    const uint64_t relative = pc - m.load_bias;
    uint64_t function_start = 0;  // without a symbol: the offset into the module
    object(piece->module)->lookup(relative, &f, &function_start);
    if (f.line <= 0) f.code_offset = relative + 1 - function_start;  // of the return address, as captured
    return f;
  }

  const format::Capture &capture;
  std::map<uint64_t, Piece> pieces;     // start -> non-overlapping [start, end) and its module
  std::vector<ElfObject *> objects_of;  // per module record, opened on first use
  std::unordered_map<std::string, std::unique_ptr<ElfObject>> objects;  // by path + build id
  std::unordered_map<uint64_t, Frame> frames;
  std::unordered_map<uint32_t, Stack> stacks;
  std::vector<std::string> problems;
};

Symbolizer::Symbolizer(const format::Capture &capture) : impl_(std::make_unique<Impl>(capture)) {}
Symbolizer::~Symbolizer() = default;
Symbolizer::Symbolizer(Symbolizer &&) noexcept = default;
Symbolizer &Symbolizer::operator=(Symbolizer &&) noexcept = default;

Frame Symbolizer::frame(uint64_t address) {
  auto it = impl_->frames.find(address);
  if (it == impl_->frames.end()) it = impl_->frames.emplace(address, impl_->resolve(address)).first;
  return it->second;
}

Stack Symbolizer::symbolize(uint32_t stack_id) {
  auto cached = impl_->stacks.find(stack_id);
  if (cached != impl_->stacks.end()) return cached->second;
  Stack out;
  auto it = impl_->capture.stacks.find(stack_id);
  if (it != impl_->capture.stacks.end() && it->second.kind == format::StackKind::kNative) {
    out.reserve(it->second.frames.size());
    for (uint64_t address : it->second.frames) out.push_back(frame(address));
  } else if (it != impl_->capture.stacks.end() && it->second.kind == format::StackKind::kPython) {
    out = python_frames(impl_->capture, it->second);
  }
  return impl_->stacks.emplace(stack_id, std::move(out)).first->second;
}

Stack python_frames(const format::Capture &capture, const format::Stack &stack) {
  // docs/capture-format.md: pairs {(file string id << 32) | function string id, line}. A string
  // the capture lacks (cut short) reads as "", a line of 0 as unknown.
  Stack out;
  const std::vector<uint64_t> &words = stack.frames;
  out.reserve(words.size() / 2);
  for (size_t i = 0; i + 1 < words.size(); i += 2) {
    Frame f;
    f.kind = Frame::Kind::kPython;
    f.file = capture.string(static_cast<uint32_t>(words[i] >> 32));
    f.function = capture.string(static_cast<uint32_t>(words[i]));
    f.line = words[i + 1] <= 0x7fffffff ? static_cast<int>(words[i + 1]) : 0;
    out.push_back(std::move(f));
  }
  return out;
}

const std::vector<std::string> &Symbolizer::problems() const { return impl_->problems; }

bool is_gpuleak_or_cuda_frame(const Frame &frame) {
  const std::string_view base = text::basename_view(frame.module);
  for (std::string_view prefix : {"libgpuleak", "libcuda.so", "libcudart", "libcupti"})
    if (base.substr(0, prefix.size()) == prefix) return true;
  // nvcc's default build links the runtime statically: its frames sit in the program's own module
  // and are known by name only (cudaMalloc, cudart::..., __cudart...).
  const std::string &fn = frame.function;
  auto upper_after = [&](size_t n) { return fn.size() > n && std::isupper(static_cast<unsigned char>(fn[n])); };
  return (fn.compare(0, 4, "cuda") == 0 && upper_after(4)) || (fn.compare(0, 2, "cu") == 0 && upper_after(2)) ||
         fn.compare(0, 8, "cudart::") == 0 || fn.compare(0, 8, "__cudart") == 0 ||
         fn.compare(0, 16, "libcudart_static") == 0;  // its local symbols: libcudart_static_<hash>
}

Stack trim_to_caller(Stack stack) {
  auto first = std::find_if_not(stack.begin(), stack.end(), [](const Frame &f) {
    return f.kind == Frame::Kind::kNative && is_gpuleak_or_cuda_frame(f);
  });
  stack.erase(stack.begin(), first);
  // gpuleak's own Python hooks run inside the program's allocations (CuPy's pool calls
  // gpuleak._cupy's allocator wrapper, which calls the pool's malloc): wherever they sit in the
  // stack, they are none of the program's frames and never shown.
  stack.erase(std::remove_if(
                  stack.begin(), stack.end(),
                  [](const Frame &f) { return f.kind == Frame::Kind::kPython && text::is_gpuleak_hook_file(f.file); }),
              stack.end());
  return stack;
}

}  // namespace gpuleak::output
