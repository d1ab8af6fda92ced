// Subcommand registry: each src/cli/cmd_*.cpp registers itself with QUILL_COMMAND, so adding a
// command touches one file. Exit codes: 0 ok, 1 runtime error, 2 usage error.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>
#include <string>
#include <vector>

#include "quill/status.h"

namespace quill::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitRuntimeError = 1;
inline constexpr int kExitUsageError = 2;

using Runner = std::function<int()>;
// Adds the command's options to `sub` and returns the function that runs it after parsing.
using CommandSetup = std::function<Runner(CLI::App& sub)>;

struct CommandInfo {
  std::string name;
  std::string description;
  CommandSetup setup;
};

std::vector<CommandInfo>& command_registry();

struct CommandRegistrar {
  CommandRegistrar(std::string name, std::string description, CommandSetup setup) {
    command_registry().push_back({std::move(name), std::move(description), std::move(setup)});
  }
};

// Prints "quill: error: <status>" and returns the exit code for it (2 for invalid arguments).
int report_error(const Status& status);

}  // namespace quill::cli

#define QUILL_COMMAND(ident, name, description, setup_fn) \
  static ::quill::cli::CommandRegistrar quill_command_##ident(name, description, setup_fn)
