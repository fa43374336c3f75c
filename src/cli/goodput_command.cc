// `toposched goodput`: one big training job on a cluster among a background, failures at a
// published rate for a number of simulated days, under replacement policies; prints a markdown
// table (or JSON) of its goodput, lost time and step time after replacements. Only this layer
// reads flags; the simulation is src/sim/goodput.h.
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "core/strings.h"
#include "job/job_spec.h"
#include "sim/goodput.h"
#include "topo/io/cluster_yaml.h"

namespace toposched::cli {

namespace {

struct GoodputArgs {
  std::string cluster, policies = "topology-spares,any-free,no-spares";
  int tp = 8, pp = 16, dp = 128;
  double params = 405e9;
  double days = 30;
  uint64_t seed = 1;
  double rate = -1;  // < 0: the default (Llama 3)
  std::string checkpoint_interval = "472s", checkpoint_save = "10s", restart_cost = "10m";
  double repair_hours = 3;
  double busy = 0.70;
  bool json = false;
};

std::string Fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

std::string Hours(double s) { return Fixed(s / 3600.0, 1); }

void PrintGoodputTable(const std::vector<sim::GoodputResult>& rs, const std::vector<double>& wall) {
  std::printf(
      "| policy | goodput | ETTR | interruptions | in place | domain spare | domain free | "
      "leaf free | any free | waited | lost work h | restart h | repair wait h | checkpoint h | "
      "step ms before | step ms after | worst step ms | predicted ms before | predicted ms "
      "after | TP groups across racks | spare GPUs | wall s |\n");
  std::printf(
      "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
      "\n");
  for (size_t i = 0; i < rs.size(); ++i) {
    const sim::GoodputResult& r = rs[i];
    std::printf(
        "| %s | %s%% | %s%% | %d | %d | %d | %d | %d | %d | %d | %s | %s | %s | %s | %s | %s | %s "
        "| %s | %s | %d | %d | %s |\n",
        r.policy.c_str(), Fixed(100 * r.goodput, 1).c_str(), Fixed(100 * r.ettr, 1).c_str(),
        r.interruptions, r.in_place, r.from_domain_spare, r.from_domain_free, r.from_leaf_free,
        r.from_any_free, r.waited_for_repair, Hours(r.lost_work_s).c_str(),
        Hours(r.restart_s).c_str(), Hours(r.repair_wait_s).c_str(), Hours(r.checkpoint_s).c_str(),
        Fixed(r.step_ms_before, 1).c_str(), Fixed(r.step_ms_after, 1).c_str(),
        Fixed(r.step_ms_worst, 1).c_str(), Fixed(r.predicted_ms_before, 2).c_str(),
        Fixed(r.predicted_ms_after, 2).c_str(), r.tp_groups_across_domains, r.spare_gpus,
        Fixed(wall[i], 2).c_str());
  }
}

void PrintGoodputJson(const std::vector<sim::GoodputResult>& rs) {
  std::printf("[");
  for (size_t i = 0; i < rs.size(); ++i) {
    const sim::GoodputResult& r = rs[i];
    std::printf(
        "%s\n  {\"policy\": \"%s\", \"goodput\": %.6f, \"ettr\": %.6f, \"wall_s\": %.0f, "
        "\"useful_s\": %.1f, \"lost_work_s\": %.1f, \"restart_s\": %.1f, \"repair_wait_s\": "
        "%.1f, \"checkpoint_s\": %.1f, \"cluster_failures\": %d, \"interruptions\": %d, "
        "\"in_place\": %d, \"from_domain_spare\": %d, \"from_domain_free\": %d, "
        "\"from_leaf_free\": %d, \"from_any_free\": %d, \"waited_for_repair\": %d, "
        "\"step_ms_before\": %.3f, \"step_ms_after\": %.3f, \"step_ms_worst\": %.3f, "
        "\"predicted_ms_before\": %.4f, \"predicted_ms_after\": %.4f, "
        "\"tp_groups_across_domains\": %d, \"spare_gpus\": %d, \"job_nodes\": %d, "
        "\"job_domains\": %d}",
        i == 0 ? "" : ",", r.policy.c_str(), r.goodput, r.ettr, r.wall_s, r.useful_s, r.lost_work_s,
        r.restart_s, r.repair_wait_s, r.checkpoint_s, r.cluster_failures, r.interruptions,
        r.in_place, r.from_domain_spare, r.from_domain_free, r.from_leaf_free, r.from_any_free,
        r.waited_for_repair, r.step_ms_before, r.step_ms_after, r.step_ms_worst,
        r.predicted_ms_before, r.predicted_ms_after, r.tp_groups_across_domains, r.spare_gpus,
        r.job_nodes, r.job_domains);
  }
  std::printf("\n]\n");
}

StatusOr<int64_t> DurationFlag(const std::string& flag, const std::string& text) {
  StatusOr<int64_t> v = job::ParseDuration(text);
  if (!v.ok()) return v.status().WithPrefix(flag);
  return v;
}

int RunGoodput(const GoodputArgs& a) {
  sim::GoodputOptions o;
  o.days = a.days;
  o.seed = a.seed;
  if (a.rate >= 0) o.interruptions_per_gpu_day = a.rate;
  StatusOr<int64_t> interval = DurationFlag("--checkpoint-interval", a.checkpoint_interval);
  if (!interval.ok()) return Fail(interval.status());
  StatusOr<int64_t> save = DurationFlag("--checkpoint-save", a.checkpoint_save);
  if (!save.ok()) return Fail(save.status());
  StatusOr<int64_t> restart = DurationFlag("--restart-cost", a.restart_cost);
  if (!restart.ok()) return Fail(restart.status());
  o.checkpoint_interval_s = *interval;
  o.checkpoint_save_s = *save;
  o.restart_cost_s = *restart;
  o.repair_mean_s = a.repair_hours * 3600;
  o.busy_fraction = a.busy;
  if (Status s = o.Validate(); !s.ok()) return Fail(s);
  std::vector<sim::ReplacementPolicy> policies;
  for (const std::string& name : Split(a.policies, ',', true)) {
    StatusOr<sim::ReplacementPolicy> p = sim::ReplacementPolicyNamed(name);
    if (!p.ok()) return Fail(p.status().WithPrefix("--policy"));
    policies.push_back(*p);
  }
  if (policies.empty()) return Fail(InvalidArgumentError("--policy: name at least one policy"));
  job::JobSpec job;
  job.name = "llm-" + std::to_string(a.tp * a.pp * a.dp);
  job.layout.tp = a.tp;
  job.layout.pp = a.pp;
  job.layout.dp = a.dp;
  job.model_params = a.params;
  if (Status s = job.Normalize(); !s.ok()) return Fail(s.WithPrefix("--tp/--pp/--dp/--params"));
  StatusOr<topo::Cluster> cluster = topo::io::ReadClusterYamlFile(a.cluster);
  if (!cluster.ok()) return Fail(cluster.status());
  cluster->Finalize();
  std::vector<sim::GoodputResult> results;
  std::vector<double> wall;
  for (const sim::ReplacementPolicy& p : policies) {
    const auto t0 = std::chrono::steady_clock::now();
    StatusOr<sim::GoodputResult> r = sim::SimulateGoodput(*cluster, job, p, o);
    wall.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    if (!r.ok()) return Fail(r.status().WithPrefix("policy " + p.name));
    results.push_back(std::move(r).value());
  }
  if (a.json) {
    PrintGoodputJson(results);
    return 0;
  }
  std::printf(
      "job %s (TP %d x PP %d x DP %d, %.0f GPUs) on %s (%d GPUs), %.0f days, seed %llu: "
      "%d failures drawn over the cluster\n\n",
      job.name.c_str(), a.tp, a.pp, a.dp, static_cast<double>(job.total_gpus),
      cluster->name.c_str(), cluster->TotalGpus(), a.days, static_cast<unsigned long long>(a.seed),
      results.empty() ? 0 : results.front().cluster_failures);
  PrintGoodputTable(results, wall);
  return 0;
}

}  // namespace

void RegisterGoodputCommand(CLI::App& app, int& rc) {
  auto a = std::make_shared<GoodputArgs>();
  CLI::App* cmd = app.add_subcommand(
      "goodput",
      "Simulate one big training job under failures for N days among a background: its goodput "
      "under replacement policies");
  cmd->add_option("--cluster", a->cluster, "cluster spec (YAML)")->required();
  cmd->add_option("--policy", a->policies,
                  "comma-separated: topology-spares (2 spare trays per NVLink domain, then a "
                  "free node of the domain, of the leaf, anywhere), any-free, no-spares (wait for "
                  "the repair); default all three");
  cmd->add_option("--tp", a->tp, "the job's tensor-parallel size (default 8)");
  cmd->add_option("--pp", a->pp, "pipeline stages (default 16)");
  cmd->add_option("--dp", a->dp, "data-parallel replicas (default 128)");
  cmd->add_option("--params", a->params, "model parameters (default 405e9, Llama 3 405B)");
  cmd->add_option("--days", a->days, "simulated days (default 30)");
  cmd->add_option("--seed", a->seed, "seed of the failures and the background (default 1)");
  cmd->add_option("--failure-rate", a->rate,
                  "unexpected interruptions per GPU per day (default Llama 3: 419 on 16,384 "
                  "GPUs in 54 days, 4.74e-4)");
  cmd->add_option("--checkpoint-interval", a->checkpoint_interval,
                  "running time between checkpoints (default 472s: Young's interval for a 10 s "
                  "write at the Llama 3 rate on 16,384 GPUs)");
  cmd->add_option("--checkpoint-save", a->checkpoint_save,
                  "time a checkpoint write stops training (default 10s)");
  cmd->add_option("--restart-cost", a->restart_cost,
                  "time from a replacement to training again (default 10m)");
  cmd->add_option("--repair-hours", a->repair_hours,
                  "mean repair time of a failed node, hours (default 3, an assumption)");
  cmd->add_option("--busy", a->busy,
                  "share of the GPUs held by the job, its spares and the background (default "
                  "0.70)");
  cmd->add_flag("--json", a->json, "print JSON instead of the markdown table");
  cmd->callback([a, &rc]() { rc = RunGoodput(*a); });
}

}  // namespace toposched::cli
