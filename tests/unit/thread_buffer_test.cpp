#include <gtest/gtest.h>

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
