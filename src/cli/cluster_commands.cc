// `toposched cluster check|generate|import`, `toposched export slurm`, and `toposched demo`.
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>

#include "cli/cluster_import_command.h"
#include "cli/commands.h"
#include "cli/data_dir.h"
#include "cli/generate_command.h"
#include "topo/io/cluster_yaml.h"
#include "topo/io/import.h"
#include "topo/io/json_io.h"
#include "topo/io/slurm.h"
#include "topo/summary.h"

namespace toposched::cli {

namespace {

Status WriteFile(const std::filesystem::path& p, const std::string& text) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  if (!out) return InvalidArgumentError(p.string() + ": cannot open for writing");
  out << text;
  out.close();
  if (!out) return InvalidArgumentError(p.string() + ": write failed");
  return OkStatus();
}

int RunExportSlurm(const std::string& cluster_file, const std::string& dir) {
  auto c = topo::io::ReadClusterYamlFile(cluster_file);
  if (!c.ok()) return Fail(c.status());
  auto e = topo::io::ExportSlurm(*c);
  if (!e.ok()) return Fail(e.status());
  if (dir.empty()) {
    std::cout << "# ---- gres.conf ----\n"
              << e->gres_conf << "# ---- topology.conf (" << e->topology_kind << ") ----\n"
              << e->topology_conf << "# ---- slurm.conf node lines ----\n"
              << e->nodes_conf;
    return 0;
  }
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Fail(InvalidArgumentError(dir + ": cannot create directory: " + ec.message()));
  // Write both to temporaries first so a failure leaves no half-written pair behind.
  std::filesystem::path d(dir);
  Status s = WriteFile(d / "gres.conf.tmp", e->gres_conf);
  if (s.ok()) s = WriteFile(d / "topology.conf.tmp", e->topology_conf);
  if (s.ok()) s = WriteFile(d / "nodes.conf.tmp", e->nodes_conf);
  if (!s.ok()) return Fail(s);
  std::filesystem::rename(d / "gres.conf.tmp", d / "gres.conf", ec);
  if (!ec) std::filesystem::rename(d / "topology.conf.tmp", d / "topology.conf", ec);
  if (!ec) std::filesystem::rename(d / "nodes.conf.tmp", d / "nodes.conf", ec);
  if (ec) return Fail(InvalidArgumentError(dir + ": rename failed: " + ec.message()));
  std::cout << "wrote " << (d / "gres.conf").string() << ", " << (d / "topology.conf").string()
            << " (topology/" << e->topology_kind << ") and " << (d / "nodes.conf").string() << "\n";
  return 0;
}

}  // namespace

void RegisterClusterCommands(CLI::App& app, int& rc) {
  CLI::App* cluster = app.add_subcommand("cluster", "Cluster specs");
  cluster->require_subcommand(1);
  auto check_file = std::make_shared<std::string>();
  auto check_json = std::make_shared<bool>(false);
  CLI::App* check = cluster->add_subcommand("check", "Validate a cluster spec and summarise it");
  check->add_option("FILE", *check_file, "cluster spec (YAML)")->required();
  check->add_flag("--json", *check_json, "print the whole cluster model as JSON");
  check->callback([check_file, check_json, &rc] {
    auto c = topo::io::ReadClusterYamlFile(*check_file);
    if (!c.ok()) {
      rc = Fail(c.status());
      return;
    }
    std::cout << (*check_json ? topo::io::ClusterToJson(*c) + "\n"
                              : topo::FormatClusterSummary(*c));
    rc = 0;
  });

  AddClusterGenerateCommand(*cluster, rc);
  AddClusterImportCommand(*cluster, rc);

  CLI::App* exp = app.add_subcommand("export", "Export configuration for other systems");
  exp->require_subcommand(1);
  auto cl = std::make_shared<std::string>();
  auto dir = std::make_shared<std::string>();
  CLI::App* slurm =
      exp->add_subcommand("slurm", "Write gres.conf, topology.conf and slurm.conf node lines");
  slurm->add_option("CLUSTER", *cl, "cluster spec (YAML)")->required();
  slurm->add_option("--dir", *dir,
                    "write gres.conf, topology.conf and nodes.conf here (default: stdout)");
  slurm->callback([cl, dir, &rc] { rc = RunExportSlurm(*cl, *dir); });

  // The defaults live in the data directory (cli/data_dir.h), resolved when the command runs.
  auto demo_cluster = std::make_shared<std::string>();
  auto demo_topo = std::make_shared<std::string>();
  CLI::App* demo =
      app.add_subcommand("demo", "Import the example cluster and a real node topology");
  demo->add_option("--cluster", *demo_cluster,
                   "cluster spec (default: the data directory's clusters/h100-2rack.yaml)");
  demo->add_option("--topo", *demo_topo,
                   "node topology file (default: an 8x H100 nvidia-smi sample in the data "
                   "directory's samples/nvidia-smi)");
  demo->callback([demo_cluster, demo_topo, &rc] {
    if (demo_cluster->empty()) *demo_cluster = DataFile("clusters/h100-2rack.yaml");
    if (demo_topo->empty()) {
      *demo_topo = DataFile("samples/nvidia-smi/24-h100-sxm-8gpu-nv18-8nic-pix-sglang30401.txt");
    }
    auto c = topo::io::ReadClusterYamlFile(*demo_cluster);
    if (!c.ok()) {
      rc = Fail(c.status());
      return;
    }
    auto t = topo::io::ImportTopologyFile(*demo_topo, topo::io::TopoFormat::kAuto);
    if (!t.ok()) {
      rc = Fail(t.status());
      return;
    }
    std::cout << "== cluster\n"
              << topo::FormatClusterSummary(*c) << "\n== node topology\n"
              << topo::FormatTopologySummary(*t);
    rc = 0;
  });
}

}  // namespace toposched::cli
