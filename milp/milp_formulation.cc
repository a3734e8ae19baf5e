// The MILP of the pipeline scheduling problem. Sources: the Zero Bubble paper's ILP (Qi et al.,
// arXiv 2401.10241, §3: start times, ordering binaries, big-M disjunctions, memory at
// allocations) and OptPipe (arXiv 2510.05186, §2, as reconstructed in
// ../shared/background/optpipe-paper.md: offload binaries, PCIe transfers and their memory).
// The families, the complexity and the exactness argument are in milp_formulation.h; the
// comments below give each row's meaning and why the big-M values suffice. All times are in ms,
// every time variable lies in [0, H] (H = horizon >= the optimum, and C <= H), so H is a valid
// big-M for every disjunction "t_b >= t_a + p_a" (t_a + p_a <= H, t_b >= 0).
#include "milp/milp_formulation.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <map>
#include <sstream>
#include <tuple>
#include <unordered_map>

#include "model/action.h"
#include "model/error.h"
#include "model/op_index.h"
#include "model/simulator.h"
#include "model/validator.h"

namespace optpipe::milp {
namespace {

constexpr double kGiB = 1073741824.0;  // memory rows are in GiB (2^30 bytes: exact scaling)
constexpr double kWarmEps = 1e-9;      // time ties in the warm start (the simulator's kTimeEps)

char type_char(int t) { return t == 0 ? 'F' : t == 1 ? 'B' : 'W'; }

// The instance name for a file header / MPS NAME line: [A-Za-z0-9_.-] only, "optpipe" if empty.
std::string safe_name(const std::string& name) {
  std::string out;
  for (char c : name) out += std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.' ? c : '_';
  return out.empty() ? "optpipe" : out;
}

class Builder {
 public:
  Builder(const Instance& inst, double horizon, const Schedule* warm)
      : inst_(inst), H_(horizon), S_(inst.num_stages()), m_(inst.microbatches), T_(inst.num_compute_types()) {
    N_ = T_ * S_ * m_;
    f_.horizon = H_;
    has_warm_ = warm != nullptr;
    if (warm) load_warm(*warm);
  }

  Formulation build() {
    ops_and_precedences();
    closure();
    order_binaries();
    if (inst_.can_offload()) {
      f_.exact = false;
      offload_variables();
      channels();
    }
    memory();
    f_.model.set_objective(LinearExpr::var(C_));
    finish();
    return std::move(f_);
  }

 private:
  // ---- ops -----------------------------------------------------------------------------------
  int op(int t, int s, int j) const { return op_index(S_, m_, t, s, j); }
  int type_of(int o) const { return o / (S_ * m_); }
  int stage_of(int o) const { return (o / m_) % S_; }
  int mb_of(int o) const { return o % m_; }
  double dur(int o) const { return inst_.duration(static_cast<OpType>(type_of(o)), stage_of(o)); }
  int dev(int o) const { return inst_.stages[stage_of(o)].device; }
  std::string tag(int o) const {
    return std::string(1, type_char(type_of(o))) + "_s" + std::to_string(stage_of(o)) + "_j" + std::to_string(mb_of(o));
  }
  bool reach(int a, int b) const { return (reach_[a][b >> 6] >> (b & 63)) & 1U; }

  // Variables with their warm-start values.
  int cont(const std::string& name, double lo, double hi, double value) {
    values_.push_back(value);
    return f_.model.add_continuous(name, lo, hi);
  }
  int bin(const std::string& name, bool value) {
    values_.push_back(value ? 1.0 : 0.0);
    return f_.model.add_binary(name);
  }
  void row(const std::string& name, const LinearExpr& e, Sense sense, double rhs) {
    f_.model.add_constraint(name, e, sense, rhs);
  }

