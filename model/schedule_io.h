// Reading and writing schedule files (`optpipe-schedule/1`, spec §5).
//
// The reader checks the file's shape (format, field types, that every action parses) and names
// the place of each error (`devices[1][4]: "X0.1" is not an action ...`). Whether the schedule
// fits an instance is the validator's job (validator.h).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "model/schedule.h"

namespace optpipe {

inline constexpr const char* kScheduleFormat = "optpipe-schedule/1";

Schedule schedule_from_json(const nlohmann::json& doc);
Schedule parse_schedule(const std::string& text);
Schedule load_schedule(const std::string& path);  // errors prefixed with the file name

// The schedule document: format, instance, devices (action strings) and the informational
// fields that are set. schedule_from_json() of it gives back `schedule`.
nlohmann::json schedule_to_json(const Schedule& schedule);
// The same document as JSON text with one device list per line, so that a schedule file stays
// readable and diffable.
std::string schedule_to_text(const Schedule& schedule);
void save_schedule(const Schedule& schedule, const std::string& path);

}  // namespace optpipe
