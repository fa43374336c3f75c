#include "placer/options.h"

namespace toposched::sched {

Status GangPlacerOptions::Validate() const {
  RETURN_IF_ERROR(plugins.Validate());
  if (max_candidate_domains < 1 || max_candidate_domains > 1024) {
    return InvalidArgumentError("gang: max_candidate_domains must be in [1, 1024]");
  }
  if (max_node_evaluations < 1 || max_node_evaluations > 1024) {
    return InvalidArgumentError("gang: max_node_evaluations must be in [1, 1024]");
  }
  if (max_refine_evaluations < 0 || max_refine_evaluations > 100000) {
    return InvalidArgumentError("gang: max_refine_evaluations must be in [0, 100000]");
  }
  if (max_refine_nodes < 1 || max_refine_nodes > 1024) {
    return InvalidArgumentError("gang: max_refine_nodes must be in [1, 1024]");
  }
  return node_select.Validate();
}

}  // namespace toposched::sched
