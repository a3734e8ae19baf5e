// The memory plan of one device in the periodic template (periodic_template.h): which
// microbatches of its stages to offload so that the planned memory never passes the device's
// limit, with each offload and reload booked on its PCIe group's channels (channel_book.h) so
// that the plan never asks a shared channel for more than it can carry.
//
// Microbatch j of stage s holds its activation from F's planned start to B's planned end and
// M_W until W's end. The device's microbatches (of all its stages) are added in the order of
// their forwards' planned starts; wherever an addition (a forward's start, a reload's start)
// would pass the limit, an earlier microbatch that would be out at that instant if offloaded is
// offloaded, until it fits: the one with the latest backward whose offload fits
// on the D2H channel early enough (the earliest free slot after its F, ending with the margin
// before the instant) and whose reload fits on the H2D channel late enough (the latest free slot
// ending by its B's start less the margin, starting after the instant). The plan fails when none
// is left. With a spread (PeriodicPlanOptions::spread > 0, without booking) the share x of
// microbatches that the steady state needs offloaded (the token-time of one kept and one offloaded
// microbatch against the memory times the cycle, scaled by the spread) is offloaded first, evenly
// (microbatch j when floor((j + 1) x) > floor(j x)), so that the two devices of a PCIe group ask
// its channels for about their share each cycle (one stage per device only), but not in the last
// residency's worth of microbatches: fewer forwards follow them, and their reloads fall in the
// drain, where the group's H2D channel carries the last ones one after another
// (bench-llama2-7b-16x64-4act: 2298.09 -> 2273.11 ms); the greedy then fixes what is left. Without
// booking (PeriodicPlanOptions::book_channels false) every offload starts at its F's end and every
// reload ends at its B's start less the margin, as if each had the channels to itself: an
// optimistic plan, which the simulator then stretches where the channels are short; on the family
// of bench/README.md neither variant is always the better one. Offloads are at the instance's
// largest level r; an offloaded microbatch keeps (1 - r)·activation.
//
// Complexity: O(k·m·K·(K log K + n)) for k stages of m microbatches, K resident at once and n
// booked transfers.
#pragma once

#include <vector>

#include "heuristics/channel_book.h"
#include "heuristics/periodic_template.h"
#include "model/instance.h"

namespace optpipe {

class PeriodicMemoryPlan {
 public:
  // The device's stages (in increasing order) with every stage's offsets.
  PeriodicMemoryPlan(const Instance& instance, const std::vector<int>& stages, const std::vector<StageOffsets>& offsets,
                     const PeriodicPlanOptions& options, ChannelBook& d2h, ChannelBook& h2d);

  // Chooses the offloads; false when the plan cannot fit.
  bool run();

  // Of microbatch j of the device's i-th stage:
  bool offloaded(int i, int j) const { return items_[at(i, j)].off; }
  double offload_end(int i, int j) const { return items_[at(i, j)].oe; }    // planned (margin included); valid when offloaded
  double reload_start(int i, int j) const { return items_[at(i, j)].rs; }   // planned; valid when offloaded
  double level() const { return r_; }

 private:
  struct Item {
    double fs, fe, bs, be, we;         // planned times
    double act, keep_w, off_ms, rel_ms;
    bool can;                          // its stage can offload
    bool off = false;
    double oe = 0, rs = 0;
  };
  int at(int i, int j) const { return index_[static_cast<std::size_t>(i) * m_ + j]; }
  double memory_of(const Item& k, double x) const;
  double memory(double x, int last) const;
  // Offloads a microbatch for instant x (see the header); -1 when none can.
  int offload_for(double x, int last);
  // PeriodicPlanOptions::spread: the steady state's share of offloads, spread evenly.
  void spread_offloads();

  int m_;
  double cap_, r_, off_margin_, rel_margin_;
  bool book_;
  double spread_;
  ChannelBook& d2h_;
  ChannelBook& h2d_;
  std::vector<Item> items_;   // by forward's planned start
  std::vector<int> index_;    // [i * m + j] -> items_
  int first_ = 0;
};

}  // namespace optpipe
