#include "model/torch_csv.h"

#include <algorithm>
#include <string_view>

#include "model/bytes.h"
#include "model/error.h"
#include "model/simulator.h"
#include "model/time_text.h"
#include "model/validator.h"

namespace optpipe {
namespace {

std::string torch_cell(const Instance& inst, const Action& a) {
  char letter = 'F';
  switch (a.type) {
    case OpType::F: letter = 'F'; break;
    case OpType::B: letter = inst.split_backward ? 'I' : 'B'; break;
    case OpType::W: letter = 'W'; break;
    case OpType::R: break;  // never written (callers skip R)
  }
  return std::to_string(a.stage) + letter + std::to_string(a.mb);
}

double max_of(const std::vector<double>& v) { return v.empty() ? 0.0 : *std::max_element(v.begin(), v.end()); }

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

bool all_digits(std::string_view s) {
  if (s.empty() || s.size() > 9) return false;
  return std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// Splits text into lines ("\n" or "\r\n"); a final line break does not start another row.
std::vector<std::string_view> split_lines(std::string_view text) {
  std::vector<std::string_view> lines;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(start, end - start);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    lines.push_back(line);
    start = end + 1;
  }
  return lines;
}

std::vector<std::string_view> split_cells(std::string_view line) {
  std::vector<std::string_view> cells;
  std::size_t start = 0;
  while (true) {
    const std::size_t end = line.find(',', start);
    cells.push_back(line.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start));
    if (end == std::string_view::npos) break;
    start = end + 1;
  }
  return cells;
}

}  // namespace

Schedule without_offload(const Schedule& schedule) {
  Schedule out = schedule;
  for (auto& list : out.devices) {
    list.erase(std::remove_if(list.begin(), list.end(), [](const Action& a) { return a.type == OpType::R; }),
               list.end());
    for (Action& a : list) a.r = 0.0;
  }
  out.makespan.reset();
  out.bubble.reset();
  out.bound.reset();
  out.gap.reset();
  out.peak_memory.clear();
  out.status.clear();
  return out;
}

OffloadDropCost offload_drop_cost(const Instance& instance, const Schedule& schedule) {
  OffloadDropCost c;
  for (const auto& list : schedule.devices) {
    for (const Action& a : list) c.offloads += a.type == OpType::F && a.r > 0 ? 1 : 0;
  }
  const SimOptions quiet = SimOptions::quiet();
  Simulator sim(instance);
  const SimResult before = sim.run(schedule, quiet);
  c.before_feasible = before.feasible;
  c.before_makespan = before.makespan;
  c.before_peak = max_of(before.peak_memory);
  const Schedule stripped = without_offload(schedule);
  SimResult after = sim.run(stripped, quiet);
  c.after_feasible = after.feasible;
  if (!after.feasible) {
    c.after_reason = after.reason;
    SimOptions unlimited = quiet;
    unlimited.enforce_memory_limit = false;
    after = sim.run(stripped, unlimited);
  }
  c.after_makespan = after.makespan;
  c.after_peak = after.peak_memory;
  for (int d = 0; d < instance.num_devices() && d < static_cast<int>(c.after_peak.size()); ++d) {
    if (c.after_peak[d] > instance.devices[d].memory_limit + kMemoryTolerance) c.over_limit.push_back(d);
  }
  return c;
}

std::string describe(const Instance& instance, const OffloadDropCost& c) {
  std::string out = "dropped " + std::to_string(c.offloads) + " offload" + (c.offloads == 1 ? "" : "s") + ": ";
  const double after_peak = max_of(c.after_peak);
  double limit = 0;
  for (const Device& d : instance.devices) limit = std::max(limit, d.memory_limit);
  const std::string before_ms = c.before_feasible ? fmt_ms(c.before_makespan) : "infeasible";
  if (c.after_feasible) {
    out += "makespan " + before_ms + " -> " + fmt_ms(c.after_makespan) + ", peak memory " +
           format_bytes(c.before_peak) + " -> " + format_bytes(after_peak) + " (still fits: every device within its limit)";
    return out;
  }
  // The simulator's reason lists every waiting device; the first clause says what runs out.
  const std::string first = c.after_reason.substr(0, c.after_reason.find(';'));
  out += "the schedule no longer fits in memory (it deadlocks: " + first + "); with unlimited memory: makespan " +
         before_ms + " -> " + fmt_ms(c.after_makespan) + ", peak memory " + format_bytes(c.before_peak) + " -> " +
         format_bytes(after_peak) + ", over the limit on device" + (c.over_limit.size() == 1 ? "" : "s");
  for (std::size_t i = 0; i < c.over_limit.size(); ++i) {
    const int d = c.over_limit[i];
    out += (i ? ", " : " ") + std::to_string(d) + " (" + format_bytes(c.after_peak[d]) + " > " +
           format_bytes(instance.devices[d].memory_limit) + ")";
  }
  return out;
}

