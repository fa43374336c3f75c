// Allocation ids in tests, written as their keys: Alloc(7) is the allocation whose key is 7 (a
// job's allocation is keyed by the job's id; a negative key is any other holder's).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <vector>

#include "state/cluster_state.h"

namespace toposched::testing {

inline sched::AllocId Alloc(int64_t key) { return sched::AllocId::FromKey(key); }

inline std::vector<sched::AllocId> Allocs(std::initializer_list<int64_t> keys) {
  std::vector<sched::AllocId> ids;
  for (int64_t k : keys) ids.push_back(Alloc(k));
  return ids;
}

}  // namespace toposched::testing
