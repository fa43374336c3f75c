// The example clusters under data/clusters, loaded once per test process.
#pragma once

#include <gtest/gtest.h>

#include <map>
#include <string>

#include "topo/cluster.h"
#include "topo/io/cluster_yaml.h"

namespace toposched::testing {

inline const topo::Cluster& LoadExampleCluster(const std::string& name) {
  static auto* cache = new std::map<std::string, topo::Cluster>();
  auto it = cache->find(name);
  if (it != cache->end()) return it->second;
  StatusOr<topo::Cluster> c =
      topo::io::ReadClusterYamlFile(std::string(TS_SOURCE_DIR) + "/data/clusters/" + name);
  EXPECT_TRUE(c.ok()) << c.status().ToString();
  c->Finalize();
  return cache->emplace(name, std::move(c).value()).first->second;
}

inline const topo::Cluster& H100Cluster() { return LoadExampleCluster("h100-2rack.yaml"); }
inline const topo::Cluster& Gb200Cluster() { return LoadExampleCluster("gb200-nvl72.yaml"); }

}  // namespace toposched::testing
