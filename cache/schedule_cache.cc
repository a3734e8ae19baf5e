#include "cache/schedule_cache.h"

#include <sqlite3.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <system_error>

#include <nlohmann/json.hpp>

#include "model/instance_io.h"

namespace optpipe::cache {
namespace {

constexpr int kBusyTimeoutMs = 10000;

constexpr const char* kCreateSchema =
    "CREATE TABLE IF NOT EXISTS optpipe_meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);"
    "CREATE TABLE IF NOT EXISTS schedules("
    " id INTEGER PRIMARY KEY,"
    " exact_key TEXT NOT NULL UNIQUE,"
    " coarse_key TEXT NOT NULL,"
    " instance_name TEXT NOT NULL,"
    " instance_json TEXT NOT NULL,"
    " schedule_json TEXT NOT NULL,"
    " makespan REAL NOT NULL,"
    " bound REAL NOT NULL,"
    " status TEXT NOT NULL,"
    " solver_version TEXT NOT NULL,"
    " seconds REAL NOT NULL,"
    " created REAL NOT NULL);"
    "CREATE INDEX IF NOT EXISTS schedules_coarse ON schedules(coarse_key);";

constexpr const char* kColumns =
    "id, exact_key, coarse_key, instance_name, instance_json, schedule_json, makespan, bound, status, "
    "solver_version, seconds, created";
constexpr const char* kColumnsNoJson =
    "id, exact_key, coarse_key, instance_name, '', '', makespan, bound, status, solver_version, seconds, created";

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// A prepared statement that finalizes itself.
class Stmt {
 public:
  Stmt(sqlite3* db, const std::string& sql) { rc_ = sqlite3_prepare_v2(db, sql.c_str(), -1, &st_, nullptr); }
  ~Stmt() { sqlite3_finalize(st_); }
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;
  bool ok() const { return rc_ == SQLITE_OK; }
  sqlite3_stmt* get() const { return st_; }
  void bind(int i, const std::string& s) { sqlite3_bind_text(st_, i, s.c_str(), static_cast<int>(s.size()), SQLITE_TRANSIENT); }
  void bind(int i, double x) { sqlite3_bind_double(st_, i, x); }
  void bind_int(int i, long long x) { sqlite3_bind_int64(st_, i, x); }
  int step() { return sqlite3_step(st_); }
  std::string text(int i) const {
    const unsigned char* t = sqlite3_column_text(st_, i);
    return t ? std::string(reinterpret_cast<const char*>(t), static_cast<std::size_t>(sqlite3_column_bytes(st_, i)))
             : std::string();
  }
  double real(int i) const { return sqlite3_column_double(st_, i); }
  long long integer(int i) const { return sqlite3_column_int64(st_, i); }

 private:
  sqlite3_stmt* st_ = nullptr;
  int rc_ = SQLITE_ERROR;
};

CacheEntry read_entry(const Stmt& st) {
  CacheEntry e;
  e.id = st.integer(0);
  e.exact_key = st.text(1);
  e.coarse_key = st.text(2);
  e.instance_name = st.text(3);
  e.instance_json = st.text(4);
  e.schedule_json = st.text(5);
  e.makespan = st.real(6);
  e.bound = st.real(7);
  e.status = st.text(8);
  e.solver_version = st.text(9);
  e.seconds = st.real(10);
  e.created = st.real(11);
  return e;
}

// Rolls back an open transaction unless committed.
class Transaction {
 public:
  explicit Transaction(sqlite3* db) : db_(db) {}
  ~Transaction() {
    if (open_) sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
  }
  int begin() {
    const int rc = sqlite3_exec(db_, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr);
    open_ = rc == SQLITE_OK;
    return rc;
  }
  int commit() {
    const int rc = sqlite3_exec(db_, "COMMIT", nullptr, nullptr, nullptr);
    if (rc == SQLITE_OK) open_ = false;
    return rc;
  }

