#include "plan/option_space.h"

#include <algorithm>
#include <set>

#include "instances/generator/parallelism.h"
#include "model/error.h"

namespace optpipe::plan {
namespace {

std::vector<int> divisors(int n) {
  std::vector<int> out;
  for (int k = 1; k <= n; ++k) {
    if (n % k == 0) out.push_back(k);
  }
  return out;
}

bool listed(const std::vector<int>& list, int v) {
  return list.empty() || std::find(list.begin(), list.end(), v) != list.end();
}

void check_request(const PlanRequest& r) {
  if (r.gpus < 1) throw InputError("gpus: must be a positive integer, got " + std::to_string(r.gpus));
  if (r.global_batch < 1) {
    throw InputError("global_batch: must be a positive number of sequences, got " + std::to_string(r.global_batch));
  }
  if (r.placements.empty()) throw InputError("placements: give at least one of one, v, loop");
  if (r.micro_batch_sizes.empty()) throw InputError("micro_batch_sizes: give at least one size");
  for (int b : r.micro_batch_sizes) {
    if (b < 1) throw InputError("micro_batch_sizes: " + std::to_string(b) + " is not a positive number of sequences");
  }
  if (r.recompute.empty()) throw InputError("recompute: give at least one of none, selective, full");
  for (int p : r.pipeline_parallel) {
    if (p < 1) throw InputError("pipeline_parallel: " + std::to_string(p) + " is not a positive number of devices");
  }
}

// The placements, micro-batch sizes and recomputation modes of one (t, p, d) layout.
void add_layout(const PlanRequest& r, int t, int p, int d, OptionSpace& space, std::set<std::string>& why) {
  const int per_replica = r.global_batch / d;
  for (Placement placement : r.placements) {
    if (placement != Placement::kOnePerDevice && p < 2) continue;  // two stages on one device: one stage would do
    const int stages = placement == Placement::kOnePerDevice ? p : 2 * p;
    if (r.base.model.layers < stages) {
      why.insert(std::to_string(stages) + " stages (pp" + std::to_string(p) + " " + placement_word(placement) +
                 "): more stages than the " + std::to_string(r.base.model.layers) + " layers");
      continue;
    }
    for (int b : r.micro_batch_sizes) {
      if (per_replica % b != 0) {
        why.insert("micro-batch " + std::to_string(b) + " with dp" + std::to_string(d) + ": does not divide the " +
                   std::to_string(per_replica) + " sequences of a replica");
        continue;
      }
      for (gen::Recompute mode : r.recompute) {
        if (mode == gen::Recompute::kSelective && r.base.cost.flash_attention) {
          why.insert("recompute selective: the same as none with FlashAttention (nothing s x s is kept)");
          continue;
        }
        PlanOption o;
        o.tp = t, o.pp = p, o.dp = d;
        o.placement = placement;
        o.micro_batch = b;
        o.microbatches = per_replica / b;
        o.recompute = mode;
        space.options.push_back(o);
      }
    }
  }
}

}  // namespace

std::string PlanOption::layout() const {
  return "tp" + std::to_string(tp) + " pp" + std::to_string(pp) + " dp" + std::to_string(dp) + " " +
         placement_word(placement);
}

std::string PlanOption::label() const {
  return layout() + ", micro-batch " + std::to_string(micro_batch) + " x " + std::to_string(microbatches) +
         ", recompute " + gen::to_string(recompute);
}

std::vector<int> tensor_degrees(const PlanRequest& r) {
  std::vector<int> out;
  for (int t : r.tensor_parallel.empty() ? divisors(r.gpus) : r.tensor_parallel) {
    gen::CostOptions cost = r.base.cost;
    cost.tensor_parallel = t;
    cost.data_parallel = 1;
    if (r.tensor_parallel.empty()) {
      if (r.base.gpu.gpus_per_node % t != 0 || r.base.model.heads % t != 0 || r.base.model.ffn % t != 0) continue;
    } else {
      gen::validate_parallelism(r.base.model, cost, r.base.gpu);  // names what is wrong with t
      if (r.gpus % t != 0) {
        throw InputError("tensor_parallel: " + std::to_string(t) + " does not divide the " + std::to_string(r.gpus) +
                         " GPUs");
      }
    }
    out.push_back(t);
  }
  return out;
}

OptionSpace enumerate_options(const PlanRequest& r) {
  check_request(r);
  gen::validate_shape(r.base.model);
  OptionSpace space;
  std::set<std::string> why;
  for (int t : tensor_degrees(r)) {
    for (int p : divisors(r.gpus / t)) {
      if (!listed(r.pipeline_parallel, p)) continue;
      const int d = r.gpus / t / p;
      if (r.global_batch % d != 0) {
        why.insert("dp" + std::to_string(d) + ": the global batch of " + std::to_string(r.global_batch) +
                   " sequences does not divide among " + std::to_string(d) + " replicas");
        continue;
      }
      add_layout(r, t, p, d, space, why);
    }
  }
  space.left_out.assign(why.begin(), why.end());
  return space;
}

gen::GenerateOptions generate_options(const PlanRequest& r, const PlanOption& o) {
  gen::GenerateOptions g = r.base;
  g.devices = o.pp;
  g.placement = o.placement;
  g.microbatches = o.microbatches;
  g.model.micro_batch = o.micro_batch;
  g.cost.recompute = o.recompute;
  g.cost.tensor_parallel = o.tp;
  g.cost.data_parallel = o.dp;
  g.cost.zero_stage = r.zero_stage;
  g.split.clear();
  g.name = r.base.model.name + "-tp" + std::to_string(o.tp) + "-pp" + std::to_string(o.pp) + "-dp" +
           std::to_string(o.dp) + (o.placement == Placement::kOnePerDevice ? "" : std::string("-") + placement_word(o.placement)) +
           "-mb" + std::to_string(o.micro_batch) + "x" + std::to_string(o.microbatches) +
           (o.recompute == gen::Recompute::kNone ? "" : std::string("-") + gen::to_string(o.recompute));
  return g;
}

}  // namespace optpipe::plan
