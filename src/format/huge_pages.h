// Large arrays of the offline tools (a 10-million-event capture decodes to gigabytes): asking for
// transparent huge pages before the memory is first touched cuts its page faults 512-fold, which
// on a virtual machine is most of the time spent filling it (docs/benchmarks.md). Advice only:
// where THP is off, or the kernel declines, nothing changes. Never used by the shim.
#pragma once

#include <sys/mman.h>

#include <cstdint>
#include <vector>

namespace gpuleak::format {

// Call right after reserve()/resize() of a large vector, before filling it.
template <typename T, typename A>
void prefer_huge_pages(const std::vector<T, A> &v) {
  constexpr uintptr_t k2MiB = uintptr_t{2} << 20;
  const uintptr_t bytes = v.capacity() * sizeof(T);
  if (bytes < 4 * k2MiB) return;
  uintptr_t begin = reinterpret_cast<uintptr_t>(v.data());
  uintptr_t end = begin + bytes;
  begin = (begin + k2MiB - 1) & ~(k2MiB - 1);
  end &= ~(k2MiB - 1);
#ifdef MADV_HUGEPAGE
  // NOLINTNEXTLINE(performance-no-int-to-ptr): the vector's own pages, rounded to 2 MiB
  if (end > begin) (void)madvise(reinterpret_cast<void *>(begin), end - begin, MADV_HUGEPAGE);
#endif
}

}  // namespace gpuleak::format
