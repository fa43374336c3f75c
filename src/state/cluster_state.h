// Occupancy of a topo::Cluster: which GPUs are free, which allocation holds each GPU, GPU and
// node health, node drain, and free capacity aggregated per network domain and NVLink domain,
// kept up to date incrementally. The gang scheduler reads it to find the lowest domain that can
// hold a job. Knows nothing of jobs, queues or costs: an allocation is an opaque AllocId.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <ostream>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/ids.h"
#include "core/status.h"
#include "state/gpu_mask.h"
#include "topo/cluster.h"

namespace toposched::sched {

// Whether a GPU's or node's stored health byte may take work: anything but kUnhealthy.
inline bool UsableHealth(uint8_t health) {
  return static_cast<topo::Health>(health) != topo::Health::kUnhealthy;
}

// Who holds an allocation in the scheduler's occupancy: a job, a Kubernetes hold, or a block the
// scheduler puts on a trial copy (a pass's shadow, a what-if), told apart by owner rather than by
// sign. Its key is one int64: the owner in bits 60-61, the number below; a job's key is its id.
// The key is what ClusterState stores and what the JSON state's "id", the store's rows and every
// message show (an AllocId prints as its key). Any int64 is a key (the Slurm reader numbers the
// blocks over hidden GPUs below zero): FromKey(k).key() == k, and ids compare and hash as their
// keys.
class AllocId {
 public:
  enum class Owner : uint8_t { kJob = 0, kHold = 1, kBlock = 2 };
  static constexpr int64_t kMaxNumber = (int64_t{1} << 60) - 1;

  constexpr AllocId() = default;
  static constexpr AllocId Job(int64_t id) { return FromKey(id); }
  static constexpr AllocId Job(JobId id) { return Job(id.value); }
  static constexpr AllocId Hold(int64_t id) { return FromKey((int64_t{1} << 60) | id); }
  static constexpr AllocId Block(int64_t n) { return FromKey((int64_t{2} << 60) | n); }
  static constexpr AllocId FromKey(int64_t key) {
    AllocId a;
    a.key_ = key;
    return a;
  }

  constexpr int64_t key() const { return key_; }
  constexpr Owner owner() const { return static_cast<Owner>((key_ >> 60) & 3); }
  constexpr int64_t number() const { return key_ & kMaxNumber; }

  auto operator<=>(const AllocId&) const = default;
  bool operator==(const AllocId&) const = default;
  friend std::ostream& operator<<(std::ostream& os, AllocId id) { return os << id.key_; }

 private:
  int64_t key_ = 0;
};

// GPUs of one node taken by an allocation. `gpus` holds positions in NodeTopology::gpus.
struct NodeGpus {
  int node = 0;
  GpuMask gpus;
  bool operator==(const NodeGpus&) const = default;
};

// Free capacity of one network domain, one NVLink domain, or the whole cluster.
struct Capacity {
  int free_gpus = 0;             // GPUs neither held, unhealthy, nor on an unusable node
  int fully_free_nodes = 0;      // nodes with every GPU free (a node with 0 GPUs never counts)
  int largest_free_on_node = 0;  // max free GPUs on one node
  int healthy_gpus = 0;          // GPUs usable by health (held or not; drain does not matter)
  int total_gpus = 0;            // all GPUs, whatever their state
  bool operator==(const Capacity&) const = default;
};

// A GPU is *usable* when its own health and its node's health are not kUnhealthy (kDegraded
// stays usable; scoring may avoid it). A GPU is *free* when it is usable, its node is not
// drained, and no allocation holds it.
//
// A held GPU is either *whole-allocated* (one allocation, from Allocate) or *shared*: held by
// one or more fractional allocations (AllocateShared), each of 1..999 milli (thousandths of the
// GPU), together at most 1000. A shared GPU is held (in HeldMask, never in FreeMask), so
// whole-GPU allocations and every aggregate treat it as taken; it returns to free when its last
// fractional allocation is released. A fractional allocation holds exactly one GPU.
//
// Invariants (CheckInvariants verifies them from scratch): each GPU is held by at most one
// whole allocation or by fractional allocations only, whose milli sum to the GPU's used milli
// (≤ 1000); an allocation's GPUs are exactly the GPUs whose holder is that allocation; every
// aggregate equals the sum over the nodes under the domain. An unhealthy GPU or a GPU of an
// unhealthy/drained node keeps its holder until Release: health changes never drop allocations,
// they report them.
//
// Ownership: keeps a pointer to the Cluster, which must outlive the state and not change its
// nodes, domains or profiles. Not thread-safe; const methods may run concurrently with each
// other.
//
// Memory: a 56-byte node record + 5 bytes per GPU (holder slot int32 + health byte), i.e. 96
// bytes per 8-GPU node; 16 + 4·(G+1) bytes per domain (aggregates + free-count histogram); about
// 100 bytes per allocation (slot, one part, id index entry). Measured on 4,096 nodes × 8 GPUs
// (bench/cluster_state_bench.cc, BM_CreateState): 0.40 MB empty (98 B/node), 3.6 MB with every
// GPU its own allocation (884 B/node) — far under the 256 MB target.
class ClusterState {
 public:
  // Every GPU free; health from ClusterNode::health and NodeTopology::gpus[i].health.
  // Requires a cluster that passes Validate(); InvalidArgument for a node of more than 128 GPUs.
  static StatusOr<ClusterState> Create(const topo::Cluster& cluster);

