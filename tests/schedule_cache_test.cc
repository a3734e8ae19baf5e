// The schedule cache (cache/, issue 8): signatures, the SQLite store, exact and near hits
// (re-simulated, repaired), bad files that must never make a solve fail, several processes at
// once, and the `optpipe cache` / `optpipe solve --cache` commands end to end.
//
// This file also turns the default cache off for the whole test binary ($OPTPIPE_CACHE=off, set
// before main): other tests run `optpipe solve` and must neither write into the user's cache
// nor get answers from it. Tests here always pass --cache explicitly.
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "cache/cache_lookup.h"
#include "cache/cache_transfer.h"
#include "cache/repair.h"
#include "cache/schedule_cache.h"
#include "cache/signature.h"
#include "model/error.h"
#include "model/instance_io.h"
#include "model/schedule_io.h"
#include "search/solver.h"
#include "model/simulator.h"
#include "model/validator.h"
#include "heuristics/registry.h"
#include "tests/test_paths.h"
#include "tests/test_util.h"

namespace {
[[maybe_unused]] const bool kDefaultCacheOff = [] { return ::setenv("OPTPIPE_CACHE", "off", 1) == 0; }();
}  // namespace

namespace optpipe::cache {
namespace {

using optpipe::test_support::GiB;
using optpipe::test_support::uniform_instance;

std::string temp_path(const std::string& name) {
  const std::string p = optpipe::test_support::temp_file("cache", name);
  std::filesystem::remove(p);
  std::filesystem::remove(p + "-wal");
  std::filesystem::remove(p + "-shm");
  return p;
}

std::string instance_path(const std::string& name) {
  return std::string(OPTPIPE_SOURCE_DIR) + "/instances/" + name + ".json";
}

std::string read_file(const std::string& path) { return optpipe::test_support::read_text(path); }

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }
#define EXPECT_CONTAINS(text, part) EXPECT_TRUE(contains(text, part)) << "\"" << (part) << "\" not in:\n" << (text)

// A schedule of a fixed-pattern heuristic for `inst` (memory limits ignored: just the lists).
Schedule lists_of(const std::string& heuristic, const Instance& inst) {
  const Built b = find_heuristic(heuristic)->build(inst);
  EXPECT_TRUE(b.schedule.has_value()) << b.reason;
  return b.schedule ? *b.schedule : Schedule{};
}

CacheStatus store_schedule(ScheduleCache& c, const Instance& inst, const Schedule& sch, double bound = 0,
                           const std::string& status = "feasible", StoreOutcome* outcome = nullptr) {
  const SimResult sim = simulate(inst, sch);
  EXPECT_TRUE(sim.feasible) << sim.reason;
  return store_result(c, inst, signature(inst), sch, sim.makespan, bound, status, "test", 0.1, outcome);
}

// Instance with offloadable stages whose memory room sits at one place of a byte cell of the
// coarse key (signature.h): room = peak * 2^(shift/32) for the schedule's peak on device 0.
Instance with_room(Instance inst, double peak_bytes, double shift) {
  const double room = peak_bytes * std::exp2(shift / kByteCellsPerOctave);
  for (Device& d : inst.devices) d.memory_limit = d.static_memory + room;
  return inst;
}

// ---- signatures --------------------------------------------------------------------------------

// Costs at cell centres (every op 1 ms = tau; signature.h), so that a 0.5% change stays in its
// cell by design, not by luck.
Instance centred_instance() {
  Instance inst = uniform_instance(4, 8, 1, 1, 1, 0.25, GiB, GiB / 2, 10 * GiB + 8 * GiB);
  for (Device& d : inst.devices) d.static_memory = 10 * GiB;
  for (Stage& s : inst.stages) s.offload = 0.5, s.reload = 0.5;
  inst.name = "centred";
  return inst;
}

TEST(CacheSignature, StableAndQuantised) {
  const Instance a = centred_instance();
  Instance same = centred_instance();
  same.name = "another name";
  const Signature sa = signature(a), ss = signature(same);
  EXPECT_EQ(sa.exact_key, ss.exact_key);
  EXPECT_EQ(sa.coarse_key, ss.coarse_key);
  EXPECT_EQ(sa.exact_key.size(), 32u);
  EXPECT_NE(sa.exact_key, sa.coarse_key);

  Instance nudged = a;  // one cost 0.5% slower
  nudged.stages[1].forward *= 1.005;
  const Signature sn = signature(nudged);
  EXPECT_NE(sn.exact_key, sa.exact_key);
  EXPECT_EQ(sn.coarse_key, sa.coarse_key) << sa.coarse_text << "\n" << sn.coarse_text;

  Instance scaled = a;  // every time x 1.7 (a slower GPU): the same coarse problem
  for (Stage& s : scaled.stages) {
    s.forward *= 1.7, s.backward *= 1.7, s.weight *= 1.7;
    if (s.offload) *s.offload *= 1.7, *s.reload *= 1.7;
  }
  for (double& c : scaled.comm) c *= 1.7;
  EXPECT_NE(signature(scaled).exact_key, sa.exact_key);
  EXPECT_EQ(signature(scaled).coarse_key, sa.coarse_key);

  Instance far = a;  // 20% slower forward: another cell
  far.stages[1].forward *= 1.2;
  EXPECT_NE(signature(far).coarse_key, sa.coarse_key);

  // Another placement: 4 stages on 2 devices as a V and as a loop.
  Instance v = uniform_instance(4, 4, 1, 1, 1);
  v.devices.resize(2);
  const int vd[] = {0, 1, 1, 0}, ld[] = {0, 1, 0, 1};
  Instance loop = v;
  for (int s = 0; s < 4; ++s) v.stages[s].device = vd[s], loop.stages[s].device = ld[s];
  EXPECT_NE(signature(v).coarse_key, signature(loop).coarse_key);
  EXPECT_NE(signature(v).exact_key, signature(loop).exact_key);

  Instance pcie = a;  // relabelled PCIe groups are the same problem
  for (Device& d : pcie.devices) d.pcie_group += 7;
  EXPECT_EQ(signature(pcie).exact_key, sa.exact_key);
}

// ---- the store ---------------------------------------------------------------------------------

TEST(ScheduleCache, StoreAndExactHit) {
  const std::string path = temp_path("exact.sqlite");
  const Instance inst = load_instance(instance_path("tiny-2x3"));
  ScheduleCache c(path);
  ASSERT_TRUE(c.ok()) << c.status().message;
  const Signature sig = signature(inst);

  LookupResult miss = lookup(c, inst, sig);
  EXPECT_EQ(miss.kind, LookupResult::Kind::kMiss);
  EXPECT_FALSE(miss.schedule);

  const Schedule one_f_one_b = lists_of("1f1b", inst);
  StoreOutcome outcome{};
  ASSERT_TRUE(store_schedule(c, inst, one_f_one_b, 0, "feasible", &outcome).ok);
  EXPECT_EQ(outcome, StoreOutcome::kInserted);
  LookupResult hit = lookup(c, inst, sig);
  ASSERT_EQ(hit.kind, LookupResult::Kind::kExact) << hit.message;
  ASSERT_TRUE(hit.schedule);
  EXPECT_FALSE(hit.proven_optimal);
  EXPECT_NEAR(hit.makespan, simulate(inst, one_f_one_b).makespan, 1e-9);

  // The solver's optimum replaces it and is proven; a worse schedule later does not replace it.
  const SolveResult opt = solve(inst, {one_f_one_b});
  ASSERT_EQ(opt.status, SolveResult::Status::kOptimal);
  ASSERT_TRUE(store_result(c, inst, sig, *opt.schedule, opt.makespan, opt.bound, "optimal", "test", 0.5, &outcome).ok);
  EXPECT_EQ(outcome, StoreOutcome::kReplaced);  // faster, or as fast and proven
  ASSERT_TRUE(store_schedule(c, inst, one_f_one_b, 0, "feasible", &outcome).ok);
  EXPECT_EQ(outcome, StoreOutcome::kKeptExisting);
  hit = lookup(c, inst, sig);
  ASSERT_EQ(hit.kind, LookupResult::Kind::kExact);
  EXPECT_TRUE(hit.proven_optimal) << hit.message;
  EXPECT_NEAR(hit.makespan, opt.makespan, 1e-9);
  std::vector<CacheEntry> all;
  ASSERT_TRUE(c.list(all).ok);
  EXPECT_EQ(all.size(), 1u);  // one row per exact key
}

// A hit names the build that stored it; a bound from a build with uncommitted changes (an
// experiment, perhaps) is still used, with a warning that says how to solve without it.
TEST(ScheduleCache, HitNamesItsBuildAndWarnsAboutADirtyOnesBound) {
  const Instance inst = load_instance(instance_path("tiny-2x3"));
  const Signature sig = signature(inst);
  const SolveResult opt = solve(inst, {lists_of("1f1b", inst)});
  ASSERT_EQ(opt.status, SolveResult::Status::kOptimal);
  auto warned = [](const LookupResult& r) {
    return std::any_of(r.warnings.begin(), r.warnings.end(),
                       [](const std::string& w) { return contains(w, "uncommitted changes"); });
  };
  for (const std::string build : {"optpipe 0.1.0 (29313a3)", "optpipe 0.1.0 (29313a3-dirty)"}) {
    const std::string path = temp_path("build.sqlite");
    ScheduleCache c(path);
    ASSERT_TRUE(c.ok()) << c.status().message;
    ASSERT_TRUE(store_result(c, inst, sig, *opt.schedule, opt.makespan, opt.bound, "optimal", build, 0.5).ok);
    const LookupResult hit = lookup(c, inst, sig);
    ASSERT_EQ(hit.kind, LookupResult::Kind::kExact) << hit.message;
    EXPECT_TRUE(hit.proven_optimal) << hit.message;
    EXPECT_CONTAINS(hit.message, "by " + build);
    EXPECT_EQ(warned(hit), contains(build, "-dirty")) << build;
  }
}

TEST(ScheduleCache, NearHitIsResimulatedOnTheNewCosts) {
  const std::string path = temp_path("near.sqlite");
  const Instance a = centred_instance();
  Instance b = a;
  b.name = "centred-nudged";
  b.stages[2].backward *= 1.005;  // 0.5% slower: same coarse key
  ASSERT_EQ(signature(a).coarse_key, signature(b).coarse_key);
  const Schedule s = lists_of("1f1b", a);
  const double on_a = simulate(a, s).makespan, on_b = simulate(b, s).makespan;
  ASSERT_GT(on_b, on_a + 1e-6);  // the change shows in the makespan

  ScheduleCache c(path);
  ASSERT_TRUE(store_schedule(c, a, s).ok);
  const LookupResult hit = lookup(c, b, signature(b));
  ASSERT_EQ(hit.kind, LookupResult::Kind::kNear) << hit.message;
  ASSERT_TRUE(hit.schedule);
  EXPECT_FALSE(hit.proven_optimal);
  EXPECT_FALSE(hit.repaired);
  EXPECT_NEAR(hit.makespan, on_b, 1e-9);  // the new instance's makespan, not the cached one
  EXPECT_EQ(hit.schedule->instance, b.name);
  EXPECT_TRUE(validate(b, *hit.schedule).valid());
  EXPECT_CONTAINS(hit.message, "near hit");
}

// A near hit whose memory no longer fits: repaired by offloading when stages can offload,
// rejected (a miss) when they cannot.
TEST(ScheduleCache, NearHitThatNoLongerFitsIsRepairedOrRejected) {
  for (const bool offloadable : {true, false}) {
    SCOPED_TRACE(offloadable ? "offloadable" : "not offloadable");
    Instance base = uniform_instance(4, 8, 1, 1, 1, 0.05, GiB, GiB / 2);
    for (Device& d : base.devices) d.static_memory = 10 * GiB;
    if (offloadable) {
      for (Stage& s : base.stages) s.offload = 0.3, s.reload = 0.3;
    }
    const Schedule s = lists_of("1f1b", base);
    SimOptions unlimited;
    unlimited.enforce_memory_limit = false;
    const double peak = simulate(base, s, unlimited).peak_memory[0] - base.devices[0].static_memory;
    // Put the peak strictly inside one byte cell: A a little above it, B a little below.
    const double x = kByteCellsPerOctave * std::log2(base.stages[0].activation / peak);
    const double cell = std::nearbyint(x);
    const double lower = (x - (cell - 0.5)) / 2, upper = ((cell + 0.5) - x) / 2;
    Instance a = with_room(base, peak, lower);   // room above the peak: fits
    Instance b = with_room(base, peak, -upper);  // room below the peak: does not
    a.name = "roomy", b.name = "tight";
    ASSERT_EQ(signature(a).coarse_key, signature(b).coarse_key) << signature(a).coarse_text << "\n" << signature(b).coarse_text;
    ASSERT_TRUE(simulate(a, s).feasible);
    ASSERT_FALSE(simulate(b, s).feasible);

    ScheduleCache c(temp_path("repair.sqlite"));
    ASSERT_TRUE(store_schedule(c, a, s).ok);
    const LookupResult hit = lookup(c, b, signature(b));
    if (offloadable) {
      ASSERT_EQ(hit.kind, LookupResult::Kind::kNear) << hit.message;
      EXPECT_TRUE(hit.repaired);
      ASSERT_TRUE(hit.schedule);
      EXPECT_TRUE(hit.schedule->has_offload());
      const Validation v = validate(b, *hit.schedule);
      ASSERT_TRUE(v.valid() && v.sim && v.sim->feasible);
      EXPECT_NEAR(v.sim->makespan, hit.makespan, 1e-9);
      EXPECT_CONTAINS(hit.message, "repaired");
    } else {
      EXPECT_EQ(hit.kind, LookupResult::Kind::kMiss) << hit.message;
      EXPECT_FALSE(hit.schedule);
      EXPECT_CONTAINS(hit.message, "rejected");
    }
  }
}

// The repair on its own: a schedule that fits is left alone.
TEST(ScheduleCache, FitKeepsASchedulethatFits) {
  const Instance inst = load_instance(instance_path("tiny-2x3"));
  const Schedule s = lists_of("1f1b", inst);
  const Fitted f = fit_schedule(inst, s);
  ASSERT_TRUE(f.schedule);
  EXPECT_FALSE(f.repaired);
  EXPECT_EQ(f.schedule->devices, s.devices);
  EXPECT_NEAR(f.makespan, simulate(inst, s).makespan, 1e-12);
}

// ---- bad files: a clear message, never a failure -------------------------------------------------

void write_garbage(const std::string& path) {
  std::ofstream out(path, std::ios::binary);
  for (int i = 0; i < 4096; ++i) out.put(static_cast<char>((i * 7919 + 13) & 0xff));
}

void write_foreign_db(const std::string& path) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "CREATE TABLE users(id INTEGER PRIMARY KEY, name TEXT); INSERT INTO users(name) VALUES ('ada');",
                         nullptr, nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(db);
}

