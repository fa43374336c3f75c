// hwloc XML reader, and the hwloc -> NodeTopology conversion shared with live discovery
// (discover.cc declares hwloc_internal::ToNodeTopology, the one entry point it uses).
//
// Decisions:
//  - GPU: a PCI device that carries a GPU-kind OS device (cudaN, nvmlN, OpenCL device of type
//    GPU, rsmiN, zeN) or, without one, a PCI display/3D controller (class 0x0300/0x0302) of
//    NVIDIA (0x10de). The OS devices of one PCI device collapse into one GPU. So an AMD GPU that
//    hwloc shows through OpenCL counts (model from its GPUModel info); a plain VGA chip of another
//    vendor without such an OS device (server BMC graphics) does not.
//  - GPU index: the NVML index when every GPU has a distinct nvmlN (nvidia-smi numbering), else
//    the CUDA index when every GPU has a distinct cudaN, else PCI bus order.
//  - NIC: Network or OpenFabrics OS devices; those of one PCI device collapse into one NIC named
//    after the OpenFabrics device (mlx5_0 rather than ib0). NICs are ordered by PCI bus id.
//  - PCIe: a host bridge (upstream type host) is a HostBridge; the first PCI bridge below it is
//    the root port and is transparent; below that, bridges alternate between a switch's upstream
//    port (one PcieSwitch) and its downstream ports (merged into that switch). This matches how
//    NCCL collapses a sysfs path to one node per physical switch. Link generation and width stay
//    unknown: hwloc gives one GB/s figure that cannot tell gen3 x16 from gen4 x8.
//  - NVLink: the "NVLinkBandwidth" matrix (MB/s) divided by the per-link rate of the GPUs'
//    NVLink generation (data/hardware/links.json via HardwareTable). Links into NVSwitch PCI
//    devices make the node switched: every GPU pair that both reach the switches gets
//    min(links of either GPU into the switches), as nvidia-smi prints (DGX-2: NV6). Links to a
//    CPU (POWER8/9 NVLink) count toward the GPU's nvlink_ports but form no GPU pair.
//  - Only XML version 2.x and 3.x is read: 1.x (no version attribute) is refused with its line.
//  - hwloc 2.9 refuses XML version 3.0 (written by hwloc 3.x). Such files are downgraded before
//    loading: version="2.0" and the 3.x osdev_type bitmask mapped to the 2.x enum. Nothing else in
//    3.0 XML that we read differs.
#include "topo/io/hwloc_xml.h"

#include <hwloc.h>
#include <tinyxml2.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/file.h"
#include "core/strings.h"
#include "topo/hardware.h"
#include "topo/io/hwloc_internal.h"

