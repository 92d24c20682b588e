// The report JSON: its documented shape (docs/report-format.md), stable site ids, and hostile
// strings. Every report is dumped with dump_report and re-parsed by nlohmann's parser.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>

#include <nlohmann/json.hpp>

#include "analysis/analysis.h"
#include "analysis/capture_builder.h"
#include "output/json_text.h"
#include "output/report_json.h"
#include "output/report_rows.def"
#include "output/text_summary.h"

namespace gpuleak::output {
namespace {

using nlohmann::json;
using testing::CaptureBuilder;
using testing::kMiB;

Frame native(const std::string &fn, const std::string &file, int line, const std::string &module, uint64_t address) {
  Frame f;
  f.kind = Frame::Kind::kNative;
  f.function = fn;
  f.file = file;
  f.line = line;
  f.module = module;
  f.address = address;
  f.build_id = "3b8e0f11";
  return f;
}

Frame python(const std::string &fn, const std::string &file, int line) {
  Frame f;
  f.kind = Frame::Kind::kPython;
  f.function = fn;
  f.file = file;
  f.line = line;
  return f;
}

// Stack 7: the leaking native site; 100: its Python stack; anything else: unknown.
Stack fake_symbolize(uint32_t id) {
  if (id == 7)
    return {native("at::native::empty_cuda(...)", "EmptyTensor.cpp", 51, "/opt/torch/lib/libtorch_cuda.so",
                   0x7f2a91c0e4d3)};
  if (id == 100) return {python("train_step", "/home/ana/train.py", 42), python("main", "/home/ana/train.py", 77)};
  return {};
}

void fill_run(format::Capture &c) {
  format::RunInfo run;
  run.fixed.pid = 48213;
  run.fixed.ppid = 1;
  run.fixed.rank = -1;
  run.fixed.driver_version = 13000;
  run.fixed.stack_depth = 32;
  run.program = "train.py";
  run.command = {"python3", "train.py", "--epochs", "1"};
  run.host = "gpu-node-07";
  run.version = "0.1.0";
  run.allocator = format::AllocatorSettings::parse("backend:cudaMallocAsync");
  run.unwinder = "libunwind";
  c.run = run;
  format::StatsRecord s{};
  s.events = 123;
  s.events_dropped = 2;
  s.cupti_state = 0;
  s.final_record = 1;
  c.stats = s;
}

CaptureBuilder leaking_run() {
  CaptureBuilder b;
  b.device(0, "NVIDIA H200", 150754820096ull);
  fill_run(b.capture);
  b.alloc(256 * kMiB, 1, format::Kind::kAsync);
  for (int i = 0; i < 20; ++i) {
    b.begin("train");
    uint64_t t = b.alloc(64 * kMiB, 2, format::Kind::kAsync);
    b.alloc(1 * kMiB, 7, format::Kind::kAsync, 0, 0, 100);
    b.free(t, format::Kind::kAsync);
    b.end();
  }
  return b;
}

json report_of(const format::Capture &c, const ReportContext &ctx = {}) {
  analysis::Analysis a = analysis::analyze(c);
  std::string text = dump_report(make_report(c, a, fake_symbolize, ctx));
  return json::parse(text);  // throws on invalid JSON
}

// json_text() is nlohmann's dump(2, ' ', false, replace) to the byte, for every kind of value:
// nested empty and one-element containers, numbers of each type and sign, floats nlohmann writes
// in its own way, and strings it must escape or repair (control bytes, quotes, UTF-8, invalid
// UTF-8), as values and as keys.
TEST(ReportJson, TextIsNlohmannsDumpToTheByte) {
  const std::string hostile = std::string("q\"b\\s\x01\x1f\x7f\n</x>") + "\xc3\xa9\xff\xfe(";
  json doc = {
      {"empty_object", json::object()},
      {"empty_array", json::array()},
      {"one", json::array({json::object({{"a", json::array()}})})},
      {"numbers", {0, -1, INT64_MIN, INT64_MAX, UINT64_MAX, 0.1, -2.5e-300, 1e300, 3.0, 0.199, 1.0 / 3}},
      {"special", {std::nan(""), INFINITY, nullptr, true, false}},
      {"strings", {"", "plain", "say \"hi\"", "back\\\\slash", hostile, "\xe2\x82\xac euro"}},
      {hostile, {{hostile, hostile}, {"z", 1u}}},
  };
  EXPECT_EQ(json_text(doc), doc.dump(2, ' ', false, json::error_handler_t::replace));
  for (const json &v : {json(1.5), json("x"), json(nullptr), json::array(), json(-7)})
    EXPECT_EQ(json_text(v), v.dump(2, ' ', false, json::error_handler_t::replace));
}

// The document `gpuleak report` writes (iterations straight from the analysis into the text) is
// the report make_report and dump_report give, to the byte: more iterations than are listed (the
// even sample), two devices of which one is idle in most of them, loops whose names need escaping,
// and none at all.
TEST(ReportJson, DocumentIsTheReportToTheByte) {
  std::vector<CaptureBuilder> captures(3);
  {
    CaptureBuilder &b = captures[0];
    b.device(0, "a", 1ull << 40);
    b.device(3, "b", 1ull << 40);
    fill_run(b.capture);
    for (int i = 0; i < 12000; ++i) {
      b.begin(i % 3 ? "train" : "tr\xffin</script>\"q\"");
      const uint64_t t = b.alloc(4096 + i, 2, format::Kind::kAsync, i % 50 ? 0 : 3);
      b.alloc(i % 7 ? 0 : 512, 7, format::Kind::kDevice);
      b.free(t, format::Kind::kAsync, i % 50 ? 0 : 3);
      b.end(i % 3 ? "train" : "tr\xffin</script>\"q\"");
    }
  }
  captures[1] = leaking_run();
  fill_run(captures[2].capture);  // no memory at all
  for (const CaptureBuilder &b : captures) {
    const analysis::Analysis a = analysis::analyze(b.capture);
    Sites sites(fake_symbolize, {});
    const json whole = make_report(b.capture, a, sites, {});
    Sites other(fake_symbolize, {});
    const ReportDocument doc = make_report_document(b.capture, a, other, {});
    const std::string want = dump_report(whole);
    // Not EXPECT_EQ: gtest diffs two 4 MB texts line by line, quadratically.
    const size_t at =
        std::mismatch(doc.text.begin(), doc.text.end(), want.begin(), want.end()).first - doc.text.begin();
    EXPECT_TRUE(doc.text == want) << "first difference at byte " << at << " of " << want.size() << ": \""
                                  << doc.text.substr(at > 80 ? at - 80 : 0, 160) << "\"";
    ASSERT_TRUE(doc.tree["iterations"].is_array());
    EXPECT_EQ(doc.tree["iterations"].size(), whole["iterations"].size());
    json rest = doc.tree, whole_rest = whole;
    rest.erase("iterations");
    whole_rest.erase("iterations");
    EXPECT_EQ(rest, whole_rest);
  }
}

// Each iterations[] entry and devices[] row, in the tree (make_report) and in the text
// (make_report_document, parsed back), is exactly report_rows.def's fields with the analysis's
// values: a field one writer adds on its own, or leaves out, fails here. Two devices, one idle in
// some iterations; loop names that need escaping.
TEST(ReportJson, IterationRowsAreTheFieldTableInBothWriters) {
  CaptureBuilder b;
  b.device(0, "a", 1ull << 40);
  b.device(2, "b", 1ull << 40);
  fill_run(b.capture);
  for (int i = 0; i < 6; ++i) {
    const char *loop = i % 2 ? "train" : "e\"val</x>\xc3\xa9";
    b.begin(loop);
    const uint64_t p = b.alloc(1000 + i, 2, format::Kind::kDevice, 0);
    if (i % 3) b.alloc(300 + 7 * i, 3, format::Kind::kDevice, 2);
    b.free(p, format::Kind::kDevice, 0);
    b.end(loop);
  }
  const analysis::Analysis a = analysis::analyze(b.capture);
  ASSERT_EQ(a.iterations.size(), 6u);
  ASSERT_EQ(a.devices.size(), 2u);
  Sites tree_sites(fake_symbolize, {}), text_sites(fake_symbolize, {});
  const json tree = make_report(b.capture, a, tree_sites, {});
  const json text = json::parse(make_report_document(b.capture, a, text_sites, {}).text);
  for (const json *doc : {&tree, &text}) {
    const json &entries = (*doc)["iterations"];
    ASSERT_EQ(entries.size(), a.iterations.size());
    for (size_t i = 0; i < a.iterations.size(); ++i) {
      const analysis::Iteration &it = a.iterations[i];
      json rows = json::array();
      for (size_t k = 0; k < a.devices.size(); ++k) {
        const analysis::IterationDevice d = a.iteration_device(i, k);
        json &row = rows.emplace_back(json::object());
#define GPULEAK_EXPECTED(key, value) row[#key] = value;
        GPULEAK_ITERATION_DEVICE_FIELDS(GPULEAK_EXPECTED)
#undef GPULEAK_EXPECTED
      }
      json want = json::object();
#define GPULEAK_EXPECTED(key, value) want[#key] = value;
      GPULEAK_ITERATION_FIELDS(GPULEAK_EXPECTED)
#undef GPULEAK_EXPECTED
      EXPECT_EQ(entries[i], want) << (doc == &tree ? "tree" : "text") << ", iteration " << i;
    }
  }
  // The idle device's row is there with zeros, and the rows differ: the test sees each field.
  EXPECT_EQ(text["iterations"][0]["devices"][1]["alloc_count"], 0);
  EXPECT_NE(text["iterations"][1]["devices"][1]["allocated_bytes"],
            text["iterations"][2]["devices"][1]["allocated_bytes"]);
}

TEST(ReportJson, HasTheDocumentedShape) {
  CaptureBuilder b = leaking_run();
  ReportContext ctx;
  format::DeviceUsageRecord usage{};  // NVML at exit: 1000 bytes more than gpuleak counted
  usage.device = 0;
  usage.process_used_bytes = (256 + 20) * kMiB + 1000;
  usage.tracked_live_bytes = (256 + 20) * kMiB;
  usage.flags = format::kUsageProcessKnown | format::kUsageAtExit;
  b.capture.device_usage.push_back(usage);
  json r = report_of(b.capture, ctx);

  EXPECT_EQ(r["schema"], "gpuleak.report/1.3");
  const json &run = r["run"];
  EXPECT_EQ(run["command"], json({"python3", "train.py", "--epochs", "1"}));
  EXPECT_EQ(run["program"], "train.py");
  EXPECT_EQ(run["pid"], 48213);
  EXPECT_TRUE(run["rank"].is_null());
  EXPECT_EQ(run["host"], "gpu-node-07");
  EXPECT_EQ(run["start_time"], "2025-11-30T10:53:20.000Z");
  EXPECT_EQ(run["duration_ns"], 101000u);  // 101 records, 1000 ns apart
  EXPECT_EQ(run["gpuleak_version"], "0.1.0");
  EXPECT_EQ(run["cuda_driver_version"], 13000);
  EXPECT_EQ(run["allocator_env"], json({{"PYTORCH_CUDA_ALLOC_CONF", "backend:cudaMallocAsync"}}));
  EXPECT_EQ(run["allocator_mode"], "per-tensor (cudaMallocAsync)");
  EXPECT_EQ(run["capture"]["cupti"], "off");
  EXPECT_EQ(run["capture"]["events"], 123);
  EXPECT_EQ(run["capture"]["events_dropped"], 2);
  EXPECT_TRUE(run["capture"]["tracking_disabled"].is_null());
  EXPECT_EQ(run["capture"]["truncated"], false);
  EXPECT_EQ(run["capture"]["clean_exit"], true);

  EXPECT_EQ(r["verdict"], "leak");
  EXPECT_EQ(r["iteration_source"], "api");
  EXPECT_EQ(r["analysis"]["primary_loop"], "train");
  EXPECT_EQ(r["analysis"]["warmup_iterations"], 2);

  ASSERT_EQ(r["devices"].size(), 1u);
  const json &d = r["devices"][0];
  EXPECT_EQ(d["index"], 0);
  EXPECT_EQ(d["name"], "NVIDIA H200");
  EXPECT_EQ(d["total_bytes"], 150754820096ull);
  EXPECT_EQ(d["peak_live_bytes"], (256 + 19 + 64 + 1) * kMiB);
  EXPECT_EQ(d["live_at_exit_bytes"], (256 + 20) * kMiB);
  EXPECT_EQ(d["nvml_used_bytes"], (256 + 20) * kMiB + 1000);
  EXPECT_EQ(d["untracked_bytes"], 1000);
  EXPECT_EQ(d["verdict"], "leak");
  ASSERT_TRUE(d["forecast"].is_object());
  // The 1000 untracked bytes are not free either.
  EXPECT_EQ(d["forecast"]["held_elsewhere_bytes"], 1000);
  EXPECT_EQ(d["forecast"]["iterations_left"], (150754820096ull - (256 + 20) * kMiB - 1000) / kMiB);
  EXPECT_TRUE(d["forecast"]["iterations_left"].is_number_unsigned());

  ASSERT_EQ(r["iterations"].size(), 20u);
  const json &it = r["iterations"][3];
  EXPECT_EQ(it["index"], 3);
  EXPECT_EQ(it["loop"], "train");
  EXPECT_EQ(it["primary"], true);
  EXPECT_EQ(it["start_ns"], 17000u);
  EXPECT_EQ(it["end_ns"], 21000u);
  EXPECT_EQ(it["devices"][0]["live_end_bytes"], 260 * kMiB);
  EXPECT_EQ(it["devices"][0]["peak_bytes"], 324 * kMiB);
  EXPECT_EQ(it["devices"][0]["allocated_bytes"], 65 * kMiB);
  EXPECT_EQ(it["devices"][0]["freed_bytes"], 64 * kMiB);
  EXPECT_EQ(it["devices"][0]["alloc_count"], 2);
  EXPECT_EQ(it["devices"][0]["free_count"], 1);

  ASSERT_EQ(r["leaks"].size(), 1u);
  const json &l = r["leaks"][0];
  Stack expected = fake_symbolize(7);
  for (const Frame &f : fake_symbolize(100)) expected.push_back(f);
  EXPECT_EQ(l["site_id"], site_id(expected));
  EXPECT_EQ(l["site_id"].get<std::string>().size(), 16u);
  EXPECT_EQ(l["device"], 0);
  EXPECT_EQ(l["bytes_per_iteration"], 1048576);
  EXPECT_TRUE(l["bytes_per_iteration"].is_number_integer());
  EXPECT_EQ(l["live_bytes"], 20 * kMiB);
  EXPECT_EQ(l["live_count"], 20);
  EXPECT_EQ(l["first_iteration"], 0);
  EXPECT_EQ(l["confidence"], 0.9);
  ASSERT_EQ(l["stack"].size(), 3u);
  const json &f0 = l["stack"][0];
  EXPECT_EQ(f0["kind"], "native");
  EXPECT_EQ(f0["function"], "at::native::empty_cuda(...)");
  EXPECT_EQ(f0["file"], "EmptyTensor.cpp");
  EXPECT_EQ(f0["line"], 51);
  EXPECT_EQ(f0["module"], "libtorch_cuda.so");
  EXPECT_EQ(f0["address"], "0x7f2a91c0e4d3");
  EXPECT_EQ(f0["build_id"], "3b8e0f11");
  const json &f1 = l["stack"][1];
  EXPECT_EQ(f1["kind"], "python");
  EXPECT_EQ(f1["function"], "train_step");
  EXPECT_EQ(f1["line"], 42);
  EXPECT_TRUE(f1["module"].is_null());
  EXPECT_FALSE(f1.contains("address"));
  EXPECT_EQ(l["stack"][2]["function"], "main");

  ASSERT_EQ(r["live_at_exit"].size(), 2u);
  EXPECT_EQ(r["live_at_exit"][0]["live_bytes"], 256 * kMiB);
  EXPECT_EQ(r["live_at_exit"][1]["site_id"], l["site_id"]);
  EXPECT_EQ(r["advice"], json::array());
  EXPECT_TRUE(r["oom"].is_null());
}

// NVML's view comes from the capture's DeviceUsage records (format 1.1): the last one per device.
TEST(ReportJson, NvmlUsageFromDeviceUsageRecords) {
  CaptureBuilder b = leaking_run();
  b.device(1, "NVIDIA H200", 150754820096ull);
  format::DeviceUsageRecord early{};
  early.device = 0;
  early.flags = format::kUsageProcessKnown;
  early.process_used_bytes = 1;
  format::DeviceUsageRecord last = early;
  last.process_used_bytes = 900 * kMiB;
  last.tracked_live_bytes = 276 * kMiB;
  last.device_used_bytes = 2000 * kMiB;
  last.flags = format::kUsageProcessKnown | format::kUsageAtExit;
  format::DeviceUsageRecord unlisted{};  // device 1: NVML answered, but not for this pid
  unlisted.device = 1;
  unlisted.device_used_bytes = 5 * kMiB;
  unlisted.flags = format::kUsageAtExit;
  b.capture.device_usage = {early, last, unlisted};
  b.alloc(1 * kMiB, 3, format::Kind::kDevice, 1);
  json r = report_of(b.capture);
  ASSERT_EQ(r["devices"].size(), 2u);
  const json &d0 = r["devices"][0];
  EXPECT_EQ(d0["nvml_used_bytes"], 900 * kMiB);
  EXPECT_EQ(d0["untracked_bytes"], 624 * kMiB);  // minus what gpuleak counted at that moment
  EXPECT_EQ(d0["nvml_device_used_bytes"], 2000 * kMiB);
  const json &d1 = r["devices"][1];
  EXPECT_TRUE(d1["nvml_used_bytes"].is_null());
  EXPECT_TRUE(d1["untracked_bytes"].is_null());
  EXPECT_EQ(d1["nvml_device_used_bytes"], 5 * kMiB);

  // A process using less than gpuleak counted (NVML rounding): 0, never negative.
  b.capture.device_usage = {last};
  b.capture.device_usage[0].process_used_bytes = 100 * kMiB;
  EXPECT_EQ(report_of(b.capture)["devices"][0]["untracked_bytes"], 0);
  // No record: unknown.
  b.capture.device_usage.clear();
  json none = report_of(b.capture);
  EXPECT_TRUE(none["devices"][0]["nvml_used_bytes"].is_null());
  EXPECT_TRUE(none["devices"][0]["nvml_device_used_bytes"].is_null());
}

TEST(ReportJson, LeakLiveAtTheLastIterationAndAtExit) {
  CaptureBuilder b = leaking_run();
  json before = report_of(b.capture);
  EXPECT_EQ(before["leaks"][0]["live_at_exit_bytes"], 20 * kMiB);
  EXPECT_EQ(before["leaks"][0]["fit_quality"], 1);
  EXPECT_EQ(before["leaks"][0]["r2"], 1);
  EXPECT_EQ(before["devices"][0]["growth_fit_quality"], 1);
  // The program frees its cache at exit, after the loop: the leak still says what it held.
  for (const auto &m : std::vector<format::MemoryRecord>(b.capture.memory))
    if (m.stack_id == 7) b.free(m.address, format::Kind::kAsync);
  json after = report_of(b.capture);
  ASSERT_EQ(after["leaks"].size(), 1u);
  EXPECT_EQ(after["leaks"][0]["live_bytes"], 20 * kMiB);
  EXPECT_EQ(after["leaks"][0]["live_count"], 20);
  EXPECT_EQ(after["leaks"][0]["live_at_exit_bytes"], 0);
  EXPECT_EQ(after["leaks"][0]["live_at_exit_count"], 0);
}

TEST(ReportJson, SiteIdIgnoresAddressesAndModuleDirectories) {
  Stack a = {native("f", "a.cpp", 10, "/usr/lib/libx.so", 0x1000), python("g", "t.py", 3)};
  Stack b = {native("f", "a.cpp", 10, "/opt/other/libx.so", 0x7f0000001000), python("g", "t.py", 3)};
  Stack c = {native("f", "a.cpp", 11, "/usr/lib/libx.so", 0x1000), python("g", "t.py", 3)};
  EXPECT_EQ(site_id(a), site_id(b));
  EXPECT_NE(site_id(a), site_id(c));
  EXPECT_EQ(site_id(Stack{}), "cbf29ce484222325");  // FNV-1a 64 offset basis: no frames
  Stack ab = {native("ab", "c", 1, "", 0)};
  Stack a_bc = {native("a", "bc", 1, "", 0)};
  EXPECT_NE(site_id(ab), site_id(a_bc));
}

// The recorder keeps PYTORCH_CUDA_ALLOC_CONF as it was, then ";NAME=value" for the other
// frameworks' switches (run_facts.cpp): each gets its own key.
TEST(ReportJson, AllocatorEnvHasOneKeyPerSetting) {
  CaptureBuilder b = leaking_run();
  b.capture.run->allocator = format::AllocatorSettings::parse(
      "expandable_segments:True;PYTORCH_NO_CUDA_MEMORY_CACHING=1;XLA_PYTHON_CLIENT_ALLOCATOR=platform;"
      "XLA_PYTHON_CLIENT_PREALLOCATE=false;GPULEAK_CUPY=per-array;GPULEAK_JAX=per-buffer;GPULEAK_TORCH=per-tensor");
  json r = make_report(b.capture, analysis::analyze(b.capture), fake_symbolize, {});
  EXPECT_EQ(r["run"]["allocator_env"], json({{"PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True"},
                                             {"PYTORCH_NO_CUDA_MEMORY_CACHING", "1"},
                                             {"XLA_PYTHON_CLIENT_ALLOCATOR", "platform"},
                                             {"XLA_PYTHON_CLIENT_PREALLOCATE", "false"},
                                             {"GPULEAK_CUPY", "per-array"},
                                             {"GPULEAK_JAX", "per-buffer"},
                                             {"GPULEAK_TORCH", "per-tensor"}}));
  b.capture.run->allocator = format::AllocatorSettings::parse("XLA_PYTHON_CLIENT_ALLOCATOR=platform");
  r = make_report(b.capture, analysis::analyze(b.capture), fake_symbolize, {});
  EXPECT_EQ(r["run"]["allocator_env"], json({{"XLA_PYTHON_CLIENT_ALLOCATOR", "platform"}}));
}

TEST(ReportJson, HostileStringsStayValidJson) {
  const std::string hostile =
      std::string("q\"b\\s\x01\x1f\n</script><script>alert(1)</script>") + "\xff\xfe" + "\xc3\x28";
  CaptureBuilder b = leaking_run();
  b.capture.run->host = hostile;
  b.capture.run->allocator = format::AllocatorSettings::parse(hostile);
  b.capture.run->command = {hostile, "ok"};
  b.capture.disabled.push_back(hostile);
  for (auto &m : b.capture.markers) m.label_id = b.str("tr\xe9in</script>");
  auto symbolize = [&](uint32_t id) {
    Stack s = fake_symbolize(id);
    for (Frame &f : s) {
      f.function = hostile;
      f.file = "dir\\" + hostile;
      f.build_id = hostile;
    }
    return s;
  };
  analysis::Analysis a = analysis::analyze(b.capture);
  json report = make_report(b.capture, a, symbolize, {});
  EXPECT_THROW(report.dump(), json::type_error);  // why dump_report exists
  std::string text = dump_report(report);
  EXPECT_EQ(text.find("</script>"), std::string::npos);
  EXPECT_EQ(text.find('\x01'), std::string::npos);
  json r = json::parse(text);

  const std::string replaced =
      std::string("q\"b\\s\x01\x1f\n</script><script>alert(1)</script>") + "\xef\xbf\xbd\xef\xbf\xbd" + "\xef\xbf\xbd(";
  EXPECT_EQ(r["run"]["host"], replaced);
  EXPECT_EQ(r["run"]["command"][0], replaced);
  EXPECT_EQ(r["run"]["command"][1], "ok");
  EXPECT_EQ(r["run"]["allocator_env"]["PYTORCH_CUDA_ALLOC_CONF"], replaced);
  EXPECT_EQ(r["run"]["capture"]["tracking_disabled"], replaced);
  EXPECT_EQ(r["iterations"][0]["loop"], "tr\xef\xbf\xbdin</script>");
  EXPECT_EQ(r["leaks"][0]["stack"][0]["function"], replaced);
  EXPECT_EQ(r["leaks"][0]["stack"][0]["file"], "dir\\" + replaced);
  EXPECT_EQ(r["verdict"], "leak");
}

TEST(ReportJson, OomEvents) {
  CaptureBuilder b;
  b.device(0, "Fake GPU", 400 * kMiB);
  for (int i = 0; i < 3; ++i) b.alloc(100 * kMiB, 7, format::Kind::kDevice, 0, 0, 100);
  b.failed_alloc(1024 * kMiB, 7);
  b.oom(1024 * kMiB, 10 * kMiB, 400 * kMiB, 7);
  b.alloc(1 * kMiB, 3);
  json r = report_of(b.capture);
  ASSERT_TRUE(r["oom"].is_object());
  ASSERT_EQ(r["oom"]["events"].size(), 1u);
  const json &e = r["oom"]["events"][0];
  EXPECT_EQ(e["t_ns"], 5000);
  EXPECT_EQ(e["device"], 0);
  EXPECT_EQ(e["requested_bytes"], 1024 * kMiB);
  EXPECT_EQ(e["free_bytes"], 10 * kMiB);
  EXPECT_EQ(e["total_bytes"], 400 * kMiB);
  EXPECT_EQ(e["live_bytes"], 300 * kMiB);
  EXPECT_EQ(e["recovered"], true);
  EXPECT_EQ(e["stack"][0]["function"], "at::native::empty_cuda(...)");
  ASSERT_EQ(e["live_by_site"].size(), 1u);
  EXPECT_EQ(e["live_by_site"][0]["bytes"], 300 * kMiB);
  EXPECT_EQ(e["live_by_site"][0]["count"], 3);
  EXPECT_EQ(e["live_by_site"][0]["stack"].size(), 3u);
  ASSERT_EQ(e["history"].size(), 4u);
  EXPECT_EQ(e["history"][0]["op"], "alloc");
  EXPECT_EQ(e["history"][0]["kind"], "device");
  EXPECT_EQ(e["history"][0]["address"], "0x7f0000100000");
  EXPECT_EQ(e["history"][3]["result"], 2);
  EXPECT_EQ(e["history"][3]["site_id"], site_id(fake_symbolize(7)));
  EXPECT_EQ(e["site_id"], site_id(fake_symbolize(7)));
  EXPECT_EQ(r["analysis"]["failed_allocations"], 1);
}

TEST(ReportJson, AtMostTenThousandIterationsListed) {
  CaptureBuilder b;
  b.device(0, "NVIDIA H200", 150754820096ull);
  const uint32_t n = 25000;
  for (uint32_t i = 0; i < n; ++i) {
    b.begin("step");
    b.free(b.alloc(1 * kMiB, 2), format::Kind::kDevice);
    b.end();
  }
  json r = report_of(b.capture);
  EXPECT_EQ(r["analysis"]["iterations_total"], n);
  EXPECT_EQ(r["analysis"]["primary_iterations"], n);
  const json &its = r["iterations"];
  ASSERT_EQ(its.size(), 10000u);
  for (uint32_t i = 0; i < 1000; ++i) {  // both ends whole, in order
    ASSERT_EQ(its[i]["index"], i);
    ASSERT_EQ(its[its.size() - 1000 + i]["index"], n - 1000 + i);
  }
  for (size_t i = 1; i < its.size(); ++i) ASSERT_LT(its[i - 1]["index"], its[i]["index"]);
  // The middle is an even sample: gaps of 2 or 3 iterations between 1000 and 24000.
  for (size_t i = 1000; i < its.size() - 1000; ++i) {
    uint32_t gap = its[i]["index"].get<uint32_t>() - its[i - 1]["index"].get<uint32_t>();
    ASSERT_GE(gap, 1u);
    ASSERT_LE(gap, 3u);
  }
}

TEST(ReportJson, NoIterationsListsLiveAtExit) {
  CaptureBuilder b;
  b.alloc(5 * kMiB, 7);
  b.alloc(3 * kMiB, 8);
  b.alloc(1 * kMiB, 4, format::Kind::kHostPinned);
  json r = report_of(b.capture);
  EXPECT_EQ(r["verdict"], "inconclusive");
  EXPECT_EQ(r["iteration_source"], "none");
  EXPECT_EQ(r["iterations"], json::array());
  EXPECT_EQ(r["leaks"], json::array());
  ASSERT_EQ(r["live_at_exit"].size(), 2u);
  EXPECT_EQ(r["live_at_exit"][0]["device"], 0);
  EXPECT_EQ(r["live_at_exit"][0]["live_bytes"], 5 * kMiB);
  EXPECT_EQ(r["live_at_exit"][0]["live_count"], 1);
  EXPECT_EQ(r["live_at_exit"][0]["stack"][0]["function"], "at::native::empty_cuda(...)");
  EXPECT_EQ(r["live_at_exit"][1]["stack"], json::array());
  EXPECT_EQ(r["analysis"]["host_pinned_live_at_exit_bytes"], 1 * kMiB);
  EXPECT_TRUE(r["devices"][0]["forecast"].is_null());
  EXPECT_TRUE(r["devices"][0]["name"].is_null());
  EXPECT_TRUE(r["devices"][0]["total_bytes"].is_null());
  EXPECT_TRUE(r["devices"][0]["nvml_used_bytes"].is_null());
  EXPECT_TRUE(r["run"]["program"].is_null());  // no run record in this capture
  EXPECT_EQ(r["run"]["pid"], 4242);
  EXPECT_EQ(r["run"]["capture"]["cupti"], "unknown");
  EXPECT_EQ(r["run"]["capture"]["events"], 3);
}

TEST(ReportJson, Iso8601) {
  EXPECT_EQ(iso8601_utc(1764500000123456789ull), "2025-11-30T10:53:20.123Z");
  EXPECT_EQ(iso8601_utc(0), "1970-01-01T00:00:00.000Z");
}

}  // namespace
}  // namespace gpuleak::output

