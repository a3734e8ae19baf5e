#include "model/action.h"

#include <charconv>
#include <cmath>

namespace optpipe {

char type_letter(OpType t) {
  switch (t) {
    case OpType::F: return 'F';
    case OpType::B: return 'B';
    case OpType::W: return 'W';
    case OpType::R: return 'R';
  }
  return '?';
}

std::string to_string(const Action& a) {
  std::string out;
  out += type_letter(a.type);
  out += std::to_string(a.stage);
  out += '.';
  out += std::to_string(a.mb);
  if (a.type == OpType::F && a.r != 0.0) {
    char buf[32];
    auto [ptr, ec] = std::to_chars(buf, buf + sizeof buf, a.r);
    out += '@';
    out.append(buf, ec == std::errc() ? ptr : buf);
  }
  return out;
}

namespace {

bool parse_index(std::string_view s, int* out) {
  if (s.empty() || s.size() > 9) return false;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
  }
  std::from_chars(s.data(), s.data() + s.size(), *out);
  return true;
}

}  // namespace

std::optional<Action> parse_action(std::string_view text, std::string* why) {
  auto bad = [&](const std::string& reason) -> std::optional<Action> {
    if (why) {
      *why = "\"" + std::string(text) + "\" is not an action: " + reason +
             " (expected e.g. F3.7, F3.7@0.5, B3.7, W3.7 or R3.7)";
    }
    return std::nullopt;
  };
  if (text.size() < 4) return bad("too short");
  Action a;
  switch (text[0]) {
    case 'F': a.type = OpType::F; break;
    case 'B': a.type = OpType::B; break;
    case 'W': a.type = OpType::W; break;
    case 'R': a.type = OpType::R; break;
    default: return bad("the type must be F, B, W or R");
  }
  std::string_view rest = text.substr(1);
  std::string_view level;
  if (auto at = rest.find('@'); at != std::string_view::npos) {
    if (a.type != OpType::F) return bad("only F may carry an offload level (@r)");
    level = rest.substr(at + 1);
    rest = rest.substr(0, at);
    if (level.empty()) return bad("missing offload level after '@'");
  }
  const auto dot = rest.find('.');
  if (dot == std::string_view::npos) return bad("missing '.' between stage and microbatch");
  if (!parse_index(rest.substr(0, dot), &a.stage)) return bad("the stage must be a non-negative integer");
  if (!parse_index(rest.substr(dot + 1), &a.mb)) return bad("the microbatch must be a non-negative integer");
  if (!level.empty()) {
    auto [ptr, ec] = std::from_chars(level.data(), level.data() + level.size(), a.r);
    if (ec != std::errc() || ptr != level.data() + level.size() || !std::isfinite(a.r)) {
      return bad("the offload level must be a number");
    }
    if (a.r < 0 || a.r > 1) return bad("the offload level must be in [0, 1]");
  }
  return a;
}

}  // namespace optpipe
