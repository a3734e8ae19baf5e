#include "cli/suggest.h"

#include <algorithm>
#include <cstddef>

namespace optpipe::cli {

int edit_distance(const std::string& a, const std::string& b) {
  std::vector<int> prev(b.size() + 1), cur(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) prev[j] = static_cast<int>(j);
  for (std::size_t i = 1; i <= a.size(); ++i) {
    cur[0] = static_cast<int>(i);
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const int substitute = prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, substitute});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

std::optional<std::string> nearest_word(const std::string& word, const std::vector<std::string>& candidates) {
  const int allowed = std::max(2, static_cast<int>(word.size()) / 3);
  std::optional<std::string> best;
  int best_distance = allowed + 1;
  for (const std::string& c : candidates) {
    if (c == word) return std::nullopt;  // not mistyped
    int d = edit_distance(word, c);
    const bool prefix = word.size() >= 3 && (c.rfind(word, 0) == 0 || word.rfind(c, 0) == 0);
    if (prefix) d = std::min(d, allowed);
    if (d < best_distance) {
      best_distance = d;
      best = c;
    }
  }
  return best;
}

namespace {

std::vector<std::string> subcommand_names(const CLI::App& app) {
  std::vector<std::string> names;
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) names.push_back(sub->get_name());
  return names;
}

std::vector<std::string> long_flags(const CLI::App& sub) {
  std::vector<std::string> flags;
  for (const CLI::Option* opt : sub.get_options()) {
    for (const std::string& name : opt->get_lnames()) flags.push_back("--" + name);
  }
  return flags;
}

const CLI::App* child_named(const CLI::App& app, const std::string& name) {
  for (const CLI::App* s : app.get_subcommands([](const CLI::App*) { return true; })) {
    if (s->get_name() == name) return s;
  }
  return nullptr;
}

}  // namespace

std::string unknown_subcommand(const CLI::App& app, int argc, const char* const* argv) {
  if (argc < 2) return "";
  const std::string first = argv[1];
  if (first.empty() || first[0] == '-') return "";
  const std::vector<std::string> subs = subcommand_names(app);
  if (std::find(subs.begin(), subs.end(), first) != subs.end()) return "";
  std::string out = "unknown command \"" + first + "\"";
  if (const auto near = nearest_word(first, subs)) out += " (did you mean `optpipe " + *near + "`?)";
  std::string all;
  for (const std::string& s : subs) all += (all.empty() ? "" : ", ") + s;
  return out + "; the commands: " + all;
}

std::string did_you_mean(const CLI::App& app, int argc, const char* const* argv) {
  if (argc < 2) return "";
  const std::string first = argv[1];
  if (first.empty() || first[0] == '-') return "";
  const std::vector<std::string> subs = subcommand_names(app);
  if (std::find(subs.begin(), subs.end(), first) == subs.end()) {
    const auto near = nearest_word(first, subs);
    return near ? "did you mean `optpipe " + *near + "`?" : "";
  }
  // The innermost subcommand named (`cache prune`): its flags are the known ones.
  const CLI::App* sub = &app;
  int next = 1;
  for (const CLI::App* inner = &app; inner && next < argc; ++next) {
    inner = child_named(*sub, argv[next]);
    if (!inner) break;
    sub = inner;
  }
  if (sub == &app) return "";
  const std::vector<std::string> flags = long_flags(*sub);
  std::string out;
  for (int i = next; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg.rfind("--", 0) != 0 || arg == "--") continue;
    arg = arg.substr(0, arg.find('='));
    if (std::find(flags.begin(), flags.end(), arg) != flags.end()) continue;
    if (const auto near = nearest_word(arg, flags)) {
      out += (out.empty() ? "" : "\n") + std::string(arg) + ": did you mean " + *near + "?";
    }
  }
  return out;
}

}  // namespace optpipe::cli
