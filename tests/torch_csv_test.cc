// Tests of the PyTorch pipelining CSV export (model/torch_csv.h, issue 9) and `optpipe export`.
//
// 1. Round trip: the CSV of every heuristic's schedule (shipped and random instances) and of the
//    solver's schedule parses back to the same lists; offloading schedules are refused without
//    drop_offload and, with it, parse back to the schedule without R and levels.
// 2. The format itself, from PyTorch's grammar (torch/distributed/pipelining/schedules.py
//    `_action_regex`, `_Action.from_str`, `_validate_schedule`): one row per rank, cells
//    <stage><F|I|B|W><mb>, global stage ids, I/W for a split backward and B for a fused one, every
//    stage on exactly one row, m forwards per stage; exact texts for hand-written schedules.
// 3. The parser's errors and tolerances (empty cells, spaces, communication actions).
// 4. The CLI: files written, exit codes 0 and 2, the refusal message and the cost line.

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "model/error.h"
#include "model/instance_io.h"
#include "model/schedule_io.h"
#include "search/solver.h"
#include "model/simulator.h"
#include "model/torch_csv.h"
#include "model/validator.h"
#include "heuristics/registry.h"
#include "tests/test_paths.h"
#include "tests/test_util.h"

namespace optpipe {
namespace {

using test_support::GiB;

std::vector<std::string> shipped_instance_paths() {
  std::vector<std::string> paths;
  for (const auto& e : std::filesystem::directory_iterator(std::string(OPTPIPE_SOURCE_DIR) + "/instances")) {
    if (e.path().extension() == ".json") paths.push_back(e.path().string());
  }
  std::sort(paths.begin(), paths.end());
  return paths;
}

std::string shipped(const std::string& name) { return std::string(OPTPIPE_SOURCE_DIR) + "/instances/" + name + ".json"; }

std::vector<std::string> split(const std::string& text, char sep) {
  std::vector<std::string> parts;
  std::string cur;
  std::istringstream in(text);
  while (std::getline(in, cur, sep)) parts.push_back(cur);
  return parts;
}

// Checks `csv` against what PyTorch's loader requires of a compute-only schedule for `inst`:
// one row per rank, every cell an action PyTorch's regex reads completely, I/W only when split
// and B only when fused, each stage on the row of its device, m forwards and m backwards per stage.
void expect_pytorch_shape(const Instance& inst, const std::string& csv, const std::string& what) {
  const std::regex cell_re(inst.split_backward ? "([0-9]+)([FIW])([0-9]+)" : "([0-9]+)([FB])([0-9]+)");
  const auto rows = split(csv, '\n');
  ASSERT_EQ(static_cast<int>(rows.size()), inst.num_devices()) << what;
  std::vector<int> forwards(inst.num_stages(), 0), backwards(inst.num_stages(), 0);
  for (int d = 0; d < inst.num_devices(); ++d) {
    for (const std::string& cell : split(rows[d], ',')) {
      std::smatch m;
      ASSERT_TRUE(std::regex_match(cell, m, cell_re)) << what << ": row " << d << " cell \"" << cell << "\"";
      const int s = std::stoi(m[1]);
      ASSERT_LT(s, inst.num_stages()) << what;
      EXPECT_EQ(inst.stages[s].device, d) << what << ": stage " << s << " on row " << d;
      (m[2] == "F" ? forwards : backwards)[s] += m[2] == "W" ? 0 : 1;
    }
  }
  for (int s = 0; s < inst.num_stages(); ++s) {
    EXPECT_EQ(forwards[s], inst.microbatches) << what << ": stage " << s;
    EXPECT_EQ(backwards[s], inst.microbatches) << what << ": stage " << s;
  }
}

// The round trip of one schedule; returns whether it offloaded.
bool check_round_trip(const Instance& inst, const Schedule& sch, const std::string& what) {
  if (!sch.has_offload()) {
    const std::string csv = to_torch_csv(inst, sch);
    expect_pytorch_shape(inst, csv, what);
    const Schedule back = from_torch_csv(inst, csv);
    EXPECT_EQ(back.devices, sch.devices) << what << "\n" << csv;
    return false;
  }
  try {
    to_torch_csv(inst, sch);
    ADD_FAILURE() << what << ": an offloading schedule was exported without drop_offload";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("PyTorch has no offload action; use --drop-offload"), std::string::npos)
        << e.what();
  }
  TorchCsvOptions o;
  o.drop_offload = true;
  const TorchCsvExport e = export_torch_csv(inst, sch, o);
  expect_pytorch_shape(inst, e.csv, what);
  const Schedule stripped = without_offload(sch);
  EXPECT_FALSE(stripped.has_offload()) << what;
  EXPECT_TRUE(check_structure(inst, stripped).empty()) << what;
  EXPECT_EQ(from_torch_csv(inst, e.csv).devices, stripped.devices) << what;
  EXPECT_TRUE(e.cost.has_value()) << what;
  if (e.cost) EXPECT_GT(e.cost->offloads, 0) << what;
  return true;
}

TEST(TorchCsv, EveryHeuristicScheduleOfTheShippedInstancesRoundTrips) {
  int plain = 0, offloading = 0;
  for (const std::string& path : shipped_instance_paths()) {
    const Instance inst = load_instance(path);
    const BestResult best = run_all_heuristics(inst);
    for (const HeuristicResult& r : best.results) {
      if (!r.ok()) continue;
      (check_round_trip(inst, *r.schedule, path + " " + r.name) ? offloading : plain)++;
    }
  }
  EXPECT_GT(plain, 20);
  EXPECT_GT(offloading, 3);  // PipeOffload and AdaOffload on the tight and offload instances
}

TEST(TorchCsv, EveryHeuristicScheduleOfRandomInstancesRoundTrips) {
  std::mt19937 rng(9009);
  int plain = 0, offloading = 0;
  for (int i = 0; i < 40; ++i) {
    test_support::RandomInstanceOptions o;
    o.tight_memory = i % 2 == 1;
    const Instance inst = test_support::random_instance(rng, o);
    const BestResult best = run_all_heuristics(inst);
    for (const HeuristicResult& r : best.results) {
      if (!r.ok()) continue;
      (check_round_trip(inst, *r.schedule, "random instance " + std::to_string(i) + " " + r.name) ? offloading : plain)++;
    }
  }
  EXPECT_GT(plain, 40);
  EXPECT_GT(offloading, 0);
}

TEST(TorchCsv, SolverOutputRoundTrips) {
  std::vector<Instance> instances = {load_instance(shipped("tiny-2x3")), load_instance(shipped("v-4x8")),
                                     load_instance(shipped("unsplit-4x8")), load_instance(shipped("offload-slow-pcie-4x8"))};
  std::mt19937 rng(77);
  for (int i = 0; i < 4; ++i) {
    test_support::RandomInstanceOptions o;
    o.max_microbatches = 4;
    o.tight_memory = i % 2 == 0;
    instances.push_back(test_support::random_instance(rng, o));
  }
  int solved = 0;
  for (const Instance& inst : instances) {
    std::vector<Schedule> warm;
    for (const HeuristicResult& r : run_all_heuristics(inst).results) {
      if (r.ok()) warm.push_back(*r.schedule);
    }
    SolveOptions so;
    so.node_limit = 300;
    so.time_limit = 5;
    so.threads = 1;
    const SolveResult res = solve(inst, warm, so);
    if (!res.schedule) continue;
    ++solved;
    check_round_trip(inst, *res.schedule, "solver on " + inst.name);
  }
  EXPECT_GE(solved, 4);
}

TEST(TorchCsv, SplitBackwardIsIAndWUnsplitIsB) {
  Instance split = test_support::uniform_instance(2, 2, 1, 1, 1);
  const Schedule s = test_support::lists(split, {{"F0.0", "F0.1", "B0.0", "W0.0", "B0.1", "W0.1"},
                                            {"F1.0", "B1.0", "F1.1", "B1.1", "W1.0", "W1.1"}});
  EXPECT_EQ(to_torch_csv(split, s), "0F0,0F1,0I0,0W0,0I1,0W1\n1F0,1I0,1F1,1I1,1W0,1W1\n");

  Instance fused = test_support::uniform_instance(2, 2, 1, 1, 1);
  fused.split_backward = false;
  for (Stage& st : fused.stages) st.weight_activation = 0;
  const Schedule u = test_support::lists(fused, {{"F0.0", "F0.1", "B0.0", "B0.1"}, {"F1.0", "B1.0", "F1.1", "B1.1"}});
  const std::string csv = to_torch_csv(fused, u);
  EXPECT_EQ(csv, "0F0,0F1,0B0,0B1\n1F0,1B0,1F1,1B1\n");
  EXPECT_EQ(from_torch_csv(fused, csv).devices, u.devices);

  const Instance shipped_unsplit = load_instance(shipped("unsplit-4x8"));
  ASSERT_FALSE(shipped_unsplit.split_backward);
  const HeuristicResult r = run_heuristic(*find_heuristic("1f1b"), shipped_unsplit);
  ASSERT_TRUE(r.ok()) << r.reason;
  const std::string one = to_torch_csv(shipped_unsplit, *r.schedule);
  EXPECT_NE(one.find("0B0"), std::string::npos);
  EXPECT_EQ(one.find('I'), std::string::npos);
  EXPECT_EQ(one.find('W'), std::string::npos);
}

TEST(TorchCsv, VPlacementRowsHoldBothStagesOfARank) {
  // V on 2 devices: device 0 holds stages 0 and 3, device 1 stages 1 and 2.
  Instance v = test_support::uniform_instance(4, 1, 1, 1, 1);
  v.devices.resize(2);
  v.stages[0].device = 0;
  v.stages[1].device = 1;
  v.stages[2].device = 1;
  v.stages[3].device = 0;
  ASSERT_EQ(v.placement(), Placement::kV);
  const Schedule s = test_support::lists(v, {{"F0.0", "F3.0", "B3.0", "W3.0", "B0.0", "W0.0"},
                                        {"F1.0", "F2.0", "B2.0", "W2.0", "B1.0", "W1.0"}});
  const std::string csv = to_torch_csv(v, s);
  EXPECT_EQ(csv, "0F0,3F0,3I0,3W0,0I0,0W0\n1F0,2F0,2I0,2W0,1I0,1W0\n");
  EXPECT_EQ(from_torch_csv(v, csv).devices, s.devices);

  const Instance shipped_v = load_instance(shipped("v-4x8"));
  const HeuristicResult r = run_heuristic(*find_heuristic("zb-v"), shipped_v);
  ASSERT_TRUE(r.ok()) << r.reason;
  const auto rows = split(to_torch_csv(shipped_v, *r.schedule), '\n');
  ASSERT_EQ(rows.size(), 4u);
  for (int d = 0; d < 4; ++d) {
    std::set<int> stages;
    for (const std::string& cell : split(rows[d], ',')) stages.insert(std::stoi(cell));
    EXPECT_EQ(stages, (std::set<int>{d, 7 - d})) << "row " << d << ": " << rows[d];
  }
}

Instance offloadable(int p, int m, double limit = 1e18) {
  Instance inst = test_support::uniform_instance(p, m, 1, 1, 1, 0.0, GiB, GiB / 2, limit);
  for (Stage& s : inst.stages) s.offload = s.reload = 0.5;
  return inst;
}

TEST(TorchCsv, OffloadIsRefusedWithoutDropOffload) {
  const Instance inst = offloadable(1, 2);
  const Schedule s = test_support::lists(inst, {{"F0.0@1", "F0.1@1", "R0.0", "B0.0", "W0.0", "R0.1", "B0.1", "W0.1"}});
  try {
    to_torch_csv(inst, s);
    FAIL() << "exported an offloading schedule";
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "schedule offloads 2 activations; PyTorch has no offload action; use --drop-offload");
  }
}

