// The cost model: FLOPs, activation bytes and static memory of transformer layers and pipeline
// stages, and the times of computing them and of moving bytes. Every function is O(1) except
// stage_cost (O(1) too: layers are identical) and the pure conversions.
//
// Per transformer layer, with s the sequence length, b the micro-batch size, h the hidden size,
// a the heads, f the FFN size (notation of the Zero Bubble paper, Qi et al., arXiv 2401.10241,
// Table 1, which takes its activation terms from Korthikanti et al., "Reducing Activation
// Recomputation in Large Transformer Models", arXiv 2205.05198, §4):
//
//   FLOPs (a multiply-add counts 2):
//     F = sbh(24h + 4s)      B = sbh(24h + 8s)      W = sbh·24h          (GPT, f = 4h)
//   In general F = 2sbh(4h + k·f) + 4s²bh, B = 2sbh(4h + k·f) + 8s²bh, W = 2sbh(4h + k·f), with
//   k = 2 matrices of h x f for a GeLU MLP and k = 3 for a SwiGLU MLP (gate, up, down: Llama).
//   For GPT (k = 2, f = 4h) that is exactly Table 1.
//
//   Activation bytes kept from F for B (M_B), 2-byte values and 1-byte dropout masks:
//     GPT: sb(34h + 5as)  = attention 11sbh + 5as²b, two LayerNorm inputs 4sbh, MLP 19sbh.
//     In general: attention 10sbh (+ sbh dropout mask), norms 4sbh, MLP 2sbh + 4sbf for GeLU
//     (+ sbh mask) or 2sbh + 6sbf for SwiGLU (gate, up and down inputs), score terms 5as²b with
//     dropout (softmax output, mask, dropout output) or 2as²b without. With FlashAttention (the
//     default) no s x s matrix is kept: the score terms go. fp32 doubles the value bytes.
//   Kept after B for W (M_W): GPT 32sbh, i.e. M_B without the score terms and without 2sbh (the
//   two dropout masks, which only B reads); other shapes keep the same rule (M_B - score terms
//   - 2sbh), never below 0.
//
//   Recomputation (arXiv 2205.05198 §4):
//     selective: the attention core (QKᵀ, softmax, dropout, ·V) is recomputed in B: the score
//       terms go from M_B and B gains their forward FLOPs 4s²bh. With FlashAttention it changes
//       nothing (nothing s x s is kept and the kernel already recomputes).
//     full: only each layer's input (sbh values) is kept (M_B = M_W = that); B gains F's FLOPs.
//       The recomputed activations of one microbatch live only while its B and W run: one
//       microbatch's worth of the stage's non-recomputed activations is added to the workspace.
//
// First stage: the token (and, for GPT, learned position) embedding: no FLOPs worth counting, an
// sbh dropout mask for GPT. Last stage: the final norm, the output projection (F, B and W each
// 2sbhV FLOPs) and the cross-entropy loss: M_B gains the norm and projection inputs (2 sbh
// values) and the fp32 logits 4sbV; M_W gains the two inputs; the fp32 logit gradient (4sbV) is
// transient and goes into the last stage's workspace.
//
// Static memory per stage: parameters x bytes_per_param + workspace. bytes_per_param defaults to
// 18 for bf16/fp16 mixed precision with Adam and no optimizer sharding: 2 (bf16 weights) + 4
// (fp32 main gradients, Megatron-LM's default for bf16) + 4 (fp32 master weights) + 4 + 4 (Adam
// moments) — Megatron-LM's distributed-optimizer documentation, "bf16 param, fp32 grads: 18 bytes
// per parameter"; ZeRO (arXiv 1910.02054 §3.1) counts 16 with fp16 gradients. fp32 training: 16
// (weights, gradients, two moments). The workspace defaults to 1 GiB: CUDA context, cuBLAS and
// NCCL buffers, allocator slack.
//
// Tensor parallelism (t = CostOptions::tensor_parallel GPUs per pipeline device, within a node;
// Megatron-LM, Narayanan et al., arXiv 2104.04473 §2.3 and §3.2, after Shoeybi et al., arXiv
// 1909.08053 §3): each layer's matrices are split t ways (attention by heads, the MLP by its f
// columns), so its F, B and W FLOPs and its parameters divide by t; each layer all-reduces one
// s·b·h activation twice in F and twice in B across the t GPUs (f_allreduces, b_allreduces; full
// recomputation repeats F's two in B). The embedding (vocabulary-parallel) all-reduces once in F,
// the output projection once in B; their vocabulary parts of FLOPs, parameters and logits divide
// by t; GPT's learned positions and the norms stay whole. Activations (Korthikanti et al., arXiv
// 2205.05198 §4.2): the attention and MLP internals and the score terms divide by t; the rest
// (the two norm inputs, the attention and MLP inputs, the two dropout masks: GPT's 10sbh) is
// replicated on every GPU without sequence parallelism and divides by t with it (the default,
// §4.2.2: sbh(34 + 5as/h)/t per GPT layer), which turns each all-reduce into an all-gather and a
// reduce-scatter of the same volume. Everything here is per GPU; with t = 1 every formula above
// is unchanged. Data parallelism and ZeRO change only the static memory (bytes_per_param) and
// add the gradient synchronisation outside the pipeline (parallelism.h).
#pragma once

