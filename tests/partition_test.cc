// Stage partitioning (partition/, issue 22): the cheap bound is a lower bound on every solved
// makespan and the memory floor decides feasibility; a brute force over every contiguous split
// of small models, each solved exactly, gives the same best makespan as the search; the
// references, the model's instances (equal to the generator's), the profile reader's errors and
// the no-fit message.
#include <cmath>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "heuristics/registry.h"
#include "instances/generator/generate.h"
#include "model/error.h"
#include "partition/cheap_bound.h"
#include "partition/layer_profile.h"
#include "partition/partition_model.h"
#include "partition/partition_search.h"
#include "partition/placement_search.h"
#include "partition/reference_splits.h"
#include "partition/split_enumerator.h"
#include "solve/solve_pipeline.h"
#include "tests/test_paths.h"

namespace optpipe::partition {
namespace {

constexpr double kGiB = 1073741824.0;

// Every split of the model (each stage at least its minimum), in lexicographic order.
void all_splits(const PartitionModel& m, int s, int left, std::vector<int>& cur, std::vector<std::vector<int>>& out) {
  if (s == m.stages()) {
    if (left == 0) out.push_back(cur);
    return;
  }
  for (int c = m.min_layers(s); c <= left; ++c) {
    cur[s] = c;
    all_splits(m, s + 1, left - c, cur, out);
  }
}

std::vector<std::vector<int>> all_splits(const PartitionModel& m) {
  std::vector<std::vector<int>> out;
  std::vector<int> cur(m.stages());
  all_splits(m, 0, m.layers(), cur, out);
  return out;
}

LayerCost random_layer(std::mt19937& rng) {
  std::uniform_real_distribution<double> t(0.3, 3.0), bytes(0.1, 1.0), frac(0.0, 1.0), st(0.2, 2.0);
  LayerCost c;
  c.forward = std::round(t(rng) * 100) / 100;
  c.backward = std::round(t(rng) * 100) / 100;
  c.weight = std::round(t(rng) * 50) / 100;
  c.activation = std::round(bytes(rng) * 1024) * 1048576.0;
  c.weight_activation = std::round(frac(rng) * c.activation / 1048576.0) * 1048576.0;
  c.static_bytes = std::round(st(rng) * 1024) * 1048576.0;
  return c;
}

// A random profile of 3 to 10 layers, half of them with an embedding and an output block, on 2
// or 3 stages (one per device, or a V / loop placement of 2 stages on 1 device), with a memory
// limit from generous to one activation of the default split's largest stage.
PartitionModel random_model(std::mt19937& rng, int layers, int stages) {
  LayerProfile p;
  p.name = "random";
  for (int i = 0; i < layers; ++i) p.layers.push_back(random_layer(rng));
  if (rng() % 2) {
    p.first = random_layer(rng);
    p.last = random_layer(rng);
    p.first->forward = 0.05;
  }
  p.comm = (rng() % 3) * 0.1;
  p.workspace = 0.5 * kGiB;
  ProfileCluster c;
  c.placement = Placement::kOnePerDevice;
  c.devices = stages;
  if (stages == 2 && rng() % 3 == 0) {
    c.placement = rng() % 2 ? Placement::kV : Placement::kLoop;
    c.devices = 1;
  }
  c.microbatches = 2 + static_cast<int>(rng() % 3);
  c.gpu = *gen::find_gpu_preset("h100-sxm");
  c.gpu.pcie_bandwidth = 400e9;  // offloads of a few ms, so that they matter
  c.split_backward = rng() % 4 != 0;
  const double acts[] = {1.3, 2.0, 3.0, 100.0};
  c.memory = gen::MemoryLimit{gen::MemoryLimit::Kind::kActivations, acts[rng() % 4]};
  return PartitionModel::from_profile(p, c);
}

PipelineOptions exact(double seconds = 4) {
  PipelineOptions o;
  o.time_limit = seconds;
  o.threads = 1;
  return o;
}

struct Brute {
  double best = std::numeric_limits<double>::infinity();
  int fitting = 0;
};

// Solves every split exactly; checks each cheap bound against its optimum and each floor
// against feasibility on the way.
Brute brute_force(const PartitionModel& m, const std::string& where) {
  Brute b;
  for (const auto& split : all_splits(m)) {
    const Instance inst = m.instance(split);
    const bool fits = tightest(memory_floors(inst)).fits();
    const PipelineResult r = solve_pipeline(inst, exact());
    const std::string what = where + " split " + split_text(split);
    if (!fits) {
      EXPECT_FALSE(r.result.schedule.has_value()) << what << ": over its memory floor, yet a schedule fits";
      continue;
    }
    ++b.fitting;
    EXPECT_TRUE(r.result.schedule.has_value()) << what << ": its floor fits, yet no schedule: " << r.result.reason;
    if (!r.result.schedule) continue;
    EXPECT_EQ(r.result.status, SolveResult::Status::kOptimal) << what << ": the oracle needs proven optima";
    EXPECT_LE(cheap_bound(inst).value, r.result.makespan + 1e-9) << what << ": the cheap bound is not a lower bound";
    b.best = std::min(b.best, r.result.makespan);
  }
  return b;
}

TEST(PartitionBruteForce, SameBestMakespanAsEverySplitSolvedExactly) {
  std::mt19937 rng(2211);
  int cases = 0, tight = 0;
  for (int k = 0; k < 14; ++k) {
    const int layers = 3 + static_cast<int>(rng() % 8);  // 3..10
    const int stages = 2 + static_cast<int>(rng() % 2);  // 2..3
    const PartitionModel m = random_model(rng, layers, stages);
    const std::string where = "case " + std::to_string(k) + " (" + m.description() + ")";
    const Brute b = brute_force(m, where);
    if (b.fitting == 0) {
      EXPECT_THROW(partition_search(m, PartitionOptions{}), NoSplitFits) << where;
      continue;
    }
    PartitionOptions o;
    o.time_limit = 8;
    o.threads = 1;
    const PartitionResult r = partition_search(m, o);
    ASSERT_GE(r.best, 0) << where;
    EXPECT_EQ(r.mode, "exhaustive") << where;
    EXPECT_TRUE(r.proven) << where;
    EXPECT_NEAR(r.trials[r.best].makespan, b.best, 1e-9) << where << ": best split " << split_text(r.trials[r.best].split);
    ++cases;
    tight += b.fitting < static_cast<int>(all_splits(m).size()) ? 1 : 0;
  }
  EXPECT_GE(cases, 10);
  EXPECT_GE(tight, 2) << "too few cases where the memory floor rules splits out";
}

// --placement auto against a brute force: for random profiles on 2 GPUs (4 to 8 layers, no offload), every
// split of every placement (one stage per GPU, V, loop) solved exactly under the first
// placement's memory limit; the search's best placement has the least makespan of them all, and
// is never worse than the first placement's default split.
TEST(PlacementSearch, SameBestMakespanAsEverySplitOfEveryPlacementSolvedExactly) {
  std::mt19937 rng(907);
  int cases = 0, won_by_two_per_gpu = 0;
  for (int k = 0; k < 8; ++k) {
    LayerProfile p;
    p.name = "random";
    const int layers = 4 + static_cast<int>(rng() % 5);  // 4..8
    for (int i = 0; i < layers; ++i) p.layers.push_back(random_layer(rng));
    p.comm = (rng() % 3) * 0.1;
    p.workspace = 0.5 * kGiB;
    ProfileCluster c;
    c.devices = 2;
    c.microbatches = 2 + static_cast<int>(rng() % 2);
    c.gpu = *gen::find_gpu_preset("h100-sxm");
    c.offload_levels = {0.0};  // (4 stages with offload are not proven in seconds; the brute force needs optima)
    c.split_backward = rng() % 4 != 0;
    const double acts[] = {1.3, 2.0, 3.0, 100.0};
    c.memory = gen::MemoryLimit{gen::MemoryLimit::Kind::kActivations, acts[rng() % 4]};
    std::vector<double> limits;
    const PlacementModelFn make = [&](Placement pl, std::optional<double> limit) {
      ProfileCluster cc = c;
      cc.placement = pl;
      if (limit) cc.memory = gen::MemoryLimit{gen::MemoryLimit::Kind::kBytes, *limit};
      PartitionModel m = PartitionModel::from_profile(p, cc);
      limits.push_back(m.memory_limit());
      return m;
    };
    const std::string where = "case " + std::to_string(k) + " (" + std::to_string(layers) + " layers)";
    const std::vector<Placement> placements{Placement::kOnePerDevice, Placement::kV, Placement::kLoop};
    double brute = std::numeric_limits<double>::infinity();
    std::optional<double> limit;
    for (const Placement pl : placements) {
      const PartitionModel m = make(pl, limit);
      if (!limit) limit = m.memory_limit();
      brute = std::min(brute, brute_force(m, where + " " + gen::placement_word(pl)).best);
    }
    limits.clear();
    PartitionOptions o;
    o.time_limit = 24;
    o.threads = 1;
    if (!std::isfinite(brute)) {
      EXPECT_THROW(partition_placements(placements, make, o), NoSplitFits) << where;
      continue;
    }
    const PlacementsResult r = partition_placements(placements, make, o);
    ASSERT_EQ(r.runs.size(), 3u) << where;
    for (const double l : limits) EXPECT_EQ(l, limits.front()) << where << ": one memory limit for every placement";
    ASSERT_NE(r.best_trial(), nullptr) << where;
    EXPECT_NEAR(r.best_trial()->makespan, brute, 1e-9) << where << ": best placement "
                                                       << gen::placement_word(r.runs[r.best].placement);
    for (const PlacementRun& run : r.runs) {
      if (!run.result) continue;
      EXPECT_EQ(run.result->mode, "exhaustive") << where;
      EXPECT_TRUE(run.result->proven) << where;
    }
    if (const Trial* ref = r.reference(); ref && ref->solved) {
      EXPECT_LE(r.best_trial()->makespan, ref->makespan + 1e-9) << where;
    }
    ++cases;
    won_by_two_per_gpu += r.best > 0 ? 1 : 0;
  }
  EXPECT_GE(cases, 6);
  EXPECT_GE(won_by_two_per_gpu, 1) << "no case where V or loop beats one stage per GPU: the test compares nothing";
}

// A placement that cannot hold the model is reported and skipped; the others are searched.
TEST(PlacementSearch, APlacementThatCannotHoldTheLayersIsSkippedWithTheReason) {
  std::mt19937 rng(5);
  LayerProfile p;
  p.name = "three";
  for (int i = 0; i < 3; ++i) p.layers.push_back(random_layer(rng));
  p.workspace = 0.5 * kGiB;
  ProfileCluster c;
  c.devices = 2;
  c.microbatches = 2;
  c.gpu = *gen::find_gpu_preset("h100-sxm");
  const PlacementModelFn make = [&](Placement pl, std::optional<double> limit) {
    ProfileCluster cc = c;
    cc.placement = pl;
    if (limit) cc.memory = gen::MemoryLimit{gen::MemoryLimit::Kind::kBytes, *limit};
    return PartitionModel::from_profile(p, cc);
  };
  PartitionOptions o;
  o.time_limit = 10;
  o.threads = 1;
  const PlacementsResult r = partition_placements({Placement::kOnePerDevice, Placement::kV}, make, o);
  ASSERT_EQ(r.runs.size(), 2u);
  EXPECT_EQ(r.best, 0);
  EXPECT_FALSE(r.runs[1].result.has_value());
  EXPECT_NE(r.runs[1].note.find("cannot fill 4 stages"), std::string::npos) << r.runs[1].note;
  EXPECT_EQ(r.runs[1].note.find("use fewer devices"), std::string::npos) << r.runs[1].note;
}

// The bound by hand: 2 stages, F = B = W = 1, no comm, m = 4: device 0 gives 3m = 12, device 1
// gives head 1 + m(F + B) 8 + max(m W 4, tail B0 + W0 = 2) = 13; the solver's optimum is 13.
TEST(CheapBound, ByHandOnTwoStages) {
  Instance inst;
  inst.microbatches = 4;
  inst.comm = {0.0};
  inst.devices.resize(2, Device{1e18, 0, 0});
  inst.devices[1].pcie_group = 1;
  for (int s = 0; s < 2; ++s) inst.stages.push_back(Stage{s, 1, 1, 1, 1, 0, std::nullopt, std::nullopt});
  const CheapBound b = cheap_bound(inst);
  EXPECT_DOUBLE_EQ(b.value, 13.0);
  EXPECT_EQ(b.device, 1);
  EXPECT_DOUBLE_EQ(b.work, 12.0);
  const PipelineResult r = solve_pipeline(inst, exact());
  EXPECT_EQ(r.result.status, SolveResult::Status::kOptimal);
  EXPECT_DOUBLE_EQ(r.result.makespan, 13.0);
}

// On generated models too large for the oracle, no heuristic schedule of any split beats the
// bound (every split of 8 layers of GPT-3 1.5B on 4 stages, and V and loop placements).
TEST(CheapBound, NeverAboveAHeuristicMakespanOnGeneratedModels) {
  for (Placement p : {Placement::kOnePerDevice, Placement::kV, Placement::kLoop}) {
    gen::GenerateOptions o;
    o.model = gen::find_model_preset("gpt3-1.5b")->shape;
    o.model.layers = p == Placement::kOnePerDevice ? 8 : 10;
    o.gpu = *gen::find_gpu_preset("h100-sxm");
    o.devices = p == Placement::kOnePerDevice ? 4 : 2;
    o.placement = p;
    o.microbatches = 6;
    o.memory = gen::parse_memory_limit("4act");
    const PartitionModel m = PartitionModel::from_generator(o);
    int checked = 0;
    for (const auto& split : all_splits(m)) {
      const Instance inst = m.instance(split);
      const double lb = cheap_bound(inst).value;
      for (const HeuristicResult& h : run_all_heuristics(inst, false).results) {
        if (!h.ok()) continue;
        EXPECT_LE(lb, h.sim.makespan + 1e-9) << to_string(p) << " " << split_text(split) << " " << h.name;
        ++checked;
      }
    }
    EXPECT_GT(checked, 50) << to_string(p);
  }
}

gen::GenerateOptions preset(const std::string& name, int devices, int microbatches, const std::string& memory) {
  gen::GenerateOptions o;
  o.model = gen::find_model_preset(name)->shape;
  o.gpu = *gen::find_gpu_preset("h100-sxm");
  o.devices = devices;
  o.microbatches = microbatches;
  o.memory = gen::parse_memory_limit(memory);
  return o;
}

TEST(ReferenceSplits, UniformDefaultAndMegatron) {
  EXPECT_EQ(split_text(uniform_split(46, 16)), "2,3,3,3,3,3,3,3,3,3,3,3,3,3,3,2");
  EXPECT_EQ(split_text(uniform_split(45, 16)), "2,3,3,3,3,3,3,3,3,3,3,3,3,3,2,2");
  EXPECT_EQ(split_text(uniform_split(10, 4)), "2,3,3,2");
  EXPECT_EQ(split_text(uniform_split(32, 8)), "4,4,4,4,4,4,4,4");
  EXPECT_EQ(split_text(*generator_default_split(46, 16)), "2,3,3,3,3,3,3,3,3,3,3,3,3,3,3,2");
  EXPECT_FALSE(generator_default_split(40, 16).has_value());  // the generator wants --split there
  EXPECT_EQ(split_text(*megatron_split(46, 16)), "2,3,3,3,3,3,3,3,3,3,3,3,3,3,3,2");
  EXPECT_EQ(split_text(*megatron_split(32, 16)), "1,3,3,2,2,2,2,2,2,2,2,2,2,2,2,1");
  EXPECT_EQ(split_text(*megatron_split(32, 8)), "3,5,5,4,4,4,4,3");
  EXPECT_FALSE(megatron_split(5, 1).has_value());
}

// A split's instance from a preset is the generator's for that split, byte for byte, with the
// memory limit resolved once ("3act" on the default split) and held for every split.
TEST(PartitionModel, InstancesAreTheGeneratorsWithTheLimitHeldFixed) {
  gen::GenerateOptions o = preset("gpt3-1.5b", 8, 24, "3act");
  const PartitionModel m = PartitionModel::from_generator(o);
  EXPECT_EQ(m.layers(), 22);
  EXPECT_EQ(split_text(*m.default_split()), "2,3,3,3,3,3,3,2");
  o.split = *m.default_split();
  const Instance by_generator = gen::generate(o).instance;
  EXPECT_EQ(m.memory_limit(), by_generator.devices[0].memory_limit);
  EXPECT_EQ(gen::generated_instance_json(m.instance(o.split)), gen::generated_instance_json(by_generator));
  const std::vector<int> other{1, 3, 3, 3, 3, 3, 3, 3};
  EXPECT_EQ(m.instance(other).devices[0].memory_limit, m.memory_limit());
  o.split = other;
  o.memory = gen::MemoryLimit{gen::MemoryLimit::Kind::kBytes, m.memory_limit()};
  EXPECT_EQ(gen::generated_instance_json(m.instance(other)), gen::generated_instance_json(gen::generate(o).instance));
  // The profile's stage sums are the generator's stage costs (before it rounds them).
  const LayerCost c = m.stage_costs(7, 20, 2);
  const gen::StageCost g = gen::stage_cost(o.model, o.cost, 2, false, true);
  EXPECT_NEAR(c.activation, g.total.activation, 1e-3);
  EXPECT_NEAR(c.static_bytes + c.transient + o.cost.workspace_bytes, g.static_bytes, 1.0);
  EXPECT_NEAR(c.forward, gen::compute_ms(g.total.f_flops, o.gpu, o.model.dtype), 1e-9);
  EXPECT_NE(m.memory_limit_note().find("3act on the default split 2,3,3,3,3,3,3,2"), std::string::npos);
}

TEST(PartitionModel, BadSplitsAndTooFewLayersNameTheProblem) {
  const PartitionModel m = PartitionModel::from_generator(preset("gpt3-1.5b", 4, 8, "gpu"));
  auto message = [&](const std::vector<int>& split) {
    try {
      m.instance(split);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message({11, 11}).find("split: 2 entries for 4 stages"), std::string::npos);
  EXPECT_NE(message({6, 6, 6, 6}).find("add up to 24, but the model has 22"), std::string::npos);
  EXPECT_NE(message({11, 0, 11, 0}).find("stage 1 gets 0 layers; it needs at least 1"), std::string::npos);
  EXPECT_EQ(message({0, 11, 11, 0}), "no error");  // the first and last stages may hold just the embedding / head
  gen::GenerateOptions o = preset("gpt3-1.5b", 32, 8, "gpu");
  try {
    PartitionModel::from_generator(o);
    ADD_FAILURE() << "22 layers on 32 stages";
  } catch (const TooFewLayers& e) {
    EXPECT_NE(std::string(e.what()).find("model.layers: 22 layers cannot fill 32 stages"), std::string::npos) << e.what();
    // The advice is what() less fact(), and only there.
    EXPECT_EQ(std::string(e.what()), e.fact() + "; use fewer devices");
    EXPECT_EQ(e.fact().find("fewer devices"), std::string::npos) << e.fact();
  }
}

// Without memory limits or cutoff the enumeration visits every composition: with an embedding
// and a head the end stages may be empty (10 layers on 3 stages: 55 splits), without them not
// (C(9, 2) = 36).
TEST(SplitEnumerator, VisitsEveryCompositionWhenNothingCuts) {
  std::mt19937 rng(7);
  for (const bool blocks : {true, false}) {
    LayerProfile p;
    for (int i = 0; i < 10; ++i) p.layers.push_back(random_layer(rng));
    if (blocks) p.first = random_layer(rng), p.last = random_layer(rng);
    ProfileCluster c;
    c.devices = 3;
    c.microbatches = 4;
    c.gpu = *gen::find_gpu_preset("h100-sxm");
    c.memory = gen::MemoryLimit{gen::MemoryLimit::Kind::kBytes, 1e15};
    const PartitionModel m = PartitionModel::from_profile(p, c);
    EnumerateLimits limits;
    int visited = 0;
    const EnumerateStats st = enumerate_splits(m, limits, [&](const std::vector<int>& split, double bound) {
      ++visited;
      EXPECT_NEAR(bound, cheap_bound(m.instance(split)).value, 1e-6) << split_text(split);
      return true;
    });
    EXPECT_TRUE(st.complete);
    EXPECT_EQ(visited, blocks ? 55 : 36);
    EXPECT_EQ(static_cast<std::size_t>(visited), all_splits(m).size());
  }
}

TEST(LayerProfile, ReadsBackWhatItWritesAndNamesBadFields) {
  const PartitionModel m = PartitionModel::from_generator(preset("llama2-7b", 4, 8, "gpu"));
  const LayerProfile back = parse_layer_profile(layer_profile_json(m.profile()));
  ASSERT_EQ(back.num_layers(), 32);
  EXPECT_DOUBLE_EQ(back.layers[5].backward, m.profile().layers[5].backward);
  EXPECT_DOUBLE_EQ(back.last->transient, m.profile().last->transient);
  auto error = [](const std::string& text) {
    try {
      parse_layer_profile(text);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  const std::string head = R"({"format": "optpipe-layer-profile/1", "layers": [)";
  EXPECT_NE(error(head + R"({"forward": 1, "backward": 1, "activation": "1GiB"}, {"forward": -1, "backward": 1, "activation": 1}]})")
                .find("layers[1].forward"), std::string::npos);
  EXPECT_NE(error(head + R"({"forward": 1, "backward": 1}]})").find("layers[0]"), std::string::npos);
  EXPECT_NE(error(head + R"({"forward": 1, "backward": 1, "activation": 1, "weight_activation": 2}]})")
                .find("layers[0].weight_activation: must be <= activation"), std::string::npos);
  EXPECT_NE(error(head + R"({"forward": 1, "backward": 1, "activation": 1, "flops": 2}]})").find("flops"), std::string::npos);
  EXPECT_NE(error(head + "]}").find("layers: must list at least one layer"), std::string::npos);
  EXPECT_NE(error(R"({"format": "optpipe-instance/1", "layers": []})").find("format"), std::string::npos);
}

// No split fits: the message names the stage and by how much. GPT-3 6.2B's output layer alone
// (its static memory and logits) cannot fit 5 GiB; with 12 GiB each stage fits a layer or two,
// but not all 30 in 4 stages.
TEST(PartitionSearch, NoSplitFitsNamesTheStageAndTheShortfall) {
  const PartitionModel tiny = PartitionModel::from_generator(preset("gpt3-6.2b", 4, 8, "5GiB"));
  try {
    partition_search(tiny, PartitionOptions{});
    ADD_FAILURE() << "expected NoSplitFits";
  } catch (const NoSplitFits& e) {
    const std::string w = e.what();
    EXPECT_NE(w.find("no split of the 30 layers into 4 stages fits the memory limit 5.00 GiB"), std::string::npos) << w;
    EXPECT_NE(w.find("stage 3 (device 3, with the output layer) needs at least"), std::string::npos) << w;
    EXPECT_NE(w.find("over the limit"), std::string::npos) << w;
  }
  const PartitionModel small = PartitionModel::from_generator(preset("gpt3-6.2b", 4, 8, "12GiB"));
  try {
    partition_search(small, PartitionOptions{});
    ADD_FAILURE() << "expected NoSplitFits";
  } catch (const NoSplitFits& e) {
    const std::string w = e.what();
    EXPECT_NE(w.find("the stages hold at most 6 of them (at most 1,2,2,1 per stage); one more layer on stage 0 "
                     "(device 0, with the embedding) needs at least 12.1 GiB"), std::string::npos) << w;
    EXPECT_NE(w.find("83.5 MiB over the limit"), std::string::npos) << w;
  }
}

// Too many splits to solve each: the local search keeps within its time limit, solves the
// references, and is never worse than the default split as solved in the same run.
TEST(PartitionSearch, LocalSearchNeverWorseThanTheDefaultSplit) {
  const PartitionModel m = PartitionModel::from_generator(preset("gpt3-1.5b", 8, 16, "2act"));
  PartitionOptions o;
  o.time_limit = 4;
  o.threads = 1;
  const PartitionResult r = partition_search(m, o);
  EXPECT_EQ(r.mode, "local");
  EXPECT_LT(r.seconds, o.time_limit + 1.5);
  const Trial* def = r.find("default");
  ASSERT_NE(def, nullptr);
  ASSERT_TRUE(def->solved);
  ASSERT_GE(r.best, 0);
  EXPECT_LE(r.trials[r.best].makespan, def->makespan);
  ASSERT_TRUE(r.instance && r.schedule);
  EXPECT_EQ(r.schedule->instance, r.instance->name);
  for (const Trial& t : r.trials) {
    if (t.solved) EXPECT_LE(t.bound.value, t.makespan + 1e-9) << split_text(t.split);
  }
}

}  // namespace
}  // namespace optpipe::partition

namespace optpipe::partition {
namespace {

// The local search (the default: more than 64 splits fit) finds the best split of the exhaustive
// search on the shipped example profile, where a one-layer move across two boundaries is needed
// at 32 GiB (3,3,3,3 to 3,4,3,2: the climb once skipped splits the enumeration had built but
// not screened).
TEST(PartitionSearch, LocalSearchFindsTheExhaustiveBestOnTheExampleProfile) {
  const LayerProfile p = load_layer_profile(std::string(OPTPIPE_SOURCE_DIR) + "/docs/examples/layer-profile.json");
  for (const char* limit : {"32GiB", "40GiB"}) {
    ProfileCluster c;
    c.devices = 4;
    c.microbatches = 8;
    c.gpu = *gen::find_gpu_preset("h100-sxm");
    c.memory = gen::parse_memory_limit(limit);
    const PartitionModel m = PartitionModel::from_profile(p, c);
    PartitionOptions all;
    all.time_limit = 30;
    all.threads = 1;
    all.exhaustive_max = 1000;
    all.exhaustive_ops = 1'000'000;
    const PartitionResult exhaustive = partition_search(m, all);
    ASSERT_EQ(exhaustive.mode, "exhaustive") << limit;
    ASSERT_TRUE(exhaustive.proven) << limit;
    PartitionOptions local;  // the defaults: more than 64 splits fit, so local
    local.time_limit = 10;
    local.threads = 1;
    const PartitionResult r = partition_search(m, local);
    ASSERT_EQ(r.mode, "local") << limit;
    // At 40 GiB the best split reaches the least bound of all splits: proven in local mode too.
    if (std::string(limit) == "40GiB") EXPECT_TRUE(r.proven);
    EXPECT_NEAR(r.trials[r.best].makespan, exhaustive.trials[exhaustive.best].makespan, 1e-9)
        << limit << ": local " << split_text(r.trials[r.best].split) << ", exhaustive "
        << split_text(exhaustive.trials[exhaustive.best].split);
  }
}

}  // namespace
}  // namespace optpipe::partition
