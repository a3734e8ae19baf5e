// What `optpipe frontier` prints and writes for a frontier (frontier.h): a text table, a JSON
// document (format optpipe-frontier/1) and the data of its SVG chart (viz/frontier_svg.h).
// Pure formatting.
//
// JSON: {"format": "optpipe-frontier/1", "instance", "time_limit", "seconds", "interrupted",
//   "monotone", "carried",
//   "floor": {"limit", "lower", "proven", "device", "stage", "static_memory", "activation", "held",
//             "per_device": [...], "witness", "explanation"},
//   "range": {"low", "high", "steps", "low_default", "high_default"},
//   "unconstrained": a point (below) or null,
//   "points": [{"limit", "status", "makespan", "bound", "gap", "run_limit", "peak_memory": [...],
//               "source", "note", "seconds", "schedule": an optpipe-schedule/1 document or null}],
//   "classics": [{"name", "title", "peak", "peak_device", "makespan", "detail"} or {"name", "title", "reason"}]}
// Bytes are numbers of bytes, times milliseconds (seconds where the key says so); a value that is
// not known (no schedule, an infinite gap) is null.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "frontier/frontier.h"
#include "viz/frontier_svg.h"

namespace optpipe::frontier {

inline constexpr const char* kFrontierFormat = "optpipe-frontier/1";

std::string frontier_table(const FrontierResult& result);
nlohmann::json frontier_to_json(const FrontierResult& result);
FrontierChart frontier_chart(const FrontierResult& result);

}  // namespace optpipe::frontier
