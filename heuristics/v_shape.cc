#include "heuristics/v_shape.h"

#include <algorithm>
#include <compare>
#include <string>
#include <utility>
#include <vector>

#include "heuristics/order_utils.h"

namespace optpipe {

std::array<int, 4> v_shape_offsets(VShape shape, int d, int i) {
  switch (shape) {
    case VShape::kMin: {
      const int delta = d % 3 == 0 ? 2 : 0;
      return {i, 2 * d - 1 - i, 2 * d + delta + i, 4 * d + delta - 1 - i};
    }
    case VShape::kHalf: {
      const int delta = d % 2 == 0 ? 3 : 0;
      return {2 * i, 3 * d - 2 - i, 3 * d + delta + 2 * i - 1, 6 * d + delta - i - 2};
    }
    case VShape::kZb:
      return {4 * i, 6 * d - 5 - 2 * i, 6 * d - 4 + 4 * i, 12 * d - 9 - 2 * i};
  }
  return {};
}

namespace {

constexpr int kPeriod = 6;
// Pass kinds of one device in the building block, in the order of the offsets; kW is a W of
// either chunk (one FIFO queue), as the paper's memory count does not tell the chunks apart.
enum Kind { kF0 = 0, kF1 = 1, kB1 = 2, kB0 = 3, kW = 4 };
// slots[kind][k]: the slot of the k-th pass of that kind on one device (k = microbatch for F and
// B; for kW the k-th W in slot order).
using DeviceSlots = std::vector<std::vector<int>>;

int last_slot(const DeviceSlots& dev) {
  int last = -1;
  for (const auto& kind : dev) {
    for (int slot : kind) last = std::max(last, slot);
  }
  return last;
}

// Appends the W queue: each W into the first free slot after its B, in the order of the B slots.
void put_w(DeviceSlots& dev) {
  std::vector<char> taken(static_cast<std::size_t>(last_slot(dev)) + 1, 0);
  std::vector<int> bs;
  for (int k = 0; k < 4; ++k) {
    for (int slot : dev[k]) {
      taken[slot] = 1;
      if (k == kB1 || k == kB0) bs.push_back(slot);
    }
  }
  std::sort(bs.begin(), bs.end());
  std::vector<int> ws;
  ws.reserve(bs.size());
  int cursor = 0;
  for (int b : bs) {
    int slot = std::max(cursor, b + 1);
    while (slot < static_cast<int>(taken.size()) && taken[slot]) ++slot;
    ws.push_back(slot);
    cursor = slot + 1;
  }
  dev.resize(5);
  dev[kW] = std::move(ws);
}

// The paper's unit memory count of one device: an F adds one chunk activation, a W frees one.
// Without a W queue (dev.size() == 4) the Ws are taken to run in the free slots as they come.
int unit_peak(const DeviceSlots& dev, std::vector<signed char>& kind_at) {
  kind_at.assign(static_cast<std::size_t>(last_slot(dev)) + 1, -1);
  for (std::size_t k = 0; k < dev.size(); ++k) {
    for (int slot : dev[k]) kind_at[slot] = static_cast<signed char>(k);
  }
  const bool has_w = dev.size() > 4;
  int cur = 0, peak = 0, pending = 0;
  for (signed char k : kind_at) {
    if (k == kF0 || k == kF1) {
      ++cur;
    } else if (k == kB1 || k == kB0) {
      ++pending;
    } else if (k == kW) {
      --cur;
    } else if (!has_w && pending > 0) {
      --pending;
      --cur;
    }
    peak = std::max(peak, cur);
  }
  return peak;
}

// The paper's "reorder" (as in sail-sg scheduler/zbv_greedy.py, PipelineGraph.reorder): visit the
// passes of all devices in slot order; a pass of the warm-up (before the first B chunk 0 of device
// 0; only when `with_w`) or of the cool-down (after the first F chunk 0 of the last microbatch that
// follows it) moves to the earliest free slot after its inputs, its predecessor of the same kind
// and, for a W, its B, where the device's unit peak stays within the schedule's current peak. A
// pass only moves earlier and only behind passes already placed, so the slots stay a valid
// unit-time timetable, FIFO per kind.
void reorder(std::vector<DeviceSlots>& res, bool with_w) {
  const int d = static_cast<int>(res.size());
  if (with_w) {
    for (auto& dev : res) put_w(dev);
  }
  std::vector<signed char> scratch;
  int limit = 0;
  for (const auto& dev : res) limit = std::max(limit, unit_peak(dev, scratch));
  const int m = static_cast<int>(res[0][kF0].size());
  struct Pass {
    int slot, device, kind, k;
    auto operator<=>(const Pass&) const = default;
  };
  std::vector<Pass> passes;
  std::vector<std::vector<char>> occupied(d);
  for (int i = 0; i < d; ++i) {
    occupied[i].assign(static_cast<std::size_t>(last_slot(res[i])) + 1, 0);
    for (int kind = 0; kind < static_cast<int>(res[i].size()); ++kind) {
      for (int k = 0; k < static_cast<int>(res[i][kind].size()); ++k) {
        passes.push_back({res[i][kind][k], i, kind, k});
      }
    }
  }
  std::sort(passes.begin(), passes.end());
  int phase = 0;  // 0: warm-up, 1: steady (fixed), 2: cool-down
  std::vector<int> bs;
  for (const Pass& ps : passes) {
    DeviceSlots& dev = res[ps.device];
    if (phase == 0 && ps.kind == kB0 && ps.device == 0) phase = 1;
    if (phase == 1 || (phase == 0 && !with_w)) {
      if (phase == 1 && ps.kind == kF0 && ps.k == m - 1) phase = 2;
      occupied[ps.device][ps.slot] = 1;
      continue;
    }
    int earliest = -1;
    if ((ps.kind == kF0 || ps.kind == kB1) && ps.device > 0) {
      earliest = std::max(earliest, res[ps.device - 1][ps.kind][ps.k]);
    }
    if ((ps.kind == kF1 || ps.kind == kB0) && ps.device + 1 < d) {
      earliest = std::max(earliest, res[ps.device + 1][ps.kind][ps.k]);
    }
    if (ps.kind > kF0 && ps.kind < kW) earliest = std::max(earliest, dev[ps.kind - 1][ps.k]);
    if (ps.kind == kW) {
      bs.assign(dev[kB1].begin(), dev[kB1].end());
      bs.insert(bs.end(), dev[kB0].begin(), dev[kB0].end());
      std::nth_element(bs.begin(), bs.begin() + ps.k, bs.end());
      earliest = std::max(earliest, bs[ps.k]);
    }
    if (ps.k > 0) earliest = std::max(earliest, dev[ps.kind][ps.k - 1]);
    int& slot = dev[ps.kind][ps.k];
    for (int t = earliest + 1; t < ps.slot; ++t) {
      if (occupied[ps.device][t]) continue;
      slot = t;
      if (unit_peak(dev, scratch) <= limit) break;
      slot = ps.slot;
    }
    occupied[ps.device][slot] = 1;
  }
  if (with_w) {
    for (auto& dev : res) dev.resize(4);
  }
}

}  // namespace

std::optional<Schedule> v_shape_schedule(const Instance& inst, VShape shape, bool reordered,
                                         std::string* why) {
  const int d = inst.num_devices(), m = inst.microbatches;
  std::vector<DeviceSlots> res(d, DeviceSlots(4));
  for (int i = 0; i < d; ++i) {
    const std::array<int, 4> off = v_shape_offsets(shape, d, i);
    for (int kind = 0; kind < 4; ++kind) {
      for (int j = 0; j < m; ++j) res[i][kind].push_back(off[kind] + kPeriod * j);
    }
  }
  if (reordered) {
    reorder(res, true);   // warm-up and cool-down, counting the Ws' slots
    reorder(res, false);  // cool-down again, Ws in whatever slots stay free
  }
  Schedule sch = empty_schedule(inst);
  std::vector<std::pair<int, Action>> slotted;  // (slot, action) of one device
  std::vector<char> taken;
  for (int i = 0; i < d; ++i) {
    const int stage_of[4] = {i, 2 * d - 1 - i, 2 * d - 1 - i, i};
    slotted.clear();
    taken.assign(static_cast<std::size_t>(last_slot(res[i])) + 1, 0);
    bool collided = false;
    auto place = [&](int slot, Action a) {
      // The four offsets are distinct mod 6 for every d and the reorder only moves a pass into a
      // free slot, so this never happens; it guards later edits.
      if (slot >= static_cast<int>(taken.size())) taken.resize(static_cast<std::size_t>(slot) + 1, 0);
      collided = collided || taken[slot];
      taken[slot] = 1;
      slotted.emplace_back(slot, a);
    };
    for (int kind = 0; kind < 4; ++kind) {
      for (int j = 0; j < m; ++j) {
        const int s = stage_of[kind];
        place(res[i][kind][j], kind < 2 ? make_f(s, j) : make_b(s, j));
      }
    }
    if (inst.split_backward) {
      // Ws in the order of their B slots, each into the first free slot after its B. The B slots
      // of a stage increase with the microbatch, so this order is FIFO per stage, and a W never
      // lands before an earlier W of its stage (the slots that W skipped were all taken).
      std::vector<std::pair<int, Action>> bs;
      for (const auto& [slot, a] : slotted) {
        if (a.type == OpType::B) bs.emplace_back(slot, a);
      }
      std::sort(bs.begin(), bs.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
      int cursor = 0;  // every slot in [B slot + 1, cursor) is taken
      for (const auto& [bslot, b] : bs) {
        int slot = std::max(cursor, bslot + 1);
        while (slot < static_cast<int>(taken.size()) && taken[slot]) ++slot;
        place(slot, make_w(b.stage, b.mb));
        cursor = slot + 1;
      }
    }
    if (collided) {
      *why = "internal error: two passes of the V building block share a slot on device " + std::to_string(i);
      return std::nullopt;
    }
    std::sort(slotted.begin(), slotted.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
    auto& list = sch.devices[i];
    list.reserve(slotted.size());
    for (const auto& entry : slotted) list.push_back(entry.second);
  }
  return sch;
}

Built VShapeHeuristic::build(const Instance& inst, const RunLimits& /*limits*/) const {
  std::string why;
  if (!require_v_placement(inst, title(), &why)) return Built::fail(why);
  std::optional<Schedule> sch = v_shape_schedule(inst, shape_, /*reordered=*/true, &why);
  if (!sch) return Built::fail(why);
  return Built::ok(std::move(*sch));
}

}  // namespace optpipe
