#include "model/instance_io.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>

#include "model/error.h"
#include "model/json_reader.h"

namespace optpipe {

namespace jr = json_reader;
using nlohmann::json;

namespace {

Device parse_device(const json& value, const std::string& path, int id) {
  jr::expect_object(value, path);
  jr::expect_only_keys(value, path, {"memory_limit", "static_memory", "pcie_group"});
  Device d;
  d.memory_limit = jr::bytes(jr::require(value, path, "memory_limit"), jr::join(path, "memory_limit"));
  if (d.memory_limit <= 0) jr::fail(jr::join(path, "memory_limit"), "must be > 0");
  if (const json* v = jr::optional(value, "static_memory")) d.static_memory = jr::bytes(*v, jr::join(path, "static_memory"));
  d.pcie_group = id;
  if (const json* v = jr::optional(value, "pcie_group")) {
    const long long g = jr::integer(*v, jr::join(path, "pcie_group"));
    if (g < 0 || g > 1'000'000) jr::fail(jr::join(path, "pcie_group"), "must be an integer >= 0, got " + v->dump());
    d.pcie_group = static_cast<int>(g);
  }
  return d;
}

Stage parse_stage(const json& value, const std::string& path, bool split, int num_devices,
                  std::vector<std::string>* warnings) {
  jr::expect_object(value, path);
  jr::expect_only_keys(value, path,
                       {"device", "forward", "backward", "weight", "activation", "weight_activation",
                        "offload", "reload"});
  Stage st;
  const std::string dpath = jr::join(path, "device");
  const long long dev = jr::integer(jr::require(value, path, "device"), dpath);
  if (dev < 0 || dev >= num_devices) {
    jr::fail(dpath, "device " + std::to_string(dev) + " does not exist (the instance has " +
                        std::to_string(num_devices) + " device" + (num_devices == 1 ? "" : "s") + ")");
  }
  st.device = static_cast<int>(dev);
  st.forward = jr::duration(jr::require(value, path, "forward"), jr::join(path, "forward"));
  st.backward = jr::duration(jr::require(value, path, "backward"), jr::join(path, "backward"));
  if (split) {
    st.weight = jr::duration(jr::require(value, path, "weight"), jr::join(path, "weight"));
  } else if (const json* v = jr::optional(value, "weight")) {
    st.weight = jr::duration(*v, jr::join(path, "weight"));
  }
  st.activation = jr::bytes(jr::require(value, path, "activation"), jr::join(path, "activation"));
  if (const json* v = jr::optional(value, "weight_activation")) {
    st.weight_activation = jr::bytes(*v, jr::join(path, "weight_activation"));
    if (st.weight_activation > st.activation) {
      jr::fail(jr::join(path, "weight_activation"),
               "must be <= activation (" + v->dump() + " > " + value.at("activation").dump() + ")");
    }
    if (!split && st.weight_activation > 0) {
      if (warnings) {
        warnings->push_back(jr::join(path, "weight_activation") +
                            ": ignored because split_backward is false (the fused backward frees the "
                            "whole activation at its end)");
      }
      st.weight_activation = 0;
    }
  }
  const json* off = jr::optional(value, "offload");
  const json* rel = jr::optional(value, "reload");
  if ((off == nullptr) != (rel == nullptr)) {
    jr::fail(jr::join(path, off ? "reload" : "offload"),
             std::string("missing: give both offload and reload, or neither (") +
                 (off ? "offload" : "reload") + " is given)");
  }
  if (off) {
    st.offload = jr::duration(*off, jr::join(path, "offload"));
    st.reload = jr::duration(*rel, jr::join(path, "reload"));
  }
  return st;
}

}  // namespace

Instance instance_from_json(const json& doc, std::vector<std::string>* warnings) {
  jr::expect_object(doc, "");
  jr::expect_format(doc, kInstanceFormat, "instance");
  jr::expect_only_keys(doc, "",
                       {"format", "name", "microbatches", "split_backward", "offload_levels", "comm",
                        "devices", "stages"});
  Instance inst;
  if (const json* v = jr::optional(doc, "name")) inst.name = jr::string(*v, "name");
  const long long m = jr::integer(jr::require(doc, "", "microbatches"), "microbatches");
  if (m < 1 || m > 1'000'000) {
    jr::fail("microbatches", "must be an integer from 1 to 1000000, got " + doc.at("microbatches").dump());
  }
  inst.microbatches = static_cast<int>(m);
  if (const json* v = jr::optional(doc, "split_backward")) inst.split_backward = jr::boolean(*v, "split_backward");

  if (const json* v = jr::optional(doc, "offload_levels")) {
    jr::expect_array(*v, "offload_levels");
    inst.offload_levels.clear();
    for (std::size_t i = 0; i < v->size(); ++i) {
      const std::string p = jr::index("offload_levels", i);
      const double r = jr::number((*v)[i], p);
      if (r < 0 || r > 1) jr::fail(p, "must be a fraction in [0, 1], got " + (*v)[i].dump());
      if (std::find(inst.offload_levels.begin(), inst.offload_levels.end(), r) != inst.offload_levels.end()) {
        jr::fail(p, "duplicate level " + (*v)[i].dump());
      }
      inst.offload_levels.push_back(r);
    }
    if (std::find(inst.offload_levels.begin(), inst.offload_levels.end(), 0.0) == inst.offload_levels.end()) {
      jr::fail("offload_levels", "must contain 0 (not offloading is always allowed)");
    }
    std::sort(inst.offload_levels.begin(), inst.offload_levels.end());
  }

  const json& devices = jr::require(doc, "", "devices");
  jr::expect_array(devices, "devices");
  if (devices.empty()) jr::fail("devices", "must list at least one device");
  for (std::size_t i = 0; i < devices.size(); ++i) {
    inst.devices.push_back(parse_device(devices[i], jr::index("devices", i), static_cast<int>(i)));
  }

  const json& stages = jr::require(doc, "", "stages");
  jr::expect_array(stages, "stages");
  if (stages.empty()) jr::fail("stages", "must list at least one stage");
  for (std::size_t i = 0; i < stages.size(); ++i) {
    inst.stages.push_back(parse_stage(stages[i], jr::index("stages", i), inst.split_backward,
                                      inst.num_devices(), warnings));
  }
  const int S = inst.num_stages();
  if (static_cast<double>(S) * inst.microbatches > kMaxStageMicrobatches) {
    jr::fail("microbatches", std::to_string(inst.microbatches) + " microbatches x " + std::to_string(S) +
                                 " stages is more than " + std::to_string(static_cast<long long>(kMaxStageMicrobatches)) +
                                 " stage-microbatches (every tool holds each op of a schedule in memory; a schedule "
                                 "of this instance would have " +
                                 std::to_string(static_cast<long long>(S) * inst.microbatches * (inst.split_backward ? 3 : 2)) +
                                 " actions)");
  }

  inst.comm.assign(static_cast<std::size_t>(S - 1), 0.0);
  if (const json* v = jr::optional(doc, "comm")) {
    if (v->is_array()) {
      if (v->size() != static_cast<std::size_t>(S - 1)) {
        jr::fail("comm", "a list must have one entry per pair of adjacent stages (" + std::to_string(S - 1) +
                             "), got " + std::to_string(v->size()));
      }
      for (std::size_t i = 0; i < v->size(); ++i) inst.comm[i] = jr::duration((*v)[i], jr::index("comm", i));
    } else if (v->is_number()) {
      const double c = jr::duration(*v, "comm");
      std::fill(inst.comm.begin(), inst.comm.end(), c);
    } else {
      jr::fail("comm", "must be a number or a list of numbers, got " + jr::describe(*v));
    }
  }

  std::vector<int> count(inst.devices.size(), 0);
  for (const Stage& st : inst.stages) ++count[st.device];
  for (std::size_t d = 0; d < count.size(); ++d) {
    if (count[d] == 0) jr::fail(jr::index("devices", d), "holds no stage (every device needs at least one)");
  }
  return inst;
}

Instance parse_instance(const std::string& text, std::vector<std::string>* warnings) {
  return instance_from_json(jr::parse_text(text), warnings);
}

Instance load_instance(const std::string& path, std::vector<std::string>* warnings) {
  const std::string text = read_text_file(path);
  try {
    return parse_instance(text, warnings);
  } catch (const InputError& e) {
    throw InputError(path + ": " + e.what());
  }
}

json instance_to_json(const Instance& inst) {
  json doc;
  doc["format"] = kInstanceFormat;
  doc["name"] = inst.name;
  doc["microbatches"] = inst.microbatches;
  doc["split_backward"] = inst.split_backward;
  doc["offload_levels"] = inst.offload_levels;
  const bool uniform_comm =
      std::all_of(inst.comm.begin(), inst.comm.end(), [&](double c) { return c == inst.comm.front(); });
  if (inst.comm.empty()) {
    doc["comm"] = 0.0;
  } else if (uniform_comm) {
    doc["comm"] = inst.comm.front();
  } else {
    doc["comm"] = inst.comm;
  }
  json devices = json::array();
  for (int d = 0; d < inst.num_devices(); ++d) {
    const Device& dev = inst.devices[d];
    json jd{{"memory_limit", dev.memory_limit}, {"static_memory", dev.static_memory}};
    if (dev.pcie_group != d) jd["pcie_group"] = dev.pcie_group;
    devices.push_back(jd);
  }
  doc["devices"] = devices;
  json stages = json::array();
  for (const Stage& st : inst.stages) {
    json js{{"device", st.device},         {"forward", st.forward},        {"backward", st.backward},
            {"weight", st.weight},         {"activation", st.activation},
            {"weight_activation", st.weight_activation}};
    if (st.offloadable()) {
      js["offload"] = *st.offload;
      js["reload"] = *st.reload;
    }
    stages.push_back(js);
  }
  doc["stages"] = stages;
  return doc;
}

void save_instance(const Instance& inst, const std::string& path) {
  write_text_file(path, instance_to_json(inst).dump(1) + "\n");
}

std::string read_text_file(const std::string& path) {
  if (path == "-") {  // standard input
    std::ostringstream ss;
    ss << std::cin.rdbuf();
    if (std::cin.bad()) throw InputError("-: read error on standard input");
    return ss.str();
  }
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) throw InputError(path + ": is a directory, not a file");
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw InputError(path + (std::filesystem::exists(path, ec) ? ": cannot open file for reading (permissions?)"
                                                               : ": no such file"));
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) throw InputError(path + ": read error");
  return ss.str();
}

