// `optpipe validate`: checks an instance file, or a schedule against every rule of the spec
// (model/validator.h: the lists' structure, then a simulation with the memory limits); with
// --format json one document (model/validation_json.h).
#pragma once

#include <string>

#include <CLI/CLI.hpp>

namespace optpipe::cli {

struct ValidateArgs {
  std::string instance, schedule;  // schedule empty: check the instance alone
  std::string format = "text";     // or json (docs/json.md)
};

// Registers the `validate` subcommand on `app` with its arguments bound to `args`, which must
// outlive the parse; main runs run_validate when the returned subcommand was given.
CLI::App* add_validate_command(CLI::App& app, ValidateArgs& args);

// kOk, or kNegative when the schedule breaks a rule; bad input throws InputError.
int run_validate(const ValidateArgs& args);

}  // namespace optpipe::cli
