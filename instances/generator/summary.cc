#include "instances/generator/summary.h"

#include <algorithm>
#include <cstdio>
#include <string>

#include "model/bytes.h"

namespace optpipe::gen {
namespace {

std::string fmt(const char* format, double a) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, a);
  return buf;
}

std::string gib(double bytes) { return fmt("%.2f", bytes / 1073741824.0); }

// ", tensor parallel 4 (sequence parallel), data parallel 2 with ZeRO-1"; "" without either.
std::string parallel_words(const CostOptions& o) {
  std::string out;
  if (o.tensor_parallel > 1) {
    out += ", tensor parallel " + std::to_string(o.tensor_parallel) +
           (o.sequence_parallel ? " (sequence parallel)" : "") + " per device";
  }
  if (o.data_parallel > 1) {
    out += ", data parallel " + std::to_string(o.data_parallel) + (o.zero_stage >= 1 ? " with ZeRO-1" : "");
  }
  return out;
}

}  // namespace

bool one_f_one_b_fits(const Instance& inst, int* worst, std::string* why) {
  if (worst) *worst = -1;
  if (inst.placement() != Placement::kOnePerDevice) {
    if (why) *why = "1F1B needs one stage per device";
    return false;
  }
  const int D = inst.num_devices();
  double least_room = 0;  // the smallest limit - need so far
  for (int d = 0; d < D; ++d) {
    const int held = std::min(D - d, inst.microbatches);
    const double need = inst.devices[d].static_memory + held * inst.stages[d].activation;
    const std::string detail = "device " + std::to_string(d) + " needs " + format_bytes(need) + " (static " +
                               format_bytes(inst.devices[d].static_memory) + " + " + std::to_string(held) + " x " +
                               format_bytes(inst.stages[d].activation) + ")";
    if (need > inst.devices[d].memory_limit) {
      if (worst) *worst = d;
      if (why) *why = detail + " > limit " + format_bytes(inst.devices[d].memory_limit);
      return false;
    }
    if (d == 0 || inst.devices[d].memory_limit - need < least_room) {
      least_room = inst.devices[d].memory_limit - need;
      if (why) *why = detail + " of " + format_bytes(inst.devices[d].memory_limit);
    }
  }
  return true;
}

std::string generated_summary(const GenerateOptions& o, const Generated& g) {
  const Instance& inst = g.instance;
  const ModelShape& m = o.model;
  std::string out;
  out += inst.name + ": " + m.name + " (" + fmt("%.2f", total_parameters(m) / 1e9) + "B parameters, " +
         std::to_string(m.layers) + " layers, h " + std::to_string(m.hidden) + ", " + std::to_string(m.heads) +
         " heads, ffn " + std::to_string(m.ffn) + " " + to_string(m.mlp) + ", vocab " + std::to_string(m.vocab) +
         ", seq " + std::to_string(m.seq) + " x micro-batch " + std::to_string(m.micro_batch) + ", " +
         to_string(m.dtype) + ")\n";
  out += "  " + std::to_string(inst.num_devices()) + " x " + o.gpu.name + " at " +
         fmt("%.0f", o.gpu.peak_flops * o.gpu.utilization / 1e12) + " TFLOP/s (utilisation " +
         fmt("%.2f", o.gpu.utilization) + "), " + std::to_string(inst.num_stages()) + " stages (" +
         to_string(inst.placement()) + "), " + std::to_string(inst.microbatches) + " microbatches, recompute " +
         to_string(o.cost.recompute) + (o.cost.flash_attention ? ", FlashAttention" : "") + parallel_words(o.cost) +
         ", limit " +
         format_bytes(inst.devices[0].memory_limit) + "\n";
  out += "  stage device layers   F ms     B ms     W ms    act GiB  M_W GiB  offload ms  static GiB\n";
  for (int s = 0; s < inst.num_stages(); ++s) {
    const Stage& st = inst.stages[s];
    std::string layers = std::to_string(g.layers[s]);
    if (g.stages[s].embedding) layers += "+e";
    if (g.stages[s].output) layers += "+o";
    char line[200];
    std::snprintf(line, sizeof line, "  %5d %6d %6s %7.3f  %7.3f  %7.3f  %7s  %7s  %10.3f  %10s\n", s, st.device,
                  layers.c_str(), st.forward, st.backward, st.weight, gib(st.activation).c_str(),
                  gib(st.weight_activation).c_str(), st.offload.value_or(0), gib(inst.devices[st.device].static_memory).c_str());
    out += line;
  }
  double cmax = 0;
  for (double c : inst.comm) cmax = std::max(cmax, c);
  out += "  comm " + fmt("%.4f", cmax) + " ms per activation (" + format_bytes(p2p_bytes_per_gpu(m, o.cost)) +
         (o.cost.tensor_parallel > 1 ? " per GPU" : "") + ")";
  std::string why;
  int worst = -1;
  const bool fits = one_f_one_b_fits(inst, &worst, &why);
  if (inst.placement() == Placement::kOnePerDevice) {
    out += std::string("; 1F1B ") + (fits ? "fits: " : "does not fit: ") + why + "\n";
  } else {
    out += "; " + why + "\n";
  }
  return out;
}

}  // namespace optpipe::gen
