// `optpipe export-milp`: writes the instance's MILP (milp/milp_formulation.h) as CPLEX LP or
// free MPS for a general solver, with a MIP start from a given schedule. The big-M is the best
// heuristic's makespan unless given (raised to the warm start's when that is longer).
#pragma once

#include <string>

#include <CLI/CLI.hpp>

namespace optpipe::cli {

struct ExportMilpArgs {
  std::string instance, output, warm_start, format;
  double big_m = 0;  // 0: the best heuristic's makespan
};

// Registers the `export-milp` subcommand on `app` with its flags bound to `args`, which must
// outlive the parse; main runs run_export_milp when the returned subcommand was given.
CLI::App* add_export_milp_command(CLI::App& app, ExportMilpArgs& args);

// kOk, or kNegative when the instance obviously cannot fit or, without --big-m, no heuristic
// schedule fits; bad input (an unknown extension, an invalid or infeasible warm start) throws
// InputError.
int run_export_milp(const ExportMilpArgs& args);

}  // namespace optpipe::cli
