// A cluster model from the Kubernetes API's Nodes (`kubectl get nodes -o json`): GPU nodes by
// GPU Feature Discovery's labels (nvidia.com/gpu.count, nvidia.com/gpu.product), the network
// tiers from the labels that Kueue's topology-aware scheduling and topograph use
// (network.topology.kubernetes.io/datacenter > spine > block, or a cloud's own keys), NVLink
// domains that span nodes from nvidia.com/gpu.clique (GB200 NVL72) or topograph's
// network.topology.kubernetes.io/accelerator. Each node's own topology comes from a topology
// file per GPU product (the labels do not describe NVLink, PCIe or NICs inside a node). Reads
// files through the topology readers; knows nothing of flags or of the API server.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/status.h"
#include "topo/cluster.h"

namespace toposched::topo::io {

// Node lists larger than this are refused before reading (10,000 Nodes of ~15 KB is 150 MB).
inline constexpr size_t kMaxNodeListBytes = 256u << 20;

struct KubeClusterOptions {
  std::string cluster_name = "kubernetes";
  // Node topology file (format detected) for every GPU node whose product has none below;
  // "" = none.
  std::string default_topology;
  // nvidia.com/gpu.product value → node topology file.
  std::map<std::string, std::string> product_topology;
  // Label keys of the network tiers, top first. A key no GPU node carries is left out; a key
  // some GPU nodes carry must be on all of them. Level names: the key's last segment.
  std::vector<std::string> level_labels = {"network.topology.kubernetes.io/datacenter",
                                           "network.topology.kubernetes.io/spine",
                                           "network.topology.kubernetes.io/block"};
  // Label keys naming a node's multi-node NVLink domain, first found wins.
  std::vector<std::string> clique_labels = {"nvidia.com/gpu.clique",
                                            "network.topology.kubernetes.io/accelerator"};
  // Per-GPU NVLink bandwidth into a multi-node domain's fabric (GB/s); needed when a clique
  // label is found (no default: it depends on the NVLink generation).
  double nvlink_gbps = 0;
  // Level name → oversubscription (downlink / uplink, > 0); other levels 1.
  std::map<std::string, double> oversubscription;
  // InvalidArgument naming the field.
  Status Validate() const;
};

struct KubeImport {
  Cluster cluster;
  std::vector<std::string> skipped;  // Nodes without GPUs, in list order
};

// The level name a tier label key gives: its last segment ("network.topology.kubernetes.io/block"
// → "block").
std::string LevelName(const std::string& key);

// `source` names the input in errors ("nodes.json: items[3] (gpu017): ..."). InvalidArgument:
// not a node list, a node without metadata.name or with a GPU count that is not a whole number,
// no GPU node at all, a GPU product without a topology file, a topology whose GPU count is not
// the node's, a tier label missing on some GPU nodes, a tier domain under two parents, a clique
// label without nvlink_gbps, an oversubscription for an unknown level; the readers' errors.
StatusOr<KubeImport> ClusterFromKubeNodes(std::string_view node_list_json,
                                          const std::string& source,
                                          const KubeClusterOptions& options);
// Reads `path` (NotFound when missing; InvalidArgument above kMaxNodeListBytes), then
// ClusterFromKubeNodes.
StatusOr<KubeImport> ReadKubeNodesCluster(const std::string& path,
                                          const KubeClusterOptions& options);

}  // namespace toposched::topo::io
