#include "search/state_store.h"

#include <algorithm>

#include "search/transposition.h"

namespace optpipe {

std::size_t StateStore::slot_of(std::uint64_t hash) const {
  const std::size_t mask = heads_.size() - 1;
  // The hash is a splitmix64 output already, but the table picks its shard from its low bits.
  for (std::size_t i = static_cast<std::size_t>((hash * 0x9e3779b97f4a7c15ULL) >> 20) & mask;; i = (i + 1) & mask) {
    if (!heads_[i].used || heads_[i].hash == hash) return i;
  }
}

std::uint32_t StateStore::first(std::uint64_t hash) const {
  if (heads_.empty()) return kNone;
  const Head& h = heads_[slot_of(hash)];
  return h.used ? h.first : kNone;
}

StateStore::View StateStore::view(std::uint32_t i) const {
  const Record& r = records_[i];
  return {r.hash, discrete_.data() + r.discrete_at, r.discrete_size, times_.data() + r.times_at, r.times_size};
}

void StateStore::remove(std::uint64_t hash, std::uint32_t i, std::uint32_t prev) {
  if (prev == kNone) {
    heads_[slot_of(hash)].first = records_[i].next;
  } else {
    records_[prev].next = records_[i].next;
  }
  free_.push_back(i);
  --size_;
}

void StateStore::insert(const StateKey& key, const std::int64_t* same_discrete) {
  if (10 * (used_heads_ + 1) > 7 * heads_.size()) grow_heads();
  const std::size_t slot = slot_of(key.hash);
  Head& h = heads_[slot];
  if (!h.used) {
    h = {key.hash, kNone, true};
    ++used_heads_;
  }
  // The discrete values: shared with a stored state's, or appended (never written over).
  std::size_t discrete_at = 0;
  if (same_discrete) {
    discrete_at = static_cast<std::size_t>(same_discrete - discrete_.data());
  } else {
    discrete_at = discrete_.size();
    discrete_.insert(discrete_.end(), key.discrete.begin(), key.discrete.end());
  }
  std::uint32_t i;
  if (!free_.empty() && records_[free_.back()].times_size == key.times.size()) {
    i = free_.back();  // the record and times of a removed state with as many times
    free_.pop_back();
  } else {
    i = static_cast<std::uint32_t>(records_.size());
    records_.push_back({0, kNone, 0, static_cast<std::uint32_t>(key.times.size()), 0, times_.size()});
    times_.resize(times_.size() + key.times.size());
  }
  Record& r = records_[i];
  r.hash = key.hash;
  r.next = h.first;
  r.discrete_size = static_cast<std::uint32_t>(key.discrete.size());
  r.discrete_at = discrete_at;
  h.first = i;
  std::copy(key.times.begin(), key.times.end(), times_.begin() + static_cast<std::ptrdiff_t>(r.times_at));
  ++size_;
}

void StateStore::grow_heads() {
  std::vector<Head> old;
  old.swap(heads_);
  heads_.assign(old.empty() ? 64 : 2 * old.size(), Head{});
  used_heads_ = 0;
  for (const Head& h : old) {
    if (!h.used || h.first == kNone) continue;  // emptied chains are dropped here
    heads_[slot_of(h.hash)] = h;
    ++used_heads_;
  }
}

}  // namespace optpipe