  // ---- warm start: the simulated timeline -------------------------------------------------------
  void load_warm(const Schedule& sch) {
    const auto problems = check_structure(inst_, sch);
    if (!problems.empty()) throw InputError("warm start: invalid schedule: " + problems.front().message);
    const SimResult sim = simulate(inst_, sch);
    if (!sim.feasible) throw InputError("warm start: the schedule is infeasible: " + sim.reason);
    if (sim.makespan > H_ + 1e-9) {
      char buf[160];
      std::snprintf(buf, sizeof buf, "warm start: makespan %.6f ms exceeds the horizon %.6f ms", sim.makespan, H_);
      throw InputError(buf);
    }
    f_.start_makespan = sim.makespan;
    const int N = inst_.num_compute_types() * S_ * m_;
    w_start_.assign(N, 0.0);
    w_pos_.assign(N, 0);
    w_level_.assign(S_ * m_, 0.0);
    w_off_.assign(S_ * m_, -1.0);
    w_rel_.assign(S_ * m_, -1.0);
    w_off_seq_.assign(S_ * m_, 0);
    w_rel_seq_.assign(S_ * m_, 0);
    for (int d = 0; d < sch.num_devices(); ++d) {
      for (std::size_t k = 0; k < sch.devices[d].size(); ++k) {
        const Action& a = sch.devices[d][k];
        if (!a.is_compute()) continue;
        const int o = op(static_cast<int>(a.type), a.stage, a.mb);
        w_start_[o] = sim.timeline[d][k].start;
        w_pos_[o] = static_cast<int>(k);
        if (a.type == OpType::F) w_level_[a.stage * m_ + a.mb] = a.r;
      }
    }
    for (std::size_t i = 0; i < sim.transfers.size(); ++i) {
      const Transfer& t = sim.transfers[i];
      const int sj = t.stage * m_ + t.mb;
      if (t.kind == Transfer::Kind::kOffload) {
        w_off_[sj] = t.start;
        w_off_seq_[sj] = static_cast<int>(i);
      } else {
        w_rel_[sj] = t.start;
        w_rel_seq_[sj] = static_cast<int>(i);
      }
    }
  }
  double ws(int o) const { return has_warm_ ? w_start_[o] : 0.0; }
  double we(int o) const { return ws(o) + dur(o); }

  // ---- start times, precedences, makespan ----------------------------------------------------
  void ops_and_precedences() {
    start_.assign(N_, -1);
    for (int t = 0; t < T_; ++t)
      for (int s = 0; s < S_; ++s)
        for (int j = 0; j < m_; ++j) {
          const int o = op(t, s, j);
          start_[o] = cont("S_" + tag(o), 0.0, std::max(0.0, H_ - dur(o)), ws(o));
        }
    double warm_makespan = 0;
    if (has_warm_)
      for (int o = 0; o < N_; ++o) warm_makespan = std::max(warm_makespan, we(o));
    C_ = cont("makespan", 0.0, H_, warm_makespan);
    auto edge = [&](int a, int b, double lag) { edges_.push_back({a, b, lag}); };
    for (int s = 0; s < S_; ++s)
      for (int j = 0; j < m_; ++j) {
        const int F = op(0, s, j), B = op(1, s, j);
        if (s > 0) edge(op(0, s - 1, j), F, dur(op(0, s - 1, j)) + inst_.comm_after(s - 1));  // ready(F)
        edge(F, B, dur(F));                                                                 // ready(B): F
        if (s < S_ - 1) edge(op(1, s + 1, j), B, dur(op(1, s + 1, j)) + inst_.comm_after(s));  // ready(B): B(s+1)
        if (T_ == 3) edge(B, op(2, s, j), dur(B));                                          // ready(W)
        for (int t = 0; t < T_ && j + 1 < m_; ++t) edge(op(t, s, j), op(t, s, j + 1), dur(op(t, s, j)));  // FIFO
      }
    std::vector<char> has_succ(N_, 0);
    for (const Edge& e : edges_) {
      has_succ[e.a] = 1;
      row("prec_" + tag(e.a) + "_" + tag(e.b), LinearExpr::var(start_[e.b]).add(start_[e.a], -1.0), Sense::kGreaterEqual,
          e.lag);
    }
    // Every lag is at least the source's duration, so the sinks' ends bound every end.
    for (int o = 0; o < N_; ++o)
      if (!has_succ[o]) row("mk_" + tag(o), LinearExpr::var(C_).add(start_[o], -1.0), Sense::kGreaterEqual, dur(o));
  }

