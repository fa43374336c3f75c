// The `domain` choice point as plugin objects: which network domains a multi-node job is tried
// in, level by level. The rules are documented at PlacementPlugins::domain.
#pragma once

#include <string>
#include <vector>

#include "job/job_spec.h"
#include "plugins/slots.h"
#include "topo/cluster.h"

namespace toposched::sched {

// A domain a job may be placed in: its name and its nodes (both owned by the cluster or the
// placer's index, which outlive a Place call); cap, the GPUs usable there, is filled in by the
// search.
struct DomainCandidate {
  const std::string* name = nullptr;
  const std::vector<int>* nodes = nullptr;  // node-id order
  int cap = 0;
};

// The candidates of one level ("leaf", "nvlink-domain", "cluster").
struct DomainGroup {
  std::string level;
  std::vector<DomainCandidate> cands;
  std::vector<int> domain_ids;  // per candidate its network domain (for the O(1) capacity
                                // prune), else -1
};

// The node lists a domain plugin hands out as candidates: per network domain (Cluster::domains)
// its nodes, per NVLink domain its nodes, and every node; each sorted.
struct DomainNodes {
  const std::vector<std::vector<int>>& network;
  const std::vector<std::vector<int>>& nvlink;
  const std::vector<int>& all;
};

class DomainPlugin : public Plugin<DomainRule> {
 public:
  // The candidate domains of a job whose job-level constraint is `jc`, one group per level,
  // tried lowest first. Under every rule: none for a job required on one node (only the
  // single-node path can hold it), the NVLink domains for a job required in one; otherwise the
  // rule's TreeGroups. The node lists must outlive the groups: the candidates point into them.
  std::vector<DomainGroup> Groups(const topo::Cluster& c, const DomainNodes& nodes,
                                  const job::LevelConstraint& jc) const;

 protected:
  // The rule's groups of network domains (or the whole cluster) for a job not required on one
  // node or in one NVLink domain; for a job required in a network level's domain, no level
  // above it.
  virtual std::vector<DomainGroup> TreeGroups(const topo::Cluster& c, const DomainNodes& nodes,
                                              const job::LevelConstraint& jc) const = 0;
};

// The registered domain plugins, in registry order (the order of DomainRule).
const std::vector<const DomainPlugin*>& DomainPlugins();

}  // namespace toposched::sched
