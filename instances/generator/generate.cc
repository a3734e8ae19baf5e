#include "instances/generator/generate.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "instances/generator/parallelism.h"
#include "model/bytes.h"
#include "model/error.h"
#include "model/instance_io.h"

namespace optpipe::gen {
namespace {

constexpr double kKiB = 1024.0, kMiB = 1048576.0, kGiB = 1073741824.0;

std::vector<std::string> split_commas(const std::string& text) {
  std::vector<std::string> parts;
  std::string cur;
  for (char c : text) {
    if (c == ',') {
      parts.push_back(cur);
      cur.clear();
    } else if (c != ' ') {
      cur += c;
    }
  }
  parts.push_back(cur);
  return parts;
}

bool parse_double(const std::string& s, double* out) {
  if (s.empty()) return false;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && ptr == s.data() + s.size() && std::isfinite(*out);
}

// Times in ms to 0.1 us, and to at least 5 significant digits below 1 ms (tiny models keep
// nonzero times). Rounding x·10^k to an integer and dividing by the exact 10^k gives the double
// nearest the decimal, which the file writes and reads back exactly.
double round_ms(double ms) {
  if (!(ms > 0)) return 0.0;
  const int decimals = std::clamp(4 - static_cast<int>(std::floor(std::log10(ms))), 4, 15);
  const double scale = std::pow(10.0, decimals);
  return std::round(ms * scale) / scale;
}

// Bytes to whole MiB (whole KiB below 1 MiB, whole bytes below 1 KiB): exact in the file.
double round_bytes(double bytes) {
  if (bytes >= kMiB) return std::round(bytes / kMiB) * kMiB;
  if (bytes >= kKiB) return std::round(bytes / kKiB) * kKiB;
  return std::round(bytes);
}

double ceil_mib(double bytes) { return std::ceil(bytes / kMiB) * kMiB; }

nlohmann::ordered_json bytes_json(double bytes) {
  if (bytes > 0 && bytes == std::floor(bytes) && bytes < 9e15) {
    const auto v = static_cast<long long>(bytes);
    if (v % (1LL << 30) == 0) return std::to_string(v >> 30) + "GiB";
    if (v % (1LL << 20) == 0) return std::to_string(v >> 20) + "MiB";
    if (v % (1LL << 10) == 0) return std::to_string(v >> 10) + "KiB";
  }
  return bytes;
}

std::string join_ints(const std::vector<int>& v) {
  std::string out;
  for (int x : v) out += (out.empty() ? "" : ",") + std::to_string(x);
  return out;
}

}  // namespace

MemoryLimit parse_memory_limit(const std::string& text) {
  MemoryLimit m;
  if (text == "gpu") return m;
  if (text.size() > 3 && text.substr(text.size() - 3) == "act") {
    double k = 0;
    if (!parse_double(text.substr(0, text.size() - 3), &k) || !(k > 0)) {
      throw InputError("memory_limit: \"" + text + "\": expected a positive number of activations before \"act\", e.g. 3act");
    }
    m.kind = MemoryLimit::Kind::kActivations;
    m.value = k;
    return m;
  }
  std::string why;
  const auto bytes = parse_byte_flag(text, &why);
  if (!bytes) throw InputError("memory_limit: " + why + ", \"gpu\" or e.g. \"3act\"");
  if (!(*bytes > 0)) throw InputError("memory_limit: must be > 0, got \"" + text + "\"");
  m.kind = MemoryLimit::Kind::kBytes;
  m.value = *bytes;
  return m;
}

std::vector<double> parse_offload_levels(const std::string& text) {
  std::vector<double> levels;
  for (const auto& p : split_commas(text)) {
    double r = 0;
    if (!parse_double(p, &r) || r < 0 || r > 1) {
      throw InputError("offload_levels: \"" + p + "\" is not a fraction in [0, 1] (e.g. 0,0.5,1)");
    }
    levels.push_back(r);
  }
  return normalize_offload_levels(std::move(levels));
}

std::vector<double> normalize_offload_levels(std::vector<double> levels) {
  for (double r : levels) {
    if (!(r >= 0 && r <= 1)) {
      std::ostringstream text;
      text << r;
      throw InputError("offload_levels: " + text.str() + " is not a fraction in [0, 1] (e.g. 0, 0.5, 1)");
    }
  }
  levels.push_back(0.0);
  std::sort(levels.begin(), levels.end());
  levels.erase(std::unique(levels.begin(), levels.end()), levels.end());
  return levels;
}

std::vector<int> parse_split(const std::string& text) {
  std::vector<int> split;
  for (const auto& p : split_commas(text)) {
    int v = -1;
    auto [ptr, ec] = std::from_chars(p.data(), p.data() + p.size(), v);
    if (p.empty() || ec != std::errc() || ptr != p.data() + p.size() || v < 0) {
      throw InputError("split: \"" + p + "\" is not a layer count >= 0 (expected e.g. 4,4,4,4)");
    }
    split.push_back(v);
  }
  return split;
}

Placement parse_placement(const std::string& text) {
  if (text == "one") return Placement::kOnePerDevice;
  if (text == "v") return Placement::kV;
  if (text == "loop") return Placement::kLoop;
  throw InputError("placement: unknown placement \"" + text + "\" (choose one, v or loop)");
}

const char* placement_word(Placement p) {
  switch (p) {
    case Placement::kV: return "v";
    case Placement::kLoop: return "loop";
    case Placement::kOnePerDevice: return "one";
    default: return "other";
  }
}

std::vector<int> split_layers(int layers, int stages, const std::vector<int>& given) {
  if (!given.empty()) {
    if (static_cast<int>(given.size()) != stages) {
      throw InputError("split: " + std::to_string(given.size()) + " entries for " + std::to_string(stages) +
                       " stages (give one layer count per stage)");
    }
    long long sum = 0;
    for (int v : given) {
      if (v < 0) throw InputError("split: layer counts must be >= 0, got " + std::to_string(v));
      sum += v;
    }
    if (sum != layers) {
      throw InputError("split: the layer counts add up to " + std::to_string(sum) + ", but the model has " +
                       std::to_string(layers) + " layers");
    }
    return given;
  }
  if (layers % stages == 0) return std::vector<int>(stages, layers / stages);
  if (stages >= 2 && (layers + 2) % stages == 0 && (layers + 2) / stages >= 2) {
    std::vector<int> split(stages, (layers + 2) / stages);
    split.front() -= 1;
    split.back() -= 1;
    return split;
  }
  // A suggestion: as even as possible, the extra layers on the middle stages.
  std::vector<int> suggestion(stages, layers / stages);
  int extra = layers % stages;
  for (int s = 1; s < stages - 1 && extra > 0; ++s, --extra) ++suggestion[s];
  for (int s = 0; extra > 0; s = (s + 1) % stages, --extra) ++suggestion[s];
  throw InputError("model.layers: " + std::to_string(layers) + " layers do not split evenly into " +
                   std::to_string(stages) + " stages (nor do " + std::to_string(layers + 2) +
                   " with the embedding and the output layer counted as one layer each); give an explicit split, e.g. --split " +
                   join_ints(suggestion));
}

Generated generate(const GenerateOptions& o) {
  validate_shape(o.model);
  if (o.devices <= 0) throw InputError("devices: must be a positive integer, got " + std::to_string(o.devices));
  if (o.microbatches <= 0) {
    throw InputError("microbatches: must be a positive integer, got " + std::to_string(o.microbatches));
  }
  if (!(o.gpu.utilization > 0 && o.gpu.utilization <= 1)) {
    throw InputError("utilization: must be in (0, 1], got " + std::to_string(o.gpu.utilization));
  }
  if (o.placement == Placement::kOther) throw InputError("placement: choose one, v or loop");
  if (o.cost.workspace_bytes < 0) throw InputError("workspace: must be >= 0");
  if (o.cost.bytes_per_param < 0) throw InputError("bytes_per_param: must be >= 0 (0: the dtype's default)");
  if (o.offload_levels.empty() || std::find(o.offload_levels.begin(), o.offload_levels.end(), 0.0) == o.offload_levels.end()) {
    throw InputError("offload_levels: must contain 0");
  }
  for (double r : o.offload_levels) {
    if (!(r >= 0 && r <= 1)) throw InputError("offload_levels: each level must be in [0, 1]");
  }
  if (o.memory.kind != MemoryLimit::Kind::kGpu && !(o.memory.value > 0)) {
    throw InputError("memory_limit: must be > 0");
  }
  validate_parallelism(o.model, o.cost, o.gpu);

  const int D = o.devices;
  const int S = o.placement == Placement::kOnePerDevice ? D : 2 * D;
  Generated g;
  g.layers = split_layers(o.model.layers, S, o.split);

  Instance& inst = g.instance;
  inst.name = o.name;
  if (inst.name.empty()) {
    inst.name = o.model.name + (o.placement == Placement::kV ? "-v" : o.placement == Placement::kLoop ? "-loop" : "") +
                "-" + std::to_string(D) + "x" + std::to_string(o.microbatches);
  }
  inst.microbatches = o.microbatches;
  inst.split_backward = o.split_backward;
  inst.offload_levels = o.offload_levels;
  std::sort(inst.offload_levels.begin(), inst.offload_levels.end());
  inst.offload_levels.erase(std::unique(inst.offload_levels.begin(), inst.offload_levels.end()), inst.offload_levels.end());

  auto device_of = [&](int s) {
    switch (o.placement) {
      case Placement::kV: return s < D ? s : 2 * D - 1 - s;
      case Placement::kLoop: return s % D;
      default: return s;
    }
  };

  // Stages.
  std::vector<double> device_params(D, 0.0), device_transient(D, 0.0);
  for (int s = 0; s < S; ++s) {
    const StageCost c = stage_cost(o.model, o.cost, g.layers[s], s == 0, s == S - 1);
    g.stages.push_back(c);
    const int d = device_of(s);
    device_params[d] += c.total.params;
    device_transient[d] = std::max(device_transient[d], c.total.transient);
    Stage st;
    st.device = d;
    const BlockTimes times = block_times(c.total, o.model, o.cost, o.gpu);
    st.forward = round_ms(times.forward);
    st.backward = round_ms(times.backward);
    st.weight = round_ms(times.weight);
    st.activation = round_bytes(c.total.activation);
    st.weight_activation = std::min(st.activation, round_bytes(c.total.weight_activation));
    if (!o.split_backward) {
      st.backward = round_ms(st.backward + st.weight);
      st.weight = 0;
      st.weight_activation = 0;
    }
    // A device's t GPUs offload their parts at once through shared PCIe switches (parallelism.h).
    const double t = round_ms(transfer_ms(st.activation * pcie_sharers(o.cost, o.gpu), o.gpu.pcie_bandwidth,
                                          o.gpu.pcie_latency_ms));
    st.offload = t;
    st.reload = t;
    inst.stages.push_back(st);
  }

  // Stage-to-stage comm.
  const double p2p = p2p_bytes_per_gpu(o.model, o.cost);
  for (int s = 0; s + 1 < S; ++s) {
    const int a = device_of(s), b = device_of(s + 1);
    double c = 0;
    if (a != b) {
      const bool same_node = node_of_device(a, o.cost, o.gpu) == node_of_device(b, o.cost, o.gpu);
      c = same_node ? transfer_ms(p2p, o.gpu.nvlink_bandwidth, o.gpu.nvlink_latency_ms)
                    : transfer_ms(p2p, o.gpu.network_bandwidth, o.gpu.network_latency_ms);
    }
    inst.comm.push_back(round_ms(c));
  }
  // Stages on the same device have no comm (spec §2); when every other pair has the same value,
  // give them that value too, so that the file carries one number.
  double cross = -1;
  bool uniform = true;
  for (int s = 0; s + 1 < S; ++s) {
    if (device_of(s) == device_of(s + 1)) continue;
    if (cross >= 0 && inst.comm[s] != cross) uniform = false;
    cross = inst.comm[s];
  }
  if (uniform && cross >= 0) std::fill(inst.comm.begin(), inst.comm.end(), cross);

  // Devices.
  const double bpp = bytes_per_param(o.model, o.cost);
  inst.devices.resize(D);
  std::vector<double> largest_activation(D, 0.0);
  for (int s = 0; s < S; ++s) {
    largest_activation[inst.stages[s].device] = std::max(largest_activation[inst.stages[s].device], inst.stages[s].activation);
  }
  for (int d = 0; d < D; ++d) {
    inst.devices[d].static_memory = ceil_mib(device_params[d] * bpp + o.cost.workspace_bytes + device_transient[d]);
    inst.devices[d].pcie_group = pcie_group_of(d, o.cost, o.gpu);
  }
  double limit = 0;
  switch (o.memory.kind) {
    case MemoryLimit::Kind::kGpu: limit = o.gpu.memory_bytes; break;
    case MemoryLimit::Kind::kBytes: limit = o.memory.value; break;
    case MemoryLimit::Kind::kActivations:
      for (int d = 0; d < D; ++d) {
        limit = std::max(limit, inst.devices[d].static_memory + o.memory.value * largest_activation[d]);
      }
      break;
  }
  limit = ceil_mib(limit);
  for (auto& dev : inst.devices) dev.memory_limit = limit;

  // Warnings: legal files that no schedule can run.
  for (int d = 0; d < D; ++d) {
    const Device& dev = inst.devices[d];
    if (dev.static_memory + largest_activation[d] > dev.memory_limit) {
      g.warnings.push_back("device " + std::to_string(d) + ": static memory " + format_bytes(dev.static_memory) +
                           " + one activation " + format_bytes(largest_activation[d]) + " > memory limit " +
                           format_bytes(dev.memory_limit) + ": the file is valid but no schedule fits");
    }
  }
  if (o.cost.recompute == Recompute::kSelective && o.cost.flash_attention) {
    g.warnings.push_back("selective recomputation changes nothing with FlashAttention (no s x s scores are kept)");
  }
  // The file must read back. Options past the reader's limits (an op over 1e9 ms from a tiny
  // utilisation, a limit over 1e21 bytes, more than 1e6 microbatches) are refused here with the
  // field, not written into a file that nothing reads (issue 23).
  try {
    parse_instance(generated_instance_json(inst));
  } catch (const InputError& e) {
    throw InputError(std::string("the generated instance would be refused: ") + e.what() +
                     " (check the model's size, the utilisation, the memory limit and the microbatches)");
  }
  return g;
}

std::string generated_instance_json(const Instance& inst) {
  using oj = nlohmann::ordered_json;
  oj doc;
  doc["format"] = kInstanceFormat;
  doc["name"] = inst.name;
  doc["microbatches"] = inst.microbatches;
  doc["split_backward"] = inst.split_backward;
  doc["offload_levels"] = inst.offload_levels;
  const bool uniform =
      std::all_of(inst.comm.begin(), inst.comm.end(), [&](double c) { return c == inst.comm.front(); });
  if (inst.comm.empty()) {
    doc["comm"] = 0.0;
  } else if (uniform) {
    doc["comm"] = inst.comm.front();
  } else {
    doc["comm"] = inst.comm;
  }
  oj devices = oj::array();
  for (const Device& dev : inst.devices) {
    oj jd;
    jd["memory_limit"] = bytes_json(dev.memory_limit);
    jd["static_memory"] = bytes_json(dev.static_memory);
    jd["pcie_group"] = dev.pcie_group;
    devices.push_back(jd);
  }
  doc["devices"] = devices;
  oj stages = oj::array();
  for (const Stage& st : inst.stages) {
    oj js;
    js["device"] = st.device;
    js["forward"] = st.forward;
    js["backward"] = st.backward;
    if (inst.split_backward) js["weight"] = st.weight;
    js["activation"] = bytes_json(st.activation);
    if (inst.split_backward) js["weight_activation"] = bytes_json(st.weight_activation);
    if (st.offloadable()) {
      js["offload"] = *st.offload;
      js["reload"] = *st.reload;
    }
    stages.push_back(js);
  }
  doc["stages"] = stages;
  return doc.dump(1) + "\n";
}

}  // namespace optpipe::gen