namespace toposched::topo::io {

namespace hwloc_internal {

namespace {

constexpr size_t kMaxXmlBytes = 64u << 20;
constexpr int kMaxCpus = 1 << 20;

// A converted topology before its paths are derived.
struct Conversion {
  NodeTopology topology;
  std::vector<std::vector<int>> nvlinks;  // GPU position x GPU position
  bool nvlink_known = false;              // an NVLinkBandwidth matrix was present
};

std::string FormatBusId(unsigned domain, unsigned bus, unsigned dev, unsigned func) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%04x:%02x:%02x.%x", domain, bus, dev, func);
  return buf;
}

std::string PciBusId(hwloc_obj_t obj) {
  const hwloc_obj_attr_u::hwloc_pcidev_attr_s& p =
      obj->type == HWLOC_OBJ_BRIDGE ? obj->attr->bridge.upstream.pci : obj->attr->pcidev;
  return FormatBusId(p.domain, p.bus, p.dev, p.func);
}

std::vector<int> BitmapToList(hwloc_const_bitmap_t set) {
  std::vector<int> out;
  if (set == nullptr || hwloc_bitmap_weight(set) <= 0) return out;  // -1 = infinite
  for (int i = hwloc_bitmap_first(set); i >= 0 && static_cast<int>(out.size()) < kMaxCpus;
       i = hwloc_bitmap_next(set, i)) {
    out.push_back(i);
  }
  return out;
}

hwloc_obj_t NonIoAncestor(hwloc_topology_t topo, hwloc_obj_t obj) {
  return hwloc_get_non_io_ancestor_obj(topo, obj);
}

std::optional<int> NearestNuma(hwloc_topology_t topo, hwloc_obj_t obj) {
  hwloc_obj_t anc = NonIoAncestor(topo, obj);
  if (anc == nullptr || anc->nodeset == nullptr || hwloc_bitmap_weight(anc->nodeset) != 1) {
    return std::nullopt;
  }
  return hwloc_bitmap_first(anc->nodeset);
}

std::optional<std::vector<int>> NearestCpus(hwloc_topology_t topo, hwloc_obj_t obj) {
  hwloc_obj_t anc = NonIoAncestor(topo, obj);
  if (anc == nullptr || anc->cpuset == nullptr) return std::nullopt;
  std::vector<int> cpus = BitmapToList(anc->cpuset);
  if (cpus.empty()) return std::nullopt;
  return cpus;
}

const char* Info(hwloc_obj_t obj, const char* name) {
  return hwloc_obj_get_info_by_name(obj, name);
}

// "16671616KiB" -> MiB.
std::optional<long long> ParseMemoryMib(const char* text) {
  if (text == nullptr) return std::nullopt;
  std::string_view s = Trim(text);
  size_t i = 0;
  while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i;
  auto num = ParseInt(s.substr(0, i));
  if (!num.ok()) return std::nullopt;
  std::string unit = ToLower(Trim(s.substr(i)));
  long long v = *num;
  if (unit == "kib" || unit == "kb") return v / 1024;
  if (unit == "mib" || unit == "mb") return v;
  if (unit == "gib" || unit == "gb") return v * 1024;
  if (unit.empty() || unit == "b") return v / (1024 * 1024);
  return std::nullopt;
}

// Index from an OS device name like "cuda3" / "nvml12"; -1 when it is not prefix+digits.
int NameIndex(const char* name, std::string_view prefix) {
  if (name == nullptr || !StartsWith(name, prefix)) return -1;
  auto v = ParseInt(std::string_view(name).substr(prefix.size()));
  if (!v.ok() || *v < 0 || *v > 1 << 20) return -1;
  return static_cast<int>(*v);
}

enum class GpuOsDevKind { kNone, kCuda, kNvml, kOther };

GpuOsDevKind ClassifyGpuOsDev(hwloc_obj_t osdev) {
  if (osdev->type != HWLOC_OBJ_OS_DEVICE) return GpuOsDevKind::kNone;
  hwloc_obj_osdev_type_t type = osdev->attr->osdev.type;
  if (type != HWLOC_OBJ_OSDEV_GPU && type != HWLOC_OBJ_OSDEV_COPROC) return GpuOsDevKind::kNone;
  const char* name = osdev->name == nullptr ? "" : osdev->name;
  if (NameIndex(name, "cuda") >= 0) return GpuOsDevKind::kCuda;
  if (NameIndex(name, "nvml") >= 0) return GpuOsDevKind::kNvml;
  if (StartsWith(name, "opencl")) {
    const char* dev_type = Info(osdev, "OpenCLDeviceType");
    if (dev_type != nullptr && std::strcmp(dev_type, "GPU") != 0) return GpuOsDevKind::kNone;
    return GpuOsDevKind::kOther;
  }
  if (NameIndex(name, "rsmi") >= 0 || NameIndex(name, "ze") >= 0) return GpuOsDevKind::kOther;
  return GpuOsDevKind::kNone;  // DRM card0/renderD128 and the like
}

bool IsNvSwitch(hwloc_obj_t pci) {
  if (pci->subtype != nullptr && std::strcmp(pci->subtype, "NVSwitch") == 0) return true;
  return pci->attr->pcidev.vendor_id == 0x10de && pci->attr->pcidev.class_id == 0x0680;
}

enum class BridgeRole { kNone, kHost, kRootPort, kUpstream, kDownstream };

struct WalkCtx {
  int host_bridge = -1;
  std::vector<int> switches;
  BridgeRole role = BridgeRole::kNone;
};

struct Walker {
  hwloc_topology_t topo;
  NodeTopology* t;
  std::map<hwloc_obj_t, PciePlacement> placement;  // every PCI device
  std::vector<hwloc_obj_t> pci_devices;            // in tree order

  void WalkIo(hwloc_obj_t obj, const WalkCtx& ctx) {
    WalkCtx child = ctx;
    if (obj->type == HWLOC_OBJ_BRIDGE) {
      if (obj->attr->bridge.upstream_type == HWLOC_OBJ_BRIDGE_HOST) {
        HostBridge hb;
        hb.id = static_cast<int>(t->host_bridges.size());
        hb.numa = NearestNuma(topo, obj);
        char buf[16];
        std::snprintf(buf, sizeof(buf), "%04x:%02x", obj->attr->bridge.downstream.pci.domain,
                      obj->attr->bridge.downstream.pci.secondary_bus);
        hb.pci_bus_id = buf;
        t->host_bridges.push_back(hb);
        child = WalkCtx{hb.id, {}, BridgeRole::kHost};
      } else {
        switch (ctx.role) {
          case BridgeRole::kNone:
          case BridgeRole::kHost:
            child.role = BridgeRole::kRootPort;
            break;
          case BridgeRole::kRootPort:
          case BridgeRole::kDownstream: {
            PcieSwitch sw;
            sw.id = static_cast<int>(t->pcie_switches.size());
            sw.parent = ctx.switches.empty() ? -1 : ctx.switches.back();
            sw.host_bridge = ctx.host_bridge;
            sw.pci_bus_id = PciBusId(obj);
            t->pcie_switches.push_back(sw);
            child.switches.push_back(sw.id);
            child.role = BridgeRole::kUpstream;
            break;
          }
          case BridgeRole::kUpstream:
            child.role = BridgeRole::kDownstream;
            break;
        }
      }
    } else if (obj->type == HWLOC_OBJ_PCI_DEVICE) {
      PciePlacement p;
      p.switches = ctx.switches;
      p.host_bridge = ctx.host_bridge;
      placement[obj] = p;
      pci_devices.push_back(obj);
    }
    for (hwloc_obj_t c = obj->io_first_child; c != nullptr; c = c->next_sibling) WalkIo(c, child);
  }

