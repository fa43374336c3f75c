#include "cli/generate_command.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <iterator>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "cli/atomic_file.h"
#include "cli/commands.h"
#include "job/job_spec.h"
#include "placer/gang.h"
#include "state/cluster_state.h"
#include "topo/io/cluster_yaml.h"

namespace toposched::cli {

namespace {

// A named node type. The synthetic description is built for the requested GPU count G, so
// `--gpus-per-node` shapes every profile but a rack-scale one: NVSwitch profiles get one NIC per
// GPU (DGX/HGX style), the PCIe profile one NIC per 4 GPUs. A rack-scale profile fixes its node
// (a compute tray) and joins `rack_nodes` trays into one NVLink domain (a rack).
struct ProfileDef {
  const char* name;
  const char* gpu_model;
  int gpu_memory_gib;
  int nvswitch_links;  // 0 = PCIe only
  const char* synthetic_model;
  int nic_gbps;
  const char* link_layer;
  int fixed_gpus_per_node = 0;   // 0 = any (--gpus-per-node)
  int rack_nodes = 0;            // 0 = no NVLink domain beyond the node
  int rack_gpu_nvlink_gbps = 0;  // per-GPU NVLink bandwidth into the rack fabric, GB/s one way
};

// GB200 NVL72 (DGX GB200 User Guide, "Hardware", Rack Configuration and Compute Trays table,
// docs.nvidia.com/dgx/dgxgb200-user-guide/hardware.html): a rack is 18 x 1RU compute trays of
// 2 Grace CPUs and 4 Blackwell GPUs, joined by 9 NVLink switch trays into one 72-GPU NVLink
// domain; each tray's cluster network is 4 x ConnectX-7 single-port 400G OSFP NICs (InfiniBand),
// one per GPU. NVLink 5: 18 links per GPU, 1.8 TB/s bidirectional per GPU (NVIDIA GB200 NVL72
// datasheet, as data/hardware/cost.json cites it), so 900 GB/s per direction into the rack fabric
// (data/hardware/links.json: 18 x 50 GB/s). 186 GB HBM3e per GPU: the GB200-186GB system
// descriptions submitted to MLPerf (accelerator_memory_capacity "186 GB"), as
// data/clusters/gb200-nvl72.yaml has it.
constexpr int kNvl72TraysPerRack = 18;
constexpr int kNvl72GpusPerTray = 4;
constexpr int kNvl72GpuNvlinkGbps = 900;

constexpr ProfileDef kProfiles[] = {
    {"h100", "H100-SXM5-80GB", 80, 18, "H100", 400, "ib"},
    {"h200", "H200-SXM-141GB", 141, 18, "H200", 400, "ib"},
    {"b200", "B200-SXM-180GB", 180, 18, "B200", 400, "ib"},
    {"a100", "A100-SXM4-80GB", 80, 12, "A100", 200, "ib"},
    {"pcie", "L40S-48GB", 48, 0, "L40S", 200, "roce"},
    {"gb200-nvl72", "GB200", 186, 18, "GB200", 400, "ib", kNvl72GpusPerTray, kNvl72TraysPerRack,
     kNvl72GpuNvlinkGbps},
};

const ProfileDef* FindProfile(const std::string& name) {
  for (const ProfileDef& p : kProfiles) {
    if (name == p.name) return &p;
  }
  return nullptr;
}

std::string ProfileNames() {
  std::string s;
  for (const ProfileDef& p : kProfiles) s += (s.empty() ? "" : ", ") + std::string(p.name);
  return s;
}

int NicsPerNode(const ProfileDef& p, int gpus) {
  return p.nvswitch_links > 0 ? gpus : std::max(1, gpus / 4);
}

std::string SyntheticDescription(const ProfileDef& p, int g) {
  std::string d = "gpu:" + std::to_string(g);
  if (p.nvswitch_links > 0) {
    d += " nvswitch:" + std::to_string(p.nvswitch_links);
  } else {
    // Two sockets and up to four PCIe switches (a multiple of the sockets), as on 8-GPU boxes.
    const int sockets = g >= 2 ? 2 : 1;
    const int switches = g >= 8 ? 4 : sockets;
    d += " pcie sockets:" + std::to_string(sockets) + " switches:" + std::to_string(switches);
  }
  d += " model:" + std::string(p.synthetic_model) + " nics:" + std::to_string(NicsPerNode(p, g)) +
       " nic_gbps:" + std::to_string(p.nic_gbps) + " linklayer:" + p.link_layer;
  return d;
}

std::string Padded(int v, int width) {
  std::string s = std::to_string(v);
  return std::string(static_cast<size_t>(std::max(0, width - static_cast<int>(s.size()))), '0') + s;
}

int CeilDiv(int a, int b) { return (a + b - 1) / b; }

// Uniform integer in [0, n), n ≥ 1: rejection sampling on the raw 64-bit output, so the result
// is the same on every standard library (std distributions are not).
uint64_t UniformBelow(std::mt19937_64& rng, uint64_t n) {
  const uint64_t limit = UINT64_MAX - UINT64_MAX % n;
  uint64_t x = rng();
  while (x >= limit) x = rng();
  return x % n;
}

struct SizeClass {
  int gpus;
  int weight;  // percent
};
// Most jobs are small (notebooks, evaluation, fine-tunes on one node); a few are multi-node
// training runs. See GenerateStateJson in the header.
constexpr SizeClass kJobMix[] = {{1, 30}, {2, 20}, {4, 15}, {8, 20}, {16, 7}, {32, 5}, {64, 3}};

job::JobSpec MakeJob(int64_t id, int gpus, int gpus_per_node) {
  job::JobSpec j;
  j.name = "job-" + Padded(static_cast<int>(id), 6);
  if (gpus <= gpus_per_node) {
    j.replicas = 1;
    j.gpus_per_replica = gpus;
    j.layout.tp = gpus;
  } else {
    j.replicas = gpus / gpus_per_node;
    j.gpus_per_replica = gpus_per_node;
    j.layout.tp = gpus_per_node;
  }
  j.layout.dp = j.replicas;
  j.model_params = gpus <= 2 ? 1e9 : gpus <= 8 ? 8e9 : 70e9;
  return j;
}

struct CliArgs {
  GenerateOptions opts;
  std::string out_dir;
  bool has_occupancy = false;
  bool has_gpus_per_node = false;
};

int RunGenerate(const CliArgs& a) {
  GenerateOptions o = a.opts;
  if (!a.has_occupancy) o.occupancy = -1;
  // A rack-scale profile's node is fixed: its GPU count is the default there.
  const ProfileDef* prof = FindProfile(o.profile);
  if (!a.has_gpus_per_node && prof != nullptr && prof->fixed_gpus_per_node > 0) {
    o.gpus_per_node = prof->fixed_gpus_per_node;
  }
  if (Status s = o.Validate(); !s.ok()) return Fail(s);
  auto yaml = GenerateClusterYaml(o);
  if (!yaml.ok()) return Fail(yaml.status());
  auto cluster_or = topo::io::ParseClusterYaml(*yaml, "cluster.yaml", a.out_dir);
  if (!cluster_or.ok()) return Fail(cluster_or.status().WithPrefix("generated spec"));
  topo::Cluster cluster = std::move(cluster_or).value();
  cluster.Finalize();
  std::string state;
  if (o.occupancy >= 0) {
    auto s = GenerateStateJson(cluster, o);
    if (!s.ok()) return Fail(s.status());
    state = std::move(s).value();
  }

  std::error_code ec;
  std::filesystem::create_directories(a.out_dir, ec);
  if (ec) {
    return Fail(InvalidArgumentError(a.out_dir + ": cannot create directory: " + ec.message()));
  }
  const std::filesystem::path dir(a.out_dir);
  if (Status s = WriteFileAtomically(dir / "cluster.yaml", *yaml); !s.ok()) return Fail(s);
  std::printf("wrote %s: %d nodes x %d GPUs (%s), %zu network domains\n",
              (dir / "cluster.yaml").string().c_str(), o.nodes, o.gpus_per_node, o.profile.c_str(),
              cluster.domains.size());
  if (!cluster.nvlink_domains.empty()) {
    std::printf("  %zu NVLink domains of %d nodes\n", cluster.nvlink_domains.size(),
                prof->rack_nodes);
  }
  if (o.occupancy >= 0) {
    if (Status s = WriteFileAtomically(dir / "state.json", state); !s.ok()) return Fail(s);
    auto st = sched::ReadClusterStateJson(state, cluster, "state.json");
    if (!st.ok()) return Fail(st.status().WithPrefix("generated state"));
    const sched::Capacity cap = st->ClusterCapacity();
    const int used = cap.total_gpus - cap.free_gpus;
    std::printf("wrote %s: %zu jobs on %d of %d GPUs (%.1f%%), %d nodes fully free\n",
                (dir / "state.json").string().c_str(), st->AllocationCount(), used, cap.total_gpus,
                cap.total_gpus > 0 ? 100.0 * used / cap.total_gpus : 0.0, cap.fully_free_nodes);
  }
  return 0;
}

}  // namespace

Status GenerateOptions::Validate() const {
  if (nodes < 1) return InvalidArgumentError("--nodes: must be >= 1, got " + std::to_string(nodes));
  if (nodes > 100000) {
    return InvalidArgumentError("--nodes: at most 100000, got " + std::to_string(nodes));
  }
  if (gpus_per_node < 1 || gpus_per_node > 64) {
    return InvalidArgumentError("--gpus-per-node: must be 1..64, got " +
                                std::to_string(gpus_per_node));
  }
  if (nodes_per_leaf < 1) {
    return InvalidArgumentError("--nodes-per-leaf: must be >= 1, got " +
                                std::to_string(nodes_per_leaf));
  }
  if (leaves_per_spine < 1) {
    return InvalidArgumentError("--leaves-per-spine: must be >= 1, got " +
                                std::to_string(leaves_per_spine));
  }
  if (!FindProfile(profile)) {
    return InvalidArgumentError("--profile: unknown profile \"" + profile +
                                "\" (profiles: " + ProfileNames() + ")");
  }
  const ProfileDef& p = *FindProfile(profile);
  if (p.fixed_gpus_per_node > 0 && gpus_per_node != p.fixed_gpus_per_node) {
    return InvalidArgumentError("--gpus-per-node: the " + profile + " profile's node has " +
                                std::to_string(p.fixed_gpus_per_node) + " GPUs, got " +
                                std::to_string(gpus_per_node));
  }
  if (p.rack_nodes > 0 && nodes % p.rack_nodes != 0) {
    return InvalidArgumentError("--nodes: the " + profile + " profile has whole racks of " +
                                std::to_string(p.rack_nodes) + " nodes, got " +
                                std::to_string(nodes) + " (not a multiple of " +
                                std::to_string(p.rack_nodes) + ")");
  }
  if (p.rack_nodes > 0 && nodes_per_leaf % p.rack_nodes != 0) {
    return InvalidArgumentError("--nodes-per-leaf: the " + profile +
                                " profile puts whole racks under a leaf (a multiple of " +
                                std::to_string(p.rack_nodes) + " nodes), got " +
                                std::to_string(nodes_per_leaf));
  }
  if (occupancy >= 1 || std::isnan(occupancy)) {
    return InvalidArgumentError("--occupancy: must be in [0, 1), got " + std::to_string(occupancy));
  }
  return OkStatus();
}

StatusOr<std::string> GenerateClusterYaml(const GenerateOptions& o) {
  RETURN_IF_ERROR(o.Validate());
  const ProfileDef& p = *FindProfile(o.profile);
  const int g = o.gpus_per_node;
  const int nics = NicsPerNode(p, g);
  const int leaves = CeilDiv(o.nodes, o.nodes_per_leaf);
  const int spines = CeilDiv(leaves, o.leaves_per_spine);
  const bool zone = spines > 1;
  // Rail-optimised fat tree: a leaf is non-blocking (uplink = its nodes' NIC bandwidth); spines
  // under a zone are tapered 2:1, as multi-pod fabrics usually are.
  const int64_t leaf_uplink = int64_t{std::min(o.nodes_per_leaf, o.nodes)} * nics * p.nic_gbps;
  const int64_t spine_uplink = int64_t{o.leaves_per_spine} * leaf_uplink / 2;
  const int width = std::max<int>(4, static_cast<int>(std::to_string(o.nodes).size()));
  const std::string hosts = o.nodes == 1
                                ? "node" + Padded(1, width)
                                : "node[" + Padded(1, width) + "-" + Padded(o.nodes, width) + "]";

  std::ostringstream y;
  y << "# Generated by: toposched cluster generate --nodes " << o.nodes << " --gpus-per-node " << g
    << "\n#   --nodes-per-leaf " << o.nodes_per_leaf << " --leaves-per-spine " << o.leaves_per_spine
    << " --profile " << p.name << "\n"
    << "# " << o.nodes << " nodes x " << g << " " << p.gpu_model << " ("
    << (p.nvswitch_links > 0 ? "NVSwitch NV" + std::to_string(p.nvswitch_links) : "PCIe only")
    << ", " << nics << " x " << p.nic_gbps << " Gb/s " << p.link_layer << "),\n# " << leaves
    << " leaf switch" << (leaves == 1 ? "" : "es") << " of " << o.nodes_per_leaf << " nodes, "
    << spines << " spine" << (spines == 1 ? "" : "s") << " of " << o.leaves_per_spine << " leaves"
    << (zone ? " under one zone" : "") << ".\n";
  if (p.rack_nodes > 0) {
    y << "# " << o.nodes / p.rack_nodes << " rack" << (o.nodes / p.rack_nodes == 1 ? "" : "s")
      << " of " << p.rack_nodes << " nodes, each rack one NVLink domain of " << p.rack_nodes * g
      << " GPUs (" << p.rack_gpu_nvlink_gbps << " GB/s per GPU per direction).\n";
  }
  y << "version: 1\n"
    << "name: gen-" << p.name << "-" << o.nodes << "x" << g << "\n\n"
    << "profiles:\n"
    << "  - name: " << p.name << "\n"
    << "    synthetic: \"" << SyntheticDescription(p, g) << "\"\n"
    << "    gpu_model: " << p.gpu_model << "\n"
    << "    gpu_memory_gib: " << p.gpu_memory_gib << "\n\n"
    << "nodes:\n"
    << "  - hosts: \"" << hosts << "\"\n"
    << "    profile: " << p.name << "\n\n"
    << "network:\n"
    << "  levels:\n";
  if (zone) {
    y << "    - {name: zone, generate: {count: 1, prefix: zone}}\n"
      << "    # A spine takes " << o.leaves_per_spine << " leaves x " << leaf_uplink
      << " Gb/s down and gives half up (2:1).\n"
      << "    - {name: spine, uplink_gbps: " << spine_uplink
      << ", oversubscription: 2, generate: {size: " << o.leaves_per_spine << ", prefix: spine}}\n";
  } else {
    y << "    - {name: spine, generate: {size: " << o.leaves_per_spine << ", prefix: spine}}\n";
  }
  y << "    # A leaf takes " << std::min(o.nodes_per_leaf, o.nodes) << " nodes x " << nics << " x "
    << p.nic_gbps << " Gb/s down and gives as much up (non-blocking).\n"
    << "    - {name: leaf, uplink_gbps: " << leaf_uplink
    << ", oversubscription: 1, generate: {size: " << o.nodes_per_leaf << ", prefix: leaf}}\n\n"
    << "# NIC i of every node goes to rail switch i of its spine's rail group.\n"
    << "rails: {count: " << nics << ", scope: spine}\n";
  if (p.rack_nodes > 0) {
    y << "\n# One NVLink domain per rack: nodes in declaration order, " << p.rack_nodes
      << " per rack.\n"
      << "nvlink_domains:\n";
    for (int r = 0; r < o.nodes / p.rack_nodes; ++r) {
      y << "  - {name: nvl" << p.rack_nodes * g << "-rack" << r << ", nodes: \"node["
        << Padded(r * p.rack_nodes + 1, width) << "-" << Padded((r + 1) * p.rack_nodes, width)
        << "]\", gpu_bandwidth_gbps: " << p.rack_gpu_nvlink_gbps << "}\n";
    }
  }
  return y.str();
}

StatusOr<std::string> GenerateStateJson(const topo::Cluster& cluster, const GenerateOptions& o) {
  RETURN_IF_ERROR(o.Validate());
  if (o.occupancy < 0) return InvalidArgumentError("--occupancy: not given");
  ASSIGN_OR_RETURN(sched::ClusterState state, sched::ClusterState::Create(cluster));
  ASSIGN_OR_RETURN(std::unique_ptr<sched::GangPlacer> placer, sched::GangPlacer::Create(cluster));
  const int total = cluster.TotalGpus();
  const int target = static_cast<int>(std::floor(o.occupancy * total));
  const int g = o.gpus_per_node;

  constexpr size_t kClasses = std::size(kJobMix);
  std::vector<int> gpus(kClasses);
  std::vector<bool> live(kClasses);
  for (size_t i = 0; i < kClasses; ++i) {
    const int s = kJobMix[i].gpus;
    gpus[i] = s <= g ? s : CeilDiv(s, g) * g;
    live[i] = gpus[i] <= total;
  }
  std::mt19937_64 rng(o.seed);
  int allocated = 0;
  int64_t next_id = 1;
  while (true) {
    const int remaining = target - allocated;
    uint64_t weight_sum = 0;
    for (size_t i = 0; i < kClasses; ++i) {
      if (live[i] && gpus[i] <= remaining) weight_sum += kJobMix[i].weight;
    }
    if (weight_sum == 0) break;
    uint64_t r = UniformBelow(rng, weight_sum);
    size_t pick = 0;
    for (size_t i = 0; i < kClasses; ++i) {
      if (!live[i] || gpus[i] > remaining) continue;
      if (r < static_cast<uint64_t>(kJobMix[i].weight)) {
        pick = i;
        break;
      }
      r -= kJobMix[i].weight;
    }
    job::JobSpec j = MakeJob(next_id, gpus[pick], g);
    RETURN_IF_ERROR(j.Normalize());
    sched::Verdict v = placer->Place(state, j);
    if (!v.fit()) {
      // The state only fills up, so a size that does not fit now never will.
      live[pick] = false;
      continue;
    }
    RETURN_IF_ERROR(state.Allocate(sched::AllocId::Job(next_id++), v.placement->parts));
    allocated += gpus[pick];
  }
  return sched::WriteClusterStateJson(state);
}

void AddClusterGenerateCommand(CLI::App& cluster, int& rc) {
  auto a = std::make_shared<CliArgs>();
  CLI::App* cmd = cluster.add_subcommand(
      "generate", "Write a synthetic cluster spec (and optionally a state with running jobs)");
  cmd->footer(
      "Profiles (the node's synthetic description is built for --gpus-per-node G):\n"
      "  h100  \"gpu:G nvswitch:18 model:H100 nics:G nic_gbps:400\" (H100-SXM5-80GB, IB)\n"
      "  h200  as h100 with H200-SXM-141GB;  b200  as h100 with B200-SXM-180GB\n"
      "  a100  \"gpu:G nvswitch:12 model:A100 nics:G nic_gbps:200\" (A100-SXM4-80GB, IB)\n"
      "  pcie  \"gpu:G pcie sockets:2 switches:4 nics:G/4 ...\" (L40S, 200 Gb/s RoCE)\n"
      "  gb200-nvl72  GB200 compute trays \"gpu:4 nvswitch:18 model:GB200 nics:4 nic_gbps:400\"\n"
      "        (4 GPUs per node, the default), 18 trays per rack as one NVLink domain\n"
      "        (900 GB/s per GPU): --nodes and --nodes-per-leaf whole racks (multiples of 18)\n"
      "Network: leaves of --nodes-per-leaf nodes (1:1), spines of --leaves-per-spine leaves\n"
      "(2:1 to a top `zone` level, added when there is more than one spine); rails = NICs per\n"
      "node, scoped per spine. Nodes are named node0001, node0002, ...\n"
      "--occupancy F writes DIR/state.json: jobs of 1, 2, 4, 8 GPUs (30/20/15/20%) and 16, 32,\n"
      "64 GPUs (7/5/3%; whole nodes) placed by the gang scheduler until floor(F x GPUs) are\n"
      "taken (overshooting draws are redrawn among smaller sizes). Same arguments and --seed\n"
      "give byte-identical files.");
  cmd->add_option("--nodes", a->opts.nodes, "number of nodes (>= 1)")->required();
  cmd->add_option("--gpus-per-node", a->opts.gpus_per_node, "GPUs per node, 1..64 (default 8)");
  cmd->add_option("--nodes-per-leaf", a->opts.nodes_per_leaf, "nodes under one leaf switch")
      ->required();
  cmd->add_option("--leaves-per-spine", a->opts.leaves_per_spine, "leaves under one spine")
      ->required();
  cmd->add_option("--profile", a->opts.profile, "node profile: " + ProfileNames() + " (h100)");
  cmd->add_option("--occupancy", a->opts.occupancy,
                  "fraction of GPUs taken by running jobs, in [0, 1): writes state.json");
  cmd->add_option("--seed", a->opts.seed, "random seed for the job mix (default 1)");
  cmd->add_option("--out", a->out_dir, "output directory (created if missing)")->required();
  cmd->callback([a, cmd, &rc] {
    a->has_occupancy = cmd->count("--occupancy") > 0;
    a->has_gpus_per_node = cmd->count("--gpus-per-node") > 0;
    if (a->has_occupancy && a->opts.occupancy < 0) {
      rc = Fail(InvalidArgumentError("--occupancy: must be in [0, 1), got " +
                                     std::to_string(a->opts.occupancy)));
      return;
    }
    rc = RunGenerate(*a);
  });
}

}  // namespace toposched::cli
