#include "sim/sim_types.h"

#include <sstream>

#include "sched/run_time.h"

namespace toposched::sim {
namespace {

// ", got <value>" in the shortest form that reads back (1.5, not 1.500000).
std::string GotValue(double v) {
  std::ostringstream os;
  os << ", got " << v;
  return os.str();
}

}  // namespace

// Each message names the option's field and the value given.
Status SimOptions::Validate() const {
  if (!(comm_fraction >= 0 && comm_fraction <= 1)) {
    return InvalidArgumentError("comm_fraction: comm fraction must be in [0, 1]" +
                                GotValue(comm_fraction));
  }
  if (checkpoint_interval_s < 0 || restart_cost_s < 0 ||
      (checkpoint_interval_s > 0) != (restart_cost_s > 0)) {
    return InvalidArgumentError(
        "checkpoint_interval_s, restart_cost_s: checkpoint interval and restart cost: both > 0 "
        "(every job checkpoints) or both 0, got " +
        std::to_string(checkpoint_interval_s) + " and " + std::to_string(restart_cost_s));
  }
  if (utilization_bins < 1 || utilization_bins > 100000) {
    return InvalidArgumentError("utilization_bins: utilization bins must be in [1, 100000], got " +
                                std::to_string(utilization_bins));
  }
  if (!(failures_per_gpu_day >= 0 && failures_per_gpu_day < 1e6)) {
    return InvalidArgumentError(
        "failures_per_gpu_day: failure rate must be in [0, 1e6) per GPU-day" +
        GotValue(failures_per_gpu_day));
  }
  if (!(node_failure_fraction >= 0 && node_failure_fraction <= 1)) {
    return InvalidArgumentError("node_failure_fraction: node failure fraction must be in [0, 1]" +
                                GotValue(node_failure_fraction));
  }
  if (!(repair_mean_s > 0 && repair_mean_s < 1e9)) {
    return InvalidArgumentError("repair_mean_s: mean repair time must be in (0, 1e9) s" +
                                GotValue(repair_mean_s));
  }
  if (!(locality_wait_s >= 0 && locality_wait_s <= 1e9)) {
    return InvalidArgumentError("locality_wait_s: locality wait must be in [0, 1e9] s" +
                                GotValue(locality_wait_s));
  }
  if (!(fill_ratio >= 0 && fill_ratio <= 100)) {
    return InvalidArgumentError("fill_ratio: fill ratio must be in [0, 100] (0 = replay in time)" +
                                GotValue(fill_ratio));
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