TEST(TorchCsv, DropOffloadExportsWithoutOffloadsAndReportsTheCost) {
  const Instance inst = offloadable(1, 2);
  const Schedule s = test_support::lists(inst, {{"F0.0@1", "F0.1", "R0.0", "B0.0", "W0.0", "B0.1", "W0.1"}});
  TorchCsvOptions o;
  o.drop_offload = true;
  const TorchCsvExport e = export_torch_csv(inst, s, o);
  EXPECT_EQ(e.csv, "0F0,0F1,0I0,0W0,0I1,0W1\n");
  ASSERT_TRUE(e.cost.has_value());
  EXPECT_EQ(e.cost->offloads, 1);
  EXPECT_TRUE(e.cost->before_feasible);
  EXPECT_TRUE(e.cost->after_feasible);
  // Without the offload nothing waits for a reload: F F B W B W of 1 ms each, 6 ms.
  EXPECT_DOUBLE_EQ(e.cost->after_makespan, 6.0);
  EXPECT_DOUBLE_EQ(e.cost->before_makespan, simulate(inst, s).makespan);
  ASSERT_EQ(e.cost->after_peak.size(), 1u);
  EXPECT_DOUBLE_EQ(e.cost->after_peak[0], 2 * GiB);  // both activations resident before B0.0
  EXPECT_TRUE(e.cost->over_limit.empty());
  const std::string line = describe(inst, *e.cost);
  EXPECT_NE(line.find("dropped 1 offload: makespan"), std::string::npos) << line;
  EXPECT_NE(line.find("-> 6.000 ms"), std::string::npos) << line;
  EXPECT_NE(line.find("still fits"), std::string::npos) << line;
}

