// Tests of the lower bounds of the search (engine/bounds) and of its branching rule 1
// (engine/search/candidates.h), each against an independent, naive reference.
//
// 1. jackson_preemptive_bound against a unit-step simulation of Jackson's rule on integer data;
//    never above the non-preemptive one-machine optimum (all permutations), never below the
//    largest release + processing + tail.
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

#include "engine/action.h"
#include "engine/bounds/bound_problem.h"
#include "engine/bounds/critical_path_bound.h"
#include "engine/bounds/heads.h"
#include "engine/bounds/one_machine_bound.h"
#include "engine/instance.h"
#include "engine/schedule.h"
#include "engine/search/candidates.h"
#include "engine/simulator.h"
#include "tests/brute_force.h"
#include "tests/test_util.h"

namespace optpipe {
namespace {

constexpr double kEps = 1e-9;
constexpr double kInf = std::numeric_limits<double>::infinity();
const double kNaN = std::numeric_limits<double>::quiet_NaN();

bool known(double x) { return x == x; }

// ---- helpers -------------------------------------------------------------------------------

// The node's times, exactly as solver.cc's fill_times builds them.
NodeTimes node_times(const BoundProblem& p, const Simulator::State& st, double t) {
  NodeTimes out;
  const int n = p.num_ops();
  out.end.resize(n);
  out.makespan_so_far = st.makespan;
  for (int o = 0; o < n; ++o) {
    const double e = st.end[o];
    if (known(e)) {
      out.end[o] = e;
    } else if (known(st.start[o])) {
      const int type = o / (p.S * p.m);
      const int s = (o / p.m) % p.S;
      out.end[o] = st.start[o] + p.dur[type * p.S + s];
      out.makespan_so_far = std::max(out.makespan_so_far, out.end[o]);
    } else {
      out.end[o] = kNaN;
    }
  }
  out.device_free.resize(p.D);
  for (int d = 0; d < p.D; ++d) out.device_free[d] = std::max(t, st.running[d] ? st.run_end[d] : st.now[d]);
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
  testing::RandomInstanceOptions o;
  o.max_devices = max_devices;
  o.max_microbatches = max_microbatches;
  o.tight_memory = i % 3 != 2;
  o.offloadable_probability = i % 5 == 4 ? 0.0 : 0.7;
  Instance inst = testing::random_instance(rng, o);
  if (i % 4 == 3) testing::squeeze_memory(inst, 1.05);
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
    if (testing::count_schedules(inst, max_schedules) > max_schedules) continue;
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

// ---- 2. heads ------------------------------------------------------------------------------

// The memory precedences of bound_problem.cc, recomputed from the instance by counting.
struct MemoryRule {
  int lag_b = 0, lag_w = 0;    // 0: none
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
    double below_full = 0;
    if (st.offloadable()) {
      for (double r : inst.offload_levels) {
        if (r < 1) below_full = std::max(below_full, r);
        if (r >= 1) rules[s].full_offload = *st.offload;
      }
    }
    const double held = (1 - below_full) * st.activation;
    if (held > 0) {
      const int k = fits(cap, st.activation, held);
      if (k + 1 < m) rules[s].lag_b = k + 1;
    }
    const double wact = inst.split_backward ? st.weight_activation : 0.0;
    if (!st.offloadable() && wact > 0) {
      const int k = fits(cap, st.activation, wact);
      if (k + 1 < m) rules[s].lag_w = k + 1;
    }
  }
  return rules;
}

// Longest paths by repeated relaxation over an explicit edge list: head = the largest of the
// device's free time and every predecessor's finish + lag; finish = known end or head + duration.
void naive_heads(const Instance& inst, const NodeTimes& node, std::vector<double>& head,
                 std::vector<double>& finish) {
  const int S = inst.num_stages(), m = inst.microbatches, T = inst.num_compute_types();
  auto op = [&](int type, int s, int j) { return (type * S + s) * m + j; };
  const std::vector<MemoryRule> rules = naive_memory_rules(inst);
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
        const int k = rules[s].lag_w;
        if (k > 0 && j >= k) edges.push_back({op(2, s, j - k), op(0, s, j), 0.0});
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
  // The earliest time `need` microbatches of stage s can have released their activation: b by
  // their B (FIFO: microbatches 0..b-1, B(s, b-1) ended) and o others by a full offload; those
  // are among microbatches b.., so the o-th ends no earlier than F(s, b)'s end + o offloads nor
  // than F(s, b+o-1)'s end + one offload.
  auto release = [&](int s, int need) {
    double best = kInf;
    for (int b = need; b >= 0; --b) {
      const int o = need - b;
      if (o > 0 && rules[s].full_offload == kInf) break;
      double t = b > 0 ? finish[op(1, s, b - 1)] : 0.0;
      if (o > 0) {
        t = std::max(t, finish[op(0, s, b)] + o * rules[s].full_offload);
        t = std::max(t, finish[op(0, s, b + o - 1)] + rules[s].full_offload);
      }
      best = std::min(best, t);
    }
    return best;
  };
  auto raise = [&](int o, double earliest) {
    if (known(node.end[o]) || earliest <= head[o]) return false;
    head[o] = earliest;
    finish[o] = earliest + dur[o];
    return true;
  };
  for (bool changed = true; changed;) {
    changed = false;
    for (const Edge& e : edges) changed |= raise(e.to, finish[e.from] + e.lag);
    for (int s = 0; s < S; ++s) {
      const int k = rules[s].lag_b;
      for (int j = k; k > 0 && j < m; ++j) changed |= raise(op(0, s, j), release(s, j - k + 1));
    }
  }
}

TEST(Bounds, HeadsMatchNaiveLongestPaths) {
  std::mt19937 rng(2024);
  int nodes = 0, with_memory_lag = 0, with_offload_release = 0, lag_raised = 0;
  std::vector<double> head, finish, want_head, want_finish;
  for (int i = 0; i < 800; ++i) {
    const Instance inst = pressured_instance(rng, i);
    const Schedule sch = testing::random_valid_schedule(inst, rng, 0.5);
    SCOPED_TRACE(instance_label(inst, i) + schedule_text(sch));
    const BoundProblem p(inst);
    const std::vector<MemoryRule> rules = naive_memory_rules(inst);
    bool lag = false, off = false;
    for (int s = 0; s < p.S; ++s) {
      EXPECT_EQ(p.lag_b[s], rules[s].lag_b) << "stage " << s;
      EXPECT_EQ(p.lag_w[s], rules[s].lag_w) << "stage " << s;
      EXPECT_EQ(p.offload_release[s], rules[s].full_offload) << "stage " << s;
      lag |= rules[s].lag_b > 0 || rules[s].lag_w > 0;
      off |= rules[s].lag_b > 0 && rules[s].full_offload < kInf;
    }
    with_memory_lag += lag;
    with_offload_release += off;
    Simulator sim(inst);
    drive(sim, sch, [&](const Simulator::Step& step) {
      const NodeTimes times = node_times(p, sim.state(), step.time);
      compute_heads(p, times, head, finish);
      naive_heads(inst, times, want_head, want_finish);
      ++nodes;
      for (int o = 0; o < p.num_ops(); ++o) {
        const int type = o / (p.S * p.m);
        if (type >= p.types) continue;
        if (known(want_head[o]) != known(head[o]) ||
            (known(head[o]) && std::fabs(want_head[o] - head[o]) > kEps) ||
            std::fabs(want_finish[o] - finish[o]) > kEps) {
          ADD_FAILURE() << "op " << o << " (type " << type << " stage " << (o / p.m) % p.S << " mb "
                        << o % p.m << ") at the decision of device " << step.device << " at t=" << step.time
                        << ": head " << head[o] << " finish " << finish[o] << ", naive head " << want_head[o]
                        << " finish " << want_finish[o];
          return;
        }
        if (type == 0 && known(head[o])) {
          // Is the head above what the plain DAG alone gives? (Coverage of the memory rules.)
          const int s = (o / p.m) % p.S, j = o % p.m;
          double plain = times.device_free[p.device_of[s]];
          if (s > 0) plain = std::max(plain, finish[p.op(0, s - 1, j)] + p.comm_after[s - 1]);
          if (j > 0) plain = std::max(plain, finish[p.op(0, s, j - 1)]);
          lag_raised += head[o] > plain + kEps;
        }
      }
    });
  }
  std::printf(
      "[ bounds   ] heads: %d nodes, %d instances with memory lags (%d with offload releases), "
      "%d forward heads raised by memory\n",
      nodes, with_memory_lag, with_offload_release, lag_raised);
  EXPECT_GT(nodes, 10000);
  EXPECT_GT(with_memory_lag, 200);
  EXPECT_GT(with_offload_release, 100);
  EXPECT_GT(lag_raised, 1000);
}

// ---- 3. validity of the node bound ---------------------------------------------------------

struct ValidityCounts {
  int schedules = 0, nodes = 0;
  int tight_nodes = 0;         // bound = the makespan
  int tight_heads = 0;         // head after the node's time = the op's start
  int memory_heads = 0;        // forward heads raised by the memory precedences ...
  int tight_memory_heads = 0;  // ... and equal to the op's start
};

// Drives the feasible schedule `sch` and checks, at every decision, that the node bound is at
// most its makespan and every head at most the op's start. False after a failure.
bool check_bounds_along(const Instance& inst, const Schedule& sch, ValidityCounts& n) {
  const BoundProblem p(inst);
  SimOptions quiet;
  quiet.record_timeline = false;
  quiet.record_memory = false;
  const SimResult closed = simulate(inst, sch, quiet);
  if (!closed.feasible) {
    ADD_FAILURE() << "not feasible: " << closed.reason;
    return false;
  }
  ++n.schedules;
  // First the completed run, for every op's start.
  Simulator full(inst);
  if (drive(full, sch, [](const Simulator::Step&) {}) != Simulator::Step::Kind::kDone ||
      full.state().makespan != closed.makespan) {
    ADD_FAILURE() << "the open run differs from the closed one";
    return false;
  }
  const std::vector<double> start = full.state().start;
  const double makespan = closed.makespan;
  std::vector<double> head, finish;
  std::vector<OneMachineJob> jobs;
  Simulator sim(inst);
  bool failed = false;
  drive(sim, sch, [&](const Simulator::Step& step) {
    if (failed) return;
    const NodeTimes times = node_times(p, sim.state(), step.time);
    compute_heads(p, times, head, finish);
    const double cp = critical_path_bound(p, times, finish);
    const double om = one_machine_bound(p, head, jobs);
    ++n.nodes;
    n.tight_nodes += std::max(cp, om) >= makespan - kEps;
    if (cp > makespan + kEps || om > makespan + kEps) {
      ADD_FAILURE() << "at the decision of device " << step.device << " at t=" << step.time
                    << ": critical path " << cp << ", one machine " << om << " > makespan " << makespan;
      failed = true;
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
      "to the start\n",
      what, n.schedules, n.nodes, n.tight_nodes, n.tight_heads, n.memory_heads, n.tight_memory_heads);
}

TEST(Bounds, NodeBoundNeverExceedsTheMakespanOfACompletion) {
  std::mt19937 rng(99);
  ValidityCounts n;
  SimOptions quiet;
  quiet.record_timeline = false;
  quiet.record_memory = false;
  for (int i = 0; i < 10000 && n.schedules < 1500; ++i) {
    const Instance inst = pressured_instance(rng, i);
    const Schedule sch = testing::random_valid_schedule(inst, rng, 0.5);
    if (!simulate(inst, sch, quiet).feasible) continue;
    SCOPED_TRACE(instance_label(inst, i) + schedule_text(sch));
    if (!check_bounds_along(inst, sch, n)) return;
  }
  print_counts("random schedules", n);
  EXPECT_EQ(n.schedules, 1500);
  EXPECT_GT(n.nodes, 30000);
  EXPECT_GT(n.tight_nodes, 3000);
  EXPECT_GT(n.tight_heads, 3000);
}

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
    compute_heads(p, node_times(p, sim.state(), step.time), head, finish);
    branch_candidates(inst, p, sim.state(), step.device, step.time, head, false, cands, stats);
    const Simulator::State node = sim.state();
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
  sch.devices = sim.state().owned.devices;
  return sch;
}

TEST(Bounds, NodeBoundNeverExceedsTheMakespanAlongRandomDives) {
  std::mt19937 rng(123);
  ValidityCounts n;
  int stuck = 0;
  for (int i = 0; i < 8000 && n.schedules < 1200; ++i) {
    Instance inst = pressured_instance(rng, i);
    if (i % 3 == 2) continue;  // only the instances with tight memory
    const std::optional<Schedule> sch = random_dive(inst, rng);
    if (!sch) {
      ++stuck;
      continue;
    }
    SCOPED_TRACE(instance_label(inst, i) + schedule_text(*sch));
    if (!check_bounds_along(inst, *sch, n)) return;
  }
  print_counts("random dives", n);
  std::printf("[ bounds   ] %d dives got stuck\n", stuck);
  EXPECT_EQ(n.schedules, 1200);
  EXPECT_GT(n.memory_heads, 3000);
  EXPECT_GT(n.tight_memory_heads, 1000);
}

TEST(Bounds, RootBoundNeverExceedsTheBruteForceOptimum) {
  int feasible = 0, nodes = 0;
  std::vector<double> head, finish;
  std::vector<OneMachineJob> jobs;
  for (const Instance& inst : tiny_instances(60, 5000, 31337)) {
    SCOPED_TRACE(inst.name + " " + instance_label(inst, 0));
    const testing::BruteForceResult bf = testing::brute_force_optimum(inst, 5000);
    ASSERT_FALSE(bf.aborted);
    if (!bf.feasible) continue;
    ++feasible;
    const BoundProblem p(inst);
    // Every node along the brute force's best schedule (the root first) has that schedule as a
    // completion, so its bound is at most the optimum.
    Simulator sim(inst);
    bool root = true;
    const auto end = drive(sim, bf.best, [&](const Simulator::Step& step) {
      const NodeTimes times = node_times(p, sim.state(), step.time);
      compute_heads(p, times, head, finish);
      const double bound = std::max(critical_path_bound(p, times, finish), one_machine_bound(p, head, jobs));
      EXPECT_LE(bound, bf.optimum + kEps)
          << (root ? "root" : "node") << " of device " << step.device << " at t=" << step.time
          << "; brute force's best:" << schedule_text(bf.best);
      if (root) EXPECT_GT(bound, 0);
      root = false;
      ++nodes;
    });
    EXPECT_EQ(end, Simulator::Step::Kind::kDone);
    EXPECT_NEAR(sim.state().makespan, bf.optimum, kEps);
  }
  EXPECT_GT(feasible, 30);
  EXPECT_GT(nodes, 300);
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
  compute_heads(p, node_times(p, sim.state(), step.time), head, finish);
  std::vector<Candidate> cands;
  CandidateStats stats;
  branch_candidates(inst, p, sim.state(), step.device, step.time, head, active_rule, cands, stats);
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
    const Schedule sch = testing::random_valid_schedule(inst, rng, 0.5);
    SCOPED_TRACE(instance_label(inst, i) + schedule_text(sch));
    const BoundProblem p(inst);
    Simulator sim(inst);
    bool failed = false;
    drive(sim, sch, [&](const Simulator::Step& step) {
      if (failed) return;
      ++nodes;
      const std::set<std::string> got = candidate_set(inst, p, sim, step, false, head, finish);
      const std::set<std::string> want = naive_candidates(inst, sim.state().owned.devices, step.device);
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
  SimOptions quiet;
  quiet.record_timeline = false;
  quiet.record_memory = false;
  for (const Instance& inst : tiny_instances(40, 3000, 4242)) {
    SCOPED_TRACE(inst.name + " " + instance_label(inst, 0));
    const BoundProblem p(inst);
    std::vector<std::vector<std::vector<Action>>> lists;
    for (int d = 0; d < inst.num_devices(); ++d) lists.push_back(testing::device_candidate_lists(inst, d));
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
          const Action& next = sch.devices[step.device][sim.state().owned.devices[step.device].size()];
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
