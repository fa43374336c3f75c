// Slurm configuration: import topology.conf (tree: SwitchName/Switches/Nodes; block:
// BlockName/Nodes, BlockSizes) into a cluster network; export gres.conf (Name=gpu Type File
// Cores= Links=) and topology.conf (tree or block) from a cluster; read gres.conf back.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "core/status.h"
#include "topo/cluster.h"

namespace toposched::topo::io {

struct SlurmTopology {
  enum class Kind { kTree, kBlock } kind = Kind::kTree;
  std::vector<NetworkLevel> levels;   // derived from tree depth ("switch-<depth>") or block
  std::vector<NetworkDomain> domains; // nodes referenced by index into node_names
  std::vector<std::string> node_names;
  std::vector<int> block_sizes;       // block only
};
// Errors: "<source>:<line>: ..." (unknown key, undefined switch, cycle, host-list error).
StatusOr<SlurmTopology> ParseTopologyConf(std::string_view text, const std::string& source);
// Puts an imported network onto a cluster: nodes matched by name; unknown nodes are an error.
Status ApplySlurmTopology(const SlurmTopology& topo, Cluster& cluster);

struct GresGpu {
  std::string node;           // NodeName= (may be a host list, expanded by the reader)
  std::string type;           // Type=
  std::string file;           // File=/dev/nvidia3
  int minor = -1;             // from File
  std::vector<int> cores;     // Cores=
  std::vector<int> links;     // Links= (-1 = self)
};
StatusOr<std::vector<GresGpu>> ParseGresConf(std::string_view text, const std::string& source);

struct SlurmExport {
  std::string gres_conf;
  std::string topology_conf;
  std::string topology_kind;  // "tree" or "block"
};
StatusOr<SlurmExport> ExportSlurm(const Cluster& cluster);

}  // namespace toposched::topo::io
