// The exit codes of `optpipe`: 0 success; 1 the answer is negative (an invalid or infeasible
// schedule, no heuristic fits); 2 bad input (a wrong flag, an unreadable or malformed file).
// main() turns an InputError into kBadInput; the commands' run functions return the others.
#pragma once

namespace optpipe::cli {

constexpr int kOk = 0;
constexpr int kNegative = 1;
constexpr int kBadInput = 2;

}  // namespace optpipe::cli
