// `toposched device-plugin`: the kubelet device plugin on a GPU node (the DaemonSet in
// deploy/kubernetes/device-plugin.yaml). It serves the Device Plugin API v1beta1 on a socket in
// the kubelet's device-plugin directory, registers the resource (default nvidia.com/gpu) and
// answers the kubelet: the GPUs as devices with their NUMA node, the exact best set as the
// preferred allocation, and for a container its GPUs in NVLink ring order with the nearest NICs.
// It finds the node as `topo discover` does (or reads --topo), and checks it again every
// --interval seconds: a GPU gone from the bus or marked unhealthy is streamed as Unhealthy.
#include <chrono>
#include <csignal>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>

#include "cli/commands.h"
#include "core/strings.h"
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
};

volatile std::sig_atomic_t g_plugin_stop = 0;
void OnPluginSignal(int) { g_plugin_stop = 1; }

StatusOr<topo::NodeTopology> FindPluginNode(const DevicePluginArgs& a) {
  if (a.topo.empty()) return topo::io::DiscoverLocal();
  ASSIGN_OR_RETURN(topo::io::TopoFormat f, topo::io::ParseTopoFormat(a.format));
  return topo::io::ImportTopologyFile(a.topo, f);
}

// Health from a fresh look at the node: a device is healthy while its GPU (by PCI bus id, else
// index) is still there and not marked unhealthy.
void ApplyHealth(const topo::NodeTopology& now, deviceplugin::DevicePlugin& plugin,
                 const topo::NodeTopology& first) {
  for (const deviceplugin::GpuDevice& d : plugin.state().Snapshot(nullptr)) {
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
  if (a.dry_run) return 0;
  std::signal(SIGTERM, OnPluginSignal);
  std::signal(SIGINT, OnPluginSignal);
  if (Status s = (*plugin)->Start(); !s.ok()) return Fail(s);
  std::printf("device-plugin: serving %s on %s\n", a.options.resource_name.c_str(),
              a.options.socket_path().c_str());
  std::fflush(stdout);
  // Wakes every 200 ms to notice a signal; checks the node every --interval seconds.
  for (int waited_ms = 0; g_plugin_stop == 0; waited_ms += 200) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    if (waited_ms < a.interval_s * 1000) continue;
    waited_ms = 0;
    if (StatusOr<topo::NodeTopology> now = FindPluginNode(a); now.ok()) {
      ApplyHealth(*now, **plugin, *t);
    } else {
      std::fprintf(stderr, "toposched: device-plugin: %s (health unchanged)\n",
                   now.status().message().c_str());
    }
  }
  (*plugin)->Stop();
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
  c->add_flag("--dry-run", a->dry_run, "print the devices and exit");
  c->callback([a, &rc] { rc = RunDevicePlugin(*a); });
}

}  // namespace toposched::cli
