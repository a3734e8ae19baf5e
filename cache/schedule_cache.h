// The schedule cache: solved schedules in one SQLite file, keyed by instance signatures
// (signature.h), shared safely by several processes.
//
// File: --cache PATH, else $OPTPIPE_CACHE (a path; "off" disables the default cache), else
// $XDG_CACHE_HOME/optpipe/schedules.sqlite, else ~/.cache/optpipe/schedules.sqlite.
//
// Schema (version 1):
//   optpipe_meta(key TEXT PRIMARY KEY, value TEXT)   -- ('schema', 'optpipe-schedule-cache'),
//                                                    -- ('version', '1')
//   schedules(id INTEGER PRIMARY KEY, exact_key TEXT UNIQUE, coarse_key TEXT, instance_name TEXT,
//             instance_json TEXT, schedule_json TEXT, makespan REAL, bound REAL, status TEXT,
//             solver_version TEXT, seconds REAL, created REAL)  -- created: Unix time, seconds
//   index schedules_coarse on schedules(coarse_key)
// One row per exact key: the best schedule known for that exact instance. store() replaces it
// only with a better one (smaller makespan, or the same makespan with a stronger proof); the
// bound kept is the larger of the two (both are proven lower bounds of the same problem), and
// a row whose bound reaches its makespan is "optimal".
//
// Sharing: WAL journal mode (readers never block the writer) and a busy timeout of 10 s
// (a process waits for another's write lock instead of failing); every write is one
// BEGIN IMMEDIATE transaction, so a read-compare-write of store() is atomic across processes.
//
// Errors never throw: the cache is never a reason to fail. A file that is not SQLite (garbage,
// truncated), a SQLite database of something else (tables but no optpipe_meta), a newer schema
// version, an unwritable folder or a lock held too long make the operation return a
// CacheStatus with ok == false and a one-line message naming the file and the problem; the
// caller logs it and goes on without the cache. A foreign database is never modified.
//
// Complexity: exact lookups and stores are index look-ups, O(log n) in the number of rows;
// near lookups read the rows of one coarse key; list/export/prune scan the table, O(n).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "cache/signature.h"

struct sqlite3;

namespace optpipe::cache {

inline constexpr int kSchemaVersion = 1;
inline constexpr const char* kSchemaName = "optpipe-schedule-cache";
inline constexpr const char* kEntryFormat = "optpipe-cache-entry/1";

struct CacheStatus {
  bool ok = true;
  std::string message;  // when !ok: "PATH: what is wrong"; when ok: optional information
  static CacheStatus error(std::string m) { return {false, std::move(m)}; }
};

struct CacheEntry {
  long long id = 0;
  std::string exact_key, coarse_key, instance_name;
  std::string instance_json;   // optpipe-instance/1 document
  std::string schedule_json;   // optpipe-schedule/1 document
  double makespan = 0, bound = 0;
  std::string status;          // "optimal", "feasible", ...
  std::string solver_version;
  double seconds = 0;          // time spent finding it
  double created = 0;          // Unix time, seconds

  bool proven_optimal() const;  // status "optimal" or bound >= makespan (within 1e-9 relative)
};

// The default file (see above); empty when $OPTPIPE_CACHE is "off" or no home is known.
std::string default_cache_path();

enum class StoreOutcome { kInserted, kReplaced, kKeptExisting };
const char* to_string(StoreOutcome outcome);

class ScheduleCache {
 public:
  // Opens `path` (creating the folders, the file and the schema when `create` and they are
  // missing). Never throws: check status().
  explicit ScheduleCache(std::string path, bool create = true);
  ~ScheduleCache();
  ScheduleCache(const ScheduleCache&) = delete;
  ScheduleCache& operator=(const ScheduleCache&) = delete;

  bool ok() const { return status_.ok; }
  const CacheStatus& status() const { return status_; }
  const std::string& path() const { return path_; }

  // The entry for this exact key, whose instance text is exactly `sig`'s (nullopt: none).
  CacheStatus find_exact(const Signature& sig, std::optional<CacheEntry>& out);
  // Entries with sig's coarse key, excluding its exact key, best makespan first, at most `limit`.
  CacheStatus find_near(const Signature& sig, std::vector<CacheEntry>& out, int limit = 8);
  // Stores `entry` under its exact key when it is better than what is there (see above).
  CacheStatus store(const CacheEntry& entry, StoreOutcome* outcome = nullptr);

  CacheStatus list(std::vector<CacheEntry>& out, bool with_json = false);
  // The entry whose exact key starts with `key_prefix` (at least 4 digits; ambiguous: error).
  CacheStatus show(const std::string& key_prefix, std::optional<CacheEntry>& out);
  // Deletes entries older than `older_than_days` (if >= 0), then all but the `keep` newest
  // (if >= 0). *deleted gets the count.
  CacheStatus prune(double older_than_days, long long keep, long long* deleted);

 private:
  CacheStatus fail(const std::string& what) const;
  CacheStatus open(bool create);
  CacheStatus exec(const char* sql);

  std::string path_;
  sqlite3* db_ = nullptr;
  CacheStatus status_;
};

}  // namespace optpipe::cache
