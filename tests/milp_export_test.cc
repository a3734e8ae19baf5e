// Tests of the MILP export (milp/, issue 5).
//
// 1. The model container: merged terms, violations, valid names.
// 2. Structure: no ordering binary for pairs the precedences already order (transitively), the
//    exact counts of variables, binaries and rows on small instances, and LP / MPS files whose
//    sections and counts match the model, with names valid in both formats.
// 3. The key differential test of the formulation against the simulator: the warm start built
//    from a schedule's simulated timeline satisfies every bound and row of the MILP (within
//    1e-6) and has the schedule's makespan as objective; on the best known offload schedule, on
//    the heuristics' schedules of the shipped instances, and on random valid schedules of random
//    instances with tight memory, with and without offload.
// 4. CBC (skipped with a message when `cbc` is not on PATH): without offload, the exported LP's
//    optimum equals the exact solver's (search/solver.h) within 1e-6 on small instances
//    with tight memory and random durations (split and unsplit); with offload it is <= (the
//    MILP is a relaxation). The MPS file gives the same optimum as the LP file; CBC accepts the
//    MIP start.
// 5. The CLI: `optpipe export-milp` writes both formats and the MIP start; an unknown extension
//    is an error (exit 2).
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "model/error.h"
#include "model/instance_io.h"
#include "milp/lp_writer.h"
#include "milp/milp_formulation.h"
#include "milp/milp_model.h"
#include "milp/mps_writer.h"
#include "model/schedule_io.h"
#include "search/solver.h"
#include "model/simulator.h"
#include "heuristics/registry.h"
#include "tests/test_paths.h"
#include "tests/test_util.h"

