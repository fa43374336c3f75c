// Slurm: slurmstepd/srun messages in a job's output, sacct/squeue/scontrol job states and
// pending reasons, sinfo node states. Patterns: docs/diagnose.md, source "Slurm" (sacct job
// state codes, squeue reason codes, sinfo node state codes).
#include <array>
#include <optional>
#include <string>
#include <string_view>

#include "core/strings.h"
#include "diag/readers.h"
#include "diag/text.h"

namespace toposched::diag {

namespace {

// Pending reasons that mean "cannot start here now", not "waiting for its turn".
constexpr std::array<std::string_view, 10> kPendingReasons = {
    "ReqNodeNotAvail", "Resources",       "PartitionNodeLimit",
    "BadConstraints",  "NodeDown",        "QOSMaxGRES",
    "AssocGrpGRES",    "PartitionConfig", "Nodes_required_for_job_are_DOWN",
    "InvalidQOS"};

// sinfo states of nodes that cannot take jobs, with any of sinfo's state suffixes stripped.
constexpr std::array<std::string_view, 9> kUnavailableStates = {
    "drain", "drng", "drained", "draining", "down", "fail", "failing", "maint", "inval"};

void ReadPending(const LineRef& line, EvidenceSet& out) {
  const std::string_view t = line.text;
  for (std::string_view r : kPendingReasons) {
    if (!HasWord(t, r)) continue;
    if (Evidence* e = out.Add(Kind::kSlurmPending, line)) e->fields.emplace_back("reason", r);
    return;
  }
}

// "gpu  up 14-00:00:0  12  drng@ c[002,004]": PARTITION AVAIL TIMELIMIT NODES STATE NODELIST.
void ReadSinfoRow(const LineRef& line, EvidenceSet& out) {
  const std::vector<std::string> cols = SplitWhitespace(line.text);
  if (cols.size() != 6) return;
  if (cols[1] != "up" && cols[1] != "down" && cols[1] != "drain" && cols[1] != "inact") return;
  std::string state = cols[4];
  while (!state.empty() && !IsWordChar(state.back())) state.pop_back();
  for (std::string_view s : kUnavailableStates) {
    if (state != s) continue;
    if (Evidence* e = out.Add(Kind::kSlurmNodesUnavailable, line)) {
      e->fields.emplace_back("state", state);
      e->fields.emplace_back("count", cols[3]);
      e->fields.emplace_back("nodes", cols[5]);
    }
    return;
  }
}

// sacct's ExitCode column, "N:S" (the exit code, then the signal that ended the step), right
// after the State column: "239023.0|galvani-cn001|CANCELLED|0:10", "FAILED      1:0". A signal is
// read as the process family reads one (process_rules.cc); a FAILED step's own nonzero code is
// the program failing.
void ReadSacctExit(const LineRef& line, EvidenceSet& out) {
  static constexpr std::array<std::string_view, 7> kStates = {
      "COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "OUT_OF_MEMORY", "NODE_FAIL", "PREEMPTED"};
  const std::string_view t = line.text;
  for (std::string_view state : kStates) {
    if (!HasWord(t, state)) continue;
    std::string_view rest = t.substr(t.find(state) + state.size());
    while (!rest.empty() && rest.front() != ' ' && rest.front() != '\t' && rest.front() != '|') {
      rest.remove_prefix(1);  // a state's suffix ("CANCELLED+")
    }
    for (int i = 0; i < 3; ++i) {
      while (!rest.empty() &&
             (rest.front() == ' ' || rest.front() == '\t' || rest.front() == '|')) {
        rest.remove_prefix(1);
      }
      const size_t n = rest.find_first_of(" \t|");
      const std::string_view tok = rest.substr(0, n);
      const size_t colon = tok.find(':');
      const auto code = LeadingInt(tok.substr(0, colon));
      const auto sig =
          colon == std::string_view::npos ? std::nullopt : LeadingInt(tok.substr(colon + 1));
      if (code && sig && tok.find_first_not_of("0123456789:") == std::string_view::npos) {
        if (*sig > 0 && *sig <= 64) {
          if (Evidence* e = out.Add(Kind::kKilledBySignal, line)) {
            e->fields.emplace_back("signal", std::to_string(*sig));
          }
        } else if (*code > 0 && state == "FAILED") {
          if (Evidence* e = out.Add(Kind::kWorkerFailed, line)) {
            e->fields.emplace_back("code", std::to_string(*code));
          }
        }
        return;
      }
      if (n == std::string_view::npos) return;
      rest.remove_prefix(n);
    }
    return;
  }
}

}  // namespace

void ReadSlurmLine(const LineRef& line, EvidenceSet& out) {
  const std::string_view t = line.text;
  if (Has(t, "DUE TO TIME LIMIT") || HasWord(t, "TIMEOUT")) {
    out.Add(Kind::kSlurmTimeLimit, line);
  }
  if (Has(t, "DUE TO NODE FAILURE") || HasWord(t, "NODE_FAIL")) {
    out.Add(Kind::kSlurmNodeFail, line);
  }
  // "*** JOB 3 ON c1 CANCELLED AT 2025-02-13T15:47:35 ***" with no "DUE TO" reason: scancel;
  // sacct's "CANCELLED by 1000".
  if ((Has(t, "CANCELLED AT") && !Has(t, "DUE TO")) || Has(t, "CANCELLED by")) {
    out.Add(Kind::kSlurmCancelled, line);
  }
  if (Has(t, "DUE TO PREEMPTION") || HasWord(t, "PREEMPTED")) {
    out.Add(Kind::kSlurmPreempted, line);
  }
  if (Has(t, "oom-kill event") || Has(t, ": Out Of Memory") || HasWord(t, "OUT_OF_MEMORY")) {
    out.Add(Kind::kSlurmOom, line);
  }
  if (Has(t, "PD ") || Has(t, "PENDING") || Has(t, "Reason=")) ReadPending(line, out);
  // COMPLETED, FAILED, CANCELLED, PREEMPTED ("ED"), TIMEOUT, OUT_OF_MEMORY ("OUT"); a NODE_FAIL
  // row is read as the node's failure above.
  if ((Has(t, "ED") || Has(t, "OUT")) && Has(t, ":")) {
    ReadSacctExit(line, out);
  }
  if (Has(t, "dr") || Has(t, "fail") || Has(t, "down") || Has(t, "maint")) {
    if (Has(t, " up ") || Has(t, " down ") || Has(t, " inact ")) ReadSinfoRow(line, out);
  }
}

}  // namespace toposched::diag