#include "instances/generator/gpu_preset.h"
#include "instances/generator/model_shape.h"

namespace optpipe::gen {

enum class Recompute { kNone, kSelective, kFull };

const char* to_string(Recompute r);
// Throws InputError("recompute: ...") for anything but none, selective, full.
Recompute parse_recompute(const std::string& text);

struct CostOptions {
  bool flash_attention = true;
  Recompute recompute = Recompute::kNone;
  double bytes_per_param = 0;   // 0: 18 for bf16/fp16, 16 for fp32 (before ZeRO's sharding)
  double workspace_bytes = 1073741824.0;
  int tensor_parallel = 1;      // t: GPUs that split every layer (Megatron-LM), within a node
  bool sequence_parallel = true;  // with t > 1: the replicated activations split t ways too
  int data_parallel = 1;        // d: pipeline replicas (ZeRO shards over them)
  int zero_stage = 0;           // 0: no sharding; 1: optimizer state sharded over d (ZeRO-1)
};

// FLOPs and bytes of one block (a layer, the embedding, the output layer) for one microbatch.
struct BlockCost {
  double f_flops = 0, b_flops = 0, w_flops = 0;
  double activation = 0;         // M_B, bytes
  double weight_activation = 0;  // M_W, bytes
  double transient = 0;          // bytes alive only during this block's B/W (workspace)
  double params = 0;             // per GPU (divided by t where tensor parallelism splits them)
  double f_allreduces = 0, b_allreduces = 0;  // s·b·h all-reduces across the t GPUs in F and B (t > 1)
};

BlockCost transformer_layer(const ModelShape& model, const CostOptions& options);
BlockCost embedding_block(const ModelShape& model, const CostOptions& options);
BlockCost output_block(const ModelShape& model, const CostOptions& options);

// A stage: `layers` transformer layers, plus the embedding on the first and the output layer
// and loss on the last stage.
struct StageCost {
  int layers = 0;
  bool embedding = false, output = false;
  BlockCost total;            // sums; total.transient = the largest transient of the stage
  double static_bytes = 0;    // parameters x bytes_per_param + workspace + transient
};

StageCost stage_cost(const ModelShape& model, const CostOptions& options, int layers, bool first, bool last);

// Static bytes per parameter on a GPU: the dtype's default or CostOptions::bytes_per_param, its
// optimizer part divided by d under ZeRO-1 (parallelism.h).
double bytes_per_param(const ModelShape& model, const CostOptions& options);
// Bytes of one activation sent between consecutive stages (s·b·h values).
double p2p_bytes(const ModelShape& model);
// ... as each GPU of a t-way tensor-parallel stage sends it: s·b·h / t values (Megatron-LM's
// scatter/gather of the stage output, arXiv 2104.04473 §4.1). p2p_bytes(model) for t = 1.
double p2p_bytes_per_gpu(const ModelShape& model, const CostOptions& options);

// F, B and W milliseconds of a block: its FLOPs at the GPU's rate plus its tensor-parallel
// all-reduces (parallelism.h: tp_allreduce_ms), which are 0 for t = 1.
struct BlockTimes {
  double forward = 0, backward = 0, weight = 0;
};
BlockTimes block_times(const BlockCost& cost, const ModelShape& model, const CostOptions& options, const GpuPreset& gpu);

// Milliseconds to run `flops` on the GPU at its peak for the dtype times its utilisation.
double compute_ms(double flops, const GpuPreset& gpu, DType dtype);
// Milliseconds to move `bytes` over a link: latency + bytes / bandwidth.
double transfer_ms(double bytes, double bandwidth, double latency_ms);

}  // namespace optpipe::gen
