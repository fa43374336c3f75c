#include "state/cluster_state.h"

#include <algorithm>
#include <string>
#include <vector>

#include "core/strings.h"

namespace toposched::sched {
namespace {

using topo::Health;

GpuMask AllOf(int gpu_count) { return GpuMask::FirstN(gpu_count); }

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
      if (UsableHealth(s.gpu_health_.back())) rec.healthy.set(i);
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
  if (!UsableHealth(n.health) || n.drained) return GpuMask();
  return n.healthy & ~n.held & AllOf(n.gpu_count);
}

ClusterState::Contribution ClusterState::ContributionOf(const NodeRec& n) const {
  Contribution c;
  c.free = n.free.count();
  c.healthy = UsableHealth(n.health) ? n.healthy.count() : 0;
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

std::optional<AllocId> ClusterState::Holder(int node, int gpu) const {
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

std::vector<AllocId> ClusterState::SharedHolders(int node, int gpu) const {
  std::vector<AllocId> ids;
  auto it = shared_.find(nodes_[node].gpu_offset + gpu);
  if (it == shared_.end()) return ids;
  for (int32_t slot : it->second.slots) ids.push_back(allocs_[slot].id);
  std::sort(ids.begin(), ids.end());
  return ids;
}

std::vector<AllocId> ClusterState::Holders(int node, int gpu) const {
  if (std::optional<AllocId> h = Holder(node, gpu)) return {*h};
  return SharedHolders(node, gpu);
}

int ClusterState::AllocationMilli(AllocId alloc_id) const {
  auto it = index_.find(alloc_id.key());
  return it == index_.end() ? 0 : allocs_[it->second].milli;
}

std::string ClusterState::WhyTaken(int node, int gpu) const {
  const NodeRec& rec = nodes_[node];
  if (rec.held.test(gpu)) {
    if (Shared(node, gpu)) {
      std::string ids;
      for (AllocId id : SharedHolders(node, gpu)) {
        ids += (ids.empty() ? "" : ", ") + std::to_string(id.key());
      }
      return "is shared by fractional allocation" +
             std::string(SharedHolders(node, gpu).size() == 1 ? " " : "s ") + ids + " (" +
             std::to_string(UsedMilli(node, gpu)) + "/1000 milli used)";
    }
    return "is held by allocation " + std::to_string(Holder(node, gpu)->key());
  }
  if (!UsableHealth(rec.health)) return "is on an unhealthy node";
  if (rec.drained) return "is on a drained node";
  return "is unhealthy";
}

const std::vector<NodeGpus>* ClusterState::Allocation(AllocId alloc_id) const {
  auto it = index_.find(alloc_id.key());
  return it == index_.end() ? nullptr : &allocs_[it->second].parts;
}

std::vector<AllocId> ClusterState::AllocationIds() const {
  std::vector<AllocId> ids;
  ids.reserve(index_.size());
  for (const auto& [key, slot] : index_) ids.push_back(AllocId::FromKey(key));
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

Status ClusterState::Allocate(AllocId alloc_id, const std::vector<NodeGpus>& parts) {
  const std::string who = "allocation " + std::to_string(alloc_id.key());
  if (index_.count(alloc_id.key())) {
    return Status(StatusCode::kAlreadyExists, who + " already exists");
  }
  RETURN_IF_ERROR(CheckParts(who, parts, nullptr));
  Insert(alloc_id, parts);
  return OkStatus();
}

Status ClusterState::Resize(AllocId alloc_id, const std::vector<NodeGpus>& parts) {
  const std::string who = "allocation " + std::to_string(alloc_id.key());
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

Status ClusterState::AllocateShared(AllocId alloc_id, int node, int gpu, int milli) {
  const std::string who = "allocation " + std::to_string(alloc_id.key());
  if (index_.count(alloc_id.key())) {
    return Status(StatusCode::kAlreadyExists, who + " already exists");
  }
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
  const bool usable = UsableHealth(rec.health) && !rec.drained && rec.healthy.test(gpu);
  if (!rec.free.test(gpu) && !(shared && usable)) {
    std::string why = WhyTaken(node, gpu);
    if (shared) {
      why = !UsableHealth(rec.health) ? "is on an unhealthy node"
            : rec.drained             ? "is on a drained node"
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
  index_.emplace(alloc_id.key(), slot);
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

void ClusterState::Insert(AllocId alloc_id, const std::vector<NodeGpus>& parts) {
  const int32_t slot = TakeSlot();
  AllocRec& a = allocs_[slot];
  a.id = alloc_id;
  a.milli = 0;
  a.parts.assign(parts.begin(), parts.end());
  std::sort(a.parts.begin(), a.parts.end(),
            [](const NodeGpus& x, const NodeGpus& y) { return x.node < y.node; });
  index_.emplace(alloc_id.key(), slot);
  for (const NodeGpus& p : a.parts) {
    NodeRec& rec = nodes_[p.node];
    const Contribution before = ContributionOf(rec);
    SetHolder(rec, p.gpus, slot);
    rec.held = rec.held | p.gpus;
    held_gpus_ += p.gpus.count();
    Refresh(p.node, before);
  }
}

Status ClusterState::Release(AllocId alloc_id) {
  auto it = index_.find(alloc_id.key());
  if (it == index_.end()) {
    return NotFoundError("allocation " + std::to_string(alloc_id.key()) + " not found");
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

StatusOr<std::vector<AllocId>> ClusterState::SetGpuHealth(int node, int gpu, Health health) {
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
  std::vector<AllocId> affected;
  if (static_cast<uint8_t>(health) > h && rec.held.test(gpu)) affected = Holders(node, gpu);
  const Contribution before = ContributionOf(rec);
  h = static_cast<uint8_t>(health);
  if (UsableHealth(h)) {
    rec.healthy.set(gpu);
  } else {
    rec.healthy.reset(gpu);
  }
  Refresh(node, before);
  return affected;
}

StatusOr<std::vector<AllocId>> ClusterState::SetNodeHealth(int node, Health health) {
  if (node < 0 || node >= static_cast<int>(nodes_.size())) {
    return InvalidArgumentError("node id " + std::to_string(node) + " out of range");
  }
  NodeRec& rec = nodes_[node];
  std::vector<AllocId> affected;
  if (static_cast<uint8_t>(health) > rec.health) {
    for (GpuMask m = rec.held; !m.empty();) {
      const int gpu = m.lowest();
      m.reset(gpu);
      for (AllocId id : Holders(node, gpu)) affected.push_back(id);
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

}  // namespace toposched::sched
