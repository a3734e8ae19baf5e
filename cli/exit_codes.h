// The exit codes of `optpipe`: 0 success; 1 the answer is negative (an invalid or infeasible
// schedule, no heuristic fits); 2 bad input (a wrong flag, an unreadable or malformed file); 3 a
// run failed (a training rank failed or timed out: RunFailed) or an internal error (a bug).
// main() turns an InputError into kBadInput and a RunFailed into kRunFailed; the commands' run
// functions return the others.
#pragma once

#include <stdexcept>

namespace optpipe::cli {

constexpr int kOk = 0;
constexpr int kNegative = 1;
constexpr int kBadInput = 2;
constexpr int kRunFailed = 3;

// A command that did its work but whose answer is negative, found inside a callback (e.g.
// `export --drop-offload` wrote a schedule that no longer fits): main() prints "optpipe: ..."
// and exits with kNegative.
class NegativeAnswer : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A run that failed for a reason outside the input (a rank died, a wait timed out), as opposed
// to a bug: main() prints "optpipe: error: ..." and exits with kRunFailed.
class RunFailed : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace optpipe::cli
