// The capture budget's side of each drain (capture_budget.h): where the capture switches to the
// aggregated form, where it stops, and what a failed write leaves. Runs under the drain claim, on
// gpuleak's writer thread or at an OOM flush or exit; never in a hook.
#include "core/capture_budget.h"

#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "core/recorder_state.h"
#include "log/log.h"

namespace gpuleak::core {

namespace {

constexpr uint64_t kMiB = 1ull << 20;
// The free-space watch looks again after this many bytes, or sooner when its estimate comes near
// the reserve (a statvfs per drain then).
constexpr uint64_t kLookEvery = 4 * kMiB;

void say(const std::string &line) {
  if (stderr_is_safe()) std::fprintf(stderr, "gpuleak: %s\n", line.c_str());
}

std::string mib(uint64_t bytes) { return std::to_string((bytes + kMiB / 2) / kMiB) + " MiB"; }

// Free bytes of the capture's file system, false when it cannot be read.
bool free_bytes(int fd, uint64_t *free, uint64_t *total) {
  struct statvfs v {};
  if (fd < 0 || fstatvfs(fd, &v) != 0) return false;
  *free = static_cast<uint64_t>(v.f_bavail) * v.f_frsize;
  if (total) *total = static_cast<uint64_t>(v.f_blocks) * v.f_frsize;
  return true;
}

uint64_t less(uint64_t a, uint64_t b) { return a > b ? a - b : 0; }

// The free bytes the watch expects once `more` bytes are written, looking again when due.
uint64_t free_after(State *s, uint64_t more) {
  CaptureBudget &b = s->drain.budget;
  uint64_t since = s->drain.bytes_written - b.written_seen;
  uint64_t estimate = less(b.free_seen, since + more);
  if (since >= kLookEvery || estimate < b.low + kLookEvery) {
    uint64_t now = 0;
    if (free_bytes(s->drain.fd, &now, nullptr)) b.free_seen = now, b.written_seen = s->drain.bytes_written;
    estimate = less(b.free_seen, more);
  }
  return estimate;
}

void stop_writing(State *s, const std::string &why) {
  if (s->drain.write_stopped.exchange(true)) return;
  say(why);
}

// Whole records of `batch` that fit in `room` bytes.
size_t fitting(const std::string &batch, uint64_t room) {
  size_t keep = 0, pos = 0;
  while (pos + sizeof(format::RecordHeader) <= batch.size()) {
    format::RecordHeader h;
    std::memcpy(&h, batch.data() + pos, sizeof h);
    size_t next = pos + sizeof h + h.size;
    if (next > room || next > batch.size()) break;
    keep = pos = next;
  }
  return keep;
}

}  // namespace

uint64_t default_capture_budget(uint64_t free) { return std::max(64 * kMiB, std::min(4096 * kMiB, free / 4)); }

uint64_t free_space_reserve(uint64_t fs_bytes) { return std::max(fs_bytes / 50, std::min(256 * kMiB, fs_bytes / 8)); }

void budget_start(State *s) {
  CaptureBudget &b = s->drain.budget;
  uint64_t free = 0, total = 0;
  b.watch = free_bytes(s->drain.fd, &free, &total) && total > 0;
  if (b.watch) {
    b.low = free_space_reserve(total);
    b.stop = b.low / 2;
    b.free_seen = free;
    b.written_seen = s->drain.bytes_written;
  }
  b.by_default = s->config.max_capture_bytes == Config::kDefaultBudget;
  b.limit = b.by_default ? default_capture_budget(b.watch ? free : UINT64_MAX) : s->config.max_capture_bytes;
  b.switch_at = b.limit - b.limit / 4;
  GPULEAK_LOG_DEBUG("capture budget %llu bytes (%s), aggregated from %llu; free-space watch %s",
                    static_cast<unsigned long long>(b.limit), b.by_default ? "default" : "GPULEAK_MAX_CAPTURE",
                    static_cast<unsigned long long>(b.switch_at), b.watch ? "on" : "off");
}

bool budget_admit(State *s, std::string *batch) {
  if (s->drain.write_stopped.load(std::memory_order_relaxed)) {
    batch->clear();
    return false;
  }
  CaptureBudget &b = s->drain.budget;
  CaptureAggregator &agg = s->drain.aggregator;
  if (!agg.active() && b.watch && !batch->empty() && free_after(s, batch->size()) < b.low) {
    b.aggregated_because = "disk";
    agg.start(capture_now_ns(), true);
    say("the file system holding " + s->drain.path + " has " + mib(b.free_seen) +
        " free: the capture continues in its aggregated form");
  }
  if (!agg.active() && b.limit && s->drain.bytes_written + batch->size() > b.switch_at) {
    b.aggregated_because = "budget";
    agg.start(capture_now_ns(), false);
    GPULEAK_LOG_DEBUG("capture %s reached %llu bytes: aggregated from here", s->drain.path.c_str(),
                      static_cast<unsigned long long>(s->drain.bytes_written));
  }
  if (agg.active()) {
    s->drain.folded.clear();
    agg.fold(reinterpret_cast<const uint8_t *>(batch->data()), batch->size(), &s->drain.folded);
    agg.close_if_stale(capture_now_ns(), &s->drain.folded);
    batch->swap(s->drain.folded);
  } else {
    agg.observe_raw(reinterpret_cast<const uint8_t *>(batch->data()), batch->size());
  }
  if (batch->empty()) return true;
  if (b.watch && free_after(s, batch->size()) < b.stop) {
    batch->clear();
    stop_writing(s, "the file system holding " + s->drain.path + " has only " + mib(b.free_seen) +
                        " free: the capture stops here (readable); the program continues");
    return false;
  }
  if (b.limit && s->drain.bytes_written + batch->size() > b.limit) {
    batch->resize(fitting(*batch, less(b.limit, s->drain.bytes_written)));
    stop_writing(s, "the capture " + s->drain.path + " reached its budget of " + mib(b.limit) +
                        " (GPULEAK_MAX_CAPTURE) even aggregated: it stops here (readable); the program continues");
  }
  return true;
}

void budget_write_failed(State *s, int error) {
  // What a failed write left past the last whole record goes: the file system gets it back.
  if (s->drain.fd >= 0) (void)!ftruncate(s->drain.fd, static_cast<off_t>(s->drain.bytes_written));
  stop_writing(s, "writing " + s->drain.path + " failed (" + std::strerror(error) +
                      "): the capture was cut back to its last whole record and stops here (readable); the "
                      "program continues");
}

void budget_finish(State *s, std::string *tail) {
  if (!s->drain.write_stopped.load(std::memory_order_relaxed)) s->drain.aggregator.finish(tail);
}

}  // namespace gpuleak::core