  const topo::Cluster& cluster() const { return *cluster_; }

  // Takes the GPUs for `alloc_id`, all or nothing. Errors (nothing changes on any of them):
  // AlreadyExists when the id holds GPUs already; InvalidArgument for no parts, an empty mask,
  // a node out of range or listed twice, a GPU position ≥ the node's GPU count, or a GPU that is
  // not free (the message names node and GPU and why: held by allocation N, unhealthy, node
  // drained/unhealthy). O(parts · depth).
  Status Allocate(AllocId alloc_id, const std::vector<NodeGpus>& parts);
  // Takes `milli` thousandths (1..999) of one GPU for `alloc_id`: the GPU must be usable, its
  // node neither unhealthy nor drained, and the GPU free or shared with room for `milli`
  // (never whole-allocated). Errors (nothing changes): AlreadyExists for a known id;
  // InvalidArgument for milli out of range, node/GPU out of range, or a GPU that cannot take it
  // (the message names node, GPU and why: held whole by allocation N, "300/1000 milli used,
  // 800 asked", unhealthy, drained). O(depth) plus O(1) expected for the shared-GPU record.
  Status AllocateShared(AllocId alloc_id, int node, int gpu, int milli);
  // Frees every GPU of the allocation; for a fractional one, exactly its milli of its GPU (the
  // GPU is free again when no fractional allocation is left on it). NotFound when the id is
  // unknown. O(parts · depth).
  Status Release(AllocId alloc_id);
  // Changes an allocation's GPUs to `parts` (an elastic resize): GPUs it holds may stay whatever
  // their health or drain; GPUs it gains must be free; GPUs it loses are freed. NotFound for an
  // unknown id; InvalidArgument for a fractional allocation; the errors of Allocate otherwise
  // (nothing changes).
  Status Resize(AllocId alloc_id, const std::vector<NodeGpus>& parts);

  // Health changes return the allocations affected (sorted, unique): those holding a GPU whose
  // effective health got worse. InvalidArgument for a node/GPU out of range. O(depth).
  StatusOr<std::vector<AllocId>> SetGpuHealth(int node, int gpu, topo::Health health);
  StatusOr<std::vector<AllocId>> SetNodeHealth(int node, topo::Health health);
  // A drained node takes no new allocation; the ones on it stay. InvalidArgument out of range.
  Status SetNodeDrained(int node, bool drained);

  // Points the state at another cluster with the same nodes and GPU counts, whose hardware
  // profiles may differ (the scheduler's view of a cluster with degraded links or reported
  // topologies) and whose nodes may sit elsewhere in the network tree or in other NVLink
  // domains, new domains included (a node's place as the Kubernetes API's labels give it; the
  // aggregates are summed again, O(nodes · depth)). Occupancy and health are kept.
  // InvalidArgument when the nodes or their GPU counts differ (nothing changes).
  Status Rebind(const topo::Cluster& cluster);

  // --- per node (node must be in range; out of range is a bug) ---
  int GpuCount(int node) const { return nodes_[node].gpu_count; }
  const GpuMask& FreeMask(int node) const { return nodes_[node].free; }
  const GpuMask& HeldMask(int node) const { return nodes_[node].held; }
  // GPUs whose own health is usable (node health not applied).
  const GpuMask& HealthyMask(int node) const { return nodes_[node].healthy; }
  topo::Health GpuHealth(int node, int gpu) const;
  topo::Health NodeHealth(int node) const { return static_cast<topo::Health>(nodes_[node].health); }
  bool NodeDrained(int node) const { return nodes_[node].drained != 0; }
  // The whole allocation holding the GPU; nullopt when none or when the GPU is shared.
  std::optional<AllocId> Holder(int node, int gpu) const;
  // Whether fractional allocations hold the GPU.
  bool Shared(int node, int gpu) const {
    return holders_[nodes_[node].gpu_offset + gpu] == kShared;
  }
  // Milli of the GPU taken: 0 free (or unheld), 1000 whole-allocated, the fractional sum when
  // shared. O(1) expected.
  int UsedMilli(int node, int gpu) const;
  // Ids (sorted) of the fractional allocations sharing the GPU; empty when not shared.
  std::vector<AllocId> SharedHolders(int node, int gpu) const;
  // Every allocation on the GPU: the whole holder, or the sharers (sorted).
  std::vector<AllocId> Holders(int node, int gpu) const;

