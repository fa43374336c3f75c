// `toposched device-plugin`: the kubelet device plugin on a GPU node (the DaemonSet in
// deploy/kubernetes/device-plugin.yaml). It serves the Device Plugin API v1beta1 on a socket in
// the kubelet's device-plugin directory, registers the resource (default nvidia.com/gpu) and
// answers the kubelet: the GPUs as devices with their NUMA node, the exact best set as the
// preferred allocation, and for a container its GPUs in NVLink ring order with the nearest NICs.
// It finds the node as `topo discover` does (or reads --topo), and checks it again every
// --interval seconds: a GPU gone from the bus or marked unhealthy is streamed as Unhealthy.
#include <httplib.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "api/kube_client.h"
#include "api/kube_pods.h"
#include "cli/client.h"
#include "cli/commands.h"
#include "core/strings.h"
#include "deviceplugin/daemon_health.h"
#include "deviceplugin/devices.h"
#include "deviceplugin/plugin.h"
#include "topo/io/discover.h"
#include "topo/io/import.h"

namespace toposched::cli {

namespace {

struct DevicePluginArgs {
  deviceplugin::PluginOptions options;
  std::string topo;  // a topology file instead of discovering this machine
  std::string format = "auto";
  int interval_s = 30;
  bool dry_run = false;
  // The gang's choice: this node's name (else $NODE_NAME, set from spec.nodeName by the
  // DaemonSet) and the API server (else, in a pod, its service account's).
  std::string node_name;
  std::string kube_api_server;
  std::string kube_token_file = "/var/run/secrets/kubernetes.io/serviceaccount/token";
  std::string kube_ca_file = "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt";
  int metrics_port = 0;  // 0: no /metrics
  // The daemon whose health view is applied (GET /api/v1/nodes); "" = none.
  ClientArgs daemon;
};

// The daemon's failed GPUs of this node applied (each --interval; a daemon out of reach is retried
// for about 5 s by Call, then the last view is kept, logged). `last`: the view applied last.
void ApplyDaemonHealth(const DevicePluginArgs& a, const std::string& node,
                       deviceplugin::DevicePlugin& plugin, std::vector<int>& last) {
  const int gpus = static_cast<int>(plugin.state().Snapshot(nullptr).size());
  StatusOr<Reply> r = Call(a.daemon, "GET", "/api/v1/nodes");
  StatusOr<std::vector<int>> failed =
      r.ok() ? deviceplugin::DaemonFailedGpus(r->body.dump(), node, gpus)
             : StatusOr<std::vector<int>>(r.status());
  const Status s = failed.ok() ? plugin.SetDaemonFailed(*failed) : failed.status();
  if (!s.ok()) {
    std::fprintf(stderr, "toposched: device-plugin: the daemon's health view: %s (kept)\n",
                 s.message().c_str());
    return;
  }
  if (*failed != last) {
    std::string list;
    for (int pos : *failed) list += (list.empty() ? "" : ",") + std::to_string(pos);
    std::printf("device-plugin: the daemon holds GPU positions [%s] failed: offered Unhealthy\n",
                list.c_str());
    std::fflush(stdout);
    last = *failed;
  }
}

// --node-name, else $NODE_NAME; "" when neither is set.
std::string PluginNodeName(const DevicePluginArgs& a) {
  if (!a.node_name.empty()) return a.node_name;
  const char* env = std::getenv("NODE_NAME");
  return env != nullptr ? env : "";
}

// The API server the plugin reads pods from: --kube-api-server, else, in a pod, the one its
// service account talks to; "" when none is known.
std::string PluginKubeServer(const DevicePluginArgs& a) {
  if (!a.kube_api_server.empty()) return a.kube_api_server;
  const char* host = std::getenv("KUBERNETES_SERVICE_HOST");
  const char* port = std::getenv("KUBERNETES_SERVICE_PORT");
  if (host == nullptr || *host == '\0') return "";
  const std::string h = host;
  return "https://" + (h.find(':') != std::string::npos ? "[" + h + "]" : h) + ":" +
         (port != nullptr && *port != '\0' ? port : "443");
}

// Container requests follow the extender's choice when this node and the API server are known;
// otherwise the plugin makes its own choice for every pod (said once here).
Status EnablePluginGangChoices(const DevicePluginArgs& a, deviceplugin::DevicePlugin& plugin) {
  const std::string node = PluginNodeName(a);
  api::KubeApiOptions o;
  o.server = PluginKubeServer(a);
  o.token_file = a.kube_token_file;
  o.ca_file = a.kube_ca_file;
  // The kubelet waits on GetPreferredAllocation while it admits the pod; two seconds bounds the
  // delay a slow API server adds before the plugin falls back to its own choice.
  o.timeout_ms = 2000;
  if (node.empty() || o.server.empty()) {
    std::printf("device-plugin: the gang's choice is off (%s unknown): own choice for every pod\n",
                node.empty() ? "--node-name" : "--kube-api-server");
    return OkStatus();
  }
  if (Status s = o.Validate(); !s.ok()) return s.WithPrefix("--kube-api-server");
  plugin.EnableGangChoices([o, node] { return api::ListNodePods(o, node); });
  std::printf("device-plugin: following the gang's choice (%s) for pods on %s\n",
              a.options.choice_annotation.c_str(), node.c_str());
  return OkStatus();
}

volatile std::sig_atomic_t g_plugin_stop = 0;
void OnPluginSignal(int) { g_plugin_stop = 1; }

StatusOr<topo::NodeTopology> FindPluginNode(const DevicePluginArgs& a) {
  if (a.topo.empty()) return topo::io::DiscoverLocal();
  ASSIGN_OR_RETURN(topo::io::TopoFormat f, topo::io::ParseTopoFormat(a.format));
  return topo::io::ImportTopologyFile(a.topo, f);
}

// Health from a fresh look at the node: a device is healthy while its GPU (by PCI bus id, else
// index) is still there and not marked unhealthy.
// `seen`: the health each device was last found with (the device's own health, before the
// daemon's view is applied).
void ApplyHealth(const topo::NodeTopology& now, deviceplugin::DevicePlugin& plugin,
                 const topo::NodeTopology& first, std::map<std::string, bool>& seen) {
  for (deviceplugin::GpuDevice d : plugin.state().Snapshot(nullptr)) {
    if (auto it = seen.find(d.id); it != seen.end()) d.healthy = it->second;
    const std::string bus = deviceplugin::NormalizeBusId(first.gpus[d.pos].pci_bus_id);
    bool healthy = false;
    for (const topo::Gpu& g : now.gpus) {
      const bool same =
          bus.empty() ? g.index == d.index : deviceplugin::NormalizeBusId(g.pci_bus_id) == bus;
      if (same) healthy = g.health != topo::Health::kUnhealthy;
    }
    if (healthy != d.healthy) {
      std::printf("device-plugin: device %s (GPU %d) is now %s\n", d.id.c_str(), d.index,
                  healthy ? "healthy" : "unhealthy");
      std::fflush(stdout);
      (void)plugin.SetHealthy(d.id, healthy);
    }
    seen[d.id] = healthy;
  }
}

int RunDevicePlugin(const DevicePluginArgs& a) {
  if (a.interval_s < 1 || a.interval_s > 86400) {
    return Fail(InvalidArgumentError("--interval: expected seconds in [1, 86400], got " +
                                     std::to_string(a.interval_s)));
  }
  if (Status s = a.options.Validate(); !s.ok()) return Fail(s);
  StatusOr<topo::NodeTopology> t = FindPluginNode(a);
  if (!t.ok()) return Fail(t.status());
  auto driver = deviceplugin::ReadDriverGpus(a.options.proc_root, *t);
  if (!driver.ok()) return Fail(driver.status());
  auto plugin = deviceplugin::DevicePlugin::Create(*t, *driver, a.options);
  if (!plugin.ok()) return Fail(plugin.status());
  for (const deviceplugin::GpuDevice& d : (*plugin)->state().Snapshot(nullptr)) {
    std::printf("device %s: GPU %d, NUMA %s, %s\n", d.id.c_str(), d.index,
                d.numa ? std::to_string(*d.numa).c_str() : "-",
                d.healthy ? "healthy" : "unhealthy");
  }
  if (Status s = EnablePluginGangChoices(a, **plugin); !s.ok()) return Fail(s);
  if (a.metrics_port < 0 || a.metrics_port > 65535) {
    return Fail(InvalidArgumentError("--metrics-port: expected 0..65535, got " +
                                     std::to_string(a.metrics_port)));
  }
  if (a.dry_run) return 0;
  std::signal(SIGTERM, OnPluginSignal);
  std::signal(SIGINT, OnPluginSignal);
  if (Status s = (*plugin)->Start(); !s.ok()) return Fail(s);
  std::printf("device-plugin: serving %s on %s\n", a.options.resource_name.c_str(),
              a.options.socket_path().c_str());
  std::fflush(stdout);
  httplib::Server metrics;
  std::thread metrics_thread;
  if (a.metrics_port > 0 && (*plugin)->state().gang_choices() != nullptr) {
    const deviceplugin::GangChoices* choices = (*plugin)->state().gang_choices();
    metrics.Get("/metrics", [choices](const httplib::Request&, httplib::Response& res) {
      res.set_content(choices->MetricsText(), "text/plain; version=0.0.4");
    });
    if (!metrics.bind_to_port("0.0.0.0", a.metrics_port)) {
      (*plugin)->Stop();
      return Fail(Status(StatusCode::kUnavailable,
                         "--metrics-port: cannot listen on " + std::to_string(a.metrics_port)));
    }
    metrics_thread = std::thread([&metrics] { metrics.listen_after_bind(); });
  }
  const std::string node = PluginNodeName(a);
  const bool daemon = !a.daemon.server.empty() && !node.empty();
  std::map<std::string, bool> seen;  // each device's own health, before the daemon's view
  for (const deviceplugin::GpuDevice& d : (*plugin)->state().Snapshot(nullptr)) {
    seen[d.id] = d.healthy;
  }
  std::vector<int> daemon_failed;
  if (daemon) ApplyDaemonHealth(a, node, **plugin, daemon_failed);
  // Wakes every 200 ms to notice a signal; checks the node every --interval seconds.
  for (int waited_ms = 0; g_plugin_stop == 0; waited_ms += 200) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    if (waited_ms < a.interval_s * 1000) continue;
    waited_ms = 0;
    if (daemon) ApplyDaemonHealth(a, node, **plugin, daemon_failed);
    if (StatusOr<topo::NodeTopology> now = FindPluginNode(a); now.ok()) {
      ApplyHealth(*now, **plugin, *t, seen);
    } else {
      std::fprintf(stderr, "toposched: device-plugin: %s (health unchanged)\n",
                   now.status().message().c_str());
    }
  }
  (*plugin)->Stop();
  if (metrics_thread.joinable()) {
    metrics.stop();
    metrics_thread.join();
  }
  return 0;
}

}  // namespace

