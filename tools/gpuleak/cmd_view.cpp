// `gpuleak view REPORT_OR_CAPTURE -o report.html`: one self-contained HTML file (no network
// needed) that shows the report's verdict and, given a capture, memory over time, flame graphs
// and the temporal view. The page is the viewer's built template (viewer/) with the data spliced
// in; see docs/viewer.md.
#include <sys/stat.h>
#include <unistd.h>

#include <climits>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>
#include <stdexcept>

#include <CLI/CLI.hpp>

#include "analysis/analysis.h"
#include "cli.h"
#include "log/log.h"
#include "format/capture_reader.h"
#include "output/front_door.h"
#include "output/report_json.h"
#include "output/view/html_document.h"
#include "output/view/view_data.h"

#ifndef GPULEAK_VERSION
#define GPULEAK_VERSION "0.0.0"
#endif

namespace gpuleak::cli {

namespace {

struct ViewCommandOptions {
  std::string input;
  std::string output;         // "" = next to the input, <stem>.html
  std::string template_path;  // "" = search (html_document.h)
  size_t max_points = output::view::ViewOptions{}.max_timeline_points;
  bool quiet = false;
  ReadFlags read;
};

bool read_all(const std::string &path, std::string *out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::ostringstream s;
  s << in.rdbuf();
  *out = s.str();
  return static_cast<bool>(in) || in.eof();
}

bool ends_with(const std::string &s, const std::string &suffix) {
  return s.size() > suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string html_path_for(const std::string &input) {
  for (const char *ext : {".gpuleak", ".report.json", ".json"})
    if (ends_with(input, ext)) return input.substr(0, input.size() - std::strlen(ext)) + ".html";
  return input + ".html";
}

std::string executable_dir() {
  char exe[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) return "";
  std::string path(exe, static_cast<size_t>(n));
  return path.substr(0, path.find_last_of('/'));
}

std::string load_template(const std::string &explicit_path) {
  std::vector<std::string> candidates =
      output::view::template_candidates(explicit_path, executable_dir(), output::view::source_tree_dir());
  for (const std::string &path : candidates) {
    struct stat st;
    std::string text;
    if (stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && read_all(path, &text)) return text;
  }
  std::string tried;
  for (const std::string &path : candidates) tried += (tried.empty() ? "" : ", ") + path;
  throw UsageError{"view: no viewer template found (tried " + tried + "); pass --template"};
}

// A report from `gpuleak report`: any gpuleak.report/1 document.
nlohmann::json parse_report(const std::string &path, const std::string &text) {
  nlohmann::json report = nlohmann::json::parse(text, nullptr, false);
  if (report.is_discarded() || !report.is_object())
    throw UsageError{"view: " + path + " is neither a gpuleak capture nor a JSON report"};
  const auto schema = report.find("schema");
  if (schema == report.end() || !schema->is_string() || schema->get<std::string>().rfind("gpuleak.report/", 0) != 0)
    throw UsageError{"view: " + path + " is not a gpuleak report (no \"schema\": \"gpuleak.report/1\")"};
  if (*schema != output::kReportSchema)
    throw UsageError{"view: " + path + " has schema " + schema->get<std::string>() + "; this gpuleak reads " +
                     output::kReportSchema};
  return report;
}

int view_command(const ViewCommandOptions &o) {
  std::string bytes;
  if (!read_all(o.input, &bytes)) throw UsageError{"view: cannot read " + o.input + ": " + std::strerror(errno)};
  const std::string html_template = load_template(o.template_path);

  nlohmann::json report, view;  // view stays null for a report: the page shows what it has
  const bool is_capture =
      bytes.size() >= sizeof format::kMagic && std::memcmp(bytes.data(), format::kMagic, sizeof format::kMagic) == 0;
  if (is_capture) {
    bytes.clear();
    bytes.shrink_to_fit();
    // The same options as `gpuleak report`, so that iterations, advice, site ids and headlines match.
    output::ReadOptions read = read_options(o.read);
    read.keep_memory = true;  // memory over time and the flame graphs replay every record
    std::string error;
    auto opened = output::open_and_analyze(o.input, read, &error);
    if (!opened) throw UsageError{"view: " + error};
    for (const std::string &w : opened->analysis().warnings) GPULEAK_LOG_WARN("%s", w.c_str());
    output::ReportContext ctx;
    ctx.gpuleak_version = GPULEAK_VERSION;
    report = output::make_report(opened->capture(), opened->analysis(), opened->sites(), ctx);
    output::view::ViewOptions options;
    options.max_timeline_points = o.max_points;
    view = output::view::make_view_data(opened->capture(), opened->analysis(), opened->sites(), options);
  } else {
    report = parse_report(o.input, bytes);
  }

  std::string html;
  try {
    html = output::view::splice_into_template(html_template, output::view::embedded_data(std::move(report), view));
  } catch (const std::runtime_error &e) {
    throw UsageError{std::string("view: ") + e.what()};
  }
  const std::string path = o.output.empty() ? html_path_for(o.input) : o.output;
  write_file_atomically(path, html, true);
  if (!o.quiet)
    std::fprintf(stderr, "gpuleak: wrote %s (%.1f MiB%s); open it in a browser, no network needed\n", path.c_str(),
                 html.size() / 1048576.0,
                 is_capture ? "" : ", from a report: per-iteration timeline, no temporal view");
  return 0;
}

}  // namespace

void register_view(CLI::App &app, Action *action) {
  auto o = std::make_shared<ViewCommandOptions>();
  auto *cmd = app.add_subcommand("view", "Write a self-contained HTML report from a capture or a report");
  cmd->add_option("input", o->input, "A capture (.gpuleak: everything) or a report (.report.json)")->required();
  cmd->add_option("-o,--output", o->output, "HTML path (default: next to the input, <stem>.html)");
  cmd->add_option("--template", o->template_path, "Viewer template (default: <bin>/../share/gpuleak/viewer.html)");
  cmd->add_option("--max-points", o->max_points, "Timeline points kept per device (peaks are always kept)")
      ->check(CLI::Range(size_t{4}, size_t{50'000'000}));
  cmd->add_flag("--quiet", o->quiet, "No message on stderr");
  add_read_flags(cmd, &o->read);
  cmd->callback([o, action] { *action = [o] { return view_command(*o); }; });
}

}  // namespace gpuleak::cli
