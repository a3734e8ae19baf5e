// The memory plan of one stage in the periodic template (periodic_template.h): which
// microbatches to offload so that the planned memory never passes the device's limit, with each
// offload and reload booked on its PCIe group's channels (channel_book.h) so that the plan
// never asks a shared channel for more than it can carry.
//
// Microbatch j of stage s holds its activation from F's planned start to B's planned end and
// M_W until W's end. Microbatches are added in order; wherever an addition (a forward's start, a
// reload's start) would pass the limit, an earlier microbatch that would be out at that instant
// if offloaded is offloaded, until it fits: the one with the latest backward whose offload fits
// on the D2H channel early enough (the earliest free slot after its F, ending with the margin
// before the instant) and whose reload fits on the H2D channel late enough (the latest free slot
// ending by its B's start less the margin, starting after the instant). The plan fails when none
// is left. With a spread (PeriodicPlanOptions::spread > 0, without booking) the share x of
// microbatches that the steady state needs offloaded (the token-time of one kept and one
// offloaded microbatch against the memory times the cycle, scaled by the spread) is offloaded
// first, evenly (microbatch j when floor((j + 1) x) > floor(j x)), so that the two devices of a
// PCIe group ask its channels for about their share each cycle; the greedy then fixes what is
// left. Without booking (PeriodicPlanOptions::book_channels false) every offload starts at
// its F's end and every reload ends at its B's start less the margin, as if each had the
// channels to itself: an optimistic plan, which the simulator then stretches where the channels
// are short; on the family of bench/README.md neither variant is always the better one. Offloads are at the instance's largest level r; an offloaded microbatch keeps
// (1 - r)·activation.
//
// Complexity: O(m·K·(K + n)) for m microbatches, K resident at once and n booked transfers.
#pragma once

#include <vector>

#include "heuristics/channel_book.h"
#include "heuristics/periodic_template.h"
#include "model/instance.h"

namespace optpipe {

class PeriodicMemoryPlan {
 public:
  PeriodicMemoryPlan(const Instance& instance, int s, const StageOffsets& offsets, const PeriodicPlanOptions& options,
                     ChannelBook& d2h, ChannelBook& h2d);

  // Chooses the offloads; false when the plan cannot fit.
  bool run();

  bool offloaded(int j) const { return off_[j] != 0; }
  double offload_end(int j) const { return oe_[j]; }    // planned (margin included); valid when offloaded
  double reload_start(int j) const { return rs_[j]; }   // planned; valid when offloaded
  double level() const { return r_; }

 private:
  struct Times {
    double fs, fe, bs, be, we;
  };
  double memory_of(int k, double x) const;
  double memory(double x, int last) const;
  // Offloads a microbatch for instant x (see the header); -1 when none can.
  int offload_for(double x, int last);
  // PeriodicPlanOptions::spread: the steady state's share of offloads, spread evenly.
  void spread_offloads();

  int m_;
  double act_, keep_w_, cap_, r_, off_ms_, rel_ms_, off_margin_, rel_margin_;
  bool can_, book_;
  double spread_;
  ChannelBook& d2h_;
  ChannelBook& h2d_;
  std::vector<char> off_;
  std::vector<Times> times_;
  std::vector<double> oe_, rs_;
  int first_ = 0;
};

}  // namespace optpipe
