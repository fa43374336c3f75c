#include "cli/place_command.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "api/transport_json.h"
#include "cli/commands.h"
#include "job/job_spec.h"
#include "placer/gang.h"
#include "placer/policy.h"
#include "placer/transports.h"
#include "state/cluster_state.h"
#include "topo/io/cluster_yaml.h"

namespace toposched::cli {

namespace {

struct PlaceArgs {
  std::string cluster;
  std::string jobs;
  std::string state;
  std::string policy = "toposched";
  bool json = false;
  bool ranks = false;  // every rank on its own line (default: one line per node)
};

struct JobResult {
  std::string name;
  sched::Verdict verdict;
  int64_t decision_us = 0;
  sched::TransportPlan transports;  // placed jobs: NCCL's predicted transport per hop
};

nlohmann::json ResultJson(const topo::Cluster& c, const JobResult& r) {
  nlohmann::json j;
  j["name"] = r.name;
  const bool placed = r.verdict.fit();
  j["state"] = placed ? "RUNNING" : "PENDING";
  nlohmann::json nodes = nlohmann::json::array();
  nlohmann::json ranks = nlohmann::json::array();
  if (placed) {
    const sched::Placement& p = *r.verdict.placement;
    for (const sched::NodeGpus& g : p.parts) nodes.push_back(c.nodes[g.node].name);
    for (const sched::RankSlot& s : p.ranks) {
      const topo::NodeTopology& t = c.topology(s.node);
      ranks.push_back({{"rank", s.rank},
                       {"node", c.nodes[s.node].name},
                       {"gpu", t.gpus[s.gpu].index},
                       {"nic", s.nic >= 0 ? nlohmann::json(t.nics[s.nic].name) : nullptr}});
    }
  }
  j["nodes"] = nodes;
  j["ranks"] = ranks;
  j["predicted_ms"] = placed ? nlohmann::json(r.verdict.placement->predicted_ms) : nullptr;
  j["best_possible_ms"] = placed ? nlohmann::json(r.verdict.placement->best_possible_ms) : nullptr;
  j["explanation"] =
      placed ? r.verdict.Explain()
             : std::string(sched::VerdictKindName(r.verdict.kind)) + ": " + r.verdict.Explain();
  j["decision_us"] = r.decision_us;
  api::AddTransportPlan(r.transports, j);
  return j;
}

// Integers in the order given, runs of consecutive ascending values as ranges: 0,1,2,3,7,6 ->
// "0-3,7,6" (a node's ranks, or its GPUs in rank order).
std::string Runs(const std::vector<int>& v) {
  std::string out;
  for (size_t i = 0; i < v.size();) {
    size_t j = i;
    while (j + 1 < v.size() && v[j + 1] == v[j] + 1) ++j;
    out += (out.empty() ? "" : ",") + std::to_string(v[i]);
    if (j > i) out += (j == i + 1 ? "," : "-") + std::to_string(v[j]);
    i = j + 1;
  }
  return out;
}

// One line per node, in node order: its ranks, their GPUs in rank order (local rank i on the
// i-th GPU listed) and the NICs they use, in first use.
void PrintRanksByNode(const topo::Cluster& c, const sched::Placement& p) {
  std::printf("  %-12s %-16s %-24s %s   (--ranks: every rank)\n", "node", "ranks",
              "gpus (rank order)", "nics");
  for (const sched::NodeGpus& part : p.parts) {
    const topo::NodeTopology& t = c.topology(part.node);
    std::vector<int> ranks, gpus;
    std::vector<std::string> nics;
    for (const sched::RankSlot& s : p.ranks) {
      if (s.node != part.node) continue;
      ranks.push_back(s.rank);
      gpus.push_back(t.gpus[s.gpu].index);
      const std::string nic = s.nic >= 0 ? t.nics[s.nic].name : "-";
      if (std::find(nics.begin(), nics.end(), nic) == nics.end()) nics.push_back(nic);
    }
    std::string nic_list;
    for (const std::string& n : nics) nic_list += (nic_list.empty() ? "" : ",") + n;
    std::printf("  %-12s %-16s %-24s %s\n", c.nodes[part.node].name.c_str(), Runs(ranks).c_str(),
                Runs(gpus).c_str(), nic_list.c_str());
  }
}

void PrintPlacement(const topo::Cluster& c, const JobResult& r, bool all_ranks) {
  const bool placed = r.verdict.fit();
  std::printf("job %s: %s (decision %lld us)\n", r.name.c_str(), placed ? "RUNNING" : "PENDING",
              static_cast<long long>(r.decision_us));
  if (!placed) {
    std::printf("  %s: %s\n", sched::VerdictKindName(r.verdict.kind), r.verdict.Explain().c_str());
    return;
  }
  const sched::Placement& p = *r.verdict.placement;
  std::string nodes;
  for (const sched::NodeGpus& g : p.parts) {
    nodes += (nodes.empty() ? "" : ",") + c.nodes[g.node].name;
  }
  std::printf("  nodes: %s\n", nodes.c_str());
  std::printf("  predicted %.3f ms, best possible %.3f ms\n", p.predicted_ms, p.best_possible_ms);
  std::printf("  %s\n", p.explanation.c_str());
  for (const sched::HopTransport& h : r.transports.hops) {
    std::printf("  transport %s: %s (%d hop%s, e.g. %s%s%s)\n", h.dimension.c_str(),
                h.transport.c_str(), h.hops, h.hops == 1 ? "" : "s", h.example.c_str(),
                h.via.empty() ? "" : " via ", h.via.c_str());
  }
  for (const std::string& w : r.transports.warnings) std::printf("  warning: %s\n", w.c_str());
  if (!r.transports.nccl_ib_hca.empty()) {
    std::printf("  env: NCCL_IB_HCA=%s\n", r.transports.nccl_ib_hca.c_str());
  }
  if (all_ranks) {
    std::printf("  %-5s %-12s %-4s %s\n", "rank", "node", "gpu", "nic");
    for (const sched::RankSlot& s : p.ranks) {
      const topo::NodeTopology& t = c.topology(s.node);
      std::printf("  %-5d %-12s %-4d %s\n", s.rank, c.nodes[s.node].name.c_str(),
                  t.gpus[s.gpu].index, s.nic >= 0 ? t.nics[s.nic].name.c_str() : "-");
    }
    return;
  }
  PrintRanksByNode(c, p);
}

int RunPlace(const PlaceArgs& a) {
  auto cluster_or = topo::io::ReadClusterYamlFile(a.cluster);
  if (!cluster_or.ok()) return Fail(cluster_or.status());
  topo::Cluster cluster = std::move(cluster_or).value();
  cluster.Finalize();
  auto jobs = job::ReadJobSpecsFile(a.jobs);
  if (!jobs.ok()) return Fail(jobs.status());
  std::vector<std::string> levels;
  for (const topo::NetworkLevel& l : cluster.levels) levels.push_back(l.name);
  for (const job::JobSpec& j : *jobs) {
    if (Status s = j.ValidateAgainstLevels(levels); !s.ok()) return Fail(s);
  }
  StatusOr<sched::ClusterState> state = a.state.empty()
                                            ? sched::ClusterState::Create(cluster)
                                            : sched::ReadClusterStateJsonFile(a.state, cluster);
  if (!state.ok()) return Fail(state.status());
  auto policy = sched::PolicyOptions(a.policy);
  if (!policy.ok()) return Fail(policy.status());
  auto placer = sched::GangPlacer::Create(cluster, *policy);
  if (!placer.ok()) return Fail(placer.status());

  int64_t next_id = 1;
  for (sched::AllocId id : state->AllocationIds()) next_id = std::max(next_id, id.key() + 1);
  std::vector<JobResult> results;
  for (const job::JobSpec& j : *jobs) {
    JobResult r;
    r.name = j.name;
    auto t0 = std::chrono::steady_clock::now();
    r.verdict = (*placer)->Place(*state, j);
    auto t1 = std::chrono::steady_clock::now();
    r.decision_us = std::chrono::duration_cast<std::chrono::microseconds>(t1 - t0).count();
    if (r.verdict.fit()) {
      r.verdict.placement->decision_us = r.decision_us;
      r.transports =
          sched::PredictTransports((*placer)->cost_model(), *r.verdict.placement, j.layout);
      Status s = state->Allocate(sched::AllocId::Job(next_id++), r.verdict.placement->parts);
      if (!s.ok()) return Fail(s.WithPrefix("job \"" + j.name + "\": allocate"));
    }
    results.push_back(std::move(r));
  }
  if (a.json) {
    nlohmann::json out;
    out["jobs"] = nlohmann::json::array();
    for (const JobResult& r : results) out["jobs"].push_back(ResultJson(cluster, r));
    std::printf("%s\n", out.dump(2).c_str());
  } else {
    for (const JobResult& r : results) PrintPlacement(cluster, r, a.ranks);
  }
  return 0;
}

}  // namespace

void AddPlaceCommand(CLI::App& app, int& rc) {
  auto args = std::make_shared<PlaceArgs>();
  CLI::App* cmd = app.add_subcommand(
      "place", "Gang-place the jobs of a file in one pass, in file order, with explanations");
  cmd->add_option("--cluster", args->cluster, "cluster spec (YAML)")->required();
  cmd->add_option("--jobs", args->jobs,
                  "job file: one spec or a jobs: list (YAML, or JSON by extension)")
      ->required();
  cmd->add_option("--state", args->state, "starting cluster state (JSON, as saved)");
  cmd->add_option("--policy", args->policy,
                  "placement policy: toposched (default), first-fit, best-fit, pair-score, "
                  "kueue-tas, slurm-tree");
  cmd->add_flag("--json", args->json, "print JSON");
  cmd->add_flag("--ranks", args->ranks,
                "list every rank on its own line (default: one line per node with its rank and "
                "GPU ranges)");
  cmd->callback([args, &rc]() { rc = RunPlace(*args); });
}

}  // namespace toposched::cli
