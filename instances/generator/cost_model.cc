#include "instances/generator/cost_model.h"

#include <algorithm>
#include <string>

#include "instances/generator/parallelism.h"
#include "model/error.h"

namespace optpipe::gen {

const char* to_string(Recompute r) {
  switch (r) {
    case Recompute::kNone: return "none";
    case Recompute::kSelective: return "selective";
    case Recompute::kFull: return "full";
  }
  return "?";
}

Recompute parse_recompute(const std::string& text) {
  if (text == "none") return Recompute::kNone;
  if (text == "selective") return Recompute::kSelective;
  if (text == "full") return Recompute::kFull;
  throw InputError("recompute: unknown mode \"" + text + "\" (choose none, selective or full)");
}

namespace {

// t, and the divisor of the activations tensor parallelism replicates (t with sequence
// parallelism, else 1).
double tp_of(const CostOptions& o) { return std::max(1, o.tensor_parallel); }
double sp_of(const CostOptions& o) { return o.tensor_parallel > 1 && o.sequence_parallel ? tp_of(o) : 1.0; }

}  // namespace

BlockCost transformer_layer(const ModelShape& m, const CostOptions& o) {
  const double s = m.seq, b = m.micro_batch, h = m.hidden, a = m.heads, f = m.ffn;
  const double vb = dtype_bytes(m.dtype);  // bytes per stored value
  const double sbh = s * b * h;
  const double matrices = m.mlp == Mlp::kSwiGlu ? 3.0 : 2.0;
  const double t = tp_of(o), sp = sp_of(o);

  BlockCost c;
  const double linear = 2.0 * sbh * (4.0 * h + matrices * f) / t;  // q, k, v, o and the MLP matrices
  const double scores = 4.0 * s * sbh / t;                         // QKᵀ and ·V: 2 x 2s²bh
  c.f_flops = linear + scores;
  c.b_flops = linear + 2.0 * scores;
  c.w_flops = linear;
  if (t > 1) c.f_allreduces = c.b_allreduces = 2;  // after attention and after the MLP

  // Activations kept for B: the part tensor parallelism replicates (two norm inputs, the
  // attention and MLP inputs, the two dropout masks) and the part it splits (q, k, v, the output
  // projection's input; the MLP's f-sized values).
  const double mask = m.dropout ? 1.0 : 0.0;  // bytes per element of a dropout mask
  const double replicated = 4.0 * vb * sbh + 2.0 * mask * sbh;
  const double mlp_inner = (m.mlp == Mlp::kSwiGlu ? 3.0 : 2.0) * vb * s * b * f;  // gate, up, down inputs; GeLU in, fc2 in
  const double split = 4.0 * vb * sbh + mlp_inner;
  const double score_bytes = a * s * s * b * (m.dropout ? 2.0 * vb + 1.0 : vb) / t;  // softmax out (+ mask, dropout out)
  const double dense = replicated / sp + split / t;
  const bool keep_scores = !o.flash_attention && o.recompute == Recompute::kNone;

  if (o.recompute == Recompute::kFull) {
    c.activation = vb * sbh / sp;  // the layer input
    c.weight_activation = c.activation;
    c.b_flops += c.f_flops;
    c.b_allreduces += c.f_allreduces;
    c.transient = dense + (o.flash_attention ? 0.0 : score_bytes);
  } else {
    c.activation = dense + (keep_scores ? score_bytes : 0.0);
    c.weight_activation = std::max(0.0, dense - 2.0 * sbh / sp);
    if (o.recompute == Recompute::kSelective && !o.flash_attention) c.b_flops += scores;
  }
  c.params = layer_parameters(m) / t;
  return c;
}

BlockCost embedding_block(const ModelShape& m, const CostOptions& o) {
  BlockCost c;
  const double sbh = double(m.seq) * m.micro_batch * m.hidden;
  const double vocab_part = double(m.vocab) * m.hidden;  // split by vocabulary; positions stay whole
  c.activation = m.dropout ? sbh / sp_of(o) : 0.0;  // embedding dropout mask
  c.params = vocab_part / tp_of(o) + (embedding_parameters(m) - vocab_part);
  if (o.tensor_parallel > 1) c.f_allreduces = 1;
  return c;
}

BlockCost output_block(const ModelShape& m, const CostOptions& o) {
  BlockCost c;
  const double vb = dtype_bytes(m.dtype), t = tp_of(o);
  const double sb = double(m.seq) * m.micro_batch;
  const double vocab_part = double(m.vocab) * m.hidden;
  const double proj = 2.0 * sb * m.hidden * double(m.vocab) / t;
  c.f_flops = proj;
  c.b_flops = proj;
  c.w_flops = proj;
  c.weight_activation = 2.0 * vb * sb * m.hidden / sp_of(o);   // final-norm and projection inputs
  c.activation = c.weight_activation + 4.0 * sb * m.vocab / t;  // + fp32 logits for the loss
  c.transient = 4.0 * sb * m.vocab / t;                         // fp32 logit gradient
  c.params = vocab_part / t + (output_parameters(m) - vocab_part);
  if (o.tensor_parallel > 1) c.b_allreduces = 1;  // the projection's input gradient
  return c;
}

double bytes_per_param(const ModelShape& m, const CostOptions& o) {
  const bool fp32 = m.dtype == DType::kFp32;
  const double whole = o.bytes_per_param > 0 ? o.bytes_per_param : fp32 ? 16.0 : 18.0;
  if (o.zero_stage < 1 || o.data_parallel <= 1) return whole;
  // ZeRO-1 (parallelism.h): weights and gradients stay, the optimizer state is sharded.
  const double kept = std::min(whole, fp32 ? 8.0 : 6.0);
  return kept + (whole - kept) / o.data_parallel;
}

StageCost stage_cost(const ModelShape& m, const CostOptions& o, int layers, bool first, bool last) {
  StageCost st;
  st.layers = layers;
  st.embedding = first;
  st.output = last;
  auto add = [&](const BlockCost& c, double times) {
    st.total.f_flops += times * c.f_flops;
    st.total.b_flops += times * c.b_flops;
    st.total.w_flops += times * c.w_flops;
    st.total.activation += times * c.activation;
    st.total.weight_activation += times * c.weight_activation;
    st.total.params += times * c.params;
    st.total.f_allreduces += times * c.f_allreduces;
    st.total.b_allreduces += times * c.b_allreduces;
  };
  const BlockCost layer = transformer_layer(m, o);
  add(layer, layers);
  double transient = 0;
  if (layers > 0 && o.recompute == Recompute::kFull) transient = layers * layer.transient;
  if (first) add(embedding_block(m, o), 1);
  if (last) {
    const BlockCost out = output_block(m, o);
    add(out, 1);
    transient = std::max(transient, out.transient);
  }
  st.total.transient = transient;
  st.static_bytes = st.total.params * bytes_per_param(m, o) + o.workspace_bytes + transient;
  return st;
}

double p2p_bytes(const ModelShape& m) {
  return double(m.seq) * m.micro_batch * m.hidden * dtype_bytes(m.dtype);
}

double p2p_bytes_per_gpu(const ModelShape& m, const CostOptions& o) { return p2p_bytes(m) / tp_of(o); }

BlockTimes block_times(const BlockCost& c, const ModelShape& m, const CostOptions& o, const GpuPreset& gpu) {
  const double ar = o.tensor_parallel > 1 ? tp_allreduce_ms(m, o, gpu) : 0.0;
  BlockTimes t;
  t.forward = compute_ms(c.f_flops, gpu, m.dtype) + c.f_allreduces * ar;
  t.backward = compute_ms(c.b_flops, gpu, m.dtype) + c.b_allreduces * ar;
  t.weight = compute_ms(c.w_flops, gpu, m.dtype);
  return t;
}

double compute_ms(double flops, const GpuPreset& gpu, DType dtype) {
  const double peak = dtype == DType::kFp32 ? gpu.peak_flops_fp32 : gpu.peak_flops;
  return flops / (peak * gpu.utilization) * 1e3;
}

double transfer_ms(double bytes, double bandwidth, double latency_ms) {
  return latency_ms + bytes / bandwidth * 1e3;
}

}  // namespace optpipe::gen
