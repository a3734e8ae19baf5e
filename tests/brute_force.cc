// The brute-force oracle (brute_force.h).
//
// What is enumerated. A schedule is one list per device (spec §3). The rules that concern one
// list alone are: it holds exactly the ops of its device's stages; per stage and type the
// microbatches are increasing (FIFO); an F of an offloadable stage carries any level of
// offload_levels, others 0; R(s,j) is present exactly when F(s,j) has r > 0, after F(s,j) and
// before B(s,j), and the Rs of a stage are FIFO too. The only rule that couples the lists is
// that the timing completes. So the valid schedules are exactly the cartesian product of each
// device's lists that satisfy the per-list rules, filtered by simulation; this file builds each
// device's lists by a depth-first search that appends, at every step, any action the rules
// allow next, and then simulates the product.
//
// The one thing skipped: lists where an op X comes before an op Y of the same microbatch that
// X depends on, directly or through other ops, whatever device they run on. Within microbatch
// j the data dependencies of spec §4 are
//   F(s,j) <- F(s-1,j);   B(s,j) <- F(s,j), B(s+1,j), the reload of (s,j);   W(s,j) <- B(s,j),
// so, transitively, F(s,j) needs every F(s',j) with s' < s; B(s,j) needs every F(s',j) (any s':
// F(s',j) for s' <= s directly, and F(S-1,j), hence every F(s',j), through B(S-1,j)) and every
// B(s',j) with s' > s; W(s,j) needs B(s,j) (and so everything B(s,j) needs). These ready times
// do not depend on the lists. Why such an order always deadlocks: say Y is before X in device
// d's list and X transitively needs Y's end. A device runs its compute actions one at a time in
// list order, so X cannot start before Y has ended (Y is earlier in the list), and Y cannot start
// before X has ended (X must end, then every op on the dependency chain from X to Y must run, and
// those need X's end). Neither ever starts: the simulation stops with work left, which is what
// spec §4 calls a dependency cycle, infeasible for every choice of the other devices' lists,
// memory limits, durations (zero included) and offload levels. The cases named in the task
// (B(s,j) before F(s,j), W(s,j) before B(s,j), F(s,j) before F(s-1,j), B(s,j) before B(s+1,j)
// on one device) are special cases. Nothing else is cut: no dominance, no symmetry, no bound.
// brute_force_test.cc checks this against a plain enumeration of all permutations.
#include "tests/brute_force.h"

#include <algorithm>
#include <cstddef>
#include <limits>

#include "model/simulator.h"

namespace optpipe::test_support {
namespace {

class DeviceLists {
 public:
  DeviceLists(const Instance& inst, int device, const std::function<bool(const std::vector<Action>&)>& visit)
      : inst_(inst), visit_(visit) {
    for (int s = 0; s < inst.num_stages(); ++s) {
      if (inst.stages[s].device == device) stages_.push_back(s);
    }
    const std::size_t n = stages_.size();
    const int m = inst.microbatches;
    next_f_.assign(n, 0);
    next_b_.assign(n, 0);
    next_w_.assign(n, 0);
    level_.assign(n, std::vector<double>(m, 0.0));
    pending_r_.assign(n, {});
    r_head_.assign(n, 0);
    compute_left_ = static_cast<int>(n) * m * inst.num_compute_types();
  }

  std::int64_t run() {
    dfs();
    return visited_;
  }

 private:
  // F(s,j), j = next F of stage index i: every F(s',j) of this device with s' < s is placed.
  bool f_ready(std::size_t i) const {
    const int j = next_f_[i];
    if (j >= inst_.microbatches) return false;
    for (std::size_t k = 0; k < i; ++k) {
      if (next_f_[k] <= j) return false;
    }
    return true;
  }
  // B(s,j): every F(s',j) of this device is placed, every B(s',j) with s' > s is placed, and
  // R(s,j) is placed when F(s,j) offloads.
  bool b_ready(std::size_t i) const {
    const int j = next_b_[i];
    if (j >= inst_.microbatches) return false;
    for (std::size_t k = 0; k < stages_.size(); ++k) {
      if (next_f_[k] <= j) return false;
      if (k > i && next_b_[k] <= j) return false;
    }
    if (level_[i][j] > 0) {
      // R(s,j) is placed when it is no longer waiting in the pending queue.
      for (std::size_t q = r_head_[i]; q < pending_r_[i].size(); ++q) {
        if (pending_r_[i][q] == j) return false;
      }
    }
    return true;
  }
  // W(s,j): B(s,j) is placed.
  bool w_ready(std::size_t i) const {
    const int j = next_w_[i];
    return inst_.split_backward && j < inst_.microbatches && next_b_[i] > j;
  }

  void emit() {
    ++visited_;
    if (!visit_(list_)) stop_ = true;
  }

