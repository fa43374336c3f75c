#include "select/selection_cache.h"

#include <bit>
#include <mutex>

namespace toposched::sched {

namespace {

uint64_t Mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2);
  return h;
}

}  // namespace

size_t SelectionKeyHash::operator()(const SelectionKey& k) const {
  uint64_t h = k.profile;
  h = Mix(h, k.free.Hash());
  h = Mix(h, (static_cast<uint64_t>(static_cast<uint32_t>(k.request.gpus)) << 32) |
                 static_cast<uint32_t>(k.request.tp));
  h = Mix(h, std::bit_cast<uint64_t>(k.request.dp_bytes));
  h = Mix(h, std::bit_cast<uint64_t>(k.request.tp_bytes));
  return static_cast<size_t>(h);
}

std::shared_ptr<const NodeChoice> SelectionCache::Find(const SelectionKey& key) const {
  std::shared_lock lock(mu_);
  auto it = map_.find(key);
  if (it == map_.end()) {
    misses_.fetch_add(1, std::memory_order_relaxed);
    return nullptr;
  }
  hits_.fetch_add(1, std::memory_order_relaxed);
  return it->second;
}

void SelectionCache::Insert(const SelectionKey& key, std::shared_ptr<const NodeChoice> value) {
  std::unique_lock lock(mu_);
  if (map_.size() >= max_entries_ && !map_.count(key)) map_.clear();
  map_[key] = std::move(value);
}

void SelectionCache::Clear() {
  std::unique_lock lock(mu_);
  map_.clear();
}

size_t SelectionCache::size() const {
  std::shared_lock lock(mu_);
  return map_.size();
}

}  // namespace toposched::sched