namespace optpipe {
namespace {

namespace fs = std::filesystem;
using milp::Formulation;
using test_support::GiB;

std::string instance_path(const std::string& name) {
  return std::string(OPTPIPE_SOURCE_DIR) + "/instances/" + name + ".json";
}

std::string temp_path(const std::string& name) {
  return optpipe::test_support::temp_file("milp", name);
}

// Every violation of the warm start, joined (empty when feasible).
std::string warm_violations(const Formulation& f) {
  std::string out;
  const auto v = f.model.violations(f.start_values, 1e-6);
  for (std::size_t i = 0; i < v.size() && i < 12; ++i) out += "  " + v[i] + "\n";
  if (v.size() > 12) out += "  ... " + std::to_string(v.size()) + " in all\n";
  return out;
}

// Checks that `sch` (feasible) maps to a feasible point of the MILP with its makespan.
void expect_warm_start_feasible(const Instance& inst, const Schedule& sch, const std::string& what) {
  const SimResult sim = simulate(inst, sch);
  ASSERT_TRUE(sim.feasible) << what << ": " << sim.reason;
  const Formulation f = milp::build_formulation(inst, sim.makespan * 1.5 + 1.0, &sch);
  ASSERT_EQ(f.start_values.size(), f.model.variables().size());
  EXPECT_EQ(warm_violations(f), "") << what;
  EXPECT_NEAR(f.model.objective_value(f.start_values), sim.makespan, 1e-9) << what;
}

// ---- 1. the model container --------------------------------------------------------------------

TEST(MilpModel, MergesTermsAndReportsViolations) {
  milp::Model m;
  const int x = m.add_continuous("x", 0, 10);
  const int y = m.add_binary("y");
  milp::LinearExpr e = milp::LinearExpr::var(x, 2.0);
  e.add(y, 1.0).add(x, -1.0).add_constant(3.0);  // x + y + 3
  m.add_constraint("r", e, milp::Sense::kLessEqual, 5.0);
  ASSERT_EQ(m.constraints().size(), 1u);
  const milp::Constraint& r = m.constraints()[0];
  ASSERT_EQ(r.terms.size(), 2u);
  EXPECT_EQ(r.terms[0].coef, 1.0);
  EXPECT_EQ(r.rhs, 2.0);
  EXPECT_EQ(m.num_binaries(), 1);
  EXPECT_TRUE(m.violations({1.0, 1.0}).empty());
  EXPECT_EQ(m.violations({2.0, 1.0}).size(), 1u);   // row
  EXPECT_EQ(m.violations({1.0, 0.5}).size(), 1u);   // integrality
  EXPECT_EQ(m.violations({-1.0, 0.0}).size(), 1u);  // bound
  EXPECT_TRUE(milp::is_valid_name("S_F_s0_j3"));
  EXPECT_TRUE(milp::is_valid_name("x_F_s0_j1_B_s0_j0"));
  EXPECT_FALSE(milp::is_valid_name("e1"));
  EXPECT_FALSE(milp::is_valid_name("3x"));
  EXPECT_FALSE(milp::is_valid_name("a b"));
  EXPECT_FALSE(milp::is_valid_name(""));
}

// ---- 2. structure -------------------------------------------------------------------------------

bool has_var(const Formulation& f, const std::string& name) { return f.model.find_variable(name) >= 0; }

TEST(MilpStructure, NoBinaryForPairsOrderedByPrecedence) {
  const Instance inst = test_support::uniform_instance(2, 3, 1.0, 1.0, 1.0);
  const Formulation f = milp::build_formulation(inst, 100.0);
  EXPECT_TRUE(f.exact);
  for (int s = 0; s < 2; ++s) {
    const std::string st = "_s" + std::to_string(s);
    // FIFO, F before B before W, and transitively F(j) before W(j') for j <= j'.
    EXPECT_FALSE(has_var(f, "x_F" + st + "_j0_F" + st + "_j1"));
    EXPECT_FALSE(has_var(f, "x_F" + st + "_j0_F" + st + "_j2"));
    EXPECT_FALSE(has_var(f, "x_F" + st + "_j0_B" + st + "_j0"));
    EXPECT_FALSE(has_var(f, "x_B" + st + "_j0_W" + st + "_j0"));
    EXPECT_FALSE(has_var(f, "x_F" + st + "_j0_W" + st + "_j2"));
    EXPECT_FALSE(has_var(f, "x_B" + st + "_j0_W" + st + "_j1"));
    // Open pairs: a later F against an earlier B or W, a later B against an earlier W.
    EXPECT_TRUE(has_var(f, "x_F" + st + "_j1_B" + st + "_j0"));
    EXPECT_TRUE(has_var(f, "x_F" + st + "_j2_W" + st + "_j0"));
    EXPECT_TRUE(has_var(f, "x_B" + st + "_j2_W" + st + "_j1"));
  }
}

// One stage per device, p devices, m microbatches, no offload: the pairs without binary on a
// device are F/F, B/B, W/W (FIFO) and X(j) before Y(j') for j <= j' along F -> B -> W, so the
// binaries are 3 * C(m,2) per device when split (F(j') vs B(j), F(j') vs W(j), B(j') vs W(j) for
// j < j') and C(m,2) unsplit. Rows: precedences (F chain (p-1)m, F->B pm, B chain (p-1)m, B->W pm,
// FIFO T p (m-1)), one makespan row per sink (W(s,m-1) split, B(0,m-1) unsplit), two per binary,
// one memory row per F on a device whose memory can run out (m activations > the limit).
TEST(MilpStructure, CountsMatchTheFormulas) {
  for (const bool split : {true, false}) {
    for (const int m : {2, 3, 5}) {
      for (const bool tight : {false, true}) {
        const int p = 3;
        Instance inst = test_support::uniform_instance(p, m, 1.0, 1.2, split ? 0.7 : 0.0, 0.1);
        inst.split_backward = split;
        if (!split) {
          for (Stage& st : inst.stages) st.weight_activation = 0;
        }
        if (tight) test_support::squeeze_memory(inst, 2.5);
        const Formulation f = milp::build_formulation(inst, 1000.0);
        const int T = split ? 3 : 2, pairs = m * (m - 1) / 2;
        const int binaries = p * (split ? 3 : 1) * pairs;
        const int prec = (p - 1) * m + p * m + (p - 1) * m + (split ? p * m : 0) + T * p * (m - 1);
        const int sinks = split ? p : 1;
        const int mem = tight && m > 2 ? p * m : 0;  // limit = static + 2.5 activations
        SCOPED_TRACE(std::string(split ? "split" : "unsplit") + " m=" + std::to_string(m) + (tight ? " tight" : ""));
        EXPECT_EQ(f.stats.binaries, binaries);
        EXPECT_EQ(f.stats.order_binaries, binaries);
        EXPECT_EQ(f.stats.fixed_pairs + f.stats.order_binaries, p * (T * m) * (T * m - 1) / 2);
        EXPECT_EQ(f.stats.variables, T * p * m + 1 + binaries);
        EXPECT_EQ(f.stats.constraints, prec + sinks + 2 * binaries + mem);
      }
    }
  }
}

TEST(MilpStructure, OffloadFamilies) {
  Instance inst = test_support::uniform_instance(2, 3, 1.0, 1.0, 1.0);
  for (Stage& st : inst.stages) {
    st.offload = 0.5;
    st.reload = 0.5;
  }
  inst.offload_levels = {0.0, 0.5, 1.0};
  test_support::squeeze_memory(inst, 2.0);
  const Formulation f = milp::build_formulation(inst, 100.0);
  EXPECT_FALSE(f.exact);
  EXPECT_EQ(f.stats.offload_binaries, 2 * 3 * 2);  // (stage, microbatch, level > 0)
  EXPECT_EQ(f.stats.channel_binaries, 0);         // one stage per PCIe group: FIFO fixed
  EXPECT_GT(f.stats.memory_binaries, 0);
  EXPECT_TRUE(has_var(f, "o_s1_j2_l2"));
  EXPECT_TRUE(has_var(f, "Toff_s0_j1"));
  EXPECT_TRUE(has_var(f, "Trel_s0_j1"));
  // Shared PCIe group: the two stages' transfers need channel binaries (D2H and H2D).
  inst.devices[1].pcie_group = 0;
  const Formulation g = milp::build_formulation(inst, 100.0);
  EXPECT_EQ(g.stats.channel_binaries, 2 * 3 * 3);
  EXPECT_TRUE(has_var(g, "koff_s0_j0_s1_j2"));
  EXPECT_TRUE(has_var(g, "krel_s0_j2_s1_j0"));
  // offload_levels == [0]: no offload, exact.
  inst.offload_levels = {0.0};
  const Formulation h = milp::build_formulation(inst, 100.0);
  EXPECT_TRUE(h.exact);
  EXPECT_EQ(h.stats.offload_binaries, 0);
}

// Sections of an LP file: rows (lines with "name:" under Subject To), bound lines, binaries.
struct LpCounts {
  int rows = 0, bounds = 0, binaries = 0;
  bool minimize = false, end = false, comment = false;
};
LpCounts count_lp(const std::string& text) {
  LpCounts c;
  std::istringstream in(text);
  std::string line, section;
  while (std::getline(in, line)) {
    if (line.rfind("\\", 0) == 0) {
      c.comment = true;
      continue;
    }
    if (line == "Minimize" || line == "Subject To" || line == "Bounds" || line == "Binaries" || line == "End") {
      section = line;
      c.minimize |= line == "Minimize";
      c.end |= line == "End";
      continue;
    }
    if (section == "Subject To" && line.find(':') != std::string::npos) ++c.rows;
    if (section == "Bounds" && !line.empty()) ++c.bounds;
    if (section == "Binaries" && !line.empty()) ++c.binaries;
  }
  return c;
}

struct MpsCounts {
  int rows = 0, columns = 0, markers = 0, binary_bounds = 0;
  std::set<std::string> names;
};
MpsCounts count_mps(const std::string& text) {
  MpsCounts c;
  std::istringstream in(text);
  std::string line, section;
  std::set<std::string> cols;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '*') continue;
    if (line[0] != ' ') {
      section = line.substr(0, line.find(' '));
      continue;
    }
    std::istringstream f(line);
    std::string a, b, v, w;
    f >> a >> b >> v >> w;
    if (section == "ROWS" && a != "N") {
      ++c.rows;
      c.names.insert(b);
    }
    if (section == "COLUMNS") {
      if (b == "'MARKER'") {
        ++c.markers;
      } else {
        cols.insert(a);
      }
    }
    if (section == "BOUNDS" && a == "UP" && w == "1") ++c.binary_bounds;
  }
  c.columns = static_cast<int>(cols.size());
  for (const auto& n : cols) c.names.insert(n);
  return c;
}