  void Walk(hwloc_obj_t obj) {
    for (hwloc_obj_t c = obj->first_child; c != nullptr; c = c->next_sibling) Walk(c);
    for (hwloc_obj_t c = obj->io_first_child; c != nullptr; c = c->next_sibling) {
      WalkIo(c, WalkCtx{});
    }
  }
};

struct GpuCandidate {
  Gpu gpu;
  hwloc_obj_t pci = nullptr;
  int cuda = -1;
  int nvml = -1;
};

// Sets the GPU indices by the rule in the file comment.
void AssignGpuIndices(std::vector<GpuCandidate>* gpus) {
  auto distinct_all = [&](int GpuCandidate::*field) {
    std::set<int> seen;
    for (const GpuCandidate& g : *gpus) {
      if (g.*field < 0 || !seen.insert(g.*field).second) return false;
    }
    return true;
  };
  int GpuCandidate::*field = nullptr;
  if (distinct_all(&GpuCandidate::nvml)) {
    field = &GpuCandidate::nvml;
  } else if (distinct_all(&GpuCandidate::cuda)) {
    field = &GpuCandidate::cuda;
  }
  for (size_t i = 0; i < gpus->size(); ++i) {
    GpuCandidate& g = (*gpus)[i];
    g.gpu.index = field != nullptr ? g.*field : static_cast<int>(i);
  }
}

LinkLayer NicLinkLayer(hwloc_obj_t net, hwloc_obj_t fabrics, int port) {
  // hwloc does not export the port link layer today; accept it should a backend add it.
  for (hwloc_obj_t o : {fabrics, net}) {
    if (o == nullptr) continue;
    std::string key = "Port" + std::to_string(port) + "LinkLayer";
    for (const char* k : {key.c_str(), "LinkLayer"}) {
      const char* v = Info(o, k);
      if (v == nullptr) continue;
      auto ll = ParseLinkLayer(ToLower(v));
      if (ll.ok()) {
        return (*ll == LinkLayer::kEthernet && fabrics != nullptr) ? LinkLayer::kRoCE : *ll;
      }
    }
  }
  // The netdev's hardware address tells the link: 20 octets = IPoIB, 6 = Ethernet.
  if (net != nullptr) {
    const char* addr = Info(net, "Address");
    if (addr != nullptr) {
      size_t octets = Split(addr, ':').size();
      if (octets == 20) return LinkLayer::kInfiniBand;
      if (octets == 6) return fabrics != nullptr ? LinkLayer::kRoCE : LinkLayer::kEthernet;
    }
  }
  return LinkLayer::kUnknown;
}

// Port of an OpenFabrics device: the lowest N with a "Port<N>State" info.
std::optional<int> FabricsPort(hwloc_obj_t fabrics) {
  std::optional<int> best;
  for (unsigned i = 0; i < fabrics->infos_count; ++i) {
    const char* name = fabrics->infos[i].name;
    if (name == nullptr || !StartsWith(name, "Port")) continue;
    std::string_view rest = std::string_view(name).substr(4);
    size_t digits = 0;
    while (digits < rest.size() && rest[digits] >= '0' && rest[digits] <= '9') ++digits;
    if (digits == 0 || rest.substr(digits) != "State") continue;
    auto v = ParseInt(rest.substr(0, digits));
    if (v.ok() && *v >= 0 && *v < 1024 && (!best || *v < *best)) best = static_cast<int>(*v);
  }
  return best;
}

Nic MakeNic(hwloc_topology_t topo, hwloc_obj_t anchor, hwloc_obj_t net, hwloc_obj_t fabrics,
            const PciePlacement* placement) {
  Nic nic;
  hwloc_obj_t named = fabrics != nullptr ? fabrics : net;
  nic.name = named->name == nullptr ? "" : named->name;
  std::optional<int> port = fabrics != nullptr ? FabricsPort(fabrics) : std::nullopt;
  if (!port && net != nullptr) {
    const char* p = Info(net, "Port");
    if (p != nullptr) {
      auto v = ParseInt(p);
      if (v.ok() && *v >= 0 && *v < 1024) port = static_cast<int>(*v);
    }
  }
  nic.port = port.value_or(1);
  nic.link_layer = NicLinkLayer(net, fabrics, nic.port);
  if (anchor->type == HWLOC_OBJ_PCI_DEVICE) nic.pci_bus_id = PciBusId(anchor);
  nic.numa = NearestNuma(topo, anchor);
  if (placement != nullptr) nic.pcie = *placement;
  return nic;
}

double NvlinkRateMbps(const NodeTopology& t, const std::vector<unsigned long long>& values) {
  const HardwareTable& table = HardwareTable::Default();
  for (const Gpu& g : t.gpus) {
    auto info = table.Lookup(g.model);
    if (!info || info->nvlink_gen <= 0) continue;
    auto it = table.nvlink_link_gbps.find(info->nvlink_gen);
    if (it != table.nvlink_link_gbps.end() && it->second > 0) return it->second * 1000.0;
  }
  // Unknown model: hwloc's NVML backend writes 20000 MB/s per NVLink 1.0 link and 25000 for
  // later generations; pick the rate that divides every value.
  bool all_25 = true, all_20 = true;
  for (unsigned long long v : values) {
    if (v == 0) continue;
    all_25 = all_25 && v % 25000 == 0;
    all_20 = all_20 && v % 20000 == 0;
  }
  return (!all_25 && all_20) ? 20000.0 : 25000.0;
}

int LinksFromMbps(unsigned long long mbps, double rate_mbps) {
  if (mbps == 0) return 0;
  long long n = static_cast<long long>(static_cast<double>(mbps) / rate_mbps + 0.5);
  return static_cast<int>(std::clamp<long long>(n, 1, 1024));
}

// Reads NVLinkBandwidth into c->nvlinks and the GPUs' nvlink_ports; sets the switch flags.
void ReadNvlinks(hwloc_topology_t topo, const std::map<hwloc_obj_t, int>& gpu_of_obj,
                 const std::set<hwloc_obj_t>& nvswitches, Conversion* c) {
  NodeTopology& t = c->topology;
  const size_t n_gpus = t.gpus.size();
  c->nvlinks.assign(n_gpus, std::vector<int>(n_gpus, 0));
  unsigned nr = 1;
  hwloc_distances_s* dist = nullptr;
  if (hwloc_distances_get_by_name(topo, "NVLinkBandwidth", &nr, &dist, 0) != 0 || nr == 0 ||
      dist == nullptr) {
    return;
  }
  c->nvlink_known = true;
  const unsigned n = dist->nbobjs;
  std::vector<unsigned long long> values(dist->values, dist->values + size_t{n} * n);
  const double rate = NvlinkRateMbps(t, values);

  enum class Kind { kOther, kGpu, kSwitch, kCpu };
  std::vector<Kind> kind(n, Kind::kOther);
  std::vector<int> gpu(n, -1);
  for (unsigned i = 0; i < n; ++i) {
    hwloc_obj_t o = dist->objs[i];
    if (o == nullptr) continue;
    auto it = gpu_of_obj.find(o);
    if (it != gpu_of_obj.end()) {
      kind[i] = Kind::kGpu;
      gpu[i] = it->second;
    } else if (nvswitches.count(o) != 0) {
      kind[i] = Kind::kSwitch;
    } else if (!hwloc_obj_type_is_io(o->type)) {
      kind[i] = Kind::kCpu;
    }
  }
  std::vector<int> switch_links(n_gpus, 0), other_links(n_gpus, 0);
  for (unsigned i = 0; i < n; ++i) {
    if (kind[i] != Kind::kGpu) continue;
    for (unsigned j = 0; j < n; ++j) {
      if (i == j) continue;
      // Matrices are symmetric in practice; take the larger direction should one differ.
      unsigned long long v = std::max(values[size_t{i} * n + j], values[size_t{j} * n + i]);
      int links = LinksFromMbps(v, rate);
      if (links == 0) continue;
      switch (kind[j]) {
        case Kind::kGpu:
          if (gpu[j] != gpu[i]) c->nvlinks[gpu[i]][gpu[j]] = links;
          break;
        case Kind::kSwitch:
          switch_links[gpu[i]] += links;
          break;
        case Kind::kCpu:
        case Kind::kOther:
          other_links[gpu[i]] += links;
          break;
      }
    }
  }
  bool switched = false;
  for (size_t g = 0; g < n_gpus; ++g) {
    int direct = 0;
    for (size_t h = 0; h < n_gpus; ++h) direct += c->nvlinks[g][h];
    t.gpus[g].nvlink_ports = direct + switch_links[g] + other_links[g];
    switched = switched || switch_links[g] > 0;
  }
  if (switched) {
    // The switch fabric joins every GPU that has links into it (hwloc does not show the
    // switch-to-switch trunks, so connectivity between switches is assumed).
    t.nvswitch = true;
    for (size_t a = 0; a < n_gpus; ++a) {
      for (size_t b = 0; b < n_gpus; ++b) {
        if (a == b || switch_links[a] == 0 || switch_links[b] == 0) continue;
        c->nvlinks[a][b] += std::min(switch_links[a], switch_links[b]);
      }
    }
  }
  hwloc_distances_release(topo, dist);
}

StatusOr<Conversion> Convert(hwloc_topology_t topo, const std::string& source) {
  Conversion c;
  NodeTopology& t = c.topology;
  t.source = source;

  // NUMA nodes.
  for (hwloc_obj_t node = hwloc_get_next_obj_by_type(topo, HWLOC_OBJ_NUMANODE, nullptr);
       node != nullptr; node = hwloc_get_next_obj_by_type(topo, HWLOC_OBJ_NUMANODE, node)) {
    NumaNode nn;
    nn.id = static_cast<int>(node->os_index);
    nn.cpus = BitmapToList(node->cpuset);
    t.numa_nodes.push_back(std::move(nn));
  }
  std::sort(t.numa_nodes.begin(), t.numa_nodes.end(),
            [](const NumaNode& a, const NumaNode& b) { return a.id < b.id; });

  Walker walker{topo, &t, {}, {}};
  walker.Walk(hwloc_get_root_obj(topo));

  std::vector<GpuCandidate> gpus;
  std::vector<Nic> nics;
  std::set<hwloc_obj_t> nvswitches;
  for (hwloc_obj_t pci : walker.pci_devices) {
    const hwloc_obj_attr_u::hwloc_pcidev_attr_s& attr = pci->attr->pcidev;
    const PciePlacement& placement = walker.placement[pci];
    if (IsNvSwitch(pci)) {
      nvswitches.insert(pci);
      continue;
    }
    GpuCandidate cand;
    bool has_gpu_osdev = false;
    const char* model = nullptr;
    int model_rank = 0;  // NVML > CUDA > others
    hwloc_obj_t net = nullptr, fabrics = nullptr;
    for (hwloc_obj_t o = pci->io_first_child; o != nullptr; o = o->next_sibling) {
      if (o->type != HWLOC_OBJ_OS_DEVICE) continue;
      GpuOsDevKind k = ClassifyGpuOsDev(o);
      if (k != GpuOsDevKind::kNone) {
        has_gpu_osdev = true;
        int rank = k == GpuOsDevKind::kNvml ? 3 : k == GpuOsDevKind::kCuda ? 2 : 1;
        if (k == GpuOsDevKind::kCuda) cand.cuda = NameIndex(o->name, "cuda");
        if (k == GpuOsDevKind::kNvml) cand.nvml = NameIndex(o->name, "nvml");
        const char* m = Info(o, "GPUModel");
        if (m != nullptr && *m != '\0' && rank > model_rank) {
          model = m;
          model_rank = rank;
        }
        if (!cand.gpu.memory_mib) {
          cand.gpu.memory_mib = ParseMemoryMib(Info(o, "CUDAGlobalMemorySize"));
          if (!cand.gpu.memory_mib) {
            cand.gpu.memory_mib = ParseMemoryMib(Info(o, "OpenCLGlobalMemorySize"));
          }
        }
      } else if (o->attr->osdev.type == HWLOC_OBJ_OSDEV_OPENFABRICS) {
        if (fabrics == nullptr) fabrics = o;
      } else if (o->attr->osdev.type == HWLOC_OBJ_OSDEV_NETWORK) {
        if (net == nullptr) net = o;
      }
    }
    const bool nvidia_display =
        attr.vendor_id == 0x10de && (attr.class_id == 0x0300 || attr.class_id == 0x0302);
    if (has_gpu_osdev || nvidia_display) {
      if (model == nullptr) model = Info(pci, "PCIDevice");
      cand.gpu.model = model == nullptr ? "" : model;
      cand.gpu.pci_bus_id = PciBusId(pci);
      cand.gpu.numa = NearestNuma(topo, pci);
      cand.gpu.cpus = NearestCpus(topo, pci);
      cand.gpu.pcie = placement;
      cand.pci = pci;
      gpus.push_back(std::move(cand));
    } else if (net != nullptr || fabrics != nullptr) {
      nics.push_back(MakeNic(topo, pci, net, fabrics, &placement));
    }
  }
  // Network devices that hang off no PCI device (rare: virtual buses) are still NICs.
  for (hwloc_obj_t o = hwloc_get_next_osdev(topo, nullptr); o != nullptr;
       o = hwloc_get_next_osdev(topo, o)) {
    if (o->parent != nullptr && o->parent->type == HWLOC_OBJ_PCI_DEVICE) continue;
    if (o->attr->osdev.type == HWLOC_OBJ_OSDEV_OPENFABRICS) {
      nics.push_back(MakeNic(topo, o, nullptr, o, nullptr));
    } else if (o->attr->osdev.type == HWLOC_OBJ_OSDEV_NETWORK) {
      nics.push_back(MakeNic(topo, o, o, nullptr, nullptr));
    }
  }

  std::stable_sort(gpus.begin(), gpus.end(), [](const GpuCandidate& a, const GpuCandidate& b) {
    return a.gpu.pci_bus_id < b.gpu.pci_bus_id;
  });
  AssignGpuIndices(&gpus);
  std::map<hwloc_obj_t, int> gpu_of_obj;
  for (size_t i = 0; i < gpus.size(); ++i) {
    gpu_of_obj[gpus[i].pci] = static_cast<int>(i);
    for (hwloc_obj_t o = gpus[i].pci->io_first_child; o != nullptr; o = o->next_sibling) {
      if (o->type == HWLOC_OBJ_OS_DEVICE) gpu_of_obj[o] = static_cast<int>(i);
    }
    t.gpus.push_back(std::move(gpus[i].gpu));
  }
  std::stable_sort(nics.begin(), nics.end(), [](const Nic& a, const Nic& b) {
    return a.pci_bus_id != b.pci_bus_id ? a.pci_bus_id < b.pci_bus_id : a.name < b.name;
  });
  t.nics = std::move(nics);

  if (!t.gpus.empty() && std::all_of(t.gpus.begin(), t.gpus.end(), [&](const Gpu& g) {
        return !g.model.empty() && g.model == t.gpus[0].model;
      })) {
    t.gpu_model = t.gpus[0].model;
  }
  t.nvswitch_count = static_cast<int>(nvswitches.size());
  ReadNvlinks(topo, gpu_of_obj, nvswitches, &c);
  return c;
}

Status Finish(Conversion* c) {
  NodeTopology& t = c->topology;
  for (size_t i = 0; i < t.nics.size(); ++i) {
    t.nics[i].index = static_cast<int>(i);
    if (t.nics[i].name.empty()) t.nics[i].name = "NIC" + std::to_string(i);
  }
  if (c->nvlinks.size() != t.gpus.size()) {
    c->nvlinks.assign(t.gpus.size(), std::vector<int>(t.gpus.size(), 0));
  }
  t.ResetPaths();
  t.DerivePathsFromStructure(c->nvlinks);
  if (!c->nvlink_known) t.InferNvSwitch();
  t.CompleteNumaNodes();
  Status s = t.Validate();
  if (!s.ok()) return s.WithPrefix(t.source);
  return OkStatus();
}

}  // namespace

StatusOr<NodeTopology> ToNodeTopology(hwloc_topology_t topo, const std::string& source,
                                      const std::function<void(NodeTopology*)>& before_paths) {
  ASSIGN_OR_RETURN(Conversion c, Convert(topo, source));
  if (before_paths) before_paths(&c.topology);
  RETURN_IF_ERROR(Finish(&c));
  return std::move(c.topology);
}

}  // namespace hwloc_internal

