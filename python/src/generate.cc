// optpipe.generate(): an instance from a model and a cluster (instances/generator/), with the
// same fields and defaults as `optpipe generate`; the request is resolved by the library
// (generate_request.h), so the preset, the overrides and the errors are the command's.
#include <optional>
#include <sstream>
#include <string>
#include <variant>
#include <vector>

#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/variant.h>
#include <nanobind/stl/vector.h>

#include "instances/generator/generate.h"
#include "instances/generator/generate_request.h"
#include "python/src/bindings.h"

namespace optpipe::python {
namespace {

using BytesArg = std::variant<std::string, double>;

// A byte amount given as text ("40GiB", "3act") or as a number of bytes, as text with its unit
// (the generator's flags want one: a bare "60" on the command line is refused).
std::string bytes_text(const BytesArg& value) {
  if (const auto* text = std::get_if<std::string>(&value)) return *text;
  std::ostringstream out;
  out.precision(17);
  out << std::get<double>(value) << "B";
  return out.str();
}

Instance run(const std::optional<std::string>& model, std::optional<int> devices, std::optional<int> microbatches,
             const std::string& placement, const BytesArg& memory_limit, const std::string& gpu,
             const std::vector<double>& offload_levels, const std::vector<int>& split, bool split_backward,
             const std::string& name, std::optional<int> layers, std::optional<int> hidden, std::optional<int> heads,
             std::optional<int> ffn, std::optional<int> vocab, std::optional<int> seq, std::optional<int> micro_batch,
             const std::optional<std::string>& mlp, const std::optional<std::string>& dtype,
             std::optional<double> utilization, const std::string& recompute, bool flash_attention,
             double bytes_per_param, const std::optional<BytesArg>& workspace, int tensor_parallel,
             bool sequence_parallel, int data_parallel, int zero) {
  gen::GenerateRequest r;
  r.model = model.value_or("");
  r.devices = devices;
  r.microbatches = microbatches;
  r.placement = placement;
  r.memory_limit = bytes_text(memory_limit);
  r.gpu = gpu;
  r.offload_levels = offload_levels;
  r.split = split;
  r.split_backward = split_backward;
  r.name = name;
  r.layers = layers;
  r.hidden = hidden;
  r.heads = heads;
  r.ffn = ffn;
  r.vocab = vocab;
  r.seq = seq;
  r.micro_batch = micro_batch;
  r.mlp = mlp;
  r.dtype = dtype;
  r.utilization = utilization;
  r.recompute = recompute;
  r.flash_attention = flash_attention;
  r.bytes_per_param = bytes_per_param;
  if (workspace) r.workspace = bytes_text(*workspace);
  r.tensor_parallel = tensor_parallel;
  r.sequence_parallel = sequence_parallel;
  r.data_parallel = data_parallel;
  r.zero_stage = zero;
  gen::Generated g = gen::generate(gen::resolve(r));
  for (const auto& w : g.warnings) warn(w);
  return std::move(g.instance);
}

}  // namespace

void bind_generate(nb::module_& m) {
  m.def("generate", &run, nb::arg("model") = nb::none(), nb::kw_only(), nb::arg("devices") = nb::none(),
        nb::arg("microbatches") = nb::none(), nb::arg("placement") = "one", nb::arg("memory_limit") = "gpu",
        nb::arg("gpu") = "h100-sxm", nb::arg("offload_levels") = std::vector<double>{0.0, 1.0},
        nb::arg("split") = std::vector<int>{}, nb::arg("split_backward") = true, nb::arg("name") = "",
        nb::arg("layers") = nb::none(), nb::arg("hidden") = nb::none(), nb::arg("heads") = nb::none(),
        nb::arg("ffn") = nb::none(), nb::arg("vocab") = nb::none(), nb::arg("seq") = nb::none(),
        nb::arg("micro_batch") = nb::none(), nb::arg("mlp") = nb::none(), nb::arg("dtype") = nb::none(),
        nb::arg("utilization") = nb::none(), nb::arg("recompute") = "none", nb::arg("flash_attention") = true,
        nb::arg("bytes_per_param") = 0.0, nb::arg("workspace") = nb::none(), nb::arg("tensor_parallel") = 1,
        nb::arg("sequence_parallel") = true, nb::arg("data_parallel") = 1, nb::arg("zero") = 0,
        "An instance for a transformer model on a GPU cluster, as `optpipe generate` writes it (the cost\n"
        "model: instances/README.md). `model` is a preset ('gpt3-1.5b', 'llama2-7b', ...; an unknown name\n"
        "lists them) or None for an explicit shape (layers, hidden, heads, vocab and seq; ffn defaults to\n"
        "4 x hidden). Shape fields given with a preset override it. devices and microbatches are required.\n"
        "\n"
        "placement: 'one' (a stage per GPU), 'v' or 'loop' (two stages per GPU). memory_limit: 'gpu' (the\n"
        "GPU's memory), bytes as a number or text ('40GiB'), or 'Nact' (static memory + N of the largest\n"
        "activations). gpu: 'h100-sxm' or 'a100-sxm'. offload_levels: allowed offload fractions (0 is\n"
        "added). split: layers per stage (default even). mlp: 'gelu' or 'swiglu'. dtype: 'bf16', 'fp16' or\n"
        "'fp32'. recompute: 'none', 'selective' or 'full'. workspace: bytes per GPU (default 1 GiB).\n"
        "tensor_parallel: GPUs per pipeline device splitting every layer (Megatron-LM, within a node;\n"
        "sequence_parallel with it); data_parallel: pipeline replicas, over which zero=1 shards the\n"
        "optimizer state (the command's --tensor-parallel, --no-sequence-parallel, --data-parallel, --zero).\n"
        "Raises InputError naming the field; a device that cannot hold one activation gives a UserWarning.");
}

}  // namespace optpipe::python
