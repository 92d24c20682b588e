// The module map: which ELF objects are loaded where, so that raw return addresses can be
// symbolized after the run (heaptrack's approach, research/CAPTURE.md 5.2). Written by the writer
// thread before each batch of events whenever dl_iterate_phdr's load/unload counters changed.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <utility>

namespace gpuleak::core {

class ModuleMap {
 public:
  // Appends Module records (RecordHeader + payload) for every loaded object not yet written to
  // `out`. Cheap when nothing changed since the last call.
  void append_changes(std::string *out);
  // gpuleak's own text range, found from the address of one of its functions.
  static std::pair<uintptr_t, uintptr_t> range_of(const void *address);

 private:
  unsigned long long adds_ = ~0ull, subs_ = ~0ull;
  std::set<std::pair<std::string, uint64_t>> written_;  // (path, load bias)
};

}  // namespace gpuleak::core
