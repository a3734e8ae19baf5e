#include "cli/cmd_generate.h"

#include <cstdio>
#include <iostream>
#include <memory>
#include <string>

#include "cli/cmd_partition.h"
#include "cli/exit_codes.h"
#include "cli/json_output.h"
#include "cli/validators.h"
#include "model/bytes.h"
#include "model/error.h"
#include "model/instance_io.h"
#include "instances/generator/generate.h"
#include "instances/generator/generated_json.h"
#include "instances/generator/generate_request.h"
#include "instances/generator/summary.h"
#include "partition/partition_report.h"
#include "partition/reference_splits.h"

namespace optpipe::cli {
namespace {

struct GenerateArgs {
  std::string model, dtype, mlp, gpu = "h100-sxm", placement = "one", memory = "gpu", recompute = "none";
  std::string offload_levels = "0,1", split, name, output = "-", workspace, partition;
  double time_limit = 60;  // --partition auto's search
  int layers = 0, hidden = 0, heads = 0, ffn = 0, vocab = 0, seq = 0, micro_batch = 0;
  int devices = 0, microbatches = 0;
  double utilization = 0, bytes_per_param = 0;
  bool list_presets = false, no_flash = false, unsplit = false, quiet = false;
  std::string format = "text";  // json: one document on stdout, the instance in it (docs/json.md)
};

void print_presets() {
  std::cout << "models (--model NAME; explicit flags such as --micro-batch override a preset's field):\n";
  for (const auto& p : gen::model_presets()) {
    const auto& m = p.shape;
    char line[256];
    std::snprintf(line, sizeof line, "  %-11s %5s  %2d layers, h %5d, %2d heads, ffn %5d %-6s vocab %5d, seq %4d, micro-batch %d  (%s)\n",
                  m.name.c_str(), p.params.c_str(), m.layers, m.hidden, m.heads, m.ffn, gen::to_string(m.mlp), m.vocab,
                  m.seq, m.micro_batch, p.source.c_str());
    std::cout << line;
  }
  std::cout << "GPUs (--gpu NAME):\n";
  for (const auto& g : gen::gpu_presets()) {
    char line[320];
    std::snprintf(line, sizeof line,
                  "  %-9s %s: %.1f TFLOP/s bf16 dense x utilisation %.2f, %s, PCIe %.0f GB/s per direction "
                  "(%d GPUs per switch), NVLink %.0f GB/s, network %.0f GB/s\n",
                  g.name.c_str(), g.description.c_str(), g.peak_flops / 1e12, g.utilization,
                  format_bytes(g.memory_bytes).c_str(), g.pcie_bandwidth / 1e9, g.gpus_per_pcie_switch,
                  g.nvlink_bandwidth / 1e9, g.network_bandwidth / 1e9);
    std::cout << line;
  }
}

// The flags as a generator request (instances/generator/generate_request.h): a flag counts as
// given when it is on the command line; resolve() combines it with the preset.
gen::GenerateOptions to_options(const GenerateArgs& a, const CLI::App& cmd) {
  gen::GenerateRequest r;
  auto given = [&](const char* flag) { return cmd.count(flag) > 0; };
  r.model = a.model;
  if (given("--layers")) r.layers = a.layers;
  if (given("--hidden")) r.hidden = a.hidden;
  if (given("--heads")) r.heads = a.heads;
  if (given("--ffn")) r.ffn = a.ffn;
  if (given("--vocab")) r.vocab = a.vocab;
  if (given("--seq")) r.seq = a.seq;
  if (given("--micro-batch")) r.micro_batch = a.micro_batch;
  if (given("--mlp")) r.mlp = a.mlp;
  if (given("--dtype")) r.dtype = a.dtype;
  r.gpu = a.gpu;
  if (given("--utilization")) r.utilization = a.utilization;
  if (given("--devices")) r.devices = a.devices;
  if (given("--microbatches")) r.microbatches = a.microbatches;
  r.placement = a.placement;
  r.memory_limit = a.memory;
  r.recompute = a.recompute;
  r.flash_attention = !a.no_flash;
  r.bytes_per_param = a.bytes_per_param;
  r.workspace = a.workspace;
  r.offload_levels = gen::parse_offload_levels(a.offload_levels);
  if (!a.split.empty()) r.split = gen::parse_split(a.split);
  r.split_backward = !a.unsplit;
  r.name = a.name;
  return gen::resolve(r);
}

// --partition auto: the split of the partition search (the memory limit resolved as it
// resolved it, so that the file is the search's instance).
void choose_split(gen::GenerateOptions& options, double time_limit, bool quiet) {
  if (!options.split.empty()) throw InputError("split: --split and --partition auto exclude each other");
  const auto model = partition::PartitionModel::from_generator(options);
  const auto r = run_partition_search(model, time_limit, 0, quiet);
  if (r.best < 0) throw NegativeAnswer("--partition auto: no split was solved to a schedule within the time limit");
  options.split = r.trials[r.best].split;
  options.memory = gen::MemoryLimit{gen::MemoryLimit::Kind::kBytes, model.memory_limit()};
  if (!quiet) {
    const std::string vs = partition::versus_default(r);
    char makespan[32];
    std::snprintf(makespan, sizeof makespan, "%.3f", r.trials[r.best].makespan);
    std::cerr << "partition: split " << partition::split_text(options.split) << ", makespan " << makespan << " ms"
              << (vs.empty() ? "" : "; " + vs) << "\n";
  }
}

// --list-presets, or the instance: to -o (standard output by default) with the summary on
// standard error, or with --format json one document on standard output holding the instance
// and the summary's fields (generated_json.h), the instance also written to -o FILE if given.
// Warnings go to standard error either way.
void run_generate(const GenerateArgs& a, const CLI::App& cmd) {
  const bool json = a.format == "json";
  if (a.list_presets) {
    if (!json) return print_presets();
    nlohmann::json doc{{"format", "optpipe-presets/1"}};
    doc.update(gen::presets_json());
    return print_json(doc);
  }
  gen::GenerateOptions options = to_options(a, cmd);
  if (cmd.count("--time-limit") > 0 && a.partition != "auto") {
    throw InputError("--time-limit: the time of --partition auto's search; give --partition auto or leave it out");
  }
  if (a.partition == "auto") choose_split(options, a.time_limit, a.quiet);
  const gen::Generated g = gen::generate(options);
  if (!json || a.output != "-") write_text_file(a.output, gen::generated_instance_json(g.instance));
  if (!json && !a.quiet) {
    std::cerr << gen::generated_summary(options, g);
    if (a.output != "-") std::cerr << "wrote " << a.output << "\n";
  }
  for (const auto& w : g.warnings) std::cerr << "optpipe: warning: " << w << "\n";
  if (!json) return;
  nlohmann::json doc = report_header("optpipe-generate-report/1", g.instance.name);
  doc["output"] = a.output != "-" ? nlohmann::json(a.output) : nlohmann::json(nullptr);
  doc.update(gen::generated_json(options, g));
  print_json(doc);
}

}  // namespace

void add_generate_command(CLI::App& app) {
  auto args = std::make_shared<GenerateArgs>();
  auto* cmd = app.add_subcommand(
      "generate", "Write an instance for a transformer model on a GPU cluster (cost model: instances/README.md)");
  cmd->add_option("--model", args->model, "model preset (see --list-presets), e.g. gpt3-1.5b, llama2-7b");
  cmd->add_option("--layers", args->layers, "transformer layers (explicit shape, or override the preset's)");
  cmd->add_option("--hidden", args->hidden, "hidden size h");
  cmd->add_option("--heads", args->heads, "attention heads (must divide --hidden)");
  cmd->add_option("--ffn", args->ffn, "FFN inner size (default 4 x hidden for an explicit shape)");
  cmd->add_option("--vocab", args->vocab, "vocabulary size");
  cmd->add_option("--seq", args->seq, "sequence length in tokens");
  cmd->add_option("--micro-batch", args->micro_batch, "sequences per microbatch (default: the preset's, or 1)");
  cmd->add_option("--mlp", args->mlp, "gelu (GPT, with dropout; default) or swiglu (Llama, no dropout)")
      ->check(CLI::IsMember({"gelu", "swiglu"}));
  cmd->add_option("--dtype", args->dtype, "bf16 (default), fp16 or fp32")->check(CLI::IsMember({"bf16", "fp16", "fp32"}));
  cmd->add_option("--devices", args->devices, "number of GPUs in the pipeline (required)");
  cmd->add_option("--placement", args->placement,
                  "one (a stage per GPU, default), v (2 stages per GPU, V shape: ZB-V) or loop (2 per GPU: interleaved 1F1B)")
      ->check(CLI::IsMember({"one", "v", "loop"}));
  cmd->add_option("--microbatches", args->microbatches, "microbatches per iteration (required)");
  cmd->add_option("--gpu", args->gpu, "GPU preset: h100-sxm (default) or a100-sxm");
  cmd->add_option("--memory-limit", args->memory,
                  "per-GPU limit: gpu (the GPU's memory, default), a size with its unit (40GiB, 40G, 40gib: binary; "
                  "40GB: decimal), or Nact (static memory + N of the largest activations, e.g. 3act)");
  cmd->add_option("--utilization", args->utilization, "achievable fraction of the GPU's peak rate (default 0.5)");
  cmd->add_option("--recompute", args->recompute, "activation recomputation: none (default), selective or full")
      ->check(CLI::IsMember({"none", "selective", "full"}));
  cmd->add_flag("--no-flash-attention", args->no_flash, "keep the s x s attention scores (the 5as term of M_B)");
  cmd->add_option("--offload-levels", args->offload_levels, "allowed offload fractions (default 0,1), e.g. 0,0.5,1");
  cmd->add_option("--split", args->split, "layers per stage, e.g. 4,4,4,4 (default: even, or the Zero Bubble split)");
  cmd->add_option("--partition", args->partition,
                  "auto: choose the split jointly with the schedule (optpipe partition; the default split, uniform and "
                  "Megatron-style splits and the search's, each solved) and write the best one's instance")
      ->check(CLI::IsMember({"auto"}));
  cmd->add_option("--time-limit", args->time_limit, "seconds for --partition auto's search (default 60)")
      ->check(more_than(0));
  cmd->add_flag("--unsplit-backward", args->unsplit, "fused backward (split_backward false: no W ops)");
  cmd->add_option("--workspace", args->workspace, "per-GPU workspace in the static memory (default 1GiB)");
  cmd->add_option("--bytes-per-param", args->bytes_per_param,
                  "static bytes per parameter (default 18: bf16 weights, fp32 grads, fp32 master + Adam; fp32: 16)");
  cmd->add_option("--name", args->name, "instance name (default MODEL[-v|-loop]-DxM)");
  cmd->add_option("-o,--output", args->output, "instance file to write (default - : standard output)");
  cmd->add_flag("--list-presets", args->list_presets, "list the model and GPU presets and exit");
  cmd->add_flag("-q,--quiet", args->quiet, "no summary on standard error");
  add_format_option(cmd, args->format);
  cmd->footer(
      "Examples:\n"
      "  optpipe generate --model gpt3-1.5b --devices 8 --microbatches 24 -o gpt.json\n"
      "  optpipe generate --model llama2-7b --devices 8 --placement v --microbatches 32 --memory-limit 40GiB\n"
      "  optpipe generate --layers 16 --hidden 1024 --heads 16 --vocab 32000 --seq 2048 --devices 4 --microbatches 8\n"
      "The summary (per-stage F/B/W ms, activations, static memory, whether 1F1B fits) goes to standard error;\n"
      "with --format json, instance and summary are one document on standard output.");
  cmd->callback([args, cmd]() {
    run_generate(*args, *cmd);
    std::cout.flush();
    throw CLI::Success();
  });
}

}  // namespace optpipe::cli
