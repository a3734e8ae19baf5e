// The commands' --format json (docs/json.md). A command asked for JSON writes exactly one JSON
// document on standard output and nothing else there, whatever its exit code; warnings and
// progress go to standard error as in text mode. Each document names itself in "format"
// ("optpipe-simulate-report/1", ...); the libraries fill in the rest (model/validation_json.h,
// heuristics/heuristics_json.h, instances/generator/generated_json.h, cache/cache_list_json.h).
// When such a command fails on bad input, main() prints an error document (format
// "optpipe-error/1") besides the message on standard error; `solve --log-format json` gets an
// "error" event line instead.
#pragma once

#include <string>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

namespace optpipe::cli {

// --format text|json on `cmd`, into `format` (default text).
CLI::Option* add_format_option(CLI::App* cmd, std::string& format);

// A report's first fields: {"format": format, "instance": instance name}.
nlohmann::json report_header(const std::string& format, const std::string& instance);

// `doc` on standard output, indented, with a newline (strings that are not UTF-8 are repaired,
// never a throw).
void print_json(const nlohmann::json& doc);

// The command line asks for JSON output: a command that has --format json (or solve with
// --log-format json) and the flag set so.
bool json_requested(int argc, const char* const* argv);

// For a command line that asks for JSON: the error document (or solve's error event) with
// `message` and `exit_code`, on standard output. Nothing otherwise.
void print_json_error(int argc, const char* const* argv, const std::string& message, int exit_code);

}  // namespace optpipe::cli
