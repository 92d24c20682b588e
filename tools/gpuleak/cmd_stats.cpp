// `gpuleak stats CAPTURE...`: raw counts of what a capture holds, as JSON on stdout, before any
// analysis. For conformance checks (tests/gpu/run_matrix.sh) and for looking inside a capture.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <map>
#include <memory>

#include <nlohmann/json.hpp>

#include "cli.h"
#include "format/capture_reader.h"

namespace gpuleak::cli {

nlohmann::json capture_stats(const std::string &path) {
  format::Capture c;
  std::string error;
  if (!format::read_capture_file(path, &c, &error)) throw UsageError{error};
  using format::Op;
  std::map<std::string, uint64_t> by_kind, by_api, by_op, labels;
  uint64_t allocs = 0, frees = 0, failed = 0, graph = 0, unknown_frees = 0;
  for (const auto &m : c.memory) {
    ++by_op[format::op_name(m.op)];
    ++by_api[format::api_name(m.api)];
    if (m.runtime_api) ++labels[format::api_name(m.runtime_api)];
    if (m.op == static_cast<uint8_t>(Op::kAlloc)) {
      if (m.result != 0)
        ++failed;
      else if (m.flags & format::kFlagGraphReservation)
        ++graph;
      else {
        ++allocs;
        ++by_kind[format::kind_name(m.kind)];
      }
    } else if (m.op == static_cast<uint8_t>(Op::kFree) && m.result == 0) {
      if (m.flags & format::kFlagUnknownPointer)
        ++unknown_frees;
      else
        ++frees;
    }
  }
  nlohmann::json j;
  j["path"] = path;
  j["pid"] = c.header.pid;
  j["program"] = c.run ? c.run->program : "";
  j["unwinder"] = c.run ? c.run->unwinder : "";
  j["driver_version"] = c.run ? c.run->fixed.driver_version : 0;
  j["allocs"] = allocs;
  j["frees"] = frees;
  j["failed_allocs"] = failed;
  j["graph_reservations"] = graph;
  j["unknown_frees"] = unknown_frees;
  j["by_kind"] = by_kind;
  j["by_api"] = by_api;
  j["by_op"] = by_op;
  j["runtime_labels"] = labels;
  j["stacks"] = c.stacks.size();
  j["modules"] = c.modules.size();
  j["nvtx"] = c.nvtx.size();
  j["markers"] = c.markers.size();
  j["ooms"] = c.ooms.size();
  j["truncated"] = c.truncated;
  j["disabled"] = c.disabled;
  if (c.stats) {
    j["events_dropped"] = c.stats->events_dropped;
    j["uncaptured"] = c.stats->uncaptured;
    j["cupti_state"] = c.stats->cupti_state;
    j["live_bytes"] = c.stats->live_bytes;
    j["peak_bytes"] = c.stats->peak_bytes;
    j["clean_exit"] = c.stats->final_record == 1;
  }
  nlohmann::json devices = nlohmann::json::array();
  for (const auto &d : c.devices)
    devices.push_back({{"index", d.index}, {"name", d.name}, {"total_bytes", d.total_bytes}});
  j["devices"] = devices;
  return j;
}

int stats_command(const std::vector<std::string> &inputs) {
  nlohmann::json all = nlohmann::json::array();
  for (const auto &path : inputs) all.push_back(capture_stats(path));
  std::string text = all.dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
  std::printf("%s\n", text.c_str());
  return 0;
}

void register_stats(CLI::App &app, Action *action) {
  auto inputs = std::make_shared<std::vector<std::string>>();
  auto *cmd = app.add_subcommand("stats", "Print raw counts of captures as JSON (no analysis)");
  cmd->add_option("captures", *inputs, "Capture files (.gpuleak)")->required();
  cmd->callback([inputs, action] { *action = [inputs] { return stats_command(*inputs); }; });
}

}  // namespace gpuleak::cli
