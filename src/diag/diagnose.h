// Diagnosis of interrupted or slow distributed-training jobs: logs in (any mix of NCCL, driver,
// Slurm, Kubernetes and PyTorch output), ranked causes out. The entry point of src/diag; lives
// beside the scheduler and knows nothing of its queues, the daemon or HTTP.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "diag/cause.h"
#include "diag/line_stream.h"
#include "diag/topology.h"

namespace toposched::diag {

struct DiagnoseOptions {
  LineStreamOptions stream;
  Status Validate() const { return stream.Validate(); }
};

struct Diagnosis {
  std::vector<Cause> causes;  // strongest first; empty = no known cause
  LineStreamStats stats;      // over every file
  int64_t evidence_lines = 0;
};

// Streams every file through the readers (memory O(chunk + max line + kinds × examples), any
// file size), then ranks the causes. `node` (may be null) ties network causes to its topology.
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

// The same over text in memory, cited as file `name`.
Diagnosis DiagnoseText(std::string_view text, const std::string& name, const NodeContext* node,
                       const DiagnoseOptions& options = {});

}  // namespace toposched::diag
