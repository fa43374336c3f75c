#include "topo/io/slurm_cluster.h"

#include <cmath>
#include <set>
#include <unordered_map>

#include "core/strings.h"
#include "topo/io/import.h"

namespace toposched::topo::io {

namespace {

std::string LevelList(const std::vector<NetworkLevel>& levels) {
  std::string s;
  for (const NetworkLevel& l : levels) s += (s.empty() ? "" : ", ") + l.name;
  return s;
}

// Per node of `topo`, the topology file it uses: the default, then each override in order.
StatusOr<std::vector<std::string>> FilePerNode(const SlurmTopology& topo,
                                               const SlurmClusterOptions& o) {
  std::vector<std::string> file(topo.node_names.size(), o.default_topology);
  std::unordered_map<std::string, size_t> index;
  for (size_t n = 0; n < topo.node_names.size(); ++n) index.emplace(topo.node_names[n], n);
  for (const auto& [hosts, path] : o.node_topology) {
    ASSIGN_OR_RETURN(std::vector<std::string> names, ExpandHostList(hosts));
    for (const std::string& name : names) {
      auto it = index.find(name);
      if (it == index.end()) {
        return InvalidArgumentError("node topology for " + Quote(hosts) + ": node " + Quote(name) +
                                    " is not in the Slurm topology");
      }
      file[it->second] = path;
    }
  }
  for (size_t n = 0; n < file.size(); ++n) {
    if (file[n].empty()) {
      return InvalidArgumentError("node " + Quote(topo.node_names[n]) +
                                  " has no topology file: give a default or one for its host list");
    }
  }
  return file;
}

Status RenameLevels(const SlurmClusterOptions& o, Cluster& c) {
  if (o.level_names.empty()) return OkStatus();
  if (o.level_names.size() != c.levels.size()) {
    return InvalidArgumentError(
        "level names: " + std::to_string(o.level_names.size()) + " given, the Slurm topology has " +
        std::to_string(c.levels.size()) + " levels (" + LevelList(c.levels) + ", top first)");
  }
  for (size_t l = 0; l < c.levels.size(); ++l) c.levels[l].name = o.level_names[l];
  return OkStatus();
}

Status SetOversubscription(const SlurmClusterOptions& o, Cluster& c) {
  for (const auto& [name, ratio] : o.oversubscription) {
    NetworkLevel* level = nullptr;
    for (NetworkLevel& l : c.levels) {
      if (l.name == name) level = &l;
    }
    if (!level) {
      return InvalidArgumentError("oversubscription for unknown level " + Quote(name) +
                                  " (levels: " + LevelList(c.levels) + ")");
    }
    level->oversubscription = ratio;
  }
  return OkStatus();
}

}  // namespace

Status SlurmClusterOptions::Validate() const {
  if (cluster_name.empty()) return InvalidArgumentError("cluster name is empty");
  if (default_topology.empty() && node_topology.empty()) {
    return InvalidArgumentError(
        "no node topology file: give one for every node or one per host list");
  }
  for (const auto& [hosts, path] : node_topology) {
    if (path.empty())
      return InvalidArgumentError("node topology for " + Quote(hosts) + ": no file");
    auto names = ExpandHostList(hosts);
    if (!names.ok()) return names.status().WithPrefix("node topology host list " + Quote(hosts));
    if (names->empty()) return InvalidArgumentError("node topology host list is empty");
  }
  std::set<std::string> seen;
  for (const std::string& name : level_names) {
    if (name.empty()) return InvalidArgumentError("level names: an empty name");
    if (!seen.insert(name).second) {
      return InvalidArgumentError("level names: " + Quote(name) + " given twice");
    }
  }
  for (const auto& [name, ratio] : oversubscription) {
    if (!std::isfinite(ratio) || ratio <= 0) {
      return InvalidArgumentError("oversubscription of level " + Quote(name) +
                                  ": must be a number > 0, got " + std::to_string(ratio));
    }
  }
  return OkStatus();
}

StatusOr<Cluster> ClusterFromSlurmTopology(const SlurmTopology& topo,
                                           const SlurmClusterOptions& options) {
  RETURN_IF_ERROR(options.Validate());
  if (topo.domains.empty()) {
    return InvalidArgumentError(
        "the Slurm topology has no SwitchName= or BlockName= lines: no network to import");
  }
  ASSIGN_OR_RETURN(std::vector<std::string> files, FilePerNode(topo, options));
  Cluster c;
  c.name = options.cluster_name;
  std::unordered_map<std::string, int> profile_of_file;
  for (size_t n = 0; n < files.size(); ++n) {
    auto [it, fresh] = profile_of_file.emplace(files[n], static_cast<int>(c.profiles.size()));
    if (fresh) {
      HardwareProfile p;
      p.name = "p" + std::to_string(c.profiles.size());
      p.topology_file = files[n];
      auto t = ImportTopologyFile(files[n], TopoFormat::kAuto);
      if (!t.ok()) return t.status().WithPrefix("node " + Quote(topo.node_names[n]));
      p.topology = std::move(t).value();
      c.profiles.push_back(std::move(p));
    }
    ClusterNode node;
    node.name = topo.node_names[n];
    node.profile = it->second;
    c.nodes.push_back(std::move(node));
  }
  c.Finalize();
  RETURN_IF_ERROR(ApplySlurmTopology(topo, c));
  RETURN_IF_ERROR(RenameLevels(options, c));
  RETURN_IF_ERROR(SetOversubscription(options, c));
  c.Finalize();
  RETURN_IF_ERROR(c.Validate());
  return c;
}

StatusOr<Cluster> ReadSlurmTopologyCluster(const std::string& conf_path,
                                           const SlurmClusterOptions& options) {
  RETURN_IF_ERROR(options.Validate());
  ASSIGN_OR_RETURN(std::string text, ReadFileToString(conf_path, kMaxTopologyConfBytes));
  ASSIGN_OR_RETURN(SlurmTopology topo, ParseTopologyConf(text, conf_path));
  return ClusterFromSlurmTopology(topo, options);
}

}  // namespace toposched::topo::io