void check_writable(const std::string& path) {
  namespace fs = std::filesystem;
  if (path == "-") return;
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (!ec && fs::is_directory(st)) throw InputError(path + ": is a directory, not a file to write");
  if (!ec && fs::exists(st) && !fs::is_regular_file(st)) {
    std::ofstream out(path, std::ios::binary | std::ios::app);
    if (!out) throw InputError(path + ": cannot be opened for writing");
    return;
  }
  const std::string tmp = path + ".tmp";
  errno = 0;
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) {
      const fs::path folder = fs::path(path).parent_path();
      const std::string why = errno ? std::strerror(errno) : "cannot create a file there";
      if (!folder.empty() && !fs::exists(folder, ec)) {
        throw InputError(path + ": cannot be written: the folder " + folder.string() + " does not exist");
      }
      throw InputError(path + ": cannot be written: " + why);
    }
  }
  std::remove(tmp.c_str());
}

void write_text_file(const std::string& path, const std::string& text) {
  namespace fs = std::filesystem;
  // "-" is standard output; an existing non-regular file (a terminal, a pipe, /dev/stdout) is
  // written in place: replacing it through a temporary and a rename would replace the device.
  if (path == "-") {
    std::cout << text << std::flush;
    if (!std::cout) throw InputError("standard output: write failed");
    return;
  }
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (!ec && fs::exists(st) && !fs::is_regular_file(st)) {
    std::ofstream out(path, std::ios::binary);
    if (!out) throw InputError(path + ": cannot open for writing");
    out << text;
    out.flush();
    if (!out) throw InputError(path + ": write failed");
    return;
  }
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw InputError(path + ": cannot open file for writing");
    out << text;
    out.flush();
    if (!out) {
      std::remove(tmp.c_str());
      throw InputError(path + ": write failed");
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    throw InputError(path + ": cannot write file (rename failed)");
  }
}

}  // namespace optpipe