  // Transitive closure of the fixed precedences (a DAG): reach_[a] = every op after a.
  void closure() {
    const int W = (N_ + 63) / 64;
    reach_.assign(N_, std::vector<std::uint64_t>(W, 0));
    std::vector<std::vector<int>> succ(N_);
    std::vector<int> indeg(N_, 0);
    for (const Edge& e : edges_) {
      succ[e.a].push_back(e.b);
      ++indeg[e.b];
    }
    std::vector<int> order;
    for (int o = 0; o < N_; ++o)
      if (indeg[o] == 0) order.push_back(o);
    for (std::size_t i = 0; i < order.size(); ++i)
      for (int b : succ[order[i]])
        if (--indeg[b] == 0) order.push_back(b);
    for (auto it = order.rbegin(); it != order.rend(); ++it) {
      for (int b : succ[*it]) {
        reach_[*it][b >> 6] |= std::uint64_t{1} << (b & 63);
        for (int w = 0; w < W; ++w) reach_[*it][w] |= reach_[b][w];
      }
    }
    ops_of_device_.assign(inst_.num_devices(), {});
    for (int o = 0; o < N_; ++o) ops_of_device_[dev(o)].push_back(o);
  }

  // ---- ordering binaries and disjunctions ----------------------------------------------------
  void order_binaries() {
    for (int d = 0; d < inst_.num_devices(); ++d) {
      const auto& ops = ops_of_device_[d];
      for (std::size_t i = 0; i < ops.size(); ++i)
        for (std::size_t k = i + 1; k < ops.size(); ++k) {
          const int a = ops[i], b = ops[k];
          if (reach(a, b) || reach(b, a)) {
            ++f_.stats.fixed_pairs;
            continue;
          }
          const std::string name = tag(a) + "_" + tag(b);
          const int x = bin("x_" + name, has_warm_ && w_pos_[a] < w_pos_[b]);
          pair_[key(a, b)] = x;
          ++f_.stats.order_binaries;
          // x = 1: a ends before b starts; x = 0: b ends before a starts.
          row("dj1_" + name, LinearExpr::var(start_[b]).add(start_[a], -1.0).add(x, -H_), Sense::kGreaterEqual, dur(a) - H_);
          row("dj2_" + name, LinearExpr::var(start_[a]).add(start_[b], -1.0).add(x, H_), Sense::kGreaterEqual, dur(b));
        }
      // Ops of zero duration may share an instant; forbid cyclic orders among them (elsewhere
      // the disjunctions imply transitivity: a cycle needs zero total duration).
      std::vector<int> zero;
      for (int o : ops)
        if (dur(o) == 0.0) zero.push_back(o);
      for (std::size_t i = 0; i < zero.size(); ++i)
        for (std::size_t k = i + 1; k < zero.size(); ++k)
          for (std::size_t l = k + 1; l < zero.size(); ++l) {
            const int a = zero[i], b = zero[k], c = zero[l];
            const LinearExpr cyc1 = before(a, b).add(before(b, c)).add(before(c, a));
            const LinearExpr cyc2 = before(a, c).add(before(c, b)).add(before(b, a));
            const std::string name = tag(a) + "_" + tag(b) + "_" + tag(c);
            if (!cyc1.is_constant()) row("tri1_" + name, cyc1, Sense::kLessEqual, 2.0);
            if (!cyc2.is_constant()) row("tri2_" + name, cyc2, Sense::kLessEqual, 2.0);
          }
    }
  }
  std::int64_t key(int a, int b) const { return static_cast<std::int64_t>(a) * N_ + b; }
  // 1 when a runs before b on their (common) device: a constant for closure pairs, else x or 1-x.
  LinearExpr before(int a, int b) const {
    if (reach(a, b)) return LinearExpr(1.0);
    if (reach(b, a)) return LinearExpr(0.0);
    if (a < b) return LinearExpr::var(pair_.at(key(a, b)));
    LinearExpr e(1.0);
    return e.add(pair_.at(key(b, a)), -1.0);
  }
  bool warm_before(int a, int b) const { return w_pos_[a] < w_pos_[b]; }

