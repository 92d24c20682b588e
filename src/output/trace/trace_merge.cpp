#include "output/trace/trace_merge.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>

#include "analysis/rank_outliers.h"
#include "format/capture_reader.h"
#include "output/report_json.h"
#include "output/text_summary.h"
#include "output/trace/chrome_trace_reader.h"
#include "output/trace/chrome_trace_writer.h"
#include "output/trace/trace_capture.h"

namespace gpuleak::output::trace {

using nlohmann::json;

namespace {

struct Input {
  std::string path;
  size_t file_order = 0;
  std::string converted;  // a capture's trace: kept, converting twice would cost more
  bool is_capture = false;
  bool has_anchor = false;
  uint64_t anchor = 0;
  int rank = -1;
  double growth = 0;     // growth_bytes_per_iteration of its metadata
  bool leaking = false;  // grows while the other inputs stay flat (analysis/rank_outliers.h)
};

// The text of an input: the file, or the trace of a capture.
bool load(Input &in, const ReadOptions &read, const TraceOptions &options, std::string *text,
          std::vector<std::string> *warnings, std::string *error) {
  if (in.is_capture) {
    *text = in.converted;
    return true;
  }
  // A capture is converted from the file (it may be far larger than any trace is allowed to be).
  if (!format::is_capture_file(in.path)) return read_file(in.path, text, error);
  StringStream trace;
  TraceSummary summary;
  if (!trace_capture_file(in.path, TraceFormat::kJson, read, options, &trace, &summary, warnings, error)) return false;
  in.is_capture = true;
  in.converted = std::move(trace.data);
  *text = in.converted;
  return true;
}

bool is_metadata(const json &e, const char *name) {
  auto ph = e.find("ph");
  auto n = e.find("name");
  return ph != e.end() && *ph == "M" && n != e.end() && *n == name;
}

// Output events, one per line.
class LineOut {
 public:
  explicit LineOut(ByteStream *out) : out_(out) {}
  void write(const json &event) {
    line_ = events_++ == 0 ? "[\n" : ",\n";
    line_ += json_line(event);
    out_->write(line_);
  }
  void finish() { out_->write(events_ == 0 ? "[\n]\n" : "\n]\n"); }
  uint64_t events() const { return events_; }

