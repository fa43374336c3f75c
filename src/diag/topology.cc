#include "diag/topology.h"

#include <cctype>
#include <cstdio>
#include <map>
#include <string_view>

#include "cost/cost_model.h"
#include "topo/cluster.h"

namespace toposched::diag {

namespace {

bool RdmaName(std::string_view name) {
  for (std::string_view p : {"mlx", "ib", "bnxt_re", "efa", "irdma", "rdma", "cxi", "erdma"}) {
    if (name.starts_with(p)) return true;
  }
  return false;
}

bool IsRdma(const topo::Nic& nic) {
  switch (nic.link_layer) {
    case topo::LinkLayer::kInfiniBand:
    case topo::LinkLayer::kRoCE:
      return true;
    case topo::LinkLayer::kEthernet:
      return false;
    case topo::LinkLayer::kUnknown:
      return RdmaName(nic.name);
  }
  return false;
}

std::string Describe(const std::vector<const topo::Nic*>& nics) {
  if (nics.empty()) return "";
  std::string names = nics.front()->name;
  if (nics.size() > 2) {
    names += ".." + nics.back()->name;
  } else if (nics.size() == 2) {
    names += "," + nics.back()->name;
  }
  // Group by (rate, link layer): "8 × 400 Gb/s ib".
  std::map<std::pair<double, std::string>, int> groups;
  for (const topo::Nic* n : nics) {
    ++groups[{n->rate_gbps.value_or(0), topo::LinkLayerName(n->link_layer)}];
  }
  std::string out = names + " (";
  bool first = true;
  for (const auto& [key, count] : groups) {
    char buf[96];
    if (key.first > 0) {
      std::snprintf(buf, sizeof(buf), "%s%d × %.0f Gb/s %s", first ? "" : ", ", count, key.first,
                    key.second.c_str());
    } else {
      std::snprintf(buf, sizeof(buf), "%s%d × rate unknown, %s", first ? "" : ", ", count,
                    key.second.c_str());
    }
    out += buf;
    first = false;
  }
  return out + ")";
}

// Two copies of the node under one leaf switch: the smallest cluster where NCCL uses the network.
topo::Cluster TwoNodes(const topo::NodeTopology& t) {
  topo::Cluster c;
  c.name = "diagnose";
  topo::HardwareProfile p;
  p.name = "node";
  p.topology = t;
  c.profiles.push_back(std::move(p));
  c.levels.push_back(topo::NetworkLevel{"leaf", 0, 1.0});
  topo::NetworkDomain leaf;
  leaf.name = "leaf0";
  leaf.level = 0;
  leaf.nodes = {0, 1};
  c.domains.push_back(leaf);
  for (int i = 0; i < 2; ++i) {
    topo::ClusterNode n;
    n.name = i == 0 ? "a" : "b";
    n.profile = 0;
    n.domain = 0;
    c.nodes.push_back(n);
  }
  c.Finalize();
  return c;
}

std::optional<double> AllReduceMs(const topo::NodeTopology& t) {
  topo::Cluster c = TwoNodes(t);
  if (!c.Validate().ok()) return std::nullopt;
  cost::CostModel model(c);
  std::vector<cost::GpuRef> gpus;
  for (int node = 0; node < 2; ++node) {
    for (int g = 0; g < static_cast<int>(t.gpus.size()); ++g) gpus.push_back({node, g});
  }
  auto est = model.Evaluate(cost::Collective::kAllReduce, gpus, double(1 << 30));
  if (!est.ok()) return std::nullopt;
  return est->time_ms;
}

}  // namespace

NetworkAdvice AdviseNetwork(const NodeContext& node) {
  NetworkAdvice a;
  const topo::NodeTopology& t = node.topology;
  std::vector<const topo::Nic*> rdma;
  for (const topo::Nic& n : t.nics) {
    if (!IsRdma(n)) continue;
    rdma.push_back(&n);
    a.rdma_nics.push_back(n.name);
    if (!a.nccl_ib_hca.empty()) a.nccl_ib_hca += ',';
    a.nccl_ib_hca += n.name;
  }
  a.rdma_description = Describe(rdma);
  if (t.gpus.empty() || t.nics.empty()) return a;
  a.ib_ms = AllReduceMs(t);
  topo::NodeTopology sockets = t;
  for (topo::Nic& n : sockets.nics) n.link_layer = topo::LinkLayer::kEthernet;
  a.socket_ms = AllReduceMs(sockets);
  return a;
}

}  // namespace toposched::diag
