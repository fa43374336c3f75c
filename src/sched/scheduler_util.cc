#include "sched/scheduler_util.h"

#include <cinttypes>
#include <cstdio>
#include <ctime>

#include "core/time_units.h"

namespace toposched::sched {

namespace internal {

int64_t PlusLimit(int64_t us, int64_t limit_s) {
  if (limit_s > (kNever - us) / kUsPerS) return kNever;
  return us + limit_s * kUsPerS;
}

std::string JobName(int64_t id) { return "job-" + std::to_string(id); }

std::string Seconds(int64_t us, bool epoch) {
  if (us == kNever) return "never";
  char buf[48];
  if (epoch) {
    const std::time_t t = static_cast<std::time_t>(us / kUsPerS);
    std::tm tm{};
    if (gmtime_r(&t, &tm) != nullptr && std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm)) {
      return buf;
    }
  }
  std::snprintf(buf, sizeof buf, "%" PRId64 ".%06" PRId64 "s", us / kUsPerS, us % kUsPerS);
  return buf;
}

int GpusOf(const std::vector<NodeGpus>& parts) {
  int n = 0;
  for (const NodeGpus& p : parts) n += p.gpus.count();
  return n;
}

Status AllocatePlacement(ClusterState& state, AllocId id, const Placement& p) {
  if (p.gpu_milli > 0) {
    if (p.parts.size() != 1 || p.parts[0].gpus.count() != 1) {
      return InternalError("fractional placement of allocation " + std::to_string(id.key()) +
                           " does not hold exactly one GPU");
    }
    return state.AllocateShared(id, p.parts[0].node, p.parts[0].gpus.lowest(), p.gpu_milli);
  }
  return state.Allocate(id, p.parts);
}

}  // namespace internal

}  // namespace toposched::sched
