#include "sched/cluster_state.h"

#include <algorithm>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "core/file.h"

namespace toposched::sched {
namespace {

using topo::Health;

std::string Quote(const std::string& s) { return "\"" + s + "\""; }

bool Usable(uint8_t health) { return static_cast<Health>(health) != Health::kUnhealthy; }

GpuMask AllOf(int gpu_count) { return GpuMask::FirstN(gpu_count); }

// --- the steps of ClusterState::CheckInvariants, in the order it runs them ---

// What the steps read of the state. Its records are private types, so the view is a template
// over their vectors, and the state's private helpers come as callables.
template <typename NodeRecs, typename AllocRecs>
struct InvariantView {
  const topo::Cluster& cluster;
  const NodeRecs& nodes;
  const std::vector<int32_t>& holders;
  const std::vector<uint8_t>& gpu_health;
  const AllocRecs& allocs;
  const std::unordered_map<int64_t, int32_t>& index;
  const std::unordered_map<uint32_t, ClusterState::SharedGpu>& shared;
  int32_t shared_holder;                      // the holders value of a shared GPU (kShared)
  std::function<std::string(int)> node_name;  // ClusterState::NodeName
  std::function<GpuMask(const typename NodeRecs::value_type&)> compute_free;  // ComputeFree
};

// The fractional allocations on each shared GPU, recomputed: global GPU index → (milli, count).
using SharedTally = std::unordered_map<uint32_t, std::pair<int64_t, size_t>>;

// Per node: holders agree with the held mask and with their allocation; cached masks. Adds the
// GPUs held to *held_total.
template <typename View>
Status CheckNodeRecords(const View& v, size_t* held_total) {
  for (int n = 0; n < static_cast<int>(v.nodes.size()); ++n) {
    const auto& rec = v.nodes[n];
    if (rec.gpu_count != v.cluster.topology(n).gpus.size()) {
      return InternalError(v.node_name(n) + ": gpu_count " + std::to_string(rec.gpu_count) +
                           ", topology has " + std::to_string(v.cluster.topology(n).gpus.size()));
    }
    GpuMask held, healthy;
    for (int g = 0; g < rec.gpu_count; ++g) {
      const int32_t slot = v.holders[rec.gpu_offset + g];
      if (Usable(v.gpu_health[rec.gpu_offset + g])) healthy.set(g);
      if (slot == -1) continue;
      held.set(g);
      const std::string where = "GPU " + std::to_string(g) + " of " + v.node_name(n);
      if (slot == v.shared_holder) {
        auto it = v.shared.find(rec.gpu_offset + g);
        if (it == v.shared.end() || it->second.node != n || it->second.gpu != g) {
          return InternalError(where + ": marked shared but has no shared-GPU record");
        }
        continue;
      }
      if (slot < 0) return InternalError(where + ": bad holder slot " + std::to_string(slot));
      if (slot >= static_cast<int32_t>(v.allocs.size()) || v.allocs[slot].parts.empty()) {
        return InternalError(where + ": holder slot " + std::to_string(slot) + " is not in use");
      }
      bool listed = false;
      for (const NodeGpus& p : v.allocs[slot].parts) listed |= p.node == n && p.gpus.test(g);
      if (!listed) {
        return InternalError(where + ": held by allocation " + std::to_string(v.allocs[slot].id) +
                             " which does not list it");
      }
    }
    if (held != rec.held) {
      return InternalError(v.node_name(n) + ": held mask " + rec.held.ToString() +
                           ", holders say " + held.ToString());
    }
    if (healthy != rec.healthy) {
      return InternalError(v.node_name(n) + ": healthy mask " + rec.healthy.ToString() +
                           ", GPU health says " + healthy.ToString());
    }
    if (v.compute_free(rec) != rec.free) {
      return InternalError(v.node_name(n) + ": free mask " + rec.free.ToString() + ", recomputed " +
                           v.compute_free(rec).ToString());
    }
    *held_total += held.count();
  }
  return OkStatus();
}

// A fractional allocation (slot `slot`): one GPU in range, shared, whose record lists the slot
// once. Adds its milli to *fresh_shared.
template <typename View, typename AllocRec>
Status CheckFractional(const View& v, size_t slot, const AllocRec& a, const std::string& who,
                       SharedTally* fresh_shared) {
  const int n_nodes = static_cast<int>(v.nodes.size());
  if (a.parts.size() != 1 || a.parts[0].gpus.count() != 1 || a.parts[0].node < 0 ||
      a.parts[0].node >= n_nodes ||
      a.parts[0].gpus.lowest() >= v.nodes[a.parts[0].node].gpu_count) {
    return InternalError(who + ": fractional allocation must hold exactly one GPU in range");
  }
  const int node = a.parts[0].node, g = a.parts[0].gpus.lowest();
  const uint32_t gi = v.nodes[node].gpu_offset + g;
  auto it = v.shared.find(gi);
  if (v.holders[gi] != v.shared_holder || it == v.shared.end() ||
      std::count(it->second.slots.begin(), it->second.slots.end(), static_cast<int32_t>(slot)) !=
          1) {
    return InternalError(who + " (fractional, " + std::to_string(a.milli) + " milli) lists GPU " +
                         std::to_string(g) + " of " + v.node_name(node) +
                         " but the GPU's shared record does not list it once");
  }
  auto& f = (*fresh_shared)[gi];
  f.first += a.milli;
  ++f.second;
  return OkStatus();
}

// Per allocation: every listed GPU's holder is this allocation (catches double holding); a
// fractional allocation's GPU is shared and lists it. Shared milli recomputed from scratch into
// *fresh_shared; the whole GPUs listed are added to *listed_total. The id index has exactly the
// slots in use.
template <typename View>
Status CheckAllocationRecords(const View& v, size_t* listed_total, SharedTally* fresh_shared) {
  const int n_nodes = static_cast<int>(v.nodes.size());
  size_t used = 0;
  for (size_t slot = 0; slot < v.allocs.size(); ++slot) {
    const auto& a = v.allocs[slot];
    if (a.parts.empty()) continue;
    ++used;
    const std::string who = "allocation " + std::to_string(a.id);
    auto it = v.index.find(a.id);
    if (it == v.index.end() || it->second != static_cast<int32_t>(slot)) {
      return InternalError(who + ": id index does not point at slot " + std::to_string(slot));
    }
    if (a.milli < 0 || a.milli > 999) {
      return InternalError(who + ": milli " + std::to_string(a.milli) + " out of range");
    }
    if (a.milli > 0) {
      RETURN_IF_ERROR(CheckFractional(v, slot, a, who, fresh_shared));
      continue;
    }
    for (const NodeGpus& p : a.parts) {
      if (p.node < 0 || p.node >= n_nodes) {
        return InternalError(who + ": node id " + std::to_string(p.node) + " out of range");
      }
      for (int g : p.gpus.Positions()) {
        const int32_t h =
            g < v.nodes[p.node].gpu_count ? v.holders[v.nodes[p.node].gpu_offset + g] : -2;
        if (h != static_cast<int32_t>(slot)) {
          return InternalError(who + " lists GPU " + std::to_string(g) + " of " +
                               v.node_name(p.node) + " but its holder is " +
                               (h >= 0 ? "allocation " + std::to_string(v.allocs[h].id)
                                       : std::string(h == -1 ? "none" : "out of range")));
        }
        ++*listed_total;
      }
    }
  }
  if (used != v.index.size()) {
    return InternalError("id index has " + std::to_string(v.index.size()) + " entries, " +
                         std::to_string(used) + " slots in use");
  }
  return OkStatus();
}

// Shared GPUs: the record of each equals the sum over its fractional allocations, and the
// records' milli sum to `shared_milli` (the incremental total).
template <typename View>
Status CheckSharedGpus(const View& v, const SharedTally& fresh_shared, int64_t shared_milli) {
  if (fresh_shared.size() != v.shared.size()) {
    return InternalError("shared GPUs: " + std::to_string(v.shared.size()) + " records, " +
                         std::to_string(fresh_shared.size()) + " GPUs with fractional allocations");
  }
  int64_t milli_total = 0;
  for (const auto& [gi, sh] : v.shared) {
    const std::string where =
        "shared GPU " + std::to_string(sh.gpu) + " of " + v.node_name(sh.node);
    auto it = fresh_shared.find(gi);
    if (it == fresh_shared.end()) return InternalError(where + ": no fractional allocation on it");
    if (it->second.first != sh.used_milli || it->second.second != sh.slots.size()) {
      return InternalError(where + ": used milli incremental " + std::to_string(sh.used_milli) +
                           " over " + std::to_string(sh.slots.size()) +
                           " allocations, recomputed " + std::to_string(it->second.first) +
                           " over " + std::to_string(it->second.second));
    }
    if (sh.used_milli < 1 || sh.used_milli > 1000) {
      return InternalError(where + ": used milli " + std::to_string(sh.used_milli) +
                           " outside [1, 1000]");
    }
    milli_total += sh.used_milli;
  }
  if (milli_total != shared_milli) {
    return InternalError("shared milli incremental " + std::to_string(shared_milli) +
                         ", recomputed " + std::to_string(milli_total));
  }
  return OkStatus();
}

// The incremental aggregates (inc, inc_hist) against those summed from scratch (fresh,
// fresh_hist): network domains [0, num_domains), NVLink domains, the cluster; `width` histogram
// entries (nodes per free-GPU count) each.
template <typename Aggs>
Status CompareAggregates(const topo::Cluster& cluster, int num_domains, int num_nvlink, int width,
                         const Aggs& inc, const std::vector<int32_t>& inc_hist, const Aggs& fresh,
                         const std::vector<int32_t>& fresh_hist) {
  for (size_t agg = 0; agg < fresh.size(); ++agg) {
    const int ai = static_cast<int>(agg);
    const std::string name =
        ai < num_domains ? "domain " + Quote(cluster.domains[ai].name)
        : ai < num_domains + num_nvlink
            ? "NVLink domain " + Quote(cluster.nvlink_domains[ai - num_domains].name)
            : std::string("cluster");
    auto cmp = [&](const char* field, long long incremental, long long recomputed) -> Status {
      if (incremental == recomputed) return OkStatus();
      return InternalError(name + ": " + field + " incremental " + std::to_string(incremental) +
                           ", recomputed " + std::to_string(recomputed));
    };
    RETURN_IF_ERROR(cmp("free_gpus", inc[agg].free, fresh[agg].free));
    RETURN_IF_ERROR(cmp("fully_free_nodes", inc[agg].fully_free, fresh[agg].fully_free));
    RETURN_IF_ERROR(cmp("healthy_gpus", inc[agg].healthy, fresh[agg].healthy));
    RETURN_IF_ERROR(cmp("total_gpus", inc[agg].total, fresh[agg].total));
    for (int k = 0; k < width; ++k) {
      const size_t i = agg * width + k;
      if (inc_hist[i] != fresh_hist[i]) {
        return InternalError(name + ": nodes with " + std::to_string(k) +
                             " free GPUs incremental " + std::to_string(inc_hist[i]) +
                             ", recomputed " + std::to_string(fresh_hist[i]));
      }
    }
  }
  return OkStatus();
}

}  // namespace

StatusOr<ClusterState> ClusterState::Create(const topo::Cluster& cluster) {
  static_assert(sizeof(NodeRec) == 56, "node record layout documented in the header");
  ClusterState s;
  s.cluster_ = &cluster;
  s.num_domains_ = static_cast<int>(cluster.domains.size());
  s.num_nvlink_ = static_cast<int>(cluster.nvlink_domains.size());
  const int n_nodes = static_cast<int>(cluster.nodes.size());
  s.nodes_.resize(n_nodes);
  uint32_t offset = 0;
  for (int n = 0; n < n_nodes; ++n) {
    const topo::NodeTopology& t = cluster.topology(n);
    const int g = static_cast<int>(t.gpus.size());
    if (g > GpuMask::kMaxGpus) {
      return InvalidArgumentError("node " + Quote(cluster.nodes[n].name) + " has " +
                                  std::to_string(g) + " GPUs; at most " +
                                  std::to_string(GpuMask::kMaxGpus) + " are supported");
    }
    NodeRec& rec = s.nodes_[n];
    rec.gpu_offset = offset;
    rec.gpu_count = static_cast<uint8_t>(g);
    rec.health = static_cast<uint8_t>(cluster.nodes[n].health);
    for (int i = 0; i < g; ++i) {
      s.gpu_health_.push_back(static_cast<uint8_t>(t.gpus[i].health));
      if (Usable(s.gpu_health_.back())) rec.healthy.set(i);
    }
    rec.free = ComputeFree(rec);
    offset += g;
    s.max_gpus_ = std::max(s.max_gpus_, g);
  }
  s.holders_.assign(offset, -1);
  s.gpu_health_.shrink_to_fit();
  s.ComputeAggregates(s.aggs_, s.hist_);
  return s;
}

GpuMask ClusterState::ComputeFree(const NodeRec& n) {
  if (!Usable(n.health) || n.drained) return GpuMask();
  return n.healthy & ~n.held & AllOf(n.gpu_count);
}

ClusterState::Contribution ClusterState::ContributionOf(const NodeRec& n) const {
  Contribution c;
  c.free = n.free.count();
  c.healthy = Usable(n.health) ? n.healthy.count() : 0;
  return c;
}

void ClusterState::AddToAgg(std::vector<Agg>& aggs, std::vector<int32_t>& hist, int width, int agg,
                            int gpu_count, Contribution c, int sign) {
  Agg& a = aggs[agg];
  a.free += sign * c.free;
  a.healthy += sign * c.healthy;
  if (gpu_count > 0 && c.free == gpu_count) a.fully_free += sign;
  hist[static_cast<size_t>(agg) * width + c.free] += sign;
}

void ClusterState::ComputeAggregates(std::vector<Agg>& aggs, std::vector<int32_t>& hist) const {
  const int width = max_gpus_ + 1;
  const int n_aggs = num_domains_ + num_nvlink_ + 1;
  aggs.assign(n_aggs, Agg{});
  hist.assign(static_cast<size_t>(n_aggs) * width, 0);
  const int n_nodes = static_cast<int>(nodes_.size());
  for (int n = 0; n < n_nodes; ++n) {
    const NodeRec& rec = nodes_[n];
    const Contribution c = ContributionOf(rec);
    auto add = [&](int agg) {
      AddToAgg(aggs, hist, width, agg, rec.gpu_count, c, +1);
      aggs[agg].total += rec.gpu_count;
    };
    for (int d = cluster_->nodes[n].domain; d != -1; d = cluster_->domains[d].parent) add(d);
    const int nvd = cluster_->nodes[n].nvlink_domain;
    if (nvd >= 0) add(num_domains_ + nvd);
    add(ClusterAgg());
  }
}

void ClusterState::Propagate(int node, Contribution before, Contribution after) {
  if (before == after) return;
  const int width = max_gpus_ + 1;
  const int g = nodes_[node].gpu_count;
  auto apply = [&](int agg) {
    AddToAgg(aggs_, hist_, width, agg, g, before, -1);
    AddToAgg(aggs_, hist_, width, agg, g, after, +1);
  };
  for (int d = cluster_->nodes[node].domain; d != -1; d = cluster_->domains[d].parent) apply(d);
  const int nvd = cluster_->nodes[node].nvlink_domain;
  if (nvd >= 0) apply(num_domains_ + nvd);
  apply(ClusterAgg());
}

void ClusterState::Refresh(int node, Contribution before) {
  NodeRec& rec = nodes_[node];
  rec.free = ComputeFree(rec);
  Propagate(node, before, ContributionOf(rec));
}

int ClusterState::Largest(int agg) const {
  const int width = max_gpus_ + 1;
  const int32_t* h = hist_.data() + static_cast<size_t>(agg) * width;
  for (int k = max_gpus_; k > 0; --k) {
    if (h[k] > 0) return k;
  }
  return 0;
}

Capacity ClusterState::CapacityOf(int agg) const {
  const Agg& a = aggs_[agg];
  return Capacity{a.free, a.fully_free, Largest(agg), a.healthy, a.total};
}

std::string ClusterState::NodeName(int node) const {
  return "node " + Quote(cluster_->nodes[node].name);
}

topo::Health ClusterState::GpuHealth(int node, int gpu) const {
  return static_cast<Health>(gpu_health_[nodes_[node].gpu_offset + gpu]);
}

std::optional<int64_t> ClusterState::Holder(int node, int gpu) const {
  const int32_t slot = holders_[nodes_[node].gpu_offset + gpu];
  if (slot < 0) return std::nullopt;
  return allocs_[slot].id;
}

int ClusterState::UsedMilli(int node, int gpu) const {
  const uint32_t gi = nodes_[node].gpu_offset + gpu;
  const int32_t slot = holders_[gi];
  if (slot == -1) return 0;
  if (slot >= 0) return 1000;
  auto it = shared_.find(gi);
  return it == shared_.end() ? 0 : it->second.used_milli;
}

std::vector<int64_t> ClusterState::SharedHolders(int node, int gpu) const {
  std::vector<int64_t> ids;
  auto it = shared_.find(nodes_[node].gpu_offset + gpu);
  if (it == shared_.end()) return ids;
  for (int32_t slot : it->second.slots) ids.push_back(allocs_[slot].id);
  std::sort(ids.begin(), ids.end());
  return ids;
}

std::vector<int64_t> ClusterState::Holders(int node, int gpu) const {
  if (std::optional<int64_t> h = Holder(node, gpu)) return {*h};
  return SharedHolders(node, gpu);
}

int ClusterState::AllocationMilli(int64_t alloc_id) const {
  auto it = index_.find(alloc_id);
  return it == index_.end() ? 0 : allocs_[it->second].milli;
}

std::string ClusterState::WhyTaken(int node, int gpu) const {
  const NodeRec& rec = nodes_[node];
  if (rec.held.test(gpu)) {
    if (Shared(node, gpu)) {
      std::string ids;
      for (int64_t id : SharedHolders(node, gpu)) {
        ids += (ids.empty() ? "" : ", ") + std::to_string(id);
      }
      return "is shared by fractional allocation" +
             std::string(SharedHolders(node, gpu).size() == 1 ? " " : "s ") + ids + " (" +
             std::to_string(UsedMilli(node, gpu)) + "/1000 milli used)";
    }
    return "is held by allocation " + std::to_string(*Holder(node, gpu));
  }
  if (!Usable(rec.health)) return "is on an unhealthy node";
  if (rec.drained) return "is on a drained node";
  return "is unhealthy";
}

const std::vector<NodeGpus>* ClusterState::Allocation(int64_t alloc_id) const {
  auto it = index_.find(alloc_id);
  return it == index_.end() ? nullptr : &allocs_[it->second].parts;
}

std::vector<int64_t> ClusterState::AllocationIds() const {
  std::vector<int64_t> ids;
  ids.reserve(index_.size());
  for (const auto& [id, slot] : index_) ids.push_back(id);
  std::sort(ids.begin(), ids.end());
  return ids;
}

void ClusterState::SetHolder(const NodeRec& rec, GpuMask gpus, int32_t slot) {
  for (; !gpus.empty();) {
    const int gpu = gpus.lowest();
    gpus.reset(gpu);
    holders_[rec.gpu_offset + gpu] = slot;
  }
}

Status ClusterState::Allocate(int64_t alloc_id, const std::vector<NodeGpus>& parts) {
  const std::string who = "allocation " + std::to_string(alloc_id);
  if (index_.count(alloc_id)) return Status(StatusCode::kAlreadyExists, who + " already exists");
  RETURN_IF_ERROR(CheckParts(who, parts, nullptr));
  Insert(alloc_id, parts);
  return OkStatus();
}

Status ClusterState::Resize(int64_t alloc_id, const std::vector<NodeGpus>& parts) {
  const std::string who = "allocation " + std::to_string(alloc_id);
  const std::vector<NodeGpus>* old = Allocation(alloc_id);
  if (old == nullptr) return NotFoundError(who + " not found");
  if (AllocationMilli(alloc_id) > 0) {
    return InvalidArgumentError(who + " is fractional (" +
                                std::to_string(AllocationMilli(alloc_id)) +
                                " milli of one GPU) and cannot be resized");
  }
  RETURN_IF_ERROR(CheckParts(who, parts, old));
  RETURN_IF_ERROR(Release(alloc_id));
  Insert(alloc_id, parts);
  return OkStatus();
}

Status ClusterState::CheckParts(const std::string& who, const std::vector<NodeGpus>& parts,
                                const std::vector<NodeGpus>* kept) const {
  if (parts.empty()) return InvalidArgumentError(who + ": no GPUs requested");
  const int n_nodes = static_cast<int>(nodes_.size());
  // Validate everything before touching anything: all or nothing.
  for (size_t i = 0; i < parts.size(); ++i) {
    const NodeGpus& p = parts[i];
    if (p.node < 0 || p.node >= n_nodes) {
      return InvalidArgumentError(who + ": node id " + std::to_string(p.node) + " out of range (" +
                                  std::to_string(n_nodes) + " nodes)");
    }
    for (size_t j = 0; j < i; ++j) {
      if (parts[j].node == p.node) {
        return InvalidArgumentError(who + ": " + NodeName(p.node) + " listed twice");
      }
    }
    const NodeRec& rec = nodes_[p.node];
    if (p.gpus.empty()) return InvalidArgumentError(who + ": empty GPU set on " + NodeName(p.node));
    const GpuMask outside = p.gpus & ~AllOf(rec.gpu_count);
    if (!outside.empty()) {
      return InvalidArgumentError(who + ": GPU " + std::to_string(outside.lowest()) + " of " +
                                  NodeName(p.node) + " out of range (node has " +
                                  std::to_string(rec.gpu_count) + " GPUs)");
    }
    GpuMask mine;
    if (kept != nullptr) {
      for (const NodeGpus& k : *kept) {
        if (k.node == p.node) mine = k.gpus;
      }
    }
    const GpuMask taken = p.gpus & ~rec.free & ~mine;
    if (!taken.empty()) {
      const int gpu = taken.lowest();
      return InvalidArgumentError(who + ": GPU " + std::to_string(gpu) + " of " + NodeName(p.node) +
                                  " " + WhyTaken(p.node, gpu));
    }
  }
  return OkStatus();
}

int32_t ClusterState::TakeSlot() {
  int32_t slot;
  if (!free_slots_.empty()) {
    slot = free_slots_.back();
    free_slots_.pop_back();
  } else {
    slot = static_cast<int32_t>(allocs_.size());
    allocs_.emplace_back();
  }
  return slot;
}

Status ClusterState::AllocateShared(int64_t alloc_id, int node, int gpu, int milli) {
  const std::string who = "allocation " + std::to_string(alloc_id);
  if (index_.count(alloc_id)) return Status(StatusCode::kAlreadyExists, who + " already exists");
  if (milli < 1 || milli > 999) {
    return InvalidArgumentError(who + ": fractional milli must be in [1, 999], got " +
                                std::to_string(milli));
  }
  const int n_nodes = static_cast<int>(nodes_.size());
  if (node < 0 || node >= n_nodes) {
    return InvalidArgumentError(who + ": node id " + std::to_string(node) + " out of range (" +
                                std::to_string(n_nodes) + " nodes)");
  }
  NodeRec& rec = nodes_[node];
  if (gpu < 0 || gpu >= rec.gpu_count) {
    return InvalidArgumentError(who + ": GPU " + std::to_string(gpu) + " of " + NodeName(node) +
                                " out of range (node has " + std::to_string(rec.gpu_count) +
                                " GPUs)");
  }
  const uint32_t gi = rec.gpu_offset + gpu;
  const bool shared = holders_[gi] == kShared;
  // A shared GPU is held, so it is never in the free mask: its usability is checked apart.
  const bool usable = Usable(rec.health) && !rec.drained && rec.healthy.test(gpu);
  if (!rec.free.test(gpu) && !(shared && usable)) {
    std::string why = WhyTaken(node, gpu);
    if (shared) {
      why = !Usable(rec.health) ? "is on an unhealthy node"
            : rec.drained       ? "is on a drained node"
                                : "is unhealthy";
    }
    return InvalidArgumentError(who + ": GPU " + std::to_string(gpu) + " of " + NodeName(node) +
                                " " + why);
  }
  if (shared) {
    const int used = shared_.at(gi).used_milli;
    if (used + milli > 1000) {
      return InvalidArgumentError(who + ": GPU " + std::to_string(gpu) + " of " + NodeName(node) +
                                  " has " + std::to_string(used) + "/1000 milli used, " +
                                  std::to_string(milli) + " asked");
    }
  }
  const int32_t slot = TakeSlot();
  AllocRec& a = allocs_[slot];
  a.id = alloc_id;
  a.milli = milli;
  GpuMask m;
  m.set(gpu);
  a.parts.assign(1, NodeGpus{node, m});
  index_.emplace(alloc_id, slot);
  if (!shared) {
    const Contribution before = ContributionOf(rec);
    holders_[gi] = kShared;
    rec.held.set(gpu);
    ++held_gpus_;
    Refresh(node, before);
    SharedGpu& sh = shared_[gi];
    sh.node = node;
    sh.gpu = gpu;
  }
  SharedGpu& sh = shared_[gi];
  sh.used_milli += milli;
  sh.slots.push_back(slot);
  shared_milli_ += milli;
  return OkStatus();
}

void ClusterState::Insert(int64_t alloc_id, const std::vector<NodeGpus>& parts) {
  const int32_t slot = TakeSlot();
  AllocRec& a = allocs_[slot];
  a.id = alloc_id;
  a.milli = 0;
  a.parts.assign(parts.begin(), parts.end());
  std::sort(a.parts.begin(), a.parts.end(),
            [](const NodeGpus& x, const NodeGpus& y) { return x.node < y.node; });
  index_.emplace(alloc_id, slot);
  for (const NodeGpus& p : a.parts) {
    NodeRec& rec = nodes_[p.node];
    const Contribution before = ContributionOf(rec);
    SetHolder(rec, p.gpus, slot);
    rec.held = rec.held | p.gpus;
    held_gpus_ += p.gpus.count();
    Refresh(p.node, before);
  }
}

Status ClusterState::Release(int64_t alloc_id) {
  auto it = index_.find(alloc_id);
  if (it == index_.end()) {
    return NotFoundError("allocation " + std::to_string(alloc_id) + " not found");
  }
  const int32_t slot = it->second;
  AllocRec& a = allocs_[slot];
  if (a.milli > 0) {
    const NodeGpus& p = a.parts[0];
    NodeRec& rec = nodes_[p.node];
    const int gpu = p.gpus.lowest();
    const uint32_t gi = rec.gpu_offset + gpu;
    auto sit = shared_.find(gi);
    SharedGpu& sh = sit->second;
    sh.used_milli -= a.milli;
    shared_milli_ -= a.milli;
    sh.slots.erase(std::find(sh.slots.begin(), sh.slots.end(), slot));
    if (sh.slots.empty()) {
      shared_.erase(sit);
      const Contribution before = ContributionOf(rec);
      holders_[gi] = -1;
      rec.held.reset(gpu);
      --held_gpus_;
      Refresh(p.node, before);
    }
    a.milli = 0;
  } else {
    for (const NodeGpus& p : a.parts) {
      NodeRec& rec = nodes_[p.node];
      const Contribution before = ContributionOf(rec);
      SetHolder(rec, p.gpus, -1);
      rec.held = rec.held & ~p.gpus;
      held_gpus_ -= p.gpus.count();
      Refresh(p.node, before);
    }
  }
  a.parts.clear();  // keeps capacity for the slot's next user
  free_slots_.push_back(slot);
  index_.erase(it);
  return OkStatus();
}

StatusOr<std::vector<int64_t>> ClusterState::SetGpuHealth(int node, int gpu, Health health) {
  if (node < 0 || node >= static_cast<int>(nodes_.size())) {
    return InvalidArgumentError("node id " + std::to_string(node) + " out of range");
  }
  NodeRec& rec = nodes_[node];
  if (gpu < 0 || gpu >= rec.gpu_count) {
    return InvalidArgumentError("GPU " + std::to_string(gpu) + " of " + NodeName(node) +
                                " out of range (node has " + std::to_string(rec.gpu_count) +
                                " GPUs)");
  }
  uint8_t& h = gpu_health_[rec.gpu_offset + gpu];
  std::vector<int64_t> affected;
  if (static_cast<uint8_t>(health) > h && rec.held.test(gpu)) affected = Holders(node, gpu);
  const Contribution before = ContributionOf(rec);
  h = static_cast<uint8_t>(health);
  if (Usable(h)) {
    rec.healthy.set(gpu);
  } else {
    rec.healthy.reset(gpu);
  }
  Refresh(node, before);
  return affected;
}

StatusOr<std::vector<int64_t>> ClusterState::SetNodeHealth(int node, Health health) {
  if (node < 0 || node >= static_cast<int>(nodes_.size())) {
    return InvalidArgumentError("node id " + std::to_string(node) + " out of range");
  }
  NodeRec& rec = nodes_[node];
  std::vector<int64_t> affected;
  if (static_cast<uint8_t>(health) > rec.health) {
    for (GpuMask m = rec.held; !m.empty();) {
      const int gpu = m.lowest();
      m.reset(gpu);
      for (int64_t id : Holders(node, gpu)) affected.push_back(id);
    }
    std::sort(affected.begin(), affected.end());
    affected.erase(std::unique(affected.begin(), affected.end()), affected.end());
  }
  const Contribution before = ContributionOf(rec);
  rec.health = static_cast<uint8_t>(health);
  Refresh(node, before);
  return affected;
}

Status ClusterState::SetNodeDrained(int node, bool drained) {
  if (node < 0 || node >= static_cast<int>(nodes_.size())) {
    return InvalidArgumentError("node id " + std::to_string(node) + " out of range");
  }
  NodeRec& rec = nodes_[node];
  const Contribution before = ContributionOf(rec);
  rec.drained = drained ? 1 : 0;
  Refresh(node, before);
  return OkStatus();
}

Status ClusterState::Rebind(const topo::Cluster& cluster) {
  if (cluster.nodes.size() != nodes_.size()) {
    return InvalidArgumentError("rebind: cluster \"" + cluster.name + "\" has " +
                                std::to_string(cluster.nodes.size()) + " nodes, the state " +
                                std::to_string(nodes_.size()));
  }
  bool same_network = static_cast<int>(cluster.domains.size()) == num_domains_ &&
                      static_cast<int>(cluster.nvlink_domains.size()) == num_nvlink_;
  for (size_t n = 0; n < nodes_.size(); ++n) {
    if (cluster.topology(static_cast<int>(n)).gpus.size() != nodes_[n].gpu_count) {
      return InvalidArgumentError(
          "rebind: node " + Quote(cluster.nodes[n].name) + " has " +
          std::to_string(cluster.topology(static_cast<int>(n)).gpus.size()) + " GPUs, the state " +
          std::to_string(nodes_[n].gpu_count));
    }
    same_network = same_network && cluster.nodes[n].domain == cluster_->nodes[n].domain &&
                   cluster.nodes[n].nvlink_domain == cluster_->nodes[n].nvlink_domain;
  }
  if (!same_network ||
      !std::equal(cluster.domains.begin(), cluster.domains.end(), cluster_->domains.begin(),
                  [](const auto& a, const auto& b) { return a.parent == b.parent; })) {
    // Nodes moved in the network: the aggregates are summed again over the new tree.
    cluster_ = &cluster;
    num_domains_ = static_cast<int>(cluster.domains.size());
    num_nvlink_ = static_cast<int>(cluster.nvlink_domains.size());
    ComputeAggregates(aggs_, hist_);
    return OkStatus();
  }
  cluster_ = &cluster;
  return OkStatus();
}

Status ClusterState::CheckInvariants() const {
  const int n_nodes = static_cast<int>(nodes_.size());
  if (static_cast<int>(cluster_->nodes.size()) != n_nodes) {
    return InternalError("state has " + std::to_string(n_nodes) + " nodes, cluster " +
                         std::to_string(cluster_->nodes.size()));
  }
  // The steps read the records through a view; NodeName and ComputeFree come as callables.
  auto node_name = [this](int node) { return NodeName(node); };
  const InvariantView<decltype(nodes_), decltype(allocs_)> v{
      *cluster_, nodes_,  holders_, gpu_health_, allocs_,
      index_,    shared_, kShared,  node_name,   ComputeFree};
  size_t held_total = 0;
  RETURN_IF_ERROR(CheckNodeRecords(v, &held_total));
  size_t listed_total = 0;
  SharedTally fresh_shared;
  RETURN_IF_ERROR(CheckAllocationRecords(v, &listed_total, &fresh_shared));
  RETURN_IF_ERROR(CheckSharedGpus(v, fresh_shared, shared_milli_));
  listed_total += shared_.size();
  if (static_cast<int64_t>(held_total) != held_gpus_) {
    return InternalError("held GPUs incremental " + std::to_string(held_gpus_) + ", recomputed " +
                         std::to_string(held_total));
  }
  if (listed_total != held_total) {
    return InternalError("allocations list " + std::to_string(listed_total) + " GPUs, nodes hold " +
                         std::to_string(held_total));
  }
  // Aggregates from scratch.
  std::vector<Agg> aggs;
  std::vector<int32_t> hist;
  ComputeAggregates(aggs, hist);
  return CompareAggregates(*cluster_, num_domains_, num_nvlink_, max_gpus_ + 1, aggs_, hist_, aggs,
                           hist);
}

size_t ClusterState::MemoryBytes() const {
  size_t bytes = sizeof(*this);
  bytes += nodes_.capacity() * sizeof(NodeRec);
  bytes += holders_.capacity() * sizeof(int32_t);
  bytes += gpu_health_.capacity() * sizeof(uint8_t);
  bytes += aggs_.capacity() * sizeof(Agg);
  bytes += hist_.capacity() * sizeof(int32_t);
  bytes += allocs_.capacity() * sizeof(AllocRec);
  for (const AllocRec& a : allocs_) bytes += a.parts.capacity() * sizeof(NodeGpus);
  bytes += free_slots_.capacity() * sizeof(int32_t);
  for (const auto& [gi, sh] : shared_) {
    bytes += sizeof(void*) + sizeof(std::pair<const uint32_t, SharedGpu>) + sizeof(size_t) +
             sh.slots.capacity() * sizeof(int32_t);
  }
  bytes += shared_.bucket_count() * sizeof(void*);
  // unordered_map: one heap node (next pointer + pair + cached hash) per entry, one bucket
  // pointer per bucket.
  bytes +=
      index_.size() * (sizeof(void*) + sizeof(std::pair<const int64_t, int32_t>) + sizeof(size_t)) +
      index_.bucket_count() * sizeof(void*);
  return bytes;
}

// ---------------------------------------------------------------------------------------------
// JSON

std::string WriteClusterStateJson(const ClusterState& state) {
  using Json = nlohmann::ordered_json;
  const topo::Cluster& c = state.cluster();
  Json root = Json::object();
  root["version"] = 1;
  root["cluster"] = c.name;
  Json nodes = Json::array();
  for (int n = 0; n < static_cast<int>(c.nodes.size()); ++n) {
    Json gh = Json::array();
    for (int g = 0; g < state.GpuCount(n); ++g) {
      if (state.GpuHealth(n, g) != c.topology(n).gpus[g].health) {
        gh.push_back(Json{{"gpu", g}, {"health", topo::HealthName(state.GpuHealth(n, g))}});
      }
    }
    const bool node_health_changed = state.NodeHealth(n) != c.nodes[n].health;
    if (gh.empty() && !node_health_changed && !state.NodeDrained(n)) continue;
    Json node = Json::object();
    node["name"] = c.nodes[n].name;
    if (node_health_changed) {
      node["health"] = topo::HealthName(state.NodeHealth(n));
    }
    if (state.NodeDrained(n)) node["drained"] = true;
    if (!gh.empty()) node["gpu_health"] = std::move(gh);
    nodes.push_back(std::move(node));
  }
  root["nodes"] = std::move(nodes);
  Json allocs = Json::array();
  for (int64_t id : state.AllocationIds()) {
    Json parts = Json::array();
    for (const NodeGpus& p : *state.Allocation(id)) {
      parts.push_back(Json{{"node", c.nodes[p.node].name}, {"gpus", p.gpus.Positions()}});
    }
    const int milli = state.AllocationMilli(id);
    if (milli > 0) {
      allocs.push_back(Json{{"id", id}, {"milli", milli}, {"nodes", std::move(parts)}});
    } else {
      allocs.push_back(Json{{"id", id}, {"nodes", std::move(parts)}});
    }
  }
  root["allocations"] = std::move(allocs);
  return root.dump(2) + "\n";
}

namespace {

using Json = nlohmann::json;

class StateReader {
 public:
  StateReader(const topo::Cluster& cluster, std::string source)
      : cluster_(cluster), source_(std::move(source)) {}