TEST(TorchCsv, DropOffloadSaysWhenTheScheduleNoLongerFits) {
  const Instance inst = load_instance(shipped("gpt-8x24-tight"));
  const HeuristicResult r = run_heuristic(*find_heuristic("ada-offload"), inst);
  ASSERT_TRUE(r.ok()) << r.reason;
  ASSERT_TRUE(r.schedule->has_offload());
  const OffloadDropCost c = offload_drop_cost(inst, *r.schedule);
  EXPECT_TRUE(c.before_feasible);
  EXPECT_DOUBLE_EQ(c.before_makespan, r.sim.makespan);
  // 1F1B without offloads needs 8 activations on device 0 (17.2 GiB > 14 GiB, instances/README.md).
  EXPECT_FALSE(c.after_feasible);
  ASSERT_FALSE(c.over_limit.empty());
  EXPECT_EQ(c.over_limit.front(), 0);
  EXPECT_GT(c.after_peak[0], inst.devices[0].memory_limit);
  const std::string line = describe(inst, c);
  EXPECT_NE(line.find("no longer fits in memory"), std::string::npos) << line;
  EXPECT_NE(line.find("over the limit on devices 0"), std::string::npos) << line;
}

TEST(TorchCsv, InvalidScheduleIsRefusedWithTheRule) {
  const Instance inst = test_support::uniform_instance(2, 2, 1, 1, 1);
  Schedule s = test_support::lists(inst, {{"F0.0", "F0.1", "B0.0", "W0.0", "B0.1", "W0.1"},
                                     {"F1.0", "B1.0", "F1.1", "B1.1", "W1.0", "W1.1"}});
  s.devices[1].pop_back();  // W1.1 missing
  try {
    to_torch_csv(inst, s);
    FAIL() << "exported an invalid schedule";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("does not fit the instance"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("W1.1"), std::string::npos) << e.what();
  }
}

