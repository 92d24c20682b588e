// gen_capture: writes a realistic synthetic capture file for timing `gpuleak report` on large
// runs (docs/benchmarks.md "Analysis of a large capture"). Not a test: benchmarks stay out of CI.
//
//   gen_capture OUT.gpuleak [EVENTS=10000000] [ITERATIONS=5000] [SITES=300]
//
// The program it pretends to be: a training loop of ITERATIONS steps marked with the C API (loop
// "train"), each step allocating and freeing temporaries from SITES call sites (sizes 4 KiB to
// 64 MiB, device and stream-ordered), keeping a double buffer freed one step later, and four
// leaks: 1 MiB every step (site 1), 256 KiB every 3rd step (site 2), 64 KiB every step from the
// middle of the run on (site 3), 4 KiB every step (site 4). A second thread allocates and frees
// pinned host buffers. Records reach the file in per-thread chunks of 3,000, as the recorder's
// per-thread buffers deliver them, so the file is not in time order across threads and the
// analysis must merge the threads' runs. Events are memory records; the total is EVENTS rounded
// to whole steps.
// Prints one line: events, iterations, leaking sites, bytes written.
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "format/capture_format.h"

namespace {

using namespace gpuleak::format;

class Writer {
 public:
  explicit Writer(FILE *f) : f_(f) {}
  void record(RecordType type, const void *payload, size_t n, const void *tail = nullptr, size_t tail_n = 0) {
    RecordHeader h{static_cast<uint32_t>(n + tail_n), static_cast<uint16_t>(type), 0};
    put(&h, sizeof h);
    put(payload, n);
    if (tail_n) put(tail, tail_n);
  }
  void put(const void *p, size_t n) {
    if (std::fwrite(p, 1, n, f_) != n) {
      std::perror("gen_capture: write");
      std::exit(1);
    }
    bytes_ += n;
  }
  uint64_t bytes() const { return bytes_; }

 private:
  FILE *f_;
  uint64_t bytes_ = 0;
};

// One thread's records, delivered to the file in chunks like the recorder's buffers.
struct Thread {
  uint32_t tid;
  std::vector<MemoryRecord> pending;
};

constexpr size_t kChunk = 3000;
constexpr uint64_t kStart = 1'000'000'000;

uint64_t parse(const char *s, const char *what) {
  char *end = nullptr;
  unsigned long long v = std::strtoull(s, &end, 10);
  if (!*s || *end || v == 0) {
    std::fprintf(stderr, "gen_capture: bad %s '%s'\n", what, s);
    std::exit(2);
  }
  return v;
}

}  // namespace

