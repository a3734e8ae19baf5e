#include "cli/cmd_export.h"

#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cli/exit_codes.h"
#include "model/error.h"
#include "model/instance_io.h"
#include "model/schedule_io.h"
#include "model/torch_csv.h"
#include "model/validator.h"

namespace optpipe::cli {
namespace {

struct ExportArgs {
  std::string schedule, instance, format, output = "-";
  bool drop_offload = false, pad = false;
};

// --format, else from -o's extension (.csv: torch-csv), else the schedule JSON.
std::string infer_format(const ExportArgs& a) {
  if (!a.format.empty()) return a.format;
  const std::string ext = std::filesystem::path(a.output).extension().string();
  return ext == ".csv" ? "torch-csv" : "json";
}

// After --drop-offload: the file is written (a runtime with more memory may still use it), but
// a schedule that no longer fits is a negative answer (exit 1), not a success.
void refuse_if_it_no_longer_fits(const ExportArgs& a, const OffloadDropCost& cost) {
  if (cost.offloads == 0 || cost.after_feasible) return;
  throw NegativeAnswer("export: without its offloads the schedule no longer fits in memory" +
                       std::string(a.output == "-" ? "" : " (written to " + a.output + " anyway)") +
                       "; a runtime without offload needs more memory or another schedule");
}

void run_export(const ExportArgs& a) {
  const std::string format = infer_format(a);
  // With -o - the exported file goes to stdout, so the report goes to stderr.
  std::ostream& out = a.output == "-" ? std::cerr : std::cout;
  Schedule sch = load_schedule(a.schedule);
  std::optional<Instance> inst;
  if (!a.instance.empty()) {
    std::vector<std::string> warnings;
    inst = load_instance(a.instance, &warnings);
    for (const auto& w : warnings) std::cerr << "optpipe: warning: " << w << "\n";
  }
  if (format == "torch-csv") {
    if (!inst) throw InputError("export --format torch-csv needs --instance INSTANCE (for the placement and the backward split)");
    TorchCsvOptions o;
    o.drop_offload = a.drop_offload;
    o.pad_rows = a.pad;
    TorchCsvExport e;
    try {
      e = export_torch_csv(*inst, sch, o);
    } catch (const InputError& err) {
      throw InputError(a.schedule + ": " + err.what());
    }
    write_text_file(a.output, e.csv);
    if (e.cost) out << describe(*inst, *e.cost) << "\n";
    if (a.output != "-") {
      out << "wrote " << a.output << " (PyTorch pipelining CSV, compute_only: " << inst->num_devices() << " ranks, "
          << inst->num_stages() << " stages, " << inst->microbatches << " microbatches, "
          << (inst->split_backward ? "split backward as I and W" : "fused backward as B") << ")\n";
    }
    if (e.cost) refuse_if_it_no_longer_fits(a, *e.cost);
  } else {  // json
    if (inst) {
      const auto violations = check_structure(*inst, sch, 1);
      if (!violations.empty()) {
        throw InputError(a.schedule + ": the schedule does not fit the instance: [" + to_string(violations.front().rule) +
                         "] " + violations.front().message);
      }
    }
    std::optional<OffloadDropCost> cost;
    if (a.drop_offload && sch.has_offload()) {
      if (inst) {
        cost = offload_drop_cost(*inst, sch);
        out << describe(*inst, *cost) << "\n";
      }
      sch = without_offload(sch);
      if (!inst) out << "dropped the offloads (give --instance INSTANCE for what that costs)\n";
    }
    write_text_file(a.output, schedule_to_text(sch));
    if (a.output != "-") out << "wrote " << a.output << " (" << kScheduleFormat << ")\n";
    if (cost) refuse_if_it_no_longer_fits(a, *cost);
  }
  std::cout.flush();
}

}  // namespace

void add_export_command(CLI::App& app) {
  auto args = std::make_shared<ExportArgs>();
  auto* cmd = app.add_subcommand(
      "export", "Write a schedule for another runtime: PyTorch's pipelining CSV (torch-csv) or the schedule JSON");
  cmd->add_option("SCHEDULE", args->schedule, "schedule file (optpipe-schedule/1)")->required();
  cmd->add_option("--format", args->format,
                  "torch-csv (PyTorch _PipelineScheduleRuntime._load_csv, compute_only) or json (default: torch-csv "
                  "when -o ends in .csv, else json)")
      ->check(CLI::IsMember({"torch-csv", "json"}));
  cmd->add_option("--instance", args->instance,
                  "instance file; required for torch-csv (stage placement and whether the backward is split); "
                  "for json it checks the schedule against it and prices --drop-offload");
  cmd->add_option("-o,--output", args->output, "file to write (default - : standard output)");
  cmd->add_flag("--drop-offload", args->drop_offload,
                "export a schedule that offloads without its offloads and reloads (PyTorch has none) and print what "
                "that costs: the simulated makespan and peak memory, or that it no longer fits (then exit 1)");
  cmd->add_flag("--pad", args->pad, "torch-csv: pad rows with empty (idle) cells to equal length");
  cmd->footer(
      "torch-csv: one row per rank, one action per cell: <stage>F<mb> forward, <stage>I<mb> input backward and "
      "<stage>W<mb> weight backward (split backward), <stage>B<mb> full backward (fused); stages are global stage ids. "
      "Matches PyTorch >= 2.6 (V and other non-loop placements loaded from the CSV: >= 2.7). See README.md, "
      "\"PyTorch export\".\n"
      "Example:\n"
      "  optpipe export --format torch-csv --instance instances/v-4x8.json v.json -o v.csv");
  cmd->callback([args]() {
    run_export(*args);
    throw CLI::Success();
  });
}

}  // namespace optpipe::cli
