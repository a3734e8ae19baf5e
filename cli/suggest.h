// "Did you mean" for the command line (issue 23): the known word nearest to a mistyped one.
//
// Distance: Levenshtein's edit distance (insertions, deletions, substitutions; V. I. Levenshtein,
// "Binary codes capable of correcting deletions, insertions and reversals", 1966), by the usual
// two-row dynamic programme, O(|a| x |b|) per pair. A candidate counts when it is within
// max(2, |word| / 3) edits, or when one word is a prefix of the other (`--time` for
// `--time-limit`); the nearest wins, the first listed on ties.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace optpipe::cli {

int edit_distance(const std::string& a, const std::string& b);

// The candidate nearest to `word`, or nothing when none is close enough (see above).
std::optional<std::string> nearest_word(const std::string& word, const std::vector<std::string>& candidates);

// When argv[1] is a word that names no subcommand: the error message for it (with the nearest
// subcommand and the list of them); "" otherwise.
std::string unknown_subcommand(const CLI::App& app, int argc, const char* const* argv);

// After a parse error: a "did you mean ...?" line for a mistyped subcommand (argv[1]) or for
// each unknown --flag of the subcommand given, or "" when there is nothing to suggest.
std::string did_you_mean(const CLI::App& app, int argc, const char* const* argv);

}  // namespace optpipe::cli
