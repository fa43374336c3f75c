// Clusters built in code for the benchmarks, shared by bench/*_bench.cc.
//
// BigCluster(): 4,096 nodes × 8 GPUs (synthetic NVSwitch profile "gpu:8 nvswitch:18 nics:8"),
// 3-tier tree: core > 8 spines > 128 leaves × 32 nodes; rails of 8 up to the core. Built once
// per process and never freed (benchmarks hold references to it).
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>

#include "core/status.h"
#include "topo/cluster.h"
#include "topo/synthetic.h"

namespace toposched::bench {

inline constexpr int kBigNodes = 4096;
inline constexpr int kBigNodesPerLeaf = 32;
inline constexpr int kBigLeavesPerSpine = 16;
inline constexpr int kBigGpusPerNode = 8;

// The value, or the error on stderr and abort (benchmarks have no error path).
template <typename T>
T OrDie(StatusOr<T> v) {
  if (!v.ok()) {
    std::fprintf(stderr, "%s\n", v.status().ToString().c_str());
    std::abort();
  }
  return std::move(v).value();
}

inline void OkOrDie(const Status& s) {
  if (!s.ok()) {
    std::fprintf(stderr, "%s\n", s.ToString().c_str());
    std::abort();
  }
}

inline const topo::Cluster& BigCluster() {
  static const topo::Cluster* cluster = [] {
    auto* c = new topo::Cluster();
    c->name = "synthetic-4096";
    topo::HardwareProfile p;
    p.name = "h100-synthetic";
    p.topology = OrDie(topo::MakeSyntheticTopology("gpu:8 nvswitch:18 nics:8"));
    c->profiles.push_back(std::move(p));
    c->levels = {{"core", 0, 1}, {"spine", 409600, 1}, {"leaf", 102400, 1}};
    const int leaves = kBigNodes / kBigNodesPerLeaf;
    const int spines = leaves / kBigLeavesPerSpine;
    c->domains.push_back({"core0", 0, -1, {}, {}});
    for (int s = 0; s < spines; ++s) {
      c->domains.push_back({"spine" + std::to_string(s), 1, 0, {}, {}});
      c->domains[0].children.push_back(static_cast<int>(c->domains.size()) - 1);
    }
    for (int l = 0; l < leaves; ++l) {
      const int parent = 1 + l / kBigLeavesPerSpine;
      c->domains.push_back({"leaf" + std::to_string(l), 2, parent, {}, {}});
      c->domains[parent].children.push_back(static_cast<int>(c->domains.size()) - 1);
    }
    for (int n = 0; n < kBigNodes; ++n) {
      char name[16];
      std::snprintf(name, sizeof(name), "n%04d", n);
      const int leaf = 1 + spines + n / kBigNodesPerLeaf;
      c->nodes.push_back({name, 0, leaf, -1, topo::Health::kHealthy});
      c->domains[leaf].nodes.push_back(n);
    }
    c->rails = {8, "core"};
    c->Finalize();
    OkOrDie(c->Validate());
    return c;
  }();
  return *cluster;
}

}  // namespace toposched::bench
