#include "partition/split_enumerator.h"

#include <algorithm>
#include <cmath>

#include "partition/cheap_bound.h"
#include "partition/stage_floor.h"

namespace optpipe::partition {
namespace {

class Enumerator {
 public:
  Enumerator(const PartitionModel& model, EnumerateLimits& limits,
             const std::function<bool(const std::vector<int>&, double)>& visit)
      : model_(model), limits_(limits), visit_(visit), S_(model.stages()), D_(model.devices()),
        m_(model.microbatches()), split_(S_, 0), min_rest_(S_ + 1, 0), last_(D_, -1), costs_(D_),
        fb_(D_, 0.0), w_(D_, 0.0), head_of_(D_, 0.0), tail_of_(D_, 0.0) {
    for (int s = S_ - 1; s >= 0; --s) min_rest_[s] = min_rest_[s + 1] + model.min_layers(s);
    cap_ = stage_capacities(model, 2 * kFloorSlack);
    cap_rest_.assign(S_ + 1, 0);
    for (int s = S_ - 1; s >= 0; --s) cap_rest_[s] = cap_rest_[s + 1] + cap_[s];
    for (int s = 0; s < S_; ++s) last_[model.device_of(s)] = s;
  }

  EnumerateStats run() {
    dfs(0, 0, 0.0, 0.0, 0.0);
    return stats_;
  }

 private:
  // Stage s gets its count; head/tail: those of stage s; bound: the largest device bound so far.
  void dfs(int s, int begin, double head, double tail, double bound) {
    if (!going()) return;
    if (s == S_) {
      ++stats_.splits;
      if (!visit_(split_, bound)) stop();
      return;
    }
    const int remaining = model_.layers() - begin;
    // At least what the later stages cannot hold, at most what this one can.
    const int lo = s == S_ - 1 ? remaining : std::max(model_.min_layers(s), remaining - cap_rest_[s + 1]);
    const int hi = std::min(remaining - min_rest_[s + 1], cap_[s]);
    const int ideal = std::clamp(static_cast<int>(std::lround(double(remaining) / (S_ - s))), lo, std::max(lo, hi));
    for (int k = 0; going(); ++k) {
      if (ideal + k > hi && ideal - k < lo) break;
      if (ideal + k >= lo && ideal + k <= hi) place(s, begin, ideal + k, head, tail, bound);
      if (k > 0 && ideal - k >= lo && ideal - k <= hi && going()) place(s, begin, ideal - k, head, tail, bound);
    }
  }

  void place(int s, int begin, int c, double head, double tail, double bound) {
    ++stats_.nodes;
    const bool split_bw = model_.split_backward();
    const LayerCost lc = model_.stage_costs(s, begin, c);
    const double F = lc.forward, B = split_bw ? lc.backward : lc.backward + lc.weight, W = split_bw ? lc.weight : 0.0;
    const int d = model_.device_of(s);
    if (s == 0) w0_ = W;
    const bool first_on_device = costs_[d].empty();
    if (first_on_device) {
      head_of_[d] = head;
      tail_of_[d] = tail + (s > 0 ? w0_ : 0.0);
    }
    costs_[d].push_back(lc);
    fb_[d] += F + B;
    w_[d] += W;
    split_[s] = c;
    double lb = bound;
    bool ok = floor_fits(d);
    if (ok && s == last_[d]) {
      lb = std::max(bound, device_lower_bound(head_of_[d], tail_of_[d], fb_[d], w_[d], m_));
      const double ops = 3.0 * m_ * static_cast<double>(costs_[d].size()) + S_;
      ok = lb <= limits_.cutoff + kBoundSlack * ops;
    }
    const double next_head = head + F + model_.comm_after(s);
    ok = ok && rest_can_meet_cutoff(s + 1, begin + c, next_head);
    if (ok) dfs(s + 1, begin + c, next_head, tail + model_.comm_after(s) + B, lb);
    costs_[d].pop_back();
    fb_[d] -= F + B;
    w_[d] -= W;
  }

  // One stage per device: some later stage does at least the average of the work left, after
  // the later stages' head (>= next_head), so its device's bound is at least next_head + m x that
  // average (the devices of two-stage placements share work: not cut there).
  bool rest_can_meet_cutoff(int next, int begin, double next_head) const {
    if (next >= S_ || S_ != D_) return true;
    const LayerCost rest = model_.profile().stage_costs(begin, model_.layers() - begin, false, true);
    const double average = (rest.forward + rest.backward + rest.weight) / (S_ - next);
    return next_head + m_ * average <= limits_.cutoff + kBoundSlack * (3.0 * m_ + S_);
  }

  // The floor of device d with the stages placed so far (it only grows with more).
  bool floor_fits(int d) const {
    std::vector<double> acts, keep;
    for (const LayerCost& c : costs_[d]) {
      acts.push_back(c.activation);
      keep.push_back(1.0 - model_.max_offload_level());
    }
    const double floor = model_.device_static(costs_[d]) + activation_floor(acts, keep);
    return floor <= model_.memory_limit() + kFloorSlack * static_cast<double>(costs_[d].size() + 1);
  }

  // The node limit and the stop flag end the enumeration, as does a visitor that says so.
  bool going() {
    if (!stopped_ && (stats_.nodes >= limits_.node_limit || (limits_.stop && limits_.stop->load(std::memory_order_relaxed)))) {
      stop();
    }
    return !stopped_;
  }
  void stop() {
    stopped_ = true;
    stats_.complete = false;
  }

 private:
  const PartitionModel& model_;
  EnumerateLimits& limits_;
  const std::function<bool(const std::vector<int>&, double)>& visit_;
  int S_, D_, m_;
  std::vector<int> split_, min_rest_, last_, cap_, cap_rest_;
  std::vector<std::vector<LayerCost>> costs_;
  std::vector<double> fb_, w_, head_of_, tail_of_;
  double w0_ = 0;
  EnumerateStats stats_;
  bool stopped_ = false;
};

}  // namespace

EnumerateStats enumerate_splits(const PartitionModel& model, EnumerateLimits& limits,
                                const std::function<bool(const std::vector<int>&, double)>& visit) {
  Enumerator e(model, limits, visit);
  return e.run();
}

}  // namespace optpipe::partition
