#include "sched/objective.h"

#include <cmath>
#include <limits>
#include <memory>

#include "sched/ring.h"

namespace toposched::sched {

Status NodeRequest::Validate() const {
  if (gpus < 1) return InvalidArgumentError("request: gpus must be at least 1");
  if (tp < 1) return InvalidArgumentError("request: tp must be at least 1");
  if (gpus % tp != 0) {
    return InvalidArgumentError("request: tp " + std::to_string(tp) + " does not divide gpus " +
                                std::to_string(gpus));
  }
  if (!std::isfinite(dp_bytes) || dp_bytes < 0 || !std::isfinite(tp_bytes) || tp_bytes < 0) {
    return InvalidArgumentError("request: bytes must be finite and non-negative");
  }
  return OkStatus();
}

Objective StandInObjective(const topo::NodeTopology& topo, StandInOptions options,
                           const topo::HardwareTable& table) {
  auto w = std::make_shared<const PairMatrix>(topo, table);
  Objective o;
  o.id = "stand-in-ring/lat=" + std::to_string(options.step_latency_us);
  o.set_ms = [w, options](std::span<const int> gpus, double bytes) -> double {
    const size_t n = gpus.size();
    if (n <= 1) return 0.0;
    const double bottleneck = BestRing(*w, gpus, 10).bottleneck_gbps;
    if (bottleneck <= 0) return std::numeric_limits<double>::infinity();
    const double steps = 2.0 * static_cast<double>(n - 1);
    const double moved = steps / static_cast<double>(n) * bytes;
    return steps * options.step_latency_us * 1e-3 + moved / (bottleneck * 1e9) * 1e3;
  };
  return o;
}

}  // namespace toposched::sched
