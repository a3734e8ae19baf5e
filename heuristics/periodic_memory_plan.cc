#include "heuristics/periodic_memory_plan.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace optpipe {

PeriodicMemoryPlan::PeriodicMemoryPlan(const Instance& inst, int s, const StageOffsets& o,
                                       const PeriodicPlanOptions& opt, ChannelBook& d2h, ChannelBook& h2d)
    : m_(inst.microbatches),
      act_(inst.stages[s].activation),
      keep_w_(inst.freed_by_w(s)),
      cap_(inst.devices[inst.stages[s].device].memory_limit - inst.devices[inst.stages[s].device].static_memory),
      r_(inst.offload_levels.back()),
      off_ms_(inst.stages[s].offloadable() ? r_ * *inst.stages[s].offload : 0.0),
      rel_ms_(inst.stages[s].offloadable() ? r_ * *inst.stages[s].reload : 0.0),
      off_margin_(opt.offload_margin),
      rel_margin_(opt.reload_margin),
      can_(inst.stages[s].offloadable() && r_ > 0),
      book_(opt.book_channels),
      spread_(opt.book_channels ? 0.0 : opt.spread),
      d2h_(d2h),
      h2d_(h2d),
      off_(static_cast<std::size_t>(m_), 0),
      oe_(static_cast<std::size_t>(m_), std::numeric_limits<double>::quiet_NaN()),
      rs_(static_cast<std::size_t>(m_), std::numeric_limits<double>::quiet_NaN()) {
  const Stage& st = inst.stages[s];
  times_.resize(static_cast<std::size_t>(m_));
  for (int j = 0; j < m_; ++j) {
    Times& t = times_[j];
    t.fs = o.f + opt.cycle * j;
    t.fe = t.fs + st.forward;
    t.bs = o.b + opt.cycle * j;
    t.be = t.bs + inst.duration(OpType::B, s);
    t.we = inst.split_backward ? o.w + opt.cycle * j + st.weight : t.be;
  }
}

void PeriodicMemoryPlan::spread_offloads() {
  if (!can_ || spread_ <= 0 || m_ == 0) return;
  // Token-time (bytes x ms) of one microbatch kept and offloaded, from microbatch 0's times.
  const Times& t = times_[0];
  const double oe = t.fe + off_ms_ + off_margin_, rs = t.bs - rel_margin_ - rel_ms_;
  if (!(oe < rs)) return;
  const double w_part = keep_w_ * (t.we - t.be);
  const double kept = act_ * (t.be - t.fs) + w_part;
  const double out = act_ * ((oe - t.fs) + (t.be - rs)) + act_ * (1 - r_) * (rs - oe) + w_part;
  const double cycle = m_ > 1 ? times_[1].fs - times_[0].fs : 0;
  if (!(kept > out) || !(cycle > 0)) return;
  const double x = std::clamp(spread_ * (kept - cap_ * cycle) / (kept - out), 0.0, 1.0);
  for (int j = 0; j < m_; ++j) {
    if (std::floor((j + 1) * x) <= std::floor(j * x)) continue;
    off_[j] = 1;
    oe_[j] = times_[j].fe + off_ms_ + off_margin_;
    rs_[j] = times_[j].bs - rel_margin_ - rel_ms_;
  }
}

bool PeriodicMemoryPlan::run() {
  spread_offloads();
  for (int jj = 0; jj < m_; ++jj) {
    std::vector<double> points{times_[jj].fs};
    for (int k = first_; k < jj; ++k) {
      if (off_[k] && rs_[k] >= times_[jj].fs && rs_[k] < times_[jj].we) points.push_back(rs_[k]);
    }
    for (std::size_t p = 0; p < points.size(); ++p) {
      while (memory(points[p], jj) > cap_) {
        const int k = offload_for(points[p], jj);
        if (k < 0) return false;
        points.push_back(rs_[k]);
      }
    }
    const double next = times_[jj + 1 < m_ ? jj + 1 : jj].fs;
    while (first_ < jj && times_[first_].we <= next) ++first_;
  }
  return true;
}

double PeriodicMemoryPlan::memory_of(int k, double x) const {
  const Times& t = times_[k];
  if (x < t.fs || x >= t.we) return 0;
  if (x >= t.be) return keep_w_;
  if (off_[k] && x >= oe_[k] && x < rs_[k]) return act_ * (1 - r_);
  return act_;
}

double PeriodicMemoryPlan::memory(double x, int last) const {
  double sum = 0;
  for (int k = first_; k <= last; ++k) sum += memory_of(k, x);
  return sum;
}

int PeriodicMemoryPlan::offload_for(double x, int last) {
  if (!can_) return -1;
  // Latest backward first: the candidates by B's planned start, descending (FIFO: by index).
  for (int k = last; k >= first_; --k) {
    if (off_[k] || times_[k].fs > x) continue;
    const double d2h_start = book_ ? d2h_.earliest_fit(times_[k].fe, off_ms_) : times_[k].fe;
    const double oe = d2h_start + off_ms_ + off_margin_;
    if (oe > x) continue;
    const double h2d_start = book_ ? h2d_.latest_fit(times_[k].bs - rel_margin_, rel_ms_) : times_[k].bs - rel_margin_ - rel_ms_;
    if (!(h2d_start > x) || h2d_start < oe) continue;
    if (book_) {
      d2h_.book(d2h_start, off_ms_);
      h2d_.book(h2d_start, rel_ms_);
    }
    off_[k] = 1;
    oe_[k] = oe;
    rs_[k] = h2d_start;
    return k;
  }
  return -1;
}

}  // namespace optpipe