 private:
  ByteStream *out_;
  std::string line_;
  uint64_t events_ = 0;
};

}  // namespace

bool merge_traces(const std::vector<std::string> &paths, const ReadOptions &read, const TraceOptions &options,
                  ByteStream *out, MergeSummary *summary, std::vector<std::string> *warnings, std::string *error) {
  if (paths.empty()) {
    *error = "merge: no input given";
    return false;
  }
  // Pass 1: every input's anchor and rank (gpuleak's own traces carry them on their second line).
  std::vector<Input> inputs(paths.size());
  for (size_t i = 0; i < paths.size(); ++i) {
    Input &in = inputs[i];
    in.path = paths[i];
    in.file_order = i;
    std::string text, why;
    if (!load(in, read, options, &text, warnings, &why)) {
      *error = why;
      return false;
    }
    TraceReadStats stats;
    auto probe = [&](json &e) {
      if (!is_metadata(e, "gpuleak_trace")) return true;
      const json &args = e.value("args", json::object());
      auto anchor = args.find("realtime_anchor_ns");
      if (anchor != args.end() && anchor->is_number_unsigned()) {
        in.has_anchor = true;
        in.anchor = anchor->get<uint64_t>();
      }
      auto rank = args.find("rank");
      if (rank != args.end() && rank->is_number_integer()) in.rank = static_cast<int>(rank->get<int64_t>());
      auto growth = args.find("growth_bytes_per_iteration");
      if (growth != args.end() && growth->is_number()) in.growth = growth->get<double>();
      return false;
    };
    if (!read_chrome_trace(text, probe, &stats, &why)) {
      *error = in.path + ": " + why;
      return false;
    }
    if (!in.has_anchor) warnings->push_back(in.path + ": no gpuleak_trace realtime anchor; its times are not aligned");
  }
  std::stable_sort(inputs.begin(), inputs.end(), [](const Input &a, const Input &b) {
    if ((a.rank < 0) != (b.rank < 0)) return a.rank >= 0;
    if (a.rank != b.rank) return a.rank < b.rank;
    uint64_t ta = a.has_anchor ? a.anchor : UINT64_MAX, tb = b.has_anchor ? b.anchor : UINT64_MAX;
    return ta != tb ? ta < tb : a.file_order < b.file_order;
  });
  std::vector<double> growth;
  for (const Input &in : inputs) growth.push_back(in.growth);
  const std::vector<bool> leaking = analysis::rank_outliers(growth);
  for (size_t i = 0; i < inputs.size(); ++i) inputs[i].leaking = leaking[i];
  uint64_t base = UINT64_MAX;
  for (const Input &in : inputs)
    if (in.has_anchor) base = std::min(base, in.anchor);
  auto shift_us = [&](const Input &in) { return in.has_anchor ? static_cast<double>(in.anchor - base) / 1000.0 : 0.0; };

  LineOut lines(out);
  json about = {{"gpuleak_trace_version", kTraceVersion},
                {"merged", true},
                {"time_unit", "ts in microseconds since the merged trace's start (realtime_anchor_ns)"},
                {"realtime_anchor_ns", base == UINT64_MAX ? json(nullptr) : json(base)},
                {"realtime_anchor", base == UINT64_MAX ? json(nullptr) : json(iso8601_utc(base))},
                {"inputs", json::array()}};
  for (const Input &in : inputs)
    about["inputs"].push_back({{"path", in.path},
                               {"rank", in.rank >= 0 ? json(in.rank) : json(nullptr)},
                               {"ts_shift_us", shift_us(in)},
                               {"growth_bytes_per_iteration", in.growth},
                               {"leaking", in.leaking}});
  lines.write({{"ph", "M"}, {"name", "gpuleak_trace"}, {"pid", 0}, {"tid", 0}, {"args", about}});

  // Pass 2: every input's events, moved and renumbered.
  std::set<std::string> used_pids;  // as JSON text: pids may be numbers or strings
  int64_t next_pid = 1'000'000'000;
  for (size_t order = 0; order < inputs.size(); ++order) {
    Input &in = inputs[order];
    std::string text, why;
    if (!load(in, read, options, &text, warnings, &why)) {
      *error = why;
      return false;
    }
    const double shift = shift_us(in);
    std::map<std::string, json> pid_map;
    auto renumber = [&](const json &pid) -> const json & {
      std::string key = pid.dump();
      auto it = pid_map.find(key);
      if (it != pid_map.end()) return it->second;
      json fresh = pid;
      while (used_pids.count(fresh.dump()))
        fresh =
            pid.is_string() ? json("input " + std::to_string(order) + " " + pid.get<std::string>()) : json(next_pid++);
      used_pids.insert(fresh.dump());
      // The input's place among the processes: its rank order.
      lines.write(
          {{"ph", "M"}, {"name", "process_sort_index"}, {"pid", fresh}, {"tid", 0}, {"args", {{"sort_index", order}}}});
      return pid_map.emplace(key, fresh).first->second;
    };
    TraceReadStats stats;
    auto move_event = [&](json &e) {
      if (is_metadata(e, "process_sort_index")) return true;  // replaced by the merged order
      if (auto pid = e.find("pid"); pid != e.end() && (pid->is_number() || pid->is_string())) *pid = renumber(*pid);
      if (auto ts = e.find("ts"); ts != e.end() && ts->is_number() && shift != 0.0)
        *ts = std::round((ts->get<double>() + shift) * 1000.0) / 1000.0;
      if (in.leaking && is_metadata(e, "process_name") && e.contains("args") && e["args"].is_object()) {
        // The rank that grows while the others stay flat, named so on its process track.
        const json &name = e["args"].value("name", json("process"));
        e["args"]["name"] = (in.rank >= 0 ? "rank " + std::to_string(in.rank) : std::string("process")) +
                            " \u2014 leaking " + human_bytes(in.growth) + "/iter (" +
                            (name.is_string() ? name.get<std::string>() : name.dump()) + ")";
      }
      if (is_metadata(e, "gpuleak_trace")) {
        e["name"] = "gpuleak_process";
        if (e.contains("args") && e["args"].is_object()) e["args"]["ts_shift_us"] = shift;
      }
      lines.write(e);
      return true;
    };
    if (!read_chrome_trace(text, move_event, &stats, &why)) {
      *error = in.path + ": " + why;
      return false;
    }
    if (stats.repaired)
      warnings->push_back(in.path + ": the trace was cut short or unterminated; merged what was whole");
    summary->order.push_back(in.path + (in.rank >= 0 ? " (rank " + std::to_string(in.rank) + ")" : ""));
    if (in.leaking) summary->leaking.push_back(summary->order.back() + " leaking " + human_bytes(in.growth) + "/iter");
    in.converted.clear();
    in.converted.shrink_to_fit();
  }
  lines.finish();
  summary->inputs = inputs.size();
  summary->events = lines.events();
  return true;
}

}  // namespace gpuleak::output::trace