TEST(MilpStructure, LpAndMpsFilesMatchTheModel) {
  Instance inst = load_instance(instance_path("offload-slow-pcie-4x8"));
  inst.devices[1].pcie_group = 0;  // channel binaries too
  const Formulation f = milp::build_formulation(inst, 400.0);
  const auto& model = f.model;
  int continuous = 0;
  for (const auto& v : model.variables()) {
    EXPECT_TRUE(milp::is_valid_name(v.name)) << v.name;
    continuous += v.type == milp::VarType::kContinuous;
  }
  std::set<std::string> names;
  for (const auto& r : model.constraints()) {
    EXPECT_TRUE(milp::is_valid_name(r.name)) << r.name;
    names.insert(r.name);
  }
  EXPECT_EQ(names.size(), model.constraints().size()) << "row names must be unique";
  for (const auto& v : model.variables()) names.insert(v.name);
  EXPECT_EQ(names.size(), model.constraints().size() + model.variables().size()) << "variable names must be unique";

  const LpCounts lp = count_lp(milp::lp_text(model));
  EXPECT_TRUE(lp.comment && lp.minimize && lp.end);
  EXPECT_EQ(lp.rows, static_cast<int>(model.constraints().size()));
  EXPECT_EQ(lp.binaries, model.num_binaries());
  EXPECT_EQ(lp.bounds, continuous);
  const std::string lp_text = milp::lp_text(model);
  EXPECT_NE(lp_text.find("RELAXATION"), std::string::npos) << "the header states the relaxation";

  const std::string mps = milp::mps_text(model);
  const MpsCounts m = count_mps(mps);
  EXPECT_EQ(m.rows, static_cast<int>(model.constraints().size()));
  EXPECT_EQ(m.columns, static_cast<int>(model.variables().size()));
  EXPECT_EQ(m.markers % 2, 0);
  EXPECT_GE(m.markers, 2);
  EXPECT_GE(m.binary_bounds, model.num_binaries());
  EXPECT_EQ(mps.rfind("ENDATA"), mps.size() - 7);
}

