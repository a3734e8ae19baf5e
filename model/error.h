// Errors raised by the model layer.
//
// InputError carries a one-line, user-facing message that names what is wrong and where
// (a file, a field path such as `stages[3].forward`, a schedule position), e.g.
//   instances/x.json: stages[3].forward: must be a number >= 0, got -1
// The CLI prints it as is and exits non-zero; nothing in the model layer prints or exits.
#pragma once

#include <stdexcept>
#include <string>

namespace optpipe {

class InputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace optpipe
