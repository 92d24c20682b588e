#include "core/module_map.h"

#include <elf.h>
#include <link.h>
#include <unistd.h>

#include <climits>
#include <cstring>
#include <vector>

#include "format/capture_format.h"
#include "format/record_framing.h"

namespace gpuleak::core {

namespace {

struct Loaded {
  std::string path;
  uint64_t bias;
  std::string build_id;
  std::vector<std::pair<uint64_t, uint64_t>> segments;
};

std::string build_id_of(const dl_phdr_info *info) {
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr) &ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_NOTE) continue;
    auto *p = reinterpret_cast<const uint8_t *>(info->dlpi_addr + ph.p_vaddr);
    const uint8_t *end = p + ph.p_memsz;
    while (p + sizeof(ElfW(Nhdr)) <= end) {
      auto *n = reinterpret_cast<const ElfW(Nhdr) *>(p);
      const uint8_t *name = p + sizeof(*n);
      const uint8_t *desc = name + ((n->n_namesz + 3) & ~3u);
      const uint8_t *next = desc + ((n->n_descsz + 3) & ~3u);
      if (next > end) break;
      if (n->n_type == NT_GNU_BUILD_ID && n->n_namesz == 4 && std::memcmp(name, "GNU", 4) == 0)
        return std::string(reinterpret_cast<const char *>(desc), n->n_descsz);
      p = next;
    }
  }
  return {};
}

std::string exe_path() {
  char buf[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string();
}

int collect(dl_phdr_info *info, size_t, void *arg) {
  auto *all = static_cast<std::vector<Loaded> *>(arg);
  Loaded m;
  m.path = info->dlpi_name ? info->dlpi_name : "";
  if (m.path.empty()) {
    if (!all->empty()) return 0;  // the vDSO and other nameless objects after the executable
    m.path = exe_path();          // the first entry is the executable
  }
  m.bias = info->dlpi_addr;
  m.build_id = build_id_of(info);
  for (int i = 0; i < info->dlpi_phnum; ++i)
    if (info->dlpi_phdr[i].p_type == PT_LOAD)
      m.segments.emplace_back(info->dlpi_phdr[i].p_vaddr, info->dlpi_phdr[i].p_memsz);
  all->push_back(std::move(m));
  return 0;
}

int counters(dl_phdr_info *info, size_t size, void *arg) {
  auto *c = static_cast<std::pair<unsigned long long, unsigned long long> *>(arg);
  if (size >= offsetof(dl_phdr_info, dlpi_subs) + sizeof(info->dlpi_subs)) {
    c->first = info->dlpi_adds;
    c->second = info->dlpi_subs;
  }
  return 1;  // the counters are global: the first object is enough
}

int find_range(dl_phdr_info *info, size_t, void *arg) {
  auto *q = static_cast<std::pair<uintptr_t, std::pair<uintptr_t, uintptr_t>> *>(arg);
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr) &ph = info->dlpi_phdr[i];
    uintptr_t lo = info->dlpi_addr + ph.p_vaddr, hi = lo + ph.p_memsz;
    if (ph.p_type == PT_LOAD && (ph.p_flags & PF_X) && q->first >= lo && q->first < hi) {
      q->second = {lo, hi};
      return 1;
    }
  }
  return 0;
}

}  // namespace

void ModuleMap::append_changes(std::string *out) {
  std::pair<unsigned long long, unsigned long long> now{0, 0};
  dl_iterate_phdr(counters, &now);
  if (now.first == adds_ && now.second == subs_) return;
  adds_ = now.first;
  subs_ = now.second;
  std::vector<Loaded> all;
  dl_iterate_phdr(collect, &all);
  for (const Loaded &m : all) {
    if (!written_.emplace(m.path, m.bias).second) continue;
    format::ModuleRecord r{};
    r.load_bias = m.bias;
    r.path_length = static_cast<uint32_t>(m.path.size());
    r.build_id_length = static_cast<uint16_t>(m.build_id.size());
    r.segment_count = static_cast<uint16_t>(m.segments.size());
    std::string tail = m.path + m.build_id;  // then the segments, (vaddr, memsz) pairs
    for (auto [vaddr, memsz] : m.segments) {
      uint64_t seg[2] = {vaddr, memsz};
      tail.append(reinterpret_cast<const char *>(seg), sizeof seg);
    }
    format::append_record(out, format::RecordType::kModule, &r, sizeof r, tail.data(), tail.size());
  }
}

std::pair<uintptr_t, uintptr_t> ModuleMap::range_of(const void *address) {
  std::pair<uintptr_t, std::pair<uintptr_t, uintptr_t>> q{reinterpret_cast<uintptr_t>(address), {0, 0}};
  dl_iterate_phdr(find_range, &q);
  return q.second;
}

}  // namespace gpuleak::core
