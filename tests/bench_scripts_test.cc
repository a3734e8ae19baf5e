// The solver diagnostics of bench/solvers (bench/README.md, "Offload under memory pressure"):
//   * single_stage.py, the single-stage variant of a plain pipeline: the kept stage is unchanged,
//     every other stage is free, and the latency from F(s, j)'s end to B(s, j)'s start that the
//     bounds read is preserved;
//   * relaxation_trace.py's reading of `optpipe simulate --timeline` and the prefix it fixes (its
//     CP-SAT part needs OR-Tools, which only the benchmark's virtual environment has);
//   * periodic_floor.py's --band: each B(s, 0) at the first instant after its chain that keeps it
//     off the forwards of its GPU modulo the cycle.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "bounds/bound_problem.h"
#include "model/instance_io.h"
#include "model/schedule_io.h"
#include "model/simulator.h"
#include "tests/test_paths.h"
#include "tests/test_util.h"

namespace optpipe {
namespace {

namespace fs = std::filesystem;
using test_support::run_shell;
using test_support::shell_quote;

std::string solvers_dir() { return (fs::path(OPTPIPE_SOURCE_DIR) / "bench" / "solvers").string(); }
std::string single_stage_script() { return (fs::path(solvers_dir()) / "single_stage.py").string(); }

bool have_python() { return run_shell("python3 -c 'print(1)'").status == 0; }

TEST(SingleStageVariant, KeepsTheStageAndItsLatencyAndFreesTheOthers) {
  if (!have_python()) GTEST_SKIP() << "python3 is not installed";
  const std::string original =
      (fs::path(OPTPIPE_SOURCE_DIR) / "instances" / "offload-slow-pcie-4x8.json").string();
  const Instance base = load_instance(original);
  const BoundProblem bp(base);
  for (int keep = 0; keep < base.num_stages(); ++keep) {
    SCOPED_TRACE("stage " + std::to_string(keep));
    const std::string out = test_support::temp_file("single-stage", std::to_string(keep) + ".json");
    const auto r = run_shell("python3 " + shell_quote(single_stage_script()) + " " + shell_quote(original) + " " +
                             std::to_string(keep) + " -o " + shell_quote(out));
    ASSERT_EQ(r.status, 0) << r.output;
    const Instance v = load_instance(out);
    ASSERT_EQ(v.num_stages(), base.num_stages());
    const Stage &a = base.stages[keep], &b = v.stages[keep];
    EXPECT_EQ(b.forward, a.forward);
    EXPECT_EQ(b.backward, a.backward);
    EXPECT_EQ(b.weight, a.weight);
    EXPECT_EQ(b.activation, a.activation);
    EXPECT_EQ(b.weight_activation, a.weight_activation);
    EXPECT_EQ(b.offload, a.offload);
    EXPECT_EQ(v.devices[keep].memory_limit, base.devices[keep].memory_limit);
    EXPECT_EQ(v.devices[keep].static_memory, base.devices[keep].static_memory);
    for (int s = 0; s < v.num_stages(); ++s) {
      if (s == keep) continue;
      EXPECT_EQ(v.stages[s].forward + v.stages[s].backward + v.stages[s].weight, 0.0) << "stage " << s;
      EXPECT_EQ(v.stages[s].activation, 0.0) << "stage " << s;
      EXPECT_FALSE(v.stages[s].offloadable()) << "stage " << s;
    }
    // The bounds' static latency of the kept stage is the original's.
    const BoundProblem vp(v);
    EXPECT_NEAR(vp.latency[keep], bp.latency[keep], 1e-9);
    fs::remove(out);
  }
  // Bad input: a clear message and exit status 2.
  const auto bad = run_shell("python3 " + shell_quote(single_stage_script()) + " " + shell_quote(original) + " 7 -o /dev/null");
  EXPECT_EQ(bad.status, 2);
  EXPECT_NE(bad.output.find("stage 7 is not in 0..3"), std::string::npos) << bad.output;
  const auto empty =
      run_shell("python3 " + shell_quote(single_stage_script()) + " " + shell_quote(original) + " 2-1 -o /dev/null");
  EXPECT_EQ(empty.status, 2);
  EXPECT_NE(empty.output.find("stage range 2-1 is empty"), std::string::npos) << empty.output;
}

// A range of consecutive stages kept together: those stages and the links between them are as
// they were, the later stages are free, and the last kept stage keeps its latency.
TEST(SingleStageVariant, KeepsARangeOfStagesTogether) {
  if (!have_python()) GTEST_SKIP() << "python3 is not installed";
  const std::string original =
      (fs::path(OPTPIPE_SOURCE_DIR) / "instances" / "offload-slow-pcie-4x8.json").string();
  const Instance base = load_instance(original);
  const std::string out = test_support::temp_file("single-stage", "0-1.json");
  const auto r = run_shell("python3 " + shell_quote(single_stage_script()) + " " + shell_quote(original) + " 0-1 -o " +
                           shell_quote(out));
  ASSERT_EQ(r.status, 0) << r.output;
  const Instance v = load_instance(out);
  EXPECT_EQ(v.name, base.name + "-stages0-1");
  for (int s = 0; s < 2; ++s) {
    EXPECT_EQ(v.stages[s].forward, base.stages[s].forward) << "stage " << s;
    EXPECT_EQ(v.stages[s].activation, base.stages[s].activation) << "stage " << s;
    EXPECT_EQ(v.devices[s].memory_limit, base.devices[s].memory_limit) << "stage " << s;
  }
  for (int s = 2; s < 4; ++s) EXPECT_EQ(v.stages[s].forward + v.stages[s].backward, 0.0) << "stage " << s;
  EXPECT_EQ(v.comm_after(0), base.comm_after(0));
  const BoundProblem bp(base), vp(v);
  EXPECT_NEAR(vp.latency[1], bp.latency[1], 1e-9);
  EXPECT_NEAR(vp.latency[0], bp.latency[0], 1e-9);
  fs::remove(out);
}

// offload-slow-pcie-4x8's witness schedule, written to a file, and its simulation.
struct WitnessOnDisk {
  std::string inst_path = (fs::path(OPTPIPE_SOURCE_DIR) / "instances" / "offload-slow-pcie-4x8.json").string();
  Instance inst = load_instance(inst_path);
  Schedule witness = test_support::offload_slow_witness(inst);
  std::string sched;
  SimResult sim;
  explicit WitnessOnDisk(const std::string& name) : sched(test_support::temp_file("relaxation-trace", name)) {
    save_schedule(witness, sched);
    sim = simulate(inst, witness);
  }
};

// band_starts against a plain scan: from the chain's earliest start, step 1/1000 ms forward until
// the offset from F(s, 0)'s start, modulo c, lies in [F_s, c - B_s] (the durations and cycles are
// multiples of 1/100 ms); and on a generated instance the floor with the band never below the one
// without.
TEST(PeriodicFloor, TheBandStartsAreTheFirstInstantsOffTheForwards) {
  if (!have_python()) GTEST_SKIP() << "python3 is not installed";
  const std::string bench = (fs::path(OPTPIPE_SOURCE_DIR) / "bench").string();
  const std::string code =
      "import sys, math; sys.path.insert(0, " + shell_quote(bench) + "); import periodic_floor as p\n"
      "F = [3.85, 4.1, 3.9, 4.4]; B = [3.86, 4.2, 4.0, 4.6]; comm = [0.05, 0.07, 0.02]\n"
      "a = [0.0]\n"
      "for s in range(1, 4): a.append(a[-1] + F[s - 1] + comm[s - 1])\n"
      "bad = 0\n"
      "for c in [9.37, 11.0, 13.2, 16.9, 20.0, 25.3]:\n"
      "  b = p.band_starts(c, a, F, B, comm)\n"
      "  want = [0.0] * 4\n"
      "  for s in range(3, -1, -1):\n"
      "    t = a[s] + F[s] if s == 3 else max(a[s] + F[s], want[s + 1] + B[s + 1] + comm[s])\n"
      "    for _ in range(100000):\n"
      "      if F[s] - 1e-6 <= (t - a[s]) % c <= c - B[s] + 1e-6: break\n"
      "      t += 0.001\n"
      "    want[s] = t\n"
      "  bad += sum(1 for x, y in zip(b, want) if abs(x - y) > 0.002)\n"
      "print(bad)\n";
  const auto r = run_shell("python3 -c " + shell_quote(code));
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_EQ(r.output, "0\n");
  const std::string script = shell_quote((fs::path(bench) / "periodic_floor.py").string());
  const std::string inst = shell_quote(
      (fs::path(OPTPIPE_SOURCE_DIR) / "instances" / "generated" / "bench-gpt3-28.3b-16x64-4act.json").string());
  const auto plain = run_shell("python3 " + script + " " + inst + " --cycles 24,28,31.5,40");
  const auto band = run_shell("python3 " + script + " " + inst + " --band --cycles 24,28,31.5,40");
  ASSERT_EQ(plain.status, 0) << plain.output;
  ASSERT_EQ(band.status, 0) << band.output;
  auto floors = [](const std::string& out) {
    std::vector<double> f;
    for (std::size_t at = out.find("floor "); at != std::string::npos; at = out.find("floor ", at + 1)) {
      f.push_back(std::stod(out.substr(at + 6)));
    }
    return f;
  };
  const std::vector<double> without = floors(plain.output), with = floors(band.output);
  ASSERT_EQ(without.size(), 4u) << plain.output;
  ASSERT_EQ(with.size(), 4u) << band.output;
  for (std::size_t k = 0; k < 4; ++k) EXPECT_GE(with[k], without[k] - 1e-9) << k;
  // Below 2σ = 31.4 ms the chain waits a cycle at most stages (bench/README.md, "Not on every
  // row"): more than at 31.5 ms, where a wait comes only where a step lands on a forward.
  EXPECT_GT(with[1] - without[1], 100);
  EXPECT_LT(with[2] - without[2], 50);
}

TEST(RelaxationTrace, ReadsTheTimelineAndFixesThePrefix) {
  OPTPIPE_REQUIRE_CLI();
  if (!have_python()) GTEST_SKIP() << "python3 is not installed";
  const WitnessOnDisk w("witness.json");
  const std::string& inst_path = w.inst_path;
  const Instance& inst = w.inst;
  const Schedule& witness = w.witness;
  const std::string& sched = w.sched;
  // What the script must find: every compute op with its start, every transfer, and the prefix.
  const SimResult& sim = w.sim;
  ASSERT_TRUE(sim.feasible) << sim.reason;
  const double cut = 130.0;
  // Compute ops (and F levels: every stage of this instance can offload) starting before the cut.
  int before = 0, stage0_before = 0;
  for (int d = 0; d < inst.num_devices(); ++d) {
    for (std::size_t k = 0; k < witness.devices[d].size(); ++k) {
      const Action& a = witness.devices[d][k];
      if (a.type == OpType::R || !(sim.timeline[d][k].start < cut - 1e-9)) continue;
      const int n = a.type == OpType::F ? 2 : 1;
      before += n;
      if (a.stage == 0) stage0_before += n;
    }
  }
  const std::string code =
      "import sys; sys.path.insert(0, " + shell_quote(solvers_dir()) + "); import relaxation_trace as r, instance; "
      "ops, tr = r.timeline(" + shell_quote(test_support::kCliPath) + ", " + shell_quote(inst_path) + ", " +
      shell_quote(sched) + "); inst = instance.load(" + shell_quote(inst_path) + "); "
      "print(len(ops), len(tr), len(r.fixes(inst, ops, tr, 130.0)), len(r.fixes(inst, ops, tr, 130.0, 0)))";
  const auto r = run_shell("python3 -c " + shell_quote(code));
  ASSERT_EQ(r.status, 0) << r.output;
  int n_ops = -1, n_transfers = -1, n_fix = -1, n_fix0 = -1;
  ASSERT_EQ(std::sscanf(r.output.c_str(), "%d %d %d %d", &n_ops, &n_transfers, &n_fix, &n_fix0), 4) << r.output;
  EXPECT_EQ(n_ops, inst.num_stages() * inst.microbatches * inst.num_compute_types());
  EXPECT_EQ(n_transfers, static_cast<int>(sim.transfers.size()));
  int transfers_before = 0, transfers0_before = 0;
  for (const Transfer& t : sim.transfers) {
    if (t.start < cut - 1e-9) {
      ++transfers_before;
      if (t.stage == 0) ++transfers0_before;
    }
  }
  EXPECT_EQ(n_fix, before + transfers_before);
  EXPECT_EQ(n_fix0, stage0_before + transfers0_before);
  EXPECT_EQ(n_fix0, 19);  // the 19 of bench/README.md's table at T = 130
  fs::remove(sched);
}

// --improve's hints: the schedule's every start, level and transfer under the exported MILP's
// names that cpsat_model.solve reads, and the spec's makespan of a schedule file read back.
TEST(RelaxationTrace, HintsAreTheScheduleAndItsMakespanReadsBack) {
  OPTPIPE_REQUIRE_CLI();
  if (!have_python()) GTEST_SKIP() << "python3 is not installed";
  const WitnessOnDisk w("hints.json");
  const SimResult& sim = w.sim;
  ASSERT_TRUE(sim.feasible) << sim.reason;
  // A few values to look up, from the simulator: F(1, 3)'s start and level, B(2, 5)'s start, the
  // first transfer's start.
  double f13 = -1, b25 = -1, level13 = -1;
  for (int d = 0; d < w.inst.num_devices(); ++d) {
    for (std::size_t k = 0; k < w.witness.devices[d].size(); ++k) {
      const Action& a = w.witness.devices[d][k];
      if (a.type == OpType::F && a.stage == 1 && a.mb == 3) f13 = sim.timeline[d][k].start, level13 = a.r;
      if (a.type == OpType::B && a.stage == 2 && a.mb == 5) b25 = sim.timeline[d][k].start;
    }
  }
  ASSERT_FALSE(sim.transfers.empty());
  const Transfer& t0 = sim.transfers.front();
  const std::string first = std::string(t0.kind == Transfer::Kind::kOffload ? "Toff" : "Trel") + "_s" +
                            std::to_string(t0.stage) + "_j" + std::to_string(t0.mb);
  const std::string code =
      "import sys; sys.path.insert(0, " + shell_quote(solvers_dir()) + "); import relaxation_trace as r, instance; "
      "ops, tr = r.timeline(" + shell_quote(test_support::kCliPath) + ", " + shell_quote(w.inst_path) + ", " +
      shell_quote(w.sched) + "); inst = instance.load(" + shell_quote(w.inst_path) + "); h = r.hints(inst, ops, tr); "
      "print(len(h), h['S_F_s1_j3'], h['S_B_s2_j5'], h['o_s1_j3_l1'], h['" + first + "'], "
      "r.simulated_makespan(" + shell_quote(test_support::kCliPath) + ", " + shell_quote(w.inst_path) + ", " +
      shell_quote(w.sched) + "))";
  const auto r = run_shell("python3 -c " + shell_quote(code));
  ASSERT_EQ(r.status, 0) << r.output;
  int n = -1;
  double hf13 = -1, hb25 = -1, hlevel = -1, htransfer = -1, makespan = -1;
  ASSERT_EQ(std::sscanf(r.output.c_str(), "%d %lf %lf %lf %lf %lf", &n, &hf13, &hb25, &hlevel, &htransfer, &makespan), 6)
      << r.output;
  // Starts of every compute op, one level literal per offloadable forward (levels 0 and 1: one
  // literal), a start per transfer.
  EXPECT_EQ(n, w.inst.num_stages() * w.inst.microbatches * (w.inst.num_compute_types() + 1) +
                   static_cast<int>(sim.transfers.size()));
  EXPECT_NEAR(hf13, f13, 1e-3);
  EXPECT_NEAR(hb25, b25, 1e-3);
  EXPECT_EQ(hlevel, level13 > 0 ? 1.0 : 0.0);
  EXPECT_NEAR(htransfer, t0.start, 1e-3);
  EXPECT_NEAR(makespan, sim.makespan, 1e-3);
  fs::remove(w.sched);
}

}  // namespace
}  // namespace optpipe
