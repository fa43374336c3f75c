// Writing Slurm's configuration for a cluster: gres.conf (GPU types, device files, Cores=, Links=),
// topology.conf (the switch tree or blocks) and node lines; the CPU layout Slurm counts cores in.
// The readers of the same files are in slurm.cc.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <map>
#include <numeric>
#include <set>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include "core/strings.h"
#include "topo/io/slurm.h"

namespace toposched::topo::io {

namespace {

bool SlurmSafeName(const std::string& s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.') {
      return false;
    }
  }
  return true;
}

// "NVIDIA H100 80GB HBM3" -> "h100", "H100-SXM5-80GB" -> "h100", "GB200" -> "gb200",
// "NVIDIA GeForce RTX 4090" -> "rtx4090". Empty when nothing usable.
std::string ShortGpuType(const std::string& model) {
  std::vector<std::string> toks;
  std::string cur;
  for (char ch : ToLower(model)) {
    if (std::isalnum(static_cast<unsigned char>(ch))) {
      cur += ch;
    } else if (!cur.empty()) {
      toks.push_back(cur);
      cur.clear();
    }
  }
  if (!cur.empty()) toks.push_back(cur);
  static const std::unordered_set<std::string> kVendor = {"nvidia", "tesla",    "geforce",
                                                          "amd",    "instinct", "radeon"};
  std::erase_if(toks, [](const std::string& t) { return kVendor.count(t) > 0; });
  auto has_alpha = [](const std::string& t) {
    return std::any_of(t.begin(), t.end(),
                       [](char c) { return std::isalpha(static_cast<unsigned char>(c)); });
  };
  auto has_digit = [](const std::string& t) {
    return std::any_of(t.begin(), t.end(),
                       [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
  };
  for (size_t i = 0; i < toks.size(); ++i) {
    if (has_alpha(toks[i]) && has_digit(toks[i])) return toks[i];
    if (!has_digit(toks[i]) && i + 1 < toks.size() && !has_alpha(toks[i + 1])) {
      return toks[i] + toks[i + 1];
    }
  }
  return toks.empty() ? "" : toks[0];
}

std::string FormatSpeed(double v) {
  if (v == std::floor(v) && v < 1e15) return std::to_string(static_cast<long long>(v));
  std::string s = std::to_string(v);
  while (!s.empty() && s.back() == '0') s.pop_back();
  return s;
}

// The gres.conf lines of one node (without NodeName=), one per GPU in index order.
std::string GresLinesFor(const NodeTopology& t) {
  const SlurmCpuLayout layout = InferSlurmCpuLayout(t);
  std::vector<int> order(t.gpus.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(),
            [&](int a, int b) { return t.gpus[a].index < t.gpus[b].index; });
  std::string type = ShortGpuType(t.gpu_model);
  std::string out;
  for (int a : order) {
    const Gpu& g = t.gpus[a];
    std::string gtype = g.model.empty() ? type : ShortGpuType(g.model);
    std::string line = " Name=gpu";
    if (!gtype.empty()) line += " Type=" + gtype;
    line += " File=/dev/nvidia" + std::to_string(g.index);
    std::vector<int> cpus;
    if (g.cpus) {
      cpus = *g.cpus;
    } else if (g.numa) {
      for (const NumaNode& nn : t.numa_nodes) {
        if (nn.id == *g.numa) cpus = nn.cpus;
      }
    }
    if (!cpus.empty()) line += " Cores=" + FormatIntList(SlurmCoresOf(layout, cpus));
    line += " Links=";
    for (size_t k = 0; k < order.size(); ++k) {
      if (k) line += ',';
      int b = order[k];
      if (b == a) {
        line += "-1";
      } else {
        const Path& p = t.gpu_gpu(a, b);
        line += std::to_string(p.cls == PathClass::kNV ? p.nvlinks : 0);
      }
    }
    out += line + "\n";
  }
  return out;
}

}  // namespace

SlurmCpuLayout InferSlurmCpuLayout(const NodeTopology& t) {
  SlurmCpuLayout out;
  std::vector<std::vector<int>> sets;
  for (const NumaNode& nn : t.numa_nodes) {
    if (!nn.cpus.empty()) sets.push_back(nn.cpus);
  }
  for (const Gpu& g : t.gpus) {
    if (g.cpus && !g.cpus->empty()) sets.push_back(*g.cpus);
  }
  int max_cpu = -1;
  for (const auto& s : sets) {
    for (int c : s) max_cpu = std::max(max_cpu, c);
  }
  if (max_cpu < 0) return out;
  out.cpus = max_cpu + 1;
  // Linux numbers the second hardware thread of core c as CPU c + N/2 (x86 with SMT). Seen in an
  // affinity list as two ranges shifted by N/2 ("0-11,24-35"): every set is closed under that
  // shift and some set is not a single range.
  const int half = out.cpus / 2;
  bool shifted = out.cpus % 2 == 0 && half > 0;
  bool split = false;
  for (const auto& s : sets) {
    std::unordered_set<int> in(s.begin(), s.end());
    for (int c : s) {
      if (!in.count((c + half) % out.cpus)) shifted = false;
    }
    std::vector<int> sorted(in.begin(), in.end());
    std::sort(sorted.begin(), sorted.end());
    if (sorted.back() - sorted.front() + 1 != static_cast<int>(sorted.size())) split = true;
  }
  out.threads_per_core = shifted && split ? 2 : 1;
  const int cores = out.cpus / out.threads_per_core;
  // Sockets: the distinct CPU sets of the NUMA nodes (or, without them, of the GPUs) that
  // partition the cores evenly.
  std::vector<std::vector<int>> socket_sets;
  for (const auto& s : sets) {
    std::vector<int> core_ids;
    for (int c : s) core_ids.push_back(c % cores);
    std::sort(core_ids.begin(), core_ids.end());
    core_ids.erase(std::unique(core_ids.begin(), core_ids.end()), core_ids.end());
    if (std::find(socket_sets.begin(), socket_sets.end(), core_ids) == socket_sets.end()) {
      socket_sets.push_back(std::move(core_ids));
    }
  }
  int covered = 0;
  bool disjoint_equal = true;
  for (const auto& s : socket_sets) {
    covered += static_cast<int>(s.size());
    if (s.size() != socket_sets[0].size()) disjoint_equal = false;
  }
  out.sockets = disjoint_equal && covered == cores && cores % socket_sets.size() == 0
                    ? static_cast<int>(socket_sets.size())
                    : 1;
  out.cores_per_socket = cores / out.sockets;
  return out;
}

std::vector<int> SlurmCoresOf(const SlurmCpuLayout& layout, const std::vector<int>& cpus) {
  std::vector<int> out;
  if (layout.cpus <= 0) return out;
  const int cores = layout.cpus / layout.threads_per_core;
  for (int c : cpus) out.push_back(c % cores);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

StatusOr<SlurmExport> ExportSlurm(const Cluster& cluster, const SlurmExportOptions& options) {
  Status valid = cluster.Validate();
  if (!valid.ok()) return valid.WithPrefix("cannot export cluster " + Quote(cluster.name));
  for (const ClusterNode& n : cluster.nodes) {
    if (!SlurmSafeName(n.name)) {
      return InvalidArgumentError("node name " + Quote(n.name) +
                                  " cannot be written to a Slurm config");
    }
  }
  SlurmExport out;

  // gres.conf: nodes grouped by identical lines (normally: by hardware profile).
  std::vector<std::string> profile_lines(cluster.profiles.size());
  for (size_t p = 0; p < cluster.profiles.size(); ++p) {
    profile_lines[p] = GresLinesFor(cluster.profiles[p].topology);
  }
  std::vector<std::pair<std::string, std::vector<std::string>>> groups;
  std::unordered_map<std::string, size_t> group_of;
  for (const ClusterNode& n : cluster.nodes) {
    const std::string& lines = profile_lines[n.profile];
    if (lines.empty()) continue;
    auto [it, fresh] = group_of.emplace(lines, groups.size());
    if (fresh) groups.push_back({lines, {}});
    groups[it->second].second.push_back(n.name);
  }
  out.gres_conf = "# gres.conf generated by toposched from cluster " + Quote(cluster.name) +
                  ": one line per GPU.\n"
                  "# Cores= lists the cores (Slurm's logical core ids) of the GPU's CPU "
                  "affinity; Links= its NVLink count to each GPU (-1 = self).\n"
                  "AutoDetect=off\n";
  out.nodes_conf = "# slurm.conf node lines generated by toposched from cluster " +
                   Quote(cluster.name) + ": add NodeAddr=/Port= as the site needs.\n";
  for (const ClusterNode& n : cluster.nodes) {
    const NodeTopology& t = cluster.profiles[n.profile].topology;
    const SlurmCpuLayout layout = InferSlurmCpuLayout(t);
    std::string line = "NodeName=" + n.name;
    if (layout.cpus > 0) {
      line += " CPUs=" + std::to_string(layout.cpus) +
              " Sockets=" + std::to_string(layout.sockets) +
              " CoresPerSocket=" + std::to_string(layout.cores_per_socket) +
              " ThreadsPerCore=" + std::to_string(layout.threads_per_core);
    }
    if (!t.gpus.empty()) {
      const std::string type = ShortGpuType(t.gpu_model);
      line += " Gres=gpu:" + (type.empty() ? "" : type + ":") + std::to_string(t.gpus.size());
    }
    out.nodes_conf += line + "\n";
  }
  for (const auto& [lines, hosts] : groups) {
    const std::string prefix = "NodeName=" + CompressHostList(hosts);
    for (const std::string& l : Split(lines, '\n', /*skip_empty=*/true)) {
      out.gres_conf += prefix + l + "\n";
    }
  }

  bool block =
      options.topology == SlurmExportOptions::Topology::kBlock ||
      (options.topology == SlurmExportOptions::Topology::kAuto && !cluster.nvlink_domains.empty());
  if (block) {
    if (cluster.nvlink_domains.empty()) {
      return InvalidArgumentError("cluster " + Quote(cluster.name) +
                                  " has no NVLink domains to write as topology/block blocks");
    }
    out.topology_kind = "block";
    out.topology_conf = "# topology.conf (topology/block) generated by toposched from cluster " +
                        Quote(cluster.name) + ": one block per NVLink domain.\n";
    size_t smallest = SIZE_MAX;
    std::vector<bool> placed(cluster.nodes.size(), false);
    for (const NvlinkDomain& nv : cluster.nvlink_domains) {
      if (!SlurmSafeName(nv.name)) {
        return InvalidArgumentError("NVLink domain name " + Quote(nv.name) +
                                    " cannot be written as a BlockName");
      }
      std::vector<int> ids = nv.nodes;
      std::sort(ids.begin(), ids.end());
      std::vector<std::string> hosts;
      for (int id : ids) {
        hosts.push_back(cluster.nodes[id].name);
        placed[id] = true;
      }
      out.topology_conf += "BlockName=" + nv.name + " Nodes=" + CompressHostList(hosts) + "\n";
      smallest = std::min(smallest, ids.size());
    }
    // Base size D, then the power-of-two aggregates that fit the number of blocks.
    std::string sizes;
    for (size_t k = 1; k <= cluster.nvlink_domains.size(); k *= 2) {
      sizes += (sizes.empty() ? "" : ",") + std::to_string(smallest * k);
    }
    out.topology_conf += "BlockSizes=" + sizes + "\n";
    std::vector<std::string> loose;
    for (size_t n = 0; n < cluster.nodes.size(); ++n) {
      if (!placed[n]) loose.push_back(cluster.nodes[n].name);
    }
    if (!loose.empty()) {
      out.topology_conf += "# not in any NVLink domain: " + CompressHostList(loose) + "\n";
    }
    return out;
  }

  out.topology_kind = "tree";
  out.topology_conf = "# topology.conf (topology/tree) generated by toposched from cluster " +
                      Quote(cluster.name) + ": one switch per network domain.\n";
  std::vector<int> order(cluster.domains.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    return cluster.domains[a].level > cluster.domains[b].level;
  });
  for (int d : order) {
    const NetworkDomain& dom = cluster.domains[d];
    if (!SlurmSafeName(dom.name)) {
      return InvalidArgumentError("network domain name " + Quote(dom.name) +
                                  " cannot be written as a SwitchName");
    }
    std::string line = "SwitchName=" + dom.name;
    if (!dom.children.empty()) {
      std::vector<std::string> names;
      for (int c : dom.children) names.push_back(cluster.domains[c].name);
      line += " Switches=" + CompressHostList(names);
    }
    if (!dom.nodes.empty()) {
      std::vector<int> ids = dom.nodes;
      std::sort(ids.begin(), ids.end());
      std::vector<std::string> hosts;
      for (int id : ids) hosts.push_back(cluster.nodes[id].name);
      line += " Nodes=" + CompressHostList(hosts);
    }
    const double speed = cluster.levels[dom.level].uplink_gbps;
    if (speed > 0) line += " LinkSpeed=" + FormatSpeed(speed);
    out.topology_conf += line + "\n";
  }
  std::vector<std::string> loose;
  for (const ClusterNode& n : cluster.nodes) {
    if (n.domain < 0) loose.push_back(n.name);
  }
  if (!loose.empty()) {
    out.topology_conf += "# not under any switch: " + CompressHostList(loose) + "\n";
  }
  return out;
}

}  // namespace toposched::topo::io
