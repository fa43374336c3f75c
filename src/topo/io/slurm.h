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

// Tree: a switch's level is its depth from its root (root level first), levels named
// "switch-0".."switch-<n>" (callers may rename them); unbalanced trees attach nodes at several
// levels. Switches listed as children of several switches are only accepted when those parents
// are interchangeable (same Switches= and Nodes=, a fat tree's parallel spines): they become one
// domain named by their host list ("s[4-7]"). Block: one level "block", one domain per block;
// BlockSizes are kept as given, not turned into levels.
struct SlurmTopology {
  enum class Kind { kTree, kBlock } kind = Kind::kTree;
  std::vector<NetworkLevel> levels;    // derived from tree depth ("switch-<depth>") or block
  std::vector<NetworkDomain> domains;  // nodes referenced by index into node_names
  std::vector<std::string> node_names;
  std::vector<int> block_sizes;  // block only
  // Per domain: LinkSpeed= as written (Slurm gives it no unit), 0 = not given. Each level's
  // uplink_gbps is the smallest LinkSpeed given at that level.
  std::vector<double> link_speed;
};
// Strict: every line must be SwitchName=/BlockName=/BlockSizes= with known keys (keys are
// case-insensitive, '#' starts a comment, a trailing '\' continues a line); groff or HTML
// around a sample must be stripped by the caller.
// Errors (InvalidArgument): "<source>:<line>:<column>: <what is wrong>, expected <what>" with the
// file position of the offending key or value (unknown key, undefined switch, duplicate switch,
// a node under two switches, cycle, host-list error, tree and block mixed).
StatusOr<SlurmTopology> ParseTopologyConf(std::string_view text, const std::string& source);
// Replaces the cluster's network (levels, domains, node attachment) with an imported one: nodes
// matched by name; a node unknown to the cluster is an error naming it (the cluster is then left
// unchanged). Cluster nodes the topology does not mention stay unattached. A rails scope that
// names a level the import does not have is reset to "" (one rail set for the whole cluster).
Status ApplySlurmTopology(const SlurmTopology& topo, Cluster& cluster);

struct GresGpu {
  std::string node;        // NodeName= (may be a host list, expanded by the reader)
  std::string type;        // Type=
  std::string file;        // File=/dev/nvidia3
  int minor = -1;          // from File
  std::vector<int> cores;  // Cores=
  std::vector<int> links;  // Links= (-1 = self)
};
// One entry per GPU and node: NodeName= and File= host-list ranges are expanded (a line
// without NodeName= gives node ""); Count= without File= gives that many entries without a
// file. Lines whose Name= is not "gpu" (mps, shard, nic) and AutoDetect-only lines give none.
// Keys are case-insensitive; unknown keys, Links= with several files, and bad numbers are
// InvalidArgument "<source>:<line>:<column>: ...".
StatusOr<std::vector<GresGpu>> ParseGresConf(std::string_view text, const std::string& source);

// A node's CPUs as Slurm counts them, inferred from the NUMA nodes' and GPUs' CPU lists: CPUs =
// highest CPU id + 1; ThreadsPerCore = 2 when the lists show Linux's x86 SMT numbering (the
// second thread of core c is CPU c + CPUs/2, i.e. every list is closed under that shift and one
// list is split in two ranges, "0-11,24-35"), else 1; Sockets = the number of distinct core
// sets of the lists when they partition the cores evenly, else 1. cpus == 0: nothing known.
struct SlurmCpuLayout {
  int cpus = 0;
  int sockets = 1;
  int cores_per_socket = 0;
  int threads_per_core = 1;
};
SlurmCpuLayout InferSlurmCpuLayout(const NodeTopology& t);
// CPU ids → Slurm's logical core ids (gres.conf Cores=: core 0 is the first core of the first
// socket; hyperthread siblings share a core id): cpu mod (CPUs / ThreadsPerCore), sorted, unique.
std::vector<int> SlurmCoresOf(const SlurmCpuLayout& layout, const std::vector<int>& cpus);

struct SlurmExport {
  std::string gres_conf;
  // slurm.conf NodeName lines, one per node: CPUs/Sockets/CoresPerSocket/ThreadsPerCore (when
  // the topology gives CPU lists) and Gres=gpu:<type>:<count>.
  std::string nodes_conf;
  std::string topology_conf;
  std::string topology_kind;  // "tree" or "block"
};
struct SlurmExportOptions {
  // kAuto: block when the cluster has NVLink domains, tree otherwise.
  enum class Topology { kAuto, kTree, kBlock } topology = Topology::kAuto;
};
// gres.conf: "AutoDetect=off", then per group of nodes whose lines are identical, one line per
// GPU in GPU index order: NodeName=<host list> Name=gpu Type=<short model, "h100">
// File=/dev/nvidia<index> Cores=<CPUs of the GPU's affinity> Links=<NVLink count per GPU,
// -1 = self>.
// Cores= lists Slurm's logical core ids of the GPU's CPU affinity (SlurmCoresOf).
// topology.conf, tree: one SwitchName line per network domain, deepest first (Nodes= and/or
// Switches=, LinkSpeed= = the level's uplink_gbps when > 0). Block: one BlockName line per
// NVLink domain and BlockSizes=D,2D,..,2^k·D (D = smallest domain's node count, 2^k <= number
// of domains, as NVIDIA topograph infers them). InvalidArgument when the cluster does not
// validate, a name cannot be written (blanks, '=', '#', brackets, commas), or block is asked
// for a cluster without NVLink domains. O(nodes · GPUs²).
StatusOr<SlurmExport> ExportSlurm(const Cluster& cluster, const SlurmExportOptions& options = {});

}  // namespace toposched::topo::io
