#include "output/trace/memory_events.h"

namespace gpuleak::output::trace {

MemoryEvents::MemoryEvents(const format::Capture &capture, const analysis::Analysis &analysis)
    : capture_(capture), lives_(analysis::lives_of(capture, analysis)) {
  const std::vector<analysis::AllocationLife> &lives = lives_->lives;
  life_of_.assign(size(), kNoEvent);
  for (uint32_t i = 0; i < lives.size(); ++i) {
    const analysis::AllocationLife &l = lives[i];
    life_of_[l.birth] = i;
    // The free that ended it (not a context reset, nor the allocation that reused its address).
    if (l.death != analysis::kStillAlive && at(l.death).op == static_cast<uint8_t>(format::Op::kFree))
      life_of_[l.death] = i;
  }
}

}  // namespace gpuleak::output::trace
