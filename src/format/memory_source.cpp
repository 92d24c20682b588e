#include "format/memory_source.h"

#include <unistd.h>
#include <algorithm>
#include <cerrno>
#include <cstring>
#include <system_error>

#include "format/free_pairing.h"
#include "format/huge_pages.h"

namespace gpuleak::format {

VectorMemorySource::VectorMemorySource(const std::vector<MemoryRecord> &records) : records_(records) {
  const size_t n = records.size();
  bool sorted = true;
  for (size_t i = 0; i < n; ++i) {
    max_ts_ = std::max(max_ts_, records[i].ts_ns);
    if (i > 0 && records[i - 1].ts_ns > records[i].ts_ns) sorted = false;
  }
  if (sorted) return;
  // (ts, file index) pairs: sorting them is a stable sort by ts, and cache friendly.
  std::vector<std::pair<uint64_t, uint32_t>> keyed;
  keyed.reserve(n);
  prefer_huge_pages(keyed);
  for (size_t i = 0; i < n; ++i) keyed.emplace_back(records[i].ts_ns, static_cast<uint32_t>(i));
  std::sort(keyed.begin(), keyed.end());
  order_.reserve(n);
  for (const auto &k : keyed) order_.push_back(k.second);
}

void VectorMemorySource::replay_blocks(const BlockVisitor &visit) const {
  const size_t n = records_.size();
  if (order_.empty()) {  // already in time order: the records themselves are the blocks
    for (size_t i = 0; i < n; i += kBlock) visit(records_.data() + i, std::min(kBlock, n - i));
    return;
  }
  std::vector<MemoryRecord> block(std::min(kBlock, n));
  for (size_t i = 0; i < n; i += kBlock) {
    const size_t m = std::min(kBlock, n - i);
    for (size_t j = 0; j < m; ++j) block[j] = records_[order_[i + j]];
    visit(block.data(), m);
  }
}

FileMemorySource::~FileMemorySource() {
  if (fd_ >= 0) ::close(fd_);
}

void FileMemorySource::add(uint64_t offset, uint32_t record_bytes, const MemoryRecord &r) {
  auto it = std::find_if(threads_.begin(), threads_.end(), [&](const auto &t) { return t.first == r.tid; });
  // A thread's times that go back (clock trouble, a reused thread id) start a run of their own:
  // the merge then still yields exactly the stable sort by time.
  if (it == threads_.end() || r.ts_ns < it->second.last_ts) {
    if (it == threads_.end()) it = threads_.insert(threads_.end(), {r.tid, Tail{}});
    it->second.run = static_cast<uint32_t>(runs_.size());
    runs_.emplace_back();
  }
  // Most recently used first: consecutive records of one thread find it at once.
  if (it != threads_.begin()) std::iter_swap(it, threads_.begin()), it = threads_.begin();
  it->second.last_ts = r.ts_ns;
  auto &segments = runs_[it->second.run].segments;
  if (!segments.empty() && segments.back().offset + segments.back().bytes == offset)
    segments.back().bytes += record_bytes;
  else
    segments.push_back({offset, record_bytes, count_});
  ++count_;
  max_ts_ = std::max(max_ts_, r.ts_ns);
}

namespace {

// Reads one run's records in order through a bounded buffer.
class RunCursor {
 public:
  static constexpr size_t kBuffer = 256u << 10;  // bytes read at a time; a larger record grows the buffer

  RunCursor(int fd, const FileMemorySource::Run &run) : fd_(fd), run_(run) {}

  // Loads the next record into `record`; false at the end of the run or on an I/O error.
  bool next(std::string *error) {
    for (;;) {
      if (pos_ + sizeof(RecordHeader) <= have_) {
        RecordHeader h;
        std::memcpy(&h, buf_.data() + pos_, sizeof h);
        if (pos_ + sizeof h + h.size <= have_) {
          std::memcpy(&record, buf_.data() + pos_ + sizeof h, sizeof record);  // size checked when indexed
          pos_ += sizeof h + h.size;
          ++index;
          return true;
        }
      }
      if (!fill(error)) return false;
    }
  }

  MemoryRecord record{};
  uint64_t index = 0;  // file-order index of `record`