  // ---- offload: levels, transfers ------------------------------------------------------------
  struct Item {
    int s, j, sj;
    std::vector<int> level_vars;  // o_ per positive level
    int toff = -1, trel = -1;
    double rmax = 0, min_off = 0, min_rel = 0;  // durations of the smallest positive level
    double w_r = 0, w_toff = 0, w_trel = 0;     // warm start
  };
  LinearExpr active(const Item& it) const {
    LinearExpr e;
    for (int v : it.level_vars) e.add(v, 1.0);
    return e;
  }
  // sum_l r_l * factor * o_l.
  LinearExpr level_sum(const Item& it, double factor) const {
    LinearExpr e;
    for (std::size_t l = 0; l < it.level_vars.size(); ++l) e.add(it.level_vars[l], levels_[l] * factor);
    return e;
  }
  LinearExpr off_dur(const Item& it) const { return level_sum(it, *inst_.stages[it.s].offload); }
  LinearExpr rel_dur(const Item& it) const { return level_sum(it, *inst_.stages[it.s].reload); }
  std::string itag(const Item& it) const { return "s" + std::to_string(it.s) + "_j" + std::to_string(it.j); }

  void offload_variables() {
    for (double r : inst_.offload_levels)
      if (r > 0) levels_.push_back(r);
    for (int s = 0; s < S_; ++s) {
      const Stage& st = inst_.stages[s];
      if (!st.offloadable()) continue;
      for (int j = 0; j < m_; ++j) {
        Item it{s, j, s * m_ + j, {}, -1, -1, levels_.back(), levels_.front() * *st.offload,
                levels_.front() * *st.reload, 0, 0, 0};
        const int F = op(0, s, j), B = op(1, s, j);
        if (has_warm_) {
          it.w_r = w_level_[it.sj];
          // Not offloaded: a zero-length phantom transfer pair at the end of F.
          it.w_toff = it.w_r > 0 ? w_off_[it.sj] : we(F);
          it.w_trel = it.w_r > 0 ? w_rel_[it.sj] : we(F);
        }
        LinearExpr sum;
        for (std::size_t l = 0; l < levels_.size(); ++l) {
          char lt[32];
          std::snprintf(lt, sizeof lt, "_l%zu", l + 1);
          it.level_vars.push_back(bin("o_" + itag(it) + lt, has_warm_ && std::fabs(it.w_r - levels_[l]) < 1e-12));
          ++f_.stats.offload_binaries;
        }
        row("lvl_" + itag(it), active(it), Sense::kLessEqual, 1.0);
        it.toff = cont("Toff_" + itag(it), 0.0, H_, it.w_toff);
        it.trel = cont("Trel_" + itag(it), 0.0, H_, it.w_trel);
        // The offload starts after F ends; the reload after the offload ends; B after the reload.
        row("offF_" + itag(it), LinearExpr::var(it.toff).add(start_[F], -1.0), Sense::kGreaterEqual, dur(F));
        row("relOff_" + itag(it), LinearExpr::var(it.trel).add(it.toff, -1.0).add(off_dur(it), -1.0), Sense::kGreaterEqual,
            0.0);
        row("relB_" + itag(it), LinearExpr::var(start_[B]).add(it.trel, -1.0).add(rel_dur(it), -1.0), Sense::kGreaterEqual,
            0.0);
        items_.push_back(std::move(it));
      }
    }
  }

