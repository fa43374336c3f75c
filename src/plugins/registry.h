// The gang placer's plugins, in two forms. PlacementPlugins is the policy as data: a plugin
// name per choice point and weighted scores, as policies (placer/policy.h), scheduler options and
// tests write them. TypedPlugins is the same resolved once against the registry below (in
// GangPlacer::Create): a plugin object per choice point (each an interface with one class per
// rule) and the score terms with their summed weights, so that the search never compares a
// string while it places.
#pragma once

#include <string>
#include <vector>

#include "core/status.h"
#include "plugins/slots.h"

namespace toposched::sched {

// A score plugin and its weight. Scores are in milliseconds and summed; lower is better.
//   "comm-time":     the placement's predicted communication time (Placement::predicted_ms)
//   "fragmentation": GPUs the placement leaves free on partly used nodes (weight = ms per GPU)
//   "contention":    the communication time per step the placement adds through the network
//                    links it shares with running jobs (LinkModel::ContentionMs: the slowdown
//                    it suffers plus the slowdown it causes them), when the caller passes the
//                    running jobs' link loads to Place; 0 on one node, on links nobody
//                    over-asks, and without link loads
struct ScoreWeight {
  std::string name;
  double weight = 1.0;
};

// The plugin set of one placement policy, in the style of the Kubernetes scheduler framework:
// a filter stage, then a few choice points, then weighted scores over the candidates.
//   Filter (always on, named in explanations): "node-health", "node-drain", "gpu-model",
//     "rdma", "required-level".
//   domain: "lowest-level" — the lowest network level with a domain that holds the job whole,
//     best fit first (Slurm tree, Kueue TAS); "cluster" — the network tree is ignored.
//   nodes: how GPUs are taken from the nodes of the chosen domain. "best-fit" — while the rest
//     fits on one node take the fullest such node, else the emptiest node whole; "least-
//     allocated" — emptiest nodes first (kube-scheduler's default spread); "in-order" — node
//     order (Slurm's node list order), each node as far as it goes; "spread" / "random" — the
//     job's GPUs one at a time, topology ignored (placer/scatter.h), with gpus "first-free" and
//     refine "none" (a job with a required job or TP level, or a fractional one, is placed as
//     "least-allocated" would: one pod cannot be split).
//   gpus: which GPUs of a node. "cost-model" — NodeSelector's exact optimum under the cost
//     model; on a cluster with rails (and rails "align"), a multi-node job's ranks are then aligned
//     node by node: among reorderings of the set and other free sets of the node that are no slower
//     inside the node (and, for another set, use as many NICs), the one where the most ranks share
//     a rail with their DP peers on earlier nodes, and the chosen plan's GPUs are then polished
//     against the score (moves that keep each node's count); "pair-score" — NVIDIA device plugin's
//     pair-score choice; "first-free" — the lowest-numbered free GPUs (what a device plugin without
//     topology hands out).
//   refine: what happens to a multi-node plan before it is scored. "local-search" — starting
//     from the node plugin's plan, hill climbing over the GPU count per node (move one TP group
//     or GPU between two nodes, move a node's share to another node, spread a node's share over
//     the others), each step the best improving move by the weighted score; on a cluster of
//     several hardware profiles the domains are also searched with each profile alone. Needs a
//     "comm-time" score and the "cost-model" GPU choice; "none" — the plan as the node plugin
//     made it.
//   rails: what the search does for rails beyond the cost model's price of each placement.
//     "align" — on a cluster with rails, with the "cost-model" GPU choice, a multi-node job's
//     ranks are aligned node by node (see gpus); where the rails are priced
//     (Cluster::RailsPriced) also the chosen plan polished, plans built on shared rails
//     competing with the other starts, the domain of the rails' scope level competing with the
//     lowest domain that holds the job, and local search taking a move that scores the same and
//     crosses rails fewer times. "none" — none of these: rails count only through the price
//     (the ablation of rail awareness).
//   scores: weighted sum compared across candidate domains and single-node candidates; with no
//     "comm-time" score only the first best-fit candidate is built.
//   shares: where a fractional job (gpu_milli < 1000) goes; "room" = 1000 − used milli of a
//     shared GPU, a node's free milli = 1000 · its free GPUs + the room of its shared GPUs.
//     "gpu-best-fit" — the shared GPU with the least room left after the job, cluster-wide
//       (ties: the node with fewest free GPUs, then node, then GPU); only when no shared GPU
//       has room, one free GPU by the `nodes`/`gpus` rules of a 1-GPU job. Opens a new GPU
//       last, so whole GPUs and whole nodes stay free for whole-GPU and multi-GPU jobs.
//     "node-best-fit" — the node with the least free milli among those that can take the job
//       (the fullest node; ties by node order), on it the shared GPU with the least room left
//       after the job, else a free GPU by the `gpus` rule.
//     "least-allocated" — the node with the most free milli (kube-scheduler's spread; ties by
//       node order), on it a free GPU by the `gpus` rule, else the shared GPU with most room.
//     "in-order" — the first node in node order that can take the job, on it the lowest-
//       numbered GPU that can (free or shared).
struct PlacementPlugins {
  std::string domain = "lowest-level";
  std::string nodes = "best-fit";
  std::string shares = "gpu-best-fit";
  std::string gpus = "cost-model";
  std::string refine = "local-search";
  std::string rails = "align";
  // "contention" weighs a ms of communication a placement adds through shared links like a ms
  // of its own predicted time: both are communication time per step (no tuned factor).
  std::vector<ScoreWeight> scores = {
      {"comm-time", 1.0}, {"fragmentation", 0.05}, {"contention", 1.0}};
  // 0 when absent.
  double Weight(const std::string& score) const;
  // InvalidArgument naming the slot and the known plugins (PluginNames) for an unknown name, a
  // "spread"/"random" nodes plugin without gpus "first-free" and refine "none", a weight that
  // is not finite and >= 0.
  Status Validate() const;
};

// --- typed form (the rules and plugin classes: plugins/slots.h) ---

// The registered plugin of a rule (static objects: the pointers never dangle).
const DomainPlugin& DomainPluginFor(DomainRule r);
const NodePlugin& NodePluginFor(NodeRule r);
const GpuPlugin& GpuPluginFor(GpuRule r);
const RefinePlugin& RefinePluginFor(RefineRule r);
const RailPlugin& RailPluginFor(RailRule r);
const SharePlugin& SharePluginFor(ShareRule r);
const ScorePlugin& ScorePluginFor(ScoreTerm t);

// A score term's plugin and its weight.
struct WeightedScore {
  const ScorePlugin* plugin = nullptr;
  double weight = 0;
};

// The plugins of one policy, resolved. The search also reads the score weights by term where
// they decide what to try (refinement needs comm-time; the single-node path weighs a GPU of
// fragmentation against a ms of comm-time before it scores a roomier node).
struct TypedPlugins {
  const DomainPlugin* domain = &DomainPluginFor(DomainRule::kLowestLevel);
  const NodePlugin* nodes = &NodePluginFor(NodeRule::kBestFit);
  const SharePlugin* shares = &SharePluginFor(ShareRule::kGpuBestFit);
  const GpuPlugin* gpus = &GpuPluginFor(GpuRule::kCostModel);
  const RefinePlugin* refine = &RefinePluginFor(RefineRule::kLocalSearch);
  const RailPlugin* rails = &RailPluginFor(RailRule::kAlign);
  // The plugins of the terms weighted above 0, in ScoreTerm order (the order the search sums
  // them in, whatever the order the policy lists them); a term listed twice once, its weights
  // summed.
  std::vector<WeightedScore> scores;
  // A term's weight in `scores`; 0 when it is not there.
  double weight(ScoreTerm t) const;
  // Places GPU by GPU, topology ignored ("spread", "random": placer/scatter.h).
  bool scatters() const;
};

// The registry: the names each choice point knows, in the order explanations list them.
// slot: "domain", "nodes", "gpus", "refine", "rails", "shares" or "score".
const std::vector<std::string>& PluginNames(const std::string& slot);
// Validate, then every name looked up once.
StatusOr<TypedPlugins> ResolvePlugins(const PlacementPlugins& plugins);

}  // namespace toposched::sched
