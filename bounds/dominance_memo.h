// The dominance memo of the relaxations' searches (device_relaxation.h, two_device_relaxation.h):
// states keyed by their counters (how many ops of each stage and type are placed), each with a
// signature of the values that decide every completion (free times, makespan so far, releases
// still pending). A state whose signature is no smaller anywhere than a stored one with the same
// counters has no completion the stored one lacks at the same or a better makespan, so its
// subtree can be skipped (the search's own headers say why each signature covers its state).
//
// Layout: one hash-map entry per counter key, its signatures side by side in one array (all
// states with the same counters have signatures of the same length), and the key read through
// a buffer kept between calls, so a lookup allocates nothing and a stored state at most grows
// its entry's array. (Before: a new string per lookup and a vector per stored signature, 8-12%
// of a small V/loop instance's solve in malloc, free and hashing, `perf`.)
//
// Complexity: O(key) to hash, O(entries · signature) to compare; at most `max_entries` per key
// (more: less pruning, no error).
#pragma once

#include <cstddef>
#include <string>
#include <unordered_map>
#include <vector>

namespace optpipe {

// Whether stored[x] <= now[x] + tol for every x < n. The value at `hint` is compared first, and
// `hint` becomes the first value that fails: states stored under one key tend to differ from a
// new one in the same place, so most comparisons end at once (the same answer, fewer
// comparisons; the relaxations' dominance memos, here and in single_stage_relaxation.cc).
inline bool no_later_everywhere(const double* stored, const double* now, std::size_t n, double tol,
                                std::size_t& hint) {
  if (hint < n && !(stored[hint] <= now[hint] + tol)) return false;
  for (std::size_t x = 0; x < n; ++x) {
    if (!(stored[x] <= now[x] + tol)) {
      hint = x;
      return false;
    }
  }
  return true;
}

class DominanceMemo {
 public:
  DominanceMemo(std::size_t max_entries, double tol) : max_entries_(max_entries), tol_(tol) {}

  // Whether a stored state with counters `key[0..n)` is no later than `sig` everywhere (within
  // the tolerance); else `sig` is stored under that key while it has fewer than max_entries.
  bool dominated_or_stored(const int* key, std::size_t n, const std::vector<double>& sig) {
    buf_.assign(reinterpret_cast<const char*>(key), n * sizeof(int));
    auto it = map_.find(buf_);
    if (it == map_.end()) it = map_.emplace(buf_, Entry{}).first;
    Entry& e = it->second;
    const std::size_t len = sig.size();
    if (e.count > 0 && e.len != len) return false;  // (not for one search's states: same counters, same length)
    for (std::size_t k = 0; k < e.count; ++k) {
      if (no_later_everywhere(e.sigs.data() + k * len, sig.data(), len, tol_, hint_)) return true;
    }
    if (e.count < max_entries_) {
      e.len = len;
      e.sigs.insert(e.sigs.end(), sig.begin(), sig.end());
      ++e.count;
    }
    return false;
  }

 private:
  struct Entry {
    std::size_t len = 0, count = 0;
    std::vector<double> sigs;  // count signatures of len values, one after another
  };
  std::size_t max_entries_;
  double tol_;
  std::unordered_map<std::string, Entry> map_;
  std::string buf_;
  std::size_t hint_ = 0;  // the signature value that last ruled a stored state out
};

}  // namespace optpipe
