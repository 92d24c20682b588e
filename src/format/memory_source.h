// The memory records of a capture in effective-time order (MemoryRecord::ts_ns; equal times in
// file order, i.e. a stable sort), replayed as often as a reader needs, without keeping them.
//
// Two sources: VectorMemorySource over records already in memory (format::Capture::memory), and
// FileMemorySource, which read_capture_stream() fills while it decodes everything else of a
// capture file. The file source keeps an index of the file's memory-record runs (stretches of one
// thread's records whose times do not decrease: normally one run per recording thread) and
// merges them on every replay, reading each run through its own bounded buffer: memory
// proportional to the runs, never to the records. The merge is a tree of losers (Knuth, TAOCP
// 5.4.1): log2(runs) comparisons a record, where a binary heap's pop and push took about twice
// that, and records go to the visitor in blocks. A capture whose records fit in a fixed budget
// (FileMemorySource::kCacheBytes) keeps them, merged and paired, from its first replay on: an
// analysis replays three or four times, and each merge and pairing cost as much as the work of
// the stages that read the records (the 8-thread stress: 75 M instructions a replay).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "format/capture_format.h"
#include "format/capture_reader.h"

namespace gpuleak::format {

class MemorySource {
 public:
  virtual ~MemorySource() = default;
  virtual uint64_t size() const = 0;
  // The latest ts_ns of any record (0 when there are none).
  virtual uint64_t max_ts() const = 0;
  // Calls visit(record) for every record in effective-time order. An I/O failure stops the
  // replay early: failed() turns true and error() says why (the caller decides what to do).
  // One replay at a time per source; several sources may replay on several threads. The visitor
  // is inlined into the loop over each block: one indirect call per block, not per record.
  template <typename Visit>
  void replay(Visit &&visit) const {
    replay_blocks([&visit](const MemoryRecord *records, size_t n) {
      for (size_t i = 0; i < n; ++i) visit(records[i]);
    });
  }
  // The same, handing out consecutive records a block at a time (valid during the call only).
  using BlockVisitor = std::function<void(const MemoryRecord *records, size_t n)>;
  virtual void replay_blocks(const BlockVisitor &visit) const = 0;
  // The records' times alone (ts_ns), in the same order and blocks: what a lookup of moments'
  // times needs. A file source skips the free pairing and the records' copies for it.
  using TimeVisitor = std::function<void(const uint64_t *ts, size_t n)>;
  virtual void replay_times(const TimeVisitor &visit) const;
  // Whether several replays of this source may run at once, on several threads (records that
  // are only read: held in memory, or a file source's cache once it is filled).
  virtual bool concurrent_replays() const = 0;
  static constexpr size_t kBlock = 512;  // records per block (36 KiB)
  bool failed() const { return !error_.empty(); }
  const std::string &error() const { return error_; }

 protected:
  mutable std::string error_;
};

// Records held in memory (in file order), which must outlive the source; the time order is
// computed once, on construction (4 bytes per record when the file order is not the time order).
class VectorMemorySource : public MemorySource {
 public:
  explicit VectorMemorySource(const std::vector<MemoryRecord> &records);
  uint64_t size() const override { return records_.size(); }
  uint64_t max_ts() const override { return max_ts_; }
  void replay_blocks(const BlockVisitor &visit) const override;
  bool concurrent_replays() const override { return true; }
  // The time order: replay's k-th record is records[order()[k]]; empty when it is the file order.
  const std::vector<uint32_t> &order() const { return order_; }

 private:
  const std::vector<MemoryRecord> &records_;
  std::vector<uint32_t> order_;  // empty when file order is time order
  uint64_t max_ts_ = 0;
};

// Memory records left in the capture file, found again through an index of their runs.
class FileMemorySource : public MemorySource {
 public:
  FileMemorySource() = default;
  ~FileMemorySource() override;
  FileMemorySource(const FileMemorySource &) = delete;
  FileMemorySource &operator=(const FileMemorySource &) = delete;

  uint64_t size() const override { return count_ + synthetic_.size(); }
  uint64_t max_ts() const override { return max_ts_; }
  void replay_blocks(const BlockVisitor &visit) const override;
  void replay_times(const TimeVisitor &visit) const override;
  bool concurrent_replays() const override { return cached_; }
  // The records of a capture of at most this many bytes of them (72 a record: 932,067 records)
  // are kept in memory by the first complete replay, and every later replay reads them there.
  // A larger capture is merged from the file on every replay: memory stays bounded.
  static constexpr uint64_t kCacheBytes = 64ull << 20;
  void set_cache_bytes(uint64_t bytes) { cache_bytes_ = bytes; }  // tests: 0 never keeps them
  bool cached() const { return cached_; }
  size_t runs() const { return runs_.size(); }
  // (format 1.4) The records the reader made from the aggregated form (aggregate_fold.h), in time
  // order, merged into every replay after the file's own at equal times.
  void add_synthetic(std::vector<MemoryRecord> records);

  // Used by read_capture_stream(): takes the open file, then each memory record as decoded.
  void open(int fd) { fd_ = fd; }
  void add(uint64_t offset, uint32_t record_bytes, const MemoryRecord &r);

  // Contiguous memory records of one run: [offset, offset + bytes) of the file.
  struct Segment {
    uint64_t offset = 0;
    uint64_t bytes = 0;
    uint64_t first = 0;  // file-order index of its first record (the tie-break at equal times)
  };
  struct Run {
    std::vector<Segment> segments;
  };

 private:
  struct Tail {  // per thread: its open run
    uint32_t run;
    uint64_t last_ts;
  };
  // The merge of every replay: take(run, file record) or take(synthetic run, synthetic record),
  // one record at a time in effective-time order (memory_source.cpp).
  template <typename Take>
  void merge(Take &&take) const;

  int fd_ = -1;
  uint64_t count_ = 0;
  uint64_t max_ts_ = 0;
  std::vector<Run> runs_;
  std::vector<std::pair<uint32_t, Tail>> threads_;  // tid -> open run (few threads: linear)
  std::vector<MemoryRecord> synthetic_;
  uint64_t cache_bytes_ = kCacheBytes;
  mutable std::vector<MemoryRecord> cache_;  // every record, paired, in replay order, once cached_
  mutable bool cached_ = false;
};

// Decodes a capture file like read_capture_file(), except that the memory records stay in the
// file: out->memory is left empty (out->memory_records counts them) and *memory can replay them
// in time order for as long as it lives. Errors as read_capture_file().
bool read_capture_stream(const std::string &path, Capture *out, FileMemorySource *memory, std::string *error);

}  // namespace gpuleak::format