namespace {

using hwloc_internal::kMaxXmlBytes;

using hwloc_internal::TopologyPtr;

// hwloc 3.x osdev_type bitmask -> hwloc 2.x enum value.
int DowngradeOsdevType(long long mask) {
  if (mask & 32) return HWLOC_OBJ_OSDEV_OPENFABRICS;
  if (mask & 16) return HWLOC_OBJ_OSDEV_NETWORK;
  if (mask & 8) return HWLOC_OBJ_OSDEV_COPROC;
  if (mask & 4) return HWLOC_OBJ_OSDEV_GPU;
  if (mask & 64) return HWLOC_OBJ_OSDEV_DMA;
  return HWLOC_OBJ_OSDEV_BLOCK;  // storage, memory
}

void DowngradeElement(tinyxml2::XMLElement* e) {
  for (; e != nullptr; e = e->NextSiblingElement()) {
    if (const char* v = e->Attribute("osdev_type"); v != nullptr) {
      auto mask = ParseInt(v);
      if (mask.ok()) e->SetAttribute("osdev_type", DowngradeOsdevType(*mask));
    }
    DowngradeElement(e->FirstChildElement());
  }
}

// hwloc bitmap text: comma-separated 32-bit hex words, most significant first, empty words
// meaning 0, optionally led by "0xf...f" for an infinite set. hwloc's reader counts the words by
// the commas after the first character, so a set that starts with a comma makes it read one word
// more than it counted and abort on its assertion (found by fuzzing, fuzz/regressions/hwloc_xml):
// refused here.
bool IsHwlocBitmap(std::string_view text) {
  if (text.empty() || text.size() > 65536 || text.front() == ',') return false;
  bool first = true;
  for (const std::string& word : Split(text, ',')) {
    std::string_view w = word;
    if (first && w == "0xf...f") {
      first = false;
      continue;
    }
    first = false;
    if (StartsWith(w, "0x")) w.remove_prefix(2);
    if (w.size() > 8) return false;
    for (char c : w) {
      if (!std::isxdigit(static_cast<unsigned char>(c))) return false;
    }
  }
  return true;
}

bool IsNormalOrMemoryType(std::string_view type) {
  static const std::set<std::string_view> kTypes = {
      "Machine",  "System",  "Package",  "Socket",   "Die",     "Core",    "PU",
      "NUMANode", "Group",   "MemCache", "Cache",    "L1Cache", "L2Cache", "L3Cache",
      "L4Cache",  "L5Cache", "L1iCache", "L2iCache", "L3iCache"};
  return kTypes.count(type) != 0;
}

// libhwloc trusts its XML: an object without its sets, or a set that is not a bitmap, crashes
// it inside hwloc_topology_load(). Such input is refused here, with the line.
Status ValidateObjects(const tinyxml2::XMLElement* e, const std::string& source, bool v3) {
  static const char* const kSetAttrs[] = {"cpuset",         "complete_cpuset", "allowed_cpuset",
                                          "online_cpuset",  "nodeset",         "complete_nodeset",
                                          "allowed_nodeset"};
  static const char* const kRequiredV2[] = {"cpuset", "complete_cpuset", "nodeset",
                                            "complete_nodeset"};
  for (; e != nullptr; e = e->NextSiblingElement()) {
    auto fail = [&](const std::string& what) {
      return InvalidArgumentError(source + ":" + std::to_string(e->GetLineNum()) + ": <" +
                                  e->Name() + ">: " + what);
    };
    // Sizes hwloc allocates from: an absurd value is an allocation of gigabytes.
    if (const char* nb = e->Attribute("nbobjs"); nb != nullptr) {
      auto n = ParseInt(nb);
      if (!n.ok() || *n < 1 || *n > 4096) return fail("nbobjs=\"" + std::string(nb) + "\"");
    }
    if (const char* len = e->Attribute("length"); len != nullptr) {
      auto n = ParseInt(len);
      if (!n.ok() || *n < 0 || *n > static_cast<long long>(kMaxXmlBytes)) {
        return fail("length=\"" + std::string(len) + "\"");
      }
    }
    // hwloc fails the whole load on an <info> with another attribute or without its name (and
    // leaks the objects it had built: found by fuzzing, fuzz/regressions/hwloc_xml).
    if (std::strcmp(e->Name(), "info") == 0) {
      for (const tinyxml2::XMLAttribute* a = e->FirstAttribute(); a != nullptr; a = a->Next()) {
        if (std::strcmp(a->Name(), "name") != 0 && std::strcmp(a->Name(), "value") != 0) {
          return fail(std::string("attribute \"") + a->Name() + "\" (expected name and value)");
        }
      }
      if (e->Attribute("name") == nullptr) return fail("info without name");
    }
    if (std::strcmp(e->Name(), "object") == 0) {
      const char* type = e->Attribute("type");
      if (type == nullptr) return fail("object without type");
      // hwloc stores these numbers in enums unchecked.
      if (const char* ot = e->Attribute("osdev_type"); ot != nullptr) {
        auto n = ParseInt(ot);
        if (!n.ok() || *n < 0 || *n > (v3 ? 127 : HWLOC_OBJ_OSDEV_COPROC)) {
          return fail("osdev_type=\"" + std::string(ot) + "\"");
        }
      }
      if (const char* bt = e->Attribute("bridge_type"); bt != nullptr) {
        std::string_view b = bt;
        if (b.size() != 3 || (b[0] != '0' && b[0] != '1') || b[1] != '-' ||
            (b[2] != '0' && b[2] != '1')) {
          return fail("bridge_type=\"" + std::string(bt) + "\"");
        }
      }
      for (const char* attr : kSetAttrs) {
        const char* v = e->Attribute(attr);
        if (v != nullptr && !IsHwlocBitmap(v)) {
          return fail(std::string(attr) + "=\"" + std::string(v).substr(0, 64) +
                      "\" is not an hwloc bitmap");
        }
      }
      if (IsNormalOrMemoryType(type)) {
        for (const char* attr : kRequiredV2) {
          if (e->Attribute(attr) == nullptr) {
            return fail(std::string(type) + " object without " + attr);
          }
        }
      }
    }
    RETURN_IF_ERROR(ValidateObjects(e->FirstChildElement(), source, v3));
  }
  return OkStatus();
}

// Checks the XML with tinyxml2 (hwloc's own errors carry no line) and returns the text hwloc
// 2.9 can load.
StatusOr<std::string> PrepareXml(std::string_view text, const std::string& source) {
  tinyxml2::XMLDocument doc;
  if (doc.Parse(text.data(), text.size()) != tinyxml2::XML_SUCCESS) {
    return InvalidArgumentError(
        source + ":" + std::to_string(std::max(1, doc.ErrorLineNum())) +
        ": malformed XML: " + tinyxml2::XMLDocument::ErrorIDToName(doc.ErrorID()));
  }
  tinyxml2::XMLElement* root = doc.RootElement();
  if (root == nullptr || std::strcmp(root->Name(), "topology") != 0) {
    return InvalidArgumentError(source + ": not an hwloc XML topology (root element <" +
                                std::string(root == nullptr ? "" : root->Name()) +
                                ">, expected <topology>)");
  }
  // hwloc 2.x and 3.x write version="2.0" and "3.0"; 1.x wrote none (or 1.x). libhwloc's
  // importer of the 1.x layout crashes on objects without their sets (found by fuzzing: a
  // <topology> without a version whose Machine has no cpuset; a 1.x NUMANode without
  // complete_cpuset), and 1.x files carry no NVLink matrix: refused, naming what to use.
  const char* version = root->Attribute("version");
  const bool v3 = version != nullptr && StartsWith(version, "3.");
  const bool v2 = v3 || (version != nullptr && StartsWith(version, "2."));
  if (!v2) {
    const std::string shown = version == nullptr ? "" : std::string(version).substr(0, 16);
    return InvalidArgumentError(
        source + ":" + std::to_string(root->GetLineNum()) + ": <topology> version=\"" + shown +
        "\": only hwloc XML 2.x and 3.x are read (hwloc 1.x files are not: export again with "
        "lstopo from hwloc 2.0 or later)");
  }
  const tinyxml2::XMLElement* top = root->FirstChildElement("object");
  if (top == nullptr || top->Attribute("type") == nullptr ||
      !(std::strcmp(top->Attribute("type"), "Machine") == 0 ||
        std::strcmp(top->Attribute("type"), "System") == 0)) {
    return InvalidArgumentError(source + ": hwloc XML without a Machine root object");
  }
  RETURN_IF_ERROR(ValidateObjects(root->FirstChildElement(), source, v3));
  if (!v3) return std::string(text);
  root->SetAttribute("version", "2.0");
  DowngradeElement(root->FirstChildElement());
  tinyxml2::XMLPrinter printer;
  doc.Print(&printer);
  return std::string(printer.CStr());
}

}  // namespace

