// A cluster model from an offline Slurm topology.conf (tree or block) plus node topology files:
// users describe their own network as Slurm already knows it and simulate on it without a
// running Slurm. Reads files through the topology readers; knows nothing of flags or scontrol.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/status.h"
#include "topo/cluster.h"
#include "topo/io/slurm.h"

namespace toposched::topo::io {

// topology.conf files larger than this are refused before reading (a 100,000-node tree is a
// few MiB).
inline constexpr size_t kMaxTopologyConfBytes = 16u << 20;

struct SlurmClusterOptions {
  std::string cluster_name = "slurm";
  // Node topology file (nvidia-smi topo -m, hwloc XML, NCCL XML, JSON; format detected) for
  // every node that `node_topology` does not name; "" = none.
  std::string default_topology;
  // (Slurm host list, file) pairs: a later pair overrides an earlier one for nodes both name.
  std::vector<std::pair<std::string, std::string>> node_topology;
  // Level names, top first, replacing ParseTopologyConf's "switch-<depth>" / "block"; empty =
  // keep those. Their number must match the depth of the imported tree.
  std::vector<std::string> level_names;
  // Level name (after renaming) → oversubscription (downlink / uplink, > 0); other levels 1.
  std::map<std::string, double> oversubscription;

  // InvalidArgument: no topology file at all, an empty file name, a bad host list, an empty or
  // repeated level name, a ratio that is not a finite number > 0.
  Status Validate() const;
};

// Nodes are those the topology names, in its order (tree: switches in file order), each with
// the profile of its topology file: one profile per distinct file, "p0", "p1", ... in order of
// first use, topology_file = the path as given. Levels and domains as ParseTopologyConf and
// ApplySlurmTopology make them (LinkSpeed= gives a level's uplink_gbps), then renamed and given
// their oversubscription. InvalidArgument: invalid options, a topology without switches or
// blocks, a node without a topology file, a host list of `node_topology` naming a node the
// topology does not have, `level_names` of the wrong length, an oversubscription for an
// unknown level; the readers' errors for bad node topology files. O(nodes + distinct files).
StatusOr<Cluster> ClusterFromSlurmTopology(const SlurmTopology& topo,
                                           const SlurmClusterOptions& options);

// Reads `conf_path` (NotFound when missing, InvalidArgument above kMaxTopologyConfBytes), parses
// it (errors "<conf_path>:<line>:<column>: ..."), then ClusterFromSlurmTopology.
StatusOr<Cluster> ReadSlurmTopologyCluster(const std::string& conf_path,
                                           const SlurmClusterOptions& options);

}  // namespace toposched::topo::io
