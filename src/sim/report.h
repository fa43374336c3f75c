// Reports of simulation runs: the summary figures per policy, report.json (the contract scripts
// read), report.md (a Markdown table) and SVG plots (JCT CDF, GPU utilisation over time,
// communication slowdown by job size) written by hand so a browser opens them directly.
// Byte-identical output for identical results: no clock, no host name, fixed number formats.
// Knows nothing of the CLI or of how the results were produced.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/status.h"
#include "placer/policy.h"
#include "sim/simulator.h"

namespace toposched::sim {

// What the report states about its inputs.
struct ReportInfo {
  std::string cluster;  // cluster name
  int cluster_nodes = 0;
  int cluster_gpus = 0;
  std::string trace;  // as given on the command line
  std::string trace_format;
  int trace_jobs = 0;        // jobs simulated
  int trace_skipped = 0;     // rows without a GPU request
  int trace_fractional = 0;  // fractional-GPU requests (they share GPUs; none is rounded up)
  double fill_ratio = 0;     // 0: replay in time; > 0: FGD's fill experiment at this ratio
  uint64_t seed = 1;
  double comm_fraction = 0;
  std::string runtime_model = "step";  // "step" or "comm-fraction" (SimOptions::runtime_model)
  double locality_wait_s = sched::kDefaultLocalityWaitS;  // SimOptions::locality_wait_s
  bool wait_or_spread = true;  // SimOptions::wait_or_spread, in effect (step model only)
  // SimOptions::backfill_by_estimates in effect (step model only): "toposched" (its policy
  // only), "all" (every policy) or "off".
  std::string estimated_backfill = "off";
  bool contention_score = true;  // toposched's "contention" score on (simulate --no-contention)
  bool rail_alignment = true;    // toposched's rails plugin "align" (simulate --no-rail-alignment)
  bool consolidation = true;     // SimOptions::consolidate, in effect (step model only)
  int64_t checkpoint_interval_s = 0, restart_cost_s = 0;  // SimOptions', 0: jobs do not checkpoint
  bool policies_distinct = true;
  bool failures = false;
};

struct PolicySummary {
  std::string policy;
  int jobs = 0;  // completed
  int unfinished = 0;
  double mean_jct_s = 0, p50_jct_s = 0, p99_jct_s = 0;
  double mean_queue_s = 0, p50_queue_s = 0;
  double makespan_s = 0;
  double gpu_utilization = 0;
  // Σ GPUs · ideal run time of completed jobs / (GPUs · makespan): utilisation without the time
  // lost to communication stretch (a slower placement raises gpu_utilization, not this). A
  // fractional job counts its share (gpu_milli / 1000) of its GPU.
  double useful_utilization = 0;
  double window_utilization = 0;  // SimResult::window_utilization
  double mean_comm_slowdown = 1;  // over completed jobs of ≥ 2 GPUs (1 when there are none)
  double mean_fragmentation = 0;
  double gpu_allocation_milli = 0;        // SimResult::gpu_allocation_milli
  double final_gpu_allocation_milli = 0;  // SimResult::final_gpu_allocation_milli
  int refused = 0;                        // fill experiment: jobs that could not be placed
  int failures = 0, jobs_interrupted = 0, failures_survived = 0, preemptions = 0, moves = 0;
  // Σ GPUs · ideal · JCT / Σ GPUs · ideal over completed jobs: JCT weighted by GPU time.
  double gpu_time_weighted_jct_s = 0;
  double multi_gpu_mean_jct_s = 0;   // completed jobs of ≥ 2 GPUs
  double multi_node_mean_jct_s = 0;  // completed jobs whose last run spanned nodes
  // Time-averaged contention slowdown of completed multi-node jobs (weighted by run time).
  double contention_slowdown = 1;
  // Per job-size bucket (GPUs): "1", "2-8", "9-64", "65-256", "257+".
  struct Bucket {
    std::string name;
    int jobs = 0;
    double mean_jct_s = 0, mean_queue_s = 0, mean_comm_slowdown = 1;
  };
  std::vector<Bucket> by_size;
};

// The figures that report.json gives with a 95% confidence half-width over seeds (when a
// policy was run with several seeds): the half-width's key `<name>_ci95` (`_ci95_s` for a time)
// and the member.
struct SeededFigure {
  const char* name;
  double PolicySummary::*member;
  bool seconds;
};
const std::vector<SeededFigure>& SeededFigures();

// Percentiles are nearest-rank over completed jobs; JCT = end − submit, queue = first start −
// submit; makespan = last end − first submit.
PolicySummary Summarize(const SimResult& r);

// Per policy also the data of the JCT CDF and utilisation plots ("jct_cdf",
// "utilization_series"; docs/simulator.md, "Output"), from the policy's first run in `results`.
std::string ReportJson(const ReportInfo& info, const std::vector<SimResult>& results);
std::string ReportMarkdown(const ReportInfo& info, const std::vector<SimResult>& results);
std::string JctCdfSvg(const std::vector<SimResult>& results);
std::string UtilizationSvg(const std::vector<SimResult>& results);
std::string SlowdownBySizeSvg(const std::vector<SimResult>& results);
// Every job of every run, one CSV row each (policy, seed, then the trace's order), with the
// header line: policy,seed,job,gpus,gpu_milli,submit_s,start_s,end_s,queue_s,jct_s,ideal_s,
// comm_slowdown,contention_slowdown,nodes,preemptions,failures,moves. Times in seconds from the
// trace's clock (3 decimals); start_s, end_s, queue_s and jct_s are empty for a job that never
// started or did not finish; a job name with a comma, quote or line break is quoted (RFC 4180).
// The rows behind report.json's means, for looking at single jobs.
std::string JobsCsv(const std::vector<SimResult>& results);

// The files of a report, (name, contents), in this order: report.json, report.md, jobs.csv,
// jct_cdf.svg, utilization.svg, slowdown_by_size.svg. The cli writes them into --out as a set
// (cli/atomic_file.h, WriteFilesAtomically).
std::vector<std::pair<std::string, std::string>> ReportFiles(const ReportInfo& info,
                                                             const std::vector<SimResult>& results);

}  // namespace toposched::sim
