// Cluster traces for the simulator: readers for the Philly job list (as derived by Pollux), the
// Alibaba openb pod list, the Tiresias sample and a documented generic CSV, into one job list
// sorted by submission time. A fractional request (gpu_milli < 1000) is kept as such; the rule
// that turns a trace job into a JobSpec is sim/trace_spec.h. Knows nothing of clusters,
// placements or the scheduler.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "job/job_spec.h"

namespace toposched::sim {

enum class TraceFormat { kPhilly, kOpenb, kTiresias, kCsv };
// "philly", "openb", "tiresias", "csv".
const char* TraceFormatName(TraceFormat f);
// InvalidArgument naming the text and the known names.
StatusOr<TraceFormat> ParseTraceFormat(const std::string& name);

// One job of a trace. Times are relative to the earliest submission of the trace (which is 0).
struct TraceJob {
  std::string name;            // from the trace, or "<file>-<line>" when it has none
  int line = 0;                // 1-based line of the trace file
  int64_t submit_us = 0;       // ≥ 0
  int64_t duration_us = 0;     // > 0: run time on an ideal placement
  int gpus = 0;                // ≥ 1 (1 for a fractional request)
  int gpu_milli = 1000;        // openb: the fraction of one GPU asked (1..1000); 1000 otherwise
  std::string user;            // Philly: virtual cluster; openb: qos; else "" ("trace")
  std::string gpu_model;       // required GPU model; "" = any
  int tp = 0, pp = 0, dp = 0;  // layout from the trace; 0 = derive (LayoutRule)
  double model_params = 0;     // 0 = the model's (StepCatalog) or the default of MakeJobSpec
  std::string model;           // Tiresias model_name, CSV `model`: a StepCatalog model; "" = none
  int priority = 0;
  // openb: a pod, which Kubernetes binds to one node, so all its GPUs must be on one node (the
  // job spec gets `job: required node`). Elsewhere a job may span nodes.
  bool one_node = false;
};

struct Trace {
  std::string source;
  TraceFormat format = TraceFormat::kCsv;
  std::vector<TraceJob> jobs;  // by submit_us, then line
  int skipped = 0;             // rows that ask for no GPU (openb CPU-only pods)
  int fractional = 0;          // openb rows with gpu_milli < 1000 (they share GPUs)
};

// Readers. Errors are InvalidArgument `file:line: column "duration": expected a number, got
// "x"` (or NotFound when the file cannot be read); nothing is returned on error. Columns are
// found by header name, so their order does not matter; lines starting with '#' are comments;
// unknown columns are ignored for the published formats and rejected for the generic CSV. Fields
// are comma-separated, unquoted.
//   philly:   timestamp (YYYY-MM-DD HH:MM:SS, UTC), duration (s), num_gpus, cluster
//   openb:    name, num_gpu, gpu_milli, gpu_spec, qos, creation_time, deletion_time,
//             scheduled_time; duration = deletion_time − (scheduled_time or, when empty,
//             creation_time), at least 1 s; num_gpu = 0 rows are skipped (CPU-only)
//   tiresias: job_id, num_gpu, submit_time (s), duration (s), model_name
//   csv:      submit_s, duration_s, gpus (required); name, user, tp, pp, dp, model, model_params,
//             gpu_model, priority (optional) — see docs/simulator.md
// `max_jobs` > 0 keeps the first N jobs by submission time.
StatusOr<Trace> ParseTrace(const std::string& text, const std::string& source, TraceFormat format,
                           int max_jobs = 0);
StatusOr<Trace> ReadTraceFile(const std::string& path, TraceFormat format, int max_jobs = 0);

}  // namespace toposched::sim
