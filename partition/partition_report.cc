#include "partition/partition_report.h"

#include <cmath>
#include <cstdio>
#include <sstream>

#include "model/bytes.h"
#include "instances/generator/generate.h"
#include "partition/reference_splits.h"

namespace optpipe::partition {
namespace {

std::string fixed(double v, int decimals = 3) {
  if (!std::isfinite(v)) return "-";
  char b[48];
  std::snprintf(b, sizeof b, "%.*f", decimals, v);
  return b;
}

// "12.3% below the <what> (3,3,3,3: 213.204 ms)", or "the <what> is the best" where `best` is no
// faster than `base`, the solved baseline.
std::string versus(const Trial& base, const Trial& best, const std::string& what) {
  if (&best == &base || best.makespan >= base.makespan) return "the " + what + " is the best";
  char b[240];
  std::snprintf(b, sizeof b, "%.1f%% below the %s (%s: %s ms)", 100.0 * (base.makespan - best.makespan) / base.makespan,
                what.c_str(), split_text(base.split).c_str(), fixed(base.makespan).c_str());
  return b;
}

// Which split a baseline is: "default" or "uniform".
std::string baseline_name(const Trial& base) { return base.has_role("default") ? "default" : "uniform"; }

std::string relative(const Trial& t, const Trial* base) {
  if (!base || !base->solved || !t.solved || !std::isfinite(t.makespan) || !std::isfinite(base->makespan)) return "-";
  char b[32];
  std::snprintf(b, sizeof b, "%+.1f%%", 100.0 * (t.makespan - base->makespan) / base->makespan);
  return b;
}

// The line without trailing blanks, with its newline.
std::string line_of(std::string text) {
  while (!text.empty() && (text.back() == ' ' || text.back() == '\n')) text.pop_back();
  return text + "\n";
}

std::string roles_text(const Trial& t) {
  std::string out;
  for (const auto& r : t.roles) out += (out.empty() ? "" : ", ") + r;
  return out;
}

std::string row(const Trial& t, const Trial* base, std::size_t split_width) {
  char line[512];
  const std::string floor = format_bytes(t.floor.bytes) + (t.fits() ? "" : " (over)");
  std::snprintf(line, sizeof line, "%s %-*s %12s %16s %12s %12s %12s %-9s %8s  %s\n", t.has_role("best") ? "*" : " ",
                static_cast<int>(split_width), split_text(t.split).c_str(), fixed(t.bound.value).c_str(), floor.c_str(),
                t.heuristic ? fixed(*t.heuristic).c_str() : "-", t.solved ? fixed(t.makespan).c_str() : "-",
                t.solved ? fixed(t.solved_bound).c_str() : "-", t.solved ? t.status.c_str() : "-",
                relative(t, base).c_str(), (roles_text(t) + (t.solved ? "" : (t.roles.empty() ? "" : "; ") + t.note)).c_str());
  return line_of(line);
}

std::string mode_line(const PartitionResult& r) {
  std::ostringstream o;
  int solved = 0;
  for (const Trial& t : r.trials) solved += t.solved ? 1 : 0;
  if (r.mode == "exhaustive") {
    o << "exhaustive: " << r.candidates << " splits fit the memory limit; " << solved << " solved, " << r.pruned
      << " cut by their bound";
    o << (r.proven ? "; proven: no other split can beat the best one's schedule (their bounds reach its makespan)"
                   : "; not proven: some split's bound is below the best makespan (a solve stopped early)");
  } else {
    o << "local: " << (r.enumeration_complete ? "" : "at least ") << r.candidates
      << " splits fit the memory limit; " << r.trials.size() << " built, " << solved << " solved";
    if (r.proven) o << "; proven: every other split's bound reaches the best makespan";
  }
  o << ", " << fixed(r.seconds, 1) << " s\n";
  return o.str();
}

}  // namespace

std::string versus_default(const PartitionResult& r) {
  const Trial* base = r.baseline();
  const Trial* best = r.best_trial();
  if (!base || !best || !base->solved) return "";
  return versus(*base, *best, baseline_name(*base) + " split");
}

std::string partition_table_text(const PartitionModel& model, const PartitionResult& r) {
  std::ostringstream o;
  o << model.description() << "\n" << mode_line(r) << "\n";
  const Trial* base = r.baseline();
  std::size_t width = 5;
  for (const Trial& t : r.trials) width = std::max(width, split_text(t.split).size());
  char head[512];
  std::snprintf(head, sizeof head, "  %-*s %12s %16s %12s %12s %12s %-9s %8s  %s\n", static_cast<int>(width), "split",
                "cheap bound", "memory floor", "heuristic", "makespan", "bound", "status",
                base && base->has_role("default") ? "vs dflt" : "vs unif", "");
  o << line_of(head);
  int more = 0, screened = 0, over = 0;
  for (const Trial& t : r.trials) {
    if (t.solved || !t.roles.empty()) {
      o << row(t, base, width);
    } else {
      ++more;
      screened += t.heuristic ? 1 : 0;
      over += t.fits() ? 0 : 1;
    }
  }
  if (more > 0) {
    o << "  (" << more << " more split" << (more == 1 ? "" : "s") << " built and not solved: " << screened
      << " screened by heuristics, " << over << " over the memory limit, the rest cut by their bound or not reached; "
      << "--format json lists them)\n";
  }
  o << "times in ms; memory floor: the tightest device's (static + the activations it must hold)\n";
  if (r.best >= 0) {
    const Trial& b = r.trials[r.best];
    o << "\nbest split " << split_text(b.split) << ": makespan " << fixed(b.makespan) << " ms, bound "
      << fixed(b.solved_bound) << " ms (" << b.status << ")";
    const std::string vs = versus_default(r);
    if (!vs.empty()) o << "; " << vs;
    o << "\n";
  }
  return o.str();
}

namespace {

nlohmann::ordered_json number_or_null(double v) {
  return std::isfinite(v) ? nlohmann::ordered_json(v) : nlohmann::ordered_json(nullptr);
}

nlohmann::ordered_json trial_json(const Trial& t) {
  nlohmann::ordered_json j;
  j["split"] = t.split;
  j["roles"] = t.roles;
  j["cheap_bound"] = t.bound.value;
  j["bound_device"] = t.bound.device;
  j["memory_floor"] = t.floor.bytes;
  j["floor_device"] = t.floor.device;
  j["fits"] = t.fits();
  j["heuristic"] = t.heuristic ? number_or_null(*t.heuristic) : nullptr;
  if (t.heuristic) j["heuristic_name"] = t.heuristic_name;
  j["solved"] = t.solved;
  j["makespan"] = t.solved ? number_or_null(t.makespan) : nullptr;
  j["bound"] = t.solved ? nlohmann::ordered_json(t.solved_bound) : nullptr;
  j["status"] = t.solved ? nlohmann::ordered_json(t.status) : nullptr;
  j["seconds"] = t.seconds;
  if (!t.note.empty()) j["note"] = t.note;
  return j;
}

}  // namespace

nlohmann::ordered_json partition_json(const PartitionModel& model, const PartitionResult& r) {
  nlohmann::ordered_json j;
  j["model"] = model.description();
  j["layers"] = model.layers();
  j["stages"] = model.stages();
  j["devices"] = model.devices();
  j["microbatches"] = model.microbatches();
  j["memory_limit"] = model.memory_limit();
  if (!model.memory_limit_note().empty()) j["memory_limit_note"] = model.memory_limit_note();
  j["mode"] = r.mode;
  j["proven"] = r.proven;
  j["candidates"] = r.candidates;
  j["enumeration_complete"] = r.enumeration_complete;
  j["pruned"] = r.pruned;
  j["seconds"] = r.seconds;
  j["best"] = r.best >= 0 ? trial_json(r.trials[r.best]) : nlohmann::ordered_json(nullptr);
  j["versus_default"] = versus_default(r);
  nlohmann::ordered_json trials = nlohmann::ordered_json::array();
  for (const Trial& t : r.trials) trials.push_back(trial_json(t));
  j["trials"] = trials;
  return j;
}

std::string versus_reference(const PlacementsResult& r) {
  const Trial* base = r.reference();
  const Trial* best = r.best_trial();
  if (!base || !best || !base->solved) return "";
  return versus(*base, *best, baseline_name(*base) + " split with " + to_string(r.runs.front().placement));
}

std::string placements_table_text(const PlacementsResult& r) {
  std::ostringstream o;
  for (const PlacementRun& run : r.runs) {
    o << "== placement " << gen::placement_word(run.placement) << " ==\n";
    if (run.model && run.result) {
      o << partition_table_text(*run.model, *run.result) << "\n";
    } else {
      o << (run.model ? run.model->description() + "\n" : std::string()) << run.note << "\n\n";
    }
  }
  const Trial* base = r.reference();
  std::size_t width = 10;
  for (const PlacementRun& run : r.runs) {
    if (const Trial* t = run.result ? run.result->best_trial() : nullptr) width = std::max(width, split_text(t->split).size());
  }
  o << "placements compared";
  if (!r.runs.empty() && r.runs.front().model) {
    o << " (memory limit " << format_bytes(r.runs.front().model->memory_limit()) << " for each)";
  }
  o << ":\n";
  char head[512];
  std::snprintf(head, sizeof head, "  %-9s %-*s %12s %12s %-9s %8s  %s\n", "placement", static_cast<int>(width),
                "best split", "makespan", "bound", "status",
                base && baseline_name(*base) == "uniform" ? "vs unif" : "vs dflt", "");
  o << line_of(head);
  for (std::size_t k = 0; k < r.runs.size(); ++k) {
    const PlacementRun& run = r.runs[k];
    const Trial* t = run.result ? run.result->best_trial() : nullptr;
    char line[1024];
    std::snprintf(line, sizeof line, "%s %-9s %-*s %12s %12s %-9s %8s  %s\n",
                  static_cast<int>(k) == r.best ? "*" : " ", gen::placement_word(run.placement),
                  static_cast<int>(width), t ? split_text(t->split).c_str() : "-",
                  t && t->solved ? fixed(t->makespan).c_str() : "-", t && t->solved ? fixed(t->solved_bound).c_str() : "-",
                  t && t->solved ? t->status.c_str() : "-", t ? relative(*t, base).c_str() : "-",
                  t ? (run.result->proven ? "best split proven" : "") : run.note.c_str());
    o << line_of(line);
  }
  o << "times in ms; against the " << (base ? baseline_name(*base) : std::string("default"))
    << " split of the first placement, as solved in this run\n";
  if (const Trial* b = r.best_trial()) {
    o << "\nbest: " << to_string(r.runs[static_cast<std::size_t>(r.best)].placement) << ", split "
      << split_text(b->split) << ": makespan " << fixed(b->makespan) << " ms, bound " << fixed(b->solved_bound)
      << " ms (" << b->status << ")";
    const std::string vs = versus_reference(r);
    if (!vs.empty()) o << "; " << vs;
    o << "\n";
  }
  return o.str();
}

nlohmann::ordered_json placements_json(const PlacementsResult& r) {
  nlohmann::ordered_json j;
  j["placement"] = "auto";
  if (!r.runs.empty() && r.runs.front().model) {
    j["memory_limit"] = r.runs.front().model->memory_limit();
    if (!r.runs.front().model->memory_limit_note().empty()) {
      j["memory_limit_note"] = r.runs.front().model->memory_limit_note();
    }
  }
  j["seconds"] = r.seconds;
  j["best_placement"] = r.best >= 0 ? nlohmann::ordered_json(gen::placement_word(r.runs[static_cast<std::size_t>(r.best)].placement))
                                    : nlohmann::ordered_json(nullptr);
  j["best"] = r.best_trial() ? trial_json(*r.best_trial()) : nlohmann::ordered_json(nullptr);
  j["reference"] = r.reference() ? trial_json(*r.reference()) : nlohmann::ordered_json(nullptr);
  j["versus_default"] = versus_reference(r);
  nlohmann::ordered_json runs = nlohmann::ordered_json::array();
  for (const PlacementRun& run : r.runs) {
    nlohmann::ordered_json doc = run.model && run.result ? partition_json(*run.model, *run.result) : nlohmann::ordered_json::object();
    doc["placement"] = gen::placement_word(run.placement);
    doc["seconds_given"] = run.seconds;
    if (!run.note.empty()) doc["note"] = run.note;
    runs.push_back(doc);
  }
  j["placements"] = runs;
  return j;
}

}  // namespace optpipe::partition
