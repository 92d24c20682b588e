// `gpuleak report` over the reports of several processes (the ranks of a distributed job): one
// row per process and the one that grows while the others stay flat (analysis/rank_outliers.h).
// Pure code over parsed reports; the command prints comparison_text() and can write
// comparison_json() ("schema": "gpuleak.ranks/1", docs/report-format.md "Comparing ranks").
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "gate/report_view.h"

namespace gpuleak::gate {

struct RankRow {
  std::string path;
  std::string program;
  std::optional<int64_t> pid;
  std::optional<int64_t> rank;  // run.rank, else ".rank<R>" in the file name
  std::string verdict;
  double growth_bytes_per_iteration = 0;  // sum over devices
  uint64_t peak_live_bytes = 0;           // sum over devices
  uint64_t live_at_exit_bytes = 0;
  size_t iterations = 0;  // primary loop
  size_t leaks = 0;
  bool outlier = false;  // grows while the others stay flat
};

struct RankComparison {
  std::vector<RankRow> rows;  // by rank, then as given
};

RankComparison compare_ranks(const std::vector<Report> &reports);
nlohmann::json comparison_json(const RankComparison &c);
// A table, then one line per outlier ("rank 1 grows 1.0 MiB/iter while the others stay flat").
std::string comparison_text(const RankComparison &c);

// ".rank<R>" in a gpuleak file name (<program>.<pid>.rank<R>.report.json), else nullopt.
std::optional<int64_t> rank_from_file_name(const std::string &path);

}  // namespace gpuleak::gate
