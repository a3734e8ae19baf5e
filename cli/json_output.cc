#include "cli/json_output.h"

#include <iostream>
#include <optional>

namespace optpipe::cli {
namespace {

// The command word(s) of argv ("simulate", "cache list") and the flag that asks for JSON.
struct JsonCommand {
  std::string name;
  const char* flag;
};

std::optional<JsonCommand> json_command(int argc, const char* const* argv) {
  if (argc < 2) return std::nullopt;
  const std::string first = argv[1];
  for (const char* c : {"schedule", "simulate", "validate", "generate"}) {
    if (first == c) return JsonCommand{first, "--format"};
  }
  if (first == "cache" && argc >= 3 && std::string(argv[2]) == "list") return JsonCommand{"cache list", "--format"};
  if (first == "solve") return JsonCommand{first, "--log-format"};
  return std::nullopt;
}

}  // namespace

CLI::Option* add_format_option(CLI::App* cmd, std::string& format) {
  return cmd->add_option("--format", format, "text (default) or json: one document on stdout (docs/json.md)")
      ->check(CLI::IsMember({"text", "json"}));
}

nlohmann::json report_header(const std::string& format, const std::string& instance) {
  return {{"format", format}, {"instance", instance}};
}

void print_json(const nlohmann::json& doc) {
  std::cout << doc.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n" << std::flush;
}

bool json_requested(int argc, const char* const* argv) {
  const auto cmd = json_command(argc, argv);
  if (!cmd) return false;
  const std::string flag = cmd->flag;
  bool json = false;  // the last one given counts, as CLI11 takes it
  for (int i = 2; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == flag && i + 1 < argc) json = std::string(argv[i + 1]) == "json";
    if (arg.rfind(flag + "=", 0) == 0) json = arg.substr(flag.size() + 1) == "json";
  }
  return json;
}

void print_json_error(int argc, const char* const* argv, const std::string& message, int exit_code) {
  if (!json_requested(argc, argv)) return;
  const std::string command = json_command(argc, argv)->name;
  if (command == "solve") {  // JSON lines: one more event
    std::cout << nlohmann::json{{"event", "error"}, {"message", message}, {"exit_code", exit_code}}.dump(
                     -1, ' ', false, nlohmann::json::error_handler_t::replace)
              << std::endl;
    return;
  }
  print_json({{"format", "optpipe-error/1"}, {"command", command}, {"error", message}, {"exit_code", exit_code}});
}

}  // namespace optpipe::cli
