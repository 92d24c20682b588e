// The stack memo (src/core/stack_memo.h) must never change a stack: every allocation of a program
// whose call paths share stack pointers gets exactly the frames a full unwind gives it.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>

#include "process.h"

namespace gpuleak::test {
namespace {

using Frames = std::vector<std::string>;  // "module+offset": the same in two runs despite ASLR

std::string where(const format::Capture &c, uint64_t address) {
  for (const auto &m : c.modules) {
    if (m.segments.empty()) continue;
    uint64_t base = m.segments.front().first;
    for (const auto &seg : m.segments) base = std::min(base, seg.first);
    for (const auto &seg : m.segments)
      if (address >= seg.first && address < seg.second)
        return m.path.substr(m.path.rfind('/') + 1) + "+" + std::to_string(address - base);
  }
  return "?" + std::to_string(address);
}

// The native frames of every successful allocation, in file order (the programs are single-threaded).
std::vector<Frames> allocation_stacks(const format::Capture &c) {
  std::vector<Frames> out;
  for (const auto &m : c.memory) {
    if (m.op != static_cast<uint8_t>(format::Op::kAlloc) || m.result != 0) continue;
    Frames frames;
    auto it = c.stacks.find(m.stack_id);
    if (it != c.stacks.end())
      for (uint64_t f : it->second.frames) frames.push_back(where(c, f));
    out.push_back(std::move(frames));
  }
  return out;
}

class StackMemo : public ::testing::TestWithParam<const char *> {};

TEST_P(StackMemo, GivesEveryAllocationTheFramesOfAFullUnwind) {
  std::map<std::string, std::vector<Frames>> stacks;
  for (const char *memo : {"0", "1"}) {
    std::string out = make_temp_dir(std::string(GetParam()) + "-memo" + memo);
    auto env = shim_env(out);
    env["GPULEAK_STACK_MEMO"] = memo;
    Result r = run({program(GetParam()), "120"}, env);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    stacks[memo] = allocation_stacks(read_only_capture(out));
  }
  const auto &unwound = stacks["0"], &memoized = stacks["1"];
  ASSERT_EQ(unwound.size(), 8u * 120);
  ASSERT_EQ(memoized.size(), unwound.size());
  std::set<Frames> distinct(unwound.begin(), unwound.end());
  EXPECT_GE(distinct.size(), 8u) << "the program's call paths must be told apart";
  for (size_t i = 0; i < unwound.size(); ++i) {
    ASSERT_FALSE(unwound[i].empty()) << "allocation " << i;
    ASSERT_EQ(memoized[i], unwound[i]) << "allocation " << i << " (iteration " << i / 8 << ", call " << i % 8 << ")";
    ASSERT_EQ(unwound[i][0].find('?'), std::string::npos) << "frame outside every module";
  }
}

INSTANTIATE_TEST_SUITE_P(Programs, StackMemo, ::testing::Values("prog_stack_shapes", "prog_stack_shapes_nofp"));

// Forty call paths reach cudaMalloc at one stack pointer, round-robin (a framework's ops through
// one dispatcher): each keeps its own proof, so after the first rounds every stack comes from the
// memo, and each is still the full unwind's. Proofs are paid for by hits (a bucket's credit), so
// the proven paths double each round: all 40 by the sixth. With two paths per stack pointer (the
// memo before run 10) they evicted each other and 3 % came from the memo.
TEST(StackMemoPaths, ManyCallPathsAtOneStackPointerEachKeepTheirStack) {
  constexpr int kPaths = 40, kRounds = 25;
  std::map<std::string, std::vector<Frames>> stacks;
  std::string self_time;
  for (const char *memo : {"0", "1"}) {
    std::string out = make_temp_dir(std::string("stack-paths-memo") + memo);
    auto env = shim_env(out);
    env["GPULEAK_STACK_MEMO"] = memo;
    env["GPULEAK_SELF_TIME"] = "1";
    Result r = run({program("prog_stack_paths"), std::to_string(kPaths), std::to_string(kRounds)}, env);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    stacks[memo] = allocation_stacks(read_only_capture(out));
    if (*memo == '1') self_time = r.err;
  }
  const auto &unwound = stacks["0"], &memoized = stacks["1"];
  ASSERT_EQ(unwound.size(), size_t{kPaths} * kRounds);
  ASSERT_EQ(memoized.size(), unwound.size());
  EXPECT_EQ(std::set<Frames>(unwound.begin(), unwound.end()).size(), size_t{kPaths});
  for (size_t i = 0; i < unwound.size(); ++i)
    ASSERT_EQ(memoized[i], unwound[i]) << "allocation " << i << " (round " << i / kPaths << ", path " << i % kPaths
                                       << ")";
  // "native stacks (libunwind): 1000 (858 from the memo, ...": all but the first six rounds' misses.
  auto at = self_time.find(" from the memo");
  ASSERT_NE(at, std::string::npos) << self_time;
  auto open = self_time.rfind('(', at);
  long hits = std::stol(self_time.substr(open + 1, at - open - 1));
  EXPECT_GE(hits, long{kPaths} * (kRounds - 6)) << self_time;
}

}  // namespace
}  // namespace gpuleak::test
