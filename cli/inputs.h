// The commands' input files: an instance with its loader's warnings logged, and an instance with
// a schedule for it whose lists are checked (model/validator.h) before anything simulates them.
#pragma once

#include <optional>
#include <string>
#include <utility>

#include "model/instance.h"
#include "model/schedule.h"

namespace optpipe::cli {

// Loads an instance file; its warnings (e.g. unknown fields) go to the log as warnings.
Instance load_instance_reporting(const std::string& path);

// Loads both files, warning when the schedule names another instance; the lists are not checked.
std::pair<Instance, Schedule> load_both(const std::string& ipath, const std::string& spath);

// Loads both files and checks the lists; prints violations and returns nullopt when invalid.
std::optional<std::pair<Instance, Schedule>> load_pair(const std::string& ipath, const std::string& spath);

}  // namespace optpipe::cli
