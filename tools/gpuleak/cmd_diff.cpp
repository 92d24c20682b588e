// `gpuleak diff A B`: two reports side by side (verdicts, peak and live at exit per device,
// growth) and their leaks added, removed or changed. Exit 0, or 2 on bad input; it never judges
// (that is `gpuleak check --baseline A B`).
#include <CLI/CLI.hpp>

#include <cstdio>
#include <memory>
#include <string>

#include "cli.h"
#include "gate/diff.h"
#include "gate/report_view.h"
#include "gate/sizes.h"

namespace gpuleak::cli {

namespace {

struct DiffOptions {
  std::string a, b;
  std::string tolerance = "5%";
};

int diff_command(const DiffOptions &o) {
  std::string text;
  try {
    double tolerance = gate::parse_percent(o.tolerance, "--tolerance");
    gate::Report a = gate::load_report(o.a);
    gate::Report b = gate::load_report(o.b);
    text = gate::write_diff(a, b, tolerance);
  } catch (const gate::GateError &e) {
    throw UsageError{e.what()};
  }
  std::fwrite(text.data(), 1, text.size(), stdout);
  return 0;
}

}  // namespace

void register_diff(CLI::App &app, Action *action) {
  auto o = std::make_shared<DiffOptions>();
  auto *cmd = app.add_subcommand("diff", "Compare two reports side by side: verdicts, peak, live at exit, leaks");
  cmd->footer(input_limits_help());
  cmd->add_option("a", o->a, "The earlier report (.report.json)")->required();
  cmd->add_option("b", o->b, "The later report (.report.json)")->required();
  cmd->add_option("--tolerance", o->tolerance, "A leak's rate must move more than this to count as changed")
      ->capture_default_str();
  cmd->callback([o, action] { *action = [o] { return diff_command(*o); }; });
}

}  // namespace gpuleak::cli
