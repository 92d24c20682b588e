#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <thread>

#include "core/thread_buffer.h"

namespace gpuleak::core {
namespace {

TEST(ThreadBuffer, WrapsAroundWithoutLosingBytes) {
  BufferRegistry registry;
  ThreadBuffer *b = registry.create(4096, 1);
  ASSERT_NE(b, nullptr);
  std::string drained;
  auto sink = [&](const uint8_t *p, size_t n) { drained.append(reinterpret_cast<const char *>(p), n); };
  std::string expected;
  for (int i = 0; i < 1000; ++i) {
    std::string a = "rec" + std::to_string(i) + ":";
    std::string payload(static_cast<size_t>(i % 37), static_cast<char>('a' + i % 26));
    ASSERT_TRUE(buffer_append(b, a.data(), a.size(), payload.data(), payload.size()));
    expected += a + payload;
    if (i % 7 == 0) buffer_drain(b, sink);
  }
  buffer_drain(b, sink);
  EXPECT_EQ(drained, expected);
}

TEST(ThreadBuffer, RefusesWhatDoesNotFit) {
  BufferRegistry registry;
  ThreadBuffer *b = registry.create(4096, 1);
  std::string big(4000, 'x');
  EXPECT_TRUE(buffer_append(b, big.data(), big.size(), nullptr, 0));
  EXPECT_FALSE(buffer_append(b, big.data(), 200, nullptr, 0));
}

// The hot path's in-place append: room only where the record fits in one piece, and nothing is
// visible to the drain before the commit.
TEST(ThreadBuffer, ReservesInPlaceOnlyWhereTheRecordFitsInOnePiece) {
  BufferRegistry registry;
  ThreadBuffer *b = registry.create(4096, 1);
  std::string drained;
  auto sink = [&](const uint8_t *p, size_t n) { drained.append(reinterpret_cast<const char *>(p), n); };
  int reserved = 0, refused = 0;
  std::string expected;
  for (int i = 0; i < 200; ++i) {
    uint8_t *at = buffer_reserve<80>(b);
    if (!at) {  // at the ring's end: the caller appends a copy, which wraps
      ++refused;
      std::string rec(80, static_cast<char>('A' + i % 26));
      ASSERT_TRUE(buffer_append(b, rec.data(), rec.size(), nullptr, 0));
      expected += rec;
    } else {
      ++reserved;
      std::memset(at, 'a' + i % 26, 80);
      buffer_drain(b, sink);  // the reserved bytes are not the drain's yet
      buffer_commit<80>(b);
      expected += std::string(80, static_cast<char>('a' + i % 26));
    }
    if (i % 5 == 4) buffer_drain(b, sink);
  }
  buffer_drain(b, sink);
  EXPECT_EQ(drained, expected);
  EXPECT_GT(refused, 0);  // 4096 is no multiple of 80: records met the end of the ring
  EXPECT_GT(reserved, 150);
  std::string full(4096 - 40, 'x');
  ASSERT_TRUE(buffer_append(b, full.data(), full.size(), nullptr, 0));
  EXPECT_EQ(buffer_reserve<80>(b), nullptr);  // 40 bytes free
}

// The producer reads the consumer's tail only when its last reading leaves too little room (the
// tail's cache line stays with the consumer): a drain it has not looked at yet still makes room,
// and the quarter-full test that wakes the writer looks again before it says yes.
TEST(ThreadBuffer, ProducerLooksAtTheTailAgainOnlyWhenItsLastReadingIsShort) {
  BufferRegistry registry;
  ThreadBuffer *b = registry.create(4096, 1);
  auto none = [](const uint8_t *, size_t) {};
  std::string rec(1000, 'r');
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(buffer_append(b, rec.data(), rec.size(), nullptr, 0));
  EXPECT_EQ(b->tail_seen, 0u);  // room by the first reading all along
  EXPECT_TRUE(over_quarter_full(b));
  EXPECT_FALSE(buffer_append(b, rec.data(), rec.size(), nullptr, 0));  // 96 bytes left
  buffer_drain(b, none);                                               // the consumer: tail = 4000
  EXPECT_EQ(b->tail_seen, 0u);
  EXPECT_FALSE(over_quarter_full(b));  // looked again: empty
  EXPECT_EQ(b->tail_seen, 4000u);
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(buffer_append(b, rec.data(), rec.size(), nullptr, 0));
  buffer_drain(b, none);
  EXPECT_EQ(b->tail_seen, 4000u);                                     // a stale reading: 4000 of 4096 bytes look used
  EXPECT_TRUE(buffer_append(b, rec.data(), rec.size(), nullptr, 0));  // looks again, finds room
  EXPECT_EQ(b->tail_seen, 8000u);
  EXPECT_NE(buffer_reserve<80>(b), nullptr);
}

TEST(ThreadBuffer, ProducerAndConsumerOnTwoThreads) {
  BufferRegistry registry;
  ThreadBuffer *b = registry.create(1 << 12, 1);
  constexpr uint64_t kCount = 200000;
  std::thread producer([b] {
    for (uint64_t i = 0; i < kCount;)
      if (buffer_append(b, &i, sizeof i, nullptr, 0)) ++i;
  });
  uint64_t next = 0;
  std::string pending;
  while (next < kCount) {
    buffer_drain(b, [&](const uint8_t *p, size_t n) { pending.append(reinterpret_cast<const char *>(p), n); });
    while (pending.size() >= 8) {
      uint64_t v;
      memcpy(&v, pending.data(), 8);
      ASSERT_EQ(v, next);
      ++next;
      pending.erase(0, 8);
    }
  }
  producer.join();
}

}  // namespace
}  // namespace gpuleak::core