  Status Err(const std::string& path, const std::string& msg) const {
    return InvalidArgumentError(source_ + ": " + path + ": " + msg);
  }

  static const char* Kind(const Json& v) { return v.type_name(); }

  Status CheckKeys(const Json& v, const std::string& path,
                   std::initializer_list<const char*> allowed) const {
    if (!v.is_object()) return Err(path, std::string("expected an object, got ") + Kind(v));
    for (auto it = v.begin(); it != v.end(); ++it) {
      bool ok = false;
      for (const char* a : allowed) ok |= it.key() == a;
      if (!ok) {
        std::string list;
        for (const char* a : allowed) list += (list.empty() ? "" : ", ") + std::string(a);
        return Err(path + "." + it.key(), "unknown key (expected one of: " + list + ")");
      }
    }
    return OkStatus();
  }

  StatusOr<int> Node(const Json& v, const std::string& path) const {
    if (!v.is_string()) return Err(path, std::string("expected a node name, got ") + Kind(v));
    const int n = cluster_.FindNode(v.get<std::string>());
    if (n < 0) return Err(path, "unknown node " + Quote(v.get<std::string>()));
    return n;
  }

  StatusOr<Health> ReadHealth(const Json& v, const std::string& path) const {
    if (!v.is_string()) return Err(path, std::string("expected a health name, got ") + Kind(v));
    StatusOr<Health> h = topo::ParseHealth(v.get<std::string>());
    if (!h.ok()) return Err(path, h.status().message());
    return h;
  }