TEST(TorchCsv, PadRowsMakesARectangle) {
  const Instance inst = test_support::uniform_instance(2, 1, 1, 1, 1);
  const Schedule s = test_support::lists(inst, {{"F0.0", "B0.0", "W0.0"}, {"F1.0", "B1.0", "W1.0"}});
  TorchCsvOptions o;
  o.pad_rows = true;
  EXPECT_EQ(to_torch_csv(inst, s, o), "0F0,0I0,0W0\n1F0,1I0,1W0\n");
  Instance two = test_support::uniform_instance(3, 1, 1, 1, 1);
  two.devices.resize(2);
  two.stages[2].device = 1;  // device 1 holds stages 1 and 2: its row is longer
  const Schedule t = test_support::lists(two, {{"F0.0", "B0.0", "W0.0"}, {"F1.0", "F2.0", "B2.0", "W2.0", "B1.0", "W1.0"}});
  const std::string csv = to_torch_csv(two, t, o);
  EXPECT_EQ(csv, "0F0,0I0,0W0,,,\n1F0,2F0,2I0,2W0,1I0,1W0\n");
  EXPECT_EQ(from_torch_csv(two, csv).devices, t.devices);  // empty cells are idle steps
}

TEST(TorchCsv, ParserAcceptsWhatPyTorchWritesAndNamesErrors) {
  const Instance inst = test_support::uniform_instance(2, 1, 1, 1, 1);
  const Schedule want = test_support::lists(inst, {{"F0.0", "B0.0", "W0.0"}, {"F1.0", "B1.0", "W1.0"}});
  // Spaces, CRLF, empty cells and the communication actions of the compute_comms form.
  EXPECT_EQ(from_torch_csv(inst, " 0F0 ,,0SEND_F0,0RECV_B0, 0I0,0W0,0REDUCE_GRAD\r\n1RECV_F0,1F0,1I0,1SEND_B0,1W0").devices,
            want.devices);
  // PyTorch's full backward B in a split instance is our B followed by W.
  EXPECT_EQ(from_torch_csv(inst, "0F0,0B0\n1F0,1B0\n").devices, want.devices);

  auto error_of = [&](const Instance& in, const std::string& csv) -> std::string {
    try {
      from_torch_csv(in, csv);
    } catch (const InputError& e) {
      return e.what();
    }
    return "(no error)";
  };
  auto expect_error = [&](const Instance& in, const std::string& csv, const std::string& part) {
    const std::string what = error_of(in, csv);
    EXPECT_NE(what.find(part), std::string::npos) << "\"" << part << "\" not in: " << what;
  };
  expect_error(inst, "0F0,0I0,0W0\n", "1 row, but the instance");
  expect_error(inst, "0F0,0X0,0W0\n1F0,1I0,1W0\n", "row 0 (rank 0), cell 1 \"0X0\": not a compute action");
  expect_error(inst, "0F0,0I0,0W0\n1F0,0I0,1W0\n", "stage 0 is placed on device 0 by the instance, not on rank 1");
  expect_error(inst, "0F0,0I0,0W0\n1F0,1I0,1W3\n", "microbatch 3 does not exist");
  expect_error(inst, "0F0,0I0,0W0\n1F0,1I0,5W0\n", "stage 5 does not exist");
  expect_error(inst, "0F0,0I0,0W0\n1F0,1I0,(1F0;1I0)OVERLAP_F_B\n", "OVERLAP_F_B is not supported");
  Instance fused = test_support::uniform_instance(2, 1, 1, 1, 1);
  fused.split_backward = false;
  expect_error(fused, "0F0,0I0\n1F0,1B0\n", "in an instance with a fused backward");
}

