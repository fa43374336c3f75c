// Diagnosis: the fixed vocabulary of causes and one ranked cause with its evidence, what it
// means on this node's topology and the fix. Names are part of the CLI and JSON contract:
// extend the list, never rename (docs/diagnose.md).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "diag/evidence.h"

namespace toposched::diag {

enum class Category {
  kTimeout,
  kNodeFailure,
  kGpuFault,
  kPreempted,
  kHostOom,
  kGpuOom,
  kEvicted,
  kUnschedulable,
  kNcclTransportFallback,
  kNcclDegraded,
  kNcclTimeout,
  kNetworkError,
  kPeerFailure,
  kRendezvousFailure,
  kApplicationError,
  kHealthy,
  kUnknown,
  kCancelled,  // a user or operator cancelled the job (the scheduler's record)
};
constexpr int kCategoryCount = static_cast<int>(Category::kCancelled) + 1;
const char* CategoryName(Category c);  // "timeout", "node_failure", ..., "unknown"
std::optional<Category> ParseCategory(std::string_view name);

// One candidate cause. confidence in [0, 1], calibrated: the share of logs of the development
// corpus its rule was right on when it led, shrunk toward the rule's own strength (calibration.cc);
// evidence: the lines that support it, strongest first; topology: what it means on the node's
// hardware ("" without a topology); fix: what to do, with concrete values where the topology gives
// them.
struct Cause {
  Category category = Category::kUnknown;
  double confidence = 0;
  std::string summary;
  std::vector<Evidence> evidence;
  std::string topology;
  std::string fix;
  // The rule that named it: "<category>:<its first evidence kind>" ("network_error:
  // ib_async_event"); the key of its calibration (calibration.cc).
  std::string rule;
};

}  // namespace toposched::diag
