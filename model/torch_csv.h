// Export to, and import from, the schedule CSV of PyTorch's pipelining runtime (issue 9).
//
// Format ("compute_only", the default of `_PipelineScheduleRuntime._load_csv(filename, format)`;
// source: pytorch/pytorch torch/distributed/pipelining/schedules.py @00722e64 — `_Action`,
// `_action_regex`, `_Action.from_str`, `PipelineScheduleMulti._load_csv`, `_validate_schedule`,
// `_PipelineScheduleRuntime._load_csv` / `_prepare_schedule_with_comms`):
//   - one CSV row per rank, row k = rank k's program in order (read with Python's csv.reader);
//   - one action per cell, `<stage><TYPE><microbatch>` without separators: `0F3` forward of
//     stage 0 microbatch 3, `1I2` input backward, `1W2` weight backward, `2B0` full (fused)
//     backward. The stage is the global stage index, not the rank; PyTorch infers the
//     stage -> rank map from the row each stage appears in, so V and loop placements need no
//     extra data;
//   - an empty cell is an idle step (None); the runtime drops it when it lowers the schedule, so
//     the exporter writes none: rows are the plain action lists and may differ in length.
// PyTorch versions (checked in the schedules.py of the 2.5.1, 2.6.0, 2.7.0 and 2.15.0 wheels): the
// F|I|B|W grammar is PyTorch >= 2.6 (pytorch PR #138886; in 2.5 `B` meant the input backward and
// there was no `I`). Inferring the stage -> rank map from the CSV is PR #146217, in 2.7.0 and later;
// with 2.6, placements other than loop need `stage_index_to_group_rank` passed to the schedule's
// constructor. scripts/torch_check.sh ran exported schedules end to end on 2.15.0 (README.md,
// "PyTorch export").
//
// Mapping: our F -> `F`; our B -> `I` when the instance splits the backward, `B` when it does not;
// our W -> `W`. PyTorch has no offload or reload action: a schedule that offloads is refused
// unless TorchCsvOptions::drop_offload, which removes the R actions and the offload levels
// (the result still obeys spec §3; what that costs is reported, simulated with model/simulator.h).
//
// Complexity: export and import are O(N) in the number of actions plus check_structure();
// dropping offloads adds two or three simulations, O(N log N) each.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "model/instance.h"
#include "model/schedule.h"

namespace optpipe {

struct TorchCsvOptions {
  bool drop_offload = false;  // export an offloading schedule without its offloads (else: InputError)
  bool pad_rows = false;      // pad shorter rows with empty (idle) cells to a rectangular table
};

// What exporting without the offloads costs: the schedule before and after, both simulated
// under the instance's memory limits.
struct OffloadDropCost {
  int offloads = 0;                     // F actions with an offload level > 0 that were dropped
  bool before_feasible = false;
  double before_makespan = 0;
  double before_peak = 0;               // bytes, the largest over the devices
  bool after_feasible = false;          // false: deadlocks for memory without the offloads
  double after_makespan = 0;            // feasible: the makespan; otherwise with unlimited memory
  std::vector<double> after_peak;       // per device; when infeasible, with unlimited memory
  std::vector<int> over_limit;          // devices whose after_peak exceeds their limit
  std::string after_reason;             // the simulator's reason when infeasible
};

struct TorchCsvExport {
  std::string csv;
  std::optional<OffloadDropCost> cost;  // set when offloads were dropped
};

// The schedule as PyTorch's compute-only CSV. Throws InputError when the schedule does not fit
// the instance (check_structure(), naming the first problem) or offloads without drop_offload:
// "schedule offloads N activations; PyTorch has no offload action; use --drop-offload".
TorchCsvExport export_torch_csv(const Instance& instance, const Schedule& schedule, const TorchCsvOptions& options);
std::string to_torch_csv(const Instance& instance, const Schedule& schedule, const TorchCsvOptions& options = {});

// Parses a CSV of the format above into our schedule (rows = devices). `I` -> B (split instances
// only), `W` -> W (split only); `B` -> B in an unsplit instance and B followed by W in a split one.
// Empty cells are skipped; PyTorch's communication and FSDP actions (SEND_F, RECV_F, SEND_B,
// RECV_B, UNSHARD, RESHARD, REDUCE_GRAD and, in newer releases, WAIT_SEND_F, WAIT_SEND_B,
// WAIT_REDUCE_GRAD: the "compute_comms" form of `_dump_csv`) are skipped.
// Throws InputError naming the row and cell for a malformed cell, a wrong row count, a stage
// or microbatch out of range, or a stage on another device than the instance places it.
// The result is not validated further (run validator.h on it).
Schedule from_torch_csv(const Instance& instance, const std::string& csv);

// The schedule without R actions and with every offload level set to 0.
Schedule without_offload(const Schedule& schedule);

// Simulates `schedule` and its offload-free version under the instance's limits.
OffloadDropCost offload_drop_cost(const Instance& instance, const Schedule& schedule);
// One line for the CLI, e.g. "dropped 30 offloads: makespan 764.940 ms -> 802.100 ms, peak
// memory 13.0 GiB -> 17.2 GiB" or "...; it no longer fits: ...".
std::string describe(const Instance& instance, const OffloadDropCost& cost);

}  // namespace optpipe
