// Fuzz target for the schedule cache's import reader, cache/cache_transfer.h read_entries() (the
// reading half of `optpipe cache import`, without the SQLite file).
//
// Feeds the bytes as the text of an export file: JSON lines or one JSON array of
// optpipe-cache-entry/1 objects, each holding an instance and a schedule, validated and
// re-simulated. Every entry is either returned or counted as rejected with a problem line that
// names it; a returned entry holds an instance and a schedule that read back, a finite makespan
// and a bound no larger. Seeds: tests/fuzz/corpus/cache_import/ (exports of solved caches).
#include <cmath>
#include <string>

#include "cache/cache_transfer.h"
#include "fuzz/feed.h"
#include "model/error.h"
#include "model/instance_io.h"
#include "model/schedule_io.h"

namespace optpipe::fuzz {

void feed_cache_import(std::string_view bytes) {
  cache::ImportReport report;
  const std::vector<cache::CacheEntry> entries = cache::read_entries(std::string(bytes), "fuzz", &report);
  if (report.problems.size() != static_cast<std::size_t>(report.rejected)) {
    throw FeedBug("read_entries rejected " + std::to_string(report.rejected) + " entries but gave " +
                  std::to_string(report.problems.size()) + " problems");
  }
  for (const cache::CacheEntry& e : entries) {
    try {
      (void)parse_instance(e.instance_json);
      (void)parse_schedule(e.schedule_json);
    } catch (const InputError& ex) {
      throw FeedBug(std::string("an accepted entry's instance or schedule does not read back: ") + ex.what());
    }
    if (!std::isfinite(e.makespan) || !(e.bound >= 0) || e.bound > e.makespan) {
      throw FeedBug("read_entries returned makespan " + std::to_string(e.makespan) + ", bound " + std::to_string(e.bound));
    }
  }
}

}  // namespace optpipe::fuzz

OPTPIPE_FUZZ_ENTRY(optpipe::fuzz::feed_cache_import)
