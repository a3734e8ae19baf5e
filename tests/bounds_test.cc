// Tests of the lower bounds of the search (bounds/) and of its branching rule 1
// (search/candidates.h), each against an independent, naive reference.
//
// 1. jackson_preemptive_bound against a unit-step simulation of Jackson's rule on integer data;
//    never above the non-preemptive one-machine optimum (all permutations), never below the
//    largest release + processing + tail; its closed form by tail (jackson_by_tail) against the
//    same simulation.
// 2. compute_heads against a Bellman-Ford longest-path relaxation over an explicit edge list of
//    the precedence DAG plus the memory precedences (recomputed from the instance), at every
//    decision of open simulations driven along random valid schedules.
// 3. The node bound max(critical path, one machine) at every decision of a feasible schedule
//    (random valid schedules, and random dives of the search that keep tight memory busy) never
//    exceeds its makespan, and every head never exceeds the op's start in that schedule; the
//    bound at the root and along the best schedule of tiny instances never exceeds the
//    brute-force optimum.
// 4. branch_candidates without rule 2 returns exactly the actions the spec allows next minus the
//    rule-1 cuts (derived from the lists alone), and along every feasible schedule of tiny
//    instances each next action is a candidate.
// The sweeps along random schedules and dives run as ranges of their cases (tests/case_range.h).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>
#include <numeric>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "model/action.h"
#include "bounds/bound_problem.h"
#include "bounds/channel_bound.h"
#include "bounds/critical_path_bound.h"
#include "bounds/heads.h"
#include "bounds/node_times.h"
#include "bounds/memory_energy_bound.h"
#include "bounds/memory_precedence.h"
#include "bounds/node_bound.h"
#include "bounds/node_transfers.h"
#include "bounds/one_machine_bound.h"
#include "model/instance.h"
#include "model/instance_io.h"
#include "model/schedule.h"
#include "search/candidates.h"
#include "model/simulator.h"
#include "heuristics/registry.h"
#include "tests/brute_force.h"
#include "tests/case_range.h"
#include "tests/test_paths.h"
#include "tests/test_util.h"

