#include "topo/node_topology.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <set>
#include <utility>

#include "core/enum_names.h"
#include "core/strings.h"

namespace toposched::topo {

namespace {

// The PCIe path classes as nvidia-smi prints them; SOC is the older name of SYS. NV<n> carries
// its link count and is read and written apart.
constexpr EnumName<PathClass> kPciePathNames[] = {
    {PathClass::kPIX, "PIX"},   {PathClass::kPXB, "PXB"}, {PathClass::kPHB, "PHB"},
    {PathClass::kNODE, "NODE"}, {PathClass::kSYS, "SYS"}, {PathClass::kSYS, "SOC"}};

}  // namespace

std::string PathName(const Path& p) {
  if (p.cls == PathClass::kNV) return "NV" + std::to_string(p.nvlinks);
  return NameOf(kPciePathNames, p.cls, "SYS");
}

StatusOr<Path> ParsePath(std::string_view text) {
  std::string_view t = Trim(text);
  if (std::optional<PathClass> c = ValueOf(kPciePathNames, t)) return Path{*c, 0};
  if (t.size() > 2 && t.substr(0, 2) == "NV") {
    auto n = ParseInt(t.substr(2));
    if (n.ok() && *n >= 1 && *n <= 64) return Path{PathClass::kNV, static_cast<int>(*n)};
  }
  return InvalidArgumentError("unknown path class \"" + std::string(t.substr(0, 32)) +
                              "\" (expected NV1..NV64, PIX, PXB, PHB, NODE, SYS or SOC)");
}

int PathRank(const Path& p) {
  // NV with more links ranks better: 0..63 for NV64..NV1, then the PCIe classes.
  if (p.cls == PathClass::kNV) return 64 - std::clamp(p.nvlinks, 1, 64);
  return 64 + static_cast<int>(p.cls);
}

namespace {

// Names first, then the aliases the readers accept (case-insensitive, trimmed).
constexpr EnumName<Health> kHealthNames[] = {
    {Health::kHealthy, "healthy"},     {Health::kDegraded, "degraded"},
    {Health::kUnhealthy, "unhealthy"}, {Health::kHealthy, "ok"},
    {Health::kUnhealthy, "down"},      {Health::kUnhealthy, "failed"}};

constexpr EnumName<LinkLayer> kLinkLayerNames[] = {{LinkLayer::kUnknown, "unknown"},
                                                   {LinkLayer::kInfiniBand, "ib"},
                                                   {LinkLayer::kRoCE, "roce"},
                                                   {LinkLayer::kEthernet, "ethernet"},
                                                   {LinkLayer::kInfiniBand, "infiniband"},
                                                   {LinkLayer::kEthernet, "eth"},
                                                   {LinkLayer::kEthernet, "tcp"},
                                                   {LinkLayer::kUnknown, ""}};

}  // namespace

const char* HealthName(Health h) { return NameOf(kHealthNames, h, "healthy"); }

StatusOr<Health> ParseHealth(std::string_view s) {
  if (auto h = ValueOf(kHealthNames, ToLower(Trim(s)))) return *h;
  return InvalidArgumentError("unknown health \"" + std::string(s) +
                              "\" (expected healthy, degraded or unhealthy)");
}

const char* LinkLayerName(LinkLayer l) { return NameOf(kLinkLayerNames, l, "unknown"); }

StatusOr<LinkLayer> ParseLinkLayer(std::string_view s) {
  if (auto l = ValueOf(kLinkLayerNames, ToLower(Trim(s)))) return *l;
  return InvalidArgumentError("unknown link layer \"" + std::string(s) +
                              "\" (expected ib, roce or ethernet)");
}

void NodeTopology::ResetPaths() {
  int n = num_devices();
  paths_.assign(static_cast<size_t>(n) * n, Path{PathClass::kSYS, 0});
}

void NodeTopology::set_path(int a, int b, Path p) {
  int n = num_devices();
  paths_[a * n + b] = p;
  paths_[b * n + a] = p;
}

std::string NodeTopology::device_name(int dev) const {
  if (dev < static_cast<int>(gpus.size())) return "GPU" + std::to_string(gpus[dev].index);
  return nics[dev - gpus.size()].name;
}

int NodeTopology::gpu_pos(int index) const {
  for (size_t i = 0; i < gpus.size(); ++i) {
    if (gpus[i].index == index) return static_cast<int>(i);
  }
  return -1;
}

int NodeTopology::nic_pos(const std::string& name) const {
  for (size_t i = 0; i < nics.size(); ++i) {
    if (nics[i].name == name) return static_cast<int>(i);
  }
  return -1;
}

int NodeTopology::FindDevice(std::string_view name) const {
  if (StartsWith(name, "GPU")) {
    auto index = ParseInt(name.substr(3));
    if (index.ok()) {
      int pos = std::in_range<int>(*index) ? gpu_pos(static_cast<int>(*index)) : -1;
      return pos < 0 ? -1 : gpu_dev(pos);
    }
  }
  for (size_t i = 0; i < nics.size(); ++i) {
    if (nics[i].name == name) return nic_dev(static_cast<int>(i));
  }
  return -1;
}

namespace {

struct Placement {
  const PciePlacement* pcie;
  std::optional<int> numa;
};

// Path class from where two devices sit in the PCIe tree.
PathClass PcieClass(const NodeTopology& t, const Placement& a, const Placement& b) {
  const auto& sa = a.pcie->switches;
  const auto& sb = b.pcie->switches;
  bool same_bridge = a.pcie->host_bridge >= 0 && a.pcie->host_bridge == b.pcie->host_bridge;
  if (!sa.empty() && !sb.empty() && sa.back() == sb.back()) return PathClass::kPIX;
  // A common switch ancestor means the traffic turns below the host bridge.
  for (int x : sa) {
    if (std::find(sb.begin(), sb.end(), x) != sb.end()) return PathClass::kPXB;
  }
  if (same_bridge) return PathClass::kPHB;
  std::optional<int> na = a.numa, nb = b.numa;
  auto bridge_numa = [&t](int hb) -> std::optional<int> {
    if (hb < 0 || hb >= static_cast<int>(t.host_bridges.size())) return std::nullopt;
    return t.host_bridges[hb].numa;
  };
  if (!na) na = bridge_numa(a.pcie->host_bridge);
  if (!nb) nb = bridge_numa(b.pcie->host_bridge);
  if (na && nb && *na == *nb) return PathClass::kNODE;
  if (!na && !nb && t.numa_nodes.size() <= 1) return PathClass::kNODE;
  return PathClass::kSYS;
}

}  // namespace

void NodeTopology::DerivePathsFromStructure(const std::vector<std::vector<int>>& nvlinks) {
  ResetPaths();
  int n = num_devices();
  std::vector<Placement> place;
  place.reserve(n);
  for (const Gpu& g : gpus) place.push_back({&g.pcie, g.numa});
  for (const Nic& c : nics) place.push_back({&c.pcie, c.numa});
  for (int a = 0; a < n; ++a) {
    for (int b = a + 1; b < n; ++b) {
      int links = 0;
      if (a < static_cast<int>(gpus.size()) && b < static_cast<int>(gpus.size()) &&
          a < static_cast<int>(nvlinks.size()) && b < static_cast<int>(nvlinks[a].size())) {
        links = nvlinks[a][b];
      }
      if (links > 0) {
        set_path(a, b, Path{PathClass::kNV, links});
      } else {
        set_path(a, b, Path{PcieClass(*this, place[a], place[b]), 0});
      }
    }
  }
}

void NodeTopology::InferNvSwitch() {
  int g = static_cast<int>(gpus.size());
  // Most NVLinks any GPU of this kind can have; 18 (NVLink 4/5) when unknown.
  int ports_limit = 18;
  for (const Gpu& gpu : gpus) {
    if (gpu.nvlink_ports > 0) ports_limit = std::min(ports_limit, gpu.nvlink_ports);
  }
  bool switched = nvswitch_count > 0;
  for (int i = 0; i < g && !switched; ++i) {
    int sum = 0;
    for (int j = 0; j < g; ++j) {
      if (i != j && gpu_gpu(i, j).cls == PathClass::kNV) sum += gpu_gpu(i, j).nvlinks;
    }
    if (sum > ports_limit) switched = true;
  }
  nvswitch = nvswitch || switched;
  for (int i = 0; i < g; ++i) {
    if (gpus[i].nvlink_ports > 0) continue;
    int sum = 0, mx = 0;
    for (int j = 0; j < g; ++j) {
      if (i != j && gpu_gpu(i, j).cls == PathClass::kNV) {
        sum += gpu_gpu(i, j).nvlinks;
        mx = std::max(mx, gpu_gpu(i, j).nvlinks);
      }
    }
    // Switched: each peer shows the GPU's full link count; direct: the links add up.
    gpus[i].nvlink_ports = nvswitch ? mx : sum;
  }
}

void NodeTopology::CompleteNumaNodes() {
  std::set<int> have;
  for (const NumaNode& n : numa_nodes) have.insert(n.id);
  auto add = [&](const std::optional<int>& id) {
    if (id && !have.count(*id)) {
      numa_nodes.push_back(NumaNode{*id, {}});
      have.insert(*id);
    }
  };
  for (const Gpu& g : gpus) add(g.numa);
  for (const Nic& c : nics) add(c.numa);
  std::sort(numa_nodes.begin(), numa_nodes.end(),
            [](const NumaNode& a, const NumaNode& b) { return a.id < b.id; });
}

void NodeTopology::InferNicNuma() {
  for (int c = 0; c < static_cast<int>(nics.size()); ++c) {
    if (nics[c].numa) continue;
    std::optional<int> found;
    bool conflict = false;
    for (int g = 0; g < static_cast<int>(gpus.size()); ++g) {
      PathClass cls = gpu_nic(g, c).cls;
      if (cls == PathClass::kSYS || cls == PathClass::kNV || !gpus[g].numa) continue;
      if (found && *found != *gpus[g].numa) conflict = true;
      found = gpus[g].numa;
    }
    if (found && !conflict) nics[c].numa = found;
  }
}

std::vector<std::vector<int>> NodeTopology::NvlinkIslands() const {
  int g = static_cast<int>(gpus.size());
  std::vector<int> comp(g, -1);
  std::vector<std::vector<int>> out;
  for (int s = 0; s < g; ++s) {
    if (comp[s] >= 0) continue;
    std::vector<int> stack{s}, members;
    comp[s] = static_cast<int>(out.size());
    while (!stack.empty()) {
      int u = stack.back();
      stack.pop_back();
      members.push_back(u);
      for (int v = 0; v < g; ++v) {
        if (comp[v] < 0 && gpu_gpu(u, v).cls == PathClass::kNV) {
          comp[v] = comp[s];
          stack.push_back(v);
        }
      }
    }
    std::sort(members.begin(), members.end());
    out.push_back(members);
  }
  return out;
}

int NodeTopology::NearestNic(int gpu) const {
  int best = -1;
  int best_rank = 1 << 30;
  int best_load = 1 << 30;
  int nn = static_cast<int>(nics.size());
  for (int c = 0; c < nn; ++c) {
    if (nics[c].health == Health::kUnhealthy) continue;
    int rank = PathRank(gpu_nic(gpu, c));
    // Load: how many GPUs have this NIC at a strictly better-or-equal path than this GPU does.
    int load = 0;
    for (int g = 0; g < static_cast<int>(gpus.size()); ++g) {
      if (g != gpu && PathRank(gpu_nic(g, c)) < rank) ++load;
    }
    if (rank < best_rank || (rank == best_rank && load < best_load)) {
      best = c;
      best_rank = rank;
      best_load = load;
    }
  }
  return best;
}

Status NodeTopology::Validate() const {
  std::set<int> idx;
  for (const Gpu& g : gpus) {
    if (!idx.insert(g.index).second) {
      return InvalidArgumentError("GPU index " + std::to_string(g.index) + " appears twice");
    }
  }
  std::set<std::string> names;
  for (const Nic& c : nics) {
    if (c.name.empty())
      return InvalidArgumentError("NIC " + std::to_string(c.index) + " has no name");
    if (!names.insert(c.name).second) {
      return InvalidArgumentError("NIC name \"" + c.name + "\" appears twice");
    }
  }
  int n = num_devices();
  if (static_cast<int>(paths_.size()) != n * n) {
    return InternalError("path matrix is " + std::to_string(paths_.size()) + " entries, expected " +
                         std::to_string(n * n));
  }
  for (int a = 0; a < n; ++a) {
    for (int b = a + 1; b < n; ++b) {
      if (!(path(a, b) == path(b, a))) {
        return InvalidArgumentError("path " + device_name(a) + "-" + device_name(b) +
                                    " is not symmetric");
      }
      bool both_gpu = a < static_cast<int>(gpus.size()) && b < static_cast<int>(gpus.size());
      if (path(a, b).cls == PathClass::kNV && !both_gpu) {
        return InvalidArgumentError("NVLink between " + device_name(a) + " and " + device_name(b) +
                                    ": NVLink joins GPUs only");
      }
    }
  }
  return OkStatus();
}

}  // namespace toposched::topo
