#include "topo/summary.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "core/strings.h"
#include "topo/hardware.h"

namespace toposched::topo {

namespace {

std::string IslandText(const NodeTopology& t, const std::vector<int>& members) {
  std::vector<std::string> names;
  for (int g : members) names.push_back("GPU" + std::to_string(t.gpus[g].index));
  std::string s;
  for (size_t i = 0; i < names.size(); ++i) s += (i ? " " : "") + names[i];
  return s;
}

}  // namespace

std::string FormatTopologySummary(const NodeTopology& t) {
  std::string out;
  const HardwareTable& hw = HardwareTable::Default();
  out += fmt::format("source: {}\n", t.source.empty() ? "(unknown)" : t.source);
  int gen = hw.NvlinkGeneration(t);
  out += fmt::format("GPUs: {}{}   NICs: {}   NUMA nodes: {}   PCIe switches: {}\n", t.gpus.size(),
                     t.gpu_model.empty() ? "" : " x " + t.gpu_model, t.nics.size(),
                     t.numa_nodes.size(), t.pcie_switches.size());
  if (t.nvlink_unknown) {
    out +=
        "NVLink: unknown (the input lists the GPUs without their links, as an NCCL_TOPO_FILE "
        "template does; taken as none)";
    out += gen > 0 ? fmt::format("; the GPU model has NVLink generation {}\n", gen) : "\n";
  } else if (gen > 0) {
    out += fmt::format(
        "NVLink: generation {} ({}), {}\n", gen,
        t.gpu_model.empty() && (t.gpus.empty() || t.gpus[0].model.empty())
            ? "inferred from link counts"
            : "from the GPU model",
        t.nvswitch ? "NVSwitch fabric (links shared by all peers)" : "direct point-to-point links");
  } else {
    out += "NVLink: none\n";
  }
  out += "\nNVLink islands:\n";
  auto islands = t.NvlinkIslands();
  for (size_t i = 0; i < islands.size(); ++i) {
    out += fmt::format("  island {}: {}\n", i, IslandText(t, islands[i]));
  }
  out += "\nNUMA layout:\n";
  if (t.numa_nodes.empty()) out += "  (not given by the input)\n";
  for (const NumaNode& n : t.numa_nodes) {
    std::vector<int> members;
    for (int g = 0; g < static_cast<int>(t.gpus.size()); ++g) {
      if (t.gpus[g].numa == n.id) members.push_back(g);
    }
    std::string nics;
    for (const Nic& c : t.nics) {
      if (c.numa == n.id) nics += (nics.empty() ? "" : " ") + c.name;
    }
    out += fmt::format("  NUMA {}: cpus {}  GPUs [{}]  NICs [{}]\n", n.id,
                       n.cpus.empty() ? "?" : FormatIntList(n.cpus), IslandText(t, members), nics);
  }
  out += "\nNearest NIC per GPU:\n";
  for (int g = 0; g < static_cast<int>(t.gpus.size()); ++g) {
    int c = t.NearestNic(g);
    if (c < 0) {
      out += fmt::format("  GPU{}: no NIC\n", t.gpus[g].index);
      continue;
    }
    const Path& p = t.gpu_nic(g, c);
    bool gdr = p.cls == PathClass::kPIX || p.cls == PathClass::kPXB;
    out += fmt::format("  GPU{}: {} ({}{})\n", t.gpus[g].index, t.nics[c].name, PathName(p),
                       gdr ? ", GPUDirect RDMA" : ", no GPUDirect RDMA");
  }
  out += "\nMatrix:\n";
  int n = t.num_devices();
  size_t w = 5;
  for (int d = 0; d < n; ++d) w = std::max(w, t.device_name(d).size() + 1);
  out += fmt::format("{:<{}}", "", w);
  for (int d = 0; d < n; ++d) out += fmt::format("{:<{}}", t.device_name(d), w);
  out += "\n";
  for (int a = 0; a < n; ++a) {
    out += fmt::format("{:<{}}", t.device_name(a), w);
    for (int b = 0; b < n; ++b)
      out += fmt::format("{:<{}}", a == b ? "X" : PathName(t.path(a, b)), w);
    out += "\n";
  }
  return out;
}

std::string FormatClusterSummary(const Cluster& c) {
  std::string out;
  out += fmt::format("cluster {}: {} nodes, {} GPUs\n", c.name, c.nodes.size(), c.TotalGpus());
  std::map<int, int> per_profile;
  for (const ClusterNode& n : c.nodes) per_profile[n.profile]++;
  for (size_t p = 0; p < c.profiles.size(); ++p) {
    const NodeTopology& t = c.profiles[p].topology;
    out += fmt::format("  profile {}: {} nodes x {} GPUs{}, {} NICs, {}\n", c.profiles[p].name,
                       per_profile[static_cast<int>(p)], t.gpus.size(),
                       t.gpu_model.empty() ? "" : " " + t.gpu_model, t.nics.size(),
                       t.nvswitch ? "NVSwitch" : "no NVSwitch");
  }
  out += "network (top first):\n";
  for (size_t l = 0; l < c.levels.size(); ++l) {
    int count = 0;
    for (const NetworkDomain& d : c.domains) count += d.level == static_cast<int>(l);
    if (l == 0 && c.levels[l].uplink_gbps == 0) {
      out += fmt::format("  {}: {} domains (top)\n", c.levels[l].name, count);
      continue;
    }
    out +=
        fmt::format("  {}: {} domains, uplink {} Gb/s, oversubscription {}:1\n", c.levels[l].name,
                    count, c.levels[l].uplink_gbps, c.levels[l].oversubscription);
  }
  for (size_t d = 0; d < c.domains.size(); ++d) {
    const NetworkDomain& dom = c.domains[d];
    std::vector<std::string> names;
    for (int n : c.NodesUnder(static_cast<int>(d))) names.push_back(c.nodes[n].name);
    out += fmt::format("    {} {} ({} nodes: {})\n", c.levels[dom.level].name, dom.name,
                       names.size(), CompressHostList(names));
  }
  if (c.rails.count > 0) {
    out += fmt::format("rails: {} (NIC i of every node on rail switch i{})\n", c.rails.count,
                       c.rails.scope_level.empty() ? "" : ", per " + c.rails.scope_level);
  }
  for (const NvlinkDomain& d : c.nvlink_domains) {
    int gpus = 0;
    std::vector<std::string> names;
    for (int n : d.nodes) {
      gpus += static_cast<int>(c.topology(n).gpus.size());
      names.push_back(c.nodes[n].name);
    }
    out += fmt::format("NVLink domain {}: {} nodes, {} GPUs ({})\n", d.name, d.nodes.size(), gpus,
                       CompressHostList(names));
  }
  return out;
}

}  // namespace toposched::topo
