#include "heuristics/periodic_memory_plan.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace optpipe {

PeriodicMemoryPlan::PeriodicMemoryPlan(const Instance& inst, const std::vector<int>& stages,
                                       const std::vector<StageOffsets>& offsets, const PeriodicPlanOptions& opt,
                                       ChannelBook& d2h, ChannelBook& h2d)
    : m_(inst.microbatches),
      cap_(inst.devices[inst.stages[stages.front()].device].memory_limit -
           inst.devices[inst.stages[stages.front()].device].static_memory),
      r_(inst.offload_levels.back()),
      off_margin_(opt.offload_margin),
      rel_margin_(opt.reload_margin),
      book_(opt.book_channels),
      spread_(opt.book_channels || stages.size() > 1 ? 0.0 : opt.spread),
      d2h_(d2h),
      h2d_(h2d) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  std::vector<Item> items;
  for (const int s : stages) {
    const Stage& st = inst.stages[s];
    const StageOffsets& o = offsets[static_cast<std::size_t>(s)];
    const bool can = st.offloadable() && r_ > 0;
    for (int j = 0; j < m_; ++j) {
      Item t;
      t.fs = o.f + opt.cycle * j;
      t.fe = t.fs + st.forward;
      t.bs = o.b + opt.cycle * j;
      t.be = t.bs + inst.duration(OpType::B, s);
      t.we = inst.split_backward ? o.w + opt.cycle * j + st.weight : t.be;
      t.act = st.activation;
      t.keep_w = inst.freed_by_w(s);
      t.off_ms = st.offloadable() ? r_ * *st.offload : 0.0;
      t.rel_ms = st.offloadable() ? r_ * *st.reload : 0.0;
      t.can = can;
      t.oe = t.rs = nan;
      items.push_back(t);
    }
  }
  // By forward's planned start (one stage: microbatch order).
  std::vector<int> order(items.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return items[a].fs < items[b].fs; });
  index_.assign(items.size(), 0);
  for (std::size_t k = 0; k < order.size(); ++k) {
    items_.push_back(items[static_cast<std::size_t>(order[k])]);
    index_[static_cast<std::size_t>(order[k])] = static_cast<int>(k);
  }
}

void PeriodicMemoryPlan::spread_offloads() {
  if (spread_ <= 0 || m_ == 0 || !items_[0].can) return;
  // Token-time (bytes x ms) of one microbatch kept and offloaded, from microbatch 0's times.
  const Item& t = items_[0];
  const double oe = t.fe + t.off_ms + off_margin_, rs = t.bs - rel_margin_ - t.rel_ms;
  if (!(oe < rs)) return;
  const double w_part = t.keep_w * (t.we - t.be);
  const double kept = t.act * (t.be - t.fs) + w_part;
  const double out = t.act * ((oe - t.fs) + (t.be - rs)) + t.act * (1 - r_) * (rs - oe) + w_part;
  const double cycle = m_ > 1 ? items_[1].fs - items_[0].fs : 0;
  if (!(kept > out) || !(cycle > 0)) return;
  const double x = std::clamp(spread_ * (kept - cap_ * cycle) / (kept - out), 0.0, 1.0);
  // Not the last microbatches, one residency's worth: fewer forwards follow them, so the steady
  // state's share overstates what they need, and every reload they add falls in the drain, where
  // the group's H2D channel carries the last reloads one after another; the greedy below
  // offloads there only what the plan's additions need.
  const int tail = static_cast<int>(std::ceil((t.be - t.fs) / cycle));
  for (int j = 0; j + tail < m_; ++j) {
    if (std::floor((j + 1) * x) <= std::floor(j * x)) continue;
    Item& k = items_[static_cast<std::size_t>(j)];
    k.off = true;
    k.oe = k.fe + k.off_ms + off_margin_;
    k.rs = k.bs - rel_margin_ - k.rel_ms;
  }
}

bool PeriodicMemoryPlan::run() {
  spread_offloads();
  const int n = static_cast<int>(items_.size());
  for (int jj = 0; jj < n; ++jj) {
    std::vector<double> points{items_[jj].fs};
    for (int k = first_; k < jj; ++k) {
      if (items_[k].off && items_[k].rs >= items_[jj].fs && items_[k].rs < items_[jj].we) points.push_back(items_[k].rs);
    }
    for (std::size_t p = 0; p < points.size(); ++p) {
      while (memory(points[p], jj) > cap_) {
        const int k = offload_for(points[p], jj);
        if (k < 0) return false;
        points.push_back(items_[k].rs);
      }
    }
    // Items before first_ have ended by the next addition (none holds memory from there on).
    const double next = items_[jj + 1 < n ? jj + 1 : jj].fs;
    while (first_ < jj && items_[first_].we <= next) ++first_;
  }
  return true;
}

double PeriodicMemoryPlan::memory_of(const Item& t, double x) const {
  if (x < t.fs || x >= t.we) return 0;
  if (x >= t.be) return t.keep_w;
  if (t.off && x >= t.oe && x < t.rs) return t.act * (1 - r_);
  return t.act;
}

double PeriodicMemoryPlan::memory(double x, int last) const {
  double sum = 0;
  for (int k = first_; k <= last; ++k) sum += memory_of(items_[k], x);
  return sum;
}

int PeriodicMemoryPlan::offload_for(double x, int last) {
  // Latest backward first (one stage: by index, descending).
  std::vector<int> cands;
  for (int k = last; k >= first_; --k) {
    if (items_[k].can && !items_[k].off && items_[k].fs <= x) cands.push_back(k);
  }
  std::stable_sort(cands.begin(), cands.end(), [&](int a, int b) { return items_[a].bs > items_[b].bs; });
  for (const int k : cands) {
    Item& t = items_[k];
    const double d2h_start = book_ ? d2h_.earliest_fit(t.fe, t.off_ms) : t.fe;
    const double oe = d2h_start + t.off_ms + off_margin_;
    if (oe > x) continue;
    const double h2d_start = book_ ? h2d_.latest_fit(t.bs - rel_margin_, t.rel_ms) : t.bs - rel_margin_ - t.rel_ms;
    if (!(h2d_start > x) || h2d_start < oe) continue;
    if (book_) {
      d2h_.book(d2h_start, t.off_ms);
      h2d_.book(h2d_start, t.rel_ms);
    }
    t.off = true;
    t.oe = oe;
    t.rs = h2d_start;
    return k;
  }
  return -1;
}

}  // namespace optpipe
