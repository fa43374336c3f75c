#include "slurm/place.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <set>

#include "core/enum_names.h"
#include "core/strings.h"
#include "placer/gang.h"
#include "select/ring.h"

namespace toposched::slurm {

namespace {

std::vector<int> PositionsByIndex(const topo::NodeTopology& t) {
  std::vector<int> order(t.gpus.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(),
            [&](int a, int b) { return t.gpus[a].index < t.gpus[b].index; });
  return order;
}

int64_t JobNumber(const std::string& id) {
  auto v = ParseInt(id.substr(0, id.find_first_not_of("0123456789")));
  return v.ok() ? *v : 0;
}

std::string LayoutText(const job::Layout& l) {
  std::string s =
      "tp=" + std::to_string(l.tp) + " pp=" + std::to_string(l.pp) + " dp=" + std::to_string(l.dp);
  if (l.ep > 1) s += " ep=" + std::to_string(l.ep);
  return s;
}

// Holds every free GPU of `node` but the `keep` GPUs Slurm would give (SlurmGpuPick); all of
// them when fewer than `keep` are free (allocation id `id`).
Status KeepSlurmPick(const topo::Cluster& c, sched::ClusterState& s, int node, int keep,
                     sched::AllocId id) {
  const sched::GpuMask free = s.FreeMask(node);
  sched::GpuMask pick = SlurmGpuPick(c.topology(node), free, keep);
  sched::GpuMask hide;
  for (int pos = 0; pos < static_cast<int>(c.topology(node).gpus.size()); ++pos) {
    if (free.test(pos) && !pick.test(pos)) hide.set(pos);
  }
  if (hide.empty()) return OkStatus();
  return s.Allocate(id, {sched::NodeGpus{node, hide}});
}

}  // namespace

sched::GpuMask SlurmGpuPick(const topo::NodeTopology& t, const sched::GpuMask& free, int count) {
  sched::GpuMask pick;
  if (count <= 0 || free.count() < count) return pick;
  const std::vector<int> order = PositionsByIndex(t);
  // Sockets: GPUs grouped by their CPU list (what gres.conf Cores= says), in Slurm index order
  // of their first GPU. The first socket whose free GPUs hold the request is used alone.
  std::vector<std::vector<int>> socket_cpus;
  std::vector<sched::GpuMask> socket_free;
  for (int pos : order) {
    std::vector<int> cpus = t.gpus[pos].cpus.value_or(std::vector<int>{});
    size_t s = 0;
    while (s < socket_cpus.size() && socket_cpus[s] != cpus) ++s;
    if (s == socket_cpus.size()) {
      socket_cpus.push_back(cpus);
      socket_free.emplace_back();
    }
    if (free.test(pos)) socket_free[s].set(pos);
  }
  sched::GpuMask candidates = free;
  for (const sched::GpuMask& f : socket_free) {
    if (f.count() >= count) {
      candidates = f;
      break;
    }
  }
  std::vector<int> chosen;
  while (static_cast<int>(chosen.size()) < count) {
    int best = -1, best_links = -1;
    for (int pos : order) {  // Slurm index order: ties go to the lowest index
      if (!candidates.test(pos) || pick.test(pos)) continue;
      int links = 0;
      for (int c : chosen) {
        const topo::Path& p = t.gpu_gpu(pos, c);
        if (p.cls == topo::PathClass::kNV) links += p.nvlinks;
      }
      if (links > best_links) {
        best = pos;
        best_links = links;
      }
    }
    pick.set(best);
    chosen.push_back(best);
  }
  return pick;
}

int GpuPosOfSlurmIndex(const topo::NodeTopology& t, int slurm_index) {
  std::vector<int> order = PositionsByIndex(t);
  if (slurm_index < 0 || slurm_index >= static_cast<int>(order.size())) return -1;
  return order[slurm_index];
}

int SlurmIndexOfGpuPos(const topo::NodeTopology& t, int gpu_pos) {
  std::vector<int> order = PositionsByIndex(t);
  for (size_t i = 0; i < order.size(); ++i) {
    if (order[i] == gpu_pos) return static_cast<int>(i);
  }
  return -1;
}

StatusOr<sched::ClusterState> StateFromNodes(const topo::Cluster& cluster,
                                             const std::vector<SlurmNode>& nodes,
                                             std::vector<std::string>* unknown) {
  ASSIGN_OR_RETURN(sched::ClusterState state, sched::ClusterState::Create(cluster));
  for (const SlurmNode& n : nodes) {
    int id = cluster.FindNode(n.name);
    if (id < 0) {
      if (unknown) unknown->push_back(n.name);
      continue;
    }
    const topo::NodeTopology& t = cluster.topology(id);
    if (n.gpus != static_cast<int>(t.gpus.size())) {
      return FailedPreconditionError("node \"" + n.name + "\": Slurm reports " +
                                     std::to_string(n.gpus) + " GPUs, the cluster model has " +
                                     std::to_string(t.gpus.size()));
    }
    sched::GpuMask used;
    for (int idx : n.gpus_used) {
      int pos = GpuPosOfSlurmIndex(t, idx);
      if (pos < 0) {
        return FailedPreconditionError("node \"" + n.name + "\": GPU index " + std::to_string(idx) +
                                       " in use is out of range");
      }
      used.set(pos);
    }
    if (!used.empty()) {
      RETURN_IF_ERROR(
          state.Allocate(sched::AllocId::FromKey(-(id + 1)), {sched::NodeGpus{id, used}}));
    }
    if (!n.usable) {
      auto r = state.SetNodeHealth(id, topo::Health::kUnhealthy);
      if (!r.ok()) return r.status();
    }
    if (n.drained) RETURN_IF_ERROR(state.SetNodeDrained(id, true));
  }
  return state;
}

Status MarkOptions::Validate() const {
  if (partition.find_first_of(" \t,") != std::string::npos) {
    return InvalidArgumentError("mark.partition: one partition name, got \"" + partition + "\"");
  }
  if (comment.find_first_of(" \t") != std::string::npos) {
    return InvalidArgumentError("mark.comment: one word, got \"" + comment + "\"");
  }
  return OkStatus();
}

Status PlaceOptions::Validate() const {
  RETURN_IF_ERROR(mark.Validate());
  return placer.Validate();
}

namespace {

using Action = PlaceDecision::Action;
constexpr EnumName<Action> kActionNames[] = {
    {Action::kPlaced, "placed"}, {Action::kWaiting, "waiting"}, {Action::kRejected, "rejected"}};

}  // namespace

const char* ActionName(PlaceDecision::Action a) { return NameOf(kActionNames, a, "?"); }

StatusOr<std::optional<MarkedLayout>> MarkOf(const SlurmJob& job, const std::string& script,
                                             const MarkOptions& options) {
  auto with_job = [&](const Status& s) { return s.WithPrefix("job " + job.id); };
  if (auto d = FindDirective(script)) {
    auto l = ParseLayoutRequest(*d);
    if (!l.ok()) return with_job(l.status().WithPrefix("#TOPOSCHED"));
    return std::optional<MarkedLayout>(MarkedLayout{"directive", *l});
  }
  if (!options.comment.empty()) {
    std::vector<std::string> words = SplitWhitespace(job.comment);
    if (!words.empty() && words[0] == options.comment) {
      std::string rest =
          job.comment.substr(job.comment.find(options.comment) + options.comment.size());
      auto l = ParseLayoutRequest(rest);
      if (!l.ok()) return with_job(l.status().WithPrefix("comment"));
      return std::optional<MarkedLayout>(MarkedLayout{"comment", *l});
    }
  }
  if (!options.partition.empty()) {
    for (const std::string& p : Split(job.partition, ',', true)) {
      if (p == options.partition) return std::optional<MarkedLayout>(MarkedLayout{"partition", {}});
    }
  }
  return std::optional<MarkedLayout>();
}

StatusOr<job::JobSpec> SpecForJob(const SlurmJob& job, const LayoutRequest& layout) {
  auto fail = [&](const std::string& m) {
    return InvalidArgumentError("job " + job.id + ": " + m);
  };
  if (job.gpus_per_node <= 0) {
    return fail("asks no GPUs per node (submit with --gpus-per-node=N or --gres=gpu:N)");
  }
  if (job.num_nodes <= 0) return fail("NumNodes is not known");
  job::JobSpec s;
  s.name = "slurm-" + job.id;
  s.user = job.user;
  for (char& c : s.name) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '.') c = '-';
  }
  if (!s.user.empty() && !std::isalnum(static_cast<unsigned char>(s.user[0]))) s.user.clear();
  s.replicas = job.num_nodes;
  s.gpus_per_replica = job.gpus_per_node;
  s.layout.tp = layout.tp;
  s.layout.pp = layout.pp;
  s.layout.dp = layout.dp;
  s.layout.ep = layout.ep;
  s.model_params = layout.model_params > 0 ? layout.model_params : 7e9;
  Status st = s.Normalize();
  if (!st.ok()) return fail(st.message());
  return s;
}

