// The terminal summary must survive any report: null fields (unsymbolized frames), missing keys.
#include <gtest/gtest.h>

#include "output/text_summary.h"

namespace gpuleak::output {
namespace {

TEST(TextSummary, NamesTheLeakingFunctionAndItsLine) {
  auto r = nlohmann::json::parse(R"({"run": {"program": "train", "pid": 7}, "verdict": "leak",
    "iteration_source": "nvtx", "iterations": [{}, {}, {}],
    "leaks": [{"bytes_per_iteration": 1048576, "live_count": 3, "live_bytes": 3145728, "first_iteration": 1,
               "confidence": 0.9, "stack": [{"function": null, "file": null, "line": null},
                                            {"function": "cache_activation", "file": "/src/train.cu", "line": 88}]}],
    "devices": [{"index": 0, "peak_live_bytes": 4194304, "live_at_exit_bytes": 3145728, "verdict": "leak",
                 "forecast": {"iterations_left": 4100, "seconds_left": 1.5}}], "oom": null})");
  std::string s = text_summary(r, "out/train.7.report.json");
  EXPECT_EQ(s,
            "gpuleak: train (pid 7): verdict leak, 3 iterations (nvtx)\n"
            "  leak: 1.0 MiB per iteration at cache_activation (train.cu:88), 3 allocations live at the last "
            "iteration (3.0 MiB), first seen at iteration 1, confidence 0.90\n"
            "  device 0: peak 4.0 MiB, live at exit 3.0 MiB, leak; out of memory in ~4100 iterations (~2 s) at this "
            "rate\n"
            "  report: out/train.7.report.json\n");
}

// iterations[] stops at 10,000 entries (an even sample past that): the count said is the analysis's.
TEST(TextSummary, CountsEveryIterationNotOnlyTheListedOnes) {
  auto r = nlohmann::json::parse(R"({"run": {"program": "stress", "pid": 9}, "verdict": "clean",
    "iteration_source": "auto", "iterations": [{}, {}, {}], "analysis": {"iterations_total": 160000}})");
  EXPECT_EQ(text_summary(r, "r.json").rfind("gpuleak: stress (pid 9): verdict clean, 160000 iterations (auto)\n", 0),
            0u);
  r["analysis"] = nlohmann::json::object();  // an older report: the listed ones
  EXPECT_EQ(text_summary(r, "r.json").rfind("gpuleak: stress (pid 9): verdict clean, 3 iterations (auto)\n", 0), 0u);
}

// Issue #26: the observed level is named; when nothing is found, what was tried and the line to mark.
TEST(TextSummary, NamesTheObservedLevelAndSaysWhyWhenNothingIsFound) {
  auto r = nlohmann::json::parse(R"({"run": {"program": "serve.py", "pid": 5}, "verdict": "leak",
    "iteration_source": "observed", "iterations": [{}, {}],
    "analysis": {"iterations_total": 40, "iteration_choice": {"summary": "40 passes of the loop at serve.py:38-39"}}})");
  EXPECT_EQ(text_summary(r, "r.json")
                .rfind("gpuleak: serve.py (pid 5): verdict leak, iterations: 40 passes of the loop at serve.py:38-39 "
                       "(observed)\n",
                       0),
            0u);
  r = nlohmann::json::parse(R"({"run": {"program": "step.py", "pid": 6}, "verdict": "inconclusive",
    "iteration_source": "none", "analysis": {"iteration_choice": {"tried": ["no NVTX ranges", "no period\u001b[31m"],
    "suggested_loop": "step.py:12"}}})");
  EXPECT_EQ(text_summary(r, "r.json")
                .rfind("gpuleak: step.py (pid 6): verdict inconclusive, no iterations found (no NVTX ranges, no "
                       "period\xEF\xBF\xBD[31m); mark the loop: gpuleak run --loop step.py:12 -- ...\n",
                       0),
            0u);
}

TEST(TextSummary, PythonProgramsAreNamedByTheirPythonLine) {
  auto r = nlohmann::json::parse(R"({"leaks": [{"bytes_per_iteration": 1024, "stack": [
    {"kind": "native", "function": "ffi_call", "file": "ffi.c", "line": 1},
    {"kind": "python", "function": "train_step", "file": "/home/u/train.py", "line": 42},
    {"kind": "python", "function": "main", "file": "/home/u/train.py", "line": 90}]}]})");
  EXPECT_NE(text_summary(r, "").find("at train_step (train.py:42)"), std::string::npos) << text_summary(r, "");
}