namespace optpipe {
namespace {

using test_support::case_range_name;
using test_support::case_ranges;
using test_support::CaseRange;

constexpr double kEps = 1e-9;
constexpr double kInf = std::numeric_limits<double>::infinity();
const double kNaN = std::numeric_limits<double>::quiet_NaN();

bool known(double x) { return x == x; }

// ---- helpers -------------------------------------------------------------------------------

// The node's times, as the solver builds them.
NodeTimes node_times(const BoundProblem& p, const Simulator::Snapshot& st, double t) {
  NodeTimes out;
  fill_node_times(p, st, t, out);
  return out;
}

// Drives an open simulation along the lists of `sch`, one action per decision; `visit` sees every
// decision before its action is appended. Returns how the simulation ended.
Simulator::Step::Kind drive(Simulator& sim, const Schedule& sch,
                            const std::function<void(const Simulator::Step&)>& visit) {
  sim.start_open();
  std::vector<std::size_t> next(sch.devices.size(), 0);
  Simulator::Step step = sim.advance();
  while (step.kind == Simulator::Step::Kind::kDecision) {
    visit(step);
    const auto& list = sch.devices[step.device];
    if (next[step.device] >= list.size()) {
      ADD_FAILURE() << "a decision for device " << step.device << " whose list is complete";
      return Simulator::Step::Kind::kDeadlock;
    }
    sim.append(step.device, list[next[step.device]++]);
    step = sim.advance();
  }
  return step.kind;
}

std::string schedule_text(const Schedule& sch) {
  std::string out;
  for (int d = 0; d < sch.num_devices(); ++d) {
    out += "\n  d" + std::to_string(d) + ":";
    for (const Action& a : sch.devices[d]) out += " " + to_string(a);
  }
  return out;
}

std::string instance_label(const Instance& inst, int i) {
  return "case " + std::to_string(i) + " (D=" + std::to_string(inst.num_devices()) +
         " S=" + std::to_string(inst.num_stages()) + " m=" + std::to_string(inst.microbatches) +
         (inst.split_backward ? " split" : " fused") + ")";
}

// Random instances with memory pressure and offload; every fourth one is tighter still (room for
// little more than one activation), so that a forward often waits for the previous microbatch.
Instance pressured_instance(std::mt19937& rng, int i, int max_devices = 4, int max_microbatches = 6) {
  test_support::RandomInstanceOptions o;
  o.max_devices = max_devices;
  o.max_microbatches = max_microbatches;
  o.tight_memory = i % 3 != 2;
  o.offloadable_probability = i % 5 == 4 ? 0.0 : 0.7;
  Instance inst = test_support::random_instance(rng, o);
  if (i % 4 == 3) test_support::squeeze_memory(inst, 1.05);
  if (i % 8 == 6) {
    // Slow PCIe: transfers longer than the compute ops (offloading can cost more than it saves;
    // the channels can be the bottleneck).
    std::uniform_real_distribution<double> slow(3.0, 12.0);
    for (Stage& st : inst.stages) {
      if (!st.offloadable()) continue;
      st.offload = *st.offload * slow(rng);
      st.reload = *st.reload * slow(rng);
    }
  }
  if (i % 6 == 1 && inst.split_backward) {
    // Weight activations close to the whole activation: B frees little, W most (as in the
    // shipped GPT-like instances), which is what memory rule B and the W terms of rule F read.
    std::uniform_real_distribution<double> frac(0.6, 1.0);
    for (Stage& st : inst.stages) st.weight_activation = std::round(st.activation * frac(rng));
  }
  if (i % 7 == 5) {
    // Zero durations (allowed by the spec) and a large comm.
    std::uniform_int_distribution<int> coin(0, 2);
    for (Stage& st : inst.stages) {
      if (coin(rng) == 0) st.forward = 0;
      if (coin(rng) == 0) st.backward = 0;
      if (coin(rng) == 0) st.weight = 0;
      if (st.offloadable() && coin(rng) == 0) st.offload = 0.0;
    }
    for (double& c : inst.comm) c = 2.5;
  }
  return inst;
}

// Tiny instances for the brute force (2 devices, 2 microbatches), with offload and tight memory.
std::vector<Instance> tiny_instances(int wanted, std::int64_t max_schedules, unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<Instance> out;
  for (int i = 0; i < 5000 && static_cast<int>(out.size()) < wanted; ++i) {
    Instance inst = pressured_instance(rng, i, 2, 2);
    if (inst.num_devices() < 2 && i % 5 != 0) continue;
    if (test_support::count_schedules(inst, max_schedules) > max_schedules) continue;
    inst.name = "tiny-" + std::to_string(i);
    out.push_back(std::move(inst));
  }
  EXPECT_EQ(static_cast<int>(out.size()), wanted);
  return out;
}

// ---- 1. Jackson's preemptive bound ----------------------------------------------------------

// Jackson's rule in unit steps on integer data: at each instant the released unfinished job with
// the largest tail runs for one unit (a job with nothing left completes at once).
double naive_jackson(const std::vector<OneMachineJob>& jobs) {
  const std::size_t n = jobs.size();
  std::vector<double> left(n);
  std::vector<char> done(n, 0);
  for (std::size_t i = 0; i < n; ++i) left[i] = jobs[i].processing;
  std::size_t finished = 0;
  double t = 0, value = 0;
  while (finished < n) {
    int best = -1;
    for (std::size_t i = 0; i < n; ++i) {
      if (done[i] || jobs[i].release > t) continue;
      if (best < 0 || jobs[i].tail > jobs[best].tail) best = static_cast<int>(i);
    }
    if (best < 0) {
      t += 1;
      continue;
    }
    if (left[best] > 0) {
      left[best] -= 1;
      t += 1;
    }
    if (left[best] == 0) {
      done[best] = 1;
      ++finished;
      value = std::max(value, t + jobs[best].tail);
    }
  }
  return value;
}

// The non-preemptive one-machine optimum: every order, each job at max(previous end, release).
double non_preemptive_optimum(std::vector<OneMachineJob> jobs) {
  std::vector<int> order(jobs.size());
  std::iota(order.begin(), order.end(), 0);
  double best = kInf;
  do {
    double t = 0, value = 0;
    for (int i : order) {
      t = std::max(t, jobs[i].release) + jobs[i].processing;
      value = std::max(value, t + jobs[i].tail);
    }
    best = std::min(best, value);
  } while (std::next_permutation(order.begin(), order.end()));
  return jobs.empty() ? 0.0 : best;
}

TEST(Bounds, JacksonMatchesUnitStepSimulation) {
  std::mt19937 rng(7);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  int compared_with_optimum = 0, strictly_below = 0;
  for (int c = 0; c < 20000; ++c) {
    const int n = pick(0, 8);
    std::vector<OneMachineJob> jobs;
    const bool small_processing = c % 3 == 0;  // many zero processing times
    for (int i = 0; i < n; ++i) {
      jobs.push_back({static_cast<double>(pick(0, 10)),
                      static_cast<double>(pick(0, small_processing ? 2 : 10)),
                      static_cast<double>(pick(0, 10))});
    }
    std::string text;
    for (const auto& j : jobs) {
      text += " (r=" + std::to_string(static_cast<int>(j.release)) +
              " p=" + std::to_string(static_cast<int>(j.processing)) +
              " q=" + std::to_string(static_cast<int>(j.tail)) + ")";
    }
    SCOPED_TRACE("jobs:" + text);
    std::vector<OneMachineJob> copy = jobs;
    const double got = jackson_preemptive_bound(copy);
    EXPECT_EQ(got, naive_jackson(jobs));
    double simple = 0;
    for (const auto& j : jobs) simple = std::max(simple, j.release + j.processing + j.tail);
    EXPECT_GE(got, simple);
    if (n <= 6) {
      const double opt = non_preemptive_optimum(jobs);
      EXPECT_LE(got, opt);
      ++compared_with_optimum;
      strictly_below += got < opt;
    }
  }
  EXPECT_GT(compared_with_optimum, 10000);
  EXPECT_GT(strictly_below, 10);  // the relaxation is not trivially tight
}

// The release sort takes an insertion sort up to 64 jobs and a heapsort past it; both against the
// unit-step simulation on more jobs, with many equal releases (a device relaxation's jobs are
// mostly released at its free time) and runs sorted already.
TEST(Bounds, JacksonMatchesUnitStepSimulationOnLongerLists) {
  std::mt19937 rng(11);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  int past_insertion_sort = 0;
  for (int c = 0; c < 600; ++c) {
    const int n = pick(9, 90);
    const int shape = c % 3;  // 0: random releases, 1: most at one instant, 2: a few sorted runs
    std::vector<OneMachineJob> jobs;
    for (int i = 0; i < n; ++i) {
      const int release = shape == 0 ? pick(0, 60) : shape == 1 ? (pick(0, 3) == 0 ? pick(0, 60) : 5) : (i % 4) * 3 + i / 4;
      jobs.push_back({static_cast<double>(release), static_cast<double>(pick(0, 6)), static_cast<double>(pick(0, 40))});
    }
    past_insertion_sort += n > 64;
    std::vector<OneMachineJob> copy = jobs;
    const double got = jackson_preemptive_bound(copy);
    ASSERT_EQ(got, naive_jackson(jobs)) << "case " << c << ", " << n << " jobs, shape " << shape;
    ASSERT_TRUE(std::is_sorted(copy.begin(), copy.end(),
                               [](const OneMachineJob& a, const OneMachineJob& b) { return a.release < b.release; }));
  }
  EXPECT_GT(past_insertion_sort, 100);
}

// The closed form by tail (jackson_by_tail, what the device relaxation's search asks at each of
// its nodes) against the unit-step simulation: jobs by tail, descending (ties as they come), all
// released at t or later, most at t; it answers exactly when at most max_late are released after
// t, and then with the rule's value (integer data: the sums are exact).
TEST(Bounds, JacksonClosedFormByTailMatchesUnitStepSimulation) {
  std::mt19937 rng(13);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  int answered = 0, declined = 0, late_answered = 0;
  for (int c = 0; c < 20000; ++c) {
    const int n = pick(0, 12);
    const int t = pick(0, 6);
    const int late_share = pick(0, 3);  // 0: none late, else about one in 4 - late_share
    std::vector<OneMachineJob> jobs;
    int late = 0;
    for (int i = 0; i < n; ++i) {
      const bool is_late = late_share > 0 && pick(0, 3 - late_share) == 0;
      const int r = is_late ? t + pick(1, 12) : t;
      late += is_late;
      jobs.push_back({static_cast<double>(r), static_cast<double>(pick(0, 6)), static_cast<double>(pick(0, 8))});
    }
    std::stable_sort(jobs.begin(), jobs.end(), [](const OneMachineJob& a, const OneMachineJob& b) { return a.tail > b.tail; });
    const int max_late = pick(0, 6);
    std::vector<OneMachineJob> scratch(static_cast<std::size_t>(max_late) + 1);
    const double got = jackson_by_tail(jobs.data(), n, t, scratch.data(), max_late);
    if (late > max_late) {
      ASSERT_EQ(got, -std::numeric_limits<double>::infinity()) << "case " << c;
      ++declined;
      continue;
    }
    ASSERT_EQ(got, naive_jackson(jobs)) << "case " << c << ", " << n << " jobs, " << late << " late, t " << t;
    ++answered;
    late_answered += late > 0;
  }
  EXPECT_GT(answered, 10000);
  EXPECT_GT(declined, 1000);
  EXPECT_GT(late_answered, 5000);
}

// With a threshold (`enough`, what the device relaxation's pruning asks) the closed form stops
// early only where the value reaches it: below it the value itself, else a lower bound on the
// value of at least the threshold (integer data, thresholds around the value, half-integers
// included so that none ties).
TEST(Bounds, JacksonClosedFormByTailStopsOnlyAtItsThreshold) {
  std::mt19937 rng(17);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  int below = 0, reached = 0, early = 0;
  for (int c = 0; c < 20000; ++c) {
    const int n = pick(1, 12);
    const int t = pick(0, 6);
    std::vector<OneMachineJob> jobs;
    for (int i = 0; i < n; ++i) {
      const int r = pick(0, 2) == 0 ? t + pick(1, 12) : t;
      jobs.push_back({static_cast<double>(r), static_cast<double>(pick(0, 6)), static_cast<double>(pick(0, 8))});
    }
    std::stable_sort(jobs.begin(), jobs.end(), [](const OneMachineJob& a, const OneMachineJob& b) { return a.tail > b.tail; });
    std::vector<OneMachineJob> scratch(jobs.size());
    const double full = jackson_by_tail(jobs.data(), n, t, scratch.data(), n);
    ASSERT_EQ(full, naive_jackson(jobs)) << "case " << c;
    const double enough = full + 0.5 * pick(-8, 4);
    const double got = jackson_by_tail(jobs.data(), n, t, scratch.data(), n, enough);
    if (full < enough) {
      ASSERT_EQ(got, full) << "case " << c << ", threshold " << enough;
      ++below;
    } else {
      ASSERT_GE(got, enough) << "case " << c;
      ASSERT_LE(got, full) << "case " << c;
      ++reached;
      early += got < full;
    }
  }
  EXPECT_GT(below, 3000);
  EXPECT_GT(reached, 10000);
  EXPECT_GT(early, 500);  // it does stop early, with less than the value
}

// ---- 2. heads ------------------------------------------------------------------------------

// The memory quantities of bound_problem.cc, recomputed from the instance by counting.
struct MemoryRule {
  bool pressure = false;       // the stage has an activation that fits at all
  double room = 0;             // cap - activation
  double hold_f = 0;           // least bytes held between F and B unless fully offloaded
  double hold_w = 0;           // M_W (split)
  int lag_wb = 0;              // B(s, j) after W(s, j - lag_wb); 0: none
  double full_offload = kInf;  // time of a full offload; +inf when the stage cannot offload all
};

std::vector<MemoryRule> naive_memory_rules(const Instance& inst) {
  const int m = inst.microbatches;
  std::vector<MemoryRule> rules(inst.num_stages());
  // The largest c with act + c·unit <= cap, capped at m (more never binds).
  auto fits = [&](double cap, double act, double unit) {
    int c = 0;
    while (c < m && act + (c + 1) * unit <= cap) ++c;
    return c;
  };
  for (int s = 0; s < inst.num_stages(); ++s) {
    const Stage& st = inst.stages[s];
    const Device& dev = inst.devices[st.device];
    const double cap = dev.memory_limit + kMemoryTolerance - dev.static_memory;
    if (st.activation <= 0 || st.activation > cap) continue;
    MemoryRule& r = rules[s];
    r.pressure = true;
    r.room = cap - st.activation;
    double below_full = 0;
    if (st.offloadable()) {
      for (double level : inst.offload_levels) {
        if (level < 1) below_full = std::max(below_full, level);
        if (level >= 1) r.full_offload = *st.offload;
      }
    }
    r.hold_f = (1 - below_full) * st.activation;
    r.hold_w = inst.split_backward ? st.weight_activation : 0.0;
    if (r.hold_w > 0) {
      const int k = fits(cap, st.activation, r.hold_w);
      if (k + 1 < m) r.lag_wb = k + 1;
    }
  }
  return rules;
}

// Rule F of memory_precedence.h by brute force: every w <= b <= j and every set Z of the
// microbatches of [b, j) that can hold 0 (level 1 and reload not started, or not listed and the
// stage can offload fully); the set's offloads run in index order on the channel after the
// listed ones (`zero_lb`: the listed ones' lower bounds; NaN: cannot be zeroed) and after
// `chain0`. The earliest max(B(s, b-1) end, W(s, w-1) end, last offload end) over the
// combinations that fit.
double naive_forward_release(const MemoryRule& rule, double activation, int j, const std::vector<double>& fin_f,
                             const std::vector<double>& fin_b, const std::vector<double>& fin_w,
                             const std::vector<double>& level, const std::vector<double>& zero_lb,
                             const std::vector<char>& reloading, double chain0) {
  if (!rule.pressure || j == 0) return 0.0;
  double best = kInf;
  for (int b = 0; b <= j; ++b) {
    for (int w = 0; w <= b; ++w) {
      const int n = j - b;
      for (int mask = 0; mask < (1 << n); ++mask) {
        double kept = rule.hold_w * (b - w), last = 0, chain = chain0;
        bool ok = true;
        for (int k = 0; k < n && ok; ++k) {
          const int i = b + k;
          const bool listed = known(level[i]);
          const bool zeroed = (mask >> k) & 1;
          if (!zeroed) {
            kept += !listed ? rule.hold_f : (level[i] >= 1 || reloading[i] ? activation : (1 - level[i]) * activation);
            continue;
          }
          if (listed) {
            ok = level[i] >= 1 && !reloading[i];
            if (ok) last = std::max(last, zero_lb[i]);
          } else {
            ok = rule.full_offload < kInf;
            chain = std::max(chain, fin_f[i]) + rule.full_offload;
            last = std::max(last, chain);
          }
        }
        if (!ok || kept > rule.room + 1e-9 * std::max(1.0, std::fabs(rule.room))) continue;
        double t = std::max(b > 0 ? fin_b[b - 1] : 0.0, w > 0 ? fin_w[w - 1] : 0.0);
        best = std::min(best, std::max(t, last));
      }
    }
  }
  return best;
}

// How often the node-level memory rules of naive_heads raised a head (coverage).
struct NaiveRuleCounts {
  long long reload_room = 0;     // rule R delayed a reload past its other constraints
  long long reload_later_offload = 0;  // ... further because a later forward still offloads
  long long backward_later = 0;  // rule B with the later started forwards raised a B
};
NaiveRuleCounts naive_counts;

// Longest paths by repeated relaxation over an explicit edge list: head = the largest of the
// device's free time and every predecessor's finish + lag; finish = known end or head + duration.
// With `nt`, the offloads and reloads of the listed offloaded microbatches are recomputed by
// walking each channel's requests of a stage in order, and B waits for its reload.
void naive_heads(const Instance& inst, const NodeTimes& node, std::vector<double>& head,
                 std::vector<double>& finish, const NodeTransfers* nt = nullptr) {
  const int S = inst.num_stages(), m = inst.microbatches, T = inst.num_compute_types();
  auto op = [&](int type, int s, int j) { return (type * S + s) * m + j; };
  const std::vector<MemoryRule> rules = naive_memory_rules(inst);
  const BoundProblem groups(inst);  // only for the PCIe group numbering
  struct Edge {
    int from, to;
    double lag;
  };
  std::vector<Edge> edges;
  for (int s = 0; s < S; ++s) {
    for (int j = 0; j < m; ++j) {
      if (s > 0) edges.push_back({op(0, s - 1, j), op(0, s, j), inst.comm_after(s - 1)});
      if (j > 0) edges.push_back({op(0, s, j - 1), op(0, s, j), 0.0});
      edges.push_back({op(0, s, j), op(1, s, j), 0.0});
      if (s + 1 < S) edges.push_back({op(1, s + 1, j), op(1, s, j), inst.comm_after(s)});
      if (j > 0) edges.push_back({op(1, s, j - 1), op(1, s, j), 0.0});
      if (T == 3) {
        edges.push_back({op(1, s, j), op(2, s, j), 0.0});
        if (j > 0) edges.push_back({op(2, s, j - 1), op(2, s, j), 0.0});
        const int k = rules[s].lag_wb;
        if (k > 0 && j >= k) edges.push_back({op(2, s, j - k), op(1, s, j), 0.0});
      }
    }
  }
  head.assign(3 * S * m, kNaN);
  finish.assign(3 * S * m, 0.0);
  std::vector<double> dur(3 * S * m, 0.0);
  for (int type = 0; type < T; ++type) {
    for (int s = 0; s < S; ++s) {
      for (int j = 0; j < m; ++j) {
        const int o = op(type, s, j);
        dur[o] = inst.duration(static_cast<OpType>(type), s);
        if (known(node.end[o])) {
          finish[o] = node.end[o];
        } else {
          head[o] = node.device_free[inst.stages[s].device];
          finish[o] = head[o] + dur[o];
        }
      }
    }
  }
  auto raise = [&](int o, double earliest) {
    if (known(node.end[o]) || earliest <= head[o]) return false;
    head[o] = earliest;
    finish[o] = earliest + dur[o];
    return true;
  };
  std::vector<double> off_lb(S * m, kNaN), rel_lb(S * m, kNaN);
  for (bool changed = true; changed;) {
    changed = false;
    for (const Edge& e : edges) changed |= raise(e.to, finish[e.from] + e.lag);
    // Transfers of the listed offloaded microbatches, stage by stage in request order.
    if (nt) {
      for (int s = 0; s < S; ++s) {
        const int g = groups.group_of_device[inst.stages[s].device];
        double off_prev = 0, rel_prev = 0;
        for (int j = 0; j < m; ++j) {
          const int sj = s * m + j;
          if (!(nt->level[sj] > 0)) continue;
          const double r = nt->level[sj];
          double e = known(nt->offload_end[sj])
                         ? nt->offload_end[sj]
                         : std::max({finish[op(0, s, j)], off_prev, nt->d2h_free[g]}) + r * *inst.stages[s].offload;
          double re = nt->reload_end[sj];
          if (!known(re)) {
            // Rule R by enumeration: b B ends and w W ends among the earlier microbatches, the
            // later started forwards not fully offloaded holding their part.
            const double act = inst.stages[s].activation;
            double extra = 0;
            for (int i = j + 1; i < m && known(node.end[op(0, s, i)]); ++i) {
              if (nt->level[s * m + i] < 1) extra += (1 - nt->level[s * m + i]) * act;
            }
            auto room_start = [&](double extra) {
              if (!rules[s].pressure) return 0.0;
              double best = kInf;
              for (int b = 0; b <= j; ++b) {
                for (int w = 0; w <= b; ++w) {
                  const double held = extra + act * (j - b) + rules[s].hold_w * (b - w);
                  if (held > rules[s].room + 1e-9 * std::max(1.0, std::fabs(rules[s].room))) continue;
                  best = std::min(best, std::max(b > 0 ? finish[op(1, s, b - 1)] : 0.0,
                                                 w > 0 && T == 3 ? finish[op(2, s, w - 1)] : 0.0));
                }
              }
              return best;
            };
            // The later started forwards at level 1 hold their activation until their offload
            // ends: every subset Z of them may be at 0, and then the start waits for Z's offloads.
            std::vector<double> later_off;
            for (int i = j + 1; i < m && known(node.end[op(0, s, i)]); ++i) {
              if (!(nt->level[s * m + i] >= 1)) continue;
              later_off.push_back(known(nt->offload_end[s * m + i])
                                      ? nt->offload_end[s * m + i]
                                      : std::max({node.end[op(0, s, i)], nt->now, nt->d2h_free[g]}) +
                                            *inst.stages[s].offload);
            }
            const double other = std::max({e, rel_prev, nt->h2d_free[g]});
            double start = kInf;
            for (unsigned z = 0; z < (1u << later_off.size()); ++z) {
              double at = other, held = extra;
              for (std::size_t k = 0; k < later_off.size(); ++k) {
                if (z >> k & 1u) {
                  at = std::max(at, later_off[k]);
                } else {
                  held += act;
                }
              }
              start = std::min(start, std::max(at, room_start(held)));
            }
            naive_counts.reload_room += start > other + kEps;
            naive_counts.reload_later_offload += start > std::max(other, room_start(extra)) + kEps;
            re = start + r * *inst.stages[s].reload;
          }
          off_lb[sj] = off_prev = e;
          rel_lb[sj] = rel_prev = re;
          changed |= raise(op(1, s, j), re);
        }
        // Rule B with the later forwards that started and hold their part (level < 1): the
        // largest count c of pending W with act + extra + c·M_W <= cap.
        if (!rules[s].pressure) continue;
        for (int j = 0; j < m; ++j) {
          double extra = 0;
          for (int i = j + 1; i < m && known(node.end[op(0, s, i)]); ++i) {
            if (nt->level[s * m + i] < 1) extra += (1 - nt->level[s * m + i]) * inst.stages[s].activation;
          }
          if (extra <= 0) continue;
          const double slack = 1e-9 * std::max(1.0, std::fabs(rules[s].room));
          if (extra > rules[s].room + slack) {
            const bool raised = raise(op(1, s, j), kInf);
            naive_counts.backward_later += raised;
            changed |= raised;
            continue;
          }
          if (T < 3 || rules[s].hold_w <= 0) continue;
          int c = 0;
          while (c < m && extra + (c + 1) * rules[s].hold_w <= rules[s].room + slack) ++c;
          if (j - c - 1 >= 0) {
            const bool raised = raise(op(1, s, j), finish[op(2, s, j - c - 1)]);
            naive_counts.backward_later += raised;
            changed |= raised;
          }
        }
      }
    }
    for (int s = 0; s < S; ++s) {
      if (!rules[s].pressure) continue;
      std::vector<double> fin_f(m), fin_b(m), fin_w(m), level(m, kNaN), zero_lb(m, kNaN);
      std::vector<char> reloading(m, 0);
      double chain0 = 0;
      if (nt) chain0 = std::max(nt->now, nt->d2h_free[groups.group_of_device[inst.stages[s].device]]);
      for (int j = 0; j < m; ++j) {
        fin_f[j] = finish[op(0, s, j)];
        fin_b[j] = finish[op(1, s, j)];
        fin_w[j] = T == 3 ? finish[op(2, s, j)] : 0.0;
        if (nt) {
          level[j] = nt->level[s * m + j];
          reloading[j] = known(nt->reload_start[s * m + j]);
          zero_lb[j] = off_lb[s * m + j];
          if (known(zero_lb[j])) chain0 = std::max(chain0, zero_lb[j]);
        }
      }
      for (int j = 1; j < m; ++j) {
        changed |= raise(op(0, s, j), naive_forward_release(rules[s], inst.stages[s].activation, j, fin_f, fin_b,
                                                            fin_w, level, zero_lb, reloading, chain0));
      }
    }
  }
}

// Along 800 random schedules, in ranges of them.
using HeadsAlongRandomSchedules = test_support::CaseRangeTest;

TEST_P(HeadsAlongRandomSchedules, MatchNaiveLongestPaths) {
  const CaseRange range = GetParam();
  std::mt19937 rng(2024);
  int nodes = 0, with_memory_lag = 0, with_offload_release = 0, lag_raised = 0, reload_raised = 0;
  naive_counts = {};
  std::vector<double> head, finish, want_head, want_finish, plain_head, plain_finish;
  for (int i = 0; i < range.end; ++i) {
    const Instance inst = pressured_instance(rng, i);
    const Schedule sch = test_support::random_valid_schedule(inst, rng, 0.5);
    if (!range.contains(i)) continue;  // drawn only to keep the engine in step
    SCOPED_TRACE(instance_label(inst, i) + schedule_text(sch));
    const BoundProblem p(inst);
    const std::vector<MemoryRule> rules = naive_memory_rules(inst);
    bool lag = false, off = false;
    for (int s = 0; s < p.S; ++s) {
      EXPECT_EQ(known(p.room[s]), rules[s].pressure) << "stage " << s;
      if (rules[s].pressure) {
        EXPECT_NEAR(p.room[s], rules[s].room, 1e-3) << "stage " << s;
        EXPECT_NEAR(p.hold_f[s], rules[s].hold_f, 1e-3) << "stage " << s;
        EXPECT_NEAR(p.hold_w[s], rules[s].hold_w, 1e-3) << "stage " << s;
        EXPECT_EQ(p.offload_release[s], rules[s].full_offload) << "stage " << s;
      }
      EXPECT_EQ(p.lag_wb[s], rules[s].lag_wb) << "stage " << s;
      const bool binds = rules[s].pressure && (p.m - 1) * std::max(rules[s].hold_f, rules[s].hold_w) > rules[s].room;
      lag |= binds || rules[s].lag_wb > 0;
      off |= binds && rules[s].full_offload < kInf;
    }
    with_memory_lag += lag;
    with_offload_release += off;
    Simulator sim(inst);
    NodeTransfers nt;
    drive(sim, sch, [&](const Simulator::Step& step) {
      const NodeTimes times = node_times(p, sim.snapshot(), step.time);
      fill_node_transfers(p, sim.snapshot(), step.time, nt);
      // Twice: static (as the branching reads them) and with the node's transfers (as bound() does).
      for (const NodeTransfers* with : {static_cast<const NodeTransfers*>(nullptr), static_cast<const NodeTransfers*>(&nt)}) {
        compute_heads(p, times, head, finish, with);
        naive_heads(inst, times, want_head, want_finish, with);
        ++nodes;
        for (int o = 0; o < p.num_ops(); ++o) {
          const int type = o / (p.S * p.m);
          if (type >= p.types) continue;
          if (known(want_head[o]) != known(head[o]) ||
              (known(head[o]) && std::fabs(want_head[o] - head[o]) > kEps) ||
              std::fabs(want_finish[o] - finish[o]) > kEps) {
            ADD_FAILURE() << "op " << o << " (type " << type << " stage " << (o / p.m) % p.S << " mb "
                          << o % p.m << ") at the decision of device " << step.device << " at t=" << step.time
                          << (with ? " with" : " without") << " transfers: head " << head[o] << " finish "
                          << finish[o] << ", naive head " << want_head[o] << " finish " << want_finish[o];
            return;
          }
          if (type == 0 && known(head[o]) && !with) {
            // Is the head above what the plain DAG alone gives? (Coverage of the memory rules.)
            const int s = (o / p.m) % p.S, j = o % p.m;
            double plain = times.device_free[p.device_of[s]];
            if (s > 0) plain = std::max(plain, finish[p.op(0, s - 1, j)] + p.comm_after[s - 1]);
            if (j > 0) plain = std::max(plain, finish[p.op(0, s, j - 1)]);
            lag_raised += head[o] > plain + kEps;
          }
        }
        if (!with) {
          plain_head = head;
        } else {
          for (int o = 0; o < p.num_ops(); ++o) reload_raised += known(head[o]) && head[o] > plain_head[o] + kEps;
        }
      }
    });
  }
  std::printf(
      "[ bounds   ] heads: %d nodes, %d instances with memory rules (%d with offload releases), "
      "%d forward heads raised by memory, %d heads raised by the node's transfers; naive rule R delayed "
      "%lld reloads (%lld further for a later forward's offload), rule B with later forwards raised %lld heads\n",
      nodes, with_memory_lag, with_offload_release, lag_raised, reload_raised, naive_counts.reload_room,
      naive_counts.reload_later_offload, naive_counts.backward_later);
  EXPECT_GT(nodes, range.share(20000));
  EXPECT_GT(with_memory_lag, range.share(200));
  EXPECT_GT(with_offload_release, range.share(100));
  EXPECT_GT(lag_raised, range.share(1000));
  EXPECT_GT(reload_raised, range.share(1000));
  EXPECT_GT(naive_counts.reload_room, range.share(100));
  EXPECT_GT(naive_counts.reload_later_offload, range.share(100));
  EXPECT_GT(naive_counts.backward_later, range.share(0));
}
INSTANTIATE_TEST_SUITE_P(Seed2024, HeadsAlongRandomSchedules, testing::ValuesIn(case_ranges(800, 2)),
                         case_range_name);

// ---- 3. validity of the node bound ---------------------------------------------------------

struct ValidityCounts {
  int schedules = 0, nodes = 0;
  int tight_nodes = 0;         // bound = the makespan
  int tight_heads = 0;         // head after the node's time = the op's start
  int memory_heads = 0;        // forward heads raised by the memory precedences ...
  int tight_memory_heads = 0;  // ... and equal to the op's start
  int channel_nodes = 0;       // nodes where the channel bound is positive
  int channel_best = 0;        // ... and above the critical path and the one-machine bounds
  int energy_best = 0;         // nodes where the memory energy bound is the best part
  int tight_tails = 0;         // ops whose end + static tail = the makespan
};

// The node bound with every part in full (bounds/node_bound.h, node_bound_parts), and what its
// parts computed on the way.
struct NodeBound {
  double cp = 0, om = 0, ch = 0, me = 0;
  double value() const { return std::max({cp, om, ch, me}); }
};

NodeBound node_bound(const BoundProblem& p, const Simulator::Snapshot& st, double t, std::vector<double>& head,
                     std::vector<double>& finish, NodeTransfers& nt, std::vector<double>& off_lb,
                     std::vector<double>& rel_lb) {
  NodeBoundWork w;
  const NodeBoundParts parts = node_bound_parts(p, st, t, w);
  head.swap(w.head);
  finish.swap(w.finish);
  off_lb.swap(w.offload_lb);
  rel_lb.swap(w.reload_lb);
  nt = std::move(w.transfers);
  return {parts.critical_path, parts.one_machine, parts.channel, parts.memory_energy};
}

// Drives the feasible schedule `sch` and checks, at every decision, that the node bound (and
// each of its parts) is at most its makespan, every head at most the op's start, every lower
// bound on a transfer's end at most its end; and that every op's end + its static tail is at most
// the makespan. False after a failure.
bool check_bounds_along(const Instance& inst, const Schedule& sch, ValidityCounts& n) {
  const BoundProblem p(inst);
  const SimOptions quiet = SimOptions::quiet();
  const SimResult closed = simulate(inst, sch, quiet);
  if (!closed.feasible) {
    ADD_FAILURE() << "not feasible: " << closed.reason;
    return false;
  }
  ++n.schedules;
  // First the completed run, for every op's start and every transfer's times.
  Simulator full(inst);
  if (drive(full, sch, [](const Simulator::Step&) {}) != Simulator::Step::Kind::kDone ||
      full.snapshot().makespan != closed.makespan) {
    ADD_FAILURE() << "the open run differs from the closed one";
    return false;
  }
  const std::vector<double> start = full.snapshot().start;
  const double makespan = closed.makespan;
  std::vector<double> off_end(p.S * p.m, kNaN), rel_end(p.S * p.m, kNaN);
  for (const Transfer& tr : full.snapshot().transfers) {
    (tr.kind == Transfer::Kind::kOffload ? off_end : rel_end)[tr.stage * p.m + tr.mb] = tr.end;
  }
  for (int o = 0; o < p.num_ops(); ++o) {
    const int type = o / (p.S * p.m);
    if (type >= p.types) continue;
    const int s = (o / p.m) % p.S, j = o % p.m;
    const double end = full.snapshot().end[o];
    n.tight_tails += end + p.op_tail(type, s, j) >= makespan - kEps;
    if (end + p.op_tail(type, s, j) > makespan + kEps) {
      ADD_FAILURE() << "op " << o << " (type " << type << " stage " << s << " mb " << j << "): end " << end
                    << " + static tail " << p.op_tail(type, s, j) << " > makespan " << makespan;
      return false;
    }
  }
  std::vector<double> head, finish, off_lb, rel_lb;
  NodeTransfers nt;
  NodeBoundWork search_work;
  Simulator sim(inst);
  bool failed = false;
  drive(sim, sch, [&](const Simulator::Step& step) {
    if (failed) return;
    const NodeBound b = node_bound(p, sim.snapshot(), step.time, head, finish, nt, off_lb, rel_lb);
    const NodeTimes times = node_times(p, sim.snapshot(), step.time);
    ++n.nodes;
    n.tight_nodes += b.value() >= makespan - kEps;
    n.channel_nodes += b.ch > 0;
    n.channel_best += b.ch > std::max(b.cp, b.om) + kEps;
    n.energy_best += b.me > std::max({b.cp, b.om, b.ch}) + kEps;
    // The search's bound (node_bound, with its early exit at a cutoff) against the parts in
    // full: the same value below the cutoff, at least the cutoff when it cuts, never above. (The
    // energy part may stop once it cannot beat the others, which rounds differently: 1e-12.)
    for (double cut : {kInf, b.value(), 0.5 * b.value(), std::max(b.cp, b.om) + 1e-3}) {
      const NodeBoundParts s = optpipe::node_bound(p, sim.snapshot(), step.time, search_work, cut, true);
      const double v = s.value(), tol = 1e-12 * std::max(1.0, b.value());
      const bool bad = v > b.value() + tol || (b.value() < cut && std::abs(v - b.value()) > tol) ||
                       (b.value() >= cut && v < cut - tol);
      const double best = s.best() == BoundPart::kCriticalPath ? s.critical_path
                          : s.best() == BoundPart::kOneMachine ? s.one_machine
                          : s.best() == BoundPart::kChannel    ? s.channel
                                                               : s.memory_energy;
      if (bad || best != v) {
        ADD_FAILURE() << "node_bound with cutoff " << cut << ": " << v << " (best part " << best
                      << "), the parts in full give " << b.value() << " at t=" << step.time;
        failed = true;
      }
    }
    if (b.value() > makespan + kEps) {
      ADD_FAILURE() << "at the decision of device " << step.device << " at t=" << step.time << ": critical path "
                    << b.cp << ", one machine " << b.om << ", channel " << b.ch << ", memory energy " << b.me
                    << " > makespan " << makespan;
      failed = true;
    }
    for (int sj = 0; sj < p.S * p.m && !failed; ++sj) {
      if (known(off_lb[sj]) && off_lb[sj] > off_end[sj] + kEps) {
        ADD_FAILURE() << "offload of " << sj / p.m << "." << sj % p.m << ": lower bound " << off_lb[sj]
                      << " > its end " << off_end[sj] << " at t=" << step.time;
        failed = true;
      }
      if (known(rel_lb[sj]) && rel_lb[sj] > rel_end[sj] + kEps) {
        ADD_FAILURE() << "reload of " << sj / p.m << "." << sj % p.m << ": lower bound " << rel_lb[sj]
                      << " > its end " << rel_end[sj] << " at t=" << step.time;
        failed = true;
      }
    }
    for (int o = 0; o < p.num_ops() && !failed; ++o) {
      if (!known(head[o])) continue;
      n.tight_heads += head[o] >= start[o] - kEps && head[o] > step.time + kEps;
      if (o < p.S * p.m) {  // a forward: count the heads that the memory precedences raise
        const int s = o / p.m, j = o % p.m;
        double plain = times.device_free[p.device_of[s]];
        if (s > 0) plain = std::max(plain, finish[p.op(0, s - 1, j)] + p.comm_after[s - 1]);
        if (j > 0) plain = std::max(plain, finish[p.op(0, s, j - 1)]);
        if (head[o] > plain + kEps) {
          ++n.memory_heads;
          n.tight_memory_heads += head[o] >= start[o] - kEps;
        }
      }
      if (head[o] > start[o] + kEps) {
        ADD_FAILURE() << "op " << o << " (type " << o / (p.S * p.m) << " stage " << (o / p.m) % p.S << " mb "
                      << o % p.m << "): head " << head[o] << " > its start " << start[o]
                      << " at the decision of device " << step.device << " at t=" << step.time;
        failed = true;
      }
    }
  });
  return !failed;
}

void print_counts(const char* what, const ValidityCounts& n) {
  std::printf(
      "[ bounds   ] %s: %d feasible schedules, %d nodes, %d with a bound equal to the makespan, %d heads "
      "after the node's time equal to the op's start; %d forward heads raised by memory, %d of them equal "
      "to the start; %d nodes with a channel bound, %d where it is the best part; %d where the memory "
      "energy bound is; %d ops with end + tail = makespan\n",
      what, n.schedules, n.nodes, n.tight_nodes, n.tight_heads, n.memory_heads, n.tight_memory_heads,
      n.channel_nodes, n.channel_best, n.energy_best, n.tight_tails);
}

// Along the first 1500 feasible ones of random schedules (the sweep's cases), in ranges of them.
using NodeBoundAlongRandomSchedules = test_support::CaseRangeTest;

TEST_P(NodeBoundAlongRandomSchedules, NeverExceedsTheMakespanOfACompletion) {
  const CaseRange range = GetParam();
  std::mt19937 rng(99);
  ValidityCounts n;
  const SimOptions quiet = SimOptions::quiet();
  int feasible = 0;  // the feasible schedules drawn so far
  for (int i = 0; i < 10000 && feasible < range.end; ++i) {
    const Instance inst = pressured_instance(rng, i);
    const Schedule sch = test_support::random_valid_schedule(inst, rng, 0.5);
    if (!simulate(inst, sch, quiet).feasible) continue;
    if (!range.contains(feasible++)) continue;  // drawn only to keep the engine in step
    SCOPED_TRACE(instance_label(inst, i) + schedule_text(sch));
    if (!check_bounds_along(inst, sch, n)) return;
  }
  print_counts("random schedules", n);
  EXPECT_EQ(n.schedules, range.size());
  EXPECT_GT(n.nodes, range.share(30000));
  EXPECT_GT(n.tight_nodes, range.share(3000));
  EXPECT_GT(n.tight_heads, range.share(3000));
  // The channel and memory energy bounds are not vacuous: each is sometimes the best part.
  EXPECT_GT(n.channel_best, range.share(100));
  EXPECT_GT(n.energy_best, range.share(30));
}
INSTANTIATE_TEST_SUITE_P(Seed99, NodeBoundAlongRandomSchedules, testing::ValuesIn(case_ranges(1500, 3)),
                         case_range_name);

// A random dive of the search: at each decision a random rule-1 candidate (a B, W or R three
// times as likely as an F, which keeps memory low), skipping those whose simulation deadlocks at
// once. Feasible schedules that keep the memory limits busy; nullopt when the dive gets stuck.
std::optional<Schedule> random_dive(const Instance& inst, std::mt19937& rng) {
  const BoundProblem p(inst);
  Simulator sim(inst);
  sim.start_open();
  Simulator::Step step = sim.advance();
  std::vector<double> head, finish;
  std::vector<Candidate> cands;
  CandidateStats stats;
  while (step.kind == Simulator::Step::Kind::kDecision) {
    compute_heads(p, node_times(p, sim.snapshot(), step.time), head, finish);
    branch_candidates(inst, p, sim.snapshot(), step.device, step.time, head, false, cands, stats);
    const Simulator::Snapshot node = sim.snapshot();
    std::vector<double> weight;
    for (const Candidate& c : cands) weight.push_back(c.action.type == OpType::F ? 1.0 : 3.0);
    bool moved = false;
    for (std::size_t tries = 0; tries < cands.size() && !moved; ++tries) {
      const std::size_t k = std::discrete_distribution<std::size_t>(weight.begin(), weight.end())(rng);
      weight[k] = 0;
      sim.restore(node);
      sim.append(step.device, cands[k].action);
      const Simulator::Step next = sim.advance();
      if (next.kind == Simulator::Step::Kind::kDeadlock) continue;
      step = next;
      moved = true;
    }
    if (!moved) return std::nullopt;
  }
  if (step.kind != Simulator::Step::Kind::kDone) return std::nullopt;
  Schedule sch;
  sch.instance = inst.name;
  sch.devices = sim.snapshot().owned.devices;
  return sch;
}

// Along the first 1200 dives that do not get stuck (the sweep's cases), in ranges of them.
using NodeBoundAlongRandomDives = test_support::CaseRangeTest;

TEST_P(NodeBoundAlongRandomDives, NeverExceedsTheMakespan) {
  const CaseRange range = GetParam();
  std::mt19937 rng(123);
  ValidityCounts n;
  int stuck = 0, dives = 0;  // dives: the completed dives drawn so far
  for (int i = 0; i < 8000 && dives < range.end; ++i) {
    Instance inst = pressured_instance(rng, i);
    if (i % 3 == 2) continue;  // only the instances with tight memory
    const std::optional<Schedule> sch = random_dive(inst, rng);
    if (!sch) {
      stuck += range.contains(dives) ? 1 : 0;
      continue;
    }
    if (!range.contains(dives++)) continue;  // drawn only to keep the engine in step
    SCOPED_TRACE(instance_label(inst, i) + schedule_text(*sch));
    if (!check_bounds_along(inst, *sch, n)) return;
  }
  print_counts("random dives", n);
  std::printf("[ bounds   ] %d dives got stuck\n", stuck);
  EXPECT_EQ(n.schedules, range.size());
  EXPECT_GT(n.memory_heads, range.share(3000));
  EXPECT_GT(n.tight_memory_heads, range.share(1000));
  EXPECT_GT(n.energy_best, range.share(50));
}
INSTANTIATE_TEST_SUITE_P(Seed123, NodeBoundAlongRandomDives, testing::ValuesIn(case_ranges(1200, 3)),
                         case_range_name);

TEST(Bounds, RootBoundNeverExceedsTheBruteForceOptimum) {
  int feasible = 0, nodes = 0;
  std::vector<double> head, finish, off_lb, rel_lb;
  NodeTransfers nt;
  for (const Instance& inst : tiny_instances(60, 5000, 31337)) {
    SCOPED_TRACE(inst.name + " " + instance_label(inst, 0));
    const test_support::BruteForceResult bf = test_support::brute_force_optimum(inst, 5000);
    ASSERT_FALSE(bf.aborted);
    if (!bf.feasible) continue;
    ++feasible;
    const BoundProblem p(inst);
    // Every node along the brute force's best schedule (the root first) has that schedule as a
    // completion, so its bound is at most the optimum.
    Simulator sim(inst);
    bool root = true;
    const auto end = drive(sim, bf.best, [&](const Simulator::Step& step) {
      const NodeBound b = node_bound(p, sim.snapshot(), step.time, head, finish, nt, off_lb, rel_lb);
      EXPECT_LE(b.value(), bf.optimum + kEps)
          << (root ? "root" : "node") << " of device " << step.device << " at t=" << step.time << ": cp " << b.cp
          << " om " << b.om << " channel " << b.ch << " energy " << b.me
          << "; brute force's best:" << schedule_text(bf.best);
      if (root) EXPECT_GT(b.value(), 0);
      root = false;
      ++nodes;
    });
    EXPECT_EQ(end, Simulator::Step::Kind::kDone);
    EXPECT_NEAR(sim.snapshot().makespan, bf.optimum, kEps);
  }
  EXPECT_GT(feasible, 30);
  EXPECT_GT(nodes, 300);
}

// Rule F against its brute force on synthetic nodes: random stages under pressure, random
// nondecreasing finishes, random decided levels (a prefix of the microbatches), random started
// reloads and random lower bounds on the listed offloads' ends (nondecreasing, as heads.cc makes
// them).
TEST(Bounds, ForwardMemoryHeadMatchesSubsetEnumeration) {
  std::mt19937 rng(77);
  auto uni = [&](double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(rng); };
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  int cases = 0, delayed = 0, by_offload = 0;
  for (int c = 0; c < 3000; ++c) {
    Instance inst = pressured_instance(rng, c, 2, 7);
    inst.microbatches = std::max(inst.microbatches, 2);
    const BoundProblem p(inst);
    const std::vector<MemoryRule> rules = naive_memory_rules(inst);
    const int m = p.m;
    for (int s = 0; s < p.S; ++s) {
      if (!rules[s].pressure) continue;
      std::vector<double> finish(p.num_ops(), 0.0), fin_f(m), fin_b(m), fin_w(m);
      double tf = uni(0, 2), tb = tf + uni(0, 5), tw = tb;
      for (int j = 0; j < m; ++j) {
        tf += uni(0, 2);
        tb = std::max(tb, tf) + uni(0, 3);
        tw = std::max(tw, tb) + uni(0, 2);
        finish[p.op(0, s, j)] = fin_f[j] = tf;
        finish[p.op(1, s, j)] = fin_b[j] = tb;
        finish[p.op(2, s, j)] = fin_w[j] = p.types == 3 ? tw : 0.0;
      }
      const bool with_node = c % 2 == 1;
      NodeTransfers nt;
      std::vector<double> off_lb(p.S * m, kNaN), level(m, kNaN), zero_lb(m, kNaN);
      std::vector<char> reloading(m, 0);
      double chain0 = 0;
      if (with_node) {
        nt.now = uni(0, 3);
        nt.level.assign(p.S * m, kNaN);
        nt.reload_start.assign(p.S * m, kNaN);
        nt.d2h_free.assign(p.G, nt.now + (pick(0, 1) ? uni(0, 2) : 0.0));
        chain0 = std::max(nt.now, nt.d2h_free[p.group_of_device[p.device_of[s]]]);
        const int listed = pick(0, m);
        double chain = 0;
        for (int j = 0; j < listed; ++j) {
          const double r = inst.offload_levels[pick(0, static_cast<int>(inst.offload_levels.size()) - 1)];
          const double lv = inst.stages[s].offloadable() ? r : 0.0;
          nt.level[s * m + j] = level[j] = lv;
          if (lv > 0) {
            chain = std::max(chain, fin_f[j]) + uni(0, 2);
            off_lb[s * m + j] = zero_lb[j] = chain;
            chain0 = std::max(chain0, chain);
            if (pick(0, 3) == 0) {
              nt.reload_start[s * m + j] = chain + uni(0, 1);
              reloading[j] = 1;
            }
          }
        }
      }
      const double act = inst.stages[s].activation;
      for (int j = 1; j < m; ++j) {
        // Only the prefix before j is listed when F(s, j) has a head.
        std::vector<double> lv = level, zl = zero_lb;
        const double got = forward_memory_head(p, finish, s, j, with_node ? &nt : nullptr,
                                               with_node ? off_lb.data() : nullptr);
        const double want =
            naive_forward_release(rules[s], act, j, fin_f, fin_b, fin_w, lv, zl, reloading, chain0);
        ++cases;
        delayed += got > 0;
        by_offload += got > 0 && got < fin_b[j - 1] - kEps;
        ASSERT_NEAR(got, want, kEps) << "case " << c << " stage " << s << " j " << j
                                     << (with_node ? " with" : " without") << " node";
      }
    }
  }
  std::printf("[ bounds   ] rule F: %d cases, %d delayed, %d released earlier than the previous B\n", cases,
              delayed, by_offload);
  EXPECT_GT(cases, 5000);
  EXPECT_GT(delayed, 2000);
  EXPECT_GT(by_offload, 200);
}

// The channel bound against the non-preemptive optimum of the same transfers (all orders) at the
// nodes of random schedules with offloads: never above it, never below the largest
// release + processing + tail, and never above the makespan (checked with the node bound).
TEST(Bounds, ChannelBoundBelowTheSequenceOptimumOfItsTransfers) {
  std::mt19937 rng(4711);
  int compared = 0, positive = 0;
  std::vector<double> head, finish, off_lb, rel_lb;
  std::vector<OneMachineJob> scratch;
  NodeTransfers nt;
  for (int i = 0; i < 600; ++i) {
    const Instance inst = pressured_instance(rng, i, 3, 4);
    if (!inst.can_offload()) continue;
    const Schedule sch = test_support::random_valid_schedule(inst, rng, 0.8);
    SCOPED_TRACE(instance_label(inst, i) + schedule_text(sch));
    const BoundProblem p(inst);
    Simulator sim(inst);
    drive(sim, sch, [&](const Simulator::Step& step) {
      node_bound(p, sim.snapshot(), step.time, head, finish, nt, off_lb, rel_lb);
      const double got = channel_bound(p, nt, finish, rel_lb, scratch);
      // The transfers of each channel, listed naively.
      double want = 0, simple = 0;
      bool all_small = true;
      for (int g = 0; g < p.G; ++g) {
        for (int reload = 0; reload < 2; ++reload) {
          std::vector<OneMachineJob> jobs;
          for (int s = 0; s < p.S; ++s) {
            if (p.group_of_device[inst.stages[s].device] != g) continue;
            for (int j = 0; j < p.m; ++j) {
              const int sj = s * p.m + j;
              if (!known(nt.level[sj]) || nt.level[sj] <= 0) continue;
              const double r = nt.level[sj];
              const double q = inst.duration(OpType::B, s) + p.op_tail(1, s, j);
              if (!reload && !known(nt.offload_start[sj])) {
                jobs.push_back({std::max(nt.d2h_free[g], finish[p.op(0, s, j)]), r * *inst.stages[s].offload,
                                r * *inst.stages[s].reload + q});
              }
              if (reload && !known(nt.reload_start[sj])) {
                jobs.push_back({std::max(nt.h2d_free[g], rel_lb[sj] - r * *inst.stages[s].reload), r * *inst.stages[s].reload, q});
              }
            }
          }
          for (const auto& jb : jobs) simple = std::max(simple, jb.release + jb.processing + jb.tail);
          if (jobs.size() > 7) {
            all_small = false;
          } else {
            want = std::max(want, non_preemptive_optimum(jobs));
          }
        }
      }
      EXPECT_GE(got, simple - kEps);
      if (all_small) {
        ++compared;
        EXPECT_LE(got, want + kEps) << "at t=" << step.time;
      }
      positive += got > 0;
    });
  }
  EXPECT_GT(compared, 3000);
  EXPECT_GT(positive, 1000);
}

// The root bound of the shipped memory-tight instances: never above the best heuristic's
// makespan (a feasible schedule), and at least what the memory rules, the reload-aware heads and
// the memory energy bound gave when they were written (the bound without them: 211.01, 230.52,
// 211.01 and 614.49), so that a change that weakens them shows.
// The energy bound's W executions at weight g / c and its left and right deficits (memory_energy_
// bound.h) raised its part: 173.96 -> 179.83, 312.65 -> 318.63 and 472.50 -> 476.50.
TEST(Bounds, RootBoundsOfTheShippedTightInstances) {
  struct Case {
    const char* name;
    double at_least;
    double energy_at_least;
  };
  const Case cases[] = {{"offload-fast-pcie-4x8", 228.8, 179.8},
                        {"offload-slow-pcie-4x8", 318.6, 318.6},
                        {"shared-pcie-4x8", 228.8, 142.1},
                        {"gpt-8x24-tight", 654.4, 476.4}};
  std::vector<double> head, finish, off_lb, rel_lb;
  NodeTransfers nt;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const Instance inst = load_instance(std::string(OPTPIPE_SOURCE_DIR) + "/instances/" + c.name + ".json");
    const BoundProblem p(inst);
    Simulator sim(inst);
    sim.start_open();
    const Simulator::Step step = sim.advance();
    ASSERT_EQ(step.kind, Simulator::Step::Kind::kDecision);
    const NodeBound b = node_bound(p, sim.snapshot(), step.time, head, finish, nt, off_lb, rel_lb);
    const BestResult heur = run_all_heuristics(inst, false);
    ASSERT_NE(heur.best_result(), nullptr);
    std::printf("[ bounds   ] %s: root bound %.2f (cp %.2f, one machine %.2f, energy %.2f), best heuristic %.2f\n",
                c.name, b.value(), b.cp, b.om, b.me, heur.best_result()->sim.makespan);
    EXPECT_LE(b.value(), heur.best_result()->sim.makespan + kEps);
    EXPECT_GE(b.value(), c.at_least);
    EXPECT_GE(b.me, c.energy_at_least);
  }
}

// The best known schedule of offload-slow-pcie-4x8 (341.92 ms; tests/offload_witness_test.cc
// has its story): it offloads microbatches of stages 0 and 1, so it holds memory in the pattern
// the memory energy bound reasons about. Every node along it has it as a completion: every part
// of the node bound, every head and every static tail stays at or below it.
TEST(Bounds, NodeBoundNeverExceedsTheOffloadWitness) {
  const Instance inst = load_instance(std::string(OPTPIPE_SOURCE_DIR) + "/instances/offload-slow-pcie-4x8.json");
  const Schedule sch = test_support::offload_slow_witness(inst);
  const SimOptions quiet = SimOptions::quiet();
  const SimResult res = simulate(inst, sch, quiet);
  ASSERT_TRUE(res.feasible) << res.reason;
  EXPECT_NEAR(res.makespan, 341.92, 0.005);
  ValidityCounts n;
  EXPECT_TRUE(check_bounds_along(inst, sch, n));
  print_counts("offload witness", n);
  EXPECT_GT(n.energy_best, 10);
}

// Rule R with a later forward that was offloaded (memory_precedence.h): one device, room for
// 1.5 activations, F0@1 R0 F1@1. F1 waits for F0's offload (t = 2) and takes the memory back at
// once (an F start comes before a reload start), so the reload of microbatch 0 waits for F1's
// offload to end (t = 4) and ends at 5:
//
//   compute  |F0|  |F1|
//   D2H         |o0|  |o1|
//   H2D                  |r0|      <- needs the room F1 holds until o1 ends
//            0  1  2  3  4  5
//
// At the decision after F1 (t = 3) the reload's lower bound is exactly 5. Without the later
// forward's bytes it would be 4 (the node's time plus the reload).
TEST(Bounds, ReloadWaitsForALaterForwardsOffload) {
  Instance inst;
  inst.name = "reload-after-later-offload";
  inst.microbatches = 2;
  inst.split_backward = false;
  const double act = 1e9;
  inst.devices.push_back({10e9 + 1.5 * act, 10e9, 0});
  Stage st;
  st.device = 0;
  st.forward = st.backward = 1;
  st.activation = act;
  st.offload = st.reload = 1;
  inst.stages.push_back(st);
  const BoundProblem p(inst);
  Simulator sim(inst);
  sim.start_open();
  Simulator::Step step = sim.advance();
  for (const Action& a : {make_f(0, 0, 1.0), make_r(0, 0), make_f(0, 1, 1.0)}) {
    ASSERT_EQ(step.kind, Simulator::Step::Kind::kDecision);
    sim.append(step.device, a);
    step = sim.advance();
  }
  ASSERT_EQ(step.kind, Simulator::Step::Kind::kDecision);
  ASSERT_NEAR(step.time, 3.0, kEps);
  NodeTransfers nt;
  fill_node_transfers(p, sim.snapshot(), step.time, nt);
  std::vector<double> head, finish, off_lb, rel_lb;
  compute_heads(p, node_times(p, sim.snapshot(), step.time), head, finish, &nt, &off_lb, &rel_lb);
  EXPECT_NEAR(rel_lb[0], 5.0, kEps);
  EXPECT_NEAR(finish[p.op(1, 0, 0)], 6.0, kEps);  // B0 after the reload
  // The completion R1 B0 B1 confirms it: the reload of microbatch 0 ends at 5.
  for (const Action& a : {make_r(0, 1), make_b(0, 0), make_b(0, 1)}) {
    ASSERT_EQ(step.kind, Simulator::Step::Kind::kDecision);
    sim.append(step.device, a);
    step = sim.advance();
  }
  ASSERT_EQ(step.kind, Simulator::Step::Kind::kDone);
  EXPECT_NEAR(sim.snapshot().rel_end[0], 5.0, kEps);
}

// ---- 4. branching candidates ---------------------------------------------------------------

// What the spec allows device d to append next, minus rule 1, from the lists alone.
std::set<std::string> naive_candidates(const Instance& inst, const std::vector<std::vector<Action>>& lists,
                                       int d) {
  const int S = inst.num_stages(), m = inst.microbatches;
  // listed[type][s][j], level[s][j] (of listed Fs)
  std::vector<std::vector<std::vector<char>>> listed(
      4, std::vector<std::vector<char>>(S, std::vector<char>(m, 0)));
  std::vector<std::vector<double>> level(S, std::vector<double>(m, 0.0));
  for (const auto& list : lists) {
    for (const Action& a : list) {
      listed[static_cast<int>(a.type)][a.stage][a.mb] = 1;
      if (a.type == OpType::F) level[a.stage][a.mb] = a.r;
    }
  }
  auto count = [&](int type, int s) {
    int c = 0;
    while (c < m && listed[type][s][c]) ++c;
    return c;
  };
  std::set<std::string> out;
  for (int s = 0; s < S; ++s) {
    if (inst.stages[s].device != d) continue;
    const bool prev_here = s > 0 && inst.stages[s - 1].device == d;
    const bool next_here = s + 1 < S && inst.stages[s + 1].device == d;
    if (const int j = count(0, s); j < m && !(prev_here && !listed[0][s - 1][j])) {
      for (double r : inst.offload_levels) {
        if (r == 0 || inst.stages[s].offloadable()) out.insert(to_string(make_f(s, j, r)));
      }
    }
    if (const int j = count(1, s); j < m && listed[0][s][j] && !(level[s][j] > 0 && !listed[3][s][j]) &&
                                   !(next_here && !listed[1][s + 1][j])) {
      out.insert(to_string(make_b(s, j)));
    }
    if (const int j = count(2, s); inst.split_backward && j < m && listed[1][s][j]) {
      out.insert(to_string(make_w(s, j)));
    }
    for (int j = 0; j < m; ++j) {
      if (listed[0][s][j] && level[s][j] > 0 && !listed[3][s][j]) {
        out.insert(to_string(make_r(s, j)));
        break;
      }
    }
  }
  return out;
}

std::set<std::string> candidate_set(const Instance& inst, const BoundProblem& p, const Simulator& sim,
                                    const Simulator::Step& step, bool active_rule, std::vector<double>& head,
                                    std::vector<double>& finish) {
  compute_heads(p, node_times(p, sim.snapshot(), step.time), head, finish);
  std::vector<Candidate> cands;
  CandidateStats stats;
  branch_candidates(inst, p, sim.snapshot(), step.device, step.time, head, active_rule, cands, stats);
  std::set<std::string> out;
  for (const Candidate& c : cands) {
    EXPECT_GE(c.earliest_start, step.time - kEps) << to_string(c.action);
    EXPECT_TRUE(out.insert(to_string(c.action)).second) << "duplicate candidate " << to_string(c.action);
  }
  return out;
}

std::string set_text(const std::set<std::string>& set) {
  std::string out;
  for (const auto& s : set) out += " " + s;
  return out;
}

TEST(Bounds, RuleOneCandidatesAreExactlyTheAllowedActions) {
  std::mt19937 rng(555);
  int nodes = 0, cut_by_rule_two = 0;
  std::vector<double> head, finish;
  for (int i = 0; i < 800; ++i) {
    const Instance inst = pressured_instance(rng, i);
    const Schedule sch = test_support::random_valid_schedule(inst, rng, 0.5);
    SCOPED_TRACE(instance_label(inst, i) + schedule_text(sch));
    const BoundProblem p(inst);
    Simulator sim(inst);
    bool failed = false;
    drive(sim, sch, [&](const Simulator::Step& step) {
      if (failed) return;
      ++nodes;
      const std::set<std::string> got = candidate_set(inst, p, sim, step, false, head, finish);
      const std::set<std::string> want = naive_candidates(inst, sim.snapshot().owned.devices, step.device);
      if (got != want) {
        ADD_FAILURE() << "device " << step.device << " at t=" << step.time << ": candidates" << set_text(got)
                      << ", allowed minus rule 1:" << set_text(want);
        failed = true;
        return;
      }
      // Rule 2 only removes candidates.
      const std::set<std::string> active = candidate_set(inst, p, sim, step, true, head, finish);
      EXPECT_TRUE(std::includes(got.begin(), got.end(), active.begin(), active.end()));
      EXPECT_FALSE(active.empty());
      cut_by_rule_two += static_cast<int>(got.size() - active.size());
    });
  }
  EXPECT_GT(nodes, 10000);
  EXPECT_GT(cut_by_rule_two, 100);
}

TEST(Bounds, EveryFeasibleScheduleFollowsRuleOneCandidates) {
  int schedules = 0, feasible = 0, decisions = 0;
  std::vector<double> head, finish;
  const SimOptions quiet = SimOptions::quiet();
  for (const Instance& inst : tiny_instances(40, 3000, 4242)) {
    SCOPED_TRACE(inst.name + " " + instance_label(inst, 0));
    const BoundProblem p(inst);
    std::vector<std::vector<std::vector<Action>>> lists;
    for (int d = 0; d < inst.num_devices(); ++d) lists.push_back(test_support::device_candidate_lists(inst, d));
    // Every schedule of the brute force's product; the feasible ones are driven decision by decision.
    std::vector<std::size_t> pick(inst.num_devices(), 0);
    Simulator closed(inst), sim(inst);
    bool failed = false;
    while (!failed) {
      Schedule sch;
      sch.instance = inst.name;
      for (int d = 0; d < inst.num_devices(); ++d) sch.devices.push_back(lists[d][pick[d]]);
      ++schedules;
      if (closed.run(sch, quiet).feasible) {
        ++feasible;
        drive(sim, sch, [&](const Simulator::Step& step) {
          if (failed) return;
          ++decisions;
          const Action& next = sch.devices[step.device][sim.snapshot().owned.devices[step.device].size()];
          const std::set<std::string> got = candidate_set(inst, p, sim, step, false, head, finish);
          if (!got.contains(to_string(next))) {
            ADD_FAILURE() << "device " << step.device << " at t=" << step.time << ": the feasible schedule"
                          << schedule_text(sch) << "\ntakes " << to_string(next) << ", candidates"
                          << set_text(got);
            failed = true;
          }
        });
      }
      int d = 0;
      while (d < inst.num_devices() && ++pick[d] == lists[d].size()) pick[d++] = 0;
      if (d == inst.num_devices()) break;
    }
  }
  std::printf("[ bounds   ] candidates: %d schedules, %d feasible, %d decisions\n", schedules, feasible,
              decisions);
  EXPECT_GT(feasible, 1000);
}

}  // namespace
}  // namespace optpipe
