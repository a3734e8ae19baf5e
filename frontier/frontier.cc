#include "frontier/frontier.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>

#include "frontier/memory_limits.h"
#include "model/bytes.h"
#include "model/error.h"
#include "model/simulator.h"
#include "solve/solve_observer.h"
#include "viz/text_report.h"

namespace optpipe::frontier {
namespace {

using Clock = std::chrono::steady_clock;

double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

std::string fmt_seconds(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f s", s);
  return buf;
}

// The pipeline's warnings, passed on.
class WarningRelay final : public SolveObserver {
 public:
  explicit WarningRelay(const std::function<void(const std::string&)>& warn) : warn_(warn) {}
  void on_warning(const std::string& message) override {
    if (warn_) warn_("warning: " + message);
  }

 private:
  const std::function<void(const std::string&)>& warn_;
};

std::string point_line(const FrontierPoint& p) {
  if (!p.has_schedule()) return p.note;
  std::string line = fmt_ms(p.makespan) + ", bound " + fmt_ms(p.bound) + " (" + to_string(p.status) +
                     (std::isfinite(p.gap) ? ", gap " + fmt_percent(p.gap) : std::string()) + ")";
  if (p.run_limit < p.limit) line += ", " + p.source;
  return line;
}

std::string range_text(const std::optional<double>& low, const std::optional<double>& high) {
  return (low ? format_bytes(*low) : std::string("the floor")) + ".." +
         (high ? format_bytes(*high) : std::string("the unconstrained peak"));
}

// The checks that need no solve: the options, the ends' order, a range entirely below the floor.
void check_request(const FrontierOptions& o, const MemoryFloor& floor) {
  if (o.steps < 1) throw InputError("steps: must be at least 1, not " + std::to_string(o.steps));
  if (!(o.time_limit >= 0)) throw InputError("time limit: must be at least 0 seconds");
  const std::string range = "limits " + range_text(o.low, o.high);
  if (o.low && o.high && *o.low > *o.high) throw InputError(range + ": the lower end is above the upper end");
  if (o.high && *o.high < floor.limit) {
    throw InputError(range + ": every limit is below the memory floor " + format_bytes(floor.limit) + ", " +
                     format_bytes(floor.limit - *o.high) + " above the upper end: " + floor.explain() +
                     (floor.proven ? "; no schedule fits below it" : "; no schedule fits below " +
                                                                           format_bytes(floor.lower)));
  }
}

// The warm starts for a solve at `limit`: every schedule so far whose limit it covers.
std::vector<Schedule> warm_starts_at(double limit, const FrontierResult& r) {
  std::vector<Schedule> out;
  for (const ClassicPoint& c : r.classics) {
    if (c.schedule && c.peak <= limit) out.push_back(*c.schedule);
  }
  if (r.unconstrained && r.unconstrained->schedule) {
    const auto& peak = r.unconstrained->schedule->peak_memory;
    if (!peak.empty() && *std::max_element(peak.begin(), peak.end()) <= limit) {
      out.push_back(*r.unconstrained->schedule);
    }
  }
  for (const FrontierPoint& p : r.points) {
    if (p.has_schedule() && p.run_limit <= limit) out.push_back(*p.schedule);
  }
  return out;
}

// The first pass gives each solve this share of its equal part of the time left: enough to
// prove the easy limits (usually the large ones) and to give every limit a schedule; the second
// pass spends the rest on the limits that are left open.
constexpr double kFirstPassShare = 0.25;

struct Sweep {
  const Instance& instance;
  const FrontierOptions& options;
  PointSolver solver;
  Clock::time_point started;