TEST(ScheduleCache, CorruptedFileGivesAClearMessageAndTheLookupGoesOn) {
  const std::string path = temp_path("garbage.sqlite");
  write_garbage(path);
  const std::string before = read_file(path);
  const Instance inst = load_instance(instance_path("tiny-2x3"));
  ScheduleCache c(path);
  EXPECT_FALSE(c.ok());
  EXPECT_CONTAINS(c.status().message, path);
  EXPECT_CONTAINS(c.status().message, "not a usable SQLite database");
  const LookupResult r = lookup(c, inst, signature(inst));  // what cmd_solve calls
  EXPECT_EQ(r.kind, LookupResult::Kind::kUnavailable);
  ASSERT_EQ(r.warnings.size(), 1u);
  EXPECT_CONTAINS(r.warnings[0], path);
  const CacheStatus st = store_schedule(c, inst, lists_of("1f1b", inst));
  EXPECT_FALSE(st.ok);
  EXPECT_EQ(read_file(path), before);  // left as it was
}

TEST(ScheduleCache, ForeignDatabaseIsLeftUntouched) {
  const std::string path = temp_path("foreign.sqlite");
  write_foreign_db(path);
  const Instance inst = load_instance(instance_path("tiny-2x3"));
  {
    ScheduleCache c(path);
    EXPECT_FALSE(c.ok());
    EXPECT_CONTAINS(c.status().message, path);
    EXPECT_CONTAINS(c.status().message, "tables users");
    EXPECT_CONTAINS(c.status().message, "not an optpipe schedule cache");
    EXPECT_EQ(lookup(c, inst, signature(inst)).kind, LookupResult::Kind::kUnavailable);
    EXPECT_FALSE(store_schedule(c, inst, lists_of("1f1b", inst)).ok);
  }
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  int tables = -1;
  sqlite3_exec(
      db, "SELECT count(*) FROM sqlite_master WHERE type = 'table'",
      [](void* out, int, char** v, char**) { *static_cast<int*>(out) = std::atoi(v[0]); return 0; }, &tables, nullptr);
  sqlite3_close(db);
  EXPECT_EQ(tables, 1);  // only users: no schema was added
}