// ---- 3. warm starts against the simulator --------------------------------------------------------

TEST(MilpWarmStart, BestKnownOffloadScheduleIsFeasible) {
  const Instance inst = load_instance(instance_path("offload-slow-pcie-4x8"));
  const Schedule sch = test_support::offload_slow_witness(inst);
  expect_warm_start_feasible(inst, sch, "offload-slow-pcie-4x8 witness");
}

TEST(MilpWarmStart, RandomValidSchedulesAreFeasible) {
  std::mt19937 rng(20260511);
  int checked = 0, offloaded = 0;
  for (int trial = 0; trial < 3000 && checked < 400; ++trial) {
    test_support::RandomInstanceOptions o;
    o.max_devices = 3;
    o.max_microbatches = 4;
    o.tight_memory = trial % 2 == 0;
    o.offloadable_probability = 0.6;
    const Instance inst = test_support::random_instance(rng, o);
    const Schedule sch = test_support::random_valid_schedule(inst, rng, 0.5);
    const SimResult sim = simulate(inst, sch);
    if (!sim.feasible) continue;
    ++checked;
    if (sch.has_offload()) ++offloaded;
    std::ostringstream what;
    what << "trial " << trial << " (" << inst.num_devices() << " devices, " << inst.num_stages() << " stages, "
         << inst.microbatches << " microbatches)";
    expect_warm_start_feasible(inst, sch, what.str());
    if (testing::Test::HasFailure()) break;
  }
  EXPECT_GE(checked, 300);
  EXPECT_GE(offloaded, 80);
}

