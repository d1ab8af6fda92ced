#include <algorithm>
#include <cstdio>
#include <string>

#include "cli/command.h"
#include "core/log.h"
#include "core/thread_pool.h"

namespace quill::cli {

std::vector<CommandInfo>& command_registry() {
  static std::vector<CommandInfo> registry;
  return registry;
}

int report_error(const Status& status) {
  std::fprintf(stderr, "quill: error: %s\n", status.to_string().c_str());
  return is_caller_error(status.code()) ? kExitUsageError : kExitRuntimeError;
}

}  // namespace quill::cli

int main(int argc, char** argv) {
  using namespace quill::cli;
  CLI::App app{"Quill: a C++ inference engine for diffusion transformers (MMDiT, FLUX.2, ternary weights)", "quill"};
  app.set_version_flag("--version", std::string("quill ") + QUILL_VERSION);
  app.require_subcommand(1);
  app.fallthrough();
  int verbosity = 0;
  app.add_flag("-v,--verbose", verbosity, "More log output (-v info, -vv debug)");
  std::string log_level;
  app.add_option("--log-level", log_level, "Log level: error, warn, info, debug, trace (or env QUILL_LOG)");

  std::vector<std::pair<CLI::App*, Runner>> commands;
  auto& registry = command_registry();
  std::sort(registry.begin(), registry.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
  for (auto& c : registry) {
    CLI::App* sub = app.add_subcommand(c.name, c.description);
    commands.emplace_back(sub, c.setup(*sub));
  }

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e), kExitOk;
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e), kExitOk;
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e), kExitOk;
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return kExitUsageError;
  }

  if (!log_level.empty()) {
    quill::LogLevel l;
    if (!quill::parse_log_level(log_level.c_str(), &l)) {
      std::fprintf(stderr, "quill: error: unknown log level '%s'\n", log_level.c_str());
      return kExitUsageError;
    }
    quill::set_log_level(l);
  } else if (verbosity > 0) {
    quill::set_log_level(verbosity == 1 ? quill::LogLevel::kInfo : quill::LogLevel::kDebug);
  }

  for (auto& [sub, run] : commands) {
    if (sub->parsed()) {
      try {
        return run();
      } catch (const std::bad_alloc&) {
        std::fprintf(stderr, "quill: error: out of memory\n");
        return kExitRuntimeError;
      } catch (const std::exception& e) {
        std::fprintf(stderr, "quill: error: %s\n", e.what());
        return kExitRuntimeError;
      }
    }
  }
  return kExitUsageError;
}
