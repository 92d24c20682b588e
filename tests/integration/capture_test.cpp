// Every capture path the fake CUDA offers, through the real shim: exact counts, no double
// counting, and a program that never notices gpuleak (same output, same exit status).
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <regex>
#include <set>

#include "process.h"

namespace gpuleak::test {
namespace {

using format::Kind;
using format::Op;

// "EXPECT allocs=11 frees=11" -> {11, 11}
std::pair<int, int> expected(const std::string &out) {
  std::smatch m;
  std::regex re("EXPECT allocs=([0-9]+) frees=([0-9]+)");
  if (!std::regex_search(out, m, re)) return {-1, -1};
  return {std::stoi(m[1]), std::stoi(m[2])};
}

Counts count_without_registered(const format::Capture &c) {
  format::Capture copy = c;
  copy.memory.clear();
  for (const auto &m : c.memory)
    if (m.kind != static_cast<uint8_t>(Kind::kHostRegistered)) copy.memory.push_back(m);
  return count(copy);
}

struct Case {
  const char *program;
};

class ExpectLine : public ::testing::TestWithParam<const char *> {};

// Each program prints what it did; the capture must hold exactly that.
TEST_P(ExpectLine, CaptureHoldsExactlyWhatTheProgramDid) {
  std::string out = make_temp_dir(GetParam());
  Result r = run({program(GetParam())}, shim_env(out));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto [allocs, frees] = expected(r.out);
  ASSERT_GE(allocs, 0) << r.out;
  format::Capture c = read_only_capture(out);
  Counts n = count_without_registered(c);
  EXPECT_EQ(n.allocs, allocs);
  EXPECT_EQ(n.frees, frees);
  EXPECT_EQ(n.failed, 0);
  ASSERT_TRUE(c.stats.has_value());
  EXPECT_EQ(c.stats->events_dropped, 0u);
  EXPECT_EQ(c.stats->final_record, 1u);
  EXPECT_FALSE(c.truncated);
}

INSTANTIATE_TEST_SUITE_P(Programs, ExpectLine,
                         ::testing::Values("prog_all_paths_static", "prog_all_paths_shared", "prog_driver_api",
                                           "prog_threads_static"));

TEST(Capture, StaticRuntimeLeakyLoopIsSeenThroughDlsymAndGetProcAddress) {
  std::string out = make_temp_dir("leaky-static");
  Result r = run({program("prog_leaky_static"), "20"}, shim_env(out));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  format::Capture c = read_only_capture(out);
  Counts n = count(c);
  EXPECT_EQ(n.allocs, 40);
  EXPECT_EQ(n.frees, 20);
  int leaked_bytes = 0;
  for (const auto &m : c.memory) {
    EXPECT_EQ(m.api == static_cast<uint16_t>(format::Api::cuMemAlloc_v2) ||
                  m.api == static_cast<uint16_t>(format::Api::cuMemFree_v2),
              true);
    EXPECT_EQ(m.runtime_api, 0) << "the static runtime cannot be labelled";
    if (m.op == static_cast<uint8_t>(Op::kAlloc)) {
      EXPECT_NE(m.stack_id, 0u);
      EXPECT_TRUE(c.stacks.count(m.stack_id)) << "every stack referenced is in the capture";
    } else {
      EXPECT_EQ(m.stack_id, 0u) << "frees carry no stack (docs/capture-format.md)";
    }
    EXPECT_EQ(m.device, 0);
    if (m.op == static_cast<uint8_t>(Op::kAlloc) && m.size == (1u << 20)) leaked_bytes += 1;
  }
  EXPECT_EQ(leaked_bytes, 20);
  ASSERT_TRUE(c.run.has_value());
  EXPECT_EQ(c.run->program, "prog_leaky_static");
  EXPECT_EQ(c.run->command.size(), 2u);
  EXPECT_FALSE(c.modules.empty());
  ASSERT_EQ(c.devices.size(), 1u);
  EXPECT_EQ(c.devices[0].name, "Fake CUDA Device");
  EXPECT_EQ(c.stats->live_bytes, 20u << 20);
}

TEST(Capture, SharedRuntimeCallsAreLabelledWithTheRuntimeApi) {
  std::string out = make_temp_dir("leaky-shared");
  Result r = run({program("prog_leaky_shared"), "10"}, shim_env(out));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  format::Capture c = read_only_capture(out);
  Counts n = count(c);
  EXPECT_EQ(n.allocs, 20);
  EXPECT_EQ(n.frees, 10);
  for (const auto &m : c.memory) {
    if (m.op == static_cast<uint8_t>(Op::kAlloc)) {
      EXPECT_EQ(m.runtime_api, static_cast<uint16_t>(format::Api::cudaMalloc));
    }
    if (m.op == static_cast<uint8_t>(Op::kFree)) {
      EXPECT_EQ(m.runtime_api, static_cast<uint16_t>(format::Api::cudaFree));
    }
  }
}

// cudaMallocAsync and cudaMallocAsync_ptsz share a label and a type but not the function they
// forward to: each export of the shim reaches its own next definition, so the per-thread call still
// gets the per-thread default stream (the driver's _ptsz entry point), labelled cudaMallocAsync.
TEST(Capture, SharedRuntimePtszCallsReachThePtszFunctions) {
  std::string out = make_temp_dir("ptsz-shared");
  Result r = run({program("prog_all_paths_shared")}, shim_env(out));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  format::Capture c = read_only_capture(out);
  std::map<uint16_t, int> by_api;  // driver entry point -> count, stream-ordered calls labelled by cudart
  for (const auto &m : c.memory)
    if (m.runtime_api == static_cast<uint16_t>(format::Api::cudaMallocAsync) ||
        m.runtime_api == static_cast<uint16_t>(format::Api::cudaFreeAsync))
      ++by_api[m.api];
  using format::Api;
  EXPECT_GE(by_api[static_cast<uint16_t>(Api::cuMemAllocAsync)], 1);       // step 5, on a stream
  EXPECT_EQ(by_api[static_cast<uint16_t>(Api::cuMemAllocAsync_ptsz)], 1);  // step 6, per-thread
  EXPECT_GE(by_api[static_cast<uint16_t>(Api::cuMemFreeAsync)], 1);
  EXPECT_EQ(by_api[static_cast<uint16_t>(Api::cuMemFreeAsync_ptsz)], 1);
}

TEST(Capture, AllPathsRecordKindsApisAndGraphReservations) {
  std::string out = make_temp_dir("kinds");
  Result r = run({program("prog_all_paths_static")}, shim_env(out));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  format::Capture c = read_only_capture(out);
  std::map<uint8_t, int> kinds;
  std::set<uint16_t> apis;
  for (const auto &m : c.memory) {
    if (m.op == static_cast<uint8_t>(Op::kAlloc) && m.result == 0) ++kinds[m.kind];
    apis.insert(m.api);
  }
  EXPECT_EQ(kinds[static_cast<uint8_t>(Kind::kDevice)], 1);
  EXPECT_EQ(kinds[static_cast<uint8_t>(Kind::kPitched)], 2);  // cudaMallocPitch and cudaMalloc3D
  EXPECT_EQ(kinds[static_cast<uint8_t>(Kind::kManaged)], 1);
  EXPECT_EQ(kinds[static_cast<uint8_t>(Kind::kAsync)], 4);  // stream, per-thread, pool, graph
  EXPECT_EQ(kinds[static_cast<uint8_t>(Kind::kHostPinned)], 2);
  EXPECT_EQ(kinds[static_cast<uint8_t>(Kind::kArray)], 1);
  EXPECT_EQ(kinds[static_cast<uint8_t>(Kind::kVmm)], 1);
  EXPECT_EQ(count(c).graph, 1);
  for (auto api : {format::Api::cuMemAllocAsync_ptsz, format::Api::cuMemFreeAsync_ptsz,
                   format::Api::cuMemAllocFromPoolAsync, format::Api::cuMemCreate, format::Api::cuMemMap,
                   format::Api::cuMemUnmap, format::Api::cuMemAddressReserve, format::Api::cuMemRelease,
                   format::Api::cuArray3DCreate_v2, format::Api::cuMemHostAlloc, format::Api::cuMemPoolTrimTo})
    EXPECT_TRUE(apis.count(static_cast<uint16_t>(api))) << format::api_name(static_cast<uint16_t>(api));
  EXPECT_EQ(c.stats->live_bytes, 0u) << "every allocation was freed";
  EXPECT_GT(c.stats->peak_bytes, 0u);
  // Stream-ordered calls are read on the clock once (format 1.2): no duration, flag bit 3.
  using format::Api;
  const std::set<uint16_t> stream_ordered = {
      static_cast<uint16_t>(Api::cuMemAllocAsync),         static_cast<uint16_t>(Api::cuMemAllocAsync_ptsz),
      static_cast<uint16_t>(Api::cuMemFreeAsync),          static_cast<uint16_t>(Api::cuMemFreeAsync_ptsz),
      static_cast<uint16_t>(Api::cuMemAllocFromPoolAsync), static_cast<uint16_t>(Api::cuMemAllocFromPoolAsync_ptsz)};
  int untimed = 0;
  for (const auto &m : c.memory) {
    bool flagged = (m.flags & format::kFlagUntimed) != 0;
    EXPECT_EQ(flagged, stream_ordered.count(m.api) == 1) << format::api_name(m.api);
    if (!flagged) continue;
    EXPECT_EQ(m.duration_ns, 0u) << format::api_name(m.api);
    ++untimed;
  }
  EXPECT_GE(untimed, 8);  // four stream-ordered allocations and their frees
}

TEST(Capture, EightThreadsLoseNothing) {
  std::string out = make_temp_dir("threads");
  Result r = run({program("prog_threads_static")}, shim_env(out));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  format::Capture c = read_only_capture(out);
  std::set<uint32_t> tids;
  for (const auto &m : c.memory) tids.insert(m.tid);
  EXPECT_EQ(tids.size(), 8u);
  EXPECT_EQ(count(c).allocs, 8 * 1003);
  EXPECT_EQ(count(c).frees, 8 * 1000);
  // The writer's tally (live_tally.h): each thread keeps 3 x 64 KiB; at most one 4-8 KiB block
  // of each thread is live beside them, at any moment.
  ASSERT_TRUE(c.stats);
  EXPECT_EQ(c.stats->live_bytes, 8u * 3 * (64u << 10));
  EXPECT_GE(c.stats->peak_bytes, c.stats->live_bytes);
  EXPECT_LE(c.stats->peak_bytes, c.stats->live_bytes + 8u * 8192);
}

// A free's record leaves the hook without its size (format 1.9): the reader pairs it. Here every
// freed address is handed to the next allocation, of any thread, while the free is still in the
// driver (prog_reuse_race), so a pairing in the wrong order would give a free the size of the
// allocation that re-used its address, or none; and the writer's tally would count it wrong.
TEST(Capture, FreesKeepTheirSizesWhenAnotherThreadReusesTheAddressAtOnce) {
  std::string out = make_temp_dir("reuse_race");
  auto env = shim_env(out);
  env["FAKE_CUDA_REUSE"] = "1";
  env["FAKE_CUDA_REUSE_DELAY_US"] = "200";
  env["GPULEAK_STACK_DEPTH"] = "0";
  Result r = run({program("prog_reuse_race_static"), "4", "2000"}, env);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  format::Capture c = read_only_capture(out);
  std::vector<format::MemoryRecord> m = c.memory;
  std::stable_sort(m.begin(), m.end(), [](const auto &a, const auto &b) { return a.ts_ns < b.ts_ns; });
  std::map<uint64_t, uint64_t> live;  // address -> size
  int allocs = 0, frees = 0, unknown = 0, wrong_size = 0, reused = 0;
  std::set<uint64_t> seen;
  for (const auto &x : m) {
    if (x.result != 0) continue;
    if (x.op == static_cast<uint8_t>(Op::kAlloc)) {
      ++allocs;
      if (!seen.insert(x.address).second) ++reused;
      live[x.address] = x.size;
    } else if (x.op == static_cast<uint8_t>(Op::kFree)) {
      ++frees;
      auto it = live.find(x.address);
      if (x.flags & format::kFlagUnknownPointer) ++unknown;
      if (it == live.end() || it->second != x.size) ++wrong_size;
      if (it != live.end()) live.erase(it);
    }
  }
  EXPECT_EQ(allocs, 8000);
  EXPECT_EQ(frees, 8000);
  EXPECT_GT(reused, 7000);  // the fake re-used addresses, or this test proves nothing
  EXPECT_EQ(unknown, 0);
  EXPECT_EQ(wrong_size, 0);
  ASSERT_TRUE(c.stats);
  EXPECT_EQ(c.stats->live_bytes, 0u);  // the writer's tally (live_tally.h), late frees and all
}

// A free under way holds back only allocations at its own address: a synchronous free that waits
// 300 ms for the device must not hold up (or make drop) another thread's records meanwhile.
TEST(Capture, ASlowFreeHoldsUpNoOtherThread) {
  std::string out = make_temp_dir("long_free");
  auto env = shim_env(out);
  env["FAKE_CUDA_SYNC_LATENCY_US"] = "300000";
  env["GPULEAK_BUFFER_KB"] = "64";
  env["GPULEAK_STACK_DEPTH"] = "0";
  Result r = run({program("prog_long_free_static")}, env);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto [allocs, frees] = expected(r.out);
  ASSERT_GT(allocs, 2000) << r.out;  // the busy thread filled its 64 KiB buffer many times over
  format::Capture c = read_only_capture(out);
  ASSERT_TRUE(c.stats);
  EXPECT_EQ(c.stats->events_dropped, 0u);
  EXPECT_EQ(count(c).allocs, allocs);
  EXPECT_EQ(count(c).frees, frees);
}

TEST(Capture, OutOfMemoryIsRecordedWithFreeAndTotal) {
  std::string out = make_temp_dir("oom");
  auto env = shim_env(out);
  env["FAKE_CUDA_CAPACITY"] = "16M";
  Result r = run({program("prog_oom")}, env);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  format::Capture c = read_only_capture(out);
  ASSERT_EQ(c.ooms.size(), 1u);
  EXPECT_EQ(c.ooms[0].result, 2);
  EXPECT_EQ(c.ooms[0].total_bytes, 16u << 20);
  EXPECT_GT(c.ooms[0].requested, c.ooms[0].free_bytes);
  EXPECT_EQ(count(c).failed, 1);
}

TEST(Capture, ProgramWithoutCudaNoticesNothing) {
  std::string out = make_temp_dir("nocuda");
  Result plain = run({program("prog_no_cuda")}, {});
  Result shimmed = run({program("prog_no_cuda")}, shim_env(out));
  EXPECT_EQ(shimmed.exit_code, plain.exit_code);
  EXPECT_EQ(shimmed.out, plain.out);
  EXPECT_EQ(shimmed.err, "");
  EXPECT_TRUE(files_with_suffix(out, "").size() <= 2u) << "only . and ..";
  Result sh = run({"/bin/sh", "-c", "echo hi; ls / > /dev/null"}, shim_env(out));
  EXPECT_EQ(sh.out, "hi\n");
  EXPECT_EQ(sh.err, "");
  EXPECT_TRUE(files_with_suffix(out, ".gpuleak").empty());
}

TEST(Capture, ExitStatusAndOutputStayTheProgramsOwn) {
  std::string out = make_temp_dir("status");
  Result r = run({program("prog_exit_status")}, shim_env(out));
  EXPECT_EQ(r.exit_code, 7);
  EXPECT_EQ(files_with_suffix(out, ".gpuleak").size(), 1u);
  EXPECT_NE(r.err.find("gpuleak: 1 allocation, 0 frees; live at exit: 1 allocation,"), std::string::npos) << r.err;
}

TEST(Capture, BadSettingTurnsTrackingOffWithOneLine) {
  std::string out = make_temp_dir("badenv");
  auto env = shim_env(out);
  env["GPULEAK_STACK_DEPTH"] = "lots";
  Result r = run({program("prog_exit_status")}, env);
  EXPECT_EQ(r.exit_code, 7);
  EXPECT_EQ(r.err,
            "gpuleak: bad value GPULEAK_STACK_DEPTH=\"lots\"; tracking is off, the program continues unprofiled\n");
  EXPECT_TRUE(files_with_suffix(out, ".gpuleak").empty());
}

TEST(Capture, AbortKeepsTheCaptureReadable) {
  std::string out = make_temp_dir("abort");
  Result r = run({program("prog_abort_midway")}, shim_env(out));
  EXPECT_EQ(r.signal, SIGABRT);
  format::Capture c = read_only_capture(out);
  EXPECT_EQ(count(c).allocs, 5);
}

TEST(Capture, ForkedChildThatUsesCudaWritesItsOwnCaptureExecdTrueWritesNone) {
  std::string out = make_temp_dir("fork");
  Result r = run({program("prog_fork_child")}, shim_env(out));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto files = files_with_suffix(out, ".gpuleak");
  ASSERT_EQ(files.size(), 2u) << "parent and the child that allocated";
  int parent_allocs = -1, child_allocs = -1;
  for (const auto &f : files) {
    format::Capture c;
    std::string error;
    ASSERT_TRUE(format::read_capture_file(f, &c, &error)) << error;
    int allocs = count(c).allocs;
    (count(c).frees == 1 ? child_allocs : parent_allocs) = allocs;
    // <program>.<pid>.gpuleak: each process has one thread, whose id is its pid; the child's
    // records must not carry the parent's thread id (cached per thread before the fork).
    std::string name = f.substr(f.find_last_of('/') + 1);
    size_t dot = name.find('.');
    uint32_t pid = static_cast<uint32_t>(std::stoul(name.substr(dot + 1, name.find('.', dot + 1) - dot - 1)));
    for (const auto &m : c.memory) EXPECT_EQ(m.tid, pid) << f;
  }
  EXPECT_EQ(parent_allocs, 3);
  EXPECT_EQ(child_allocs, 1);
}

TEST(Capture, ExportsOnlyInterposedSymbols) {
  Result r = run({"nm", "-D", "--defined-only", GPULEAK_SHIM_PATH}, {});
  ASSERT_EQ(r.exit_code, 0);
  std::regex allowed(
      R"(^(cu[A-Z]\w*|cuda[A-Z]\w*|cupti\w+|gpuleak_api_\w+|InitializeInjection\w*|dlsym|_exit|_Exit|exec(ve|v|vp|vpe|l|lp|le|veat)|fexecve)$)");
  std::istringstream lines(r.out);
  std::string line;
  int n = 0;
  while (std::getline(lines, line)) {
    std::string name = line.substr(line.find_last_of(' ') + 1);
    EXPECT_TRUE(std::regex_match(name, allowed)) << "unexpected export: " << name;
    ++n;
  }
  EXPECT_GT(n, 40);
}

}  // namespace
}  // namespace gpuleak::test