TEST(MilpWarmStart, HeuristicSchedulesOfShippedInstancesAreFeasible) {
  for (const char* name : {"tiny-2x3", "uniform-4x8", "unsplit-4x8", "v-4x8", "loop-4x8", "hetero-4x8",
                           "offload-fast-pcie-4x8", "offload-slow-pcie-4x8", "shared-pcie-4x8"}) {
    const Instance inst = load_instance(instance_path(name));
    const BestResult best = run_all_heuristics(inst, false);
    int checked = 0;
    for (const HeuristicResult& r : best.results) {
      if (!r.ok()) continue;
      expect_warm_start_feasible(inst, *r.schedule, std::string(name) + " / " + r.name);
      ++checked;
    }
    EXPECT_GT(checked, 0) << name;
  }
}

TEST(MilpWarmStart, RejectsInfeasibleOrTooLongSchedules) {
  const Instance inst = test_support::uniform_instance(2, 2, 1.0, 1.0, 1.0);
  const Schedule sch = test_support::lists(inst, {{"F0.0", "F0.1", "B0.0", "W0.0", "B0.1", "W0.1"},
                                             {"F1.0", "B1.0", "W1.0", "F1.1", "B1.1", "W1.1"}});
  const double makespan = simulate(inst, sch).makespan;
  EXPECT_NO_THROW(milp::build_formulation(inst, makespan, &sch));
  EXPECT_THROW(milp::build_formulation(inst, makespan - 0.5, &sch), InputError);
  const Schedule broken = test_support::lists(inst, {{"F0.0", "B0.0"}, {"F1.0"}});
  EXPECT_THROW(milp::build_formulation(inst, 100.0, &broken), InputError);
  EXPECT_THROW(milp::build_formulation(inst, 0.0), InputError);
}

// ---- 4. CBC ---------------------------------------------------------------------------------------

bool have_cbc() { return std::system("command -v cbc > /dev/null 2>&1") == 0; }

#define REQUIRE_CBC()                                                                                  \
  do {                                                                                                 \
    if (!have_cbc()) GTEST_SKIP() << "cbc is not on PATH (Debian package coinor-cbc, scripts/setup.sh)"; \
  } while (false)

struct CbcRun {
  std::string status;  // first word of the solution file: Optimal, Infeasible, ...
  double objective = NAN;
  std::map<std::string, double> values;
  double seconds = 0;
  std::string log;
};

// `cbc MODEL [EXTRA] solve solu FILE`, single-threaded, and the solution file parsed.
CbcRun run_cbc(const std::string& model_path, const std::string& extra = "") {
  const std::string sol = temp_path("cbc.sol"), log = temp_path("cbc.log");
  const std::string cmd = "cbc " + model_path + " " + extra + " -threads 1 solve solu " + sol + " > " + log + " 2>&1";
  const auto t0 = std::chrono::steady_clock::now();
  const int rc = std::system(cmd.c_str());
  CbcRun r;
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  r.log = read_text_file(log);
  EXPECT_EQ(rc, 0) << cmd << "\n" << r.log;
  std::ifstream in(sol);
  std::string first;
  std::getline(in, first);
  std::istringstream head(first);
  head >> r.status;
  const auto pos = first.find("objective value");
  if (pos != std::string::npos) r.objective = std::atof(first.c_str() + pos + 15);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream f(line);
    std::string idx, name;
    double v = 0;
    f >> idx;
    if (idx == "**") f >> idx;  // CBC marks infeasible values with **
    if (f >> name >> v) r.values[name] = v;
  }
  fs::remove(sol);
  fs::remove(log);
  return r;
}

