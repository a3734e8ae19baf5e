#include "frontier/memory_limits.h"

#include <algorithm>
#include <string>

#include "model/bytes.h"
#include "model/error.h"

namespace optpipe::frontier {

Instance with_memory_limit(const Instance& instance, double limit) {
  Instance out = instance;
  for (Device& d : out.devices) d.memory_limit = limit;
  return out;
}

double unconstrained_limit(const Instance& instance) {
  std::vector<double> need(instance.devices.size(), 0.0);
  for (std::size_t d = 0; d < need.size(); ++d) need[d] = instance.devices[d].static_memory;
  for (const Stage& st : instance.stages) need[st.device] += instance.microbatches * st.activation;
  return need.empty() ? 0.0 : *std::max_element(need.begin(), need.end());
}

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  return s;
}

std::optional<double> parse_end(std::string_view text, const char* which, std::string_view whole) {
  text = trim(text);
  if (text.empty()) return std::nullopt;
  std::string why;
  const std::optional<double> bytes = parse_byte_flag(text, &why);
  const std::string where = "--limits '" + std::string(whole) + "': the " + which + " end '" + std::string(text) + "'";
  if (!bytes) throw InputError(where + ": " + why);
  if (!(*bytes > 0)) throw InputError(where + ": must be more than 0 bytes");
  return bytes;
}

}  // namespace

LimitRange parse_limit_range(std::string_view text) {
  const std::size_t dots = text.find("..");
  if (dots == std::string_view::npos) {
    throw InputError("--limits '" + std::string(text) +
                     "': expected LOW..HIGH with units, e.g. 20GiB..80GiB (an end may be left out: ..80GiB)");
  }
  LimitRange r;
  r.low = parse_end(text.substr(0, dots), "lower", text);
  r.high = parse_end(text.substr(dots + 2), "upper", text);
  return r;
}

std::vector<double> limit_grid(double low, double high, int steps) {
  if (steps <= 1 || !(high > low)) return {low};
  std::vector<double> out;
  out.reserve(static_cast<std::size_t>(steps));
  for (int i = 0; i < steps; ++i) {
    // The ends exactly, the others evenly between them.
    out.push_back(i == steps - 1 ? high : low + (high - low) * i / (steps - 1));
  }
  return out;
}

}  // namespace optpipe::frontier
