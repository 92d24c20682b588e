// The one file of src/output that reads the analysis's replay (analysis/internal.h) directly: the
// public Analysis keeps totals and verdicts, and the viewer needs each allocation's life to draw
// memory over time. Reusing the ledger, rather than replaying the capture a second way, is what
// keeps the viewer's peak and live bytes equal to the report's.
#include "output/view/allocation_lives.h"

#include "analysis/internal.h"

namespace gpuleak::output::view {

namespace detail = analysis::detail;

struct AllocationLives::Impl {
  detail::Timeline timeline;
  uint64_t anchor = 0;
};

AllocationLives::AllocationLives(const format::Capture &capture) : impl_(std::make_unique<Impl>()) {
  impl_->timeline = detail::make_timeline(capture);
  impl_->anchor = capture.header.monotonic_ns;
  const detail::SiteTable sites = detail::intern_sites(impl_->timeline);
  const detail::Ledger ledger = detail::replay(capture, impl_->timeline, sites, {});
  lives_.reserve(ledger.allocs.size());
  for (const detail::Alloc &a : ledger.allocs) {
    if (!detail::on_device(a.space)) continue;
    Life l;
    l.device = ledger.devices[a.slot];
    l.size = a.size;
    l.birth = a.birth;
    l.birth_ns = time_of(a.birth);
    l.site = sites.sites[a.site];
    if (a.death != detail::kNone) {
      l.death = a.death;
      l.death_ns = time_of(a.death);
    }
    lives_.push_back(l);
  }
}

AllocationLives::~AllocationLives() = default;

uint32_t AllocationLives::position_at(uint64_t t_ns) const { return impl_->timeline.lower_bound(t_ns + impl_->anchor); }

uint64_t AllocationLives::time_of(uint32_t position) const {
  return detail::since_start(impl_->timeline.ts(position), impl_->anchor);
}

}  // namespace gpuleak::output::view
