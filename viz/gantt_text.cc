#include "viz/gantt_text.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <sstream>
#include <vector>

namespace optpipe {
namespace {

// One box of the chart: an op on its device's row, or a transfer on its lane.
struct Box {
  int device;
  enum class Lane { kCompute, kD2H, kH2D } lane;
  double start, end;
  char head;  // F, B, W (f, b, w: a later stage), '>' or '<'
  int mb;
};

std::vector<Box> boxes(const Instance& inst, const Schedule& sch, const SimResult& sim, bool transfers) {
  std::vector<Box> out;
  const auto stages = inst.stages_by_device();
  for (int d = 0; d < inst.num_devices() && d < static_cast<int>(sim.timeline.size()); ++d) {
    const auto& list = sch.devices[d];
    for (std::size_t k = 0; k < list.size(); ++k) {
      const Action& a = list[k];
      if (!a.is_compute() || !sim.timeline[d][k].done()) continue;
      char head = type_letter(a.type);
      if (!stages[d].empty() && a.stage != stages[d].front()) head = static_cast<char>(std::tolower(head));
      out.push_back({d, Box::Lane::kCompute, sim.timeline[d][k].start, sim.timeline[d][k].end, head, a.mb});
    }
  }
  if (!transfers) return out;
  for (const Transfer& t : sim.transfers) {
    if (!t.started) continue;
    const bool off = t.kind == Transfer::Kind::kOffload;
    out.push_back({t.device, off ? Box::Lane::kD2H : Box::Lane::kH2D, t.start, t.end, off ? '>' : '<', t.mb});
  }
  return out;
}

int column(double t, double q) { return static_cast<int>(std::floor(t / q + 0.5)); }
int span(const Box& b, double q) { return column(b.end, q) - column(b.start, q); }
int label_size(const Box& b) { return 1 + static_cast<int>(std::to_string(b.mb).size()); }

// Fitted charts: the quantum, shrunk from `q` until every box with room for two characters at `q`
// has room for its whole label; `q` itself when that takes more than `max_cols` columns.
double widen_for_labels(const std::vector<Box>& all, double q, double end, double max_cols) {
  std::vector<const Box*> want;
  for (const Box& b : all) {
    if (span(b, q) >= 2) want.push_back(&b);  // fitting now, it must still fit after rounding at a finer q
  }
  const auto all_fit = [&](double quantum) {
    return std::all_of(want.begin(), want.end(), [&](const Box* b) { return span(*b, quantum) >= label_size(*b); });
  };
  double finer = q;
  while (!all_fit(finer) && end / (finer * 0.97) <= max_cols) finer *= 0.97;
  return all_fit(finer) ? finer : q;  // half a fix only makes the chart wider
}

// Writes `b` into `row`: its head, its number when all of it fits, then '-'.
void paint(std::string& row, const Box& box, double q) {
  const int n = static_cast<int>(row.size());
  const int a = std::clamp(column(box.start, q), 0, n), b = std::clamp(column(box.end, q), a, n);
  const std::string number = std::to_string(box.mb);
  const bool numbered = b - a >= 1 + static_cast<int>(number.size());
  for (int c = a; c < b; ++c) {
    const int i = c - a - 1;
    row[c] = c == a ? box.head : (numbered && i < static_cast<int>(number.size()) ? number[i] : '-');
  }
}

std::string ruler(int cols, double q) {
  std::string line(static_cast<std::size_t>(cols), ' ');
  for (int c = 0; c < cols; c += 10) {
    std::ostringstream mark;
    mark << '|' << c * q;
    const std::string m = mark.str();
    for (std::size_t i = 0; i < m.size() && c + static_cast<int>(i) < cols; ++i) line[c + i] = m[i];
  }
  return line;
}

}  // namespace

std::string render_text_gantt(const Instance& inst, const Schedule& sch, const SimResult& sim,
                              const TextGanttOptions& o) {
  double end = sim.makespan;
  for (const Transfer& t : sim.transfers) end = std::max(end, t.started ? t.end : t.request);
  const std::vector<Box> all = boxes(inst, sch, sim, o.transfers);
  double q = o.quantum > 0 ? o.quantum : (end > 0 ? end / std::max(1, o.width) : 1.0);
  if (o.quantum <= 0 && end > 0) q = widen_for_labels(all, q, end, std::max(1.0, o.max_widen) * std::max(1, o.width));
  const int cols = std::max(1, static_cast<int>(std::ceil(end / q - 1e-9)));
  const int label = 5;
  std::ostringstream out;
  if (o.ruler) out << std::string(label, ' ') << ' ' << ruler(cols, q) << "\n";
  for (int d = 0; d < inst.num_devices(); ++d) {
    std::string row(static_cast<std::size_t>(cols), '.'), d2h = row, h2d = row;
    bool any_d2h = false, any_h2d = false;
    for (const Box& b : all) {
      if (b.device != d) continue;
      if (b.lane == Box::Lane::kCompute) paint(row, b, q);
      if (b.lane == Box::Lane::kD2H) paint(d2h, b, q), any_d2h = true;
      if (b.lane == Box::Lane::kH2D) paint(h2d, b, q), any_h2d = true;
    }
    const std::string name = "d" + std::to_string(d);
    out << name << std::string(label - name.size(), ' ') << '|' << row << "\n";
    if (any_d2h) out << name << '>' << std::string(label - name.size() - 1, ' ') << '|' << d2h << "\n";
    if (any_h2d) out << name << '<' << std::string(label - name.size() - 1, ' ') << '|' << h2d << "\n";
  }
  return out.str();
}

}  // namespace optpipe