// ---- the CLI ---------------------------------------------------------------------------------

constexpr const char* kCli = optpipe::test_support::kCliPath;
#define REQUIRE_CLI() OPTPIPE_REQUIRE_CLI()

std::string quote(const std::string& s) { return optpipe::test_support::shell_quote(s); }

std::string temp_path(const std::string& name) {
  return optpipe::test_support::temp_dir() + "torch-csv-" + name;
}

std::string slurp(const std::string& path) { return optpipe::test_support::read_text(path); }

using CliRun = optpipe::test_support::ShellRun;

CliRun run_cli(const std::string& args) { return optpipe::test_support::run_shell(quote(kCli) + " " + args); }

TEST(TorchCsvCli, ExportWritesTheCsv) {
  REQUIRE_CLI();
  const Instance inst = load_instance(shipped("v-4x8"));
  const HeuristicResult r = run_heuristic(*find_heuristic("zb-v"), inst);
  ASSERT_TRUE(r.ok()) << r.reason;
  const std::string sch = temp_path("v.json"), csv = temp_path("v.csv"), json = temp_path("v-again.json");
  save_schedule(*r.schedule, sch);
  const CliRun run = run_cli("export --format torch-csv --instance " + quote(shipped("v-4x8")) + " " + quote(sch) +
                             " -o " + quote(csv));
  EXPECT_EQ(run.status, 0) << run.output;
  EXPECT_NE(run.output.find("wrote " + csv), std::string::npos) << run.output;
  EXPECT_EQ(slurp(csv), to_torch_csv(inst, *r.schedule));
  // --format json re-writes the schedule; the format also follows from the extension.
  const CliRun again = run_cli("export " + quote(sch) + " -o " + quote(json));
  EXPECT_EQ(again.status, 0) << again.output;
  EXPECT_EQ(load_schedule(json).devices, r.schedule->devices);
  // Standard output by default.
  const CliRun stdout_run = run_cli("export --format torch-csv --instance " + quote(shipped("v-4x8")) + " " + quote(sch));
  EXPECT_EQ(stdout_run.status, 0) << stdout_run.output;
  EXPECT_EQ(stdout_run.output, to_torch_csv(inst, *r.schedule));
  for (const auto& p : {sch, csv, json}) std::filesystem::remove(p);
}

