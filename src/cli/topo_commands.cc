// `toposched topo import|show|discover`.
#include <iostream>
#include <memory>

#include "cli/commands.h"
#include "topo/io/discover.h"
#include "topo/io/import.h"
#include "topo/io/json_io.h"
#include "topo/summary.h"

namespace toposched::cli {

namespace {

struct TopoArgs {
  std::string file;
  std::string format = "auto";
  std::string to = "json";
};

int Emit(const topo::NodeTopology& t, const std::string& to) {
  if (to == "json") {
    std::cout << topo::io::TopologyToJson(t) << "\n";
  } else {
    std::cout << topo::FormatTopologySummary(t);
  }
  return 0;
}

int RunTopoImport(const TopoArgs& a) {
  auto fmt = topo::io::ParseTopoFormat(a.format);
  if (!fmt.ok()) return Fail(fmt.status());
  auto t = topo::io::ImportTopologyFile(a.file, *fmt);
  if (!t.ok()) return Fail(t.status());
  return Emit(*t, a.to);
}

}  // namespace

void RegisterTopoCommands(CLI::App& app, int& rc) {
  CLI::App* topo = app.add_subcommand("topo", "Node topology: import, show, discover");
  topo->require_subcommand(1);

  auto args = std::make_shared<TopoArgs>();
  CLI::App* imp = topo->add_subcommand("import", "Import a node topology file and print it");
  imp->add_option("FILE", args->file, "nvidia-smi topo -m text, hwloc XML, NCCL XML or JSON")
      ->required();
  imp->add_option("--format", args->format, "nvidia-smi|hwloc|nccl-xml|json|auto")
      ->check(CLI::IsMember({"auto", "nvidia-smi", "hwloc", "nccl-xml", "json"}));
  imp->add_option("--to", args->to, "json (default) or summary")
      ->check(CLI::IsMember({"json", "summary"}));
  imp->callback([args, &rc] { rc = RunTopoImport(*args); });

  auto show_args = std::make_shared<TopoArgs>();
  CLI::App* show = topo->add_subcommand("show", "Readable summary of a node topology file");
  show->add_option("FILE", show_args->file, "topology file")->required();
  show->add_option("--format", show_args->format, "nvidia-smi|hwloc|nccl-xml|json|auto")
      ->check(CLI::IsMember({"auto", "nvidia-smi", "hwloc", "nccl-xml", "json"}));
  show->callback([show_args, &rc] {
    show_args->to = "summary";
    rc = RunTopoImport(*show_args);
  });

  auto disc_to = std::make_shared<std::string>("summary");
  CLI::App* disc = topo->add_subcommand("discover", "Discover this machine (hwloc + sysfs)");
  disc->add_option("--to", *disc_to, "summary (default) or json")
      ->check(CLI::IsMember({"json", "summary"}));
  disc->callback([disc_to, &rc] {
    auto t = topo::io::DiscoverLocal();
    if (!t.ok()) {
      rc = Fail(t.status());
      return;
    }
    rc = Emit(*t, *disc_to);
  });
}

}  // namespace toposched::cli