StatusOr<NodeTopology> ParseHwlocXml(const std::string& text, const std::string& source) {
  if (text.size() > kMaxXmlBytes) {
    return InvalidArgumentError(source + ": hwloc XML larger than 64 MiB");
  }
  ASSIGN_OR_RETURN(std::string xml, PrepareXml(text, source));
  hwloc_topology_t raw = nullptr;
  if (hwloc_topology_init(&raw) != 0) {
    return InternalError(source + ": hwloc_topology_init failed: " + std::strerror(errno));
  }
  TopologyPtr topo(raw);
  hwloc_topology_set_io_types_filter(raw, HWLOC_TYPE_FILTER_KEEP_ALL);
  // Size includes the terminating NUL, as hwloc_topology_export_xmlbuffer() reports it. A failed
  // set must not fall through to load(), which would then read the local machine.
  if (hwloc_topology_set_xmlbuffer(raw, xml.c_str(), static_cast<int>(xml.size() + 1)) != 0) {
    return InvalidArgumentError(source +
                                ": hwloc cannot read the XML buffer: " + std::strerror(errno));
  }
  if (hwloc_topology_load(raw) != 0) {
    return InvalidArgumentError(source +
                                ": hwloc could not load the XML topology: " + std::strerror(errno));
  }
  return hwloc_internal::ToNodeTopology(raw, "hwloc:" + source, nullptr);
}

StatusOr<NodeTopology> ReadHwlocXmlFile(const std::string& path) {
  ASSIGN_OR_RETURN(std::string text, ReadFileBounded(path, kMaxXmlBytes, "this input"));
  return ParseHwlocXml(text, path);
}

bool LooksLikeHwlocXml(std::string_view text) {
  return text.find("<topology") != std::string_view::npos;
}

}  // namespace toposched::topo::io