 private:
  // Moves the unread bytes to the front and reads more of the current segment, or starts the next.
  bool fill(std::string *error) {
    const size_t left = have_ - pos_;
    if (seg_left_ == 0 && left == 0) {
      if (segment_ == run_.segments.size()) return false;
      const auto &s = run_.segments[segment_++];
      offset_ = s.offset;
      seg_left_ = s.bytes;
      index = s.first - 1;
    }
    if (seg_left_ == 0) return false;  // a segment ends inside a record: cannot happen (whole records)
    std::memmove(buf_.data(), buf_.data() + pos_, left);
    size_t want = static_cast<size_t>(std::min<uint64_t>(seg_left_, kBuffer));
    if (buf_.size() < left + want) buf_.resize(left + want);
    size_t got = 0;
    while (got < want) {
      ssize_t r = ::pread(fd_, buf_.data() + left + got, want - got, static_cast<off_t>(offset_ + got));
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) {
        // (std::error_code's message, not strerror: several sources may replay on several threads)
        *error = r < 0 ? "reading memory records: " + std::error_code(errno, std::generic_category()).message()
                       : std::string("reading memory records: the capture file shrank");
        return false;
      }
      got += static_cast<size_t>(r);
    }
    offset_ += want;
    seg_left_ -= want;
    have_ = left + want;
    pos_ = 0;
    return true;
  }

  int fd_;
  const FileMemorySource::Run &run_;
  size_t segment_ = 0;
  uint64_t offset_ = 0, seg_left_ = 0;
  std::vector<uint8_t> buf_;
  size_t have_ = 0, pos_ = 0;
};

}  // namespace

namespace {

// The tree of losers over the cursors' current records: node 0 holds the winner (the earliest
// record on (time, file index), which is exactly the stable sort by time), nodes 1..k-1 the loser
// of the match played there; cursor i is leaf k + i, and the parent of node x is x / 2. The keys
// sit in one array, and a cursor at its end has the key (max, max), which loses every match.
class LoserTree {
 public:
  struct Key {
    uint64_t ts, index;
    bool operator<(const Key &o) const { return ts != o.ts ? ts < o.ts : index < o.index; }
  };
  static constexpr Key kEnd{UINT64_MAX, UINT64_MAX};  // no record has file index UINT64_MAX

  explicit LoserTree(std::vector<Key> keys) : key_(std::move(keys)), k_(key_.size()), node_(k_, 0) {
    std::vector<uint32_t> winner(2 * k_);
    for (size_t i = 0; i < k_; ++i) winner[k_ + i] = static_cast<uint32_t>(i);
    for (size_t x = k_ - 1; x >= 1; --x) {
      const uint32_t a = winner[2 * x], b = winner[2 * x + 1];
      const bool a_first = !(key_[b] < key_[a]);  // equal keys: both ended, either may win
      winner[x] = a_first ? a : b;
      node_[x] = a_first ? b : a;
    }
    node_[0] = k_ > 1 ? winner[1] : 0;
  }
  uint32_t winner() const { return node_[0]; }
  bool ended() const { return key_[node_[0]].index == UINT64_MAX; }
  // The winner's cursor moved on to `next` (kEnd: it ended): its new key plays its way up.
  void replace(Key next) {
    uint32_t w = node_[0];
    key_[w] = next;
    for (size_t x = (k_ + w) / 2; x >= 1; x /= 2)
      if (key_[node_[x]] < key_[w]) std::swap(node_[x], w);
    node_[0] = w;
  }

 private:
  std::vector<Key> key_;
  const size_t k_;
  std::vector<uint32_t> node_;
};

}  // namespace

void FileMemorySource::add_synthetic(std::vector<MemoryRecord> records) {
  std::stable_sort(records.begin(), records.end(),
                   [](const MemoryRecord &a, const MemoryRecord &b) { return a.ts_ns < b.ts_ns; });
  for (const MemoryRecord &r : records) max_ts_ = std::max(max_ts_, r.ts_ns);
  synthetic_ = std::move(records);
}

void MemorySource::replay_times(const TimeVisitor &visit) const {
  std::vector<uint64_t> ts;
  replay_blocks([&](const MemoryRecord *records, size_t n) {
    ts.resize(n);
    for (size_t i = 0; i < n; ++i) ts[i] = records[i].ts_ns;
    visit(ts.data(), n);
  });
}

