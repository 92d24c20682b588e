// The one file of src/output that reads the analysis's replay (analysis/internal.h) directly: the
// public Analysis keeps totals and verdicts, and the viewer needs each allocation's life to draw
// memory over time. Observing the ledger's replay, rather than replaying the capture a second way,
// is what keeps the viewer's peak and live bytes equal to the report's. Unlike the analysis, this
// keeps one entry per allocation and one time per event: the viewer draws them all.
#include "output/view/allocation_lives.h"

#include <algorithm>

#include "analysis/internal.h"

namespace gpuleak::output::view {

namespace detail = analysis::detail;

struct AllocationLives::Impl {
  std::vector<uint64_t> times;  // per event position, monotonic
  uint64_t anchor = 0;
};

namespace {

// Every allocation in birth order (host ones too, dropped at the end), its death when it comes;
// the site is read again at the death and at the end, since a VMM mapping may move it.
class Collect : public detail::Observer {
 public:
  explicit Collect(const detail::SiteTable &sites) : sites_(sites) {}
  void born(uint32_t k, const format::MemoryRecord &, const detail::Life &a) override {
    Entry e;
    e.on_device = detail::on_device(a.space);
    e.life.size = a.size;
    e.life.birth = k;
    e.slot = a.slot;
    all.push_back(e);
  }
  void died(uint32_t k, const format::MemoryRecord &, const detail::Life &a) override {
    Entry &e = all[a.ordinal];
    e.life.death = k;
    e.life.site = sites_.sites[a.site];
  }
  void finish(const detail::LiveSet &live) override {
    live.for_each(
        [&](const detail::LiveKey &, const detail::Life &a) { all[a.ordinal].life.site = sites_.sites[a.site]; });
  }
  struct Entry {
    Life life;
    uint16_t slot = 0;
    bool on_device = false;
  };
  std::vector<Entry> all;

 private:
  const detail::SiteTable &sites_;
};

}  // namespace

AllocationLives::AllocationLives(const format::Capture &capture) : impl_(std::make_unique<Impl>()) {
  impl_->anchor = capture.header.monotonic_ns;
  const format::VectorMemorySource memory(capture.memory);
  std::vector<detail::Span> spans;
  std::vector<uint32_t> no_positions;
  detail::SiteTable sites;
  const detail::Timeline timeline = detail::make_timeline(capture, memory, &spans, {}, &no_positions, false, &sites);
  impl_->times.reserve(timeline.size);
  timeline.replay([&](uint32_t, const format::MemoryRecord &r) { impl_->times.push_back(r.ts_ns); });
  Collect collect(sites);
  detail::Ledger ledger;
  detail::replay(capture, timeline, sites, spans, {&collect}, &ledger);
  for (Collect::Entry &e : collect.all) {
    if (!e.on_device) continue;
    e.life.device = ledger.devices[e.slot];
    e.life.birth_ns = time_of(e.life.birth);
    if (e.life.death != kAlive) e.life.death_ns = time_of(e.life.death);
    lives_.push_back(e.life);
  }
}

AllocationLives::~AllocationLives() = default;

uint32_t AllocationLives::position_at(uint64_t t_ns) const {
  const auto &t = impl_->times;
  return static_cast<uint32_t>(std::lower_bound(t.begin(), t.end(), t_ns + impl_->anchor) - t.begin());
}

uint64_t AllocationLives::time_of(uint32_t position) const {
  return detail::since_start(impl_->times[position], impl_->anchor);
}

}  // namespace gpuleak::output::view