namespace gpuleak::output {
namespace {

// Two library paths below one user line, and a second line: leaks[] keeps three sites, each with
// its own headline; leak_groups makes one finding per user line.
TEST(ReportJson, LeaksBelowOneUserLineAreOneGroup) {
  const std::string torch = "/venv/lib/python3.12/site-packages/torch/nn/modules/";
  auto symbolize = [&](uint32_t id) -> Stack {
    switch (id) {
      case 7:
        return {python("Linear.forward", torch + "linear.py", 134), python("train_step", "/p/train.py", 41)};
      case 8:
        return {python("GELU.forward", torch + "activation.py", 816), python("train_step", "/p/train.py", 41)};
      case 9:
        return {python("Linear.forward", torch + "linear.py", 134), python("train_step", "/p/train.py", 44)};
      default:
        return {};
    }
  };
  CaptureBuilder b;
  b.device(0, "d", 1ull << 40);
  for (int i = 0; i < 20; ++i) {
    b.begin("train");
    b.alloc(1 * kMiB, 0, format::Kind::kAsync, 0, 0, 7);
    b.alloc(2 * kMiB, 0, format::Kind::kAsync, 0, 0, 8);
    b.alloc(4 * kMiB, 0, format::Kind::kAsync, 0, 0, 9);
    b.end();
  }
  analysis::Analysis a = analysis::analyze(b.capture);
  json r = json::parse(dump_report(make_report(b.capture, a, symbolize, ReportContext{})));
  ASSERT_EQ(r["leaks"].size(), 3u) << r["leaks"].dump(1);
  for (const json &l : r["leaks"]) {
    EXPECT_EQ(l["headline"]["function"], "train_step");
    EXPECT_EQ(l["headline"]["user"], true);
  }
  EXPECT_EQ(r["leaks"][1]["headline"]["text"],
            "train.py:41 in train_step (via GELU.forward, torch/nn/modules/activation.py:816)");
  const json &groups = r["leak_groups"];
  ASSERT_EQ(groups.size(), 2u) << groups.dump(1);
  EXPECT_EQ(groups[0]["headline"]["line"], 44);  // 4 MiB: the larger finding first
  EXPECT_EQ(groups[0]["bytes_per_iteration"], 4 * kMiB);
  EXPECT_EQ(groups[1]["headline"]["text"], "train.py:41 in train_step");  // two sites: no single via
  EXPECT_TRUE(groups[1]["headline"]["via"].is_null());
  EXPECT_EQ(groups[1]["bytes_per_iteration"], 3 * kMiB);
  EXPECT_EQ(groups[1]["site_ids"], json({r["leaks"][1]["site_id"], r["leaks"][2]["site_id"]}));
  std::string text = text_summary(r, "");
  EXPECT_NE(text.find("leak: 3.0 MiB per iteration at train.py:41 in train_step, 40 allocations"), std::string::npos)
      << text;
  EXPECT_NE(text.find("    2.0 MiB per iteration via GELU.forward (site "), std::string::npos) << text;
}

}  // namespace
}  // namespace gpuleak::output
