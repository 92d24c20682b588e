// `gpuleak diff A B`: two reports side by side (verdicts, peak and live at exit per device,
// growth) and their leaking lines new, gone, regressed, improved or moved, paired by the rule
// `gpuleak check --baseline` uses (src/gate/pairing.h). `--json PATH` writes the same as
// gpuleak.diff/1 (`-`: on stdout, instead of the text). Exit 0, or 2 on bad input; it never
// judges (that is `gpuleak check --baseline A B`).
#include <CLI/CLI.hpp>

#include <cstdio>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "cli.h"
#include "gate/diff.h"
#include "gate/report_view.h"
#include "gate/sizes.h"

namespace gpuleak::cli {

namespace {

struct DiffOptions {
  std::string a, b;
  std::string tolerance = "5%";
  std::string json;  // "" none, "-" stdout
};

int diff_command(const DiffOptions &o) {
  std::string text, json;
  try {
    double tolerance = gate::parse_percent(o.tolerance, "--tolerance");
    gate::Report a = gate::load_report(o.a);
    gate::Report b = gate::load_report(o.b);
    if (!o.json.empty()) {
      // Strings are the program's bytes: replaced where they are not UTF-8, never a throw.
      json = gate::diff_json(a, b, tolerance).dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
    }
    if (o.json != "-") text = gate::write_diff(a, b, tolerance);
  } catch (const gate::GateError &e) {
    throw UsageError{e.what()};
  }
  if (!o.json.empty() && o.json != "-") write_file_atomically(o.json, json);
  const std::string &out = o.json == "-" ? json : text;
  std::fwrite(out.data(), 1, out.size(), stdout);
  return 0;
}

}  // namespace

void register_diff(CLI::App &app, Action *action) {
  auto o = std::make_shared<DiffOptions>();
  auto *cmd = app.add_subcommand(
      "diff", "Compare two reports side by side: verdicts, peak, live at exit, leaking lines (new, gone, regressed)");
  cmd->footer(input_limits_help());
  cmd->add_option("a", o->a, "The earlier report (.report.json)")->required();
  cmd->add_option("b", o->b, "The later report (.report.json)")->required();
  cmd->add_option("--tolerance", o->tolerance,
                  "A line's rate must move more than this to count as regressed or improved")
      ->capture_default_str();
  cmd->add_option("--json", o->json,
                  "Write the comparison as JSON here (gpuleak.diff/1; - for stdout, instead of text)");
  cmd->callback([o, action] { *action = [o] { return diff_command(*o); }; });
}

}  // namespace gpuleak::cli