  void dfs() {
    if (stop_) return;
    bool any_pending = false;
    for (std::size_t i = 0; i < stages_.size(); ++i) any_pending |= r_head_[i] < pending_r_[i].size();
    if (compute_left_ == 0 && !any_pending) {
      emit();
      return;
    }
    for (std::size_t i = 0; i < stages_.size() && !stop_; ++i) {
      const int s = stages_[i];
      if (f_ready(i)) {
        const int j = next_f_[i];
        const Stage& st = inst_.stages[s];
        for (double r : inst_.offload_levels) {
          if (r > 0 && !st.offloadable()) continue;
          level_[i][j] = r;
          list_.push_back(make_f(s, j, r));
          ++next_f_[i];
          --compute_left_;
          if (r > 0) pending_r_[i].push_back(j);
          dfs();
          if (r > 0) pending_r_[i].pop_back();
          ++compute_left_;
          --next_f_[i];
          list_.pop_back();
          level_[i][j] = 0;
          if (stop_) return;
        }
      }
      if (b_ready(i)) place(make_b(s, next_b_[i]), next_b_[i]);
      if (w_ready(i)) place(make_w(s, next_w_[i]), next_w_[i]);
      if (r_head_[i] < pending_r_[i].size()) {
        list_.push_back(make_r(s, pending_r_[i][r_head_[i]]));
        ++r_head_[i];
        dfs();
        --r_head_[i];
        list_.pop_back();
      }
    }
  }

  void place(const Action& a, int& next) {
    list_.push_back(a);
    ++next;
    --compute_left_;
    dfs();
    ++compute_left_;
    --next;
    list_.pop_back();
  }

  const Instance& inst_;
  const std::function<bool(const std::vector<Action>&)>& visit_;
  std::vector<int> stages_;                    // this device's stages, increasing
  std::vector<int> next_f_, next_b_, next_w_;  // per stage index: next microbatch to place
  std::vector<std::vector<double>> level_;     // [stage index][j]: level of the placed F
  std::vector<std::vector<int>> pending_r_;    // [stage index]: placed Fs with r > 0, in order
  std::vector<std::size_t> r_head_;            // [stage index]: how many of those have their R placed
  int compute_left_ = 0;
  std::vector<Action> list_;
  std::int64_t visited_ = 0;
  bool stop_ = false;
};

}  // namespace

std::int64_t for_each_device_list(const Instance& instance, int device,
                                  const std::function<bool(const std::vector<Action>&)>& visit) {
  return DeviceLists(instance, device, visit).run();
}

std::vector<std::vector<Action>> device_candidate_lists(const Instance& instance, int device,
                                                        std::int64_t limit) {
  std::vector<std::vector<Action>> out;
  for_each_device_list(instance, device, [&](const std::vector<Action>& list) {
    out.push_back(list);
    return static_cast<std::int64_t>(out.size()) <= limit;
  });
  return out;
}

std::int64_t count_schedules(const Instance& instance, std::int64_t limit) {
  std::int64_t product = 1;
  for (int d = 0; d < instance.num_devices(); ++d) {
    const std::int64_t cap = limit / product;  // product <= limit, so cap >= 1
    std::int64_t count = 0;
    for_each_device_list(instance, d, [&](const std::vector<Action>&) { return ++count <= cap; });
    if (count > cap) return limit == std::numeric_limits<std::int64_t>::max() ? limit : limit + 1;
    product *= count;
  }
  return product;
}

BruteForceResult brute_force_optimum(const Instance& instance, std::int64_t max_schedules) {
  BruteForceResult result;
  if (count_schedules(instance, max_schedules) > max_schedules) {
    result.aborted = true;
    return result;
  }
  const int D = instance.num_devices();
  std::vector<std::vector<std::vector<Action>>> lists(D);
  for (int d = 0; d < D; ++d) lists[d] = device_candidate_lists(instance, d);

  Simulator sim(instance);
  const SimOptions options = SimOptions::quiet();
  Schedule sch;
  sch.instance = instance.name;
  sch.devices.resize(D);
  std::vector<std::size_t> index(D, 0);
  for (int d = 0; d < D; ++d) sch.devices[d] = lists[d][0];
  while (true) {
    const SimResult r = sim.run(sch, options);
    ++result.schedules_enumerated;
    if (r.feasible) {
      ++result.feasible_count;
      if (!result.feasible || r.makespan < result.optimum) {
        if (result.feasible && result.optimum > r.makespan + 1e-9) {
          result.runner_up = result.optimum;
          result.runner_up_schedule = result.best;
        }
        result.feasible = true;
        result.optimum = r.makespan;
        result.best = sch;
      } else if (r.makespan > result.optimum + 1e-9 && r.makespan < result.runner_up) {
        result.runner_up = r.makespan;
        result.runner_up_schedule = sch;
      }
    }
    // Odometer: the last device turns fastest.
    int d = D - 1;
    while (d >= 0 && ++index[d] == lists[d].size()) {
      index[d] = 0;
      sch.devices[d] = lists[d][0];
      --d;
    }
    if (d < 0) break;
    sch.devices[d] = lists[d][index[d]];
  }
  if (result.feasible) {
    result.best.makespan = result.optimum;
    result.best.solver = "brute force";
  }
  return result;
}

}  // namespace optpipe::test_support
