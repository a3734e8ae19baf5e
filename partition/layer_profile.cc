#include "partition/layer_profile.h"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "instances/generator/cost_model.h"
#include "model/error.h"
#include "model/instance_io.h"
#include "model/json_reader.h"

namespace optpipe::partition {
namespace {

namespace jr = json_reader;
using nlohmann::json;

void add(LayerCost& into, const LayerCost& c) {
  into.forward += c.forward;
  into.backward += c.backward;
  into.weight += c.weight;
  into.activation += c.activation;
  into.weight_activation += c.weight_activation;
  into.static_bytes += c.static_bytes;
  into.transient += c.transient;
}

LayerCost minus(const LayerCost& a, const LayerCost& b) {
  LayerCost c;
  c.forward = a.forward - b.forward;
  c.backward = a.backward - b.backward;
  c.weight = a.weight - b.weight;
  c.activation = a.activation - b.activation;
  c.weight_activation = a.weight_activation - b.weight_activation;
  c.static_bytes = a.static_bytes - b.static_bytes;
  c.transient = a.transient - b.transient;
  return c;
}

LayerCost from_block(const gen::BlockCost& b, const gen::GenerateOptions& o) {
  LayerCost c;
  const gen::BlockTimes t = gen::block_times(b, o.model, o.cost, o.gpu);
  c.forward = t.forward;
  c.backward = t.backward;
  c.weight = t.weight;
  c.activation = b.activation;
  c.weight_activation = b.weight_activation;
  c.static_bytes = b.params * gen::bytes_per_param(o.model, o.cost);
  c.transient = b.transient;
  return c;
}

LayerCost parse_layer(const json& v, const std::string& path) {
  jr::expect_object(v, path);
  jr::expect_only_keys(v, path, {"name", "forward", "backward", "weight", "activation", "weight_activation", "static",
                                 "transient"});
  LayerCost c;
  c.forward = jr::duration(jr::require(v, path, "forward"), jr::join(path, "forward"));
  c.backward = jr::duration(jr::require(v, path, "backward"), jr::join(path, "backward"));
  if (const json* w = jr::optional(v, "weight")) c.weight = jr::duration(*w, jr::join(path, "weight"));
  c.activation = jr::bytes(jr::require(v, path, "activation"), jr::join(path, "activation"));
  if (const json* w = jr::optional(v, "weight_activation")) {
    c.weight_activation = jr::bytes(*w, jr::join(path, "weight_activation"));
    if (c.weight_activation > c.activation) {
      jr::fail(jr::join(path, "weight_activation"), "must be <= activation (" + w->dump() + " > " +
                                                        v.at("activation").dump() + ")");
    }
  }
  if (const json* s = jr::optional(v, "static")) c.static_bytes = jr::bytes(*s, jr::join(path, "static"));
  if (const json* t = jr::optional(v, "transient")) c.transient = jr::bytes(*t, jr::join(path, "transient"));
  if (const json* n = jr::optional(v, "name")) jr::string(*n, jr::join(path, "name"));
  return c;
}

nlohmann::ordered_json layer_json(const LayerCost& c) {
  nlohmann::ordered_json j;
  j["forward"] = c.forward;
  j["backward"] = c.backward;
  j["weight"] = c.weight;
  j["activation"] = c.activation;
  j["weight_activation"] = c.weight_activation;
  j["static"] = c.static_bytes;
  if (c.transient > 0) j["transient"] = c.transient;
  return j;
}

}  // namespace

void LayerProfile::finish() {
  prefix.assign(layers.size() + 1, LayerCost{});
  for (std::size_t i = 0; i < layers.size(); ++i) {
    prefix[i + 1] = prefix[i];
    add(prefix[i + 1], layers[i]);
  }
}

LayerCost LayerProfile::stage_costs(int begin, int count, bool is_first, bool is_last) const {
  LayerCost c = minus(prefix[begin + count], prefix[begin]);
  double transient = c.transient;
  if (is_first && first) {
    add(c, *first);
    transient = std::max(transient, first->transient);
  }
  if (is_last && last) {
    add(c, *last);
    transient = std::max(transient, last->transient);
  }
  c.transient = transient;
  return c;
}

LayerProfile profile_from_generator(const gen::GenerateOptions& o) {
  gen::validate_shape(o.model);
  LayerProfile p;
  p.name = o.model.name;
  p.layers.assign(o.model.layers, from_block(gen::transformer_layer(o.model, o.cost), o));
  p.first = from_block(gen::embedding_block(o.model, o.cost), o);
  p.last = from_block(gen::output_block(o.model, o.cost), o);
  p.workspace = o.cost.workspace_bytes;
  // Within a node (NVLink); the generator's instances use its own per-boundary comm.
  p.comm = gen::transfer_ms(gen::p2p_bytes_per_gpu(o.model, o.cost), o.gpu.nvlink_bandwidth, o.gpu.nvlink_latency_ms);
  p.finish();
  return p;
}

LayerProfile parse_layer_profile(const std::string& text) {
  const json doc = jr::parse_text(text);
  jr::expect_object(doc, "");
  jr::expect_format(doc, kLayerProfileFormat, "layer profile");
  jr::expect_only_keys(doc, "", {"format", "name", "comm", "workspace", "first", "last", "layers"});
  LayerProfile p;
  if (const json* v = jr::optional(doc, "name")) p.name = jr::string(*v, "name");
  if (const json* v = jr::optional(doc, "comm")) p.comm = jr::duration(*v, "comm");
  if (const json* v = jr::optional(doc, "workspace")) p.workspace = jr::bytes(*v, "workspace");
  if (const json* v = jr::optional(doc, "first")) p.first = parse_layer(*v, "first");
  if (const json* v = jr::optional(doc, "last")) p.last = parse_layer(*v, "last");
  const json& layers = jr::require(doc, "", "layers");
  jr::expect_array(layers, "layers");
  if (layers.empty()) jr::fail("layers", "must list at least one layer");
  for (std::size_t i = 0; i < layers.size(); ++i) p.layers.push_back(parse_layer(layers[i], jr::index("layers", i)));
  p.finish();
  return p;
}

LayerProfile load_layer_profile(const std::string& path) {
  const std::string text = read_text_file(path);
  try {
    return parse_layer_profile(text);
  } catch (const InputError& e) {
    throw InputError(path + ": " + e.what());
  }
}

std::string layer_profile_json(const LayerProfile& p) {
  nlohmann::ordered_json doc;
  doc["format"] = kLayerProfileFormat;
  doc["name"] = p.name;
  doc["comm"] = p.comm;
  doc["workspace"] = p.workspace;
  if (p.first) doc["first"] = layer_json(*p.first);
  if (p.last) doc["last"] = layer_json(*p.last);
  nlohmann::ordered_json layers = nlohmann::ordered_json::array();
  for (const LayerCost& c : p.layers) layers.push_back(layer_json(c));
  doc["layers"] = layers;
  return doc.dump(1) + "\n";
}

}  // namespace optpipe::partition
