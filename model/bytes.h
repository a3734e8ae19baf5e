// Byte quantities: parsing "80GiB"-style strings and printing sizes for people.
//
// Accepted units (any case, optional space between number and unit):
//   B; binary KiB MiB GiB TiB and K M G T (powers of 1024: "60G" and "60gib" are 60 GiB, as in
//   Docker, Slurm and Java); decimal KB MB GB TB (powers of 1000).
// A plain number is bytes in a file; a command-line flag wants a unit (parse_byte_flag). Byte counts are doubles: instances may carry fractional bytes
// (e.g. 0.4 of an activation), and the simulator keeps them exact to double precision.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace optpipe {

// Parses "80GiB", "512 MiB", "1.5e9", "12B". Returns nullopt and sets *why on failure.
std::optional<double> parse_bytes(std::string_view text, std::string* why);

// The same for command-line flags (--memory-limit, --workspace, --pool-memory): a unit is
// required, since "--memory-limit 60" meaning 60 bytes is never what was meant; 0 may go
// without one.
std::optional<double> parse_byte_flag(std::string_view text, std::string* why);

// "12.5 GiB", "640 MiB", "12 B": binary units, 3 significant digits, for messages and reports.
std::string format_bytes(double bytes);

}  // namespace optpipe
