// Transformer model shapes for the instance generator: the explicit shape, its validation, and
// the presets (GPT-3-style and Llama-style decoders).
//
// Sources of the presets:
//   - GPT-3-style 1.5B, 6.2B, 14.6B, 28.3B: the Zero Bubble paper's Table 3 (Qi et al.,
//     arXiv 2401.10241): layers, heads, hidden, sequence 1024 and its micro-batch sizes. These
//     are the sizes the OptPipe paper (arXiv 2510.05186) calls "GPT-3-like ... up to 14.2B"; its
//     own table is not recoverable, 14.6B is the nearest published configuration.
//   - GPT-3 2.7B and 6.7B: Brown et al., "Language Models are Few-Shot Learners" (arXiv
//     2005.14165), Table 2.1 (sequence 2048).
//   - Llama-2 7B and 13B: Touvron et al., arXiv 2307.09288, and the released configs (hidden
//     4096/5120, 32/40 layers and heads, SwiGLU FFN 11008/13824, vocabulary 32000, context 4096).
// Vocabulary 50257 for the GPT models is GPT-2's BPE, as Megatron-LM's GPT runs use.
#pragma once

#include <string>
#include <vector>

namespace optpipe::gen {

// The feed-forward block: GPT's two matrices h x f with GeLU, or Llama's gated SwiGLU with three
// (gate, up, down).
enum class Mlp { kGelu, kSwiGlu };
// Training precision of activations and the matmul rate used; bf16 and fp16 behave the same.
enum class DType { kBf16, kFp16, kFp32 };

struct ModelShape {
  std::string name = "custom";  // preset name, or "custom"
  int layers = 0;               // transformer layers
  int hidden = 0;               // h
  int heads = 0;                // a (hidden % heads == 0)
  int ffn = 0;                  // f, the FFN inner size (GPT: 4h)
  int vocab = 0;                // V
  int seq = 0;                  // s, tokens per sequence
  int micro_batch = 0;          // b, sequences per microbatch
  Mlp mlp = Mlp::kGelu;
  DType dtype = DType::kBf16;
  bool learned_positions = true;  // GPT: a learned s x h position table on the first stage; Llama: RoPE
  bool dropout = true;            // GPT keeps dropout masks (1 byte per element); Llama trains without dropout
};

struct ModelPreset {
  ModelShape shape;
  std::string params;  // "1.5B": the nominal size
  std::string source;  // where the shape comes from
};

// Every preset, in the order --list-presets shows them.
const std::vector<ModelPreset>& model_presets();
// nullptr when there is no preset of that name.
const ModelPreset* find_model_preset(const std::string& name);
// "gpt3-1.5b, gpt3-2.7b, ..." for help texts and error messages.
std::string model_preset_names();

// Throws InputError naming the field ("model.heads: ...") when the shape is not a transformer:
// a size <= 0, heads not dividing hidden.
void validate_shape(const ModelShape& shape);

// Parameters of one transformer layer (weights and biases, norms included). O(1).
double layer_parameters(const ModelShape& shape);
// Parameters of the first stage's extras (token embedding, learned positions).
double embedding_parameters(const ModelShape& shape);
// Parameters of the last stage's extras (final norm, output projection V x h; a tied GPT
// embedding is a second copy there, as in Megatron-LM pipelines).
double output_parameters(const ModelShape& shape);
// Whole model, as counted by the three functions above (the tied copy counted once).
double total_parameters(const ModelShape& shape);

int dtype_bytes(DType dtype);
const char* to_string(DType dtype);
const char* to_string(Mlp mlp);
// Throws InputError("model.dtype: ...") for anything but bf16, fp16, fp32.
DType parse_dtype(const std::string& text);

}  // namespace optpipe::gen
