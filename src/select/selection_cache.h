// Cache of node GPU-set selections keyed by (hardware profile fingerprint, free mask, request):
// a busy cluster asks the same question many times (same profile, same free GPUs, same job
// shape). Holds finished results only; knows nothing of how they were computed.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <shared_mutex>
#include <unordered_map>

#include "select/objective.h"
#include "state/gpu_mask.h"

namespace toposched::sched {

struct NodeChoice;

struct SelectionKey {
  uint64_t profile = 0;  // NodeSelector::fingerprint(): topology + objective
  GpuMask free;
  NodeRequest request;
  bool operator==(const SelectionKey&) const = default;
};

struct SelectionKeyHash {
  size_t operator()(const SelectionKey& k) const;
};

// Thread-safe: lookups take a shared lock, inserts an exclusive one. Bounded: when an insert
// finds `max_entries` results, the whole cache is dropped first (a cluster's working set of
// distinct questions is far below the default bound; dropping keeps every operation O(1)
// without LRU bookkeeping on the read path). Results are immutable and shared.
class SelectionCache {
 public:
  explicit SelectionCache(size_t max_entries = size_t{1} << 16) : max_entries_(max_entries) {}
  SelectionCache(const SelectionCache&) = delete;
  SelectionCache& operator=(const SelectionCache&) = delete;

  // nullptr on a miss.
  std::shared_ptr<const NodeChoice> Find(const SelectionKey& key) const;
  void Insert(const SelectionKey& key, std::shared_ptr<const NodeChoice> value);
  void Clear();

  size_t size() const;
  uint64_t hits() const { return hits_.load(std::memory_order_relaxed); }
  uint64_t misses() const { return misses_.load(std::memory_order_relaxed); }

 private:
  size_t max_entries_;
  mutable std::shared_mutex mu_;
  std::unordered_map<SelectionKey, std::shared_ptr<const NodeChoice>, SelectionKeyHash> map_;
  mutable std::atomic<uint64_t> hits_{0};
  mutable std::atomic<uint64_t> misses_{0};
};

}  // namespace toposched::sched