  // Each PCIe group's D2H and H2D channel: one transfer at a time. Transfers of one stage keep
  // microbatch order (their requests do in every spec schedule); other pairs get a binary.
  // Every row is switched off (by H per inactive side) unless both transfers really happen.
  void channels() {
    std::map<int, std::vector<int>> by_group;
    for (std::size_t k = 0; k < items_.size(); ++k)
      by_group[inst_.devices[inst_.stages[items_[k].s].device].pcie_group].push_back(static_cast<int>(k));
    for (const auto& [g, ks] : by_group) {
      for (std::size_t i = 0; i < ks.size(); ++i)
        for (std::size_t k = i + 1; k < ks.size(); ++k) {
          const Item& a = items_[ks[i]];
          const Item& b = items_[ks[k]];
          for (int reload = 0; reload < 2; ++reload) {
            const int ta = reload ? a.trel : a.toff, tb = reload ? b.trel : b.toff;
            const LinearExpr da = reload ? rel_dur(a) : off_dur(a), db = reload ? rel_dur(b) : off_dur(b);
            const std::string name = std::string(reload ? "rel" : "off") + "_" + itag(a) + "_" + itag(b);
            LinearExpr gate;  // H * (2 - act_a - act_b)
            gate.add(active(a), -H_).add(active(b), -H_).add_constant(2 * H_);
            if (a.s == b.s) {  // a.j < b.j
              row("fifo" + name, LinearExpr::var(tb).add(ta, -1.0).add(da, -1.0).add(gate), Sense::kGreaterEqual, 0.0);
              continue;
            }
            bool first = false;
            if (has_warm_) {
              const double sa = reload ? a.w_trel : a.w_toff, sb = reload ? b.w_trel : b.w_toff;
              const int qa = reload ? w_rel_seq_[a.sj] : w_off_seq_[a.sj], qb = reload ? w_rel_seq_[b.sj] : w_off_seq_[b.sj];
              first = a.w_r > 0 && b.w_r > 0 ? (sa < sb - kWarmEps || (std::fabs(sa - sb) <= kWarmEps && qa < qb)) : sa <= sb;
            }
            const int w = bin("k" + name, first);
            ++f_.stats.channel_binaries;
            channel_pair_[{reload, ks[i], ks[k]}] = w;
            row("ch1" + name, LinearExpr::var(tb).add(ta, -1.0).add(da, -1.0).add(w, -H_).add(gate), Sense::kGreaterEqual,
                -H_);
            row("ch2" + name, LinearExpr::var(ta).add(tb, -1.0).add(db, -1.0).add(w, H_).add(gate), Sense::kGreaterEqual,
                0.0);
          }
        }
    }
  }
  // 1 when the reload of item p starts before the reload of item k (both on one device).
  LinearExpr reload_before(int p, int k) const {
    const Item& a = items_[p];
    const Item& b = items_[k];
    if (a.s == b.s) return LinearExpr(a.j < b.j ? 1.0 : 0.0);
    if (p < k) return LinearExpr::var(channel_pair_.at({1, p, k}));
    LinearExpr e(1.0);
    return e.add(channel_pair_.at({1, k, p}), -1.0);
  }
  bool warm_reload_before(int p, int k) const {
    const Item& a = items_[p];
    const Item& b = items_[k];
    if (a.s == b.s) return a.j < b.j;
    const int w = p < k ? channel_pair_.at({1, p, k}) : channel_pair_.at({1, k, p});
    return p < k ? values_[w] > 0.5 : values_[w] < 0.5;
  }

  // ---- memory ----------------------------------------------------------------------------------
  // Adds to `e` the GiB that item p's transfers have freed (offload ended) and taken back (reload
  // started) by time t = t_var: the start of F y_at (k_at < 0) or the start of the reload of item
  // k_at (y_at < 0). `at` names the event in the variable names.
  void transfer_terms(LinearExpr& e, int p, int t_var, double t_warm, const std::string& at, int k_at, int y_at) {
    const Item& it = items_[p];
    const double act = inst_.stages[it.s].activation / kGiB;
    const double cap = act * it.rmax;
    const std::string name = itag(it) + "_at_" + at;
    // Offload of p ended by t: z = 1 allows freeing q <= act * r bytes.
    const int z = bin("z_" + name, has_warm_ && it.w_toff + it.w_r * *inst_.stages[it.s].offload <= t_warm + kWarmEps);
    const int q = cont("q_" + name, 0.0, cap, values_.back() * act * it.w_r);
    row("zdef_" + name, LinearExpr::var(t_var).add(it.toff, -1.0).add(off_dur(it), -1.0).add(z, -H_), Sense::kGreaterEqual,
        -H_);
    row("qa_" + name, LinearExpr::var(q).add(level_sum(it, act), -1.0), Sense::kLessEqual, 0.0);
    row("qz_" + name, LinearExpr::var(q).add(z, -cap), Sense::kLessEqual, 0.0);
    e.add(q, -1.0);
    // Reload of p started before t: counted as p >= act * r * [before].
    LinearExpr rb;
    bool warm_rb = false;
    if (k_at < 0) {  // at the start of F y: the order of the two starts
      const int u = reload_vs_f(p, y_at);
      rb = LinearExpr::var(u);
      warm_rb = values_[u] > 0.5;
    } else {  // at another reload's start: the channel order says it
      rb = reload_before(p, k_at);
      warm_rb = has_warm_ && warm_reload_before(p, k_at);
    }
    if (rb.is_constant()) {
      if (rb.constant > 0.5) e.add(level_sum(it, act));
      return;
    }
    const int pv = cont("p_" + name, 0.0, cap, warm_rb ? act * it.w_r : 0.0);
    row("pdef_" + name, LinearExpr::var(pv).add(level_sum(it, act), -1.0).add(rb, -cap), Sense::kGreaterEqual, -cap);
    e.add(pv, 1.0);
  }