TEST(ScheduleCache, NewerSchemaVersionIsRefused) {
  const std::string path = temp_path("newer.sqlite");
  { ScheduleCache c(path); ASSERT_TRUE(c.ok()) << c.status().message; }
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "UPDATE optpipe_meta SET value = '99' WHERE key = 'version'", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(db);
  ScheduleCache c(path);
  EXPECT_FALSE(c.ok());
  EXPECT_CONTAINS(c.status().message, "schema version 99");
}

// ---- several processes -----------------------------------------------------------------------

TEST(ScheduleCache, TwoProcessesWritingAtOnce) {
  const std::string path = temp_path("shared.sqlite");
  { ScheduleCache c(path); ASSERT_TRUE(c.ok()); }
  // Entries prepared before the fork (the children only talk to SQLite): 40 distinct keys per
  // child, plus one key both write with different makespans.
  const Instance inst = load_instance(instance_path("tiny-2x3"));
  auto entry = [&](const std::string& key, double makespan) {
    CacheEntry e;
    e.exact_key = key;
    e.coarse_key = "c";
    e.instance_name = inst.name;
    e.instance_json = instance_to_json(inst).dump();
    e.schedule_json = schedule_to_text(lists_of("1f1b", inst));
    e.makespan = makespan;
    e.status = "feasible";
    e.solver_version = "test";
    return e;
  };
  std::vector<std::vector<CacheEntry>> work(2);
  for (int child = 0; child < 2; ++child) {
    for (int i = 0; i < 40; ++i) {
      work[child].push_back(entry("k" + std::to_string(child) + "-" + std::to_string(i), 10 + i));
      work[child].push_back(entry("shared", child == 0 ? 20.0 - i * 0.1 : 19.0 - i * 0.1));
    }
  }
  pid_t pids[2];
  for (int child = 0; child < 2; ++child) {
    pids[child] = ::fork();
    ASSERT_GE(pids[child], 0);
    if (pids[child] == 0) {
      ScheduleCache c(path);
      int failures = c.ok() ? 0 : 1;
      for (const CacheEntry& e : work[child]) failures += c.store(e).ok ? 0 : 1;
      ::_exit(failures == 0 ? 0 : 1);
    }
  }
  for (pid_t pid : pids) {
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "a writer failed";
  }
  ScheduleCache c(path);
  ASSERT_TRUE(c.ok()) << c.status().message;
  std::vector<CacheEntry> all;
  ASSERT_TRUE(c.list(all).ok);
  EXPECT_EQ(all.size(), 81u);
  double shared = -1;
  for (const auto& e : all) {
    if (e.exact_key == "shared") shared = e.makespan;
  }
  EXPECT_NEAR(shared, 19.0 - 39 * 0.1, 1e-9);  // the best of both
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  std::string check;
  sqlite3_exec(
      db, "PRAGMA integrity_check",
      [](void* out, int, char** v, char**) { *static_cast<std::string*>(out) += v[0]; return 0; }, &check, nullptr);
  sqlite3_close(db);
  EXPECT_EQ(check, "ok");
}

