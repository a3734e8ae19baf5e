#include "plan/plan_runner.h"

#include <algorithm>
#include <initializer_list>
#include <chrono>
#include <cmath>
#include <cstdio>

#include "model/error.h"
#include "model/simulator.h"
#include "partition/partition_model.h"
#include "partition/partition_search.h"
#include "partition/reference_splits.h"
#include "plan/cutoff_solve.h"
#include "plan/option_costs.h"
#include "solve/solve_pipeline.h"

namespace optpipe::plan {
namespace {

using Clock = std::chrono::steady_clock;
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kEps = 1e-9;  // ms: a time must beat the best by more to replace it
constexpr double kReserveSeconds = 1.0, kReserveShare = 0.02;
// At most this share of the first pass for one solve: the last option below the best time does
// not take the whole pass (its bound rarely closes; the partition search uses the time better).
constexpr double kMaxSolveShare = 0.25;
// The first pass's share for the best over all options; the rest finds each placement's best.
constexpr double kGlobalShare = 0.6;

std::string ms(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.1f ms", v);
  return b;
}

std::string seconds_text(double s) {
  char b[32];
  std::snprintf(b, sizeof b, "%.2f s", s);
  return b;
}

class Runner {
 public:
  Runner(const PlanRequest& request, const PlanOptions& options)
      : req_(request), opt_(options), t0_(Clock::now()) {}
  PlanResult run();

 private:
  double elapsed() const { return std::chrono::duration<double>(Clock::now() - t0_).count(); }
  double left() const { return opt_.time_limit - std::min(kReserveSeconds, kReserveShare * opt_.time_limit) - elapsed(); }
  bool stopped() const { return opt_.stop && opt_.stop->load(); }
  void say(const std::string& line) const {
    if (opt_.progress) opt_.progress(line);
  }
  using Scope = std::optional<Placement>;  // every option, or one placement's
  double best_time() const { return best_ < 0 ? kInf : res_.options[best_].time; }
  double best_time(const Scope& within) const;

  void screen_all(const OptionSpace& space);
  void bnb_pass(const Scope& within, double until);
  int still_open(std::size_t from, const Scope& within) const;
  void placement_passes(double until);
  int solved_count() const;
  void solve(int i, double seconds, double best);
  void evaluate(OptionResult& r, const gen::Generated& g, const Schedule& schedule, double bound);
  void second_pass();
  void refine(int i, double seconds);
  void finish();

