#include "cache/cache_transfer.h"

#include <cmath>
#include <sstream>

#include <nlohmann/json.hpp>

#include "cache/signature.h"
#include "model/error.h"
#include "model/instance_io.h"
#include "model/json_reader.h"
#include "model/schedule_io.h"
#include "model/simulator.h"
#include "model/validator.h"

namespace optpipe::cache {
namespace {

namespace jr = json_reader;

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

// The path of an error of the instance or schedule reader inside the entry: "instance." before
// its field path ("instance: " for the reader's "top level").
InputError inside(const char* field, const InputError& e) {
  const std::string what = e.what();
  const std::string top = "top level: ";
  if (what.rfind(top, 0) == 0) return InputError(std::string(field) + ": " + what.substr(top.size()));
  return InputError(std::string(field) + "." + what);
}

// Checks one entry object and turns it into a CacheEntry; throws InputError naming the field.
CacheEntry entry_from_json(const nlohmann::json& j) {
  if (!j.is_object()) throw InputError("must be an object (an " + std::string(kEntryFormat) + " entry), got " + jr::describe(j));
  const std::string format = jr::string(jr::require(j, "", "format"), "format");
  if (format != kEntryFormat) jr::fail("format", "must be \"" + std::string(kEntryFormat) + "\", got \"" + format + "\"");
  jr::expect_only_keys(j, "",
                       {"format", "exact_key", "coarse_key", "instance_name", "instance", "schedule", "makespan",
                        "bound", "status", "solver_version", "seconds", "created"});
  // The keys and the name are recomputed from the instance, but must be what they claim to be.
  for (const char* key : {"exact_key", "coarse_key", "instance_name"}) {
    if (const nlohmann::json* v = jr::optional(j, key)) jr::string(*v, key);
  }
  const nlohmann::json& instance_doc = jr::require(j, "", "instance");
  const nlohmann::json& schedule_doc = jr::require(j, "", "schedule");
  Instance inst;
  Schedule sch;
  try {
    inst = instance_from_json(instance_doc);
  } catch (const InputError& e) {
    throw inside("instance", e);
  }
  try {
    sch = schedule_from_json(schedule_doc);
  } catch (const InputError& e) {
    throw inside("schedule", e);
  }
  CacheEntry e;
  const auto number = [&](const char* key, double fallback) {
    const nlohmann::json* v = jr::optional(j, key);
    return v ? jr::non_negative(*v, key) : fallback;
  };
  const double file_bound = number("bound", 0.0);
  const bool has_makespan = jr::optional(j, "makespan") != nullptr;
  const double file_makespan = number("makespan", 0.0);
  e.seconds = number("seconds", 0.0);
  e.created = number("created", 0.0);
  e.status = "feasible";
  if (const nlohmann::json* v = jr::optional(j, "status")) {
    e.status = jr::string(*v, "status");
    if (e.status != "optimal" && e.status != "feasible") {
      jr::fail("status", "must be \"optimal\" or \"feasible\", got \"" + e.status + "\"");
    }
  }
  if (const nlohmann::json* v = jr::optional(j, "solver_version")) e.solver_version = jr::string(*v, "solver_version");

  const Validation v = validate(inst, sch, SimOptions::quiet());
  if (!v.valid()) throw InputError("schedule: invalid on its instance: " + v.violations.front().message);
  if (!v.sim || !v.sim->feasible) {
    throw InputError("schedule: infeasible on its instance: " + (v.sim ? v.sim->reason : std::string()));
  }
  const Signature sig = signature(inst);
  e.exact_key = sig.exact_key;
  e.coarse_key = sig.coarse_key;
  e.instance_name = inst.name;
  e.instance_json = instance_to_json(inst).dump();
  e.schedule_json = schedule_to_text(sch);
  e.makespan = v.sim->makespan;
  e.bound = std::min(file_bound, e.makespan);
  if (e.status == "optimal" && e.bound < e.makespan - 1e-9 * std::max(1.0, e.makespan)) {
    // The file says optimal but its makespan was not the re-simulated one: no proof left.
    const double claimed = has_makespan ? file_makespan : e.makespan;
    if (std::abs(claimed - e.makespan) > 1e-6 * std::max(1.0, e.makespan)) e.status = "feasible";
  }
  return e;
}

// "not valid JSON: parse error at ..." of json_reader as "not JSON: parse error at ...".
std::string not_json(const InputError& e) {
  const std::string what = e.what();
  const std::string prefix = "not valid JSON: ";
  return what.rfind(prefix, 0) == 0 ? "not JSON: " + what.substr(prefix.size()) : what;
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

std::vector<CacheEntry> read_entries(const std::string& text, const std::string& file, ImportReport* report) {
  ImportReport local;
  ImportReport& r = report ? *report : local;
  std::vector<CacheEntry> entries;
  // One document, `where` in the file ("entry N" of an array, "line N" of JSON lines).
  auto take = [&](const std::string& where, const nlohmann::json& doc) {
    try {
      entries.push_back(entry_from_json(doc));
    } catch (const InputError& ex) {
      ++r.rejected;
      r.problems.push_back(file + ": " + where + ": " + ex.what());
    }
  };
  const auto first = text.find_first_not_of(" \t\r\n");
  if (first != std::string::npos && text[first] == '[') {
    nlohmann::json array;
    try {
      array = jr::parse_text(text);
    } catch (const InputError& ex) {
      throw InputError(file + ": not a JSON array of cache entries: " + not_json(ex));
    }
    for (std::size_t i = 0; i < array.size(); ++i) take("entry " + std::to_string(i + 1), array[i]);
    return entries;
  }
  std::istringstream in(text);
  std::string line;
  long long lineno = 0;
  while (std::getline(in, line)) {
    ++lineno;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    nlohmann::json doc;
    try {
      doc = jr::parse_text(line);
    } catch (const InputError& ex) {
      ++r.rejected;
      r.problems.push_back(file + ": line " + std::to_string(lineno) + ": " + not_json(ex));
      continue;
    }
    take("line " + std::to_string(lineno), doc);
  }
  return entries;
}

CacheStatus import_entries(ScheduleCache& cache, const std::string& file, ImportReport* report) {
  ImportReport local;
  ImportReport& r = report ? *report : local;
  r = ImportReport{};
  if (!cache.ok()) return cache.status();
  std::vector<CacheEntry> entries;
  try {
    entries = read_entries(read_text_file(file), file, &r);
  } catch (const InputError& ex) {
    return CacheStatus::error(ex.what());
  }
  for (const CacheEntry& e : entries) {
    StoreOutcome outcome = StoreOutcome::kInserted;
    if (CacheStatus s = cache.store(e, &outcome); !s.ok) return s;
    (outcome == StoreOutcome::kInserted ? r.inserted : outcome == StoreOutcome::kReplaced ? r.replaced : r.kept) += 1;
  }
  return {};
}

}  // namespace optpipe::cache