  void say(const std::string& line) const {
    if (options.progress) options.progress(line);
  }
  bool stopped() const { return options.solve.stop && options.solve.stop->load(); }
  // An equal share of the time left for each of `solves_left` solves, times `fraction`.
  double share(int solves_left, double fraction = 1.0) const {
    return fraction * std::max(0.0, options.time_limit - since(started)) / std::max(1, solves_left);
  }
  FrontierPoint solve_at(double limit, const FrontierResult& r, double seconds) const {
    const Instance at = with_memory_limit(instance, limit);
    return solver(PointRequest{at, limit, warm_starts_at(limit, r), seconds});
  }
};

// Step 2: the upper end from a solve without a memory limit.
void solve_upper_end(const Sweep& sweep, FrontierResult& r, int solves) {
  const double free = unconstrained_limit(sweep.instance);
  const double seconds = sweep.share(solves, kFirstPassShare);
  sweep.say("frontier: solving without a memory limit for the upper end (" + fmt_seconds(seconds) + ")");
  r.unconstrained = sweep.solve_at(free, r, seconds);
  FrontierPoint& u = *r.unconstrained;
  u.limit = u.run_limit = free;
  if (!u.has_schedule()) throw InputError("no schedule found without a memory limit: " + u.note);
  // Its peaks as simulated here (the schedule's own field is informational).
  const Instance at = with_memory_limit(sweep.instance, free);
  u.schedule->peak_memory = simulate(at, *u.schedule, SimOptions::quiet()).peak_memory;
  const auto& peak = u.schedule->peak_memory;
  r.high = std::max(r.floor.limit, *std::max_element(peak.begin(), peak.end()));
  sweep.say("frontier: without a memory limit " + point_line(u) + ", peak " + format_bytes(r.high));
}

// A limit left unsolved (stopped): the fastest of the schedules so far that run at it, no bound.
FrontierPoint best_known_at(const Instance& instance, double limit, const FrontierResult& r) {
  FrontierPoint p;
  p.limit = p.run_limit = limit;
  p.note = "not solved: stopped";
  const Instance at = with_memory_limit(instance, limit);
  for (Schedule& s : warm_starts_at(limit, r)) {
    const SimResult sim = simulate(at, s, SimOptions::quiet());
    if (!sim.feasible || (p.has_schedule() && !faster(sim.makespan, p.makespan))) continue;
    s.makespan = sim.makespan;
    s.peak_memory = sim.peak_memory;
    s.bound.reset();
    s.gap.reset();
    s.status = "feasible";
    p.schedule = std::move(s);
    p.makespan = sim.makespan;
    p.status = PointStatus::kFeasible;
    p.source = "the fastest schedule so far that fits (" + p.schedule->solver + ")";
  }
  return p;
}

// Step 3 for one limit of the grid.
FrontierPoint grid_point(const Sweep& sweep, const FrontierResult& r, double limit, int solves_left) {
  FrontierPoint p;
  p.limit = p.run_limit = limit;
  if (limit < r.floor.limit) {
    p.status = PointStatus::kBelowFloor;
    p.note = "below the memory floor " + format_bytes(r.floor.limit) + " by " + format_bytes(r.floor.limit - limit) +
             " (device " + std::to_string(r.floor.device) + ", stage " + std::to_string(r.floor.stage) + ")";
    return p;
  }
  if (sweep.stopped()) return best_known_at(sweep.instance, limit, r);
  p = sweep.solve_at(limit, r, sweep.share(solves_left, kFirstPassShare));
  p.limit = p.run_limit = limit;
  return p;
}

// A second solve of point `p` (`again`) kept where it is better: a faster schedule, a larger
// bound (both bounds are proven at the same limit).
void merge(FrontierPoint& p, const FrontierPoint& again) {
  p.seconds += again.seconds;
  if (again.has_schedule() && (!p.has_schedule() || faster(again.makespan, p.makespan))) {
    p.schedule = again.schedule;
    p.makespan = again.makespan;
    p.run_limit = p.limit;
    p.source = again.source;
  }
  if (!p.has_schedule()) return;
  p.bound = std::min(p.makespan, std::max(p.bound, again.bound));
  p.gap = p.makespan > 0 ? (p.makespan - p.bound) / p.makespan : 0.0;
  p.status = faster(p.bound, p.makespan) ? PointStatus::kFeasible : PointStatus::kOptimal;
  p.schedule->bound = p.bound;
  p.schedule->gap = p.gap;
  p.schedule->status = to_string(p.status);
}

// Step 4: what is left goes to the points not proven optimal, in increasing limit, each with an
// equal share of it (at least kMinSecondSeconds); each starts from its own first schedule and
// every lower point's. Then the monotone rule again.
constexpr double kMinSecondSeconds = 0.25;

void second_pass(const Sweep& sweep, FrontierResult& r) {
  std::vector<std::size_t> open;
  for (std::size_t k = 0; k < r.points.size(); ++k) {
    const PointStatus st = r.points[k].status;
    if (st == PointStatus::kFeasible || st == PointStatus::kNoSchedule) open.push_back(k);
  }
  for (std::size_t i = 0; i < open.size(); ++i) {
    const double seconds = sweep.share(static_cast<int>(open.size() - i));
    if (sweep.stopped() || seconds < kMinSecondSeconds) break;
    FrontierPoint& p = r.points[open[i]];
    sweep.say("frontier: again at " + format_bytes(p.limit) + " (" + fmt_seconds(seconds) + ")");
    merge(p, sweep.solve_at(p.limit, r, seconds));
    carry_from_below(r.points, open[i]);
    sweep.say("frontier: at " + format_bytes(p.limit) + ": " + point_line(p));
  }
  for (std::size_t k = 0; k < r.points.size(); ++k) carry_from_below(r.points, k);
}

}  // namespace

FrontierPoint solve_point(const PointRequest& request, const PipelineOptions& base,
                          const std::function<void(const std::string&)>& warn) {
  PipelineOptions o = base;
  o.time_limit = request.seconds;
  o.warm_starts = request.warm_starts;
  WarningRelay relay(warn);
  const PipelineResult r = solve_pipeline(request.instance, o, relay);
  FrontierPoint p;
  p.limit = p.run_limit = request.limit;
  p.seconds = r.seconds;
  if (!r.result.schedule) {
    p.note = "no schedule found: " + r.result.reason;
    return p;
  }
  p.schedule = r.result.schedule;
  p.makespan = r.result.makespan;
  p.bound = r.result.bound;
  p.gap = r.result.gap;
  p.status = r.result.status == SolveResult::Status::kOptimal ? PointStatus::kOptimal : PointStatus::kFeasible;
  p.source = r.best_from();
  return p;
}

bool FrontierResult::monotone() const {
  const FrontierPoint* below = nullptr;
  for (const FrontierPoint& p : points) {
    if (!p.has_schedule()) continue;
    if (below && faster(below->makespan, p.makespan)) return false;
    below = &p;
  }
  return true;
}

FrontierResult compute_frontier(const Instance& instance, const FrontierOptions& options) {
  const Clock::time_point started = Clock::now();
  FrontierResult r;
  r.instance = instance.name;
  r.time_limit = options.time_limit;
  r.floor = memory_floor(instance);
  check_request(options, r.floor);
  Sweep sweep{instance, options, options.point_solver, started};
  if (!sweep.solver) {
    sweep.solver = [&](const PointRequest& q) { return solve_point(q, options.solve, options.progress); };
  }
  sweep.say("frontier: memory floor " + format_bytes(r.floor.limit) + ": " + r.floor.explain() +
            (r.floor.proven ? ", and " + r.floor.witness + " fit there" : ""));
  r.classics = classic_points(instance);
  r.steps = options.steps;
  r.low_default = !options.low;
  r.high_default = !options.high;
  r.low = options.low.value_or(r.floor.limit);
  if (options.high) {
    r.high = *options.high;
  } else {
    solve_upper_end(sweep, r, options.steps + 1);
    if (r.low > r.high) {
      throw InputError("limits " + range_text(options.low, options.high) + ": the lower end is above the upper end " +
                       format_bytes(r.high) + ", the peak memory of the best schedule found without a memory limit");
    }
  }
  const std::vector<double> grid = limit_grid(r.low, r.high, options.steps);
  int solves_left = static_cast<int>(std::count_if(grid.begin(), grid.end(), [&](double l) {
    return l >= r.floor.limit;
  }));
  for (std::size_t k = 0; k < grid.size(); ++k) {
    r.points.push_back(grid_point(sweep, r, grid[k], solves_left));
    if (r.points.back().status != PointStatus::kBelowFloor) --solves_left;
    carry_from_below(r.points, k);
    sweep.say("frontier: " + std::to_string(k + 1) + "/" + std::to_string(grid.size()) + " at " +
              format_bytes(grid[k]) + ": " + point_line(r.points.back()) + " (" +
              fmt_seconds(since(sweep.started)) + " so far)");
  }
  second_pass(sweep, r);
  r.carried = static_cast<int>(std::count_if(r.points.begin(), r.points.end(), [](const FrontierPoint& p) {
    return p.has_schedule() && p.run_limit < p.limit;
  }));
  r.interrupted = sweep.stopped();
  r.seconds = since(sweep.started);
  return r;
}

}  // namespace optpipe::frontier
