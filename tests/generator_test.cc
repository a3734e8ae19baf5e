// The cost-model instance generator (instances/generator/, `optpipe generate`, issue 6): the
// FLOP and byte formulas against hand computations, presets that give valid instances, clear
// errors for bad shapes, determinism, the shipped instances/generated/ files against what the
// generator writes now, and the command line.

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "model/error.h"
#include "model/instance_io.h"
#include "model/validator.h"
#include "heuristics/registry.h"
#include "instances/generator/cost_model.h"
#include "instances/generator/generate.h"
#include "instances/generator/generate_request.h"
#include "instances/generator/gpu_preset.h"
#include "instances/generator/model_shape.h"
#include "instances/generator/summary.h"
#include "tests/small_gpt_shape.h"
#include "tests/test_paths.h"
#include "tests/test_util.h"

namespace optpipe {
namespace {

namespace fs = std::filesystem;
using namespace optpipe::gen;

constexpr double kGiB = 1073741824.0;

// s = 8, b = 2, h = 16, a = 4, f = 64, V = 100, GPT, bf16: s·b·h = 256 (tests/small_gpt_shape.h).
using test_support::small_gpt;

GenerateOptions options_for(const ModelShape& m, int devices, int microbatches) {
  GenerateOptions o;
  o.model = m;
  o.gpu = *find_gpu_preset("h100-sxm");
  o.devices = devices;
  o.microbatches = microbatches;
  return o;
}

// Runs `f` and returns the InputError's message ("" when nothing was thrown).
template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(GeneratorCost, GptLayerMatchesZeroBubbleTable1ByHand) {
  // F = sbh(24h + 4s) = 256 (384 + 32)  = 106496
  // B = sbh(24h + 8s) = 256 (384 + 64)  = 114688
  // W = sbh·24h       = 256 · 384       =  98304
  // M_B without FlashAttention = sb(34h + 5as) = 16 (544 + 160) = 11264
  // M_B with FlashAttention    = 34sbh = 8704;   M_W = 32sbh = 8192
  // parameters 12h² + 13h = 3072 + 208 = 3280
  const ModelShape m = small_gpt();
  CostOptions no_flash;
  no_flash.flash_attention = false;
  const BlockCost c = transformer_layer(m, no_flash);
  EXPECT_DOUBLE_EQ(c.f_flops, 106496);
  EXPECT_DOUBLE_EQ(c.b_flops, 114688);
  EXPECT_DOUBLE_EQ(c.w_flops, 98304);
  EXPECT_DOUBLE_EQ(c.activation, 11264);
  EXPECT_DOUBLE_EQ(c.weight_activation, 8192);
  EXPECT_DOUBLE_EQ(c.params, 3280);

  const BlockCost flash = transformer_layer(m, CostOptions{});
  EXPECT_DOUBLE_EQ(flash.f_flops, 106496);
  EXPECT_DOUBLE_EQ(flash.b_flops, 114688);
  EXPECT_DOUBLE_EQ(flash.activation, 8704);
  EXPECT_DOUBLE_EQ(flash.weight_activation, 8192);
}

TEST(GeneratorCost, RecomputationByHand) {
  const ModelShape m = small_gpt();
  // Selective without FlashAttention: the 5as²b score terms go (M_B = 34sbh = 8704) and B
  // recomputes the attention core, 4s²bh = 4·8·256 = 8192 FLOPs: 114688 + 8192 = 122880.
  CostOptions sel;
  sel.flash_attention = false;
  sel.recompute = Recompute::kSelective;
  const BlockCost s = transformer_layer(m, sel);
  EXPECT_DOUBLE_EQ(s.activation, 8704);
  EXPECT_DOUBLE_EQ(s.b_flops, 122880);
  EXPECT_DOUBLE_EQ(s.f_flops, 106496);
  // With FlashAttention selective recomputation changes nothing.
  sel.flash_attention = true;
  EXPECT_DOUBLE_EQ(transformer_layer(m, sel).activation, 8704);
  EXPECT_DOUBLE_EQ(transformer_layer(m, sel).b_flops, 114688);
  // Full: keep the layer input 2sbh = 512 for B and W; B = 114688 + F 106496 = 221184; the
  // recomputed 34sbh = 8704 are transient.
  CostOptions full;
  full.recompute = Recompute::kFull;
  const BlockCost f = transformer_layer(m, full);
  EXPECT_DOUBLE_EQ(f.activation, 512);
  EXPECT_DOUBLE_EQ(f.weight_activation, 512);
  EXPECT_DOUBLE_EQ(f.b_flops, 221184);
  EXPECT_DOUBLE_EQ(f.w_flops, 98304);
  EXPECT_DOUBLE_EQ(f.transient, 8704);
}

TEST(GeneratorCost, SwiGluLayerByHand) {
  // s = 8, b = 2, h = 16, a = 4, f = 40, no dropout. Linear part 2sbh(4h + 3f) = 512 (64 + 120)
  // = 94208; F = 94208 + 4s²bh (8192) = 102400; B = 94208 + 16384 = 110592; W = 94208.
  // M_B (FlashAttention): attention 5 values x 2 bytes x sbh = 2560, norms 1024, MLP input 512
  // + gate, up, down inputs 3 x 2 x sbf (= 3 x 2 x 640) = 3840: 7936; M_W = 7936 - 2sbh = 7424.
  // Parameters 4h² + 3hf + 2h = 1024 + 1920 + 32 = 2976.
  ModelShape m = small_gpt();
  m.ffn = 40;
  m.mlp = Mlp::kSwiGlu;
  m.dropout = false;
  m.learned_positions = false;
  const BlockCost c = transformer_layer(m, CostOptions{});
  EXPECT_DOUBLE_EQ(c.f_flops, 102400);
  EXPECT_DOUBLE_EQ(c.b_flops, 110592);
  EXPECT_DOUBLE_EQ(c.w_flops, 94208);
  EXPECT_DOUBLE_EQ(c.activation, 7936);
  EXPECT_DOUBLE_EQ(c.weight_activation, 7424);
  EXPECT_DOUBLE_EQ(c.params, 2976);
}

TEST(GeneratorCost, EmbeddingOutputStaticAndTimesByHand) {
  const ModelShape m = small_gpt();
  const CostOptions o;
  // Embedding: an sbh dropout mask (256 bytes), Vh + sh = 1600 + 128 parameters, no FLOPs.
  const BlockCost e = embedding_block(m, o);
  EXPECT_DOUBLE_EQ(e.activation, 256);
  EXPECT_DOUBLE_EQ(e.params, 1728);
  EXPECT_DOUBLE_EQ(e.f_flops, 0);
  // Output: 2sbhV = 2·16·16·100 = 51200 FLOPs each for F, B, W; M_B = two sbh inputs (1024) +
  // fp32 logits 4sbV (6400) = 7424; M_W = 1024; transient logit gradient 6400.
  const BlockCost out = output_block(m, o);
  EXPECT_DOUBLE_EQ(out.f_flops, 51200);
  EXPECT_DOUBLE_EQ(out.b_flops, 51200);
  EXPECT_DOUBLE_EQ(out.w_flops, 51200);
  EXPECT_DOUBLE_EQ(out.activation, 7424);
  EXPECT_DOUBLE_EQ(out.weight_activation, 1024);
  EXPECT_DOUBLE_EQ(out.transient, 6400);
  EXPECT_DOUBLE_EQ(out.params, 32 + 1600);
  // A last stage of 2 layers: 2 x 3280 + 1632 = 8192 parameters x 18 bytes + 1 GiB + 6400.
  const StageCost st = stage_cost(m, o, 2, false, true);
  EXPECT_DOUBLE_EQ(st.total.params, 8192);
  EXPECT_DOUBLE_EQ(st.static_bytes, 8192 * 18 + kGiB + 6400);
  EXPECT_DOUBLE_EQ(st.total.f_flops, 2 * 106496 + 51200);
  EXPECT_DOUBLE_EQ(st.total.activation, 2 * 8704 + 7424);
  // p2p: s·b·h bf16 values = 512 bytes.
  EXPECT_DOUBLE_EQ(p2p_bytes(m), 512);
  // Times: the H100's 989.4 TFLOP/s x 0.5 runs 494.7e12 FLOPs in 1000 ms; 50 GB over PCIe
  // at 50 GB/s takes 1000 ms + 0.01 ms latency.
  const GpuPreset& h100 = *find_gpu_preset("h100-sxm");
  EXPECT_NEAR(compute_ms(494.7e12, h100, DType::kBf16), 1000.0, 1e-9);
  EXPECT_NEAR(transfer_ms(50e9, h100.pcie_bandwidth, h100.pcie_latency_ms), 1000.01, 1e-9);
}

TEST(GeneratorPresets, ParameterCountsMatchTheNominalSizes) {
  const std::vector<std::pair<std::string, double>> expected{
      {"gpt3-1.5b", 1.5e9}, {"gpt3-2.7b", 2.7e9}, {"gpt3-6.2b", 6.2e9}, {"gpt3-6.7b", 6.7e9},
      {"gpt3-14.6b", 14.6e9}, {"gpt3-28.3b", 28.3e9}, {"llama2-7b", 6.74e9}, {"llama2-13b", 13.0e9}};
  ASSERT_EQ(model_presets().size(), expected.size());
  for (const auto& [name, params] : expected) {
    const ModelPreset* p = find_model_preset(name);
    ASSERT_NE(p, nullptr) << name;
    EXPECT_NEAR(total_parameters(p->shape) / params, 1.0, 0.03) << name;
    EXPECT_NO_THROW(validate_shape(p->shape));
  }
}

TEST(GeneratorSplit, EvenZeroBubbleAndExplicitSplits) {
  EXPECT_EQ(split_layers(32, 8, {}), std::vector<int>(8, 4));
  EXPECT_EQ(split_layers(22, 8, {}), (std::vector<int>{2, 3, 3, 3, 3, 3, 3, 2}));  // Zero Bubble's 1.5B
  EXPECT_EQ(split_layers(46, 16, {}).front(), 2);
  EXPECT_EQ(split_layers(10, 3, {2, 4, 4}), (std::vector<int>{2, 4, 4}));
  const std::string e = error_of([] { split_layers(40, 16, {}); });
  EXPECT_NE(e.find("model.layers"), std::string::npos) << e;
  EXPECT_NE(e.find("--split"), std::string::npos) << e;
  EXPECT_NE(error_of([] { split_layers(10, 3, {2, 4}); }).find("split:"), std::string::npos);
  EXPECT_NE(error_of([] { split_layers(10, 3, {2, 4, 5}); }).find("add up to 11"), std::string::npos);
  EXPECT_NE(error_of([] { parse_split("2,x,3"); }).find("split:"), std::string::npos);
  EXPECT_NE(error_of([] { parse_split("2,-1"); }).find("split:"), std::string::npos);
}

TEST(GeneratorErrors, BadShapesAndOptionsNameTheField) {
  auto gen_with = [](auto edit) {
    return error_of([&] {
      GenerateOptions o = options_for(small_gpt(), 2, 4);
      edit(o);
      generate(o);
    });
  };
  EXPECT_NE(gen_with([](GenerateOptions& o) { o.model.heads = 5; }).find("model.heads"), std::string::npos);
  EXPECT_NE(gen_with([](GenerateOptions& o) { o.model.hidden = 0; }).find("model.hidden"), std::string::npos);
  EXPECT_NE(gen_with([](GenerateOptions& o) { o.model.layers = -2; }).find("model.layers"), std::string::npos);
  EXPECT_NE(gen_with([](GenerateOptions& o) { o.model.seq = 0; }).find("model.seq"), std::string::npos);
  EXPECT_NE(gen_with([](GenerateOptions& o) { o.model.vocab = 0; }).find("model.vocab"), std::string::npos);
  EXPECT_NE(gen_with([](GenerateOptions& o) { o.model.ffn = 0; }).find("model.ffn"), std::string::npos);
  EXPECT_NE(gen_with([](GenerateOptions& o) { o.model.micro_batch = 0; }).find("model.micro_batch"), std::string::npos);
  EXPECT_NE(gen_with([](GenerateOptions& o) { o.devices = 0; }).find("devices"), std::string::npos);
  EXPECT_NE(gen_with([](GenerateOptions& o) { o.microbatches = 0; }).find("microbatches"), std::string::npos);
  EXPECT_NE(gen_with([](GenerateOptions& o) { o.gpu.utilization = 1.5; }).find("utilization"), std::string::npos);
  EXPECT_NE(gen_with([](GenerateOptions& o) {  // 5 layers (7 with embedding and output) on 3 stages
              o.model.layers = 5;
              o.devices = 3;
            }).find("model.layers"),
            std::string::npos);
  EXPECT_NE(gen_with([](GenerateOptions& o) { o.split = {1, 1}; }).find("split"), std::string::npos);
  EXPECT_NE(gen_with([](GenerateOptions& o) { o.offload_levels = {0.5, 1}; }).find("offload_levels"), std::string::npos);
  // 3 stages with an explicit split are fine.
  EXPECT_EQ(gen_with([](GenerateOptions& o) {
              o.devices = 3;
              o.split = {1, 2, 1};
            }),
            "");
  EXPECT_NE(error_of([] { parse_memory_limit("lots"); }).find("memory_limit"), std::string::npos);
  EXPECT_NE(error_of([] { parse_memory_limit("-3act"); }).find("memory_limit"), std::string::npos);
  EXPECT_NE(error_of([] { parse_memory_limit("0GiB"); }).find("memory_limit"), std::string::npos);
  EXPECT_NE(error_of([] { parse_offload_levels("0,2"); }).find("offload_levels"), std::string::npos);
  EXPECT_NE(error_of([] { parse_placement("zigzag"); }).find("placement"), std::string::npos);
  EXPECT_NE(error_of([] { parse_dtype("int8"); }).find("model.dtype"), std::string::npos);
  EXPECT_NE(error_of([] { parse_recompute("half"); }).find("recompute"), std::string::npos);
  EXPECT_EQ(parse_offload_levels("1, 0.5"), (std::vector<double>{0, 0.5, 1}));
}

// Issue 23: options past the instance reader's limits gave exit 0 and a file that nothing
// reads back (a 4e300 ms forward from utilisation 1e-300, a memory limit of null from
// 1e300GiB, 2e6 microbatches); now generate() refuses them, naming the field.
TEST(GeneratorErrors, ValuesPastTheReadersLimitsAreRefused) {
  auto gen_with = [](auto edit) {
    return error_of([&] {
      GenerateOptions o = options_for(small_gpt(), 2, 4);
      edit(o);
      generate(o);
    });
  };
  const std::string slow = gen_with([](GenerateOptions& o) { o.gpu.utilization = 1e-300; });
  EXPECT_NE(slow.find("stages[0].forward: must be at most 1e9 ms"), std::string::npos) << slow;
  EXPECT_NE(slow.find("utilisation"), std::string::npos) << slow;
  const std::string huge = gen_with([](GenerateOptions& o) { o.memory = parse_memory_limit("1e300GiB"); });
  EXPECT_NE(huge.find("devices[0].memory_limit"), std::string::npos) << huge;
  const std::string many = gen_with([](GenerateOptions& o) { o.microbatches = 2000000; });
  EXPECT_NE(many.find("microbatches: must be an integer from 1 to 1000000"), std::string::npos) << many;
  EXPECT_EQ(gen_with([](GenerateOptions& o) { o.microbatches = 1000000; }), "");  // the limit itself
}

// A request (generate_request.h): a preset with overrides, an explicit shape with its defaults,
// and each missing or bad field named.
TEST(GeneratorRequest, PresetsOverridesDefaultsAndErrors) {
  GenerateRequest r;
  r.model = "gpt3-1.5b";
  r.devices = 8;
  r.microbatches = 24;
  GenerateOptions o = resolve(r);
  EXPECT_EQ(o.model.name, "gpt3-1.5b");
  EXPECT_EQ(o.model.layers, find_model_preset("gpt3-1.5b")->shape.layers);
  EXPECT_EQ(o.gpu.name, "h100-sxm");
  EXPECT_EQ(o.placement, Placement::kOnePerDevice);
  EXPECT_EQ(o.memory.kind, MemoryLimit::Kind::kGpu);
  EXPECT_EQ(o.offload_levels, (std::vector<double>{0, 1}));
  // The same as the options spelled out by hand: the same file.
  EXPECT_EQ(generated_instance_json(generate(o).instance),
            generated_instance_json(generate(options_for(find_model_preset("gpt3-1.5b")->shape, 8, 24)).instance));

  // A micro-batch override keeps the preset's name; an architecture change renames it.
  r.micro_batch = 4;
  EXPECT_EQ(resolve(r).model.name, "gpt3-1.5b");
  EXPECT_EQ(resolve(r).model.micro_batch, 4);
  r.layers = 12;
  EXPECT_EQ(resolve(r).model.name, "gpt3-1.5b-custom");
  EXPECT_EQ(resolve(r).model.layers, 12);
  r.mlp = "swiglu";
  o = resolve(r);
  EXPECT_EQ(o.model.mlp, Mlp::kSwiGlu);
  EXPECT_FALSE(o.model.dropout);
  EXPECT_FALSE(o.model.learned_positions);

  // Text fields are parsed; levels normalised.
  r.placement = "v";
  r.memory_limit = "3act";
  r.offload_levels = {1, 0.5, 1};
  r.workspace = "2GiB";
  o = resolve(r);
  EXPECT_EQ(o.placement, Placement::kV);
  EXPECT_EQ(o.memory.kind, MemoryLimit::Kind::kActivations);
  EXPECT_EQ(o.memory.value, 3);
  EXPECT_EQ(o.offload_levels, (std::vector<double>{0, 0.5, 1}));
  EXPECT_EQ(o.cost.workspace_bytes, 2 * kGiB);

  // An explicit shape: ffn 4 x hidden, micro-batch 1.
  GenerateRequest e;
  e.layers = 4;
  e.hidden = 64;
  e.heads = 4;
  e.vocab = 1000;
  e.seq = 128;
  e.devices = 2;
  e.microbatches = 4;
  o = resolve(e);
  EXPECT_EQ(o.model.ffn, 256);
  EXPECT_EQ(o.model.micro_batch, 1);
  EXPECT_EQ(o.model.name, "custom");

  auto error_for = [&](auto edit) {
    return error_of([&] {
      GenerateRequest x = e;
      edit(x);
      resolve(x);
    });
  };
  EXPECT_NE(error_for([](GenerateRequest& x) { x.seq.reset(); }).find("model: give a preset or an explicit shape (seq is missing"),
            std::string::npos);
  EXPECT_NE(error_for([](GenerateRequest& x) { x.model = "gpt3-99b"; }).find("model: unknown preset"), std::string::npos);
  EXPECT_NE(error_for([](GenerateRequest& x) { x.devices.reset(); }).find("devices: required"), std::string::npos);
  EXPECT_NE(error_for([](GenerateRequest& x) { x.microbatches.reset(); }).find("microbatches: required"),
            std::string::npos);
  EXPECT_NE(error_for([](GenerateRequest& x) { x.gpu = "tpu"; }).find("gpu: unknown preset"), std::string::npos);
  EXPECT_NE(error_for([](GenerateRequest& x) { x.mlp = "relu"; }).find("model.mlp"), std::string::npos);
  EXPECT_NE(error_for([](GenerateRequest& x) { x.dtype = "int8"; }).find("model.dtype"), std::string::npos);
  EXPECT_NE(error_for([](GenerateRequest& x) { x.placement = "zigzag"; }).find("placement"), std::string::npos);
  EXPECT_NE(error_for([](GenerateRequest& x) { x.memory_limit = "lots"; }).find("memory_limit"), std::string::npos);
  EXPECT_NE(error_for([](GenerateRequest& x) { x.workspace = "much"; }).find("workspace"), std::string::npos);
  EXPECT_NE(error_for([](GenerateRequest& x) { x.offload_levels = {0, 1.5}; }).find("offload_levels: 1.5"),
            std::string::npos);
  EXPECT_EQ(error_for([](GenerateRequest&) {}), "");
}

// The instance read back from the generated file is the generated instance, field for field.
void expect_round_trip(const Instance& inst) {
  const std::string text = generated_instance_json(inst);
  std::vector<std::string> warnings;
  const Instance back = parse_instance(text, &warnings);
  EXPECT_TRUE(warnings.empty()) << warnings.front();
  EXPECT_EQ(instance_to_json(back), instance_to_json(inst));
}

TEST(GeneratorPresets, EveryPresetGivesAValidInstanceThatAHeuristicSchedules) {
  int generated = 0;
  for (const auto& p : model_presets()) {
    for (int devices : {4, 8, 16}) {
      SCOPED_TRACE(p.shape.name + " on " + std::to_string(devices));
      GenerateOptions o = options_for(p.shape, devices, 2 * devices);
      Generated g;
      try {
        g = generate(o);
      } catch (const InputError& e) {
        // Only an uneven split may refuse, and it says how to fix it.
        EXPECT_NE(std::string(e.what()).find("--split"), std::string::npos) << e.what();
        continue;
      }
      ++generated;
      expect_round_trip(g.instance);
      if (!g.warnings.empty()) {
        // Only a model too big for the GPUs (28.3B on 4 H100s: 16 layers' weights and Adam
        // state alone exceed 80 GB) may warn, and it is still a valid file.
        EXPECT_NE(g.warnings.front().find("no schedule fits"), std::string::npos) << g.warnings.front();
        EXPECT_GT(total_parameters(p.shape) * 18 / devices, 60e9);
        continue;
      }
      EXPECT_EQ(g.instance.num_stages(), devices);
      EXPECT_EQ(g.instance.placement(), Placement::kOnePerDevice);
      for (const Stage& st : g.instance.stages) {
        EXPECT_GT(st.forward, 0);
        EXPECT_GT(st.backward, 0);
        EXPECT_GT(st.weight, 0);
        EXPECT_LE(st.weight_activation, st.activation);
        EXPECT_TRUE(st.offloadable());
      }
      const BestResult best = run_all_heuristics(g.instance);
      ASSERT_NE(best.best_result(), nullptr);
      EXPECT_TRUE(validate(g.instance, *best.best_result()->schedule).valid());
    }
  }
  EXPECT_GE(generated, 18);
}

TEST(GeneratorLayout, VAndLoopPlacementsPcieGroupsAndNodes) {
  const ModelShape llama = find_model_preset("llama2-7b")->shape;
  GenerateOptions o = options_for(llama, 4, 8);
  o.placement = Placement::kV;
  const Generated v = generate(o);
  ASSERT_EQ(v.instance.num_stages(), 8);
  EXPECT_EQ(v.instance.placement(), Placement::kV);
  EXPECT_EQ(v.instance.stages[7].device, 0);
  EXPECT_EQ(v.instance.stages[4].device, 3);
  EXPECT_EQ(v.instance.devices[1].pcie_group, 0);
  EXPECT_EQ(v.instance.devices[2].pcie_group, 1);
  expect_round_trip(v.instance);
  const BestResult best = run_all_heuristics(v.instance);
  ASSERT_NE(best.best_result(), nullptr);

  o.placement = Placement::kLoop;
  const Generated loop = generate(o);
  EXPECT_EQ(loop.instance.placement(), Placement::kLoop);
  EXPECT_EQ(loop.instance.stages[5].device, 1);

  // 16 devices are two nodes: the pair 7 -> 8 goes over InfiniBand.
  const Generated two_nodes = generate(options_for(llama, 16, 16));
  EXPECT_GT(two_nodes.instance.comm[7], two_nodes.instance.comm[6]);
  EXPECT_DOUBLE_EQ(two_nodes.instance.comm[0], two_nodes.instance.comm[6]);
  expect_round_trip(two_nodes.instance);
}

TEST(GeneratorMemory, LimitsWarningsAndUnsplitBackward) {
  const ModelShape m = find_model_preset("gpt3-1.5b")->shape;
  GenerateOptions o = options_for(m, 8, 24);
  const Generated gpu = generate(o);
  EXPECT_DOUBLE_EQ(gpu.instance.devices[0].memory_limit, 81559.0 * 1048576.0);
  std::string why;
  EXPECT_TRUE(one_f_one_b_fits(gpu.instance, nullptr, &why)) << why;

  o.memory = parse_memory_limit("3act");
  const Generated act = generate(o);
  double need = 0;
  for (int d = 0; d < 8; ++d) {
    need = std::max(need, act.instance.devices[d].static_memory + 3 * act.instance.stages[d].activation);
  }
  EXPECT_GE(act.instance.devices[0].memory_limit, need);
  EXPECT_LT(act.instance.devices[0].memory_limit, need + 1048576.0);
  EXPECT_FALSE(one_f_one_b_fits(act.instance, nullptr, nullptr));  // 1F1B keeps 8 on device 0
  EXPECT_TRUE(act.warnings.empty());

  o.memory = parse_memory_limit("4GiB");  // below the static memory: a valid but infeasible file
  const Generated tight = generate(o);
  EXPECT_FALSE(tight.warnings.empty());
  EXPECT_NE(tight.warnings.front().find("no schedule fits"), std::string::npos);
  expect_round_trip(tight.instance);

  o.memory = {};
  o.split_backward = false;
  const Generated unsplit = generate(o);
  EXPECT_FALSE(unsplit.instance.split_backward);
  EXPECT_NEAR(unsplit.instance.stages[1].backward, gpu.instance.stages[1].backward + gpu.instance.stages[1].weight, 2e-4);
  expect_round_trip(unsplit.instance);
}

TEST(GeneratorDeterminism, SameInputsGiveByteIdenticalFiles) {
  for (const char* name : {"gpt3-6.2b", "llama2-13b"}) {
    GenerateOptions o = options_for(find_model_preset(name)->shape, 8, 32);
    o.offload_levels = {0, 0.5, 1};
    o.memory = parse_memory_limit("2.5act");
    const std::string a = generated_instance_json(generate(o).instance);
    const std::string b = generated_instance_json(generate(o).instance);
    EXPECT_EQ(a, b);
  }
}

// ---- the command line and the shipped files --------------------------------------------------

constexpr const char* kCli = optpipe::test_support::kCliPath;
#define REQUIRE_CLI() OPTPIPE_REQUIRE_CLI()

std::string quote(const std::string& s) { return optpipe::test_support::shell_quote(s); }

std::string temp_path(const std::string& name) {
  return optpipe::test_support::temp_dir() + "gen-" + name;
}

std::string read_file(const std::string& path) { return optpipe::test_support::read_text(path); }

using CliRun = optpipe::test_support::ShellRun;
using optpipe::test_support::run_shell;

CliRun run_cli(const std::string& args) { return run_shell(quote(kCli) + " " + args); }

TEST(GenerateCli, HelpListPresetsAndBadFlags) {
  REQUIRE_CLI();
  const CliRun help = run_cli("generate --help");
  EXPECT_EQ(help.status, 0) << help.output;
  for (const char* flag : {"--model", "--devices", "--placement", "--microbatches", "--memory-limit", "--recompute",
                           "--offload-levels", "--split", "--list-presets"}) {
    EXPECT_NE(help.output.find(flag), std::string::npos) << flag;
  }
  const CliRun list = run_cli("generate --list-presets");
  EXPECT_EQ(list.status, 0) << list.output;
  EXPECT_NE(list.output.find("llama2-13b"), std::string::npos);
  EXPECT_NE(list.output.find("h100-sxm"), std::string::npos);

  const CliRun bad = run_cli("generate --model gpt3-1.5b --devices 8 --microbatches 24 --bogus");
  EXPECT_EQ(bad.status, 2);
  EXPECT_NE(bad.output.find("--bogus"), std::string::npos) << bad.output;
  const CliRun preset = run_cli("generate --model gpt3-99b --devices 8 --microbatches 24");
  EXPECT_EQ(preset.status, 2);
  EXPECT_NE(preset.output.find("model: unknown preset"), std::string::npos) << preset.output;
  const CliRun heads = run_cli("generate --layers 4 --hidden 100 --heads 3 --vocab 1000 --seq 128 --devices 2 --microbatches 4");
  EXPECT_EQ(heads.status, 2);
  EXPECT_NE(heads.output.find("model.heads"), std::string::npos) << heads.output;
  const CliRun uneven = run_cli("generate --model llama2-13b --devices 16 --microbatches 32");
  EXPECT_EQ(uneven.status, 2);
  EXPECT_NE(uneven.output.find("--split"), std::string::npos) << uneven.output;
  const CliRun missing = run_cli("generate --model gpt3-1.5b --microbatches 24");
  EXPECT_EQ(missing.status, 2);
  EXPECT_NE(missing.output.find("devices"), std::string::npos) << missing.output;
}

// Issue 23: "--memory-limit 60" was 60 bytes (eight warnings, exit 0) and "60G" an error.
TEST(GenerateCli, MemoryLimitNeedsAUnitAndTakesTheCommonSpellings) {
  REQUIRE_CLI();
  const std::string base = "generate --model gpt3-1.5b --devices 4 --microbatches 8 -o ";
  const CliRun bare = run_cli(base + quote(temp_path("bare.json")) + " --memory-limit 60");
  EXPECT_EQ(bare.status, 2) << bare.output;
  EXPECT_NE(bare.output.find("needs a unit"), std::string::npos) << bare.output;
  EXPECT_FALSE(std::filesystem::exists(temp_path("bare.json")));
  for (const char* spelling : {"60G", "60gib", "60GiB", "60 GIB"}) {
    const std::string path = temp_path("spelled.json");
    const CliRun r = run_cli(base + quote(path) + " --memory-limit '" + spelling + "'");
    ASSERT_EQ(r.status, 0) << spelling << ": " << r.output;
    const Instance inst = load_instance(path);
    EXPECT_DOUBLE_EQ(inst.devices[0].memory_limit, 60.0 * 1073741824.0) << spelling;
  }
  const CliRun decimal = run_cli(base + quote(temp_path("dec.json")) + " --memory-limit 60GB");
  ASSERT_EQ(decimal.status, 0) << decimal.output;
  EXPECT_NEAR(load_instance(temp_path("dec.json")).devices[0].memory_limit, 60e9, 1048576.0);  // whole MiB
}

TEST(GenerateCli, WritesAFileThatValidates) {
  REQUIRE_CLI();
  const std::string path = temp_path("gen.json");
  const CliRun gen = run_cli("generate --model gpt3-1.5b --devices 8 --microbatches 24 --offload-levels 0,0.5,1 "
                          "--memory-limit 3act --name t -o " + quote(path));
  ASSERT_EQ(gen.status, 0) << gen.output;
  EXPECT_NE(gen.output.find("1F1B does not fit"), std::string::npos) << gen.output;
  EXPECT_NE(gen.output.find("F ms"), std::string::npos) << gen.output;
  const CliRun val = run_cli("validate " + quote(path));
  EXPECT_EQ(val.status, 0) << val.output;
  EXPECT_NE(val.output.find("instance OK"), std::string::npos) << val.output;
  // The file is what the library writes for the same options.
  GenerateOptions o = options_for(find_model_preset("gpt3-1.5b")->shape, 8, 24);
  o.offload_levels = {0, 0.5, 1};
  o.memory = parse_memory_limit("3act");
  o.name = "t";
  EXPECT_EQ(read_file(path), generated_instance_json(generate(o).instance));
  // Standard output by default.
  const CliRun out = run_shell(quote(kCli) + " generate --model llama2-7b --devices 4 --microbatches 8 -q 2>/dev/null");
  EXPECT_EQ(out.status, 0);
  EXPECT_NO_THROW(parse_instance(out.output));
  fs::remove(path);
}

// generate takes the same model and cluster flags as partition and plan (cli/generator_flags.h),
// tensor and data parallelism included: the file is what the library writes for that request.
TEST(GenerateCli, TensorAndDataParallelFlagsAreTheLibrarysRequest) {
  REQUIRE_CLI();
  const std::string path = temp_path("tp.json");
  const CliRun gen = run_cli("generate --model llama2-13b --devices 4 --microbatches 8 --tensor-parallel 2 "
                             "--data-parallel 4 --zero 1 -q -o " + quote(path));
  ASSERT_EQ(gen.status, 0) << gen.output;
  GenerateRequest r;
  r.model = "llama2-13b";
  r.devices = 4;
  r.microbatches = 8;
  r.tensor_parallel = 2;
  r.data_parallel = 4;
  r.zero_stage = 1;
  EXPECT_EQ(read_file(path), generated_instance_json(generate(resolve(r)).instance));
  const Instance plain = generate(resolve([] {
                           GenerateRequest p;
                           p.model = "llama2-13b";
                           p.devices = 4;
                           p.microbatches = 8;
                           return p;
                         }())).instance;
  EXPECT_LT(load_instance(path).devices[0].static_memory, plain.devices[0].static_memory);
  const CliRun bad = run_cli("generate --model llama2-13b --devices 4 --microbatches 8 --zero 2");
  EXPECT_EQ(bad.status, 2) << bad.output;
  fs::remove(path);
}

TEST(GeneratedInstances, ShippedFilesEqualWhatTheGeneratorWritesNow) {
  REQUIRE_CLI();
  const fs::path shipped = fs::path(OPTPIPE_SOURCE_DIR) / "instances" / "generated";
  const fs::path fresh = temp_path("generated");
  fs::create_directories(fresh);
  const CliRun run = run_shell("OPTPIPE=" + quote(kCli) + " bash " +
                            quote((fs::path(OPTPIPE_SOURCE_DIR) / "instances" / "generate.sh").string()) + " " +
                            quote(fresh.string()));
  ASSERT_EQ(run.status, 0) << run.output;
  std::set<std::string> a, b;
  for (const auto& e : fs::directory_iterator(shipped)) {
    if (e.path().extension() == ".json") a.insert(e.path().filename().string());
  }
  for (const auto& e : fs::directory_iterator(fresh)) {
    if (e.path().extension() == ".json") b.insert(e.path().filename().string());
  }
  EXPECT_EQ(a, b) << "instances/generated/ is out of date: run instances/generate.sh";
  EXPECT_GE(a.size(), 20u);
  for (const auto& name : a) {
    SCOPED_TRACE(name);
    EXPECT_EQ(read_file((shipped / name).string()), read_file((fresh / name).string()))
        << "instances/generated/" << name << " differs from what the generator writes now: run instances/generate.sh";
    std::vector<std::string> warnings;
    const Instance inst = load_instance((shipped / name).string(), &warnings);
    EXPECT_TRUE(warnings.empty());
    EXPECT_EQ(inst.name + ".json", name);
  }
  fs::remove_all(fresh);
}

}  // namespace
}  // namespace optpipe
