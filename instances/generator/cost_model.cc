#include "instances/generator/cost_model.h"

#include <algorithm>
#include <string>

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

BlockCost transformer_layer(const ModelShape& m, const CostOptions& o) {
  const double s = m.seq, b = m.micro_batch, h = m.hidden, a = m.heads, f = m.ffn;
  const double vb = dtype_bytes(m.dtype);  // bytes per stored value
  const double sbh = s * b * h;
  const double matrices = m.mlp == Mlp::kSwiGlu ? 3.0 : 2.0;

  BlockCost c;
  const double linear = 2.0 * sbh * (4.0 * h + matrices * f);  // q, k, v, o and the MLP matrices
  const double scores = 4.0 * s * sbh;                         // QKᵀ and ·V: 2 x 2s²bh
  c.f_flops = linear + scores;
  c.b_flops = linear + 2.0 * scores;
  c.w_flops = linear;

  // Activations kept for B.
  const double mask = m.dropout ? 1.0 : 0.0;  // bytes per element of a dropout mask
  const double attention = 5.0 * vb * sbh + mask * sbh;            // qkv input, q, k, v, o-proj input; mask
  const double norms = 2.0 * vb * sbh;                             // two norm inputs
  const double mlp = m.mlp == Mlp::kSwiGlu ? vb * sbh + 3.0 * vb * s * b * f    // input; gate, up, down input
                                           : vb * sbh + 2.0 * vb * s * b * f + mask * sbh;  // fc1 in, GeLU in, fc2 in; mask
  const double score_bytes = a * s * s * b * (m.dropout ? 2.0 * vb + 1.0 : vb);  // softmax out (+ mask, dropout out)
  const double dense = attention + norms + mlp;
  const bool keep_scores = !o.flash_attention && o.recompute == Recompute::kNone;

  if (o.recompute == Recompute::kFull) {
    c.activation = vb * sbh;  // the layer input
    c.weight_activation = c.activation;
    c.b_flops += c.f_flops;
    c.transient = dense + (o.flash_attention ? 0.0 : score_bytes);
  } else {
    c.activation = dense + (keep_scores ? score_bytes : 0.0);
    c.weight_activation = std::max(0.0, dense - 2.0 * sbh);
    if (o.recompute == Recompute::kSelective && !o.flash_attention) c.b_flops += scores;
  }
  c.params = layer_parameters(m);
  return c;
}

BlockCost embedding_block(const ModelShape& m, const CostOptions&) {
  BlockCost c;
  const double sbh = double(m.seq) * m.micro_batch * m.hidden;
  c.activation = m.dropout ? sbh : 0.0;  // embedding dropout mask
  c.params = embedding_parameters(m);
  return c;
}

BlockCost output_block(const ModelShape& m, const CostOptions&) {
  BlockCost c;
  const double vb = dtype_bytes(m.dtype);
  const double sb = double(m.seq) * m.micro_batch;
  const double proj = 2.0 * sb * m.hidden * double(m.vocab);
  c.f_flops = proj;
  c.b_flops = proj;
  c.w_flops = proj;
  c.weight_activation = 2.0 * vb * sb * m.hidden;           // final-norm and projection inputs
  c.activation = c.weight_activation + 4.0 * sb * m.vocab;  // + fp32 logits for the loss
  c.transient = 4.0 * sb * m.vocab;                         // fp32 logit gradient
  c.params = output_parameters(m);
  return c;
}

double bytes_per_param(const ModelShape& m, const CostOptions& o) {
  if (o.bytes_per_param > 0) return o.bytes_per_param;
  return m.dtype == DType::kFp32 ? 16.0 : 18.0;
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

double compute_ms(double flops, const GpuPreset& gpu, DType dtype) {
  const double peak = dtype == DType::kFp32 ? gpu.peak_flops_fp32 : gpu.peak_flops;
  return flops / (peak * gpu.utilization) * 1e3;
}

double transfer_ms(double bytes, double bandwidth, double latency_ms) {
  return latency_ms + bytes / bandwidth * 1e3;
}

}  // namespace optpipe::gen
