#include "cache/cache_lookup.h"

#include <cmath>

#include <nlohmann/json.hpp>

#include "cache/repair.h"
#include "model/instance_io.h"
#include "model/schedule_io.h"
#include "model/time_text.h"

namespace optpipe::cache {

const char* to_string(LookupResult::Kind kind) {
  switch (kind) {
    case LookupResult::Kind::kUnavailable: return "unavailable";
    case LookupResult::Kind::kMiss: return "miss";
    case LookupResult::Kind::kExact: return "exact";
    case LookupResult::Kind::kNear: return "near";
  }
  return "?";
}

namespace {

// The exact entry, replayed on the instance: true when it gave the answer (out filled in);
// otherwise why not is added to out's warnings.
bool take_exact(ScheduleCache& cache, const Instance& inst, const CacheEntry& exact, LookupResult& out) {
  try {
    Fitted f = fit_schedule(inst, schedule_from_json(nlohmann::json::parse(exact.schedule_json)));
    if (!f.schedule) {
      out.warnings.push_back(cache.path() + ": entry " + exact.exact_key + " does not replay on its own instance: " +
                             f.note);
      return false;
    }
    out.kind = LookupResult::Kind::kExact;
    out.schedule = std::move(f.schedule);
    out.makespan = f.makespan;
    out.repaired = f.repaired;
    out.bound = std::min(exact.bound, f.makespan);
    out.from_instance = exact.instance_name;
    out.exact_key = exact.exact_key;
    // The proof is about this exact instance; it holds when the re-simulation agrees.
    out.proven_optimal = exact.proven_optimal() && !f.repaired &&
                         std::abs(f.makespan - exact.makespan) <= 1e-6 * std::max(1.0, exact.makespan);
    const std::string by = exact.solver_version.empty() ? "" : " by " + exact.solver_version;
    out.message = out.proven_optimal ? "exact hit, proven optimal (" + fmt_ms(out.makespan) + by + ")"
                                     : "exact hit (" + exact.status + ", " + fmt_ms(out.makespan) + ", bound " +
                                           fmt_ms(out.bound) + by + "), used as a warm start and a proven bound";
    // A build with uncommitted changes may be an experiment; its proofs deserve a second look.
    if (exact.solver_version.find("-dirty") != std::string::npos && exact.bound > 0) {
      out.warnings.push_back(cache.path() + ": entry " + exact.exact_key.substr(0, 12) + "'s bound " +
                             fmt_ms(exact.bound) + " comes from a build with uncommitted changes (" +
                             exact.solver_version + "); `--no-cache` solves without it");
    }
    return true;
  } catch (const std::exception& e) {
    out.warnings.push_back(cache.path() + ": entry " + exact.exact_key + " has an unreadable schedule: " + e.what());
    return false;
  }
}

// The best near entry that replays on the instance (out: kNear), else a miss saying why.
void take_best_near(ScheduleCache& cache, const Instance& inst, const Signature& sig, LookupResult& out) {
  std::vector<CacheEntry> near;
  const CacheStatus st = cache.find_near(sig, near, kNearCandidates);
  if (!st.ok) {
    out.warnings.push_back(st.message);
    near.clear();
  }
  std::string rejected;
  for (const CacheEntry& e : near) {
    Fitted f;
    try {
      f = fit_schedule(inst, schedule_from_json(nlohmann::json::parse(e.schedule_json)));
    } catch (const std::exception& ex) {
      out.warnings.push_back(cache.path() + ": entry " + e.exact_key + " has an unreadable schedule: " + ex.what());
      continue;
    }
    if (!f.schedule) {
      rejected = f.note;
      continue;
    }
    if (out.kind != LookupResult::Kind::kNear || f.makespan < out.makespan - 1e-9) {
      out.kind = LookupResult::Kind::kNear;
      out.schedule = std::move(f.schedule);
      out.makespan = f.makespan;
      out.repaired = f.repaired;
      out.from_instance = e.instance_name;
      out.exact_key = e.exact_key;
      out.message = "near hit from \"" + e.instance_name + "\" (cached " + fmt_ms(e.makespan) + "), re-simulated " +
                    fmt_ms(f.makespan) + (f.repaired ? ", " + f.note : "") + ", used as a warm start";
    }
  }
  if (out.kind == LookupResult::Kind::kNear) return;
  out.kind = LookupResult::Kind::kMiss;
  out.message = near.empty() ? "miss" : "miss (" + std::to_string(near.size()) + " near entries rejected: " + rejected + ")";
}

}  // namespace

LookupResult lookup(ScheduleCache& cache, const Instance& inst, const Signature& sig) {
  LookupResult out;
  if (!cache.ok()) {
    out.kind = LookupResult::Kind::kUnavailable;
    out.warnings.push_back(cache.status().message);
    out.message = "off for this run (the file is unusable)";
    return out;
  }
  std::optional<CacheEntry> exact;
  const CacheStatus st = cache.find_exact(sig, exact);
  if (!st.ok) {
    out.kind = LookupResult::Kind::kUnavailable;
    out.warnings.push_back(st.message);
    out.message = "off for this run (lookup failed)";
    return out;
  }
  if (!st.message.empty()) out.warnings.push_back(st.message);
  if (exact && take_exact(cache, inst, *exact, out)) return out;
  take_best_near(cache, inst, sig, out);
  return out;
}

CacheStatus store_result(ScheduleCache& cache, const Instance& inst, const Signature& sig, const Schedule& schedule,
                         double makespan, double bound, const std::string& status, const std::string& solver_version,
                         double seconds, StoreOutcome* outcome) {
  if (!cache.ok()) return cache.status();
  if (!std::isfinite(makespan)) return CacheStatus::error(cache.path() + ": not stored (no finite makespan)");
  CacheEntry e;
  e.exact_key = sig.exact_key;
  e.coarse_key = sig.coarse_key;
  e.instance_name = inst.name;
  try {
    e.instance_json = instance_to_json(inst).dump();
    e.schedule_json = schedule_to_text(schedule);
  } catch (const std::exception& ex) {
    return CacheStatus::error(cache.path() + ": not stored: " + ex.what());
  }
  e.makespan = makespan;
  e.bound = std::isfinite(bound) ? std::min(bound, makespan) : 0.0;
  e.status = status;
  e.solver_version = solver_version;
  e.seconds = seconds;
  return cache.store(e, outcome);
}

}  // namespace optpipe::cache