template <typename Take>
void FileMemorySource::merge(Take &&take) const {
  std::vector<RunCursor> cursors;
  cursors.reserve(runs_.size());
  for (const Run &run : runs_) cursors.emplace_back(fd_, run);
  // The synthetic records are one more run, after the file's (their indices follow the file's).
  const size_t synthetic_run = cursors.size();
  size_t next_synthetic = 0;
  auto key_of = [&](size_t i) {
    if (i == synthetic_run)
      return next_synthetic < synthetic_.size()
                 ? LoserTree::Key{synthetic_[next_synthetic].ts_ns, count_ + next_synthetic}
                 : LoserTree::kEnd;
    RunCursor &c = cursors[i];
    return c.next(&error_) ? LoserTree::Key{c.record.ts_ns, c.index} : LoserTree::kEnd;
  };
  std::vector<LoserTree::Key> keys;
  const size_t k = cursors.size() + (synthetic_.empty() ? 0 : 1);
  keys.reserve(k);
  for (size_t i = 0; i < k; ++i) {
    keys.push_back(key_of(i));
    if (failed()) return;
  }
  LoserTree tree(std::move(keys));
  while (!tree.ended()) {
    const uint32_t w = tree.winner();
    if (w == synthetic_run)
      take(true, synthetic_[next_synthetic++]);
    else
      take(false, cursors[w].record);
    tree.replace(key_of(w));
    if (failed()) break;  // the records before the failure are still delivered
  }
}

void FileMemorySource::replay_blocks(const BlockVisitor &visit) const {
  if (failed() || size() == 0) return;
  if (cached_) {
    for (size_t i = 0; i < cache_.size(); i += kBlock) visit(cache_.data() + i, std::min(kBlock, cache_.size() - i));
    return;
  }
  FreePairing pairing;  // each replay pairs the frees afresh, in the order it hands them out
  if (size() <= cache_bytes_ / sizeof(MemoryRecord)) {
    // Merged straight into the cache, and handed out from there a block at a time (the capacity
    // is every record's: nothing moves while a block is visited).
    cache_.clear();
    cache_.reserve(static_cast<size_t>(size()));
    prefer_huge_pages(cache_);  // 23 MB for 320,000 records: 5,600 page faults of 4 KiB otherwise
    size_t handed = 0;
    merge([&](bool synthetic, const MemoryRecord &r) {
      if (cache_.size() == cache_.capacity()) return;  // (cannot happen: size() records in all)
      cache_.push_back(r);
      if (!synthetic) pairing.apply(cache_.back());
      if (cache_.size() - handed == kBlock) visit(cache_.data() + handed, kBlock), handed += kBlock;
    });
    if (cache_.size() > handed) visit(cache_.data() + handed, cache_.size() - handed);
    cached_ = !failed() && cache_.size() == size();
    if (!cached_) std::vector<MemoryRecord>().swap(cache_);
    return;
  }
  std::vector<MemoryRecord> block(static_cast<size_t>(std::min<uint64_t>(kBlock, size())));
  size_t n = 0;
  merge([&](bool synthetic, const MemoryRecord &r) {
    block[n] = r;
    if (!synthetic) pairing.apply(block[n]);
    if (++n == block.size()) visit(block.data(), n), n = 0;
  });
  if (n) visit(block.data(), n);
}

void FileMemorySource::replay_times(const TimeVisitor &visit) const {
  if (failed() || size() == 0) return;
  std::vector<uint64_t> block(static_cast<size_t>(std::min<uint64_t>(kBlock, size())));
  if (cached_) {
    for (size_t i = 0; i < cache_.size(); i += kBlock) {
      const size_t n = std::min(kBlock, cache_.size() - i);
      for (size_t j = 0; j < n; ++j) block[j] = cache_[i + j].ts_ns;
      visit(block.data(), n);
    }
    return;
  }
  size_t n = 0;
  merge([&](bool, const MemoryRecord &r) {
    block[n] = r.ts_ns;
    if (++n == block.size()) visit(block.data(), n), n = 0;
  });
  if (n) visit(block.data(), n);
}

}  // namespace gpuleak::format
