#include "cache/cache_transfer.h"

#include <cmath>
#include <sstream>

#include <nlohmann/json.hpp>

#include "cache/signature.h"
#include "model/instance_io.h"
#include "model/schedule_io.h"
#include "model/simulator.h"
#include "model/validator.h"

namespace optpipe::cache {
namespace {

nlohmann::json entry_to_json(const CacheEntry& e) {
  return nlohmann::json{{"format", kEntryFormat},
                        {"exact_key", e.exact_key},
                        {"coarse_key", e.coarse_key},
                        {"instance_name", e.instance_name},
                        {"instance", nlohmann::json::parse(e.instance_json)},
                        {"schedule", nlohmann::json::parse(e.schedule_json)},
                        {"makespan", e.makespan},
                        {"bound", e.bound},
                        {"status", e.status},
                        {"solver_version", e.solver_version},
                        {"seconds", e.seconds},
                        {"created", e.created}};
}

// Checks one entry object and turns it into a CacheEntry; throws std::exception with the reason.
CacheEntry entry_from_json(const nlohmann::json& j) {
  if (!j.is_object()) throw std::runtime_error("not a JSON object");
  if (j.value("format", std::string()) != kEntryFormat) {
    throw std::runtime_error(std::string("format is not \"") + kEntryFormat + "\"");
  }
  if (!j.contains("instance") || !j.contains("schedule")) throw std::runtime_error("needs \"instance\" and \"schedule\"");
  const Instance inst = instance_from_json(j.at("instance"));
  Schedule sch = schedule_from_json(j.at("schedule"));
  const Validation v = validate(inst, sch, SimOptions::quiet());
  if (!v.valid()) throw std::runtime_error("the schedule is invalid on its instance: " + v.violations.front().message);
  if (!v.sim || !v.sim->feasible) throw std::runtime_error("the schedule is infeasible on its instance: " + (v.sim ? v.sim->reason : std::string()));
  const Signature sig = signature(inst);
  CacheEntry e;
  e.exact_key = sig.exact_key;
  e.coarse_key = sig.coarse_key;
  e.instance_name = inst.name;
  e.instance_json = instance_to_json(inst).dump();
  e.schedule_json = schedule_to_text(sch);
  e.makespan = v.sim->makespan;
  const double bound = j.value("bound", 0.0);
  e.bound = std::isfinite(bound) ? std::min(std::max(bound, 0.0), e.makespan) : 0.0;
  e.status = j.value("status", std::string("feasible"));
  if (e.status == "optimal" && e.bound < e.makespan - 1e-9 * std::max(1.0, e.makespan)) {
    // The file says optimal but its makespan was not the re-simulated one: no proof left.
    if (std::abs(j.value("makespan", e.makespan) - e.makespan) > 1e-6 * std::max(1.0, e.makespan)) e.status = "feasible";
  }
  e.solver_version = j.value("solver_version", std::string());
  e.seconds = j.value("seconds", 0.0);
  e.created = j.value("created", 0.0);
  return e;
}

}  // namespace

CacheStatus export_entries(ScheduleCache& cache, const std::string& file, bool json_array, long long* count) {
  if (count) *count = 0;
  std::vector<CacheEntry> entries;
  if (CacheStatus s = cache.list(entries, true); !s.ok) return s;
  std::string text;
  nlohmann::json array = nlohmann::json::array();
  long long n = 0;
  for (const CacheEntry& e : entries) {
    nlohmann::json j;
    try {
      j = entry_to_json(e);
    } catch (const std::exception& ex) {
      return CacheStatus::error(cache.path() + ": entry " + e.exact_key + " is unreadable: " + ex.what());
    }
    if (json_array) {
      array.push_back(std::move(j));
    } else {
      text += j.dump() + "\n";
    }
    ++n;
  }
  if (json_array) text = array.dump(1) + "\n";
  try {
    write_text_file(file, text);
  } catch (const std::exception& ex) {
    return CacheStatus::error(ex.what());
  }
  if (count) *count = n;
  return {};
}

CacheStatus import_entries(ScheduleCache& cache, const std::string& file, ImportReport* report) {
  ImportReport local;
  ImportReport& r = report ? *report : local;
  r = ImportReport{};
  if (!cache.ok()) return cache.status();
  std::string text;
  try {
    text = read_text_file(file);
  } catch (const std::exception& ex) {
    return CacheStatus::error(ex.what());
  }
  std::vector<nlohmann::json> docs;
  const auto first = text.find_first_not_of(" \t\r\n");
  if (first != std::string::npos && text[first] == '[') {
    try {
      const nlohmann::json array = nlohmann::json::parse(text);
      for (const auto& j : array) docs.push_back(j);
    } catch (const std::exception& ex) {
      return CacheStatus::error(file + ": not a JSON array of cache entries: " + ex.what());
    }
  } else {
    std::istringstream in(text);
    std::string line;
    int lineno = 0;
    while (std::getline(in, line)) {
      ++lineno;
      if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
      try {
        docs.push_back(nlohmann::json::parse(line));
      } catch (const std::exception& ex) {
        ++r.rejected;
        r.problems.push_back(file + ": line " + std::to_string(lineno) + ": not JSON: " + ex.what());
      }
    }
  }
  for (std::size_t i = 0; i < docs.size(); ++i) {
    CacheEntry e;
    try {
      e = entry_from_json(docs[i]);
    } catch (const std::exception& ex) {
      ++r.rejected;
      r.problems.push_back(file + ": entry " + std::to_string(i + 1) + ": " + ex.what());
      continue;
    }
    StoreOutcome outcome = StoreOutcome::kInserted;
    if (CacheStatus s = cache.store(e, &outcome); !s.ok) return s;
    (outcome == StoreOutcome::kInserted ? r.inserted : outcome == StoreOutcome::kReplaced ? r.replaced : r.kept) += 1;
  }
  return {};
}

}  // namespace optpipe::cache
