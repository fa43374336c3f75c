// Diagnosis, when no cause was found: what was read and why none decided.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "diag/evidence.h"
#include "diag/line_stream.h"

namespace toposched::diag {

// What a diagnosis that found no cause read, and why nothing decided (no_cause.cc).
struct NoCauseReport {
  struct Count {
    std::string name;
    int64_t lines = 0;
  };
  std::vector<Count> families;  // lines of known families by source ("nccl", "process", ...)
  std::vector<Count> kinds;     // the same by kind ("nccl_net_socket", ...), in kind order
  // The nearest candidates: first the lines of known families (they decided nothing alone),
  // then lines worded as a fault (error, failed, WARN, timed out, Killed, exception, abort) that
  // no family knows; at most kMaxCandidates.
  struct Candidate {
    std::string file;
    int64_t line = 0;
    std::string text;
    std::string kind;  // its kind's name, or "unrecognised"
  };
  static constexpr size_t kMaxCandidates = 5;
  std::vector<Candidate> candidates;
  int64_t unrecognised_faults = 0;  // lines worded as a fault that no family knows
  std::string why;
};

// `evidence` and `lines` from the first read of the inputs; `reread` reads them all again,
// calling its argument per line, for the lines worded as a fault that no family recognises.
NoCauseReport ExplainNoCause(const EvidenceSet& evidence, int64_t lines,
                             const std::function<void(const LineFn&)>& reread);

}  // namespace toposched::diag
