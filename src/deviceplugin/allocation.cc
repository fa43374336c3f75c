#include "deviceplugin/allocation.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <filesystem>
#include <limits>
#include <set>

#include "core/strings.h"
#include "select/rank_order.h"
#include "select/ring.h"

namespace toposched::deviceplugin {

namespace {

// Two set times within this relative distance are a tie (NodeSelector's own tolerance).
constexpr double kTieRelative = 1e-9;

std::string JoinIds(const std::vector<std::string>& parts, const char* sep) {
  std::string out;
  for (const std::string& p : parts) out += (out.empty() ? "" : sep) + p;
  return out;
}

std::vector<std::string> IdsOf(const DeviceTable& devices, std::span<const int> positions) {
  std::vector<std::string> out;
  for (int pos : positions) out.push_back(devices.at(pos).id);
  return out;
}

// The fastest completion of `must` with `extra` more GPUs of `pool`, every one priced.
sched::GpuMask BestCompletion(const sched::NodeSelector& sel, const sched::GpuMask& must,
                              const std::vector<int>& pool, int extra,
                              const sched::NodeRequest& req) {
  sched::GpuMask best = must;
  double best_ms = std::numeric_limits<double>::infinity();
  auto consider = [&](const sched::GpuMask& set) {
    const double ms = sel.SetTimeMs(set, req);
    if (ms < best_ms * (1 - kTieRelative)) {
      best_ms = ms;
      best = set;
    }
  };
  if (extra == 0) return must;
  const uint32_t end = uint32_t{1} << pool.size();
  for (uint32_t local = (uint32_t{1} << extra) - 1; local < end;) {
    sched::GpuMask set = must;
    for (uint32_t bits = local; bits != 0; bits &= bits - 1) set.set(pool[std::countr_zero(bits)]);
    consider(set);
    const uint32_t low = local & -local;  // Gosper's hack: the next subset of the same size
    const uint32_t ripple = local + low;
    local = (((ripple ^ local) >> 2) / low) | ripple;
  }
  return best;
}

// Above 16 GPUs: grow from `must`, each step adding the GPU of `pool` that keeps the set
// fastest (SetTimeMs of the partial set as a request of its own size).
sched::GpuMask GreedyCompletion(const sched::NodeSelector& sel, sched::GpuMask set,
                                const std::vector<int>& pool, int extra) {
  for (int step = 0; step < extra; ++step) {
    int best = -1;
    double best_ms = std::numeric_limits<double>::infinity();
    for (int pos : pool) {
      if (set.test(pos)) continue;
      sched::GpuMask trial = set;
      trial.set(pos);
      sched::NodeRequest req;
      req.gpus = trial.count();
      const double ms = sel.SetTimeMs(trial, req);
      if (best < 0 || ms < best_ms * (1 - kTieRelative)) {
        best = pos;
        best_ms = ms;
      }
    }
    set.set(best);
  }
  return set;
}

std::vector<int> BestRingOrder(const sched::NodeSelector& sel, std::vector<int> positions) {
  std::sort(positions.begin(), positions.end());
  if (positions.size() <= 2) return positions;
  return sched::BestRing(sel.pairs(), positions).order;
}

// The ordinal each GPU has inside a container that sees exactly `ring`'s GPUs with
// CUDA_DEVICE_ORDER=PCI_BUS_ID: by PCI bus id when every GPU has one, else by index.
std::vector<int> ContainerOrdinals(const topo::NodeTopology& t, const std::vector<int>& ring) {
  bool all_bus = true;
  for (int pos : ring) all_bus = all_bus && !NormalizeBusId(t.gpus[pos].pci_bus_id).empty();
  std::vector<int> sorted = ring;
  std::sort(sorted.begin(), sorted.end(), [&](int a, int b) {
    if (all_bus) return NormalizeBusId(t.gpus[a].pci_bus_id) < NormalizeBusId(t.gpus[b].pci_bus_id);
    return t.gpus[a].index < t.gpus[b].index;
  });
  std::vector<int> out;
  for (int pos : ring) {
    out.push_back(static_cast<int>(std::find(sorted.begin(), sorted.end(), pos) - sorted.begin()));
  }
  return out;
}

void AddDeviceNode(const std::string& dev_root, const std::string& rel,
                   std::vector<DeviceNodeSpec>* out) {
  const std::string host = dev_root + "/" + rel;
  std::error_code ec;
  if (!std::filesystem::exists(host, ec)) return;
  for (const DeviceNodeSpec& d : *out) {
    if (d.host_path == host) return;
  }
  out->push_back({"/dev/" + rel, host, "rw"});
}

void AddRdmaDevices(const topo::NodeTopology& t, const sched::RankLayout& layout,
                    const PluginOptions& o, std::vector<DeviceNodeSpec>* out) {
  std::set<int> nics;
  for (const sched::RankPlacement& r : layout.ranks) {
    if (r.nic >= 0) nics.insert(r.nic);
  }
  bool any = false;
  for (int nic : nics) {
    const std::filesystem::path verbs = std::filesystem::path(o.sys_root) / "class/infiniband" /
                                        t.nics[nic].name / "device/infiniband_verbs";
    std::error_code ec;
    std::vector<std::string> names;
    for (const auto& e : std::filesystem::directory_iterator(verbs, ec)) {
      const std::string name = e.path().filename().string();
      if (StartsWith(name, "uverbs")) names.push_back(name);
    }
    std::sort(names.begin(), names.end());
    for (const std::string& name : names) {
      const size_t before = out->size();
      AddDeviceNode(o.dev_root, "infiniband/" + name, out);
      any = any || out->size() > before;
    }
  }
  if (any) AddDeviceNode(o.dev_root, "infiniband/rdma_cm", out);
}

}  // namespace

StatusOr<std::vector<std::string>> PreferredDevices(const sched::NodeSelector& selector,
                                                    const DeviceTable& devices,
                                                    std::span<const std::string> available,
                                                    std::span<const std::string> must_include,
                                                    int size) {
  ASSIGN_OR_RETURN(std::vector<int> avail, devices.Positions(available, "available_deviceIDs"));
  ASSIGN_OR_RETURN(std::vector<int> must,
                   devices.Positions(must_include, "must_include_deviceIDs"));
  if (size < 1 || static_cast<size_t>(size) > avail.size()) {
    return InvalidArgumentError("allocation_size: expected 1.." + std::to_string(avail.size()) +
                                " (the available devices), got " + std::to_string(size));
  }
  if (must.size() > static_cast<size_t>(size)) {
    return InvalidArgumentError("must_include_deviceIDs: " + std::to_string(must.size()) +
                                " devices, more than the allocation size " + std::to_string(size));
  }
  const sched::GpuMask free = sched::GpuMask::FromPositions(avail);
  const sched::GpuMask must_mask = sched::GpuMask::FromPositions(must);
  if ((must_mask & free) != must_mask) {
    return InvalidArgumentError(
        "must_include_deviceIDs: " + IdsOf(devices, (must_mask & ~free).Positions()).front() +
        " is not among the available devices");
  }
  sched::NodeRequest req;
  req.gpus = size;
  ASSIGN_OR_RETURN(std::shared_ptr<const sched::NodeChoice> choice, selector.Select(free, req));
  if (choice->fit != sched::Fit::kFit) {
    return FailedPreconditionError(std::string("no preferred allocation (") +
                                   sched::FitName(choice->fit) + "): " + choice->reason);
  }
  if ((choice->gpus & must_mask) == must_mask) return IdsOf(devices, choice->order);
  std::vector<int> pool;
  for (int pos : (free & selector.healthy() & ~must_mask).Positions()) pool.push_back(pos);
  const int extra = size - static_cast<int>(must.size());
  if (static_cast<int>(pool.size()) < extra) {
    return FailedPreconditionError("no preferred allocation: " + std::to_string(pool.size()) +
                                   " healthy devices besides the must-include ones, " +
                                   std::to_string(extra) + " needed");
  }
  const sched::GpuMask set = pool.size() <= 16
                                 ? BestCompletion(selector, must_mask, pool, extra, req)
                                 : GreedyCompletion(selector, must_mask, pool, extra);
  return IdsOf(devices, BestRingOrder(selector, set.Positions()));
}

StatusOr<ContainerAllocation> PlanAllocation(const sched::NodeSelector& selector,
                                             const DeviceTable& devices,
                                             std::span<const std::string> ids,
                                             const PluginOptions& options) {
  if (ids.empty()) return InvalidArgumentError("devicesIDs: empty; expected at least one device");
  ASSIGN_OR_RETURN(std::vector<int> positions, devices.Positions(ids, "devicesIDs"));
  const topo::NodeTopology& t = selector.topology();
  ContainerAllocation a;
  a.ring = BestRingOrder(selector, positions);
  const sched::RankLayout layout = sched::LayOutRanks(t, a.ring, 1);
  auto env_of = [&](const std::string& key) -> std::string {
    for (const auto& [k, v] : layout.env) {
      if (k == key) return v;
    }
    return "";
  };
  std::vector<std::string> ring_ids, uuids, host_indices;
  for (int pos : a.ring) {
    ring_ids.push_back(devices.at(pos).id);
    if (!devices.at(pos).uuid.empty()) uuids.push_back(devices.at(pos).uuid);
    host_indices.push_back(std::to_string(t.gpus[pos].index));
  }
  std::vector<std::string> ordinals;
  for (int o : ContainerOrdinals(t, a.ring)) ordinals.push_back(std::to_string(o));
  a.envs.emplace_back("NVIDIA_VISIBLE_DEVICES", JoinIds(ring_ids, ","));
  a.envs.emplace_back("CUDA_DEVICE_ORDER", "PCI_BUS_ID");
  a.envs.emplace_back("CUDA_VISIBLE_DEVICES",
                      JoinIds(uuids.size() == a.ring.size() ? uuids : ordinals, ","));
  if (std::string hca = env_of("NCCL_IB_HCA"); !hca.empty())
    a.envs.emplace_back("NCCL_IB_HCA", hca);
  if (!options.nccl_topo_file.empty()) {
    a.envs.emplace_back("NCCL_TOPO_FILE", options.nccl_topo_container_path);
    a.mounts.push_back({options.nccl_topo_container_path, options.nccl_topo_file, true});
  }
  a.envs.emplace_back("TOPOSCHED_RING", JoinIds(host_indices, ","));
  for (const char* key : {"TOPOSCHED_NUMA_NODES", "TOPOSCHED_CPU_LISTS"}) {
    if (std::string v = env_of(key); !v.empty()) a.envs.emplace_back(key, v);
  }
  for (int pos : a.ring) {
    const GpuDevice& d = devices.at(pos);
    AddDeviceNode(options.dev_root, "nvidia" + std::to_string(d.minor >= 0 ? d.minor : d.index),
                  &a.devices);
  }
  for (const char* control : {"nvidiactl", "nvidia-uvm", "nvidia-uvm-tools"}) {
    AddDeviceNode(options.dev_root, control, &a.devices);
  }
  AddRdmaDevices(t, layout, options, &a.devices);
  if (options.cdi) {
    for (const std::string& id : ring_ids) a.cdi_devices.push_back(options.cdi_kind + "=" + id);
  }
  return a;
}

}  // namespace toposched::deviceplugin
