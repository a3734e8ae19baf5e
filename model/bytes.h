// Byte quantities: parsing "80GiB"-style strings and printing sizes for people.
//
// Accepted units (case-sensitive, optional space between number and unit):
//   B; binary KiB MiB GiB TiB (powers of 1024); decimal kB KB MB GB TB (powers of 1000).
// A plain number is bytes. Byte counts are doubles: instances may carry fractional bytes
// (e.g. 0.4 of an activation), and the simulator keeps them exact to double precision.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace optpipe {

// Parses "80GiB", "512 MiB", "1.5e9", "12B". Returns nullopt and sets *why on failure.
std::optional<double> parse_bytes(std::string_view text, std::string* why);

// "12.5 GiB", "640 MiB", "12 B": binary units, 3 significant digits, for messages and reports.
std::string format_bytes(double bytes);

}  // namespace optpipe
