// Clusters for cost tests: N identical nodes from a synthetic description, spread over leaves
// under one spine with a given oversubscription, optionally NVLink domains of D nodes.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "topo/cluster.h"
#include "topo/synthetic.h"

namespace toposched::cost::testing {

inline topo::Cluster MakeCluster(const std::string& description, int nodes, int leaves = 1,
                                 double spine_oversubscription = 1.0, int nvl_domain_nodes = 0,
                                 double nvl_gbps = 0) {
  auto t = topo::MakeSyntheticTopology(description);
  EXPECT_TRUE(t.ok()) << t.status().ToString();
  topo::Cluster c;
  c.name = "test";
  topo::HardwareProfile p;
  p.name = "p";
  p.topology = *t;
  c.profiles.push_back(p);
  c.levels.push_back(topo::NetworkLevel{"spine", 0, 1.0});
  c.levels.push_back(topo::NetworkLevel{"leaf", 0, spine_oversubscription});
  topo::NetworkDomain spine;
  spine.name = "spine0";
  spine.level = 0;
  c.domains.push_back(spine);
  for (int l = 0; l < leaves; ++l) {
    topo::NetworkDomain leaf;
    leaf.name = "leaf" + std::to_string(l);
    leaf.level = 1;
    leaf.parent = 0;
    c.domains[0].children.push_back(static_cast<int>(c.domains.size()));
    c.domains.push_back(leaf);
  }
  for (int i = 0; i < nodes; ++i) {
    topo::ClusterNode n;
    char name[32];
    std::snprintf(name, sizeof(name), "gpu%03d", i + 1);
    n.name = name;
    n.profile = 0;
    n.domain = 1 + i * leaves / nodes;
    c.domains[n.domain].nodes.push_back(i);
    c.nodes.push_back(n);
  }
  if (nvl_domain_nodes > 0) {
    for (int first = 0; first < nodes; first += nvl_domain_nodes) {
      topo::NvlinkDomain d;
      d.name = "nvl" + std::to_string(first / nvl_domain_nodes);
      d.gpu_bandwidth_gbps = nvl_gbps;
      for (int i = first; i < std::min(nodes, first + nvl_domain_nodes); ++i) {
        d.nodes.push_back(i);
        c.nodes[i].nvlink_domain = static_cast<int>(c.nvlink_domains.size());
      }
      c.nvlink_domains.push_back(d);
    }
  }
  c.Finalize();
  EXPECT_TRUE(c.Validate().ok()) << c.Validate().ToString();
  return c;
}

}  // namespace toposched::cost::testing
