// `toposched agent`: runs on each GPU node (a DaemonSet in deploy/kubernetes/agent.yaml, or a
// systemd unit beside Slurm), finds the node's own topology (hwloc + sysfs, as `topo discover`;
// or a file with --topo) and sends it to the daemon with the token: POST
// /api/v1/nodes/<node>/topology. It sends at start and again whenever what it finds changes (a
// GPU off the bus, NVLinks down after a fabric-manager restart, a NIC gone), checking every
// --interval seconds. The daemon stores each report as an input, so a daemon restart keeps it; an
// unchanged topology is not sent again. A failed send is retried at the next check.
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "cli/client.h"
#include "cli/commands.h"
#include "topo/io/discover.h"
#include "topo/io/import.h"
#include "topo/io/json_io.h"

namespace toposched::cli {

namespace {

using json = nlohmann::json;

struct AgentArgs : ClientArgs {
  std::string node;  // default: $NODE_NAME, else the host name
  std::string topo;  // a topology file instead of discovery
  std::string format = "auto";
  int interval_s = 300;
  bool once = false;
};

volatile std::sig_atomic_t g_stop = 0;
void OnSignal(int) { g_stop = 1; }

StatusOr<std::string> NodeName(const AgentArgs& a) {
  if (!a.node.empty()) return a.node;
  if (const char* env = std::getenv("NODE_NAME"); env != nullptr && *env != '\0')
    return std::string(env);
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) != 0 || host[0] == '\0') {
    return InvalidArgumentError("--node: not given, $NODE_NAME unset and no host name");
  }
  return std::string(host);
}

StatusOr<topo::NodeTopology> Find(const AgentArgs& a) {
  if (a.topo.empty()) return topo::io::DiscoverLocal();
  ASSIGN_OR_RETURN(topo::io::TopoFormat f, topo::io::ParseTopoFormat(a.format));
  return topo::io::ImportTopologyFile(a.topo, f);
}

// One check: find, and send when it differs from `last_sent` (updated on success). Prints one
// line per send or failure.
Status Check(const AgentArgs& a, const std::string& node, const std::string& source,
             std::string& last_sent) {
  ASSIGN_OR_RETURN(topo::NodeTopology t, Find(a));
  const std::string text = topo::io::TopologyToJson(t, -1);
  if (text == last_sent) return OkStatus();
  const json body{{"topology", json::parse(text)}, {"source", source}};
  const std::string path = "/api/v1/nodes/" + UrlEncode(node) + "/topology";
  ASSIGN_OR_RETURN(Reply r, Call(a, "POST", path, body.dump()));
  std::printf("sent the topology of %s: %zu GPUs, %zu NICs%s\n", node.c_str(), t.gpus.size(),
              t.nics.size(), last_sent.empty() ? "" : " (changed)");
  std::fflush(stdout);
  last_sent = text;
  return OkStatus();
}

int RunAgent(const AgentArgs& a) {
  if (a.interval_s < 1 || a.interval_s > 86400) {
    return Fail(InvalidArgumentError("--interval: expected seconds in [1, 86400], got " +
                                     std::to_string(a.interval_s)));
  }
  StatusOr<std::string> node = NodeName(a);
  if (!node.ok()) return Fail(node.status());
  const std::string source =
      "toposched agent on " + *node + (a.topo.empty() ? " (hwloc + sysfs)" : " from " + a.topo);
  if (a.once) {
    std::string last;
    Status st = Check(a, *node, source, last);
    return st.ok() ? 0 : Fail(st);
  }
  std::signal(SIGTERM, OnSignal);
  std::signal(SIGINT, OnSignal);
  std::string last;
  while (g_stop == 0) {
    if (Status st = Check(a, *node, source, last); !st.ok()) {
      std::fprintf(stderr, "toposched: agent: %s (trying again in %d s)\n", st.message().c_str(),
                   a.interval_s);
    }
    for (int waited_ms = 0; waited_ms < a.interval_s * 1000 && g_stop == 0; waited_ms += 200) {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
  }
  return 0;
}

}  // namespace

void RegisterAgentCommand(CLI::App& app, int& rc) {
  auto a = std::make_shared<AgentArgs>();
  CLI::App* c = app.add_subcommand(
      "agent", "Send this node's topology to the daemon, and again whenever it changes");
  c->add_option("--node", a->node, "node name in the cluster (default $NODE_NAME, else hostname)");
  c->add_option("--topo", a->topo, "a topology file instead of discovering this machine");
  c->add_option("--format", a->format, "format of --topo: nvidia-smi|hwloc|nccl-xml|json|auto")
      ->check(CLI::IsMember({"auto", "nvidia-smi", "hwloc", "nccl-xml", "json"}));
  c->add_option("--interval", a->interval_s, "seconds between checks (default 300)");
  c->add_flag("--once", a->once, "send once and exit (exit code 1 when it failed)");
  c->add_option("--server", a->server,
                "daemon URL (default $TOPOSCHED_SERVER or " + std::string(kDefaultServer) + ")");
  c->add_option("--token-file", a->token_file, "bearer token file (default $TOPOSCHED_TOKEN_FILE)");
  c->callback([a, &rc] { rc = RunAgent(*a); });
}

}  // namespace toposched::cli
