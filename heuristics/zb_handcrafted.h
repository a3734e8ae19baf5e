// The Zero Bubble paper's handcrafted schedules (Qi et al., "Zero Bubble Pipeline Parallelism",
// ICLR 2024, arXiv 2401.10241, §2.1-§2.3, Fig. 3, Table 2). One stage per device, split backward.
//
// Both follow 1F1B's one-forward/one-backward rhythm but run W late, so that the B chain that
// limits the pipeline is not delayed by W:
//  - ZB-H1: stage s keeps 1F1B's min(p-s-1, m) warm-up forwards and runs W(j) after B(j+s).
//    Peak (p-s)·M_B + s·M_W; bubble (p-1)(T_F+T_B-T_W) per stage span, 1/3 of 1F1B's at equal times.
//  - ZB-H2: stage s runs min(2(p-s)-1, m) warm-up forwards, filling the bubble before the first
//    B, and W(j) after B(j+2s). Peak (2p-2s-1)·M_B + 2s·M_W; bubble (p-1)(T_F+T_B-2T_W), zero at
//    equal times.
// In both, after a B comes its due W, then the next F; the remaining Ws close the list.
// O(p · m).
#pragma once

#include "heuristics/heuristic.h"

namespace optpipe {

// The shared generator: per stage s, `warmup(s)` forwards, then (B, due W, next F) rounds where
// W(j) is due after B(j + delay(s)), then the remaining Ws.
Schedule delayed_w_schedule(const Instance& instance, int (*warmup)(int p, int s), int (*delay)(int p, int s));

class ZbH1 final : public Heuristic {
 public:
  std::string name() const override { return "zb-h1"; }
  std::string title() const override { return "ZB-H1"; }
  std::string description() const override {
    return "1F1B with W delayed by the stage index (Zero Bubble, arXiv 2401.10241, §2.1); 1F1B's memory";
  }
  Built build(const Instance& instance, const RunLimits& limits) const override;
  using Heuristic::build;
};

class ZbH2 final : public Heuristic {
 public:
  std::string name() const override { return "zb-h2"; }
  std::string title() const override { return "ZB-H2"; }
  std::string description() const override {
    return "extra warm-up forwards and late Ws, zero bubble at equal times (Zero Bubble, arXiv 2401.10241, §2.2)";
  }
  Built build(const Instance& instance, const RunLimits& limits) const override;
  using Heuristic::build;
};

}  // namespace optpipe
