#include "model/bytes.h"

#include <array>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <utility>

namespace optpipe {
namespace {

constexpr std::array<std::pair<std::string_view, double>, 10> kUnits{{
    {"TiB", 1099511627776.0},
    {"GiB", 1073741824.0},
    {"MiB", 1048576.0},
    {"KiB", 1024.0},
    {"TB", 1e12},
    {"GB", 1e9},
    {"MB", 1e6},
    {"kB", 1e3},
    {"KB", 1e3},
    {"B", 1.0},
}};

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

}  // namespace

std::optional<double> parse_bytes(std::string_view text, std::string* why) {
  std::string_view s = trim(text);
  double scale = 1.0;
  for (const auto& [unit, factor] : kUnits) {
    if (s.size() > unit.size() && s.substr(s.size() - unit.size()) == unit) {
      scale = factor;
      s = trim(s.substr(0, s.size() - unit.size()));
      break;
    }
  }
  double value = 0.0;
  const char* first = s.data();
  const char* last = s.data() + s.size();
  auto [ptr, ec] = std::from_chars(first, last, value);
  if (s.empty() || ec != std::errc() || ptr != last || !std::isfinite(value)) {
    if (why) {
      *why = "\"" + std::string(text) +
             "\" is not a byte size (expected a number or e.g. \"80GiB\", \"512MiB\", \"1.5GB\")";
    }
    return std::nullopt;
  }
  return value * scale;
}

std::string format_bytes(double bytes) {
  const double a = std::fabs(bytes);
  const char* unit = "B";
  double v = bytes;
  if (a >= 1099511627776.0) {
    unit = "TiB";
    v = bytes / 1099511627776.0;
  } else if (a >= 1073741824.0) {
    unit = "GiB";
    v = bytes / 1073741824.0;
  } else if (a >= 1048576.0) {
    unit = "MiB";
    v = bytes / 1048576.0;
  } else if (a >= 1024.0) {
    unit = "KiB";
    v = bytes / 1024.0;
  }
  char buf[64];
  if (unit[0] == 'B') {
    std::snprintf(buf, sizeof buf, "%.0f B", v);
  } else {
    const double av = std::fabs(v);
    const int decimals = av >= 100 ? 0 : (av >= 10 ? 1 : 2);
    std::snprintf(buf, sizeof buf, "%.*f %s", decimals, v, unit);
  }
  return buf;
}

}  // namespace optpipe
