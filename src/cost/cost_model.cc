#include "cost/cost_model.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "core/enum_names.h"
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

namespace {

// A collective's name, then the aliases a parser accepts (after Normalize).
constexpr EnumName<Collective> kCollectiveNames[] = {
    {Collective::kAllReduce, "allreduce"},         {Collective::kAllGather, "allgather"},
    {Collective::kReduceScatter, "reducescatter"}, {Collective::kAllToAll, "alltoall"},
    {Collective::kSendRecv, "sendrecv"},           {Collective::kSendRecv, "p2p"},
};

}  // namespace

const char* CollectiveName(Collective c) { return NameOf(kCollectiveNames, c, "?"); }

StatusOr<Collective> ParseCollective(std::string_view s) {
  if (std::optional<Collective> c = ValueOf(kCollectiveNames, Normalize(s))) return *c;
  return InvalidArgumentError("unknown collective \"" + std::string(s) +
                              "\" (allreduce, allgather, reducescatter, alltoall, sendrecv)");
}

namespace {

constexpr EnumName<Algorithm> kAlgorithmNames[] = {
    {Algorithm::kAuto, "auto"},        {Algorithm::kRing, "ring"},
    {Algorithm::kTree, "tree"},        {Algorithm::kHierarchical, "hierarchical"},
    {Algorithm::kNvls, "nvls"},        {Algorithm::kNvlsTree, "nvls-tree"},
    {Algorithm::kDirect, "direct"},    {Algorithm::kHierarchical, "hier"},
    {Algorithm::kNvlsTree, "nvlstree"}};

}  // namespace

const char* AlgorithmName(Algorithm a) { return NameOf(kAlgorithmNames, a, "?"); }

StatusOr<Algorithm> ParseAlgorithm(std::string_view s) {
  if (std::optional<Algorithm> a = ValueOf(kAlgorithmNames, Normalize(s))) return *a;
  return InvalidArgumentError("unknown algorithm \"" + std::string(s) +
                              "\" (auto, ring, tree, hierarchical, nvls, nvls-tree, direct)");
}

namespace {

constexpr EnumName<Transport> kTransportNames[] = {{Transport::kNVLink, "NVLink"},
                                                   {Transport::kPcieP2P, "PCIe P2P"},
                                                   {Transport::kShm, "SHM"},
                                                   {Transport::kNetIB, "NET/IB"},
                                                   {Transport::kNetSocket, "NET/Socket"}};

}  // namespace

const char* TransportName(Transport t) { return NameOf(kTransportNames, t, "?"); }

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
