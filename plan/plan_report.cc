#include "plan/plan_report.h"

#include <cmath>
#include <cstdio>
#include <map>

#include "model/bytes.h"
#include "partition/reference_splits.h"

namespace optpipe::plan {
namespace {

std::string fixed(double v, int decimals = 1) {
  if (!std::isfinite(v)) return "-";
  char b[48];
  std::snprintf(b, sizeof b, "%.*f", decimals, v);
  return b;
}

std::string kilo(double v) {
  if (!(v > 0)) return "-";
  char b[48];
  if (v >= 1e6) std::snprintf(b, sizeof b, "%.2fM", v / 1e6);
  else std::snprintf(b, sizeof b, "%.1fk", v / 1e3);
  return b;
}

std::string gap_text(const OptionResult& r) {
  if (!r.solved || !(r.makespan > 0)) return "-";
  char b[32];
  std::snprintf(b, sizeof b, "%.1f%%", 100.0 * std::max(0.0, r.makespan - r.makespan_bound) / r.makespan);
  return b;
}

std::string gib(double bytes) { return fixed(bytes / 1073741824.0, 1); }

// The line without trailing blanks, with its newline.
std::string line_of(std::string text) {
  while (!text.empty() && (text.back() == ' ' || text.back() == '\n')) text.pop_back();
  return text + "\n";
}

std::string header() {
  char line[512];
  std::snprintf(line, sizeof line, "  %3s %13s %9s  %-17s %-12s %-9s %12s %12s %6s %9s %15s  %-37s %s\n", "#",
                "time/batch", "tokens/s", "layout", "micro-batch", "recompute", "makespan", "bound", "gap", "DP sync",
                "peak / limit", "bottleneck", "split");
  return line_of(line);
}

std::string row(const OptionResult& r, int rank, bool best) {
  const PlanOption& o = r.option();
  const std::string mb = std::to_string(o.micro_batch) + " x " + std::to_string(o.microbatches);
  const std::string peak = gib(r.peak) + " / " + gib(r.limit) + " GiB";
  std::string split = partition::split_text(r.split);
  if (r.split_role == "partition search") split += " (partition search)";
  else if (r.split_role == "least bound") split += " (least bound)";
  if (!r.note.empty()) split += "; " + r.note;
  char line[1024];
  std::snprintf(line, sizeof line, "%s %3d %10s ms %9s  %-17s %-12s %-9s %9s ms %9s ms %6s %6s ms %15s  %-37s %s\n",
                best ? "*" : " ", rank, fixed(r.time).c_str(), kilo(r.tokens_per_second).c_str(), o.layout().c_str(),
                mb.c_str(), gen::to_string(o.recompute), fixed(r.makespan).c_str(), fixed(r.makespan_bound).c_str(),
                gap_text(r).c_str(), fixed(r.sync).c_str(), peak.c_str(), r.bottleneck.text.c_str(), split.c_str());
  return line_of(line);
}

std::string summary_line(const PlanResult& r) {
  return std::to_string(r.enumerated) + " options: " + std::to_string(r.fitting) + " fit the memory limit (" +
         std::to_string(r.over_memory) + " do not), " + std::to_string(r.solved) + " solved, " + std::to_string(r.cut) +
         " cut by their bound (it reaches the best time), " + std::to_string(r.unsolved) + " not solved in the time; " +
         fixed(r.seconds) + " s" + (r.stopped ? " (stopped)" : "") + "\n";
}

std::string screened_out(const PlanResult& r) {
  std::string out;
  const OptionResult* closest = nullptr;
  for (const OptionResult& o : r.options) {
    if (!o.screen.fits && (!closest || o.screen.over_limit() < closest->screen.over_limit())) closest = &o;
  }
  if (closest) {
    out += "over the memory limit: " + std::to_string(r.over_memory) + " options; the closest, " +
           closest->option().label() + ", needs " + format_bytes(closest->screen.floor.bytes) + " on device " +
           std::to_string(closest->screen.floor.device) + " (" + format_bytes(closest->screen.over_limit()) +
           " over)\n";
  }
  for (const std::string& why : r.left_out) out += "left out: " + why + "\n";
  return out;
}

std::string best_lines(const PlanResult& r) {
  if (r.best < 0) return "no option was solved to a schedule within the time limit\n";
  const OptionResult& b = r.options[r.best];
  std::string out = "best: " + b.option().label() + ": " + fixed(b.time) + " ms per global batch (" +
                    kilo(b.tokens_per_second) + " tokens/s), makespan " + fixed(b.makespan) + " ms (" + b.status +
                    ", bound " + fixed(b.makespan_bound) + " ms), split " + partition::split_text(b.split) +
                    (b.offloads > 0 ? ", " + std::to_string(b.offloads) + " offloads" : "") + "\n";
  for (const OptionResult& o : r.options) {
    if (!o.partition_note.empty()) out += "  " + o.option().label() + ": " + o.partition_note + "\n";
  }
  return out;
}

nlohmann::ordered_json option_json(const OptionResult& r) {
  nlohmann::ordered_json j;
  const PlanOption& o = r.option();
  auto num = [](double v) { return std::isfinite(v) ? nlohmann::ordered_json(v) : nlohmann::ordered_json(nullptr); };
  j["layout"] = o.layout();
  j["tensor_parallel"] = o.tp;
  j["pipeline_parallel"] = o.pp;
  j["data_parallel"] = o.dp;
  j["placement"] = placement_word(o.placement);
  j["micro_batch"] = o.micro_batch;
  j["microbatches"] = o.microbatches;
  j["recompute"] = gen::to_string(o.recompute);
  j["state"] = r.state;
  j["split"] = r.screen.fits ? r.split : r.screen.split;
  j["split_role"] = r.screen.fits ? r.split_role : r.screen.split_role;
  j["memory_floor"] = r.screen.floor.bytes;
  j["memory_floor_device"] = r.screen.floor.device;
  j["memory_limit"] = r.screen.floor.limit;
  if (!r.screen.fits) j["no_fit"] = r.screen.no_fit;
  j["cheap_bound_ms"] = r.screen.fits ? num(r.screen.bound.value) : nullptr;
  if (r.screen.uniform_bound > 0) j["uniform_split_bound_ms"] = r.screen.uniform_bound;  // no default split
  j["time_bound_ms"] = r.screen.fits ? num(r.time_bound) : nullptr;
  j["time_per_batch_ms"] = num(r.time);
  j["tokens_per_second"] = r.solved ? num(r.tokens_per_second) : nullptr;
  j["makespan_ms"] = num(r.makespan);
  j["makespan_bound_ms"] = r.solved ? num(r.makespan_bound) : nullptr;
  j["status"] = r.status;
  j["dp_sync_ms"] = r.sync;
  j["peak_memory"] = r.solved ? num(r.peak) : nullptr;
  j["peak_device"] = r.peak_device;
  j["offloads"] = r.offloads;
  j["bottleneck"] = r.bottleneck.text;
  j["bottleneck_kind"] = r.bottleneck.kind;
  j["note"] = r.note;
  j["partition_search"] = r.partition_note;
  j["seconds"] = r.seconds;
  return j;
}

}  // namespace

std::string request_line(const PlanRequest& q) {
  std::string levels;
  for (double l : q.base.offload_levels) {
    char b[32];
    std::snprintf(b, sizeof b, "%g", l);
    levels += (levels.empty() ? "" : ", ") + std::string(b);
  }
  return q.base.model.name + " on " + std::to_string(q.gpus) + " x " + q.base.gpu.name + ", global batch " +
         std::to_string(q.global_batch) + " x " + std::to_string(q.base.model.seq) + " tokens, ZeRO-" +
         std::to_string(q.zero_stage) + ", offload levels " + levels;
}

std::string placement_comparison(const PlanResult& r) {
  std::map<std::string, const OptionResult*> best;
  for (const OptionResult& o : r.options) {
    const std::string p = placement_word(o.option().placement);
    if (o.solved && (!best.count(p) || o.time < best[p]->time)) best[p] = &o;
  }
  if (best.size() < 2) return "";
  const OptionResult* one = best.count("one") ? best["one"] : nullptr;
  std::string out = "best per placement:";
  for (const char* p : {"one", "v", "loop"}) {
    if (!best.count(p)) continue;
    const OptionResult& o = *best[p];
    out += std::string("\n  ") + p + ": " + fixed(o.time) + " ms (" + o.option().label() + ", split " +
           partition::split_text(o.split) + ")";
    if (one && &o != one) out += ", " + fixed(100.0 * (one->time - o.time) / one->time) + "% faster than one stage per device";
  }
  return out + "\n";
}

std::string plan_table_text(const PlanRequest& q, const PlanResult& r, int rows) {
  std::string out = request_line(q) + "\n" + summary_line(r) + "\n" + header();
  int shown = 0, solved = 0;
  for (std::size_t i = 0; i < r.options.size(); ++i) {
    if (!r.options[i].solved) continue;
    ++solved;
    if (shown < rows) out += row(r.options[i], solved, static_cast<int>(i) == r.best), ++shown;
  }
  if (solved > shown) out += "  ... " + std::to_string(solved - shown) + " more solved options (all of them in the JSON)\n";
  out += "\n" + best_lines(r) + placement_comparison(r) + screened_out(r);
  return out;
}

nlohmann::ordered_json plan_json(const PlanRequest& q, const PlanResult& r) {
  nlohmann::ordered_json j;
  j["format"] = kPlanFormat;
  j["request"] = {{"model", q.base.model.name},     {"gpus", q.gpus},
                  {"gpu", q.base.gpu.name},         {"global_batch", q.global_batch},
                  {"seq", q.base.model.seq},        {"zero_stage", q.zero_stage},
                  {"offload_levels", q.base.offload_levels}};
  j["summary"] = {{"options", r.enumerated}, {"fit", r.fitting},  {"over_memory", r.over_memory},
                  {"solved", r.solved},      {"cut_by_bound", r.cut}, {"not_solved", r.unsolved},
                  {"seconds", r.seconds},    {"stopped", r.stopped}};
  j["left_out"] = r.left_out;
  j["best"] = r.best >= 0 ? option_json(r.options[r.best]) : nlohmann::ordered_json(nullptr);
  nlohmann::ordered_json all = nlohmann::ordered_json::array();
  for (const OptionResult& o : r.options) all.push_back(option_json(o));
  j["options"] = all;
  return j;
}

}  // namespace optpipe::plan
