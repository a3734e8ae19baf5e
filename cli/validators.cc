#include "cli/validators.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>

namespace optpipe::cli {

std::string readable_number(double x) {
  if (std::isnan(x)) return "nan";
  if (std::isinf(x)) return x > 0 ? "inf" : "-inf";
  char buf[64];
  const double a = std::fabs(x);
  if (a < 1e15 && x == std::floor(x)) {
    std::snprintf(buf, sizeof buf, "%.0f", x);  // integers as they are: 1048576
    return buf;
  }
  std::snprintf(buf, sizeof buf, a >= 1e15 ? "%.2g" : "%.6g", x);  // DBL_MAX: 1.8e+308
  std::string s = buf;
  const std::size_t e = s.find('e');
  if (e == std::string::npos) return s;
  return s.substr(0, e) + "e" + std::to_string(std::atoi(s.c_str() + e + 1));  // 1.8e308, 1e-05 -> 1e-5
}

namespace {

// A validator named `description` that accepts a number for which `ok` holds, else says
// "must be <rule>, not <input>".
CLI::Validator number_check(const std::string& description, const std::string& rule,
                            std::function<bool(double)> ok) {
  return CLI::Validator(
      [rule, ok](std::string& input) -> std::string {
        double value = 0;
        if (!CLI::detail::lexical_cast(input, value)) return "must be a number, not \"" + input + "\"";
        if (!ok(value)) return "must be " + rule + ", not " + input;
        return {};
      },
      description);
}

}  // namespace

CLI::Validator at_least(double min) {
  const std::string m = readable_number(min);
  return number_check("NUMBER >= " + m, "at least " + m, [min](double v) { return v >= min; });
}

CLI::Validator more_than(double min) {
  const std::string m = readable_number(min);
  return number_check("NUMBER > " + m, "more than " + m, [min](double v) { return v > min; });
}

CLI::Validator from_to(double lo, double hi) {
  const std::string l = readable_number(lo), h = readable_number(hi);
  return number_check("NUMBER in [" + l + ", " + h + "]", "from " + l + " to " + h,
                      [lo, hi](double v) { return v >= lo && v <= hi; });
}

}  // namespace optpipe::cli
