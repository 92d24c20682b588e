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
#include "format/capture_reader.h"
#include "log/log.h"
#include "output/front_door.h"
#include "output/report_json.h"
#include "output/view/html_document.h"
#include "output/view/report_input.h"
#include "output/view/view_data.h"
#include "text/bounded_read.h"
#include "text/escape.h"
#include "text/limits.h"
#include "text/paths.h"

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
  return text::dirname_of(path);
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

int view_command(const ViewCommandOptions &o) {
  const std::string html_template = load_template(o.template_path);

  nlohmann::json report, view;  // view stays null for a report: the page shows what it has
  // A capture file is streamed through the front door (it may be gigabytes); a report is read
  // whole, up to the report limit (text/limits.h), so /dev/zero or a pipe cannot balloon.
  const bool is_capture = format::is_capture_file(o.input);
  if (is_capture) {
    // The same options as `gpuleak report`, so that iterations, advice, site ids and headlines match.
    output::ReadOptions read = read_options(o.read);
    read.keep_memory = true;  // memory over time and the flame graphs replay every record
    std::string error;
    auto opened = output::open_and_analyze(o.input, read, &error);
    if (!opened) throw UsageError{"view: " + error};
    for (const std::string &w : opened->analysis().warnings) GPULEAK_LOG_WARN("%s", text::printable(w).c_str());
    if (opened->capture().aggregated)
      GPULEAK_LOG_WARN("warning: %s", text::printable(output::aggregated_note(opened->capture())).c_str());
    output::ReportContext ctx;
    ctx.gpuleak_version = GPULEAK_VERSION;
    report = output::make_report(opened->capture(), opened->analysis(), opened->sites(), ctx);
    output::view::ViewOptions options;
    options.max_timeline_points = o.max_points;
    view = output::view::make_view_data(opened->capture(), opened->analysis(), opened->sites(), options);
  } else {
    std::string bytes, error;
    if (text::read_bounded(o.input, text::kMaxReportBytes, "a report", &bytes, &error) != text::ReadResult::kOk)
      throw UsageError{"view: " + error};
    if (bytes.size() >= sizeof format::kMagic && std::memcmp(bytes.data(), format::kMagic, sizeof format::kMagic) == 0)
      throw UsageError{"view: " + o.input + " is a capture that is not a regular file: copy it to a file first"};
    if (!output::view::parse_report_text(bytes, &report, &error)) throw UsageError{"view: " + o.input + " " + error};
  }

  std::string html;
  try {
    html = output::view::splice_into_template(html_template, output::view::embedded_data(std::move(report), view));
  } catch (const std::runtime_error &e) {
    throw UsageError{std::string("view: ") + e.what()};
  }
  const std::string path = o.output.empty() ? html_path_for(o.input) : o.output;
  write_file_atomically(path, html);
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
  cmd->footer(input_limits_help());
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