// The lists implied by a MILP solution without offload: each device's ops by start time (ties:
// the ordering binary, or op order for pairs the precedences order).
Schedule lists_from_solution(const Instance& inst, const CbcRun& r) {
  Schedule sch;
  sch.instance = inst.name;
  sch.devices.assign(inst.num_devices(), {});
  const char letters[] = {'F', 'B', 'W'};
  auto tag = [&](const Action& a) {
    return std::string(1, letters[static_cast<int>(a.type)]) + "_s" + std::to_string(a.stage) + "_j" + std::to_string(a.mb);
  };
  auto start = [&](const Action& a) {
    auto it = r.values.find("S_" + tag(a));
    return it == r.values.end() ? 0.0 : it->second;  // CBC leaves zero values out
  };
  for (int s = 0; s < inst.num_stages(); ++s)
    for (int t = 0; t < inst.num_compute_types(); ++t)
      for (int j = 0; j < inst.microbatches; ++j)
        sch.devices[inst.stages[s].device].push_back({static_cast<OpType>(t), s, j, 0.0});
  auto id = [&](const Action& a) { return (static_cast<int>(a.type) * inst.num_stages() + a.stage) * inst.microbatches + a.mb; };
  for (auto& list : sch.devices) {
    std::stable_sort(list.begin(), list.end(), [&](const Action& a, const Action& b) {
      const double sa = start(a), sb = start(b);
      if (std::fabs(sa - sb) > 1e-7) return sa < sb;
      const bool a_first = id(a) < id(b);
      const std::string x = "x_" + (a_first ? tag(a) + "_" + tag(b) : tag(b) + "_" + tag(a));
      const auto it = r.values.find(x);
      if (it == r.values.end()) return a_first;
      return (it->second > 0.5) == a_first;
    });
  }
  return sch;
}

struct SmallCase {
  Instance inst;
  std::string what;
};

// 2 devices, 2-3 microbatches, random durations (fixed seed), memory squeezed so that it
// matters; split and unsplit; one stage per device, and every fourth case a V placement (4
// stages, 2 microbatches); with offload when `offload` (some with levels {0, 0.5, 1}, some
// with both devices on one PCIe group).
std::vector<SmallCase> small_cases(bool offload, int count, unsigned seed) {
  std::mt19937 rng(seed);
  auto uni = [&](double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(rng); };
  std::vector<SmallCase> out;
  for (int k = 0; out.size() < static_cast<std::size_t>(count); ++k) {
    const bool v_shape = k % 4 == 3;
    const int m = v_shape ? 2 : 2 + (k / 2) % 2;
    Instance inst = test_support::uniform_instance(v_shape ? 4 : 2, m, 1, 1, 1);
    if (v_shape) {
      inst.devices.resize(2);
      const int device_of[] = {0, 1, 1, 0};
      for (int s = 0; s < 4; ++s) inst.stages[s].device = device_of[s];
    }
    inst.split_backward = k % 2 == 0;
    test_support::randomise_costs(inst, rng);
    for (Stage& st : inst.stages) {
      if (!inst.split_backward) {
        st.weight = uni(0.1, 1.0);
        st.weight_activation = 0;
      }
      if (offload) {
        st.offload = uni(0.1, 1.0);
        st.reload = uni(0.1, 1.0);
      }
    }
    if (offload && k % 3 == 2) inst.offload_levels = {0.0, 0.5, 1.0};
    if (offload && k % 5 == 1) inst.devices[1].pcie_group = 0;
    test_support::squeeze_memory(inst, uni(1.05, 2.5));
    std::ostringstream what;
    what << "case " << k << ": " << inst.num_stages() << " stages, m=" << m << (inst.split_backward ? " split" : " unsplit")
         << ", limit " << (inst.devices[0].memory_limit / GiB) << "/" << (inst.devices[1].memory_limit / GiB) << " GiB"
         << (inst.devices[1].pcie_group == 0 ? ", shared PCIe" : "") << (inst.offload_levels.size() > 2 ? ", levels 0/0.5/1" : "");
    if (obviously_infeasible(inst)) continue;
    out.push_back({std::move(inst), what.str()});
  }
  return out;
}

// Big-M: the best heuristic's makespan, else (no heuristic fits) the solver's + 10%.
double horizon_for(const Instance& inst, const SolveResult& exact) {
  const BestResult best = run_all_heuristics(inst, false);
  if (const HeuristicResult* h = best.best_result()) return h->sim.makespan;
  return exact.makespan * 1.1 + 1.0;
}

SolveOptions exact_options() {
  SolveOptions o;
  o.time_limit = 30;
  o.threads = 1;
  return o;
}

