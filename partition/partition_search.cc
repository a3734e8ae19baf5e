#include "partition/partition_search.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>

#include "heuristics/registry.h"
#include "model/bytes.h"
#include "model/error.h"
#include "model/time_text.h"
#include "partition/reference_splits.h"
#include "partition/split_enumerator.h"
#include "solve/solve_pipeline.h"

namespace optpipe::partition {
namespace {

using Clock = std::chrono::steady_clock;
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kEps = 1e-9;           // ms: a makespan must beat the best by more to replace it
constexpr double kScreenShare = 0.3;    // local: share of the time for screening
constexpr double kMinSolveSeconds = 0.05;
constexpr double kReserveSeconds = 1.0, kReserveShare = 0.02;
// Local: the proof visits at most this many splits whose bound is below the best makespan.
constexpr int kProofMaxSplits = 20000;
// Local: a screened split is solved only if its heuristic makespan is within this share of the
// best solved makespan (the solve pipeline's local search and tree rarely gain more than ~15%
// over the heuristics: 13% on gpt-8x24-tight, 3-5% on the 16-GPU tight instances).
constexpr double kSolveMargin = 0.15;

class Searcher {
 public:
  Searcher(const PartitionModel& model, const PartitionOptions& options)
      : model_(model), opt_(options), t0_(Clock::now()) {}
  PartitionResult run();

 private:
  double elapsed() const { return std::chrono::duration<double>(Clock::now() - t0_).count(); }
  // Seconds left, less a reserve for what follows the last solve (the proof, the report, the
  // files) and for a solve's own overrun of its limit.
  double left() const { return opt_.time_limit - std::min(kReserveSeconds, kReserveShare * opt_.time_limit) - elapsed(); }
  bool out_of_time() const { return left() <= 0 || (opt_.stop && opt_.stop->load()); }
  void say(const std::string& line) const {
    if (opt_.progress) opt_.progress(line);
  }
  std::string label(int i) const;

  int record(const std::vector<int>& split);
  std::vector<int> add_references();
  std::vector<int> enumerate(EnumerateLimits& limits, std::size_t cap);
  void solve(int i, double seconds);
  double share(int planned_left) const { return std::max(kMinSolveSeconds, left() / std::max(1, planned_left)); }
  void exhaustive(const std::vector<int>& refs, std::vector<int> candidates);
  void local(const std::vector<int>& refs);
  int promising(const std::vector<int>& except) const;
  void local_solves(const std::vector<int>& refs);
  int least_bound_split();
  void screen(int i);
  int climb(int current, double until);
  std::vector<std::vector<int>> neighbours(const std::vector<int>& split) const;
  int best_screened_unsolved(const std::vector<int>& pool) const;
  void prove();
  void finish();

