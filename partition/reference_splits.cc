#include "partition/reference_splits.h"

#include "instances/generator/generate.h"
#include "model/error.h"

namespace optpipe::partition {
namespace {

// `units` over `stages`: even, the rest one each to stages 1, 2, ... (then 0, wrapping).
std::vector<int> spread(int units, int stages) {
  std::vector<int> split(stages, units / stages);
  int extra = units % stages;
  for (int s = 1; s < stages - 1 && extra > 0; ++s, --extra) ++split[s];
  for (int s = 0; extra > 0; s = (s + 1) % stages, --extra) ++split[s];
  return split;
}

}  // namespace

std::vector<int> uniform_split(int layers, int stages) { return spread(layers, stages); }

std::optional<std::vector<int>> generator_default_split(int layers, int stages) {
  try {
    return gen::split_layers(layers, stages, {});
  } catch (const InputError&) {
    return std::nullopt;  // the generator wants an explicit split here
  }
}

std::optional<std::vector<int>> megatron_split(int layers, int stages) {
  if (stages < 2) return std::nullopt;
  std::vector<int> split = spread(layers + 2, stages);
  split.front() -= 1;
  split.back() -= 1;
  if (split.front() < 0 || split.back() < 0) return std::nullopt;
  return split;
}

std::string split_text(const std::vector<int>& split) {
  std::string out;
  for (int v : split) out += (out.empty() ? "" : ",") + std::to_string(v);
  return out;
}

}  // namespace optpipe::partition