TorchCsvExport export_torch_csv(const Instance& instance, const Schedule& schedule, const TorchCsvOptions& options) {
  const auto violations = check_structure(instance, schedule, 1);
  if (!violations.empty()) {
    throw InputError("the schedule does not fit the instance \"" + instance.name + "\": [" +
                     to_string(violations.front().rule) + "] " + violations.front().message);
  }
  TorchCsvExport result;
  const Schedule* source = &schedule;
  Schedule stripped;
  if (schedule.has_offload()) {
    if (!options.drop_offload) {
      int offloads = 0;  // check_structure() passed: every R belongs to an F with r > 0
      for (const auto& list : schedule.devices) {
        for (const Action& a : list) offloads += a.type == OpType::F && a.r > 0 ? 1 : 0;
      }
      throw InputError("schedule offloads " + std::to_string(offloads) + " activation" + (offloads == 1 ? "" : "s") +
                       "; PyTorch has no offload action; use --drop-offload");
    }
    result.cost = offload_drop_cost(instance, schedule);
    stripped = without_offload(schedule);
    source = &stripped;
  }
  std::size_t width = 0;
  for (const auto& list : source->devices) width = std::max(width, list.size());
  for (const auto& list : source->devices) {
    std::string row;
    std::size_t cells = 0;
    for (const Action& a : list) {
      if (a.type == OpType::R) continue;
      if (cells++) row += ',';
      row += torch_cell(instance, a);
    }
    if (options.pad_rows) {
      for (; cells < width; ++cells) row += ',';
    }
    result.csv += row;
    result.csv += '\n';
  }
  return result;
}

std::string to_torch_csv(const Instance& instance, const Schedule& schedule, const TorchCsvOptions& options) {
  return export_torch_csv(instance, schedule, options).csv;
}

Schedule from_torch_csv(const Instance& instance, const std::string& csv) {
  const auto lines = split_lines(csv);
  if (static_cast<int>(lines.size()) != instance.num_devices()) {
    throw InputError("torch CSV: " + std::to_string(lines.size()) + " row" + (lines.size() == 1 ? "" : "s") +
                     ", but the instance \"" + instance.name + "\" has " + std::to_string(instance.num_devices()) +
                     " devices (one row per rank)");
  }
  Schedule out;
  out.instance = instance.name;
  out.solver = "torch-csv";
  out.devices.resize(instance.num_devices());
  for (int d = 0; d < instance.num_devices(); ++d) {
    const auto cells = split_cells(lines[d]);
    for (std::size_t k = 0; k < cells.size(); ++k) {
      std::string_view cell = trim(cells[k]);
      if (cell.size() >= 2 && cell.front() == '"' && cell.back() == '"') cell = trim(cell.substr(1, cell.size() - 2));
      if (cell.empty()) continue;  // an idle step
      const std::string where = "torch CSV: row " + std::to_string(d) + " (rank " + std::to_string(d) + "), cell " +
                                std::to_string(k) + " \"" + std::string(cell) + "\": ";
      std::size_t i = 0;
      while (i < cell.size() && cell[i] >= '0' && cell[i] <= '9') ++i;
      std::size_t j = i;
      while (j < cell.size() && !(cell[j] >= '0' && cell[j] <= '9')) ++j;
      const std::string_view stage_text = cell.substr(0, i), type = cell.substr(i, j - i), mb_text = cell.substr(j);
      if (type == "SEND_F" || type == "RECV_F" || type == "SEND_B" || type == "RECV_B" || type == "UNSHARD" ||
          type == "RESHARD" || type == "REDUCE_GRAD" || type == "WAIT_REDUCE_GRAD" || type == "WAIT_SEND_F" ||
          type == "WAIT_SEND_B") {
        if (!all_digits(stage_text)) throw InputError(where + "expected <stage>" + std::string(type) + "[<microbatch>]");
        continue;  // communication and FSDP actions: not part of our schedule
      }
      if (!all_digits(stage_text) || !all_digits(mb_text) || (type != "F" && type != "I" && type != "B" && type != "W")) {
        throw InputError(where + "not a compute action <stage><F|I|B|W><microbatch>, e.g. 0F3, 1I2, 1W2, 2B0" +
                         (cell.front() == '(' ? " (OVERLAP_F_B is not supported)" : ""));
      }
      const int s = std::stoi(std::string(stage_text)), j_mb = std::stoi(std::string(mb_text));
      if (s >= instance.num_stages()) {
        throw InputError(where + "stage " + std::to_string(s) + " does not exist (the instance has " +
                         std::to_string(instance.num_stages()) + " stages)");
      }
      if (j_mb >= instance.microbatches) {
        throw InputError(where + "microbatch " + std::to_string(j_mb) + " does not exist (the instance has " +
                         std::to_string(instance.microbatches) + " microbatches)");
      }
      if (instance.stages[s].device != d) {
        throw InputError(where + "stage " + std::to_string(s) + " is placed on device " +
                         std::to_string(instance.stages[s].device) + " by the instance, not on rank " + std::to_string(d));
      }
      auto& list = out.devices[d];
      if (type == "F") {
        list.push_back(make_f(s, j_mb));
      } else if (type == "I" || type == "W") {
        if (!instance.split_backward) {
          throw InputError(where + std::string(type) +
                           " (split backward) in an instance with a fused backward (split_backward false); use B");
        }
        list.push_back(type == "I" ? make_b(s, j_mb) : make_w(s, j_mb));
      } else {  // B: full backward
        list.push_back(make_b(s, j_mb));
        if (instance.split_backward) list.push_back(make_w(s, j_mb));
      }
    }
  }
  return out;
}

}  // namespace optpipe
