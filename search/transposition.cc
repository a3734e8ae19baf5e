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

}  // namespace

void build_state_key(const BoundProblem& p, const Simulator::Snapshot& st, bool exact, StateKey& key) {
  key.discrete.clear();
  key.times.clear();
  const int S = p.S, m = p.m;
  // With offload (exact), a time in the past that the future only reads through max(it, now)
  // is the same as now, so it is written as now (or as a marker): see "Exact keys" above.
  const double now = st.t;
  auto past = [&](double x) { return exact && x < now - 1e-6; };
  std::vector<double> free(static_cast<std::size_t>(p.D));
  for (int d = 0; d < p.D; ++d) {
    free[d] = st.running[d] ? st.run_end[d] : st.now[d];
    if (past(free[d])) free[d] = now;
  }

  // Started counts per type and stage (FIFO: the started ops are a prefix of the microbatches).
  auto started = [&](int type, int s) {
    int k = 0;
    while (k < m && known(st.start[p.op(type, s, k)])) ++k;
    return k;
  };
  std::vector<int> started_f(S), started_b(S);
  for (int s = 0; s < S; ++s) {
    started_f[s] = started(0, s);
    started_b[s] = started(1, s);
    key.discrete.push_back(st.next_mb[0 * S + s]);
    key.discrete.push_back(st.next_mb[1 * S + s]);
    key.discrete.push_back(st.next_mb[2 * S + s]);
    key.discrete.push_back(started_f[s]);
    key.discrete.push_back(started_b[s]);
    key.discrete.push_back(p.types == 3 ? started(2, s) : 0);
    if (exact) {
      // The Rs still to append: from the first listed forward at a level above 0 whose R is not
      // listed (R is FIFO per stage), so a microbatch whose reload is over counts as never
      // offloaded (below).
      int next_r = st.next_mb[3 * S + s];
      while (next_r < st.next_mb[0 * S + s] && !(st.level[static_cast<std::size_t>(s) * m + next_r] > 0)) ++next_r;
      key.discrete.push_back(next_r);
    }
  }
  // Appended, not started: the rest of each list, in order.
  for (int d = 0; d < p.D; ++d) {
    const auto& list = st.owned.devices[d];
    key.discrete.push_back(-1 - d);  // separator
    for (std::size_t k = static_cast<std::size_t>(st.pc[d]); k < list.size(); ++k) {
      const Action& a = list[k];
      key.discrete.push_back((static_cast<std::int64_t>(a.type) << 40) | (static_cast<std::int64_t>(a.stage) << 20) | a.mb);
      if (exact) key.times.push_back(a.r);
    }
  }

  // Times: device clocks, the makespan so far, and the frontier.
  for (int d = 0; d < p.D; ++d) key.times.push_back(free[d]);
  double makespan = st.makespan;
  for (int d = 0; d < p.D; ++d) {
    if (st.running[d]) makespan = std::max(makespan, st.run_end[d]);
  }
  if (past(makespan)) makespan = now;
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

  if (exact) {
    key.times.push_back(now);
    // Memory, live microbatches (forward appended, backward not started): offload level and
    // transfer ends; the channels: clocks and queued requests.
    for (int d = 0; d < p.D; ++d) key.times.push_back(st.mem[d]);
    for (int s = 0; s < S; ++s) {
      for (int j = started_b[s]; j < st.next_mb[0 * S + s]; ++j) {
        const std::size_t sj = static_cast<std::size_t>(s) * m + j;
        // Reloaded before now: it holds its whole activation and its B waits for nothing more,
        // as if it had never been offloaded.
        if (st.level[sj] > 0 && known(st.rel_end[sj]) && past(st.rel_end[sj])) {
          key.times.insert(key.times.end(), {0.0, -1.0, -1.0});
          continue;
        }
        key.times.push_back(st.level[sj]);
        for (double e : {st.off_end[sj], st.rel_end[sj]}) key.times.push_back(!known(e) ? -1.0 : past(e) ? -2.0 : e);
      }
    }
    for (const auto* chans : {&st.d2h, &st.h2d}) {
      for (const Simulator::Channel& ch : *chans) {
        key.discrete.push_back(-1000000 - static_cast<std::int64_t>(ch.queue.size() - ch.head));
        key.times.push_back(ch.busy ? ch.busy_end : -1.0);
        key.times.push_back(past(ch.free_at) ? -2.0 : ch.free_at);
        for (std::size_t k = ch.head; k < ch.queue.size(); ++k) {
          const Simulator::Request& r = ch.queue[k];
          key.discrete.push_back(r.sj);
          // (A request made from now on goes behind it either way; ties within kTimeEps would
          // go by device id, hence the margin of past().)
          key.times.push_back(past(r.time) ? -2.0 : r.time);
          key.times.push_back(r.bytes);
          key.times.push_back(r.duration);
        }
      }
    }
  }

  std::uint64_t h = 0x12345678ULL + key.times.size();
  for (std::int64_t v : key.discrete) h = mix(h, static_cast<std::uint64_t>(v));
  if (exact) {
    for (double v : key.times) h = mix(h, bits_of(v));
  }
  key.hash = h;
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
  if (sh.seen.count(f) != 0) return true;
  if (bytes_.load() >= budget_) return false;
  sh.seen.insert(f);
  bytes_.fetch_add(kFingerprintBytes);
  ++stored_;
  return false;
}

bool TranspositionTable::dominated_or_insert(const StateKey& key) {
  if (exact_) return seen_or_insert(key);
  Shard& sh = shards_[key.hash % kShards];
  std::lock_guard<std::mutex> lock(sh.mu);
  auto range = sh.map.equal_range(key.hash);
  std::size_t same_key = 0;
  for (auto it = range.first; it != range.second;) {
    if (dominates(it->second, key, exact_)) return true;
    if (it->second.discrete == key.discrete) {
      if (dominates(key, it->second, exact_)) {  // the new state is better: forget the old one
        bytes_.fetch_sub(static_cast<double>(8 * (it->second.discrete.size() + it->second.times.size()) + 96));
        --stored_;
        it = sh.map.erase(it);
        continue;
      }
      ++same_key;
    }
    ++it;
  }
  if (same_key >= kMaxPerKey || bytes_.load() >= budget_) return false;
  sh.map.emplace(key.hash, key);
  bytes_.fetch_add(static_cast<double>(8 * (key.discrete.size() + key.times.size()) + 96));
  ++stored_;
  return false;
}

}  // namespace optpipe
