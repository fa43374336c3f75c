// The cluster: nodes declared through hardware profiles, a network tree of any depth
// (zone > spine > leaf > node, block > rack > node, ...), NIC rails, and NVLink domains that
// span nodes (NVL72). Knows nothing of jobs or scheduling; readers/writers live in topo/io.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/status.h"
#include "topo/node_topology.h"

namespace toposched::topo {

struct HardwareProfile {
  std::string name;
  std::string topology_file;  // as written in the spec (relative to the spec), may be empty
  NodeTopology topology;      // GPU model/memory/NIC rates applied
};

// One tier of the network, top first in Cluster::levels. uplink_gbps: bandwidth (Gb/s) from
// one switch of this level to its parent; oversubscription: downlink/uplink ratio (1 = full
// bisection).
struct NetworkLevel {
  std::string name;
  double uplink_gbps = 0;
  double oversubscription = 1.0;
};

// A switch (or block/rack) of the network tree.
struct NetworkDomain {
  std::string name;
  int level = 0;              // index into Cluster::levels
  int parent = -1;            // domain id, -1 for a root
  std::vector<int> children;  // domain ids
  std::vector<int> nodes;     // node ids directly attached (lowest level)
};

struct ClusterNode {
  std::string name;
  int profile = 0;         // index into Cluster::profiles
  int domain = -1;         // lowest network domain holding the node, -1 = unattached
  int nvlink_domain = -1;  // index into Cluster::nvlink_domains, -1 = none beyond the node
  Health health = Health::kHealthy;
};

// GPUs of several nodes joined by an NVLink switch fabric (e.g. GB200 NVL72: 18 nodes × 4).
struct NvlinkDomain {
  std::string name;
  std::vector<int> nodes;
  double gpu_bandwidth_gbps = 0;  // per-GPU NVLink bandwidth into the fabric, GB/s
};

// NIC i of every node in one rail group goes to rail switch i. `scope_level` names the level
// whose domains each get their own set of rail switches ("" = one set for the whole cluster).
// NICs at positions >= count are not on rails (a storage or management NIC).
struct Rails {
  int count = 0;
  std::string scope_level;
};

// Invariants (Validate): node names unique; every node's domain is at the lowest level it is
// attached at and its ancestors are unique; parents are one level up; NVLink domains disjoint.
//
// Lookups: Find* use hash indexes built by Finalize() (O(1) for names present); without
// Finalize(), after the vectors were edited, or for absent names they stay correct and fall back
// to a linear scan. Finalize() is not thread-safe; after it, const methods may be called from
// any number of threads.
class Cluster {
 public:
  std::string name;
  std::vector<HardwareProfile> profiles;
  std::vector<NetworkLevel> levels;  // top first; nodes attach below the last one
  std::vector<NetworkDomain> domains;
  std::vector<ClusterNode> nodes;
  std::vector<NvlinkDomain> nvlink_domains;
  Rails rails;

  // Builds the name indexes used by the Find* lookups. Call after building or editing.
  void Finalize();

  int FindNode(const std::string& name) const;  // -1 when absent
  int FindDomain(const std::string& name) const;
  int FindLevel(const std::string& name) const;
  int FindProfile(const std::string& name) const;
  const NodeTopology& topology(int node) const { return profiles[nodes[node].profile].topology; }
  // Domain ids from the node's lowest domain up to the root.
  std::vector<int> Ancestors(int node) const;
  // The lowest network domain that holds every node of `nodes`; -1 when none does (or empty).
  int LowestCommonDomain(const std::vector<int>& nodes) const;
  // The level index where two nodes first share a domain; -1 when they share none (different
  // roots). Same node: levels.size().
  int MeetLevel(int node_a, int node_b) const;
  // Worst oversubscription on the way between two nodes: the uplinks from each node's domain
  // up to (not including) the level where they meet, multiplied along the way (every node
  // below an uplink sending at once, as the design ratio assumes); the larger side. 1 for the
  // same node or a cluster without levels.
  double Oversubscription(int node_a, int node_b) const;
  // The same for traffic between two distinct nodes of a rail-optimised network (Rails), by
  // whether both ends use the same rail. Same rail, both nodes under one domain of the rails'
  // scope level (or scope "" = one rail set for the cluster): the traffic stays on that rail's
  // switch, factor 1. Different rails: the traffic must climb at least one tier above the rail
  // switches (the tree's lowest level), so it pays the uplinks up to the lower of the meet level
  // and the level above the lowest — two nodes of one leaf pay the leaf's uplink. Nodes under
  // different scope domains: the tree's factor for both. Without rails (count 0) or for one node,
  // both are Oversubscription(node_a, node_b).
  struct RailFactors {
    double tree = 1.0;  // Oversubscription(node_a, node_b): NICs that are not on a rail
    double same_rail = 1.0;
    double cross_rail = 1.0;
  };
  RailFactors RailOversubscription(int node_a, int node_b) const;
  // Whether RailOversubscription can tell rails apart: rails exist and a level below the rails'
  // scope (below the top for scope ""), or the lowest level, is oversubscribed. When false
  // every factor is the tree's, so which rail a NIC is on changes no time.
  bool RailsPriced() const;
  // All nodes under a domain (recursively), in node-id order.
  std::vector<int> NodesUnder(int domain) const;
  int TotalGpus() const;

  // InvalidArgument naming the first broken invariant (and the node/domain involved).
  Status Validate() const;

 private:
  // Oversubscription of the uplinks crossed by two nodes meeting at `meet` (see Oversubscription).
  double ClimbFactor(int node_a, int node_b, int meet) const;
  // The rails' scope level index, or -1 for "" or an unknown level (not a hash lookup per call).
  int RailScopeLevel() const;

  int rail_scope_level_ = -1;  // Finalize's lookup of rails.scope_level
  std::unordered_map<std::string, int> node_index_;
  std::unordered_map<std::string, int> domain_index_;
  std::unordered_map<std::string, int> level_index_;
  std::unordered_map<std::string, int> profile_index_;
};

}  // namespace toposched::topo