  // u = 1 when the reload of item p starts before F y starts (Trel <= S_y), 0 when F y starts
  // first (S_y <= Trel). Shared by y's memory row (which counts the reload when u = 1) and the
  // reload's row (which counts y when u = 0). At equal times either value is allowed and both
  // give the same condition (memory + F + reload bytes <= limit), the spec's "F first" included.
  int reload_vs_f(int p, int y) {
    const auto key = std::make_pair(p, y);
    if (const auto it = reload_vs_f_.find(key); it != reload_vs_f_.end()) return it->second;
    const Item& it = items_[p];
    const std::string name = itag(it) + "_" + tag(y);
    const int u = bin("u_" + name, has_warm_ && it.w_trel < ws(y) - kWarmEps);
    row("ud1_" + name, LinearExpr::var(start_[y]).add(it.trel, -1.0).add(u, -H_), Sense::kGreaterEqual, -H_);
    row("ud0_" + name, LinearExpr::var(it.trel).add(start_[y], -1.0).add(u, H_), Sense::kGreaterEqual, 0.0);
    reload_vs_f_[key] = u;
    return u;
  }

  // The memory rows (at allocations, milp_formulation.h) of every device where memory can run
  // out: at every F start and at every reload start.
  void memory() {
    for (int d = 0; d < inst_.num_devices(); ++d) {
      const Device& dv = inst_.devices[d];
      double total = dv.static_memory;
      for (int o : ops_of_device_[d])
        if (type_of(o) == 0) total += inst_.stages[stage_of(o)].activation;
      if (total <= dv.memory_limit) continue;  // memory can never run out on this device
      std::vector<int> my_items;
      for (std::size_t k = 0; k < items_.size(); ++k)
        if (inst_.stages[items_[k].s].device == d) my_items.push_back(static_cast<int>(k));
      const double room = (dv.memory_limit - dv.static_memory) / kGiB;
      memory_at_f_starts(d, my_items, room);
      memory_at_reload_starts(d, my_items, room);
    }
  }

  // At every F start y: activations of the Fs before y, minus what the Bs and Ws before y
  // freed (list order on the one compute stream), minus offloads ended, plus reloads started.
  // `room`: the device's limit less its static memory, in GiB; `my_items`: its items (the Fs
  // that may offload).
  void memory_at_f_starts(int d, const std::vector<int>& my_items, double room) {
    for (int y : ops_of_device_[d]) {
      if (type_of(y) != 0) continue;
      LinearExpr e(inst_.stages[stage_of(y)].activation / kGiB);
      for (int o : ops_of_device_[d]) {
        if (o == y) continue;
        const int s = stage_of(o);
        const double bytes = type_of(o) == 0   ? inst_.stages[s].activation
                             : type_of(o) == 1 ? -inst_.freed_by_b(s)
                                               : -inst_.freed_by_w(s);
        if (bytes != 0.0) e.add(before(o, y), bytes / kGiB);
      }
      for (int p : my_items) {
        const Item& it = items_[p];
        const int F = op(0, it.s, it.j), B = op(1, it.s, it.j);
        if (F == y) continue;  // its own offload ends after it starts
        if (reach(y, F) && dur(y) + dur(F) + it.min_off > 0) continue;        // both after y
        if (reach(B, y) && dur(B) + it.min_rel > 0) continue;                 // both before y: net 0
        transfer_terms(e, p, start_[y], ws(y), tag(y), -1, y);
      }
      row("mem_" + tag(y), e, Sense::kLessEqual, room);
    }
  }