TEST(MilpCbc, SameOptimumAsTheSolverWithoutOffload) {
  REQUIRE_CBC();
  double worst_seconds = 0, total_seconds = 0;
  int compared = 0, memory_binds = 0, infeasible = 0;
  for (const SmallCase& c : small_cases(false, 24, 424242)) {
    const SolveResult exact = solve(c.inst, {}, exact_options());
    if (exact.status == SolveResult::Status::kInfeasible) {  // then the exact MILP has no solution either
      const Formulation f = milp::build_formulation(c.inst, 1000.0);
      const std::string path = temp_path("model.lp");
      write_text_file(path, milp::lp_text(f.model));
      const CbcRun r = run_cbc(path);
      fs::remove(path);
      EXPECT_EQ(r.status, "Infeasible") << c.what << "\n" << r.log;
      ++infeasible;
      continue;
    }
    ASSERT_EQ(exact.status, SolveResult::Status::kOptimal) << c.what;
    const Formulation f = milp::build_formulation(c.inst, horizon_for(c.inst, exact));
    ASSERT_TRUE(f.exact);
    const std::string path = temp_path("model.lp");
    write_text_file(path, milp::lp_text(f.model));
    const CbcRun r = run_cbc(path);
    fs::remove(path);
    worst_seconds = std::max(worst_seconds, r.seconds);
    total_seconds += r.seconds;
    ASSERT_EQ(r.status, "Optimal") << c.what << "\n" << r.log;
    EXPECT_NEAR(r.objective, exact.makespan, 1e-6) << c.what;
    // The MILP's solution, as lists, simulates to a feasible schedule no longer than its value.
    const Schedule sch = lists_from_solution(c.inst, r);
    const SimResult sim = simulate(c.inst, sch);
    EXPECT_TRUE(sim.feasible) << c.what << ": " << sim.reason;
    EXPECT_LE(sim.makespan, r.objective + 1e-6) << c.what;
    ++compared;
    Instance unlimited = c.inst;
    for (Device& d : unlimited.devices) d.memory_limit = 1e18;
    if (solve(unlimited, {}, exact_options()).makespan < exact.makespan - 1e-6) ++memory_binds;
  }
  EXPECT_GE(compared, 18);
  EXPECT_GE(memory_binds, 6) << "the cases should exercise the memory rows";
  std::printf("[ cbc      ] %d instances without offload (memory binds in %d; %d more infeasible): %.2f s in all, "
              "slowest %.2f s\n", compared, memory_binds, infeasible, total_seconds, worst_seconds);
}

TEST(MilpCbc, RelaxationNeverAboveTheSolverWithOffload) {
  REQUIRE_CBC();
  double worst_seconds = 0, total_seconds = 0;
  int below = 0, offloading = 0;
  for (const SmallCase& c : small_cases(true, 16, 777)) {
    const SolveResult exact = solve(c.inst, {}, exact_options());
    ASSERT_EQ(exact.status, SolveResult::Status::kOptimal) << c.what;
    const Formulation f = milp::build_formulation(c.inst, horizon_for(c.inst, exact));
    ASSERT_FALSE(f.exact);
    const std::string path = temp_path("model.lp");
    write_text_file(path, milp::lp_text(f.model));
    const CbcRun r = run_cbc(path);
    fs::remove(path);
    worst_seconds = std::max(worst_seconds, r.seconds);
    total_seconds += r.seconds;
    ASSERT_EQ(r.status, "Optimal") << c.what << "\n" << r.log;
    EXPECT_LE(r.objective, exact.makespan + 1e-6) << c.what;
    if (r.objective < exact.makespan - 1e-6) ++below;
    if (exact.schedule->has_offload()) ++offloading;
    std::printf("[ cbc      ] %s: MILP %.6f, solver %.6f, %.2f s\n", c.what.c_str(), r.objective, exact.makespan,
                r.seconds);
  }
  EXPECT_GE(offloading, 4) << "the cases should need offload";
  std::printf("[ cbc      ] with offload: %d of 16 optima offload, %d of 16 strictly below (relaxation), %.2f s in all, "
              "slowest %.2f s\n", offloading, below, total_seconds, worst_seconds);
}

