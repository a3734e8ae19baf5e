// Number checks for the command's flags, with messages a person reads at a glance: "--threads:
// must be at least 0, not -1". CLI11's NonNegativeNumber and PositiveNumber print their upper
// end, DBL_MAX, with all its 309 digits, and PositiveNumber calls its lower end 0.000000 (issue
// 23); these name only the end that was crossed, and print numbers with %g.
#pragma once

#include <string>

#include <CLI/CLI.hpp>

namespace optpipe::cli {

// A number as people write it: up to 6 significant digits, and no digit strings of huge or tiny
// values (DBL_MAX is "1.8e308", not 309 digits).
std::string readable_number(double x);

// The value is a number >= `min`.
CLI::Validator at_least(double min);
// The value is a number > `min`.
CLI::Validator more_than(double min);
// The value is a number in [lo, hi].
CLI::Validator from_to(double lo, double hi);

}  // namespace optpipe::cli