void RegisterDevicePluginCommand(CLI::App& app, int& rc) {
  auto a = std::make_shared<DevicePluginArgs>();
  CLI::App* c = app.add_subcommand(
      "device-plugin",
      "Kubelet device plugin: the exact best GPUs per pod, injected in NVLink ring order");
  deviceplugin::PluginOptions& o = a->options;
  c->add_option("--resource-name", o.resource_name, "extended resource (default nvidia.com/gpu)");
  c->add_option("--kubelet-dir", o.kubelet_dir,
                "the kubelet's device-plugin directory (default /var/lib/kubelet/device-plugins/)");
  c->add_option("--endpoint", o.endpoint, "socket file name in that directory");
  c->add_option("--topo", a->topo, "a topology file instead of discovering this machine");
  c->add_option("--format", a->format, "format of --topo: nvidia-smi|hwloc|nccl-xml|json|auto")
      ->check(CLI::IsMember({"auto", "nvidia-smi", "hwloc", "nccl-xml", "json"}));
  c->add_option("--interval", a->interval_s, "seconds between health checks (default 30)");
  c->add_flag("--cdi", o.cdi, "also name the GPUs as CDI devices");
  c->add_option("--cdi-kind", o.cdi_kind, "CDI kind of the GPUs (default nvidia.com/gpu)");
  c->add_option("--nccl-topo-file", o.nccl_topo_file,
                "host path of the node's NCCL topology file, mounted and named by NCCL_TOPO_FILE");
  c->add_option("--dev-root", o.dev_root, "where the host's device nodes are (default /dev)");
  c->add_option("--proc-root", o.proc_root, "where the driver's /proc files are (default /proc)");
  c->add_option("--sys-root", o.sys_root, "where sysfs is (default /sys)");
  c->add_option("--node-name", a->node_name,
                "this node's name, to find the pod being admitted (default $NODE_NAME)");
  c->add_option("--kube-api-server", a->kube_api_server,
                "the API server to read this node's pods from (default: in-cluster)");
  c->add_option("--kube-token-file", a->kube_token_file, "service account token for it");
  c->add_option("--kube-ca-file", a->kube_ca_file, "CA bundle of the API server (https)");
  c->add_option("--choice-annotation", o.choice_annotation,
                "pod annotation naming the GPUs the extender chose (default toposched.io/gpus)");
  c->add_option("--metrics-port", a->metrics_port,
                "serve the gang-choice counters on :PORT/metrics (default 0: off)");
  c->add_option("--daemon", a->daemon.server,
                "the toposched daemon whose GPU health view is applied (default: none)");
  c->add_option("--daemon-token-file", a->daemon.token_file, "the daemon's bearer token");
  c->add_flag("--dry-run", a->dry_run, "print the devices and exit");
  c->callback([a, &rc] { rc = RunDevicePlugin(*a); });
}

}  // namespace toposched::cli