// ---- the command line ----------------------------------------------------------------------------

constexpr const char* kCli = optpipe::test_support::kCliPath;
#define REQUIRE_CLI() OPTPIPE_REQUIRE_CLI()

std::string quote(const std::string& s) { return optpipe::test_support::shell_quote(s); }

using CliRun = optpipe::test_support::ShellRun;

CliRun run_cli(const std::string& args) { return optpipe::test_support::run_shell(quote(kCli) + " " + args); }

// The import's reader (read_entries, issue 20): every rejected entry is named by its line (or
// its index in an array) and the field path of its problem; unknown fields, duplicate keys and
// numbers beyond a double are problems like in the instance and schedule readers (the last was
// a crash of the JSON library under the fuzzer: tests/fuzz/corpus/cache_import/finding-*).
TEST(CacheImport, ReadEntriesNamesTheLineAndFieldOfEachProblem) {
  const std::string inst = R"({"format": "optpipe-instance/1", "microbatches": 1, "devices": [{"memory_limit": 10}], )"
                           R"("stages": [{"device": 0, "forward": 1, "backward": 1, "weight": 1, "activation": 1}]})";
  const std::string sch = R"({"format": "optpipe-schedule/1", "instance": "", "devices": [["F0.0", "B0.0", "W0.0"]]})";
  auto entry = [&](const std::string& extra, const std::string& instance, const std::string& schedule) {
    std::string text = R"({"format": "optpipe-cache-entry/1", "instance": )" + instance + R"(, "schedule": )" + schedule;
    return (extra.empty() ? text : text + ", " + extra) + "}";
  };
  std::string bad_instance = inst;
  bad_instance.replace(bad_instance.find("\"forward\": 1"), 12, "\"forward\": -1");
  const std::vector<std::pair<std::string, std::string>> cases = {
      {entry(R"("bound": 2.5, "status": "optimal", "makespan": 3)", inst, sch), ""},
      {entry(R"("colour": 1)", inst, sch), "line 2: colour: unknown field"},
      {entry("", bad_instance, sch), "line 3: instance.stages[0].forward: must be >= 0"},
      {entry("", inst, "[]"), "line 4: schedule: must be an object"},
      {entry(R"("bound": "3")", inst, sch), "line 5: bound: must be a number"},
      {entry(R"("status": "infeasible")", inst, sch), "line 6: status: must be \"optimal\" or \"feasible\""},
      {entry(R"("makespan": 1, "makespan": 2)", inst, sch), "line 7: makespan: duplicate key"},
      {entry(R"("created": 1e400)", inst, sch), "line 8: created: the number '1e400' is out of range"},
      {"[1, 2]", "line 9: must be an object (an optpipe-cache-entry/1 entry), got an array"},
      {R"({"format": "optpipe-cache-entry/2"})", "line 10: format: must be \"optpipe-cache-entry/1\""},
      {entry("", inst, R"({"format": "optpipe-schedule/1", "instance": "", "devices": [["B0.0", "F0.0", "W0.0"]]})"),
       "line 11: schedule: invalid on its instance"},
      {entry(R"("seconds": -1)", inst, sch), "line 12: seconds: must be >= 0"},
      {"{\"format\": ", "line 13: not JSON: parse error"},
  };
  std::string text;
  for (const auto& [line, problem] : cases) text += line + "\n";
  ImportReport report;
  const std::vector<CacheEntry> entries = read_entries(text, "f.jsonl", &report);
  ASSERT_EQ(entries.size(), 1u);
  EXPECT_EQ(entries[0].makespan, 3.0);
  EXPECT_EQ(entries[0].bound, 2.5);
  EXPECT_EQ(entries[0].status, "optimal");
  EXPECT_EQ(report.rejected, static_cast<long long>(cases.size()) - 1);
  ASSERT_EQ(report.problems.size(), cases.size() - 1);
  for (std::size_t i = 1; i < cases.size(); ++i) {
    EXPECT_EQ(report.problems[i - 1].rfind("f.jsonl: " + cases[i].second, 0), 0u) << report.problems[i - 1];
  }

  // The array form names entries by their index; a '[' text that is not an array is refused whole.
  ImportReport array_report;
  EXPECT_EQ(read_entries("[" + entry("", inst, sch) + ", 7]", "f.json", &array_report).size(), 1u);
  ASSERT_EQ(array_report.problems.size(), 1u);
  EXPECT_EQ(array_report.problems[0].rfind("f.json: entry 2: must be an object", 0), 0u) << array_report.problems[0];
  try {
    read_entries("[1e400]", "f.json", nullptr);
    ADD_FAILURE() << "read_entries accepted [1e400]";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("f.json: not a JSON array of cache entries: [0]: the number", 0), 0u) << e.what();
  }
}

