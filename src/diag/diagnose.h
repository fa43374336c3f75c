// Diagnosis of interrupted or slow distributed-training jobs: logs in (any mix of NCCL, driver,
// Slurm, Kubernetes and PyTorch output), ranked causes out. The entry point of src/diag; lives
// beside the scheduler and knows nothing of its queues, the daemon or HTTP.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "diag/cause.h"
#include "diag/line_stream.h"
#include "diag/no_cause.h"
#include "diag/topology.h"

namespace toposched::diag {

struct DiagnoseOptions {
  LineStreamOptions stream;
  Status Validate() const { return stream.Validate(); }
};

// With two or more log files, each is also read alone, for its part in the job's failure.
enum class LogRole {
  kFirstFailure,  // its own fault came first (by the time of its cited lines, else log order):
                  // its cause is the job's
  kFailedToo,     // a fault of its own, later than the first or with no time to order it by
  kConsequence,   // only the echo of another log's fault: peers' closed or reset connections,
                  // a collective's watchdog timeout
  kHealthy,       // a correct set-up and no fault
  kNoCause,       // nothing decided
};
const char* LogRoleName(LogRole r);  // "first_failure", "failed_too", "consequence", ...

// The time written at a line's start or in it, as a key that sorts in time order, and its
// format family (only keys of one family compare): ISO dates ("2025-07-04T00:54:23.932",
// "[2023-12-22 06:45:43,273]") are family 1, glog prefixes ("W0409 07:28:49.530000") family 2.
struct LineTime {
  int family = 0;
  std::string key;
};
std::optional<LineTime> TimeOfLine(std::string_view line);

// A line's time as an evidence field ("line_time": "<family>:<key>"), and back.
std::string EncodeLineTime(const LineTime& t);
std::optional<LineTime> DecodeLineTime(std::string_view field);

struct LogPart {
  std::string file;
  LogRole role = LogRole::kNoCause;
  std::optional<Cause> top;  // the log's own top cause, read alone
  // What the log saw first of its top cause: the earliest of the lines it cites (by line), and
  // its time (its own, else that of the nearest line above it that carries one).
  std::optional<Evidence> first_seen;
  std::optional<LineTime> time;
};

// One line of the job's timeline: a cited line of a log's own top cause, with its log's role.
struct TimelineEntry {
  Evidence line;
  std::optional<LineTime> time;
  LogRole role = LogRole::kNoCause;
  bool first_seen = false;  // what its log saw first
};
// The logs' cited lines merged into one timeline: each log's lines in their order; between logs,
// by time where both carry one of the same format, else in the order the logs were given.
std::vector<TimelineEntry> MergeTimeline(const std::vector<LogPart>& parts);

struct Diagnosis {
  std::vector<Cause> causes;  // strongest first; empty = no known cause
  LineStreamStats stats;      // over every file
  int64_t evidence_lines = 0;
  // Two or more files: one entry per file, in input order. The first failure's cause is then
  // the first of `causes`.
  std::vector<LogPart> logs;
  std::vector<TimelineEntry> timeline;  // two or more files: MergeTimeline(logs)
  // Set when `causes` is empty: what was read and why none decided.
  std::optional<NoCauseReport> no_cause;
};

// Streams every file through the readers (memory O(chunk + max line + kinds × examples), any
// file size), then ranks the causes. `node` (may be null) ties network causes to its topology.
// A directory stands for the regular files in it (not hidden, by name; none: no known cause).
// Errors (NotFound, FailedPrecondition) name the file that could not be read; nothing is
// reported for the files before it.
StatusOr<Diagnosis> DiagnoseFiles(const std::vector<std::string>& paths, const NodeContext* node,
                                  const DiagnoseOptions& options = {});

// Text in memory, cited as file `name` (the job's events from the daemon, say).
struct TextInput {
  std::string name;
  std::string text;
};
// Every file, then every text, into one diagnosis (errors as DiagnoseFiles).
StatusOr<Diagnosis> DiagnoseInputs(const std::vector<std::string>& paths,
                                   const std::vector<TextInput>& texts, const NodeContext* node,
                                   const DiagnoseOptions& options = {});

// Each log's part in the job's failure (first_failure.cc): roles over `parts`, whose `top` and
// `time` are set.
void AssignLogRoles(std::vector<LogPart>& parts);
// The same over text in memory, cited as file `name`.
Diagnosis DiagnoseText(std::string_view text, const std::string& name, const NodeContext* node,
                       const DiagnoseOptions& options = {});

}  // namespace toposched::diag
