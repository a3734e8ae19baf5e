// Batched bounds (kernels/batched_bounds.h): every backend gives, bit for bit, the bounds of the
// scalar search path on nodes met along random dives of random instances, and keeps exactly the
// nodes below the cutoff, in order.
#include "kernels/batched_bounds.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <random>
#include <stdexcept>

#include "bounds/channel_bound.h"
#include "bounds/critical_path_bound.h"
#include "bounds/heads.h"
#include "bounds/memory_energy_bound.h"
#include "bounds/node_transfers.h"
#include "bounds/node_times.h"
#include "bounds/one_machine_bound.h"
#include "model/error.h"
#include "search/candidates.h"
#include "search/solver.h"
#include "kernels/cuda_devices.h"
#include "model/simulator.h"
#include "tests/test_util.h"

namespace optpipe {
namespace {


// Counts of the nodes whose full bound comes from the channel or the memory-energy part.
struct PartCounts {
  int channel = 0, energy = 0;
};

// Appends the decision nodes of one random dive (offload levels among the random choices) to
// `batch` by their times and, with `transfers`, their transfers; `expected` gets the scalar
// path's bound from compute_heads with the same transfers: max(critical path, one machine,
// channel, memory energy) as the solver's bound() gives it for a node it does not cut.
int add_dive_times(const Instance& inst, const BoundProblem& p, std::mt19937& rng, bool transfers, NodeTimesBatch& batch,
                   std::vector<double>& expected, PartCounts& parts) {
  Simulator sim(inst);
  sim.start_open();
  Simulator::Step step = sim.advance();
  std::vector<double> head, finish, offload_lb, reload_lb;
  std::vector<OneMachineJob> jobs;
  std::vector<Candidate> cands;
  CandidateStats stats;
  int offloaded = 0;
  while (step.kind == Simulator::Step::Kind::kDecision) {
    NodeTimes times;
    NodeTransfers nt;
    fill_node_times(p, sim.snapshot(), step.time, times);
    fill_node_transfers(p, sim.snapshot(), step.time, nt);
    for (double r : nt.level) offloaded += r > 0;
    compute_heads(p, times, head, finish, transfers ? &nt : nullptr, &offload_lb, &reload_lb);
    batch.add(times, transfers ? &nt : nullptr);
    const double cp = critical_path_bound(p, times, finish);
    const double om = one_machine_bound(p, head, jobs);
    const double ch = transfers ? channel_bound(p, nt, finish, reload_lb, jobs) : 0.0;
    const double me =
        memory_energy_bound(p, times, transfers ? &nt : nullptr, head, finish, offload_lb, std::max({cp, om, ch}));
    parts.channel += ch > std::max(cp, om);
    parts.energy += me > std::max({cp, om, ch});
    expected.push_back(std::max({cp, om, ch, me}));
    compute_heads(p, times, head, finish);  // the branching reads the static heads
    branch_candidates(inst, p, sim.snapshot(), step.device, step.time, head, false, cands, stats);
    if (cands.empty()) break;
    sim.append(step.device, cands[std::uniform_int_distribution<std::size_t>(0, cands.size() - 1)(rng)].action);
    step = sim.advance();
  }
  return offloaded;
}

bool same_bits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

// compute_bounds (heads computed in the batch, with the memory rules and the node's transfers)
// equals compute_heads + the four bounds of the scalar path (the solver's bound()) bit for bit.
void check_backend_times(const char* which) {
  std::mt19937 rng(57);
  int nodes = 0, instances = 0, offloaded = 0;
  PartCounts parts;
  for (int i = 0; i < 40; ++i) {
    test_support::RandomInstanceOptions o;
    o.max_devices = 4;
    o.max_microbatches = 6;
    o.tight_memory = i % 4 != 3;
    o.offloadable_probability = 0.8;
    const Instance inst = test_support::random_instance(rng, o);
    const BoundProblem p(inst);
    std::unique_ptr<BatchedBounds> bb;
    try {
      const std::string w = which;
      // CUDA: a small pool, so that it grows during the test.
      bb = w == "scalar" ? make_scalar_bounds(p) : w == "tbb" ? make_tbb_bounds(p) : make_cuda_bounds(p, 16);
    } catch (const std::runtime_error& e) {
      GTEST_SKIP() << e.what();
    }
    for (const bool transfers : {true, false}) {
      NodeTimesBatch batch;
      std::vector<double> expected, got;
      // Every 8th instance a batch of about a thousand nodes or more (several CUDA chunks).
      const int dives = i % 8 == 0 ? 200 : 4;
      for (int dive = 0; dive < dives; ++dive) offloaded += add_dive_times(inst, p, rng, transfers, batch, expected, parts);
      bb->compute_bounds(batch, got);
      ASSERT_EQ(got.size(), expected.size());
      for (std::size_t k = 0; k < got.size(); ++k) {
        ASSERT_TRUE(same_bits(got[k], expected[k])) << "instance " << i << " node " << k
                                                     << (transfers ? " with" : " without") << " transfers: " << got[k]
                                                     << " vs " << expected[k];
      }
      // Pruning at a few cutoffs: exactly the nodes below, in order.
      for (double q : {0.0, 0.25, 0.5, 0.9, 1.0}) {
        std::vector<double> sorted = got;
        std::sort(sorted.begin(), sorted.end());
        const double cutoff =
            sorted.empty() ? 0 : sorted[static_cast<std::size_t>(q * static_cast<double>(sorted.size() - 1))];
        std::vector<int> kept, naive;
        bb->prune(got, cutoff, kept);
        for (int k = 0; k < static_cast<int>(got.size()); ++k) {
          if (got[k] < cutoff) naive.push_back(k);
        }
        ASSERT_EQ(kept, naive) << "cutoff " << cutoff;
      }
      nodes += batch.n;
    }
    ++instances;
  }
  std::printf("[ batch    ] %s from times: %d nodes of %d instances (%d offloaded microbatches listed; channel best "
              "on %d, memory energy best on %d) equal to the scalar bounds, pruned exactly\n",
              which, nodes, instances, offloaded, parts.channel, parts.energy);
  EXPECT_GT(nodes, 1000);
  EXPECT_GT(offloaded, 100);
  EXPECT_GT(parts.channel, 0);
  EXPECT_GT(parts.energy, 0);
}

TEST(BatchedBounds, ScalarBatchFromTimesEqualsTheScalarBoundsBitForBit) { check_backend_times("scalar"); }
TEST(BatchedBounds, TbbBatchFromTimesEqualsTheScalarBoundsBitForBit) { check_backend_times("tbb"); }
// Runs where a GPU is present; otherwise skips, saying why.
TEST(BatchedBounds, CudaBatchFromTimesEqualsTheScalarBoundsBitForBit) { check_backend_times("cuda"); }

TEST(BatchedBounds, EmptyBatch) {
  const Instance inst = test_support::uniform_instance(2, 2, 1, 1, 1);
  const BoundProblem p(inst);
  std::vector<double> got{1.0};
  std::vector<int> kept{3};
  std::unique_ptr<BatchedBounds> bb;
  try {
    bb = make_tbb_bounds(p);
  } catch (const std::runtime_error& e) {
    GTEST_SKIP() << e.what();
  }
  bb->compute_bounds(NodeTimesBatch{}, got);
  EXPECT_TRUE(got.empty());
  bb->prune(got, 1.0, kept);
  EXPECT_TRUE(kept.empty());
}

// The solver in a batch mode finds the optima the scalar path finds (and proves them).
TEST(BatchedBounds, SolverGivesTheSameOptimaInTheTbbBatchMode) {
  std::mt19937 rng(9);
  int compared = 0;
  std::int64_t batches = 0;
  for (int i = 0; i < 40; ++i) {
    test_support::RandomInstanceOptions o;
    o.max_devices = 3;
    o.max_microbatches = 4;
    o.tight_memory = i % 2 == 0;
    const Instance inst = test_support::random_instance(rng, o);
    SolveOptions opt;
    opt.threads = 2;
    opt.node_limit = 20000;
    const SolveResult cpu = solve(inst, {}, opt);
    opt.bounds = BoundsMode::kTbb;
    opt.batch_size = 1 + i % 64;
    SolveResult tbb;
    try {
      tbb = solve(inst, {}, opt);
    } catch (const InputError& e) {
      GTEST_SKIP() << e.what();
    }
    SCOPED_TRACE("instance " + std::to_string(i));
    EXPECT_EQ(tbb.stats.bounds_backend, BoundsMode::kTbb);
    if (cpu.status != SolveResult::Status::kOptimal || tbb.status != SolveResult::Status::kOptimal) continue;
    EXPECT_NEAR(cpu.makespan, tbb.makespan, 1e-9);
    batches += tbb.stats.batches;
    ++compared;
  }
  std::printf("[ batch    ] %d optima equal in the TBB batch mode (%lld batches)\n", compared,
              static_cast<long long>(batches));
  EXPECT_GT(compared, 25);
  EXPECT_GT(batches, 0);
}

// The batch mode dives (its lanes go on with their best child): without a warm start it
// reaches a leaf within a node budget of about two passes over the ops, where a pure best-first
// search would still be widening the top of the tree.
TEST(BatchedBounds, TbbBatchModeDivesToAnIncumbentWithoutAWarmStart) {
  std::mt19937 rng(17);
  for (int i = 0; i < 6; ++i) {
    test_support::RandomInstanceOptions o;
    o.max_devices = 4;
    o.max_microbatches = 8;
    const Instance inst = i == 0 ? test_support::uniform_instance(4, 8, 1, 1, 1) : test_support::random_instance(rng, o);
    int ops = 0;
    for (std::size_t s = 0; s < inst.stages.size(); ++s) ops += (inst.split_backward ? 3 : 2) * inst.microbatches;
    SolveOptions opt;
    opt.threads = 1;
    opt.bounds = BoundsMode::kTbb;
    opt.node_limit = 2 * ops;
    SolveResult r;
    try {
      r = solve(inst, {}, opt);
    } catch (const InputError& e) {
      GTEST_SKIP() << e.what();
    }
    SCOPED_TRACE("instance " + std::to_string(i) + ", " + std::to_string(ops) + " ops");
    EXPECT_GE(r.stats.incumbent_updates, 1);
    EXPECT_LE(r.stats.nodes, 2 * ops);
    ASSERT_TRUE(r.schedule.has_value());
    EXPECT_NEAR(simulate(inst, *r.schedule).makespan, r.makespan, 1e-9);
  }
}

TEST(BatchedBounds, GpuModeWithoutADeviceIsAClearError) {
  if (!query_cuda_devices().devices.empty()) GTEST_SKIP() << "a GPU is present";
  const Instance inst = test_support::uniform_instance(2, 3, 1, 1, 1);
  SolveOptions opt;
  opt.bounds = BoundsMode::kGpu;
  try {
    solve(inst, {}, opt);
    ADD_FAILURE() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("no CUDA"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace optpipe
