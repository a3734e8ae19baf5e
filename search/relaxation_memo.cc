#include "search/relaxation_memo.h"

#include <limits>

#include "model/simulator.h"
#include "search/search_shared.h"

namespace optpipe {

namespace {

bool no_larger(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t k = 0; k < a.size(); ++k) {
    if (a[k] > b[k] + kTimeEps) return false;
  }
  return true;
}

}  // namespace

std::optional<double> HistoryMemo::find(const std::vector<double>& key) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = map_.find(key);
  if (it == map_.end()) return std::nullopt;
  return it->second;
}

void HistoryMemo::insert(std::vector<double> key, double value) {
  std::lock_guard<std::mutex> lock(mu_);
  if (map_.size() < max_keys_) map_.emplace(std::move(key), value);
}

MonotoneMemo::Answer MonotoneMemo::find(const std::vector<double>& key, const std::vector<double>& params,
                                        double cutoff) const {
  Answer a;
  std::lock_guard<std::mutex> lock(mu_);
  auto it = map_.find(key);
  if (it == map_.end()) return a;
  for (const Entry& e : it->second.list) {
    if (e.lower > a.known && no_larger(e.params, params)) a.known = e.lower;
    if (e.upper < cutoff - kRelaxationTolerance && no_larger(params, e.params)) a.hopeless = true;
  }
  return a;
}

void MonotoneMemo::insert(std::vector<double> key, std::vector<double> params, double value, bool exact) {
  insert_bounds(std::move(key), std::move(params), value, exact ? value : std::numeric_limits<double>::infinity());
}

void MonotoneMemo::insert_bounds(std::vector<double> key, std::vector<double> params, double lower, double upper) {
  std::lock_guard<std::mutex> lock(mu_);
  // Within the byte budget: about (params + 64) bytes an entry.
  const std::size_t cap = max_bytes_ / (params.size() * sizeof(double) + 64);
  auto it = map_.find(key);
  if (it == map_.end() && entries_ < cap && map_.size() < max_keys_) {
    it = map_.emplace(std::move(key), Entries{}).first;
  }
  if (it == map_.end() || entries_ >= cap) return;
  Entries& entries = it->second;
  Entry e{std::move(params), lower, upper};
  if (entries.list.size() < kEntriesPerKey) {
    entries.list.push_back(std::move(e));
    ++entries_;
  } else {
    entries.list[entries.next++ % kEntriesPerKey] = std::move(e);
  }
}

}  // namespace optpipe
