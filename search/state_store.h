// Whole search states (transposition.h's StateKey) in flat arrays: a multimap from a state's
// hash to the states stored with it, for the transposition table's dominance rule without
// offload.
//
// Why not std::unordered_multimap<hash, StateKey>: that costs three heap blocks a state (the
// node and the key's two vectors). A search of a few seconds stores hundreds of thousands, and
// freeing them one by one after the time limit took 0.22 s of a 6 s run (small-loop-03 of
// bench/solvers/random_small.py). Here the states' values live in two growing arrays (discrete
// parts and times), each state is one fixed-size record that chains to the next with the same
// hash, and the chains' heads sit in an open-addressing table (linear probing: Knuth, TAOCP
// vol. 3, 6.4); clearing the store frees five arrays.
//
// States with the same discrete part share it: the transposition table keeps up to kMaxPerKey
// states of one discrete part (their times differ), and it names, when it inserts one, a stored
// state whose discrete part it found equal. Then the new state's record points at that one's
// values instead of copying them, and the table's walk along a chain compares each stored
// discrete part only once (two records that point at the same values are equal). Discrete
// values are never written over, so a shared one stays valid when a state that used it is
// removed. A removed state's record and times are kept for the next insert with as many times
// (in the transposition table a state is removed when a new one with the same discrete part
// dominates it, and that new one is inserted next); other removed space stays unused until the
// store is cleared. On seed-29 small-loop-04 of bench/solvers/random_small.py the 222k states
// kept by probing held about 60 discrete values each.
//
// Complexity: find the chain O(1) expected, walk it O(states with that hash); insert amortised
// O(size of the state). Not thread-safe: the caller locks (the table's shards).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace optpipe {

struct StateKey;

class StateStore {
 public:
  static constexpr std::uint32_t kNone = 0xffffffffu;

  // A stored state, read in place (valid until the next insert).
  struct View {
    std::uint64_t hash;
    const std::int64_t* discrete;
    std::size_t discrete_size;
    const double* times;
    std::size_t times_size;
  };

  // The first state stored with `hash` (kNone: none), and the one after `i` in its chain.
  std::uint32_t first(std::uint64_t hash) const;
  std::uint32_t next(std::uint32_t i) const { return records_[i].next; }
  View view(std::uint32_t i) const;

  // Removes state `i` from the chain of `hash`; `prev` is the state before it there (kNone: it
  // is the first).
  void remove(std::uint64_t hash, std::uint32_t i, std::uint32_t prev);
  // Stores `key` at the front of its hash's chain. `same_discrete` (null: none): the discrete
  // values of a stored state (a View's) that equal key's, shared instead of copied.
  void insert(const StateKey& key, const std::int64_t* same_discrete = nullptr);

  std::size_t size() const { return size_; }

 private:
  struct Record {
    std::uint64_t hash;
    std::uint32_t next;
    std::uint32_t discrete_size, times_size;
    std::size_t discrete_at, times_at;
  };
  struct Head {
    std::uint64_t hash = 0;
    std::uint32_t first = kNone;  // kNone: no state (an emptied chain keeps its slot)
    bool used = false;            // the slot belongs to `hash`
  };

  std::size_t slot_of(std::uint64_t hash) const;  // the head slot of `hash`, or the empty one where it would go
  void grow_heads();

  std::vector<Record> records_;
  std::vector<std::int64_t> discrete_;
  std::vector<double> times_;
  std::vector<Head> heads_;          // a power of two in size, at most 70% of the slots used
  std::size_t used_heads_ = 0;       // slots that ever held a chain (an emptied chain keeps its slot)
  std::vector<std::uint32_t> free_;  // removed records, for reuse by a state with as many times
  std::size_t size_ = 0;
};

}  // namespace optpipe
