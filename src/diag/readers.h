// Diagnosis: the per-source log readers. Each looks at one line and adds the evidence it
// recognises to an EvidenceSet; a line no reader knows adds nothing. Readers keep no state
// between lines and know nothing of causes, topology or the scheduler. The patterns and their
// sources are listed in docs/diagnose.md.
#pragma once

#include "diag/evidence.h"

namespace toposched::diag {

void ReadNcclLine(const LineRef& line, EvidenceSet& out);        // nccl_reader.cc
void ReadDriverLine(const LineRef& line, EvidenceSet& out);      // driver_reader.cc
void ReadSlurmLine(const LineRef& line, EvidenceSet& out);       // slurm_reader.cc
void ReadKubernetesLine(const LineRef& line, EvidenceSet& out);  // kubernetes_reader.cc
void ReadPyTorchLine(const LineRef& line, EvidenceSet& out);     // pytorch_reader.cc
// Any framework's process fate and progress: signals, exit codes, the kernel's OOM killer,
// exceptions, cancels, preemption notices, node health, queue capacity, progress and completion.
void ReadProcessLine(const LineRef& line, EvidenceSet& out);  // process_reader.cc
// scheduler_reader.cc. False when the line is not one of toposched's job events (or a pending
// job's explanation): the other readers then read it.
bool ReadSchedulerLine(const LineRef& line, EvidenceSet& out);

// A scheduler event is read by the scheduler reader alone (its "-> PREEMPTED" is not Slurm's);
// any other line by every other reader, in that order.
inline void ReadLine(const LineRef& line, EvidenceSet& out) {
  if (ReadSchedulerLine(line, out)) return;
  ReadNcclLine(line, out);
  ReadDriverLine(line, out);
  ReadSlurmLine(line, out);
  ReadKubernetesLine(line, out);
  ReadPyTorchLine(line, out);
  ReadProcessLine(line, out);
}

}  // namespace toposched::diag