// Issue 20's fuzzing: an entry of a few KB whose instance has 1e6 microbatches made the import
// allocate gigabytes (the validator's table of every op) before rejecting its one-action
// schedule. Now the instance reader refuses more than 1e7 stage-microbatches and the validator
// names a schedule too short for a large instance by its counts, without the table.
TEST(CacheImport, AHugeInstanceWithAShortScheduleIsRejectedWithoutAllocatingPerOp) {
  const std::string text =
      optpipe::test_support::read_text(std::string(OPTPIPE_SOURCE_DIR) + "/tests/fuzz/corpus/cache_import/finding-allocation-bomb.jsonl");
  ImportReport report;
  EXPECT_TRUE(read_entries(text, "bomb.jsonl", &report).empty());
  ASSERT_EQ(report.problems.size(), 2u);
  EXPECT_EQ(report.problems[0].rfind("bomb.jsonl: line 1: instance.microbatches: 1000000 microbatches x 100 stages is more than", 0), 0u)
      << report.problems[0];
  EXPECT_EQ(report.problems[1].rfind("bomb.jsonl: line 2: schedule: invalid on its instance: the schedule has 1 action, but "
                                     "the instance needs 30000000 compute ops", 0), 0u)
      << report.problems[1];
}

TEST(CacheCli, BadCacheFilesNeverFailASolve) {
  REQUIRE_CLI();
  const std::string garbage = temp_path("garbage.sqlite"), foreign = temp_path("foreign.sqlite");
  write_garbage(garbage);
  write_foreign_db(foreign);
  for (const std::string& bad : {garbage, foreign}) {
    const CliRun r = run_cli("solve " + quote(instance_path("tiny-2x3")) + " --cache " + quote(bad) + " --time-limit 2");
    EXPECT_EQ(r.status, 0) << r.output;
    EXPECT_CONTAINS(r.output, "optpipe: warning: cache: " + bad);
    EXPECT_CONTAINS(r.output, "cache: off for this run");
    EXPECT_CONTAINS(r.output, "status optimal");
  }
  // `optpipe cache list` on them is an error that names the file (exit 2).
  const CliRun l = run_cli("cache list --cache " + quote(garbage));
  EXPECT_EQ(l.status, 2) << l.output;
  EXPECT_CONTAINS(l.output, garbage);
}