  StatusOr<int> Gpu(const Json& v, const std::string& path, const ClusterState& st,
                    int node) const {
    if (!v.is_number_integer()) {
      return Err(path, std::string("expected a GPU number, got ") + Kind(v));
    }
    const long long g = v.get<long long>();
    if (g < 0 || g >= st.GpuCount(node)) {
      return Err(path, "GPU " + std::to_string(g) + " out of range (node " +
                           Quote(cluster_.nodes[node].name) + " has " +
                           std::to_string(st.GpuCount(node)) + " GPUs)");
    }
    return static_cast<int>(g);
  }

  StatusOr<ClusterState> Read(const std::string& text) {
    Json root;
    try {
      root = Json::parse(text);
    } catch (const std::exception& e) {
      return InvalidArgumentError(source_ + ": invalid JSON: " + e.what());
    }
    RETURN_IF_ERROR(CheckKeys(root, "$", {"version", "cluster", "nodes", "allocations"}));
    if (!root.contains("version") || root["version"] != 1) {
      return Err("$.version", "expected version 1");
    }
    if (root.contains("cluster")) {
      const Json& c = root["cluster"];
      if (!c.is_string()) return Err("$.cluster", "expected a string");
      if (c.get<std::string>() != cluster_.name) {
        return Err("$.cluster", "state is for cluster " + Quote(c.get<std::string>()) + ", not " +
                                    Quote(cluster_.name));
      }
    }
    ASSIGN_OR_RETURN(ClusterState st, ClusterState::Create(cluster_));

    if (root.contains("allocations")) {
      const Json& allocs = root["allocations"];
      if (!allocs.is_array()) return Err("$.allocations", "expected an array");
      for (size_t i = 0; i < allocs.size(); ++i) {
        const std::string path = "$.allocations[" + std::to_string(i) + "]";
        const Json& a = allocs[i];
        RETURN_IF_ERROR(CheckKeys(a, path, {"id", "milli", "nodes"}));
        int milli = 0;
        if (a.contains("milli")) {
          const Json& m = a["milli"];
          if (!m.is_number_integer() || m.get<long long>() < 1 || m.get<long long>() > 1000) {
            return Err(path + ".milli",
                       "expected an integer from 1 to 1000 (thousandths of one GPU)");
          }
          milli = static_cast<int>(m.get<long long>());
          if (milli == 1000) milli = 0;  // a whole GPU
        }
        if (!a.contains("id") || !a["id"].is_number_integer()) {
          return Err(path + ".id", "expected an integer allocation id");
        }
        const int64_t id = a["id"].get<int64_t>();
        if (st.HasAllocation(id))
          return Err(path + ".id", "duplicate allocation id " + std::to_string(id));
        if (!a.contains("nodes") || !a["nodes"].is_array() || a["nodes"].empty()) {
          return Err(path + ".nodes", "expected a non-empty array");
        }
        std::vector<NodeGpus> parts;
        for (size_t j = 0; j < a["nodes"].size(); ++j) {
          const std::string ppath = path + ".nodes[" + std::to_string(j) + "]";
          const Json& p = a["nodes"][j];
          RETURN_IF_ERROR(CheckKeys(p, ppath, {"node", "gpus"}));
          if (!p.contains("node")) return Err(ppath + ".node", "missing");
          ASSIGN_OR_RETURN(int node, Node(p["node"], ppath + ".node"));
          for (const NodeGpus& q : parts) {
            if (q.node == node) {
              return Err(ppath + ".node", "node " + Quote(cluster_.nodes[node].name) +
                                              " listed twice in the allocation");
            }
          }
          if (!p.contains("gpus") || !p["gpus"].is_array() || p["gpus"].empty()) {
            return Err(ppath + ".gpus", "expected a non-empty array of GPU numbers");
          }
          NodeGpus part{node, GpuMask()};
          for (size_t k = 0; k < p["gpus"].size(); ++k) {
            const std::string gpath = ppath + ".gpus[" + std::to_string(k) + "]";
            ASSIGN_OR_RETURN(int g, Gpu(p["gpus"][k], gpath, st, node));
            if (part.gpus.test(g)) return Err(gpath, "GPU " + std::to_string(g) + " listed twice");
            if (std::optional<int64_t> h = st.Holder(node, g)) {
              return Err(gpath, "GPU " + std::to_string(g) + " of node " +
                                    Quote(cluster_.nodes[node].name) + " is held by allocation " +
                                    std::to_string(*h));
            }
            part.gpus.set(g);
          }
          parts.push_back(part);
        }
        if (milli > 0 && (parts.size() != 1 || parts[0].gpus.count() != 1)) {
          return Err(path + ".nodes", "a fractional allocation (milli " + std::to_string(milli) +
                                          ") holds exactly one GPU");
        }
        Status s = milli > 0 ? st.AllocateShared(id, parts[0].node, parts[0].gpus.lowest(), milli)
                             : st.Allocate(id, parts);
        if (!s.ok()) return Err(path, s.message());
      }
    }

    if (root.contains("nodes")) {
      const Json& nodes = root["nodes"];
      if (!nodes.is_array()) return Err("$.nodes", "expected an array");
      std::set<int> seen;
      for (size_t i = 0; i < nodes.size(); ++i) {
        const std::string path = "$.nodes[" + std::to_string(i) + "]";
        const Json& nv = nodes[i];
        RETURN_IF_ERROR(CheckKeys(nv, path, {"name", "health", "drained", "gpu_health"}));
        if (!nv.contains("name")) return Err(path + ".name", "missing");
        ASSIGN_OR_RETURN(int node, Node(nv["name"], path + ".name"));
        if (!seen.insert(node).second) {
          return Err(path + ".name", "node " + Quote(cluster_.nodes[node].name) + " listed twice");
        }
        if (nv.contains("health")) {
          ASSIGN_OR_RETURN(Health h, ReadHealth(nv["health"], path + ".health"));
          RETURN_IF_ERROR(st.SetNodeHealth(node, h).status());
        }
        if (nv.contains("drained")) {
          if (!nv["drained"].is_boolean()) return Err(path + ".drained", "expected true or false");
          RETURN_IF_ERROR(st.SetNodeDrained(node, nv["drained"].get<bool>()));
        }
        if (nv.contains("gpu_health")) {
          const Json& gh = nv["gpu_health"];
          if (!gh.is_array()) return Err(path + ".gpu_health", "expected an array");
          for (size_t k = 0; k < gh.size(); ++k) {
            const std::string gpath = path + ".gpu_health[" + std::to_string(k) + "]";
            RETURN_IF_ERROR(CheckKeys(gh[k], gpath, {"gpu", "health"}));
            if (!gh[k].contains("gpu")) return Err(gpath + ".gpu", "missing");
            if (!gh[k].contains("health")) return Err(gpath + ".health", "missing");
            ASSIGN_OR_RETURN(int g, Gpu(gh[k]["gpu"], gpath + ".gpu", st, node));
            ASSIGN_OR_RETURN(Health h, ReadHealth(gh[k]["health"], gpath + ".health"));
            RETURN_IF_ERROR(st.SetGpuHealth(node, g, h).status());
          }
        }
      }
    }
    return st;
  }

 private:
  const topo::Cluster& cluster_;
  std::string source_;
};

}  // namespace

StatusOr<ClusterState> ReadClusterStateJson(const std::string& text, const topo::Cluster& cluster,
                                            const std::string& source) {
  return StateReader(cluster, source).Read(text);
}

StatusOr<ClusterState> ReadClusterStateJsonFile(const std::string& path,
                                                const topo::Cluster& cluster) {
  ASSIGN_OR_RETURN(std::string text, ReadFileBounded(path, size_t{256} << 20, "a state file"));
  return ReadClusterStateJson(text, cluster, path);
}

}  // namespace toposched::sched
