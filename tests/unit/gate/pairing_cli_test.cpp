// Issue #28, end to end: main's report against a PR's, as a CI pipeline compares them. The
// baseline is a real report (prog_leaky_static under the shim and the fake CUDA); the PR's is the
// same report edited the way a PR and another CI runner change it: lines added above the leak,
// other library frames under it (so other site ids), another checkout path. `gpuleak check
// --baseline` and `gpuleak diff` must pair the leak with itself, and say new, gone and regressed
// when they are.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>

#include "cli_runner.h"
#include "report_fixture.h"

namespace gpuleak::gate {
namespace {

using namespace testing;

// The real report: one leaking line, cache_activation (leaky_loop.cpp:17), called from main.
json real_report(const ScratchDir &dir) {
  const std::string out = dir.file("run");
  Result r = gpuleak(dir, {"run", "--out", out, "--quiet", GPULEAK_LEAKY_STATIC, "20"},
                     "LD_LIBRARY_PATH=" GPULEAK_FAKE_CUDA_DIR);
  EXPECT_EQ(r.code, 0) << r.err;
  const std::string list = dir.file("list");
  EXPECT_EQ(std::system(("ls " + quote(out) + "/*.report.json > " + quote(list)).c_str()), 0);
  std::string path = slurp(list);
  path = path.substr(0, path.find('\n'));
  return json::parse(slurp(path));
}

// Every object of `doc` with a "file" (stack frames, headlines, callers), depth first.
void each_located(json &doc, const std::function<void(json &)> &fn) {
  if (doc.is_object()) {
    if (doc.contains("file") && doc["file"].is_string()) fn(doc);
    for (auto &[key, value] : doc.items()) each_located(value, fn);
  } else if (doc.is_array()) {
    for (json &v : doc) each_located(v, fn);
  }
}

// The PR: `shift` lines added above the leak in its source file, the checkout moved from the
// folder above tests/programs to `root`, and, with `new_library`, another library frame innermost
// (a framework upgrade), which gives every site another id.
json edited(json doc, int shift, const std::string &root, bool new_library) {
  each_located(doc, [&](json &f) {
    std::string file = f["file"];
    const size_t at = file.find("/tests/programs/leaky_loop.cpp");
    if (at == std::string::npos) return;
    if (f.contains("line") && f["line"].is_number_integer()) {
      const int64_t old_line = f["line"], new_line = old_line + shift;
      f["line"] = new_line;
      if (f.contains("text") && f["text"].is_string()) {
        std::string text = f["text"];
        const std::string from = "leaky_loop.cpp:" + std::to_string(old_line) + " ";
        if (size_t k = text.find(from); k != std::string::npos)
          text.replace(k, from.size(), "leaky_loop.cpp:" + std::to_string(new_line) + " ");
        f["text"] = text;
      }
    }
    if (!root.empty()) f["file"] = root + file.substr(at);
  });
  if (new_library) {
    auto renamed = [](const std::string &id) { return "f0" + id.substr(2); };
    for (json &l : doc["leaks"]) {
      l["site_id"] = renamed(l["site_id"]);
      l["stack"].insert(l["stack"].begin(), json{{"kind", "native"},
                                                 {"function", "at::native::empty_cuda(c10::ArrayRef<long>)"},
                                                 {"file", nullptr},
                                                 {"line", nullptr},
                                                 {"module", "libtorch_cuda.so"},
                                                 {"offset", "0x1f0"}});
    }
    for (json &g : doc["leak_groups"])
      for (json &id : g["site_ids"]) id = renamed(id);
  }
  return doc;
}

// A second leaking line beside the first, in another function of the same file.
json with_second_line(json doc) {
  json leak_doc = doc["leaks"][0], group = doc["leak_groups"][0];
  leak_doc["site_id"] = "00000000000000e1";
  for (json &f : leak_doc["stack"])
    if (f["function"] == "cache_activation") f["function"] = "cache_gradients", f["line"] = 90;
  leak_doc["headline"]["function"] = "cache_gradients";
  leak_doc["headline"]["line"] = 90;
  leak_doc["headline"]["text"] = "leaky_loop.cpp:90 in cache_gradients";
  group["headline"] = leak_doc["headline"];
  group["site_ids"] = json::array({"00000000000000e1"});
  doc["leaks"].push_back(leak_doc);
  doc["leak_groups"].push_back(group);
  return doc;
}

json diff_of(const ScratchDir &dir, const std::string &a, const std::string &b) {
  Result r = gpuleak(dir, {"diff", a, b, "--json", "-"});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  return json::parse(r.out);
}

// JUnit as CI reads it: Python's ElementTree, the parser GitLab's and Jenkins' tooling resembles.
std::string junit_failures(const ScratchDir &dir, const std::string &xml) {
  const std::string script =
      "import sys, xml.etree.ElementTree as E\n"
      "root = E.parse(sys.argv[1]).getroot()\n"
      "print(root.get('failures'))\n"
      "for f in root.iter('failure'): print(f.get('message'))\n";
  const std::string py = dir.write("junit.py", script);
  const std::string out = dir.file("junit.out");
  if (std::system(("/usr/bin/python3 " + quote(py) + " " + quote(xml) + " > " + quote(out)).c_str()) != 0)
    return "unparsable";
  return slurp(out);
}

TEST(GatePairingCli, MainAgainstAPullRequest) {
  ScratchDir dir;
  const json main_doc = real_report(dir);
  ASSERT_EQ(main_doc["leak_groups"].size(), 1u) << main_doc.dump(1);
  ASSERT_EQ(main_doc["leak_groups"][0]["headline"]["function"], "cache_activation");
  const int64_t line = main_doc["leak_groups"][0]["headline"]["line"];
  const std::string base = dir.write("main.report.json", main_doc.dump());

  // Another checkout only: the same line, paired by its path's suffix.
  const std::string other_path =
      dir.write("path.report.json", edited(main_doc, 0, "/builds/ci-runner/gpuleak", false).dump());
  json d = diff_of(dir, base, other_path);
  EXPECT_EQ(d["schema"], "gpuleak.diff/1");
  ASSERT_EQ(d["lines"].size(), 1u) << d.dump(1);
  EXPECT_EQ(d["lines"][0]["change"], "same");
  EXPECT_EQ(d["lines"][0]["paired_by"], "path_suffix");

  // All three at once: 3 lines added above, a new library frame, another checkout.
  const std::string pr = dir.write("pr.report.json", edited(main_doc, 3, "/builds/ci-runner/gpuleak", true).dump());
  d = diff_of(dir, base, pr);
  ASSERT_EQ(d["lines"].size(), 1u) << d.dump(1);
  EXPECT_EQ(d["lines"][0]["change"], "moved");
  EXPECT_EQ(d["lines"][0]["paired_by"], "moved");
  EXPECT_EQ(d["lines"][0]["a"]["line"], line);
  EXPECT_EQ(d["lines"][0]["b"]["line"], line + 3);
  EXPECT_NE(d["lines"][0]["a"]["site_ids"], d["lines"][0]["b"]["site_ids"]);
  EXPECT_EQ(d["counts"], json({{"new", 0}, {"gone", 0}, {"regressed", 0}, {"improved", 0}, {"moved", 1}, {"same", 0}}));
  // --json PATH writes the same document and keeps the text on stdout.
  const std::string written = dir.file("diff.json");
  Result text = gpuleak(dir, {"diff", "--json", written, base, pr});
  EXPECT_EQ(json::parse(slurp(written)), d);
  EXPECT_NE(text.out.find("leaking lines: 0 new, 0 gone, 0 regressed, 0 improved, 1 moved, 0 the same"),
            std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("= leaky_loop.cpp:" + std::to_string(line + 3) + " in cache_activation"), std::string::npos)
      << text.out;

  // The gate, with the flags in every order: the moved leak is within its budget and not new.
  std::vector<std::vector<std::string>> parts = {{pr}, {"--baseline", base}, {"--max-leak-per-iteration", "2MiB"}};
  std::vector<size_t> order = {0, 1, 2};
  size_t orders = 0;
  do {
    std::vector<std::string> args = {"check"};
    for (size_t i : order) args.insert(args.end(), parts[i].begin(), parts[i].end());
    Result r = gpuleak(dir, args);
    EXPECT_EQ(r.code, 0) << args[1] << " " << args[2] << ": " << r.out << r.err;
    EXPECT_NE(r.out.find("ok   prog_leaky_static"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("within budget leak: leaky_loop.cpp:" + std::to_string(line + 3) + " in cache_activation"),
              std::string::npos)
        << r.out;
    EXPECT_NE(r.out.find("was 1 MiB/iteration at leaky_loop.cpp:" + std::to_string(line) + " in cache_activation"),
              std::string::npos)
        << r.out;
    EXPECT_EQ(r.out.find("new since the baseline"), std::string::npos) << r.out;
    ++orders;
  } while (std::next_permutation(order.begin(), order.end()));
  EXPECT_EQ(orders, 6u);
  // Paired or not, the budget still judges the rate.
  EXPECT_EQ(gpuleak(dir, {"check", "--max-leak-per-iteration", "512KiB", "--baseline", base, pr}).code, 1);

  // Regressed: the same line leaks 1.5 times what it did.
  json worse = edited(main_doc, 3, "/builds/ci-runner/gpuleak", true);
  for (json *rate : {&worse["leaks"][0]["bytes_per_iteration"], &worse["leak_groups"][0]["bytes_per_iteration"]})
    *rate = rate->get<double>() * 1.5;
  const std::string regressed = dir.write("regressed.report.json", worse.dump());
  const std::string xml = dir.file("regressed.xml");
  Result r = gpuleak(dir, {"check", "--baseline", base, "--max-leak-per-iteration", "2MiB", "--junit", xml, regressed});
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("(+50.0%, tolerance 5.0%)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("-- within its budget, but it leaks more than the baseline's line beyond the tolerance"),
            std::string::npos)
      << r.out;
  const std::string failures = junit_failures(dir, xml);
  EXPECT_EQ(failures.substr(0, 2), "1\n") << failures;
  EXPECT_NE(failures.find("leak: leaky_loop.cpp:" + std::to_string(line + 3) + " in cache_activation"),
            std::string::npos)
      << failures;
  EXPECT_NE(failures.find("beyond the tolerance"), std::string::npos) << failures;
  EXPECT_EQ(
      gpuleak(dir, {"check", "--baseline", base, "--tolerance", "60%", "--max-leak-per-iteration", "2MiB", regressed})
          .code,
      0);
  d = diff_of(dir, base, regressed);
  EXPECT_EQ(d["lines"][0]["change"], "regressed");
  EXPECT_EQ(d["lines"][0]["paired_by"], "moved");

  // New and gone: a second line in the PR fails as new; in the baseline only, it is gone.
  const std::string two =
      dir.write("two.report.json", with_second_line(edited(main_doc, 3, "/b/gpuleak", true)).dump());
  r = gpuleak(dir, {"check", "--format", "github", "--max-leak-per-iteration", "2MiB", two, "--baseline", base});
  EXPECT_EQ(r.code, 1) << r.out;
  const size_t error = r.out.find("::error ");
  ASSERT_NE(error, std::string::npos) << r.out;
  const std::string annotation = r.out.substr(error, r.out.find('\n', error) - error);
  EXPECT_NE(annotation.find("line=90"), std::string::npos) << annotation;
  EXPECT_NE(annotation.find("new since the baseline"), std::string::npos) << annotation;
  EXPECT_EQ(r.out.find("::error ", error + 1), std::string::npos) << r.out;  // the moved line is no error
  d = diff_of(dir, base, two);
  EXPECT_EQ(d["counts"]["new"], 1);
  EXPECT_EQ(d["counts"]["moved"], 1);
  EXPECT_EQ(d["lines"][0]["b"]["function"], "cache_gradients");
  EXPECT_TRUE(d["lines"][0]["a"].is_null());

  const std::string base_two = dir.write("main_two.report.json", with_second_line(main_doc).dump());
  r = gpuleak(dir, {"check", pr, "--baseline", base_two, "--max-leak-per-iteration", "2MiB"});
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("ok leak gone: leaky_loop.cpp:90 in cache_gradients, called from leaky_loop.cpp:28 in main "
                       "leaked 1 MiB/iteration on device 0 in the baseline"),
            std::string::npos)
      << r.out;
  d = diff_of(dir, base_two, pr);
  EXPECT_EQ(d["counts"]["gone"], 1);
  EXPECT_EQ(d["lines"][0]["change"], "gone");
  EXPECT_TRUE(d["lines"][0]["b"].is_null());
}

// A baseline the gate cannot use is one line and exit 2, for check and diff alike, and no verdict.
TEST(GatePairingCli, BadBaselinesAreOneLineAndExitTwo) {
  ScratchDir dir;
  json doc = report("clean");
  const std::string now = dir.write("now.report.json", doc.dump());
  const std::string text = doc.dump();
  const std::string cut = dir.write("cut.report.json", text.substr(0, text.size() / 2));
  json newer = doc;
  newer["schema"] = "gpuleak.report/2";
  const std::string v2 = dir.write("v2.report.json", newer.dump());
  json older = doc;
  older["schema"] = "gpuleak.report/0.9";
  const std::string v0 = dir.write("v0.report.json", older.dump());
  // The diff's own output is not a report.
  const std::string diff_out =
      dir.write("diff.json", json{{"schema", "gpuleak.diff/1"}, {"lines", json::array()}}.dump());
  for (const std::string &bad : {cut, v2, v0, diff_out}) {
    for (const std::vector<std::string> &args : {std::vector<std::string>{"check", now, "--baseline", bad},
                                                 {"check", "--baseline", bad, now},
                                                 {"diff", bad, now}}) {
      Result r = gpuleak(dir, args);
      EXPECT_EQ(r.code, 2) << bad << ": " << r.out << r.err;
      EXPECT_EQ(r.out, "") << bad;
      EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
      EXPECT_EQ(r.err.rfind("gpuleak: " + bad + ": ", 0), 0u) << r.err;
    }
  }
  EXPECT_EQ(gpuleak(dir, {"diff", cut, now}).err.find("truncated JSON") != std::string::npos, true);
  EXPECT_EQ(gpuleak(dir, {"check", now, "--baseline", v2}).err,
            "gpuleak: " + v2 +
                ": report schema gpuleak.report/2 is newer than this gpuleak reads (gpuleak.report/1); "
                "upgrade gpuleak\n");
  EXPECT_EQ(
      gpuleak(dir, {"check", now, "--baseline", v0}).err,
      "gpuleak: " + v0 + ": unknown report schema \"gpuleak.report/0.9\" (this gpuleak reads gpuleak.report/1)\n");
}

}  // namespace
}  // namespace gpuleak::gate
