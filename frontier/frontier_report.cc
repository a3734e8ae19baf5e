#include "frontier/frontier_report.h"

#include <cmath>
#include <cstdio>
#include <sstream>

#include "model/bytes.h"
#include "model/schedule_io.h"
#include "model/time_text.h"

namespace optpipe::frontier {
namespace {

std::string percent(double v) {
  if (!std::isfinite(v)) return "-";
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.2f%%", 100.0 * v);
  return buf;
}

nlohmann::json number(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); }

std::string header(const FrontierResult& r) {
  std::ostringstream out;
  out << r.instance << ": memory-time frontier, " << r.points.size() << " limit" << (r.points.size() == 1 ? "" : "s")
      << " from " << format_bytes(r.low) << (r.low_default ? " (the memory floor)" : "") << " to "
      << format_bytes(r.high) << (r.high_default ? " (the peak of the best schedule without a memory limit)" : "")
      << ", every GPU at the same limit\n";
  out << "memory floor " << format_bytes(r.floor.limit) << ": " << r.floor.explain() << "; ";
  if (r.floor.proven) {
    out << "no schedule fits below it (each device holds that much when the B of that stage starts), and "
        << r.floor.witness << " fit at it\n";
  } else {
    out << "no schedule fits below " << format_bytes(r.floor.lower) << "; " << r.floor.witness << "\n";
  }
  if (r.unconstrained && r.unconstrained->has_schedule()) {
    const FrontierPoint& u = *r.unconstrained;
    out << "without a memory limit: " << fmt_ms(u.makespan) << ", bound " << fmt_ms(u.bound) << " (" << to_string(u.status)
        << "), peak " << format_bytes(r.high) << "\n";
  }
  return out.str();
}

std::string points_table(const FrontierResult& r) {
  std::ostringstream out;
  char line[512];
  std::snprintf(line, sizeof line, "  %10s %14s %14s %8s  %-11s %s\n", "limit", "makespan", "bound", "gap", "status",
                "schedule");
  out << line;
  for (const FrontierPoint& p : r.points) {
    const std::string from = p.has_schedule() ? p.source + (p.note.empty() ? "" : " (" + p.note + ")") : p.note;
    std::snprintf(line, sizeof line, "  %10s %14s %14s %8s  %-11s %s\n", format_bytes(p.limit).c_str(),
                  fmt_ms(p.makespan).c_str(), p.has_schedule() ? fmt_ms(p.bound).c_str() : "-", percent(p.gap).c_str(),
                  to_string(p.status), from.c_str());
    out << line;
  }
  return out.str();
}

std::string classics_table(const FrontierResult& r) {
  std::ostringstream out;
  out << "classic schedules (each fits from its simulated peak memory up; below it, it waits for memory or "
         "deadlocks):\n";
  char line[512];
  for (const ClassicPoint& c : r.classics) {
    if (c.schedule) {
      std::snprintf(line, sizeof line, "  %-12s fits from %10s (device %d)  makespan %14s%s\n", c.title.c_str(),
                    format_bytes(c.peak).c_str(), c.peak_device, fmt_ms(c.makespan).c_str(),
                    c.detail.empty() ? "" : ("  " + c.detail).c_str());
    } else {
      std::snprintf(line, sizeof line, "  %-12s -  %s\n", c.title.c_str(), c.reason.c_str());
    }
    out << line;
  }
  return out.str();
}

nlohmann::json point_json(const FrontierPoint& p) {
  nlohmann::json j{{"limit", p.limit},
                   {"status", to_string(p.status)},
                   {"makespan", number(p.makespan)},
                   {"bound", p.has_schedule() ? number(p.bound) : nlohmann::json(nullptr)},
                   {"gap", number(p.gap)},
                   {"run_limit", p.run_limit},
                   {"source", p.source},
                   {"note", p.note},
                   {"seconds", p.seconds}};
  j["peak_memory"] = p.schedule ? nlohmann::json(p.schedule->peak_memory) : nlohmann::json::array();
  j["schedule"] = p.schedule ? schedule_to_json(*p.schedule) : nlohmann::json(nullptr);
  return j;
}

nlohmann::json floor_json(const MemoryFloor& f) {
  return {{"limit", f.limit},
          {"lower", f.lower},
          {"proven", f.proven},
          {"device", f.device},
          {"stage", f.stage},
          {"static_memory", f.static_memory},
          {"activation", f.activation},
          {"held", f.held},
          {"per_device", f.per_device},
          {"witness", f.witness},
          {"explanation", f.explain()}};
}

nlohmann::json classic_json(const ClassicPoint& c) {
  if (!c.schedule) return {{"name", c.name}, {"title", c.title}, {"reason", c.reason}};
  return {{"name", c.name},         {"title", c.title},       {"peak", c.peak},
          {"peak_device", c.peak_device}, {"makespan", c.makespan}, {"detail", c.detail}};
}

}  // namespace

std::string frontier_table(const FrontierResult& r) {
  std::ostringstream out;
  out << header(r) << "\n" << points_table(r) << "\n" << classics_table(r);
  out << "\nmore memory never gives a worse makespan here: " << (r.monotone() ? "yes" : "NO");
  if (r.carried > 0) {
    out << " (" << r.carried << " limit" << (r.carried == 1 ? "" : "s")
        << " took a lower limit's schedule, run with memory capped there)";
  }
  out << "\n";
  char line[128];
  std::snprintf(line, sizeof line, "%.1f s of a %.1f s time limit%s\n", r.seconds, r.time_limit,
                r.interrupted ? ", stopped early" : "");
  out << line;
  return out.str();
}

nlohmann::json frontier_to_json(const FrontierResult& r) {
  nlohmann::json j{{"format", kFrontierFormat},
                   {"instance", r.instance},
                   {"time_limit", r.time_limit},
                   {"seconds", r.seconds},
                   {"interrupted", r.interrupted},
                   {"monotone", r.monotone()},
                   {"carried", r.carried}};
  j["floor"] = floor_json(r.floor);
  j["range"] = {{"low", r.low}, {"high", r.high}, {"steps", r.steps}, {"low_default", r.low_default},
                {"high_default", r.high_default}};
  j["unconstrained"] = r.unconstrained ? point_json(*r.unconstrained) : nlohmann::json(nullptr);
  j["points"] = nlohmann::json::array();
  for (const FrontierPoint& p : r.points) j["points"].push_back(point_json(p));
  j["classics"] = nlohmann::json::array();
  for (const ClassicPoint& c : r.classics) j["classics"].push_back(classic_json(c));
  return j;
}

FrontierChart frontier_chart(const FrontierResult& r) {
  FrontierChart c;
  c.title = r.instance + ": memory-time frontier";
  char sub[256];
  std::snprintf(sub, sizeof sub, "%zu limits, every GPU at the same limit; %.0f s in all", r.points.size(),
                r.time_limit);
  c.subtitle = sub;
  for (const FrontierPoint& p : r.points) {
    FrontierChartPoint q;
    q.limit = p.limit;
    if (p.has_schedule()) q.makespan = p.makespan, q.bound = p.bound;
    q.carried = p.has_schedule() && p.run_limit < p.limit;
    c.points.push_back(q);
  }
  for (const ClassicPoint& k : r.classics) {
    if (k.schedule) c.marks.push_back({k.title, k.peak, k.makespan});
  }
  c.floor = r.floor.limit;
  c.floor_label = "memory floor " + format_bytes(r.floor.limit);
  return c;
}

}  // namespace optpipe::frontier