StatusOr<CommTime> PredictCommTime(const cost::CostModel& model, const job::Layout& l,
                                   const std::vector<cost::GpuRef>& ranks) {
  if (static_cast<int>(ranks.size()) != l.WorldSize()) {
    return InvalidArgumentError("layout " + LayoutText(l) + " needs " +
                                std::to_string(l.WorldSize()) + " ranks, got " +
                                std::to_string(ranks.size()));
  }
  sched::Placement p;
  for (size_t r = 0; r < ranks.size(); ++r) {
    p.ranks.push_back(sched::RankSlot{static_cast<int>(r), ranks[r].node, ranks[r].gpu});
  }
  RETURN_IF_ERROR(sched::ScorePlacement(model, l, p));
  CommTime t;
  t.dp_ms = p.dp_ms;
  t.tp_ms = p.tp_ms;
  t.pp_ms = p.pp_ms;
  t.total_ms = p.predicted_ms;
  return t;
}

StatusOr<std::vector<cost::GpuRef>> RanksOf(
    const topo::Cluster& cluster, const std::vector<std::string>& node_order,
    const std::map<std::string, std::vector<int>>& slurm_gpus, bool ring) {
  std::vector<cost::GpuRef> out;
  for (const std::string& name : node_order) {
    int node = cluster.FindNode(name);
    if (node < 0) return NotFoundError("node \"" + name + "\" is not in the cluster model");
    auto it = slurm_gpus.find(name);
    if (it == slurm_gpus.end()) {
      return NotFoundError("no GPU indices known for node \"" + name + "\" (use -d)");
    }
    const topo::NodeTopology& t = cluster.topology(node);
    std::vector<int> pos;
    for (int idx : it->second) {
      int p = GpuPosOfSlurmIndex(t, idx);
      if (p < 0) return InvalidArgumentError("node \"" + name + "\": GPU index out of range");
      pos.push_back(p);
    }
    if (ring && pos.size() > 2) {
      sched::PairMatrix w(t);
      pos = sched::BestRing(w, pos).order;
    }
    for (int p : pos) out.push_back(cost::GpuRef{node, p});
  }
  return out;
}

