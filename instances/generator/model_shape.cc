#include "instances/generator/model_shape.h"

#include <string>

#include "model/error.h"

namespace optpipe::gen {
namespace {

ModelShape gpt(const char* name, int layers, int hidden, int heads, int seq, int micro_batch) {
  ModelShape m;
  m.name = name;
  m.layers = layers;
  m.hidden = hidden;
  m.heads = heads;
  m.ffn = 4 * hidden;
  m.vocab = 50257;
  m.seq = seq;
  m.micro_batch = micro_batch;
  m.mlp = Mlp::kGelu;
  m.learned_positions = true;
  m.dropout = true;
  return m;
}

ModelShape llama(const char* name, int layers, int hidden, int heads, int ffn) {
  ModelShape m;
  m.name = name;
  m.layers = layers;
  m.hidden = hidden;
  m.heads = heads;
  m.ffn = ffn;
  m.vocab = 32000;
  m.seq = 4096;
  m.micro_batch = 1;
  m.mlp = Mlp::kSwiGlu;
  m.learned_positions = false;
  m.dropout = false;
  return m;
}

void require_positive(long long value, const char* field, const char* what) {
  if (value <= 0) {
    throw InputError(std::string("model.") + field + ": must be a positive integer (" + what + "), got " +
                     std::to_string(value));
  }
}

}  // namespace

const std::vector<ModelPreset>& model_presets() {
  static const std::vector<ModelPreset> presets{
      {gpt("gpt3-1.5b", 22, 2304, 24, 1024, 6), "1.5B", "Zero Bubble (arXiv 2401.10241) Table 3"},
      {gpt("gpt3-2.7b", 32, 2560, 32, 2048, 1), "2.7B", "GPT-3 (arXiv 2005.14165) Table 2.1"},
      {gpt("gpt3-6.2b", 30, 4096, 32, 1024, 3), "6.2B", "Zero Bubble (arXiv 2401.10241) Table 3"},
      {gpt("gpt3-6.7b", 32, 4096, 32, 2048, 1), "6.7B", "GPT-3 (arXiv 2005.14165) Table 2.1"},
      {gpt("gpt3-14.6b", 46, 5120, 40, 1024, 1), "14.6B", "Zero Bubble (arXiv 2401.10241) Table 3"},
      {gpt("gpt3-28.3b", 62, 6144, 48, 1024, 1), "28.3B", "Zero Bubble (arXiv 2401.10241) Table 3"},
      {llama("llama2-7b", 32, 4096, 32, 11008), "7B", "Llama 2 (arXiv 2307.09288), released config"},
      {llama("llama2-13b", 40, 5120, 40, 13824), "13B", "Llama 2 (arXiv 2307.09288), released config"},
  };
  return presets;
}

const ModelPreset* find_model_preset(const std::string& name) {
  for (const auto& p : model_presets()) {
    if (p.shape.name == name) return &p;
  }
  return nullptr;
}

std::string model_preset_names() {
  std::string out;
  for (const auto& p : model_presets()) out += (out.empty() ? "" : ", ") + p.shape.name;
  return out;
}

void validate_shape(const ModelShape& m) {
  require_positive(m.layers, "layers", "transformer layers");
  require_positive(m.hidden, "hidden", "hidden size h");
  require_positive(m.heads, "heads", "attention heads a");
  require_positive(m.ffn, "ffn", "FFN inner size f");
  require_positive(m.vocab, "vocab", "vocabulary size V");
  require_positive(m.seq, "seq", "sequence length s");
  require_positive(m.micro_batch, "micro_batch", "sequences per microbatch b");
  if (m.hidden % m.heads != 0) {
    throw InputError("model.heads: " + std::to_string(m.heads) + " heads do not divide hidden size " +
                     std::to_string(m.hidden) + " (hidden must be a multiple of heads)");
  }
}

double layer_parameters(const ModelShape& m) {
  const double h = m.hidden, f = m.ffn;
  if (m.mlp == Mlp::kSwiGlu) return 4 * h * h + 3 * h * f + 2 * h;  // q,k,v,o; gate,up,down; 2 RMSNorms
  return 4 * h * h + 4 * h + 2 * h * f + f + h + 4 * h;             // qkv+o with biases; fc1, fc2; 2 LayerNorms
}

double embedding_parameters(const ModelShape& m) {
  return double(m.vocab) * m.hidden + (m.learned_positions ? double(m.seq) * m.hidden : 0.0);
}

double output_parameters(const ModelShape& m) {
  const double norm = m.mlp == Mlp::kSwiGlu ? m.hidden : 2.0 * m.hidden;
  return norm + double(m.vocab) * m.hidden;
}

double total_parameters(const ModelShape& m) {
  const bool tied = m.mlp == Mlp::kGelu;  // GPT ties the output layer to the token embedding
  return embedding_parameters(m) + m.layers * layer_parameters(m) + output_parameters(m) -
         (tied ? double(m.vocab) * m.hidden : 0.0);
}

int dtype_bytes(DType d) { return d == DType::kFp32 ? 4 : 2; }

const char* to_string(DType d) {
  switch (d) {
    case DType::kBf16: return "bf16";
    case DType::kFp16: return "fp16";
    case DType::kFp32: return "fp32";
  }
  return "?";
}

const char* to_string(Mlp m) { return m == Mlp::kSwiGlu ? "swiglu" : "gelu"; }

DType parse_dtype(const std::string& text) {
  if (text == "bf16") return DType::kBf16;
  if (text == "fp16") return DType::kFp16;
  if (text == "fp32") return DType::kFp32;
  throw InputError("model.dtype: unknown dtype \"" + text + "\" (choose bf16, fp16 or fp32)");
}

}  // namespace optpipe::gen
