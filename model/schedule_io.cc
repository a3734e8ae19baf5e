#include "model/schedule_io.h"

#include <sstream>

#include "model/error.h"
#include "model/instance_io.h"
#include "model/json_reader.h"

namespace optpipe {

namespace jr = json_reader;
using nlohmann::json;

Schedule schedule_from_json(const json& doc) {
  jr::expect_object(doc, "");
  jr::expect_format(doc, kScheduleFormat, "schedule");
  jr::expect_only_keys(doc, "",
                       {"format", "instance", "devices", "makespan", "bubble", "peak_memory", "status",
                        "bound", "gap", "solver"});
  Schedule sch;
  sch.instance = jr::string(jr::require(doc, "", "instance"), "instance");
  const json& devices = jr::require(doc, "", "devices");
  jr::expect_array(devices, "devices");
  for (std::size_t d = 0; d < devices.size(); ++d) {
    const std::string dpath = jr::index("devices", d);
    jr::expect_array(devices[d], dpath);
    std::vector<Action> list;
    list.reserve(devices[d].size());
    for (std::size_t k = 0; k < devices[d].size(); ++k) {
      const std::string apath = jr::index(dpath, k);
      const std::string text = jr::string(devices[d][k], apath);
      std::string why;
      auto action = parse_action(text, &why);
      if (!action) jr::fail(apath, why);
      list.push_back(*action);
    }
    sch.devices.push_back(std::move(list));
  }
  if (const json* v = jr::optional(doc, "makespan")) sch.makespan = jr::number(*v, "makespan");
  if (const json* v = jr::optional(doc, "bubble")) sch.bubble = jr::number(*v, "bubble");
  if (const json* v = jr::optional(doc, "bound")) sch.bound = jr::number(*v, "bound");
  if (const json* v = jr::optional(doc, "gap")) sch.gap = jr::number(*v, "gap");
  if (const json* v = jr::optional(doc, "solver")) sch.solver = jr::string(*v, "solver");
  if (const json* v = jr::optional(doc, "status")) {
    sch.status = jr::string(*v, "status");
    if (sch.status != "optimal" && sch.status != "feasible" && sch.status != "infeasible") {
      jr::fail("status", "must be \"optimal\", \"feasible\" or \"infeasible\", got \"" + sch.status + "\"");
    }
  }
  if (const json* v = jr::optional(doc, "peak_memory")) {
    jr::expect_array(*v, "peak_memory");
    for (std::size_t d = 0; d < v->size(); ++d) sch.peak_memory.push_back(jr::bytes((*v)[d], jr::index("peak_memory", d)));
  }
  return sch;
}

Schedule parse_schedule(const std::string& text) { return schedule_from_json(jr::parse_text(text)); }

Schedule load_schedule(const std::string& path) {
  const std::string text = read_text_file(path);
  try {
    return parse_schedule(text);
  } catch (const InputError& e) {
    throw InputError(path + ": " + e.what());
  }
}

json schedule_to_json(const Schedule& sch) {
  json doc = {{"format", kScheduleFormat}, {"instance", sch.instance}, {"devices", json::array()}};
  for (const auto& list : sch.devices) {
    json actions = json::array();
    for (const Action& a : list) actions.push_back(to_string(a));
    doc["devices"].push_back(std::move(actions));
  }
  if (sch.makespan) doc["makespan"] = *sch.makespan;
  if (sch.bubble) doc["bubble"] = *sch.bubble;
  if (!sch.peak_memory.empty()) doc["peak_memory"] = sch.peak_memory;
  if (!sch.status.empty()) doc["status"] = sch.status;
  if (sch.bound) doc["bound"] = *sch.bound;
  if (sch.gap) doc["gap"] = *sch.gap;
  if (!sch.solver.empty()) doc["solver"] = sch.solver;
  return doc;
}

std::string schedule_to_text(const Schedule& sch) {
  std::ostringstream out;
  out << "{\n";
  out << "  \"format\": " << json(kScheduleFormat).dump() << ",\n";
  out << "  \"instance\": " << json(sch.instance).dump() << ",\n";
  out << "  \"devices\": [\n";
  for (std::size_t d = 0; d < sch.devices.size(); ++d) {
    out << "    [";
    for (std::size_t k = 0; k < sch.devices[d].size(); ++k) {
      out << (k ? ", " : "") << '"' << to_string(sch.devices[d][k]) << '"';
    }
    out << "]" << (d + 1 < sch.devices.size() ? "," : "") << "\n";
  }
  out << "  ]";
  auto field = [&](const char* key, const json& value) { out << ",\n  \"" << key << "\": " << value.dump(); };
  if (sch.makespan) field("makespan", *sch.makespan);
  if (sch.bubble) field("bubble", *sch.bubble);
  if (!sch.peak_memory.empty()) field("peak_memory", sch.peak_memory);
  if (!sch.status.empty()) field("status", sch.status);
  if (sch.bound) field("bound", *sch.bound);
  if (sch.gap) field("gap", *sch.gap);
  if (!sch.solver.empty()) field("solver", sch.solver);
  out << "\n}\n";
  return out.str();
}

void save_schedule(const Schedule& sch, const std::string& path) { write_text_file(path, schedule_to_text(sch)); }

}  // namespace optpipe