TEST(CacheCli, ExactProvenOptimalHitAnswersWithoutSearching) {
  REQUIRE_CLI();
  const std::string db = temp_path("solve.sqlite"), out1 = temp_path("s1.json"), out2 = temp_path("s2.json");
  const std::string inst = quote(instance_path("tiny-2x3"));
  const CliRun first = run_cli("solve " + inst + " --cache " + quote(db) + " --time-limit 10 -o " + quote(out1));
  ASSERT_EQ(first.status, 0) << first.output;
  EXPECT_CONTAINS(first.output, "cache: miss; file " + db);
  EXPECT_CONTAINS(first.output, "status optimal");
  const CliRun second = run_cli("solve " + inst + " --cache " + quote(db) + " --time-limit 10 -o " + quote(out2));
  ASSERT_EQ(second.status, 0) << second.output;
  EXPECT_CONTAINS(second.output, "cache: exact hit, proven optimal");
  EXPECT_CONTAINS(second.output, "search: none (answered from the cache");
  // The entry records the build that stored it, as `optpipe --version` names it.
  const CliRun version = run_cli("--version");
  ASSERT_EQ(version.status, 0) << version.output;
  const std::string build = version.output.substr(0, version.output.find('\n'));
  EXPECT_TRUE(build.starts_with("optpipe ") && build.find(" (") != std::string::npos && build.ends_with(")")) << build;
  EXPECT_CONTAINS(second.output, "by " + build + ")");
  EXPECT_CONTAINS(run_cli("cache list --cache " + quote(db)).output, build);
  EXPECT_FALSE(contains(second.output, "nodes/s")) << second.output;  // no search ran
  const Schedule a = load_schedule(out1), b = load_schedule(out2);
  EXPECT_EQ(b.status, "optimal");
  ASSERT_TRUE(a.makespan && b.makespan);
  EXPECT_NEAR(*a.makespan, *b.makespan, 1e-9);
  // JSON log: a cache event, and done with from_cache.
  const CliRun json = run_cli("solve " + inst + " --cache " + quote(db) + " --log-format json");
  ASSERT_EQ(json.status, 0) << json.output;
  EXPECT_CONTAINS(json.output, "\"event\":\"cache\"");
  EXPECT_CONTAINS(json.output, "\"from_cache\":true");
  // --no-cache solves again.
  const CliRun none = run_cli("solve " + inst + " --cache " + quote(db) + " --no-cache --time-limit 10");
  ASSERT_EQ(none.status, 0) << none.output;
  EXPECT_FALSE(contains(none.output, "cache:")) << none.output;
  EXPECT_CONTAINS(none.output, "nodes/s");
}