 private:
  sqlite3* db_;
  bool open_ = false;
};

bool better(const CacheEntry& a, const CacheEntry& b) {  // is a better than b?
  const double eps = 1e-9 * std::max(1.0, std::abs(b.makespan));
  if (a.makespan < b.makespan - eps) return true;
  if (a.makespan > b.makespan + eps) return false;
  return a.proven_optimal() && !b.proven_optimal();
}

}  // namespace

bool CacheEntry::proven_optimal() const {
  return status == "optimal" || (std::isfinite(makespan) && bound >= makespan - 1e-9 * std::max(1.0, std::abs(makespan)));
}

const char* to_string(StoreOutcome o) {
  switch (o) {
    case StoreOutcome::kInserted: return "stored";
    case StoreOutcome::kReplaced: return "replaced a worse entry";
    case StoreOutcome::kKeptExisting: return "kept the entry already there (as good or better)";
  }
  return "?";
}

std::string default_cache_path() {
  if (const char* env = std::getenv("OPTPIPE_CACHE"); env && *env) {
    const std::string v = env;
    if (v == "off" || v == "0" || v == "none") return {};
    return v;
  }
  std::filesystem::path base;
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg && std::filesystem::path(xdg).is_absolute()) {
    base = xdg;
  } else if (const char* home = std::getenv("HOME"); home && *home) {
    base = std::filesystem::path(home) / ".cache";
  } else {
    return {};
  }
  return (base / "optpipe" / "schedules.sqlite").string();
}

ScheduleCache::ScheduleCache(std::string path, bool create) : path_(std::move(path)) { status_ = open(create); }

ScheduleCache::~ScheduleCache() {
  if (db_) sqlite3_close(db_);
}

CacheStatus ScheduleCache::fail(const std::string& what) const {
  std::string m = path_ + ": " + what;
  if (db_) {
    const int code = sqlite3_extended_errcode(db_);
    if (code != SQLITE_OK) m += std::string(" (") + sqlite3_errmsg(db_) + ")";
  }
  return CacheStatus::error(std::move(m));
}

CacheStatus ScheduleCache::exec(const char* sql) {
  char* err = nullptr;
  const int rc = sqlite3_exec(db_, sql, nullptr, nullptr, &err);
  if (rc == SQLITE_OK) return {};
  std::string m = path_ + ": " + (err ? err : sqlite3_errstr(rc));
  sqlite3_free(err);
  return CacheStatus::error(std::move(m));
}

CacheStatus ScheduleCache::open(bool create) {
  if (path_.empty()) return CacheStatus::error("no cache file (no --cache, $HOME or $XDG_CACHE_HOME)");
  namespace fs = std::filesystem;
  std::error_code ec;
  const bool exists = fs::exists(path_, ec);
  if (!exists && !create) return CacheStatus::error(path_ + ": no such cache file (nothing stored yet)");
  if (exists && fs::is_directory(path_, ec)) return CacheStatus::error(path_ + ": is a directory, not a cache file");
  if (!exists) {
    const fs::path parent = fs::path(path_).parent_path();
    if (!parent.empty()) {
      fs::create_directories(parent, ec);
      if (ec) return CacheStatus::error(path_ + ": cannot create the folder " + parent.string() + ": " + ec.message());
    }
  }
  const int flags = SQLITE_OPEN_READWRITE | (create ? SQLITE_OPEN_CREATE : 0) | SQLITE_OPEN_FULLMUTEX;
  if (sqlite3_open_v2(path_.c_str(), &db_, flags, nullptr) != SQLITE_OK) {
    CacheStatus s = fail("cannot open the cache");
    sqlite3_close(db_);
    db_ = nullptr;
    return s;
  }
  sqlite3_busy_timeout(db_, kBusyTimeoutMs);
  sqlite3_extended_result_codes(db_, 1);

  // What is in the file? (This first read is where a file that is not SQLite shows.)
  bool has_meta = false;
  std::vector<std::string> tables;
  {
    Stmt st(db_, "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name");
    if (!st.ok()) return fail("not a usable SQLite database; the cache is off (delete or move the file to start a new one)");
    int rc;
    while ((rc = st.step()) == SQLITE_ROW) {
      tables.push_back(st.text(0));
      if (tables.back() == "optpipe_meta") has_meta = true;
    }
    if (rc != SQLITE_DONE) return fail("not a usable SQLite database; the cache is off (delete or move the file to start a new one)");
  }
  if (!tables.empty() && !has_meta) {
    std::string names;
    for (std::size_t i = 0; i < tables.size() && i < 5; ++i) names += (i ? ", " : "") + tables[i];
    if (tables.size() > 5) names += ", ...";
    return CacheStatus::error(path_ + ": a SQLite database of something else (tables " + names +
                              ", no optpipe_meta), not an optpipe schedule cache; left untouched, the cache is off");
  }
  if (has_meta) {
    Stmt st(db_, "SELECT key, value FROM optpipe_meta WHERE key IN ('schema', 'version')");
    if (!st.ok()) return fail("cannot read optpipe_meta; the cache is off");
    std::string schema, version;
    while (st.step() == SQLITE_ROW) (st.text(0) == "schema" ? schema : version) = st.text(1);
    if (schema != kSchemaName) {
      return CacheStatus::error(path_ + ": optpipe_meta names schema \"" + schema + "\", not \"" + kSchemaName +
                                "\"; left untouched, the cache is off");
    }
    const int v = std::atoi(version.c_str());
    if (v != kSchemaVersion) {
      return CacheStatus::error(path_ + ": cache schema version " + version + ", this optpipe reads version " +
                                std::to_string(kSchemaVersion) + (v > kSchemaVersion ? " (written by a newer optpipe)" : "") +
                                "; the cache is off");
    }
  }
  // WAL lets readers and one writer work at once; when it cannot be set (e.g. a file system
  // without shared memory) the default rollback journal with the busy timeout is still safe.
  sqlite3_exec(db_, "PRAGMA journal_mode=WAL", nullptr, nullptr, nullptr);
  if (!has_meta) {
    Transaction tx(db_);
    if (tx.begin() != SQLITE_OK) return fail("cannot create the cache schema");
    if (CacheStatus s = exec(kCreateSchema); !s.ok) return s;
    Stmt st(db_, "INSERT OR IGNORE INTO optpipe_meta(key, value) VALUES ('schema', ?1), ('version', ?2)");
    st.bind(1, std::string(kSchemaName));
    st.bind(2, std::to_string(kSchemaVersion));
    if (!st.ok() || st.step() != SQLITE_DONE) return fail("cannot write the cache schema");
    if (tx.commit() != SQLITE_OK) return fail("cannot create the cache schema");
  }
  return {};
}

