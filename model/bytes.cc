#include "model/bytes.h"

#include <array>
#include <charconv>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <utility>

namespace optpipe {
namespace {

// Longest first, matched without regard to case ("gib", "GiB" and "GIB" are one unit). A lone
// letter is binary, as in Docker's --memory, Slurm's --mem and Java's -Xmx: "60G" is 60 GiB.
constexpr std::array<std::pair<std::string_view, double>, 13> kUnits{{
    {"TiB", 1099511627776.0},
    {"GiB", 1073741824.0},
    {"MiB", 1048576.0},
    {"KiB", 1024.0},
    {"TB", 1e12},
    {"GB", 1e9},
    {"MB", 1e6},
    {"KB", 1e3},
    {"T", 1099511627776.0},
    {"G", 1073741824.0},
    {"M", 1048576.0},
    {"K", 1024.0},
    {"B", 1.0},
}};

bool ends_with_ignoring_case(std::string_view s, std::string_view suffix) {
  if (s.size() <= suffix.size()) return false;  // a unit needs a number before it
  const std::string_view tail = s.substr(s.size() - suffix.size());
  for (std::size_t i = 0; i < suffix.size(); ++i) {
    const auto a = static_cast<unsigned char>(tail[i]), b = static_cast<unsigned char>(suffix[i]);
    if (std::tolower(a) != std::tolower(b)) return false;
  }
  return true;
}

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
    if (ends_with_ignoring_case(s, unit)) {
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

std::optional<double> parse_byte_flag(std::string_view text, std::string* why) {
  const std::optional<double> bytes = parse_bytes(text, why);
  if (!bytes) return bytes;
  const std::string_view s = trim(text);
  const bool has_unit = !s.empty() && std::isalpha(static_cast<unsigned char>(s.back()));
  if (!has_unit && *bytes != 0) {
    if (why) {
      *why = "\"" + std::string(s) + "\" needs a unit, e.g. \"" + std::string(s) + "GiB\" or \"" + std::string(s) +
             "GB\" (a bare number would be " + std::string(s) + " bytes)";
    }
    return std::nullopt;
  }
  return bytes;
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
