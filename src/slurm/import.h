// A cluster model read from a live Slurm: nodes and GPU counts from `scontrol -o show node`, the
// network tree (or blocks) from `scontrol show topology`, each node's hardware from a topology
// file given per node or for all. Talks to Slurm only through a CommandRunner.
#pragma once

#include <map>
#include <string>

#include "core/status.h"
#include "slurm/runner.h"
#include "topo/cluster.h"

namespace toposched::slurm {

struct ImportOptions {
  std::string cluster_name = "slurm";
  std::string default_topology;                 // topology file for nodes not in per_node
  std::map<std::string, std::string> per_node;  // node name → topology file
  std::string gpu_model;  // sets every GPU's model when the files do not say ("" = keep)
  // InvalidArgument when no topology file is given at all.
  Status Validate() const;
};

// Nodes in Slurm's order; one hardware profile per distinct topology file ("p0", "p1", ... in
// order of first use, topology_file = the path). Errors: InvalidArgument naming the node when
// it has no topology file or Slurm's GPU count differs from its file's; the readers' errors for
// bad files; Unavailable when `scontrol show node` fails. Without a topology plugin (no
// SwitchName lines, or `scontrol show topology` fails) the cluster has no network levels.
StatusOr<topo::Cluster> ImportCluster(CommandRunner& runner, const ImportOptions& options);

}  // namespace toposched::slurm