// A report with headlines: the summary shows the analysis's choice (here deliberately not the
// innermost Python frame a report without headlines would get), whole, however long.
TEST(TextSummary, ShowsTheHeadlineWhole) {
  const std::string name(3000, 'n');
  nlohmann::json r = nlohmann::json::parse(R"({"leaks": [{"bytes_per_iteration": 1024, "stack": [
    {"kind": "python", "function": "forward", "file": "/v/site-packages/lib/m.py", "line": 3},
    {"kind": "python", "function": "train_step", "file": "/home/u/train.py", "line": 42}]}]})");
  r["leaks"][0]["headline"] = {{"text", "train.py:42 in " + name + " (via forward, lib/m.py:3)"}};
  std::string s = text_summary(r, "");
  EXPECT_NE(s.find("at train.py:42 in " + name + " (via forward, lib/m.py:3), "), std::string::npos) << s;
}

// Issue #28: a helper's line with the user's line that called it; advice that knows the line to
// change leads with it.
TEST(TextSummary, AHelpersCallerAndTheLineToChange) {
  nlohmann::json r = nlohmann::json::parse(R"({"verdict": "leak", "leaks": [{"bytes_per_iteration": 1048576,
    "live_count": 2, "live_bytes": 2097152, "stack": [{"kind": "python", "function": "alloc", "file": "/p/train.py",
    "line": 6}], "headline": {"text": "train.py:6 in alloc", "caller": {"text": "train.py:40 in main"}}}],
    "advice": [{"kind": "cache_thrash", "device": 0, "stack": [{"kind": "python", "function": "step"}],
      "headline": {"text": "train.py:52 in step"}, "change_at": {"text": "train.py:34"},
      "message": "torch.cuda.empty_cache() at train.py:34 returns 8 segments ..."}]})");
  std::string s = text_summary(r, "");
  EXPECT_NE(s.find("per iteration at train.py:6 in alloc, called from train.py:40 in main, 2 allocations"),
            std::string::npos)
      << s;
  EXPECT_NE(s.find("  advice (cache thrash) at train.py:34: torch.cuda.empty_cache() at train.py:34 returns"),
            std::string::npos)
      << s;
  r["advice"][0].erase("change_at");  // without it: the site
  EXPECT_NE(text_summary(r, "").find("advice (cache thrash) at train.py:52 in step: "), std::string::npos);
}

// Who keeps it (issue #30): the group's retained_by under its leak line, control bytes made inert;
// none without one.
TEST(TextSummary, KeptByLineUnderTheLeak) {
  auto r = nlohmann::json::parse(R"({"verdict": "leak", "leaks": [{"site_id": "a1", "bytes_per_iteration": 1024}],
    "leak_groups": [{"bytes_per_iteration": 1024, "live_count": 1, "live_bytes": 1024, "site_ids": ["a1"],
      "headline": {"text": "train.py:52 in main"},
      "retained_by": {"text": "`history` (list, local of main at train.py:44) -> [53 items] -> Tensor\u001b[2J",
                      "event": "oom", "bytes": 1024}}]})");
  std::string s = text_summary(r, "");
  EXPECT_NE(s.find("at train.py:52 in main, "), std::string::npos) << s;
  EXPECT_NE(s.find("\n    kept by `history` (list, local of main at train.py:44) -> [53 items] -> Tensor"),
            std::string::npos)
      << s;
  EXPECT_NE(s.find("(at the out-of-memory)\n"), std::string::npos) << s;
  EXPECT_EQ(s.find('\x1b'), std::string::npos) << s;
  r["leak_groups"][0]["retained_by"] = nullptr;
  EXPECT_EQ(text_summary(r, "").find("kept by"), std::string::npos);
}

TEST(TextSummary, LeakReleasedOnlyAtExitSaysSo) {
  auto r = nlohmann::json::parse(R"({"leaks": [{"bytes_per_iteration": 1048576, "live_count": 0, "live_bytes": 0,
    "first_iteration": 0, "confidence": 0.9, "stack": [{"kind": "native", "function": "f", "file": "a.cu", "line": 3}]}]})");
  std::string s = text_summary(r, "");
  EXPECT_NE(s.find("leak: 1.0 MiB per iteration at f (a.cu:3), released only at exit, first seen"), std::string::npos)
      << s;
}

TEST(TextSummary, LeakCountedAtTheLastIterationAndReleasedAtExitSaysBoth) {
  auto r = nlohmann::json::parse(R"({"leaks": [{"bytes_per_iteration": 1048576, "live_count": 30,
    "live_bytes": 31457280, "live_at_exit_count": 0, "live_at_exit_bytes": 0, "first_iteration": 0,
    "confidence": 0.9, "stack": [{"kind": "native", "function": "f", "file": "a.cu", "line": 3}]}]})");
  std::string s = text_summary(r, "");
  EXPECT_NE(s.find("at f (a.cu:3), 30 allocations live at the last iteration (30.0 MiB), released at exit, first"),
            std::string::npos)
      << s;
}

