// `toposched simulate`: replays a cluster trace through the scheduler core under one or more
// placement policies on a virtual clock and writes DIR/report.json, report.md and SVG plots.
// Only this layer reads flags; the simulation itself is src/sim.
#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "cli/atomic_file.h"
#include "cli/commands.h"
#include "core/strings.h"
#include "job/job_spec.h"
#include "placer/policy.h"
#include "sim/openb_cluster.h"
#include "sim/policies.h"
#include "sim/report.h"
#include "sim/simulator.h"
#include "sim/trace.h"
#include "topo/io/cluster_yaml.h"

namespace toposched::cli {

namespace {

struct SimulateArgs {
  std::string cluster, trace, format, policies, out = "sim-report";
  uint64_t seed = 1;
  int max_jobs = 0;
  double comm_fraction = 0.10;
  bool failures = false;
  double failures_per_gpu_day = -1;
  double repair_hours = 3;
  double fill = 0;
  std::string runtime_model = "step";
  bool comm_fraction_given = false;
  double load = 0;  // 0 = the trace's own arrival times
  int seeds = 1;
  double locality_wait_s = sched::kDefaultLocalityWaitS;
  bool no_wait_or_spread = false;
  std::string estimated_backfill;  // "" (off), "toposched" or "all"
  bool no_contention = false;
  bool no_rail_alignment = false;
  bool no_consolidation = false;
  std::string checkpoint_interval, restart_cost;  // durations; "" = jobs do not checkpoint
};

// The trace format from the header line when --trace-format is not given.
StatusOr<sim::TraceFormat> GuessFormat(const std::string& path) {
  std::ifstream in(path);
  std::string header;
  if (!in || !std::getline(in, header)) return NotFoundError(path + ": cannot read the trace");
  if (header.find("timestamp") != std::string::npos) return sim::TraceFormat::kPhilly;
  if (header.find("creation_time") != std::string::npos) return sim::TraceFormat::kOpenb;
  if (header.find("job_id") != std::string::npos) return sim::TraceFormat::kTiresias;
  return sim::TraceFormat::kCsv;
}

int RunSimulate(const SimulateArgs& a) {
  StatusOr<sim::TraceFormat> format =
      a.format.empty() ? GuessFormat(a.trace) : sim::ParseTraceFormat(a.format);
  if (!format.ok()) return Fail(format.status().WithPrefix("--trace-format"));
  auto policies = sim::ParsePolicyList(a.policies);
  if (!policies.ok()) return Fail(policies.status().WithPrefix("--policy"));
  if (a.max_jobs < 0) return Fail(InvalidArgumentError("--max-jobs: must be >= 0"));
  sim::SimOptions opts;
  if (a.runtime_model == "step") {
    opts.runtime_model = sim::RuntimeModel::kStep;
    if (a.comm_fraction_given) {
      return Fail(InvalidArgumentError(
          "--comm-fraction: applies only to --runtime-model comm-fraction (the step model "
          "derives each job's communication share from its model and placement)"));
    }
  } else if (a.runtime_model == "comm-fraction") {
    opts.runtime_model = sim::RuntimeModel::kCommFraction;
  } else {
    return Fail(InvalidArgumentError("--runtime-model: expected step or comm-fraction, got \"" +
                                     a.runtime_model + "\""));
  }
  if (a.seeds < 1 || a.seeds > 1000) {
    return Fail(InvalidArgumentError("--seeds: must be in [1, 1000]"));
  }
  if (a.load != 0 && !(a.load > 0 && a.load <= 100)) {
    return Fail(InvalidArgumentError("--load: must be in (0, 100]"));
  }
  opts.seed = a.seed;
  opts.comm_fraction = a.comm_fraction;
  opts.locality_wait_s = a.locality_wait_s;
  opts.wait_or_spread = !a.no_wait_or_spread;
  if (!a.estimated_backfill.empty() && a.estimated_backfill != "toposched" &&
      a.estimated_backfill != "all") {
    return Fail(InvalidArgumentError("--estimated-backfill: expected toposched or all, got \"" +
                                     a.estimated_backfill + "\""));
  }
  opts.backfill_by_estimates = !a.estimated_backfill.empty();
  opts.backfill_by_estimates_all = a.estimated_backfill == "all";
  opts.failures = a.failures;
  if (a.failures_per_gpu_day >= 0) opts.failures_per_gpu_day = a.failures_per_gpu_day;
  opts.repair_mean_s = a.repair_hours * 3600;
  opts.fill_ratio = a.fill;
  opts.consolidate = !a.no_consolidation;
  if (a.checkpoint_interval.empty() != a.restart_cost.empty()) {
    return Fail(InvalidArgumentError(
        "--checkpoint-interval and --restart-cost: give both (every job checkpoints) or neither"));
  }
  if (!a.checkpoint_interval.empty()) {
    StatusOr<int64_t> interval = job::ParseDuration(a.checkpoint_interval);
    if (!interval.ok()) return Fail(interval.status().WithPrefix("--checkpoint-interval"));
    StatusOr<int64_t> restart = job::ParseDuration(a.restart_cost);
    if (!restart.ok()) return Fail(restart.status().WithPrefix("--restart-cost"));
    opts.checkpoint_interval_s = *interval;
    opts.restart_cost_s = *restart;
  }
  if (Status s = opts.Validate(); !s.ok()) return Fail(s);

  StatusOr<topo::Cluster> cluster = sim::LooksLikeOpenbNodeList(a.cluster)
                                        ? sim::ReadOpenbNodeList(a.cluster)
                                        : topo::io::ReadClusterYamlFile(a.cluster);
  if (!cluster.ok()) return Fail(cluster.status());
  cluster->Finalize();
  auto trace = sim::ReadTraceFile(a.trace, *format, a.max_jobs);
  if (!trace.ok()) return Fail(trace.status());
  if (a.load > 0) {
    const double before = sim::OfferedLoad(*trace, cluster->TotalGpus());
    StatusOr<double> scale = sim::ScaleToLoad(*trace, cluster->TotalGpus(), a.load);
    if (!scale.ok()) return Fail(scale.status().WithPrefix("--load"));
    std::printf("offered load %.3f -> %.3f (inter-arrival times x %.4f)\n", before, a.load, *scale);
  }

  std::vector<sim::SimResult> results;
  for (const std::string& p : *policies) {
    for (int k = 0; k < a.seeds; ++k) {
      auto placer = sim::PlacerOptionsFor(p);
      if (!placer.ok()) return Fail(placer.status());
      placer->seed = a.seed + static_cast<uint64_t>(k);
      if (a.no_contention) {
        std::erase_if(placer->plugins.scores,
                      [](const sched::ScoreWeight& s) { return s.name == "contention"; });
      }
      if (a.no_rail_alignment && p == "toposched") placer->plugins.rails = "none";
      sim::SimOptions seeded = opts;
      seeded.seed = a.seed + static_cast<uint64_t>(k);
      const auto t0 = std::chrono::steady_clock::now();
      auto r = sim::Simulate(*cluster, *trace, p, *placer, seeded);
      const double wall_s =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      if (!r.ok()) return Fail(r.status().WithPrefix("policy " + p));
      std::printf("%-11s %zu jobs, %lld events, %lld passes in %.2f s (%.0f events/s)%s\n",
                  p.c_str(), trace->jobs.size(), static_cast<long long>(r->events),
                  static_cast<long long>(r->passes), wall_s,
                  wall_s > 0 ? static_cast<double>(r->events) / wall_s : 0.0,
                  r->all_free_at_end ? "" : "  [GPUs still held at the end]");
      results.push_back(std::move(r).value());
    }
  }

  sim::ReportInfo info;
  info.cluster = cluster->name;
  info.cluster_nodes = static_cast<int>(cluster->nodes.size());
  info.cluster_gpus = cluster->TotalGpus();
  info.trace = a.trace;
  info.trace_format = sim::TraceFormatName(*format);
  info.trace_jobs = static_cast<int>(trace->jobs.size());
  info.trace_skipped = trace->skipped;
  info.trace_fractional = trace->fractional;
  info.seed = a.seed;
  info.comm_fraction = a.comm_fraction;
  info.runtime_model = a.runtime_model;
  info.locality_wait_s = a.locality_wait_s;
  info.wait_or_spread = opts.wait_or_spread && opts.runtime_model == sim::RuntimeModel::kStep;
  info.estimated_backfill =
      !opts.backfill_by_estimates || opts.runtime_model != sim::RuntimeModel::kStep
          ? "off"
          : (opts.backfill_by_estimates_all ? "all" : "toposched");
  info.contention_score = !a.no_contention;
  info.rail_alignment = !a.no_rail_alignment;
  info.consolidation = opts.consolidate && opts.runtime_model == sim::RuntimeModel::kStep;
  info.checkpoint_interval_s = opts.checkpoint_interval_s;
  info.restart_cost_s = opts.restart_cost_s;
  info.policies_distinct = sim::PoliciesDistinct();
  info.failures = a.failures;
  info.fill_ratio = a.fill;
  const std::vector<std::pair<std::string, std::string>> files = sim::ReportFiles(info, results);
  if (Status s = WriteFilesAtomically(a.out, files); !s.ok()) return Fail(s);
  std::string names;
  for (const auto& [name, text] : files) {
    if (name == "report.md") std::fputs(text.c_str(), stdout);
    names += (names.empty() ? a.out + "/" : ", ") + name;
  }
  std::printf("\nwrote %s\n", names.c_str());
  return 0;
}

}  // namespace

void RegisterSimCommands(CLI::App& app, int& rc) {
  auto a = std::make_shared<SimulateArgs>();
  CLI::App* cmd = app.add_subcommand(
      "simulate", "Replay a cluster trace through the scheduler under placement policies");
  cmd->add_option("--cluster", a->cluster,
                  "cluster spec (YAML) or an openb node list (CSV with header sn,...)")
      ->required();
  cmd->add_option("--trace", a->trace, "trace file (CSV)")->required();
  cmd->add_option("--trace-format", a->format,
                  "philly | openb | tiresias | csv (default: from the header line)");
  cmd->add_option("--policy", a->policies,
                  "comma-separated: toposched, first-fit, best-fit, pair-score, kueue-tas, "
                  "slurm-tree, spread, random, locality-relax, or all")
      ->required();
  cmd->add_option("--seed", a->seed,
                  "seed of the random draws (failures, --fill, the random policy)");
  cmd->add_option("--out", a->out, "report directory (default sim-report)");
  cmd->add_option("--max-jobs", a->max_jobs, "simulate only the first N jobs of the trace");
  cmd->add_option("--runtime-model", a->runtime_model,
                  "step (default: each job's step time from its model, layout, placement and "
                  "link contention) | comm-fraction (the earlier fixed-share rule)");
  cmd->add_option("--comm-fraction", a->comm_fraction,
                  "with --runtime-model comm-fraction: communication share of a step on the "
                  "ideal placement (default 0.10)")
      ->each([a](const std::string&) { a->comm_fraction_given = true; });
  cmd->add_option("--load", a->load,
                  "scale inter-arrival times so that the offered load is X, e.g. 0.7: the "
                  "GPUs the jobs would hold if each ran from its arrival, averaged over the "
                  "arrival window, over the cluster's GPUs (work past the last arrival is not "
                  "counted)");
  cmd->add_option("--locality-wait", a->locality_wait_s,
                  "policy locality-relax: seconds a job waits for a consolidated placement "
                  "before it may go anywhere (default 600; the Philly paper publishes no value)");
  cmd->add_flag("--no-wait-or-spread", a->no_wait_or_spread,
                "policy toposched: start every job that fits at once instead of waiting for a "
                "placement expected to finish it sooner (the ablation)");
  cmd->add_option("--estimated-backfill", a->estimated_backfill,
                  "toposched or all: that policy (or every policy) backfills by run-time "
                  "estimates: a job expected to end before a blocked job's estimated start may "
                  "use its reserved GPUs (traces give no time limits; default: backfill only "
                  "around the reserved GPUs, as every policy does)");
  cmd->add_flag("--no-contention", a->no_contention,
                "policy toposched: score placements without the contention they add on links "
                "shared with running jobs (the ablation)");
  cmd->add_flag("--no-rail-alignment", a->no_rail_alignment,
                "policy toposched: leave rails to the cost model's price of each placement: no "
                "rank alignment to rails, no plans built on shared rails, no rail polish, no "
                "competing domain of the rails' scope (the ablation; plugins.rails \"none\")");
  cmd->add_flag("--no-consolidation", a->no_consolidation,
                "policy toposched: never move a running job to a faster placement at a "
                "checkpoint (the ablation)");
  cmd->add_option("--checkpoint-interval", a->checkpoint_interval,
                  "every job checkpoints at this interval (\"30m\"; with --restart-cost): what "
                  "lets toposched move running jobs (traces carry no checkpoint data)");
  cmd->add_option("--restart-cost", a->restart_cost,
                  "time a job needs to restart from its checkpoint (\"5m\"; with "
                  "--checkpoint-interval)");
  cmd->add_option("--seeds", a->seeds,
                  "run each policy with seeds SEED..SEED+N-1; report.json gives means and 95% "
                  "half-widths (*_ci95)");
  cmd->add_flag("--failures", a->failures,
                "simulate GPU and node failures (default rate: Llama 3, 419 on 16,384 GPUs in "
                "54 days)");
  cmd->add_option("--failure-rate", a->failures_per_gpu_day,
                  "failures per GPU per day (with --failures; default 4.74e-4)");
  cmd->add_option("--fill", a->fill,
                  "FGD's fill experiment instead of a replay in time: jobs (the trace's, plus "
                  "draws with replacement seeded by --seed) arrive until their GPU demand is "
                  "RATIO x the cluster's GPUs, never end, and are placed on arrival or refused "
                  "(FGD uses 1.3)");
  cmd->add_option("--repair-hours", a->repair_hours,
                  "mean repair time of a failed GPU or node, hours (default 3)");
  cmd->callback([a, &rc]() { rc = RunSimulate(*a); });
}

}  // namespace toposched::cli
