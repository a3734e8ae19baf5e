// Reading and writing instance files (`optpipe-instance/1`, spec §5).
//
// The reader is strict: every error names the field path and the reason, unknown fields are
// errors, byte fields accept "80GiB"-style strings. Things that are legal but probably not
// meant (a weight_activation on an unsplit instance, which the spec fixes at 0) are returned as
// warnings for the caller to print.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/instance.h"

namespace optpipe {

inline constexpr const char* kInstanceFormat = "optpipe-instance/1";
// The most stages x microbatches an instance may have (docs/semantics.md, "Files"): a schedule of
// it has 2 or 3 actions each, which every tool holds in memory (about 150 bytes an op), and a
// file of a few KB (1000 stages, 1e6 microbatches) would otherwise ask for hundreds of GB.
inline constexpr double kMaxStageMicrobatches = 1e7;

// Parses an instance document. Throws InputError("field.path: reason").
Instance instance_from_json(const nlohmann::json& doc, std::vector<std::string>* warnings = nullptr);
// Parses instance text (JSON). Throws InputError.
Instance parse_instance(const std::string& text, std::vector<std::string>* warnings = nullptr);
// Reads an instance file. Throws InputError("path/to/file.json: field.path: reason").
Instance load_instance(const std::string& path, std::vector<std::string>* warnings = nullptr);

nlohmann::json instance_to_json(const Instance& instance);
void save_instance(const Instance& instance, const std::string& path);

// Reads a whole file ("-": standard input); throws InputError naming the file and why (no such
// file, a directory, no permission) when it cannot be read.
std::string read_text_file(const std::string& path);
// Writes a whole file: a regular file via a temporary and a rename, so a failed write never
// leaves half a file; "-" means standard output; devices and pipes are written in place.
void write_text_file(const std::string& path, const std::string& text);
// Throws InputError, saying why, when write_text_file(path, ...) could not write there (a
// folder that does not exist or may not be written, a directory given as the file, ...): for
// commands that work a long time before they write, so that they refuse at once. Creates and
// removes the temporary file write_text_file would use; "-" (standard output) always passes.
void check_writable(const std::string& path);

}  // namespace optpipe