  // At every reload start of item k (switched off by mbig when k is not offloaded).
  void memory_at_reload_starts(int d, const std::vector<int>& my_items, double room) {
    double mbig = 0;
    for (int o : ops_of_device_[d])
      if (type_of(o) == 0) mbig += 2 * inst_.stages[stage_of(o)].activation / kGiB;
    mbig += std::max(0.0, -room);
    for (int k : my_items) {
      const Item& ik = items_[k];
      const int Fk = op(0, ik.s, ik.j), Bk = op(1, ik.s, ik.j);
      const std::string at = "R_" + itag(ik);
      // Own: F allocated it all, the offload freed r, the reload takes r back: act.
      LinearExpr e(inst_.stages[ik.s].activation / kGiB);
      for (int o : ops_of_device_[d]) {
        if (o == Fk) continue;
        const int s = stage_of(o);
        const std::string name = tag(o) + "_at_" + at;
        if (type_of(o) == 0) {  // F started by the reload (ties: the F first; the MILP may drop it)
          const double act = inst_.stages[s].activation / kGiB;
          if (reach(o, Fk)) {
            e.add_constant(act);
          } else if (!reach(Bk, o)) {  // counted unless the reload starts first
            e.add_constant(act).add(reload_vs_f(k, o), -act);
          }
          continue;
        }
        const double freed = (type_of(o) == 1 ? inst_.freed_by_b(s) : inst_.freed_by_w(s)) / kGiB;
        if (freed == 0.0) continue;
        if (reach(o, Fk)) {  // ended before F(k) started
          e.add_constant(-freed);
        } else if ((o == Bk || reach(Bk, o)) && dur(Bk) + (o == Bk ? 0.0 : dur(o)) + ik.min_rel > 0) {
          // ends after the reload starts: frees nothing yet
        } else {  // v = 1 only if o ended by the reload's start
          const int v = bin("v_" + name, has_warm_ && we(o) <= ik.w_trel + kWarmEps);
          row("vdef_" + name, LinearExpr::var(ik.trel).add(start_[o], -1.0).add(v, -H_), Sense::kGreaterEqual, dur(o) - H_);
          e.add(v, -freed);
        }
      }
      for (int p : my_items) {
        if (p == k) continue;
        const Item& it = items_[p];
        const int F = op(0, it.s, it.j), B = op(1, it.s, it.j);
        if (reach(B, Fk) && it.min_rel + dur(B) + dur(Fk) + ik.min_off > 0) continue;  // both before: net 0
        if (reach(Bk, F) && ik.min_rel + dur(Bk) + dur(F) + it.min_off > 0) continue;  // both after
        transfer_terms(e, p, ik.trel, ik.w_trel, at, k, -1);
      }
      e.add(active(ik), mbig);
      row("mem_" + at, e, Sense::kLessEqual, room + mbig);
    }
  }

  void finish() {
    FormulationStats& st = f_.stats;
    st.variables = static_cast<int>(f_.model.variables().size());
    st.binaries = f_.model.num_binaries();
    st.constraints = static_cast<int>(f_.model.constraints().size());
    st.memory_binaries = st.binaries - st.order_binaries - st.offload_binaries - st.channel_binaries;
    if (has_warm_) f_.start_values = values_;
    f_.model.name = safe_name(inst_.name);
    f_.model.comments = header_comments(inst_, f_);
  }

