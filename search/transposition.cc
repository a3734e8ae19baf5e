#include "search/transposition.h"

#include <algorithm>
#include <cstring>

namespace optpipe {

namespace {

bool known(double x) { return x == x; }

// splitmix64 finaliser: a cheap, well-mixed hash step.
std::uint64_t mix(std::uint64_t h, std::uint64_t v) {
  std::uint64_t z = h ^ (v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2));
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

std::uint64_t bits_of(double x) {
  std::uint64_t b;
  std::memcpy(&b, &x, sizeof b);
  return b;
}

// End of an op that started (known end, or start + duration while it runs).
double end_of(const BoundProblem& p, const Simulator::Snapshot& st, int type, int s, int j) {
  const int o = p.op(type, s, j);
  if (known(st.end[o])) return st.end[o];
  return st.start[o] + p.dur[type * p.S + s];
}

// What the parts of a key read: the problem, the state at its decision point, the form, and the
// node's time.
struct KeyInput {
  const BoundProblem& p;
  const Simulator::Snapshot& st;
  bool exact;
  double now;
  // With offload (exact), a time in the past that the future only reads through max(it, now)
  // is the same as now, so it is written as now (or as a marker): see "Exact keys" above.
  bool past(double x) const { return exact && x < now - 1e-6; }
  // Started count of (type, s) (FIFO: the started ops are a prefix of the microbatches).
  int started(int type, int s) const {
    int k = 0;
    while (k < p.m && known(st.start[p.op(type, s, k)])) ++k;
    return k;
  }
};

// Per device, the time it is free (end of its running or last op); with offload, now if past.
void device_free_times(const KeyInput& in, std::vector<double>& free) {
  for (int d = 0; d < in.p.D; ++d) {
    free[d] = in.st.running[d] ? in.st.run_end[d] : in.st.now[d];
    if (in.past(free[d])) free[d] = in.now;
  }
}

// Discrete: per stage and type the actions appended and started; with offload the Rs still to
// append. Fills the started counts of F and B per stage for the frontier.
void add_stage_counts(const KeyInput& in, StateKey& key, std::vector<int>& started_f, std::vector<int>& started_b) {
  const Simulator::Snapshot& st = in.st;
  const int S = in.p.S, m = in.p.m;
  for (int s = 0; s < S; ++s) {
    started_f[s] = in.started(0, s);
    started_b[s] = in.started(1, s);
    key.discrete.push_back(st.next_mb[0 * S + s]);
    key.discrete.push_back(st.next_mb[1 * S + s]);
    key.discrete.push_back(st.next_mb[2 * S + s]);
    key.discrete.push_back(started_f[s]);
    key.discrete.push_back(started_b[s]);
    key.discrete.push_back(in.p.types == 3 ? in.started(2, s) : 0);
    if (in.exact) {
      // The Rs still to append: from the first listed forward at a level above 0 whose R is not
      // listed (R is FIFO per stage), so a microbatch whose reload is over counts as never
      // offloaded (below).
      int next_r = st.next_mb[3 * S + s];
      while (next_r < st.next_mb[0 * S + s] && !(st.level[static_cast<std::size_t>(s) * m + next_r] > 0)) ++next_r;
      key.discrete.push_back(next_r);
    }
  }
}

// Appended, not started: the rest of each list, in order (with offload, each action's level in
// the times).
void add_unstarted_lists(const KeyInput& in, StateKey& key) {
  for (int d = 0; d < in.p.D; ++d) {
    const auto& list = in.st.owned.devices[d];
    key.discrete.push_back(-1 - d);  // separator
    for (std::size_t k = static_cast<std::size_t>(in.st.pc[d]); k < list.size(); ++k) {
      const Action& a = list[k];
      key.discrete.push_back((static_cast<std::int64_t>(a.type) << 40) | (static_cast<std::int64_t>(a.stage) << 20) | a.mb);
      if (in.exact) key.times.push_back(a.r);
    }
  }
}

// Times: device clocks, the makespan so far, and the frontier.
void add_clocks_and_frontier(const KeyInput& in, const std::vector<double>& free, const std::vector<int>& started_f,
                             const std::vector<int>& started_b, StateKey& key) {
  const BoundProblem& p = in.p;
  const Simulator::Snapshot& st = in.st;
  const int S = p.S;
  for (int d = 0; d < p.D; ++d) key.times.push_back(free[d]);
  double makespan = st.makespan;
  for (int d = 0; d < p.D; ++d) {
    if (st.running[d]) makespan = std::max(makespan, st.run_end[d]);
  }
  if (in.past(makespan)) makespan = in.now;
  key.times.push_back(makespan);
  for (int s = 0; s + 1 < S; ++s) {  // F(s, j) started, F(s+1, j) not
    const double f = free[p.device_of[s + 1]];
    for (int j = started_f[s + 1]; j < started_f[s]; ++j) {
      key.times.push_back(std::max(end_of(p, st, 0, s, j) + p.comm_after[s], f));
    }
  }
  for (int s = 1; s < S; ++s) {  // B(s, j) started, B(s-1, j) not
    const double f = free[p.device_of[s - 1]];
    for (int j = started_b[s - 1]; j < started_b[s]; ++j) {
      key.times.push_back(std::max(end_of(p, st, 1, s, j) + p.comm_after[s - 1], f));
    }
  }
}

// With offload: the node's time, memory, and the live microbatches (forward appended, backward
// not started): offload level and transfer ends.
void add_memory_and_live(const KeyInput& in, const std::vector<int>& started_b, StateKey& key) {
  const Simulator::Snapshot& st = in.st;
  const int S = in.p.S, m = in.p.m;
  key.times.push_back(in.now);
  for (int d = 0; d < in.p.D; ++d) key.times.push_back(st.mem[d]);
  for (int s = 0; s < S; ++s) {
    for (int j = started_b[s]; j < st.next_mb[0 * S + s]; ++j) {
      const std::size_t sj = static_cast<std::size_t>(s) * m + j;
      // Reloaded before now: it holds its whole activation and its B waits for nothing more,
      // as if it had never been offloaded.
      if (st.level[sj] > 0 && known(st.rel_end[sj]) && in.past(st.rel_end[sj])) {
        key.times.insert(key.times.end(), {0.0, -1.0, -1.0});
        continue;
      }
      key.times.push_back(st.level[sj]);
      for (double e : {st.off_end[sj], st.rel_end[sj]}) key.times.push_back(!known(e) ? -1.0 : in.past(e) ? -2.0 : e);
    }
  }
}

// With offload: the channels' clocks and queued requests.
void add_channels(const KeyInput& in, StateKey& key) {
  for (const auto* chans : {&in.st.d2h, &in.st.h2d}) {
    for (const Simulator::Channel& ch : *chans) {
      key.discrete.push_back(-1000000 - static_cast<std::int64_t>(ch.queue.size() - ch.head));
      key.times.push_back(ch.busy ? ch.busy_end : -1.0);
      key.times.push_back(in.past(ch.free_at) ? -2.0 : ch.free_at);
      for (std::size_t k = ch.head; k < ch.queue.size(); ++k) {
        const Simulator::Request& r = ch.queue[k];
        key.discrete.push_back(r.sj);
        // (A request made from now on goes behind it either way; ties within kTimeEps would
        // go by device id, hence the margin of past().)
        key.times.push_back(in.past(r.time) ? -2.0 : r.time);
        key.times.push_back(r.bytes);
        key.times.push_back(r.duration);
      }
    }
  }
}

// The hash of the discrete part (and with offload of the times' bits, which must then be equal).
std::uint64_t key_hash(const StateKey& key, bool exact) {
  std::uint64_t h = 0x12345678ULL + key.times.size();
  for (std::int64_t v : key.discrete) h = mix(h, static_cast<std::uint64_t>(v));
  if (exact) {
    for (double v : key.times) h = mix(h, bits_of(v));
  }
  return h;
}

}  // namespace

// The parts in a fixed order (dominates compares them position by position).
void build_state_key(const BoundProblem& p, const Simulator::Snapshot& st, bool exact, StateKey& key) {
  key.discrete.clear();
  key.times.clear();
  const KeyInput in{p, st, exact, st.t};
  std::vector<double> free(static_cast<std::size_t>(p.D));
  device_free_times(in, free);
  std::vector<int> started_f(p.S), started_b(p.S);
  add_stage_counts(in, key, started_f, started_b);
  add_unstarted_lists(in, key);
  add_clocks_and_frontier(in, free, started_f, started_b, key);
  if (exact) {
    add_memory_and_live(in, started_b, key);
    add_channels(in, key);
  }
  key.hash = key_hash(key, exact);
}

bool dominates(const StateKey& a, const StateKey& b, bool exact) {
  if (a.hash != b.hash || a.discrete != b.discrete || a.times.size() != b.times.size()) return false;
  for (std::size_t i = 0; i < a.times.size(); ++i) {
    if (exact ? a.times[i] != b.times[i] : a.times[i] > b.times[i]) return false;
  }
  return true;
}

TranspositionTable::TranspositionTable(bool exact, double memory_bytes)
    : exact_(exact), budget_(memory_bytes), shards_(new Shard[kShards]) {}

TranspositionTable::Fingerprint TranspositionTable::fingerprint(const StateKey& key) {
  // A second hash, independent of key.hash (another seed and the murmur3 finaliser instead of
  // splitmix64), over the same values.
  auto step = [](std::uint64_t g, std::uint64_t v) {
    std::uint64_t z = (g ^ 0x2545f4914f6cdd1dULL) + v * 0x9e3779b97f4a7c15ULL;
    z ^= z >> 33;
    z *= 0xff51afd7ed558ccdULL;
    z ^= z >> 33;
    z *= 0xc4ceb9fe1a85ec53ULL;
    z ^= z >> 33;
    return z ^ ((g << 29) | (g >> 35));
  };
  std::uint64_t g = 0x6a09e667f3bcc909ULL ^ (key.discrete.size() << 32) ^ key.times.size();
  for (std::int64_t v : key.discrete) g = step(g, static_cast<std::uint64_t>(v));
  for (double v : key.times) g = step(g, bits_of(v));
  return {key.hash, g};
}

bool TranspositionTable::seen_or_insert(const StateKey& key) {
  const Fingerprint f = fingerprint(key);
  Shard& sh = shards_[key.hash % kShards];
  std::lock_guard<std::mutex> lock(sh.mu);
  if (sh.seen.contains(f)) return true;
  if (bytes_.load() >= budget_) return false;
  sh.seen.insert(f);
  bytes_.fetch_add(kFingerprintBytes);
  ++stored_;
  return false;
}

namespace {

// dominates() with a stored state on one side; `verified`: stored discrete values already found
// equal to b's (null: none), which a state sharing them (StateStore) equals without a compare.
bool same_discrete(const StateStore::View& a, const StateKey& b, const std::int64_t* verified) {
  return a.hash == b.hash && a.discrete_size == b.discrete.size() && a.times_size == b.times.size() &&
         (a.discrete == verified || std::equal(a.discrete, a.discrete + a.discrete_size, b.discrete.begin()));
}

}  // namespace

bool TranspositionTable::dominated_or_insert(const StateKey& key) {
  if (exact_) return seen_or_insert(key);
  Shard& sh = shards_[key.hash % kShards];
  std::lock_guard<std::mutex> lock(sh.mu);
  std::size_t same_key = 0;
  std::uint32_t prev = StateStore::kNone;
  const std::int64_t* verified = nullptr;  // stored discrete values equal to key's (shared on insert)
  for (std::uint32_t i = sh.store.first(key.hash); i != StateStore::kNone;) {
    const StateStore::View v = sh.store.view(i);
    const std::uint32_t next = sh.store.next(i);
    if (same_discrete(v, key, verified)) {
      verified = v.discrete;
      bool old_no_later = true, new_no_later = true;  // every time of one <= the other's
      for (std::size_t t = 0; t < v.times_size; ++t) {
        old_no_later = old_no_later && v.times[t] <= key.times[t];
        new_no_later = new_no_later && key.times[t] <= v.times[t];
      }
      if (old_no_later) return true;
      if (new_no_later) {  // the new state is better: forget the old one
        bytes_.fetch_sub(static_cast<double>(8 * v.times_size + 96));  // (its discrete values stay: shared, never reused)
        --stored_;
        sh.store.remove(key.hash, i, prev);
        i = next;
        continue;
      }
      ++same_key;
    }
    prev = i;
    i = next;
  }
  if (same_key >= kMaxPerKey || bytes_.load() >= budget_) return false;
  sh.store.insert(key, verified);
  bytes_.fetch_add(static_cast<double>(8 * ((verified ? 0 : key.discrete.size()) + key.times.size()) + 96));
  ++stored_;
  return false;
}

}  // namespace optpipe
