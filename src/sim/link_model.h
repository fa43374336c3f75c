// Network links shared between jobs: the uplink of every domain of the network tree, with the
// capacity its level's oversubscription gives it, and the load of the jobs whose traffic
// crosses it. A job's contention factor is its worst link's load over capacity (≥ 1): the
// simulator stretches the job's inter-node communication by it. Knows nothing of queues.
#pragma once

#include <utility>
#include <vector>

#include "topo/cluster.h"

namespace toposched::sim {

// Sharing rule (docs/simulator.md, "Contention"): every node of a job under a domain sends
// through that domain's uplink at the line rate of the NICs its GPUs there drive (each GPU one
// NIC: min(GPUs of the job on the node, NICs) · the node's mean NIC rate) when the job also has
// nodes outside the domain (the design ratio's own assumption, as Cluster::Oversubscription makes
// it); a saturated link gives each flow a share proportional to its demand, which for flows of
// equal rate is the max-min fair share. A job whose nodes are all in one NVLink domain uses no
// network link.
//
// Not thread-safe; O(nodes · depth) per Add/Remove/UsageOf, O(links of the job) per Factor.
class LinkModel {
 public:
  // A job's demand on the links it crosses: (domain id, Gb/s).
  struct Usage {
    std::vector<std::pair<int, double>> links;
  };

  explicit LinkModel(const topo::Cluster& cluster);

  // The links loaded by a job with `gpus_on_node` GPUs on each of these nodes ((node id, GPU
  // count), distinct nodes, any order).
  Usage UsageOf(const std::vector<std::pair<int, int>>& gpus_on_node) const;
  void Add(const Usage& u);
  void Remove(const Usage& u);
  // max over the job's links of load / capacity, at least 1 (1 for a job on no link).
  double Factor(const Usage& u) const;
  // The factor the job would have alone on the network: max over its links of its own demand
  // / capacity, at least 1.
  double AloneFactor(const Usage& u) const;
  // The factor a job not yet added would have if it were: max over its links of (load + its
  // demand) / capacity, at least 1.
  double FactorWith(const Usage& u) const;
  // Uplink capacity of a domain in Gb/s: (NIC rate of the nodes attached to it + the uplink
  // capacity of its child domains) / its level's oversubscription. 0 for a root (no uplink).
  double Capacity(int domain) const { return capacity_gbps_[domain]; }
  double Load(int domain) const { return load_gbps_[domain]; }

 private:
  const topo::Cluster* cluster_;
  std::vector<double> node_gbps_;      // Σ NIC line rate per node
  std::vector<int> node_nics_;         // NICs per node
  std::vector<double> capacity_gbps_;  // per domain
  std::vector<double> load_gbps_;      // per domain
};

}  // namespace toposched::sim
