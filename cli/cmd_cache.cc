#include "cli/cmd_cache.h"

#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <spdlog/spdlog.h>

#include "cache/cache_list_json.h"
#include "cache/cache_transfer.h"
#include "cache/schedule_cache.h"
#include "cli/json_output.h"
#include "cli/validators.h"
#include "model/error.h"

namespace optpipe::cli {
namespace {

struct CacheArgs {
  std::string path;            // --cache
  std::string key;             // show
  std::string file;            // export / import
  std::string format;          // export: jsonl or json (default: from the extension)
  std::string list_format = "text";  // list: text or json (docs/json.md)
  double older_than = -1;      // prune: days
  long long keep = -1;         // prune
};

std::string resolved_path(const CacheArgs& a) {
  const std::string p = a.path.empty() ? cache::default_cache_path() : a.path;
  if (p.empty()) throw InputError("no cache file: give --cache PATH (the default cache is off or $HOME is unset)");
  return p;
}

// Opens the cache or throws InputError with the cache's own message.
std::unique_ptr<cache::ScheduleCache> open_cache(const CacheArgs& a, bool create) {
  auto c = std::make_unique<cache::ScheduleCache>(resolved_path(a), create);
  if (!c->ok()) throw InputError(c->status().message);
  return c;
}

void check(const cache::CacheStatus& s) {
  if (!s.ok) throw InputError(s.message);
  if (!s.message.empty()) spdlog::warn("{}", s.message);
}

std::string date(double unix_seconds) {
  const std::time_t t = static_cast<std::time_t>(unix_seconds);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M", &tm);
  return buf;
}

std::string num(double x) {
  if (!std::isfinite(x)) return "-";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.3f", x);
  return buf;
}

void add_path_option(CLI::App* cmd, CacheArgs& a) {
  cmd->add_option("--cache", a.path, "cache file (default: $OPTPIPE_CACHE, else $XDG_CACHE_HOME/optpipe/schedules.sqlite)");
}

void run_list(const CacheArgs& a) {
  const std::string path = resolved_path(a);
  std::error_code ec;
  const bool exists = std::filesystem::exists(path, ec);
  std::vector<cache::CacheEntry> entries;
  if (exists) check(open_cache(a, false)->list(entries));
  if (a.list_format == "json") {
    nlohmann::json doc{{"format", "optpipe-cache-list/1"}};
    doc.update(cache::cache_list_json(path, exists, entries));
    return print_json(doc);
  }
  if (!exists) {
    std::cout << path << ": no cache file yet: 0 entries\n";
    return;
  }
  std::cout << path << ": " << entries.size() << " entr" << (entries.size() == 1 ? "y" : "ies") << "\n";
  if (entries.empty()) return;
  std::printf("%-12s  %-24s %12s %12s  %-9s %8s  %-16s  %s\n", "key", "instance", "makespan", "bound", "status", "seconds",
              "created (UTC)", "solver");
  for (const auto& e : entries) {
    std::printf("%-12s  %-24s %12s %12s  %-9s %8.2f  %-16s  %s\n", e.exact_key.substr(0, 12).c_str(),
                e.instance_name.substr(0, 24).c_str(), num(e.makespan).c_str(), num(e.bound).c_str(), e.status.c_str(),
                e.seconds, date(e.created).c_str(), e.solver_version.c_str());
  }
  std::fflush(stdout);
}

void run_show(const CacheArgs& a) {
  auto c = open_cache(a, false);
  std::optional<cache::CacheEntry> e;
  check(c->show(a.key, e));
  std::cout << "key          " << e->exact_key << "\ncoarse key   " << e->coarse_key << "\ninstance     " << e->instance_name
            << "\nmakespan     " << num(e->makespan) << " ms\nbound        " << num(e->bound) << " ms\nstatus       "
            << e->status << "\nsolver       " << e->solver_version << "\nseconds      " << num(e->seconds)
            << "\ncreated      " << date(e->created) << " UTC\nschedule\n"
            << e->schedule_json << (e->schedule_json.ends_with('\n') ? "" : "\n");
}

void run_prune(const CacheArgs& a) {
  if (a.older_than < 0 && a.keep < 0) throw InputError("cache prune: give --older-than DAYS and/or --keep N");
  auto c = open_cache(a, false);
  long long deleted = 0;
  check(c->prune(a.older_than, a.keep, &deleted));
  std::cout << c->path() << ": removed " << deleted << " entr" << (deleted == 1 ? "y" : "ies") << "\n";
}

void run_export(const CacheArgs& a) {
  bool array = a.format == "json";
  if (a.format.empty()) array = a.file.size() >= 5 && a.file.ends_with(".json");
  auto c = open_cache(a, false);
  long long n = 0;
  check(cache::export_entries(*c, a.file, array, &n));
  if (a.file != "-") {
    std::cout << "wrote " << a.file << ": " << n << " entr" << (n == 1 ? "y" : "ies") << " ("
              << (array ? "JSON array" : "JSON lines") << ")\n";
  }
}

void run_import(const CacheArgs& a) {
  auto c = open_cache(a, true);
  cache::ImportReport r;
  check(cache::import_entries(*c, a.file, &r));
  for (const auto& p : r.problems) spdlog::warn("{}", p);
  std::cout << c->path() << ": imported " << a.file << ": " << r.inserted << " new, " << r.replaced << " replaced, "
            << r.kept << " kept (the cache's were as good), " << r.rejected << " rejected\n";
}

}  // namespace

void add_cache_command(CLI::App& app) {
  auto args = std::make_shared<CacheArgs>();
  auto* cmd = app.add_subcommand("cache", "Look after the schedule cache that `optpipe solve` reads and writes");
  cmd->require_subcommand(1);
  cmd->footer("The cache file is SQLite; several processes may use it at once. See README.md, \"Schedule cache\".");

  auto* list = cmd->add_subcommand("list", "List the cached schedules, newest first");
  add_path_option(list, *args);
  add_format_option(list, args->list_format);
  list->callback([args]() {
    run_list(*args);
    throw CLI::Success();
  });

  auto* show = cmd->add_subcommand("show", "Show one entry and its schedule");
  show->add_option("KEY", args->key, "exact key, or its first digits (at least 4; see cache list)")->required();
  add_path_option(show, *args);
  show->callback([args]() {
    run_show(*args);
    throw CLI::Success();
  });

  auto* prune = cmd->add_subcommand("prune", "Remove old entries");
  prune->add_option("--older-than", args->older_than, "remove entries created more than DAYS days ago")
      ->check(at_least(0));
  prune->add_option("--keep", args->keep, "then keep only the N newest entries")->check(at_least(0));
  add_path_option(prune, *args);
  prune->callback([args]() {
    run_prune(*args);
    throw CLI::Success();
  });

  auto* exp = cmd->add_subcommand("export", "Write every entry to a file (JSON lines, or a JSON array for *.json)");
  exp->add_option("FILE", args->file, "file to write (- for standard output)")->required();
  exp->add_option("--format", args->format, "jsonl (one entry a line) or json (an array); default: from the extension")
      ->check(CLI::IsMember({"jsonl", "json"}));
  add_path_option(exp, *args);
  exp->callback([args]() {
    run_export(*args);
    throw CLI::Success();
  });

  auto* imp = cmd->add_subcommand("import", "Add the entries of an exported file (each is validated; better-only)");
  imp->add_option("FILE", args->file, "file written by cache export (JSON lines or a JSON array)")->required();
  add_path_option(imp, *args);
  imp->callback([args]() {
    run_import(*args);
    throw CLI::Success();
  });
}

}  // namespace optpipe::cli