int main(int argc, char **argv) {
  if (argc < 2 || argc > 5) {
    std::fprintf(stderr, "usage: gen_capture OUT.gpuleak [EVENTS=10000000] [ITERATIONS=5000] [SITES=300]\n");
    return 2;
  }
  const uint64_t events = argc > 2 ? parse(argv[2], "event count") : 10'000'000;
  const uint64_t iterations = argc > 3 ? parse(argv[3], "iteration count") : 5000;
  const uint32_t sites = argc > 4 ? static_cast<uint32_t>(parse(argv[4], "site count")) : 300;
  if (sites < 8) {
    std::fprintf(stderr, "gen_capture: at least 8 sites\n");
    return 2;
  }
  FILE *f = std::fopen(argv[1], "wb");
  if (!f) {
    std::perror(argv[1]);
    return 2;
  }
  static char buf[1 << 20];
  std::setvbuf(f, buf, _IOFBF, sizeof buf);
  Writer w(f);

  FileHeader h{};
  std::memcpy(h.magic, kMagic, sizeof h.magic);
  h.major = kMajorVersion;
  h.minor = kMinorVersion;
  h.header_size = sizeof h;
  h.realtime_ns = 1'764'500'000'000'000'000ull;
  h.monotonic_ns = kStart;
  h.pid = 4242;
  w.put(&h, sizeof h);

  // Run info: program "train", no command strings beyond the program.
  {
    RunInfoRecord r{};
    r.pid = 4242;
    r.rank = -1;
    r.stack_depth = 32;
    r.string_count = 1;
    std::string program = "train";
    uint32_t len = static_cast<uint32_t>(program.size());
    std::string tail(reinterpret_cast<const char *>(&len), sizeof len);
    tail += program;
    w.record(RecordType::kRunInfo, &r, sizeof r, tail.data(), tail.size());
  }
  {
    DeviceRecord d{};
    d.index = 0;
    std::string name = "Synthetic GPU";
    d.name_length = static_cast<uint32_t>(name.size());
    d.total_bytes = 141ull << 30;
    w.record(RecordType::kDevice, &d, sizeof d, name.data(), name.size());
  }
  {
    std::string loop = "train";
    StringRecord s{1, static_cast<uint32_t>(loop.size())};
    w.record(RecordType::kString, &s, sizeof s, loop.data(), loop.size());
  }
  // Stacks: 12 raw return addresses each, unsymbolizable (no module records), distinct per site.
  for (uint32_t id = 1; id <= sites + 1; ++id) {
    StackRecord s{id, 12, 0};
    uint64_t frames[12];
    for (int k = 0; k < 12; ++k) frames[k] = 0x400000 + id * 0x1000 + k * 0x40;
    w.record(RecordType::kStack, &s, sizeof s, frames, sizeof frames);
  }

  // Per step: the leaks, a double buffer, then temporaries until the step's share of events.
  const uint64_t per_step = events / iterations;
  uint64_t t = kStart, next_address = 0x7f0000000000, written = 0;
  Thread main_thread{1, {}}, loader{2, {}};
  auto flush = [&](Thread &th, bool all) {
    while (th.pending.size() >= kChunk || (all && !th.pending.empty())) {
      size_t n = std::min(kChunk, th.pending.size());
      for (size_t i = 0; i < n; ++i) w.record(RecordType::kMemory, &th.pending[i], sizeof(MemoryRecord));
      th.pending.erase(th.pending.begin(), th.pending.begin() + static_cast<long>(n));
      written += n;
    }
  };
  auto mem = [&](Thread &th, Op op, Kind kind, uint64_t address, uint64_t size, uint32_t stack) {
    MemoryRecord r{};
    r.ts_ns = t += 1000;
    r.address = address;
    r.size = size;
    r.tid = th.tid;
    r.stack_id = stack;
    r.op = static_cast<uint8_t>(op);
    r.kind = static_cast<uint8_t>(kind);
    r.api = static_cast<uint16_t>(kind == Kind::kAsync ? Api::cuMemAllocAsync : Api::cuMemAlloc_v2);
    r.device = kind == Kind::kHostPinned ? -1 : 0;
    th.pending.push_back(r);
    if (th.pending.size() >= kChunk) flush(th, false);
  };
  auto marker = [&](MarkerOp op) {
    MarkerRecord m{};
    m.ts_ns = t += 1000;
    m.tid = 1;
    m.label_id = op == MarkerOp::kIterationBegin ? 1 : 0;
    m.op = static_cast<uint8_t>(op);
    w.record(RecordType::kMarker, &m, sizeof m);
  };

  uint64_t double_buffer = 0, leak_events = 0;
  std::vector<std::pair<uint64_t, Kind>> temps;
  uint64_t rng = 0x9e3779b97f4a7c15ull;
  auto next = [&rng] {
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return rng;
  };
  for (uint64_t step = 0; step < iterations; ++step) {
    marker(MarkerOp::kIterationBegin);
    uint64_t used = 0;
    auto alloc = [&](Thread &th, Kind kind, uint64_t size, uint32_t stack) {
      uint64_t a = next_address += 0x200000;
      mem(th, Op::kAlloc, kind, a, size, stack);
      ++used;
      return a;
    };
    alloc(main_thread, Kind::kDevice, 1 << 20, 1);
    if (step % 3 == 0) alloc(main_thread, Kind::kDevice, 256 << 10, 2);
    if (step >= iterations / 2) alloc(main_thread, Kind::kAsync, 64 << 10, 3);
    alloc(main_thread, Kind::kAsync, 4 << 10, 4);
    leak_events += used;
    uint64_t fresh = alloc(main_thread, Kind::kDevice, 32 << 20, 5);
    if (double_buffer) mem(main_thread, Op::kFree, Kind::kDevice, double_buffer, 32 << 20, 0), ++used;
    double_buffer = fresh;
    // Pinned staging buffers on the loader thread: one pair per step.
    mem(loader, Op::kFree, Kind::kHostPinned, alloc(loader, Kind::kHostPinned, 8 << 20, 6), 8 << 20, 0);
    ++used;
    // Temporaries: allocated in bursts of up to 16 and freed, from sites 8..sites.
    while (used + 2 <= per_step) {
      size_t burst = std::min<uint64_t>(1 + next() % 16, (per_step - used) / 2);
      for (size_t k = 0; k < burst; ++k) {
        uint32_t site = 8 + static_cast<uint32_t>(next() % (sites - 7));
        Kind kind = site % 2 ? Kind::kAsync : Kind::kDevice;
        uint64_t size = 4096ull << (site % 15);  // 4 KiB .. 64 MiB
        temps.emplace_back(alloc(main_thread, kind, size, site), kind);
      }
      for (auto &[a, kind] : temps) mem(main_thread, Op::kFree, kind, a, 0, 0), ++used;
      temps.clear();
    }
    marker(MarkerOp::kIterationEnd);
  }
  flush(main_thread, true);
  flush(loader, true);
  StatsRecord st{};
  st.events = written;
  st.stacks = sites + 1;
  st.final_record = 1;
  w.record(RecordType::kStats, &st, sizeof st);
  if (std::fclose(f) != 0) {
    std::perror("gen_capture: close");
    return 1;
  }
  std::printf("gen_capture: %" PRIu64 " events, %" PRIu64 " iterations, %u sites, 4 leaking (%" PRIu64
              " leaked allocations), %" PRIu64 " bytes\n",
              written, iterations, sites, leak_events, w.bytes());
  return 0;
}
