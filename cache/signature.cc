#include "cache/signature.h"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <map>

namespace optpipe::cache {
namespace {

std::string hex_float(double x) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%a", x);
  return buf;
}

// Index of the grid cell of x (x / unit rounded to multiples of kCoarseGrid).
std::string cell(double x, double unit) {
  if (!(unit > 0) || !std::isfinite(x / unit)) return "?";
  const double q = std::nearbyint(x / unit / kCoarseGrid);
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.0f", q);
  return buf;
}

// Cell of bytes / room on the logarithmic grid.
std::string byte_cell(double bytes, double room) {
  if (bytes <= 0) return "0";
  const double q = std::nearbyint(kByteCellsPerOctave * std::log2(bytes / room));
  if (!std::isfinite(q)) return "?";
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.0f", q);
  return buf;
}

std::uint64_t fnv1a(const std::string& text, std::uint64_t basis, bool reversed) {
  std::uint64_t h = basis;
  const std::size_t n = text.size();
  for (std::size_t i = 0; i < n; ++i) {
    h ^= static_cast<unsigned char>(text[reversed ? n - 1 - i : i]);
    h *= 1099511628211ULL;
  }
  return h;
}

std::string structure(const Instance& inst) {
  std::string t = "optpipe-sig/1;D=" + std::to_string(inst.num_devices()) + ";S=" + std::to_string(inst.num_stages()) +
                  ";m=" + std::to_string(inst.microbatches) + ";split=" + (inst.split_backward ? "1" : "0") + ";levels=";
  for (double r : inst.offload_levels) t += hex_float(r) + ",";
  t += ";place=";
  for (const Stage& s : inst.stages) t += std::to_string(s.device) + ",";
  t += ";pcie=";
  std::map<int, int> relabel;
  for (const Device& d : inst.devices) {
    const auto it = relabel.emplace(d.pcie_group, static_cast<int>(relabel.size())).first;
    t += std::to_string(it->second) + ",";
  }
  t += ";offloadable=";
  for (const Stage& s : inst.stages) t += s.offloadable() ? '1' : '0';
  return t;
}

}  // namespace

std::string hash_hex(const std::string& text) {
  const std::uint64_t a = fnv1a(text, 14695981039346656037ULL, false);
  const std::uint64_t b = fnv1a(text, 0x9e3779b97f4a7c15ULL, true);
  char buf[40];
  std::snprintf(buf, sizeof buf, "%016llx%016llx", static_cast<unsigned long long>(a), static_cast<unsigned long long>(b));
  return buf;
}

Signature signature(const Instance& inst) {
  const std::string base = structure(inst);
  const int S = inst.num_stages();

  std::string exact = base + ";stages=";
  for (int s = 0; s < S; ++s) {
    const Stage& st = inst.stages[s];
    exact += hex_float(st.forward) + "," + hex_float(st.backward) + "," + hex_float(st.weight) + "," +
             hex_float(st.activation) + "," + hex_float(st.weight_activation) + "," +
             (st.offload ? hex_float(*st.offload) : "-") + "," + (st.reload ? hex_float(*st.reload) : "-") + "," +
             (s + 1 < S ? hex_float(inst.comm_after(s)) : "-") + "|";
  }
  exact += ";devices=";
  for (const Device& d : inst.devices) exact += hex_float(d.memory_limit) + "," + hex_float(d.static_memory) + "|";

  double total = 0;
  for (const Stage& st : inst.stages) total += st.forward + st.backward + st.weight;
  const double tau = S > 0 ? total / (S * inst.num_compute_types()) : 0.0;
  std::string coarse = base + ";grid=" + hex_float(kCoarseGrid) + "," + hex_float(kByteCellsPerOctave) + ";stages=";
  for (int s = 0; s < S; ++s) {
    const Stage& st = inst.stages[s];
    const Device& dev = inst.devices[st.device];
    const double room = dev.memory_limit - dev.static_memory;
    coarse += cell(st.forward, tau) + "," + cell(st.backward, tau) + "," + cell(st.weight, tau) + "," +
              (st.offload ? cell(*st.offload, tau) : "-") + "," + (st.reload ? cell(*st.reload, tau) : "-") + "," +
              (s + 1 < S ? cell(inst.comm_after(s), tau) : "-") + ",";
    if (room > 0) {
      coarse += byte_cell(st.activation, room) + "," + byte_cell(st.weight_activation, room) + "|";
    } else {
      coarse += "noroom|";
    }
  }
  Signature sig;
  sig.exact_key = hash_hex(exact);
  sig.coarse_key = hash_hex(coarse);
  sig.exact_text = std::move(exact);
  sig.coarse_text = std::move(coarse);
  return sig;
}

}  // namespace optpipe::cache
