#include "placer/policy.h"

#include <algorithm>

namespace toposched::sched {

const std::vector<std::string>& PolicyNames() {
  static const std::vector<std::string> kNames = {"toposched",  "first-fit", "best-fit",
                                                  "pair-score", "kueue-tas", "slurm-tree",
                                                  "spread",     "random",    "locality-relax"};
  return kNames;
}

StatusOr<GangPlacerOptions> PolicyOptions(std::string_view name) {
  GangPlacerOptions o;
  PlacementPlugins& p = o.plugins;
  if (name == "toposched") return o;
  p.scores.clear();
  p.refine = "none";
  p.gpus = "first-free";
  // None of the schedulers the baselines model knows rails: a rail-optimised network counts only
  // through the cost model's price of what they choose (no rails' scope level as a candidate).
  p.rails = "none";
  p.shares = "node-best-fit";  // best-fit, pair-score, kueue-tas
  if (name == "first-fit") {
    p.domain = "cluster";
    p.nodes = "least-allocated";
    p.shares = "least-allocated";
  } else if (name == "best-fit" || name == "locality-relax") {
    p.domain = "cluster";
    p.nodes = "best-fit";
  } else if (name == "pair-score") {
    p.domain = "cluster";
    p.nodes = "best-fit";
    p.gpus = "pair-score";
  } else if (name == "kueue-tas") {
    p.domain = "lowest-level";
    p.nodes = "best-fit";
  } else if (name == "spread" || name == "random") {
    p.domain = "cluster";
    p.nodes = std::string(name);
    p.shares = "least-allocated";
  } else if (name == "slurm-tree") {
    p.domain = "lowest-level";
    p.nodes = "in-order";
    p.shares = "in-order";
  } else {
    std::string known;
    for (const std::string& n : PolicyNames()) known += (known.empty() ? "" : ", ") + n;
    return InvalidArgumentError("unknown policy \"" + std::string(name) + "\" (known: " + known +
                                ")");
  }
  return o;
}

bool PolicyWaitsForLocality(std::string_view name) { return name == "locality-relax"; }

bool PolicyWaitsOrSpreads(std::string_view name) { return name == "toposched"; }

std::string ConsolidatedLevel(const topo::Cluster& cluster, int gpus) {
  int node_max = 0;
  for (const topo::ClusterNode& n : cluster.nodes) {
    node_max =
        std::max(node_max, static_cast<int>(cluster.profiles[n.profile].topology.gpus.size()));
  }
  if (gpus <= node_max) return job::kLevelNode;
  std::vector<int> level_max(cluster.levels.size(), 0);
  for (size_t d = 0; d < cluster.domains.size(); ++d) {
    int total = 0;
    for (int n : cluster.NodesUnder(static_cast<int>(d))) {
      total += static_cast<int>(cluster.profiles[cluster.nodes[n].profile].topology.gpus.size());
    }
    int& m = level_max[cluster.domains[d].level];
    m = std::max(m, total);
  }
  // Levels are ordered top (0) to bottom: the lowest level first.
  for (int li = static_cast<int>(cluster.levels.size()) - 1; li >= 0; --li) {
    if (gpus <= level_max[li]) return cluster.levels[li].name;
  }
  return "";
}

}  // namespace toposched::sched
