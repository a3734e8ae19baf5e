#include "cli/cmd_plan.h"

#include <charconv>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "cli/exit_codes.h"
#include "cli/generator_flags.h"
#include "cli/stop_signal.h"
#include "cli/validators.h"
#include "instances/generator/generate.h"
#include "model/error.h"
#include "model/instance_io.h"
#include "model/schedule_io.h"
#include "plan/plan_report.h"
#include "plan/plan_runner.h"

namespace optpipe::cli {
namespace {

struct PlanArgs {
  GeneratorFlags gen;
  int gpus = 0, global_batch = 0, zero = 1, threads = 0, rows = 20, partition_top = 2;
  std::string placements = "one,v,loop", tensor_parallel, pipeline_parallel, micro_batch_sizes = "1,2,4,8";
  std::string recompute = "none,selective,full", output, instance_out, schedule_out, format = "text";
  double time_limit = 120;
  bool no_offload = false, quiet = false;
};

std::vector<std::string> items(const std::string& text) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : text + ",") {
    if (c == ',') {
      if (!cur.empty()) out.push_back(cur);
      cur.clear();
    } else if (c != ' ') {
      cur += c;
    }
  }
  return out;
}

std::vector<int> int_list(const std::string& text, const std::string& flag) {
  std::vector<int> out;
  for (const std::string& item : items(text)) {
    int v = 0;
    const auto [ptr, ec] = std::from_chars(item.data(), item.data() + item.size(), v);
    if (ec != std::errc() || ptr != item.data() + item.size() || v < 1) {
      throw InputError(flag + ": \"" + item + "\" is not a positive integer (expected e.g. 1,2,4)");
    }
    out.push_back(v);
  }
  if (out.empty() && !text.empty()) throw InputError(flag + ": give at least one value");
  return out;
}

// The model, GPU and cost options from the shared generator flags, the rest from plan's own.
plan::PlanRequest plan_request(const PlanArgs& a, const CLI::App& cmd) {
  if (a.gen.model.empty() && cmd.count("--layers") == 0) {
    throw InputError("model: give a preset (--model) or an explicit shape (--layers, --hidden, --heads, --vocab, --seq)");
  }
  if (cmd.count("--gpus") == 0) throw InputError("gpus: required (the number of GPUs to run on)");
  if (cmd.count("--global-batch") == 0) throw InputError("global-batch: required (sequences per iteration)");
  if (a.gen.memory.size() > 3 && a.gen.memory.substr(a.gen.memory.size() - 3) == "act") {
    throw InputError("memory-limit: \"" + a.gen.memory + "\" depends on the layout; give gpu or a size (e.g. 40GiB)");
  }
  if (a.no_offload && cmd.count("--offload-levels") > 0) {
    throw InputError("offload-levels: --no-offload allows no offload; give one or the other");
  }
  gen::GenerateRequest r = generator_request(a.gen, cmd);
  r.devices = 1;       // the option's
  r.microbatches = 1;  // the option's
  if (a.no_offload) r.offload_levels = {0.0};
  plan::PlanRequest q;
  q.base = gen::resolve(r);
  q.gpus = a.gpus;
  q.global_batch = a.global_batch;
  q.zero_stage = a.zero;
  q.placements.clear();
  for (const std::string& p : items(a.placements)) q.placements.push_back(gen::parse_placement(p));
  q.tensor_parallel = int_list(a.tensor_parallel, "tensor-parallel");
  q.pipeline_parallel = int_list(a.pipeline_parallel, "pipeline-parallel");
  q.micro_batch_sizes = int_list(a.micro_batch_sizes, "micro-batch-sizes");
  q.recompute.clear();
  for (const std::string& m : items(a.recompute)) q.recompute.push_back(gen::parse_recompute(m));
  return q;
}

void write_outputs(const PlanArgs& a, const plan::PlanResult& r, const std::string& json) {
  if (!a.output.empty()) write_text_file(a.output, json);
  if (r.best < 0) throw NegativeAnswer("no option was solved to a schedule within the time limit; give more --time-limit");
  const plan::OptionResult& best = r.options[r.best];
  if (!a.instance_out.empty()) write_text_file(a.instance_out, gen::generated_instance_json(*best.instance));
  if (!a.schedule_out.empty()) save_schedule(*best.schedule, a.schedule_out);
  if (a.quiet) return;
  if (!a.output.empty()) std::cerr << "wrote " << a.output << " (the comparison, optpipe-plan/1)\n";
  if (!a.instance_out.empty()) std::cerr << "wrote " << a.instance_out << " (the best option's instance)\n";
  if (!a.schedule_out.empty()) std::cerr << "wrote " << a.schedule_out << " (its schedule)\n";
}

