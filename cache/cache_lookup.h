// What `optpipe solve` asks of the cache: look an instance up before solving, store the result
// after. Both never throw and never make a solve fail: problems come back as warnings.
//
// Lookup rule:
//   * exact hit (same exact key and canonical text, signature.h): the cached schedule is
//     re-simulated on the instance (fit_schedule, repair.h). If the entry is proven optimal,
//     the caller may return it at once (LookupResult::proven_optimal); otherwise it is a warm
//     start for the solver, and its proven lower bound (LookupResult::bound, the largest any run
//     stored) is the solver's starting bound (SolveOptions::known_bound), so that runs on one
//     instance add up.
//   * near hit (same coarse key, other exact key): up to kNearCandidates entries, best cached
//     makespan first, are each re-simulated on the new costs and repaired to fit memory when
//     needed; the fastest that fits is the warm start. Its makespan is the new instance's,
//     never the cached one, and it is never reported as optimal.
//   * otherwise a miss.
// Complexity: one indexed query, plus per candidate one simulation (and a repair when it no
// longer fits).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "cache/schedule_cache.h"
#include "cache/signature.h"
#include "model/instance.h"
#include "model/schedule.h"

namespace optpipe::cache {

inline constexpr int kNearCandidates = 4;

struct LookupResult {
  enum class Kind { kUnavailable, kMiss, kExact, kNear };
  Kind kind = Kind::kMiss;
  std::optional<Schedule> schedule;     // the fitted schedule (warm start, or the answer)
  double makespan = 0;                  // of `schedule` on this instance
  double bound = 0;                     // exact hits: the cached proven lower bound
  bool proven_optimal = false;          // exact hit whose entry is proven optimal
  bool repaired = false;
  std::string from_instance;            // the cached entry's instance name
  std::string exact_key;                // the cached entry's key
  std::string message;                  // one line for the log, e.g. "exact hit, proven optimal"
  std::vector<std::string> warnings;    // problems with the file or its entries (log them, go on)
};
const char* to_string(LookupResult::Kind kind);

// `cache` may be unusable (then the result is kUnavailable with its status as a warning).
LookupResult lookup(ScheduleCache& cache, const Instance& instance, const Signature& sig);

// Stores a solver result for `instance` (kept only when better than the entry there).
CacheStatus store_result(ScheduleCache& cache, const Instance& instance, const Signature& sig, const Schedule& schedule,
                         double makespan, double bound, const std::string& status, const std::string& solver_version,
                         double seconds, StoreOutcome* outcome = nullptr);

}  // namespace optpipe::cache