// A feasible (unproven) exact hit gives the next run its bound: runs on one instance add up.
TEST(CacheCli, ExactHitCarriesItsBoundToTheNextRun) {
  REQUIRE_CLI();
  const std::string db = temp_path("bound.sqlite");
  const std::string inst = quote(instance_path("offload-slow-pcie-4x8"));
  auto done = [](const CliRun& r) {  // the "done" event of a JSON log
    std::istringstream lines(r.output);
    for (std::string line; std::getline(lines, line);) {
      const nlohmann::json ev = nlohmann::json::parse(line, nullptr, false);
      if (ev.is_object() && ev.value("event", "") == "done") return ev;
    }
    ADD_FAILURE() << "no done event in:\n" << r.output;
    return nlohmann::json::object();
  };
  // The first run has the time to raise its root bound with the single-stage relaxation
  // (bounds/single_stage_relaxation.h: 5% of the time limit, at most 2 s; about 0.3 s
  // here) to the optimum, 341.92, but without a local search its incumbent stays at zb-greedy's
  // 343.70, so it stops after one node without a proof.
  const CliRun first = run_cli("solve " + inst + " --cache " + quote(db) +
                               " --threads 1 --node-limit 1 --time-limit 60 --local-search 0 --log-format json");
  ASSERT_EQ(first.status, 0) << first.output;
  const nlohmann::json a = done(first);
  ASSERT_EQ(a.value("status", ""), "feasible") << first.output;
  const double first_bound = a.value("bound", 0.0);
  // The second has no time for it (its root bound is the cheap bounds' alone): the bound it
  // reports can only come from the cache.
  const CliRun second = run_cli("solve " + inst + " --cache " + quote(db) + " --time-limit 0.05 --log-format json");
  ASSERT_EQ(second.status, 0) << second.output;
  EXPECT_CONTAINS(second.output, "a proven bound");
  const nlohmann::json b = done(second);
  ASSERT_LT(b.value("root_bound", 0.0), first_bound) << second.output;
  EXPECT_NEAR(b.value("bound", 0.0), first_bound, 1e-9) << second.output;
}

TEST(CacheCli, TwoSolvesAtOnceShareOneFile) {
  REQUIRE_CLI();
  const std::string db = temp_path("concurrent.sqlite");
  const std::string a = quote(kCli) + " solve " + quote(instance_path("tiny-2x3")) + " --cache " + quote(db) +
                        " --time-limit 3 -q --threads 1 > /dev/null 2>&1";
  const std::string b = quote(kCli) + " solve " + quote(instance_path("uniform-4x8")) + " --cache " + quote(db) +
                        " --time-limit 3 -q --threads 1 > /dev/null 2>&1";
  const int rc = std::system(("(" + a + ") & (" + b + ") & wait").c_str());
  ASSERT_EQ(rc, 0);
  const CliRun l = run_cli("cache list --cache " + quote(db));
  ASSERT_EQ(l.status, 0) << l.output;
  EXPECT_CONTAINS(l.output, ": 2 entries");
  EXPECT_CONTAINS(l.output, "tiny-2x3");
  EXPECT_CONTAINS(l.output, "uniform-4x8");
  ScheduleCache c(db);
  ASSERT_TRUE(c.ok()) << c.status().message;
}

