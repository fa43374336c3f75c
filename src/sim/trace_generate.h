// Synthetic LLM-era traces for the simulator: draws jobs from a workload mix (job classes with
// shares, GPU-count buckets, log-normal durations, model sizes with their parallel layouts,
// Poisson arrivals) and writes them as the generic trace CSV that ParseTrace reads. The mixes
// are data with a cited source per number (data/traces/mixes.yaml, compiled in). Knows nothing
// of clusters, placement or the simulator's clock; `simulate --load` rescales arrivals, not this.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "sim/trace.h"

namespace toposched::sim {

// A model the mix trains or evaluates, with one replica's TP x PP in each role.
struct MixModel {
  std::string name;
  double params = 0;  // > 0
  int train_tp = 1, train_pp = 1;
  int eval_tp = 1, eval_pp = 1;
};

struct MixBucket {
  int gpus = 0;  // ≥ 1
  double p = 0;  // probability within the class
};

// One kind of job (evaluation, fine-tune/debug, pretraining): its share of all jobs and its own
// distributions. Durations are log-normal: exp(N(ln median_s, sigma²)), rounded to whole
// seconds and clamped to [1, max_s].
struct MixClass {
  std::string name;      // also the job's user (fair-share queue)
  bool training = true;  // layout from MixModel::train_* (else eval_*)
  double share = 0;
  int priority = 0;
  std::vector<MixBucket> gpus;
  double median_s = 0, sigma = 0, max_s = 0;
  std::vector<std::pair<int, double>> models;  // index into TraceMix::models, probability
  // Per bucket: the models whose replica (tp · pp) divides the bucket's GPUs, with cumulative
  // probabilities renormalised over them. Filled by ParseMixes; never empty.
  std::vector<std::vector<std::pair<int, double>>> fitting;
};

struct TraceMix {
  std::string name, description;
  double mean_interarrival_s = 0;  // > 0: Poisson arrivals at this mean gap
  std::vector<MixModel> models;
  std::vector<MixClass> classes;
};

// Every mix of a mix file (YAML, the shape of data/traces/mixes.yaml). Checks: shares and each
// class's bucket and model probabilities sum to 1 (±1e-6), layouts are powers of two with
// TP ≤ 8, every bucket has a model whose replica divides it. InvalidArgument
// `source:line: mix "llm": class "eval": ...` on the first problem.
StatusOr<std::vector<TraceMix>> ParseMixes(const std::string& yaml, const std::string& source);
// data/traces/mixes.yaml as compiled into the binary.
const std::string& BuiltinMixesYaml();
// NotFound naming the known mixes.
StatusOr<TraceMix> FindMix(const std::vector<TraceMix>& mixes, const std::string& name);

struct TraceGenOptions {
  std::string mix = "llm";
  int64_t jobs = 0;  // 1..kMaxJobs
  int64_t seed = 1;  // ≥ 0
  static constexpr int64_t kMaxJobs = 2000000;
  // InvalidArgument naming the flag (--jobs, --seed, --mix).
  Status Validate() const;
};

struct GeneratedTrace {
  std::vector<TraceJob> jobs;  // by submission; names "<class>-<n>", 1-based n
  std::vector<int> job_class;  // index into TraceMix::classes, per job
};

// Draws `o.jobs` jobs. Per job, in this order: the gap to the previous arrival (exponential),
// the class, the bucket, the model among those that fit the bucket, the duration (a standard
// normal from the polar method). Randomness: std::mt19937_64 seeded with `o.seed`, raw outputs
// turned into doubles by hand (no std distribution), so a seed gives the same trace on every
// standard library; only std::log, std::exp and std::sqrt are used. O(jobs).
StatusOr<GeneratedTrace> GenerateTrace(const TraceMix& mix, const TraceGenOptions& o);

// The generic CSV (docs/simulator.md): `# comment` lines, then name, submit_s (µs precision),
// duration_s, gpus, user, tp, pp, dp, model_params, priority. Same jobs ⇒ same bytes.
std::string WriteGenericCsv(const std::vector<TraceJob>& jobs, const std::string& comment);

// Aggregates of a generated trace, to set beside the mix's published figures.
struct TraceSummary {
  struct PerClass {
    std::string name;
    int64_t jobs = 0;
    double gpu_seconds = 0;
  };
  std::vector<PerClass> classes;
  double mean_gpus = 0;
  double median_duration_s = 0, mean_duration_s = 0;
  double span_s = 0;  // last submission
};
TraceSummary Summarize(const TraceMix& mix, const GeneratedTrace& t);

}  // namespace toposched::sim
