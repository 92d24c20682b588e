// Synthetic reports for the gate's tests: the smallest documents that follow
// docs/report-format.md, built up field by field, plus a scratch folder for files.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "gate/report_view.h"

namespace gpuleak::gate::testing {

using nlohmann::json;

inline constexpr uint64_t kMiB = 1ull << 20;

inline json frame(const std::string &function, const std::string &file, int line, const std::string &kind = "native",
                  const std::string &module = "train") {
  json f = {{"kind", kind}, {"function", function}, {"file", file}, {"line", line}};
  f["module"] = kind == "native" ? json(module) : json(nullptr);
  if (kind == "native") f["address"] = "0x401000", f["build_id"] = nullptr;
  return f;
}

inline json leak(const std::string &site, const std::string &function, const std::string &file, int line, double rate,
                 int device = 0, int first_iteration = 0, std::vector<uint64_t> by_iteration = {}) {
  return {{"site_id", site},
          {"device", device},
          {"bytes_per_iteration", rate},
          {"live_bytes", static_cast<uint64_t>(rate * 10)},
          {"live_count", 10},
          {"first_iteration", first_iteration},
          {"confidence", 0.97},
          {"r2", 0.99},
          {"iterations_observed", 9},
          {"live_by_iteration", by_iteration},
          {"stack", json::array({frame(function, file, line)})}};
}

inline json device(int index, const std::string &verdict, uint64_t peak = 100 * kMiB, uint64_t live_exit = 10 * kMiB) {
  return {{"index", index},
          {"name", "Fake GPU"},
          {"total_bytes", 1024 * kMiB},
          {"peak_live_bytes", peak},
          {"live_at_exit_bytes", live_exit},
          {"nvml_used_bytes", nullptr},
          {"untracked_bytes", nullptr},
          {"alloc_count", 100},
          {"free_count", 90},
          {"verdict", verdict},
          {"growth_bytes_per_iteration", 0},
          {"growth_r2", 0},
          {"forecast", nullptr}};
}

// Primary iterations whose device-0 live bytes are `live` (one per iteration).
inline json iterations(const std::vector<uint64_t> &live) {
  json out = json::array();
  for (size_t i = 0; i < live.size(); ++i)
    out.push_back({{"index", i},
                   {"loop", "train"},
                   {"primary", true},
                   {"start_ns", i * 1000},
                   {"end_ns", i * 1000 + 900},
                   {"devices", json::array({{{"index", 0}, {"live_end_bytes", live[i]}, {"peak_bytes", live[i]}}})}});
  return out;
}

inline json report(const std::string &verdict = "clean") {
  return {{"schema", "gpuleak.report/1"},
          {"run",
           {{"command", {"./train"}},
            {"program", "train"},
            {"pid", 42},
            {"rank", nullptr},
            {"capture",
             {{"cupti", "off"},
              {"events", 100},
              {"events_dropped", 0},
              {"tracking_disabled", nullptr},
              {"truncated", false},
              {"clean_exit", true}}}}},
          {"verdict", verdict},
          {"iteration_source", "api"},
          {"analysis", {{"primary_loop", "train"}, {"primary_iterations", 10}, {"warmup_iterations", 1}}},
          {"devices", json::array({device(0, verdict)})},
          {"iterations", iterations({10 * kMiB, 10 * kMiB, 10 * kMiB, 10 * kMiB})},
          {"leaks", json::array()},
          {"live_at_exit", json::array()},
          {"advice", json::array()},
          {"oom", nullptr}};
}

inline Report parse(const json &doc, const std::string &path = "r.json") { return parse_report(doc, path); }

// A fresh folder under $TMPDIR, removed with its files at the end of the test.
class ScratchDir {
 public:
  ScratchDir() {
    std::string tmpl = (std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "/tmp") + std::string("/gate_test.XXXXXX");
    path_ = mkdtemp(tmpl.data()) ? tmpl : "/tmp";
  }
  ~ScratchDir() { std::system(("rm -rf '" + path_ + "'").c_str()); }
  std::string write(const std::string &name, const std::string &text) const {
    std::string p = path_ + "/" + name;
    std::ofstream(p, std::ios::binary) << text;
    return p;
  }
  std::string file(const std::string &name) const { return path_ + "/" + name; }
  const std::string &path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace gpuleak::gate::testing