CacheStatus ScheduleCache::find_exact(const Signature& sig, std::optional<CacheEntry>& out) {
  out.reset();
  if (!ok()) return status_;
  Stmt st(db_, std::string("SELECT ") + kColumns + " FROM schedules WHERE exact_key = ?1");
  if (!st.ok()) return fail("lookup failed");
  st.bind(1, sig.exact_key);
  const int rc = st.step();
  if (rc == SQLITE_ROW) {
    CacheEntry e = read_entry(st);
    // Guard against a hash collision (or a row written by another signature version): the
    // stored instance must have exactly the same canonical text.
    try {
      if (signature(instance_from_json(nlohmann::json::parse(e.instance_json))).exact_text != sig.exact_text) {
        return CacheStatus{true, path_ + ": entry " + e.exact_key + " is for another instance (hash collision); ignored"};
      }
    } catch (const std::exception& ex) {
      return CacheStatus{true, path_ + ": entry " + e.exact_key + " has an unreadable instance (" + ex.what() + "); ignored"};
    }
    out = std::move(e);
  } else if (rc != SQLITE_DONE) {
    return fail("lookup failed");
  }
  return {};
}

CacheStatus ScheduleCache::find_near(const Signature& sig, std::vector<CacheEntry>& out, int limit) {
  out.clear();
  if (!ok()) return status_;
  Stmt st(db_, std::string("SELECT ") + kColumns +
                   " FROM schedules WHERE coarse_key = ?1 AND exact_key != ?2 ORDER BY makespan, created DESC LIMIT ?3");
  if (!st.ok()) return fail("near lookup failed");
  st.bind(1, sig.coarse_key);
  st.bind(2, sig.exact_key);
  st.bind_int(3, limit);
  int rc;
  while ((rc = st.step()) == SQLITE_ROW) out.push_back(read_entry(st));
  if (rc != SQLITE_DONE) return fail("near lookup failed");
  return {};
}

