// `gpuleak trace`, `export` and `merge` as a user runs them: on a real capture of an
// integration program under the real shim (fake CUDA), on a synthetic capture file, and on bad
// input (one line on stderr, exit status 2).
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "perfetto_decoder.h"
#include "trace_test_support.h"

namespace gpuleak::testing {
namespace {

using nlohmann::json;

struct CliRun {
  int status = -1;
  std::string out, err;
};

// Runs a shell command line (arguments quoted by the caller) with extra environment assignments.
CliRun sh(const std::string &env_and_command) {
  static int n = 0;
  std::string dir = temp_dir("cli-run-" + std::to_string(n++));
  std::string cmd = env_and_command + " > " + dir + "/out 2> " + dir + "/err";
  int rc = std::system(cmd.c_str());
  CliRun r;
  r.status = WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
  std::ifstream o(dir + "/out"), e(dir + "/err");
  std::stringstream so, se;
  so << o.rdbuf();
  se << e.rdbuf();
  r.out = so.str();
  r.err = se.str();
  return r;
}

std::string q(const std::string &s) { return "'" + s + "'"; }
const std::string kCli = q(GPULEAK_CLI_PATH);

// A real capture: prog_leaky_static (30 iterations, 1 MiB kept each) under the real shim.
std::string leaky_capture() {
  static std::string path;
  if (!path.empty()) return path;
  std::string dir = temp_dir("cli-leaky");
  CliRun r = sh("LD_LIBRARY_PATH=" + q(GPULEAK_FAKE_CUDA_DIR) + " LD_PRELOAD=" + q(GPULEAK_SHIM_PATH) +
                " GPULEAK_OUT=" + q(dir) + " GPULEAK_REPORT_TIMEOUT=0 " + q(GPULEAK_PROGRAMS_DIR "/prog_leaky_static") +
                " 30");
  EXPECT_EQ(r.status, 0) << r.err;
  for (const auto &f : std::filesystem::directory_iterator(dir))
    if (f.path().extension() == ".gpuleak") path = f.path().string();
  EXPECT_FALSE(path.empty()) << "no capture in " << dir << ": " << r.err;
  return path;
}

TEST(CliTrace, RealCaptureTraceNextToItOpensAndShowsTheLeak) {
  std::string capture = leaky_capture();
  ASSERT_FALSE(capture.empty());
  CliRun r = sh(kCli + " trace " + q(capture));
  ASSERT_EQ(r.status, 0) << r.err;
  std::string path = capture.substr(0, capture.size() - 8) + ".trace.json";
  EXPECT_NE(r.err.find("gpuleak: trace " + path), std::string::npos) << r.err;
  json trace = parse(read_text(path));
  EXPECT_FALSE(events(trace, "C", "cuda:0 live").empty());
  bool leak_at_function = false;
  for (const json &e : events(trace, "i"))
    leak_at_function |=
        e["cat"] == "leak" && e["args"]["function"].get<std::string>().rfind("cache_activation (", 0) == 0;
  EXPECT_TRUE(leak_at_function) << "no leak marker at cache_activation";
  int slices = 0;
  for (const json &e : events(trace, "X")) slices += e["cat"] == "iteration";
  EXPECT_GT(slices, 10);  // automatic iterations
  EXPECT_EQ(events(trace, "M", "gpuleak_trace")[0]["args"]["gpu_activity"], "GPU activity unavailable (CUPTI off)");
}

// The report, the trace's counter track and the viewer's curve show one peak and one live-at-exit
// per device: all three read the analysis's curve (analysis/lives.h). Each output is re-parsed by
// nlohmann; the view's timeline is thinned hard (--max-points 8) so that the rule must keep the peak.
TEST(CliTrace, TheTraceAndTheViewPeakWhereTheReportDoes) {
  std::string capture = leaky_capture();
  ASSERT_FALSE(capture.empty());
  const std::string dir = temp_dir("cli-one-peak");
  CliRun r = sh(kCli + " report --quiet -o " + q(dir + "/r.json") + " " + q(capture));
  ASSERT_EQ(r.status, 0) << r.err;
  r = sh(kCli + " trace -o " + q(dir + "/t.json") + " " + q(capture));
  ASSERT_EQ(r.status, 0) << r.err;
  r = sh(kCli + " view --quiet --max-points 8 -o " + q(dir + "/v.html") + " " + q(capture));
  ASSERT_EQ(r.status, 0) << r.err;

  const json report = parse(read_text(dir + "/r.json"));
  ASSERT_EQ(report["devices"].size(), 1u);
  const uint64_t peak = report["devices"][0]["peak_live_bytes"];
  const uint64_t at_exit = report["devices"][0]["live_at_exit_bytes"];
  EXPECT_GE(peak, 30u << 20);  // 30 x 1 MiB kept, a 4 MiB temporary on top

  const std::vector<json> counters = events(parse(read_text(dir + "/t.json")), "C", "cuda:0 live");
  ASSERT_FALSE(counters.empty());
  uint64_t trace_peak = 0;
  for (const json &c : counters) trace_peak = std::max<uint64_t>(trace_peak, c["args"]["bytes"]);
  EXPECT_EQ(trace_peak, peak);
  EXPECT_EQ(counters.back()["args"]["bytes"], at_exit);

  const std::string html = read_text(dir + "/v.html");
  const std::string open = "id=\"gpuleak-data\">";
  const size_t begin = html.find(open);
  ASSERT_NE(begin, std::string::npos);
  const size_t end = html.find("</script>", begin);
  ASSERT_NE(end, std::string::npos);
  const json page = parse(html.substr(begin + open.size(), end - begin - open.size()));
  EXPECT_EQ(page["report"]["devices"][0]["peak_live_bytes"], peak);
  const json &timeline = page["view"]["timeline"][0];
  EXPECT_TRUE(timeline["decimated"].get<bool>());
  EXPECT_LE(timeline["live_bytes"].size(), 8u);
  EXPECT_EQ(timeline["peak"]["bytes"], peak);
  uint64_t view_peak = 0;
  for (const json &y : timeline["live_bytes"]) view_peak = std::max<uint64_t>(view_peak, y);
  EXPECT_EQ(view_peak, peak);
  EXPECT_EQ(timeline["live_bytes"].back(), at_exit);
}

TEST(CliTrace, PerfettoAndGzipOutputs) {
  std::string capture = leaky_capture();
  std::string dir = temp_dir("cli-formats");
  ASSERT_EQ(sh(kCli + " trace --quiet --format perfetto -o " + q(dir + "/t.pftrace") + " " + q(capture)).status, 0);
  // The real program's trace, read as trace_processor would: every interned string resolves.
  PerfettoTrace pf = decode_perfetto(read_text(dir + "/t.pftrace"));
  EXPECT_EQ(pf.problems, std::vector<std::string>{});
  EXPECT_GT(pf.packets, 50u);
  EXPECT_GT(pf.iid_references, 0u);
  CliRun gz = sh(kCli + " trace --quiet -o " + q(dir + "/t.trace.json.gz") + " " + q(capture));
  ASSERT_EQ(gz.status, 0) << gz.err;
  std::ifstream raw(dir + "/t.trace.json.gz", std::ios::binary);
  EXPECT_EQ(raw.get(), 0x1f);
  EXPECT_EQ(raw.get(), 0x8b);
  EXPECT_FALSE(parse(read_text(dir + "/t.trace.json.gz")).empty());  // read_text gunzips
  CliRun full = sh("GPULEAK_TRACE=full " + kCli + " trace -o " + q(dir + "/full.json") + " " + q(capture));
  ASSERT_EQ(full.status, 0) << full.err;
  EXPECT_EQ(events(parse(read_text(dir + "/full.json")), "M", "gpuleak_trace")[0]["args"]["events"]["policy"], "full");
}

TEST(CliTrace, ExportCollapsedAddsUpToTheLeak) {
  CliRun r = sh(kCli + " export --format collapsed --at end " + q(leaky_capture()));
  ASSERT_EQ(r.status, 0) << r.err;
  uint64_t total = 0;
  bool named = false;
  std::istringstream in(r.out);
  for (std::string line; std::getline(in, line);) {
    total += std::stoull(line.substr(line.rfind(' ') + 1));
    named |= line.find(";cache_activation (") != std::string::npos && line.rfind("cuda:0;", 0) == 0;
  }
  EXPECT_EQ(total, 30ull << 20);
  EXPECT_TRUE(named) << r.out;
  CliRun peak = sh(kCli + " export --format collapsed --at peak " + q(leaky_capture()));
  EXPECT_EQ(peak.status, 0) << peak.err;
}

TEST(CliTrace, ExportSpeedscopeAddsUpToTheLeak) {
  CliRun r = sh(kCli + " export --format speedscope --at end " + q(leaky_capture()));
  ASSERT_EQ(r.status, 0) << r.err;
  json doc = parse(r.out);
  EXPECT_EQ(doc["$schema"], "https://www.speedscope.app/file-format-schema.json");
  const json &profile = doc["profiles"].at(0);
  EXPECT_EQ(profile["type"], "sampled");
  EXPECT_EQ(profile["unit"], "bytes");
  uint64_t total = 0;
  for (const json &w : profile["weights"]) total += w.get<uint64_t>();
  EXPECT_EQ(total, 30ull << 20);
  bool named = false;
  for (const json &f : doc["shared"]["frames"])
    named |= f["name"].get<std::string>().rfind("cache_activation (", 0) == 0;
  EXPECT_TRUE(named) << r.out;
}

// pprof's own reader on the file: Go's `go tool pprof` (Debian's golang-go, an optional
// dependency in scripts/install-deps.sh). The leak is 1 MiB per iteration at cache_activation, so
// the diff between iterations 0:2 and 0:20 is 18 iterations' worth there.
TEST(CliTrace, ExportPprofOpensInGoToolPprof) {
  std::string dir = temp_dir("cli-pprof");
  for (const char *span : {"0:2", "0:20"}) {
    CliRun r = sh(kCli + " export --format pprof --iterations " + span + " -o " + q(dir + "/" + span + ".pb.gz") + " " +
                  q(leaky_capture()));
    ASSERT_EQ(r.status, 0) << r.err;
  }
  CliRun end = sh(kCli + " export --format pprof -o " + q(dir + "/end.pb.gz") + " " + q(leaky_capture()));
  ASSERT_EQ(end.status, 0) << end.err;
  char magic[2] = {};
  std::ifstream(dir + "/end.pb.gz", std::ios::binary).read(magic, 2);  // read_text would gunzip
  EXPECT_EQ(std::string(magic, 2), "\x1f\x8b");
  if (std::system("command -v go > /dev/null 2>&1") != 0)
    GTEST_SKIP() << "go not installed (Debian golang-go): `go tool pprof` check skipped";
  const std::string go = "HOME=" + q(dir) + " GOCACHE=" + q(dir + "/gocache") + " go tool pprof -top ";
  CliRun top = sh(go + q(dir + "/end.pb.gz"));
  ASSERT_EQ(top.status, 0) << top.err;
  EXPECT_NE(top.out.find("Type: inuse_space"), std::string::npos) << top.out;
  EXPECT_NE(top.out.find("accounting for 30MB, 100% of 30MB total"), std::string::npos) << top.out;
  EXPECT_NE(top.out.find("cache_activation"), std::string::npos) << top.out;
  CliRun diff = sh(go + "-diff_base " + q(dir + "/0:2.pb.gz") + " " + q(dir + "/0:20.pb.gz"));
  ASSERT_EQ(diff.status, 0) << diff.err;
  EXPECT_NE(diff.out.find("18MB"), std::string::npos) << diff.out;
  EXPECT_NE(diff.out.find("cache_activation"), std::string::npos) << diff.out;
}

TEST(CliTrace, MergeASyntheticCaptureWithARealTrace) {
  std::string dir = temp_dir("cli-merge");
  write_capture_file(dir + "/rich.gpuleak", rich_capture());
  ASSERT_EQ(sh(kCli + " trace --quiet " + q(dir + "/rich.gpuleak")).status, 0);
  EXPECT_FALSE(parse(read_text(dir + "/rich.trace.json")).empty());
  CliRun r =
      sh(kCli + " merge " + q(dir + "/rich.trace.json") + " " + q(leaky_capture()) + " -o " + q(dir + "/m.json"));
  ASSERT_EQ(r.status, 0) << r.err;
  json merged = parse(read_text(dir + "/m.json"));
  EXPECT_EQ(events(merged, "M", "process_name").size(), 2u);
  CliRun oom =
      sh(kCli + " export --format collapsed --at oom -o " + q(dir + "/oom.folded") + " " + q(dir + "/rich.gpuleak"));
  EXPECT_EQ(oom.status, 0) << oom.err;
  EXPECT_FALSE(read_text(dir + "/oom.folded").empty());
}

TEST(CliTrace, BadInputIsOneLineAndExitTwo) {
  std::string dir = temp_dir("cli-bad");
  std::ofstream(dir + "/garbage.gpuleak") << "not a capture";
  const std::vector<std::string> bad = {
      kCli + " trace " + q(dir + "/garbage.gpuleak"),
      kCli + " trace " + q(dir + "/missing.gpuleak"),
      kCli + " trace --format xml " + q(leaky_capture()),
      "GPULEAK_TRACE=everything " + kCli + " trace " + q(leaky_capture()),
      kCli + " trace -o " + q(dir + "/no/such/dir/t.json") + " " + q(leaky_capture()),
      kCli + " export --format svg " + q(leaky_capture()),
      kCli + " export --format collapsed --at oom " + q(leaky_capture()),
      kCli + " export --format collapsed --at noon " + q(leaky_capture()),
      kCli + " export --format speedscope --at oom " + q(leaky_capture()),
      kCli + " export --format pprof --iterations 5:2 " + q(leaky_capture()),
      kCli + " export --format pprof --iterations 0:999 " + q(leaky_capture()),
      kCli + " export --format pprof --at end --iterations 1 " + q(leaky_capture()),
      kCli + " merge " + q(leaky_capture()),
      kCli + " merge " + q(dir + "/garbage.gpuleak") + " -o " + q(dir + "/m.json"),
  };
  for (const std::string &cmd : bad) {
    CliRun r = sh(cmd);
    EXPECT_EQ(r.status, 2) << cmd << "\n" << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << cmd << "\n" << r.err;
    EXPECT_EQ(r.err.rfind("gpuleak: ", 0), 0u) << r.err;
  }
  EXPECT_FALSE(std::filesystem::exists(dir + "/m.json"));  // no half-written output
}

}  // namespace
}  // namespace gpuleak::testing
