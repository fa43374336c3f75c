#include "cost/cost_model.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "core/strings.h"

namespace toposched::cost {

namespace {

std::string Normalize(std::string_view s) {
  std::string out;
  for (char c : ToLower(Trim(s))) {
    if (c != '_' && c != '-' && c != ' ') out += c;
  }
  return out;
}

}  // namespace

const char* CollectiveName(Collective c) {
  switch (c) {
    case Collective::kAllReduce:
      return "allreduce";
    case Collective::kAllGather:
      return "allgather";
    case Collective::kReduceScatter:
      return "reducescatter";
    case Collective::kAllToAll:
      return "alltoall";
    case Collective::kSendRecv:
      return "sendrecv";
  }
  return "?";
}

StatusOr<Collective> ParseCollective(std::string_view s) {
  std::string n = Normalize(s);
  if (n == "allreduce") return Collective::kAllReduce;
  if (n == "allgather") return Collective::kAllGather;
  if (n == "reducescatter") return Collective::kReduceScatter;
  if (n == "alltoall") return Collective::kAllToAll;
  if (n == "sendrecv" || n == "p2p") return Collective::kSendRecv;
  return InvalidArgumentError("unknown collective \"" + std::string(s) +
                              "\" (allreduce, allgather, reducescatter, alltoall, sendrecv)");
}

const char* AlgorithmName(Algorithm a) {
  switch (a) {
    case Algorithm::kAuto:
      return "auto";
    case Algorithm::kRing:
      return "ring";
    case Algorithm::kTree:
      return "tree";
    case Algorithm::kHierarchical:
      return "hierarchical";
    case Algorithm::kNvls:
      return "nvls";
    case Algorithm::kNvlsTree:
      return "nvls-tree";
    case Algorithm::kDirect:
      return "direct";
  }
  return "?";
}

StatusOr<Algorithm> ParseAlgorithm(std::string_view s) {
  std::string n = Normalize(s);
  if (n == "auto") return Algorithm::kAuto;
  if (n == "ring") return Algorithm::kRing;
  if (n == "tree") return Algorithm::kTree;
  if (n == "hierarchical" || n == "hier") return Algorithm::kHierarchical;
  if (n == "nvls") return Algorithm::kNvls;
  if (n == "nvlstree") return Algorithm::kNvlsTree;
  if (n == "direct") return Algorithm::kDirect;
  return InvalidArgumentError("unknown algorithm \"" + std::string(s) +
                              "\" (auto, ring, tree, hierarchical, nvls, nvls-tree, direct)");
}

const char* TransportName(Transport t) {
  switch (t) {
    case Transport::kNVLink:
      return "NVLink";
    case Transport::kPcieP2P:
      return "PCIe P2P";
    case Transport::kShm:
      return "SHM";
    case Transport::kNetIB:
      return "NET/IB";
    case Transport::kNetSocket:
      return "NET/Socket";
  }
  return "?";
}

double BusFactor(Collective c, int n) {
  if (n < 2) return 0;
  switch (c) {
    case Collective::kAllReduce:
      return 2.0 * (n - 1) / n;
    case Collective::kAllGather:
    case Collective::kReduceScatter:
    case Collective::kAllToAll:
      return static_cast<double>(n - 1) / n;
    case Collective::kSendRecv:
      return 1.0;
  }
  return 0;
}

CostModel::CostModel(const topo::Cluster& cluster, Options options, const CostTables& tables,
                     const topo::HardwareTable& hw)
    : cluster_(&cluster), options_(options), tables_(tables) {
  profile_models_.reserve(cluster.profiles.size());
  for (const topo::HardwareProfile& p : cluster.profiles) {
    profile_models_.emplace_back(p.topology, tables, hw);
  }
}

std::unique_ptr<CostModel> CostModel::ForNode(const topo::NodeTopology& topology, Options options,
                                              const CostTables& tables,
                                              const topo::HardwareTable& hw) {
  auto cluster = std::make_unique<topo::Cluster>();
  cluster->name = "node";
  topo::HardwareProfile profile;
  profile.name = "node";
  profile.topology = topology;
  cluster->profiles.push_back(std::move(profile));
  topo::ClusterNode node;
  node.name = "node0";
  cluster->nodes.push_back(node);
  auto model = std::unique_ptr<CostModel>(new CostModel(*cluster, options, tables, hw));
  model->owned_ = std::move(cluster);
  return model;
}

const NodeCostModel& CostModel::node_model(int node) const {
  return profile_models_[cluster_->nodes[node].profile];
}

bool CostModel::OnRail(const GpuRef& a) const {
  const int rails = cluster_->rails.count;
  const std::vector<int>& na = node_model(a.node).NicsOf(a.gpu);
  return std::any_of(na.begin(), na.end(), [&](int c) { return c >= 0 && c < rails; });
}

bool CostModel::SameRail(const GpuRef& a, const GpuRef& b) const {
  if (a.gpu == b.gpu && cluster_->nodes[a.node].profile == cluster_->nodes[b.node].profile) {
    return OnRail(a);  // the same GPU of the same hardware: the same nearest NICs
  }
  const int rails = cluster_->rails.count;
  const std::vector<int>& nb = node_model(b.node).NicsOf(b.gpu);
  for (int c : node_model(a.node).NicsOf(a.gpu)) {
    if (c >= 0 && c < rails && std::find(nb.begin(), nb.end(), c) != nb.end()) return true;
  }
  return false;
}

std::string CostModel::GpuName(const GpuRef& g, bool multi_node) const {
  const std::string& gpu = node_model(g.node).gpu_name(g.gpu);
  return multi_node ? cluster_->nodes[g.node].name + "/" + gpu : gpu;
}

StatusOr<Estimate> CostModel::Evaluate(Collective collective, std::span<const GpuRef> gpus,
                                       double bytes, Algorithm algorithm) const {
  return Run(collective, gpus, bytes, algorithm, /*detail=*/true);
}

StatusOr<double> CostModel::TimeMs(Collective collective, std::span<const GpuRef> gpus,
                                   double bytes, Algorithm algorithm) const {
  ASSIGN_OR_RETURN(Estimate e, Run(collective, gpus, bytes, algorithm, /*detail=*/false));
  return e.time_ms;
}

}  // namespace toposched::cost