TEST(CacheCli, ListShowPruneExportImportRoundTrip) {
  REQUIRE_CLI();
  const std::string db = temp_path("a.sqlite"), db2 = temp_path("b.sqlite"), jsonl = temp_path("e.jsonl"),
                    json = temp_path("e.json");
  ASSERT_EQ(run_cli("solve " + quote(instance_path("tiny-2x3")) + " --cache " + quote(db) + " -q --time-limit 5").status, 0);
  const Instance inst = load_instance(instance_path("tiny-2x3"));
  const std::string key = signature(inst).exact_key;

  const CliRun list = run_cli("cache list --cache " + quote(db));
  ASSERT_EQ(list.status, 0) << list.output;
  EXPECT_CONTAINS(list.output, ": 1 entry");
  EXPECT_CONTAINS(list.output, key.substr(0, 12));
  EXPECT_CONTAINS(list.output, "optimal");

  const CliRun show = run_cli("cache show " + key.substr(0, 8) + " --cache " + quote(db));
  ASSERT_EQ(show.status, 0) << show.output;
  EXPECT_CONTAINS(show.output, "key          " + key);
  EXPECT_CONTAINS(show.output, "optpipe-schedule/1");
  EXPECT_EQ(run_cli("cache show ffffffff --cache " + quote(db)).status, 2);

  const CliRun ex1 = run_cli("cache export " + quote(jsonl) + " --cache " + quote(db));
  ASSERT_EQ(ex1.status, 0) << ex1.output;
  EXPECT_CONTAINS(ex1.output, "1 entry (JSON lines)");
  const CliRun ex2 = run_cli("cache export " + quote(json) + " --cache " + quote(db));
  ASSERT_EQ(ex2.status, 0) << ex2.output;
  EXPECT_CONTAINS(ex2.output, "JSON array");
  EXPECT_TRUE(nlohmann::json::parse(read_file(json)).is_array());

  const CliRun im1 = run_cli("cache import " + quote(jsonl) + " --cache " + quote(db2));
  ASSERT_EQ(im1.status, 0) << im1.output;
  EXPECT_CONTAINS(im1.output, "1 new, 0 replaced, 0 kept");
  const CliRun im2 = run_cli("cache import " + quote(json) + " --cache " + quote(db2));
  ASSERT_EQ(im2.status, 0) << im2.output;
  EXPECT_CONTAINS(im2.output, "0 new, 0 replaced, 1 kept");
  // The imported entry answers a solve at once.
  const CliRun hit = run_cli("solve " + quote(instance_path("tiny-2x3")) + " --cache " + quote(db2));
  EXPECT_CONTAINS(hit.output, "cache: exact hit, proven optimal");

  // A tampered entry is rejected with a reason, the rest of the file still imports.
  std::ofstream(jsonl, std::ios::app) << "{\"format\": \"something else\"}\nnot json\n";
  const CliRun im3 = run_cli("cache import " + quote(jsonl) + " --cache " + quote(db2));
  ASSERT_EQ(im3.status, 0) << im3.output;
  EXPECT_CONTAINS(im3.output, "2 rejected");
  EXPECT_CONTAINS(im3.output, "line 3: not JSON");

  const CliRun prune_old = run_cli("cache prune --older-than 1 --cache " + quote(db2));
  ASSERT_EQ(prune_old.status, 0) << prune_old.output;
  EXPECT_CONTAINS(prune_old.output, "removed 0 entries");
  const CliRun prune = run_cli("cache prune --keep 0 --cache " + quote(db2));
  ASSERT_EQ(prune.status, 0) << prune.output;
  EXPECT_CONTAINS(prune.output, "removed 1 entry");
  EXPECT_CONTAINS(run_cli("cache list --cache " + quote(db2)).output, ": 0 entries");
  EXPECT_EQ(run_cli("cache prune --cache " + quote(db2)).status, 2);  // says what to give
}

// Eight `optpipe solve` processes at once, each on its own instance, all into one cache file:
// every result is stored (eight entries), and the file is intact.
TEST(CacheCli, EightSolvesIntoOneFileAtOnceLoseNothing) {
  REQUIRE_CLI();
  const std::string db = temp_path("eight.sqlite");
  std::string command = "(";
  for (int i = 0; i < 8; ++i) {
    Instance inst = test_support::uniform_instance(2, 3 + i % 3, 1.0 + 0.1 * i, 2, 1);
    inst.name = "eight-" + std::to_string(i);
    const std::string file = temp_path("eight-" + std::to_string(i) + ".json");
    save_instance(inst, file);
    command += quote(kCli) + " solve " + quote(file) + " --cache " + quote(db) + " --time-limit 20 -q > /dev/null 2>&1 & ";
  }
  command += "wait)";
  test_support::run_shell(command);
  const CliRun list = run_cli("cache list --cache " + quote(db));
  ASSERT_EQ(list.status, 0) << list.output;
  for (int i = 0; i < 8; ++i) EXPECT_CONTAINS(list.output, "eight-" + std::to_string(i));
  ScheduleCache c(db);
  ASSERT_TRUE(c.ok()) << c.status().message;
  std::vector<CacheEntry> all;
  ASSERT_TRUE(c.list(all).ok);
  EXPECT_EQ(all.size(), 8u);
  sqlite3* h = nullptr;
  ASSERT_EQ(sqlite3_open(db.c_str(), &h), SQLITE_OK);
  std::string check;
  sqlite3_exec(
      h, "PRAGMA integrity_check",
      [](void* out, int, char** v, char**) { *static_cast<std::string*>(out) += v[0]; return 0; }, &check, nullptr);
  sqlite3_close(h);
  EXPECT_EQ(check, "ok");
}

}  // namespace
}  // namespace optpipe::cache
