// The generator's tensor- and data-parallel cost model (instances/generator/parallelism.h and
// cost_model.h, issue 22, part 3) against hand computations: tensor parallelism splits a layer's
// FLOPs, parameters and activations (arXiv 2205.05198 §4.2's formulas with and without sequence
// parallelism) and adds two all-reduces in F and two in B; ZeRO-1 divides the optimizer state by
// the replicas; the data-parallel sync; and with t = d = 1 nothing changes.
#include <gtest/gtest.h>

#include <string>

#include "instances/generator/cost_model.h"
#include "instances/generator/generate.h"
#include "instances/generator/generate_request.h"
#include "instances/generator/gpu_preset.h"
#include "instances/generator/model_shape.h"
#include "instances/generator/parallelism.h"
#include "model/error.h"
#include "plan/option_costs.h"
#include "tests/small_gpt_shape.h"

namespace optpipe {
namespace {

using namespace optpipe::gen;

constexpr double kGiB = 1073741824.0;

// s = 8, b = 2, h = 16, a = 4, f = 64, V = 100, GPT, bf16: s·b·h = 256 (tests/small_gpt_shape.h).
using test_support::small_gpt;

CostOptions tp(int t, bool sequence_parallel = true, bool flash = true) {
  CostOptions o;
  o.tensor_parallel = t;
  o.sequence_parallel = sequence_parallel;
  o.flash_attention = flash;
  return o;
}

TEST(PlanCostModel, TensorParallelSplitsALayerByHand) {
  const ModelShape m = small_gpt();
  // t = 1 (generator_test's hand numbers): F 106496, B 114688, W 98304, M_B 34sbh = 8704,
  // M_W 32sbh = 8192, 3280 parameters.
  const BlockCost one = transformer_layer(m, CostOptions{});
  // t = 2, sequence parallel: everything per GPU halves; two all-reduces in F and two in B.
  const BlockCost two = transformer_layer(m, tp(2));
  EXPECT_DOUBLE_EQ(two.f_flops, 106496 / 2);
  EXPECT_DOUBLE_EQ(two.b_flops, 114688 / 2);
  EXPECT_DOUBLE_EQ(two.w_flops, 98304 / 2);
  EXPECT_DOUBLE_EQ(two.activation, 8704 / 2);  // sbh(34)/t
  EXPECT_DOUBLE_EQ(two.weight_activation, 8192 / 2);
  EXPECT_DOUBLE_EQ(two.params, 3280 / 2);
  EXPECT_DOUBLE_EQ(two.f_allreduces, 2);
  EXPECT_DOUBLE_EQ(two.b_allreduces, 2);
  EXPECT_DOUBLE_EQ(one.f_allreduces, 0);
  // Without sequence parallelism (arXiv 2205.05198 §4.2.1): sbh(10 + 24/t) = 256 (10 + 12) =
  // 5632; M_W keeps the two (replicated) masks out: 5632 - 2sbh = 5120.
  const BlockCost no_sp = transformer_layer(m, tp(2, false));
  EXPECT_DOUBLE_EQ(no_sp.activation, 5632);
  EXPECT_DOUBLE_EQ(no_sp.weight_activation, 5120);
  // Without FlashAttention the score terms 5as/(ht)·sbh = 10/2 · 256 = 1280 join: the paper's
  // sbh(10 + 24/t + 5as/(ht)) = 6912, and with sequence parallelism sbh/t (34 + 5as/h) = 5632.
  EXPECT_DOUBLE_EQ(transformer_layer(m, tp(2, false, false)).activation, 6912);
  EXPECT_DOUBLE_EQ(transformer_layer(m, tp(2, true, false)).activation, 5632);
  // Full recomputation keeps the layer input, 2sbh/t = 256 with sequence parallelism, and
  // repeats F's two all-reduces in B.
  CostOptions full = tp(2);
  full.recompute = Recompute::kFull;
  const BlockCost f = transformer_layer(m, full);
  EXPECT_DOUBLE_EQ(f.activation, 256);
  EXPECT_DOUBLE_EQ(f.b_allreduces, 4);
  EXPECT_DOUBLE_EQ(f.b_flops, (114688 + 106496) / 2);
}

TEST(PlanCostModel, TensorParallelEmbeddingAndOutputByHand) {
  const ModelShape m = small_gpt();
  // Embedding: Vh = 1600 split, positions sh = 128 whole: 800 + 128; its sbh mask halves with
  // sequence parallelism; one all-reduce in F.
  const BlockCost e = embedding_block(m, tp(2));
  EXPECT_DOUBLE_EQ(e.params, 928);
  EXPECT_DOUBLE_EQ(e.activation, 128);
  EXPECT_DOUBLE_EQ(e.f_allreduces, 1);
  // Output: 2sbhV / 2 = 25600 FLOPs; the two sbh inputs 1024 / 2 + fp32 logits 6400 / 2;
  // parameters: the norm's 2h = 32 whole + Vh / 2 = 800; one all-reduce in B.
  const BlockCost out = output_block(m, tp(2));
  EXPECT_DOUBLE_EQ(out.f_flops, 25600);
  EXPECT_DOUBLE_EQ(out.activation, 512 + 3200);
  EXPECT_DOUBLE_EQ(out.transient, 3200);
  EXPECT_DOUBLE_EQ(out.params, 32 + 800);
  EXPECT_DOUBLE_EQ(out.b_allreduces, 1);
}

// TP = 2 on Llama-2 13B halves each stage's compute, within the two all-reduces per layer in F
// and in B (ring over NVLink: 10 us + 2(t-1)/t · 40 MiB / 360 GB/s = 0.12651 ms each).
TEST(PlanCostModel, TensorParallelHalvesComputeWithinTheCommOverhead) {
  GenerateOptions o;
  o.model = find_model_preset("llama2-13b")->shape;
  o.gpu = *find_gpu_preset("h100-sxm");
  o.devices = 4;
  o.microbatches = 8;
  const Generated one = generate(o);
  o.cost.tensor_parallel = 2;
  const Generated two = generate(o);
  const double ar = tp_allreduce_ms(o.model, o.cost, o.gpu);
  EXPECT_NEAR(ar, 0.01 + 41943040.0 / 360e9 * 1e3, 1e-12);
  for (int s = 1; s + 1 < 4; ++s) {  // middle stages: 10 layers each
    const Stage& a = one.instance.stages[s];
    const Stage& b = two.instance.stages[s];
    EXPECT_NEAR(b.forward, a.forward / 2 + 10 * 2 * ar, 2e-4) << s;
    EXPECT_NEAR(b.backward, a.backward / 2 + 10 * 2 * ar, 2e-4) << s;
    EXPECT_NEAR(b.weight, a.weight / 2, 2e-4) << s;
    EXPECT_LT(b.forward, a.forward);           // still a gain
    EXPECT_GT(b.forward, a.forward / 2);       // but less than half: the all-reduces
    EXPECT_NEAR(b.activation, a.activation / 2, 1048576.0);  // MiB rounding
  }
  // Stage sends are s·b·h/t per GPU; the devices' GPUs share their PCIe switches (2 per switch):
  // a transfer of half the bytes takes as long, and each device is its own pcie_group.
  EXPECT_LT(two.instance.comm_after(0), one.instance.comm_after(0));
  EXPECT_NEAR(*two.instance.stages[1].offload, *one.instance.stages[1].offload, 0.01);
  EXPECT_EQ(two.instance.devices[1].pcie_group, 1);
  EXPECT_EQ(one.instance.devices[1].pcie_group, 0);
}

TEST(PlanCostModel, ZeroOneDividesTheOptimizerStateByTheReplicas) {
  const ModelShape m = small_gpt();
  CostOptions o;
  EXPECT_DOUBLE_EQ(bytes_per_param(m, o), 18);
  o.data_parallel = 4;
  EXPECT_DOUBLE_EQ(bytes_per_param(m, o), 18);  // ZeRO 0: nothing sharded
  o.zero_stage = 1;
  EXPECT_DOUBLE_EQ(bytes_per_param(m, o), 6 + 12.0 / 4);  // 2 + 4 whole, 12 of optimizer / 4
  ModelShape fp32 = m;
  fp32.dtype = DType::kFp32;
  EXPECT_DOUBLE_EQ(bytes_per_param(fp32, o), 8 + 8.0 / 4);
  o.bytes_per_param = 20;
  EXPECT_DOUBLE_EQ(bytes_per_param(m, o), 6 + 14.0 / 4);
  o.bytes_per_param = 4;
  EXPECT_DOUBLE_EQ(bytes_per_param(m, o), 4);
  o.bytes_per_param = 0;
  o.data_parallel = 1;
  EXPECT_DOUBLE_EQ(bytes_per_param(m, o), 18);
  // A stage's static memory: 2 layers + the output block = 8192 parameters x 9 bytes + 1 GiB +
  // the logit gradient 6400 (generator_test: x 18 without sharding).
  o.data_parallel = 4;
  EXPECT_DOUBLE_EQ(stage_cost(m, o, 2, false, true).static_bytes, 8192 * 9 + kGiB + 6400);
}

TEST(PlanCostModel, DataParallelSyncByHand) {
  const ModelShape m = find_model_preset("llama2-13b")->shape;
  const GpuPreset& h100 = *find_gpu_preset("h100-sxm");
  CostOptions o;
  EXPECT_DOUBLE_EQ(dp_sync(1e9, 2, m, o, h100).ms, 0.0);  // one replica
  o.data_parallel = 4;
  // 1e9 parameters, 2 devices x 4 replicas = 8 GPUs: one node, NVLink. All-reduce of 4e9 bytes of
  // fp32 gradients: 10 us + 2·3/4 · 4e9 / 360e9 s.
  DpSync s = dp_sync(1e9, 2, m, o, h100);
  EXPECT_TRUE(s.nvlink);
  EXPECT_NEAR(s.ms, 0.01 + 1.5 * 4e9 / 360e9 * 1e3, 1e-9);
  // ZeRO-1: reduce-scatter the gradients, all-gather the bf16 weights.
  o.zero_stage = 1;
  s = dp_sync(1e9, 2, m, o, h100);
  EXPECT_NEAR(s.ms, 0.02 + 0.75 * 6e9 / 360e9 * 1e3, 1e-9);
  // 4 devices x 4 replicas = 16 GPUs: two nodes, InfiniBand at 45 GB/s and 20 us.
  s = dp_sync(1e9, 4, m, o, h100);
  EXPECT_FALSE(s.nvlink);
  EXPECT_NEAR(s.ms, 0.04 + 0.75 * 6e9 / 45e9 * 1e3, 1e-9);
  // The time per batch: each device's sync after its own last op; the last to end decides.
  EXPECT_DOUBLE_EQ(plan::time_per_batch({10, 12}, {5, 1}), 15);
  EXPECT_DOUBLE_EQ(plan::time_per_batch({10, 12}, {1, 1}), 13);
  EXPECT_DOUBLE_EQ(plan::time_lower_bound(11, {5, 1}), 12);
  EXPECT_NEAR(plan::tokens_per_second(64, 4096, 2000), 131072, 1e-9);
}

// With t = d = 1 (ZeRO-1 or not) the generator writes exactly what it wrote before: the same file
// for every preset and placement as with the default options (the shipped files are checked by
// generator_tests' GeneratedInstances test).
TEST(PlanCostModel, OneGpuPerDeviceAndOneReplicaChangeNothing) {
  for (const ModelPreset& p : model_presets()) {
    for (const char* placement : {"one", "v"}) {
      GenerateRequest r;
      r.model = p.shape.name;
      r.devices = 4;
      r.microbatches = 8;
      r.placement = placement;
      GenerateOptions a = resolve(r);
      GenerateOptions b = a;
      b.cost.tensor_parallel = 1;
      b.cost.data_parallel = 1;
      b.cost.zero_stage = 1;
      b.cost.sequence_parallel = false;
      EXPECT_EQ(generated_instance_json(generate(a).instance), generated_instance_json(generate(b).instance))
          << p.shape.name << " " << placement;
    }
  }
}

TEST(PlanCostModel, BadParallelismNamesTheField) {
  GenerateOptions o;
  o.model = small_gpt();
  o.gpu = *find_gpu_preset("h100-sxm");
  o.devices = 2;
  o.microbatches = 2;
  o.cost.tensor_parallel = 3;
  auto message = [&] {
    try {
      generate(o);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(message().find("tensor_parallel: 3 does not divide the 8 GPUs of a node"), std::string::npos) << message();
  o.cost.tensor_parallel = 8;
  EXPECT_NE(message().find("does not divide the 4 attention heads"), std::string::npos) << message();
  o.cost.tensor_parallel = 1;
  o.cost.zero_stage = 2;
  EXPECT_NE(message().find("zero: stage 2 is not modelled"), std::string::npos) << message();
}

}  // namespace
}  // namespace optpipe
