#include "cli/cmd_generate.h"

#include <cstdio>
#include <iostream>
#include <memory>
#include <string>

#include "cli/cmd_partition.h"
#include "cli/exit_codes.h"
#include "cli/generator_flags.h"
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
  GeneratorFlags flags;  // the model and cluster (cli/generator_flags.h, shared with partition)
  std::string split, output = "-", partition;
  double time_limit = 60;  // --partition auto's search
  bool list_presets = false, quiet = false;
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
  gen::GenerateRequest r = generator_request(a.flags, cmd);
  if (!a.split.empty()) r.split = gen::parse_split(a.split);
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
  add_generator_flags(cmd, args->flags, true);
  cmd->add_option("--split", args->split, "layers per stage, e.g. 4,4,4,4 (default: even, or the Zero Bubble split)");
  cmd->add_option("--partition", args->partition,
                  "auto: choose the split jointly with the schedule (optpipe partition; the default split, uniform and "
                  "Megatron-style splits and the search's, each solved) and write the best one's instance")
      ->check(CLI::IsMember({"auto"}));
  cmd->add_option("--time-limit", args->time_limit, "seconds for --partition auto's search (default 60)")
      ->check(more_than(0));
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
