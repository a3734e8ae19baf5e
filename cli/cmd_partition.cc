#include "cli/cmd_partition.h"

#include <atomic>
#include <cstdio>
#include <iostream>
#include <memory>
#include <optional>
#include <string>

#include "cli/exit_codes.h"
#include "cli/generator_flags.h"
#include "cli/stop_signal.h"
#include "cli/validators.h"
#include "instances/generator/generate.h"
#include "model/error.h"
#include "model/instance_io.h"
#include "model/schedule_io.h"
#include "partition/layer_profile.h"
#include "partition/partition_report.h"
#include "partition/placement_search.h"

namespace optpipe::cli {
namespace {

struct PartitionArgs {
  GeneratorFlags gen;
  std::string profile, output, schedule_out, profile_out, format = "text";
  double time_limit = 60;
  int threads = 0;
  bool quiet = false;
};

// A profile's cluster from the cluster flags; the model-shape flags do not apply to it.
partition::ProfileCluster profile_cluster(const GeneratorFlags& a, const CLI::App& cmd) {
  for (const char* flag : {"--model", "--layers", "--hidden", "--heads", "--ffn", "--vocab", "--seq", "--micro-batch",
                           "--mlp", "--dtype", "--utilization", "--recompute", "--no-flash-attention", "--workspace",
                           "--bytes-per-param", "--tensor-parallel", "--data-parallel", "--zero",
                           "--no-sequence-parallel"}) {
    if (cmd.count(flag) > 0) {
      throw InputError(std::string(flag) + ": describes a model; --profile gives the layers' measured costs instead "
                       "(give one or the other)");
    }
  }
  if (cmd.count("--devices") == 0) throw InputError("devices: required (the number of GPUs in the pipeline)");
  if (cmd.count("--microbatches") == 0) throw InputError("microbatches: required (microbatches per iteration)");
  partition::ProfileCluster c;
  c.devices = a.devices;
  c.microbatches = a.microbatches;
  c.placement = gen::parse_placement(a.placement);
  c.memory = gen::parse_memory_limit(a.memory);
  const gen::GpuPreset* gpu = gen::find_gpu_preset(a.gpu);
  if (!gpu) throw InputError("gpu: unknown preset \"" + a.gpu + "\" (choose one of: " + gen::gpu_preset_names() + ")");
  c.gpu = *gpu;
  c.offload_levels = gen::parse_offload_levels(a.offload_levels);
  c.split_backward = !a.unsplit;
  c.name = a.name;
  return c;
}

// The model with the flags' placement and memory limit, or with `placement` and `limit_bytes`
// where given (--placement auto).
partition::PartitionModel build_model(const PartitionArgs& a, const CLI::App& cmd,
                                      std::optional<Placement> placement = std::nullopt,
                                      std::optional<double> limit_bytes = std::nullopt) {
  GeneratorFlags flags = a.gen;
  if (placement) flags.placement = gen::placement_word(*placement);
  if (limit_bytes) {
    char b[48];
    std::snprintf(b, sizeof b, "%.17gB", *limit_bytes);  // exact: the same limit to the byte
    flags.memory = b;
  }
  if (!a.profile.empty()) {
    return partition::PartitionModel::from_profile(partition::load_layer_profile(a.profile), profile_cluster(flags, cmd));
  }
  if (flags.model.empty() && cmd.count("--layers") == 0) {
    throw InputError("model: give a preset (--model), an explicit shape (--layers, --hidden, ...) or a layer profile "
                     "(--profile FILE)");
  }
  return partition::PartitionModel::from_generator(gen::resolve(generator_request(flags, cmd)));
}

partition::PartitionOptions search_options(double time_limit, int threads, bool quiet, const std::atomic<bool>* stop) {
  partition::PartitionOptions o;
  o.time_limit = time_limit;
  o.threads = threads;
  o.stop = stop;
  if (!quiet) o.progress = [](const std::string& line) { std::cerr << "partition: " << line << std::endl; };
  return o;
}

// -o and --schedule-out: the best split's instance and schedule.
void write_best(const PartitionArgs& a, const partition::PartitionResult& r) {
  if (!r.instance || !r.schedule) throw NegativeAnswer("no split was solved to a schedule within the time limit");
  if (!a.output.empty()) write_text_file(a.output, gen::generated_instance_json(*r.instance));
  if (!a.schedule_out.empty()) save_schedule(*r.schedule, a.schedule_out);
  if (!a.quiet) {
    if (!a.output.empty()) std::cerr << "wrote " << a.output << " (the best split's instance)\n";
    if (!a.schedule_out.empty()) std::cerr << "wrote " << a.schedule_out << " (its schedule)\n";
  }
}

// --placement auto: one stage per GPU, V and loop, each with its share of the time.
void run_placements(const PartitionArgs& a, const CLI::App& cmd) {
  const StopSignalGuard signals;
  const partition::PartitionOptions o = search_options(a.time_limit, a.threads, a.quiet, signals.flag());
  partition::PlacementsResult r;
  try {
    r = partition::partition_placements(
        {Placement::kOnePerDevice, Placement::kV, Placement::kLoop},
        [&](Placement p, std::optional<double> limit) { return build_model(a, cmd, p, limit); }, o);
  } catch (const partition::NoSplitFits& e) {
    throw NegativeAnswer(e.what());
  }
  if (a.format == "json") {
    std::cout << partition::placements_json(r).dump(1) << "\n";
  } else {
    std::cout << partition::placements_table_text(r);
  }
  std::cout.flush();
  if (r.best < 0) throw NegativeAnswer("no split was solved to a schedule within the time limit");
  write_best(a, *r.runs[static_cast<std::size_t>(r.best)].result);
}

void run(const PartitionArgs& a, const CLI::App& cmd) {
  if (!a.output.empty()) check_writable(a.output);
  if (!a.schedule_out.empty()) check_writable(a.schedule_out);
  if (!a.profile_out.empty()) check_writable(a.profile_out);
  if (a.gen.placement == "auto") {
    if (!a.profile_out.empty()) {
      write_text_file(a.profile_out, partition::layer_profile_json(build_model(a, cmd, Placement::kOnePerDevice).profile()));
    }
    run_placements(a, cmd);
    return;
  }
  const partition::PartitionModel model = build_model(a, cmd);
  if (!a.profile_out.empty()) write_text_file(a.profile_out, partition::layer_profile_json(model.profile()));
  const partition::PartitionResult r = run_partition_search(model, a.time_limit, a.threads, a.quiet);
  if (a.format == "json") {
    std::cout << partition::partition_json(model, r).dump(1) << "\n";
  } else {
    std::cout << partition::partition_table_text(model, r);
  }
  std::cout.flush();
  write_best(a, r);
}

}  // namespace

partition::PartitionResult run_partition_search(const partition::PartitionModel& model, double time_limit, int threads,
                                                bool quiet) {
  // Ctrl-C and SIGTERM stop the search; the best split so far is still reported and written.
  const StopSignalGuard signals;
  try {
    return partition::partition_search(model, search_options(time_limit, threads, quiet, signals.flag()));
  } catch (const partition::NoSplitFits& e) {
    throw NegativeAnswer(e.what());
  }
}

void add_partition_command(CLI::App& app) {
  auto args = std::make_shared<PartitionArgs>();
  auto* cmd = app.add_subcommand(
      "partition", "Choose the layers of each stage jointly with the schedule: each split solved, the fastest kept");
  add_generator_flags(cmd, args->gen, true, true);
  cmd->add_option("--profile", args->profile,
                  "per-layer profile (optpipe-layer-profile/1: F, B, W ms, activation and static bytes per layer; "
                  "docs/partition.md) instead of a model");
  cmd->add_option("--profile-out", args->profile_out,
                  "write the layer profile used (e.g. the preset's per-layer costs) here, as a start for a measured one");
  cmd->add_option("-o,--output", args->output, "write the best split's instance here");
  cmd->add_option("--schedule-out", args->schedule_out, "write its solved schedule here");
  cmd->add_option("--time-limit", args->time_limit, "seconds for the whole search, every solve included (default 60)")
      ->check(more_than(0));
  cmd->add_option("--threads", args->threads, "solver threads (default: all)")->check(at_least(0));
  cmd->add_option("--format", args->format, "the table as text (default) or json")->check(CLI::IsMember({"text", "json"}));
  cmd->add_flag("-q,--quiet", args->quiet, "no progress on standard error");
  cmd->footer(
      "Examples:\n"
      "  optpipe partition --model gpt3-1.5b --devices 8 --microbatches 24 --memory-limit 3act --time-limit 30 \\\n"
      "      -o gpt.json --schedule-out gpt.schedule.json\n"
      "  optpipe partition --profile measured.json --devices 4 --microbatches 16 --memory-limit 40GiB --format json\n"
      "  optpipe partition --model gpt3-14.6b --devices 16 --microbatches 48 --memory-limit 1.5act --placement auto\n"
      "Each split (layers per stage, contiguous) is bounded cheaply first (busiest GPU's work x microbatches + "
      "pipeline fill; memory floor: static + the activations its stages must hold) and solved only if it can beat "
      "the best so far. The table compares the splits tried with the default, uniform and Megatron-style splits. "
      "--placement auto searches one stage per GPU, V and loop in turn under the same memory limit (Nact resolved on "
      "the first), each with the time left over the placements left, and keeps the fastest.\n"
      "Exit codes: 0 a split was found, 1 no split fits the memory limit (the message names the stage and by how "
      "much), 2 bad input.");
  cmd->callback([args, cmd]() {
    run(*args, *cmd);
    throw CLI::Success();
  });
}

}  // namespace optpipe::cli
