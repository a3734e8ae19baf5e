// Export and import of cache entries, to move schedules between machines or merge caches.
//
// File forms: JSON lines (one entry object a line; the default) or one JSON array of entry
// objects. An entry object:
//   {"format": "optpipe-cache-entry/1", "exact_key": ..., "coarse_key": ..., "instance_name": ...,
//    "instance": {optpipe-instance/1}, "schedule": {optpipe-schedule/1}, "makespan": ms,
//    "bound": ms, "status": ..., "solver_version": ..., "seconds": s, "created": Unix time}
// Import reads either form (it looks at the first non-blank character), and trusts nothing
// but the bound: keys are recomputed from the instance (so files from other signature versions
// still land under the right keys), the schedule must validate on its instance and is
// re-simulated for its makespan (a bound above it is cut to it), and each entry is stored
// with the better-only rule of ScheduleCache::store. Bad entries are skipped and reported,
// each with the field path of its problem (`entry 2: instance.stages[1].forward: must be >= 0`);
// unknown fields and duplicate keys are problems, as in the instance and schedule readers.
// Complexity: O(total size of the entries) plus one simulation per imported entry.
#pragma once

#include <string>
#include <vector>

#include "cache/schedule_cache.h"

namespace optpipe::cache {

CacheStatus export_entries(ScheduleCache& cache, const std::string& file, bool json_array, long long* count);

struct ImportReport {
  long long inserted = 0, replaced = 0, kept = 0, rejected = 0;
  std::vector<std::string> problems;  // one line per rejected entry ("FILE: entry N: ...")
};
CacheStatus import_entries(ScheduleCache& cache, const std::string& file, ImportReport* report);

// The reading half of import_entries(), without a cache: the entries of an export file's text
// (`file` names it in messages), each checked as above. A rejected entry adds 1 to
// report->rejected and a line to report->problems; the others are returned in file order.
// Throws InputError only when the whole text is unusable (it starts with '[' but is not a JSON
// array). Never throws anything else for any text (tests/fuzz_corpus_test.cc, fuzz/).
std::vector<CacheEntry> read_entries(const std::string& text, const std::string& file, ImportReport* report);

}  // namespace optpipe::cache