  struct Edge {
    int a, b;
    double lag;
  };
  const Instance& inst_;
  double H_;
  int S_, m_, T_, N_ = 0;
  Formulation f_;
  std::vector<double> values_;
  bool has_warm_ = false;
  std::vector<double> w_start_, w_level_, w_off_, w_rel_;
  std::vector<int> w_pos_, w_off_seq_, w_rel_seq_;
  std::vector<int> start_;
  int C_ = -1;
  std::vector<Edge> edges_;
  std::vector<std::vector<std::uint64_t>> reach_;
  std::vector<std::vector<int>> ops_of_device_;
  std::unordered_map<std::int64_t, int> pair_;
  std::vector<double> levels_;
  std::vector<Item> items_;
  std::map<std::tuple<int, int, int>, int> channel_pair_;
  std::map<std::pair<int, int>, int> reload_vs_f_;
};

}  // namespace

Formulation build_formulation(const Instance& instance, double horizon, const Schedule* warm_start) {
  if (!(horizon > 0) || !std::isfinite(horizon)) {
    throw InputError("MILP horizon (big-M) must be a finite positive upper bound on the makespan");
  }
  return Builder(instance, horizon, warm_start).build();
}

std::string start_name(OpType type, int stage, int mb) {
  return std::string("S_") + type_char(static_cast<int>(type)) + "_s" + std::to_string(stage) + "_j" + std::to_string(mb);
}

std::vector<std::string> header_comments(const Instance& inst, const Formulation& f) {
  char buf[256];
  std::vector<std::string> c;
  c.push_back("OptPipe MILP export (optpipe export-milp) of instance " + safe_name(inst.name));
  c.push_back("Problem: ../shared/spec/problem.md (optpipe-instance/1). Formulation: milp/README.md;");
  c.push_back("Zero Bubble ILP (arXiv 2401.10241 s.3) and OptPipe (arXiv 2510.05186 s.2) style.");
  std::snprintf(buf, sizeof buf, "Objective: minimise makespan (ms). Big-M / horizon H = %.17g ms (a heuristic's makespan).",
                f.horizon);
  c.push_back(buf);
  c.push_back("Times in ms; memory rows in GiB (bytes / 2^30).");
  c.push_back("Variables: S_<op> op starts; x_<a>_<b> = 1 if a runs before b on their device (pairs ordered by");
  c.push_back("precedence have none); o_<s,j>_l<k> offload level k; Toff_/Trel_ transfer starts; koff_/krel_");
  c.push_back("channel order; z_/q_ offload ended before an event (F or reload start) and the GiB it freed;");
  c.push_back("u_ reload started before an F start; p_ GiB a reload started before an event took back;");
  c.push_back("v_ B or W ended before a reload start.");
  if (f.exact) {
    c.push_back("EXACT: no offload is possible in this instance, so this MILP has the spec's optimum.");
  } else {
    c.push_back("RELAXATION: with offload this MILP is not exactly the spec; its optimum is <= the spec's optimum:");
    c.push_back(" - a reload may start any time after its offload ends (spec: when the device list reaches R,");
    c.push_back("   at the end of a compute op, in channel order);");
    c.push_back(" - each PCIe channel serves its transfers in any order (spec: strictly FIFO by request; a waiting");
    c.push_back("   reload holds later requests) and an offload may start later than the spec's.");
    c.push_back("Every feasible spec schedule is a feasible point of this MILP with the same makespan.");
  }
  std::snprintf(buf, sizeof buf, "Size: %d variables (%d binaries: %d order, %d offload, %d channel, %d memory), %d constraints.",
                f.stats.variables, f.stats.binaries, f.stats.order_binaries, f.stats.offload_binaries,
                f.stats.channel_binaries, f.stats.memory_binaries, f.stats.constraints);
  c.push_back(buf);
  return c;
}

std::string summary(const Formulation& f) {
  std::ostringstream o;
  o << f.stats.variables << " variables (" << f.stats.binaries << " binaries), " << f.stats.constraints
    << " constraints; " << (f.exact ? "exact" : "relaxation (offload)") << ", horizon " << f.horizon << " ms";
  return o.str();
}

std::string mip_start_text(const Formulation& f) {
  std::string out;
  char buf[320];
  std::snprintf(buf, sizeof buf, "Feasible - objective value %.17g\n", f.model.objective_value(f.start_values));
  out += buf;
  const auto& vars = f.model.variables();
  for (std::size_t i = 0; i < vars.size(); ++i) {
    double v = f.start_values[i];
    if (vars[i].type == VarType::kBinary) v = v > 0.5 ? 1.0 : 0.0;
    std::snprintf(buf, sizeof buf, "%zu %s %.17g 0\n", i, vars[i].name.c_str(), v);
    out += buf;
  }
  return out;
}

}  // namespace optpipe::milp
