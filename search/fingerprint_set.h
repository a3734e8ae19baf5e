// A set of 128-bit fingerprints in one flat array (open addressing with linear probing: Knuth,
// The Art of Computer Programming vol. 3, 6.4, algorithm L), for the transposition table's
// offload states (transposition.h).
//
// Why not std::unordered_set: that keeps one heap node per entry. A search of a few seconds
// stores millions of fingerprints, and freeing them one by one at the end took 0.30 s of a 6 s
// run (bench/solvers/random_offload.py's offload-random-02: the result came 0.47 s after the time
// limit); each insert also allocated and each rehash walked the nodes. Here the whole set is one
// allocation, so clearing it is one free.
//
// The empty slot is {0, 0}; a fingerprint equal to it is stored as {0, 1} (one value in 2^128
// shares its slot with another: a false "seen" that probability makes negligible, like any
// fingerprint collision). The table doubles when it is 70% full.
//
// Complexity: expected O(1) per insert and lookup at that load (about 2 probes for a hit, 6 for a
// miss: Knuth's analysis of linear probing); O(capacity) for a doubling, amortised O(1).
// Not thread-safe: the caller locks (the transposition table's shards).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace optpipe {

class FingerprintSet {
 public:
  struct Fingerprint {
    std::uint64_t a = 0, b = 0;
    bool operator==(const Fingerprint& o) const { return a == o.a && b == o.b; }
  };

  // True when `f` is in the set.
  bool contains(Fingerprint f) const {
    if (slots_.empty()) return false;
    f = stored_form(f);
    for (std::size_t i = home(f);; i = (i + 1) & mask()) {
      if (slots_[i] == f) return true;
      if (empty(slots_[i])) return false;
    }
  }

  // Adds `f`; false when it was there already.
  bool insert(Fingerprint f) {
    if (10 * (size_ + 1) > 7 * slots_.size()) grow();
    f = stored_form(f);
    for (std::size_t i = home(f);; i = (i + 1) & mask()) {
      if (slots_[i] == f) return false;
      if (empty(slots_[i])) {
        slots_[i] = f;
        ++size_;
        return true;
      }
    }
  }

  std::size_t size() const { return size_; }
  std::size_t capacity() const { return slots_.size(); }

 private:
  static bool empty(const Fingerprint& f) { return f.a == 0 && f.b == 0; }
  static Fingerprint stored_form(Fingerprint f) {
    if (empty(f)) f.b = 1;
    return f;
  }
  std::size_t mask() const { return slots_.size() - 1; }
  // Both halves mixed: the transposition table picks its shard from the low bits of `a`.
  std::size_t home(const Fingerprint& f) const {
    const std::uint64_t h = (f.a ^ (f.b * 0x9e3779b97f4a7c15ULL)) * 0xff51afd7ed558ccdULL;
    return static_cast<std::size_t>(h >> 17) & mask();
  }
  void grow() {
    std::vector<Fingerprint> old;
    old.swap(slots_);
    slots_.assign(old.empty() ? 64 : 2 * old.size(), Fingerprint{});
    size_ = 0;
    for (const Fingerprint& f : old) {
      if (!empty(f)) insert(f);
    }
  }

  std::vector<Fingerprint> slots_;  // a power of two in size (0 before the first insert)
  std::size_t size_ = 0;
};

}  // namespace optpipe
