#include "viz/gantt_text.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <sstream>

namespace optpipe {
namespace {

char mb_char(int j) {
  static const char* digits = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
  return j < 62 ? digits[j] : '+';
}

void paint(std::string& row, int a, int b, char head, char mb) {
  const int n = static_cast<int>(row.size());
  a = std::clamp(a, 0, n);
  b = std::clamp(b, a, n);
  for (int c = a; c < b; ++c) row[c] = c == a ? head : (c == a + 1 ? mb : '-');
}

}  // namespace

std::string render_text_gantt(const Instance& inst, const Schedule& sch, const SimResult& sim,
                              const TextGanttOptions& o) {
  double end = sim.makespan;
  for (const Transfer& t : sim.transfers) end = std::max(end, t.started ? t.end : t.request);
  const double q = o.quantum > 0 ? o.quantum : (end > 0 ? end / std::max(1, o.width) : 1.0);
  const int cols = std::max(1, static_cast<int>(std::ceil(end / q - 1e-9)));
  auto col = [&](double t) { return static_cast<int>(std::floor(t / q + 0.5)); };
  const auto stages = inst.stages_by_device();
  std::ostringstream out;
  const int label = 5;
  if (o.ruler) {
    std::string ruler(static_cast<std::size_t>(cols), ' ');
    for (int c = 0; c < cols; c += 10) {
      std::ostringstream mark;
      mark << '|' << c * q;
      const std::string m = mark.str();
      for (std::size_t i = 0; i < m.size() && c + static_cast<int>(i) < cols; ++i) ruler[c + i] = m[i];
    }
    out << std::string(label, ' ') << ' ' << ruler << "\n";
  }
  for (int d = 0; d < inst.num_devices(); ++d) {
    std::string row(static_cast<std::size_t>(cols), '.');
    const auto& list = sch.devices[d];
    for (std::size_t k = 0; k < list.size(); ++k) {
      const Action& a = list[k];
      if (!a.is_compute() || d >= static_cast<int>(sim.timeline.size()) || !sim.timeline[d][k].done()) continue;
      const ActionTiming& tm = sim.timeline[d][k];
      char head = type_letter(a.type);
      if (!stages[d].empty() && a.stage != stages[d].front()) head = static_cast<char>(std::tolower(head));
      paint(row, col(tm.start), col(tm.end), head, mb_char(a.mb));
    }
    std::string name = "d" + std::to_string(d);
    out << name << std::string(label - name.size(), ' ') << '|' << row << "\n";
    if (!o.transfers) continue;
    std::string d2h(static_cast<std::size_t>(cols), '.'), h2d(static_cast<std::size_t>(cols), '.');
    bool any_d2h = false, any_h2d = false;
    for (const Transfer& t : sim.transfers) {
      if (t.device != d || !t.started) continue;
      const bool off = t.kind == Transfer::Kind::kOffload;
      paint(off ? d2h : h2d, col(t.start), col(t.end), off ? '>' : '<', mb_char(t.mb));
      (off ? any_d2h : any_h2d) = true;
    }
    if (any_d2h) out << name << '>' << std::string(label - name.size() - 1, ' ') << '|' << d2h << "\n";
    if (any_h2d) out << name << '<' << std::string(label - name.size() - 1, ' ') << '|' << h2d << "\n";
  }
  return out.str();
}

}  // namespace optpipe