// Issue #28: PyTorch's cache is named as the cache and each figure says when it holds; the device's
// "live at exit" says how much of it is the cache, so "released at exit" beside it is no contradiction.
TEST(TextSummary, PyTorchsCacheIsNamedAsTheCacheAtExit) {
  auto r = nlohmann::json::parse(R"({"verdict": "leak", "leak_groups": [{"bytes_per_iteration": 1048576,
    "live_count": 30, "live_bytes": 31457280, "live_at_exit_count": 0, "live_at_exit_bytes": 0,
    "first_iteration": 0, "confidence": 0.9, "headline": {"text": "train.py:52 in step"}, "site_ids": ["aa"]}],
    "devices": [{"index": 0, "peak_live_bytes": 2147483648, "live_at_exit_bytes": 2040109465, "verdict": "leak"}],
    "segments": [{"device": 0, "count": 200, "peak_bytes": 2147483648, "live_at_exit_bytes": 2040109465,
      "live_at_exit_count": 183, "headline": {"text": "train.py:40 in step"},
      "blocks": [{"site_id": "bb", "live_at_exit_bytes": 68157440, "live_at_exit_count": 4,
                  "headline": {"text": "train.py:41 in step"}}]}]})");
  std::string s = text_summary(r, "");
  EXPECT_NE(s.find("device 0: peak 2.0 GiB, live at exit 1.9 GiB (1.9 GiB of it in PyTorch's caching allocator's "
                   "segments), leak"),
            std::string::npos)
      << s;
  EXPECT_NE(s.find("  segments: 1.9 GiB reserved by PyTorch's caching allocator at exit (183 segments), 65.0 MiB of "
                   "it in tensors (3 %)\n"),
            std::string::npos)
      << s;
  // No block data (a framework allocator PyTorch's trace did not reach): what is unknown is said.
  r["segments"][0]["blocks"] = nlohmann::json::array();
  s = text_summary(r, "");
  EXPECT_EQ(s.find("0 B in tensors"), std::string::npos) << s;
  EXPECT_NE(s.find("(183 segments); which tensors are in them is not known (PyTorch's allocator trace was not seen)"),
            std::string::npos)
      << s;
}

TEST(TextSummary, NvmlLineOnlyWhenKnownAndAllocatorNote) {
  auto r = nlohmann::json::parse(R"({"run": {"allocator_note": "gpuleak saw segments"}, "devices": [
    {"index": 0, "peak_live_bytes": 1048576, "live_at_exit_bytes": 0, "verdict": "clean",
     "nvml_used_bytes": 524288000, "untracked_bytes": 513802240},
    {"index": 1, "peak_live_bytes": 1048576, "live_at_exit_bytes": 0, "verdict": "clean",
     "nvml_used_bytes": null, "untracked_bytes": null}]})");
  std::string s = text_summary(r, "");
  EXPECT_NE(s.find("device 0: peak 1.0 MiB, live at exit 0 B, clean; NVML: process uses 500.0 MiB, 490.0 MiB not "
                   "tracked (CUDA context, other allocators)\n"),
            std::string::npos)
      << s;
  EXPECT_NE(s.find("device 1: peak 1.0 MiB, live at exit 0 B, clean\n"), std::string::npos) << s;
  EXPECT_NE(s.find("  note: gpuleak saw segments\n"), std::string::npos) << s;
}

// #18: a program's bytes (its name, symbols, files, advice naming them) reach the terminal inert:
// no ESC (CSI colours, OSC title), BEL, C1 control or line break of theirs survives.
TEST(TextSummary, EscapeSequencesInNamesAreInert) {
  const std::string evil =
      "f\x1b[31mred\x1b]0;pwned\x07\xC2\x9B"
      "2J\nfake line";
  nlohmann::json r = {{"run", {{"program", evil}, {"pid", 7}, {"allocator_note", evil}}},
                      {"verdict", "leak"},
                      {"leaks",
                       {{{"bytes_per_iteration", 1024},
                         {"live_count", 1},
                         {"stack", {{{"kind", "native"}, {"function", evil}, {"file", evil}, {"line", 3}}}}}}},
                      {"devices", {{{"index", 0}, {"verdict", evil}}}},
                      {"advice", {{{"kind", evil}, {"message", evil}, {"stack", {{{"function", evil}}}}}}}};
  std::string s = text_summary(r, "out/" + evil + ".report.json");
  for (char c : {'\x1b', '\x07'}) EXPECT_EQ(s.find(c), std::string::npos) << s;
  EXPECT_EQ(s.find("\xC2\x9B"), std::string::npos) << s;
  EXPECT_EQ(s.find("\nfake line"), std::string::npos) << s;  // no line of the program's making
  EXPECT_NE(s.find("f\xEF\xBF\xBD[31mred"), std::string::npos) << s;
}

