#include "cli/cmd_heuristics.h"

#include <cstdio>
#include <iostream>

#include "cli/exit_codes.h"
#include "heuristics/registry.h"

namespace optpipe::cli {

CLI::App* add_heuristics_command(CLI::App& app) {
  return app.add_subcommand("heuristics", "List the baseline heuristics");
}

int run_heuristics() {
  std::cout << "heuristics (optpipe schedule --heuristic NAME, or best to run all):\n";
  for (const auto& h : all_heuristics()) {
    char line[64];
    std::snprintf(line, sizeof line, "  %-18s", h->name().c_str());
    std::cout << line << h->description() << "\n";
  }
  return kOk;
}

}  // namespace optpipe::cli
