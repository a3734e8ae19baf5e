// How busy the PCIe channels were (model/channel_load.h): against an independent reading of the
// same simulations, on random instances with PCIe groups and random offloads. Per channel the
// busy time is the length of the union of its transfers' intervals (the spec runs one transfer at
// a time per channel, so the sum the component takes must equal it), the transfers are the
// offloaded forwards (D2H) and their reloads (H2D) of the group's devices, and the busiest one is
// the largest. The sentence the reports print (viz/bottleneck.h) names it.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "model/channel_load.h"
#include "model/simulator.h"
#include "tests/test_util.h"
#include "viz/bottleneck.h"

namespace optpipe {
namespace {

double union_length(std::vector<std::pair<double, double>> v) {
  std::sort(v.begin(), v.end());
  double total = 0, lo = 0, hi = -1;
  for (const auto& [a, b] : v) {
    if (a > hi) {
      if (hi > lo) total += hi - lo;
      lo = a, hi = b;
    } else {
      hi = std::max(hi, b);
    }
  }
  if (hi > lo) total += hi - lo;
  return total;
}

TEST(ChannelLoad, BusyIsTheUnionOfEachChannelsTransfers) {
  std::mt19937 rng(808);
  int with_transfers = 0, shared = 0;
  for (int i = 0; i < 400; ++i) {
    test_support::RandomInstanceOptions o;
    o.min_devices = 2;
    o.max_devices = 5;
    o.offloadable_probability = 0.9;
    o.tight_memory = i % 2 == 0;
    Instance inst = test_support::random_instance(rng, o);
    for (int d = 0; d < inst.num_devices(); ++d) inst.devices[d].pcie_group = i % 3 == 0 ? 0 : d / 2;
    const Schedule sch = test_support::random_valid_schedule(inst, rng, 0.6);
    const SimResult sim = simulate(inst, sch);
    if (!sim.feasible) continue;
    const std::vector<ChannelLoad> loads = channel_loads(sim);
    ASSERT_EQ(static_cast<int>(loads.size()), 2 * sim.num_groups);
    // The independent reading: intervals and counts per (group, direction) from the offloaded
    // forwards in the lists and the transfers' times.
    int offloaded = 0;
    for (const auto& list : sch.devices) {
      for (const Action& a : list) offloaded += a.type == OpType::F && a.r > 0;
    }
    int counted = 0;
    const ChannelLoad* busiest = busiest_channel(loads);
    for (const ChannelLoad& c : loads) {
      std::vector<std::pair<double, double>> spans;
      for (const Transfer& t : sim.transfers) {
        if (t.group == c.group && (t.kind == Transfer::Kind::kReload) == c.reload && t.started) spans.push_back({t.start, t.end});
      }
      EXPECT_EQ(c.transfers, static_cast<int>(spans.size())) << "case " << i;
      EXPECT_NEAR(c.busy, union_length(spans), 1e-6) << "case " << i << " group " << c.group;
      EXPECT_LE(c.busy, sim.makespan + 1e-6) << "case " << i;
      if (!c.reload) counted += c.transfers;
      if (busiest) EXPECT_LE(c.busy, busiest->busy + 1e-9);
      shared += c.transfers > 1 && !spans.empty();
    }
    EXPECT_EQ(counted, offloaded) << "case " << i;  // every offloaded forward went out once
    EXPECT_EQ(busiest != nullptr, offloaded > 0) << "case " << i;
    with_transfers += offloaded > 0;
  }
  EXPECT_GT(with_transfers, 100);
  EXPECT_GT(shared, 50);
}

// The report's sentence: on a schedule that offloads, the busiest channel with its devices, its
// transfers and its share; none on one that does not.
TEST(ChannelLoad, TheBottleneckSentenceNamesTheBusiestChannel) {
  Instance inst = test_support::uniform_instance(2, 3, 1, 1, 1, 0.0, test_support::GiB, 0.9 * test_support::GiB);
  for (Stage& st : inst.stages) st.offload = 2.0, st.reload = 3.0;
  inst.offload_levels = {0.0, 1.0};
  for (auto& d : inst.devices) d.pcie_group = 7;  // an id in the file; the reports count groups from 0
  const Schedule with = test_support::lists(inst, {{"F0.0@1", "F0.1", "F0.2", "R0.0", "B0.0", "W0.0", "B0.1", "W0.1", "B0.2", "W0.2"},
                                                   {"F1.0", "B1.0", "F1.1", "B1.1", "F1.2", "B1.2", "W1.0", "W1.1", "W1.2"}});
  const SimResult sim = simulate(inst, with);
  ASSERT_TRUE(sim.feasible) << sim.reason;
  const std::string text = explain_bottleneck(inst, sim);
  EXPECT_NE(text.find("busiest PCIe channel: group 0's H2D (devices 0, 1), 1 reload, busy 3.000 ms"), std::string::npos) << text;
  const Schedule without = test_support::lists(inst, {{"F0.0", "F0.1", "F0.2", "B0.0", "W0.0", "B0.1", "W0.1", "B0.2", "W0.2"},
                                                      {"F1.0", "B1.0", "F1.1", "B1.1", "F1.2", "B1.2", "W1.0", "W1.1", "W1.2"}});
  EXPECT_EQ(explain_bottleneck(inst, simulate(inst, without)).find("PCIe"), std::string::npos);
}

}  // namespace
}  // namespace optpipe