// #18: the summary says when the capture was cut short, dropped events or measured nothing.
TEST(TextSummary, SaysWhatTheCaptureMissed) {
  auto r = nlohmann::json::parse(R"({"run": {"program": "train", "pid": 7,
    "capture": {"events": 0, "events_dropped": 12, "tracking_disabled": "out of disk", "truncated": true}},
    "verdict": "clean"})");
  std::string s = text_summary(r, "");
  EXPECT_NE(s.find("  note: the capture is truncated (it ends mid-record: the process was killed while writing)"),
            std::string::npos)
      << s;
  EXPECT_NE(s.find("  note: the capture recorded no CUDA memory events: nothing was measured\n"), std::string::npos)
      << s;
  EXPECT_NE(s.find("  note: the capture dropped 12 events"), std::string::npos) << s;
  EXPECT_NE(s.find("  note: tracking was turned off mid-run: out of disk\n"), std::string::npos) << s;
  r["run"]["capture"] = {{"events", 40}, {"events_dropped", 0}, {"tracking_disabled", nullptr}, {"truncated", false}};
  EXPECT_EQ(text_summary(r, "").find("note:"), std::string::npos) << text_summary(r, "");
}

TEST(TextSummary, NullsAndMissingKeysDoNotThrow) {
  for (const char *text : {"{}", "null", "[]", R"({"run": null, "leaks": null, "devices": [null]})",
                           R"({"leaks": [{"stack": [null, 3, {"line": "x"}]}], "verdict": 5})"}) {
    auto r = nlohmann::json::parse(text);
    EXPECT_NO_THROW(text_summary(r, "")) << text;
  }
}

TEST(TextSummary, HumanBytes) {
  EXPECT_EQ(human_bytes(512), "512 B");
  EXPECT_EQ(human_bytes(1536), "1.5 KiB");
  EXPECT_EQ(human_bytes(3.0 * (1ull << 30)), "3.0 GiB");
}

// Issue #17: a run that ran out of memory led with its leak and put the failure last. The
// failure comes first: where, how much was asked, what was live by site; no forecast for it.
TEST(TextSummary, OutOfMemoryLeads) {
  auto r = nlohmann::json::parse(R"({"run": {"program": "train", "pid": 7}, "verdict": "leak",
    "iteration_source": "api", "iterations": [{}],
    "leaks": [{"bytes_per_iteration": 1048576, "live_count": 1, "live_bytes": 1048576, "first_iteration": 0,
               "confidence": 0.9, "stack": [{"kind": "native", "function": "cache_activation", "file": "a.cu", "line": 3}]}],
    "devices": [{"index": 0, "peak_live_bytes": 67108864, "live_at_exit_bytes": 67108864, "verdict": "leak",
                 "forecast": {"iterations_left": 0, "seconds_left": 0}}],
    "oom": {"events": [{"device": 0, "api": "cudaMalloc", "requested_bytes": 4194304, "free_bytes": 0,
      "total_bytes": 67108864, "live_bytes": 67108864, "recovered": false,
      "stack": [{"kind": "native", "function": "load_batch", "file": "/src/data.cpp", "line": 7}],
      "live_by_site": [
        {"bytes": 50331648, "count": 48, "stack": [{"kind": "native", "function": "cache_activation", "file": "a.cu", "line": 3}]},
        {"bytes": 16777216, "count": 1, "stack": [{"kind": "native", "function": "load_weights", "file": "b.cu", "line": 9}]}]}]}})");
  std::string s = text_summary(r, "");
  EXPECT_EQ(s,
            "gpuleak: train (pid 7): out of memory on device 0: cudaMalloc of 4.0 MiB failed at load_batch "
            "(data.cpp:7) with 64.0 MiB live (free 0 B of 64.0 MiB)\n"
            "  live at the failure: 48.0 MiB in 48 allocations at cache_activation (a.cu:3)\n"
            "  live at the failure: 16.0 MiB in 1 allocation at load_weights (b.cu:9)\n"
            "  verdict leak, 1 iteration (api)\n"
            "  leak: 1.0 MiB per iteration at cache_activation (a.cu:3), 1 allocation live at the last iteration "
            "(1.0 MiB), first seen at iteration 0, confidence 0.90\n"
            "  device 0: peak 64.0 MiB, live at exit 64.0 MiB, leak; ran out of memory\n");
  // Without the failure: the forecast, with less than an iteration left said as such.
  r["oom"] = nullptr;
  s = text_summary(r, "");
  EXPECT_NE(s.find("leak; out of memory within the next iteration at this rate\n"), std::string::npos) << s;
  EXPECT_EQ(s.find("~0 iterations"), std::string::npos) << s;
}

}  // namespace
}  // namespace gpuleak::output
