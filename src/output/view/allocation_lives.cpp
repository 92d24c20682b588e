// The viewer's allocations, from the analysis's own replay (analysis/lives.h): the public
// Analysis keeps every allocation's life when asked (AnalysisOptions::record_lives, which the front
// door sets for the viewer), so the viewer draws the very events the verdicts were computed on and
// never replays the capture a second way. Unlike the analysis, this keeps one time per event: the
// viewer draws them all.
#include "output/view/allocation_lives.h"

#include <algorithm>

namespace gpuleak::output::view {

struct AllocationLives::Impl {
  std::shared_ptr<const analysis::Lives> lives;
  uint64_t anchor = 0;
};

namespace {

// Nanoseconds since the run's start (a record before the anchor counts as the start).
uint64_t since(uint64_t t, uint64_t anchor) { return t > anchor ? t - anchor : 0; }

std::shared_ptr<const analysis::Lives> lives_of(const format::Capture &capture, const analysis::Analysis &a) {
  if (a.lives) return a.lives;
  // An analysis made without record_lives (outside the front door): the lives do not depend on the
  // options, so a default analysis that records them gives the same ones.
  analysis::AnalysisOptions options;
  options.record_lives = true;
  options.advice.enabled = false;
  return analysis::analyze(capture, options).lives;
}

}  // namespace

AllocationLives::AllocationLives(const format::Capture &capture, const analysis::Analysis &analysis)
    : impl_(std::make_unique<Impl>()) {
  impl_->anchor = capture.header.monotonic_ns;
  impl_->lives = lives_of(capture, analysis);
  for (const analysis::AllocationLife &l : impl_->lives->lives) {
    if (l.device < 0) continue;  // host pinned/registered memory is not device memory
    Life life;
    life.device = l.device;
    life.size = l.size;
    life.birth = l.birth;
    life.death = l.death == analysis::kStillAlive ? kAlive : l.death;
    life.site = l.site;
    life.pool_block = l.pool_block;
    life.segment = l.segment;
    life.birth_ns = time_of(l.birth);
    if (life.death != kAlive) life.death_ns = time_of(life.death);
    lives_.push_back(life);
  }
}

AllocationLives::~AllocationLives() = default;

uint32_t AllocationLives::position_at(uint64_t t_ns) const {
  const auto &t = impl_->lives->times;
  return static_cast<uint32_t>(std::lower_bound(t.begin(), t.end(), t_ns + impl_->anchor) - t.begin());
}

uint64_t AllocationLives::time_of(uint32_t position) const {
  return since(impl_->lives->times[position], impl_->anchor);
}

}  // namespace gpuleak::output::view