  const PlanRequest& req_;
  PlanOptions opt_;
  Clock::time_point t0_;
  PlanResult res_;
  std::vector<int> order_;  // options that fit, by increasing bound
  int best_ = -1;
};

void Runner::screen_all(const OptionSpace& space) {
  say(std::to_string(space.options.size()) + " options (tensor x pipeline x data parallel, placement, micro-batch, "
      "recompute); screening their memory floors and bounds");
  std::vector<Screened> screened;
  for (const PlanOption& o : space.options) {
    OptionResult r;
    r.screen = screen_option(req_, o, opt_.node_limit);
    r.limit = r.screen.floor.limit;
    if (r.screen.fits) {
      r.split = r.screen.split;
      r.split_role = r.screen.split_role;
      r.time_bound = r.screen.time_bound;
      r.sync = r.screen.sync.empty() ? 0.0 : *std::max_element(r.screen.sync.begin(), r.screen.sync.end());
      r.state = "not solved: time limit";
    } else {
      r.state = "over memory";
    }
    screened.push_back(r.screen);
    res_.options.push_back(std::move(r));
  }
  for (std::size_t i = 0; i < res_.options.size(); ++i) {
    if (res_.options[i].screen.fits) order_.push_back(static_cast<int>(i));
  }
  res_.fitting = static_cast<int>(order_.size());
  res_.over_memory = res_.enumerated - res_.fitting;
  if (order_.empty()) throw NothingFits(explain_nothing_fits(req_, screened));
  std::stable_sort(order_.begin(), order_.end(),
                   [&](int a, int b) { return res_.options[a].time_bound < res_.options[b].time_bound; });
  say(std::to_string(res_.fitting) + " fit the memory limit, " + std::to_string(res_.over_memory) +
      " do not; solving in order of their bound (" + seconds_text(elapsed()) + ")");
}

double Runner::best_time(const Scope& within) const {
  double best = kInf;
  for (int i : order_) {
    const OptionResult& r = res_.options[i];
    if (r.solved && (!within || r.option().placement == *within)) best = std::min(best, r.time);
  }
  return best;
}

// Options of the scope from position `from` of order_ not solved and whose bound is below the
// scope's best time.
int Runner::still_open(std::size_t from, const Scope& within) const {
  int n = 0;
  const double best = best_time(within);
  for (std::size_t k = from; k < order_.size(); ++k) {
    const OptionResult& r = res_.options[order_[k]];
    if (r.solved || (within && r.option().placement != *within)) continue;
    if (!opt_.screens || r.time_bound < best - kEps) ++n;
  }
  return n;
}

// Best-first over the options of the scope (every option, or one placement's): an option whose
// bound reaches the scope's best time is cut, the others solved in order of their bound with an
// equal share of the time left until `until` among those still open.
void Runner::bnb_pass(const Scope& within, double until) {
  const double budget = std::max(0.0, until - elapsed());
  for (std::size_t k = 0; k < order_.size(); ++k) {
    OptionResult& r = res_.options[order_[k]];
    if (r.solved || (within && r.option().placement != *within)) continue;
    const double best = best_time(within);
    if (opt_.screens && r.time_bound >= best - kEps) {
      r.state = "cut by bound";
      continue;
    }
    const double pass_left = until - elapsed();
    // Until some option has a schedule the pass goes on past its time, so that there is an answer.
    if (stopped() || (best_ >= 0 && (pass_left < opt_.min_solve_seconds || left() <= 0))) continue;
    const int open = std::max(1, still_open(k, within));
    const double share = std::min({pass_left, left(), kMaxSolveShare * budget}) / open;
    solve(order_[k], std::max(opt_.min_solve_seconds, share), best);
  }
}

void Runner::evaluate(OptionResult& r, const gen::Generated& g, const Schedule& schedule, double bound) {
  const Instance& inst = g.instance;
  const SimResult sim = simulate(inst, schedule);
  r.solved = sim.feasible;
  if (!sim.feasible) return;
  const std::vector<double> sync = dp_sync_per_device(generate_options(req_, r.option()), g);
  r.makespan = sim.makespan;
  r.makespan_bound = std::max(bound, partition::cheap_bound(inst).value);
  r.time = time_per_batch(device_ends(sim), sync);
  r.time_bound = std::min(r.time, time_lower_bound(r.makespan_bound, sync));
  r.tokens_per_second = tokens_per_second(req_.global_batch, req_.base.model.seq, r.time);
  r.peak = 0;
  for (int d = 0; d < inst.num_devices(); ++d) {
    if (sim.peak_memory[d] > r.peak) r.peak = sim.peak_memory[d], r.peak_device = d;
  }
  r.limit = inst.devices[0].memory_limit;
  r.offloads = 0;
  for (const Transfer& t : sim.transfers) r.offloads += t.kind == Transfer::Kind::kOffload ? 1 : 0;
  r.sync = sync.empty() ? 0.0 : *std::max_element(sync.begin(), sync.end());
  r.bottleneck = find_bottleneck(inst, sim, partition::cheap_bound(inst).value, sync, r.time);
  r.instance = inst;
  r.schedule = schedule;
}

// The best option of each placement, for the table's comparison: the same best-first pass within
// each placement, with its own best time as the cut, in what is left of the first pass's time.
void Runner::placement_passes(double until) {
  if (req_.placements.size() < 2) return;
  for (std::size_t k = 0; k < req_.placements.size() && !stopped(); ++k) {
    const double share = (until - elapsed()) / static_cast<double>(req_.placements.size() - k);
    if (share < opt_.min_solve_seconds) break;
    const int before = solved_count();
    bnb_pass(req_.placements[k], elapsed() + share);
    if (solved_count() > before) {
      say("best with placement " + std::string(placement_word(req_.placements[k])) + ": " +
          ms(best_time(req_.placements[k])) + " per batch");
    }
  }
}

int Runner::solved_count() const {
  int n = 0;
  for (const OptionResult& r : res_.options) n += r.solved ? 1 : 0;
  return n;
}

void Runner::solve(int i, double seconds, double best) {
  OptionResult& r = res_.options[i];
  const gen::Generated& g = *r.screen.generated;
  PipelineOptions po;
  po.time_limit = seconds;
  po.threads = opt_.threads;
  po.stop = opt_.stop;
  const double least_sync = r.screen.sync.empty() ? 0.0 : *std::min_element(r.screen.sync.begin(), r.screen.sync.end());
  const CutoffResult c = solve_with_cutoff(g.instance, po, opt_.screens ? best - least_sync - kEps : kInf);
  const PipelineResult& p = c.pipeline;
  r.seconds = p.seconds;
  if (c.cut) r.note = "stopped: its solve's bound reached the best time";
  if (!p.result.schedule) {
    r.state = "no schedule";
    say("no schedule for " + r.option().label() + " within " + seconds_text(seconds));
    return;
  }
  r.status = to_string(p.result.status);
  evaluate(r, g, *p.result.schedule, p.result.bound);
  r.state = r.solved ? "solved" : "no schedule";
  if (!r.solved) return;
  const bool better = r.time < best_time() - kEps;
  if (better) best_ = i;
  say((better ? "best so far: " : "solved: ") + r.option().label() + ": " + ms(r.time) + " per batch (makespan " +
      ms(r.makespan) + ", bound " + ms(r.makespan_bound) + ", " + r.status + ", " + seconds_text(r.seconds) + ")");
}

// The partition search on option i: its layers per stage chosen jointly with the schedule.
void Runner::refine(int i, double seconds) {
  OptionResult& r = res_.options[i];
  const gen::GenerateOptions o = generate_options(req_, r.option());
  say("partition search on " + r.option().label() + " for " + seconds_text(seconds));
  partition::PartitionOptions po;
  po.time_limit = seconds;
  po.threads = opt_.threads;
  po.stop = opt_.stop;
  partition::PartitionResult p;
  try {
    p = partition::partition_search(partition::PartitionModel::from_generator(o), po);
  } catch (const partition::NoSplitFits&) {
    return;  // not expected: the option's own split fits
  }
  r.seconds += p.seconds;
  if (p.best < 0 || !p.schedule) {
    r.partition_note = "partition search: no split solved in time";
    return;
  }
  const std::vector<int> split = p.trials[p.best].split;
  gen::GenerateOptions with_split = o;
  with_split.split = split;
  OptionResult candidate = r;
  evaluate(candidate, gen::generate(with_split), *p.schedule, p.trials[p.best].solved_bound);
  const std::string proof = p.proven ? ", proven best split" : "";
  if (candidate.solved && candidate.time < r.time - kEps) {
    const double gain = 100.0 * (r.time - candidate.time) / r.time;
    char b[64];
    std::snprintf(b, sizeof b, "%.2f%% (%.1f ms)", gain, r.time - candidate.time);
    candidate.partition_note = "partition search: " + partition::split_text(split) + " is " + b + " faster than the " +
                               r.split_role + " split " + partition::split_text(r.split) + proof;
    candidate.split = split;
    candidate.split_role = "partition search";
    candidate.status = p.trials[p.best].status;
    r = std::move(candidate);
    if (r.time < best_time() - kEps) best_ = i;
    say("  " + r.partition_note + ": " + ms(r.time) + " per batch");
  } else {
    r.partition_note = "partition search: no split beats the " + r.split_role + " split" + proof;
    say("  " + r.partition_note);
  }
}

void Runner::second_pass() {
  if (opt_.partition_top <= 0) return;
  std::vector<int> top;
  for (int i : order_) {
    if (res_.options[i].solved) top.push_back(i);
  }
  std::stable_sort(top.begin(), top.end(), [&](int a, int b) { return res_.options[a].time < res_.options[b].time; });
  if (static_cast<int>(top.size()) > opt_.partition_top) top.resize(opt_.partition_top);
  for (std::size_t k = 0; k < top.size() && !stopped(); ++k) {
    const double share = left() / static_cast<double>(top.size() - k);
    if (share < opt_.min_solve_seconds) break;
    refine(top[k], share);
  }
}

void Runner::finish() {
  auto rank = [](const OptionResult& r) { return r.solved ? 0 : r.screen.fits ? 1 : 2; };
  std::vector<OptionResult>& v = res_.options;
  std::stable_sort(v.begin(), v.end(), [&](const OptionResult& a, const OptionResult& b) {
    if (rank(a) != rank(b)) return rank(a) < rank(b);
    if (rank(a) == 0) return a.time < b.time;
    if (rank(a) == 1) return a.time_bound < b.time_bound;
    return a.screen.over_limit() < b.screen.over_limit();
  });
  res_.best = !v.empty() && v.front().solved ? 0 : -1;
  res_.solved = res_.cut = res_.unsolved = 0;
  for (const OptionResult& r : v) {
    res_.solved += r.solved ? 1 : 0;
    res_.cut += r.state == "cut by bound" ? 1 : 0;
    res_.unsolved += r.screen.fits && !r.solved && r.state != "cut by bound" ? 1 : 0;
  }
  res_.stopped = stopped();
  res_.seconds = elapsed();
}

PlanResult Runner::run() {
  const OptionSpace space = enumerate_options(req_);
  res_.left_out = space.left_out;
  res_.enumerated = static_cast<int>(space.options.size());
  if (space.options.empty()) {
    std::string why;
    for (const std::string& w : space.left_out) why += "; " + w;
    throw InputError("gpus: no way to run the model on " + std::to_string(req_.gpus) + " GPUs with a global batch of " +
                     std::to_string(req_.global_batch) + why);
  }
  screen_all(space);
  const double share = opt_.partition_top > 0 ? 1.0 - opt_.partition_share : 1.0;
  const double until = elapsed() + share * std::max(0.0, left());
  bnb_pass(std::nullopt, elapsed() + kGlobalShare * (until - elapsed()));
  placement_passes(until);
  int solved = 0, cut = 0;
  for (const OptionResult& r : res_.options) solved += r.solved ? 1 : 0, cut += r.state == "cut by bound" ? 1 : 0;
  say(std::to_string(solved) + " options solved, " + std::to_string(cut) + " cut by their bound (" +
      seconds_text(elapsed()) + ")");
  second_pass();
  finish();
  return std::move(res_);
}

}  // namespace

PlanResult run_plan(const PlanRequest& request, const PlanOptions& options) { return Runner(request, options).run(); }

}  // namespace optpipe::plan