  // --- allocations ---
  bool HasAllocation(AllocId alloc_id) const { return index_.count(alloc_id.key()) != 0; }
  // Parts in node-id order; nullptr when unknown.
  const std::vector<NodeGpus>* Allocation(AllocId alloc_id) const;
  std::vector<AllocId> AllocationIds() const;  // sorted
  size_t AllocationCount() const { return index_.size(); }
  // Milli of a fractional allocation (1..999); 0 for a whole-GPU allocation or an unknown id.
  int AllocationMilli(AllocId alloc_id) const;

  // --- shared GPUs ---
  struct SharedGpu {
    int node = 0;
    int gpu = 0;
    int used_milli = 0;          // 1..1000
    std::vector<int32_t> slots;  // allocation slots of the sharers (internal)
  };
  int SharedGpuCount() const { return static_cast<int>(shared_.size()); }
  // Calls f(const SharedGpu&) for every shared GPU, in no particular order (callers that pick
  // one must break ties themselves). O(shared GPUs).
  template <typename F>
  void ForEachSharedGpu(F&& f) const {
    for (const auto& [g, sh] : shared_) f(sh);
  }
  // GPUs with a holder (whole or shared), cluster-wide. O(1).
  int64_t HeldGpus() const { return held_gpus_; }
  // Thousandths of GPUs allocated cluster-wide: 1000 per whole-allocated GPU plus the used milli
  // of every shared GPU. O(1).
  int64_t AllocatedMilli() const {
    return (held_gpus_ - static_cast<int64_t>(shared_.size())) * 1000 + shared_milli_;
  }

  // --- aggregates, O(1) except LargestFreeOnNode O(G) (G = most GPUs on one node) ---
  // `domain` indexes Cluster::domains, `nvd` Cluster::nvlink_domains (in range; else a bug).
  int FreeGpus(int domain) const { return aggs_[domain].free; }
  int FullyFreeNodes(int domain) const { return aggs_[domain].fully_free; }
  int LargestFreeOnNode(int domain) const { return Largest(domain); }
  int HealthyGpus(int domain) const { return aggs_[domain].healthy; }
  Capacity DomainCapacity(int domain) const { return CapacityOf(domain); }
  Capacity NvlinkCapacity(int nvd) const { return CapacityOf(num_domains_ + nvd); }
  Capacity ClusterCapacity() const { return CapacityOf(ClusterAgg()); }

  // Recomputes holders, free masks and every aggregate from scratch and compares. Internal with
  // the first mismatch ("domain "leaf0": free_gpus incremental 124, recomputed 120"). O(nodes ·
  // (G + depth) + allocated GPUs).
  Status CheckInvariants() const;

  // Estimated heap + object bytes (sizeof-based over vectors' capacities and the id index).
  size_t MemoryBytes() const;

  ClusterState(ClusterState&&) = default;
  ClusterState& operator=(ClusterState&&) = default;
  ClusterState(const ClusterState&) = default;
  ClusterState& operator=(const ClusterState&) = default;

 private:
  // 56 bytes: three masks, offset of the node's GPUs in holders_/gpu_health_, small fields.
  struct NodeRec {
    GpuMask held;     // GPUs with a holder
    GpuMask healthy;  // GPUs whose own health is usable
    GpuMask free;     // cached: usable & ~held & node schedulable
    uint32_t gpu_offset = 0;
    uint8_t gpu_count = 0;
    uint8_t health = 0;  // topo::Health
    uint8_t drained = 0;
  };
  struct Agg {
    int32_t free = 0;
    int32_t fully_free = 0;
    int32_t healthy = 0;
    int32_t total = 0;
  };
  struct AllocRec {
    AllocId id;
    std::vector<NodeGpus> parts;  // empty = slot unused
    int32_t milli = 0;            // fractional: 1..999 of its one GPU; 0 = whole GPUs
  };
  // holders_ value of a GPU held by fractional allocations (its record is in shared_).
  static constexpr int32_t kShared = -2;
  // What a node adds to the aggregates of the domains above it.
  struct Contribution {
    int free = 0;
    int healthy = 0;
    bool operator==(const Contribution&) const = default;
  };

  ClusterState() = default;