namespace gpuleak::test {
namespace {

// GPULEAK_CUPTI=1 where CUPTI cannot subscribe (here: the fake CUPTI's slot is taken): one state
// in the capture, no crash, the capture as complete as without it.
TEST(Capture, CuptiThatCannotSubscribeChangesNothing) {
  std::string out = make_temp_dir("cupti");
  auto env = shim_env(out);
  env["GPULEAK_CUPTI"] = "1";
  env["CUDA_INJECTION64_PATH"] = "";
  env["FAKE_CUPTI_TAKEN"] = "1";
  Result r = run({program("prog_leaky_static"), "5"}, env);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  format::Capture c = read_only_capture(out);
  EXPECT_EQ(count(c).allocs, 10);
  ASSERT_TRUE(c.stats.has_value());
  EXPECT_TRUE(c.stats->cupti_state == 2 || c.stats->cupti_state == 3) << c.stats->cupti_state;
  EXPECT_EQ(c.stats->uncaptured, 0u);
  EXPECT_TRUE(c.gpu_activity.empty());
}

}  // namespace
}  // namespace gpuleak::test

namespace gpuleak::test {
namespace {

// GPULEAK_EXITCODE (LeakSanitizer style): the program itself fails when the at-exit report finds
// a leak; a clean program and a program that failed on its own keep their status.
TEST(Capture, ExitCodeOnLeakOnlyWhenAskedAndOnlyOverSuccess) {
  std::string out = make_temp_dir("exitcode");
  auto env = shim_env(out);
  env["GPULEAK_CLI"] = GPULEAK_CLI_PATH;
  env["GPULEAK_QUIET"] = "1";
  EXPECT_EQ(run({program("prog_leaky_static"), "20"}, env).exit_code, 0) << "off by default";
  env["GPULEAK_EXITCODE"] = "42";
  Result leaky = run({program("prog_leaky_static"), "20"}, env);
  EXPECT_EQ(leaky.exit_code, 42) << leaky.err;
  EXPECT_EQ(run({program("prog_all_paths_static")}, env).exit_code, 0);
  EXPECT_EQ(run({program("prog_exit_status")}, env).exit_code, 7);
}

}  // namespace
}  // namespace gpuleak::test

namespace gpuleak::test {
namespace {

// libcudart loaded RTLD_LOCAL (not in the global scope): the program's cudaMalloc still reaches
// the real runtime through the shim's export, and is captured with its label.
TEST(Capture, RuntimeLoadedLocallyStillWorksAndIsLabelled) {
  std::string out = make_temp_dir("local");
  Result r = run({program("prog_local_loader"), program("libprog_local_cudart_user.so")}, shim_env(out));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  format::Capture c = read_only_capture(out);
  EXPECT_EQ(count(c).allocs, 1);
  EXPECT_EQ(count(c).frees, 1);
  for (const auto &m : c.memory) {
    if (m.op == static_cast<uint8_t>(Op::kAlloc)) {
      EXPECT_EQ(m.runtime_api, static_cast<uint16_t>(format::Api::cudaMalloc));
    }
  }
}

}  // namespace
}  // namespace gpuleak::test