  const PartitionModel& model_;
  PartitionOptions opt_;
  Clock::time_point t0_;
  PartitionResult result_;
  std::vector<Instance> instances_;  // one per trial
  std::map<std::vector<int>, int> index_;
  int best_ = -1;
  std::optional<Schedule> best_schedule_;
  double best_heuristic_ = kInf;
};

std::string Searcher::label(int i) const {
  const Trial& t = result_.trials[i];
  std::string roles;
  for (const auto& r : t.roles) roles += (roles.empty() ? " (" : ", ") + r;
  return split_text(t.split) + (roles.empty() ? "" : roles + ")");
}

int Searcher::record(const std::vector<int>& split) {
  if (const auto it = index_.find(split); it != index_.end()) return it->second;
  Trial t;
  t.split = split;
  instances_.push_back(model_.instance(split));
  t.bound = cheap_bound(instances_.back());
  t.floor = tightest(memory_floors(instances_.back()));
  if (!t.fits()) t.note = "memory floor over the limit";
  result_.trials.push_back(std::move(t));
  const int i = static_cast<int>(result_.trials.size()) - 1;
  index_.emplace(split, i);
  return i;
}

// The references, in the order that wins ties: default, uniform, Megatron's.
std::vector<int> Searcher::add_references() {
  std::vector<std::pair<std::string, std::optional<std::vector<int>>>> refs{
      {"default", model_.default_split()},
      {"uniform", uniform_split(model_.layers(), model_.stages())},
      {"megatron", model_.profile().first && model_.profile().last ? megatron_split(model_.layers(), model_.stages())
                                                                   : std::nullopt}};
  std::vector<int> out;
  for (const auto& [role, split] : refs) {
    if (!split) continue;
    try {
      model_.check_split(*split);
    } catch (const InputError&) {
      continue;  // e.g. Megatron's split gives a middle stage no layer
    }
    const int i = record(*split);
    result_.trials[i].roles.push_back(role);
    if (std::find(out.begin(), out.end(), i) == out.end()) out.push_back(i);
  }
  return out;
}

// Splits the enumeration passes, as trials, at most `cap` (then it stops: incomplete).
std::vector<int> Searcher::enumerate(EnumerateLimits& limits, std::size_t cap) {
  std::vector<int> found;
  const EnumerateStats st = enumerate_splits(model_, limits, [&](const std::vector<int>& split, double) {
    const int i = record(split);
    if (result_.trials[i].fits()) found.push_back(i);
    return found.size() < cap;
  });
  result_.candidates = static_cast<std::int64_t>(found.size());
  result_.enumeration_complete = st.complete;
  return found;
}

void Searcher::solve(int i, double seconds) {
  Trial& t = result_.trials[i];
  PipelineOptions po;
  po.time_limit = std::max(kMinSolveSeconds, seconds);
  po.threads = opt_.threads;
  po.stop = opt_.stop;
  const PipelineResult r = solve_pipeline(instances_[i], po);
  t.solved = true;
  t.note.clear();
  t.seconds = r.seconds;
  t.status = to_string(r.result.status);
  t.solved_bound = std::max(r.result.bound, t.bound.value);
  if (r.result.schedule) t.makespan = r.result.makespan;
  say("solved " + label(i) + " in " + std::to_string(r.seconds).substr(0, 5) + " s: " +
      (r.result.schedule ? "makespan " + fmt_ms(t.makespan) + ", bound " + fmt_ms(t.solved_bound) : std::string("no schedule")) +
      " (" + t.status + ")");
  if (r.result.schedule && (best_ < 0 || t.makespan < result_.trials[best_].makespan - kEps)) {
    best_ = i;
    best_schedule_ = r.result.schedule;
  }
}

// Step 2: the references, then the candidates by increasing bound; a candidate whose bound
// reaches the best makespan cannot be faster and is not solved.
void Searcher::exhaustive(const std::vector<int>& refs, std::vector<int> candidates) {
  result_.mode = "exhaustive";
  std::stable_sort(candidates.begin(), candidates.end(),
                   [&](int a, int b) { return result_.trials[a].bound.value < result_.trials[b].bound.value; });
  std::vector<int> order;
  for (int i : refs) {
    if (result_.trials[i].fits()) order.push_back(i);
  }
  for (int i : candidates) {
    if (std::find(order.begin(), order.end(), i) == order.end()) order.push_back(i);
  }
  say(std::to_string(candidates.size()) + " splits fit the memory limit: each is solved in order of its bound "
      "unless the bound reaches the best makespan");
  for (std::size_t k = 0; k < order.size(); ++k) {
    Trial& t = result_.trials[order[k]];
    const bool reference = !t.roles.empty();
    if (!reference && best_ >= 0 && t.bound.value >= result_.trials[best_].makespan - kEps) {
      t.note = "bound reaches the best makespan " + fmt_ms(result_.trials[best_].makespan);
      ++result_.pruned;
      continue;
    }
    if (out_of_time() && best_ >= 0) {
      t.note = "not solved: time limit";
      continue;
    }
    solve(order[k], share(static_cast<int>(order.size() - k)));
  }
  // Proven: no other split can beat the best split's schedule (its bound, cheap or solved,
  // reaches that makespan).
  result_.proven = result_.enumeration_complete && best_ >= 0;
  for (int i : order) {
    const Trial& t = result_.trials[i];
    if (i != best_ && std::max(t.bound.value, t.solved_bound) < result_.trials[best_].makespan - kEps) {
      result_.proven = false;
    }
  }
}

// Heuristic makespan of trial i (its best heuristic within a short deadline).
void Searcher::screen(int i) {
  Trial& t = result_.trials[i];
  if (t.heuristic || !t.fits()) return;
  const double seconds = std::clamp(0.01 * opt_.time_limit, 0.05, 1.0);
  const BestResult r = run_all_heuristics(instances_[i], true, {}, RunLimits::within(seconds, opt_.stop));
  if (const HeuristicResult* h = r.best_result()) {
    t.heuristic = h->sim.makespan;
    t.heuristic_name = h->name;
    best_heuristic_ = std::min(best_heuristic_, *t.heuristic);
  } else {
    t.heuristic = kInf;
    t.heuristic_name = "none fits";
  }
}

// Every split one layer away: stage i gives a layer to stage j (neighbouring stages first).
std::vector<std::vector<int>> Searcher::neighbours(const std::vector<int>& split) const {
  std::vector<std::vector<int>> out;
  const int S = model_.stages();
  for (int dist = 1; dist < S; ++dist) {
    for (int i = 0; i < S; ++i) {
      for (int j : {i - dist, i + dist}) {
        if (j < 0 || j >= S || split[i] - 1 < model_.min_layers(i)) continue;
        std::vector<int> n = split;
        --n[i];
        ++n[j];
        out.push_back(std::move(n));
      }
    }
  }
  return out;
}

// First-improvement descent on the heuristic makespan until `until` (seconds into the search).
int Searcher::climb(int current, double until) {
  for (bool improved = true; improved && elapsed() < until && !out_of_time();) {
    improved = false;
    for (const auto& n : neighbours(result_.trials[current].split)) {
      if (elapsed() >= until || out_of_time()) break;
      const int i = record(n);
      Trial& t = result_.trials[i];
      if (t.heuristic || !t.fits() || t.bound.value >= best_heuristic_ - kEps) continue;  // screened, or cannot win
      screen(i);
      if (*t.heuristic < *result_.trials[current].heuristic - kEps) {
        say("screening: " + label(i) + ": heuristic " + fmt_ms(*t.heuristic) + " (" + t.heuristic_name + ")");
        current = i;
        improved = true;
        break;
      }
    }
  }
  return current;
}

// The split of least estimated bound that fits (the enumeration with a falling cutoff).
int Searcher::least_bound_split() {
  EnumerateLimits limits;
  limits.node_limit = opt_.node_limit;
  limits.stop = opt_.stop;
  std::optional<std::vector<int>> best;
  enumerate_splits(model_, limits, [&](const std::vector<int>& split, double bound) {
    best = split;
    limits.cutoff = bound * (1 - 1e-4);
    return !out_of_time();
  });
  return best ? record(*best) : -1;
}

// Among `pool`: the unsolved split that fits with the least heuristic makespan whose bound is
// below the best makespan and whose heuristic makespan is within kSolveMargin of it; -1 if none.
int Searcher::best_screened_unsolved(const std::vector<int>& pool) const {
  int pick = -1;
  for (int i : pool) {
    const Trial& t = result_.trials[i];
    if (t.solved || !t.fits() || !t.heuristic || !std::isfinite(*t.heuristic)) continue;
    if (best_ >= 0 && t.bound.value >= result_.trials[best_].makespan - kEps) continue;
    if (best_ >= 0 && *t.heuristic > (1 + kSolveMargin) * result_.trials[best_].makespan) continue;
    if (pick < 0 || *t.heuristic < *result_.trials[pick].heuristic) pick = i;
  }
  return pick;
}

// Step 3 (see the header): screening, then the solves.
void Searcher::local(const std::vector<int>& refs) {
  result_.mode = "local";
  std::vector<int> seeds, solve_first;
  for (int i : refs) {
    if (result_.trials[i].fits()) seeds.push_back(i), solve_first.push_back(i);
  }
  if (const int lb = least_bound_split(); lb >= 0) {
    result_.trials[lb].roles.push_back("least bound");
    if (std::find(seeds.begin(), seeds.end(), lb) == seeds.end()) seeds.push_back(lb);
  }
  say("screening splits by their best heuristic schedule, for up to " +
      std::to_string(static_cast<int>(kScreenShare * left() + 0.5)) + " s");
  const double until = elapsed() + kScreenShare * left();
  int current = -1;
  for (int i : seeds) {
    screen(i);
    say("screening: " + label(i) + ": bound " + fmt_ms(result_.trials[i].bound.value) + ", heuristic " +
        fmt_ms(*result_.trials[i].heuristic) + " (" + result_.trials[i].heuristic_name + ")");
    if (current < 0 || *result_.trials[i].heuristic < *result_.trials[current].heuristic) current = i;
  }
  if (current >= 0) climb(current, until);
  local_solves(solve_first);
}

// The screened splits other than `except` worth solving: within kSolveMargin of the best
// heuristic makespan, at most top_solves.
int Searcher::promising(const std::vector<int>& except) const {
  int n = 0;
  for (std::size_t i = 0; i < result_.trials.size(); ++i) {
    const Trial& t = result_.trials[i];
    if (std::find(except.begin(), except.end(), static_cast<int>(i)) != except.end()) continue;
    if (t.fits() && t.heuristic && *t.heuristic <= (1 + kSolveMargin) * best_heuristic_) ++n;
  }
  return std::min(n, opt_.top_solves);
}

// The references, the best screened splits, then the best solved split's best neighbours; the
// time left is shared equally among the solves planned (none for splits not worth solving).
void Searcher::local_solves(const std::vector<int>& refs) {
  const int top = promising(refs);
  const int planned = static_cast<int>(refs.size()) + top + (top > 0 ? opt_.refine_solves : 0);
  int done = 0;
  for (int i : refs) solve(i, share(planned - done++));
  std::vector<int> all(result_.trials.size());
  for (std::size_t i = 0; i < all.size(); ++i) all[i] = static_cast<int>(i);
  for (int k = 0; k < top && !out_of_time(); ++k) {
    const int i = best_screened_unsolved(all);
    if (i < 0) break;
    solve(i, share(planned - done++));
  }
  for (int k = 0; k < opt_.refine_solves && !out_of_time() && best_ >= 0; ++k) {
    std::vector<int> pool;
    const auto near = neighbours(result_.trials[best_].split);
    for (std::size_t n = 0; n < near.size() && n < 2 * static_cast<std::size_t>(model_.stages()); ++n) {
      const int i = record(near[n]);
      if (!out_of_time()) screen(i);
      pool.push_back(i);
    }
    const int i = best_screened_unsolved(pool);
    if (i < 0) break;
    solve(i, share(std::max(1, planned - done++)));
  }
}

// Local: the best split is proven best when every split whose bound is below its makespan is
// itself, or was solved to a bound that reaches it, or does not fit (the enumeration with the
// best makespan as cutoff visits every such split; its estimates err on the side of visiting).
void Searcher::prove() {
  if (best_ < 0) return;
  const double target = result_.trials[best_].makespan;
  EnumerateLimits limits;
  limits.cutoff = target;
  limits.node_limit = opt_.node_limit;
  limits.stop = opt_.stop;
  bool proven = true;
  int visited = 0;
  const EnumerateStats st = enumerate_splits(model_, limits, [&](const std::vector<int>& split, double) {
    const auto it = index_.find(split);
    if (it != index_.end()) {
      const Trial& t = result_.trials[it->second];
      proven = it->second == best_ || !t.fits() || std::max(t.bound.value, t.solved_bound) >= target - kEps;
    } else {
      const Instance inst = model_.instance(split);
      proven = cheap_bound(inst).value >= target - kEps || !tightest(memory_floors(inst)).fits();
    }
    return proven && ++visited < kProofMaxSplits;
  });
  result_.proven = proven && st.complete;
}

void Searcher::finish() {
  if (best_ < 0) {  // nothing solved yet (no time, or no heuristic fit while screening)
    for (std::size_t i = 0; i < result_.trials.size() && best_ < 0; ++i) {
      if (result_.trials[i].fits() && !result_.trials[i].solved) solve(static_cast<int>(i), std::max(left(), 1.0));
    }
  }
  for (Trial& t : result_.trials) {
    if (!t.solved && t.note.empty()) t.note = "screened only";
    if (!t.fits()) {
      t.note = "memory floor " + format_bytes(t.floor.bytes) + " on device " + std::to_string(t.floor.device) +
               " is over the limit by " + format_bytes(t.floor.bytes - t.floor.limit);
    }
  }
  if (best_ >= 0) {
    result_.trials[best_].roles.push_back("best");
    result_.best = best_;
    result_.instance = instances_[best_];
    result_.schedule = best_schedule_;
  }
  result_.seconds = elapsed();
}

PartitionResult Searcher::run() {
  say(model_.description());
  const std::vector<int> refs = add_references();
  EnumerateLimits limits;
  limits.node_limit = opt_.node_limit;
  limits.stop = opt_.stop;
  const std::vector<int> found = enumerate(limits, static_cast<std::size_t>(opt_.exhaustive_max) + 1);
  bool any_fits = !found.empty();
  for (int i : refs) any_fits = any_fits || result_.trials[i].fits();
  if (!any_fits) throw NoSplitFits(explain_no_fit(model_));
  const std::int64_t ops = static_cast<std::int64_t>(found.size()) * model_.stages() * model_.microbatches() *
                           (model_.split_backward() ? 3 : 2);
  if (result_.enumeration_complete && static_cast<int>(found.size()) <= opt_.exhaustive_max &&
      ops <= opt_.exhaustive_ops) {
    exhaustive(refs, found);
  } else {
    say(std::string(result_.enumeration_complete ? "" : "at least ") + std::to_string(found.size()) +
        " splits fit the memory limit: too many to solve each; screening and local search instead");
    local(refs);
    prove();
  }
  finish();
  return std::move(result_);
}

}  // namespace

bool Trial::has_role(const std::string& role) const {
  return std::find(roles.begin(), roles.end(), role) != roles.end();
}

const Trial* PartitionResult::find(const std::string& role) const {
  for (const Trial& t : trials) {
    if (t.has_role(role)) return &t;
  }
  return nullptr;
}

const Trial* PartitionResult::baseline() const {
  const Trial* t = find("default");
  return t ? t : find("uniform");
}

PartitionResult partition_search(const PartitionModel& model, const PartitionOptions& options) {
  return Searcher(model, options).run();
}

}  // namespace optpipe::partition
