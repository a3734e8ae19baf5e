// Transposition table with dominance for the branch-and-bound (issue 3).
//
// Different decision orders often reach the same situation: the same actions in the device
// lists (as a set; FIFO per stage and type makes the set a vector of counters), the same
// actions started, and clocks that are equal or no later. A node whose situation is dominated
// by one already generated cannot lead to a better schedule, so it is cut. (Transposition tables
// come from game-tree search, Greenblatt et al. 1967; dominance between partial schedules in
// branch-and-bound is the "memory-based dominance" of e.g. Sewell & Jacobson, "A branch,
// bound, and remember algorithm for the 1|r_i|Σt_i scheduling problem", J. Scheduling 15, 2012.)
//
// The key of a node (build_state_key) has two parts:
//   discrete  compared for equality: per stage and type the number of actions appended and the
//             number started, and per device the actions appended but not started (in order).
//             With offload also: the offload level of each forward whose backward has not
//             started, the reloads appended, and the transfers queued per channel.
//   times     per device the time it is free (end of its running or last op); the "frontier":
//             for each op that started and whose cross-stage successor has not, the time that
//             successor's input is ready (end + comm), raised to the successor device's free
//             time (it cannot start earlier anyway); the makespan so far. With offload also:
//             memory per device, channel clocks and the offload/reload ends of live microbatches.
//
// Rules (the proofs):
//   * Without offload (no stage can offload), state A dominates B when their discrete parts are
//     equal and every time of A is <= B's. Proof: completions of A and B append the same actions
//     (the discrete parts are equal, so any continuation X of B's lists is a valid continuation
//     of A's). Without offload a forward never waits for memory: when it reaches the front of its
//     device's list every earlier op of that device has ended, so the memory it sees is fixed by
//     the list prefix, and it either fits or the lists deadlock (in A and B alike, as the lists
//     agree from the decision on and the prefixes hold the same actions). So every op of X and
//     every appended-but-unstarted op starts at max(end of its device predecessor, input ready
//     time) — a max-plus expression, monotone in the times of the key — and ends no later in A
//     than in B; the makespan (max of the makespan so far and those ends) too.
//   * With offload, starts are not monotone in earlier times (an earlier reload can take the
//     memory that a forward would have taken first, a classic list-scheduling anomaly), so only
//     exact duplicates are cut: equal discrete parts and equal times (bit for bit) give equal
//     futures.
//     Exact keys: a time before the node's time `now` that the simulator only ever reads
//     through max(it, a time >= now) is written as now or as a "past" marker, so that nodes
//     that differ only in their past (a device that idled, an offload or reload that ended, a
//     channel that fell free, a request still queued, the makespan so far) become duplicates.
//     Proof, one by one (model/simulator.cc): an idle device's next op starts at
//     max(now[d], ready, t) with t >= now, and an R appended later is requested at the end of a
//     compute that ends at or after now (the deciding device's now[d] is the node's time); an
//     ended offload or reload enters only max() with the start of its reload or its B, both
//     after now; a channel's free time only max(request, free time, t); a queued request's time
//     only that max and the queue order, and every later request is made at or after now, so
//     it goes behind it either way (a margin of 1e-6 ms keeps the tie rule's kTimeEps out of
//     reach); the makespan so far is below the end of every op still to run. The node's time
//     itself is part of the key. A live microbatch whose reload ended before now holds its
//     whole activation and its B waits for nothing more, exactly as if it had never been
//     offloaded, so it is written that way, and the Rs still to append are counted from the
//     first listed forward at a level above 0 without its R (R is FIFO per stage, and a
//     forward at level 0 gets none): useless offloads meet their twins before their B starts.
// A node cut this way has a twin (or a dominating node) that is open, being explored, or
// explored/cut by bound, so the proven bound and the optimum do not change.
//
// Memory: entries are kept until a byte budget is spent; after that the table only answers
// lookups (cutting less, never wrongly). Thread-safe (sharded locks).
// With offload (exact) the table stores a 128-bit fingerprint of each key (two independent
// 64-bit hashes of its discrete part and the bits of its times) instead of the key: about 48
// bytes a state instead of about a kilobyte, so the budget holds 20 times as many states, and
// the offload searches, which meet many more distinct states than they can store, cut far more.
// A wrong cut needs two different keys with equal fingerprints: with N states stored and L
// lookups the chance is about N·L/2^128, below 10^-20 for 10^9 of each. (Without offload the
// table compares times, so it keeps whole keys.)
// Complexity: building a key is O(S·m + D); a lookup hashes the discrete part and compares the
// times with the few entries of that key (at most kMaxPerKey), or with offload hashes the key a
// second time and looks its fingerprint up (O(key) expected).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "bounds/bound_problem.h"
#include "search/fingerprint_set.h"
#include "search/state_store.h"
#include "model/instance.h"
#include "model/simulator.h"

namespace optpipe {

struct StateKey {
  std::vector<std::int64_t> discrete;
  std::vector<double> times;
  std::uint64_t hash = 0;
};

// Fills `key` for the simulator state `st` at a decision point. `exact`: the offload form (see
// above), needed whenever some stage can offload.
void build_state_key(const BoundProblem& problem, const Simulator::Snapshot& st, bool exact, StateKey& key);

// True when `a` dominates `b` (same discrete part; times of a <= b, or equal when exact).
bool dominates(const StateKey& a, const StateKey& b, bool exact);

class TranspositionTable {
 public:
  static constexpr std::size_t kMaxPerKey = 8;

  TranspositionTable(bool exact, double memory_bytes);

  // True when a stored state dominates `key` (the caller cuts it); otherwise stores `key`
  // (dropping stored states it dominates) and returns false.
  bool dominated_or_insert(const StateKey& key);

  std::int64_t stored() const { return stored_.load(); }
  bool full() const { return bytes_.load() >= budget_; }

 private:
  using Fingerprint = FingerprintSet::Fingerprint;
  // Bytes per stored fingerprint, counted against the budget: 16 in a table 35-70% full, so at
  // most 46; 48 as before with std::unordered_set (node, bucket slot, allocator overhead).
  static constexpr double kFingerprintBytes = 48;
  static Fingerprint fingerprint(const StateKey& key);
  bool seen_or_insert(const StateKey& key);  // the exact table

  struct Shard {
    std::mutex mu;
    StateStore store;  // without offload: whole keys (flat arrays: state_store.h)
    FingerprintSet seen;  // with offload: fingerprints (one flat array: fingerprint_set.h)
  };
  static constexpr int kShards = 64;
  bool exact_;
  double budget_;
  std::atomic<double> bytes_{0};
  std::atomic<std::int64_t> stored_{0};
  std::unique_ptr<Shard[]> shards_;
};

}  // namespace optpipe
