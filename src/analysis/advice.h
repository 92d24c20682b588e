// Loop advice: the standard memory strategies for GPU loops (preallocate and reuse, do not empty
// the cache every step, release what is no longer needed, chunk the batch, keep allocation calls
// out of the loop body) turned into findings about this run, each with its evidence and the
// estimated saving (docs/advice.md explains every kind; docs/report-format.md every field).
//
// Decided here, in src/analysis, from the same replay as the verdicts: every front-end (the
// report's advice[], the stderr summary, the viewer) renders these findings and decides nothing.
// Every rule is conservative and needs the primary loop (except fragmentation, at an OOM or from
// NVML's samples): a loop that allocates nothing in its body gets no advice at all.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "analysis/site.h"

namespace gpuleak::analysis {

// In the order the findings are listed.
enum class AdviceKind : uint8_t {
  kChurn = 0,            // a site allocates and frees the same-size buffer every iteration
  kCacheThrash = 1,      // cached blocks released in a burst and re-acquired every iteration
  kLateRelease = 2,      // allocations freed one iteration after the one that made them
  kPeakComposition = 3,  // what the peak is made of, when the device is nearly full
  kFragmentation = 4,    // an allocation failed while the device reported enough free memory, or
                         // the process kept reserved far more than it had live (no site then)
  kSerialization = 5,    // synchronous allocation calls take a large share of each iteration
};

// "churn", "cache_thrash", "late_release", "peak_composition", "fragmentation", "serialization".
const char *advice_kind_name(AdviceKind kind);

// The thresholds (defaults documented in docs/advice.md). Shares are fractions (0.1 = 10 %).
struct AdviceOptions {
  bool enabled = true;
  size_t max_per_kind = 10;  // findings kept per kind, largest saving first

  // A pattern is "every iteration" when it shows in at least this share of the post-warm-up
  // iterations of the primary loop (which must number at least min_post_warmup_iterations).
  double min_iteration_share = 0.8;

  // Worth acting on: a finding about the loop (churn, cache thrash, late release, serialization)
  // is kept only when its saving is at least this share of the median post-warm-up iteration's
  // time (time savings) or of the device's steady-state peak (byte savings).
  double min_saving_share = 0.02;
  // ... and only when it names the user's code: a finding whose call site has frames, every one
  // of them in a framework, CUDA or the interpreter (PyTorch's allocator, CuPy, JAX), is dropped.
  bool require_user_frame = true;

  // Churn: allocations born and freed inside the same iteration, sizes within this ratio
  // (largest / smallest). Stream-ordered (async) ones never count: a stream-ordered pool's reuse
  // is by design, and it is the cheap fix already.
  double churn_max_size_ratio = 4.0;

  // Cache thrash: a burst of consecutive frees inside one iteration (same free call site when
  // frees carry stacks, no allocation on the device in between) of at least thrash_min_blocks blocks releasing at least
  // thrash_min_release_share of the device's live bytes, in most iterations.
  uint32_t thrash_min_blocks = 2;
  double thrash_min_release_share = 0.5;

  // Late release: at least late_min_share of a site's allocations outlive their iteration by
  // 1..late_max_lag iteration ends before being freed, and freeing each one at the end of its
  // own iteration would lower the steady-state peak by at least late_min_saving_share.
  uint32_t late_max_lag = 1;
  double late_min_share = 0.8;
  double late_min_saving_share = 0.02;

  // Peak composition: only when the loop's peak uses at least peak_min_device_share of the
  // device (or an allocation failed on it); "chunk" when one site's memory born in the peak's
  // own iteration is at least peak_dominant_share of the peak.
  double peak_min_device_share = 0.8;
  double peak_dominant_share = 0.3;
  size_t peak_top_sites = 5;

  // Fragmentation from NVML's samples (reserved far above live): over at least
  // reserve_min_samples consecutive samples, the process's usage above its baseline (the least
  // usage beyond live bytes after the warm-up: context, modules) exceeds the highest live bytes of
  // the last two primary iterations (else the last second) by at least
  // max(reserve_min_bytes, reserve_min_share x that peak). 0 samples: the rule is off.
  uint64_t reserve_min_bytes = 256ull << 20;
  double reserve_min_share = 0.25;
  uint32_t reserve_min_samples = 3;

  // Serialization: synchronous allocation calls (everything but stream-ordered ones) take at
  // least this share of the median iteration, and at least this long.
  double serialization_min_share = 0.1;
  uint64_t serialization_min_ns = 100'000;
};

// A named number of a finding. Names end in their unit: _bytes, _ns, _count, _share (0..1),
// _iterations; per-iteration values are means over the iterations that showed the pattern.
struct AdviceNumber {
  std::string name;
  double value = 0;
};

// Peak composition: one call site's memory live at the peak.
struct AdviceSite {
  Site site;
  uint64_t bytes = 0;
  uint64_t count = 0;
  uint64_t this_iteration_bytes = 0;      // born in the peak's own iteration
  uint64_t earlier_iterations_bytes = 0;  // born in an earlier iteration of the loop
  uint64_t before_loop_bytes = 0;         // born before the loop's first iteration
};

struct Advice {
  AdviceKind kind = AdviceKind::kChurn;
  int device = 0;
  bool has_site = false;  // false: the finding is about the whole device or loop
  Site site;              // churn, late release: the allocating site; thrash: the site that
                          // allocated most of the released blocks;
                          // peak composition: the largest site; fragmentation: the failed request
  std::vector<AdviceNumber> evidence;
  std::vector<AdviceNumber> saving;  // the estimated gain of following the advice
  std::string message;               // one sentence: what was seen and what to do
  std::vector<AdviceSite> sites;     // peak composition only, largest first
  // The user's line to change, when the finding knows it apart from `site` (cache thrash: the
  // torch.cuda.empty_cache() call that gpuleak's Python hooks marked); change_line 0: unknown.
  std::string change_call;  // "torch.cuda.empty_cache()"
  std::string change_file;  // as the interpreter named it
  uint32_t change_line = 0;
};

// The label of the mark gpuleak's Python hooks record when the program calls a function that
// empties a cache, followed by "FILE:LINE" of the caller (tools/python/gpuleak/_hooks.py).
inline constexpr const char *kEmptyCacheMark = "torch.cuda.empty_cache() at ";

}  // namespace gpuleak::analysis