StatusOr<PlaceReport> PlaceOnce(const topo::Cluster& cluster, CommandRunner& runner,
                                const PlaceOptions& options) {
  RETURN_IF_ERROR(options.Validate());
  ASSIGN_OR_RETURN(std::string node_text,
                   RunChecked(runner, {"scontrol", "-d", "-o", "show", "node"}));
  ASSIGN_OR_RETURN(std::vector<SlurmNode> nodes, ParseNodes(node_text, "scontrol show node"));
  PlaceReport report;
  ASSIGN_OR_RETURN(sched::ClusterState state,
                   StateFromNodes(cluster, nodes, &report.unknown_nodes));
  ASSIGN_OR_RETURN(std::string job_text,
                   RunChecked(runner, {"scontrol", "-d", "-o", "show", "job"}));
  ASSIGN_OR_RETURN(std::vector<SlurmJob> jobs, ParseJobs(job_text, "scontrol show job"));
  std::sort(jobs.begin(), jobs.end(),
            [](const SlurmJob& a, const SlurmJob& b) { return JobNumber(a.id) < JobNumber(b.id); });
  // srun numbers ranks node by node: the placer keeps each node's ranks in one block.
  sched::GangPlacerOptions placer_options = options.placer;
  placer_options.ranks_in_node_blocks = true;
  ASSIGN_OR_RETURN(std::unique_ptr<sched::GangPlacer> placer,
                   sched::GangPlacer::Create(cluster, placer_options));

  // Jobs released to a ReqNodeList that Slurm has not started yet hold their nodes' GPUs.
  int64_t next_hidden = int64_t{1} << 40;
  for (const SlurmJob& j : jobs) {
    if (j.mapped != job::JobState::kPending || j.held || j.req_node_list.empty()) continue;
    auto hosts = ExpandHostList(j.req_node_list);
    if (!hosts.ok()) continue;
    for (const std::string& h : *hosts) {
      int node = cluster.FindNode(h);
      if (node < 0) continue;
      const sched::GpuMask free = state.FreeMask(node);
      sched::GpuMask take =
          SlurmGpuPick(cluster.topology(node), free, std::min(j.gpus_per_node, free.count()));
      if (!take.empty()) {
        RETURN_IF_ERROR(
            state.Allocate(sched::AllocId::FromKey(next_hidden++), {sched::NodeGpus{node, take}}));
      }
    }
  }

  for (const SlurmJob& j : jobs) {
    if (!j.held) continue;
    std::string script;
    if (options.mark.read_scripts && j.batch) {
      auto r = runner.Run({"scontrol", "write", "batch_script", j.id, "-"});
      if (!r.ok()) return r.status();
      if (r->exit_code == 0) script = r->out;
    }
    auto mark = MarkOf(j, script, options.mark);
    PlaceDecision d;
    d.job_id = j.id;
    d.job_name = j.name;
    if (!mark.ok()) {
      d.action = PlaceDecision::Action::kRejected;
      d.detail = mark.status().message();
      report.decisions.push_back(std::move(d));
      continue;
    }
    if (!mark->has_value()) {
      ++report.unmarked_held;
      continue;
    }
    d.marked_by = (*mark)->by;
    auto spec = SpecForJob(j, (*mark)->layout);
    if (!spec.ok()) {
      d.action = PlaceDecision::Action::kRejected;
      d.detail = spec.status().message();
      report.decisions.push_back(std::move(d));
      continue;
    }
    d.layout = LayoutText(spec->layout);
    // Slurm picks the GPUs inside a node itself: the placer sees, on each node, only the GPUs
    // Slurm would give this job, so it chooses nodes by the GPUs the job will really get and
    // never packs two replicas on one node (Slurm needs NumNodes distinct nodes).
    sched::ClusterState view = state;
    int64_t hide_id = int64_t{1} << 50;
    for (size_t n = 0; n < cluster.nodes.size(); ++n) {
      RETURN_IF_ERROR(KeepSlurmPick(cluster, view, static_cast<int>(n), j.gpus_per_node,
                                    sched::AllocId::FromKey(hide_id++)));
    }
    sched::Verdict v = placer->Place(view, *spec);
    if (!v.fit()) {
      d.action = v.kind == sched::VerdictKind::kUnresolvable ? PlaceDecision::Action::kRejected
                                                             : PlaceDecision::Action::kWaiting;
      d.detail = v.Explain();
      report.decisions.push_back(std::move(d));
      continue;
    }
    const sched::Placement& p = *v.placement;
    d.predicted_ms = p.predicted_ms;
    d.detail = p.explanation;
    for (const sched::NodeGpus& part : p.parts) {
      d.nodes.push_back(cluster.nodes[part.node].name);
      std::vector<int> idx;
      for (int pos = 0; pos < static_cast<int>(cluster.topology(part.node).gpus.size()); ++pos) {
        if (part.gpus.test(pos))
          idx.push_back(SlurmIndexOfGpuPos(cluster.topology(part.node), pos));
      }
      std::sort(idx.begin(), idx.end());
      d.slurm_gpus.push_back(std::move(idx));
    }
    RETURN_IF_ERROR(state.Allocate(sched::AllocId::Job(JobNumber(j.id)), p.parts));
    if (!options.dry_run) {
      std::string list;
      for (const std::string& n : d.nodes) list += (list.empty() ? "" : ",") + n;
      ASSIGN_OR_RETURN(
          std::string ignored,
          RunChecked(runner, {"scontrol", "update", "JobId=" + j.id, "ReqNodeList=" + list}));
      ASSIGN_OR_RETURN(ignored, RunChecked(runner, {"scontrol", "release", j.id}));
    }
    d.action = PlaceDecision::Action::kPlaced;
    report.decisions.push_back(std::move(d));
  }
  return report;
}

}  // namespace toposched::slurm