  // Allocate's checks; GPUs in `kept` (the allocation's own, for Resize) need not be free.
  Status CheckParts(const std::string& who, const std::vector<NodeGpus>& parts,
                    const std::vector<NodeGpus>* kept) const;
  // Records a checked allocation.
  void Insert(AllocId alloc_id, const std::vector<NodeGpus>& parts);
  int32_t TakeSlot();
  // Why a GPU that is not free cannot be taken ("is held by allocation 7", "is shared by
  // fractional allocations 3, 9", "is unhealthy", ...).
  std::string WhyTaken(int node, int gpu) const;

  int ClusterAgg() const { return num_domains_ + num_nvlink_; }
  int Largest(int agg) const;
  // Marks every GPU of `gpus` on the node as held by allocation slot `slot` (-1: by none).
  void SetHolder(const NodeRec& rec, GpuMask gpus, int32_t slot);
  Capacity CapacityOf(int agg) const;
  Contribution ContributionOf(const NodeRec& n) const;
  static GpuMask ComputeFree(const NodeRec& n);
  // Applies a node's change of contribution (old → new) to its domains, NVLink domain, cluster.
  void Propagate(int node, Contribution before, Contribution after);
  static void AddToAgg(std::vector<Agg>& aggs, std::vector<int32_t>& hist, int width, int agg,
                       int gpu_count, Contribution c, int sign);
  // Aggregates summed from scratch over the nodes, using each node's cached free mask.
  void ComputeAggregates(std::vector<Agg>& aggs, std::vector<int32_t>& hist) const;
  // Recomputes the free mask of `node` and propagates, given the contribution before a change.
  void Refresh(int node, Contribution before);
  std::string NodeName(int node) const;

  const topo::Cluster* cluster_ = nullptr;
  int num_domains_ = 0;
  int num_nvlink_ = 0;
  int max_gpus_ = 0;  // histogram width - 1
  std::vector<NodeRec> nodes_;
  std::vector<int32_t> holders_;     // per GPU: slot in allocs_, -1 = none
  std::vector<uint8_t> gpu_health_;  // per GPU: topo::Health
  // Aggregates: network domains [0, D), NVLink domains [D, D+N), the cluster D+N.
  std::vector<Agg> aggs_;
  std::vector<int32_t> hist_;  // (D+N+1) × (max_gpus_+1): nodes per free-GPU count
  std::vector<AllocRec> allocs_;
  std::vector<int32_t> free_slots_;
  std::unordered_map<int64_t, int32_t> index_;  // alloc id → slot
  // Shared GPUs by global GPU index (gpu_offset + position); only GPUs whose holder is kShared.
  std::unordered_map<uint32_t, SharedGpu> shared_;
  int64_t held_gpus_ = 0;     // GPUs with a holder (whole or shared)
  int64_t shared_milli_ = 0;  // Σ used_milli over shared_
};

// JSON form:
//   {"version": 1, "cluster": "h100-2rack",
//    "nodes": [{"name": "gpu003", "health": "unhealthy", "drained": true,
//               "gpu_health": [{"gpu": 5, "health": "degraded"}]}],
//    "allocations": [{"id": 7, "nodes": [{"node": "gpu001", "gpus": [0, 1, 2, 3]}]},
//                    {"id": 8, "milli": 500, "nodes": [{"node": "gpu002", "gpus": [3]}]}]}
// "milli" (1..999) marks a fractional allocation of one GPU; absent = whole GPUs (files written
// before fractional allocations existed load unchanged).
// "nodes" lists only nodes whose health, drain or GPU health differ from the cluster spec (the
// defaults a fresh ClusterState starts from), and only the fields that differ.
// GPU numbers are positions in NodeTopology::gpus. Allocations come in id order.
std::string WriteClusterStateJson(const ClusterState& state);

// Rebuilds a state over `cluster`. InvalidArgument naming `source` and the JSON path
// (`state.json: $.allocations[1].nodes[0].gpus[2]: GPU 3 of node "gpu001" is held by allocation
// 7`) for malformed JSON, unknown keys/nodes/health names, a GPU out of range, a duplicate
// allocation id, or a GPU given to two allocations. Allocations are applied before health, so a
// saved allocation on a GPU that later went unhealthy loads.
StatusOr<ClusterState> ReadClusterStateJson(const std::string& text, const topo::Cluster& cluster,
                                            const std::string& source = "<state>");
// As above from a file; NotFound when it cannot be read.
StatusOr<ClusterState> ReadClusterStateJsonFile(const std::string& path,
                                                const topo::Cluster& cluster);

}  // namespace toposched::sched

template <>
struct std::hash<toposched::sched::AllocId> {
  size_t operator()(toposched::sched::AllocId id) const noexcept {
    return std::hash<int64_t>{}(id.key());
  }
};
