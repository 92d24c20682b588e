// The file-backed memory source against the in-memory one: the same records, in exactly the
// stable time order, whatever the threads' chunks, ties and clock steps.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>

#include "format/capture_reader.h"
#include "format/memory_source.h"

namespace gpuleak::format {
namespace {

template <typename T>
std::string bytes(const T &v) {
  return std::string(reinterpret_cast<const char *>(&v), sizeof v);
}

std::string record(RecordType type, const std::string &payload) {
  RecordHeader h{static_cast<uint32_t>(payload.size()), static_cast<uint16_t>(type), 0};
  return bytes(h) + payload;
}

std::string header() {
  FileHeader h{};
  std::memcpy(h.magic, kMagic, sizeof kMagic);
  h.major = kMajorVersion;
  h.minor = kMinorVersion;
  h.header_size = sizeof h;
  return bytes(h);
}

// Three threads delivering their records in chunks of random length; coarse times make ties
// across threads, and thread 3's clock steps back once (a new run of its own).
std::string shuffled_capture(size_t n) {
  std::mt19937 rng(7);
  std::vector<std::vector<MemoryRecord>> threads(3);
  uint64_t clock[3] = {1000, 1000, 1000};
  for (size_t i = 0; i < n; ++i) {
    uint32_t t = rng() % 3;
    MemoryRecord m{};
    clock[t] += rng() % 3;  // often the same time
    if (t == 2 && threads[2].size() == 40) clock[t] -= 500;
    m.ts_ns = clock[t];
    m.tid = t + 1;
    m.address = i;  // the record's identity
    m.op = static_cast<uint8_t>(Op::kAlloc);
    threads[t].push_back(m);
  }
  std::string out = header();
  size_t next[3] = {0, 0, 0};
  while (next[0] < threads[0].size() || next[1] < threads[1].size() || next[2] < threads[2].size()) {
    uint32_t t = rng() % 3;
    size_t chunk = 1 + rng() % 50;
    for (; chunk > 0 && next[t] < threads[t].size(); --chunk) {
      out += record(RecordType::kMemory, bytes(threads[t][next[t]++]));
      if (rng() % 17 == 0) out += record(RecordType::kString, bytes(StringRecord{1, 1}) + "x");
    }
  }
  return out;
}

std::vector<uint64_t> replayed(const MemorySource &source) {
  std::vector<uint64_t> ids;
  source.replay([&](const MemoryRecord &r) { ids.push_back(r.address); });
  return ids;
}

// replay_times() against the times of replay(), of the same source.
void expect_times_as_replayed(const MemorySource &source) {
  std::vector<uint64_t> want, got;
  source.replay([&](const MemoryRecord &r) { want.push_back(r.ts_ns); });
  source.replay_times([&](const uint64_t *ts, size_t n) { got.insert(got.end(), ts, ts + n); });
  EXPECT_EQ(got, want);
}

TEST(MemorySource, FileReplayIsTheStableSortByTime) {
  const std::string all = shuffled_capture(5000);
  const std::string path = ::testing::TempDir() + "/memory_source.gpuleak";
  for (size_t cut : {size_t{0}, size_t{30}}) {
    const std::string on_disk = all.substr(0, all.size() - cut);
    FILE *f = std::fopen(path.c_str(), "wb");
    ASSERT_NE(f, nullptr);
    std::fwrite(on_disk.data(), 1, on_disk.size(), f);
    std::fclose(f);

    Capture whole;
    std::string error;
    ASSERT_TRUE(read_capture_file(path, &whole, &error)) << error;
    std::vector<MemoryRecord> expected = whole.memory;
    std::stable_sort(expected.begin(), expected.end(),
                     [](const MemoryRecord &a, const MemoryRecord &b) { return a.ts_ns < b.ts_ns; });
    std::vector<uint64_t> expected_ids;
    for (const MemoryRecord &r : expected) expected_ids.push_back(r.address);

    Capture rest;
    FileMemorySource file;
    ASSERT_TRUE(read_capture_stream(path, &rest, &file, &error)) << error;
    EXPECT_TRUE(rest.memory.empty());
    EXPECT_EQ(rest.memory_records, whole.memory.size());
    EXPECT_EQ(rest.strings.size(), whole.strings.size());
    EXPECT_EQ(rest.truncated, cut != 0);
    EXPECT_EQ(file.size(), whole.memory.size());
    EXPECT_GE(file.runs(), 4u);  // three threads, one of them twice
    EXPECT_EQ(file.max_ts(), expected.back().ts_ns);
    EXPECT_FALSE(file.cached());
    EXPECT_EQ(replayed(file), expected_ids);
    EXPECT_TRUE(file.cached());               // small: kept by the first replay
    EXPECT_EQ(replayed(file), expected_ids);  // as often as asked, from memory now
    Capture again;
    FileMemorySource streamed;  // the same, merged from the file on every replay
    streamed.set_cache_bytes(0);
    ASSERT_TRUE(read_capture_stream(path, &again, &streamed, &error)) << error;
    EXPECT_EQ(replayed(streamed), expected_ids);
    EXPECT_EQ(replayed(streamed), expected_ids);
    EXPECT_FALSE(streamed.cached());
    expect_times_as_replayed(file);
    expect_times_as_replayed(streamed);
    expect_times_as_replayed(VectorMemorySource(whole.memory));
    EXPECT_EQ(replayed(VectorMemorySource(whole.memory)), expected_ids);
    EXPECT_FALSE(file.failed());
  }
  std::remove(path.c_str());
}

TEST(MemorySource, EmptyCapture) {
  const std::string path = ::testing::TempDir() + "/memory_source_empty.gpuleak";
  FILE *f = std::fopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  const std::string h = header();
  std::fwrite(h.data(), 1, h.size(), f);
  std::fclose(f);
  Capture c;
  FileMemorySource file;
  std::string error;
  ASSERT_TRUE(read_capture_stream(path, &c, &file, &error)) << error;
  EXPECT_EQ(file.size(), 0u);
  EXPECT_EQ(file.max_ts(), 0u);
  EXPECT_TRUE(replayed(file).empty());
  std::remove(path.c_str());
}

}  // namespace
}  // namespace gpuleak::format