TEST(TorchCsvCli, BadInputExitsWithTwo) {
  REQUIRE_CLI();
  const Instance inst = load_instance(shipped("tiny-2x3"));
  const HeuristicResult r = run_heuristic(*find_heuristic("1f1b"), inst);
  ASSERT_TRUE(r.ok()) << r.reason;
  const std::string sch = temp_path("tiny.json");
  save_schedule(*r.schedule, sch);
  const CliRun bad_format = run_cli("export --format xml --instance " + quote(shipped("tiny-2x3")) + " " + quote(sch));
  EXPECT_EQ(bad_format.status, 2) << bad_format.output;
  EXPECT_NE(bad_format.output.find("xml"), std::string::npos) << bad_format.output;
  const CliRun no_instance = run_cli("export --format torch-csv " + quote(sch));
  EXPECT_EQ(no_instance.status, 2) << no_instance.output;
  EXPECT_NE(no_instance.output.find("needs --instance"), std::string::npos) << no_instance.output;
  // The wrong instance: tiny-2x3's schedule against a 4-device instance.
  const CliRun wrong = run_cli("export --format torch-csv --instance " + quote(shipped("uniform-4x8")) + " " + quote(sch));
  EXPECT_EQ(wrong.status, 2) << wrong.output;
  EXPECT_NE(wrong.output.find("does not fit the instance"), std::string::npos) << wrong.output;
  std::filesystem::remove(sch);
}

TEST(TorchCsvCli, OffloadNeedsDropOffloadWhichPrintsTheCost) {
  REQUIRE_CLI();
  const std::string ipath = shipped("offload-slow-pcie-4x8");
  const Instance inst = load_instance(ipath);
  const Schedule witness = test_support::offload_slow_witness(inst);
  ASSERT_TRUE(witness.has_offload());
  const std::string sch = temp_path("witness.json"), csv = temp_path("witness.csv");
  save_schedule(witness, sch);
  const CliRun refused = run_cli("export --format torch-csv --instance " + quote(ipath) + " " + quote(sch) + " -o " + quote(csv));
  EXPECT_EQ(refused.status, 2) << refused.output;
  EXPECT_NE(refused.output.find("PyTorch has no offload action; use --drop-offload"), std::string::npos) << refused.output;
  EXPECT_FALSE(std::filesystem::exists(csv));
  const CliRun dropped = run_cli("export --format torch-csv --drop-offload --instance " + quote(ipath) + " " + quote(sch) +
                                 " -o " + quote(csv));
  const OffloadDropCost cost = offload_drop_cost(inst, witness);
  EXPECT_EQ(dropped.status, cost.after_feasible ? 0 : 1) << dropped.output;  // 1: no longer fits (issue 23)
  EXPECT_NE(dropped.output.find(describe(inst, cost)), std::string::npos) << dropped.output;
  EXPECT_NE(dropped.output.find("dropped "), std::string::npos) << dropped.output;
  EXPECT_EQ(from_torch_csv(inst, slurp(csv)).devices, without_offload(witness).devices);
  for (const auto& p : {sch, csv}) std::filesystem::remove(p);
}

// Issue 23: `export` without --format writes the schedule JSON (it was an error), and a
// --drop-offload that no longer fits exits 1 (it printed so, then exited 0), the file written.
TEST(TorchCsvCli, JsonByDefaultAndADropThatNoLongerFitsIsNegative) {
  REQUIRE_CLI();
  const std::string ipath = shipped("offload-slow-pcie-4x8");
  Instance inst = load_instance(ipath);
  const Schedule witness = test_support::offload_slow_witness(inst);
  const std::string sch = temp_path("witness-json.json");
  save_schedule(witness, sch);
  const CliRun plain = run_cli("export " + quote(sch));
  EXPECT_EQ(plain.status, 0) << plain.output;
  EXPECT_NE(plain.output.find("\"format\": \"optpipe-schedule/1\""), std::string::npos) << plain.output;
  // The same witness on a copy of the instance with just enough memory for it with offloads.
  SimOptions so;
  const SimResult with = simulate(inst, witness, so);
  ASSERT_TRUE(with.feasible);
  for (std::size_t d = 0; d < inst.devices.size(); ++d) inst.devices[d].memory_limit = with.peak_memory[d] + 1;
  const OffloadDropCost cost = offload_drop_cost(inst, witness);
  ASSERT_FALSE(cost.after_feasible) << "the drop must not fit for this check";
  const std::string tight = temp_path("tight.json"), out = temp_path("dropped.json");
  save_instance(inst, tight);
  const CliRun dropped = run_cli("export --drop-offload --instance " + quote(tight) + " " + quote(sch) + " -o " + quote(out));
  EXPECT_EQ(dropped.status, 1) << dropped.output;
  EXPECT_NE(dropped.output.find("no longer fits in memory (written to " + out + " anyway)"), std::string::npos)
      << dropped.output;
  EXPECT_TRUE(std::filesystem::exists(out));
}

}  // namespace
}  // namespace optpipe
