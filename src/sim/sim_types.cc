#include "sim/sim_types.h"

#include "sched/run_time.h"

namespace toposched::sim {

Status SimOptions::Validate() const {
  if (!(comm_fraction >= 0 && comm_fraction <= 1)) {
    return InvalidArgumentError("comm fraction must be in [0, 1], got " +
                                std::to_string(comm_fraction));
  }
  if (checkpoint_interval_s < 0 || restart_cost_s < 0 ||
      (checkpoint_interval_s > 0) != (restart_cost_s > 0)) {
    return InvalidArgumentError(
        "checkpoint interval and restart cost: both > 0 (every job checkpoints) or both 0");
  }
  if (utilization_bins < 1 || utilization_bins > 100000) {
    return InvalidArgumentError("utilization bins must be in [1, 100000]");
  }
  if (!(failures_per_gpu_day >= 0 && failures_per_gpu_day < 1e6)) {
    return InvalidArgumentError("failure rate must be >= 0 per GPU-day");
  }
  if (!(node_failure_fraction >= 0 && node_failure_fraction <= 1)) {
    return InvalidArgumentError("node failure fraction must be in [0, 1]");
  }
  if (!(repair_mean_s > 0 && repair_mean_s < 1e9)) {
    return InvalidArgumentError("mean repair time must be > 0 s");
  }
  if (!(locality_wait_s >= 0 && locality_wait_s <= 1e9)) {
    return InvalidArgumentError("locality wait must be in [0, 1e9] s");
  }
  if (!(fill_ratio >= 0 && fill_ratio <= 100)) {
    return InvalidArgumentError("fill ratio must be in [0, 100] (0 = replay in time)");
  }
  return OkStatus();
}

double CommSlowdown(double comm_fraction, double predicted_ms, double best_possible_ms) {
  return sched::CommStretch(comm_fraction, predicted_ms, best_possible_ms);
}

double ExpectedUnusableGpus(const sched::ClusterState& state, const std::map<int, int>& waiting) {
  int total = 0;
  for (const auto& [size, count] : waiting) total += count;
  if (total == 0) return 0;
  std::vector<int> nodes_with_free;  // [f] = nodes with exactly f free GPUs
  for (int node = 0; node < static_cast<int>(state.cluster().nodes.size()); ++node) {
    const int f = static_cast<int>(state.FreeMask(node).count());
    if (f >= static_cast<int>(nodes_with_free.size())) nodes_with_free.resize(f + 1, 0);
    ++nodes_with_free[f];
  }
  double sum = 0;
  for (const auto& [size, count] : waiting) {
    int unusable = 0;
    for (int f = 1; f < size && f < static_cast<int>(nodes_with_free.size()); ++f) {
      unusable += f * nodes_with_free[f];
    }
    sum += static_cast<double>(count) * unusable;
  }
  return sum / total;
}

}  // namespace toposched::sim
