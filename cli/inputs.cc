#include "cli/inputs.h"

#include <iostream>
#include <vector>

#include <spdlog/spdlog.h>

#include "model/instance_io.h"
#include "model/schedule_io.h"
#include "model/validator.h"

namespace optpipe::cli {
namespace {

void warn_all(const std::vector<std::string>& warnings) {
  for (const auto& w : warnings) spdlog::warn("{}", w);
}

}  // namespace

Instance load_instance_reporting(const std::string& path) {
  std::vector<std::string> warnings;
  Instance inst = load_instance(path, &warnings);
  warn_all(warnings);
  return inst;
}

std::pair<Instance, Schedule> load_both(const std::string& ipath, const std::string& spath) {
  Instance inst = load_instance_reporting(ipath);
  Schedule sch = load_schedule(spath);
  if (!sch.instance.empty() && !inst.name.empty() && sch.instance != inst.name) {
    spdlog::warn("{} is for instance \"{}\", not \"{}\"", spath, sch.instance, inst.name);
  }
  return {std::move(inst), std::move(sch)};
}

std::optional<std::pair<Instance, Schedule>> load_pair(const std::string& ipath, const std::string& spath) {
  auto [inst, sch] = load_both(ipath, spath);
  const auto violations = check_structure(inst, sch);
  if (!violations.empty()) {
    std::cout << "invalid schedule (" << violations.size() << (violations.size() >= 50 ? "+" : "")
              << " problem" << (violations.size() == 1 ? "" : "s") << "):\n";
    for (const auto& v : violations) std::cout << "  [" << to_string(v.rule) << "] " << v.message << "\n";
    return std::nullopt;
  }
  return std::make_pair(std::move(inst), std::move(sch));
}

}  // namespace optpipe::cli
