// The cache's entries as JSON, for `optpipe cache list --format json` (docs/json.md, "cache
// list"): one object per entry with the fields of an exported entry (cache_transfer.h) but its
// instance and schedule documents (`cache show` or `cache export` give those). Times: makespan
// and bound in ms, seconds in s, created in Unix seconds. O(entries).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cache/schedule_cache.h"

namespace optpipe::cache {

// {"exact_key", "coarse_key", "instance_name", "makespan", "bound", "status", "proven_optimal",
//  "solver_version", "seconds", "created"}.
nlohmann::json entry_summary_json(const CacheEntry& entry);

// {"file": path, "exists": false when there is no cache file yet, "entries": [...]}.
nlohmann::json cache_list_json(const std::string& path, bool exists, const std::vector<CacheEntry>& entries);

}  // namespace optpipe::cache
