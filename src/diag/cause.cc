#include "diag/cause.h"

namespace toposched::diag {

namespace {

constexpr const char* kNames[] = {
    "timeout",
    "node_failure",
    "gpu_fault",
    "preempted",
    "host_oom",
    "gpu_oom",
    "evicted",
    "unschedulable",
    "nccl_transport_fallback",
    "nccl_degraded",
    "nccl_timeout",
    "network_error",
    "peer_failure",
    "rendezvous_failure",
    "application_error",
    "healthy",
    "unknown",
    "cancelled",
};
static_assert(sizeof(kNames) / sizeof(kNames[0]) == kCategoryCount);

}  // namespace

const char* CategoryName(Category c) { return kNames[static_cast<int>(c)]; }

std::optional<Category> ParseCategory(std::string_view name) {
  for (int i = 0; i < kCategoryCount; ++i) {
    if (name == kNames[i]) return static_cast<Category>(i);
  }
  return std::nullopt;
}

}  // namespace toposched::diag
