// `gpuleak doctor [-- CMD]`: the checks live in doctor.cpp; this registers the subcommand.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <memory>

#include "cli.h"
#include "doctor.h"

namespace gpuleak::cli {

void register_doctor(CLI::App &app, Action *action) {
  auto input = std::make_shared<DoctorInput>();
  auto *cmd = app.add_subcommand("doctor", "Say which capture paths work here and for a program");
  cmd->add_option("command", input->command, "The program to inspect (after --)");
  cmd->callback([input, action] {
    *action = [input] {
      try {
        input->shim_path = find_shim();
      } catch (const UsageError &) {
        // A missing shim is one of the doctor's findings, not a usage error.
      }
      return run_doctor(*input, stdout);
    };
  });
}

}  // namespace gpuleak::cli
