#include "cli/replay_command.h"

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include "cli/commands.h"
#include "core/file.h"
#include "sched/script.h"
#include "topo/io/cluster_yaml.h"

namespace toposched::cli {

void AddReplayCommand(CLI::App& app, int& rc) {
  struct Args {
    std::string cluster, script;
  };
  auto args = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand(
      "replay", "Run a scheduler script (timed submits, passes, failures) and print what happened");
  cmd->add_option("--cluster", args->cluster, "Cluster YAML")->required();
  cmd->add_option("script", args->script, "Script file (see src/sched/script.h)")->required();
  cmd->callback([args, &rc] {
    auto cluster = topo::io::ReadClusterYamlFile(args->cluster);
    if (!cluster.ok()) {
      rc = Fail(cluster.status());
      return;
    }
    cluster->Finalize();
    auto text = ReadFileBounded(args->script, size_t{64} << 20, "a script");
    if (!text.ok()) {
      rc = Fail(text.status());
      return;
    }
    auto out = sched::RunScript(*cluster, *text, args->script);
    if (!out.ok()) {
      rc = Fail(out.status());
      return;
    }
    std::fwrite(out->data(), 1, out->size(), stdout);
    rc = 0;
  });
}

}  // namespace toposched::cli