void run(const PlanArgs& a, const CLI::App& cmd) {
  for (const std::string* path : {&a.output, &a.instance_out, &a.schedule_out}) {
    if (!path->empty()) check_writable(*path);
  }
  const plan::PlanRequest q = plan_request(a, cmd);
  const StopSignalGuard signals;
  plan::PlanOptions o;
  o.time_limit = a.time_limit;
  o.threads = a.threads;
  o.stop = signals.flag();
  o.partition_top = a.partition_top;
  if (!a.quiet) o.progress = [](const std::string& line) { std::cerr << "plan: " << line << std::endl; };
  plan::PlanResult r;
  try {
    r = plan::run_plan(q, o);
  } catch (const plan::NothingFits& e) {
    throw NegativeAnswer(e.what());
  }
  const std::string json = plan::plan_json(q, r).dump(1) + "\n";
  std::cout << (a.format == "json" ? json : plan::plan_table_text(q, r, a.rows));
  std::cout.flush();
  write_outputs(a, r, json);
}

void add_flags(CLI::App* cmd, PlanArgs& a) {
  add_model_flags(cmd, a.gen);
  cmd->add_option("--gpus", a.gpus, "GPUs to run on: tensor x pipeline x data parallel (required)")
      ->check(more_than(0));
  cmd->add_option("--global-batch", a.global_batch,
                  "sequences per iteration = micro-batch size x microbatches x data-parallel replicas (required)")
      ->check(more_than(0));
  cmd->add_option("--gpu", a.gen.gpu, "GPU preset: h100-sxm (default) or a100-sxm (memory, PCIe, NVLink, nodes of 8)");
  cmd->add_option("--memory-limit", a.gen.memory, "per-GPU limit: gpu (default: the preset's memory) or a size (40GiB)");
  cmd->add_option("--offload-levels", a.gen.offload_levels, "allowed offload fractions (default 0,1)");
  cmd->add_flag("--no-offload", a.no_offload, "for a runtime without offload: offload levels [0] only");
  cmd->add_flag("--unsplit-backward", a.gen.unsplit, "fused backward (no W ops)");
  cmd->add_option("--placements", a.placements, "placements to try (default one,v,loop)");
  cmd->add_option("--tensor-parallel", a.tensor_parallel,
                  "tensor-parallel degrees to try (default: each dividing the GPUs, 8, the heads and the FFN)");
  cmd->add_option("--pipeline-parallel", a.pipeline_parallel, "pipeline devices to try (default: each divisor)");
  cmd->add_option("--micro-batch-sizes", a.micro_batch_sizes, "micro-batch sizes to try (default 1,2,4,8)");
  cmd->add_option("--recompute", a.recompute, "recomputation modes to try (default none,selective,full)");
  cmd->add_option("--zero", a.zero, "ZeRO stage over the data-parallel replicas: 1 (default, optimizer state "
                                    "sharded) or 0")->check(CLI::IsMember({0, 1}));
  cmd->add_option("--time-limit", a.time_limit, "seconds for the whole plan, every solve included (default 120)")
      ->check(more_than(0));
  cmd->add_option("--threads", a.threads, "solver threads (default: all)")->check(at_least(0));
  cmd->add_option("--partition-top", a.partition_top,
                  "best options given the partition search after the first pass (default 2; 0: none)")
      ->check(at_least(0));
  cmd->add_option("--format", a.format, "the table as text (default) or json")->check(CLI::IsMember({"text", "json"}));
  cmd->add_option("-o,--output", a.output, "write the comparison as JSON (optpipe-plan/1) here");
  cmd->add_option("--instance-out", a.instance_out, "write the best option's instance here");
  cmd->add_option("--schedule-out", a.schedule_out, "write its schedule here");
  cmd->add_option("--rows", a.rows, "solved options shown in the text table (default 20)")->check(more_than(0));
  cmd->add_flag("-q,--quiet", a.quiet, "no progress on standard error");
}

}  // namespace

void add_plan_command(CLI::App& app) {
  auto args = std::make_shared<PlanArgs>();
  auto* cmd = app.add_subcommand(
      "plan", "Plan a run: compare tensor x pipeline x data parallel layouts, placements, splits, micro-batch sizes, "
              "recomputation and offload by their time per global batch");
  add_flags(cmd, *args);
  cmd->footer(
      "Example:\n"
      "  optpipe plan --model llama2-13b --gpus 8 --global-batch 64 --time-limit 120 \\\n"
      "      -o plan.json --instance-out best.json --schedule-out best.schedule.json\n"
      "Every option (TP x PP x DP = GPUs, TP within a node; one stage per GPU, V or loop; micro-batch size x "
      "microbatches x DP = the global batch; recompute none, selective, full) is screened by its memory floor and a "
      "lower bound on its time, then the promising ones are solved briefly, best bound first, and the best few get the "
      "partition search. Time per global batch = the schedule's makespan + the data-parallel gradient sync (ZeRO-1). "
      "Progress goes to standard error.\n"
      "Exit codes: 0 a plan was found, 1 no option fits the memory limit (the message names the closest option and the "
      "stage whose memory floor is over the limit, by how much), 2 bad input.");
  cmd->callback([args, cmd]() {
    run(*args, *cmd);
    throw CLI::Success();
  });
}

}  // namespace optpipe::cli
