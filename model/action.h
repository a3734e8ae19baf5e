// One entry of a device's program (spec §3): `F3.7`, `F3.7@0.5`, `B3.7`, `W3.7`, `R3.7`.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "model/instance.h"

namespace optpipe {

struct Action {
  OpType type = OpType::F;
  int stage = 0;
  int mb = 0;       // microbatch
  double r = 0.0;   // offload fraction; only F may carry r > 0

  bool is_compute() const { return type != OpType::R; }
  friend bool operator==(const Action&, const Action&) = default;
};

inline Action make_f(int s, int j, double r = 0.0) { return {OpType::F, s, j, r}; }
inline Action make_b(int s, int j) { return {OpType::B, s, j, 0.0}; }
inline Action make_w(int s, int j) { return {OpType::W, s, j, 0.0}; }
inline Action make_r(int s, int j) { return {OpType::R, s, j, 0.0}; }

char type_letter(OpType t);
// Text form: "F3.7", "F3.7@0.5" (r printed in its shortest exact form), "B3.7", "W3.7", "R3.7".
std::string to_string(const Action& a);
// Parses the text form; on failure returns nullopt and sets *why to a reason.
std::optional<Action> parse_action(std::string_view text, std::string* why);

}  // namespace optpipe
