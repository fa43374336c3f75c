#include "slurm/import.h"

#include "core/strings.h"
#include "slurm/scontrol.h"
#include "topo/io/import.h"
#include "topo/io/slurm.h"

namespace toposched::slurm {

Status ImportOptions::Validate() const {
  if (default_topology.empty() && per_node.empty()) {
    return InvalidArgumentError("give a topology file for the nodes (--topo or --node-topo)");
  }
  return OkStatus();
}

StatusOr<topo::Cluster> ImportCluster(CommandRunner& runner, const ImportOptions& options) {
  RETURN_IF_ERROR(options.Validate());
  ASSIGN_OR_RETURN(std::string node_text, RunChecked(runner, {"scontrol", "-o", "show", "node"}));
  ASSIGN_OR_RETURN(std::vector<SlurmNode> nodes, ParseNodes(node_text, "scontrol show node"));
  topo::Cluster c;
  c.name = options.cluster_name;
  std::map<std::string, int> profile_of_file;
  for (const SlurmNode& n : nodes) {
    auto it = options.per_node.find(n.name);
    const std::string file = it != options.per_node.end() ? it->second : options.default_topology;
    if (file.empty()) return InvalidArgumentError("node \"" + n.name + "\": no topology file");
    auto [pit, fresh] = profile_of_file.emplace(file, static_cast<int>(c.profiles.size()));
    if (fresh) {
      topo::HardwareProfile p;
      p.name = "p" + std::to_string(c.profiles.size());
      p.topology_file = file;
      auto t = topo::io::ImportTopologyFile(file, topo::io::TopoFormat::kAuto);
      if (!t.ok()) return t.status().WithPrefix("node \"" + n.name + "\"");
      p.topology = std::move(t).value();
      if (!options.gpu_model.empty()) {
        p.topology.gpu_model = options.gpu_model;
        for (topo::Gpu& g : p.topology.gpus) g.model = options.gpu_model;
      }
      c.profiles.push_back(std::move(p));
    }
    const topo::NodeTopology& t = c.profiles[pit->second].topology;
    if (n.gpus != static_cast<int>(t.gpus.size())) {
      return InvalidArgumentError("node \"" + n.name + "\": Slurm has " + std::to_string(n.gpus) +
                                  " GPUs (Gres=), its topology file " + file + " has " +
                                  std::to_string(t.gpus.size()));
    }
    topo::ClusterNode cn;
    cn.name = n.name;
    cn.profile = pit->second;
    if (!n.usable) cn.health = topo::Health::kUnhealthy;
    c.nodes.push_back(std::move(cn));
  }
  c.Finalize();
  // Without a topology plugin scontrol has no switches to show (and may say so with a non-zero
  // exit): the cluster then has no network levels. `show node` above already reached slurmctld.
  auto topo_run = runner.Run({"scontrol", "show", "topology"});
  if (!topo_run.ok()) return topo_run.status();
  const std::string topo_text = topo_run->exit_code == 0 ? topo_run->out : std::string();
  bool has_switches = false;
  for (const std::string& l : Split(topo_text, '\n', true)) {
    if (StartsWith(Trim(l), "SwitchName=")) has_switches = true;
  }
  if (has_switches) {
    ASSIGN_OR_RETURN(std::string conf,
                     TopologyConfFromShowTopology(topo_text, "scontrol show topology"));
    ASSIGN_OR_RETURN(topo::io::SlurmTopology st,
                     topo::io::ParseTopologyConf(conf, "scontrol show topology"));
    RETURN_IF_ERROR(topo::io::ApplySlurmTopology(st, c));
  }
  c.Finalize();
  RETURN_IF_ERROR(c.Validate());
  return c;
}

}  // namespace toposched::slurm
