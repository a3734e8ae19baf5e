// The memos of the single-stage relaxations the branch-and-bound asks at its nodes
// (stage_relaxations.h). Both are shared by the workers and guarded by one mutex each.
//
// HistoryMemo: stage s's history relaxation depends on nothing but the history (its key, from
// single_stage_history_key), and a value proven for one cutoff stays a valid bound for any, so
// a key maps to one value (0 for a search that did not finish: it is not tried again).
//
// MonotoneMemo: the relaxation with a node's own heads is non-decreasing in the node's params
// (single_stage_node_params, device_relaxation_node_params) among nodes with the same node key,
// so a node whose params are no smaller than an entry's is worth at least that entry's lower
// bound, and one whose params are no larger than an entry's cannot reach a cutoff above that
// entry's upper bound (an exact value is both; a relaxed schedule found below the cutoff, where
// the device relaxation's below-only search stops, is an upper bound only). Each key keeps at
// most kEntriesPerKey entries (a full list recycles its slots round-robin), within a byte budget.
//
// Complexity: a lookup hashes its key (O(key)); the monotone lookup also compares the params
// with each of a key's entries (O(kEntriesPerKey · params)).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <vector>

namespace optpipe {

struct MemoKeyHash {
  std::size_t operator()(const std::vector<double>& k) const {
    std::size_t h = 1469598103934665603ull;
    for (double x : k) {
      std::uint64_t bits;
      std::memcpy(&bits, &x, sizeof bits);
      h = (h ^ bits) * 1099511628211ull;
    }
    return h;
  }
};

class HistoryMemo {
 public:
  explicit HistoryMemo(std::size_t max_keys) : max_keys_(max_keys) {}
  std::optional<double> find(const std::vector<double>& key) const;
  void insert(std::vector<double> key, double value);  // ignored when full

 private:
  const std::size_t max_keys_;
  mutable std::mutex mu_;  // guards map_
  std::unordered_map<std::vector<double>, double, MemoKeyHash> map_;
};

// The size of a search's memo of its nodes' device relaxations (solver.cc; probing's, shared by
// its targets' searches: bound_probing.cc).
inline constexpr std::size_t kDeviceMemoKeys = std::size_t{1} << 20;
inline constexpr std::size_t kDeviceMemoBytes = std::size_t{64} << 20;

class MonotoneMemo {
 public:
  static constexpr std::size_t kEntriesPerKey = 16;
  MonotoneMemo(std::size_t max_keys, std::size_t max_bytes) : max_keys_(max_keys), max_bytes_(max_bytes) {}

  struct Answer {
    double known = 0;       // the largest value of an entry whose params are no larger
    bool hopeless = false;  // an exact entry below `cutoff` has params no smaller
  };
  Answer find(const std::vector<double>& key, const std::vector<double>& params, double cutoff) const;
  void insert(std::vector<double> key, std::vector<double> params, double value, bool exact);
  // An entry with a lower and an upper bound on its relaxation (0 / infinity: unknown).
  void insert_bounds(std::vector<double> key, std::vector<double> params, double lower, double upper);

 private:
  struct Entry {
    std::vector<double> params;
    double lower, upper;  // bounds on the relaxation's optimum at these params
  };
  struct Entries {
    std::vector<Entry> list;
    std::size_t next = 0;  // the slot a full list recycles next
  };
  const std::size_t max_keys_, max_bytes_;
  mutable std::mutex mu_;  // guards map_ and entries_
  std::unordered_map<std::vector<double>, Entries, MemoKeyHash> map_;
  std::size_t entries_ = 0;
};

}  // namespace optpipe
