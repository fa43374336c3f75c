// Network links shared between jobs: the uplink of every domain of the network tree, with the
// capacity its level's oversubscription gives it, and the load of the jobs whose traffic
// crosses it. A job's contention factor is its worst link's load over capacity (≥ 1): the
// simulator stretches the job's inter-node communication by it, and the gang placer's
// "contention" score prices a placement by it (ContentionMs). Knows nothing of queues.
#pragma once

#include <utility>
#include <vector>

#include "state/cluster_state.h"
#include "topo/cluster.h"

namespace toposched::sched {

// Sharing rule (docs/simulator.md, "Contention"): every node of a job under a domain sends
// through that domain's uplink at the line rate of the NICs its GPUs there drive (each GPU one
// NIC: min(GPUs of the job on the node, NICs) · the node's mean NIC rate) when the job also has
// nodes outside the domain (the design ratio's own assumption, as Cluster::Oversubscription makes
// it); a saturated link gives each flow a share proportional to its demand, which for flows of
// equal rate is the max-min fair share. A NIC without a rate in its topology counts at the rate
// the cost model assumes for it (cost::CostTables::NicRateGBps). A job whose nodes are all in
// one NVLink domain uses no network link.
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
  // The same for the parts of a placement (node-id order, as ClusterState::Allocate takes them).
  Usage UsageOf(const std::vector<NodeGpus>& parts) const;
  // A job's communication per step across nodes on the unloaded network (the cost model's
  // prediction divided by AloneFactor), and how much of it a slower network does not cost: the
  // gradient all-reduce overlaps the backward pass, which hides it until the link factor passes
  // `hide_factor` = the hiding time / the all-reduce's time unloaded (sim/step_model.h, StepMs:
  // max(0, dp · c − hidden) = dp · max(0, c − hidden / dp)). At a link factor c ≥ 1 the step
  // carries
  //   other_ms · c + dp_ms · max(0, c − hide_factor)
  // With hide_factor = 0 that is (dp_ms + other_ms) · c: all of it exposed. A factor, not a
  // time, so that the threshold does not depend on which model priced dp_ms.
  struct Traffic {
    double dp_ms = 0;        // the DP gradient all-reduce (may overlap the backward pass)
    double other_ms = 0;     // the rest that crosses nodes (pipeline transfers): always exposed
    double hide_factor = 0;  // the link factor up to which the DP all-reduce stays hidden
    double ExposedAt(double c) const;
    bool operator==(const Traffic&) const = default;
  };

  // A job starts (or stops) loading its links. `network_ms`: its communication time per step
  // on the unloaded network (the cost model's prediction divided by AloneFactor), all exposed;
  // it is summed per link so that ContentionMs can price what a newcomer costs the jobs already
  // there. The simulator passes 0 (it tracks each job's own factor).
  void Add(const Usage& u, double network_ms = 0);
  void Remove(const Usage& u, double network_ms = 0);
  // The same for a job that hides part of its DP communication (Traffic::hide_factor > 0; with
  // 0 it is Add(u, dp_ms + other_ms)). The scheduler rebuilds the loads each pass (no Remove).
  void Add(const Usage& u, const Traffic& t);
  // max over the job's links of load / capacity, at least 1 (1 for a job on no link).
  double Factor(const Usage& u) const;
  // The factor the job would have alone on the network: max over its links of its own demand
  // / capacity, at least 1.
  double AloneFactor(const Usage& u) const;
  // The factor a job not yet added would have if it were: max over its links of (load + its
  // demand) / capacity, at least 1.
  double FactorWith(const Usage& u) const;
  // What a job not yet added would add to the communication time per step, in ms, if it were
  // placed on `u` (placer/gang.h, score "contention"):
  //   own:    its unloaded time (own_ms / AloneFactor) × (FactorWith − AloneFactor), the slowdown
  //           it suffers from the jobs already on its links;
  //   others: Σ over its links of (Σ network_ms of the jobs there) × the rise of that link's
  //           factor max(1, load / capacity), the slowdown it causes them. A job on several of
  //           the links is counted on each, so this bounds the others' slowdown from above.
  // Both 0 when no link it would cross is over-asked. O(links of the job).
  // With Traffic: only exposed time counts (Traffic::ExposedAt), the newcomer's rise from its
  // alone factor to FactorWith and each hiding job's rise on each link from the link's factor
  // before to after (a job that hides its DP all-reduce costs nothing until the factor passes
  // hide_factor). O(links of the job + hiding jobs on them).
  struct Contention {
    double own_ms = 0;
    double others_ms = 0;
    double total() const { return own_ms + others_ms; }
  };
  Contention ContentionMs(const Usage& u, double own_ms) const;
  Contention ContentionMs(const Usage& u, const Traffic& own) const;
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
  std::vector<double> network_ms_;     // per domain: Σ network_ms of the jobs crossing it
  // Per domain: the jobs crossing it that hide part of their traffic (Add with a Traffic).
  std::vector<std::vector<Traffic>> hiding_;
};

}  // namespace toposched::sched