TEST(MilpCbc, MpsGivesTheSameOptimumAndCbcTakesTheMipStart) {
  REQUIRE_CBC();
  const Instance inst = load_instance(instance_path("tiny-2x3"));
  const BestResult best = run_all_heuristics(inst, false);
  ASSERT_NE(best.best_result(), nullptr);
  const Schedule& sch = *best.best_result()->schedule;
  const Formulation f = milp::build_formulation(inst, best.best_result()->sim.makespan, &sch);
  const std::string lp = temp_path("model.lp"), mps = temp_path("model.mps"), mst = temp_path("model.mst");
  write_text_file(lp, milp::lp_text(f.model));
  write_text_file(mps, milp::mps_text(f.model));
  write_text_file(mst, milp::mip_start_text(f));
  const CbcRun a = run_cbc(lp);
  const CbcRun b = run_cbc(mps);
  ASSERT_EQ(a.status, "Optimal") << a.log;
  ASSERT_EQ(b.status, "Optimal") << b.log;
  EXPECT_NEAR(a.objective, b.objective, 1e-6);
  const CbcRun c = run_cbc(lp, "-mips " + mst);
  EXPECT_NE(c.log.find("MIPStart provided solution with cost"), std::string::npos) << c.log;
  EXPECT_NEAR(c.objective, a.objective, 1e-6);
  for (const auto& p : {lp, mps, mst}) fs::remove(p);
}

// ---- 5. the CLI ----------------------------------------------------------------------------------

#ifdef OPTPIPE_CLI_PATH
int run_cli(const std::string& args, std::string* output) {
  const std::string out = temp_path("cli.txt");
  const std::string cmd = std::string(OPTPIPE_CLI_PATH) + " " + args + " > " + out + " 2>&1 < /dev/null";
  const int rc = std::system(cmd.c_str());
  *output = read_text_file(out);
  fs::remove(out);
  return rc != -1 && WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

TEST(MilpCli, ExportsLpMpsAndMipStart) {
  if (!fs::exists(OPTPIPE_CLI_PATH)) GTEST_SKIP() << "the optpipe binary is missing";
  const std::string inst = instance_path("tiny-2x3");
  const std::string lp = temp_path("m.lp"), mps = temp_path("m.mps"), sch = temp_path("s.json");
  std::string out;
  ASSERT_EQ(run_cli("schedule " + inst + " -o " + sch, &out), 0) << out;
  ASSERT_EQ(run_cli("export-milp " + inst + " -o " + lp + " --warm-start " + sch, &out), 0) << out;
  EXPECT_NE(out.find("variables ("), std::string::npos) << out;
  EXPECT_NE(out.find("binaries), "), std::string::npos) << out;
  const std::string mst = lp.substr(0, lp.size() - 3) + ".mst";
  EXPECT_TRUE(fs::exists(mst)) << out;
  EXPECT_EQ(count_lp(read_text_file(lp)).binaries, 18);
  ASSERT_EQ(run_cli("export-milp " + inst + " -o " + mps, &out), 0) << out;
  EXPECT_NE(read_text_file(mps).find("ENDATA"), std::string::npos);
  // --format overrides the extension; an unknown extension is bad input.
  const std::string other = temp_path("m.model");
  ASSERT_EQ(run_cli("export-milp " + inst + " -o " + other + " --format mps", &out), 0) << out;
  EXPECT_NE(read_text_file(other).find("ROWS"), std::string::npos);
  EXPECT_EQ(run_cli("export-milp " + inst + " -o " + temp_path("m.txt"), &out), 2);
  EXPECT_NE(out.find("unknown model file extension"), std::string::npos) << out;
  EXPECT_EQ(run_cli("export-milp " + inst + " -o " + lp + " --format xml", &out), 2) << out;
  // A warm start of another instance is bad input too.
  const std::string other_sch = temp_path("other.json");
  ASSERT_EQ(run_cli("schedule " + instance_path("uniform-4x8") + " -o " + other_sch, &out), 0) << out;
  EXPECT_EQ(run_cli("export-milp " + inst + " -o " + lp + " --warm-start " + other_sch, &out), 2) << out;
  EXPECT_NE(out.find("not a valid schedule of this instance"), std::string::npos) << out;
  fs::remove(other_sch);
  for (const auto& p : {lp, mps, sch, mst, other}) fs::remove(p);
}
#endif

}  // namespace
}  // namespace optpipe

