#include "cache/cache_list_json.h"

#include "model/json_number.h"

namespace optpipe::cache {

nlohmann::json entry_summary_json(const CacheEntry& e) {
  return {{"exact_key", e.exact_key},
          {"coarse_key", e.coarse_key},
          {"instance_name", e.instance_name},
          {"makespan", finite_or_null(e.makespan)},
          {"bound", finite_or_null(e.bound)},
          {"status", e.status},
          {"proven_optimal", e.proven_optimal()},
          {"solver_version", e.solver_version},
          {"seconds", finite_or_null(e.seconds)},
          {"created", finite_or_null(e.created)}};
}

nlohmann::json cache_list_json(const std::string& path, bool exists, const std::vector<CacheEntry>& entries) {
  nlohmann::json list = nlohmann::json::array();
  for (const CacheEntry& e : entries) list.push_back(entry_summary_json(e));
  return {{"file", path}, {"exists", exists}, {"entries", list}};
}

}  // namespace optpipe::cache
