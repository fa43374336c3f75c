// ClusterState::CheckInvariants: every record, allocation, shared GPU and aggregate of the
// state recomputed from scratch and compared with what the state keeps incrementally.
#include <functional>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/strings.h"
#include "state/cluster_state.h"

namespace toposched::sched {
namespace {

using topo::Health;

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
      if (UsableHealth(v.gpu_health[rec.gpu_offset + g])) healthy.set(g);
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
        return InternalError(where + ": held by allocation " +
                             std::to_string(v.allocs[slot].id.key()) + " which does not list it");
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
    const std::string who = "allocation " + std::to_string(a.id.key());
    auto it = v.index.find(a.id.key());
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
                               (h >= 0 ? "allocation " + std::to_string(v.allocs[h].id.key())
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

}  // namespace toposched::sched
