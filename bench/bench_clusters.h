// Clusters built in code for the benchmarks, shared by bench/*_bench.cc.
//
// BigCluster(): 4,096 nodes × 8 GPUs (synthetic NVSwitch profile "gpu:8 nvswitch:18 nics:8"),
// 3-tier tree: core > 8 spines > 128 leaves × 32 nodes; rails of 8 up to the core. Built once
// per process and never freed (benchmarks hold references to it).
//
// Nvl72Cluster(): 1,821 GB200 NVL72 racks = 32,778 compute trays x 4 GPUs = 131,112 GPUs (the
// smallest whole-rack count holding 131,072 GPUs: 131,072 / 72 = 1,820.4), each rack one NVLink
// domain (900 GB/s per GPU); trays "gpu:4 nvswitch:18 model:GB200 nics:4 nic_gbps:400" (DGX
// GB200 User Guide, Hardware: 4 GPUs and 4 x ConnectX-7 400G per tray, 18 trays per rack).
// Network as `cluster generate --profile gb200-nvl72 --nodes 32778 --nodes-per-leaf 36
// --leaves-per-spine 16` writes it: leaves of 2 racks (1:1), spines of 16 leaves (2:1), one
// zone; 4 rails per spine. Built once per process and never freed.
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

// The lowest `k` GPUs set in `free` among the first `gpus` (a node's GPU mask type).
template <typename Mask>
Mask LowestFree(const Mask& free, int k, int gpus) {
  Mask m;
  for (int g = 0; g < gpus && k > 0; ++g) {
    if (free.test(g)) {
      m.set(g);
      --k;
    }
  }
  return m;
}

// A three-tier tree's switches as domains: `root` (index 0), `spines` spines under it, then
// `leaves` leaves, leaf l under spine l / leaves_per_spine. Leaf l is domain 1 + spines + l.
inline void AddTreeSwitches(topo::Cluster& c, const std::string& root, int spines, int leaves,
                            int leaves_per_spine) {
  c.domains.push_back({root, 0, -1, {}, {}});
  for (int s = 0; s < spines; ++s) {
    c.domains.push_back({"spine" + std::to_string(s), 1, 0, {}, {}});
    c.domains[0].children.push_back(static_cast<int>(c.domains.size()) - 1);
  }
  for (int l = 0; l < leaves; ++l) {
    const int parent = 1 + l / leaves_per_spine;
    c.domains.push_back({"leaf" + std::to_string(l), 2, parent, {}, {}});
    c.domains[parent].children.push_back(static_cast<int>(c.domains.size()) - 1);
  }
}

// `nodes` healthy nodes of profile 0 named by `name_format` (printf, one int: the node's
// index), `per_leaf` to a leaf, in the leaves AddTreeSwitches made.
inline void AddTreeNodes(topo::Cluster& c, int nodes, int per_leaf, int spines,
                         const char* name_format) {
  for (int n = 0; n < nodes; ++n) {
    char name[32];
    std::snprintf(name, sizeof(name), name_format, n);
    const int leaf = 1 + spines + n / per_leaf;
    c.nodes.push_back({name, 0, leaf, -1, topo::Health::kHealthy});
    c.domains[leaf].nodes.push_back(n);
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
    AddTreeSwitches(*c, "core0", spines, leaves, kBigLeavesPerSpine);
    AddTreeNodes(*c, kBigNodes, kBigNodesPerLeaf, spines, "n%04d");
    c->rails = {8, "core"};
    c->Finalize();
    OkOrDie(c->Validate());
    return c;
  }();
  return *cluster;
}

inline constexpr int kNvl72Racks = 1821;
inline constexpr int kNvl72TraysPerRack = 18;
inline constexpr int kNvl72GpusPerTray = 4;
inline constexpr int kNvl72RacksPerLeaf = 2;
inline constexpr int kNvl72LeavesPerSpine = 16;

inline const topo::Cluster& Nvl72Cluster() {
  static const topo::Cluster* cluster = [] {
    auto* c = new topo::Cluster();
    c->name = "gb200-nvl72-131k";
    topo::HardwareProfile p;
    p.name = "gb200-nvl72";
    p.topology =
        OrDie(topo::MakeSyntheticTopology("gpu:4 nvswitch:18 model:GB200 nics:4 nic_gbps:400"));
    c->profiles.push_back(std::move(p));
    const int trays = kNvl72Racks * kNvl72TraysPerRack;
    const int trays_per_leaf = kNvl72RacksPerLeaf * kNvl72TraysPerRack;
    const int leaves = (trays + trays_per_leaf - 1) / trays_per_leaf;
    const int spines = (leaves + kNvl72LeavesPerSpine - 1) / kNvl72LeavesPerSpine;
    // Leaf non-blocking (its trays' NICs: 36 x 4 x 400 Gb/s up), spine 2:1 (half of its 16
    // leaves' uplinks), as `cluster generate` writes them.
    const double leaf_uplink = double{trays_per_leaf} * kNvl72GpusPerTray * 400;
    c->levels = {{"zone", 0, 1},
                 {"spine", kNvl72LeavesPerSpine * leaf_uplink / 2, 2},
                 {"leaf", leaf_uplink, 1}};
    AddTreeSwitches(*c, "zone0", spines, leaves, kNvl72LeavesPerSpine);
    for (int r = 0; r < kNvl72Racks; ++r) {
      c->nvlink_domains.push_back({"nvl72-rack" + std::to_string(r), {}, 900});
    }
    for (int n = 0; n < trays; ++n) {
      char name[16];
      std::snprintf(name, sizeof(name), "node%05d", n + 1);
      const int leaf = 1 + spines + n / trays_per_leaf;
      const int rack = n / kNvl72TraysPerRack;
      c->nodes.push_back({name, 0, leaf, rack, topo::Health::kHealthy});
      c->domains[leaf].nodes.push_back(n);
      c->nvlink_domains[rack].nodes.push_back(n);
    }
    c->rails = {kNvl72GpusPerTray, "spine"};
    c->Finalize();
    OkOrDie(c->Validate());
    return c;
  }();
  return *cluster;
}

}  // namespace toposched::bench
