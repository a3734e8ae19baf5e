// CheckpointedSimulation (model/checkpointed_simulation.h) against the plain simulation: a
// candidate resumed from the base's checkpoint gives exactly Simulator::run(candidate, quiet):
// feasibility, makespan, peaks, deadlock reason, and every op's start and end, bit for bit.
// Candidates are the local search's own edits (heuristics/local_search.h): every move of the
// descent neighbourhood, and kicks of several moves on several devices, from random schedules of
// random instances (with offloads and tight memory) and from a heuristic's schedule of a shipped
// instance; the base then walks to accepted candidates, as in the descent.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "heuristics/local_search.h"
#include "heuristics/registry.h"
#include "model/checkpointed_simulation.h"
#include "model/instance_io.h"
#include "model/simulator.h"
#include "tests/test_paths.h"
#include "tests/test_util.h"

namespace optpipe {
namespace {

bool same_number(double a, double b) { return a == b || (std::isnan(a) && std::isnan(b)); }

bool same_numbers(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (!same_number(a[i], b[i])) return false;
  }
  return true;
}

// Checks one candidate; returns false on a difference (with the failure reported).
bool check(const Instance& inst, CheckpointedSimulation& ck, const Schedule& candidate, const std::string& what) {
  Simulator plain(inst);
  const SimResult want = plain.run(candidate, SimOptions::quiet());
  const SimResult got = ck.run(candidate);
  EXPECT_EQ(got.feasible, want.feasible) << what;
  EXPECT_EQ(got.makespan, want.makespan) << what;
  EXPECT_EQ(got.peak_memory, want.peak_memory) << what;
  EXPECT_EQ(got.reason, want.reason) << what;
  EXPECT_TRUE(same_numbers(ck.snapshot().start, plain.snapshot().start)) << what << ": op starts differ";
  EXPECT_TRUE(same_numbers(ck.snapshot().end, plain.snapshot().end)) << what << ": op ends differ";
  EXPECT_TRUE(same_numbers(ck.snapshot().rel_end, plain.snapshot().rel_end)) << what << ": reload ends differ";
  return !::testing::Test::HasFailure();
}

struct Tally {
  long long candidates = 0, resumed = 0, bases = 0;
};

// From `start`: every descent move, then 40 kicks of 2-5 random moves; every 7th feasible
// candidate becomes the base (a walk, as the descent's accepted moves are).
void walk(const Instance& inst, const Schedule& start, std::mt19937& rng, int checkpoints, Tally& tally) {
  CheckpointedSimulation ck(inst, checkpoints);
  Schedule base = start;
  const SimResult b = ck.set_base(base);
  ASSERT_TRUE(same_number(b.makespan, simulate(inst, base, SimOptions::quiet()).makespan));
  int n = 0;
  for (const local_search::Move& mv : local_search::all_moves(inst, base, 3)) {
    Schedule cand = base;
    if (!local_search::apply_move(inst, cand, mv)) continue;
    ++tally.candidates;
    if (!check(inst, ck, cand, inst.name + ": a descent move")) return;
    if (++n % 7 == 0 && ck.snapshot().remaining == 0) {
      // The new base's own result, from its kept checkpoints, is the plain one too.
      const SimResult nb = ck.set_base(cand);
      ASSERT_EQ(nb.makespan, simulate(inst, cand, SimOptions::quiet()).makespan) << inst.name;
      ++tally.bases;
      base = cand;
    }
  }
  for (int k = 0; k < 40; ++k) {
    Schedule cand = base;
    const auto moves = local_search::all_moves(inst, base, 4);
    if (moves.empty()) break;
    const int want = 2 + static_cast<int>(rng() % 4);
    for (int tries = 0, applied = 0; tries < 50 && applied < want; ++tries) {
      if (local_search::apply_move(inst, cand, moves[rng() % moves.size()])) ++applied;
    }
    ++tally.candidates;
    if (!check(inst, ck, cand, inst.name + ": a kick")) return;
  }
  tally.resumed += ck.stats().resumed;
}

TEST(CheckpointedSimulation, ResumedRunsEqualThePlainSimulationOnRandomSchedulesAndEdits) {
  std::mt19937 rng(2026);
  Tally tally;
  for (int i = 0; i < 40; ++i) {
    test_support::RandomInstanceOptions o;
    o.max_devices = 4;
    o.max_microbatches = 6;
    o.tight_memory = i % 2 == 1;
    o.offloadable_probability = i % 3 == 2 ? 0.0 : 0.7;
    Instance inst = test_support::random_instance(rng, o);
    if (i % 4 == 3) test_support::squeeze_memory(inst, 1.05);
    inst.name = "random-" + std::to_string(i);
    for (int t = 0; t < 20; ++t) {
      const Schedule s = test_support::random_valid_schedule(inst, rng, 0.4);
      if (!simulate(inst, s, SimOptions::quiet()).feasible) continue;
      walk(inst, s, rng, 1 + i % 24, tally);  // from one checkpoint to one every instant or so
      break;
    }
    if (HasFailure()) return;
  }
  std::printf("[ ckpt     ] %lld candidates, %lld resumed from a checkpoint, %lld new bases\n", tally.candidates,
              tally.resumed, tally.bases);
  EXPECT_GT(tally.candidates, 2000);
  EXPECT_GT(tally.resumed, tally.candidates / 3);  // the checkpoints are used, not only the plain run
  EXPECT_GT(tally.bases, 100);
}

TEST(CheckpointedSimulation, ResumedRunsEqualThePlainSimulationOnAShippedInstanceWithOffloads) {
  const Instance inst = load_instance(std::string(OPTPIPE_SOURCE_DIR) + "/instances/gpt-8x24-tight.json");
  const Heuristic* h = find_heuristic("ada-offload");
  ASSERT_NE(h, nullptr);
  const auto built = h->build(inst);
  ASSERT_TRUE(built.schedule.has_value());
  std::mt19937 rng(5);
  Tally tally;
  walk(inst, *built.schedule, rng, 16, tally);
  std::printf("[ ckpt     ] gpt-8x24-tight: %lld candidates, %lld resumed\n", tally.candidates, tally.resumed);
  EXPECT_GT(tally.candidates, 1000);
  EXPECT_GT(tally.resumed, tally.candidates / 2);
}

}  // namespace
}  // namespace optpipe