CacheStatus ScheduleCache::store(const CacheEntry& entry, StoreOutcome* outcome) {
  if (!ok()) return status_;
  Transaction tx(db_);
  if (tx.begin() != SQLITE_OK) return fail("cannot store (the cache stayed locked)");
  std::optional<CacheEntry> old;
  {
    Stmt st(db_, std::string("SELECT ") + kColumns + " FROM schedules WHERE exact_key = ?1");
    if (!st.ok()) return fail("cannot store");
    st.bind(1, entry.exact_key);
    const int rc = st.step();
    if (rc == SQLITE_ROW) old = read_entry(st);
    else if (rc != SQLITE_DONE) return fail("cannot store");
  }
  CacheEntry e = entry;
  if (e.created <= 0) e.created = now_seconds();
  StoreOutcome result = StoreOutcome::kInserted;
  if (old) {
    if (better(e, *old)) {
      result = StoreOutcome::kReplaced;
      e.bound = std::max(e.bound, old->bound);
    } else {
      result = StoreOutcome::kKeptExisting;
      e = *old;
      e.bound = std::max(old->bound, entry.bound);
    }
    if (e.status != "optimal" && e.proven_optimal()) e.status = "optimal";
  }
  if (!(old && result == StoreOutcome::kKeptExisting && e.bound == old->bound && e.status == old->status)) {
    Stmt st(db_,
            "INSERT INTO schedules(exact_key, coarse_key, instance_name, instance_json, schedule_json, makespan, bound, "
            "status, solver_version, seconds, created) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11) "
            "ON CONFLICT(exact_key) DO UPDATE SET coarse_key = excluded.coarse_key, instance_name = excluded.instance_name,"
            " instance_json = excluded.instance_json, schedule_json = excluded.schedule_json, makespan = excluded.makespan,"
            " bound = excluded.bound, status = excluded.status, solver_version = excluded.solver_version,"
            " seconds = excluded.seconds, created = excluded.created");
    if (!st.ok()) return fail("cannot store");
    st.bind(1, e.exact_key);
    st.bind(2, e.coarse_key);
    st.bind(3, e.instance_name);
    st.bind(4, e.instance_json);
    st.bind(5, e.schedule_json);
    st.bind(6, e.makespan);
    st.bind(7, e.bound);
    st.bind(8, e.status);
    st.bind(9, e.solver_version);
    st.bind(10, e.seconds);
    st.bind(11, e.created);
    if (st.step() != SQLITE_DONE) return fail("cannot store");
  }
  if (tx.commit() != SQLITE_OK) return fail("cannot store (commit failed)");
  if (outcome) *outcome = result;
  return {};
}

CacheStatus ScheduleCache::list(std::vector<CacheEntry>& out, bool with_json) {
  out.clear();
  if (!ok()) return status_;
  Stmt st(db_, std::string("SELECT ") + (with_json ? kColumns : kColumnsNoJson) + " FROM schedules ORDER BY created DESC, id DESC");
  if (!st.ok()) return fail("cannot list");
  int rc;
  while ((rc = st.step()) == SQLITE_ROW) out.push_back(read_entry(st));
  if (rc != SQLITE_DONE) return fail("cannot list");
  return {};
}

CacheStatus ScheduleCache::show(const std::string& key_prefix, std::optional<CacheEntry>& out) {
  out.reset();
  if (!ok()) return status_;
  if (key_prefix.size() < 4 || key_prefix.find_first_not_of("0123456789abcdef") != std::string::npos) {
    return CacheStatus::error("\"" + key_prefix + "\": give at least 4 lower-case hex digits of an exact key (see `optpipe cache list`)");
  }
  Stmt st(db_, std::string("SELECT ") + kColumns + " FROM schedules WHERE substr(exact_key, 1, ?2) = ?1 LIMIT 2");
  if (!st.ok()) return fail("cannot read");
  st.bind(1, key_prefix);
  st.bind_int(2, static_cast<long long>(key_prefix.size()));
  int rc, rows = 0;
  while ((rc = st.step()) == SQLITE_ROW) {
    if (++rows == 1) out = read_entry(st);
  }
  if (rc != SQLITE_DONE) return fail("cannot read");
  if (rows > 1) {
    out.reset();
    return CacheStatus::error(path_ + ": key prefix " + key_prefix + " is ambiguous; give more digits");
  }
  if (rows == 0) return CacheStatus::error(path_ + ": no entry with key " + key_prefix);
  return {};
}

CacheStatus ScheduleCache::prune(double older_than_days, long long keep, long long* deleted) {
  if (deleted) *deleted = 0;
  if (!ok()) return status_;
  Transaction tx(db_);
  if (tx.begin() != SQLITE_OK) return fail("cannot prune (the cache stayed locked)");
  long long total = 0;
  if (older_than_days >= 0) {
    Stmt st(db_, "DELETE FROM schedules WHERE created < ?1");
    if (!st.ok()) return fail("cannot prune");
    st.bind(1, now_seconds() - older_than_days * 86400.0);
    if (st.step() != SQLITE_DONE) return fail("cannot prune");
    total += sqlite3_changes(db_);
  }
  if (keep >= 0) {
    Stmt st(db_, "DELETE FROM schedules WHERE id NOT IN (SELECT id FROM schedules ORDER BY created DESC, id DESC LIMIT ?1)");
    if (!st.ok()) return fail("cannot prune");
    st.bind_int(1, keep);
    if (st.step() != SQLITE_DONE) return fail("cannot prune");
    total += sqlite3_changes(db_);
  }
  if (tx.commit() != SQLITE_OK) return fail("cannot prune (commit failed)");
  if (deleted) *deleted = total;
  return {};
}

}  // namespace optpipe::cache
