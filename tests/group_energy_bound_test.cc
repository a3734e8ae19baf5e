// The PCIe group energy bound (bounds/group_energy_bound.h): its bisection against the plain
// enumeration of the offload counts, and its value against the makespans of feasible schedules
// (random, the heuristics' improved by local search, the brute force's optima) on instances
// under memory pressure whose devices share PCIe groups. The PCIe group forward bound
// (bounds/group_forward_bound.h) the same way, its heads against a plain bisection over time with
// every (w, b) enumerated, and on a 16-GPU, 8-microbatch instance where CP-SAT proves 226.88 ms. The byte-time energy bound
// (bounds/byte_energy_bound.h) the same way, with V, loop and random placements and a level of
// 0.5 where it counts most, and against its closed form on one device.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <random>
#include <vector>

#include "bounds/bound_problem.h"
#include "bounds/byte_energy_bound.h"
#include "bounds/group_energy_bound.h"
#include "bounds/group_forward_bound.h"
#include "bounds/memory_precedence_core.h"
#include "bounds/node_bound.h"
#include "brute_force.h"
#include "heuristics/local_search.h"
#include "heuristics/registry.h"
#include "model/instance_io.h"
#include "model/simulator.h"
#include "tests/test_paths.h"
#include "test_util.h"

namespace optpipe {
namespace {

std::string schedule_text(const Schedule& sch) {
  std::string out;
  for (std::size_t d = 0; d < sch.devices.size(); ++d) {
    out += "\n  d" + std::to_string(d) + ":";
    for (const Action& a : sch.devices[d]) out += " " + to_string(a);
  }
  return out;
}

// Tight memory, offloadable stages, devices paired on PCIe switches, sometimes slow PCIe (the
// channels bind) and few tokens.
Instance grouped_instance(std::mt19937& rng, int i, int max_devices, int max_microbatches) {
  test_support::RandomInstanceOptions o;
  o.min_devices = 2;
  o.max_devices = max_devices;
  o.max_microbatches = max_microbatches;
  o.tight_memory = true;
  o.offloadable_probability = 0.9;
  o.allow_multi_stage = i % 4 == 3;
  Instance inst = test_support::random_instance(rng, o);
  for (int d = 0; d < inst.num_devices(); ++d) inst.devices[d].pcie_group = i % 3 == 0 ? 0 : d / 2;
  if (i % 5 == 1) test_support::squeeze_memory(inst, 1.5);
  if (i % 2 == 0) {
    std::uniform_real_distribution<double> slow(1.0, 4.0);
    for (Stage& st : inst.stages) {
      if (!st.offloadable()) continue;
      st.offload = *st.offload * slow(rng);
      st.reload = *st.reload * slow(rng);
    }
  }
  return inst;
}

// The root's heads, as the search computes them.
std::vector<double> root_heads(const Instance& inst, const BoundProblem& p, double* node_value) {
  Simulator sim(inst);
  sim.start_open();
  const Simulator::Step step = sim.advance();
  NodeBoundWork work;
  *node_value = node_bound_parts(p, sim.snapshot(), step.time, work).value();
  return work.head;
}

TEST(GroupEnergyBound, BisectionEqualsEnumeration) {
  std::mt19937 rng(77);
  int positive = 0;
  for (int i = 0; i < 600; ++i) {
    const Instance inst = grouped_instance(rng, i, 4, 10);
    const BoundProblem p(inst);
    double node = 0;
    const std::vector<double> head = root_heads(inst, p, &node);
    const double fast = group_energy_bound(p, head), slow = group_energy_bound_by_enumeration(p, head);
    EXPECT_NEAR(fast, slow, 1e-7 * std::max(1.0, slow)) << "case " << i;
    EXPECT_LE(fast, slow + 1e-9 * std::max(1.0, slow)) << "case " << i;  // bisection stays on the infeasible side
    positive += slow > 0;
  }
  EXPECT_GT(positive, 300);
}

// Pipelines in the family's shape, small: 6-8 equal-ish stages, room for 1 to `max_tokens`
// activations, two devices per PCIe group; `microbatches` and the offload and reload times (in
// forwards, before the jitter: `slow`, or 2.5 where it is null) pick the regime.
Instance paired_instance(std::mt19937& rng, int min_microbatches, int max_microbatches, int max_tokens,
                         std::uniform_real_distribution<double>* slow) {
  std::uniform_int_distribution<int> dev(6, 8), mbs(min_microbatches, max_microbatches), tok(1, max_tokens);
  std::uniform_real_distribution<double> u(0.8, 1.25);
  const double gib = test_support::GiB;
  Instance inst = test_support::uniform_instance(dev(rng), mbs(rng), 1.0, 1.0, 1.0, 0.05, gib, 0.9 * gib);
  const double room = tok(rng) * gib + 0.3 * gib * u(rng);
  for (int d = 0; d < inst.num_devices(); ++d) {
    inst.devices[d].static_memory = 10 * gib;
    inst.devices[d].memory_limit = 10 * gib + room;
    inst.devices[d].pcie_group = d / 2;
  }
  for (Stage& st : inst.stages) {
    st.forward *= u(rng);
    st.backward *= u(rng);
    st.weight *= u(rng);
    st.offload = (slow ? (*slow)(rng) : 2.5) * u(rng);
    st.reload = (slow ? (*slow)(rng) : 2.5) * u(rng);
  }
  return inst;
}

// 12-20 microbatches, room for 1-2 activations, PCIe about as slow as a forward. Here the steady
// state binds, where the root's node bound does not see the shared channel.
Instance steady_instance(std::mt19937& rng) { return paired_instance(rng, 12, 20, 2, nullptr); }

// Schedules to hold a bound against: 10 random valid ones, every heuristic's, and the best
// heuristic's improved by a short local search (not all feasible).
std::vector<Schedule> candidate_schedules(const Instance& inst, std::mt19937& rng);

// Expects `bound` at most the makespan of each feasible one of them; returns how many were.
// `best` (if given) gets the least of those makespans.
int expect_at_most_every_makespan(const Instance& inst, double bound, std::mt19937& rng, int case_index,
                                  double* best = nullptr) {
  int feasible = 0;
  for (const Schedule& sch : candidate_schedules(inst, rng)) {
    const SimResult r = simulate(inst, sch, SimOptions::quiet());
    if (!r.feasible) continue;
    ++feasible;
    if (best) *best = std::min(*best, r.makespan);
    EXPECT_LE(bound, r.makespan + 1e-9) << "case " << case_index << schedule_text(sch);
  }
  return feasible;
}

std::vector<Schedule> candidate_schedules(const Instance& inst, std::mt19937& rng) {
  std::vector<Schedule> candidates;
  for (int k = 0; k < 10; ++k) candidates.push_back(test_support::random_valid_schedule(inst, rng, 0.5));
  const BestResult heur = run_all_heuristics(inst);
  for (const HeuristicResult& h : heur.results) {
    if (h.ok()) candidates.push_back(*h.schedule);
  }
  if (const HeuristicResult* best = heur.best_result()) {
    LocalSearchOptions lo;
    lo.max_evaluations = 800;
    candidates.push_back(improve_schedule(inst, *best->schedule, lo));
  }
  return candidates;
}

TEST(GroupEnergyBound, NeverAboveAFeasibleSchedule) {
  std::mt19937 rng(4242);
  int schedules = 0, above_node_bound = 0, instances = 0, misplaced_raises = 0, lag_raises = 0;
  for (int i = 0; i < 180; ++i) {
    const Instance inst = i % 3 == 0 ? grouped_instance(rng, i, 6, 12) : steady_instance(rng);
    const BoundProblem p(inst);
    double node = 0;
    const std::vector<double> head = root_heads(inst, p, &node);
    const double bound = group_energy_bound(p, head);
    if (bound <= 0) continue;
    ++instances;
    above_node_bound += bound > node + 1e-9;
    const double plain = group_energy_bound(p, head, false, false);
    const double misplaced = group_energy_bound(p, head, true, false), lag = group_energy_bound(p, head, false, true);
    EXPECT_GE(bound, std::max(misplaced, lag) - 1e-9) << "case " << i;
    EXPECT_GE(std::min(misplaced, lag), plain - 1e-9) << "case " << i;
    misplaced_raises += misplaced > plain + 1e-9;
    lag_raises += lag > plain + 1e-9;
    schedules += expect_at_most_every_makespan(inst, bound, rng, i);
  }
  std::printf("[ group    ] %d instances, %d feasible schedules, above the root's node bound on %d, raised by the "
              "misplaced transfers on %d, by the reloads' lag on %d\n",
              instances, schedules, above_node_bound, misplaced_raises, lag_raises);
  EXPECT_GT(schedules, 300);
  EXPECT_GT(above_node_bound, 15);  // not vacuous: it adds to the root's bound
  EXPECT_GT(misplaced_raises, 5);   // nor is the misplaced transfers' cost
  EXPECT_GT(lag_raises, 5);         // nor the reloads' lag
}

// Brute-force optima of tiny grouped instances (with a level of 0.5 on every other one when
// `half_levels`): `bound` at the root never above them.
using RootBoundOf = std::function<double(const Instance&, const BoundProblem&, const std::vector<double>&)>;
void expect_at_most_the_brute_force_optima(std::uint32_t seed, bool half_levels, const RootBoundOf& bound,
                                           const char* tag) {
  std::mt19937 rng(seed);
  int proven = 0, tight = 0;
  for (int i = 0; proven < 40 && i < 3000; ++i) {
    Instance inst = grouped_instance(rng, i, 3, 4);
    if (half_levels && i % 2 == 0) inst.offload_levels = {0.0, 0.5, 1.0};
    if (test_support::count_schedules(inst, 20000) > 20000) continue;
    const BoundProblem p(inst);
    double node = 0;
    const double b = bound(inst, p, root_heads(inst, p, &node));
    if (b <= 0) continue;
    const test_support::BruteForceResult bf = test_support::brute_force_optimum(inst, 20000);
    if (bf.aborted || !bf.feasible) continue;
    ++proven;
    tight += b > node + 1e-9;
    EXPECT_LE(b, bf.optimum + 1e-9) << "case " << i << schedule_text(bf.best);
  }
  std::printf("[ %-8s ] %d brute-force optima, the bound above the node bound on %d\n", tag, proven, tight);
  EXPECT_GE(proven, 40);
}

TEST(GroupEnergyBound, NeverAboveTheBruteForceOptimum) {
  const RootBoundOf group = [](const Instance&, const BoundProblem& p, const std::vector<double>& head) {
    return group_energy_bound(p, head);
  };
  expect_at_most_the_brute_force_optima(9, false, group, "group");
}

// One device, one stage, no offload: lat = 0 and nothing to save, so the bound is the byte-time
// m·(a·(F + B) + M_W·W) over the room, from time 0.
TEST(ByteEnergyBound, ClosedFormOnOneDevice) {
  const double gib = test_support::GiB;
  Instance inst = test_support::uniform_instance(1, 6, 1.0, 2.0, 0.5, 0.0, gib, 0.25 * gib);
  inst.devices[0].static_memory = 10 * gib;
  inst.devices[0].memory_limit = 10 * gib + 2 * gib;
  const BoundProblem p(inst);
  const double expected = 6 * (gib * (1.0 + 2.0) + 0.25 * gib * 0.5) / (2 * gib + kMemoryTolerance);
  EXPECT_NEAR(byte_energy_bound(inst, p, {}), expected, 1e-6);
  // With half the room, twice the time (the same byte-time over half the bytes).
  inst.devices[0].memory_limit = 10 * gib + 1 * gib;
  EXPECT_NEAR(byte_energy_bound(inst, BoundProblem(inst), {}), 6 * (3 * gib + 0.125 * gib) / (gib + kMemoryTolerance),
              1e-6);
}

// Offloading at level 0.5 on a V placement: the bound never exceeds a feasible schedule's makespan
// (random ones, the heuristics', one improved by local search), and it adds to the root's node
// bound and to the group energy bound on some.
TEST(ByteEnergyBound, NeverAboveAFeasibleSchedule) {
  std::mt19937 rng(5151);
  int schedules = 0, instances = 0, above_node = 0, above_group = 0;
  for (int i = 0; i < 160; ++i) {
    Instance inst = grouped_instance(rng, i, 6, 10);
    if (i % 2 == 0) inst.offload_levels = {0.0, 0.5, 1.0};
    const BoundProblem p(inst);
    double node = 0;
    const std::vector<double> head = root_heads(inst, p, &node);
    const double bound = byte_energy_bound(inst, p, head);
    if (bound <= 0) continue;
    ++instances;
    above_node += bound > node + 1e-9;
    above_group += bound > group_energy_bound(p, head) + 1e-9;
    schedules += expect_at_most_every_makespan(inst, bound, rng, i);
  }
  std::printf("[ bytes    ] %d instances, %d feasible schedules, above the root's node bound on %d, above the "
              "group energy bound on %d\n",
              instances, schedules, above_node, above_group);
  EXPECT_GT(schedules, 300);
  EXPECT_GT(above_node, 5);   // not vacuous
  EXPECT_GT(above_group, 5);  // nor implied by the tokens
}

// On generated instances of the benchmark family, where the byte-times are around 1e13 (a
// remainder of rounding once read as a device that cannot save enough made the bound 3112.80 on
// bench-llama2-7b-32x128-2act, whose optimum is 2595.84), below the periodic heuristic's
// makespan; on the V instance with a level of 0.5, above the group energy bound.
TEST(ByteEnergyBound, BelowTheHeuristicsOnGeneratedInstances) {
  const std::string dir = std::string(OPTPIPE_SOURCE_DIR) + "/instances/generated/";
  for (const char* name :
       {"bench-llama2-7b-32x128-2act", "bench-gpt3-28.3b-32x128-2act", "paper-gpt3-6.2b-v-8x24-2act"}) {
    const Instance inst = load_instance(dir + name + ".json");
    const BoundProblem p(inst);
    const double bound = byte_energy_bound(inst, p, {});
    const HeuristicResult h = run_heuristic(*find_heuristic("periodic"), inst);
    ASSERT_TRUE(h.ok()) << name << ": " << h.reason;
    EXPECT_GT(bound, 0) << name;
    EXPECT_LE(bound, h.sim.makespan + 1e-9) << name;
    std::printf("[ bytes    ] %s: %.2f (group energy %.2f), periodic %.2f\n", name, bound, group_energy_bound(p, {}),
                h.sim.makespan);
  }
  const Instance v = load_instance(dir + "paper-gpt3-6.2b-v-8x24-2act.json");
  const BoundProblem pv(v);
  EXPECT_GT(byte_energy_bound(v, pv, {}), group_energy_bound(pv, {}) + 100);
}

TEST(ByteEnergyBound, NeverAboveTheBruteForceOptimum) {
  expect_at_most_the_brute_force_optima(19, true, byte_energy_bound, "bytes");
}

// ---- the PCIe group forward bound ------------------------------------------------------------

// Long pipelines in their fill: 4-8 microbatches, room for 1-3 activations, offloads two to
// three forwards long: the first microbatches' B's come back late, so the fill's forwards wait
// for offloads on shared channels.
Instance fill_instance(std::mt19937& rng) {
  std::uniform_real_distribution<double> slow(2.0, 3.0);
  return paired_instance(rng, 4, 8, 3, &slow);
}

// The plain version of group_forward_head: bisection over time (the offloads a stage needs only
// fall as time passes, so feasibility is monotone), at each instant every (w, b) with w <= b whose
// B and W can have ended enumerated for the least offload count, the counts' jobs released at the
// earliest F finishes and run in every order's best, earliest release first.
double plain_group_forward_head(const BoundProblem& p, const std::vector<double>& head, int s_prime, int j) {
  auto fin = [&](int type, int s, int i) {
    const double h = head[p.op(type, s, i)];
    return (std::isnan(h) ? 0.0 : h) + p.dur[type * p.S + s];
  };
  const int group = p.group_of_device[p.device_of[s_prime]];
  auto feasible = [&](double t) {
    std::vector<std::pair<double, double>> jobs;
    for (int s = 0; s <= s_prime; ++s) {
      if (p.group_of_device[p.device_of[s]] != group || std::isnan(p.room[s])) continue;
      int least = -1;
      for (int b = 0; b <= j; ++b) {
        if (b > 0 && fin(1, s, b - 1) > t) break;
        for (int w = 0; w <= b; ++w) {
          if (w > 0 && (p.types < 3 || fin(2, s, w - 1) > t)) break;
          const double pending = p.hold_w[s] * (b - w);
          for (int o = 0; o <= j - b; ++o) {
            if (o > 0 && !(p.offload_release[s] < 1e300)) break;
            if (!memory_fits(pending, p.room[s]) || !memory_fits(pending + p.hold_f[s] * (j - b - o), p.room[s])) continue;
            if (least < 0 || o < least) least = o;
            break;
          }
        }
      }
      if (least < 0) return false;
      for (int i = 0; i < least; ++i) jobs.push_back({fin(0, s, i), p.offload_release[s]});
    }
    std::sort(jobs.begin(), jobs.end());
    double done = 0;
    for (const auto& [release, length] : jobs) done = std::max(done, release) + length;
    return done <= t;
  };
  const double own = head[p.op(0, s_prime, j)];
  double lo = std::isnan(own) ? 0.0 : own;
  if (feasible(lo)) return lo;
  double hi = lo + 1;
  while (!feasible(hi)) hi = lo + 2 * (hi - lo);
  for (int k = 0; k < 200 && hi - lo > 1e-9 * std::max(1.0, hi); ++k) {
    const double mid = 0.5 * (lo + hi);
    (feasible(mid) ? hi : lo) = mid;
  }
  return hi;
}

TEST(GroupForwardBound, HeadsEqualThePlainBisection) {
  std::mt19937 rng(313);
  int raised = 0, compared = 0;
  for (int i = 0; i < 300; ++i) {
    Instance inst = i % 2 == 0 ? fill_instance(rng) : grouped_instance(rng, i, 5, 8);
    if (i % 4 < 2) inst.offload_levels = {0.0, 0.5, 1.0};
    const BoundProblem p(inst);
    double node = 0;
    const std::vector<double> head = root_heads(inst, p, &node);
    for (int s = 0; s < p.S; ++s) {
      for (int j = 1; j < p.m; ++j) {
        const double fast = group_forward_head(p, head, s, j), plain = plain_group_forward_head(p, head, s, j);
        EXPECT_NEAR(fast, plain, 1e-6 * std::max(1.0, plain)) << "case " << i << " F(" << s << ", " << j << ")";
        ++compared;
        raised += fast > head[p.op(0, s, j)] + 1e-9;
      }
    }
  }
  std::printf("[ forward  ] %d heads, %d above the root's heads\n", compared, raised);
  EXPECT_GT(raised, 100);  // not vacuous: the shared channel raises heads rule F alone does not
}

TEST(GroupForwardBound, NeverAboveAFeasibleSchedule) {
  std::mt19937 rng(6161);
  int schedules = 0, instances = 0, above_node = 0, above_group = 0;
  double closest = 1e300;
  for (int i = 0; i < 200; ++i) {
    Instance inst = i % 3 == 0 ? grouped_instance(rng, i, 6, 8) : fill_instance(rng);
    if (i % 4 < 2) inst.offload_levels = {0.0, 0.5, 1.0};
    const BoundProblem p(inst);
    double node = 0;
    const std::vector<double> head = root_heads(inst, p, &node);
    const double bound = group_forward_bound(p, head).bound;
    if (bound <= 0) continue;
    ++instances;
    above_node += bound > node + 1e-9;
    const bool adds = bound > std::max(node, group_energy_bound(p, head)) + 1e-9;
    above_group += adds;
    double best = 1e300;
    schedules += expect_at_most_every_makespan(inst, bound, rng, i, &best);
    if (adds && best < 1e300) closest = std::min(closest, best / bound - 1);
  }
  std::printf("[ forward  ] %d instances, %d feasible schedules, above the root's node bound on %d, above it and the "
              "group energy bound on %d; where it adds, the best schedule %.1f%% above it at the closest\n",
              instances, schedules, above_node, above_group, 100 * closest);
  EXPECT_GT(schedules, 300);
  EXPECT_GT(above_group, 5);  // not vacuous: it adds to the root's other bounds
}

TEST(GroupForwardBound, NeverAboveTheBruteForceOptimum) {
  const RootBoundOf forward = [](const Instance&, const BoundProblem& p, const std::vector<double>& head) {
    return group_forward_bound(p, head).bound;
  };
  expect_at_most_the_brute_force_optima(29, true, forward, "forward");
}

// `optpipe generate --model gpt3-14.6b --devices 16 --microbatches 8 --memory-limit 4act`: stages
// 1-14 have room for 4 activations and share a D2H channel in pairs; CP-SAT proves the optimum at
// least 226.88 ms (bench/README.md), the root's other bounds give 197.52, and the best schedule
// known is 232.92. With every device in its own group the bound has nothing to add.
TEST(GroupForwardBound, TheSharedChannelInTheFill) {
  Instance inst = load_instance(std::string(OPTPIPE_SOURCE_DIR) + "/tests/data/group_forward/gpt3-14.6b-16x8-4act.json");
  const BoundProblem p(inst);
  double node = 0;
  const std::vector<double> head = root_heads(inst, p, &node);
  const GroupForwardBound b = group_forward_bound(p, head);
  std::printf("[ forward  ] gpt3-14.6b-16x8-4act: %.2f at F(%d, %d), node bound %.2f, group energy %.2f\n", b.bound,
              b.stage, b.microbatch, node, group_energy_bound(p, head));
  EXPECT_GT(b.bound, 215.0);
  EXPECT_LE(b.bound, 232.92);
  EXPECT_GT(b.bound, node + 15.0);
  for (int d = 0; d < inst.num_devices(); ++d) inst.devices[d].pcie_group = d;
  const BoundProblem own(inst);
  EXPECT_EQ(group_forward_bound(own, root_heads(inst, own, &node)).bound, 0.0);
}

}  // namespace
}  // namespace optpipe
