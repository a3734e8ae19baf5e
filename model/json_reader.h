// Strict JSON field access for the file formats (spec §5): every read names the field path,
// unknown fields are errors, and nothing falls back to a silent default.
//
// For the readers of our file formats: model/ (instance_io.cc, schedule_io.cc), the cache's
// import (cache/cache_transfer.cc) and partition/ (the layer profile reader). Errors are
// InputError("path: reason").
#pragma once

#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace optpipe::json_reader {

using nlohmann::json;

// Parses text as JSON; a syntax error, a duplicate key, a number beyond a double or nesting
// deeper than kMaxNesting becomes InputError naming the place.
inline constexpr std::size_t kMaxNesting = 64;
json parse_text(std::string_view text);

[[noreturn]] void fail(const std::string& path, const std::string& reason);
std::string describe(const json& value);  // short type/value description for messages
std::string join(const std::string& path, std::string_view key);
std::string index(const std::string& path, std::size_t i);

void expect_object(const json& value, const std::string& path);
void expect_array(const json& value, const std::string& path);
// Rejects any key of `object` that is not in `allowed`, naming the allowed ones.
void expect_only_keys(const json& object, const std::string& path,
                      std::initializer_list<std::string_view> allowed);

// Checks the document's "format" (before its other keys, so that a file of another kind is named
// as such): a known format of another kind gives 'format: "optpipe-schedule/1" is a schedule, not an
// instance (which must be "optpipe-instance/1"): are INSTANCE and SCHEDULE swapped?'; any other value says what it must be.
// `kind` is what the caller reads ("instance", "schedule").
void expect_format(const json& doc, std::string_view expected, std::string_view kind);

const json& require(const json& object, const std::string& path, std::string_view key);
const json* optional(const json& object, std::string_view key);  // absent or null: nullptr

double number(const json& value, const std::string& path);           // finite number
double non_negative(const json& value, const std::string& path);     // finite number >= 0
double bytes(const json& value, const std::string& path);            // number or "80GiB", 0 to kMaxBytes
// A duration in ms: a finite number from 0 to kMaxMilliseconds. The caps refuse values no
// pipeline has (a forward of 1e308 ms made every makespan inf and every bubble NaN) while
// leaving every real one far inside.
inline constexpr double kMaxMilliseconds = 1e9;  // 11.6 days for one op
inline constexpr double kMaxBytes = 1e21;        // 1 ZB on one GPU
double duration(const json& value, const std::string& path);
long long integer(const json& value, const std::string& path);       // integral number
bool boolean(const json& value, const std::string& path);
std::string string(const json& value, const std::string& path);

}  // namespace optpipe::json_reader
