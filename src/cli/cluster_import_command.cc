#include "cli/cluster_import_command.h"

#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "cli/atomic_file.h"
#include "cli/commands.h"
#include "cli/flags.h"
#include "core/strings.h"
#include "topo/io/cluster_yaml.h"
#include "topo/io/kube_cluster.h"
#include "topo/io/slurm_cluster.h"

namespace toposched::cli {

namespace {

namespace fs = std::filesystem;

struct ImportArgs {
  std::string slurm_topology;
  std::string kube_nodes;
  std::vector<std::string> product_topo;  // PRODUCT=FILE
  std::vector<std::string> level_labels;  // label keys, top first
  double nvlink_gbps = 0;
  std::string topo;
  std::vector<std::string> node_topo;         // HOSTS=FILE
  std::vector<std::string> oversubscription;  // LEVEL=R
  std::string level_names;                    // comma-separated, top first
  std::string name;
  std::string out;
};

// --oversubscription LEVEL=R ... as level → ratio.
StatusOr<std::map<std::string, double>> Oversubscription(const ImportArgs& a) {
  std::map<std::string, double> out;
  for (const std::string& arg : a.oversubscription) {
    ASSIGN_OR_RETURN(auto kv, SplitAssignment("--oversubscription", arg, "LEVEL=RATIO"));
    auto ratio = ParseDouble(kv.second);
    if (!ratio.ok()) {
      return InvalidArgumentError("--oversubscription \"" + arg + "\": expected a number after =");
    }
    if (!out.emplace(kv.first, *ratio).second) {
      return InvalidArgumentError("--oversubscription: level \"" + kv.first + "\" given twice");
    }
  }
  return out;
}

StatusOr<topo::io::SlurmClusterOptions> OptionsOf(const ImportArgs& a) {
  topo::io::SlurmClusterOptions o;
  o.cluster_name = a.name.empty() ? fs::path(a.out).stem().string() : a.name;
  o.default_topology = a.topo;
  for (const std::string& arg : a.node_topo) {
    ASSIGN_OR_RETURN(auto kv, SplitAssignment("--node-topo", arg, "HOSTS=FILE"));
    o.node_topology.push_back(std::move(kv));
  }
  ASSIGN_OR_RETURN(o.oversubscription, Oversubscription(a));
  if (!a.level_names.empty()) o.level_names = Split(a.level_names, ',');
  RETURN_IF_ERROR(o.Validate());
  return o;
}

// Profile topology paths as given are relative to the working directory; the spec reads them
// relative to its own directory. A file in another top-level directory than the spec (spec in
// /tmp, files in /work) is written as an absolute path rather than "../../work/...".
void RelativeToSpec(const fs::path& out, topo::Cluster& c) {
  const fs::path spec_dir = fs::absolute(out).parent_path().lexically_normal();
  auto top = [](const fs::path& p) {
    auto it = p.begin();
    return it == p.end() || ++it == p.end() ? fs::path() : *it;
  };
  for (topo::HardwareProfile& p : c.profiles) {
    const fs::path file = fs::absolute(p.topology_file).lexically_normal();
    const fs::path rel = file.lexically_relative(spec_dir);
    const bool near = !rel.empty() && top(file) == top(spec_dir);
    p.topology_file = near ? rel.string() : file.string();
  }
}

std::string LevelSummary(const topo::Cluster& c) {
  std::string s;
  for (size_t l = 0; l < c.levels.size(); ++l) {
    int count = 0;
    for (const topo::NetworkDomain& d : c.domains) count += d.level == static_cast<int>(l);
    s += (s.empty() ? "" : ", ") + c.levels[l].name + " " + std::to_string(count);
  }
  return s;
}

StatusOr<topo::io::KubeClusterOptions> KubeOptionsOf(const ImportArgs& a) {
  if (!a.node_topo.empty() || !a.level_names.empty()) {
    return InvalidArgumentError(
        "--node-topo and --level-names are for --slurm-topology; with --kube-nodes give "
        "--product-topo and --level-label");
  }
  topo::io::KubeClusterOptions o;
  o.cluster_name = a.name.empty() ? fs::path(a.out).stem().string() : a.name;
  o.default_topology = a.topo;
  for (const std::string& arg : a.product_topo) {
    ASSIGN_OR_RETURN(auto kv, SplitAssignment("--product-topo", arg, "PRODUCT=FILE"));
    if (!o.product_topology.emplace(kv.first, kv.second).second) {
      return InvalidArgumentError("--product-topo: product \"" + kv.first + "\" given twice");
    }
  }
  if (!a.level_labels.empty()) o.level_labels = a.level_labels;
  o.nvlink_gbps = a.nvlink_gbps;
  ASSIGN_OR_RETURN(o.oversubscription, Oversubscription(a));
  RETURN_IF_ERROR(o.Validate());
  return o;
}

// The cluster and the spec's header comment, from whichever source the flags name.
StatusOr<std::pair<topo::Cluster, std::string>> Import(const ImportArgs& a) {
  if (a.slurm_topology.empty() == a.kube_nodes.empty()) {
    return InvalidArgumentError("give exactly one of --slurm-topology and --kube-nodes");
  }
  if (!a.kube_nodes.empty()) {
    ASSIGN_OR_RETURN(topo::io::KubeClusterOptions o, KubeOptionsOf(a));
    ASSIGN_OR_RETURN(topo::io::KubeImport k, topo::io::ReadKubeNodesCluster(a.kube_nodes, o));
    if (!k.skipped.empty()) {
      std::printf("skipped %zu nodes without GPUs (first: %s)\n", k.skipped.size(),
                  k.skipped[0].c_str());
    }
    return std::make_pair(std::move(k.cluster),
                          "Imported by `toposched cluster import` from the Kubernetes nodes " +
                              a.kube_nodes +
                              ".\nLevels top first (tier labels); oversubscription 1 unless "
                              "given.");
  }
  ASSIGN_OR_RETURN(topo::io::SlurmClusterOptions o, OptionsOf(a));
  ASSIGN_OR_RETURN(topo::Cluster c, topo::io::ReadSlurmTopologyCluster(a.slurm_topology, o));
  return std::make_pair(std::move(c),
                        "Imported by `toposched cluster import` from the Slurm "
                        "topology " +
                            a.slurm_topology +
                            ".\nLevels top first; oversubscription 1 unless given.");
}

int RunImport(const ImportArgs& a) {
  auto imported = Import(a);
  if (!imported.ok()) return Fail(imported.status());
  topo::Cluster* c = &imported->first;
  RelativeToSpec(a.out, *c);
  const std::string& header = imported->second;
  auto yaml = topo::io::FormatClusterYaml(*c, header);
  if (!yaml.ok()) return Fail(yaml.status());
  // Read back before writing: what lands in --out always passes `cluster check`.
  const fs::path out(a.out);
  auto again = topo::io::ParseClusterYaml(*yaml, a.out, fs::absolute(out).parent_path().string());
  if (!again.ok()) return Fail(again.status().WithPrefix("imported spec does not read back"));
  if (Status s = WriteFileAtomically(out, *yaml); !s.ok()) return Fail(s);
  std::printf("wrote %s: %zu nodes, %d GPUs, %zu profiles; domains per level: %s\n", a.out.c_str(),
              c->nodes.size(), c->TotalGpus(), c->profiles.size(), LevelSummary(*c).c_str());
  return 0;
}

}  // namespace

void AddClusterImportCommand(CLI::App& cluster, int& rc) {
  auto a = std::make_shared<ImportArgs>();
  CLI::App* imp = cluster.add_subcommand(
      "import",
      "A cluster spec from a Slurm topology.conf or a Kubernetes node list, and node topology "
      "files");
  imp->add_option("--slurm-topology", a->slurm_topology,
                  "topology.conf (topology/tree or topology/block)");
  imp->add_option("--kube-nodes", a->kube_nodes,
                  "Kubernetes node list (kubectl get nodes -o json): GPU nodes by GPU Feature "
                  "Discovery labels, tiers by network.topology.kubernetes.io labels");
  imp->add_option("--product-topo", a->product_topo,
                  "PRODUCT=FILE: node topology for a nvidia.com/gpu.product value (repeatable)");
  imp->add_option("--level-label", a->level_labels,
                  "label key of a network tier, top first (repeatable; default "
                  "network.topology.kubernetes.io/datacenter, spine, block)");
  imp->add_option("--nvlink-gbps", a->nvlink_gbps,
                  "per-GPU NVLink bandwidth (GB/s) of multi-node NVLink domains "
                  "(nvidia.com/gpu.clique)");
  imp->add_option("--topo", a->topo,
                  "node topology (nvidia-smi topo -m, hwloc XML, NCCL XML, JSON) for every node "
                  "(every GPU node without a --product-topo)");
  imp->add_option("--node-topo", a->node_topo,
                  "HOSTS=FILE: node topology for a Slurm host list (repeatable; later wins)");
  imp->add_option("--oversubscription", a->oversubscription,
                  "LEVEL=RATIO: a level's downlink/uplink ratio (repeatable), e.g. switch-1=2");
  imp->add_option("--level-names", a->level_names,
                  "names for the levels, top first (default switch-0,switch-1,... or block)");
  imp->add_option("--name", a->name, "cluster name (default: --out's file name)");
  imp->add_option("--out", a->out, "cluster spec to write (YAML)")->required();
  imp->callback([a, &rc] { rc = RunImport(*a); });
}

}  // namespace toposched::cli
