#include "sched/policy.h"

namespace toposched::sched {

const std::vector<std::string>& PolicyNames() {
  static const std::vector<std::string> kNames = {"toposched",  "first-fit", "best-fit",
                                                  "pair-score", "kueue-tas", "slurm-tree",
                                                  "spread",     "random"};
  return kNames;
}

StatusOr<GangPlacerOptions> PolicyOptions(std::string_view name) {
  GangPlacerOptions o;
  PlacementPlugins& p = o.plugins;
  if (name == "toposched") return o;
  p.scores.clear();
  p.refine = "none";
  p.gpus = "first-free";
  p.shares = "node-best-fit";  // best-fit, pair-score, kueue-tas
  if (name == "first-fit") {
    p.domain = "cluster";
    p.nodes = "least-allocated";
    p.shares = "least-allocated";
  } else if (name == "best-fit") {
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

}  // namespace toposched::sched
